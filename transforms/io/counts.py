"""The count dicts that workers report, summed: `SumCounts`, the CombineFn behind
every job's counters in run.json (dead letters, scoring, merged rows);
`SumInBundles`, a PCollection of them summed per bundle where it is made;
`SumCountsWhereMade`, several PCollections of them summed into one dict.
"""
from typing import Sequence

import apache_beam as beam
from apache_beam.transforms.window import GlobalWindows


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


class _SumBundleFn(beam.DoFn):
  """A bundle's count dicts summed (SumCounts), emitted once, at its end."""

  def start_bundle(self):
    self._sum = None

  def process(self, counts):
    self._sum = _SUM.add_input({} if self._sum is None else self._sum, counts)

  def finish_bundle(self):
    if self._sum is not None:
      yield GlobalWindows.windowed_value(self._sum)


_SUM = SumCounts()


class SumInBundles(beam.PTransform):
  """PCollection of count dicts (global window) -> their SumCounts per bundle,
  a dict each, emitted at the bundle's end by a DoFn fused with the step that
  makes them: what a Flatten (which the FnApiRunner holds whole) or a combine
  downstream then receives is a dict a bundle, not one an element."""

  def expand(self, counts):
    return counts | "SumBundle" >> beam.ParDo(_SumBundleFn())


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
