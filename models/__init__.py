"""Attribution scorers, chosen by name (`--scorer`): see models/base.py."""
from models.base import Scorer
from models.string_match import NAME as STRING_MATCH, StringMatchScorer

SCORERS = (STRING_MATCH,)


def make_scorer(name: str, threshold: float) -> Scorer:
  if name == STRING_MATCH:
    return StringMatchScorer(threshold=threshold)
  raise ValueError(f"unknown scorer {name!r} (choose from {', '.join(SCORERS)})")
