"""Which outputs the AIS paper counted: each printed row of its tables fitted to
the released annotations.

Reconciliation: for each printed row, hypotheses about which outputs the
paper counted are tried in order (HYPOTHESES): the counts as released; outputs
rated by two panels of raters (more than five agreeing) counted as two; the
outputs the release lacks, up to the paper's 200 sampled per model, in every
combination of categories; then fewer than 200 outputs in all. `fit_row`
returns every hypothesis whose counts print as the whole row; where none does,
each differing cell is fitted alone.
"""
from typing import Dict, Iterable, List, NamedTuple, Optional, Sequence, Tuple

from autoais.transforms.ais_annotations.shares import numerators
from autoais.transforms.ais_annotations.tally import (CATEGORY_NAMES, PANEL_SIZE, AisTally,
                                                      Counts)


class Hypothesis(NamedTuple):
  name: str
  two_panels_twice: bool
  totals: str  # "released", "sampled" (SAMPLED_ITEMS), "fewer" (between)


# In order: first what the released rows alone give, then outputs the release
# lacks up to the sampled 200, then fewer outputs than that.
HYPOTHESES = (
    Hypothesis("as released", False, "released"),
    Hypothesis("two-panel rows doubled", True, "released"),
    Hypothesis("missing rows up to the sampled total", False, "sampled"),
    Hypothesis("two-panel rows doubled + missing rows up to the sampled total", True,
               "sampled"),
    Hypothesis("missing rows, fewer than sampled", False, "fewer"),
    Hypothesis("two-panel rows doubled + missing rows, fewer than sampled", True, "fewer"),
)


class Fit(NamedTuple):
  """Counts that reproduce the printed cells under one hypothesis."""
  hypothesis: str
  column: Optional[str]  # None: the whole printed row; else the one cell fitted
  base: Counts  # the release's counts, two-panel outputs doubled if the hypothesis says so
  counts: Counts  # the fewest outputs that print as the paper does
  ways: int  # distinct fits (in what the fitted cells see) at that number of outputs

  @property
  def added(self) -> Counts:
    return self.counts.minus(self.base)


def completions(base: Counts, printed_cells: Dict[str, int],
                totals: Iterable[int]) -> List[Counts]:
  """Every Counts with `totals` items, at least `base` in each category, whose
  shares print as `printed_cells` ({'flag'|'int'|'ais': tenths}; absent cells are
  free). Enumerates the numerators that print right, within what the added
  outputs allow, not every composition of the added outputs."""
  found = []
  for total in totals:
    extra = total - base.items
    if extra < 0:
      continue
    flags = range(base.flagged, base.flagged + extra + 1)
    if "flag" in printed_cells:
      flags = _within(numerators(printed_cells["flag"], total), flags)
    for flagged in flags:
      left = extra - (flagged - base.flagged)
      rated = total - flagged
      interpretables = range(base.interpretable,
                             min(base.interpretable + left, rated - base.not_interpretable) + 1)
      if "int" in printed_cells:
        interpretables = _within(numerators(printed_cells["int"], rated), interpretables)
      for interpretable in interpretables:
        attributables = range(base.attributable,
                              interpretable - base.interpretable_only + 1)
        if "ais" in printed_cells:
          attributables = _within(numerators(printed_cells["ais"], interpretable),
                                  attributables)
        for attributable in attributables:
          found.append(Counts(flagged, rated - interpretable,
                              interpretable - attributable, attributable))
  return found


def _within(a: range, b: range) -> range:
  return range(max(a.start, b.start), min(a.stop, b.stop))


# The "fewer" hypotheses add at most this many outputs: a fit that needs more
# invented outputs explains nothing.
MAX_ADDED_FEWER = 10


def _totals(hypothesis: Hypothesis, base_items: int, sampled: int) -> List[List[int]]:
  """Groups of totals to try, smallest first."""
  if hypothesis.totals == "released":
    return [[base_items]]
  if hypothesis.totals == "sampled":
    return [[sampled]] if sampled > base_items else []
  return [[total] for total in range(base_items + 1,
                                     min(sampled, base_items + MAX_ADDED_FEWER + 1))]


