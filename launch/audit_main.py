"""Flex Template entry point for `audit` (the image's
FLEX_TEMPLATE_PYTHON_PY_FILE when built with JOB=audit; see launch/Dockerfile).

The template launcher runs `python audit_main.py --answers=... --runner=...`;
the flags go unchanged to beam_jobs.audit.run, the code behind
`autoais audit`, and its return value becomes the exit code (0 ok, 1 job
failed, 2 bad configuration, 3 an input yielded no row).
"""
import sys

from autoais.beam_jobs.audit import run

if __name__ == "__main__":
  sys.exit(run(sys.argv[1:]))
