"""The disk-backed groupings give beam.GroupByKey's and beam.CoGroupByKey's
groups: over several bundles, with many spills per worker (a tiny run size), a
key spread over runs and inputs, and for no input at all; the disk-backed
Flatten gives every element of its parts once."""
import glob
import random

import apache_beam as beam
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that, equal_to

from autoais.transforms.io.sorted_runs import write_run
from autoais.transforms.io import spilled_groups
from autoais.transforms.io.spilled_groups import (_ENTRY_SCHEMA, SpilledCoGroupByKey,
                                                  SpilledFirstByKey, SpilledFlatten,
                                                  SpilledGroupByKey,
                                                  _ENTRY_KEY, _EncodeEntryFn, _Entry,
                                                  merge_groups, merge_tagged_groups)
from autoais.transforms.scoring.examples import claim_example


def _pairs(n, seed=0):
  """(key, value) pairs whose keys repeat: digests, (file, index) tuples and
  ints, with NamedTuple and nested values."""
  rng = random.Random(seed)
  pairs = []
  for i in range(n):
    kind = i % 3
    if kind == 0:
      key = bytes([rng.randrange(60)]) * 8  # a digest's bytes
    elif kind == 1:
      key = (f"file-{rng.randrange(5)}.jsonl", rng.randrange(40))
    else:
      key = rng.randrange(50)
    value = (claim_example(f"premise {i} " + "x" * rng.randrange(400),
                           f"hypothesis {i}")
             if i % 2 else {"index": i, "tags": [i, str(i)]})
    pairs.append((key, value))
  return pairs


def _sorted_groups(groups):
  """Groups with their values in a canonical order (neither grouping orders
  the values of a key)."""
  return [(key, sorted(values, key=repr)) for key, values in groups]


def _sorted_co_groups(groups):
  return [(key, {tag: sorted(values, key=repr) for tag, values in tagged.items()})
          for key, tagged in groups]


def _same_lists(actual, expected):
  """A PCollection[bool] holding one True where `actual` and `expected` hold the
  same elements (compared as canonical lists, with beam's grouping computed in
  the same pipeline)."""
  return (actual
          | "ListActual" >> beam.combiners.ToList()
          | "CompareWithExpected" >> beam.Map(
              lambda got, want: sorted(got, key=repr) == sorted(want, key=repr),
              beam.pvalue.AsSingleton(
                  expected | "ListExpected" >> beam.combiners.ToList())))


def test_groups_equal_group_by_key_with_many_spills(tmp_path):
  pairs = _pairs(3000)
  expected = _sorted_groups(
      (key, [value for k, value in pairs if k == key]) for key in
      {key: None for key, _ in pairs})
  with TestPipeline() as pipeline:
    # Three Creates of the same pairs' thirds: several bundles, one key in
    # several of them; a 16 KB run size makes many spills per bundle.
    parts = tuple(pipeline | f"Create{i}" >> beam.Create(pairs[i::3], reshuffle=False)
                  for i in range(3))
    grouped = (parts
               | SpilledGroupByKey(str(tmp_path), num_shards=4,
                                   max_run_bytes=16 * 1024)
               | beam.Map(lambda group: _sorted_groups([group])[0]))
    assert_that(grouped, equal_to(expected))
  # Many runs were written: each key's values came from several of them.
  assert len(glob.glob(str(tmp_path / "run-*.arrow"))) > 10


def test_groups_equal_beams_group_by_key(tmp_path):
  pairs = _pairs(500, seed=3)
  with TestPipeline() as pipeline:
    created = pipeline | beam.Create(pairs)
    expected = (created
                | beam.GroupByKey()
                | "CanonicalExpected" >> beam.Map(
                    lambda group: _sorted_groups([(group[0], list(group[1]))])[0]))
    grouped = (created
               | SpilledGroupByKey(str(tmp_path), max_run_bytes=4096)
               | "CanonicalSpilled" >> beam.Map(lambda group: _sorted_groups([group])[0]))
    assert_that(_same_lists(grouped, expected), equal_to([True]))


