"""Attribution scoring: (question, answer, passage) -> AttributionScore.

`qa_example` builds the AutoAIS input of SPEC 5.2; `ScoreAttribution` applies a
scorer (models/) to `(key, example or None)` elements.
"""
import apache_beam as beam

from schemas import AttributionExample
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
  PCollection[(key, AttributionScore or None)], "stats": PCollection[dict]},
  with any models.Scorer."""

  def __init__(self, scorer):
    super().__init__()
    self._scorer = scorer

  def expand(self, keyed_examples):
    label = "ScoreWith" + self._scorer.name.title().replace("-", "")
    return keyed_examples | label >> self._scorer.score_keyed()
