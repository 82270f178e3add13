"""Human AIS annotations (SPEC 5.6): the AIS paper's release read row by row
(transforms/ais_annotations/readers.py), tallied per (data set, model) with a
mergeable accumulator, and turned into the paper's tables: Flag, Int and AIS
shares, rater-agreement distributions, significance marks, and a comparison
with the printed cells that explains each cell that differs.

Definitions (the paper's §4.1): an output is flagged, or else interpretable or
not, and an interpretable output is attributable or not (all by majority of its
raters, as released). Flag = flagged / outputs; Int = interpretable / outputs
not flagged; AIS = attributable / interpretable. Shares print as percent with
one decimal, rounded half up from the exact fraction.

Significance ("significantly lower than the highest score in the column,
p < 0.01"): the paper names no test. We use Fisher's exact test, one-sided
(the model's share is lower than the best's), on the 2x2 table of the two
models' counts: exact, so valid at the shares near 100% and the small counts
of these tables, where the normal approximation of a z- or chi-square test is
poor; one-sided because the mark claims "lower". Outputs differ between models
(most data sets sample each model's inputs apart, and AIS is over each model's
own interpretable outputs), so the test is unpaired. A model is marked when it
is not the column's best and p < alpha against every model tied for best.

Reconciliation: for each printed row, hypotheses about which outputs the
paper counted are tried in order (HYPOTHESES): the counts as released; outputs
rated by two panels of raters (more than five agreeing) counted as two; the
outputs the release lacks, up to the paper's 200 sampled per model, in every
combination of categories; then fewer than 200 outputs in all. `fit_row`
returns every hypothesis whose counts print as the whole row; where none does,
each differing cell is fitted alone.
"""
import bisect
import collections
import fractions
import json
from typing import Dict, Iterable, List, NamedTuple, Optional, Sequence, Tuple

import apache_beam as beam

from autoais.schemas import AisAgreementRow, AisAnnotation, AisTableRow
from autoais.transforms.ais_annotations.paper import (PAPER, SAMPLED_ITEMS, TABLES, PaperRow,
                                              paper_row)

PANEL_SIZE = 5  # raters per output (paper §4: "we ask five annotators")
# Rows named in an explanation: a tally keeps the first few, by file and line.
MAX_NAMED_ROWS = 20
TEST_NAME = "Fisher's exact test, one-sided (lower than the column's best), unpaired"


# ----------------------------------------------------------------------------
# Counts and the per-model accumulator.

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


# ----------------------------------------------------------------------------
# Printed shares.


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


# ----------------------------------------------------------------------------
# Reconciliation with the printed cells.


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


# ----------------------------------------------------------------------------
# The tables.

COLUMNS_OF_TABLE = ("flag", "int", "ais")
COLUMN_TITLES = {"flag": "Flag", "int": "Int", "ais": "AIS"}


class Cell(NamedTuple):
  column: str
  numerator: int
  denominator: int
  value: str
  paper: Optional[str]
  equal: Optional[bool]
  mark: Optional[Mark]  # None for Flag (never marked)
  paper_mark: Optional[bool]
  mark_equal: Optional[bool]
  fits: List[Fit]  # where the value differs: each hypothesis whose counts print
  # as the paper (those that fit the whole row, else those that fit this cell)
  explanation: str  # where the value differs: why, in words ("" where it does not)
  mark_explanation: str  # where the mark differs

  @property
  def fit(self) -> Optional[Fit]:
    return self.fits[0] if self.fits else None


class ModelTable(NamedTuple):
  dataset: str
  model: str
  paper: Optional[PaperRow]
  tally: AisTally
  cells: Dict[str, Cell]
  fits: List[Fit]  # every hypothesis that reproduces the whole printed row
  status: str
  note: str  # the row's finding, in words


class DatasetTable(NamedTuple):
  dataset: str
  number: Optional[int]
  title: str
  models: List[ModelTable]


def _printed_cells(row: PaperRow, table_has_flag: bool) -> Dict[str, int]:
  cells = {"int": parse_printed(row.int), "ais": parse_printed(row.ais)}
  if table_has_flag:
    cells["flag"] = parse_printed(row.flag)
  return cells


