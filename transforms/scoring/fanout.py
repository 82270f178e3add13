"""Model scoring of keyed examples, each distinct example scored once per run.

`ScoreUniqueExamples(handler, model_id, work_dir, score_cache=None,
                    merge_scored=True)`:
    PCollection[(key, AttributionExample or None)]
      -> {"scored": PCollection[(key, AttributionScore or None)] (with
                    merge_scored=False, a tuple of such PCollections),
          "failed": PCollection[(key, ScoringFailure)],
          "stats": PCollection[dict]}  (one dict: the counts below)

Examples are grouped by a digest of (premise, hypothesis), and the question
where an example carries one apart (examples.digest_of; the model is the
same for the whole transform), so a leaderboard whose systems share answers and
passages makes one model call per distinct triple. A None example (no passage)
passes through unscored. With a score cache (transforms/scoring/cache.py),
examples the cache holds for this model are not sent to the model at all, and
the model's new scores are added to it.

Only the distinct examples, keyed by digest, go on to the cache and the model;
the rows' keys wait on disk, each spilled once as (digest, key), and meet the
scores (the cache's and the model's) and failures by digest at the end
(FanOutScores). A row key can be a whole row (a claim with its evidence): had
each distinct example carried the keys of the rows that share it, every
chunk to the model would hold its examples' share of all the run's rows, a
share that grows with the rows (a chunk is one element).

The distinct examples are then cut into chunks that depend on the data alone,
and spread over the workers:

  * each example gets a group key (length band, digest shard): a 512-character
    length band, and within it a shard of the digest range, the number of
    shards sized from the band's count so that a group holds about
    `examples_per_group` examples (the digest is uniform, so groups are even);
  * each group's examples are sorted by digest and cut at `chunk_chars`
    characters or `max_examples_per_call` examples, whichever comes first;
  * the chunks, each pickled into one bytes element, are spread again (keyed
    by their first digest) and handed to RunInference on any worker; each
    chunk is one call of the model (the model loads once per worker and
    splits a chunk into token-budget batches; on an accelerator, the next
    chunk is tokenised while one is on the device: _ChunkHandler) and comes
    back as one element, routed to its rows.

Every grouping goes through runs on disk under `work_dir`
(transforms/io/spilled_groups.py), so that the launching process of the
DirectRunner, which holds whatever is shuffled, holds no example: of identical
triples one is kept (the copies are skipped in the runs, never read); the
distinct ones are spilled keyed by (length band, digest), shard by band, and
each shard's merge cuts its bands' groups (band counts as a side input of the
merge, not of the spill) and their chunks; the rows' keys meet their scores by
digest through runs too, streamed behind each digest's score (a digest's keys
are never listed). The scored rows' two parts (the unscored, the fanned-out scores) are merged through
pickled files too (SpilledFlatten), not by a Flatten the launching process
would hold whole.

A model's floating-point result depends, in its last bits, on which examples
share a padded batch; with chunks fixed by the data, scores are byte-identical
whatever the runner, the bundles or the number of workers. No group and no
call grows with the size of the run: a whole leaderboard's model work is no
longer one band's key on one worker.

A handler may answer an example with a ScoringFailure instead of an
AttributionScore (a remote endpoint that refused it); its rows go to "failed".

Counts in "stats": unique_triples (distinct examples), model_calls (distinct
examples sent to the model), cache_hits, rows_scored_by_model (rows that got a
score from the model itself, the cache's hits not counted), scoring_failed and
rows_scoring_failed, inference_groups and largest_group_examples,
inference_calls and largest_call_examples.
"""
import concurrent.futures
import functools
import pickle
from typing import Any, Callable, Optional, Tuple

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems
from apache_beam.ml.inference.base import ModelHandler, RunInference

from autoais.schemas import ScoringFailure
from autoais.transforms.io import progress
from autoais.transforms.io.counts import SumCountsWhereMade
from autoais.transforms.io.spilled_groups import (SpilledFirstByKey, SpilledFlatten,
                                                  SpilledGroupByKey, SpillKeyedRuns,
                                                  merge_groups, merge_tagged_groups)
from autoais.transforms.scoring.examples import digest_of

