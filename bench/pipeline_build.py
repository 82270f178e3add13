"""Pipeline-build benchmark (not a test): CPU of whole small job runs with and
without Beam's reading of the output types of transforms/io/untyped_output.py's
DoFns.

    .venv/bin/python bench/pipeline_build.py [--rounds 5]

Runs the six scoring jobs on their bundled examples (string-match; audit on
the example corpus, built once here), in this process as a test does, first
once to warm up, then --rounds rounds alternating the two ways: `inferred`
(UntypedOutputDoFn.infer_output_type put back to Beam's own, which reads
process's bytecode) and `declared` (the project's: Any). Each round's figure
is the CPU seconds (time.process_time) of the six runs together. Prints one
JSON line: each way's figures, their medians, and declared / inferred.
"""
import argparse
import importlib
import json
import os
import statistics
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import apache_beam as beam  # pylint: disable=wrong-import-position

from autoais.beam_jobs import build_corpus  # pylint: disable=wrong-import-position
from autoais.beam_jobs.cli import JOBS  # pylint: disable=wrong-import-position
from autoais.transforms.io.untyped_output import UntypedOutputDoFn  # pylint: disable=wrong-import-position
from tests.support import jobs  # pylint: disable=wrong-import-position


def main() -> None:
  parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
  parser.add_argument("--rounds", type=int, default=5)
  args = parser.parse_args()
  work = tempfile.mkdtemp(prefix="pipeline_build-")
  corpus = os.path.join(work, "corpus")
  assert jobs.run_job(build_corpus, "--input", jobs.EXAMPLES / "corpus" / "*.jsonl",
                      "--output", corpus, "--num_shards", 2) == 0

  def six_jobs() -> float:
    started = time.process_time()
    for job in jobs.SCORING_JOBS:
      assert jobs.run_job(importlib.import_module(JOBS[job]),
                          *jobs.scoring_job_flags(job, corpus), "--output_dir",
                          tempfile.mkdtemp(dir=work)) == 0, job
    return time.process_time() - started

  declared = UntypedOutputDoFn.infer_output_type
  ways = {"inferred": beam.DoFn.infer_output_type, "declared": declared}
  six_jobs()  # imports and first-run costs, in neither figure
  figures = {way: [] for way in ways}
  for _ in range(args.rounds):
    for way, method in ways.items():
      UntypedOutputDoFn.infer_output_type = method
      figures[way].append(round(six_jobs(), 3))
  UntypedOutputDoFn.infer_output_type = declared
  medians = {way: statistics.median(values) for way, values in figures.items()}
  print(json.dumps({"cpu_seconds_of_six_jobs": figures, "median": medians,
                    "declared_over_inferred": round(medians["declared"] /
                                                    medians["inferred"], 3)}))


if __name__ == "__main__":
  main()
