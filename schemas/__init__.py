"""Element types and pyarrow schemas of every input, output and spilled row.

Each element type is a `typing.NamedTuple` defined once here; beside it sits the
pyarrow schema used wherever rows of that type touch Parquet or Arrow files
(inputs, outputs, and the sorted runs that jobs spill to disk).
`tests/test_schemas.py` holds every type against its schema.

Beam encodes these NamedTuples with its schema-aware `RowCoder` (registered
below), so they cross process boundaries without pickling.
"""
from typing import List, NamedTuple, Optional, Sequence, Type

import apache_beam as beam
import pyarrow as pa


class Prediction(NamedTuple):
  """One system output row as read from a predictions file."""
  system_name: str
  question: str
  answer: str
  attribution: str
  # A passage already joined to the row (ratings.csv carries one), in the
  # Pyserini « title » « headings » text form or the AIS display form.
  passage: Optional[str]
  human_rating: Optional[str]  # "Y" / "N" / None
  source_file: str
  source_line: int


class GoldAnswer(NamedTuple):
  """One gold question (NQ-Open format) and its position in the gold source."""
  question: str
  answers: List[str]
  gold_index: int


class GoldMatch(NamedTuple):
  """A prediction whose question is in gold, with its answer already graded."""
  prediction: Prediction
  gold_index: int
  em: float
  f1: float


class AttributionExample(NamedTuple):
  """What a scorer sees: an NLI premise/hypothesis pair, plus the raw answer and
  passage text for the string-match baseline."""
  premise: str
  hypothesis: str
  answer: str
  passage_text: str  # title, headings and text


class AttributionScore(NamedTuple):
  nli_score: float
  attributable: bool
  n_windows: int
  truncated: bool


class ScoringFailure(NamedTuple):
  """Why a scorer could not score an example (a remote endpoint refused it, or
  kept failing after every retry). `status` is the HTTP status of the last
  answer, 0 where none came (a timeout, a dropped connection)."""
  status: int
  message: str


class ScoreCacheEntry(NamedTuple):
  """One score of the score cache (transforms/score_cache.py): a model's score
  of one (premise, hypothesis) pair, keyed by the pair's digest; the model is
  the cache directory's identity."""
  digest: bytes
  nli_score: float
  attributable: bool
  n_windows: int
  truncated: bool


class CorpusRecord(NamedTuple):
  """A passage as read from a corpus source, before it is laid out."""
  id: str
  contents: str
  source_file: str
  source_line: int


class CorpusPassage(NamedTuple):
  """A passage as stored in the Parquet corpus (Pyserini `contents` form)."""
  id: str
  contents: str


class RatingRow(NamedTuple):
  """One evaluated prediction: the ratings.csv columns, then extra columns.

  Rows whose attribution was not found carry `passage=None` and
  `nli_score=None`; they count for EM/F1 but never reach ratings.csv.
  """
  system_name: str
  question: str
  answer: str
  attribution: str
  passage: Optional[str]  # AIS display format (SPEC 5.1)
  human_rating: Optional[str]
  auto_ais: str  # "Y" / "N"
  nli_score: Optional[float]
  em: float
  f1: float
  gold_index: int
  scorer: str
  n_windows: int
  truncated: bool
  source_file: str
  source_line: int


class LeaderboardRow(NamedTuple):
  """Per-system aggregates. AutoAIS and coverage are fractions in [0, 1], EM and
  F1 are percentages (the units of the reference script's scores file)."""
  system_name: str
  n_gold: int
  n_predicted: int
  n_scored: int
  n_unmatched_attribution: int
  coverage: float  # n_scored / n_gold
  autoais: float  # paper mode: Y over all gold questions
  autoais_ci_low: float
  autoais_ci_high: float
  autoais_scored: Optional[float]  # Y over scored rows (coverage-aware)
  em: float
  em_ci_low: float
  em_ci_high: float
  f1: float
  f1_ci_low: float
  f1_ci_high: float
  n_human_rated: int
  human_ais: Optional[float]  # share of human-rated rows rated Y
  human_agreement: Optional[float]  # accuracy of auto_ais against human_rating
  human_kappa: Optional[float]  # Cohen's kappa of auto_ais against human_rating


