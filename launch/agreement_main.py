"""Flex Template entry point for `agreement` (the image's
FLEX_TEMPLATE_PYTHON_PY_FILE when built with JOB=agreement; see launch/Dockerfile).

The template launcher runs `python agreement_main.py --input=... --runner=...`;
the flags go unchanged to beam_jobs.agreement.run, the code behind
`autoais agreement`, and its return value becomes the exit code (0 ok, 1 job
failed, 2 bad configuration, 3 an input yielded no row).
"""
import sys

from autoais.beam_jobs.agreement import run

if __name__ == "__main__":
  sys.exit(run(sys.argv[1:]))