def _order(dataset: str, models: Iterable[str]) -> List[str]:
  table = TABLES.get(dataset)
  rank = {row.model: i for i, row in enumerate(table.rows)} if table else {}
  return sorted(models, key=lambda m: (rank.get(m, len(rank)), m))


def dataset_order(datasets: Iterable[str]) -> List[str]:
  return sorted(datasets, key=lambda d: (TABLES[d].number if d in TABLES else 99, d))


def build_tables(tallies: Iterable[Tuple[Tuple[str, str], AisTally]],
                 alpha: float, sampled: int = SAMPLED_ITEMS) -> List[DatasetTable]:
  """((data set, model), AisTally) pairs -> one DatasetTable per data set, in
  the paper's order (Tables 3-6, then data sets the paper does not have)."""
  by_dataset = collections.defaultdict(dict)
  for (dataset, model), tally in tallies:
    by_dataset[dataset][model] = tally
  tables = []
  for dataset in dataset_order(by_dataset):
    here = by_dataset[dataset]
    paper_table = TABLES.get(dataset)
    models = _order(dataset, here)
    cells = {column: {m: here[m].counts.cell(column) for m in models}
             for column in COLUMNS_OF_TABLE}
    marks = {column: column_marks(cells[column], alpha) for column in ("int", "ais")}
    row_fits = {}
    for model in models:
      row = paper_row(dataset, model)
      if row is not None:
        row_fits[model] = fit_row(here[model], _printed_cells(row, paper_table.has_flag),
                                  sampled)
    rows = [_model_table(dataset, model, here[model], paper_table, cells, marks,
                         row_fits, alpha, sampled) for model in models]
    tables.append(DatasetTable(
        dataset, paper_table.number if paper_table else None,
        paper_table.title if paper_table else f"{dataset} (not in the paper)", rows))
  return tables


def _model_table(dataset, model, tally, paper_table, cells, marks, row_fits, alpha,
                 sampled) -> ModelTable:
  row = paper_row(dataset, model)
  fits = row_fits.get(model, [])
  printed_cells = _printed_cells(row, paper_table.has_flag) if row else {}
  model_cells = {}
  for column in COLUMNS_OF_TABLE:
    k, n = cells[column][model]
    value = printed(k, n)
    mark = marks[column][model] if column in marks else None
    paper_value = getattr(row, column) if row is not None else None
    equal = None if paper_value is None else value == paper_value
    paper_mark = getattr(row, f"{column}_mark") if row is not None and column != "flag" \
        else None
    mark_equal = None if paper_mark is None else mark.marked == paper_mark
    cell_fits, explanation = [], ""
    if equal is False:
      cell_fits = fits or fit_row(tally, printed_cells, sampled, column)
      explanation = _cell_explanation(column, k, n, paper_value, tally, cell_fits, sampled)
    mark_explanation = ""
    if mark_equal is False:
      mark_explanation = _mark_explanation(column, model, mark, paper_mark,
                                           cells[column], row_fits, alpha)
    model_cells[column] = Cell(column, k, n, value, paper_value, equal, mark, paper_mark,
                               mark_equal, cell_fits, explanation, mark_explanation)
  differing = [c for c in model_cells.values() if c.equal is False]
  if row is None:
    status, note = "not in the paper", ""
  elif not differing:
    status, note = "reproduced", ""
  elif fits:
    status = "explained"
    note = "reproduced by " + describe_fit(fits[0], tally.counts, tally.two_panel_rows,
                                           sampled)
    if len(fits) > 1:
      note += "; also fit: " + "; ".join(fit.hypothesis for fit in fits[1:])
  else:
    unexplained = [c for c in differing if c.fit is None]
    status = "not explained" if unexplained else "explained cell by cell"
    note = "no hypothesis reproduces the whole printed row"
    if not any_counts_fit(printed_cells, sampled):
      note += (f"; no counts of at most {sampled} outputs print as this row at all: its "
               "printed cells are not the shares of one set of outputs")
  if any(c.mark_equal is False for c in model_cells.values()):
    status += ", significance mark differs"
  return ModelTable(dataset, model, row, tally, model_cells, fits, status, note)


