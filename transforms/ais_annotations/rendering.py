"""The rebuilt tables (comparison.py) rendered: the CSV rows of ais_tables.csv
and ais_agreement.csv, ais_tables.json, ais_tables.md, and run.json's summary
counts.
"""
import collections
import json
from typing import Dict, List, Optional, Sequence

from autoais.schemas import AisAgreementRow, AisTableRow
from autoais.transforms.ais_annotations.comparison import (COLUMNS_OF_TABLE, COLUMN_TITLES,
                                                           Cell, DatasetTable, ModelTable)
from autoais.transforms.ais_annotations.paper import PAPER, TABLES
from autoais.transforms.ais_annotations.reconciliation import (HYPOTHESES, MAX_ADDED_FEWER,
                                                               Fit, describe_fit)
from autoais.transforms.ais_annotations.shares import TEST_NAME, printed
from autoais.transforms.ais_annotations.tally import PANEL_SIZE


def table_rows(tables: Sequence[DatasetTable], sampled: int) -> List[AisTableRow]:
  rows = []
  for table in tables:
    for model in table.models:
      c = model.cells
      counts = model.tally.counts
      rows.append(AisTableRow(
          dataset=table.dataset, paper_table=table.number, model=model.model,
          paper_label=model.paper.label if model.paper else None,
          items=counts.items, flagged=counts.flagged,
          interpretable=counts.interpretable, attributable=counts.attributable,
          flag=c["flag"].value, paper_flag=c["flag"].paper, flag_equal=c["flag"].equal,
          int=c["int"].value, int_mark=c["int"].mark.marked,
          int_p_value=c["int"].mark.p_value, paper_int=c["int"].paper,
          paper_int_mark=c["int"].paper_mark, int_equal=c["int"].equal,
          ais=c["ais"].value, ais_mark=c["ais"].mark.marked,
          ais_p_value=c["ais"].mark.p_value, paper_ais=c["ais"].paper,
          paper_ais_mark=c["ais"].paper_mark, ais_equal=c["ais"].equal,
          status=model.status, explanation=row_explanation(model, sampled)))
  return rows


def _distribution_key(value: Optional[int]):
  return (value is None, value if value is not None else 0)


def agreement_rows(tables: Sequence[DatasetTable]) -> List[AisAgreementRow]:
  rows = []
  for table in tables:
    for model in table.models:
      for question, histogram in (("INT", model.tally.int_agreement),
                                  ("AIS", model.tally.ais_agreement)):
        total = sum(histogram.values())
        for value in sorted(histogram, key=_distribution_key):
          rows.append(AisAgreementRow(table.dataset, model.model, question, value,
                                      histogram[value], round(histogram[value] / total, 6)))
  return rows


def _histogram_json(histogram) -> Dict[str, int]:
  return {("none" if value is None else str(value)): histogram[value]
          for value in sorted(histogram, key=_distribution_key)}


def _fit_json(fit: Fit) -> Dict[str, object]:
  return {"hypothesis": fit.hypothesis, "cell": COLUMN_TITLES.get(fit.column),
          "base": fit.base._asdict(), "counts": fit.counts._asdict(),
          "added": fit.added._asdict(), "ways": fit.ways}


def _cell_json(cell: Cell) -> Dict[str, object]:
  entry = {"value": cell.value, "numerator": cell.numerator,
           "denominator": cell.denominator, "paper": cell.paper, "equal": cell.equal}
  if cell.mark is not None:
    entry.update(mark=cell.mark.marked, p_value=cell.mark.p_value,
                 best=list(cell.mark.best), paper_mark=cell.paper_mark,
                 mark_equal=cell.mark_equal)
  if cell.fit is not None:
    fitted = cell.fit.counts.cell(cell.column)
    entry["fitted"] = {"numerator": fitted[0], "denominator": fitted[1],
                       "value": printed(*fitted), "hypothesis": cell.fit.hypothesis,
                       "cell_alone": cell.fit.column is not None}
  if cell.explanation:
    entry["explanation"] = cell.explanation
  if cell.mark_explanation:
    entry["mark_explanation"] = cell.mark_explanation
  return entry


