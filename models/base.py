"""The scorer interface every attribution scorer implements (`--scorer NAME`).

A scorer turns `(key, AttributionExample or None)` elements into
`(key, AttributionScore or None)`: keys (the rows) ride along untouched, and a
None example (no passage found) comes back unscored, so rows that cannot be
scored need no separate path. NLI models implement `score_keyed` with Beam's
RunInference over their ModelHandler (the model loads once per worker, never on
the launching machine); rule baselines such as string-match with a plain DoFn,
so a baseline run never imports torch.
"""
import abc
from typing import Any, Dict

import apache_beam as beam


class Scorer(abc.ABC):

  name: str = ""

  @abc.abstractmethod
  def score_keyed(self) -> beam.PTransform:
    """PCollection[(key, example or None)] -> {"scored": PCollection[(key, score
    or None)], "stats": PCollection[dict] of counts to sum into run.json}."""

  @abc.abstractmethod
  def describe(self) -> Dict[str, Any]:
    """The scorer block of run.json, from the options alone."""

  def model_info(self) -> beam.PTransform:
    """PBegin -> a singleton PCollection[dict] of what only a worker can tell
    (token ids, weights checksum); merged into the scorer block of run.json."""
    return beam.Create([{}])
