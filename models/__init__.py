"""Attribution scorers, chosen by name (`--scorer`): see models/base.py.

The NLI scorer's modules import torch and transformers, so they are imported
only when that scorer is chosen; the hosted scorers (remote, vertex) never
import them.
"""
from models.base import Scorer
from models.string_match import NAME as STRING_MATCH, StringMatchScorer

T5 = "t5"
REMOTE = "remote"
VERTEX = "vertex"
SCORERS = (STRING_MATCH, T5, REMOTE, VERTEX)


def make_scorer(name: str, threshold: float, **model_options) -> Scorer:
  if name == STRING_MATCH:
    return StringMatchScorer(threshold=threshold)
  if name == T5:
    from models.t5_scorer import T5Scorer  # pylint: disable=import-outside-toplevel
    return T5Scorer(threshold=threshold, **model_options)
  if name == REMOTE:
    from models.remote import RemoteScorer  # pylint: disable=import-outside-toplevel
    return RemoteScorer(threshold=threshold, **model_options)
  if name == VERTEX:
    from models.remote import VertexScorer  # pylint: disable=import-outside-toplevel
    return VertexScorer(threshold=threshold, **model_options)
  raise ValueError(f"unknown scorer {name!r} (choose from {', '.join(SCORERS)})")
