"""Tokenising real text (not a test): the t5 family's model inputs built from
the shared data sets' own passages and claims, by this checkout and others.

    AUTOAIS_SHARED_DATA=SHARED/data .venv/bin/python bench/real_text.py \
        [--code OTHER_CHECKOUT] [--rounds 3] [--workdir DIR]

pipeline_cost.py's inputs are synthetic printable ASCII; Wikipedia and the web
are not (accents, dashes, quotes, non-Latin names, no-break spaces). This
measures what real text costs the step that turns examples into model inputs
(T5NliModel.encode_many: tokenising, joining premise and hypothesis, premise
windows), on three data sets read from $AUTOAIS_SHARED_DATA by the jobs' own
readers, each pair once, in chunks of 256 as the scorer hands them:

* nq: Natural Questions' oracle passages (nq_oracle_passages), each question
  with its first gold answer against each of its first three passages, as
  `autoais evaluate` builds the example (qa_example, the passage's title as
  its heading);
* wice: WiCE's oracle chunks, as `autoais agreement --format wice` reads them;
* expertqa: ExpertQA's claims against their evidence text, as `autoais
  agreement --format expertqa` reads them.

The model is a tiny random T5 (tests/support/t5_models.py) whose SentencePiece
vocabulary (8,000 pieces) is trained on these texts, so that words are cut
about as a real vocabulary cuts them. Each run is a fresh child process
importing `autoais` from a checkout; it loads the model (not timed) and times
encode_many over every chunk once: the process's CPU seconds (all threads:
the fast tokenizer has threads of its own), for the whole pass and for its
second half alone. The second half runs after the first (a model kept
caches of pieces until issue 47's measurements removed them); these data sets are small (1,000 to
2,700 pairs), so both figures are of a model's first few thousand pairs.
Rounds alternate the checkouts; medians are reported, with a digest of every
input id of every window, equal between checkouts when they build the same
inputs.
"""
import argparse
import gzip
import hashlib
import json
import os
import resource
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pipeline_cost import use_checkout  # pylint: disable=wrong-import-position

SHARED = os.environ.get("AUTOAIS_SHARED_DATA", os.path.join(ROOT, "..", "shared", "data"))
DATA_SETS = ("nq", "wice", "expertqa")
CHUNK = 256


def examples_of(data_set: str) -> list:
  """The data set's distinct examples, in reading order (a child's imports)."""
  from autoais.transforms.corpus.passages import ParsedPassage  # pylint: disable=import-outside-toplevel
  from autoais.transforms.labelled.readers import labelled_reader  # pylint: disable=import-outside-toplevel
  from autoais.transforms.scoring.examples import qa_example  # pylint: disable=import-outside-toplevel
  found = []
  if data_set == "nq":
    path = os.path.join(SHARED, "nq_oracle_passages", "nq-open-oracle.jsonl.gz")
    with gzip.open(path, "rt", encoding="utf-8") as f:
      for line in f:
        record = json.loads(line)
        for passage in record["ctxs"][:3]:
          found.append(qa_example(record["question"], record["answers"][0], ParsedPassage(
              passage["title"], passage["title"], passage["text"])))
  else:
    name = {"wice": ("wice", "oracle_chunks_claim_dev.jsonl"),
            "expertqa": ("expertqa", "rand_val.jsonl")}[data_set]
    paths = [os.path.join(SHARED, *name)]
    if data_set == "expertqa":
      paths.append(os.path.join(SHARED, "expertqa", "domain_val.jsonl"))
    for path in paths:
      for item in labelled_reader(data_set)(path):
        if hasattr(item, "example"):
          found.append(item.example)
  return list({(e.premise, e.hypothesis): e for e in found}.values())


