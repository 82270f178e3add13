"""`ScoreAttribution` applies a scorer (transforms/scoring/scorer.py) to
`(key, example or None)` elements; helpers for the rows whose score failed.
"""
from typing import Any, Iterable, Optional, Tuple

import apache_beam as beam

from autoais.schemas import LOCAL_FAILURE, REJECTED, DeadLetter, ScoringFailure
from autoais.transforms.io.fields import json_record


class ScoreAttribution(beam.PTransform):
  """PCollection[(key, AttributionExample or None)] -> {"scored":
  PCollection[(key, AttributionScore or None)], "failed": PCollection[(key,
  ScoringFailure)], "stats": PCollection[dict]}, with any Scorer ("failed" is
  empty for scorers that cannot fail; see transforms/scoring/scorer.py); a
  model's examples are grouped in runs under `work_dir`; `rows_of(key)`, where
  given, is how many rows a key stands for in the scorer's counts of rows."""

  def __init__(self, scorer, work_dir: str, rows_of=None):
    super().__init__()
    self._scorer = scorer
    self._work_dir = work_dir
    self._rows_of = rows_of

  def expand(self, keyed_examples):
    label = "ScoreWith" + self._scorer.name.title().replace("-", "")
    outputs = dict(keyed_examples | label >> self._scorer.score_keyed(
        self._work_dir, self._rows_of))
    if "failed" not in outputs:
      outputs["failed"] = keyed_examples.pipeline | "NoScoringFailures" >> beam.Create(
          []).with_output_types(Tuple[Any, ScoringFailure])
    return outputs


def score_columns(score) -> Tuple[Optional[float], str, int, bool]:
  """(nli_score, auto_ais, n_windows, truncated) of a row from its
  AttributionScore; a row without one (no passage or no evidence) is N,
  unscored."""
  if score is None:
    return None, "N", 0, False
  return (score.nli_score, "Y" if score.attributable else "N", score.n_windows,
          score.truncated)


def scored_or_failed(outputs, label: str):
  """ScoreAttribution's "scored" and "failed" outputs as one PCollection[(key,
  AttributionScore or None or ScoringFailure)], for a step that decides per
  unit (an item, a claim, an answer) whether all its examples were scored."""
  return (outputs["scored"], outputs["failed"]) | label >> beam.Flatten()


def first_failure(outcomes: Iterable) -> Optional[ScoringFailure]:
  """The failure that a unit scored in several examples is dead-lettered with:
  the least of its ScoringFailures, so the same however its examples were
  grouped; None when every example was scored."""
  return min((outcome for outcome in outcomes if isinstance(outcome, ScoringFailure)),
             default=None)


def scoring_failed_message(failure: ScoringFailure) -> str:
  """The dead-letter message of a row whose scoring failed permanently."""
  if failure.status == LOCAL_FAILURE:
    return f"the model cannot score it: {failure.message}"
  status = f"HTTP {failure.status}" if failure.status else "no HTTP response"
  return f"scoring failed permanently ({status}): {failure.message}"


def scoring_failed(source_file: str, source_line: int, field: Optional[str], what: str,
                   failure: ScoringFailure, record: dict) -> DeadLetter:
  """The dead letter of an input row left out whole because scoring one of the
  examples its figures depend on failed permanently (`what` names the unit)."""
  named = "" if field is None else f"field {field!r}: "
  return DeadLetter(
      source_file, source_line, REJECTED, "scoring_failed", field,
      f"{source_file}:{source_line}: {named}{what}: {scoring_failed_message(failure)}",
      json_record(dict(record, http_status=None if failure.status == LOCAL_FAILURE
                       else failure.status)))
