"""External sort: spill elements to sorted runs, then merge them in key order.

Jobs use this wherever an output must be one deterministic, sorted file (ratings,
dead letters) or a set of sorted shards (the corpus), whatever the runner, the
bundle split or the number of workers, and without holding a whole PCollection
in memory: the DirectRunner keeps every shuffled element in memory, so the large
streams of a job are spilled to Arrow IPC runs on the worker that made them and
only the run paths are shuffled.

    runs = rows | 'SpillRatingRuns' >> SpillSortedRuns(work_dir, RatingRow, KEY)
    # runs: PCollection[(shard, RunSlice)]; a consumer DoFn then calls
    for row in merge_sorted_runs(slices, RatingRow, KEY): ...

A spill writes one Arrow IPC file holding every shard it buffered, shard after
shard in record batches, and emits one RunSlice (file, batch range) per shard: a
corpus of thousands of shards makes one file per spill, not one per shard.
A merge reads at most MAX_MERGE_RUNS runs at once: more are first merged in
passes into runs of their own (deleted once read), so that its memory does
not grow with the number of runs.
"""
import heapq
import itertools
import operator
import os
import uuid
from collections import defaultdict
from typing import (Callable, Iterable, Iterator, List, NamedTuple, Optional,
                    Sequence, Tuple, Type)

import apache_beam as beam
import pyarrow as pa
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems
from apache_beam.transforms.window import GlobalWindow
from apache_beam.utils.timestamp import MIN_TIMESTAMP
from apache_beam.utils.windowed_value import WindowedValue

from autoais.schemas import schema_of, to_record_batch
from autoais.transforms.io.untyped_output import UntypedOutputDoFn

# Rows per Arrow batch in a run file, at most, and bytes per batch, at most
# (about: wide rows make batches of fewer rows). A merge holds one decoded batch
# per run, so small batches keep its memory low however many runs there are.
_BATCH_ROWS = 256
_BATCH_BYTES = 64 * 1024
_CONVERT_ROWS = 16 * _BATCH_ROWS
# Run files are compressed and decompressed buffer by buffer on the calling
# thread: a batch is at most _BATCH_ROWS rows and about _BATCH_BYTES, and
# handing each of its small buffers to Arrow's thread pool cost more CPU than
# the compression itself (citations with lz4: bench/README.md). A worker's
# parallelism is its processes and Beam's threads, not Arrow's.
_READ_OPTIONS = pa.ipc.IpcReadOptions(use_threads=False)
# Local runs are uncompressed unless AUTOAIS_SCRATCH_CODEC names a codec: a
# run whose scratch would not fit its disk trades CPU for bytes (citations'
# runs: 1.9x fewer bytes with lz4, 3.0x with zstd; see docs/scale.md).
SCRATCH_CODEC_VARIABLE = "AUTOAIS_SCRATCH_CODEC"
_SCRATCH_CODECS = {"none": None, "lz4": "lz4", "zstd": "zstd"}


def _key_function(element_type: Type[tuple], key_fields: Sequence[str]) -> Callable:
  indices = [element_type._fields.index(name) for name in key_fields]
  return operator.itemgetter(*indices) if len(indices) > 1 else (
      lambda row, i=indices[0]: (row[i],))


class RunSlice(NamedTuple):
  """The record batches [first_batch, first_batch + num_batches) of a run file:
  one shard's rows of one spill, sorted."""
  path: str
  first_batch: int
  num_batches: int


def scratch_codec() -> Optional[str]:
  """The codec of local run files, from AUTOAIS_SCRATCH_CODEC (none, lz4 or
  zstd; none where it is unset or empty)."""
  name = os.environ.get(SCRATCH_CODEC_VARIABLE, "").strip().lower() or "none"
  if name not in _SCRATCH_CODECS:
    raise ValueError(f"{SCRATCH_CODEC_VARIABLE}={name!r}: expected one of "
                     f"{', '.join(_SCRATCH_CODECS)}")
  return _SCRATCH_CODECS[name]


def _ipc_options(path: str) -> pa.ipc.IpcWriteOptions:
  # Local runs stay uncompressed by default (a codec costs CPU on every spill
  # and merge: lz4 about 2% of a citations run, zstd about 10%); runs on an
  # object store (gs://) are compressed to cut the bytes.
  local = FileSystems.get_scheme(path) in (None, "file")
  return pa.ipc.IpcWriteOptions(compression=scratch_codec() if local else "lz4",
                                use_threads=False)