def _cell_explanation(column, k, n, paper_value, tally, fits, sampled) -> str:
  text = (f"{COLUMN_TITLES[column]}: paper {paper_value}, release {printed(k, n)} "
          f"({k}/{n})")
  if not fits:
    return f"{text}; not reproduced: no hypothesis gives {paper_value} even for this cell alone"
  fit = fits[0]
  fitted = fit.counts.cell(column)
  scope = "this cell alone" if fit.column else "the whole row"
  text += (f"; {fitted[0]}/{fitted[1]} = {printed(*fitted)} ({scope}, {fit.hypothesis}): "
           f"{describe_fit(fit, tally.counts, tally.two_panel_rows, sampled)}")
  if len(fits) > 1:
    text += "; also fit: " + "; ".join(other.hypothesis for other in fits[1:])
  return text


def _mark_explanation(column: str, model: str, mark: Mark, paper_mark: bool,
                      cells: Dict[str, Tuple[int, int]], row_fits: Dict[str, List[Fit]],
                      alpha: float) -> str:
  if not mark.best:
    return ""
  best = mark.best[0]
  k, n = cells[model]
  kb, nb = cells[best]
  said = "marks" if paper_mark else "does not mark"
  if mark.p_value is None:
    # No test is run for a model among the column's best, or without outputs
    # in the column (column_marks).
    why = (f"{model} has no rated outputs in this column" if n == 0
           else f"{model} has the column's highest share")
    return f"{COLUMN_TITLES[column]} mark: the paper {said} this cell; no {TEST_NAME}: {why}"
  text = (f"{COLUMN_TITLES[column]} mark: the paper {said} this cell; {TEST_NAME}: "
          f"p = {mark.p_value:.4g} for {k}/{n} against {best} {kb}/{nb} as released")
  own, other = row_fits.get(model), row_fits.get(best)
  if own and other:
    fitted, fitted_best = own[0].counts.cell(column), other[0].counts.cell(column)
    if (fitted, fitted_best) != ((k, n), (kb, nb)):
      text += (f"; p = {fisher_lower_p(fitted_best, fitted):.4g} for the counts that "
               f"reproduce the printed cells ({fitted[0]}/{fitted[1]} against "
               f"{fitted_best[0]}/{fitted_best[1]})")
  return text + f"; a mark needs p < {alpha:g}"


# ----------------------------------------------------------------------------
# Renderings: CSV rows, JSON, Markdown.


def table_rows(tables: Sequence[DatasetTable], sampled: int) -> List[AisTableRow]:
  rows = []
  for table in tables:
    for model in table.models:
      c = model.cells
      counts = model.tally.counts
      rows.append(AisTableRow(
          dataset=table.dataset, paper_table=table.number, model=model.model,
          paper_label=model.paper.label if model.paper else None,
          items=counts.items, flagged=counts.flagged,
          interpretable=counts.interpretable, attributable=counts.attributable,
          flag=c["flag"].value, paper_flag=c["flag"].paper, flag_equal=c["flag"].equal,
          int=c["int"].value, int_mark=c["int"].mark.marked,
          int_p_value=c["int"].mark.p_value, paper_int=c["int"].paper,
          paper_int_mark=c["int"].paper_mark, int_equal=c["int"].equal,
          ais=c["ais"].value, ais_mark=c["ais"].mark.marked,
          ais_p_value=c["ais"].mark.p_value, paper_ais=c["ais"].paper,
          paper_ais_mark=c["ais"].paper_mark, ais_equal=c["ais"].equal,
          status=model.status, explanation=row_explanation(model, sampled)))
  return rows


def _distribution_key(value: Optional[int]):
  return (value is None, value if value is not None else 0)


def agreement_rows(tables: Sequence[DatasetTable]) -> List[AisAgreementRow]:
  rows = []
  for table in tables:
    for model in table.models:
      for question, histogram in (("INT", model.tally.int_agreement),
                                  ("AIS", model.tally.ais_agreement)):
        total = sum(histogram.values())
        for value in sorted(histogram, key=_distribution_key):
          rows.append(AisAgreementRow(table.dataset, model.model, question, value,
                                      histogram[value], round(histogram[value] / total, 6)))
  return rows


def _histogram_json(histogram) -> Dict[str, int]:
  return {("none" if value is None else str(value)): histogram[value]
          for value in sorted(histogram, key=_distribution_key)}


def _fit_json(fit: Fit) -> Dict[str, object]:
  return {"hypothesis": fit.hypothesis, "cell": COLUMN_TITLES.get(fit.column),
          "base": fit.base._asdict(), "counts": fit.counts._asdict(),
          "added": fit.added._asdict(), "ways": fit.ways}


