"""ais-annotations' outputs: each (data set, model)'s annotations tallied (one
small accumulator per model, never the rows), then the tables of the AIS paper
rebuilt from the tallies: ais_tables.{csv,json,md} and ais_agreement.csv.
"""
import apache_beam as beam
from apache_beam.io.filesystems import FileSystems

from autoais.schemas import AIS_AGREEMENT_SCHEMA, AIS_TABLE_SCHEMA
from autoais.transforms.ais_annotations.comparison import build_tables
from autoais.transforms.ais_annotations.rendering import (agreement_rows, summarize, table_rows,
                                                          tables_json, tables_markdown)
from autoais.transforms.ais_annotations.tally import TallyAnnotations
from autoais.transforms.io.atomic import atomic_create, write_text_atomically
from autoais.transforms.io.tables import csv_bytes


class _WriteTablesFn(beam.DoFn):
  """All (data set, model) tallies (one small accumulator per model, never the
  rows) -> the table files; emits the counts run.json needs."""

  def __init__(self, output_dir: str, alpha: float, sampled: int):
    self._output_dir = output_dir
    self._alpha = alpha
    self._sampled = sampled

  def process(self, tallies):
    tables = build_tables(tallies, self._alpha, self._sampled)
    summary = summarize(tables)
    join = FileSystems.join
    with atomic_create(join(self._output_dir, "ais_tables.csv")) as sink:
      sink.write(csv_bytes(table_rows(tables, self._sampled), AIS_TABLE_SCHEMA))
    with atomic_create(join(self._output_dir, "ais_agreement.csv")) as sink:
      sink.write(csv_bytes(agreement_rows(tables), AIS_AGREEMENT_SCHEMA))
    write_text_atomically(join(self._output_dir, "ais_tables.json"),
                          tables_json(tables, self._alpha, self._sampled, summary))
    write_text_atomically(join(self._output_dir, "ais_tables.md"),
                          tables_markdown(tables, self._alpha, self._sampled,
                                                summary))
    yield {
        "used": sum(model.tally.counts.items for table in tables for model in table.models),
        "datasets": len(tables),
        "models": sum(len(table.models) for table in tables),
        "reproduction": summary,
    }


class WriteAisTables(beam.PTransform):
  """PCollection[AnnotationRow] -> the table files; returns a singleton with
  the counts run.json needs (annotations used, data sets, models, and how the
  paper's cells were reproduced)."""

  def __init__(self, output_dir: str, alpha: float, sampled_outputs: int):
    super().__init__()
    self._fn = _WriteTablesFn(output_dir, alpha, sampled_outputs)

  def expand(self, annotations):
    return (annotations
            | "KeyByModel" >> beam.Map(lambda row: ((row.dataset, row.model), row))
            | "TallyModels" >> beam.CombinePerKey(TallyAnnotations())
            | "CollectModelTallies" >> beam.combiners.ToList()
            | "WriteTables" >> beam.ParDo(self._fn))
