"""transforms/io/counts.py: a bundle's elements combined once at its end
(CombineInBundles), and SumCountsWhereMade: PCollections of count dicts
summed into one dict, each summed per bundle where it is made, with the zero
dict's keys present whatever the parts hold (an empty part included)."""
import apache_beam as beam
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that, equal_to

from autoais.transforms.io.counts import SumCounts, SumCountsWhereMade, _CombineBundleFn  # pylint: disable=protected-access


def _bundles(fn, bundles):
  """What `fn` emits for each bundle of `bundles`, as a runner calls it."""
  emitted = []
  for bundle in bundles:
    fn.start_bundle()
    for element in bundle:
      assert list(fn.process(element) or ()) == []
    emitted.extend(value.value for value in fn.finish_bundle())
  return emitted


def test_a_bundle_is_summed_once_at_its_end_and_an_empty_one_emits_nothing():
  first = {"scored": 1, "by_reason": {"a": 1}, "largest_chunk": 5}
  emitted = _bundles(_CombineBundleFn(SumCounts()), [
      [first, {"scored": 2, "by_reason": {"a": 1, "b": 3}, "largest_chunk": 3}],
      [],
      [{"failed": 1}]])
  assert emitted == [{"scored": 3, "by_reason": {"a": 2, "b": 3}, "largest_chunk": 5},
                     {"failed": 1}]
  # The elements are read, not changed.
  assert first == {"scored": 1, "by_reason": {"a": 1}, "largest_chunk": 5}


def test_parts_are_summed_with_the_zero_keys_present():
  zero = {"scored": 0, "failed": 0, "model_calls": 0}
  parts = [
      [{"scored": 1, "model_calls": 2}, {"scored": 4, "largest_batch": 7}],
      [],
      [{"failed": 2, "by_reason": {"timeout": 2}}, {"largest_batch": 3}],
  ]
  expected = {"scored": 5, "failed": 2, "model_calls": 2, "largest_batch": 7,
              "by_reason": {"timeout": 2}}
  with TestPipeline() as pipeline:
    pcolls = tuple(pipeline | f"Part{index}" >> beam.Create(part, reshuffle=False)
                   .with_output_types(dict) for index, part in enumerate(parts))
    summed = pcolls | SumCountsWhereMade(zero, "Stats")
    assert_that(summed, equal_to([expected]))


def test_empty_parts_give_the_zero_dict():
  zero = {"scored": 0, "failed": 0}
  with TestPipeline() as pipeline:
    pcolls = tuple(pipeline | f"Part{index}" >> beam.Create([]).with_output_types(dict)
                   for index in range(2))
    assert_that(pcolls | SumCountsWhereMade(zero), equal_to([zero]))