def child(spec: dict) -> None:
  use_checkout(spec["code"])
  from autoais.models import t5_nli  # pylint: disable=import-outside-toplevel
  examples = examples_of(spec["data_set"])
  model = t5_nli.load_t5_nli(spec["model"])
  chunks = [examples[i:i + CHUNK] for i in range(0, len(examples), CHUNK)]
  def cpu_now():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime

  half = len(chunks) // 2
  start = cpu_now()
  encoded = [model.encode_many(chunk) for chunk in chunks[:half]]
  middle = cpu_now()
  encoded += [model.encode_many(chunk) for chunk in chunks[half:]]
  end = cpu_now()
  digest = hashlib.blake2b(digest_size=8)
  windows = 0
  for chunk in encoded:
    for item in chunk:
      for window in item.windows:
        digest.update(json.dumps(window).encode())
        windows += 1
  print("RESULT " + json.dumps({
      "cpu_s": end - start, "second_half_cpu_s": end - middle,
      "second_half_pairs": sum(map(len, chunks[half:])),
      "pairs": len(examples), "windows": windows, "digest": digest.hexdigest(),
      "ascii_premises": sum(premise.isascii() for premise in {e.premise for e in examples}),
      "premises": len({e.premise for e in examples})}))


def build_model(model: str) -> None:
  use_checkout(ROOT)
  from tests.support.t5_models import build_random_t5  # pylint: disable=import-outside-toplevel
  texts = [text for data_set in DATA_SETS for example in examples_of(data_set)
           for text in (example.premise, example.hypothesis)]
  build_random_t5(model, list(dict.fromkeys(texts)), vocab_size=8000, seed=7)


def run_child(spec: dict) -> dict:
  process = subprocess.run(
      ["nice", "-n", "5", sys.executable, os.path.abspath(__file__), "--child",
       json.dumps(spec)], cwd=ROOT, capture_output=True, text=True, check=False)
  lines = [line for line in process.stdout.splitlines() if line.startswith("RESULT ")]
  if process.returncode or not lines:
    raise SystemExit(f"{spec} failed:\n{process.stderr[-3000:]}")
  return json.loads(lines[-1][len("RESULT "):])


def main():
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--code", action="append", default=[],
                      help="another checkout to measure beside this one (before)")
  parser.add_argument("--rounds", type=int, default=3)
  parser.add_argument("--data_sets", default=",".join(DATA_SETS))
  parser.add_argument("--workdir", default=os.path.join(ROOT, "bench", "out", "real_text"))
  parser.add_argument("--child", help=argparse.SUPPRESS)
  args = parser.parse_args()
  if args.child:
    child(json.loads(args.child))
    return
  if not os.path.isdir(SHARED):
    raise SystemExit(f"no shared data at {SHARED}: set AUTOAIS_SHARED_DATA")
  model = os.path.join(args.workdir, "model")
  if not os.path.isdir(model):
    build_model(model)
  checkouts = {"this": ROOT, **{f"code{i}": os.path.abspath(c)
                                for i, c in enumerate(args.code)}}
  summary = {}
  for data_set in args.data_sets.split(","):
    runs = {name: [] for name in checkouts}
    for _ in range(args.rounds):
      for name, code in checkouts.items():
        runs[name].append(run_child({"code": code, "data_set": data_set, "model": model}))
    result = {"data_set": data_set}
    for name, found in runs.items():
      cpu = statistics.median(run["cpu_s"] for run in found)
      second_half = statistics.median(run["second_half_cpu_s"] for run in found)
      first = found[0]
      result[name] = {"pairs": first["pairs"], "windows": first["windows"],
                      "premises": first["premises"],
                      "ascii_premises": first["ascii_premises"],
                      "cpu_s": round(cpu, 3),
                      "cpu_s_all": [round(run["cpu_s"], 3) for run in found],
                      "pairs_per_cpu_s": round(first["pairs"] / cpu, 1),
                      "second_half_pairs_per_cpu_s": round(
                          first["second_half_pairs"] / second_half, 1),
                      "digest": first["digest"]}
    rates = ("pairs_per_cpu_s", "second_half_pairs_per_cpu_s")
    for name in checkouts:
      if name != "this":
        for rate in rates:
          result[f"this_over_{name}_{rate}"] = round(
              result["this"][rate] / result[name][rate], 2)
        result[f"same_inputs_as_{name}"] = result["this"]["digest"] == result[name]["digest"]
    summary[data_set] = {name: {rate: result[name][rate] for rate in rates}
                         for name in checkouts}
    print(json.dumps(result), flush=True)
  print(json.dumps({"pairs_per_cpu_s": summary}))


if __name__ == "__main__":
  main()
