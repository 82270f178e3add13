"""The count dicts that workers report, summed: `SumCounts`, the CombineFn behind
every job's counters in run.json (dead letters, scoring, merged rows).
"""
import apache_beam as beam


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
