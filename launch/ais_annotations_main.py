"""Flex Template entry point for `ais-annotations` (the image's
FLEX_TEMPLATE_PYTHON_PY_FILE when built with JOB=ais_annotations; see launch/Dockerfile).

The template launcher runs `python ais_annotations_main.py --input=... --runner=...`;
the flags go unchanged to beam_jobs.ais_annotations.run, the code behind
`autoais ais-annotations`, and its return value becomes the exit code (0 ok, 1 job
failed, 2 bad configuration, 3 an input yielded no row).
"""
import sys

from autoais.beam_jobs.ais_annotations import run

if __name__ == "__main__":
  sys.exit(run(sys.argv[1:]))
