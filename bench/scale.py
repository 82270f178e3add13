"""Scale benchmark (not a test): memory per process, inference fan-out, nightly reruns.

    .venv/bin/python bench/scale.py [--quick] [--workdir bench/out/scale]
        [--parts memory,fanout,nightly]

Workloads are bench/pipeline.py's synthetic leaderboards (3,610 questions, a
100k-passage corpus, systems that share answers and passages). Every run is a
separate `autoais evaluate` process, measured side by side in this one run.
Prints one JSON line:

* memory: string-match through `--direct_running_mode=multi_processing
  --direct_num_workers=2` at ~10k, ~100k and ~1M rows (3, 28, 277 systems):
  the peak RSS (VmHWM) of every process of the run (the launching process, which
  also runs the FnApiRunner, and each SDK worker process), sampled every 0.2 s,
  and the large/small ratio per role;
* fanout: the 83,030-row leaderboard (23 systems x 3,610 questions) scored by a
  tiny random T5 (in-process: the groups depend on the data alone): distinct
  triples, inference groups (keys that run in parallel) and the largest, model
  calls (chunks) and the largest, from run.json;
* nightly: a leaderboard of --nightly_questions questions with --score_cache on
  2 worker processes, night 1 with 23 systems, night 2 with the same 23 plus
  one: model calls of each night, night 2's new triples counted from the two
  runs' distinct triples, and night 2's ratings against an uncached run of the
  24 systems.

--quick divides the questions by 10 (and the memory run's systems by 10).
"""
import argparse
import csv
import json
import os
import shutil
import subprocess
import sys
import time

import psutil

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "bench"))

from pipeline import (AUTOAIS, Words, build_corpus, write_corpus, write_gold,  # pylint: disable=wrong-import-position
                      write_predictions)

TWO_WORKERS = ["--direct_running_mode=multi_processing", "--direct_num_workers=2"]
PARTS = ("memory", "fanout", "nightly")


def status_kib(pid: int, field: str):
  """A /proc/PID/status field (`field` with its colon, e.g. "VmHWM:"), KiB; None
  where the process is gone."""
  try:
    with open(f"/proc/{pid}/status", encoding="utf-8") as f:
      for line in f:
        if line.startswith(field):
          return int(line.split()[1])
  except OSError:
    return None
  return None


def run_measured(args, log_path, limit_mib=None, cwd=ROOT):
  """Runs a command; returns (exit code, seconds, {pid: (role, peak RSS MiB)},
  tree peak MiB, killed) for the process and every descendant, sampled until
  it exits: the tree's peak is the largest sum of their current RSS at one
  sample. With limit_mib, the whole tree is killed (each process by its id)
  once that sum passes it, and killed is True."""
  peaks = {}
  tree_peak = 0
  killed = False
  started = time.time()
  with open(log_path, "w", encoding="utf-8") as log:
    process = subprocess.Popen(args, cwd=cwd, stdout=log, stderr=subprocess.STDOUT)
    root = psutil.Process(process.pid)
    while process.poll() is None:
      try:
        family = [root] + root.children(recursive=True)
      except psutil.NoSuchProcess:
        family = []
      current = 0
      for member in family:
        peak = status_kib(member.pid, "VmHWM:")
        if peak is None:
          continue
        current += status_kib(member.pid, "VmRSS:") or 0
        if member.pid not in peaks:
          try:
            command = " ".join(member.cmdline())
          except psutil.Error:
            command = ""
          role = ("launcher" if member.pid == process.pid else
                  "worker" if "sdk_worker_main" in command else "other")
          peaks[member.pid] = [role, peak]
        peaks[member.pid][1] = max(peaks[member.pid][1], peak)
      tree_peak = max(tree_peak, current)
      if limit_mib is not None and current > limit_mib * 1024:
        killed = True
        # Children first, so that none is left behind by its dying parent.
        for member in reversed(family):
          try:
            member.kill()
          except psutil.Error:
            pass
        process.wait()
        break
      time.sleep(0.2)
  return process.returncode, time.time() - started, {
      pid: (role, round(kib / 1024)) for pid, (role, kib) in peaks.items()
  }, round(tree_peak / 1024), killed


def evaluate(work, name, predictions, corpus, gold, *extra):
  output = os.path.join(work, f"eval_{name}")
  code, seconds, peaks, _, _ = run_measured(
      AUTOAIS + ["evaluate", "--predictions", f"{predictions}/*.csv", "--corpus", corpus,
                 "--gold", gold, "--output_dir", output, "--bootstrap_samples", "100",
                 "--progress_interval", "30", *extra],
      os.path.join(work, f"{name}.log"))
  if code != 0:
    raise SystemExit(f"evaluate {name} failed ({code}): see {work}/{name}.log")
  with open(os.path.join(output, "run.json"), encoding="utf-8") as f:
    return output, round(seconds, 1), peaks, json.load(f)


def by_role(peaks):
  roles = {}
  for role, mib in peaks.values():
    roles.setdefault(role, []).append(mib)
  return {role: sorted(values, reverse=True) for role, values in roles.items()}


def tiny_model(work):
  """A tiny random T5 whose vocabulary is trained on the synthetic words."""
  from tests.support.t5_models import build_random_t5  # pylint: disable=import-outside-toplevel
  directory = os.path.join(work, "tiny_t5")
  if not os.path.isdir(directory):
    words = Words(seed=1)
    texts = [words.passage(i) for i in range(2000)]
    # The questions carry numbers ("question 17 ..."): digits are pieces too.
    texts += [f"question {i} {words.text(8)} 1 0" for i in range(2000)]
    texts += ["premise: hypothesis: The answer to the question is"] * 50
    build_random_t5(directory, texts, vocab_size=4000, seed=5, d_model=32, d_ff=64,
                    num_layers=2)
  return directory


