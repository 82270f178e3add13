"""The shares the AIS paper prints (percent with one decimal, rounded half up
from the exact fraction) and the significance marks of its columns.

Significance ("significantly lower than the highest score in the column,
p < 0.01"): the paper names no test. We use Fisher's exact test, one-sided
(the model's share is lower than the best's), on the 2x2 table of the two
models' counts: exact, so valid at the shares near 100% and the small counts
of these tables, where the normal approximation of a z- or chi-square test is
poor; one-sided because the mark claims "lower". Outputs differ between models
(most data sets sample each model's inputs apart, and AIS is over each model's
own interpretable outputs), so the test is unpaired. A model is marked when it
is not the column's best and p < alpha against every model tied for best.
"""
import fractions
from typing import Dict, NamedTuple, Optional, Tuple


TEST_NAME = "Fisher's exact test, one-sided (lower than the column's best), unpaired"



def tenths(numerator: int, denominator: int) -> int:
  """100 * numerator / denominator in tenths of a percent, rounded half up."""
  return (2000 * numerator + denominator) // (2 * denominator)


def printed(numerator: int, denominator: int) -> str:
  """A share as the paper prints it ("43.0"); "" where the denominator is 0."""
  if denominator <= 0:
    return ""
  value = tenths(numerator, denominator)
  return f"{value // 10}.{value % 10}"


def parse_printed(text: str) -> int:
  whole, _, tenth = text.partition(".")
  return int(whole) * 10 + int(tenth or 0)


def numerators(value_tenths: int, denominator: int) -> range:
  """Every numerator x with printed(x, denominator) equal to the value."""
  if denominator <= 0:
    return range(0)
  # tenths(x, d) == t  <=>  (2t - 1) d <= 2000 x < (2t + 1) d
  low = -((-(2 * value_tenths - 1) * denominator) // 2000)
  high = -((-(2 * value_tenths + 1) * denominator) // 2000)
  return range(max(low, 0), min(high, denominator + 1))


# ----------------------------------------------------------------------------
# Significance.


def fisher_lower_p(best: Tuple[int, int], other: Tuple[int, int]) -> float:
  """One-sided Fisher exact p that `other` (k, n) has a lower share than `best`."""
  from scipy import stats  # pylint: disable=import-outside-toplevel
  table = [[best[0], best[1] - best[0]], [other[0], other[1] - other[0]]]
  return float(stats.fisher_exact(table, alternative="greater").pvalue)


class Mark(NamedTuple):
  marked: bool
  p_value: Optional[float]  # against the best (the largest p over tied bests)
  best: Tuple[str, ...]  # the models with the column's highest share


def column_marks(cells: Dict[str, Tuple[int, int]], alpha: float) -> Dict[str, Mark]:
  """Per model of one column ({model: (k, n)}): marked iff not best and
  significantly lower than every model tied for best."""
  defined = {model: cell for model, cell in cells.items() if cell[1] > 0}
  if not defined:
    return {model: Mark(False, None, ()) for model in cells}
  top = max(fractions.Fraction(k, n) for k, n in defined.values())
  best = tuple(sorted(m for m, (k, n) in defined.items() if fractions.Fraction(k, n) == top))
  marks = {}
  for model, cell in cells.items():
    if model in best or cell[1] == 0:
      marks[model] = Mark(False, None, best)
      continue
    p_value = max(fisher_lower_p(defined[b], cell) for b in best)
    marks[model] = Mark(p_value < alpha, p_value, best)
  return marks
