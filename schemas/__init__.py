"""Element types and pyarrow schemas of every input, output and spilled row.

Each element type is a `typing.NamedTuple` defined once, directly beside the
pyarrow schema used wherever rows of that type touch Parquet or Arrow files
(inputs, outputs, and the sorted runs that jobs spill to disk), in the module of
its owner:

  common           types several jobs share (predictions, gold answers, scorer
                   inputs and outputs, score cache entries, dead letters)
  corpus           the passage corpus (build-corpus; joined by evaluate and audit)
  evaluate, agreement, ais_annotations, claims, citations, audit, sck, compare
                   the types of that one job
  training         training examples (training-data writes them, finetune reads them)
  registry         `SCHEMAS` (every type with its schema), their Beam RowCoders,
                   and the conversions between rows and Arrow record batches
  errors           every error type of the product

Every name is also importable from `schemas` itself (the re-exports below), as it
was when one module held them all. `tests/unit/schemas/test_schemas.py` holds every type
against its schema.
"""
from autoais.schemas.common import (ATTRIBUTION_EXAMPLE_SCHEMA, ATTRIBUTION_SCORE_SCHEMA,
                            DEAD_LETTER_SCHEMA, GOLD_ANSWER_SCHEMA, PREDICTION_SCHEMA,
                            REJECTED, SCORE_CACHE_ENTRY_SCHEMA, SCORING_FAILURE_SCHEMA,
                            UNMATCHED, AttributionExample, AttributionScore, DeadLetter,
                            GoldAnswer, LOCAL_FAILURE, Prediction, QA_HYPOTHESIS,
                            ScoreCacheEntry, ScoringFailure, UNSUPPORTED_SPAN_SCHEMA,
                            UnsupportedSpan)
from autoais.schemas.corpus import (ARTICLE_ENTRY_SCHEMA, CORPUS_PASSAGE_SCHEMA,
                            CORPUS_RECORD_SCHEMA, ArticleEntry, CorpusPassage,
                            CorpusRecord)
from autoais.schemas.evaluate import (GOLD_MATCH_SCHEMA, HUMAN_RATING_SCHEMA, LEADERBOARD_SCHEMA,
                              RATING_SCHEMA, GoldMatch, HumanRating, LeaderboardRow,
                              RatingRow)
from autoais.schemas.agreement import (AGREEMENT_ROW_SCHEMA, LABELLED_ITEM_SCHEMA,
                                       SPAN_ROW_SCHEMA, TEXT_SPAN_SCHEMA, AgreementRow,
                                       LabelledItem, SpanRow, TextSpan)
from autoais.schemas.ais_annotations import (AIS_AGREEMENT_SCHEMA, AIS_ANNOTATION_SCHEMA,
                                     AIS_TABLE_SCHEMA, AisAgreementRow, AisAnnotation,
                                     AisTableRow)
from autoais.schemas.claims import (CLAIMS_SYSTEM_SCHEMA, CLAIM_INPUT_SCHEMA, CLAIM_ROW_SCHEMA,
                            ClaimInput, ClaimRow, ClaimsSystemRow)
from autoais.schemas.citations import (CITATION_ITEM_ROW_SCHEMA, CITATION_ITEM_SCHEMA,
                               CITATION_SENTENCE_SCHEMA, CITATIONS_HUMAN_SCHEMA,
                               CITATIONS_SYSTEM_SCHEMA, CitationItem, CitationItemRow,
                               CitationSentenceRow, CitationsHumanRow, CitationsSystemRow)
from autoais.schemas.audit import (AUDIT_ANSWER_ROW_SCHEMA, AUDIT_ANSWER_SCHEMA,
                           AUDIT_CANDIDATE_SCHEMA, AUDIT_PAIR_SCHEMA, AUDIT_SYSTEM_SCHEMA,
                           CANDIDATE_SCHEMA, TOPIC_SCHEMA, AuditAnswer, AuditAnswerRow,
                           AuditCandidateRow, AuditPair, AuditSystemRow, Candidate, Topic)
