"""AutoAIS-Beam: Apache Beam jobs that score attributed question answering.

    import autoais
    result = autoais.evaluate(predictions="runs/*.csv", corpus="corpus/",
                              gold="NQ-open.dev.jsonl", output_dir="out/")
    scorer = autoais.load_scorer("t5", model="google/t5_xxl_true_nli_mixture")

The Python API is autoais/api.py (docs/python-api.md); its names are
importable from here and loaded on first use, so that `import autoais` stays
light. The package's layers are mapped into it from the repository's folders
(setup.py): `autoais.schemas`, `autoais.models`, `autoais.transforms`,
`autoais.serve`, `autoais.beam_jobs`, `autoais.launch`.
"""
__version__ = "0.1.0"

_API = ("run", "load_scorer", "premise", "hypothesis", "JobResult", "LoadedScorer")
_ERRORS = ("ConfigError", "InputError", "CorpusError", "ModelError", "JobFailed")


def _jobs():
  """A function per job of beam_jobs/cli.py JOBS (build_corpus, evaluate, ...),
  made by the API from the job's flags: a new job needs no edit here. Read
  when asked for, not at `import autoais` (which stays light, and leaves
  `python -m autoais.beam_jobs.cli` its own first import)."""
  from autoais.beam_jobs.cli import JOBS  # pylint: disable=import-outside-toplevel
  return tuple(job.replace("-", "_") for job in JOBS)


def __getattr__(name):
  if name == "__all__":
    return ["__version__", *_jobs(), *_API, *_ERRORS]
  if name in _API or name in _jobs():
    from autoais import api  # pylint: disable=import-outside-toplevel
    return getattr(api, name)
  if name in _ERRORS:
    from autoais.schemas import errors  # pylint: disable=import-outside-toplevel
    return getattr(errors, name)
  raise AttributeError(f"module 'autoais' has no attribute {name!r}")


def __dir__():
  return sorted(set(globals()) | set(__getattr__("__all__")))
