"""Flex Template entry point for `build-corpus` (the image's
FLEX_TEMPLATE_PYTHON_PY_FILE when built with JOB=build_corpus; see launch/Dockerfile).

The template launcher runs `python build_corpus_main.py --input=... --runner=...`;
the flags go unchanged to beam_jobs.build_corpus.run, the code behind
`autoais build-corpus`, and its return value becomes the exit code (0 ok, 1 job
failed, 2 bad configuration).
"""
import sys

from autoais.beam_jobs.build_corpus import run

if __name__ == "__main__":
  sys.exit(run(sys.argv[1:]))