from autoais.schemas.sck import (ENTITY_RECORD_SCHEMA, KG_EDGE_SCHEMA, KG_STATEMENT_SCHEMA,
                         SCK_INPUT_SCHEMA, SCK_ROW_SCHEMA, SCK_SUMMARY_SCHEMA,
                         EntityRecord, KgEdge, KgStatement, SckInput, SckRow,
                         SckSummaryRow)
from autoais.schemas.compare import (COMPARE_FLIP_SCHEMA, COMPARE_SYSTEM_SCHEMA, CompareFlipRow,
                                    CompareSystemRow)
from autoais.schemas.training import (FAMILIES, SPLITS, TRAINING_EXAMPLE_SCHEMA,
                                      TrainingExample)
from autoais.schemas.registry import SCHEMAS, iter_rows, schema_of, to_record_batch

# Every name above, re-exported: `from schemas import X` as before the split.
__all__ = [
    "ATTRIBUTION_EXAMPLE_SCHEMA", "ATTRIBUTION_SCORE_SCHEMA", "DEAD_LETTER_SCHEMA",
    "GOLD_ANSWER_SCHEMA", "PREDICTION_SCHEMA", "REJECTED", "SCORE_CACHE_ENTRY_SCHEMA",
    "SCORING_FAILURE_SCHEMA", "UNMATCHED", "AttributionExample", "AttributionScore",
    "DeadLetter", "GoldAnswer", "Prediction", "ScoreCacheEntry", "ScoringFailure", "LOCAL_FAILURE",
    "ARTICLE_ENTRY_SCHEMA", "CORPUS_PASSAGE_SCHEMA", "CORPUS_RECORD_SCHEMA",
    "ArticleEntry", "CorpusPassage", "CorpusRecord", "GOLD_MATCH_SCHEMA",
    "HUMAN_RATING_SCHEMA", "LEADERBOARD_SCHEMA", "RATING_SCHEMA", "GoldMatch",
    "HumanRating", "LeaderboardRow", "RatingRow", "AGREEMENT_ROW_SCHEMA",
    "LABELLED_ITEM_SCHEMA", "AgreementRow", "LabelledItem", "TEXT_SPAN_SCHEMA",
    "TextSpan", "AIS_AGREEMENT_SCHEMA",
    "AIS_ANNOTATION_SCHEMA", "AIS_TABLE_SCHEMA", "AisAgreementRow", "AisAnnotation",
    "AisTableRow", "CLAIMS_SYSTEM_SCHEMA", "CLAIM_INPUT_SCHEMA", "CLAIM_ROW_SCHEMA",
    "ClaimInput", "ClaimRow", "ClaimsSystemRow", "CITATION_ITEM_ROW_SCHEMA",
    "CITATION_ITEM_SCHEMA", "CITATION_SENTENCE_SCHEMA", "CITATIONS_SYSTEM_SCHEMA",
    "CitationItem", "CitationItemRow", "CitationSentenceRow", "CitationsSystemRow",
    "CITATIONS_HUMAN_SCHEMA", "CitationsHumanRow", "AUDIT_ANSWER_ROW_SCHEMA",
    "AUDIT_ANSWER_SCHEMA", "AUDIT_CANDIDATE_SCHEMA", "AUDIT_PAIR_SCHEMA",
    "AUDIT_SYSTEM_SCHEMA", "CANDIDATE_SCHEMA", "TOPIC_SCHEMA", "AuditAnswer",
    "AuditAnswerRow", "AuditCandidateRow", "AuditPair", "AuditSystemRow", "Candidate",
    "Topic", "ENTITY_RECORD_SCHEMA", "KG_EDGE_SCHEMA", "KG_STATEMENT_SCHEMA",
    "SCK_INPUT_SCHEMA", "SCK_ROW_SCHEMA", "SCK_SUMMARY_SCHEMA", "EntityRecord",
    "KgEdge", "KgStatement", "SckInput", "SckRow", "SckSummaryRow",
    "COMPARE_FLIP_SCHEMA", "COMPARE_SYSTEM_SCHEMA", "CompareFlipRow", "CompareSystemRow",
    "FAMILIES", "SPLITS", "TRAINING_EXAMPLE_SCHEMA", "TrainingExample",
    "SCHEMAS",
    "iter_rows", "schema_of", "to_record_batch",
]
