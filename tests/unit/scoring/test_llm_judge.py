"""`--scorer llm-judge` against a fake OpenAI-compatible server on 127.0.0.1
(tests/support/openai_server.py): MiniCheck's prompt, its score from the given
log-probs (by the formula written out here, and by MiniCheck's own LLMCheck
run on the same log-probs), both APIs, the faults of `remote`, and an
`agreement` run end to end.
"""
import csv
import json
import math
import socket
import threading
import time
import types

import numpy as np
import pytest

from autoais.beam_jobs import agreement
from autoais.models import llm_judge
from autoais.models.sentences import sentence_splitter
from autoais.schemas import AttributionExample, AttributionScore, ScoringFailure
from autoais.schemas.errors import EndpointMisconfigured
from tests.support.jobs import run_job
from tests.support.openai_server import MODEL, OpenAIServer, build_judge_tokenizer, given_logprobs
from tests.support.minicheck_reference import import_minicheck

APIS = ("chat", "completions")
# Retries without waiting, and a request timeout that no answer of the local
# server reaches however loaded the machine (a retried request would be asked
# twice); the test of the "timeout" fault sets a short one of its own.
FAST = {"backoff": 0.01, "timeout": 60.0, "max_retries": 6}


@pytest.fixture(scope="module")
def judge_tokenizer(tmp_path_factory):
  directory = build_judge_tokenizer(tmp_path_factory.mktemp("judge-tokenizer"))
  return directory, llm_judge.open_judge_tokenizer(directory)[1]


@pytest.fixture()
def server(judge_tokenizer):
  started = OpenAIServer(judge_tokenizer[1])
  yield started
  started.close()


@pytest.fixture()
def reference(monkeypatch):
  """MiniCheck's inference and utils modules, imported without running its
  package's __init__ (which downloads NLTK data), `sent_tokenize` replaced by
  our splitter as the issue says."""
  return import_minicheck(monkeypatch, sentence_splitter().split)


def _handler(server, tokenizer_dir, api, **options):
  return llm_judge.LlmJudgeModelHandler(server.url, MODEL, tokenizer_dir, api=api,
                                        **{**FAST, **options})


def _score(handler, examples):
  return [r.inference for r in handler.run_inference(examples, handler.load_model())]


def test_the_prompt_is_minichecks(reference):
  _, utils = reference
  assert llm_judge.SYSTEM_PROMPT == utils.SYSTEM_PROMPT
  assert llm_judge.USER_PROMPT == utils.USER_PROMPT


@pytest.mark.parametrize("api", APIS)
def test_scores_equal_the_formula(api, server, judge_tokenizer):
  """One chunk, one claim sentence: the score is the summed probability of the
  top tokens reading "yes", written out here from the log-probs the server gave."""
  tokenizer_dir, tokenizer = judge_tokenizer
  examples = [AttributionExample(f"Passage {i} says the moon has {i} craters.",
                                 f"The moon has {i} craters.", "", "") for i in range(12)]
  results = _score(_handler(server, tokenizer_dir, api), examples)
  zeros = 0
  for example, result in zip(examples, results):
    user = "Document: " + example.premise + "\nClaim: " + example.hypothesis
    text = tokenizer.apply_chat_template(
        [{"role": "system", "content": llm_judge.SYSTEM_PROMPT},
         {"role": "user", "content": user}], add_generation_prompt=True, tokenize=False)
    expected = sum(math.exp(lp) for token, lp in given_logprobs(text)
                   if token in ("Yes", "yes", "YES"))
    zeros += expected == 0
    assert result == AttributionScore(pytest.approx(expected, abs=1e-12), expected > 0.5,
                                      1, False)
  assert 0 < zeros < len(examples)  # prompts without any "yes" score 0
  for body in server.bodies:
    assert body["model"] == MODEL and body["temperature"] == 0 and body["max_tokens"] == 1
    if api == "chat":
      assert body["logprobs"] is True and body["top_logprobs"] == 5
      assert [m["role"] for m in body["messages"]] == ["system", "user"]
    else:
      assert body["logprobs"] == 5 and body["prompt"].endswith("<|im_start|>assistant\n")


_LONG = ("Mars has two moons. Phobos is the larger one. Deimos is smaller and farther "
         "out.\nThe planet is red because of iron oxide. Its day lasts about 24 hours "
         "and 37 minutes.\n\nOlympus Mons is the tallest volcano known. It rises far "
         "above the plains around it. ")


