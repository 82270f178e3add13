"""`autoais compare`'s files:

* compare.csv / compare.parquet: the rows whose decision flipped, most lowered
  score first (score change ascending; rows without two scores last), then by
  system, question and baseline answer; spilled in sorted runs and merged
  (transforms/rows/merge.py), so any number of flips fits in memory;
* compare_systems.csv, compare.json (the runs, what was checked, every system
  and the regressions), compare.md, report.html (a forest plot of the changes),
  written once every system's change and the flipped rows are known.
"""
import json
from typing import Dict, List, NamedTuple, Optional

import apache_beam as beam
import pyarrow as pa
from apache_beam.io.filesystems import FileSystems

from autoais.schemas import (COMPARE_FLIP_SCHEMA, COMPARE_SYSTEM_SCHEMA, CompareFlipRow,
                             CompareSystemRow)
from autoais.transforms.io.atomic import atomic_create, write_text_atomically
from autoais.transforms.io.tables import csv_bytes
from autoais.transforms.compare.steps import ALL_ITEMS
from autoais.transforms.rows.merge import RowFold, RowTable, WriteMergedRows
from autoais.transforms.scoring.label import (compared_measure, compared_scorer_id, named_figures,
                                            scored_by)
from autoais.transforms.stats.report import compare_report_html

# A flipped row with its place in compare.csv's order in front (a scratch type:
# rows without two scores last, then the score change ascending).
_OrderedFlip = NamedTuple("_OrderedFlip", [("unscored", bool), ("order", float)]
                          + list(CompareFlipRow.__annotations__.items()))
_ORDERED_FLIP_SCHEMA = pa.schema([pa.field("unscored", pa.bool_(), nullable=False),
                                  pa.field("order", pa.float64(), nullable=False)]
                                 + list(COMPARE_FLIP_SCHEMA))


def _ordered_flip(row: CompareFlipRow) -> _OrderedFlip:
  return _OrderedFlip(row.score_change is None, row.score_change or 0.0, *row)


class FlipsFold(RowFold):
  """Writes compare.parquet / .csv from the flipped rows in their order; its
  stats are the number written."""
  row_type = _OrderedFlip
  merged_type = _OrderedFlip
  spill_schema = _ORDERED_FLIP_SCHEMA
  sort_key = ("unscored", "order", "system_name", "question", "baseline_answer")
  run_name = "flips"
  tables = (RowTable("compare", COMPARE_FLIP_SCHEMA),)
  by_system = False

  def __init__(self):
    self._written = 0

  def add(self, row, ref, tables):
    tables["compare"].add_row(CompareFlipRow(*row[2:]))
    self._written += 1
    return ()

  def stats(self):
    return {"flipped_rows": self._written}


def _points(value: Optional[float], low: Optional[float] = None,
            high: Optional[float] = None) -> str:
  if value is None:
    return ""
  text = f"{value:+.1f}"
  if low is not None:
    text += f" [{low:+.1f}, {high:+.1f}]"
  return text


def _percent(value: Optional[float]) -> str:
  return "" if value is None else f"{value:.1f}"