def ratings_equal(a, b, tolerance=1e-6):
  """(rows, all columns but nli_score equal, max |nli_score difference|)."""
  with open(os.path.join(a, "ratings.csv"), newline="", encoding="utf-8") as f:
    first = list(csv.DictReader(f))
  with open(os.path.join(b, "ratings.csv"), newline="", encoding="utf-8") as f:
    second = list(csv.DictReader(f))
  worst, same = 0.0, len(first) == len(second)
  for row, other in zip(first, second):
    worst = max(worst, abs(float(row.pop("nli_score")) - float(other.pop("nli_score"))))
    same &= row == other
  return {"rows": len(first), "other_columns_equal": same,
          "max_abs_nli_score_difference": worst,
          "within_tolerance": same and worst <= tolerance}


def main():
  parser = argparse.ArgumentParser(description=__doc__,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument("--workdir", default=os.path.join(ROOT, "bench", "out", "scale"))
  parser.add_argument("--quick", action="store_true")
  parser.add_argument("--parts", default=",".join(PARTS))
  parser.add_argument("--nightly_questions", type=int, default=722,
                      help="questions per system in the nightly simulation (a fifth "
                      "of NQ-Open dev by default: three runs of the model)")
  args = parser.parse_args()
  parts = set(args.parts.split(","))
  scale = 10 if args.quick else 1
  work = args.workdir
  os.makedirs(work, exist_ok=True)
  words = Words(seed=1)
  result = {"quick": args.quick, "cpus": os.cpu_count()}

  n_questions, n_passages = 3610, 100000
  gold = os.path.join(work, "gold.jsonl")
  corpus = os.path.join(work, "corpus100k")
  if not os.path.exists(os.path.join(corpus, "corpus.json")):
    write_gold(gold, n_questions, n_passages, words)
    write_corpus(os.path.join(work, "src100k"), n_passages, words)
    build_corpus(os.path.join(work, "src100k"), corpus, 64)

  if "memory" in parts:
    memory = {}
    for label, systems in {"small": 3, "medium": 28, "large": 277 // scale}.items():
      directory = os.path.join(work, f"pred_{label}")
      rows = write_predictions(directory, gold, systems, n_passages, Words(seed=1))
      _, seconds, peaks, manifest = evaluate(work, f"memory_{label}", directory, corpus,
                                             gold, *TWO_WORKERS)
      assert manifest["counts"]["read"] == rows and manifest["counts"]["reconciled"]
      memory[label] = {"rows": rows, "seconds": seconds,
                       "rows_per_s": round(rows / seconds),
                       "peak_rss_mib_by_role": by_role(peaks)}
    small, large = (memory[k]["peak_rss_mib_by_role"] for k in ("small", "large"))
    memory["ratio_large_over_small"] = {
        role: round(max(large[role]) / max(small[role]), 3)
        for role in small if role in large}
    result["memory"] = memory

  if "fanout" in parts:
    model = tiny_model(work)
    directory = os.path.join(work, "pred23_full")
    rows = write_predictions(directory, gold, 23, n_passages, Words(seed=1),
                             n_questions // scale)
    _, seconds, _, manifest = evaluate(work, "fanout_23_systems", directory, corpus,
                                       gold, "--scorer", "t5", "--model", model)
    result["fanout"] = {"rows": rows, "seconds": seconds, **{
        key: manifest["scorer"][key] for key in (
            "unique_triples", "inference_groups", "largest_group_examples",
            "inference_calls", "largest_call_examples")}}

  if "nightly" in parts:
    model = tiny_model(work)
    questions = args.nightly_questions // scale
    cache = os.path.join(work, "score_cache")
    shutil.rmtree(cache, ignore_errors=True)
    nights = {}
    for night, systems in (("night1", 23), ("night2", 24)):
      directory = os.path.join(work, f"pred{systems}_nightly")
      rows = write_predictions(directory, gold, systems, n_passages, Words(seed=1),
                               questions)
      output, seconds, _, manifest = evaluate(
          work, f"{night}_{systems}_systems", directory, corpus, gold, "--scorer", "t5",
          "--model", model, "--score_cache", cache, *TWO_WORKERS)
      nights[night] = dict(rows=rows, seconds=seconds, output=output,
                           **manifest["scorer"])
    uncached, seconds, _, manifest = evaluate(
        work, "uncached_24_systems", os.path.join(work, "pred24_nightly"), corpus, gold,
        "--scorer", "t5", "--model", model, *TWO_WORKERS)
    first, second = nights["night1"], nights["night2"]
    result["nightly"] = {
        "questions": questions,
        "night1_rows": first["rows"], "night2_rows": second["rows"],
        "night1_model_calls": first["model_calls"],
        "night2_model_calls": second["model_calls"],
        "night2_cache_hits": second["cache_hits"],
        "night2_new_triples": second["unique_triples"] - first["unique_triples"],
        "uncached_24_model_calls": manifest["scorer"]["model_calls"],
        "seconds": {"night1": first["seconds"], "night2": second["seconds"],
                    "uncached_24": seconds},
        "night2_vs_uncached_ratings": ratings_equal(second["output"], uncached),
    }
  print(json.dumps(result))


if __name__ == "__main__":
  main()