@pytest.mark.parametrize("api", APIS)
def test_scores_equal_minichecks_llmcheck(api, server, judge_tokenizer, reference):
  """MiniCheck's own LLMCheck.score (its vLLM engine replaced by the fake
  server's log-probs, its tokenizer by ours) on documents of one and of many
  chunks, with line breaks, and claims of several sentences."""
  inference, _ = reference
  tokenizer_dir, tokenizer = judge_tokenizer
  # A chunk size the first two sentences of _LONG fill exactly: the boundary.
  chunk_size = sum(len(tokenizer(sentence, add_special_tokens=False)["input_ids"])
                   for sentence in sentence_splitter().split(_LONG)[:2])
  docs = [_LONG, _LONG * 3, "A short one.", "", "Line one.\nLine two.\n",
          "Gold's symbol is Au. " * 30]
  claims = ["Mars has two moons. Olympus Mons is tall.", "The day lasts 24 hours.",
            "Short.", "Anything.", "Line two. Line one.", "Gold is Au. Silver is Ag."]
  check = inference.LLMCheck.__new__(inference.LLMCheck)
  check.operating_mode = "bespoke"
  check.system_prompt, check.user_prompt = llm_judge.SYSTEM_PROMPT, llm_judge.USER_PROMPT
  check.tokenizer = tokenizer
  check.max_model_len = 10 * chunk_size
  check.default_chunk_size = chunk_size

  class _Engine:
    prompts = []

    def generate(self, prompts, unused_params):
      self.prompts.extend(prompts)
      return [types.SimpleNamespace(outputs=[types.SimpleNamespace(logprobs=[{
          i: types.SimpleNamespace(decoded_token=token, logprob=lp)
          for i, (token, lp) in enumerate(given_logprobs(prompt))}])])
              for prompt in prompts]

  check.llm = _Engine()
  check.sampling_params = None
  _, expected, used_chunks, _ = check.score(docs, claims, chunk_size)
  examples = [AttributionExample(d, c, "", "") for d, c in zip(docs, claims)]
  results = _score(_handler(server, tokenizer_dir, api, chunk_size=chunk_size), examples)
  assert [r.n_windows for r in results] == [len(chunks) for chunks in used_chunks]
  assert max(len(chunks) for chunks in used_chunks) > 3
  np.testing.assert_allclose([r.nli_score for r in results], expected, rtol=0, atol=1e-12)
  # The same prompts were asked, each once.
  asked = [server.prompt_text("/v1/chat/completions" if api == "chat" else "/v1/completions",
                              body) for body in server.bodies]
  assert sorted(asked) == sorted(set(_Engine.prompts))


def test_requests_run_concurrently_up_to_the_bound(judge_tokenizer):
  tokenizer_dir, tokenizer = judge_tokenizer
  lock, state = threading.Lock(), {"now": 0, "most": 0}
  bound_reached = threading.Event()

  def slow_logprobs(text):
    with lock:
      state["now"] += 1
      state["most"] = max(state["most"], state["now"])
      if state["now"] == 3:
        bound_reached.set()
    # The first requests wait for each other until three are in flight, however
    # slowly their threads start (a handler that never sends three at once
    # waits here once, then the rest go on and `most` tells) ...
    if not bound_reached.wait(30):
      bound_reached.set()
    time.sleep(0.05)  # ... and each stays a moment, so that a fourth would be seen
    with lock:
      state["now"] -= 1
    return given_logprobs(text)

  server = OpenAIServer(tokenizer, top_logprobs=slow_logprobs)
  examples = [AttributionExample(f"Document {i}.", f"Claim {i}.", "", "") for i in range(12)]
  try:
    results = _score(_handler(server, tokenizer_dir, "chat", concurrency=3), examples)
  finally:
    server.close()
  assert state["most"] == 3 and len(server.bodies) == 12
  assert all(isinstance(r, AttributionScore) for r in results)


# ----------------------------------------------------------------------------
# Faults, as for --scorer remote.

_EXAMPLES = [AttributionExample(f"Document {i}. It is about item {i}.",
                                f"Item {i} is described.", "", "") for i in range(8)]


@pytest.mark.parametrize("api", APIS)
def test_retried_faults_give_the_clean_scores(api, judge_tokenizer):
  tokenizer_dir, tokenizer = judge_tokenizer
  clean, faulty = OpenAIServer(tokenizer), OpenAIServer(
      tokenizer, faults=["timeout", "503", "429", "drop", "500", "502"], delay=1.5)
  try:
    expected = _score(_handler(clean, tokenizer_dir, api), _EXAMPLES)
    # 1 s: the "timeout" fault answers after 1.5 s.
    results = _score(_handler(faulty, tokenizer_dir, api, concurrency=4, timeout=1.0),
                     _EXAMPLES)
  finally:
    clean.close()
    faulty.close()
  assert faulty.faults == []
  assert results == expected
  assert all(isinstance(r, AttributionScore) for r in results)


