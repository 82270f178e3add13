"""Citations benchmark (not a test): `autoais citations` on ALCE items at scale.

    .venv/bin/python bench/citations.py [--items 100000] [--systems 4] \
        [--workdir bench/out/citations] [--skip_t5]

Writes `--items` synthetic ALCE items (bench/pipeline.py's word generator), each
answer 3 sentences of 2 citations each into 5 documents of 80 words, spread over
`--systems` system files that answer the same questions from the same
documents (half of each system's sentences are shared with the first system,
as systems that quote the same passages), then runs the job as a child process
with the string-match scorer and with a tiny random T5 (threshold mode; models/
testing.py), side by side in this one run. Prints one JSON line per scorer:
wall seconds, items/s and sentences/s, the child's peak RSS, the model calls
(distinct pairs) and the calls ALCE's eval.py would make (run.json), and the
yardstick of bench/pipeline.py measured just before.
"""
import argparse
import json
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pipeline import AUTOAIS, ROOT, Words, peak_rss_mib, python_speed_seconds  # pylint: disable=wrong-import-position

DOCS, SENTENCES, SENTENCE_WORDS = 5, 3, 12


def write_items(directory: str, n_items: int, n_systems: int, words: Words) -> None:
  os.makedirs(directory, exist_ok=True)
  per_system = n_items // n_systems
  for system in range(n_systems):
    with open(os.path.join(directory, f"system-{system}.jsonl"), "w",
              encoding="utf-8") as f:
      for q in range(per_system):
        docs = [{"title": f"Page {q} {d}", "text": words.passage(q * DOCS + d)}
                for d in range(DOCS)]
        sentences = []
        for s in range(SENTENCES):
          # Half the sentences quote the first system's; the others are a
          # system's own (a different stretch of the document).
          own = system if (q + s) % 2 else 0
          doc = (q + s) % DOCS
          text = docs[doc]["text"].split()
          start = (own * 7 + s * 3) % (len(text) - SENTENCE_WORDS)
          # Capitalised, as sentences are (syntok starts one only there).
          sentence = " ".join(text[start:start + SENTENCE_WORDS]).capitalize()
          sentences.append(f"{sentence} [{doc + 1}][{(doc + 1) % DOCS + 1}].")
        f.write(json.dumps({"question": f"question {q}", "output": " ".join(sentences),
                            "docs": docs}) + "\n")


def run(inputs: str, output: str, *extra) -> dict:
  shutil.rmtree(output, ignore_errors=True)
  yardstick = python_speed_seconds()
  wall, peak = peak_rss_mib(AUTOAIS + ["citations", "--input", inputs, "--output_dir",
                                       output, "--bootstrap_samples", "200",
                                       "--progress_interval", "0", *extra])
  with open(os.path.join(output, "run.json"), encoding="utf-8") as f:
    record = json.load(f)
  items = record["counts"]["scored"]
  return {"items": items, "sentences": record["sentences"], "wall_s": round(wall, 1),
          "items_per_s": round(items / wall, 1),
          "sentences_per_s": round(record["sentences"] / wall, 1),
          "peak_rss_mib": round(peak, 1), "model_calls": record["model_calls"],
          "unique_pairs": record["unique_pairs"],
          "eval_py_calls": record["reference_model_calls"],
          "pairs_reused": record["scorer"].get("pairs_reused", 0),
          "yardstick_s": round(yardstick, 3)}


def main():
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--items", type=int, default=100000)
  parser.add_argument("--systems", type=int, default=4)
  parser.add_argument("--workdir", default=os.path.join(ROOT, "bench", "out", "citations"))
  parser.add_argument("--skip_t5", action="store_true")
  args = parser.parse_args()
  inputs = os.path.join(args.workdir, "inputs")
  shutil.rmtree(inputs, ignore_errors=True)
  words = Words(seed=11)
  write_items(inputs, args.items, args.systems, words)
  pattern = os.path.join(inputs, "*.jsonl")
  results = {"string-match": run(pattern, os.path.join(args.workdir, "string-match"))}
  if not args.skip_t5:
    from autoais.models.testing import build_random_t5  # pylint: disable=import-outside-toplevel
    model = os.path.join(args.workdir, "model")
    if not os.path.isdir(model):
      build_random_t5(model, [words.passage(i) for i in range(2000)], vocab_size=4000,
                      seed=5)
    results["t5"] = run(pattern, os.path.join(args.workdir, "t5"), "--scorer", "t5",
                        "--model", model)
  for scorer, result in results.items():
    print(json.dumps(dict({"scorer": scorer, "items_requested": args.items,
                           "systems": args.systems}, **result)))


if __name__ == "__main__":
  main()
