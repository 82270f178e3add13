"""Every element type against its pyarrow schema, and Arrow round trips; the
module layout of schemas/ and the names `schemas` re-exports."""
import ast
import importlib
import pathlib
import typing

import pyarrow as pa
import pytest

from autoais import schemas
from autoais.schemas import SCHEMAS, iter_rows, to_record_batch

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
      schemas.UnsupportedSpan: schemas.UnsupportedSpan(4, 11, 0.875),
      schemas.ScoreCacheEntry: schemas.ScoreCacheEntry(b"\x00\xff" * 8, 0.75, True,
                                                       1, False),
      schemas.CorpusRecord: schemas.CorpusRecord("id", "« t » « t » x", "c.jsonl", 3),
      schemas.CorpusPassage: schemas.CorpusPassage("id", "« t » « t » x"),
      schemas.RatingRow: schemas.RatingRow("sys", "q?", "a", "id", "Title: t\n\nx",
                                           None, "Y", 0.9, 1.0, 0.5, 7, "string-match",
                                           1, False, "f.csv", 2),
      schemas.LeaderboardRow: schemas.LeaderboardRow(
          "sys", 10, 9, 8, 1, 0.8, 0.5, 0.2, 0.8, 0.625, 50.0, 20.0, 80.0, 60.0,
          30.0, 90.0, 0, None, None, None, None, None, None, None, 55.5, 66.6),
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
      schemas.CitationItem: schemas.CitationItem(
          "sys", "q?", 0, "a [1].", ["Title: t\nx"], [["a"], ["b", "c"]], None, ["c"],
          False, [1, 0], [[2], []], "f.json", 3),
      schemas.CitationSentenceRow: schemas.CitationSentenceRow(
          "sys", "q?", 0, 1, "a [1][2].", "a.", "1,2", "1,2", "scored", True, 0.75,
          "Y,N", 1, True, "2,0", "t5", "f.json", 3),
      schemas.CitationItemRow: schemas.CitationItemRow(
          "sys", "q?", 0, 2, 3, 1, 0.5, 1 / 3, 1, 1, 1, None, None, 3, 0.5, 0.5, 1.0,
          0.5, 0.75, 0, None, 7, 4, "aligned", 0.5, 0.25, "f.json", 3),
      schemas.CitationsSystemRow: schemas.CitationsSystemRow(
          "sys", 3, 2, 5, 6, 50.0, 20.0, 80.0, 40.0, 10.0, 70.0, 20.0, 50.0, 0.0, 0,
          None, None, None, None, 0, None, None, None, None, None, None, None, None, 1,
          33.3, 0.0, 100.0, 12.5, 9),
      schemas.CitationsHumanRow: schemas.CitationsHumanRow(
          None, 4, 3, 2, 5, 6, 60.0, 40.0, 50.0, 50.0, 0.8, 0.75, 0.5, None, 2, 1, 2, 0,
          0.5, 0.5, 0.0, 1, 2, 2, 1),
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
      schemas.CompareFlipRow: schemas.CompareFlipRow(
          "sys", "q?", "a", "b", "P#1", "P#2", "Title: P", None, "Y", "N", 0.9, 0.2,
          -0.7),
      schemas.CompareSystemRow: schemas.CompareSystemRow(
          "sys", "both", 10, 12, 9, 55.6, 44.4, -11.1, -33.3, 0.0, None, None, None,
          None, None, None, 80.0, 70.0, -10.0, -15.0, -5.0, 60.0, None, None, None,
          None, 40.0, 35.0, -5.0, -9.5, None, 0, 1, 1.0, 50.0, 40.0, False),
  }
  if element_type is schemas.EntityRecord:
    return schemas.EntityRecord("Q76", "Barack Obama", ["Obama"], None,
                                [schemas.KgEdge("P39", "Q11696", "President")], ["P50"])
  if element_type is schemas.AuditPair:
    return schemas.AuditPair("bm25", "q?", "q1", "a", 1.0, 1.0, "id#1", None, 3, 7.5,
                             False, "a.csv", 2, "run.trec", 9)
  if element_type is schemas.GoldMatch:
    return schemas.GoldMatch(values[schemas.Prediction], 4, 1.0, 1.0)
  if element_type is schemas.SpanRow:
    return schemas.SpanRow("r.jsonl", 3, "id-1", "Paris is in Peru.",
                           [schemas.UnsupportedSpan(12, 16, 0.75)],
                           [schemas.TextSpan(9, 16, "Evident Conflict")])
  if element_type is schemas.TextSpan:
    return schemas.TextSpan(3, 9, "Evident Conflict")
  if element_type is schemas.LabelledItem:
    return schemas.LabelledItem("id-1", "wow", "t5", values[schemas.AttributionExample],
                                "Generic", False, "b.tsv", 4, "q?", "id#1",
                                [schemas.TextSpan(0, 2, None)])
  if element_type is schemas.TrainingExample:
    return schemas.TrainingExample("train", "ab" * 16, "wice", "c1", "q?", "p", "h",
                                   "premise: p hypothesis: h", "1", 1, False, "w.jsonl",
                                   3)
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
    assert rows[0].spans == [span._asdict() for span in row.spans]
  elif element_type is schemas.SpanRow:
    assert rows[0].spans == [span._asdict() for span in row.spans]
    assert rows[0].human_spans == [span._asdict() for span in row.human_spans]
  elif element_type is schemas.EntityRecord:
    assert rows[0].out_edges == [edge._asdict() for edge in row.out_edges]
  else:
    assert rows == [row, row]


