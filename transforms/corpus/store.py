"""The Parquet passage corpus: its layout, how to write it, how to join against it.

Layout of a corpus directory (written by `autoais build-corpus`):

    corpus.json                       manifest, written last (completion marker)
    passages-SSSSS-of-NNNNN.parquet   shard S: passages whose id hashes to S
    articles-SSSSS-of-NNNNN.parquet   article index shard S: (article, passage id)
                                      of the articles whose key hashes to S
    dead_letter.jsonl                 source lines that were not passages

A passage lives in shard `blake2b-64(id) mod N`. Each shard is sorted by id and
cut into small row groups whose `id` statistics (min/max) sit in the footer, so a
lookup of one id reads one footer and one row group. `LookupPassages` joins K
predictions against N passages reading little more than the K needed row groups
when K << N; `ShuffleJoinPassages` reads the whole corpus once and joins with a
CoGroupByKey, the better plan on Dataflow when K is a large fraction of N.
`SortedJoinPassages` spills the values to sorted runs by shard and id, then
merges each shard's values against the shard in id order: every row group it
needs is read once, however many values cite it and in whatever order, in
bounded memory (for K values spread over the whole corpus, where a lookup's
cache would thrash).

The article index lists the passages of each article (the id up to its first
`#`: `http://en.wikipedia.org/wiki/Jason_Flemyng#...` belongs to
`http://en.wikipedia.org/wiki/Jason_Flemyng`), laid out like the passages: hash
shards of (article, passage id) sorted by article, small row groups with
`article` statistics. `LookupArticles` finds an article's passages reading one
footer and the row groups that hold them, so its cost grows with the article,
not with the corpus. corpus.json records it under "articles"; corpora built
before it have no such entry, and `read_article_index` refuses them.
"""
import bisect
import collections
import hashlib
import io
import json
import struct
from typing import Dict, List, Optional, Tuple

import apache_beam as beam
import pyarrow as pa
import pyarrow.parquet as pq
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems
from apache_beam.transforms.window import GlobalWindow
from apache_beam.utils.timestamp import MIN_TIMESTAMP
from apache_beam.utils.windowed_value import WindowedValue

from autoais.schemas import (ARTICLE_ENTRY_SCHEMA, CORPUS_PASSAGE_SCHEMA, ArticleEntry,
                     CorpusRecord, DeadLetter, REJECTED)
from autoais.schemas.errors import CorpusError
from autoais.transforms.io.sorted_runs import SpillSortedRuns, merge_sorted_runs

MANIFEST = "corpus.json"
FORMAT = "autoais-corpus/1"
HASH = "blake2b-64"
DEFAULT_ROW_GROUP_SIZE = 32
# Index entries are small (about 100 bytes): larger groups than the passages'.
ARTICLE_ROW_GROUP_SIZE = 256
ARTICLE_SEPARATOR = "#"


def shard_of(passage_id: str, num_shards: int) -> int:
  digest = hashlib.blake2b(passage_id.encode("utf-8"), digest_size=8).digest()
  return int.from_bytes(digest, "big") % num_shards


def shard_file_name(shard: int, num_shards: int) -> str:
  return f"passages-{shard:05d}-of-{num_shards:05d}.parquet"


def article_of(passage_id: str) -> str:
  """The article a passage belongs to: its id up to the first '#'."""
  return passage_id.split(ARTICLE_SEPARATOR, 1)[0]


def article_shard_file_name(shard: int, num_shards: int) -> str:
  return f"articles-{shard:05d}-of-{num_shards:05d}.parquet"


def read_manifest(corpus_dir: str) -> dict:
  path = FileSystems.join(corpus_dir, MANIFEST)
  if not FileSystems.exists(path):
    raise CorpusError(
        f"{corpus_dir}: not a corpus directory ({MANIFEST} is missing; build one "
        "with `autoais build-corpus`)")
  with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as f:
    manifest = json.loads(f.read().decode("utf-8"))
  if manifest.get("format") != FORMAT:
    raise CorpusError(f"{path}: unsupported corpus format {manifest.get('format')!r}")
  return manifest


def read_article_index(corpus_dir: str) -> dict:
  """The "articles" entry of a corpus manifest; CorpusError for a corpus built
  without an article index."""
  manifest = read_manifest(corpus_dir)
  articles = manifest.get("articles")
  if not isinstance(articles, dict) or "shards" not in articles:
    raise CorpusError(
        f"{corpus_dir}: this corpus has no article index (it was built before "
        "build-corpus wrote one); rebuild it with `autoais build-corpus` to use "
        "--candidates_from article")
  return articles


