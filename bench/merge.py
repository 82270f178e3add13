"""Merge-rate benchmark (not a test): how fast one worker writes a job's row tables.

    .venv/bin/python bench/merge.py [--rows 100000,1000000] [--systems 277]
        [--max_runs 32] [--workdir bench/out/merge]

Every job ends by merging its sorted runs on one worker and writing its row
tables there (transforms/rows/merge.py, WriteMergedRows): ratings.parquet and
ratings.csv for evaluate. This measures that step alone, on evaluate's rows:
`--rows` rating rows of `--systems` systems (bench/pipeline.py's words, passages
of about 80 words as in its corpus) are spilled as the pipeline spills them
(transforms/io/sorted_runs.py, runs of 16 MB), then merged, folded
(RatingsFold: the duplicate rule, each system's outcomes) and written, in this
process, timed by process CPU seconds and wall seconds. Prints one JSON line:
rows, spill seconds, merge seconds, merge rows/s (CPU and wall), bytes written,
and the pure-Python yardstick of bench/pipeline.py measured just before, so
that runs on machines of different speed can be compared.

`--max_runs A,B,...` merges the same runs once for each value (each in a
child process forked from the same state), reading at most that many runs at
once (more are merged in passes first: sorted_runs'
MAX_MERGE_RUNS, 32, is what the jobs use; a value of at least the number of
runs reads them all at once, as the merge did before it had passes). Each
merge reports the peak RSS over the merge alone (the process's high-water mark
reset just before it, /proc/self/clear_refs) above the RSS it started from,
and whether its tables are the same bytes as the first value's.
"""
import argparse
import contextlib
import hashlib
import json
import os
import random
import shutil
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))

from pipeline import Words, python_speed_seconds  # pylint: disable=wrong-import-position
from scale import status_kib  # pylint: disable=wrong-import-position

from autoais.schemas import RatingRow  # pylint: disable=wrong-import-position
from autoais.transforms.evaluate.ratings import RatingsFold  # pylint: disable=wrong-import-position
from autoais.transforms.io.sorted_runs import (  # pylint: disable=wrong-import-position
    MAX_MERGE_RUNS, heap_bytes, merge_run_refs, write_run)
from autoais.transforms.io.tables import SortedTableWriter  # pylint: disable=wrong-import-position
from autoais.transforms.rows.merge import fold_rows  # pylint: disable=wrong-import-position

RUN_BYTES = 16 * 1024 * 1024  # SpillSortedRuns' default max_run_bytes


