"""The count dicts that workers report, summed: `SumCounts`, the CombineFn behind
every job's counters in run.json (dead letters, scoring, merged rows);
`SumInBundles`, a PCollection of them summed per bundle where it is made
(CombineInBundles, for any CombineFn); `SumCountsWhereMade`, several
PCollections of them summed into one dict.
"""
from typing import Sequence

import apache_beam as beam
from apache_beam.transforms.window import GlobalWindows

from autoais.transforms.io.untyped_output import UntypedOutputDoFn


class SumCounts(beam.CombineFn):
  """Sums dicts of counts key by key (values may be nested dicts of counts);
  keys named largest_* keep their maximum instead."""

  def create_accumulator(self):
    return {}

  def add_input(self, accumulator, counts):
    for key, value in counts.items():
      if isinstance(value, dict):
        accumulator[key] = self.add_input(accumulator.get(key, {}), value)
      elif key.startswith("largest_"):
        accumulator[key] = max(accumulator.get(key, 0), value)
      else:
        accumulator[key] = accumulator.get(key, 0) + value
    return accumulator

  def merge_accumulators(self, accumulators):
    merged = {}
    for accumulator in accumulators:
      self.add_input(merged, accumulator)
    return merged

  def extract_output(self, accumulator):
    return accumulator


class _CombineBundleFn(UntypedOutputDoFn):
  """A bundle's elements added to one accumulator of `combine_fn`, emitted
  (as an accumulator, not extracted) once, at the bundle's end."""

  def __init__(self, combine_fn: beam.CombineFn):
    self._combine_fn = combine_fn

  def start_bundle(self):
    self._accumulator = None

  def process(self, element):
    if self._accumulator is None:
      self._accumulator = self._combine_fn.create_accumulator()
    self._accumulator = self._combine_fn.add_input(self._accumulator, element)

  def finish_bundle(self):
    if self._accumulator is not None:
      yield GlobalWindows.windowed_value(self._accumulator)


class CombineInBundles(beam.PTransform):
  """PCollection (global window) -> one accumulator of `combine_fn` per
  bundle, emitted at the bundle's end by a DoFn fused with the step that
  makes the elements: what a Flatten (which the FnApiRunner holds whole) or
  a combine downstream receives is an accumulator a bundle, not an element,
  and no combine of its own (a grouping, the stages of its default value) is
  paid per PCollection. MergeAccumulators(combine_fn) combines the
  accumulators."""

  def __init__(self, combine_fn: beam.CombineFn):
    super().__init__()
    self._combine_fn = combine_fn

  def expand(self, elements):
    return elements | "CombineBundle" >> beam.ParDo(_CombineBundleFn(self._combine_fn))


class MergeAccumulators(beam.CombineFn):
  """A CombineFn whose inputs are accumulators of `combine_fn` (what
  CombineInBundles emits): merged, then extracted as `combine_fn` does."""

  def __init__(self, combine_fn: beam.CombineFn):
    self._combine_fn = combine_fn

  def create_accumulator(self):
    return self._combine_fn.create_accumulator()

  def add_input(self, accumulator, other):
    return self._combine_fn.merge_accumulators([accumulator, other])

  def merge_accumulators(self, accumulators):
    return self._combine_fn.merge_accumulators(accumulators)

  def extract_output(self, accumulator):
    return self._combine_fn.extract_output(accumulator)


class SumInBundles(CombineInBundles):
  """PCollection of count dicts -> their SumCounts per bundle (a count dict:
  SumCounts' accumulator is its output)."""

  def __init__(self):
    super().__init__(SumCounts())


class SumCountsWhereMade(beam.PTransform):
  """A tuple of PCollections of count dicts (global window) -> one dict, their
  SumCounts with `zero`'s keys always present. Each part is summed where it
  is made (SumInBundles), so a part costs one step, not a combine of its own
  (a grouping, and the stages of its default value), and the Flatten before
  the one CombineGlobally carries a dict a bundle. As in any combine, the
  sums meet in the order they arrive, so the keys' order is the runner's."""

  def __init__(self, zero: dict, name: str = "Counts"):
    """`name`: what the steps' labels call the counts (SumStatsInBundles0, ...)."""
    super().__init__()
    self._zero = zero
    self._name = name

  def expand(self, parts: Sequence[beam.PCollection]):
    name = self._name
    summed = [part | f"Sum{name}InBundles{index}" >> SumInBundles()
              for index, part in enumerate(parts)]
    summed.append(parts[0].pipeline | f"Start{name}" >> beam.Create([self._zero]))
    return (tuple(summed)
            | f"Collect{name}" >> beam.Flatten()
            | f"Sum{name}" >> beam.CombineGlobally(SumCounts()))