# compare.md's columns after system and status: (heading, cell of a row).
_COLUMNS = {
    "paired": lambda row: str(row.n_paired),
    "AutoAIS % baseline": lambda row: _percent(row.autoais_baseline),
    "AutoAIS % candidate": lambda row: _percent(row.autoais_candidate),
    "AutoAIS change": lambda row: _points(row.autoais_change, row.autoais_change_low,
                                          row.autoais_change_high),
    "EM change": lambda row: _points(row.em_change, row.em_change_low,
                                     row.em_change_high),
    "F1 change": lambda row: _points(row.f1_change, row.f1_change_low,
                                     row.f1_change_high),
    "accuracy % baseline": lambda row: _percent(row.accuracy_baseline),
    "accuracy change": lambda row: _points(row.accuracy_change, row.accuracy_change_low,
                                           row.accuracy_change_high),
    "balanced accuracy % baseline": lambda row: _percent(row.balanced_accuracy_baseline),
    "balanced accuracy change": lambda row: _points(
        row.balanced_accuracy_change, row.balanced_accuracy_change_low,
        row.balanced_accuracy_change_high),
    "citation_rec % baseline": lambda row: _percent(row.autoais_baseline),
    "citation_rec % candidate": lambda row: _percent(row.autoais_candidate),
    "citation_rec change": lambda row: _points(
        row.autoais_change, row.autoais_change_low, row.autoais_change_high),
    "citation_prec % baseline": lambda row: _percent(row.citation_prec_baseline),
    "citation_prec % candidate": lambda row: _percent(row.citation_prec_candidate),
    "citation_prec change": lambda row: _points(
        row.citation_prec_change, row.citation_prec_change_low,
        row.citation_prec_change_high),
    "N to Y": lambda row: str(row.flipped_to_y),
    "Y to N": lambda row: str(row.flipped_to_n),
    "McNemar p": lambda row: ("" if row.mcnemar_p_value is None
                              else f"{row.mcnemar_p_value:.3g}"),
    "regression": lambda row: "yes" if row.regression else "",
}
_JOB_COLUMNS = {
    "evaluate": ("paired", "AutoAIS % baseline", "AutoAIS % candidate", "AutoAIS change",
                 "EM change", "F1 change", "N to Y", "Y to N", "McNemar p", "regression"),
    "agreement": ("paired", "AutoAIS % baseline", "AutoAIS change", "accuracy % baseline",
                  "accuracy change", "balanced accuracy % baseline",
                  "balanced accuracy change", "N to Y", "Y to N", "McNemar p",
                  "regression"),
}
_JOB_COLUMNS["claims"] = _JOB_COLUMNS["evaluate"]
_JOB_COLUMNS["citations"] = (
    "paired", "citation_rec % baseline", "citation_rec % candidate", "citation_rec change",
    "citation_prec % baseline", "citation_prec % candidate", "citation_prec change",
    "N to Y", "Y to N", "McNemar p", "regression")
_EXPLAINED = {
    "evaluate": "AutoAIS over {autoais_over}; EM and F1 over the questions both runs "
                "scored (paired); changes in points (candidate - baseline) with 95% "
                "paired-bootstrap intervals; McNemar's exact test on the paired "
                "decisions.",
    "claims": "Macro AutoAIS (the mean over answers of the share of their claims rated "
              "attributable) over the questions both runs answered; changes in points "
              "(candidate - baseline) with 95% paired-bootstrap intervals over those "
              "questions; McNemar's exact test on the decisions of claims of the same "
              "text in both runs (claims of one answer are not independent: read its "
              "p-value as a guide). No EM or F1: claims carry no gold.",
    "citations": "Citation recall (the AutoAIS of citations: the mean over answers of "
                 "the share of their sentences that their cited documents support) "
                 "and citation precision, as ALCE defines them, over the questions "
                 "both runs answered; changes in points (candidate - baseline) with "
                 "95% paired-bootstrap intervals over those questions; N to Y, Y to N "
                 "and McNemar's exact test on the support of sentences of the same "
                 "text (citations removed) in both runs (sentences of one answer are "
                 "not independent: read its p-value as a guide). A regression is a "
                 "fall of citation recall.",
    "agreement": "Per group of items (and all items): AutoAIS is the share decided "
                 "attributable; accuracy and balanced accuracy are against the human "
                 "labels; changes in points (candidate - baseline) with 95% "
                 "paired-bootstrap intervals over the items; McNemar's exact test on "
                 "whether each decision agrees with the human label; a regression is a "
                 "fall of balanced accuracy.",
}