def _project(counts: Counts, column: Optional[str]) -> Tuple[int, ...]:
  """What the fitted cells see of some outputs: all four categories for a whole
  row; for one cell, only the categories its share tells apart."""
  if column is None:
    return tuple(counts)
  if column == "flag":
    return counts.flagged, counts.items - counts.flagged
  if column == "int":
    return counts.flagged, counts.not_interpretable, counts.interpretable
  return (counts.flagged + counts.not_interpretable, counts.interpretable_only,
          counts.attributable)


_PROJECTED_NAMES = {
    None: CATEGORY_NAMES,
    "flag": ("flagged", "not flagged"),
    "int": ("flagged", "not interpretable", "interpretable"),
    "ais": ("flagged or not interpretable", "interpretable, not attributable",
            "interpretable and attributable"),
}


def fit_hypothesis(hypothesis: Hypothesis, counts: Counts, two_panels: Counts,
                   printed_cells: Dict[str, int], sampled: int,
                   column: Optional[str] = None) -> Optional[Fit]:
  if hypothesis.two_panels_twice:
    if not two_panels.items:
      return None
    base = counts.plus(two_panels)
  else:
    base = counts
  for totals in _totals(hypothesis, base.items, sampled):
    found = completions(base, printed_cells, totals)
    if found:
      ways = {_project(c.minus(base), column): c for c in found}
      chosen = min(ways)  # the fewest flagged added, then the fewest not interpretable...
      return Fit(hypothesis.name, column, base, ways[chosen], len(ways))
  return None


def fit_row(tally: AisTally, printed_cells: Dict[str, int], sampled: int,
            column: Optional[str] = None) -> List[Fit]:
  """Every hypothesis that reproduces the printed cells, in HYPOTHESES order
  (`column`: fit that one cell alone)."""
  if column is not None:
    printed_cells = {column: printed_cells[column]}
  found = []
  for hypothesis in HYPOTHESES:
    fit = fit_hypothesis(hypothesis, tally.counts, tally.two_panel_counts, printed_cells,
                         sampled, column)
    if fit is not None:
      found.append(fit)
  return found


def any_counts_fit(printed_cells: Dict[str, int], sampled: int) -> bool:
  """Whether any outputs at all, at most `sampled` of them, print as the row."""
  return any(completions(Counts(), printed_cells, [total])
             for total in range(1, sampled + 1))


def _composition(added: Counts, column: Optional[str]) -> str:
  parts = [f"{count} {name}" for count, name in
           zip(_project(added, column), _PROJECTED_NAMES[column]) if count]
  return ", ".join(parts) if parts else "nothing"


def describe_fit(fit: Fit, released: Counts, two_panel_rows: Sequence[tuple],
                 sampled: int) -> str:
  """Which rows make the printed cells, in words."""
  parts = []
  if fit.base != released:
    doubled = fit.base.minus(released)
    named = ", ".join(f"{_file_name(path)}:{line}" + (f" ex-idx {example}" if example else "")
                      for path, line, example in two_panel_rows)
    more = doubled.items - len(two_panel_rows)
    if more > 0:
      named += f" and {more} more"
    parts.append(f"the {doubled.items} output(s) rated by more than {PANEL_SIZE} raters "
                 f"({named}: {_composition(doubled, None)}) counted as two outputs each")
  added = fit.added
  if added.items:
    total = fit.counts.items
    parts.append(f"{added.items} output(s) missing from the release counted as "
                 f"{_composition(added, fit.column)}, {total} outputs in all" +
                 (f" (the {sampled} sampled)" if total == sampled else
                  f" (not the {sampled} sampled: no fit with {sampled})"))
  text = "; ".join(parts) if parts else "as released"
  if fit.ways > 1:
    text += f" (one of {fit.ways} ways that fit)"
  return text


def _file_name(path: str) -> str:
  return path.rsplit("/", 1)[-1]
