"""The model's chunks through the spilled groupings are the chunks of the
definition: distinct examples grouped by (length band, digest shard), each
group cut in digest order. Examples of several bands (several spill shards,
one of them holding two bands), small groups and chunks, repeats."""
import random
from collections import Counter, defaultdict

import apache_beam as beam
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that, equal_to

from autoais.transforms.scoring import fanout
from autoais.transforms.scoring.examples import claim_example, example_digest
from tests.support.scorers import DigestHandler

CHUNK_CHARS, MAX_EXAMPLES, PER_GROUP = 6000, 12, 40


def _examples(n=1500, seed=4):
  rng = random.Random(seed)
  examples = []
  for index in range(n):
    # Lengths over bands 0 to 4, and one of band 16 (band % 16 == 0: the same
    # spill shard as band 0).
    length = 8300 if index % 97 == 0 else rng.randrange(20, 2500)
    premise = f"passage {index} " + "w" * length
    examples.append(claim_example(premise, f"claim {index % 700}"))
  return examples


def _rows(examples):
  rows = [(f"row-{index}", example) for index, example in enumerate(examples)]
  rows += [(f"repeat-{index}", examples[(index * 31) % len(examples)])
           for index in range(300)]
  return rows


def _reference(examples):
  """{digest: size of its call} and the group / call counts, by the definition."""
  unique = {example_digest(e.premise, e.hypothesis): e for e in examples}
  band_counts = Counter(fanout.length_band(e) for e in unique.values())
  groups = defaultdict(list)
  for digest, example in unique.items():
    groups[fanout.group_key(digest, example, band_counts, PER_GROUP)].append(
        (digest, example))
  call_size, calls = {}, []
  for items in groups.values():
    for chunk in fanout.cut_chunks(items, CHUNK_CHARS, MAX_EXAMPLES):
      calls.append(len(chunk))
      call_size.update((digest, len(chunk)) for digest, _ in chunk)
  stats = {"inference_groups": len(groups),
           "largest_group_examples": max(map(len, groups.values())),
           "inference_calls": len(calls), "largest_call_examples": max(calls)}
  return call_size, stats


def test_chunks_are_the_definitions(tmp_path):
  examples = _examples()
  rows = _rows(examples)
  call_size, stats = _reference(examples)
  bands = {fanout.length_band(e) for e in examples}
  assert {0, 16} <= bands and len(bands) >= 6 and stats["inference_groups"] > 20
  expected = [(key, call_size[example_digest(e.premise, e.hypothesis)])
              for key, e in rows]
  with TestPipeline() as pipeline:
    scored = (pipeline
              | beam.Create(rows)
              | fanout.ScoreUniqueExamples(
                  DigestHandler(), "digest", str(tmp_path), chunk_chars=CHUNK_CHARS,
                  max_examples_per_call=MAX_EXAMPLES, examples_per_group=PER_GROUP))
    # A score's n_windows is the size of the call that scored it.
    assert_that(scored["scored"] | beam.MapTuple(lambda key, score: (key, score.n_windows)),
                equal_to(expected), label="CallSizes")
    assert_that(scored["stats"] | beam.Map(
        lambda counts: {name: counts[name] for name in stats}),
                equal_to([stats]), label="GroupsAndCalls")