# ----------------------------------------------------------------------------
# Writing.


class CorpusRecordShard:
  """Shard function for CorpusRecord elements (picklable, for SpillSortedRuns)."""

  def __init__(self, num_shards: int):
    self.num_shards = num_shards

  def __call__(self, record: CorpusRecord) -> int:
    return shard_of(record.id, self.num_shards)


class ShardWriter:
  """Writes one corpus shard, to an open binary sink, from records sorted by (id,
  source_file, source_line). The first record of an id wins; later ones are
  reported as duplicates."""

  def __init__(self, sink, row_group_size: int):
    self.row_group_size = row_group_size
    self.num_rows = 0
    self.num_row_groups = 0
    self._ids: List[str] = []
    self._contents: List[str] = []
    self._last: Optional[CorpusRecord] = None
    self._writer = pq.ParquetWriter(
        sink, CORPUS_PASSAGE_SCHEMA, compression="zstd", use_dictionary=False,
        write_statistics=["id"], store_schema=False,
        sorting_columns=[pq.SortingColumn(0)])

  def add(self, record: CorpusRecord) -> Optional[DeadLetter]:
    if self._last is not None and record.id == self._last.id:
      first = self._last
      return DeadLetter(
          record.source_file, record.source_line, REJECTED, "duplicate_id", "id",
          f"{record.source_file}:{record.source_line}: field 'id': passage id "
          f"{record.id!r} already defined at {first.source_file}:{first.source_line}",
          json.dumps({"id": record.id}, ensure_ascii=False))
    self._last = record
    self._ids.append(record.id)
    self._contents.append(record.contents)
    if len(self._ids) >= self.row_group_size:
      self._write_row_group()
    return None

  def _write_row_group(self):
    if not self._ids:
      return
    table = pa.Table.from_arrays(
        [pa.array(self._ids, pa.string()), pa.array(self._contents, pa.string())],
        schema=CORPUS_PASSAGE_SCHEMA)
    self._writer.write_table(table, row_group_size=len(self._ids))
    self.num_rows += len(self._ids)
    self.num_row_groups += 1
    self._ids, self._contents = [], []

  def close(self) -> None:
    """Writes the last row group and the footer (the sink stays open)."""
    self._write_row_group()
    self._writer.close()


# ----------------------------------------------------------------------------
# Reading: point lookups.


class _CountingFile(io.RawIOBase):
  """A read-only file wrapper that counts the bytes read through it."""

  def __init__(self, raw):
    super().__init__()
    self._raw = raw
    self.bytes_read = 0

  def readable(self):
    return True

  def seekable(self):
    return True

  def read(self, size=-1):
    data = self._raw.read(size)
    self.bytes_read += len(data)
    return data

  def readinto(self, buffer):
    data = self.read(len(buffer))
    buffer[:len(data)] = data
    return len(data)

  def seek(self, offset, whence=io.SEEK_SET):
    return self._raw.seek(offset, whence)

  def tell(self):
    return self._raw.tell()

  def close(self):
    self._raw.close()
    super().close()


class ShardReader:
  """Point lookups in one shard: one footer read, then only the row groups needed.

  The footer is read with two exact reads (length, then metadata) rather than
  Parquet's speculative 64 KiB tail read, which would read most of a small shard.
  `columns`: the sort key column (with statistics), then the value column.
  """

  def __init__(self, path: str, columns: Tuple[str, str] = ("id", "contents")):
    self._columns = list(columns)
    self._file = _CountingFile(
        FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED))
    self._file.seek(-8, io.SEEK_END)
    tail = self._file.read(8)
    if tail[4:] != b"PAR1":
      raise CorpusError(f"{path}: not a Parquet file (a truncated or damaged corpus "
                        "shard? rebuild the corpus with `autoais build-corpus`)")
    (footer_length,) = struct.unpack("<I", tail[:4])
    self._file.seek(-8 - footer_length, io.SEEK_END)
    footer = self._file.read(footer_length)
    metadata = pq.read_metadata(io.BytesIO(b"PAR1" + footer + tail))
    self._parquet = pq.ParquetFile(self._file, metadata=metadata, pre_buffer=False)
    self._first_ids = []
    self._last_ids = []
    for index in range(metadata.num_row_groups):
      statistics = metadata.row_group(index).column(0).statistics
      self._first_ids.append(statistics.min)
      self._last_ids.append(statistics.max)

  @property
  def bytes_read(self) -> int:
    return self._file.bytes_read

  def row_group_of(self, passage_id: str) -> Optional[int]:
    index = bisect.bisect_right(self._first_ids, passage_id) - 1
    if index < 0 or passage_id > self._last_ids[index]:
      return None
    return index

  def row_groups_holding(self, key: str) -> List[int]:
    """Every row group whose key range holds `key` (a key may span groups)."""
    first = bisect.bisect_left(self._last_ids, key)
    end = bisect.bisect_right(self._first_ids, key)
    return list(range(first, end))

  def read_row_groups(self, indexes: List[int]) -> List[Tuple[List[str], List[str]]]:
    """(keys, values) of each row group, read in one call."""
    table = self._parquet.read_row_groups(indexes, columns=self._columns)
    ids = table.column(self._columns[0]).to_pylist()
    contents = table.column(self._columns[1]).to_pylist()
    groups, start = [], 0
    for index in indexes:
      end = start + self._parquet.metadata.row_group(index).num_rows
      groups.append((ids[start:end], contents[start:end]))
      start = end
    return groups

  def close(self):
    self._file.close()


