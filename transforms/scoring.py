"""Attribution scoring: (question, answer, passage) -> AttributionScore.

`qa_example` builds the AutoAIS input of SPEC 5.2; `ScoreAttribution` applies a
scorer (models/) to `(key, example or None)` elements.
"""
import apache_beam as beam

from schemas import AttributionExample
from transforms.passages import ParsedPassage, nli_premise

HYPOTHESIS = "The answer to the question '{question}' is '{answer}'"


def qa_example(question: str, answer: str, passage: ParsedPassage) -> AttributionExample:
  """The AutoAIS example of an attributed answer (SPEC 5.2)."""
  searchable = " ".join(part for part in (passage.title, passage.headings, passage.text)
                        if part)
  return AttributionExample(
      premise=nli_premise(passage),
      hypothesis=HYPOTHESIS.format(question=question, answer=answer),
      answer=answer,
      passage_text=searchable)


class ScoreAttribution(beam.PTransform):
  """PCollection[(key, AttributionExample or None)] ->
  PCollection[(key, AttributionScore or None)], with any models.Scorer."""

  def __init__(self, scorer):
    super().__init__()
    self._scorer = scorer

  def expand(self, keyed_examples):
    return keyed_examples | f"Score{self._scorer.name.title().replace('-', '')}" >> (
        self._scorer.score_keyed())
