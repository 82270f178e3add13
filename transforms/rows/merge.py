"""Spill, merge and fold a job's rows into its row tables (the job skeleton).

A job describes its rules as a `RowFold`, a plain Python object that sees the
rows one by one in sort order; `WriteMergedRows` does the rest:

    written = rows | "WriteRatings" >> WriteMergedRows(
        lambda: RatingsFold(has_corpus), output_dir, work_dir)
    written["outcomes"], written["dead_letter"], written["stats"]

1. spills the rows into sorted runs under `work_dir` (transforms/io/sorted_runs.py:
   bounded memory, any number of rows);
2. merges every run on one worker (an impulse with the runs as a side input, so
   the merge starts once all runs are written) in `RowFold.sort_key` order; with
   `num_shards` above 1, each of that many shards on a worker of its own, a
   system's rows (a row's first key field where the fold is not by system) in
   the shard a CRC-32 of its name picks, every table written as
   `{stem}-SSSSS-of-NNNNN.parquet` / `.csv` (`table_file_stem`): the shard of
   a row, and so every file's bytes, depend on the data alone, whatever the
   runner or the number of workers;
3. applies the duplicate rule: where `unique` is set, the first unit (a row, or
   the rows sharing `unit`) of each `unique` key is kept and every row of a
   later unit is dead-lettered by `RowFold.duplicate`;
4. hands every kept row to `RowFold.add`, which writes it to the row tables
   (`RowTable`s, written as Parquet and CSV only once complete) and adds it to
   its system's outcomes, and may dead-letter it;
5. rows arrive sorted by system: at each system's end `RowFold.end_system`
   gives that system's outcomes, the composite's main output; then
   `RowFold.stats()` goes to the "stats" output, once.
"""
import contextlib
import zlib
from typing import Any, Dict, Iterable, List, NamedTuple, Optional, Sequence, Tuple, Type

import apache_beam as beam
import pyarrow as pa
from apache_beam.io.filesystems import FileSystems

from autoais.schemas import DeadLetter
from autoais.transforms.io.sorted_runs import RowRef, SpillSortedRuns, merge_run_refs
from autoais.transforms.io.counts import SumCounts
from autoais.transforms.io.tables import TABLE_ROW_GROUP, SortedTableWriter


class RowTable(NamedTuple):
  """One row table of a job: `{stem}.parquet` (and `{stem}.csv`)."""
  stem: str
  schema: pa.Schema
  write_csv: bool = True
  row_group_size: int = TABLE_ROW_GROUP


class RowFold:
  """One job's rules over its merged rows; plain Python, one instance per merge.

  Class attributes a job sets:
    row_type: the element type of the rows (what is spilled);
    merged_type: a NamedTuple of the fields the fold reads as Python values
      (the rest of a row is copied to the tables as Arrow, never made Python);
    sort_key: the fields rows are merged on (system first where by_system);
    run_name: the scratch subdirectory of the runs;
    tables: the RowTables `add` writes to, by stem;
    unique / unit: the duplicate rule (none where unique is None; a unit of
      None is the row itself);
    by_system: whether rows are folded into per-system outcomes;
    spill_schema: the runs' Arrow schema where row_type is a scratch type
      outside the schema registry (None: the registry's).
  """
  row_type: Type[tuple]
  merged_type: Type[tuple]
  sort_key: Sequence[str]
  run_name: str
  tables: Sequence[RowTable] = ()
  unique: Optional[Sequence[str]] = None
  unit: Optional[Sequence[str]] = None
  by_system: bool = True
  spill_schema: Optional[pa.Schema] = None

  def start_system(self, system_name: str) -> None:
    """The rows of `system_name` follow."""

  def add(self, row, ref: RowRef, tables: Dict[str, SortedTableWriter]
          ) -> Iterable[DeadLetter]:
    """Takes a kept row (`row`: merged_type; `ref`: the whole row); yields the
    dead letters of rows it does not write."""
    raise NotImplementedError

  def end_system(self, tables: Dict[str, SortedTableWriter]) -> Iterable[Any]:
    """The finished outcomes of the current system (the main output)."""
    return ()

  def duplicate(self, ref: RowRef, kept) -> DeadLetter:
    """The dead letter of a row of a later unit with a kept unit's unique key
    (`kept`: the first row of the kept unit, merged_type)."""
    raise NotImplementedError

  def stats(self) -> Dict[str, Any]:
    """Counts for run.json, once all rows are folded."""
    return {}


def table_file_stem(stem: str, shard: int, num_shards: int) -> str:
  """The file name, less its suffix, of one shard of a row table: the table's
  own stem where it is written whole (one shard)."""
  if num_shards == 1:
    return stem
  return f"{stem}-{shard:05d}-of-{num_shards:05d}"


def row_table_parts(directory: str, name: str) -> List[str]:
  """The files that hold the row table `name` (e.g. "ratings.parquet") in an
  output directory, local or gs://: [name] where it was written whole, else
  its shards' names in shard order (`{stem}-SSSSS-of-NNNNN{suffix}`); []
  where neither exists."""
  if FileSystems.exists(FileSystems.join(directory, name)):
    return [name]
  stem, dot, suffix = name.rpartition(".")
  digits = "[0-9]" * 5
  pattern = FileSystems.join(directory, f"{stem}-{digits}-of-{digits}{dot}{suffix}")
  return sorted(metadata.path.rsplit("/", 1)[-1]
                for match in FileSystems.match([pattern])
                for metadata in match.metadata_list)