def rating_rows(n_rows: int, n_systems: int, words: Words):
  """Rating rows in a worker's order (systems interleaved), as evaluate makes
  them: a few hundred distinct passages' text, scores, EM/F1."""
  rng = random.Random(7)
  passages = [words.passage(i) for i in range(2000)]
  per_system = -(-n_rows // n_systems)
  for index in range(n_rows):
    system, question = index % n_systems, index // n_systems
    if question >= per_system:
      break
    score = rng.random()
    yield RatingRow(
        f"system-{system:03d}", f"question {question} {words.text(8)}",
        words.text(3), f"Page {question}#{system % 5}",
        passages[(question * 7 + system) % len(passages)], None,
        "Y" if score > 0.5 else "N", score, float(score > 0.7), score, question,
        "string-match", 1, False, f"/data/predictions/system-{system:03d}.csv",
        question + 2)


def spill(rows, directory: str):
  """Runs as SpillSortedRuns writes them: ~RUN_BYTES of rows (heap_bytes), sorted."""
  slices, buffer, buffered = [], [], 0
  key = RatingsFold.sort_key
  index = [RatingRow._fields.index(name) for name in key]

  def flush():
    buffer.sort(key=lambda row: tuple(row[i] for i in index))
    path = os.path.join(directory, f"run-{len(slices):05d}.arrow")
    slices.extend(run for _, run in write_run(path, [(0, buffer)], RatingRow))

  for row in rows:
    buffer.append(row)
    buffered += heap_bytes(row)
    if buffered >= RUN_BYTES:
      flush()
      buffer, buffered = [], 0
  if buffer:
    flush()
  return slices


def merge(runs, output_dir: str, max_runs: int) -> int:
  fold = RatingsFold(has_corpus=True)
  systems = 0
  with contextlib.ExitStack() as stack:
    tables = {table.stem: stack.enter_context(SortedTableWriter(
        output_dir, table.stem, table.schema, table.row_group_size, table.write_csv))
              for table in fold.tables}
    for _ in fold_rows(fold, merge_run_refs(runs, fold.merged_type._fields,
                                            fold.sort_key, max_runs), tables):
      systems += 1
  return systems


def measure_merge(runs, output_dir: str, max_runs: int) -> dict:
  os.makedirs(output_dir)
  with open("/proc/self/clear_refs", "w", encoding="ascii") as clear_refs:
    clear_refs.write("5")  # resets VmHWM to the current RSS
  before = status_kib(os.getpid(), "VmRSS:") / 1024
  cpu, wall = time.process_time(), time.perf_counter()
  outcomes = merge(runs, output_dir, max_runs)
  merge_cpu, merge_wall = time.process_time() - cpu, time.perf_counter() - wall
  peak = status_kib(os.getpid(), "VmHWM:") / 1024
  digests = {}
  for name in sorted(os.listdir(output_dir)):
    with open(os.path.join(output_dir, name), "rb") as f:
      digests[name] = hashlib.sha256(f.read()).hexdigest()
  return {"max_runs": max_runs, "system_outcomes": outcomes,
          "merge_cpu_s": round(merge_cpu, 2), "merge_wall_s": round(merge_wall, 2),
          "rss_before_mib": round(before), "merge_peak_above_mib": round(peak - before),
          "bytes_written": {name: os.path.getsize(os.path.join(output_dir, name))
                            for name in digests}, "digests": digests}


def in_child(function, *args) -> dict:
  """function(*args) in a forked child, its JSON result read back: every merge
  starts from the same process state (the memory this one's allocators hold
  after an earlier merge would hide the next one's peak)."""
  read_end, write_end = os.pipe()
  pid = os.fork()
  if pid == 0:
    # The child never returns into the caller's code, whatever happens.
    code = 1
    try:
      os.close(read_end)
      with os.fdopen(write_end, "w") as pipe:
        json.dump(function(*args), pipe)
      code = 0
    finally:
      os._exit(code)  # pylint: disable=protected-access
  os.close(write_end)
  with os.fdopen(read_end) as pipe:
    result = pipe.read()
  _, status = os.waitpid(pid, 0)
  if status:
    raise SystemExit(f"merge child failed: status {status} (its traceback above)")
  return json.loads(result)


def measure(n_rows: int, n_systems: int, work: str, max_runs_list) -> dict:
  shutil.rmtree(work, ignore_errors=True)
  runs_dir = os.path.join(work, "runs")
  os.makedirs(runs_dir)
  yardstick = python_speed_seconds()
  cpu, wall = time.process_time(), time.perf_counter()
  runs = spill(rating_rows(n_rows, n_systems, Words(seed=1)), runs_dir)
  spill_cpu, spill_wall = time.process_time() - cpu, time.perf_counter() - wall
  merges, first_digests = [], None
  for max_runs in max_runs_list:
    merged = in_child(measure_merge, runs, os.path.join(work, f"out-{max_runs}"),
                      max_runs)
    digests = merged.pop("digests")
    first_digests = first_digests or digests
    merged["same_bytes_as_first"] = digests == first_digests
    merged["merge_rows_per_cpu_s"] = round(n_rows / merged["merge_cpu_s"])
    merged["merge_rows_per_wall_s"] = round(n_rows / merged["merge_wall_s"])
    merges.append(merged)
    shutil.rmtree(os.path.join(work, f"out-{max_runs}"))
  shutil.rmtree(work, ignore_errors=True)
  return {"rows": n_rows, "systems": n_systems, "runs": len(runs),
          "yardstick_s": round(yardstick, 4), "spill_cpu_s": round(spill_cpu, 2),
          "spill_wall_s": round(spill_wall, 2), "merges": merges}


def main():
  parser = argparse.ArgumentParser(description=__doc__,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument("--rows", default="100000,1000000")
  parser.add_argument("--systems", type=int, default=277)
  parser.add_argument("--max_runs", default=str(MAX_MERGE_RUNS),
                      help="comma-separated: merge the same runs once for each")
  parser.add_argument("--workdir", default=os.path.join(ROOT, "bench", "out", "merge"))
  args = parser.parse_args()
  max_runs = [int(value) for value in args.max_runs.split(",")]
  results = [measure(int(n), args.systems, os.path.join(args.workdir, n), max_runs)
             for n in args.rows.split(",")]
  print(json.dumps({"cpus": os.cpu_count(), "runs": results}))


if __name__ == "__main__":
  main()