def write_run(path: str, shards: Iterable[Tuple[int, Iterable[tuple]]],
              element_type: Type[tuple], schema: Optional[pa.Schema] = None
              ) -> Iterator[Tuple[int, RunSlice]]:
  """Writes each shard's sorted rows (a sequence, or an iterator read as it is
  written) as consecutive batches of one IPC file (`schema`: element_type's
  registered one where None)."""
  schema = schema or schema_of(element_type)
  slices = []
  with FileSystems.create(path) as sink:
    with pa.ipc.new_file(sink, schema, options=_ipc_options(path)) as writer:
      batch = 0
      for shard, rows in shards:
        first = batch
        rows = iter(rows)
        # Rows are converted _CONVERT_ROWS at a time (fewer, larger calls into
        # Arrow) and written as slices of at most _BATCH_ROWS rows and about
        # _BATCH_BYTES.
        for chunk in iter(lambda rows=rows: list(itertools.islice(rows, _CONVERT_ROWS)),
                          []):
          batch += _write_in_slices(writer, to_record_batch(chunk, schema))
        slices.append((shard, RunSlice(path, first, batch - first)))
  return slices


def _write_in_slices(writer, batch) -> int:
  """Writes `batch` (a RecordBatch, or a Table of single chunks) as slices of
  at most _BATCH_ROWS rows and about _BATCH_BYTES; returns how many it wrote."""
  step = max(1, min(_BATCH_ROWS, _BATCH_BYTES * batch.num_rows // max(batch.nbytes, 1)))
  for offset in range(0, batch.num_rows, step):
    writer.write(batch.slice(offset, step))
  return -(-batch.num_rows // step)


class RowRef(NamedTuple):
  """A merged row: the values of the requested fields, and the Arrow batch and
  index that hold the whole row (to copy it on without making Python objects)."""
  values: tuple
  batch: pa.RecordBatch
  index: int

  def row(self, row_type: Type[tuple]) -> tuple:
    """The whole row as `row_type` (for the rare row that needs all its fields
    in Python, such as a dead letter's record)."""
    return row_type(**self.batch.slice(self.index, 1).to_pylist()[0])


def _read_run_rows(run: RunSlice, run_number: int, key_fields: Sequence[str],
                   fields: Sequence[str]) -> Iterator[tuple]:
  """(key, tiebreak, values, batch, index) for each row of a run slice.

  Keys and values are built from whole columns by zip, in C; the tiebreak
  (run number, then position) is unique, so the merge compares keys and, on
  a tie, integers, never values or batches.
  """
  position = run_number << 40
  with FileSystems.open(run.path, compression_type=CompressionTypes.UNCOMPRESSED
                        ) as source:
    reader = pa.ipc.open_file(source, options=_READ_OPTIONS)
    for index in range(run.first_batch, run.first_batch + run.num_batches):
      batch = reader.get_batch(index)
      rows = batch.num_rows
      keys = zip(*[batch.column(name).to_pylist() for name in key_fields])
      values = (zip(*[batch.column(name).to_pylist() for name in fields]) if fields
                else itertools.repeat((), rows))  # zip() of no columns has no rows
      yield from zip(keys, range(position, position + rows), values,
                     itertools.repeat(batch, rows), range(rows))
      position += rows


# A merge holds one decoded batch of each run it reads (its Arrow buffers and
# its rows' values in Python): more runs than this (a large table spilled in
# many steps) are first merged in passes, this many at a time, into runs of
# their own, so that a merge's memory does not grow with the number of runs.
MAX_MERGE_RUNS = 32


def _merge_refs(runs: Sequence[RunSlice], fields: Sequence[str],
                key_fields: Sequence[str]) -> Iterator[RowRef]:
  merged = heapq.merge(*[_read_run_rows(run, number, key_fields, fields)
                         for number, run in enumerate(runs)])
  return (RowRef(values, batch, index) for _, _, values, batch, index in merged)


def _write_refs(path: str, refs: Iterator[RowRef]) -> Optional[RunSlice]:
  """Merged rows, copied as Arrow slices of the batches that hold them, as one
  run file at `path` (None, and no file, where there are none)."""
  refs = iter(refs)
  first = next(refs, None)
  if first is None:
    return None
  buffer = RowRefBuffer()
  batches = 0
  with FileSystems.create(path) as sink:
    with pa.ipc.new_file(sink, first.batch.schema, options=_ipc_options(path)) as writer:
      for ref in itertools.chain([first], refs):
        buffer.add(ref)
        if buffer.num_rows >= _CONVERT_ROWS:
          batches += _write_in_slices(writer, buffer.take())
      if buffer.num_rows:
        batches += _write_in_slices(writer, buffer.take())
  return RunSlice(path, 0, batches)


def _fewer_runs(runs: Iterable[RunSlice], key_fields: Sequence[str], max_runs: int,
                created: List[str]) -> List[RunSlice]:
  """`runs` in order, or, where they are more than `max_runs`, runs of the same
  rows merged (beside the first run's file) until they are no more. The paths
  of the files it writes are appended to `created`; a pass deletes the files
  of the pass before once it has read them (the spilled runs themselves are
  kept: a retried merge reads them again)."""
  runs = sorted(runs)
  while len(runs) > max_runs:
    directory = FileSystems.split(runs[0].path)[0]
    merged = []
    for start in range(0, len(runs), max_runs):
      part = runs[start:start + max_runs]
      if len(part) == 1:
        merged.extend(part)
        continue
      path = FileSystems.join(directory, f"merged-{uuid.uuid4().hex}.arrow")
      # Listed before it is written: a pass that fails midway leaves no file.
      created.append(path)
      run = _write_refs(path, _merge_refs(part, key_fields, key_fields))
      if run is None:
        created.remove(path)  # no rows: no file was made
      else:
        merged.append(run)
      _delete_created(part, created)
    runs = sorted(merged)
  return runs


def _delete_created(runs: Iterable[RunSlice], created: List[str]) -> None:
  """Deletes the files of `runs` that a merge pass wrote (those in `created`)."""
  paths = sorted({run.path for run in runs} & set(created))
  if paths:
    FileSystems.delete(paths)
    created[:] = [path for path in created if path not in paths]


def merge_run_refs(runs: Iterable[RunSlice], fields: Sequence[str],
                   key_fields: Sequence[str],
                   max_runs: int = MAX_MERGE_RUNS) -> Iterator[RowRef]:
  """Rows of all run slices in key order, as RowRefs carrying `fields`. Keys
  should identify rows; ties come out in an order the runs' paths fix. At most
  `max_runs` runs are read at once (_fewer_runs); the merge passes' files are
  deleted once read, or when the merge stops early."""
  created = []
  try:
    yield from _merge_refs(_fewer_runs(runs, key_fields, max_runs, created), fields,
                           key_fields)
  finally:
    if created:
      FileSystems.delete(list(created))


def merge_sorted_runs(runs: Iterable[RunSlice], element_type: Type[tuple],
                      key_fields: Sequence[str],
                      max_runs: int = MAX_MERGE_RUNS) -> Iterator[tuple]:
  """Rows of all run slices in key order, as `element_type` (merge_run_refs)."""
  make = element_type._make
  refs = merge_run_refs(runs, element_type._fields, key_fields, max_runs)
  try:
    for ref in refs:
      yield make(ref.values)
  finally:
    refs.close()


class RowRefBuffer:
  """Collects merged rows by reference and hands them back as one Arrow table,
  copying runs of consecutive rows as slices."""

  def __init__(self):
    self._parts = []
    self.num_rows = 0

  def add(self, ref: RowRef) -> None:
    if self._parts:
      batch, start, length = self._parts[-1]
      if batch is ref.batch and start + length == ref.index:
        self._parts[-1][2] += 1
        self.num_rows += 1
        return
    self._parts.append([ref.batch, ref.index, 1])
    self.num_rows += 1

  def take(self) -> pa.Table:
    table = pa.Table.from_batches(
        [batch.slice(start, length) for batch, start, length in self._parts])
    self._parts, self.num_rows = [], 0
    return table.combine_chunks()


class TableFileWriter:
  """Appends Arrow tables to one IPC file (scratch, such as one system's
  finished rows for a later step): the rows leave memory as they are written,
  and the file's path, not its rows, is what a PCollection carries."""

  def __init__(self, path: str):
    self.path = path
    self._sink = None
    self._writer = None

  def write(self, table: pa.Table) -> None:
    if self._writer is None:
      self._sink = FileSystems.create(self.path)
      self._writer = pa.ipc.new_file(self._sink, table.schema,
                                     options=_ipc_options(self.path))
    self._writer.write_table(table, max_chunksize=_CONVERT_ROWS)

  def close(self) -> None:
    if self._writer is not None:
      self._writer.close()
      self._sink.close()


# Batches of a table file read before their kept columns are copied out.
_BATCHES_PER_COPY = 16


def read_table_file(path: str, columns: Optional[Sequence[str]] = None) -> pa.Table:
  """A file of TableFileWriter as one table of `columns` (all where None), its
  batches combined: where it holds several, the columns kept are copied and the
  file's buffers freed. With `columns`, only those columns are decoded, and
  the file is read _BATCHES_PER_COPY batches at a time (a batch's columns
  arrive in one buffer): the other columns never fill memory at once."""
  try:
    return _read_table_file(path, columns)
  finally:
    # The batches decoded for the copy were freed, but Arrow's allocator keeps
    # their pages, and the numpy arrays a summary then makes come from the C
    # heap on top of them: the citations leaderboard's step at a million
    # items peaked 50 MiB lower with the pages handed back after each read
    # (bench/README.md), in the same time.
    pa.default_memory_pool().release_unused()


def _read_table_file(path: str, columns: Optional[Sequence[str]]) -> pa.Table:
  with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED
                        ) as source:
    if columns is None:
      return pa.ipc.open_file(source, options=_READ_OPTIONS).read_all().combine_chunks()
    schema = pa.ipc.open_file(source).schema
    reader = pa.ipc.open_file(source, options=pa.ipc.IpcReadOptions(
        included_fields=sorted({schema.get_field_index(name) for name in columns}),
        use_threads=False))
    parts = []
    for start in range(0, reader.num_record_batches, _BATCHES_PER_COPY):
      batches = [reader.get_batch(index).select(columns) for index in range(
          start, min(start + _BATCHES_PER_COPY, reader.num_record_batches))]
      # combine_chunks copies the kept columns of several batches (a single
      # batch is kept as it is: its buffer is at most one batch).
      parts.append(pa.Table.from_batches(batches).combine_chunks())
    if not parts:
      return pa.Table.from_batches([], pa.schema([schema.field(name)
                                                  for name in columns]))
  return pa.concat_tables(parts).combine_chunks()


def _value_bytes(value) -> int:
  if isinstance(value, str):
    return 49 + len(value)
  if isinstance(value, bytes):
    return 33 + len(value)
  if isinstance(value, (tuple, list, dict)):
    return 56 + 8 * len(value)
  if value is None or isinstance(value, bool) or (isinstance(value, int) and
                                                  -5 <= value <= 256):
    return 0  # shared by the interpreter
  return 32


def heap_bytes(row: tuple) -> int:
  """About what `row` and its fields hold of Python's heap (CPython, 64 bits):
  the tuple 56 bytes and a pointer a field, a str field 49 and its length
  (ASCII; other text costs more), bytes 33 and their length, a number 32;
  None, booleans and small ints are shared. A nested tuple, list or dict
  counts its own slots, not what they hold: counting nested text made the
  scorer's spills of examples (premises in a nested tuple) several times as
  many runs and citations about a quarter dearer in CPU (bench/README.md,
  "What the last rise at 100k items is")."""
  return 56 + 8 * len(row) + sum(_value_bytes(value) for value in row)


class _SpillRunsFn(UntypedOutputDoFn):
  """Buffers a bounded number of rows, then writes them sorted, one run per shard."""

  def __init__(self, work_dir: str, element_type: Type[tuple],
               key_fields: Sequence[str], shard_of: Optional[Callable[[tuple], int]],
               max_run_bytes: int, schema: Optional[pa.Schema]):
    self._work_dir = work_dir
    self._element_type = element_type
    self._schema = schema
    self._key_fields = tuple(key_fields)
    self._shard_of = shard_of
    self._max_bytes = max_run_bytes

  def setup(self):
    self._key = _key_function(self._element_type, self._key_fields)

  def start_bundle(self):
    self._buffers = defaultdict(list)
    self._buffered = 0
    self._rows = 0
    self._row_bytes = 0

  def process(self, element):
    shard = self._shard_of(element) if self._shard_of else 0
    self._buffers[shard].append(element)
    if self._rows % 32 == 0:
      # Measuring one row in 32 is accurate enough and costs little.
      self._row_bytes = heap_bytes(element)
    self._rows += 1
    self._buffered += self._row_bytes
    if self._buffered >= self._max_bytes:
      yield from self._flush()

  def finish_bundle(self):
    for output in self._flush():
      yield WindowedValue(output, MIN_TIMESTAMP, [GlobalWindow()])

  def _flush(self) -> Iterator[Tuple[int, RunSlice]]:
    if not self._buffers:
      return
    shards = []
    for shard in sorted(self._buffers):
      rows = self._buffers[shard]
      rows.sort(key=self._key)
      shards.append((shard, rows))
    path = FileSystems.join(self._work_dir, f"run-{uuid.uuid4().hex}.arrow")
    yield from write_run(path, shards, self._element_type, self._schema)
    self._buffers = defaultdict(list)
    self._buffered = 0


class SpillSortedRuns(beam.PTransform):
  """PCollection[element_type] -> PCollection[(shard, RunSlice)].

  A worker buffers about `max_run_bytes` of rows (all shards together) before it
  writes them, sorted by `key_fields`, as one run per shard. Runs from failed
  bundle attempts are never emitted, so retries do not duplicate rows. `schema`
  is for an element type outside the schema registry (a scratch type).
  """

  def __init__(self, work_dir: str, element_type: Type[tuple],
               key_fields: Sequence[str], shard_of: Optional[Callable] = None,
               max_run_bytes: int = 16 * 1024 * 1024,
               schema: Optional[pa.Schema] = None):
    super().__init__()
    self._fn = _SpillRunsFn(work_dir, element_type, key_fields, shard_of,
                            max_run_bytes, schema)

  def expand(self, rows):
    return rows | "WriteSortedRuns" >> beam.ParDo(self._fn)
