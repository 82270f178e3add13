"""Test-only: what an `autoais` command imports, read in the process that ran it.

    python -m tests.support.startup JOB [args]   # `autoais JOB args`, then the record
    python -m tests.support.startup --help-of-every-job

The first runs the command through the `autoais` entry point (beam_jobs/cli.py)
and exits with its code; the second runs `autoais JOB --help` for every job, one
after the other. Either then writes a JSON record to the file named by
$AUTOAIS_STARTUP_RECORD: the model stack's modules now imported (HEAVY: torch,
transformers) and, for the second, each job's help text and exit code. A local
run executes its pipeline in this process (the FnApiRunner in memory), so a
module its workers import counts too.
"""
import contextlib
import io
import json
import os
import sys

RECORD_ENV = "AUTOAIS_STARTUP_RECORD"
HEAVY = ("torch", "transformers")


def heavy_modules():
  """The top-level packages of HEAVY imported in this process, sorted."""
  return sorted({name.split(".")[0] for name in sys.modules} & set(HEAVY))


def _help_of_every_job(cli):
  helps = {}
  for job in cli.JOBS:
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
      try:
        code = cli.main([job, "--help"])
      except SystemExit as done:  # serve's own parser exits after its help
        code = done.code
    helps[job] = {"code": code, "stdout": stdout.getvalue(), "stderr": stderr.getvalue()}
  return helps


def main(argv) -> int:
  from autoais.beam_jobs import cli  # pylint: disable=import-outside-toplevel
  record = {}
  if argv == ["--help-of-every-job"]:
    record["helps"] = _help_of_every_job(cli)
    code = 0
  else:
    code = cli.main(argv)
  record["heavy"] = heavy_modules()
  with open(os.environ[RECORD_ENV], "w", encoding="utf-8") as f:
    json.dump(record, f)
  return code


if __name__ == "__main__":
  sys.exit(main(sys.argv[1:]))
