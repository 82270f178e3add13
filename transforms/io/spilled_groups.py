"""GroupByKey, CoGroupByKey and Flatten that keep a run's elements on disk, not in memory.

The DirectRunner holds every element that crosses a shuffle in the launching
process, so a job that groups all its pairs or items by key grows with the run.
These composites group through the external sort of transforms/io/sorted_runs.py
instead:

    grouped = {"asked": (asked, more_asked), "known": known} | "JoinAnswers" >> (
        SpilledCoGroupByKey(work_dir))   # (key, {"asked": [...], "known": [...]})
    grouped = pairs | "GroupPairs" >> SpilledGroupByKey(work_dir)  # (key, [...])
    one_each = pairs | "OneOfEachKey" >> SpilledFirstByKey(work_dir)  # (key, value)

1. each input is encoded where it is made: the key by Beam's deterministic coder
   (equal keys, equal bytes; the bytes order the keys), the value pickled (values
   need no order), as one `_Entry` with its input's tag and a shard of the key;
2. each worker spills its entries to sorted runs (SpillSortedRuns), one run per
   shard a spill, so only (shard, RunSlice) pairs are shuffled;
3. each shard's runs are merged in key order and every key's entries come out as
   one group (merge_groups), shard by shard on any worker; a shard of more than
   MAX_MERGE_RUNS runs is first merged in passes, that many runs at a time.
   A key's entries come out input by input, so a consumer of SpillKeyedRuns
   can stream a large input behind a small one (merge_tagged_groups) instead
   of listing it, and SpilledFirstByKey keeps one value of each key.

Each input PCollection is spilled by its own step: a Flatten of several inputs
is a buffer the DirectRunner holds whole, so callers pass a tuple of
PCollections instead of flattening them first. The order of the values within
a group is not defined (as with beam.GroupByKey); the groups are.

Where a consumer needs one PCollection of parts made in different steps (a
model's scores, the cache's and the unscored rows), SpilledFlatten is the Flatten
that is not held whole:

    merged = (scored, cached, unscored) | "MergeScored" >> SpilledFlatten(work_dir)

each part is pickled, a batch of elements at a time, into files where it is
made; only the files' paths cross to the step that reads them back, one file at
a time, into the consumers fused with it.
"""
import itertools
import operator
import pickle
import uuid
import zlib
from typing import (Any, Callable, Dict, Iterable, Iterator, List, NamedTuple,
                    Optional, Sequence, Tuple)

import apache_beam as beam
import pyarrow as pa
from apache_beam.io.filesystems import FileSystems

from apache_beam.io.filesystem import CompressionTypes
from apache_beam.transforms.window import GlobalWindow
from apache_beam.typehints import Union
from apache_beam.utils.timestamp import MIN_TIMESTAMP
from apache_beam.utils.windowed_value import WindowedValue

from autoais.transforms.io.sorted_runs import (MAX_MERGE_RUNS, RunSlice, SpillSortedRuns,
                                               merge_sorted_runs)

DEFAULT_SHARDS = 16
DEFAULT_MAX_RUN_BYTES = 16 * 1024 * 1024

_KEY_CODER = beam.coders.FastPrimitivesCoder().as_deterministic_coder(
    "the key of a spilled group")


class _Entry(NamedTuple):
  """One (key, value) of one input, encoded for a run file."""
  shard: int
  key: bytes
  tag: int
  value: bytes


_ENTRY_SCHEMA = pa.schema([
    pa.field("shard", pa.int32(), nullable=False),
    pa.field("key", pa.binary(), nullable=False),
    pa.field("tag", pa.int32(), nullable=False),
    pa.field("value", pa.binary(), nullable=False),
])
# Entries sort by key, then input: a key's entries come out input by input (in
# the order of the tags), so a consumer can read a small input (an entity's
# record) before streaming a large one (the rows that ask for it).
_ENTRY_KEY = ("key", "tag")


def _shard_of_entry(entry: _Entry) -> int:
  return entry.shard


class _EncodeEntryFn(beam.DoFn):
  """(key, value) -> _Entry of input `tag`, in shard `key_shard(key)` or, without
  one, a hash of the key's bytes."""

  def __init__(self, tag: int, num_shards: int,
               key_shard: Optional[Callable[[Any], int]]):
    self._tag = tag
    self._num_shards = num_shards
    self._key_shard = key_shard

  def process(self, keyed):
    key, value = keyed
    encoded = _KEY_CODER.encode(key)
    shard = (self._key_shard(key) if self._key_shard is not None
             else zlib.crc32(encoded)) % self._num_shards
    yield _Entry(shard, encoded, self._tag,
                 pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))


