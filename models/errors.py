"""Errors of model configuration, importable without torch."""


class ModelError(ValueError):
  """The model cannot be used as configured (missing, unsafe, unsuitable)."""
