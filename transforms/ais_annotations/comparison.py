"""The AIS paper's tables rebuilt from the tallies (transforms/ais_annotations/
tally.py), cell by cell beside the printed ones (paper.py): each cell's share,
its significance mark, the paper's value and, where they differ, why
(reconciliation.py).
"""
import collections
from typing import Dict, Iterable, List, NamedTuple, Optional, Tuple

from autoais.transforms.ais_annotations.paper import (SAMPLED_ITEMS, TABLES, PaperRow,
                                                      paper_row)
from autoais.transforms.ais_annotations.reconciliation import (Fit, any_counts_fit,
                                                               describe_fit, fit_row)
from autoais.transforms.ais_annotations.shares import (TEST_NAME, Mark, column_marks,
                                                       fisher_lower_p, parse_printed,
                                                       printed)
from autoais.transforms.ais_annotations.tally import AisTally


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
