"""Every element type with its pyarrow schema (`SCHEMAS`), the Beam coders of
those types, and the conversions between rows and Arrow record batches.

The one module of the package that imports every job's types (the type modules
import `schemas.common` at most), so that a job's types stay in that job's module.
"""
from typing import Sequence, Type

import apache_beam as beam
import pyarrow as pa

from autoais.schemas import (agreement, ais_annotations, audit, citations, claims, common,
                             compare, corpus, evaluate, sck, training)

# In the order of the single module that held every type before issue 16 split it,
# so that coders are registered, and tests listed, as before.
SCHEMAS = {
    common.Prediction: common.PREDICTION_SCHEMA,
    common.GoldAnswer: common.GOLD_ANSWER_SCHEMA,
    evaluate.GoldMatch: evaluate.GOLD_MATCH_SCHEMA,
    common.AttributionExample: common.ATTRIBUTION_EXAMPLE_SCHEMA,
    common.AttributionScore: common.ATTRIBUTION_SCORE_SCHEMA,
    common.ScoringFailure: common.SCORING_FAILURE_SCHEMA,
    common.UnsupportedSpan: common.UNSUPPORTED_SPAN_SCHEMA,
    common.ScoreCacheEntry: common.SCORE_CACHE_ENTRY_SCHEMA,
    corpus.CorpusRecord: corpus.CORPUS_RECORD_SCHEMA,
    corpus.CorpusPassage: corpus.CORPUS_PASSAGE_SCHEMA,
    evaluate.RatingRow: evaluate.RATING_SCHEMA,
    evaluate.LeaderboardRow: evaluate.LEADERBOARD_SCHEMA,
    common.DeadLetter: common.DEAD_LETTER_SCHEMA,
    ais_annotations.AisAnnotation: ais_annotations.AIS_ANNOTATION_SCHEMA,
    ais_annotations.AisTableRow: ais_annotations.AIS_TABLE_SCHEMA,
    ais_annotations.AisAgreementRow: ais_annotations.AIS_AGREEMENT_SCHEMA,
    evaluate.HumanRating: evaluate.HUMAN_RATING_SCHEMA,
    agreement.TextSpan: agreement.TEXT_SPAN_SCHEMA,
    agreement.LabelledItem: agreement.LABELLED_ITEM_SCHEMA,
    agreement.AgreementRow: agreement.AGREEMENT_ROW_SCHEMA,
    agreement.SpanRow: agreement.SPAN_ROW_SCHEMA,
    corpus.ArticleEntry: corpus.ARTICLE_ENTRY_SCHEMA,
    claims.ClaimInput: claims.CLAIM_INPUT_SCHEMA,
    claims.ClaimRow: claims.CLAIM_ROW_SCHEMA,
    claims.ClaimsSystemRow: claims.CLAIMS_SYSTEM_SCHEMA,
    citations.CitationItem: citations.CITATION_ITEM_SCHEMA,
    citations.CitationSentenceRow: citations.CITATION_SENTENCE_SCHEMA,
    citations.CitationItemRow: citations.CITATION_ITEM_ROW_SCHEMA,
    citations.CitationsSystemRow: citations.CITATIONS_SYSTEM_SCHEMA,
    citations.CitationsHumanRow: citations.CITATIONS_HUMAN_SCHEMA,
    audit.AuditAnswer: audit.AUDIT_ANSWER_SCHEMA,
    audit.Candidate: audit.CANDIDATE_SCHEMA,
    audit.Topic: audit.TOPIC_SCHEMA,
    audit.AuditPair: audit.AUDIT_PAIR_SCHEMA,
    audit.AuditCandidateRow: audit.AUDIT_CANDIDATE_SCHEMA,
    audit.AuditAnswerRow: audit.AUDIT_ANSWER_ROW_SCHEMA,
    audit.AuditSystemRow: audit.AUDIT_SYSTEM_SCHEMA,
    sck.SckInput: sck.SCK_INPUT_SCHEMA,
    sck.KgStatement: sck.KG_STATEMENT_SCHEMA,
    sck.KgEdge: sck.KG_EDGE_SCHEMA,
    sck.EntityRecord: sck.ENTITY_RECORD_SCHEMA,
    sck.SckRow: sck.SCK_ROW_SCHEMA,
    sck.SckSummaryRow: sck.SCK_SUMMARY_SCHEMA,
    compare.CompareFlipRow: compare.COMPARE_FLIP_SCHEMA,
    compare.CompareSystemRow: compare.COMPARE_SYSTEM_SCHEMA,
    training.TrainingExample: training.TRAINING_EXAMPLE_SCHEMA,
}

# Beam encodes these NamedTuples with its schema-aware RowCoder, so that they
# cross process boundaries without pickling.
for _element_type in SCHEMAS:
  beam.coders.registry.register_coder(_element_type, beam.coders.RowCoder)


def schema_of(element_type: Type[tuple]) -> pa.Schema:
  return SCHEMAS[element_type]


def to_record_batch(rows: Sequence[tuple], schema: pa.Schema) -> pa.RecordBatch:
  """Rows (tuples in schema field order) to one Arrow record batch."""
  if not rows:
    return pa.RecordBatch.from_pylist([], schema=schema)
  # One conversion of the tuples as a struct array: about twice as fast as
  # transposing the rows into columns in Python.
  batch = pa.RecordBatch.from_struct_array(
      pa.array(rows, type=pa.struct(list(schema))))
  for column, field in zip(batch.columns, schema):
    if column.null_count and not field.nullable:
      raise ValueError(f"field '{field.name}' is not nullable, found "
                       f"{column.null_count} null value(s)")
  return batch


def iter_rows(batch, element_type: Type[tuple]):
  """Yields the rows of an Arrow record batch or table as `element_type`."""
  make = element_type._make
  columns = [column.to_pylist() for column in batch.columns]
  for values in zip(*columns):
    yield make(values)
