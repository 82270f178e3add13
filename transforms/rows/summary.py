"""A job's per-system summary files, and the figures its markdown shows.

    summary = system_rows | "WriteSummary" >> WriteSummary(
        output_dir, "claims", CLAIMS_SYSTEM_SCHEMA, header, claims_markdown)

collects every summary row on one worker, sorts them (`order`, by system by
default), writes `{stem}.csv`, `{stem}.json` (`header` plus the rows under
`rows_name`) and `{stem}.md` atomically (transforms/io/summary.py
write_summary_files), and emits one dict for run.json (`describe(rows)`; by
default the number of systems). With `scorer` (the run's scorer block), the
three name it (transforms/scoring/label.py): the CSV's last column `scorer`,
the JSON's `scorer` and `scored_by`, the Markdown's first line, and the
figure's columns and keys are named after it (`macro_string_match` for the
baseline: label.named_figures).
"""
from typing import Callable, Dict, Optional

import apache_beam as beam

from autoais.transforms.io.summary import write_summary_files
from autoais.transforms.scoring.label import (measure_name, named_figures, scored_by,
                                              scorer_id, scorer_naming)


def percent(value: Optional[float], low: Optional[float] = None,
            high: Optional[float] = None, *, scale: float = 100,
            digits: int = 1) -> str:
  """A fraction as a percentage with one decimal ("" for none), with its
  interval in brackets where `low` is given; `scale` 1 and `digits` 2 for a
  value that is a percentage already, as ALCE prints them."""
  if value is None:
    return ""
  text = f"{value * scale:.{digits}f}"
  if low is not None:
    text += f" [{low * scale:.{digits}f}, {high * scale:.{digits}f}]"
  return text


def by_system(row) -> str:
  return row.system_name


def count_systems(rows) -> Dict[str, int]:
  return {"systems": len({row.system_name for row in rows})}


def named_by_scorer(header: dict, markdown: str, scorer: Optional[dict]):
  """A summary's JSON header and Markdown naming `scorer` (a scorer block;
  None: as they are), and the value of its CSV's `scorer` column (None: no
  column): (header, markdown, column)."""
  if scorer is None:
    return dict(header), markdown, None
  return (dict(header, **scorer_naming(scorer)),
          scored_by(scorer) + "\n\n" + markdown, scorer_id(scorer))


def named_by_figure(schema, document: dict, scorer: Optional[dict]):
  """The summary's schema and JSON document with the figure's columns and keys
  named after `scorer` (label.named_figures; None: as they are)."""
  if scorer is None:
    return schema, document
  measure = measure_name(scorer)
  return named_figures(schema, measure), named_figures(document, measure)


class _WriteSummaryFn(beam.DoFn):

  def __init__(self, output_dir, stem, schema, header, markdown, order, rows_name,
               describe, scorer):
    self._output_dir = output_dir
    self._stem = stem
    self._schema = schema
    self._header = header
    self._markdown = markdown
    self._order = order
    self._rows_name = rows_name
    self._describe = describe
    self._scorer = scorer

  def process(self, rows):
    rows = sorted(rows, key=self._order)
    header, markdown, column = named_by_scorer(self._header, self._markdown(rows),
                                               self._scorer)
    schema, document = named_by_figure(
        self._schema, dict(header, **{self._rows_name: [row._asdict() for row in rows]}),
        self._scorer)
    write_summary_files(self._output_dir, self._stem, rows, schema, document,
                        markdown, scorer=column)
    yield self._describe(rows)


class WriteSummary(beam.PTransform):
  """PCollection[summary row NamedTuple] -> PCollection[dict] (one element)."""

  def __init__(self, output_dir: str, stem: str, schema, header: dict,
               markdown: Callable, order: Callable = by_system,
               rows_name: str = "systems", describe: Callable = count_systems,
               scorer: Optional[dict] = None):
    super().__init__()
    self._fn = _WriteSummaryFn(output_dir, stem, schema, header, markdown, order,
                               rows_name, describe, scorer)

  def expand(self, rows):
    return (rows
            | "ListRows" >> beam.combiners.ToList()
            | "WriteFiles" >> beam.ParDo(self._fn))
