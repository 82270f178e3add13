"""Types of `autoais compare` (two evaluate, claims, agreement or citations
runs side by side): the rows whose decision flipped (compare.csv / .parquet) and one row per
system (compare_systems.csv)."""
from typing import NamedTuple, Optional

import pyarrow as pa


class CompareFlipRow(NamedTuple):
  """A row both runs scored whose AutoAIS decision differs (or, of two evaluate
  runs with gold, a question one run rated Y and the other did not rate):
  evaluate's (system, question), or a claim of the same text in one system's answer to a question
  (claims: the answer fields hold the claim, the passages its evidence, and
  there is no attribution), or a sentence of the same text (citations removed)
  in one system's answer (citations: the answer fields hold the sentence as
  written, the attribution the document numbers scored, and there is no
  passage)."""
  system_name: str
  question: str
  # None: a gold question the run did not rate (evaluate), N as its
  # leaderboard counts it.
  baseline_answer: Optional[str]
  candidate_answer: Optional[str]
  baseline_attribution: Optional[str]
  candidate_attribution: Optional[str]
  baseline_passage: Optional[str]
  candidate_passage: Optional[str]
  baseline_auto_ais: str  # "Y" / "N"
  candidate_auto_ais: str
  baseline_nli_score: Optional[float]
  candidate_nli_score: Optional[float]
  score_change: Optional[float]  # candidate - baseline


COMPARE_FLIP_SCHEMA = pa.schema([
    pa.field("system_name", pa.string(), nullable=False),
    pa.field("question", pa.string(), nullable=False),
    pa.field("baseline_answer", pa.string()),
    pa.field("candidate_answer", pa.string()),
    pa.field("baseline_attribution", pa.string()),
    pa.field("candidate_attribution", pa.string()),
    pa.field("baseline_passage", pa.string()),
    pa.field("candidate_passage", pa.string()),
    pa.field("baseline_auto_ais", pa.string(), nullable=False),
    pa.field("candidate_auto_ais", pa.string(), nullable=False),
    pa.field("baseline_nli_score", pa.float64()),
    pa.field("candidate_nli_score", pa.float64()),
    pa.field("score_change", pa.float64()),
])


class CompareSystemRow(NamedTuple):
  """One system's change (agreement: one group of items, or all of them).
  Rates are percents over the questions both runs answered (`n_paired`;
  claims: the macro AutoAIS of those answers; agreement: the items, AutoAIS
  the share decided attributable; citations: AutoAIS is citation recall),
  changes in points (candidate - baseline) with a 95% paired-bootstrap
  interval over them; EM and F1 empty where a run had no gold (and for
  claims, agreement and citations); accuracy and balanced accuracy against
  the human labels for agreement only; citation precision for citations only;
  McNemar on the paired rows' decisions (claims: claims of the same text;
  citations: sentences of the same text; agreement: on whether each decision
  agrees with the human label);
  `status` is "both", "added" (candidate only) or "removed" (baseline only)."""
  system_name: str
  status: str
  n_baseline: int  # the system's rows in the baseline's row table
  n_candidate: int
  n_paired: int
  autoais_baseline: Optional[float]
  autoais_candidate: Optional[float]
  autoais_change: Optional[float]
  autoais_change_low: Optional[float]
  autoais_change_high: Optional[float]
  em_change: Optional[float]
  em_change_low: Optional[float]
  em_change_high: Optional[float]
  f1_change: Optional[float]
  f1_change_low: Optional[float]
  f1_change_high: Optional[float]
  # agreement runs: the decisions against the human labels, in percent / points
  accuracy_baseline: Optional[float]
  accuracy_candidate: Optional[float]
  accuracy_change: Optional[float]
  accuracy_change_low: Optional[float]
  accuracy_change_high: Optional[float]
  balanced_accuracy_baseline: Optional[float]
  balanced_accuracy_candidate: Optional[float]
  balanced_accuracy_change: Optional[float]
  balanced_accuracy_change_low: Optional[float]
  balanced_accuracy_change_high: Optional[float]
  # citations runs: citation precision (AutoAIS is then citation recall)
  citation_prec_baseline: Optional[float]
  citation_prec_candidate: Optional[float]
  citation_prec_change: Optional[float]
  citation_prec_change_low: Optional[float]
  citation_prec_change_high: Optional[float]
  flipped_to_y: int  # N in the baseline, Y in the candidate
  flipped_to_n: int
  mcnemar_p_value: Optional[float]  # exact, on the paired decisions
  leaderboard_autoais_baseline: Optional[float]  # the leaderboard's headline
  leaderboard_autoais_candidate: Optional[float]
  regression: bool  # --fail_on_regression: fell by more, interval excluding 0


COMPARE_SYSTEM_SCHEMA = pa.schema([
    pa.field("system_name", pa.string(), nullable=False),
    pa.field("status", pa.string(), nullable=False),
    pa.field("n_baseline", pa.int64(), nullable=False),
    pa.field("n_candidate", pa.int64(), nullable=False),
    pa.field("n_paired", pa.int64(), nullable=False),
    pa.field("autoais_baseline", pa.float64()),
    pa.field("autoais_candidate", pa.float64()),
    pa.field("autoais_change", pa.float64()),
    pa.field("autoais_change_low", pa.float64()),
    pa.field("autoais_change_high", pa.float64()),
    pa.field("em_change", pa.float64()),
    pa.field("em_change_low", pa.float64()),
    pa.field("em_change_high", pa.float64()),
    pa.field("f1_change", pa.float64()),
    pa.field("f1_change_low", pa.float64()),
    pa.field("f1_change_high", pa.float64()),
    pa.field("accuracy_baseline", pa.float64()),
    pa.field("accuracy_candidate", pa.float64()),
    pa.field("accuracy_change", pa.float64()),
    pa.field("accuracy_change_low", pa.float64()),
    pa.field("accuracy_change_high", pa.float64()),
    pa.field("balanced_accuracy_baseline", pa.float64()),
    pa.field("balanced_accuracy_candidate", pa.float64()),
    pa.field("balanced_accuracy_change", pa.float64()),
    pa.field("balanced_accuracy_change_low", pa.float64()),
    pa.field("balanced_accuracy_change_high", pa.float64()),
    pa.field("citation_prec_baseline", pa.float64()),
    pa.field("citation_prec_candidate", pa.float64()),
    pa.field("citation_prec_change", pa.float64()),
    pa.field("citation_prec_change_low", pa.float64()),
    pa.field("citation_prec_change_high", pa.float64()),
    pa.field("flipped_to_y", pa.int64(), nullable=False),
    pa.field("flipped_to_n", pa.int64(), nullable=False),
    pa.field("mcnemar_p_value", pa.float64()),
    pa.field("leaderboard_autoais_baseline", pa.float64()),
    pa.field("leaderboard_autoais_candidate", pa.float64()),
    pa.field("regression", pa.bool_(), nullable=False),
])
