"""Attribution scoring: (question, answer, passage) -> AttributionScore.

`qa_example` builds the AutoAIS input of SPEC 5.2; `ScoreAttribution` applies a
scorer (models/) to `(key, example or None)` elements.
"""
from typing import Any, Iterable, Optional, Tuple

import apache_beam as beam

from schemas import REJECTED, AttributionExample, DeadLetter, ScoringFailure
from transforms.passages import ParsedPassage, nli_premise, reference_premise
from transforms.sources import json_record

def qa_hypothesis(question: str, answer: str) -> str:
  return f"The answer to the question '{question}' is '{answer}'"


def qa_example(question: str, answer: str, passage: ParsedPassage,
               reference: bool = False) -> AttributionExample:
  """The AutoAIS example of an attributed answer (SPEC 5.2); with `reference`
  (`--decision decode`), its premise as the Attributed QA script builds it."""
  if passage.title is None:
    searchable = passage.text
  else:
    searchable = f"{passage.title} {passage.headings} {passage.text}"
  premise = reference_premise(passage) if reference else nli_premise(passage)
  return AttributionExample(premise, qa_hypothesis(question, answer), answer, searchable)


def claim_example(evidence: str, claim: str) -> AttributionExample:
  """The claim-level input (SPEC 5.2): premise = evidence, hypothesis = claim."""
  return AttributionExample(evidence, claim, claim, evidence)


class ScoreAttribution(beam.PTransform):
  """PCollection[(key, AttributionExample or None)] -> {"scored":
  PCollection[(key, AttributionScore or None)], "failed": PCollection[(key,
  ScoringFailure)], "stats": PCollection[dict]}, with any models.Scorer
  ("failed" is empty for scorers that cannot fail; see models/base.py)."""

  def __init__(self, scorer):
    super().__init__()
    self._scorer = scorer

  def expand(self, keyed_examples):
    label = "ScoreWith" + self._scorer.name.title().replace("-", "")
    outputs = dict(keyed_examples | label >> self._scorer.score_keyed())
    if "failed" not in outputs:
      outputs["failed"] = keyed_examples.pipeline | "NoScoringFailures" >> beam.Create(
          []).with_output_types(Tuple[Any, ScoringFailure])
    return outputs


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
      json_record(dict(record, http_status=failure.status)))
