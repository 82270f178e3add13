"""Audit benchmark (not a test): cost against candidates per answer.

    .venv/bin/python bench/audit.py [--workdir bench/out] [--quick]

Builds a 1M-passage synthetic corpus (bench/pipeline.py's generator) and runs
`autoais audit` (string-match, in-process FnApiRunner) as a separate process per
configuration, side by side in this one run, with TREC runs of k = 1, 10 and 100
candidates per answer (each answer's own passage among k - 1 others) for a
fixed set of answers:

* reads: 100 answers (100 / 1,000 / 10,000 candidates, few next to the
  corpus's 33k row groups): passage bytes read and row groups read per k, and
  their growth from k to 10k;
* scale: 10,000 answers (10,000 / 100,000 / 1,000,000 candidate rows): whole
  command and pipeline seconds, rows/s, the marginal seconds per candidate
  between successive k, and the peak RSS of each run and its max / min ratio.

Prints one JSON line. --quick divides the corpus and the answers by 10.
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pipeline import (AUTOAIS, Words, build_corpus, passage_id, peak_rss_mib,  # pylint: disable=wrong-import-position
                      python_speed_seconds, write_corpus)

KS = (1, 10, 100)
_STRIDE = 104729  # a prime: the k - 1 other candidates of an answer are distinct


def home_passage(question: int, n_passages: int) -> int:
  return (question * 7919) % n_passages


def write_inputs(directory: str, n_answers: int, k: int, n_passages: int,
                 words: Words) -> int:
  """answers.csv, topics.tsv and run.trec: answer q is two words of its home
  passage, which sits at rank q % k + 1 among k candidates."""
  os.makedirs(directory, exist_ok=True)
  rows = 0
  with open(os.path.join(directory, "answers.csv"), "w", encoding="utf-8") as answers, \
      open(os.path.join(directory, "topics.tsv"), "w", encoding="utf-8") as topics, \
      open(os.path.join(directory, "run.trec"), "w", encoding="utf-8") as run:
    answers.write("system_name,question,answer\n")
    for q in range(n_answers):
      home = home_passage(q, n_passages)
      text = words.passage(home).split()
      answers.write(f"bench,question {q},{text[10]} {text[11]}\n")
      topics.write(f"q{q}\tquestion {q}\n")
      others = ((home + 1 + j * _STRIDE) % n_passages for j in range(k - 1))
      home_rank = q % k + 1
      for rank in range(1, k + 1):
        doc = home if rank == home_rank else next(others)
        run.write(f"q{q} Q0 {passage_id(doc)} {rank} {k - rank + 1}.0 bench\n")
        rows += 1
  return rows


def audit(inputs: str, corpus_dir: str, output_dir: str):
  wall, peak = peak_rss_mib(AUTOAIS + [
      "audit", "--answers", os.path.join(inputs, "answers.csv"), "--candidates",
      os.path.join(inputs, "run.trec"), "--topics", os.path.join(inputs, "topics.tsv"),
      "--corpus", corpus_dir, "--output_dir", output_dir])
  with open(os.path.join(output_dir, "run.json"), encoding="utf-8") as f:
    manifest = json.load(f)
  with open(os.path.join(output_dir, "audit.json"), encoding="utf-8") as f:
    (system,) = json.load(f)["systems"]
  return wall, peak, manifest, system


def main():
  parser = argparse.ArgumentParser(description=__doc__,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument("--workdir", default=os.path.join(
      os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench", "out"))
  parser.add_argument("--quick", action="store_true")
  args = parser.parse_args()
  scale = 10 if args.quick else 1
  work = args.workdir
  os.makedirs(work, exist_ok=True)
  words = Words(seed=1)
  n_passages = 1000000 // scale
  result = {"quick": args.quick, "passages": n_passages}

  corpus_dir = os.path.join(work, f"audit_corpus{n_passages}")
  if not os.path.exists(os.path.join(corpus_dir, "corpus.json")):
    write_corpus(os.path.join(work, f"audit_src{n_passages}"), n_passages, words)
    wall, peak = build_corpus(os.path.join(work, f"audit_src{n_passages}"), corpus_dir,
                              4096 // scale)
    result["build_corpus"] = {"seconds": round(wall, 2),
                              "passages_per_s": round(n_passages / wall),
                              "peak_rss_mib": round(peak)}
  with open(os.path.join(corpus_dir, "corpus.json"), encoding="utf-8") as f:
    manifest = json.load(f)
  result["corpus_bytes"] = manifest["total_bytes"]
  result["corpus_row_groups"] = sum(s["num_row_groups"] for s in manifest["shards"])

  for series, n_answers in (("reads", 100 // scale), ("scale", 10000 // scale)):
    runs = {}
    for k in KS:
      inputs = os.path.join(work, f"audit_{series}_k{k}")
      rows = write_inputs(inputs, n_answers, k, n_passages, words)
      yardstick = python_speed_seconds()
      wall, peak, manifest, system = audit(inputs, corpus_dir, inputs + "_out")
      counts = manifest["counts"]["candidates"]
      assert counts["read"] == counts["scored"] == rows, counts
      pipeline_seconds = manifest["timings"]["wall_seconds"]
      runs[k] = {
          "answers": n_answers, "candidates": rows,
          "command_seconds": round(wall, 2), "pipeline_seconds": pipeline_seconds,
          "rows_per_s": round(rows / pipeline_seconds),
          "bytes_read": manifest["join"]["bytes_read"],
          "bytes_read_fraction": round(manifest["join"]["bytes_read_fraction"], 4),
          "row_groups_read": manifest["join"]["row_groups_read"],
          "peak_rss_mib": round(peak), "python_yardstick_seconds": yardstick,
          "top1": system["top1"], "any": system["any"]}
    growth = {}
    for small, large in zip(KS, KS[1:]):
      a, b = runs[small], runs[large]
      growth[f"k{small}_to_k{large}"] = {
          "candidates_ratio": round(b["candidates"] / a["candidates"], 2),
          "bytes_read_ratio": round(b["bytes_read"] / a["bytes_read"], 2),
          "row_groups_ratio": round(b["row_groups_read"] / a["row_groups_read"], 2),
          "pipeline_seconds_ratio": round(b["pipeline_seconds"] / a["pipeline_seconds"],
                                          2),
          "marginal_us_per_candidate": round(
              1e6 * (b["pipeline_seconds"] - a["pipeline_seconds"]) /
              (b["candidates"] - a["candidates"]), 1)}
    peaks = [run["peak_rss_mib"] for run in runs.values()]
    result[series] = {"runs": {f"k{k}": run for k, run in runs.items()},
                      "growth": growth,
                      "peak_rss_max_over_min": round(max(peaks) / min(peaks), 3)}
  print(json.dumps(result))


if __name__ == "__main__":
  main()