class DeadLetter(NamedTuple):
  """An input row that was not scored, with where it came from and why.

  `kind` is "rejected" (bad input) or "unmatched" (question not in gold,
  attribution not in the corpus): `run.json` counts the two apart.
  """
  source_file: str
  source_line: int
  kind: str
  reason: str
  field: Optional[str]
  message: str
  record: str  # the raw record: JSON of its fields, or the raw line


class AisAnnotation(NamedTuple):
  """One model output of the AIS paper's release (a row of ann_{dataset}.csv):
  the consensus of its raters (SPEC 5.6). Flagged outputs carry no labels;
  attributable implies interpretable."""
  dataset: str  # from the file name: ann_{dataset}.csv
  model: str  # model-name
  example_id: str  # ex-idx ("" where the file has none)
  flagged: bool  # Flagged
  interpretable: bool  # INT
  attributable: bool  # INT & AIS
  # Raters agreeing with the consensus (# agree (INT), # agree (AIS)); None where
  # the release writes -1 (flagged; not interpretable).
  int_agreement: Optional[int]
  ais_agreement: Optional[int]
  source_file: str
  source_line: int


class AisTableRow(NamedTuple):
  """One model of ais_tables.csv: the release's Flag / Int / AIS beside the
  paper's printed cells (strings as printed, one decimal, percent)."""
  dataset: str
  paper_table: Optional[int]
  model: str
  paper_label: Optional[str]
  items: int
  flagged: int
  interpretable: int
  attributable: int
  flag: str
  paper_flag: Optional[str]
  flag_equal: Optional[bool]
  int: str
  int_mark: bool
  int_p_value: Optional[float]
  paper_int: Optional[str]
  paper_int_mark: Optional[bool]
  int_equal: Optional[bool]
  ais: str
  ais_mark: bool
  ais_p_value: Optional[float]
  paper_ais: Optional[str]
  paper_ais_mark: Optional[bool]
  ais_equal: Optional[bool]
  status: str  # reproduced / explained / partly explained / not in the paper
  explanation: str


class AisAgreementRow(NamedTuple):
  """One bar of a rater-agreement distribution (ais_agreement.csv): how many of
  a model's outputs had `agreeing_raters` raters agreeing with the consensus on
  `question` (INT over outputs not flagged, AIS over interpretable outputs;
  None where the release gives no count)."""
  dataset: str
  model: str
  question: str  # "INT" or "AIS"
  agreeing_raters: Optional[int]
  items: int
  share: float


REJECTED = "rejected"
UNMATCHED = "unmatched"

PREDICTION_SCHEMA = pa.schema([
    pa.field("system_name", pa.string(), nullable=False),
    pa.field("question", pa.string(), nullable=False),
    pa.field("answer", pa.string(), nullable=False),
    pa.field("attribution", pa.string(), nullable=False),
    pa.field("passage", pa.string()),
    pa.field("human_rating", pa.string()),
    pa.field("source_file", pa.string(), nullable=False),
    pa.field("source_line", pa.int64(), nullable=False),
])

GOLD_ANSWER_SCHEMA = pa.schema([
    pa.field("question", pa.string(), nullable=False),
    pa.field("answers", pa.list_(pa.string()), nullable=False),
    pa.field("gold_index", pa.int64(), nullable=False),
])

GOLD_MATCH_SCHEMA = pa.schema([
    pa.field("prediction", pa.struct(list(PREDICTION_SCHEMA)), nullable=False),
    pa.field("gold_index", pa.int64(), nullable=False),
    pa.field("em", pa.float64(), nullable=False),
    pa.field("f1", pa.float64(), nullable=False),
])