def compare_markdown(header: Dict, systems: List[CompareSystemRow]) -> str:
  scorers = header.get("scorers") or {}
  measure = compared_measure(scorers.get("baseline"), scorers.get("candidate"))
  lines = [f"Baseline: {header['baseline']} ({_scored_by(scorers.get('baseline'))})  ",
           f"Candidate: {header['candidate']} ({_scored_by(scorers.get('candidate'))})",
           ""]
  if header.get("scorer_changed"):
    lines += ["The scorers differ (--allow_changed_scorer): the change of model is the "
              "subject of this comparison: " + "; ".join(header["scorer_changed"]), ""]
  explained = _EXPLAINED[header["job"]].format(
      autoais_over=header.get("autoais_over", "the questions both runs scored"))
  lines += [explained.replace("AutoAIS", measure), ""]
  columns = _JOB_COLUMNS[header["job"]]
  first = "group" if header["job"] == "agreement" else "system"
  lines += [f"| {first} | status | " + " | ".join(
      name.replace("AutoAIS", measure) for name in columns) + " |",
            "|---|---|" + "".join("---|" if name == "regression" else "---:|"
                                  for name in columns)]
  for row in systems:
    lines.append(f"| {row.system_name} | {row.status} | "
                 + " | ".join(_COLUMNS[name](row) for name in columns) + " |")
  return "\n".join(lines) + "\n"


def _scored_by(block) -> str:
  """A run's scorer in a line's parenthesis: "scored by: t5 ..." (label.scored_by
  without its capital and full stop)."""
  text = scored_by(block).rstrip(".")
  return text[0].lower() + text[1:]


class _WriteCompareFilesFn(beam.DoFn):

  def __init__(self, output_dir: str, header: Dict):
    self._output_dir = output_dir
    self._header = header

  def _paired(self, systems) -> int:
    """The questions (agreement: items) both runs scored; an agreement item
    is compared in several groups but counted once."""
    if self._header["job"] == "agreement":
      return sum(row.n_paired for row in systems if row.system_name == ALL_ITEMS)
    return sum(row.n_paired for row in systems)

  def process(self, unused_impulse, systems, flip_stats):
    systems = sorted(systems, key=lambda row: row.system_name)
    flipped = flip_stats["flipped_rows"]
    join = FileSystems.join
    scorers = self._header.get("scorers") or {}
    # The figure's columns and keys are named as the runs' figures are called
    # (label.named_figures): `string_match_change`, `attribution_change`, ...
    measure = compared_measure(scorers.get("baseline"), scorers.get("candidate"))
    with atomic_create(join(self._output_dir, "compare_systems.csv")) as sink:
      sink.write(csv_bytes(systems, named_figures(COMPARE_SYSTEM_SCHEMA, measure),
                           scorer=compared_scorer_id(scorers.get("baseline"),
                                                     scorers.get("candidate"))))
    regressions = [row.system_name for row in systems if row.regression]
    document = named_figures(dict(self._header, systems=[row._asdict() for row in systems],
                                  flipped_rows=flipped, regressions=regressions), measure)
    write_text_atomically(join(self._output_dir, "compare.json"),
                          json.dumps(document, indent=2, ensure_ascii=False) + "\n")
    write_text_atomically(join(self._output_dir, "compare.md"),
                          compare_markdown(self._header, systems))
    write_text_atomically(join(self._output_dir, "report.html"),
                          compare_report_html(self._header, systems, flipped))
    yield {"systems": sum(row.status == "both" for row in systems),
           "systems_added": sorted(row.system_name for row in systems
                                   if row.status == "added"),
           "systems_removed": sorted(row.system_name for row in systems
                                     if row.status == "removed"),
           "paired_questions": self._paired(systems),
           "flipped_rows": flipped, "regressions": regressions}


class WriteCompareFiles(beam.PTransform):
  """{"systems", "flips"} -> PCollection[dict] (one: the figures run.json
  records). `work_dir` holds the flipped rows' sorted runs."""

  def __init__(self, output_dir: str, work_dir: str, header: Dict):
    super().__init__()
    self._output_dir = output_dir
    self._work_dir = work_dir
    self._fn = _WriteCompareFilesFn(output_dir, header)

  def expand(self, changes):
    pipeline = changes["systems"].pipeline
    flips = (changes["flips"]
             | "OrderFlips" >> beam.Map(_ordered_flip)
             | "WriteFlips" >> WriteMergedRows(FlipsFold, self._output_dir,
                                               self._work_dir))
    return (pipeline
            | "StartCompareFiles" >> beam.Create([None])
            | "WriteFiles" >> beam.ParDo(self._fn,
                                         beam.pvalue.AsList(changes["systems"]),
                                         beam.pvalue.AsSingleton(flips["stats"])))
