"""Human AIS annotations (SPEC 5.6) tallied: the AIS paper's release read row by
row (transforms/ais_annotations/readers.py) and counted per (data set, model)
in a mergeable accumulator (AisTally; TallyAnnotations is its CombineFn).

Definitions (the paper's §4.1): an output is flagged, or else interpretable or
not, and an interpretable output is attributable or not (all by majority of its
raters, as released). Flag = flagged / outputs; Int = interpretable / outputs
not flagged; AIS = attributable / interpretable. Shares print as percent with
one decimal, rounded half up from the exact fraction.
"""
import bisect
import collections
from typing import NamedTuple, Tuple

import apache_beam as beam

from autoais.schemas import AisAnnotation


PANEL_SIZE = 5  # raters per output (paper §4: "we ask five annotators")
# Rows named in an explanation: a tally keeps the first few, by file and line.
MAX_NAMED_ROWS = 20


FLAGGED, NOT_INTERPRETABLE, INTERPRETABLE_ONLY, ATTRIBUTABLE = range(4)
CATEGORY_NAMES = ("flagged", "not interpretable", "interpretable, not attributable",
                  "interpretable and attributable")


class Counts(NamedTuple):
  """Outputs by category: flagged, not interpretable, interpretable but not
  attributable, attributable. Every share of the tables is a ratio of these."""
  flagged: int = 0
  not_interpretable: int = 0
  interpretable_only: int = 0
  attributable: int = 0

  @property
  def items(self) -> int:
    return sum(self)

  @property
  def interpretable(self) -> int:
    return self.interpretable_only + self.attributable

  def cell(self, column: str) -> Tuple[int, int]:
    """(numerator, denominator) of column 'flag', 'int' or 'ais'."""
    if column == "flag":
      return self.flagged, self.items
    if column == "int":
      return self.interpretable, self.items - self.flagged
    return self.attributable, self.interpretable

  def plus(self, other: "Counts") -> "Counts":
    return Counts(*(a + b for a, b in zip(self, other)))

  def minus(self, other: "Counts") -> "Counts":
    return Counts(*(a - b for a, b in zip(self, other)))


def category(row: AisAnnotation) -> int:
  if row.flagged:
    return FLAGGED
  if not row.interpretable:
    return NOT_INTERPRETABLE
  return ATTRIBUTABLE if row.attributable else INTERPRETABLE_ONLY


def rated_by_two_panels(row: AisAnnotation) -> bool:
  """More raters agree than one panel holds: the release pooled two panels."""
  return max(row.int_agreement or 0, row.ais_agreement or 0) > PANEL_SIZE


class AisTally:
  """What the tables need of one model's outputs, in constant space:
  category counts, agreement histograms, and the outputs rated by two panels
  (counted by category; the first MAX_NAMED_ROWS by file and line named)."""

  __slots__ = ("categories", "int_agreement", "ais_agreement", "two_panels",
               "two_panel_rows")

  def __init__(self):
    self.categories = [0, 0, 0, 0]
    self.int_agreement = collections.Counter()  # over outputs not flagged
    self.ais_agreement = collections.Counter()  # over interpretable outputs
    self.two_panels = [0, 0, 0, 0]
    self.two_panel_rows = []  # sorted (source_file, source_line, example_id)

  def add(self, row: AisAnnotation) -> "AisTally":
    kind = category(row)
    self.categories[kind] += 1
    if kind != FLAGGED:
      self.int_agreement[row.int_agreement] += 1
    if row.interpretable:
      self.ais_agreement[row.ais_agreement] += 1
    if rated_by_two_panels(row):
      self.two_panels[kind] += 1
      bisect.insort(self.two_panel_rows, (row.source_file, row.source_line,
                                          row.example_id))
      del self.two_panel_rows[MAX_NAMED_ROWS:]
    return self

  def merge(self, other: "AisTally") -> "AisTally":
    for kind in range(4):
      self.categories[kind] += other.categories[kind]
      self.two_panels[kind] += other.two_panels[kind]
    self.int_agreement.update(other.int_agreement)
    self.ais_agreement.update(other.ais_agreement)
    self.two_panel_rows = sorted(self.two_panel_rows + other.two_panel_rows)[
        :MAX_NAMED_ROWS]
    return self

  @property
  def counts(self) -> Counts:
    return Counts(*self.categories)

  @property
  def two_panel_counts(self) -> Counts:
    return Counts(*self.two_panels)

  def __eq__(self, other):
    return isinstance(other, AisTally) and all(
        getattr(self, name) == getattr(other, name) for name in self.__slots__)

  def __repr__(self):
    return (f"AisTally(counts={self.counts}, int_agreement={dict(self.int_agreement)}, "
            f"ais_agreement={dict(self.ais_agreement)}, two_panels={self.two_panels})")


class TallyAnnotations(beam.CombineFn):
  """AisAnnotation rows of one (data set, model) -> their AisTally."""

  def create_accumulator(self):
    return AisTally()

  def add_input(self, accumulator, row):
    return accumulator.add(row)

  def merge_accumulators(self, accumulators):
    accumulators = iter(accumulators)
    merged = next(accumulators)
    for accumulator in accumulators:
      merged.merge(accumulator)
    return merged

  def extract_output(self, accumulator):
    return accumulator