class _RowGroupCache:
  """Least-recently-used decoded row groups, bounded by their Arrow size."""

  def __init__(self, max_bytes: int):
    self._max_bytes = max_bytes
    self._bytes = 0
    self._entries: "collections.OrderedDict" = collections.OrderedDict()

  def get(self, key):
    entry = self._entries.get(key)
    if entry is not None:
      self._entries.move_to_end(key)
    return entry

  def put(self, key, ids, contents):
    size = sum(len(i) + len(c) + 100 for i, c in zip(ids, contents))
    self._entries[key] = (ids, contents, size)
    self._bytes += size
    while self._bytes > self._max_bytes and len(self._entries) > 1:
      _, (_, _, evicted) = self._entries.popitem(last=False)
      self._bytes -= evicted


JOIN_STATS_KEYS = ("lookups", "found", "row_groups_read", "bytes_read", "shards_opened")


class _ShardedLookupFn(beam.DoFn):
  """Buffers keyed elements within a bundle, then resolves their keys shard by
  shard (one reader per shard, opened once per DoFn instance), with per-bundle
  read statistics on the 'stats' output. A None key passes through with None.

  Subclasses set STATS_KEYS, STAT_PREFIX (of the lookups / shards_opened /
  bytes_read counters) and COLUMNS (ShardReader's), read their shard index in
  `_index()` and resolve one shard's (key, value) items in `_resolve()`."""

  STATS_KEYS: Tuple[str, ...] = ()
  STAT_PREFIX = ""
  COLUMNS: Tuple[str, str] = ("id", "contents")

  def __init__(self, corpus_dir: str, key_of, batch_size: int):
    self._corpus_dir = corpus_dir
    self._key_of = key_of
    self._batch_size = batch_size

  def _index(self) -> dict:
    raise NotImplementedError

  def _resolve(self, shard: int, reader: ShardReader, items):
    raise NotImplementedError

  def setup(self):
    index = self._index()
    self._num_shards = index["num_shards"]
    self._shard_paths = {
        shard["shard"]: FileSystems.join(self._corpus_dir, shard["path"])
        for shard in index["shards"] if shard["num_rows"]}
    self._readers: Dict[int, ShardReader] = {}
    self._stats = collections.Counter()

  def start_bundle(self):
    self._pending: List[Tuple[str, object]] = []

  def process(self, element):
    self._pending.append((self._key_of(element), element))
    if len(self._pending) >= self._batch_size:
      yield from self._flush()

  def finish_bundle(self):
    for output in self._flush():
      yield WindowedValue(output, MIN_TIMESTAMP, [GlobalWindow()])
    if self._stats:
      stats = {key: self._stats[key] for key in self.STATS_KEYS}
      self._stats = collections.Counter()
      yield beam.pvalue.TaggedOutput(
          "stats", WindowedValue(stats, MIN_TIMESTAMP, [GlobalWindow()]))

  def teardown(self):
    for reader in self._readers.values():
      reader.close()

  def _reader(self, shard: int) -> Optional[ShardReader]:
    reader = self._readers.get(shard)
    if reader is None and shard in self._shard_paths:
      reader = ShardReader(self._shard_paths[shard], self.COLUMNS)
      self._readers[shard] = reader
      self._stats[self.STAT_PREFIX + "shards_opened"] += 1
      self._stats[self.STAT_PREFIX + "bytes_read"] += reader.bytes_read
    return reader

  def _flush(self):
    pending, self._pending = self._pending, []
    by_shard = collections.defaultdict(list)
    for key, value in pending:
      if key is None:
        yield value, None
      else:
        by_shard[shard_of(key, self._num_shards)].append((key, value))
    for shard in sorted(by_shard):
      reader = self._reader(shard)
      items = by_shard[shard]
      self._stats[self.STAT_PREFIX + "lookups"] += len(items)
      if reader is None:
        for _, value in items:
          yield value, None
      else:
        yield from self._resolve(shard, reader, items)


