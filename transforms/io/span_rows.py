"""spans.jsonl: the unsupported spans a span scorer (--scorer lettucedetect)
finds in each scored row (and those a human marked, where the input has them),
one line a row (agreement's items, evaluate's rated rows), sorted by (file,
line, item id; evaluate's rows, one a line, have no item id),
written from sorted runs on disk as dead_letter.jsonl is (`WriteSpanRows`);
`span_row_json` is one line of it."""
import json

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems

from autoais.schemas import SpanRow, UnsupportedSpan
from autoais.transforms.io.dead_letters import write_sorted_jsonl
from autoais.transforms.io.sorted_runs import SpillSortedRuns

SPAN_ROW_KEY = ("source_file", "source_line", "item_id")
FILE_NAME = "spans.jsonl"
# The rows a report.html shows with their spans: the first by source.
REPORT_SPAN_ROWS = 50


def span_row_json(row: SpanRow) -> str:
  """One line: where the row came from, what names it (agreement's item_id;
  evaluate's system_name and question), the text checked, and each span with
  its characters."""
  spans = [span if isinstance(span, UnsupportedSpan) else UnsupportedSpan(**span)
           for span in row.spans]
  line = {"source_file": row.source_file, "source_line": row.source_line}
  if row.item_id is not None:
    line["item_id"] = row.item_id
  if row.system_name is not None:
    line.update(system_name=row.system_name, question=row.question)
  line.update(text=row.text, spans=[
      {"start": span.start, "end": span.end, "probability": span.probability,
       "text": row.text[span.start:span.end]} for span in spans])
  if row.human_spans is not None:
    human = [span if isinstance(span, dict) else span._asdict() for span in row.human_spans]
    line["human_spans"] = [dict(span, text=row.text[span["start"]:span["end"]])
                           for span in human]
  return json.dumps(line, ensure_ascii=False)


class _WriteSpanRowsFn(beam.DoFn):

  def __init__(self, path: str):
    self._path = path

  def process(self, unused_impulse, run_paths):
    yield write_sorted_jsonl(self._path, run_paths, SpanRow, SPAN_ROW_KEY, span_row_json)


class WriteSpanRows(beam.PTransform):
  """PCollection[SpanRow] -> spans.jsonl at `path`; returns a singleton
  PCollection of the lines written."""

  def __init__(self, path: str, work_dir: str):
    super().__init__()
    self._path = path
    self._work_dir = work_dir

  def expand(self, rows):
    runs = rows | "SpillSpanRuns" >> SpillSortedRuns(
        FileSystems.join(self._work_dir, "spans"), SpanRow, SPAN_ROW_KEY)
    return (rows.pipeline
            | "StartSpanFile" >> beam.Create([None])
            | "MergeSpanRuns" >> beam.ParDo(_WriteSpanRowsFn(self._path),
                                            beam.pvalue.AsList(runs)))


class FirstSpanRows(beam.PTransform):
  """PCollection[SpanRow] -> a singleton list of the REPORT_SPAN_ROWS first
  by source (SPAN_ROW_KEY): the rows a report.html shows with their spans."""

  def expand(self, rows):
    return rows | "FirstBySource" >> beam.combiners.Top.Smallest(
        REPORT_SPAN_ROWS, key=lambda row: row[:3])
