"""The scorer interface every attribution scorer implements (`--scorer NAME`).

A scorer turns `(key, AttributionExample or None)` elements into
`(key, AttributionScore or None)`: keys (the rows) ride along untouched, and a
None example (no passage found) comes back unscored, so every row stays on one
linear path through the pipeline. NLI models implement `score_keyed` with Beam's
RunInference over their ModelHandler (the model loads once per worker); rule
baselines such as string-match with a plain DoFn, so a baseline run never
imports torch.
"""
import abc
from typing import Any, Dict

import apache_beam as beam


class Scorer(abc.ABC):

  name: str = ""

  @abc.abstractmethod
  def score_keyed(self) -> beam.PTransform:
    """PCollection[(key, example or None)] -> PCollection[(key, score or None)]."""

  @abc.abstractmethod
  def describe(self) -> Dict[str, Any]:
    """The scorer block of run.json (name, model, checksum, dtype, threshold...)."""
