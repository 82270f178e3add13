"""Element types of `autoais ais-annotations` only, each beside its pyarrow
schema: the AIS release's annotations as read, and the tables it writes.
"""
from typing import NamedTuple, Optional

import pyarrow as pa


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


AIS_AGREEMENT_SCHEMA = pa.schema([
    pa.field("dataset", pa.string(), nullable=False),
    pa.field("model", pa.string(), nullable=False),
    pa.field("question", pa.string(), nullable=False),
    pa.field("agreeing_raters", pa.int64()),
    pa.field("items", pa.int64(), nullable=False),
    pa.field("share", pa.float64(), nullable=False),
])
