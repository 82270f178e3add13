"""Agreement statistics benchmark (not a test): memory and exactness at scale.

    .venv/bin/python bench/agreement.py [--sizes 10000,100000,1000000] [--job]

Runs, for each size, a Beam pipeline (FnApiRunner, in-process) in a fresh child
process: rated rows (23 systems) are generated inside the pipeline and go
through the agreement job's own statistics steps (transforms.agreement.summary.stats_inputs
-> CombinePerKey(MergeAgreementCounts) -> agreement_statistics), never meeting
in one list. Two score distributions:

* `rounded`: nli_score with 4 decimals (10,001 distinct values, like a scorer
  that reports rounded probabilities): every group stays exact;
* `continuous`: every score distinct: past 16,384 distinct scores a group
  switches to the 2^-14 grid and reports error bounds.

The parent regenerates the same scores with numpy and computes scikit-learn's
roc_auc_score and average_precision_score on all rows; it prints one JSON line
per run (peak RSS of the child, wall seconds, the job's and scikit-learn's AUCs,
their difference and the stated bound) and the RSS ratio of the largest size to
the smallest, side by side in this one run.

--job also runs the whole `autoais agreement --format ratings` (string-match) on
a generated ratings CSV at the smallest and largest size, as child processes,
and prints their peak RSS and ratio.
"""
import argparse
import csv
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

SYSTEMS = 23
SHARDS = 16
SEED = 20240501


def shard_rows(shard: int, rows: int, mode: str):
  """(system, human, score) arrays of one shard; depends on (shard, rows, mode)."""
  rng = np.random.default_rng([SEED, shard])
  system = (np.arange(rows) + shard) % SYSTEMS
  human = rng.random(rows) < 0.3 + 0.02 * system
  score = rng.beta(2 + 2 * human, 3)
  if mode == "rounded":
    score = np.round(score, 4)
  return system, human, score


def _shard_sizes(total: int):
  base, extra = divmod(total, SHARDS)
  return [base + (shard < extra) for shard in range(SHARDS)]


def _generate(shard, sizes, mode):
  from autoais.schemas import AgreementRow  # pylint: disable=import-outside-toplevel
  system, human, score = shard_rows(shard, sizes[shard], mode)
  for index, (s, h, x) in enumerate(zip(system.tolist(), human.tolist(),
                                        score.tolist())):
    yield AgreementRow(f"system-{s:02d}", None, f"{shard}:{index}", "", "", "Y" if h
                       else "N", h, x, "Y" if x > 0.5 else "N", None, 1, 1, False,
                       "bench", index)


