"""A score cache across runs (`--score_cache DIR`, local or gs://).

A nightly leaderboard rescored from scratch pays the model for every triple it
scored the night before. With a cache, a run looks each distinct (premise,
hypothesis) up first and sends only the misses to the model; the model's new
scores are added to the cache as the run goes.

Layout: one directory per model identity, so another model (other weights,
another dtype, another endpoint) never reads this one's entries:

    DIR/<identity key>/identity.json                  what the identity is
    DIR/<identity key>/scores-<run id>-<shard>.parquet  ScoreCacheEntry rows

The identity is what the scorer says names its scores (Scorer.cache_identity:
the weights' sha256 with the dtype, input length and decision mode for a local
model; the endpoint for a remote one), known only on a worker (the weights are
read there), so the directory is listed and read inside the pipeline. The key
is the first 24 hex digits of the sha256 of the identity's canonical JSON.

Entries are keyed by transforms.scoring.examples.digest_of(example): its
(premise, hypothesis), and its question where it carries one apart.
Each run writes its new entries in `WRITE_SHARDS` files (by the digest's first
byte), each sorted by digest and written atomically: a run that fails keeps
what it wrote, and a concurrent reader never sees half a file. Lookups read
the identity's files and join them with the run's distinct examples by
digest. Both the join and the new entries' shards go through runs on disk
under the run's scratch directory (transforms/io/spilled_groups.py), so no
process holds either side whole (the DirectRunner would hold a shuffle's
elements in the launching process). Where two runs wrote the same digest, the
smallest entry wins, so the choice does not depend on the order files are
read in.

In threshold mode the decision is taken again from the cached nli_score with
this run's --threshold; in decode mode (part of the identity) it is stored.
"""
import hashlib
import json
import uuid
from typing import Any, Callable, Dict, Optional

import apache_beam as beam
import pyarrow.parquet as pq
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems

from autoais.schemas import (SCORE_CACHE_ENTRY_SCHEMA, AttributionScore, ScoreCacheEntry,
                             UnsupportedSpan, to_record_batch)
from autoais.transforms.io import progress
from autoais.transforms.io.atomic import atomic_create, write_text_atomically
from autoais.transforms.io.spilled_groups import (SpilledCoGroupByKey, SpillKeyedRuns,
                                                  merge_groups)

WRITE_SHARDS = 16
IDENTITY_FILE = "identity.json"
_READ_BATCH_ROWS = 65536
_WRITE_BATCH_ROWS = 65536  # rows per Parquet row group of a new cache file


def identity_key(identity: Dict[str, Any]) -> str:
  canonical = json.dumps(identity, sort_keys=True, separators=(",", ":"))
  return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:24]


def identity_dir(cache_dir: str, identity: Dict[str, Any]) -> str:
  return FileSystems.join(cache_dir.rstrip("/"), identity_key(identity))


def new_run_id() -> str:
  return uuid.uuid4().hex[:16]


def read_cache_file(path: str):
  """Yields the ScoreCacheEntry rows of one cache file (one written before
  entries had spans: spans None)."""
  with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as f:
    parquet = pq.ParquetFile(f)
    names = [name for name in SCORE_CACHE_ENTRY_SCHEMA.names
             if name in parquet.schema_arrow.names]
    for batch in parquet.iter_batches(batch_size=_READ_BATCH_ROWS, columns=names):
      columns = [column.to_pylist() for column in batch.columns]
      for values in zip(*columns):
        entry = ScoreCacheEntry._make(values + (None,) * (len(ScoreCacheEntry._fields)
                                                          - len(values)))
        if entry.spans is not None:
          entry = entry._replace(spans=[UnsupportedSpan(**span) for span in entry.spans])
        yield entry


class _ListCacheFilesFn(beam.DoFn):

  def __init__(self, cache_dir: str):
    self._cache_dir = cache_dir

  def process(self, unused_impulse, identity):
    pattern = FileSystems.join(identity_dir(self._cache_dir, identity), "*.parquet")
    matched = FileSystems.match([pattern])[0].metadata_list
    for metadata in sorted(matched, key=lambda m: m.path):
      yield metadata.path
    yield beam.pvalue.TaggedOutput("stats", {"cache_files_read": len(matched)})


class _ReadCacheFileFn(beam.DoFn):

  def process(self, path):
    entries = 0
    for entry in read_cache_file(path):
      entries += 1
      yield entry.digest, entry
    yield beam.pvalue.TaggedOutput("stats", {"cache_entries_read": entries})


class _MatchCachedFn(beam.DoFn):
  """(digest, {"unique": [example], "cached": [entries]}) -> a hit (digest,
  score) or a miss (digest, example)."""

  def __init__(self, threshold: Optional[float]):
    self._threshold = threshold

  def process(self, joined):
    digest, sides = joined
    unique = list(sides["unique"])
    entries = list(sides["cached"])
    if unique and not entries:
      yield beam.pvalue.TaggedOutput("misses", (digest, unique[0]))
    elif unique:
      entry = min(entries)
      attributable = (entry.attributable if self._threshold is None
                      else entry.nli_score > self._threshold)
      self._hits.add()
      yield beam.pvalue.TaggedOutput("stats", {"cache_hits": 1, "unique_triples": 1})
      yield digest, AttributionScore(entry.nli_score, attributable, entry.n_windows,
                                     entry.truncated, entry.spans)
    # else: a cached score this run does not need

  def setup(self):
    self._hits = progress.Tally("cache_hits")

  def finish_bundle(self):
    self._hits.flush()


