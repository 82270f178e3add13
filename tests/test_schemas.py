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
          30.0, 90.0, 0, None, None, None, None, None, None, None),
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
      schemas.HumanRating: schemas.HumanRating("sys", "q?", "Y", "r.csv", 2),
      schemas.AgreementRow: schemas.AgreementRow(
          "ExpertQA", None, "id-1", "ab" * 16, "claim", "attributable", True, 0.75,
          "Y", None, 1, 1, False, "a.jsonl", 3),
      schemas.ClaimInput: schemas.ClaimInput("sys", "q?", 0, "c [1].", ["[1] e"],
                                             "Complete", False, 4, "f.jsonl", 4),
      schemas.ClaimRow: schemas.ClaimRow("sys", "q?", 0, "c .", "e", 1, "Complete", "Y",
                                         False, "Y", 0.75, 1, False, False, "t5", 4,
                                         "f.jsonl", 4),
      schemas.ClaimsSystemRow: schemas.ClaimsSystemRow(
          "sys", 3, 9, 1, 0, 0.5, 0.3, 0.7, 0.4, 0.2, 0.6, 0.5, 0.4, 8, 0.5, 0.75,
          0.7, 0.5, None),
      schemas.ArticleEntry: schemas.ArticleEntry("http://w/A", "http://w/A#A#1"),
      schemas.AuditAnswer: schemas.AuditAnswer(None, "q?", "q1", "a", 1.0, 1.0, "a.csv",
                                               2),
      schemas.Candidate: schemas.Candidate("bm25", "q1", None, "id#1", None, 3, 7.5,
                                           "run.trec", 9),
      schemas.Topic: schemas.Topic("q1", "q?", "topics.tsv", 1),
      schemas.AuditCandidateRow: schemas.AuditCandidateRow(
          "bm25", "q?", "q1", "a", "id#1", 3, None, True, "Y", 0.8, 1, False, False,
          1.0, 1.0, "t5", "a.csv", 2, "run.trec", 9),
      schemas.AuditAnswerRow: schemas.AuditAnswerRow(
          "bm25", "q?", None, "a", 4, 1, 2, "id#0", 1, "N", "Y", "id#1", 3, 0.8, "Y",
          None, None, "a.csv", 2),
      schemas.AuditSystemRow: schemas.AuditSystemRow(
          "bm25", 10, 40, 0.2, 0.1, 0.3, 0.6, 0.5, 0.7, 0.5, 0.4, 0.6, 1.5, 1.0, 2.0,
          10, 4, 0.25, 0.0, 0.5, 0.2, 0.1, 0.3, None, None, None, 0.5, 0.4, 0.6),
      schemas.SckInput: schemas.SckInput("sys", "q?", "a.", None, "factoid", "a.csv",
                                         2),
      schemas.KgStatement: schemas.KgStatement("Q76", "P39", "Q11696", "kg.parquet",
                                               1),
      schemas.KgEdge: schemas.KgEdge("P39", "Q11696", None),
      schemas.SckRow: schemas.SckRow(
          "sys", "q?", "a.", None, "factoid", "rules", "{}", 0.5, 0.25, None, 0.6, 0.1,
          0.1, 0.8, "{}", "none", "[]", None, 0.4, 0.0, "{}", "[]", 1, 0, 1, 0, "[]",
          "string-match", "a.csv", 2),
      schemas.SckSummaryRow: schemas.SckSummaryRow(
          "sys", "all", 3, 0.5, 0.25, None, 0, 0.6, 0.5, None, 0.0, 1),
  }
  if element_type is schemas.EntityRecord:
    return schemas.EntityRecord("Q76", "Barack Obama", ["Obama"], None,
                                [schemas.KgEdge("P39", "Q11696", "President")], ["P50"])
  if element_type is schemas.AuditPair:
    return schemas.AuditPair("bm25", "q?", "q1", "a", 1.0, 1.0, "id#1", None, 3, 7.5,
                             False, "a.csv", 2, "run.trec", 9)
  if element_type is schemas.GoldMatch:
    return schemas.GoldMatch(values[schemas.Prediction], 4, 1.0, 1.0)
  if element_type is schemas.LabelledItem:
    return schemas.LabelledItem("id-1", "wow", "t5", values[schemas.AttributionExample],
                                "Generic", False, "b.tsv", 4)
  return values[element_type]


@pytest.mark.parametrize("element_type", list(SCHEMAS), ids=lambda t: t.__name__)
def test_rows_round_trip_through_arrow(element_type):
  row = _example(element_type)
  batch = to_record_batch([row, row], SCHEMAS[element_type])
  assert batch.schema == SCHEMAS[element_type]
  rows = list(iter_rows(batch, element_type))
  if element_type is schemas.GoldMatch:  # structs come back as dicts
    assert rows[0].prediction == row.prediction._asdict()
  elif element_type is schemas.LabelledItem:
    assert rows[0].example == row.example._asdict()
  elif element_type is schemas.EntityRecord:
    assert rows[0].out_edges == [edge._asdict() for edge in row.out_edges]
  else:
    assert rows == [row, row]


def test_non_nullable_field_rejects_none():
  row = _example(schemas.RatingRow)._replace(em=None)
  with pytest.raises(ValueError, match="'em' is not nullable"):
    to_record_batch([row], schemas.RATING_SCHEMA)
