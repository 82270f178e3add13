"""Loading a checkpoint as it is published (not a test): memory and tokenizer cost.

    .venv/bin/python bench/model_load.py [--parts memory,tokenizer]
        [--shape base|small|large] [--workdir bench/out/model_load]

memory: a random-weight T5 of t5-base's shape (d_model 768, 12+12 layers,
d_ff 3072, vocabulary 32128; t5-small's or T5 v1.1 large's with --shape
small|large) written in float32 as the published checkpoints are (safetensors
shards with their index), then loaded by models/t5_nli.load_t5_nli in a fresh
process, once with --dtype bfloat16 and once with float32. Printed per dtype:
the parameters' bytes, the peak growth of the process's anonymous memory while
loading (what it holds itself: a float32 copy of the weights would show here),
and the peak of file-backed pages (the memory-mapped shards, page cache the
kernel can drop). The ratio that matters: peak anonymous growth in bfloat16 /
float32 bytes on disk (0.5 plus small change means no float32 copy was held).

tokenizer: a SentencePiece vocabulary as large as the shared data can train
(asked for T5's 32,000 pieces) written in the published layout (spiece.model +
tokenizer_config.json, no tokenizer.json), loaded with transformers'
AutoTokenizer (which builds the fast tokenizer from the SentencePiece model),
against the same tokenizer loaded from the tokenizer.json it saves, alternated,
5 rounds, medians.

Prints one JSON line.
"""
import argparse
import glob
import gzip
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from tests.support.t5_models import (build_random_t5, train_sentencepiece,  # pylint: disable=wrong-import-position
                                     write_published_tokenizer)

SHARED = os.environ.get("AUTOAIS_SHARED_DATA", os.path.join(ROOT, "..", "shared", "data"))
SHAPES = {
    "base": {"d_model": 768, "d_kv": 64, "d_ff": 3072, "num_layers": 12, "num_heads": 12},
    "small": {"d_model": 512, "d_kv": 64, "d_ff": 2048, "num_layers": 6, "num_heads": 8},
    # T5 v1.1 large (about 780M parameters, 3.1 GB in float32).
    "large": {"d_model": 1024, "d_kv": 64, "d_ff": 2816, "num_layers": 24, "num_heads": 16},
}
T5_VOCABULARY = 32128


_LOAD_PROBE = r"""
import json, sys, threading, time
def status():
  values = {}
  with open("/proc/self/status") as f:
    for line in f:
      key, value = line.split(":", 1)
      if key in ("RssAnon", "RssFile"):
        values[key] = int(value.split()[0]) * 1024
  return values
from autoais.models import t5_nli
import torch, transformers  # imported before the baseline: their own memory is not the model's
peak = dict(status())
before = dict(peak)
done = threading.Event()
def poll():
  while not done.is_set():
    for key, value in status().items():
      peak[key] = max(peak[key], value)
    time.sleep(0.001)
thread = threading.Thread(target=poll)
thread.start()
started = time.perf_counter()
model = t5_nli.load_t5_nli(sys.argv[1], dtype=sys.argv[2])
seconds = time.perf_counter() - started
done.set()
thread.join()
parameters = sum(p.numel() * p.element_size() for p in model.model.parameters())
print(json.dumps({"dtype": sys.argv[2], "load_seconds": seconds,
                  "parameter_bytes": parameters,
                  "peak_anonymous_increase": peak["RssAnon"] - before["RssAnon"],
                  "peak_file_backed": peak["RssFile"],
                  "anonymous_after": status()["RssAnon"] - before["RssAnon"]}))
"""


def load_memory_profile(model_dir: str, dtype: str) -> dict:
  """Loads the model with models.t5_nli.load_t5_nli in a fresh process and
  reports its memory: the peak growth of anonymous memory (what the process
  itself holds: a float32 copy of the weights would show here) and the peak of
  file-backed pages (the memory-mapped safetensors files: page cache the
  kernel can drop), polled every millisecond, in bytes."""
  output = subprocess.run([sys.executable, "-c", _LOAD_PROBE, model_dir, dtype],
                          cwd=ROOT, check=True, capture_output=True, text=True,
                          env=dict(os.environ, PYTHONPATH=ROOT)).stdout
  return json.loads(output.strip().splitlines()[-1])