@pytest.mark.parametrize("fault,detail", [
    ("malformed", "malformed response: Expecting"),
    ("nologprobs", "malformed response: no log-probs of the first token")])
def test_a_malformed_answer_fails_that_example_only(fault, detail, judge_tokenizer):
  tokenizer_dir, tokenizer = judge_tokenizer
  server = OpenAIServer(tokenizer, faults=[fault])
  try:
    results = _score(_handler(server, tokenizer_dir, "chat", concurrency=1), _EXAMPLES)
  finally:
    server.close()
  failed = [r for r in results if isinstance(r, ScoringFailure)]
  assert len(failed) == 1 and failed[0].status == 200 and failed[0].message.startswith(detail)
  assert isinstance(results[0], ScoringFailure)  # one at a time: the first request
  assert sum(isinstance(r, AttributionScore) for r in results) == len(_EXAMPLES) - 1


def test_retries_exhausted_and_refused_prompts_fail_with_their_status(judge_tokenizer):
  tokenizer_dir, tokenizer = judge_tokenizer
  server = OpenAIServer(tokenizer, faults=["503"] * 3)
  examples = _EXAMPLES[:2] + [AttributionExample("REFUSE-ME doc.", "A claim.", "", "")]
  try:
    results = _score(_handler(server, tokenizer_dir, "chat", concurrency=1,
                              max_retries=2), examples)
  finally:
    server.close()
  assert results[0] == ScoringFailure(503, "injected 503 (after 3 attempts)")
  assert isinstance(results[1], AttributionScore)
  assert results[2].status == 400 and "maximum context length" in results[2].message


def test_connection_refused_fails_every_example_with_status_0(judge_tokenizer):
  tokenizer_dir, _ = judge_tokenizer
  with socket.socket() as probe:
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
  handler = llm_judge.LlmJudgeModelHandler(f"http://127.0.0.1:{port}/v1", MODEL,
                                           tokenizer_dir, max_retries=2, backoff=0.01)
  results = _score(handler, _EXAMPLES[:2])
  assert [r.status for r in results] == [0, 0]
  assert all("no response" in r.message and "after 3 attempts" in r.message
             for r in results)


def test_a_wrong_model_name_stops_the_job(judge_tokenizer):
  tokenizer_dir, tokenizer = judge_tokenizer
  server = OpenAIServer(tokenizer)
  try:
    handler = llm_judge.LlmJudgeModelHandler(server.url, "another/model", tokenizer_dir,
                                             **FAST)
    with pytest.raises(EndpointMisconfigured, match="HTTP 404.*another/model"):
      _score(handler, _EXAMPLES[:1])
  finally:
    server.close()


# ----------------------------------------------------------------------------
# agreement, end to end.

_ROWS = [{"dataset": "a" if i % 2 else "b", "doc": f"Passage {i}. It names item {i}.",
          "claim": f"Item {i} is named.", "label": i % 3 % 2} for i in range(10)]
_ROWS[4] = dict(_ROWS[4], doc="REFUSE-ME " + _ROWS[4]["doc"])


def _agreement(tmp_path, server, tokenizer_dir, output, *extra):
  source = tmp_path / "rows.jsonl"
  source.write_text("".join(json.dumps(row) + "\n" for row in _ROWS))
  return run_job(agreement, "--input", source, "--format", "aggrefact",
                 "--output_dir", tmp_path / output, "--scorer", "llm-judge",
                 "--judge_url", server.url, "--judge_model", MODEL,
                 "--tokenizer", tokenizer_dir, "--request_timeout", "2",
                 "--retry_backoff", "0.01", *extra)