def test_co_groups_equal_beams_co_group_by_key(tmp_path):
  left, right = _pairs(900, seed=1), _pairs(600, seed=2)
  with TestPipeline() as pipeline:
    expected = ({"left": pipeline | "CreateLeft" >> beam.Create(left),
                 "right": pipeline | "CreateRight" >> beam.Create(right)}
                | beam.CoGroupByKey()
                | "CanonicalExpected" >> beam.Map(lambda group: _sorted_co_groups(
                    [(group[0], {tag: list(values)
                                 for tag, values in group[1].items()})])[0]))
    # The right side as two PCollections: both spilled into the same tag.
    right_parts = (pipeline | "CreateRightA" >> beam.Create(right[:250]),
                   pipeline | "CreateRightB" >> beam.Create(right[250:]))
    grouped = ({"left": pipeline | "CreateLeftAgain" >> beam.Create(left),
                "right": right_parts}
               | SpilledCoGroupByKey(str(tmp_path), num_shards=3,
                                     max_run_bytes=8 * 1024)
               | "CanonicalSpilled" >> beam.Map(
                   lambda group: _sorted_co_groups([group])[0]))
    assert_that(_same_lists(grouped, expected), equal_to([True]))


def test_a_key_in_one_input_only_gets_an_empty_list_for_the_other(tmp_path):
  with TestPipeline() as pipeline:
    grouped = ({"items": pipeline | "Items" >> beam.Create([("a", 1), ("b", 2)]),
                "answers": pipeline | "Answers" >> beam.Create([("a", "x"), ("a", "y"),
                                                                ("c", "z")])}
               | SpilledCoGroupByKey(str(tmp_path))
               | beam.MapTuple(lambda key, tagged: (
                   key, sorted(tagged["items"]), sorted(tagged["answers"]))))
    assert_that(grouped, equal_to([("a", [1], ["x", "y"]), ("b", [2], []),
                                   ("c", [], ["z"])]))


def test_empty_input_makes_no_groups(tmp_path):
  with TestPipeline() as pipeline:
    grouped = (pipeline
               | beam.Create([]).with_output_types(tuple)
               | SpilledGroupByKey(str(tmp_path)))
    assert_that(grouped, equal_to([]))


def test_a_shard_of_more_runs_than_a_merge_reads_is_merged_in_passes(tmp_path):
  pairs = _pairs(2000, seed=4)
  encode = _EncodeEntryFn(0, 1, None)
  entries = [entry for pair in pairs for entry in encode.process(pair)]
  runs = []
  for start in range(0, len(entries), 100):  # 20 runs of one shard
    part = sorted(entries[start:start + 100], key=lambda entry: entry.key)
    runs.extend(run for _, run in write_run(str(tmp_path / f"run-{start}.arrow"),
                                            [(0, part)], _Entry, _ENTRY_SCHEMA))
  at_once = [(key, values[0]) for key, values in merge_groups(runs, 1, max_runs=20)]
  assert not glob.glob(str(tmp_path / "merged-*.arrow"))
  groups = merge_groups(runs, 1, max_runs=3)
  first_key, first_values = next(groups)
  # 20 runs, 3 at a time: 7 merged runs (the last of two), then 2 more of
  # those 7 (the seventh passes on alone), 3 runs read at once at the end.
  # While the last merge reads, only its 3 inputs are left: the second pass's
  # 2 files and the first pass's seventh; the 6 others were deleted once read.
  assert len(glob.glob(str(tmp_path / "merged-*.arrow"))) == 3
  in_passes = [(first_key, first_values[0])] + [
      (key, values[0]) for key, values in groups]
  assert not glob.glob(str(tmp_path / "merged-*.arrow"))
  assert len(glob.glob(str(tmp_path / "run-*.arrow"))) == 20
  stopped = merge_groups(runs, 1, max_runs=3)
  next(stopped)
  stopped.close()  # a consumer that stops early leaves no pass files behind
  assert not glob.glob(str(tmp_path / "merged-*.arrow"))
  assert [key for key, _ in in_passes] == [key for key, _ in at_once]
  assert _sorted_groups(in_passes) == _sorted_groups(at_once)
  assert sorted(_sorted_groups(at_once), key=repr) == sorted(_sorted_groups(
      (key, [value for k, value in pairs if k == key])
      for key in {key: None for key, _ in pairs}), key=repr)


def test_spilled_flatten_gives_every_element_of_every_part_once(tmp_path):
  pairs = _pairs(3000, seed=4)
  # An element repeated within a part and across parts: each copy must come out.
  parts_data = [pairs[0::3] + pairs[:5], pairs[1::3] + pairs[:5], pairs[2::3], []]
  with TestPipeline() as pipeline:
    parts = tuple(pipeline | f"Create{i}" >> beam.Create(data, reshuffle=False)
                  for i, data in enumerate(parts_data))
    # A tiny file size: each part's elements go to several files.
    merged = parts | SpilledFlatten(str(tmp_path), max_file_bytes=16 * 1024)
    assert_that(merged, equal_to([pair for data in parts_data for pair in data]))
  assert len(glob.glob(str(tmp_path / "flatten-*.pickle"))) > len(parts_data)