class _LookupPassagesFn(_ShardedLookupFn):
  """Passage ids to their contents, through a row-group cache."""

  STATS_KEYS = JOIN_STATS_KEYS

  def __init__(self, corpus_dir: str, key_of, batch_size: int, cache_bytes: int):
    super().__init__(corpus_dir, key_of, batch_size)
    self._cache_bytes = cache_bytes

  def _index(self) -> dict:
    return read_manifest(self._corpus_dir)

  def setup(self):
    super().setup()
    self._cache = _RowGroupCache(self._cache_bytes)

  def _resolve(self, shard, reader, items):
    located = [(reader.row_group_of(passage_id), passage_id, value)
               for passage_id, value in items]
    groups = self._row_groups(shard, reader, {row_group for row_group, _, _ in located
                                              if row_group is not None})
    found = 0
    for row_group, passage_id, value in located:
      contents = None
      if row_group is not None:
        ids, texts = groups[row_group]
        position = bisect.bisect_left(ids, passage_id)
        if position < len(ids) and ids[position] == passage_id:
          contents = texts[position]
          found += 1
      yield value, contents
    self._stats["found"] += found

  def _row_groups(self, shard: int, reader: ShardReader, wanted) -> dict:
    """{row group: (ids, contents)}, from the cache or read in one call."""
    groups, missing = {}, []
    for row_group in sorted(wanted):
      cached = self._cache.get((shard, row_group))
      if cached is None:
        missing.append(row_group)
      else:
        groups[row_group] = cached[:2]
    if missing:
      before = reader.bytes_read
      for row_group, (ids, contents) in zip(missing, reader.read_row_groups(missing)):
        self._cache.put((shard, row_group), ids, contents)
        groups[row_group] = (ids, contents)
      self._stats["row_groups_read"] += len(missing)
      self._stats["bytes_read"] += reader.bytes_read - before
    return groups


class LookupPassages(beam.PTransform):
  """PCollection[value] -> PCollection[(value, contents or None)] where
  `key_of(value)` is the passage id to look up, with a 'stats' output of
  per-bundle read statistics (JOIN_STATS_KEYS).

  A None id passes through unlooked-up, so callers need no Flatten (which the
  FnApiRunner materialises) to route rows around the join.
  """

  def __init__(self, corpus_dir: str, key_of, batch_size: int = 4096,
               cache_bytes: int = 256 * 1024 * 1024):
    super().__init__()
    self._fn = _LookupPassagesFn(corpus_dir, key_of, batch_size, cache_bytes)

  def expand(self, values):
    return values | "LookUpShardRowGroups" >> beam.ParDo(self._fn).with_outputs(
        "stats", main="joined")


# ----------------------------------------------------------------------------
# Reading: sorted merge join.

_NOT_LOOKED_UP = -1  # the "shard" of values whose key is None


class _ShardOfKey:
  """Shard function for SpillSortedRuns: the passage shard of key_of(value)."""

  def __init__(self, key_of, num_shards: int):
    self._key_of = key_of
    self._num_shards = num_shards

  def __call__(self, value) -> int:
    passage_id = self._key_of(value)
    if passage_id is None:
      return _NOT_LOOKED_UP
    return shard_of(passage_id, self._num_shards)