def test_agreement_with_the_judge(tmp_path, judge_tokenizer, monkeypatch):
  tokenizer_dir, tokenizer = judge_tokenizer
  monkeypatch.setenv("JUDGE_KEY", "secret-key")
  server = OpenAIServer(tokenizer, faults=["503", "drop", "malformed"], every=3)
  cache = tmp_path / "cache"
  try:
    assert _agreement(tmp_path, server, tokenizer_dir, "first", "--judge_api_key_env",
                      "JUDGE_KEY", "--score_cache", cache) == 0
    first_requests = len(server.bodies)
    assert _agreement(tmp_path, server, tokenizer_dir, "again", "--score_cache",
                      cache) == 0
    again_requests = len(server.bodies) - first_requests
  finally:
    server.close()
  manifest = json.loads((tmp_path / "first" / "run.json").read_text())
  counts, scorer = manifest["counts"], manifest["scorer"]
  assert counts["reconciled"] and counts["read"] == 10
  assert counts["by_reason"]["rejected:scoring_failed"] == 2  # refused, malformed
  assert scorer["family"] == "llm-judge" and scorer["judge_url"] == server.url
  assert scorer["judge_model"] == MODEL and scorer["judge_api"] == "chat"
  assert scorer["prompt_sha256"] == llm_judge.prompt_digest()
  assert scorer["judge_api_key_env"] == "JUDGE_KEY"
  assert "secret-key" not in (tmp_path / "first" / "run.json").read_text()
  assert server.authorizations == {"Bearer secret-key", None}  # first run, later ones
  dead = [json.loads(line) for line in
          (tmp_path / "first" / "dead_letter.jsonl").read_text().splitlines()]
  statuses = sorted(d["record"]["http_status"] for d in dead)
  assert statuses == [200, 400] and all(d["reason"] == "scoring_failed" for d in dead)
  with open(tmp_path / "first" / "agreement_rows.csv", newline="", encoding="utf-8") as f:
    rows = list(csv.DictReader(f))
  assert len(rows) == 8
  for row in rows:  # each score is the formula's
    row_input = _ROWS[int(row["source_line"]) - 1]
    user = "Document: " + row_input["doc"] + "\nClaim: " + row_input["claim"]
    text = tokenizer.apply_chat_template(
        [{"role": "system", "content": llm_judge.SYSTEM_PROMPT},
         {"role": "user", "content": user}], add_generation_prompt=True, tokenize=False)
    expected = sum(math.exp(lp) for t, lp in given_logprobs(text) if t.lower() == "yes")
    assert float(row["nli_score"]) == pytest.approx(expected, abs=1e-9)
  # The cache: a rerun asks only what failed before.
  again = json.loads((tmp_path / "again" / "run.json").read_text())["scorer"]
  assert again["cache_hits"] == 8 and again_requests == 2
  assert again["score_cache_key"] == scorer["score_cache_key"]


def test_the_cache_identity_names_endpoint_model_api_and_prompt(judge_tokenizer):
  from autoais.transforms.scoring.llm_judge import LlmJudgeScorer  # pylint: disable=import-outside-toplevel
  tokenizer_dir, _ = judge_tokenizer
  settings = {"url": "http://h:8000/v1", "model": MODEL, "api": "chat", "chunk_size": 100,
              "concurrency": 2}
  info = llm_judge.describe_judge(tokenizer_dir)
  assert info["prompt_sha256"] == llm_judge.prompt_digest()

  def identity(worker=None, **changed):
    scorer = LlmJudgeScorer(tokenizer_path=tokenizer_dir, **{**settings, **changed})
    return scorer.cache_identity(dict(info, **(worker or {})))

  base = identity()
  assert base == identity(concurrency=9)  # how it is asked is not what is asked
  for changed in ({"url": "http://other:8000/v1"}, {"model": "another/judge"},
                  {"api": "completions"}, {"chunk_size": 50},
                  {"worker": {"prompt_sha256": "0" * 64}},
                  {"worker": {"tokenizer_sha256": "1" * 64}},
                  {"worker": {"sentence_splitter": {"name": "nltk-punkt", "version": "3.9"}}}):
    assert identity(**changed) != base, changed


def test_launch_checks(tmp_path, judge_tokenizer, capsys):
  tokenizer_dir, tokenizer = judge_tokenizer
  server = OpenAIServer(tokenizer)
  try:
    assert _agreement(tmp_path, server, tokenizer_dir, "o1", "--judge_model",
                      "other/model") == 2
    assert "serves bespokelabs/Bespoke-MiniCheck-7B" in capsys.readouterr().err
    assert _agreement(tmp_path, server, tokenizer_dir, "o2", "--judge_api_key_env",
                      "AUTOAIS_NO_SUCH_VARIABLE") == 2
    assert "environment variable is not set" in capsys.readouterr().err
  finally:
    server.close()
  assert _agreement(tmp_path, server, tokenizer_dir, "o3") == 2  # nothing listens
  assert "does not answer" in capsys.readouterr().err
