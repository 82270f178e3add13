"""sck's outputs: sck_rows.parquet / .csv from the merged answer rows (the job
skeleton, transforms/rows/: the first answer per system and question is kept)
and the per-system, per-intent means sck.{csv,json,md}.
"""
import json
from typing import List, NamedTuple, Optional

import apache_beam as beam

from autoais.schemas import (REJECTED, SCK_ROW_SCHEMA, SCK_SUMMARY_SCHEMA, DeadLetter, SckRow,
                     SckSummaryRow)
from autoais.transforms.io.sorted_runs import RowRef
from autoais.transforms.rows.merge import RowFold, RowTable
from autoais.transforms.rows.summary import WriteSummary

SCK_KEY = ("system_name", "question", "source_file", "source_line")
ALL_INTENTS = "all"


class _Merged(NamedTuple):
  """The fields of an answer row the writer reads as Python values."""
  system_name: str
  question: str
  intent: str
  sck_score: Optional[float]
  s_score: float
  c_score: Optional[float]
  k_score: Optional[float]
  ve_score: Optional[float]
  er_score: Optional[float]
  kg_attr_score: Optional[float]
  n_contradictory: int
  source_file: str
  source_line: int


_MEANS = ("sck_score", "s_score", "c_score", "k_score", "ve_score", "er_score",
          "kg_attr_score")


class _Means:
  """Sums of one system's scores for one intent, added in the merge's order."""

  def __init__(self):
    self.n = 0
    self.sums = {name: 0.0 for name in _MEANS}
    self.counts = {name: 0 for name in _MEANS}
    self.contradictory = 0

  def add(self, row: _Merged) -> None:
    self.n += 1
    self.contradictory += row.n_contradictory
    for name in _MEANS:
      value = getattr(row, name)
      if value is not None:
        self.sums[name] += value
        self.counts[name] += 1

  def mean(self, name: str) -> Optional[float]:
    return self.sums[name] / self.counts[name] if self.counts[name] else None

  def summary(self, system: str, intent: str) -> SckSummaryRow:
    return SckSummaryRow(system, intent, self.n, self.mean("sck_score"),
                         self.mean("s_score"), self.mean("c_score"),
                         self.counts["c_score"], self.mean("k_score"),
                         self.mean("ve_score"), self.mean("er_score"),
                         self.mean("kg_attr_score"), self.contradictory)


def _system_summaries(system: str, means) -> List[SckSummaryRow]:
  rows = [means[intent].summary(system, intent)
          for intent in sorted(means) if intent != ALL_INTENTS]
  return [means[ALL_INTENTS].summary(system, ALL_INTENTS)] + rows


class AnswersFold(RowFold):
  """Keeps the first answer per (system, question), writes sck_rows.parquet /
  .csv, and gives each system's summary rows (overall and per intent)."""
  row_type = SckRow
  merged_type = _Merged
  sort_key = SCK_KEY
  run_name = "answers"
  tables = (RowTable("sck_rows", SCK_ROW_SCHEMA),)
  unique = ("system_name", "question")

  def __init__(self):
    self._kept = 0
    self._system, self._means = None, {}

  def start_system(self, system_name):
    self._system, self._means = system_name, {ALL_INTENTS: _Means()}

  def add(self, row, ref, tables):
    self._means[ALL_INTENTS].add(row)
    self._means.setdefault(row.intent, _Means()).add(row)
    self._kept += 1
    tables["sck_rows"].add(ref)
    return ()

  def end_system(self, tables):
    return _system_summaries(self._system, self._means)

  def duplicate(self, ref: RowRef, kept) -> DeadLetter:
    row = ref.row(SckRow)
    return DeadLetter(
        row.source_file, row.source_line, REJECTED, "duplicate_answer", "question",
        f"{row.source_file}:{row.source_line}: field 'question': system "
        f"{row.system_name!r} already answered this question at "
        f"{kept.source_file}:{kept.source_line}; the first answer is kept",
        json.dumps({"system_name": row.system_name, "question": row.question,
                    "answer": row.answer}, ensure_ascii=False))

  def stats(self):
    return {"scored": self._kept}


def _number(value) -> str:
  return "" if value is None else f"{value:.3f}"


def sck_markdown(rows) -> str:
  lines = [
      "SCK answer quality (seed 002): mean scores per system and question intent; "
      "`all`: every answer. Means skip undefined scores (n C: answers with a "
      "defined C).",
      "",
      "| system | intent | answers | SCK | S | C | n C | K | VE | ER | KG-AttrScore | "
      "contradictory sentences |",
      "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
  ]
  for row in rows:
    lines.append(
        f"| {row.system_name} | {row.intent} | {row.n_answers} | {_number(row.sck)} | "
        f"{_number(row.s)} | {_number(row.c)} | {row.n_c} | {_number(row.k)} | "
        f"{_number(row.ve)} | {_number(row.er)} | {_number(row.kg_attr)} | "
        f"{row.n_contradictory_sentences} |")
  return "\n".join(lines) + "\n"


def _summary_order(row):
  return (row.system_name, row.intent != ALL_INTENTS, row.intent)


class SummarizeSck(beam.PTransform):
  """PCollection[SckSummaryRow] (each system's rows, overall then per intent) ->
  sck.{csv,json,md} recording the `weights`; returns WriteSummary's singleton."""

  def __init__(self, output_dir: str, weights: dict, scorer: dict):
    super().__init__()
    self._output_dir = output_dir
    self._scorer = scorer
    self._weights = weights

  def expand(self, rows):
    return rows | "WriteSummary" >> WriteSummary(
        self._output_dir, "sck", SCK_SUMMARY_SCHEMA, {"weights": self._weights},
        sck_markdown, order=_summary_order, rows_name="rows", scorer=self._scorer)