def _cell_json(cell: Cell) -> Dict[str, object]:
  entry = {"value": cell.value, "numerator": cell.numerator,
           "denominator": cell.denominator, "paper": cell.paper, "equal": cell.equal}
  if cell.mark is not None:
    entry.update(mark=cell.mark.marked, p_value=cell.mark.p_value,
                 best=list(cell.mark.best), paper_mark=cell.paper_mark,
                 mark_equal=cell.mark_equal)
  if cell.fit is not None:
    fitted = cell.fit.counts.cell(cell.column)
    entry["fitted"] = {"numerator": fitted[0], "denominator": fitted[1],
                       "value": printed(*fitted), "hypothesis": cell.fit.hypothesis,
                       "cell_alone": cell.fit.column is not None}
  if cell.explanation:
    entry["explanation"] = cell.explanation
  if cell.mark_explanation:
    entry["mark_explanation"] = cell.mark_explanation
  return entry


def summarize(tables: Sequence[DatasetTable]) -> Dict[str, int]:
  """Cell and mark counts: compared with the paper, equal, explained."""
  summary = collections.Counter()
  for table in tables:
    for model in table.models:
      for cell in model.cells.values():
        if cell.equal is None:
          continue
        summary["cells_compared"] += 1
        if cell.equal:
          summary["cells_equal"] += 1
        elif cell.fit is None:
          summary["cells_not_explained"] += 1
        elif cell.fit.column is None:
          summary["cells_explained_with_their_row"] += 1
        else:
          summary["cells_explained_alone"] += 1
        if cell.mark_equal is not None:
          summary["marks_compared"] += 1
          summary["marks_equal"] += cell.mark_equal
  keys = ("cells_compared", "cells_equal", "cells_explained_with_their_row",
          "cells_explained_alone", "cells_not_explained", "marks_compared", "marks_equal")
  return {key: summary[key] for key in keys}


def tables_json(tables: Sequence[DatasetTable], alpha: float, sampled: int,
                summary: Dict[str, int]) -> str:
  datasets = []
  for table in tables:
    models = []
    for model in table.models:
      counts = model.tally.counts
      models.append({
          "model": model.model,
          "paper_label": model.paper.label if model.paper else None,
          "status": model.status,
          "note": model.note or None,
          "counts": dict(counts._asdict(), items=counts.items,
                         interpretable=counts.interpretable),
          "cells": {COLUMN_TITLES[column]: _cell_json(cell)
                    for column, cell in model.cells.items()},
          "row_fits": [_fit_json(fit) for fit in model.fits],
          "agreement": {"INT": _histogram_json(model.tally.int_agreement),
                        "AIS": _histogram_json(model.tally.ais_agreement)},
          "rated_by_two_panels": {
              "counts": model.tally.two_panel_counts._asdict(),
              "rows": [{"source_file": f, "source_line": line, "ex_idx": example}
                       for f, line, example in model.tally.two_panel_rows]},
      })
    datasets.append({"dataset": table.dataset, "paper_table": table.number,
                     "title": table.title, "models": models})
  return json.dumps({
      "paper": PAPER,
      "definitions": {
          "Flag": "flagged outputs / outputs",
          "Int": "interpretable outputs / outputs not flagged",
          "AIS": "interpretable and attributable outputs / interpretable outputs",
          "printed": "percent, one decimal, rounded half up from the exact fraction",
      },
      "significance": {"test": TEST_NAME, "alpha": alpha,
                       "compared_with": "the model(s) with the column's highest share; "
                                        "marked iff p < alpha against each"},
      "reconciliation": {"sampled_outputs_per_model": sampled, "panel_size": PANEL_SIZE,
                         "max_added_when_fewer": MAX_ADDED_FEWER,
                         "hypotheses": [h.name for h in HYPOTHESES]},
      "summary": summary,
      "datasets": datasets,
  }, indent=2, ensure_ascii=False) + "\n"


def _cell_text(cell: Cell) -> str:
  mark = "*" if cell.mark is not None and cell.mark.marked else ""
  return f"{cell.value}{mark}" if cell.value else "n/a"


