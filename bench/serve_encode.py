"""`autoais serve`'s encode half (not a test): a request's instances tokenised
one at a time, as serve did until 2026-11-28, against grouped (ServedModel.encode:
`encode_many` over groups of the request), side by side in one run.

    .venv/bin/python bench/serve_encode.py [--requests 300] [--sizes 1,8,32]
        [--families t5,nli-classifier-roberta,nli-classifier-deberta]
        [--rounds 3] [--workdir bench/out]

Each family is a tiny model with its own trained tokenizer (the t5 family's
SentencePiece `spiece.model`; the classifiers' RoBERTa byte-level BPE and
DeBERTa-v3 `spm.model`, 4,000 pieces) loaded twice by
beam_jobs/serve.load_served_model, one copy per way, so both ways keep their
own caches of premises and words. Requests are bench/serve.py's: --size pairs
of one or two passages of the example corpus and a gold answer's hypothesis.
The two ways take the same requests in alternation, each request timed by the
encoding thread's CPU time; both ways' model inputs are compared (they must be
equal). Only the encode half is timed: scoring is the batcher's and unchanged.

Prints one JSON line: per family and request size, instances per CPU s of each
way (median of --rounds, each round a fresh pair of models) and grouped / one
at a time, with the pure-Python yardstick of bench/pipeline.py.
"""
import argparse
import json
import os
import random
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from pipeline import python_speed_seconds  # pylint: disable=wrong-import-position
from serve import build_model as build_t5, example_pairs  # pylint: disable=wrong-import-position

FAMILIES = ("t5", "nli-classifier-roberta", "nli-classifier-deberta")
CLASSIFIER_KINDS = {"nli-classifier-roberta": "roberta",
                    "nli-classifier-deberta": "deberta-v2"}


def build_classifier(workdir: str, kind: str) -> str:
  from tests.support.nli_classifiers import build_tiny_classifier  # pylint: disable=import-outside-toplevel
  directory = os.path.join(workdir, f"tiny_{kind}_4000")
  if not os.path.exists(os.path.join(directory, "config.json")):
    passages, hypotheses = example_pairs()
    build_tiny_classifier(directory, kind,
                          {0: "entailment", 1: "neutral", 2: "contradiction"},
                          passages + hypotheses, model_max_length=512, vocab_size=4000)
  return directory


def requests(count: int, size: int, seed: int):
  from autoais.schemas import AttributionExample  # pylint: disable=import-outside-toplevel
  passages, hypotheses = example_pairs()
  rng = random.Random(seed)
  return [[AttributionExample(" ".join(rng.sample(passages, rng.choice((1, 2)))),
                              rng.choice(hypotheses), "", "") for _ in range(size)]
          for _ in range(count)]


def limits(request):
  from autoais.serve.batching import Limits  # pylint: disable=import-outside-toplevel
  return Limits(max_instances=len(request), max_request_windows=1 << 30)


def one_at_a_time(served, request):
  """serve/batching.py's encode before the change: the same limits, checked
  the same way, and one tokenizer call (encode) per instance."""
  bounds = limits(request)
  for example in request:
    assert len(example.premise) + len(example.hypothesis) <= bounds.max_instance_chars
  encoded, total = [], 0
  for index, example in enumerate(request):
    item = served.model.encode(example)
    total = served._check_windows(index, item, total, bounds)  # pylint: disable=protected-access
    encoded.append(item)
  return encoded


def grouped(served, request):
  return served.encode(request, limits(request))


def inputs_of(encoded):
  return [[window if isinstance(window, list) else sorted(window.items())
           for window in item.windows] for item in encoded]


def measure(family: str, path: str, batch: list) -> dict:
  from autoais.beam_jobs.serve import load_served_model, parse_args  # pylint: disable=import-outside-toplevel
  flags = parse_args(["--model", path, "--scorer", "t5" if family == "t5" else "nli-classifier"])
  ways = {"one_at_a_time": (one_at_a_time, load_served_model(flags, path)[0]),
          "grouped": (grouped, load_served_model(flags, path)[0])}
  seconds = {name: 0.0 for name in ways}
  for index, request in enumerate(batch):
    outputs = {}
    # Alternate which way goes first, so neither always meets a warmer CPU cache.
    order = list(ways) if index % 2 == 0 else list(reversed(ways))
    for name in order:
      encode, served = ways[name]
      start = time.thread_time()
      outputs[name] = encode(served, request)
      seconds[name] += time.thread_time() - start
    if inputs_of(outputs["grouped"]) != inputs_of(outputs["one_at_a_time"]):
      raise SystemExit(f"{family}: request {index}: the two ways' model inputs differ")
  instances = sum(len(request) for request in batch)
  return {name: instances / seconds[name] for name in ways}


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
  parser.add_argument("--requests", type=int, default=300)
  parser.add_argument("--sizes", default="1,8,32")
  parser.add_argument("--families", default=",".join(FAMILIES))
  parser.add_argument("--rounds", type=int, default=3)
  parser.add_argument("--workdir", default=os.path.join(ROOT, "bench", "out"))
  args = parser.parse_args(argv)
  os.makedirs(args.workdir, exist_ok=True)
  families = args.families.split(",")
  for family in families:
    if family not in FAMILIES:
      parser.error(f"--families: {family!r} is not one of {', '.join(FAMILIES)}")
  paths = {family: (build_t5(args.workdir) if family == "t5"
                    else build_classifier(args.workdir, CLASSIFIER_KINDS[family]))
           for family in families}
  yardstick = python_speed_seconds()
  results = {}
  for family in families:
    for size in (int(size) for size in args.sizes.split(",")):
      rates = [measure(family, paths[family], requests(args.requests, size, seed))
               for seed in range(args.rounds)]
      one = statistics.median(rate["one_at_a_time"] for rate in rates)
      many = statistics.median(rate["grouped"] for rate in rates)
      results[f"{family}/{size}"] = {
          "one_at_a_time_instances_per_cpu_s": round(one),
          "grouped_instances_per_cpu_s": round(many),
          "grouped_over_one_at_a_time": round(many / one, 2)}
  print(json.dumps({"requests": args.requests, "rounds": args.rounds,
                    "yardstick_s": round(yardstick, 3), "results": results}))


if __name__ == "__main__":
  main()
