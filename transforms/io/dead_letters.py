"""Writers shared by the jobs: sorted dead-letter files, single-file outputs, run.json.

Single-file outputs are written by one worker from a singleton element (so they
are written once, after their inputs are complete), to a temporary name first
and then renamed, so a failed job never leaves a half-written file under the
final name. `run.json` is written last and is the mark of a complete run.
"""
import collections
import contextlib
import datetime
import io
import json
import platform
import shutil
import time
import uuid
from typing import Dict

import apache_beam as beam
import pyarrow as pa
import pyarrow.csv as pa_csv
import pyarrow.parquet as pq
from apache_beam.io.filesystems import FileSystems

from schemas import DeadLetter, REJECTED, UNMATCHED, to_record_batch
from transforms.io import progress
from transforms.io.sorted_runs import (RowRef, RowRefBuffer, SpillSortedRuns,
                                       merge_sorted_runs)

DEAD_LETTER_KEY = ("source_file", "source_line", "reason", "field", "message")
# CSV outputs: pyarrow's writer, quoting only where needed, empty for null; the
# header is written apart so that a file can be written in batches.
CSV_OPTIONS = pa_csv.WriteOptions(include_header=False, quoting_style="needed")


@contextlib.contextmanager
def atomic_create(path: str):
  """A writable binary file that appears under `path` only once closed without
  error; until then it is a temporary file beside it."""
  temporary = f"{path}.tmp-{uuid.uuid4().hex}"
  sink = FileSystems.create(temporary)
  try:
    yield sink
  except BaseException:
    sink.close()
    FileSystems.delete([temporary])
    raise
  sink.close()
  if FileSystems.exists(path):
    FileSystems.delete([path])
  FileSystems.rename([temporary], [path])


def write_text_atomically(path: str, text: str) -> None:
  with atomic_create(path) as sink:
    sink.write(text.encode("utf-8"))


def write_summary_files(output_dir: str, stem: str, rows, schema, document: dict,
                        markdown: str) -> None:
  """A job's per-system summary: `{stem}.csv` (rows in schema order),
  `{stem}.json` (`document`, which holds the rows) and `{stem}.md`, each written
  atomically."""
  join = FileSystems.join
  with atomic_create(join(output_dir, f"{stem}.csv")) as sink:
    sink.write(csv_bytes(rows, schema))
  write_text_atomically(join(output_dir, f"{stem}.json"),
                        json.dumps(document, indent=2, ensure_ascii=False) + "\n")
  write_text_atomically(join(output_dir, f"{stem}.md"), markdown)


TABLE_ROW_GROUP = 4096


def csv_bytes(rows, schema, header: bool = True) -> bytes:
  """Rows (tuples in schema order) as CSV, with a header line by default."""
  sink = io.BytesIO()
  if header:
    sink.write((",".join(schema.names) + "\n").encode("utf-8"))
  pa_csv.write_csv(to_record_batch(rows, schema), sink, CSV_OPTIONS)
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


def delete_tree(path: str) -> None:
  """Deletes a directory (local) or every object under a prefix (gs://)."""
  if FileSystems.get_scheme(path) in (None, "file"):
    shutil.rmtree(path.removeprefix("file://"), ignore_errors=True)
    return
  objects = FileSystems.match([path.rstrip("/") + "/**"])[0].metadata_list
  if objects:
    FileSystems.delete([metadata.path for metadata in objects])


def dead_letter_json(row: DeadLetter) -> str:
  """One dead_letter.jsonl line; the raw record is embedded as JSON when it is."""
  record = row.record
  try:
    parsed = json.loads(record)
    if isinstance(parsed, dict):
      record = parsed
  except (ValueError, RecursionError):  # not JSON, or nested too deep to decode
    pass
  return json.dumps({
      "source_file": row.source_file,
      "source_line": row.source_line,
      "kind": row.kind,
      "reason": row.reason,
      "field": row.field,
      "message": row.message,
      "record": record,
  }, ensure_ascii=False)


class _WriteDeadLettersFn(beam.DoFn):

  def __init__(self, path: str):
    self._path = path

  def process(self, unused_impulse, run_paths, counts):
    # The runs are left for the job's scratch directory to take away: were this
    # bundle retried after deleting them, the retry would find nothing to merge.
    runs = [run for _, run in run_paths]
    written = 0
    with atomic_create(self._path) as sink:
      for row in merge_sorted_runs(runs, DeadLetter, DEAD_LETTER_KEY):
        sink.write(dead_letter_json(row).encode("utf-8") + b"\n")
        written += 1
    progress.count("dead_lettered", written)
    progress.flush()
    # The counts come out once the file is written: run.json waits for them.
    yield counts


class _CountDeadLetters(beam.CombineFn):
  """Dead letters of one input role -> {role: {rejected, unmatched, by_reason}}."""

  def __init__(self, role: str):
    self._role = role

  def create_accumulator(self):
    return collections.Counter()

  def add_input(self, accumulator, row: DeadLetter):
    accumulator[(row.kind, row.reason)] += 1
    return accumulator

  def merge_accumulators(self, accumulators):
    merged = collections.Counter()
    for accumulator in accumulators:
      merged.update(accumulator)
    return merged

  def extract_output(self, accumulator):
    counts = {REJECTED: 0, UNMATCHED: 0}
    by_reason = {}
    for (kind, reason), count in sorted(accumulator.items()):
      counts[kind] = counts.get(kind, 0) + count
      by_reason[f"{kind}:{reason}"] = count
    return {self._role: dict(counts, by_reason=by_reason)}