def test_spilled_flatten_of_empty_parts_is_empty(tmp_path):
  with TestPipeline() as pipeline:
    parts = (pipeline | "CreateA" >> beam.Create([]),
             pipeline | "CreateB" >> beam.Create([]))
    assert_that(parts | SpilledFlatten(str(tmp_path)), equal_to([]))


def test_a_keys_values_stream_input_by_input_whatever_the_runs_order(tmp_path):
  # Input 1's entries (an entity's askers) are spilled before input 0's (its
  # record), in runs of their own: a key's values still come out input 0 first.
  askers = [(f"entity-{i % 3}", ("answers.jsonl", i)) for i in range(90)]
  records = [(f"entity-{i}", {"id": i}) for i in range(2)]  # entity-2 has none
  runs = []
  for tag, part in ((1, askers[:45]), (1, askers[45:]), (0, records)):
    encode = _EncodeEntryFn(tag, 1, None)
    entries = sorted((entry for pair in part for entry in encode.process(pair)),
                     key=lambda entry: tuple(getattr(entry, f) for f in _ENTRY_KEY))
    runs.extend(run for _, run in write_run(
        str(tmp_path / f"run-{len(runs)}.arrow"), [(0, entries)], _Entry,
        _ENTRY_SCHEMA))
  seen = {}
  for key, tagged in merge_tagged_groups(runs):
    tags = []
    for tag, value in tagged:
      tags.append(tag)
      seen.setdefault(key, []).append(value)
    assert tags == sorted(tags), key
  assert sorted(seen) == ["entity-0", "entity-1", "entity-2"]
  for number in range(3):
    key = f"entity-{number}"
    expected = ([{"id": number}] if number < 2 else []) + sorted(
        value for k, value in askers if k == key)
    assert seen[key][:1 if number < 2 else 0] == expected[:1 if number < 2 else 0]
    assert sorted(seen[key], key=repr) == sorted(expected, key=repr)


def test_first_by_key_keeps_one_value_of_each_key(tmp_path):
  pairs = _pairs(3000, seed=6)
  with TestPipeline() as pipeline:
    first = (pipeline
             | beam.Create(pairs, reshuffle=False)
             | SpilledFirstByKey(str(tmp_path), max_run_bytes=16 * 1024))
    assert_that(first, _keys_are(pairs))


def test_the_value_kept_is_the_one_a_grouping_of_the_same_runs_lists_first(tmp_path):
  pairs = _pairs(2000, seed=7)
  encode = _EncodeEntryFn(0, 1, None)
  entries = [entry for pair in pairs for entry in encode.process(pair)]
  runs = []
  for start in range(0, len(entries), 250):
    part = sorted(entries[start:start + 250],
                  key=lambda entry: tuple(getattr(entry, f) for f in _ENTRY_KEY))
    runs.extend(run for _, run in write_run(str(tmp_path / f"run-{start}.arrow"),
                                            [(0, part)], _Entry, _ENTRY_SCHEMA))
  kept = list(spilled_groups._FirstOfGroupsFn().process((0, runs)))  # pylint: disable=protected-access
  assert kept == [(key, values[0][0]) for key, values in merge_groups(runs, 1)]


def _keys_are(pairs):
  keys = sorted({repr(key) for key, _ in pairs})

  def check(actual):
    assert sorted(repr(key) for key, _ in actual) == keys
    for key, value in actual:
      assert value in [v for k, v in pairs if k == key]
  return check


def test_a_streamed_group_reads_only_the_values_taken(tmp_path, monkeypatch):
  shared = [("popular", ("rows.csv", line)) for line in range(5000)]
  encode = _EncodeEntryFn(0, 1, None)
  entries = sorted((entry for pair in shared for entry in encode.process(pair)),
                   key=lambda entry: tuple(getattr(entry, f) for f in _ENTRY_KEY))
  runs = [run for _, run in write_run(str(tmp_path / "run.arrow"), [(0, entries)],
                                      _Entry, _ENTRY_SCHEMA)]
  loads = []
  real_loads = spilled_groups.pickle.loads
  monkeypatch.setattr(spilled_groups.pickle, "loads",
                      lambda data: loads.append(1) or real_loads(data))
  (key, value), = list(spilled_groups._FirstOfGroupsFn().process((0, runs)))  # pylint: disable=protected-access
  assert key == "popular" and value in [v for _, v in shared]
  assert len(loads) == 1  # one of the 5,000 values unpickled
