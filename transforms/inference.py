"""Model scoring of keyed examples, each distinct example scored once per run.

`ScoreUniqueExamples(handler, model_id)`:
    PCollection[(key, AttributionExample or None)]
      -> {"scored": PCollection[(key, AttributionScore or None)],
          "stats": PCollection[dict]}  (rows, unique examples)

Examples are grouped by a digest of (model, premise, hypothesis), so a
leaderboard whose systems share answers and passages makes one model call per
distinct triple. A None example (no passage) passes through unscored.

The distinct examples are then cut into chunks that depend on the data alone:
grouped by text length, sorted by digest, cut at a character budget. Each chunk
is one RunInference call (the model loads once per worker and splits a chunk
into token-budget batches). A model's floating-point result depends, in its
last bits, on which examples share a padded batch; with chunks fixed by the
data, scores are byte-identical whatever the runner, the bundles or the number
of workers.
"""
import hashlib
from typing import Any, Tuple

import apache_beam as beam
from apache_beam.ml.inference.base import ModelHandler, RunInference


def triple_digest(model_id: str, premise: str, hypothesis: str) -> bytes:
  digest = hashlib.blake2b(digest_size=16)
  for part in (model_id, premise, hypothesis):
    digest.update(part.encode("utf-8"))
    digest.update(b"\0")
  return digest.digest()


class _KeyByTripleFn(beam.DoFn):

  def __init__(self, model_id: str):
    self._model_id = model_id

  def process(self, keyed_example):
    key, example = keyed_example
    if example is None:
      yield beam.pvalue.TaggedOutput("unscored", (key, None))
    else:
      yield triple_digest(self._model_id, example.premise, example.hypothesis), (
          key, example)


_LENGTH_BUCKET_CHARS = 512


def _by_length_bucket(grouped):
  """(digest, [(key, example), ...]) -> (length bucket, (digest, keys, example))."""
  digest, keyed_examples = grouped
  keys, example = [], None
  for key, example in keyed_examples:
    keys.append(key)
  length = len(example.premise) + len(example.hypothesis)
  return length // _LENGTH_BUCKET_CHARS, (digest, keys, example)


def _chunks(bucket, chunk_chars: int):
  """A length bucket's examples in digest order, cut at `chunk_chars`."""
  _, items = bucket
  chunk, size = [], 0
  for _, keys, example in sorted(items, key=lambda item: item[0]):
    length = len(example.premise) + len(example.hypothesis)
    if chunk and size + length > chunk_chars:
      yield chunk
      chunk, size = [], 0
    chunk.append((keys, example))
    size += length
  if chunk:
    yield chunk


class _ChunkHandler(ModelHandler):
  """Runs a handler on chunks of (keys, example), one chunk per call, and hands
  each example's keys back with its score."""

  def __init__(self, handler: ModelHandler):
    super().__init__()
    self._handler = handler

  def load_model(self):
    return self._handler.load_model()

  def run_inference(self, batch, model, inference_args=None):
    scored = []
    for chunk in batch:
      results = self._handler.run_inference([example for _, example in chunk], model,
                                            inference_args)
      scored.extend((keys, result.inference)
                    for (keys, _), result in zip(chunk, results))
    return scored

  def get_num_bytes(self, batch) -> int:
    return sum(self._handler.get_num_bytes([example for _, example in chunk])
               for chunk in batch)

  def batch_elements_kwargs(self):
    return {"min_batch_size": 1, "max_batch_size": 1}

  def share_model_across_processes(self) -> bool:
    return self._handler.share_model_across_processes()

  def model_copies(self) -> int:
    return self._handler.model_copies()

  def get_metrics_namespace(self) -> str:
    return self._handler.get_metrics_namespace()

  def get_resource_hints(self):
    return self._handler.get_resource_hints()


def _fan_out(keys_and_score):
  keys, score = keys_and_score
  for key in keys:
    yield key, score


class ScoreUniqueExamples(beam.PTransform):
  """See the module docstring."""

  def __init__(self, handler: ModelHandler, model_id: str,
               chunk_chars: int = 256 * 1024):
    super().__init__()
    self._handler = handler
    self._model_id = model_id
    self._chunk_chars = chunk_chars

  def expand(self, keyed_examples):
    routed = keyed_examples | "KeyByTriple" >> beam.ParDo(
        _KeyByTripleFn(self._model_id)).with_output_types(
            Tuple[bytes, Any]).with_outputs("unscored", main="to_score")
    unique = (routed.to_score
              | "GroupIdenticalTriples" >> beam.GroupByKey()
              | "BucketByLength" >> beam.Map(_by_length_bucket))
    chunks = (unique
              | "GroupLengthBuckets" >> beam.GroupByKey()
              | "CutChunks" >> beam.FlatMap(_chunks, self._chunk_chars))
    scored = (chunks
              | "RunInference" >> RunInference(_ChunkHandler(self._handler))
              | "FanOutScores" >> beam.FlatMap(_fan_out))
    stats = (unique
             | "CountRowsPerTriple" >> beam.MapTuple(lambda _, item: len(item[1]))
             | "SumTripleCounts" >> beam.CombineGlobally(_TripleStats()))
    return {
        "scored": (scored, routed.unscored) | "MergeUnscored" >> beam.Flatten(),
        "stats": stats,
    }


class _TripleStats(beam.CombineFn):
  """Rows scored through the model and distinct triples (model calls)."""

  def create_accumulator(self):
    return 0, 0

  def add_input(self, accumulator, rows):
    return accumulator[0] + rows, accumulator[1] + 1

  def merge_accumulators(self, accumulators):
    rows = triples = 0
    for accumulator_rows, accumulator_triples in accumulators:
      rows += accumulator_rows
      triples += accumulator_triples
    return rows, triples

  def extract_output(self, accumulator):
    return {"rows_scored_by_model": accumulator[0],
            "unique_triples": accumulator[1]}
