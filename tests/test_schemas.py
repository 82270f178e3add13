"""Every element type against its pyarrow schema, and Arrow round trips."""
import typing

import pyarrow as pa
import pytest

import schemas
from schemas import SCHEMAS, iter_rows, to_record_batch

_ARROW_OF_PYTHON = {str: pa.string(), int: pa.int64(), float: pa.float64(),
                    bool: pa.bool_(), bytes: pa.binary()}


def _arrow_type(hint):
  """(arrow type, nullable) of a NamedTuple field's type hint."""
  origin = typing.get_origin(hint)
  if origin is typing.Union:
    (inner,) = [arg for arg in typing.get_args(hint) if arg is not type(None)]
    return _arrow_type(inner)[0], True
  if origin is list:
    (inner,) = typing.get_args(hint)
    return pa.list_(_arrow_type(inner)[0]), False
  if hint in SCHEMAS:
    return pa.struct(list(SCHEMAS[hint])), False
  return _ARROW_OF_PYTHON[hint], False


@pytest.mark.parametrize("element_type", list(SCHEMAS), ids=lambda t: t.__name__)
def test_element_type_matches_schema(element_type):
  schema = SCHEMAS[element_type]
  hints = typing.get_type_hints(element_type)
  assert list(element_type._fields) == schema.names
  for name in element_type._fields:
    arrow_type, nullable = _arrow_type(hints[name])
    field = schema.field(name)
    assert field.type == arrow_type, name
    assert field.nullable == nullable, name


def _example(element_type):
  values = {
      schemas.Prediction: schemas.Prediction("sys", "q?", "a", "id#1", None, "Y",
                                             "f.csv", 2),
      schemas.GoldAnswer: schemas.GoldAnswer("q?", ["a", "b"], 0),
      schemas.AttributionExample: schemas.AttributionExample("p", "h", "a", "t"),
      schemas.AttributionScore: schemas.AttributionScore(0.25, False, 2, True),
      schemas.ScoringFailure: schemas.ScoringFailure(503, "HTTP 503: unavailable"),
      schemas.ScoreCacheEntry: schemas.ScoreCacheEntry(b"\x00\xff" * 8, 0.75, True,
                                                       1, False),
      schemas.CorpusRecord: schemas.CorpusRecord("id", "« t » « t » x", "c.jsonl", 3),
      schemas.CorpusPassage: schemas.CorpusPassage("id", "« t » « t » x"),
      schemas.RatingRow: schemas.RatingRow("sys", "q?", "a", "id", "Title: t\n\nx",
                                           None, "Y", 0.9, 1.0, 0.5, 7, "string-match",
                                           1, False, "f.csv", 2),
      schemas.LeaderboardRow: schemas.LeaderboardRow(
          "sys", 10, 9, 8, 1, 0.8, 0.5, 0.2, 0.8, 0.625, 50.0, 20.0, 80.0, 60.0,
          30.0, 90.0, 0, None, None, None),
      schemas.DeadLetter: schemas.DeadLetter("f.csv", 3, "rejected", "empty_answer",
                                             "answer", "f.csv:3: ...", "{}"),
      schemas.AisAnnotation: schemas.AisAnnotation("totto", "T5-small", "42", False,
                                                   True, False, 10, None, "a.csv", 4),
      schemas.AisTableRow: schemas.AisTableRow(
          "totto", 6, "T5-small", "T5-Small", 195, 6, 165, 146, "3.1", "3.0", False,
          "87.3", False, 0.16, "86.5", False, False, "88.5", False, 0.28, "88.6",
          False, False, "explained", "..."),
      schemas.AisAgreementRow: schemas.AisAgreementRow("wow", "wow-t5", "AIS", None, 3,
                                                       0.5),
  }
  if element_type is schemas.GoldMatch:
    return schemas.GoldMatch(values[schemas.Prediction], 4, 1.0, 1.0)
  return values[element_type]


@pytest.mark.parametrize("element_type", list(SCHEMAS), ids=lambda t: t.__name__)
def test_rows_round_trip_through_arrow(element_type):
  row = _example(element_type)
  batch = to_record_batch([row, row], SCHEMAS[element_type])
  assert batch.schema == SCHEMAS[element_type]
  rows = list(iter_rows(batch, element_type))
  if element_type is schemas.GoldMatch:  # structs come back as dicts
    assert rows[0].prediction == row.prediction._asdict()
  else:
    assert rows == [row, row]


def test_non_nullable_field_rejects_none():
  row = _example(schemas.RatingRow)._replace(em=None)
  with pytest.raises(ValueError, match="'em' is not nullable"):
    to_record_batch([row], schemas.RATING_SCHEMA)
