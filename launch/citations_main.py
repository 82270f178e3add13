"""Flex Template entry point for `citations` (the image's
FLEX_TEMPLATE_PYTHON_PY_FILE when built with JOB=citations; see launch/Dockerfile).

The template launcher runs `python citations_main.py --input=... --runner=...`;
the flags go unchanged to beam_jobs.citations.run, the code behind
`autoais citations`, and its return value becomes the exit code (0 ok, 1 job
failed, 2 bad configuration, 3 an input yielded no row).
"""
import sys

from autoais.beam_jobs.citations import run

if __name__ == "__main__":
  sys.exit(run(sys.argv[1:]))