class WriteDeadLetters(beam.PTransform):
  """{role: PCollection[DeadLetter] or a tuple of them} -> one dead_letter.jsonl
  sorted by (file, line, reason, field, message); returns a singleton
  PCollection {role: {"rejected": n, "unmatched": m, "by_reason": {...}}} with
  an entry (zeros where none) for every role: each input role ("predictions",
  "gold", ...) reconciles on its own in run.json.

  Each input is spilled where it is produced and only run paths are flattened:
  the FnApiRunner would hold the inputs of a Flatten in memory.
  """

  def __init__(self, path: str, work_dir: str):
    super().__init__()
    self._path = path
    self._work_dir = work_dir

  def expand(self, dead_letters_by_role):
    run_dir = FileSystems.join(self._work_dir, "dead_letter")
    runs, counts = [], []
    for role, pcolls in sorted(dead_letters_by_role.items()):
      if not isinstance(pcolls, (tuple, list)):
        pcolls = (pcolls,)
      label = role.title().replace("_", "")
      for index, pcoll in enumerate(pcolls):
        runs.append(pcoll | f"SpillDeadLetterRuns{label}{index}" >> SpillSortedRuns(
            run_dir, DeadLetter, DEAD_LETTER_KEY))
        counts.append(pcoll | f"CountDeadLetters{label}{index}" >> beam.CombineGlobally(
            _CountDeadLetters(role)))
    counts = (tuple(counts) | "CollectDeadLetterCounts" >> beam.Flatten()
              | "SumDeadLetterCounts" >> beam.CombineGlobally(SumCounts()))
    return (runs[0].pipeline
            | "StartDeadLetterFile" >> beam.Create([None])
            | "MergeDeadLetterRuns" >> beam.ParDo(
                _WriteDeadLettersFn(self._path),
                beam.pvalue.AsList(tuple(runs) | "CollectRuns" >> beam.Flatten()),
                beam.pvalue.AsSingleton(counts)))


class SumCounts(beam.CombineFn):
  """Sums dicts of counts key by key (values may be nested dicts of counts);
  keys named largest_* keep their maximum instead."""

  def create_accumulator(self):
    return {}

  def add_input(self, accumulator, counts):
    for key, value in counts.items():
      if isinstance(value, dict):
        accumulator[key] = self.add_input(accumulator.get(key, {}), value)
      elif key.startswith("largest_"):
        accumulator[key] = max(accumulator.get(key, 0), value)
      else:
        accumulator[key] = accumulator.get(key, 0) + value
    return accumulator

  def merge_accumulators(self, accumulators):
    merged = {}
    for accumulator in accumulators:
      self.add_input(merged, accumulator)
    return merged

  def extract_output(self, accumulator):
    return accumulator


def versions_and_timings(started: float, started_at: str) -> dict:
  """The last entries of every job's manifest: software versions, and when the
  run started and ended (`started`: its time.time(), `started_at`: utc_now())."""
  return {"versions": software_versions(),
          "timings": {"started_at": started_at, "finished_at": utc_now(),
                      "wall_seconds": round(time.time() - started, 3)}}


def software_versions() -> Dict[str, str]:
  import apache_beam  # pylint: disable=import-outside-toplevel
  import numpy  # pylint: disable=import-outside-toplevel
  import pyarrow  # pylint: disable=import-outside-toplevel
  versions = {
      "python": platform.python_version(),
      "apache_beam": apache_beam.__version__,
      "pyarrow": pyarrow.__version__,
      "numpy": numpy.__version__,
  }
  try:
    from importlib.metadata import version  # pylint: disable=import-outside-toplevel
    versions["autoais_beam"] = version("autoais-beam")
  except Exception:  # pylint: disable=broad-except
    versions["autoais_beam"] = "unknown"
  return versions


def utc_now() -> str:
  return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


class _WriteManifestFn(beam.DoFn):

  def __init__(self, path: str, build_manifest, work_dir: str):
    self._path = path
    self._build_manifest = build_manifest
    self._work_dir = work_dir

  def process(self, unused_impulse, **side_inputs):
    manifest = self._build_manifest(**side_inputs)
    write_text_atomically(self._path, json.dumps(manifest, indent=2, sort_keys=False,
                                                 ensure_ascii=False) + "\n")
    if self._work_dir:
      delete_tree(self._work_dir)
    yield self._path


class WriteManifest(beam.PTransform):
  """Writes a JSON manifest once every side input is complete.

  `build_manifest(**values)` receives each named singleton side input and returns
  the manifest dict. The job's scratch directory is removed afterwards.
  """

  def __init__(self, path: str, build_manifest, side_inputs: Dict[str, object],
               work_dir: str = ""):
    super().__init__()
    self._fn = _WriteManifestFn(path, build_manifest, work_dir)
    self._side_inputs = side_inputs

  def expand(self, pbegin):
    singletons = {name: beam.pvalue.AsSingleton(pcoll)
                  for name, pcoll in self._side_inputs.items()}
    return (pbegin
            | "StartManifest" >> beam.Create([None])
            | "WriteManifestFile" >> beam.ParDo(self._fn, **singletons))


def reconcile(read: int, scored: int, dead: Dict[str, object]) -> Dict[str, object]:
  """A counts block of run.json for one input role (`dead`: its entry from
  WriteDeadLetters); raises if a row went missing or was doubled."""
  counts = {
      "read": read,
      "scored": scored,
      REJECTED: dead[REJECTED],
      UNMATCHED: dead[UNMATCHED],
  }
  counts["reconciled"] = read == scored + dead[REJECTED] + dead[UNMATCHED]
  if not counts["reconciled"]:
    raise RuntimeError(f"row counts do not reconcile: {counts}")
  counts["by_reason"] = dead.get("by_reason", {})
  return counts
