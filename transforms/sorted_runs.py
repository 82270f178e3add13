"""External sort: spill elements to sorted runs, then merge them in key order.

Jobs use this wherever an output must be one deterministic, sorted file (ratings,
dead letters) or a set of sorted shards (the corpus), whatever the runner, the
bundle split or the number of workers, and without holding a whole PCollection
in memory: the DirectRunner keeps every shuffled element in memory, so the large
streams of a job are spilled to Arrow IPC runs on the worker that made them and
only the run paths are shuffled.

    runs = rows | 'SpillRatingRuns' >> SpillSortedRuns(work_dir, RatingRow, KEY)
    # runs: PCollection[(shard, run_path)]; a consumer DoFn then calls
    for row in merge_sorted_runs(paths, RatingRow, KEY): ...
"""
import heapq
import operator
import uuid
from collections import defaultdict
from typing import Callable, Iterable, Iterator, Optional, Sequence, Tuple, Type

import apache_beam as beam
import pyarrow as pa
from apache_beam.io.filesystems import FileSystems
from apache_beam.transforms.window import GlobalWindow
from apache_beam.utils.timestamp import MIN_TIMESTAMP
from apache_beam.utils.windowed_value import WindowedValue

from schemas import iter_rows, schema_of, to_record_batch

# Rows per Arrow batch in a run file. A merge holds one decoded batch per run,
# so small batches keep its memory low however many runs there are.
_BATCH_ROWS = 256
_IPC_OPTIONS = pa.ipc.IpcWriteOptions(compression="lz4")


def _key_function(element_type: Type[tuple], key_fields: Sequence[str]) -> Callable:
  indices = [element_type._fields.index(name) for name in key_fields]
  return operator.itemgetter(*indices) if len(indices) > 1 else (
      lambda row, i=indices[0]: (row[i],))


def write_run(path: str, rows: Sequence[tuple], element_type: Type[tuple]) -> None:
  schema = schema_of(element_type)
  with FileSystems.create(path) as sink:
    with pa.ipc.new_stream(sink, schema, options=_IPC_OPTIONS) as writer:
      for start in range(0, len(rows), _BATCH_ROWS):
        writer.write_batch(to_record_batch(rows[start:start + _BATCH_ROWS], schema))


def read_run(path: str, element_type: Type[tuple]) -> Iterator[tuple]:
  with FileSystems.open(path) as source:
    reader = pa.ipc.open_stream(source)
    for batch in reader:
      yield from iter_rows(batch, element_type)


def merge_sorted_runs(paths: Iterable[str], element_type: Type[tuple],
                      key_fields: Sequence[str]) -> Iterator[tuple]:
  """Rows of all runs in key order. Keys must identify rows (ties would make the
  order depend on the runs' order)."""
  runs = [read_run(path, element_type) for path in sorted(paths)]
  return heapq.merge(*runs, key=_key_function(element_type, key_fields))


def delete_runs(paths: Iterable[str]) -> None:
  paths = list(paths)
  if paths:
    FileSystems.delete(paths)


class _SpillRunsFn(beam.DoFn):
  """Buffers a bounded number of rows, then writes them sorted, one run per shard."""

  def __init__(self, work_dir: str, element_type: Type[tuple],
               key_fields: Sequence[str], shard_of: Optional[Callable[[tuple], int]],
               max_run_bytes: int):
    self._work_dir = work_dir
    self._element_type = element_type
    self._key_fields = tuple(key_fields)
    self._shard_of = shard_of
    self._max_bytes = max_run_bytes

  def setup(self):
    self._key = _key_function(self._element_type, self._key_fields)

  def start_bundle(self):
    self._buffers = defaultdict(list)
    self._buffered = 0

  def process(self, element):
    shard = self._shard_of(element) if self._shard_of else 0
    self._buffers[shard].append(element)
    # Text dominates rows: count its characters, plus a fixed cost per row.
    self._buffered += 200 + sum(len(value) for value in element
                                if isinstance(value, str))
    if self._buffered >= self._max_bytes:
      yield from self._flush()

  def finish_bundle(self):
    for output in self._flush():
      yield WindowedValue(output, MIN_TIMESTAMP, [GlobalWindow()])

  def _flush(self) -> Iterator[Tuple[int, str]]:
    for shard in sorted(self._buffers):
      rows = self._buffers[shard]
      rows.sort(key=self._key)
      path = FileSystems.join(self._work_dir, f"shard-{shard:05d}",
                              f"run-{uuid.uuid4().hex}.arrow")
      write_run(path, rows, self._element_type)
      yield shard, path
    self._buffers = defaultdict(list)
    self._buffered = 0


class SpillSortedRuns(beam.PTransform):
  """PCollection[element_type] -> PCollection[(shard, run_path)].

  A worker buffers about `max_run_bytes` of rows (all shards together) before it
  writes them, sorted by `key_fields`, as one run per shard. Runs from failed
  bundle attempts are never emitted, so retries do not duplicate rows.
  """

  def __init__(self, work_dir: str, element_type: Type[tuple],
               key_fields: Sequence[str], shard_of: Optional[Callable] = None,
               max_run_bytes: int = 16 * 1024 * 1024):
    super().__init__()
    self._fn = _SpillRunsFn(work_dir, element_type, key_fields, shard_of,
                            max_run_bytes)

  def expand(self, rows):
    return rows | "WriteSortedRuns" >> beam.ParDo(self._fn)