ATTRIBUTION_EXAMPLE_SCHEMA = pa.schema([
    pa.field("premise", pa.string(), nullable=False),
    pa.field("hypothesis", pa.string(), nullable=False),
    pa.field("answer", pa.string(), nullable=False),
    pa.field("passage_text", pa.string(), nullable=False),
])

ATTRIBUTION_SCORE_SCHEMA = pa.schema([
    pa.field("nli_score", pa.float64(), nullable=False),
    pa.field("attributable", pa.bool_(), nullable=False),
    pa.field("n_windows", pa.int64(), nullable=False),
    pa.field("truncated", pa.bool_(), nullable=False),
])

SCORING_FAILURE_SCHEMA = pa.schema([
    pa.field("status", pa.int64(), nullable=False),
    pa.field("message", pa.string(), nullable=False),
])

SCORE_CACHE_ENTRY_SCHEMA = pa.schema([
    pa.field("digest", pa.binary(), nullable=False),
    pa.field("nli_score", pa.float64(), nullable=False),
    pa.field("attributable", pa.bool_(), nullable=False),
    pa.field("n_windows", pa.int64(), nullable=False),
    pa.field("truncated", pa.bool_(), nullable=False),
])

CORPUS_RECORD_SCHEMA = pa.schema([
    pa.field("id", pa.string(), nullable=False),
    pa.field("contents", pa.string(), nullable=False),
    pa.field("source_file", pa.string(), nullable=False),
    pa.field("source_line", pa.int64(), nullable=False),
])

CORPUS_PASSAGE_SCHEMA = pa.schema([
    pa.field("id", pa.string(), nullable=False),
    pa.field("contents", pa.string(), nullable=False),
])

RATING_SCHEMA = pa.schema([
    pa.field("system_name", pa.string(), nullable=False),
    pa.field("question", pa.string(), nullable=False),
    pa.field("answer", pa.string(), nullable=False),
    pa.field("attribution", pa.string(), nullable=False),
    pa.field("passage", pa.string()),
    pa.field("human_rating", pa.string()),
    pa.field("auto_ais", pa.string(), nullable=False),
    pa.field("nli_score", pa.float64()),
    pa.field("em", pa.float64(), nullable=False),
    pa.field("f1", pa.float64(), nullable=False),
    pa.field("gold_index", pa.int64(), nullable=False),
    pa.field("scorer", pa.string(), nullable=False),
    pa.field("n_windows", pa.int64(), nullable=False),
    pa.field("truncated", pa.bool_(), nullable=False),
    pa.field("source_file", pa.string(), nullable=False),
    pa.field("source_line", pa.int64(), nullable=False),
])

LEADERBOARD_SCHEMA = pa.schema([
    pa.field("system_name", pa.string(), nullable=False),
    pa.field("n_gold", pa.int64(), nullable=False),
    pa.field("n_predicted", pa.int64(), nullable=False),
    pa.field("n_scored", pa.int64(), nullable=False),
    pa.field("n_unmatched_attribution", pa.int64(), nullable=False),
    pa.field("coverage", pa.float64(), nullable=False),
    pa.field("autoais", pa.float64(), nullable=False),
    pa.field("autoais_ci_low", pa.float64(), nullable=False),
    pa.field("autoais_ci_high", pa.float64(), nullable=False),
    pa.field("autoais_scored", pa.float64()),
    pa.field("em", pa.float64(), nullable=False),
    pa.field("em_ci_low", pa.float64(), nullable=False),
    pa.field("em_ci_high", pa.float64(), nullable=False),
    pa.field("f1", pa.float64(), nullable=False),
    pa.field("f1_ci_low", pa.float64(), nullable=False),
    pa.field("f1_ci_high", pa.float64(), nullable=False),
    pa.field("n_human_rated", pa.int64(), nullable=False),
    pa.field("human_ais", pa.float64()),
    pa.field("human_agreement", pa.float64()),
    pa.field("human_kappa", pa.float64()),
])

