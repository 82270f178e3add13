"""Flex Template entry point for `claims` (the image's
FLEX_TEMPLATE_PYTHON_PY_FILE when built with JOB=claims; see launch/Dockerfile).

The template launcher runs `python claims_main.py --input=... --runner=...`;
the flags go unchanged to beam_jobs.claims.run, the code behind
`autoais claims`, and its return value becomes the exit code (0 ok, 1 job
failed, 2 bad configuration, 3 an input yielded no row).
"""
import sys

from autoais.beam_jobs.claims import run

if __name__ == "__main__":
  sys.exit(run(sys.argv[1:]))
