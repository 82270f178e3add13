"""`python -m autoais JOB ...`: the `autoais` command."""
from autoais.beam_jobs.cli import main

if __name__ == "__main__":
  raise SystemExit(main())