def summarize(tables: Sequence[DatasetTable]) -> Dict[str, int]:
  """Cell and mark counts: compared with the paper, equal, explained."""
  summary = collections.Counter()
  for table in tables:
    for model in table.models:
      for cell in model.cells.values():
        if cell.equal is None:
          continue
        summary["cells_compared"] += 1
        if cell.equal:
          summary["cells_equal"] += 1
        elif cell.fit is None:
          summary["cells_not_explained"] += 1
        elif cell.fit.column is None:
          summary["cells_explained_with_their_row"] += 1
        else:
          summary["cells_explained_alone"] += 1
        if cell.mark_equal is not None:
          summary["marks_compared"] += 1
          summary["marks_equal"] += cell.mark_equal
  keys = ("cells_compared", "cells_equal", "cells_explained_with_their_row",
          "cells_explained_alone", "cells_not_explained", "marks_compared", "marks_equal")
  return {key: summary[key] for key in keys}


def tables_json(tables: Sequence[DatasetTable], alpha: float, sampled: int,
                summary: Dict[str, int]) -> str:
  datasets = []
  for table in tables:
    models = []
    for model in table.models:
      counts = model.tally.counts
      models.append({
          "model": model.model,
          "paper_label": model.paper.label if model.paper else None,
          "status": model.status,
          "note": model.note or None,
          "counts": dict(counts._asdict(), items=counts.items,
                         interpretable=counts.interpretable),
          "cells": {COLUMN_TITLES[column]: _cell_json(cell)
                    for column, cell in model.cells.items()},
          "row_fits": [_fit_json(fit) for fit in model.fits],
          "agreement": {"INT": _histogram_json(model.tally.int_agreement),
                        "AIS": _histogram_json(model.tally.ais_agreement)},
          "rated_by_two_panels": {
              "counts": model.tally.two_panel_counts._asdict(),
              "rows": [{"source_file": f, "source_line": line, "ex_idx": example}
                       for f, line, example in model.tally.two_panel_rows]},
      })
    datasets.append({"dataset": table.dataset, "paper_table": table.number,
                     "title": table.title, "models": models})
  return json.dumps({
      "paper": PAPER,
      "definitions": {
          "Flag": "flagged outputs / outputs",
          "Int": "interpretable outputs / outputs not flagged",
          "AIS": "interpretable and attributable outputs / interpretable outputs",
          "printed": "percent, one decimal, rounded half up from the exact fraction",
      },
      "significance": {"test": TEST_NAME, "alpha": alpha,
                       "compared_with": "the model(s) with the column's highest share; "
                                        "marked iff p < alpha against each"},
      "reconciliation": {"sampled_outputs_per_model": sampled, "panel_size": PANEL_SIZE,
                         "max_added_when_fewer": MAX_ADDED_FEWER,
                         "hypotheses": [h.name for h in HYPOTHESES]},
      "summary": summary,
      "datasets": datasets,
  }, indent=2, ensure_ascii=False) + "\n"


def _cell_text(cell: Cell) -> str:
  mark = "*" if cell.mark is not None and cell.mark.marked else ""
  return f"{cell.value}{mark}" if cell.value else "n/a"


def _paper_text(cell: Cell) -> str:
  if cell.paper is None:
    return ""
  mark = "*" if cell.paper_mark else ""
  same = cell.equal and cell.mark_equal is not False
  return f"{cell.paper}{mark} {'=' if same else '≠'}"


def _agreement_text(histogram) -> str:
  return " ".join(f"{'none' if v is None else v}:{histogram[v]}"
                  for v in sorted(histogram, key=_distribution_key, reverse=True))


