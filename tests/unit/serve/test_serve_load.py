"""`autoais serve` in its own process on 127.0.0.1 with the tiny T5, under load:
64 concurrent clients, a few hundred requests, a 20 MB instance and a deeply
nested body sent in the middle; then SIGTERM while a request is in flight.
Scores through the server (batching on) equal the in-process scorer's."""
import json
import random
import threading
import time

import pytest

from autoais.models import t5_nli
from autoais.beam_jobs.serve import load_served_model, parse_args
from autoais.schemas import AttributionExample
from tests.support.nli_classifiers import build_tiny_classifier
from tests.support.paths import EXAMPLES
from tests.support.vocab import example_texts
from tests.support import serve_load as load

CLIENTS = 64
REQUESTS = 320


def _pool():
  """Distinct (premise, hypothesis) pairs: passages alone and joined (the
  longest past the tiny T5's 512 tokens: windowed), questions as hypotheses."""
  passages = [json.loads(line)["contents"] for line in
              (EXAMPLES / "corpus" / "wiki_sample.jsonl").read_text().splitlines()]
  questions = [json.loads(line)["question"] for line in
               (EXAMPLES / "gold.jsonl").read_text().splitlines()]
  rng = random.Random(7)
  pool = []
  for index in range(48):
    premise = " ".join(rng.sample(passages, 1 + index % 3 + 4 * (index % 16 == 0)))
    pool.append((premise, f"The answer to '{questions[index % len(questions)]}' is it"))
  return pool


@pytest.fixture(scope="module")
def server(tiny_t5_dirs):
  """(process, URL) of `autoais serve` on the tiny T5; the module's last test
  stops it with SIGTERM."""
  process, url = load.start_server(["--model", tiny_t5_dirs[3]])
  yield process, url
  if process.poll() is None:
    load.stop_server(process)


def test_64_clients_with_hostile_requests_in_the_middle(server, tiny_t5_dirs):
  _, url = server
  pool = _pool()
  rng = random.Random(11)
  plan = [[rng.randrange(len(pool)) for _ in range(rng.randint(1, 6))]
          for _ in range(REQUESTS)]
  bodies = [load.instances_body([pool[i] for i in indices]) for indices in plan]
  huge_premise, hypothesis = "word " * 4_000_000, "a hypothesis"
  huge = load.instances_body([(huge_premise, hypothesis)])  # 20 MB
  nested = b"[" * 100_000 + b"]" * 100_000
  middle = REQUESTS // 2
  bodies[middle:middle] = [huge, nested]
  plan[middle:middle] = [None, None]

  result = load.send_concurrently(url, bodies, CLIENTS, timeout=60)

  hostile = {"20 MB instance": middle, "100,000 nested brackets": middle + 1}
  for name, index in hostile.items():
    print(f"{name}: HTTP {result.statuses[index]} in "
          f"{1000 * result.latencies[index]:.0f} ms: {result.answers[index]}")
  assert len(huge) > 20_000_000
  assert result.statuses[middle] == 413
  assert result.answers[middle]["error"] == (
      f"instance 0: {len(huge_premise) + len(hypothesis)} characters of premise and "
      "hypothesis: at most 200000 an instance (--max_instance_chars)")
  assert result.statuses[middle + 1] == 400
  assert "(--max_json_depth)" in result.answers[middle + 1]["error"]
  valid = [i for i, indices in enumerate(plan) if indices is not None]
  print(f"{len(valid)} valid requests from {CLIENTS} clients in {result.seconds:.1f} s: "
        f"p50 {1000 * result.percentile(0.5):.0f} ms, "
        f"p99 {1000 * result.percentile(0.99):.0f} ms")
  assert [result.statuses[i] for i in valid] == [200] * len(valid)  # none timed out

  model = t5_nli.load_t5_nli(tiny_t5_dirs[3])
  local = model.score([AttributionExample(p, h, "", "") for p, h in pool], "threshold",
                      0.5)
  assert any(score.n_windows > 1 for score in local)
  for index in valid:
    predictions = result.answers[index]["predictions"]
    assert len(predictions) == len(plan[index])
    for prediction, item in zip(predictions, plan[index]):
      assert prediction["nli_score"] == pytest.approx(local[item].nli_score, abs=1e-6)
      assert prediction["n_windows"] == local[item].n_windows
      assert prediction["truncated"] is local[item].truncated
  metrics = load.metrics(url)
  print("batches formed (requests per batch: count):", metrics["requests_per_batch"])
  assert metrics["batched_requests"] == len(valid)
  assert metrics["batches"] < len(valid)  # requests shared batches
  assert metrics["requests_by_status"] == {"200": len(valid), "400": 1, "413": 1}
  assert load.get_json(url, "/health")[0] == 200


def test_both_families_score_through_the_served_model_as_in_process(tiny_t5_dirs,
                                                                     tmp_path):
  """serve/batching.py encodes and scores in two halves; the scores are the
  family's own `score`'s (1e-6), for the t5 and nli-classifier families."""
  from autoais.serve.batching import Limits  # pylint: disable=import-outside-toplevel
  classifier = build_tiny_classifier(str(tmp_path / "roberta"), "roberta",
                                     {0: "entailment", 1: "neutral", 2: "contradiction"},
                                     example_texts(), 64)
  examples = [AttributionExample(p, h, "", "") for p, h in _pool()[:18]]
  for family, path in (("t5", tiny_t5_dirs[3]), ("nli-classifier", classifier)):
    served, description = load_served_model(
        parse_args(["--model", path, "--scorer", family]), path)
    assert description["scorer"] == family and description["weights_sha256"]
    halves = served.score(served.encode(examples, Limits()))
    whole = (served.model.score(examples, "threshold", 0.5) if family == "t5"
             else served.model.score(examples, 0.5))
    assert [s.n_windows for s in halves] == [s.n_windows for s in whole]
    assert any(s.n_windows > 1 for s in whole), family
    for mine, theirs in zip(halves, whole):
      assert mine.nli_score == pytest.approx(theirs.nli_score, abs=1e-6)


def test_sigterm_drains_the_request_in_flight(server):
  """Last in this module: it stops the module's server."""
  process, url = server
  pool = _pool()
  heavy = load.instances_body(pool * 2)  # most of a second of the tiny model's work
  answer = {}

  def send():
    answer.update(zip(("status", "body", "seconds"), load.post(url, heavy, timeout=60)))
    answer["at"] = time.monotonic()

  sender = threading.Thread(target=send)
  sender.start()
  deadline = time.time() + 30
  while load.metrics(url)["in_flight_requests"] == 0 and time.time() < deadline:
    time.sleep(0.01)
  signalled = time.monotonic()
  assert load.stop_server(process) == 0  # SIGTERM: exits 0 once drained
  sender.join()
  assert answer["at"] > signalled  # it was in flight when SIGTERM came
  assert answer["status"] == 200 and len(answer["body"]["predictions"]) == len(pool) * 2
  assert load.post(url, load.instances_body(pool[:1]), timeout=5)[0] == 0  # gone
