"""Attribution scorers, chosen by name (`--scorer`): see models/base.py.

The NLI scorer's modules import torch and transformers, so they are imported
only when that scorer is chosen.
"""
from models.base import Scorer
from models.string_match import NAME as STRING_MATCH, StringMatchScorer

T5 = "t5"
SCORERS = (STRING_MATCH, T5)


def make_scorer(name: str, threshold: float, **model_options) -> Scorer:
  if name == STRING_MATCH:
    return StringMatchScorer(threshold=threshold)
  if name == T5:
    from models.t5_scorer import T5Scorer  # pylint: disable=import-outside-toplevel
    return T5Scorer(threshold=threshold, **model_options)
  raise ValueError(f"unknown scorer {name!r} (choose from {', '.join(SCORERS)})")