def _shared_texts():
  texts = []
  path = os.path.join(SHARED, "nq_oracle_passages", "nq-open-oracle.jsonl.gz")
  with gzip.open(path, "rt", encoding="utf-8") as f:
    for line in f:
      record = json.loads(line)
      texts.append(f"{record['ctxs'][0]['title']} {record['ctxs'][0]['text']}")
      texts.append(record["question"])
  for path in sorted(glob.glob(os.path.join(SHARED, "*", "*.jsonl"))):
    with open(path, encoding="utf-8") as f:
      for line in f:
        texts.extend(value for value in json.loads(line).values()
                     if isinstance(value, str) and len(value) > 20)
  return texts


def memory(workdir: str, shape: str) -> dict:
  model_dir = os.path.join(workdir, f"t5-{shape}-fp32")
  if not os.path.exists(os.path.join(model_dir, "model.safetensors.index.json")):
    shutil.rmtree(model_dir, ignore_errors=True)
    build_random_t5(model_dir, _shared_texts()[:4000], vocab_size=8000,
                    model_vocab_size=T5_VOCABULARY, seed=0, version="1.1",
                    **SHAPES[shape])
  on_disk = sum(os.path.getsize(path) for path in
                glob.glob(os.path.join(model_dir, "*.safetensors")))
  result = {"shape": shape, "fp32_bytes_on_disk": on_disk,
            "shards": len(glob.glob(os.path.join(model_dir, "*.safetensors")))}
  for dtype in ("bfloat16", "float32"):
    profile = load_memory_profile(model_dir, dtype)
    profile["peak_anonymous_over_fp32_on_disk"] = round(
        profile["peak_anonymous_increase"] / on_disk, 3)
    result[dtype] = profile
  return result


def tokenizer(workdir: str) -> dict:
  from transformers import AutoTokenizer  # pylint: disable=import-outside-toplevel
  published = os.path.join(workdir, "tokenizer-published")
  saved = os.path.join(workdir, "tokenizer-json")
  shutil.rmtree(published, ignore_errors=True)
  shutil.rmtree(saved, ignore_errors=True)
  with tempfile.TemporaryDirectory() as scratch:
    model = train_sentencepiece(_shared_texts(), os.path.join(scratch, "spiece"), 32000)
    size = write_published_tokenizer(model, published)
  AutoTokenizer.from_pretrained(published).save_pretrained(saved)
  times = {"spiece_model": [], "tokenizer_json": []}
  for _ in range(5):
    for name, directory in (("spiece_model", published), ("tokenizer_json", saved)):
      started = time.perf_counter()
      AutoTokenizer.from_pretrained(directory)
      times[name].append(time.perf_counter() - started)
  medians = {name: statistics.median(values) for name, values in times.items()}
  return {"tokens": size, "seconds_from_spiece_model": round(medians["spiece_model"], 3),
          "seconds_from_tokenizer_json": round(medians["tokenizer_json"], 3),
          "ratio": round(medians["spiece_model"] / medians["tokenizer_json"], 2),
          "all_seconds": {k: [round(v, 3) for v in vs] for k, vs in times.items()}}


def main() -> None:
  parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  parser.add_argument("--parts", default="memory,tokenizer")
  parser.add_argument("--shape", default="base", choices=sorted(SHAPES))
  parser.add_argument("--workdir", default=os.path.join(ROOT, "bench", "out", "model_load"))
  args = parser.parse_args()
  os.makedirs(args.workdir, exist_ok=True)
  result = {}
  parts = args.parts.split(",")
  if "memory" in parts:
    result["memory"] = memory(args.workdir, args.shape)
  if "tokenizer" in parts:
    result["tokenizer"] = tokenizer(args.workdir)
  print(json.dumps(result))


if __name__ == "__main__":
  main()
