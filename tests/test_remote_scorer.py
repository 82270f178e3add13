"""Hosted models: `autoais serve`, `--scorer remote` against it and against a
fault-injecting server, and `--scorer vertex` through Beam's Vertex AI handler
(its endpoint faked: no network).
"""
import csv
import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from unittest import mock

import pytest

from beam_jobs import evaluate
from models import remote
from schemas import AttributionExample, AttributionScore, ScoringFailure
from tests.conftest import EXAMPLES, PROJECT_ROOT, read_jsonl, run_job
from tests.fault_server import FaultServer
from tests.scorers import hash_score

SYSTEMS = ("retrieve-then-read", "keyword-baseline", "closed-book-lm")


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


@pytest.fixture(scope="module")
def served(tiny_t5_dirs):
  """`autoais serve` in its own process on a free port of 127.0.0.1."""
  env = dict(os.environ, PYTHONPATH=str(PROJECT_ROOT))
  process = subprocess.Popen(
      [sys.executable, "-m", "beam_jobs.cli", "serve", "--model", tiny_t5_dirs[3],
       "--port", "0"], cwd=PROJECT_ROOT, env=env, stderr=subprocess.PIPE, text=True)
  url = None
  deadline = time.time() + 120
  while url is None and time.time() < deadline:
    line = process.stderr.readline()
    if not line and process.poll() is not None:
      break
    found = re.search(r"listening on (http://127\.0\.0\.1:\d+)", line)
    url = found.group(1) if found else None
  assert url, "autoais serve did not start"
  yield url
  process.send_signal(signal.SIGTERM)
  assert process.wait(timeout=30) == 0  # stops cleanly on SIGTERM


def _post(url, payload):
  request = urllib.request.Request(url + "/predict", json.dumps(payload).encode(),
                                   headers={"Content-Type": "application/json"})
  try:
    with urllib.request.urlopen(request, timeout=30) as response:
      return response.status, json.loads(response.read())
  except urllib.error.HTTPError as error:
    return error.code, json.loads(error.read())


def test_serve_speaks_the_vertex_prediction_format(served, tiny_t5_dirs):
  from models import t5_nli  # pylint: disable=import-outside-toplevel
  with urllib.request.urlopen(served + "/health", timeout=30) as response:
    health = json.loads(response.read())
  assert health["status"] == "ok"
  assert health["model"]["weights_sha256"] == t5_nli.describe_model(
      tiny_t5_dirs[3], None)["weights_sha256"]
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
                                                   examples_corpus_dir, tmp_path):
  assert _evaluate(examples_corpus_dir, tmp_path / "remote", "--scorer", "remote",
                   "--endpoint", served) == 0
  assert _evaluate(examples_corpus_dir, tmp_path / "local", "--scorer", "t5",
                   "--model", tiny_t5_dirs[3]) == 0
  remote_rows, local_rows = _ratings(tmp_path / "remote"), _ratings(tmp_path / "local")
  assert len(remote_rows) == len(local_rows) > 20
  for row, reference in zip(remote_rows, local_rows):
    assert row.pop("scorer") == "remote" and reference.pop("scorer") == "t5"
    assert float(row.pop("nli_score")) == pytest.approx(
        float(reference.pop("nli_score")), abs=1e-6)
    assert row == reference
  manifest = json.loads((tmp_path / "remote" / "run.json").read_text())
  assert manifest["scorer"]["served_model"]["weights_sha256"] == json.loads(
      (tmp_path / "local" / "run.json").read_text())["scorer"]["weights_sha256"]
  assert manifest["scorer"]["model_calls"] == manifest["scorer"]["unique_triples"]


def test_unreachable_endpoint_is_a_configuration_error(examples_corpus_dir, tmp_path,
                                                       capsys):
  code = _evaluate(examples_corpus_dir, tmp_path / "out", "--scorer", "remote",
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
def fault_runs(examples_corpus_dir, tmp_path_factory):
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
    codes = {name: _evaluate(examples_corpus_dir, root / name, *_REMOTE_FLAGS,
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
    assert (root / "clean" / name).read_bytes() == (root / "faulty" / name).read_bytes()
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


def test_misconfigured_endpoint_fails_the_job():
  server = FaultServer(faults=["404"])
  try:
    handler = remote.RemoteNliModelHandler(server.url, max_retries=3, backoff=0.01)
    with pytest.raises(remote.EndpointMisconfigured, match="HTTP 404"):
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
  scorer = remote.VertexScorer("1234", "my-project", "us-central1", threshold=0.3,
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


def test_evaluate_with_vertex_scorer(fake_vertex, examples_corpus_dir, tmp_path):
  assert _evaluate(examples_corpus_dir, tmp_path / "out", "--scorer", "vertex",
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


def test_vertex_needs_its_flags(examples_corpus_dir, tmp_path, capsys):
  assert _evaluate(examples_corpus_dir, tmp_path / "out", "--scorer", "vertex",
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
  from beam_jobs import agreement  # pylint: disable=import-outside-toplevel
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


def test_claims_stops_when_a_hosted_model_refuses_a_claim(tmp_path, capsys):
  """The claims job builds an answer's figures from all its claims: a refused
  one stops it (exit 1, the reason given) rather than report figures without it."""
  from beam_jobs import claims  # pylint: disable=import-outside-toplevel
  source = tmp_path / "claims.jsonl"
  source.write_text("".join(json.dumps(line) + "\n" for line in [
      {"system_name": "s", "question": "q?", "claim": "Mars has two moons.",
       "evidence": ["[1] http://x\n\nMars has two moons."], "support": "Complete"},
      {"system_name": "s", "question": "q?", "claim": "REFUSE-ME",
       "evidence": ["[2] http://y\n\nSomething."], "support": "Missing"}]))
  server = FaultServer()
  try:
    code = run_job(claims, "--input", source, "--format", "jsonl", "--output_dir",
                   tmp_path / "out", "--scorer", "remote", "--endpoint", server.url,
                   "--request_timeout", "5")
  finally:
    server.close()
  assert code == 1
  assert "does not dead-letter scoring failures (scoring failed permanently (HTTP 422)" \
      in capsys.readouterr().err
  assert not (tmp_path / "out" / "run.json").exists()