class _MergeJoinShardFn(beam.DoFn):
  """(shard, sorted runs of values) -> (value, contents or None), reading the
  shard's row groups in id order, each at most once."""

  def __init__(self, corpus_dir: str, element_type, sort_key, key_of):
    self._corpus_dir = corpus_dir
    self._element_type = element_type
    self._sort_key = tuple(sort_key)
    self._key_of = key_of

  def setup(self):
    manifest = read_manifest(self._corpus_dir)
    self._shard_paths = {
        shard["shard"]: FileSystems.join(self._corpus_dir, shard["path"])
        for shard in manifest["shards"] if shard["num_rows"]}

  def process(self, shard_runs):
    shard, runs = shard_runs
    values = merge_sorted_runs(list(runs), self._element_type, self._sort_key)
    stats = collections.Counter()
    if shard == _NOT_LOOKED_UP or shard not in self._shard_paths:
      for value in values:
        stats["lookups"] += shard != _NOT_LOOKED_UP
        yield value, None
    else:
      reader = ShardReader(self._shard_paths[shard])
      try:
        stats["shards_opened"] += 1
        current, ids, contents = None, [], []
        for value in values:
          passage_id = self._key_of(value)
          stats["lookups"] += 1
          row_group = reader.row_group_of(passage_id)
          if row_group is not None and row_group != current:
            ((ids, contents),) = reader.read_row_groups([row_group])
            current = row_group
            stats["row_groups_read"] += 1
          found = None
          if row_group is not None:
            position = bisect.bisect_left(ids, passage_id)
            if position < len(ids) and ids[position] == passage_id:
              found = contents[position]
              stats["found"] += 1
          yield value, found
        stats["bytes_read"] += reader.bytes_read
      finally:
        reader.close()
    yield beam.pvalue.TaggedOutput("stats", {key: stats[key] for key in JOIN_STATS_KEYS})


class SortedJoinPassages(beam.PTransform):
  """PCollection[element_type] -> {"joined": PCollection[(value, contents or
  None)], "stats": ...}: the contract of LookupPassages for values of a schema'd
  element type (schemas/), joined by a sorted merge (module docstring).
  `sort_key`: fields whose first is the passage id `key_of` returns for values
  to look up (None: passed through with None). Runs go under `work_dir`."""

  def __init__(self, corpus_dir: str, work_dir: str, element_type, sort_key, key_of):
    super().__init__()
    self._corpus_dir = corpus_dir
    self._work_dir = work_dir
    self._element_type = element_type
    self._sort_key = tuple(sort_key)
    self._key_of = key_of

  def expand(self, values):
    manifest = read_manifest(self._corpus_dir)
    joined = (
        values
        | "SpillByPassageShard" >> SpillSortedRuns(
            self._work_dir, self._element_type, self._sort_key,
            shard_of=_ShardOfKey(self._key_of, manifest["num_shards"]))
        | "GroupRunsByPassageShard" >> beam.GroupByKey()
        | "MergeJoinShards" >> beam.ParDo(_MergeJoinShardFn(
            self._corpus_dir, self._element_type, self._sort_key,
            self._key_of)).with_outputs("stats", main="joined"))
    return {"joined": joined.joined, "stats": joined.stats}


# ----------------------------------------------------------------------------
# The article index.


def article_entry(record: CorpusRecord) -> ArticleEntry:
  return ArticleEntry(article_of(record.id), record.id)


class ArticleEntryShard:
  """Shard function for ArticleEntry elements: by article (picklable)."""

  def __init__(self, num_shards: int):
    self.num_shards = num_shards

  def __call__(self, entry: ArticleEntry) -> int:
    return shard_of(entry.article, self.num_shards)


class ArticleShardWriter:
  """Writes one article index shard from entries sorted by (article, passage
  id); a repeated entry (a repeated passage id) is written once."""

  def __init__(self, sink, row_group_size: int = ARTICLE_ROW_GROUP_SIZE):
    self.row_group_size = row_group_size
    self.num_rows = 0
    self.num_row_groups = 0
    self._rows: List[ArticleEntry] = []
    self._last: Optional[ArticleEntry] = None
    self._writer = pq.ParquetWriter(
        sink, ARTICLE_ENTRY_SCHEMA, compression="zstd", use_dictionary=False,
        write_statistics=["article"], store_schema=False,
        sorting_columns=[pq.SortingColumn(0), pq.SortingColumn(1)])

  def add(self, entry: ArticleEntry) -> None:
    if entry == self._last:
      return
    self._last = entry
    self._rows.append(entry)
    if len(self._rows) >= self.row_group_size:
      self._write_row_group()

  def _write_row_group(self):
    if not self._rows:
      return
    articles, ids = zip(*self._rows)
    table = pa.Table.from_arrays([pa.array(articles, pa.string()),
                                  pa.array(ids, pa.string())],
                                 schema=ARTICLE_ENTRY_SCHEMA)
    self._writer.write_table(table, row_group_size=len(self._rows))
    self.num_rows += len(self._rows)
    self.num_row_groups += 1
    self._rows = []

  def close(self) -> None:
    self._write_row_group()
    self._writer.close()