class _LookUp(beam.PTransform):

  def __init__(self, cache: "ScoreCache", work_dir: str):
    super().__init__()
    self._cache = cache
    self._work_dir = work_dir

  def expand(self, unique):
    identity = beam.pvalue.AsSingleton(
        unique.pipeline | "DescribeCacheIdentity" >> self._cache.identity())
    files = (unique.pipeline
             | "StartCacheListing" >> beam.Create([None])
             | "ListCacheFiles" >> beam.ParDo(
                 _ListCacheFilesFn(self._cache.directory), identity).with_outputs(
                     "stats", main="paths"))
    entries = (files.paths
               | "SpreadCacheFiles" >> beam.Reshuffle()
               | "ReadCacheFiles" >> beam.ParDo(_ReadCacheFileFn()).with_outputs(
                   "stats", main="entries"))
    matched = ({"unique": unique, "cached": entries.entries}
               | "JoinCachedScores" >> SpilledCoGroupByKey(self._work_dir)
               | "MatchCachedScores" >> beam.ParDo(
                   _MatchCachedFn(self._cache.threshold)).with_outputs(
                       "misses", "stats", main="hits"))
    return {"hits": matched.hits, "misses": matched.misses,
            "stats": (files.stats, entries.stats, matched.stats)}


class _WriteShardFn(beam.DoFn):

  def __init__(self, cache_dir: str, run_id: str):
    self._cache_dir = cache_dir
    self._run_id = run_id

  def process(self, shard_runs, identity):
    """A shard's runs of (digest, score), merged in digest order (a run's
    digests are distinct), written _WRITE_BATCH_ROWS rows at a time."""
    shard, runs = shard_runs
    directory = identity_dir(self._cache_dir, identity)
    path = FileSystems.join(directory, f"scores-{self._run_id}-{shard:02d}.parquet")
    written, rows = 0, []
    with atomic_create(path) as sink, pq.ParquetWriter(
        sink, SCORE_CACHE_ENTRY_SCHEMA, compression="snappy") as writer:
      for digest, (scores,) in merge_groups(runs, 1):
        rows.extend(ScoreCacheEntry(digest, *score) for score in scores)
        if len(rows) >= _WRITE_BATCH_ROWS:
          writer.write_batch(to_record_batch(rows, SCORE_CACHE_ENTRY_SCHEMA))
          written, rows = written + len(rows), []
      if rows or not written:
        writer.write_batch(to_record_batch(rows, SCORE_CACHE_ENTRY_SCHEMA))
        written += len(rows)
    yield {"cache_entries_written": written, "cache_files_written": 1}


class _WriteIdentityFn(beam.DoFn):

  def __init__(self, cache_dir: str):
    self._cache_dir = cache_dir

  def process(self, identity):
    path = FileSystems.join(identity_dir(self._cache_dir, identity), IDENTITY_FILE)
    if not FileSystems.exists(path):
      write_text_atomically(path, json.dumps(identity, indent=2, sort_keys=True) + "\n")
    return []


def _shard_of_digest(digest: bytes) -> int:
  return digest[0] % WRITE_SHARDS


class _Add(beam.PTransform):

  def __init__(self, cache: "ScoreCache", work_dir: str):
    super().__init__()
    self._cache = cache
    self._work_dir = work_dir

  def expand(self, new_scores):
    identity_pcoll = new_scores.pipeline | "DescribeNewCacheIdentity" >> self._cache.identity()
    _ = identity_pcoll | "WriteCacheIdentity" >> beam.ParDo(
        _WriteIdentityFn(self._cache.directory))
    return ({"new_scores": new_scores}
            | "SpillNewScoreShards" >> SpillKeyedRuns(
                self._work_dir, ("new_scores",), num_shards=WRITE_SHARDS,
                key_shard=_shard_of_digest)
            | "WriteCacheShards" >> beam.ParDo(
                _WriteShardFn(self._cache.directory, self._cache.run_id),
                beam.pvalue.AsSingleton(identity_pcoll)))


class ScoreCache:
  """A score cache directory for one scorer.

  `identity` builds a PTransform, PBegin -> singleton dict, that names the
  model's scores (computed on a worker); `threshold` is the run's threshold in
  threshold mode (the decision is retaken from the cached score), None in
  decode mode (the stored decision is used).
  """

  def __init__(self, directory: str, identity: Callable[[], beam.PTransform],
               threshold: Optional[float], run_id: Optional[str] = None):
    self.directory = directory
    self.identity = identity
    self.threshold = threshold
    self.run_id = run_id or new_run_id()

  def look_up(self, work_dir: str) -> beam.PTransform:
    """(digest, example), one per distinct example -> {"hits": (digest, score),
    "misses": (digest, example), "stats": a tuple of PCollections of count
    dicts}; the join's runs go under `work_dir` (the run's scratch)."""
    return _LookUp(self, work_dir)

  def add(self, work_dir: str) -> beam.PTransform:
    """(digest, AttributionScore) -> PCollection of count dicts; writes them
    (the shards' runs go under `work_dir`, the run's scratch)."""
    return _Add(self, work_dir)
