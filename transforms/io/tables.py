"""Row tables: `SortedTableWriter` writes one table as `{stem}.parquet` and
`{stem}.csv` side by side, from merged sorted runs or from rows made in Python;
`csv_bytes` renders rows as the bytes of one CSV file.
"""
import contextlib
import io
from typing import Optional

import pyarrow as pa
import pyarrow.csv as pa_csv
import pyarrow.parquet as pq
from apache_beam.io.filesystems import FileSystems

from autoais.schemas import to_record_batch
from autoais.transforms.io.atomic import atomic_create
from autoais.transforms.io.sorted_runs import RowRef, RowRefBuffer

# CSV outputs: pyarrow's writer, quoting only where needed, empty for null; the
# header is written apart so that a file can be written in batches.
CSV_OPTIONS = pa_csv.WriteOptions(include_header=False, quoting_style="needed")
TABLE_ROW_GROUP = 4096


def csv_bytes(rows, schema, header: bool = True, scorer: Optional[str] = None) -> bytes:
  """Rows (tuples in schema order) as CSV, with a header line by default; with
  `scorer` (transforms/scoring/label.py scorer_id), a last column `scorer`
  holding it in every row: a summary's rows name what scored them."""
  batch = to_record_batch(rows, schema)
  if scorer is not None:
    batch = batch.append_column("scorer", pa.array([scorer] * batch.num_rows, pa.string()))
  sink = io.BytesIO()
  if header:
    sink.write((",".join(batch.schema.names) + "\n").encode("utf-8"))
  pa_csv.write_csv(batch, sink, CSV_OPTIONS)
  return sink.getvalue()


class SortedTableWriter:
  """One row table written as `{stem}.parquet` and `{stem}.csv` side by side,
  from merged rows (transforms/io/sorted_runs.py RowRefs) in the order they are
  added: rows are copied as Arrow slices of the runs, never made into Python
  objects (or from rows made in Python, `add_row`). Both files appear under
  their names only once closed without error.

      with SortedTableWriter(output_dir, "ratings", RATING_SCHEMA) as table:
        for ref in merge_run_refs(runs, fields, key): table.add(ref)
  """

  def __init__(self, output_dir: str, stem: str, schema: pa.Schema,
               row_group_size: int = TABLE_ROW_GROUP, write_csv: bool = True):
    self._paths = (FileSystems.join(output_dir, f"{stem}.parquet"),
                   FileSystems.join(output_dir, f"{stem}.csv") if write_csv else None)
    self._schema = schema
    self._row_group_size = row_group_size
    self._buffer = RowRefBuffer()
    self._rows = []
    self.num_rows = 0

  def __enter__(self):
    self._stack = contextlib.ExitStack()
    parquet_path, csv_path = self._paths
    parquet_sink = self._stack.enter_context(atomic_create(parquet_path))
    self._csv = None
    if csv_path is not None:
      self._csv = self._stack.enter_context(atomic_create(csv_path))
      self._csv.write((",".join(self._schema.names) + "\n").encode("utf-8"))
    self._parquet = self._stack.enter_context(
        pq.ParquetWriter(parquet_sink, self._schema, compression="snappy"))
    return self

  def add(self, ref: RowRef) -> None:
    self._buffer.add(ref)
    self.num_rows += 1
    if self._buffer.num_rows == self._row_group_size:
      self._write(self._buffer.take())

  def add_row(self, row: tuple) -> None:
    """A row made in Python (a tuple in schema order); a table takes RowRefs or
    rows, not both."""
    self._rows.append(row)
    self.num_rows += 1
    if len(self._rows) == self._row_group_size:
      self._write_rows()

  def _write_rows(self) -> None:
    self._write(pa.Table.from_batches([to_record_batch(self._rows, self._schema)]))
    self._rows = []

  def _write(self, table: pa.Table) -> None:
    self._parquet.write_table(table, row_group_size=self._row_group_size)
    if self._csv is not None:
      pa_csv.write_csv(table, self._csv, CSV_OPTIONS)

  def __exit__(self, error_type, error, traceback):
    if error_type is None and self._buffer.num_rows:
      self._write(self._buffer.take())
    if error_type is None and self._rows:
      self._write_rows()
    return self._stack.__exit__(error_type, error, traceback)