def row_table_files(output_files: Sequence[str], folds: Sequence[Type[RowFold]],
                    num_shards: int) -> Tuple[str, ...]:
  """A job's output file names (OutputDir's list) with the files of the folds'
  row tables named per shard."""
  tables = {f"{table.stem}{suffix}": (table.stem, suffix)
            for fold in folds for table in fold.tables
            for suffix in (".parquet", ".csv")}
  names = []
  for name in output_files:
    if name not in tables:
      names.append(name)
      continue
    stem, suffix = tables[name]
    names.extend(table_file_stem(stem, shard, num_shards) + suffix
                 for shard in range(num_shards))
  return tuple(names)


class _ShardOfField:
  """A row's shard from one string field (picklable, for SpillSortedRuns): a
  CRC-32 of its UTF-8 bytes, the same in every process (Python's own str hash
  is salted per process)."""

  def __init__(self, element_type: Type[tuple], field: str, num_shards: int):
    self._index = element_type._fields.index(field)
    self._num_shards = num_shards

  def __call__(self, row) -> int:
    return zlib.crc32(str(row[self._index]).encode("utf-8")) % self._num_shards


def _fields_of(row, names: Optional[Sequence[str]]):
  return row if names is None else tuple(getattr(row, name) for name in names)


def fold_rows(fold: RowFold, refs: Iterable[RowRef],
              tables: Dict[str, SortedTableWriter]) -> Iterable[Any]:
  """Outcomes, and dead letters tagged "dead_letter", of `fold` over `refs`."""
  make = fold.merged_type._make
  kept = None  # the first row of the unit kept last
  system, started = None, False
  for ref in refs:
    row = make(ref.values)
    if fold.unique is not None:
      new_unit = kept is None or _fields_of(row, fold.unit) != _fields_of(kept, fold.unit)
      if new_unit and kept is not None and (
          _fields_of(row, fold.unique) == _fields_of(kept, fold.unique)):
        yield beam.pvalue.TaggedOutput("dead_letter", fold.duplicate(ref, kept))
        continue
      if new_unit:
        kept = row
    if fold.by_system and (not started or row.system_name != system):
      if started:
        yield from fold.end_system(tables)
      system, started = row.system_name, True
      fold.start_system(system)
    for dead in fold.add(row, ref, tables):
      yield beam.pvalue.TaggedOutput("dead_letter", dead)
  if started:
    yield from fold.end_system(tables)


class _MergeRowsFn(beam.DoFn):

  def __init__(self, make_fold, output_dir: str, num_shards: int):
    self._make_fold = make_fold
    self._output_dir = output_dir
    self._num_shards = num_shards

  def process(self, shard, shard_runs):
    fold = self._make_fold()
    runs = [run for run_shard, run in shard_runs if run_shard == shard]
    with contextlib.ExitStack() as stack:
      tables = {table.stem: stack.enter_context(SortedTableWriter(
                    self._output_dir, table_file_stem(table.stem, shard, self._num_shards),
                    table.schema, table.row_group_size, table.write_csv))
                for table in fold.tables}
      yield from fold_rows(fold, merge_run_refs(runs, fold.merged_type._fields,
                                                fold.sort_key), tables)
    # The runs stay for the scratch directory's removal: a retry of this bundle
    # must find them.
    yield beam.pvalue.TaggedOutput("stats", fold.stats())


class WriteMergedRows(beam.PTransform):
  """PCollection[fold.row_type], or a tuple of them -> {"outcomes",
  "dead_letter", "stats"}.

  `make_fold()` builds the job's RowFold (on the worker, once per merge, so
  once per shard). "stats" holds one dict: the folds' stats summed over the
  shards (SumCounts).
  """

  def __init__(self, make_fold, output_dir: str, work_dir: str, num_shards: int = 1):
    super().__init__()
    self._make_fold = make_fold
    prototype = make_fold()
    self._row_type = prototype.row_type
    self._spill_schema = prototype.spill_schema
    self._sort_key = tuple(prototype.sort_key)
    self._run_dir = FileSystems.join(work_dir, prototype.run_name)
    self._output_dir = output_dir
    self._num_shards = num_shards
    self._shard_of = None if num_shards == 1 else _ShardOfField(
        prototype.row_type,
        "system_name" if prototype.by_system else prototype.sort_key[0], num_shards)

  def expand(self, rows):
    # A tuple of PCollections is spilled part by part, where each is made: a
    # Flatten of them would be held whole by the FnApiRunner.
    parts = rows if isinstance(rows, (tuple, list)) else (rows,)
    runs = tuple(part | ("SpillRuns" if index == 0 else f"SpillRuns{index}") >> (
                     SpillSortedRuns(self._run_dir, self._row_type, self._sort_key,
                                     self._shard_of, schema=self._spill_schema))
                 for index, part in enumerate(parts))
    runs = runs[0] if len(runs) == 1 else runs | "CollectRuns" >> beam.Flatten()
    shards = parts[0].pipeline | "StartTables" >> beam.Create(
        list(range(self._num_shards)))
    if self._num_shards > 1:
      # Each shard's merge on any worker (a fusion break after the Create).
      shards = shards | "SpreadShards" >> beam.Reshuffle()
    merged = shards | "MergeRuns" >> beam.ParDo(
        _MergeRowsFn(self._make_fold, self._output_dir, self._num_shards),
        beam.pvalue.AsList(runs)).with_outputs("dead_letter", "stats", main="outcomes")
    stats = merged.stats
    if self._num_shards > 1:
      stats = stats | "SumShardStats" >> beam.CombineGlobally(SumCounts())
    return {"outcomes": merged.outcomes, "dead_letter": merged.dead_letter,
            "stats": stats}
