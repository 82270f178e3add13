"""Element types of `autoais evaluate` only, each beside its pyarrow schema:
predictions graded against gold, the human ratings joined to them, and its
outputs (ratings.csv rows, leaderboard rows).
"""
from typing import NamedTuple, Optional

import pyarrow as pa

from autoais.schemas.common import PREDICTION_SCHEMA, Prediction


class GoldMatch(NamedTuple):
  """A prediction whose question is in gold, with its answer already graded
  (without gold: its place among the run's questions, EM and F1 None)."""
  prediction: Prediction
  gold_index: int
  em: Optional[float]
  f1: Optional[float]


GOLD_MATCH_SCHEMA = pa.schema([
    pa.field("prediction", pa.struct(list(PREDICTION_SCHEMA)), nullable=False),
    pa.field("gold_index", pa.int64(), nullable=False),
    pa.field("em", pa.float64()),
    pa.field("f1", pa.float64()),
])


class HumanRating(NamedTuple):
  """One human AIS rating of a system's answer to a question (`--human_ratings`),
  joined to the predictions by (system_name, question)."""
  system_name: str
  question: str
  human_rating: str  # "Y" / "N"
  source_file: str
  source_line: int


HUMAN_RATING_SCHEMA = pa.schema([
    pa.field("system_name", pa.string(), nullable=False),
    pa.field("question", pa.string(), nullable=False),
    pa.field("human_rating", pa.string(), nullable=False),
    pa.field("source_file", pa.string(), nullable=False),
    pa.field("source_line", pa.int64(), nullable=False),
])


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
  em: Optional[float]  # None without gold
  f1: Optional[float]
  gold_index: int  # without gold: the question's place among the run's questions
  scorer: str
  n_windows: int
  truncated: bool
  source_file: str
  source_line: int


RATING_SCHEMA = pa.schema([
    pa.field("system_name", pa.string(), nullable=False),
    pa.field("question", pa.string(), nullable=False),
    pa.field("answer", pa.string(), nullable=False),
    pa.field("attribution", pa.string(), nullable=False),
    pa.field("passage", pa.string()),
    pa.field("human_rating", pa.string()),
    pa.field("auto_ais", pa.string(), nullable=False),
    pa.field("nli_score", pa.float64()),
    pa.field("em", pa.float64()),
    pa.field("f1", pa.float64()),
    pa.field("gold_index", pa.int64(), nullable=False),
    pa.field("scorer", pa.string(), nullable=False),
    pa.field("n_windows", pa.int64(), nullable=False),
    pa.field("truncated", pa.bool_(), nullable=False),
    pa.field("source_file", pa.string(), nullable=False),
    pa.field("source_line", pa.int64(), nullable=False),
])


class LeaderboardRow(NamedTuple):
  """Per-system aggregates. Rates (coverage, AutoAIS, EM, F1, their CIs, the
  shares of human-rated rows) are percents in [0, 100]; kappa and the AUCs keep
  their own scale (transforms/stats/metrics.py says how figures are rounded).
  Without gold (evaluate with no --gold) n_gold and EM / F1 are None and the
  rates are over the system's own distinct questions. The `autoais...` fields
  are written `string_match...` for a string-match run (transforms/scoring/
  label.py named_figures)."""
  system_name: str
  n_gold: Optional[int]
  n_predicted: int
  n_scored: int
  n_unmatched_attribution: int
  coverage: float  # n_scored over the questions (gold, or the system's own)
  autoais: float  # paper mode: Y over all gold questions (no gold: over its own)
  autoais_ci_low: Optional[float]
  autoais_ci_high: Optional[float]
  autoais_scored: Optional[float]  # Y over scored rows (coverage-aware)
  em: Optional[float]
  em_ci_low: Optional[float]
  em_ci_high: Optional[float]
  f1: Optional[float]
  f1_ci_low: Optional[float]
  f1_ci_high: Optional[float]
  n_human_rated: int
  human_ais: Optional[float]  # share of human-rated rows rated Y
  human_agreement: Optional[float]  # accuracy of auto_ais against human_rating
  human_kappa: Optional[float]  # Cohen's kappa of auto_ais against human_rating
  # Agreement with human ratings on the rated rows (transforms/stats/agreement.py).
  autoais_rated: Optional[float]  # share of human-rated rows with auto_ais Y
  human_balanced_accuracy: Optional[float]
  human_roc_auc: Optional[float]  # of nli_score, over rated rows that were scored
  human_pr_auc: Optional[float]  # average precision of nli_score, same rows
  # EM and F1 over the gold questions the system answered (em and f1 count an
  # unanswered question as the empty answer, as the reference script does).
  em_answered: Optional[float]
  f1_answered: Optional[float]


LEADERBOARD_SCHEMA = pa.schema([
    pa.field("system_name", pa.string(), nullable=False),
    pa.field("n_gold", pa.int64()),
    pa.field("n_predicted", pa.int64(), nullable=False),
    pa.field("n_scored", pa.int64(), nullable=False),
    pa.field("n_unmatched_attribution", pa.int64(), nullable=False),
    pa.field("coverage", pa.float64(), nullable=False),
    pa.field("autoais", pa.float64(), nullable=False),
    pa.field("autoais_ci_low", pa.float64()),
    pa.field("autoais_ci_high", pa.float64()),
    pa.field("autoais_scored", pa.float64()),
    pa.field("em", pa.float64()),
    pa.field("em_ci_low", pa.float64()),
    pa.field("em_ci_high", pa.float64()),
    pa.field("f1", pa.float64()),
    pa.field("f1_ci_low", pa.float64()),
    pa.field("f1_ci_high", pa.float64()),
    pa.field("n_human_rated", pa.int64(), nullable=False),
    pa.field("human_ais", pa.float64()),
    pa.field("human_agreement", pa.float64()),
    pa.field("human_kappa", pa.float64()),
    pa.field("autoais_rated", pa.float64()),
    pa.field("human_balanced_accuracy", pa.float64()),
    pa.field("human_roc_auc", pa.float64()),
    pa.field("human_pr_auc", pa.float64()),
    pa.field("em_answered", pa.float64()),
    pa.field("f1_answered", pa.float64()),
])
