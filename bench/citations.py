"""Citations benchmark (not a test): `autoais citations` on ALCE items at scale.

    .venv/bin/python bench/citations.py [--items 100000] [--systems 4] \
        [--workdir bench/out/citations] [--skip_t5] [--modes in_process,two_workers] \
        [--checkout DIR]

Writes `--items` synthetic ALCE items (bench/pipeline.py's word generator), each
answer 3 sentences of 2 citations each into 5 documents of 80 words, spread over
`--systems` system files that answer the same questions from the same
documents (half of each system's sentences are shared with the first system,
as systems that quote the same passages), then runs the job as a child process
with the string-match scorer and with a tiny random T5 (threshold mode; models/
testing.py), side by side in this one run, each in process and (`--modes`)
with `--direct_running_mode=multi_processing --direct_num_workers=2`. Prints
one JSON line per scorer and mode: wall seconds, items/s and sentences/s, the
peak RSS of the whole process tree (the largest sum of the launcher's and its
SDK workers' RSS at one 0.2 s sample) and each process's own peak
(bench/scale.py's run_measured), the model calls (distinct pairs) and the calls
ALCE's eval.py would make (run.json), and the yardstick of bench/pipeline.py
measured just before. `--checkout DIR` runs the job of another checkout (its
own .venv, e.g. a worktree of an earlier commit) on the same inputs.
"""
import argparse
import json
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pipeline import AUTOAIS, ROOT, Words, python_speed_seconds  # pylint: disable=wrong-import-position
from scale import TWO_WORKERS, by_role, run_measured  # pylint: disable=wrong-import-position
sys.path.insert(0, ROOT)  # tests/support's model builders

MODES = {"in_process": [], "two_workers": TWO_WORKERS}

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


def run(checkout: str, inputs: str, output: str, *extra) -> dict:
  shutil.rmtree(output, ignore_errors=True)
  yardstick = python_speed_seconds()
  command = ([os.path.join(checkout, ".venv", "bin", "python")] + AUTOAIS[1:]
             if checkout != ROOT else AUTOAIS)
  code, wall, peaks, tree_peak, _ = run_measured(
      command + ["citations", "--input", inputs, "--output_dir", output,
                 "--bootstrap_samples", "200", "--progress_interval", "0", *extra],
      output + ".log", cwd=checkout)
  if code != 0:
    raise SystemExit(f"citations failed ({code}): see {output}.log")
  with open(os.path.join(output, "run.json"), encoding="utf-8") as f:
    record = json.load(f)
  items = record["counts"]["scored"]
  return {"items": items, "sentences": record["sentences"], "wall_s": round(wall, 1),
          "items_per_s": round(items / wall, 1),
          "sentences_per_s": round(record["sentences"] / wall, 1),
          "peak_rss_tree_mib": tree_peak, "peak_rss_mib_by_role": by_role(peaks),
          "model_calls": record["model_calls"],
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
  parser.add_argument("--modes", default=",".join(MODES),
                      help="in_process and/or two_workers, comma-separated")
  parser.add_argument("--checkout", default=ROOT,
                      help="the checkout whose job runs (default: this one)")
  args = parser.parse_args()
  checkout = os.path.abspath(args.checkout)
  modes = args.modes.split(",")
  inputs = os.path.join(args.workdir, "inputs")
  shutil.rmtree(inputs, ignore_errors=True)
  words = Words(seed=11)
  write_items(inputs, args.items, args.systems, words)
  pattern = os.path.join(inputs, "*.jsonl")
  scorers = {"string-match": []}
  if not args.skip_t5:
    from tests.support.t5_models import build_random_t5  # pylint: disable=import-outside-toplevel
    model = os.path.join(args.workdir, "model")
    if not os.path.isdir(model):
      build_random_t5(model, [words.passage(i) for i in range(2000)], vocab_size=4000,
                      seed=5)
    scorers["t5"] = ["--scorer", "t5", "--model", model]
  for scorer, flags in scorers.items():
    for mode in modes:
      result = run(checkout, pattern, os.path.join(args.workdir, f"{scorer}-{mode}"),
                   *flags, *MODES[mode])
      print(json.dumps(dict({"scorer": scorer, "mode": mode, "items_requested": args.items,
                             "systems": args.systems, "checkout": checkout},
                            **result)), flush=True)


if __name__ == "__main__":
  main()