DEAD_LETTER_SCHEMA = pa.schema([
    pa.field("source_file", pa.string(), nullable=False),
    pa.field("source_line", pa.int64(), nullable=False),
    pa.field("kind", pa.string(), nullable=False),
    pa.field("reason", pa.string(), nullable=False),
    pa.field("field", pa.string()),
    pa.field("message", pa.string(), nullable=False),
    pa.field("record", pa.string(), nullable=False),
])

AIS_ANNOTATION_SCHEMA = pa.schema([
    pa.field("dataset", pa.string(), nullable=False),
    pa.field("model", pa.string(), nullable=False),
    pa.field("example_id", pa.string(), nullable=False),
    pa.field("flagged", pa.bool_(), nullable=False),
    pa.field("interpretable", pa.bool_(), nullable=False),
    pa.field("attributable", pa.bool_(), nullable=False),
    pa.field("int_agreement", pa.int64()),
    pa.field("ais_agreement", pa.int64()),
    pa.field("source_file", pa.string(), nullable=False),
    pa.field("source_line", pa.int64(), nullable=False),
])

AIS_TABLE_SCHEMA = pa.schema([
    pa.field("dataset", pa.string(), nullable=False),
    pa.field("paper_table", pa.int64()),
    pa.field("model", pa.string(), nullable=False),
    pa.field("paper_label", pa.string()),
    pa.field("items", pa.int64(), nullable=False),
    pa.field("flagged", pa.int64(), nullable=False),
    pa.field("interpretable", pa.int64(), nullable=False),
    pa.field("attributable", pa.int64(), nullable=False),
    pa.field("flag", pa.string(), nullable=False),
    pa.field("paper_flag", pa.string()),
    pa.field("flag_equal", pa.bool_()),
    pa.field("int", pa.string(), nullable=False),
    pa.field("int_mark", pa.bool_(), nullable=False),
    pa.field("int_p_value", pa.float64()),
    pa.field("paper_int", pa.string()),
    pa.field("paper_int_mark", pa.bool_()),
    pa.field("int_equal", pa.bool_()),
    pa.field("ais", pa.string(), nullable=False),
    pa.field("ais_mark", pa.bool_(), nullable=False),
    pa.field("ais_p_value", pa.float64()),
    pa.field("paper_ais", pa.string()),
    pa.field("paper_ais_mark", pa.bool_()),
    pa.field("ais_equal", pa.bool_()),
    pa.field("status", pa.string(), nullable=False),
    pa.field("explanation", pa.string(), nullable=False),
])

AIS_AGREEMENT_SCHEMA = pa.schema([
    pa.field("dataset", pa.string(), nullable=False),
    pa.field("model", pa.string(), nullable=False),
    pa.field("question", pa.string(), nullable=False),
    pa.field("agreeing_raters", pa.int64()),
    pa.field("items", pa.int64(), nullable=False),
    pa.field("share", pa.float64(), nullable=False),
])

SCHEMAS = {
    Prediction: PREDICTION_SCHEMA,
    GoldAnswer: GOLD_ANSWER_SCHEMA,
    GoldMatch: GOLD_MATCH_SCHEMA,
    AttributionExample: ATTRIBUTION_EXAMPLE_SCHEMA,
    AttributionScore: ATTRIBUTION_SCORE_SCHEMA,
    ScoringFailure: SCORING_FAILURE_SCHEMA,
    ScoreCacheEntry: SCORE_CACHE_ENTRY_SCHEMA,
    CorpusRecord: CORPUS_RECORD_SCHEMA,
    CorpusPassage: CORPUS_PASSAGE_SCHEMA,
    RatingRow: RATING_SCHEMA,
    LeaderboardRow: LEADERBOARD_SCHEMA,
    DeadLetter: DEAD_LETTER_SCHEMA,
    AisAnnotation: AIS_ANNOTATION_SCHEMA,
    AisTableRow: AIS_TABLE_SCHEMA,
    AisAgreementRow: AIS_AGREEMENT_SCHEMA,
}

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
