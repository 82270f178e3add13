"""Element types of `autoais claims` only, each beside its pyarrow schema: the
claims of long-form answers as read, and the per-claim and per-system rows it
writes.
"""
from typing import List, NamedTuple, Optional

import pyarrow as pa


class ClaimInput(NamedTuple):
  """One claim of a long-form answer as read (ExpertQA records or flat JSONL),
  before cleaning. An answer is identified by (system_name, question) and located
  at (source_file, answer_line)."""
  system_name: str
  question: str
  claim_index: int  # position among its answer's claims, from 0
  claim: str  # as given, citation markers included
  evidence: List[str]  # as given; empty: the claim cites nothing
  support: Optional[str]  # human label: Complete / Partial / Incomplete / Missing / ...
  abstained: bool  # the answer abstains (transforms/labelled/expertqa.py: did_abstain)
  answer_line: int  # line of the answer's record (flat JSONL: of its first claim)
  source_file: str
  source_line: int


CLAIM_INPUT_SCHEMA = pa.schema([
    pa.field("system_name", pa.string(), nullable=False),
    pa.field("question", pa.string(), nullable=False),
    pa.field("claim_index", pa.int64(), nullable=False),
    pa.field("claim", pa.string(), nullable=False),
    pa.field("evidence", pa.list_(pa.string()), nullable=False),
    pa.field("support", pa.string()),
    pa.field("abstained", pa.bool_(), nullable=False),
    pa.field("answer_line", pa.int64(), nullable=False),
    pa.field("source_file", pa.string(), nullable=False),
    pa.field("source_line", pa.int64(), nullable=False),
])


class ClaimRow(NamedTuple):
  """One scored claim: claims_rows.parquet / .csv."""
  system_name: str
  question: str
  claim_index: int
  claim: str  # cleaned
  evidence: Optional[str]  # the premise scored (cleaned); None without evidence
  n_evidence: int  # evidence items the claim cites
  support: Optional[str]
  human_label: Optional[str]  # "Y" (support Complete) / "N" / None (no usable label)
  abstained: bool
  auto_ais: str  # "Y" / "N"
  nli_score: Optional[float]  # None without evidence
  n_windows: int
  truncated: bool
  reranked: bool  # --evidence_mode rerank chose evidence sentences for this claim
  scorer: str
  answer_line: int
  source_file: str
  source_line: int


CLAIM_ROW_SCHEMA = pa.schema([
    pa.field("system_name", pa.string(), nullable=False),
    pa.field("question", pa.string(), nullable=False),
    pa.field("claim_index", pa.int64(), nullable=False),
    pa.field("claim", pa.string(), nullable=False),
    pa.field("evidence", pa.string()),
    pa.field("n_evidence", pa.int64(), nullable=False),
    pa.field("support", pa.string()),
    pa.field("human_label", pa.string()),
    pa.field("abstained", pa.bool_(), nullable=False),
    pa.field("auto_ais", pa.string(), nullable=False),
    pa.field("nli_score", pa.float64()),
    pa.field("n_windows", pa.int64(), nullable=False),
    pa.field("truncated", pa.bool_(), nullable=False),
    pa.field("reranked", pa.bool_(), nullable=False),
    pa.field("scorer", pa.string(), nullable=False),
    pa.field("answer_line", pa.int64(), nullable=False),
    pa.field("source_file", pa.string(), nullable=False),
    pa.field("source_line", pa.int64(), nullable=False),
])


class ClaimsSystemRow(NamedTuple):
  """Per-system claim-level attribution: claims.csv / .json / .md. AutoAIS
  figures and the human shares are percents (kappa and ROC-AUC on their own
  scale); macro = mean over answers of the mean over their claims, micro = mean
  over claims; claims without evidence count as N."""
  system_name: str
  n_answers: int
  n_claims: int
  n_claims_without_evidence: int
  n_abstaining_answers: int
  macro_autoais: float
  macro_ci_low: float
  macro_ci_high: float
  micro_autoais: float
  micro_ci_low: float
  micro_ci_high: float
  macro_autoais_non_abstaining: Optional[float]
  micro_autoais_non_abstaining: Optional[float]
  n_human_labelled: int
  human_ais: Optional[float]  # share of labelled claims with support Complete
  human_accuracy: Optional[float]
  human_balanced_accuracy: Optional[float]
  human_kappa: Optional[float]
  human_roc_auc: Optional[float]  # of nli_score (0 without evidence)


CLAIMS_SYSTEM_SCHEMA = pa.schema([
    pa.field("system_name", pa.string(), nullable=False),
    pa.field("n_answers", pa.int64(), nullable=False),
    pa.field("n_claims", pa.int64(), nullable=False),
    pa.field("n_claims_without_evidence", pa.int64(), nullable=False),
    pa.field("n_abstaining_answers", pa.int64(), nullable=False),
    pa.field("macro_autoais", pa.float64(), nullable=False),
    pa.field("macro_ci_low", pa.float64(), nullable=False),
    pa.field("macro_ci_high", pa.float64(), nullable=False),
    pa.field("micro_autoais", pa.float64(), nullable=False),
    pa.field("micro_ci_low", pa.float64(), nullable=False),
    pa.field("micro_ci_high", pa.float64(), nullable=False),
    pa.field("macro_autoais_non_abstaining", pa.float64()),
    pa.field("micro_autoais_non_abstaining", pa.float64()),
    pa.field("n_human_labelled", pa.int64(), nullable=False),
    pa.field("human_ais", pa.float64()),
    pa.field("human_accuracy", pa.float64()),
    pa.field("human_balanced_accuracy", pa.float64()),
    pa.field("human_kappa", pa.float64()),
    pa.field("human_roc_auc", pa.float64()),
])