LENGTH_BAND_CHARS = 512
DEFAULT_CHUNK_CHARS = 256 * 1024
DEFAULT_MAX_EXAMPLES_PER_CALL = 512
DEFAULT_EXAMPLES_PER_GROUP = 1024


def example_chars(example) -> int:
  return len(example.premise) + len(example.hypothesis)


def _rows_counted(rows_of, key) -> int:
  """How many rows `key` stands for: 1, or rows_of(key) where given."""
  return 1 if rows_of is None else rows_of(key)


class _KeyByExampleFn(beam.DoFn):
  """(key, example) -> (digest, example) to score and (digest, key) to wait for
  its score ("row_keys"), or (key, None) ("unscored") for a None example."""

  def __init__(self, rows_of=None):
    self._rows_of = rows_of

  def setup(self):
    self._rows = progress.Tally("rows_to_score")

  def process(self, keyed_example):
    key, example = keyed_example
    self._rows.add(_rows_counted(self._rows_of, key))
    if example is None:
      yield beam.pvalue.TaggedOutput("unscored", (key, None))
    else:
      digest = digest_of(example)
      yield beam.pvalue.TaggedOutput("row_keys", (digest, key))
      yield digest, example

  def finish_bundle(self):
    self._rows.flush()


def length_band(example) -> int:
  return example_chars(example) // LENGTH_BAND_CHARS


