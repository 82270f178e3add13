"""Memory and time of `autoais compare` at scale (not a test).

    nice -n 5 .venv/bin/python bench/compare.py [--rows 10000,100000,1000000]
        [--systems 23] [--flips 0.01,0.3] [--limit_mib 6144]
        [--workdir bench/out/compare]

For each size, two evaluate output directories are written directly (no
evaluate run): ratings.parquet of `--rows` rating rows of `--systems` systems
(bench/merge.py's rows: words and passages of about 80 words as in
bench/pipeline.py's corpus), leaderboard.json and a finished run.json with the
same scorer. The candidate is the baseline with the decision of a fraction of
its rows flipped (`--flips`: 1% is a night's drift, 30% a change of scorer)
and its nli_score moved. Then `autoais compare` runs as a child process on the
DirectRunner in process, and bench/scale.py's run_measured samples the peak RSS
of its process tree every 0.2 s, killing it past --limit_mib.

Prints one JSON line per run to stderr as it ends, and one JSON line on stdout:
per flip fraction, each size's rows, flipped rows, seconds, peak MiB, and the
ratio of each size's peak to the smallest size's.
"""
import argparse
import json
import os
import random
import shutil
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))

import pyarrow as pa  # pylint: disable=wrong-import-position
import pyarrow.parquet as pq  # pylint: disable=wrong-import-position

from merge import rating_rows  # pylint: disable=wrong-import-position
from pipeline import Words  # pylint: disable=wrong-import-position
from scale import run_measured  # pylint: disable=wrong-import-position

from autoais.schemas import RATING_SCHEMA, to_record_batch  # pylint: disable=wrong-import-position

BATCH = 50_000  # rows per record batch written
SCORER = {"name": "string-match", "family": "string-match", "threshold": 0.5,
          "decision": "threshold"}


def _write_run(directory: str, rows, flip_fraction: float, seed: int) -> int:
  """Writes one evaluate output directory; with flip_fraction > 0, flips that
  share of the decisions (a seeded draw). Returns the rows flipped."""
  os.makedirs(directory)
  rng = random.Random(seed)
  flipped = 0
  systems = set()
  with pq.ParquetWriter(os.path.join(directory, "ratings.parquet"),
                        RATING_SCHEMA) as writer:
    batch = []
    for row in rows:
      systems.add(row.system_name)
      if flip_fraction and rng.random() < flip_fraction:
        flipped += 1
        row = row._replace(auto_ais="N" if row.auto_ais == "Y" else "Y",
                           nli_score=1.0 - row.nli_score)
      batch.append(row)
      if len(batch) == BATCH:
        writer.write_table(pa.Table.from_batches([to_record_batch(batch,
                                                                  RATING_SCHEMA)]))
        batch = []
    if batch:
      writer.write_table(pa.Table.from_batches([to_record_batch(batch, RATING_SCHEMA)]))
  with open(os.path.join(directory, "leaderboard.json"), "w", encoding="utf-8") as f:
    json.dump({"systems": [{"system_name": name, "string_match": None}
                           for name in sorted(systems)]}, f)
  with open(os.path.join(directory, "run.json"), "w", encoding="utf-8") as f:
    json.dump({"job": "evaluate", "status": "complete", "scorer": SCORER,
               "inputs": {"gold": None}, "n_gold": None}, f)
  return flipped


def measure(n_rows: int, n_systems: int, flips: float, limit_mib: int,
            work: str) -> dict:
  shutil.rmtree(work, ignore_errors=True)
  os.makedirs(work)
  baseline, candidate = os.path.join(work, "baseline"), os.path.join(work, "candidate")
  _write_run(baseline, rating_rows(n_rows, n_systems, Words(seed=1)), 0.0, 0)
  flipped = _write_run(candidate, rating_rows(n_rows, n_systems, Words(seed=1)), flips,
                       11)
  output = os.path.join(work, "compare")
  code, seconds, peaks, tree_peak, killed = run_measured(
      [sys.executable, "-m", "autoais.beam_jobs.cli", "compare", "--baseline", baseline,
       "--candidate", candidate, "--output_dir", output, "--bootstrap_samples", "200"],
      os.path.join(work, "compare.log"), limit_mib)
  written = None
  if code == 0:
    with open(os.path.join(output, "run.json"), encoding="utf-8") as f:
      written = json.load(f).get("flipped_rows")
  shutil.rmtree(baseline, ignore_errors=True)
  shutil.rmtree(candidate, ignore_errors=True)
  result = {"rows": n_rows, "flip_fraction": flips, "flipped": flipped,
            "flipped_rows_written": written, "exit_code": code,
            "seconds": round(seconds, 1), "tree_peak_mib": round(tree_peak),
            "process_peaks_mib": sorted(round(peak) for _, peak in peaks.values()),
            "killed": killed}
  print(json.dumps(result), file=sys.stderr, flush=True)
  return result


def main():
  parser = argparse.ArgumentParser(description=__doc__,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument("--rows", default="10000,100000,1000000")
  parser.add_argument("--systems", type=int, default=23)
  parser.add_argument("--flips", default="0.01,0.3")
  parser.add_argument("--limit_mib", type=int, default=6144)
  parser.add_argument("--workdir", default=os.path.join(ROOT, "bench", "out", "compare"))
  args = parser.parse_args()
  report = {}
  for flips in (float(value) for value in args.flips.split(",")):
    runs = [measure(int(n), args.systems, flips, args.limit_mib,
                    os.path.join(args.workdir, f"{n}-{flips}"))
            for n in args.rows.split(",")]
    smallest = runs[0]["tree_peak_mib"]
    for run in runs:
      run["peak_ratio"] = round(run["tree_peak_mib"] / smallest, 2) if smallest else None
    report[str(flips)] = runs
  print(json.dumps({"cpus": os.cpu_count(), "compare": report}))


if __name__ == "__main__":
  main()