def test_an_evaluate_span_row_round_trips():
  """evaluate's SpanRow has no item id: its system and question name it."""
  row = schemas.SpanRow("p.jsonl", 4, None, "Peru", [schemas.UnsupportedSpan(0, 4, 0.75)],
                        None, "sys", "q?")
  back, = iter_rows(to_record_batch([row], schemas.SPAN_ROW_SCHEMA), schemas.SpanRow)
  assert back._replace(spans=row.spans) == row
  assert back.spans == [row.spans[0]._asdict()]


def test_non_nullable_field_rejects_none():
  row = _example(schemas.RatingRow)._replace(auto_ais=None)
  with pytest.raises(ValueError, match="'auto_ais' is not nullable"):
    to_record_batch([row], schemas.RATING_SCHEMA)


# The public names of `schemas` before issue 16 split it into modules (76; the
# typing names, `beam` and `pa` it had imported for itself were not exports), each
# under the module that now defines it. Every `from schemas import X` in the
# project and in users' code must keep working.
EXPORTED_BEFORE_SPLIT = {
    "schemas.common": (
        "Prediction", "PREDICTION_SCHEMA", "GoldAnswer", "GOLD_ANSWER_SCHEMA",
        "AttributionExample", "ATTRIBUTION_EXAMPLE_SCHEMA", "AttributionScore",
        "ATTRIBUTION_SCORE_SCHEMA", "ScoringFailure", "SCORING_FAILURE_SCHEMA",
        "ScoreCacheEntry", "SCORE_CACHE_ENTRY_SCHEMA", "DeadLetter",
        "DEAD_LETTER_SCHEMA", "REJECTED", "UNMATCHED"),
    "schemas.corpus": (
        "CorpusRecord", "CORPUS_RECORD_SCHEMA", "CorpusPassage", "CORPUS_PASSAGE_SCHEMA",
        "ArticleEntry", "ARTICLE_ENTRY_SCHEMA"),
    "schemas.evaluate": (
        "GoldMatch", "GOLD_MATCH_SCHEMA", "HumanRating", "HUMAN_RATING_SCHEMA",
        "RatingRow", "RATING_SCHEMA", "LeaderboardRow", "LEADERBOARD_SCHEMA"),
    "schemas.agreement": (
        "LabelledItem", "LABELLED_ITEM_SCHEMA", "AgreementRow", "AGREEMENT_ROW_SCHEMA"),
    "schemas.ais_annotations": (
        "AisAnnotation", "AIS_ANNOTATION_SCHEMA", "AisTableRow", "AIS_TABLE_SCHEMA",
        "AisAgreementRow", "AIS_AGREEMENT_SCHEMA"),
    "schemas.claims": (
        "ClaimInput", "CLAIM_INPUT_SCHEMA", "ClaimRow", "CLAIM_ROW_SCHEMA",
        "ClaimsSystemRow", "CLAIMS_SYSTEM_SCHEMA"),
    "schemas.audit": (
        "AuditAnswer", "AUDIT_ANSWER_SCHEMA", "Candidate", "CANDIDATE_SCHEMA", "Topic",
        "TOPIC_SCHEMA", "AuditPair", "AUDIT_PAIR_SCHEMA", "AuditCandidateRow",
        "AUDIT_CANDIDATE_SCHEMA", "AuditAnswerRow", "AUDIT_ANSWER_ROW_SCHEMA",
        "AuditSystemRow", "AUDIT_SYSTEM_SCHEMA"),
    "schemas.sck": (
        "SckInput", "SCK_INPUT_SCHEMA", "KgStatement", "KG_STATEMENT_SCHEMA", "KgEdge",
        "KG_EDGE_SCHEMA", "EntityRecord", "ENTITY_RECORD_SCHEMA", "SckRow",
        "SCK_ROW_SCHEMA", "SckSummaryRow", "SCK_SUMMARY_SCHEMA"),
    "schemas.registry": ("SCHEMAS", "schema_of", "to_record_batch", "iter_rows"),
}
_HOME = {name: module for module, names in EXPORTED_BEFORE_SPLIT.items()
         for name in names}