def merge_tagged_groups(runs: Iterable[RunSlice], max_runs: int = MAX_MERGE_RUNS
                        ) -> Iterator[Tuple[Any, Iterator[Tuple[int, Any]]]]:
  """(key, iterator of (input index, value)) for each key of the run slices
  (one shard's), in the order of the keys' encoded bytes, a key's values input
  by input. Each iterator streams from the runs: read it before the next key
  (as itertools.groupby), and a group of any size is never held whole. At most
  `max_runs` runs are read at once (sorted_runs.merge_run_refs: more are merged
  in passes, whose files are deleted once read, or when the merge stops early)."""
  entries = merge_sorted_runs(runs, _Entry, _ENTRY_KEY, max_runs)
  try:
    for key, group in itertools.groupby(entries, key=operator.attrgetter("key")):
      yield _KEY_CODER.decode(key), (
          (entry.tag, pickle.loads(entry.value)) for entry in group)
  finally:
    entries.close()


def merge_groups(runs: Iterable[RunSlice], num_tags: int,
                 max_runs: int = MAX_MERGE_RUNS) -> Iterator[Tuple[Any, List[list]]]:
  """(key, [values of input 0, values of input 1, ...]) for each key of the run
  slices (one shard's), in the order of the keys' encoded bytes (as
  merge_tagged_groups, each group held whole)."""
  for key, tagged in merge_tagged_groups(runs, max_runs):
    values = [[] for _ in range(num_tags)]
    for tag, value in tagged:
      values[tag].append(value)
    yield key, values


class SpillKeyedRuns(beam.PTransform):
  """{tag: PCollection[(key, value)] or a tuple of them} -> PCollection[(shard,
  [RunSlice])], one element per shard that holds entries; merge_groups(runs,
  len(tags)) reads a shard's groups back, values in the order of `tags`.

  For a consumer that merges a shard its own way (with a side input, say);
  SpilledGroupByKey and SpilledCoGroupByKey are the plain groupings.
  `key_shard(key)` picks a key's shard (all keys of a shard are merged on one
  worker); by default a hash of the key spreads them.
  """

  def __init__(self, work_dir: str, tags: Sequence[str],
               num_shards: int = DEFAULT_SHARDS,
               key_shard: Optional[Callable[[Any], int]] = None,
               max_run_bytes: int = DEFAULT_MAX_RUN_BYTES):
    super().__init__()
    self._work_dir = work_dir
    self._tags = tuple(tags)
    self._num_shards = num_shards
    self._key_shard = key_shard
    self._max_run_bytes = max_run_bytes

  def expand(self, inputs: Dict[str, Any]):
    runs = []
    for tag_index, tag in enumerate(self._tags):
      parts = inputs[tag]
      for part_index, part in enumerate(parts if isinstance(parts, (tuple, list))
                                        else (parts,)):
        name = f"{tag.title().replace('_', '')}{part_index}"
        runs.append(part
                    | f"Encode{name}" >> beam.ParDo(_EncodeEntryFn(
                        tag_index, self._num_shards, self._key_shard))
                    | f"Spill{name}" >> SpillSortedRuns(
                        self._work_dir, _Entry, _ENTRY_KEY, _shard_of_entry,
                        self._max_run_bytes, schema=_ENTRY_SCHEMA))
    return (tuple(runs)
            | "CollectRuns" >> beam.Flatten()
            | "GroupRunsByShard" >> beam.GroupByKey())


class _MergeGroupsFn(beam.DoFn):

  def __init__(self, tags: Optional[Sequence[str]]):
    self._tags = tags

  def process(self, shard_runs):
    _, runs = shard_runs
    for key, values in merge_groups(runs, len(self._tags) if self._tags else 1):
      yield key, (dict(zip(self._tags, values)) if self._tags else values[0])


class SpilledCoGroupByKey(beam.PTransform):
  """{tag: PCollection[(key, value)] or a tuple of them} -> PCollection[(key,
  {tag: [values]})], as beam.CoGroupByKey, through runs under `work_dir`
  (max_run_bytes: how much a worker buffers before it writes a run)."""

  def __init__(self, work_dir: str, num_shards: int = DEFAULT_SHARDS,
               max_run_bytes: int = DEFAULT_MAX_RUN_BYTES):
    super().__init__()
    self._work_dir = work_dir
    self._num_shards = num_shards
    self._max_run_bytes = max_run_bytes

  def expand(self, inputs: Dict[str, Any]):
    tags = tuple(sorted(inputs))
    return (inputs
            | "SpillByKey" >> SpillKeyedRuns(self._work_dir, tags, self._num_shards,
                                             max_run_bytes=self._max_run_bytes)
            | "MergeGroups" >> beam.ParDo(_MergeGroupsFn(tags)))


