"""WriteDeadLetters (transforms/io/dead_letters.py) at its own level, with
TestPipeline and assert_that: one dead_letter.jsonl sorted by (file, line,
reason, field, message) whatever the order and the PCollections the dead
letters came in, and their counts per input role (zeros for a role with
none), per reason and per file."""
import json

import apache_beam as beam
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that, equal_to

from autoais.schemas import REJECTED, UNMATCHED, DeadLetter
from autoais.transforms.io.dead_letters import WriteDeadLetters


def _dead(source_file, line, kind, reason, record="{}"):
  return DeadLetter(source_file, line, kind, reason, "field",
                    f"{source_file}:{line}: {reason}", record)


def _key_orders(counts) -> bool:
  """Whether the roles, and each role's by_reason and by_file (and theirs),
  are in sorted order."""
  in_order = list(counts) == sorted(counts)
  for role in counts.values():
    for level in [role] + list(role["by_file"].values()):
      in_order &= list(level["by_reason"]) == sorted(level["by_reason"])
    in_order &= list(role["by_file"]) == sorted(role["by_file"])
  return in_order


def test_dead_letters_are_written_sorted_and_counted_per_role(tmp_path):
  predictions = (_dead("b.csv", 2, REJECTED, "empty_answer"),
                 _dead("a.csv", 9, UNMATCHED, "question_not_in_gold"),
                 _dead("a.csv", 3, REJECTED, "empty_answer", '{"id": "q3"}'))
  scoring = (_dead("a.csv", 5, REJECTED, "scoring_failed"),)
  path = tmp_path / "dead_letter.jsonl"
  with TestPipeline() as pipeline:
    counts = ({"predictions": (pipeline | "Read" >> beam.Create(predictions),
                               pipeline | "Scoring" >> beam.Create(scoring)),
               "gold": pipeline | "Gold" >> beam.Create([]).with_output_types(DeadLetter)}
              | WriteDeadLetters(str(path), str(tmp_path / "_work")))
    assert_that(counts, equal_to([{
        "gold": {REJECTED: 0, UNMATCHED: 0, "by_reason": {}, "by_file": {}},
        "predictions": {
            REJECTED: 3, UNMATCHED: 1,
            "by_reason": {f"{REJECTED}:empty_answer": 2, f"{REJECTED}:scoring_failed": 1,
                          f"{UNMATCHED}:question_not_in_gold": 1},
            "by_file": {
                "a.csv": {REJECTED: 2, UNMATCHED: 1,
                          "by_reason": {f"{REJECTED}:empty_answer": 1,
                                        f"{REJECTED}:scoring_failed": 1,
                                        f"{UNMATCHED}:question_not_in_gold": 1}},
                "b.csv": {REJECTED: 1, UNMATCHED: 0,
                          "by_reason": {f"{REJECTED}:empty_answer": 1}}}}}]))
    # Every level in order, whatever PCollection or bundle a count came from:
    # the same bytes in run.json on any runner.
    assert_that(counts | beam.Map(_key_orders), equal_to([True]), label="CheckOrder")
  lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
  assert [(line["source_file"], line["source_line"]) for line in lines] == [
      ("a.csv", 3), ("a.csv", 5), ("a.csv", 9), ("b.csv", 2)]
  # A record that is a JSON object is embedded as one; any other stays a string.
  assert lines[0]["record"] == {"id": "q3"} and lines[1]["record"] == {}
  assert lines[2]["kind"] == UNMATCHED and lines[2]["reason"] == "question_not_in_gold"
