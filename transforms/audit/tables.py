"""audit's outputs: audit_candidates.parquet and audit_answers.parquet / .csv
from the merged candidate rows (the job skeleton, transforms/rows/: an answer's
candidates arrive together, in rank order), and the per-system summary
audit.{csv,json,md} with bootstrap CIs.
"""
from typing import NamedTuple, Optional

import apache_beam as beam

from autoais.schemas import (AUDIT_ANSWER_ROW_SCHEMA, AUDIT_CANDIDATE_SCHEMA, AUDIT_SYSTEM_SCHEMA,
                     AuditCandidateRow)
from autoais.transforms.audit.steps import AUDIT_KEY, AnswerAudit, AuditOutcomes, audit_system_row
from autoais.transforms.rows.merge import RowFold, RowTable
from autoais.transforms.rows.summary import WriteSummary, percent
from autoais.transforms.stats.metrics import PERCENT


class _MergedCandidate(NamedTuple):
  """The fields of a candidate row that the writer reads as Python values."""
  system_name: str
  question: str
  query_id: Optional[str]
  answer: str
  candidate_id: str
  rank: int
  found: bool
  auto_ais: str
  nli_score: Optional[float]
  from_article: bool
  em: Optional[float]
  f1: Optional[float]
  answer_file: str
  answer_line: int


class AuditFold(RowFold):
  """An answer's candidates arrive together, in rank order (each passage and
  rank once: stages.SelectCandidates): writes audit_candidates.parquet and
  audit_answers.parquet / .csv, and gives one AuditOutcomes per system."""
  row_type = AuditCandidateRow
  merged_type = _MergedCandidate
  sort_key = AUDIT_KEY
  run_name = "candidates"
  tables = (RowTable("audit_candidates", AUDIT_CANDIDATE_SCHEMA, write_csv=False),
            RowTable("audit_answers", AUDIT_ANSWER_ROW_SCHEMA))

  def __init__(self):
    self._stats = {"audited_answers": 0, "candidates_scored": 0,
                   "article_candidates": 0}
    self._unit, self._audit, self._first, self._outcomes = None, None, None, None

  def _finish_answer(self, tables):
    if self._audit is not None:
      row = self._audit.row(self._first.system_name, self._first)
      tables["audit_answers"].add_row(row)
      self._outcomes.add(row)
      self._stats["audited_answers"] += 1
      self._audit = None

  def start_system(self, system_name):
    self._outcomes = AuditOutcomes(system_name)

  def add(self, row, ref, tables):
    unit = (row.system_name, row.answer_file, row.answer_line)
    if unit != self._unit:
      self._finish_answer(tables)
      self._unit, self._audit, self._first = unit, AnswerAudit(), row
    self._audit.add(row.candidate_id, row.rank, row.found, row.auto_ais == "Y",
                    row.nli_score)
    if row.found:
      tables["audit_candidates"].add(ref)
      self._stats["article_candidates" if row.from_article
                  else "candidates_scored"] += 1
    return ()

  def end_system(self, tables):
    self._finish_answer(tables)
    yield self._outcomes

  def stats(self):
    return self._stats


def _with_ci(row, name: str, scale: float = 1) -> str:
  """A figure of the row with its interval, in percent (rates are percents
  already; the relative gain is shown as one with scale 100)."""
  return percent(*(getattr(row, name + suffix) for suffix in ("", "_ci_low",
                                                              "_ci_high")), scale=scale)


def audit_markdown(rows) -> str:
  lines = [
      "Attribution of each system's answers in %: of the top-1 candidate, of any "
      "candidate, and of the candidate the scorer ranks first (reranked); gain % = "
      "100 x (reranked - top-1) / top-1 (audit.csv and audit.json hold the ratio "
      "itself: 0.5 there is 50.0 here); EM / non-EM: top-1 and reranked attribution of "
      "exact-match and other answers (with --gold). 95% bootstrap CIs over "
      "questions in brackets.",
      "",
      "| system | answers | candidates | top-1 | any | reranked | gain % | EM answers | "
      "top-1 EM | top-1 non-EM | reranked EM | reranked non-EM |",
      "|---|---:|---:|---|---|---|---|---:|---|---|---|---|",
  ]
  for r in rows:
    rates = [_with_ci(r, name) for name in ("top1", "any", "reranked")] + [
        _with_ci(r, "reranking_gain", scale=100)]
    split = [_with_ci(r, name)
             for name in ("top1_em", "top1_non_em", "reranked_em", "reranked_non_em")]
    lines.append(f"| {r.system_name} | {r.n_answers} | {r.n_candidates} | "
                 + " | ".join(rates) + f" | {r.n_em} / {r.n_graded} | "
                 + " | ".join(split) + " |")
  return "\n".join(lines) + "\n"


class SummarizeAudit(beam.PTransform):
  """PCollection[AuditOutcomes] -> audit.{csv,json,md}, one row per system with
  95% percentile-bootstrap CIs over questions; returns WriteSummary's singleton
  (the systems written)."""

  def __init__(self, output_dir: str, candidates_from: str, bootstrap_samples: int,
               seed: int, scorer: dict):
    super().__init__()
    self._output_dir = output_dir
    self._scorer = scorer
    self._candidates_from = candidates_from
    self._bootstrap_samples = bootstrap_samples
    self._seed = seed

  def expand(self, outcomes):
    return (outcomes
            | "SummarizeSystems" >> beam.Map(audit_system_row, self._bootstrap_samples,
                                             self._seed)
            | "WriteSummary" >> WriteSummary(
                self._output_dir, "audit", AUDIT_SYSTEM_SCHEMA, {
                    "candidates_from": self._candidates_from,
                    "units": {"rates": PERCENT, "reranking_gain": "relative"},
                    "bootstrap": {"method": "percentile", "level": 0.95,
                                  "samples": self._bootstrap_samples, "seed": self._seed,
                                  "unit": "question (a system's answers)"}},
                audit_markdown, scorer=self._scorer))
