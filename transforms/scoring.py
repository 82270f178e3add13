"""Attribution scoring: (question, answer, passage) -> AttributionScore.

`qa_example` builds the AutoAIS input of SPEC 5.2; `ScoreAttribution` applies a
scorer (models/) to `(key, example or None)` elements.
"""
from typing import Any, Tuple

import apache_beam as beam

from schemas import AttributionExample, ScoringFailure
from transforms.passages import ParsedPassage, nli_premise

def qa_hypothesis(question: str, answer: str) -> str:
  return f"The answer to the question '{question}' is '{answer}'"


def qa_example(question: str, answer: str, passage: ParsedPassage) -> AttributionExample:
  """The AutoAIS example of an attributed answer (SPEC 5.2)."""
  if passage.title is None:
    searchable = passage.text
  else:
    searchable = f"{passage.title} {passage.headings} {passage.text}"
  return AttributionExample(nli_premise(passage), qa_hypothesis(question, answer),
                            answer, searchable)


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


def scoring_failed_message(failure: ScoringFailure) -> str:
  """The dead-letter message of a row whose scoring failed permanently."""
  status = f"HTTP {failure.status}" if failure.status else "no HTTP response"
  return f"scoring failed permanently ({status}): {failure.message}"


class ScoringFailedError(RuntimeError):
  """A job that cannot dead-letter an example its scorer failed on stops."""


class _StopOnFailureFn(beam.DoFn):

  def __init__(self, job: str):
    self._job = job

  def process(self, keyed_failure):
    _, failure = keyed_failure
    raise ScoringFailedError(
        f"autoais {self._job}: an example could not be scored and this job does not "
        f"dead-letter scoring failures ({scoring_failed_message(failure)}); rerun "
        "when the endpoint answers, or score with --scorer t5")


class StopOnScoringFailures(beam.PTransform):
  """The "failed" output of ScoreAttribution, for jobs whose rows are built from
  several scores (a claim from its evidence items, an answer from its
  candidates) and so cannot drop one: the job stops, loudly, rather than report
  figures over rows that silently lost a score."""

  def __init__(self, job: str):
    super().__init__()
    self._job = job

  def expand(self, failed):
    return failed | "StopOnFailure" >> beam.ParDo(_StopOnFailureFn(self._job))