def _paper_text(cell: Cell) -> str:
  if cell.paper is None:
    return ""
  mark = "*" if cell.paper_mark else ""
  same = cell.equal and cell.mark_equal is not False
  return f"{cell.paper}{mark} {'=' if same else '≠'}"


def _agreement_text(histogram) -> str:
  return " ".join(f"{'none' if v is None else v}:{histogram[v]}"
                  for v in sorted(histogram, key=_distribution_key, reverse=True))


def row_explanation(model: ModelTable, sampled: int) -> str:
  """A row's differences in few words: the row's fit once, then each differing
  cell's counts as released and as fitted, then differing marks."""
  parts = [model.note] if model.note else []
  tally = model.tally
  for cell in model.cells.values():
    if cell.equal is False:
      text = (f"{COLUMN_TITLES[cell.column]} {cell.numerator}/{cell.denominator} = "
              f"{cell.value}")
      if cell.fit is None:
        text += f", not reproduced (paper {cell.paper})"
      else:
        fitted = cell.fit.counts.cell(cell.column)
        text += f" -> {fitted[0]}/{fitted[1]} = {printed(*fitted)}"
        if cell.fit.column is not None:
          text += (f" ({cell.fit.hypothesis}, this cell alone: "
                   f"{describe_fit(cell.fit, tally.counts, tally.two_panel_rows, sampled)}")
          if len(cell.fits) > 1:
            text += "; also fit: " + "; ".join(fit.hypothesis for fit in cell.fits[1:])
          text += ")"
      parts.append(text)
    if cell.mark_explanation:
      parts.append(cell.mark_explanation)
  return "; ".join(parts)


def tables_markdown(tables: Sequence[DatasetTable], alpha: float, sampled: int,
                    summary: Dict[str, int]) -> str:
  lines = [
      "# AIS human evaluation, recomputed from the release",
      "",
      f"Paper: {PAPER}. Flag = flagged / outputs; Int = interpretable / outputs not "
      "flagged; AIS = attributable / interpretable; percent, one decimal (half up).",
      f"`*`: lower than the column's best, p < {alpha:g}, {TEST_NAME} (the paper names "
      "no test). A paper cell is followed by `=` (ours prints the same, mark "
      "included) or `≠` (see the notes under the table).",
      "",
      f"Cells compared with the paper: {summary['cells_compared']}; equal as released: "
      f"{summary['cells_equal']}; differing, explained with their whole row: "
      f"{summary['cells_explained_with_their_row']}; differing, explained only cell by "
      f"cell: {summary['cells_explained_alone']}; not explained: "
      f"{summary['cells_not_explained']}. Significance marks equal: "
      f"{summary['marks_equal']} of {summary['marks_compared']}.",
  ]
  for table in tables:
    title = (f"## {table.title}" if table.number is None else
             f"## Table {table.number}: {table.title.split(' (Table')[0]} (`{table.dataset}`)")
    lines += ["", title, ""]
    with_flag = (table.number is None or TABLES[table.dataset].has_flag or
                 any(m.tally.counts.flagged for m in table.models))
    columns = COLUMNS_OF_TABLE if with_flag else ("int", "ais")
    header = ["Model (paper)", "release model-name", "outputs"]
    for column in columns:
      header += [COLUMN_TITLES[column], "paper"]
    lines.append("| " + " | ".join(header) + " |")
    lines.append("|" + "---|" * 2 + "---:|" + "---:|---|" * len(columns))
    notes = []
    for model in table.models:
      cells = [model.paper.label if model.paper else "(not in the paper)",
               f"`{model.model}`", str(model.tally.counts.items)]
      for column in columns:
        cells += [_cell_text(model.cells[column]), _paper_text(model.cells[column])]
      lines.append("| " + " | ".join(cells) + " |")
      if model.status not in ("reproduced", "not in the paper"):
        notes.append(f"* `{model.model}` ({model.status}): "
                     f"{row_explanation(model, sampled)}.")
    if notes:
      lines += [""] + notes
    lines += ["", "Raters agreeing with the consensus (raters:outputs; INT over outputs "
              "not flagged, AIS over interpretable outputs):", ""]
    for model in table.models:
      lines.append(f"* `{model.model}`: INT {_agreement_text(model.tally.int_agreement)}"
                   f"; AIS {_agreement_text(model.tally.ais_agreement)}")
  return "\n".join(lines) + "\n"