ARTICLE_STATS_KEYS = ("article_lookups", "articles_found", "article_passages",
                      "article_row_groups_read", "article_bytes_read",
                      "article_shards_opened")


class _LookupArticlesFn(_ShardedLookupFn):
  """Resolves article keys to their passage ids, shard by shard, one footer per
  shard and only the row groups that hold the articles."""

  STATS_KEYS = ARTICLE_STATS_KEYS
  STAT_PREFIX = "article_"
  COLUMNS = ("article", "passage_id")

  def _index(self) -> dict:
    return read_article_index(self._corpus_dir)

  def _resolve(self, shard, reader, items):
    located = [(reader.row_groups_holding(article), article, value)
               for article, value in items]
    wanted = sorted({group for groups, _, _ in located for group in groups})
    groups = {}
    if wanted:
      before = reader.bytes_read
      groups = dict(zip(wanted, reader.read_row_groups(wanted)))
      self._stats["article_row_groups_read"] += len(wanted)
      self._stats["article_bytes_read"] += reader.bytes_read - before
    for row_groups, article, value in located:
      passages = []
      for group in row_groups:
        articles, ids = groups[group]
        start = bisect.bisect_left(articles, article)
        end = bisect.bisect_right(articles, article)
        passages.extend(ids[start:end])
      if passages:
        self._stats["articles_found"] += 1
        self._stats["article_passages"] += len(passages)
      yield value, passages or None


class LookupArticles(beam.PTransform):
  """PCollection[value] -> PCollection[(value, [passage id, ...] sorted, or
  None)] where `key_of(value)` is an article key (article_of), with a 'stats'
  output (ARTICLE_STATS_KEYS). A None key passes through with None. Values are
  read in batches within a bundle; every article costs one or a few row groups
  of its shard (groups are cached for the batch only: articles are spread)."""

  def __init__(self, corpus_dir: str, key_of, batch_size: int = 4096):
    super().__init__()
    read_article_index(corpus_dir)
    self._fn = _LookupArticlesFn(corpus_dir, key_of, batch_size)

  def expand(self, values):
    return values | "LookUpArticleRowGroups" >> beam.ParDo(self._fn).with_outputs(
        "stats", main="joined")


# ----------------------------------------------------------------------------
# Reading: shuffle join.


class _RouteUnkeyedFn(beam.DoFn):

  def __init__(self, key_of):
    self._key_of = key_of

  def process(self, value):
    passage_id = self._key_of(value)
    if passage_id is None:
      yield beam.pvalue.TaggedOutput("unkeyed", (value, None))
    else:
      yield passage_id, value


class _EmitJoinedFn(beam.DoFn):

  def process(self, grouped):
    _, sides = grouped
    contents = list(sides["passage"])
    found = contents[0] if contents else None
    for value in sides["value"]:
      yield value, found


class ShuffleJoinPassages(beam.PTransform):
  """Same contract as LookupPassages; reads every shard once and CoGroupByKeys."""

  def __init__(self, corpus_dir: str, key_of):
    super().__init__()
    self._corpus_dir = corpus_dir
    self._key_of = key_of

  def expand(self, values):
    routed = values | "KeyByPassageId" >> beam.ParDo(
        _RouteUnkeyedFn(self._key_of)).with_outputs("unkeyed", main="keyed")
    keyed = routed.keyed
    manifest = read_manifest(self._corpus_dir)
    # The shards the manifest lists, not a glob: a directory may hold files
    # that are not this corpus's.
    shards = [FileSystems.join(self._corpus_dir, shard["path"])
              for shard in manifest["shards"] if shard["num_rows"]]
    passages = (
        keyed.pipeline
        | "ListCorpusShards" >> beam.Create(shards)
        | "ReadCorpusShards" >> beam.io.ReadAllFromParquet(columns=["id", "contents"])
        | "KeyPassagesById" >> beam.Map(lambda row: (row["id"], row["contents"])))
    joined = (({"value": keyed, "passage": passages}
               | "CoGroupByPassageId" >> beam.CoGroupByKey()
               | "EmitJoined" >> beam.ParDo(_EmitJoinedFn())),
              routed.unkeyed) | "MergeUnkeyed" >> beam.Flatten()
    stats = (keyed.pipeline
             | "CreateShuffleStats" >> beam.Create([{
                 "bytes_read": manifest["total_bytes"],
                 "shards_opened": len([s for s in manifest["shards"] if s["num_rows"]]),
             }]))
    return {"joined": joined, "stats": stats}