SCHEMAS_DIR = pathlib.Path(schemas.__file__).parent
# Modules of jobs added since the split.
ADDED_SINCE_SPLIT = ("schemas.citations", "schemas.compare", "schemas.training")
TYPE_MODULES = sorted(set(EXPORTED_BEFORE_SPLIT) - {"schemas.registry"} |
                      set(ADDED_SINCE_SPLIT))


def test_exported_names_were_recorded_once():
  assert sum(map(len, EXPORTED_BEFORE_SPLIT.values())) == len(_HOME) == 76


@pytest.mark.parametrize("name", sorted(_HOME))
def test_name_exported_before_the_split_is_the_object_of_its_module(name):
  module = importlib.import_module(f"autoais.{_HOME[name]}")
  assert getattr(schemas, name) is getattr(module, name)
  assert name in _defined_names(_HOME[name])  # defined there, not imported


def _defined_names(module: str):
  """Public names a module of schemas/ assigns or defines at its top level."""
  tree = ast.parse((SCHEMAS_DIR / f"{module.split('.')[1]}.py").read_text("utf-8"))
  names = set()
  for node in tree.body:
    if isinstance(node, (ast.ClassDef, ast.FunctionDef)):
      names.add(node.name)
    elif isinstance(node, ast.Assign):
      names.update(target.id for target in node.targets if isinstance(target, ast.Name))
  return {name for name in names if not name.startswith("_")}


@pytest.mark.parametrize("module", sorted(EXPORTED_BEFORE_SPLIT))
def test_schemas_reexports_every_name_its_modules_define(module):
  # A type added to one module later must be importable as `from schemas import X`
  # too, like every other.
  loaded = importlib.import_module(f"autoais.{module}")
  missing = sorted(name for name in _defined_names(module)
                   if getattr(schemas, name, None) is not getattr(loaded, name))
  assert not missing, missing


@pytest.mark.parametrize("module", TYPE_MODULES)
def test_each_type_sits_in_SCHEMAS_beside_its_schema(module):
  loaded = importlib.import_module(f"autoais.{module}")
  defined = _defined_names(module)
  types = [value for name, value in vars(loaded).items()
           if name in defined and isinstance(value, type) and hasattr(value, "_fields")]
  own_schemas = [value for name, value in vars(loaded).items()
                 if name in defined and isinstance(value, pa.Schema)]
  assert types and len(types) == len(own_schemas)
  # Every type has its schema in SCHEMAS, and that schema is defined in the same
  # module; no schema is left without its type.
  assert all(element_type in SCHEMAS for element_type in types), types
  assert {id(SCHEMAS[element_type]) for element_type in types} == set(
      map(id, own_schemas))


def test_schemas_holds_only_the_types_of_its_modules():
  defined = {(module, name) for module in TYPE_MODULES for name in _defined_names(module)}
  assert all((t.__module__.removeprefix("autoais."), t.__name__) in defined
             for t in SCHEMAS), list(SCHEMAS)


def _imported_schema_modules(path: pathlib.Path):
  imported = set()
  for node in ast.walk(ast.parse(path.read_text("utf-8"))):
    module = (node.module or "").removeprefix("autoais.") if isinstance(
        node, ast.ImportFrom) else ""
    if isinstance(node, ast.ImportFrom) and module == "schemas":
      imported.update(f"schemas.{alias.name}" for alias in node.names)
    elif isinstance(node, ast.ImportFrom) and module.startswith("schemas."):
      imported.add(module)
    elif isinstance(node, ast.Import):
      imported.update(alias.name.removeprefix("autoais.") for alias in node.names
                      if alias.name.removeprefix("autoais.").startswith("schemas"))
  return imported


def test_type_modules_import_common_at_most():
  # common is imported by every job's module, so it must import none of them (no
  # cycles); a job's types never depend on another job's.
  allowed = {"common": set(), "errors": set()}
  imports = {path.stem: _imported_schema_modules(path)
             for path in SCHEMAS_DIR.glob("*.py")
             if path.stem not in ("__init__", "registry")}
  assert set(imports) == {m.split(".")[1] for m in TYPE_MODULES} | {"errors"}
  wrong = {stem: sorted(found) for stem, found in imports.items()
           if not found <= allowed.get(stem, {"schemas.common"})}
  assert not wrong, wrong
