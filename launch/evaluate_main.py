"""Flex Template entry point for `evaluate` (the image's FLEX_TEMPLATE_PYTHON_PY_FILE
when built with JOB=evaluate; see launch/Dockerfile).

The template launcher runs `python evaluate_main.py --predictions=... --runner=...`;
the flags go unchanged to beam_jobs.evaluate.run, the code behind `autoais evaluate`,
and its return value becomes the exit code (0 ok, 1 job failed, 2 bad configuration,
3 an input yielded no row).
"""
import sys

from autoais.beam_jobs.evaluate import run

if __name__ == "__main__":
  sys.exit(run(sys.argv[1:]))
