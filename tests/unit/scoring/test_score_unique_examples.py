"""The scoring fan-out and its failures at their own level, with TestPipeline
and assert_that: ScoreUniqueExamples (transforms/scoring/fanout.py) on a few
keyed examples, with a handler that scores by digest and one that refuses some
examples; ScoreAttribution and the failure helpers (transforms/scoring/
attribution.py)."""
import apache_beam as beam
from apache_beam.ml.inference.base import PredictionResult
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that, equal_to

from autoais.schemas import (LOCAL_FAILURE, REJECTED, AttributionExample, AttributionScore,
                             ScoringFailure)
from autoais.transforms.scoring import fanout
from autoais.transforms.scoring.attribution import (ScoreAttribution, first_failure,
                                                    scored_or_failed, scoring_failed)
from tests.support.scorers import DigestHandler, HashScorer, hash_score

REFUSED = ScoringFailure(503, "the endpoint refused it")


def _example(premise: str, hypothesis: str) -> AttributionExample:
  return AttributionExample(premise, hypothesis, "answer", premise)


# Two rows share one example: it is scored once, and both rows get its score.
SHARED = _example("Paris is the capital of France.", "The capital of France is Paris.")
OTHER = _example("The Nile is in Africa.", "The Nile flows through Egypt.")
REFUSE = _example("A premise the endpoint refuses.", "refuse this hypothesis")
ROWS = [("row-1", SHARED), ("row-2", SHARED), ("row-3", OTHER), ("row-4", None)]


class _RefusingHandler(DigestHandler):
  """DigestHandler's scores, but a ScoringFailure for a hypothesis that starts
  with "refuse" (as a remote endpoint answers an example it refuses)."""

  def run_inference(self, batch, model, inference_args=None):
    results = super().run_inference(batch, model, inference_args)
    return [PredictionResult(result.example, REFUSED)
            if result.example.hypothesis.startswith("refuse") else result
            for result in results]


def _score_of(example: AttributionExample, calls: int = 1):
  score = hash_score(example.premise, example.hypothesis)
  return AttributionScore(score, score > 0.5, calls, False)


def _fan_out(pipeline, rows, handler, tmp_path):
  return (pipeline | beam.Create(rows, reshuffle=False)
          | fanout.ScoreUniqueExamples(handler, model_id="digest", work_dir=str(tmp_path)))


def _picked(stats, names):
  return stats | beam.Map(lambda counts: {name: counts[name] for name in names})


def test_each_distinct_example_is_scored_once_and_every_row_gets_its_score(tmp_path):
  with TestPipeline() as pipeline:
    result = _fan_out(pipeline, ROWS, DigestHandler(), tmp_path)
    # The two distinct examples go to the model in one call of two.
    assert_that(result["scored"], equal_to([
        ("row-1", _score_of(SHARED, 2)), ("row-2", _score_of(SHARED, 2)),
        ("row-3", _score_of(OTHER, 2)), ("row-4", None)]), label="CheckScored")
    assert_that(result["failed"], equal_to([]), label="CheckNoFailures")
    assert_that(_picked(result["stats"], ("unique_triples", "model_calls",
                                          "rows_scored_by_model", "scoring_failed")),
                equal_to([{"unique_triples": 2, "model_calls": 2,
                           "rows_scored_by_model": 3, "scoring_failed": 0}]),
                label="CheckStats")


def test_a_refused_example_fails_for_every_row_that_holds_it(tmp_path):
  rows = ROWS + [("row-5", REFUSE), ("row-6", REFUSE)]
  with TestPipeline() as pipeline:
    result = _fan_out(pipeline, rows, _RefusingHandler(), tmp_path)
    assert_that(result["failed"], equal_to([("row-5", REFUSED), ("row-6", REFUSED)]),
                label="CheckFailed")
    assert_that(result["scored"] | beam.Keys(),
                equal_to(["row-1", "row-2", "row-3", "row-4"]), label="CheckScoredRows")
    assert_that(_picked(result["stats"], ("unique_triples", "scoring_failed",
                                          "rows_scoring_failed", "rows_scored_by_model")),
                equal_to([{"unique_triples": 3, "scoring_failed": 1,
                           "rows_scoring_failed": 2, "rows_scored_by_model": 3}]),
                label="CheckStats")


def _rows_in_key(key):
  return len(key)


def test_rows_of_counts_the_rows_a_key_stands_for(tmp_path):
  """A caller that gathered the rows of an example under one key (citations'
  rounds: a tuple of the keys that asked for the pair) has them counted as
  rows: scored by the model, and failed."""
  rows = [(("a", "b", "c"), SHARED), (("d",), OTHER), (("e", "f"), REFUSE)]
  with TestPipeline() as pipeline:
    result = (pipeline | beam.Create(rows, reshuffle=False)
              | fanout.ScoreUniqueExamples(_RefusingHandler(), model_id="digest",
                                           work_dir=str(tmp_path), rows_of=_rows_in_key))
    assert_that(result["scored"] | beam.Keys(), equal_to([("a", "b", "c"), ("d",)]),
                label="CheckScoredKeys")
    assert_that(_picked(result["stats"], ("unique_triples", "rows_scored_by_model",
                                          "rows_scoring_failed")),
                equal_to([{"unique_triples": 3, "rows_scored_by_model": 4,
                           "rows_scoring_failed": 2}]), label="CheckStats")


def test_score_attribution_gives_an_empty_failed_output_for_a_scorer_that_cannot_fail(
    tmp_path):
  with TestPipeline() as pipeline:
    outputs = (pipeline | beam.Create(ROWS, reshuffle=False)
               | ScoreAttribution(HashScorer(), str(tmp_path)))
    assert_that(outputs["failed"], equal_to([]), label="CheckNoFailures")
    assert_that(scored_or_failed(outputs, "Outcomes") | beam.Keys(),
                equal_to(["row-1", "row-2", "row-3", "row-4"]), label="CheckRows")


def test_a_unit_fails_with_its_least_failure_and_is_dead_lettered_whole():
  later = ScoringFailure(LOCAL_FAILURE, "no sentence to chunk")
  assert first_failure([_score_of(SHARED), REFUSED, None, later]) == later
  assert first_failure([_score_of(SHARED), None]) is None
  dead = scoring_failed("in.jsonl", 7, "answer", "claim 2", REFUSED, {"id": "q7"})
  assert (dead.source_file, dead.source_line, dead.kind, dead.reason, dead.field) == (
      "in.jsonl", 7, REJECTED, "scoring_failed", "answer")
  assert dead.message == ("in.jsonl:7: field 'answer': claim 2: scoring failed "
                          "permanently (HTTP 503): the endpoint refused it")
