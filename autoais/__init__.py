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

_API = ("build_corpus", "evaluate", "agreement", "ais_annotations", "claims", "citations",
        "audit", "sck", "compare", "training_data", "finetune", "serve", "run", "load_scorer", "premise", "hypothesis", "JobResult",
        "LoadedScorer")
_ERRORS = ("ConfigError", "InputError", "CorpusError", "ModelError", "JobFailed")
__all__ = ["__version__", *_API, *_ERRORS]


def __getattr__(name):
  if name in _API:
    from autoais import api  # pylint: disable=import-outside-toplevel
    return getattr(api, name)
  if name in _ERRORS:
    from autoais.schemas import errors  # pylint: disable=import-outside-toplevel
    return getattr(errors, name)
  raise AttributeError(f"module 'autoais' has no attribute {name!r}")


def __dir__():
  return sorted(set(globals()) | set(__all__))
