"""`autoais serve` under concurrent clients (not a test): throughput with 16
clients against one client at a time, side by side in one run, with the
batches the server formed.

    .venv/bin/python bench/serve.py [--requests 96] [--instances 8] [--clients 16]
        [--model DIR] [--workdir bench/out] [--url http://HOST:PORT]

On a tiny random-weight T5 (tests/support/t5_models.py; or --model DIR) and requests of
--instances (premise, hypothesis) pairs from the example corpus and gold
(each premise one or two passages, so requests differ in length), it starts
two servers and runs, one after another, the same --requests requests:

* `one_client`: one client at a time against the batching server (defaults:
  --max_batch_windows 256, --max_wait_ms 5);
* `clients_batched`: --clients concurrent clients against it;
* `clients_unbatched`: --clients concurrent clients against a server run with
  --max_batch_windows 1 (each request scored alone, as before batching).

For each: instances per second, p50/p99 latency, and, from the server's
/metrics, the batches formed (requests per batch, windows per batch). With
--url it measures an endpoint already running (any server of the prediction
format) with one client and --clients, without batch figures.

Prints one JSON line.
"""
import argparse
import json
import os
import random
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from tests.support import serve_load as load  # pylint: disable=wrong-import-position


def example_pairs():
  """(premise, hypothesis) pairs of the bundled examples: passages and
  questions with their answers."""
  with open(os.path.join(ROOT, "examples", "corpus", "wiki_sample.jsonl"),
            encoding="utf-8") as f:
    passages = [json.loads(line)["contents"] for line in f if line.strip()]
  with open(os.path.join(ROOT, "examples", "gold.jsonl"), encoding="utf-8") as f:
    gold = [json.loads(line) for line in f if line.strip()]
  return passages, [f"The answer to the question '{g['question']}' is '{g['answer'][0]}'"
                    for g in gold]


def request_bodies(count: int, per_request: int, seed: int = 0):
  passages, hypotheses = example_pairs()
  rng = random.Random(seed)
  bodies = []
  for _ in range(count):
    pairs = []
    for _ in range(per_request):
      premise = " ".join(rng.sample(passages, rng.choice((1, 2))))
      pairs.append((premise, rng.choice(hypotheses)))
    bodies.append(load.instances_body(pairs))
  return bodies


def build_model(workdir: str) -> str:
  from tests.support.t5_models import build_random_t5  # pylint: disable=import-outside-toplevel
  passages, hypotheses = example_pairs()
  directory = os.path.join(workdir, "tiny_t5")
  if not os.path.exists(os.path.join(directory, "config.json")):
    build_random_t5(directory, passages + hypotheses + ["premise: hypothesis:"] * 50,
                    vocab_size=2000, seed=3)
  return directory


def _batches(before, after):
  """Batch-size histograms formed between two /metrics readings."""
  out = {}
  for key in ("requests_per_batch", "windows_per_batch"):
    delta = {size: count - before[key].get(size, 0) for size, count in after[key].items()}
    out[key] = {size: count for size, count in sorted(delta.items(), key=lambda kv: int(kv[0]))
                if count}
  out["batches"] = after["batches"] - before["batches"]
  return out


def measure(url: str, bodies, clients: int, with_metrics: bool = True):
  load.send_concurrently(url, bodies[:max(2, clients)], clients)  # warm up
  before = load.metrics(url) if with_metrics else None
  result = load.send_concurrently(url, bodies, clients)
  figures = {
      "clients": clients,
      "requests": len(bodies),
      "answered_200": result.statuses.count(200),
      "seconds": round(result.seconds, 3),
      "instances_per_second": round(result.instances_per_second(), 1),
      "p50_ms": round(1000 * result.percentile(0.5), 1),
      "p99_ms": round(1000 * result.percentile(0.99), 1),
  }
  if with_metrics:
    figures.update(_batches(before, load.metrics(url)))
  return figures


def main():
  parser = argparse.ArgumentParser()
  parser.add_argument("--requests", type=int, default=96)
  parser.add_argument("--instances", type=int, default=8)
  parser.add_argument("--clients", type=int, default=16)
  parser.add_argument("--model", default=None)
  parser.add_argument("--workdir", default=None)
  parser.add_argument("--url", default=None)
  args = parser.parse_args()
  bodies = request_bodies(args.requests, args.instances)
  if args.url:
    print(json.dumps({"url": args.url,
                      "one_client": measure(args.url, bodies, 1, False),
                      "clients": measure(args.url, bodies, args.clients, False)}))
    return
  workdir = args.workdir or tempfile.mkdtemp(prefix="bench-serve-")
  model = args.model or build_model(workdir)
  results = {"model": model, "instances_per_request": args.instances}
  for name, flags, clients in (
      ("one_client", [], 1),
      ("clients_batched", [], args.clients),
      ("clients_unbatched", ["--max_batch_windows", "1"], args.clients)):
    process, url = load.start_server(["--model", model, *flags])
    try:
      results[name] = measure(url, bodies, clients)
    finally:
      load.stop_server(process)
  results["batched_over_one_client"] = round(
      results["clients_batched"]["instances_per_second"]
      / results["one_client"]["instances_per_second"], 2)
  results["batched_over_unbatched"] = round(
      results["clients_batched"]["instances_per_second"]
      / results["clients_unbatched"]["instances_per_second"], 2)
  print(json.dumps(results))


if __name__ == "__main__":
  main()