def shards_for(count: int, examples_per_group: int) -> int:
  return max(1, -(-count // examples_per_group))


def group_key(digest: bytes, example, band_counts, examples_per_group: int):
  """(length band, digest shard): the shard splits the digest range evenly
  into as many parts as the band needs for groups of ~examples_per_group."""
  band = length_band(example)
  shards = shards_for(band_counts[band], examples_per_group)
  return band, (int.from_bytes(digest[:8], "big") * shards) >> 64


def _key_by_band(unique):
  """(digest, example) -> ((length band, digest), example)."""
  digest, example = unique
  return (length_band(example), digest), example


def _band_of_key(band_and_digest) -> int:
  return band_and_digest[0]


def cut_chunks(items, chunk_chars: int, max_examples: int):
  """A group's (digest, example) items in digest order, cut at
  `chunk_chars` characters or `max_examples` examples."""
  chunk, size = [], 0
  for item in sorted(items, key=lambda item: item[0]):
    length = example_chars(item[1])
    if chunk and (size + length > chunk_chars or len(chunk) == max_examples):
      yield chunk
      chunk, size = [], 0
    chunk.append(item)
    size += length
  if chunk:
    yield chunk


class _CutChunksFn(beam.DoFn):
  """(shard, runs) of distinct examples keyed by (band, digest) -> the chunks of
  each (band, digest shard) group, with "stats" per group and per chunk.

  merge_groups hands a shard's keys in the order of their encoded bytes: a
  band's keys share their encoded prefix (the band), and a digest shard is a
  range of the band's digests (equal lengths, so ordered by their bytes), so
  each group's examples come out together and a group is complete when the next
  key is another group's."""

  def __init__(self, chunk_chars: int, max_examples: int, examples_per_group: int):
    self._chunk_chars = chunk_chars
    self._max_examples = max_examples
    self._examples_per_group = examples_per_group

  def setup(self):
    self._queued = progress.Tally("model_queued")

  def process(self, shard_runs, band_counts):
    _, runs = shard_runs
    group, items = None, []
    for (_, digest), (values,) in merge_groups(runs, 1):
      example = values[0]
      self._queued.add()
      key = group_key(digest, example, band_counts, self._examples_per_group)
      if key != group and items:
        yield from self._cut(items)
        items = []
      group = key
      items.append((digest, example))
    if items:
      yield from self._cut(items)

  def _cut(self, items):
    yield beam.pvalue.TaggedOutput("stats", {
        "inference_groups": 1, "largest_group_examples": len(items)})
    for chunk in cut_chunks(items, self._chunk_chars, self._max_examples):
      yield beam.pvalue.TaggedOutput("stats", {
          "inference_calls": 1, "largest_call_examples": len(chunk)})
      yield chunk[0][0], pack_chunk(chunk)

  def finish_bundle(self):
    self._queued.flush()


def pack_chunk(chunk) -> bytes:
  """A chunk as one bytes element from the cut to the model. Beam samples the
  size of the first elements of every PCollection by encoding them, and a
  chunk's rows (keys and examples, hundreds per chunk) would be encoded whole
  at each step between the cut and RunInference (a few dozen chunks a run: all
  sampled); bytes are sized by their length, and the chunk is pickled once."""
  return pickle.dumps(chunk, protocol=pickle.HIGHEST_PROTOCOL)


# Chunks handed to one RunInference call. On an accelerator a call's chunks
# run two at a time, and the device waits for the host only while the call's
# first chunk is tokenised: the more chunks a call holds, the less it waits
# (bench/device_busy.py). A chunk is at most DEFAULT_CHUNK_CHARS of text.
CHUNKS_PER_CALL = 16


class _ChunkHandler(ModelHandler):
  """Runs a handler on packed chunks of (digest, example) and answers each
  chunk with one list of (digest, result): one element a chunk, not one an
  example, on the way to RouteResults. Each chunk is one call of the handler
  (its examples, so its token-budget batches, whatever else the call holds).

  Where the handler has more than one chunk under way (chunks_in_flight: a
  model on an accelerator), a call's chunks run on that many threads: while
  one chunk's batches are on the device, the GIL released as a CUDA call (or
  the simulated device) releases it, the next chunk is unpickled, tokenised
  and padded beside them (the model lets one batch on a GPU at a time:
  models/token_budget.py). Results keep the chunks' order, and a chunk that
  fails raises its own error, as the one-at-a-time loop would: once the
  chunks under way have stopped, and the chunks not started never start."""

  def __init__(self, handler: ModelHandler):
    super().__init__()
    self._handler = handler

  def load_model(self):
    return self._handler.load_model()

  def run_inference(self, batch, model, inference_args=None):
    in_flight = getattr(self._handler, "chunks_in_flight", lambda _: 1)(model)
    score = functools.partial(self._score_chunk, model=model, inference_args=inference_args)
    if in_flight <= 1 or len(batch) <= 1:
      return [_counted(score(packed)) for packed in batch]
    with concurrent.futures.ThreadPoolExecutor(
        in_flight, thread_name_prefix="autoais-chunk") as pool:
      futures = [pool.submit(score, packed) for packed in batch]
      try:
        return [_counted(future.result()) for future in futures]
      except BaseException:
        for future in futures:
          future.cancel()
        raise

  def _score_chunk(self, packed: bytes, model, inference_args):
    chunk = pickle.loads(packed)
    results = self._handler.run_inference([example for _, example in chunk], model,
                                          inference_args)
    return [(digest, result.inference) for (digest, _), result in zip(chunk, results)]

  def get_num_bytes(self, batch) -> int:
    return sum(len(packed) for packed in batch)

  def batch_elements_kwargs(self):
    # Fixed, not grown from 1 by BatchElements' timing: a call's first chunk
    # is the one the device waits for.
    return {"min_batch_size": CHUNKS_PER_CALL, "max_batch_size": CHUNKS_PER_CALL}

  def share_model_across_processes(self) -> bool:
    return self._handler.share_model_across_processes()

  def model_copies(self) -> int:
    return self._handler.model_copies()

  def get_metrics_namespace(self) -> str:
    return self._handler.get_metrics_namespace()

  def get_resource_hints(self):
    return self._handler.get_resource_hints()


def _counted(results):
  """A chunk's results, counted in the progress as the chunk is done."""
  progress.count("model_examples", len(results))
  progress.flush()
  return results


def _route_results(results):
  """A chunk's [(digest, score or failure)] -> (digest, score) (the model's new
  scores), "failed" (digest, failure); one "stats" dict per chunk."""
  failed = 0
  for digest, inference in results:
    if isinstance(inference, ScoringFailure):
      failed += 1
      yield beam.pvalue.TaggedOutput("failed", (digest, inference))
    else:
      yield digest, inference
  yield beam.pvalue.TaggedOutput("stats", {"model_calls": len(results),
                                           "scoring_failed": failed})


# The inputs a digest's scores meet its rows' keys in, in the order a digest's
# entries come out of the runs: its score (from the cache, a failure, or the
# model's) before its rows' keys, which are streamed behind it.
_FAN_OUT_TAGS = ("cached", "failed", "model", "rows")
_CACHED, _FAILED, _MODEL, _ROWS = range(len(_FAN_OUT_TAGS))


class _FanOutScoresFn(beam.DoFn):
  """A shard of the join of scores and row keys (SpillKeyedRuns of
  _FAN_OUT_TAGS) -> (key, score) for each row key of each digest, or "failed"
  (key, failure); "stats" counts the rows of the model's scores and failures
  (not the cache's hits). A digest's row keys are streamed from the runs, never
  listed: an example that a million rows share has a million of them.
  `rows_of`: as ScoreUniqueExamples'."""

  def __init__(self, rows_of=None):
    self._rows_of = rows_of

  def setup(self):
    self._rows = progress.Tally("rows_scored")

  def process(self, shard_runs):
    _, runs = shard_runs
    for _, entries in merge_tagged_groups(runs):
      yield from self._fan_out(entries)

  def _fan_out(self, entries):
    scores = [None, None, None]  # the first of the cached, failed and model inputs
    rows = 0
    for tag, value in entries:
      if tag != _ROWS:
        if scores[tag] is None:
          scores[tag] = value
        continue
      rows += _rows_counted(self._rows_of, value)
      if scores[_FAILED] is not None:
        yield beam.pvalue.TaggedOutput("failed", (value, scores[_FAILED]))
      elif scores[_MODEL] is not None:
        yield value, scores[_MODEL]
      elif scores[_CACHED] is not None:
        yield value, scores[_CACHED]
      else:
        raise ValueError("a row's example has no score, no failure and no cached score")
    if scores[_FAILED] is not None:
      yield beam.pvalue.TaggedOutput("stats", {"rows_scoring_failed": rows})
      return
    if scores[_MODEL] is not None:
      yield beam.pvalue.TaggedOutput("stats", {"rows_scored_by_model": rows})
    self._rows.add(rows)

  def finish_bundle(self):
    self._rows.flush()


_ZERO_STATS = {"unique_triples": 0, "model_calls": 0, "cache_hits": 0,
               "rows_scored_by_model": 0, "scoring_failed": 0,
               "rows_scoring_failed": 0, "inference_groups": 0,
               "largest_group_examples": 0, "inference_calls": 0,
               "largest_call_examples": 0}

_ZERO_CACHE_STATS = {"cache_files_read": 0, "cache_entries_read": 0,
                     "cache_entries_written": 0, "cache_files_written": 0}


def _model_identifier(handler: ModelHandler) -> Optional[str]:
  """The handler's model_identifier where it has one (models/token_budget.py
  LocalModelHandler): Beam then shares one model across the RunInference
  steps of a job where the model is shared across processes."""
  identify = getattr(handler, "model_identifier", None)
  return identify() if identify is not None else None


class ScoreUniqueExamples(beam.PTransform):
  """See the module docstring. `model_id` names the model (it is constant for
  the transform, so it is not part of the example digest); `score_cache` is a
  transforms.scoring.cache.ScoreCache or None. The parts of "scored"
  (unscored, and the scores fanned out to their rows) are merged by
  SpilledFlatten: the
  FnApiRunner would hold a beam.Flatten of them whole, every scored row of the
  run. With `merge_scored=False`, "scored" is the tuple of its parts, for a
  consumer that spills each part where it is made anyway (one pickling less).
  `rows_of(key)`, where given, is how many rows a key stands for (a caller
  that has already gathered the rows of an example under one key), in the
  counts of rows; by default each key is one row."""

  def __init__(self, handler: ModelHandler, model_id: str, work_dir: str,
               chunk_chars: int = DEFAULT_CHUNK_CHARS,
               max_examples_per_call: int = DEFAULT_MAX_EXAMPLES_PER_CALL,
               examples_per_group: int = DEFAULT_EXAMPLES_PER_GROUP,
               score_cache: Optional[Any] = None, merge_scored: bool = True,
               rows_of: Optional[Callable[[Any], int]] = None):
    super().__init__()
    self._rows_of = rows_of
    self._handler = handler
    self._model_id = model_id
    self._work_dir = work_dir
    self._chunk_chars = chunk_chars
    self._max_examples = max_examples_per_call
    self._examples_per_group = examples_per_group
    self._score_cache = score_cache
    self._merge_scored = merge_scored

  def expand(self, keyed_examples):
    routed = keyed_examples | "KeyByExample" >> beam.ParDo(
        _KeyByExampleFn(self._rows_of)).with_output_types(
            Tuple[bytes, Any]).with_outputs("unscored", "row_keys", main="to_score")
    unique = (routed.to_score
              | "KeepOneOfIdenticalTriples" >> SpilledFirstByKey(
                  FileSystems.join(self._work_dir, "triples")))
    stats = []
    scores = {"rows": routed.row_keys, "cached": ()}
    to_model = unique
    if self._score_cache is not None:
      cached = unique | "LookUpScoreCache" >> self._score_cache.look_up(
          FileSystems.join(self._work_dir, "cache"))
      to_model = cached["misses"]
      stats.append(cached["stats"])
      scores["cached"] = cached["hits"]

    band_counts = (to_model
                   | "BandOfExample" >> beam.Map(lambda item: (length_band(item[1]), 1))
                   | "CountPerBand" >> beam.CombinePerKey(sum))
    # Distinct triples = the model's (counted per band here) + the cache's hits.
    stats.append(band_counts | "CountUniqueTriples" >> beam.MapTuple(
        lambda _, count: {"unique_triples": count}))
    chunks = ({"examples": to_model | "KeyByBand" >> beam.Map(_key_by_band)}
              | "SpillByBand" >> SpillKeyedRuns(
                  FileSystems.join(self._work_dir, "bands"), ("examples",),
                  key_shard=_band_of_key)
              | "CutChunks" >> beam.ParDo(
                  _CutChunksFn(self._chunk_chars, self._max_examples,
                               self._examples_per_group),
                  beam.pvalue.AsDict(band_counts)).with_outputs("stats", main="chunks"))
    results = (chunks.chunks
               | "SpreadChunks" >> SpilledGroupByKey(
                   FileSystems.join(self._work_dir, "chunks"))
               | "TakeChunks" >> beam.FlatMap(lambda grouped: grouped[1])
               | "RunInference" >> RunInference(
                   _ChunkHandler(self._handler),
                   model_identifier=_model_identifier(self._handler))
               | "RouteResults" >> beam.FlatMap(_route_results).with_outputs(
                   "failed", "stats", main="scored"))
    scores.update(model=results.scored, failed=results.failed)
    fanned = (scores
              | "JoinScoresToRows" >> SpillKeyedRuns(
                  FileSystems.join(self._work_dir, "fanout"), _FAN_OUT_TAGS)
              | "FanOutScores" >> beam.ParDo(_FanOutScoresFn(self._rows_of)).with_outputs(
                  "failed", "stats", main="scored"))
    stats += [chunks.stats, results.stats, fanned.stats]
    if self._score_cache is not None:
      stats.append(results.scored
                   | "AddToScoreCache" >> self._score_cache.add(
                       FileSystems.join(self._work_dir, "new_scores")))
    scored_parts = (routed.unscored, fanned.scored)
    return {
        "scored": (scored_parts | "MergeScored" >> SpilledFlatten(
            FileSystems.join(self._work_dir, "scored"))
                   if self._merge_scored else scored_parts),
        "failed": fanned.failed,
        "stats": sum_stats(stats, dict(
            _ZERO_STATS, **(_ZERO_CACHE_STATS if self._score_cache else {}))),
    }


def sum_stats(parts, zero) -> beam.PCollection:
  """One dict summing PCollections of count dicts, or tuples of them
  (SumCountsWhereMade), with `zero`'s keys always present."""
  flat = []
  for part in parts:
    flat.extend(part if isinstance(part, (tuple, list)) else (part,))
  return tuple(flat) | "SumScoringStats" >> SumCountsWhereMade(zero, "Stats")