def row_explanation(model: ModelTable, sampled: int) -> str:
  """A row's differences in few words: the row's fit once, then each differing
  cell's counts as released and as fitted, then differing marks."""
  parts = [model.note] if model.note else []
  tally = model.tally
  for cell in model.cells.values():
    if cell.equal is False:
      text = (f"{COLUMN_TITLES[cell.column]} {cell.numerator}/{cell.denominator} = "
              f"{cell.value}")
      if cell.fit is None:
        text += f", not reproduced (paper {cell.paper})"
      else:
        fitted = cell.fit.counts.cell(cell.column)
        text += f" -> {fitted[0]}/{fitted[1]} = {printed(*fitted)}"
        if cell.fit.column is not None:
          text += (f" ({cell.fit.hypothesis}, this cell alone: "
                   f"{describe_fit(cell.fit, tally.counts, tally.two_panel_rows, sampled)}")
          if len(cell.fits) > 1:
            text += "; also fit: " + "; ".join(fit.hypothesis for fit in cell.fits[1:])
          text += ")"
      parts.append(text)
    if cell.mark_explanation:
      parts.append(cell.mark_explanation)
  return "; ".join(parts)


def tables_markdown(tables: Sequence[DatasetTable], alpha: float, sampled: int,
                    summary: Dict[str, int]) -> str:
  lines = [
      "# AIS human evaluation, recomputed from the release",
      "",
      f"Paper: {PAPER}. Flag = flagged / outputs; Int = interpretable / outputs not "
      "flagged; AIS = attributable / interpretable; percent, one decimal (half up).",
      f"`*`: lower than the column's best, p < {alpha:g}, {TEST_NAME} (the paper names "
      "no test). A paper cell is followed by `=` (ours prints the same, mark "
      "included) or `≠` (see the notes under the table).",
      "",
      f"Cells compared with the paper: {summary['cells_compared']}; equal as released: "
      f"{summary['cells_equal']}; differing, explained with their whole row: "
      f"{summary['cells_explained_with_their_row']}; differing, explained only cell by "
      f"cell: {summary['cells_explained_alone']}; not explained: "
      f"{summary['cells_not_explained']}. Significance marks equal: "
      f"{summary['marks_equal']} of {summary['marks_compared']}.",
  ]
  for table in tables:
    title = (f"## {table.title}" if table.number is None else
             f"## Table {table.number}: {table.title.split(' (Table')[0]} (`{table.dataset}`)")
    lines += ["", title, ""]
    with_flag = (table.number is None or TABLES[table.dataset].has_flag or
                 any(m.tally.counts.flagged for m in table.models))
    columns = COLUMNS_OF_TABLE if with_flag else ("int", "ais")
    header = ["Model (paper)", "release model-name", "outputs"]
    for column in columns:
      header += [COLUMN_TITLES[column], "paper"]
    lines.append("| " + " | ".join(header) + " |")
    lines.append("|" + "---|" * 2 + "---:|" + "---:|---|" * len(columns))
    notes = []
    for model in table.models:
      cells = [model.paper.label if model.paper else "(not in the paper)",
               f"`{model.model}`", str(model.tally.counts.items)]
      for column in columns:
        cells += [_cell_text(model.cells[column]), _paper_text(model.cells[column])]
      lines.append("| " + " | ".join(cells) + " |")
      if model.status not in ("reproduced", "not in the paper"):
        notes.append(f"* `{model.model}` ({model.status}): "
                     f"{row_explanation(model, sampled)}.")
    if notes:
      lines += [""] + notes
    lines += ["", "Raters agreeing with the consensus (raters:outputs; INT over outputs "
              "not flagged, AIS over interpretable outputs):", ""]
    for model in table.models:
      lines.append(f"* `{model.model}`: INT {_agreement_text(model.tally.int_agreement)}"
                   f"; AIS {_agreement_text(model.tally.ais_agreement)}")
  return "\n".join(lines) + "\n"