class _FirstOfGroupsFn(beam.DoFn):

  def process(self, shard_runs):
    _, runs = shard_runs
    for key, tagged in merge_tagged_groups(runs):
      yield key, next(tagged)[1]


class SpilledGroupByKey(SpilledCoGroupByKey):
  """PCollection[(key, value)] or a tuple of them -> PCollection[(key, [values])],
  as beam.GroupByKey, through runs under `work_dir`."""

  def _merge_fn(self) -> beam.DoFn:
    return _MergeGroupsFn(None)

  def expand(self, inputs):
    return ({"values": inputs}
            | "SpillByKey" >> SpillKeyedRuns(self._work_dir, ("values",),
                                             self._num_shards,
                                             max_run_bytes=self._max_run_bytes)
            | "MergeGroups" >> beam.ParDo(self._merge_fn()))


class SpilledFirstByKey(SpilledGroupByKey):
  """PCollection[(key, value)] or a tuple of them -> PCollection[(key, value)]:
  one value of each key (the one SpilledGroupByKey would list first), through
  runs under `work_dir`. The key's other values are skipped in the runs, never
  read into memory: a key that a million rows share costs one value."""

  def _merge_fn(self) -> beam.DoFn:
    return _FirstOfGroupsFn()


# Elements pickled together (one frame of a spilled file): pickling a batch
# shares what its elements share (one score fanned out to many rows is pickled
# once a batch) and costs fewer calls; files close at about this many bytes.
_FLATTEN_BATCH = 512
DEFAULT_MAX_FILE_BYTES = 64 * 1024 * 1024


class _SpillPickledFn(beam.DoFn):
  """Elements -> the paths of files holding them, pickled _FLATTEN_BATCH at a
  time; a path is emitted once its file is closed, so a failed bundle's files
  are never read."""

  def __init__(self, work_dir: str, max_file_bytes: int):
    self._work_dir = work_dir
    self._max_file_bytes = max_file_bytes

  def start_bundle(self):
    self._batch = []
    self._sink = None
    self._path = None
    self._written = 0

  def process(self, element):
    self._batch.append(element)
    if len(self._batch) == _FLATTEN_BATCH:
      yield from self._write()

  def finish_bundle(self):
    for path in self._write(close=True):
      yield WindowedValue(path, MIN_TIMESTAMP, [GlobalWindow()])

  def _write(self, close: bool = False) -> Iterator[str]:
    if self._batch:
      if self._sink is None:
        self._path = FileSystems.join(self._work_dir,
                                      f"flatten-{uuid.uuid4().hex}.pickle")
        self._sink = FileSystems.create(
            self._path, compression_type=CompressionTypes.UNCOMPRESSED)
        self._written = 0
      data = pickle.dumps(self._batch, protocol=pickle.HIGHEST_PROTOCOL)
      self._sink.write(data)
      self._written += len(data)
      self._batch = []
    if self._sink is not None and (close or self._written >= self._max_file_bytes):
      self._sink.close()
      self._sink = None
      yield self._path


def read_spilled(path: str) -> Iterator[Any]:
  """The elements of one file of _SpillPickledFn, in the order written."""
  with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED
                        ) as source:
    while True:
      try:
        batch = pickle.load(source)
      except EOFError:
        return
      yield from batch


class SpilledFlatten(beam.PTransform):
  """A tuple of PCollections -> one PCollection of all their elements, as
  beam.Flatten, through pickled files under `work_dir` (see the module
  docstring): the FnApiRunner holds a Flatten of parts made in different stages
  whole, where this holds one batch per part and reads one file at a time. The
  order of the elements is not defined (as with beam.Flatten)."""

  def __init__(self, work_dir: str, max_file_bytes: int = DEFAULT_MAX_FILE_BYTES):
    super().__init__()
    self._work_dir = work_dir
    self._max_file_bytes = max_file_bytes

  def expand(self, parts):
    parts = tuple(parts)
    paths = tuple(part | f"SpillPart{index}" >> beam.ParDo(
        _SpillPickledFn(self._work_dir, self._max_file_bytes))
                  for index, part in enumerate(parts))
    return (paths
            | "CollectSpilledFiles" >> beam.Flatten()
            | "ReadSpilledFiles" >> beam.FlatMap(read_spilled).with_output_types(
                Union[tuple(part.element_type for part in parts)]))