def child(total: int, mode: str, output: str) -> None:
  """One pipeline run; writes the overall statistics and this process's peak RSS."""
  import apache_beam as beam  # pylint: disable=import-outside-toplevel
  from apache_beam.runners.portability.fn_api_runner import FnApiRunner  # pylint: disable=import-outside-toplevel
  from autoais.transforms.agreement.summary import stats_inputs  # pylint: disable=import-outside-toplevel
  from autoais.transforms.stats import agreement  # pylint: disable=import-outside-toplevel

  def write(grouped):
    by_key = dict(grouped)
    overall = agreement.agreement_statistics(by_key[("overall", "")])
    systems = {key[1]: agreement.agreement_statistics(counts)
               for key, counts in by_key.items() if key[0] == "system"}
    with open(output, "w", encoding="utf-8") as sink:
      json.dump({"overall": overall, "systems": len(systems),
                 "exact_systems": sum(s["auc_exact"] for s in systems.values())}, sink)

  started = time.time()
  sizes = _shard_sizes(total)
  with beam.Pipeline(runner=FnApiRunner()) as pipeline:
    _ = (pipeline
         | "Shards" >> beam.Create(list(range(SHARDS)))
         | "GenerateRows" >> beam.FlatMap(_generate, sizes, mode)
         | "KeyByGroup" >> beam.FlatMap(stats_inputs, ("system",))
         | "CountPerGroup" >> beam.CombinePerKey(agreement.MergeAgreementCounts())
         | "ListGroups" >> beam.combiners.ToList()
         | "Write" >> beam.Map(write))
  with open(output, encoding="utf-8") as source:
    result = json.load(source)
  result["wall_s"] = round(time.time() - started, 1)
  result["peak_rss_mb"] = round(
      resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
  with open(output, "w", encoding="utf-8") as sink:
    json.dump(result, sink)


def sklearn_figures(total: int, mode: str):
  from sklearn.metrics import average_precision_score, roc_auc_score  # pylint: disable=import-outside-toplevel
  parts = [shard_rows(shard, size, mode)
           for shard, size in enumerate(_shard_sizes(total))]
  human = np.concatenate([part[1] for part in parts])
  score = np.concatenate([part[2] for part in parts])
  return (float(roc_auc_score(human, score)), float(average_precision_score(human, score)),
          len(np.unique(score)))


def run_statistics(total: int, mode: str, workdir: str):
  output = os.path.join(workdir, f"stats-{mode}-{total}.json")
  subprocess.run([sys.executable, os.path.abspath(__file__), "--child", str(total),
                  mode, output], check=True, cwd=ROOT, stdout=subprocess.DEVNULL,
                 stderr=subprocess.DEVNULL)
  with open(output, encoding="utf-8") as source:
    result = json.load(source)
  roc, ap, distinct = sklearn_figures(total, mode)
  overall = result["overall"]
  return {
      "rows": total, "mode": mode, "distinct_scores": distinct,
      "peak_rss_mb": result["peak_rss_mb"], "wall_s": result["wall_s"],
      "auc_exact": overall["auc_exact"],
      "exact_system_groups": f"{result['exact_systems']}/{result['systems']}",
      "roc_auc": overall["roc_auc"], "sklearn_roc_auc": roc,
      "roc_auc_diff": abs(overall["roc_auc"] - roc),
      "roc_auc_bound": overall["roc_auc_error_bound"],
      "pr_auc": overall["pr_auc"], "sklearn_pr_auc": ap,
      "pr_auc_diff": abs(overall["pr_auc"] - ap),
      "pr_auc_bound": overall["pr_auc_error_bound"],
      "roc_auc_equal": overall["roc_auc"] == roc, "pr_auc_equal": overall["pr_auc"] == ap,
  }


def write_ratings(path: str, total: int) -> None:
  """A ratings CSV of `total` rows (`--format ratings`): the rounded scores of
  shard_rows, as answers a string-match scorer finds in their passage or not."""
  with open(path, "w", newline="", encoding="utf-8") as sink:
    writer = csv.writer(sink)
    writer.writerow(["system_name", "question", "answer", "attribution", "passage",
                     "human_rating"])
    for shard, size in enumerate(_shard_sizes(total)):
      system, human, score = shard_rows(shard, size, "rounded")
      for index, (s, h, x) in enumerate(zip(system, human, score)):
        answer = f"answer {shard} {index}"
        passage = f"The text mentions {answer if x > 0.5 else 'nothing'} here."
        writer.writerow([f"system-{s:02d}", f"question {shard} {index}?", answer,
                         f"doc-{index}", passage, "Y" if h else "N"])


def run_job(total: int, workdir: str):
  """The whole agreement job (string-match) on a generated ratings CSV."""
  path = os.path.join(workdir, f"ratings-{total}.csv")
  write_ratings(path, total)
  output = os.path.join(workdir, f"job-{total}")
  wrapper = ("import resource, subprocess, sys\n"
             "code = subprocess.call(sys.argv[1:], stdout=subprocess.DEVNULL, "
             "stderr=subprocess.DEVNULL)\n"
             "print(code, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n")
  started = time.time()
  result = subprocess.run(
      [sys.executable, "-c", wrapper, sys.executable, "-m", "autoais.beam_jobs.agreement",
       "--input", path, "--format", "ratings", "--output_dir", output],
      cwd=ROOT, capture_output=True, text=True, check=True)
  code, peak = result.stdout.split()
  manifest = json.load(open(os.path.join(output, "run.json"), encoding="utf-8"))
  return {"job_rows": total, "exit": int(code), "peak_rss_mb": round(int(peak) / 1024, 1),
          "wall_s": round(time.time() - started, 1),
          "items": manifest["counts"]["items"]}


def main():
  if len(sys.argv) > 1 and sys.argv[1] == "--child":
    child(int(sys.argv[2]), sys.argv[3], sys.argv[4])
    return
  parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
  parser.add_argument("--sizes", default="10000,100000,1000000")
  parser.add_argument("--modes", default="rounded,continuous")
  parser.add_argument("--job", action="store_true")
  parser.add_argument("--workdir", default=None)
  args = parser.parse_args()
  sizes = [int(size) for size in args.sizes.split(",")]
  workdir = args.workdir or tempfile.mkdtemp(prefix="agreement-bench-")
  os.makedirs(workdir, exist_ok=True)
  peaks = {}
  for mode in args.modes.split(","):
    for total in sizes:
      result = run_statistics(total, mode, workdir)
      peaks[(mode, total)] = result["peak_rss_mb"]
      print(json.dumps(result), flush=True)
    print(json.dumps({"mode": mode, "peak_rss_ratio_largest_to_smallest": round(
        peaks[(mode, sizes[-1])] / peaks[(mode, sizes[0])], 3)}), flush=True)
  if args.job:
    job = [run_job(total, workdir) for total in (sizes[0], sizes[-1])]
    for result in job:
      print(json.dumps(result), flush=True)
    print(json.dumps({"job_peak_rss_ratio": round(job[1]["peak_rss_mb"] /
                                                  job[0]["peak_rss_mb"], 3)}), flush=True)


if __name__ == "__main__":
  main()
