"""MiniCheck scoring benchmark (not a test): MiniCheck's own Inferencer against
our minicheck scorer, on the same model and documents.

    .venv/bin/python bench/minicheck.py [--n 64] [--chunk_size 100] [--rounds 2]
        [--workdir bench/out]

One random-weight T5 v1.1 with t5-small's shape (d_model 512, 6+6 layers,
gated-GELU d_ff 1024; a SentencePiece vocabulary of 4,000 pieces trained on the
documents), scored as MiniCheck-Flan-T5 (`predict: {doc}</s>{claim}`, ids 3 and
209), on N AttributionBench (claim, reference passage) pairs from
../shared/data, chunked at `--chunk_size` words (MiniCheck's default is 500;
smaller, so that documents of this data set make several chunks), measured side
by side, alternated in halves, `--rounds` times:

* the reference: ../shared/reference/minicheck/inference.py's Inferencer, run
  as it is (its hub loaders pointed at the model directory, its
  `sent_tokenize` at our splitter): one document at a time, its chunks in
  mini-batches of 16, the model's full forward pass;
* ours (models/minicheck.py): the chunks of every document in one call,
  length-sorted token-budget batches, one encoder pass and the one decoder step
  over the two label rows only.

Prints one JSON line: examples/s of each, the ratio, chunks, and the max abs
difference of the scores.
"""
import argparse
import json
import os
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from autoais.models.minicheck import load_minicheck  # pylint: disable=wrong-import-position
from tests.support.t5_models import build_random_t5  # pylint: disable=wrong-import-position
from autoais.schemas import AttributionExample  # pylint: disable=wrong-import-position

SHARED = os.environ.get("AUTOAIS_SHARED_DATA", os.path.join(ROOT, "..", "shared", "data"))
T5_SMALL = dict(d_model=512, d_kv=64, d_ff=1024, num_layers=6, num_heads=8,
                vocab_size=4000, version="1.1")


def pairs(n):
  path = os.path.join(SHARED, "attributionbench", "dev_all_subset_balanced.jsonl")
  with open(path, encoding="utf-8") as f:
    records = [json.loads(line) for line in f]
  return [(record["references"][0], record["claim"]) for record in records
          if record["references"] and record["references"][0].strip()][:n]


def reference_inferencer(model_dir, split, chunk_size):
  """MiniCheck's Inferencer on `model_dir`, imported from ../shared/reference."""
  import nltk  # pylint: disable=import-outside-toplevel
  import transformers  # pylint: disable=import-outside-toplevel
  nltk.download = lambda *args, **kwargs: False  # its package would fetch punkt
  sys.path.insert(0, os.path.join(SHARED, "..", "reference"))
  from minicheck import inference  # pylint: disable=import-outside-toplevel

  class Local:
    def __init__(self, auto):
      self._auto = auto

    def from_pretrained(self, unused_name, **kwargs):
      for hub_only in ("cache_dir", "device_map"):
        kwargs.pop(hub_only, None)
      return self._auto.from_pretrained(model_dir, **kwargs)

  inference.AutoTokenizer = Local(transformers.AutoTokenizer)
  inference.AutoModelForSeq2SeqLM = Local(transformers.AutoModelForSeq2SeqLM)
  inference.sent_tokenize = split
  inferencer = inference.Inferencer("flan-t5-large", None, 16, None)
  inferencer.chunk_size = chunk_size
  return inferencer


def main():
  parser = argparse.ArgumentParser()
  parser.add_argument("--n", type=int, default=64)
  parser.add_argument("--chunk_size", type=int, default=100)
  parser.add_argument("--rounds", type=int, default=2)
  parser.add_argument("--workdir", default=os.path.join(ROOT, "bench", "out"))
  args = parser.parse_args()
  data = pairs(args.n)
  model_dir = os.path.join(args.workdir, "minicheck-t5-small-random")
  if not os.path.exists(os.path.join(model_dir, "config.json")):
    build_random_t5(model_dir, [doc for doc, _ in data] + [c for _, c in data],
                    **T5_SMALL)
  ours = load_minicheck(model_dir, chunk_size=args.chunk_size)
  reference = reference_inferencer(model_dir, ours.splitter.split, args.chunk_size)
  examples = [AttributionExample(doc, claim, "", "") for doc, claim in data]
  halves = [slice(0, len(data) // 2), slice(len(data) // 2, len(data))]
  seconds = {"reference": 0.0, "ours": 0.0}
  got, expected = {}, {}
  for _ in range(args.rounds):
    for half in halves:
      started = time.perf_counter()
      for index in range(len(data))[half]:
        expected[index] = reference.inference_per_example(*data[index])["max_support_prob"]
      seconds["reference"] += time.perf_counter() - started
      started = time.perf_counter()
      scores = ours.score(examples[half], threshold=0.5)
      seconds["ours"] += time.perf_counter() - started
      got.update(zip(range(len(data))[half], scores))
  count = len(data) * args.rounds
  print(json.dumps({
      "examples": len(data), "rounds": args.rounds, "chunk_size": args.chunk_size,
      "splitter": ours.splitter.describe(),
      "chunks": sum(score.n_windows for score in got.values()),
      "reference_examples_per_s": round(count / seconds["reference"], 2),
      "ours_examples_per_s": round(count / seconds["ours"], 2),
      "ours_over_reference": round(seconds["reference"] / seconds["ours"], 3),
      "max_abs_diff": float(np.max(np.abs(
          [got[i].nli_score - expected[i] for i in range(len(data))]))),
  }))


if __name__ == "__main__":
  main()
