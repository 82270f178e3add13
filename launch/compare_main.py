"""Flex Template entry point for `compare` (the image's
FLEX_TEMPLATE_PYTHON_PY_FILE when built with JOB=compare; see launch/Dockerfile).

The template launcher runs `python compare_main.py --baseline=... --runner=...`;
the flags go unchanged to beam_jobs.compare.run, the code behind
`autoais compare`, and its return value becomes the exit code (0 ok, 1 job
failed, 2 bad configuration, 3 a regression past --fail_on_regression).
"""
import sys

from autoais.beam_jobs.compare import run

if __name__ == "__main__":
  sys.exit(run(sys.argv[1:]))
