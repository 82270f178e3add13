"""`autoais compare`'s files, written once every system's change is known:

* compare.csv / compare.parquet: the rows whose decision flipped, most lowered
  score first (score change ascending; rows without two scores last), then by
  system and question;
* compare_systems.csv, compare.json (the runs, what was checked, every system
  and the regressions), compare.md, report.html (a forest plot of the changes).
"""
import json
from typing import Dict, List, Optional

import apache_beam as beam
import pyarrow as pa
import pyarrow.parquet as pq
from apache_beam.io.filesystems import FileSystems

from autoais.schemas import (COMPARE_FLIP_SCHEMA, COMPARE_SYSTEM_SCHEMA, CompareFlipRow,
                             CompareSystemRow, to_record_batch)
from autoais.transforms.io.atomic import atomic_create, write_text_atomically
from autoais.transforms.io.tables import csv_bytes
from autoais.transforms.stats.report import compare_report_html


def flip_order(row: CompareFlipRow):
  return (row.score_change is None, row.score_change or 0.0, row.system_name,
          row.question)


def _points(value: Optional[float], low: Optional[float] = None,
            high: Optional[float] = None) -> str:
  if value is None:
    return ""
  text = f"{value:+.1f}"
  if low is not None:
    text += f" [{low:+.1f}, {high:+.1f}]"
  return text


def compare_markdown(header: Dict, systems: List[CompareSystemRow]) -> str:
  lines = [f"Baseline: {header['baseline']}  ",
           f"Candidate: {header['candidate']}", ""]
  if header.get("scorer_changed"):
    lines += ["The scorers differ (--allow_changed_scorer): the change of model is the "
              "subject of this comparison: " + "; ".join(header["scorer_changed"]), ""]
  if header["job"] == "claims":
    lines += ["Macro AutoAIS (the mean over answers of the share of their claims rated "
              "attributable) over the questions both runs answered; changes in points "
              "(candidate - baseline) with 95% paired-bootstrap intervals over those "
              "questions; McNemar's exact test on the decisions of claims of the same "
              "text in both runs (claims of one answer are not independent: read its "
              "p-value as a guide). No EM or F1: claims carry no gold.", ""]
  else:
    lines += ["AutoAIS, EM and F1 over the questions both runs scored; changes in "
              "points (candidate - baseline) with 95% paired-bootstrap intervals; "
              "McNemar's exact test on the paired decisions.", ""]
  lines += ["| system | status | paired | AutoAIS % baseline | AutoAIS % candidate | "
            "AutoAIS change | EM change | F1 change | N to Y | Y to N | McNemar p | "
            "regression |",
            "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
  for row in systems:
    lines.append(
        f"| {row.system_name} | {row.status} | {row.n_paired} | "
        f"{'' if row.autoais_baseline is None else f'{row.autoais_baseline:.1f}'} | "
        f"{'' if row.autoais_candidate is None else f'{row.autoais_candidate:.1f}'} | "
        f"{_points(row.autoais_change, row.autoais_change_low, row.autoais_change_high)} | "
        f"{_points(row.em_change, row.em_change_low, row.em_change_high)} | "
        f"{_points(row.f1_change, row.f1_change_low, row.f1_change_high)} | "
        f"{row.flipped_to_y} | {row.flipped_to_n} | "
        f"{'' if row.mcnemar_p_value is None else f'{row.mcnemar_p_value:.3g}'} | "
        f"{'yes' if row.regression else ''} |")
  return "\n".join(lines) + "\n"


class _WriteCompareFilesFn(beam.DoFn):

  def __init__(self, output_dir: str, header: Dict):
    self._output_dir = output_dir
    self._header = header

  def process(self, unused_impulse, systems, flips):
    systems = sorted(systems, key=lambda row: row.system_name)
    flips = sorted(flips, key=flip_order)
    join = FileSystems.join
    with atomic_create(join(self._output_dir, "compare.csv")) as sink:
      sink.write(csv_bytes(flips, COMPARE_FLIP_SCHEMA))
    with atomic_create(join(self._output_dir, "compare.parquet")) as sink:
      pq.write_table(pa.Table.from_batches(
          [to_record_batch(flips, COMPARE_FLIP_SCHEMA)], COMPARE_FLIP_SCHEMA), sink)
    with atomic_create(join(self._output_dir, "compare_systems.csv")) as sink:
      sink.write(csv_bytes(systems, COMPARE_SYSTEM_SCHEMA))
    regressions = [row.system_name for row in systems if row.regression]
    document = dict(self._header, systems=[row._asdict() for row in systems],
                    flipped_rows=len(flips), regressions=regressions)
    write_text_atomically(join(self._output_dir, "compare.json"),
                          json.dumps(document, indent=2, ensure_ascii=False) + "\n")
    write_text_atomically(join(self._output_dir, "compare.md"),
                          compare_markdown(self._header, systems))
    write_text_atomically(join(self._output_dir, "report.html"),
                          compare_report_html(self._header, systems))
    yield {"systems": sum(row.status == "both" for row in systems),
           "systems_added": sorted(row.system_name for row in systems
                                   if row.status == "added"),
           "systems_removed": sorted(row.system_name for row in systems
                                     if row.status == "removed"),
           "paired_questions": sum(row.n_paired for row in systems),
           "flipped_rows": len(flips), "regressions": regressions}


class WriteCompareFiles(beam.PTransform):
  """{"systems", "flips"} -> PCollection[dict] (one: the figures run.json
  records)."""

  def __init__(self, output_dir: str, header: Dict):
    super().__init__()
    self._fn = _WriteCompareFilesFn(output_dir, header)

  def expand(self, changes):
    pipeline = changes["systems"].pipeline
    return (pipeline
            | "StartCompareFiles" >> beam.Create([None])
            | "WriteFiles" >> beam.ParDo(self._fn,
                                         beam.pvalue.AsList(changes["systems"]),
                                         beam.pvalue.AsList(changes["flips"])))
