"""claims' outputs: claims_rows.parquet / .csv from the merged claim rows (the
job skeleton, transforms/rows/: the first answer per system and question is
kept) and the per-system summary claims.{csv,json,md} with bootstrap CIs.
"""
import functools
import json
from typing import NamedTuple, Optional

import apache_beam as beam
import pyarrow as pa

from autoais.schemas import CLAIM_ROW_SCHEMA, CLAIMS_SYSTEM_SCHEMA, REJECTED, ClaimRow, DeadLetter
from autoais.transforms.claims.steps import CLAIM_KEY, ClaimOutcomes, claims_system_row
from autoais.transforms.io.sorted_runs import RowRef
from autoais.transforms.rows.merge import RowFold, RowTable
from autoais.transforms.rows.summary import WriteSummary, percent
from autoais.transforms.scoring.label import measure_name
from autoais.transforms.stats.metrics import PERCENT


class _MergedClaim(NamedTuple):
  """The fields of a claim row that the fold reads as Python values."""
  system_name: str
  question: str
  source_file: str
  answer_line: int
  auto_ais: str
  nli_score: Optional[float]
  n_evidence: int
  human_label: Optional[str]
  abstained: bool


def _abstaining(ref: RowRef) -> RowRef:
  """The row of `ref` with `abstained` true, as a one-row batch of its own
  schema (the table copies rows as Arrow slices)."""
  row = ref.batch.slice(ref.index, 1)
  column = row.schema.get_field_index("abstained")
  return RowRef(ref.values, row.set_column(column, row.schema.field(column),
                                           pa.array([True], pa.bool_())), 0)


class ClaimsFold(RowFold):
  """Keeps the first answer per (system, question) (an answer: the claims of
  one source record), writes claims_rows.parquet / .csv, and gives one
  ClaimOutcomes per system."""
  row_type = ClaimRow
  merged_type = _MergedClaim
  sort_key = CLAIM_KEY
  run_name = "claims"
  tables = (RowTable("claims_rows", CLAIM_ROW_SCHEMA),)
  unique = ("system_name", "question")
  unit = ("system_name", "question", "source_file", "answer_line")

  def __init__(self):
    self._kept_claims = 0
    self._answer = None  # the unit of the kept answer
    self._outcomes = None
    # The current answer's rows, written once its last is seen: an answer
    # abstains if any of its lines says so (the flat format gives the answer
    # text line by line), and each of its rows must say the same.
    self._pending, self._abstained = [], False

  def start_system(self, system_name):
    self._outcomes = ClaimOutcomes(system_name)

  def add(self, row, ref, tables):
    unit = (row.system_name, row.question, row.source_file, row.answer_line)
    new_answer = unit != self._answer
    if new_answer:
      self._write_answer(tables)
    self._answer = unit
    self._outcomes.add(new_answer, row.auto_ais == "Y", row.n_evidence > 0,
                       row.human_label, row.nli_score, row.abstained)
    self._kept_claims += 1
    self._pending.append((ref, row.abstained))
    self._abstained = self._abstained or row.abstained
    return ()

  def _write_answer(self, tables):
    for ref, abstained in self._pending:
      if abstained != self._abstained:
        ref = _abstaining(ref)
      tables["claims_rows"].add(ref)
    self._pending, self._abstained = [], False

  def end_system(self, tables):
    self._write_answer(tables)
    yield self._outcomes

  def duplicate(self, ref, kept):
    row = ref.row(ClaimRow)
    return DeadLetter(
        row.source_file, row.source_line, REJECTED, "duplicate_answer", "question",
        f"{row.source_file}:{row.source_line}: field 'question': claim "
        f"{row.claim_index} of system {row.system_name!r}: the system already "
        f"answered this question at {kept.source_file}:{kept.answer_line}; the first "
        "answer is kept",
        json.dumps({"system_name": row.system_name, "question": row.question,
                    "claim_index": row.claim_index, "claim": row.claim},
                   ensure_ascii=False))

  def stats(self):
    return {"scored": self._kept_claims}


def claims_markdown(rows, measure: str = "AutoAIS") -> str:
  """claims.md's table; `measure`: what the run's attribution figures are
  called (transforms/scoring/label.py)."""
  lines = [
      f"Claim-level {measure} in % (claims without evidence count as N); macro: mean "
      "over answers of the mean over their claims; micro: over claims; 95% "
      "bootstrap CIs over answers in brackets. Human agreement against `support` "
      "(Complete = attributable).",
      "",
      "| system | answers | claims | without evidence | abstaining | macro | micro | "
      "macro w/o abstaining | micro w/o abstaining | labelled | human AIS | "
      "accuracy | balanced accuracy | kappa | ROC-AUC |",
      "|---|---:|---:|---:|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
  ]
  for row in rows:
    kappa = "" if row.human_kappa is None else f"{row.human_kappa:.3f}"
    auc = "" if row.human_roc_auc is None else f"{row.human_roc_auc:.3f}"
    lines.append(
        f"| {row.system_name} | {row.n_answers} | {row.n_claims} | "
        f"{row.n_claims_without_evidence} | {row.n_abstaining_answers} | "
        f"{percent(row.macro_autoais, row.macro_ci_low, row.macro_ci_high, scale=1)} | "
        f"{percent(row.micro_autoais, row.micro_ci_low, row.micro_ci_high, scale=1)} | "
        f"{percent(row.macro_autoais_non_abstaining, scale=1)} | "
        f"{percent(row.micro_autoais_non_abstaining, scale=1)} | {row.n_human_labelled} | "
        f"{percent(row.human_ais, scale=1)} | {percent(row.human_accuracy, scale=1)} | "
        f"{percent(row.human_balanced_accuracy, scale=1)} | {kappa} | {auc} |")
  return "\n".join(lines) + "\n"


def _describe_summary(rows):
  return {"systems": len(rows), "answers": sum(row.n_answers for row in rows)}


class SummarizeClaims(beam.PTransform):
  """PCollection[ClaimOutcomes] -> claims.{csv,json,md}, one row per system with
  95% percentile-bootstrap CIs over answers; returns WriteSummary's singleton
  (systems and answers written)."""

  def __init__(self, output_dir: str, evidence_mode: str, bootstrap_samples: int,
               seed: int, scorer: dict):
    super().__init__()
    self._output_dir = output_dir
    self._scorer = scorer
    self._evidence_mode = evidence_mode
    self._bootstrap_samples = bootstrap_samples
    self._seed = seed

  def expand(self, outcomes):
    return (outcomes
            | "SummarizeSystems" >> beam.Map(claims_system_row, self._bootstrap_samples,
                                             self._seed)
            | "WriteSummary" >> WriteSummary(
                self._output_dir, "claims", CLAIMS_SYSTEM_SCHEMA, {
                    "evidence_mode": self._evidence_mode,
                    "bootstrap": {"method": "percentile", "level": 0.95,
                                  "samples": self._bootstrap_samples, "seed": self._seed,
                                  "unit": "answer"},
                    "units": {"autoais": PERCENT, "agreement": (
                        f"{PERCENT}; human_kappa and human_roc_auc on their own "
                        "scale")}},
                functools.partial(claims_markdown, measure=measure_name(self._scorer)),
                describe=_describe_summary, scorer=self._scorer))
