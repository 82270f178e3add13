"""citations' outputs: citations_rows.parquet / .csv (one row per sentence) and
citations_items.parquet / .csv (one row per answer) from the merged rows (the
job skeleton, transforms/rows/), and the per-system leaderboard
citations.{csv,json,md} with bootstrap CIs over questions.

Figures are ALCE's: 100 x np.mean of the per-item values in file order (the
reference's arithmetic), length as words / items. CIs: a percentile bootstrap
over the union of the questions of every system, the same resamples for every
system (transforms/stats/metrics.py BootstrapWeights), so that systems
answering the same questions are compared on the same resamples (paired); a
system's figure in a resample is the mean over its items whose questions were
drawn.
"""
import uuid
from typing import List, NamedTuple, Optional, Tuple

import apache_beam as beam
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from apache_beam.io.filesystems import FileSystems

from autoais.schemas import (CITATION_ITEM_ROW_SCHEMA, CITATION_SENTENCE_SCHEMA,
                     CITATIONS_SYSTEM_SCHEMA, CitationItemRow, CitationSentenceRow,
                     CitationsSystemRow)
from autoais.transforms.io.sorted_runs import (RowRefBuffer, TableFileWriter,
                                               read_table_file)
from autoais.transforms.rows.merge import RowFold, RowTable
from autoais.transforms.rows.summary import WriteSummary, percent
from autoais.transforms.stats.metrics import BootstrapWeights

ITEM_KEY = ("system_name", "source_file", "item_index")
SENTENCE_KEY = ITEM_KEY + ("sentence_index",)


class _MergedSentence(NamedTuple):
  system_name: str
  source_file: str
  item_index: int
  sentence_index: int


class SentencesFold(RowFold):
  """Writes citations_rows.parquet / .csv in item and sentence order."""
  row_type = CitationSentenceRow
  merged_type = _MergedSentence
  sort_key = SENTENCE_KEY
  run_name = "sentences"
  tables = (RowTable("citations_rows", CITATION_SENTENCE_SCHEMA),)
  by_system = False

  def __init__(self):
    self._sentences = 0

  def add(self, row, ref, tables):
    tables["citations_rows"].add(ref)
    self._sentences += 1
    return ()

  def stats(self):
    return {"sentences": self._sentences}


def item_table(paths: List[str], columns: Optional[List[str]] = None) -> pa.Table:
  """The items of ItemsFold's files (`columns` only, where given) as one table
  (an empty one for none)."""
  schema = (CITATION_ITEM_ROW_SCHEMA if columns is None else
            pa.schema([CITATION_ITEM_ROW_SCHEMA.field(name) for name in columns]))
  return pa.concat_tables([read_table_file(path, columns) for path in paths]
                          ) if paths else schema.empty_table()


# Items held before they are appended to their system's file.
_ITEMS_PER_WRITE = 4096


class ItemsFold(RowFold):
  """Writes citations_items.parquet / .csv and gives each system's items, in
  file order, as (system name, path of an Arrow file of its CitationItemRows
  under `items_dir`): the summaries read them back one system at a time, and
  the runner holds paths, not items."""
  row_type = CitationItemRow
  merged_type = CitationItemRow
  sort_key = ITEM_KEY
  run_name = "items"
  tables = (RowTable("citations_items", CITATION_ITEM_ROW_SCHEMA),)

  def __init__(self, items_dir: str):
    self._items_dir = items_dir
    self._system = None
    self._file = None
    self._items = RowRefBuffer()
    self._counts = {"scored": 0, "citations": 0, "reference_model_calls": 0}

  def start_system(self, system_name):
    self._system = system_name
    self._file = TableFileWriter(FileSystems.join(
        self._items_dir, f"items-{uuid.uuid4().hex}.arrow"))

  def add(self, row, ref, tables):
    tables["citations_items"].add(ref)
    self._items.add(ref)
    if self._items.num_rows >= _ITEMS_PER_WRITE:
      self._file.write(self._items.take())
    self._counts["scored"] += 1
    self._counts["citations"] += row.n_citations
    self._counts["reference_model_calls"] += row.reference_calls
    return ()

  def end_system(self, tables):
    if self._items.num_rows:
      self._file.write(self._items.take())
    self._file.close()
    yield self._system, self._file.path

  def stats(self):
    return dict(self._counts)


# ----------------------------------------------------------------------------
# The leaderboard.

# (figure, CI columns) of the figures with a CI.
_WITH_CI = ("citation_rec", "citation_prec", "str_em", "qampari_f1", "claims_nli")



def percent_mean(values) -> Optional[float]:
  """The mean of 0-1 values (a list or a numpy array) as a percentage; None
  for no values."""
  return float(100 * np.mean(values)) if len(values) else None


def _share(part: int, whole: int) -> Optional[float]:
  return 100 * part / whole if whole else None


def _sorted_questions(systems: List[Tuple[str, str]]) -> pa.Array:
  """The distinct questions of every system's items, sorted (Arrow compares
  UTF-8 bytes, which orders as Python orders the strings: by code point)."""
  unique = pa.array([], type=pa.string())
  for _, path in systems:  # one system's questions at a time beside those found
    column = read_table_file(path, ["question"]).column("question")
    unique = pc.unique(pa.chunked_array([unique, *column.chunks], type=pa.string()))
  return unique.take(pc.array_sort_indices(unique))


def _read_column(path: str, name: str) -> pa.ChunkedArray:
  # One column read at a time: the file's other columns, and the decoding of
  # its batches for all of them at once, never fill memory (a million items'
  # columns together were the last minute's peak of the run).
  return read_table_file(path, [name]).column(name)


def _present(values: pa.ChunkedArray) -> np.ndarray:
  """The indexes of the non-null values."""
  return np.flatnonzero(values.is_valid().to_numpy(zero_copy_only=False))


def _taken(values: pa.ChunkedArray, indices: np.ndarray) -> np.ndarray:
  return values.take(pa.array(indices, type=pa.int64())).to_numpy(zero_copy_only=False)


def citations_system_rows(systems: List[Tuple[str, str]], bootstrap_samples: int,
                          seed: int) -> List[CitationsSystemRow]:
  """`systems`: (name, path of ItemsFold's file of its items) of each system, in
  output order; the items are read one system and one column at a time, and
  the columns go to numpy arrays (no Python object per item: at a million items
  those made this step the run's peak); the questions are ordered and found in
  Arrow."""
  questions = _sorted_questions(systems)
  # Drawn again for each system: cached, the resamples would hold samples x
  # questions doubles (40 MB at 25,000 questions) through the whole step.
  bootstrap = BootstrapWeights(max(len(questions), 1), bootstrap_samples, seed,
                               cache=False)
  rows = []
  for name, path in systems:
    question = _read_column(path, "question")
    n_items = len(question)
    where = pc.index_in(question, value_set=questions).to_numpy(
        zero_copy_only=False).astype(np.int64)
    del question
    ratios, present, indices_of = [], {}, {}
    for figure_name in _WITH_CI:
      values = _read_column(path, figure_name)
      indices_of[figure_name] = _present(values)
      present[figure_name] = _taken(values, indices_of[figure_name]).astype(float)
      numerator = np.bincount(where[indices_of[figure_name]], weights=present[figure_name],
                              minlength=len(questions))
      denominator = np.bincount(where[indices_of[figure_name]],
                                minlength=len(questions)).astype(float)
      ratios.append((numerator, denominator))
    intervals = dict(zip(_WITH_CI, bootstrap.ratio_intervals(ratios)))

    def figure(figure_name, intervals=intervals, present=present):
      interval = intervals[figure_name] if len(present[figure_name]) else None
      low, high = (None, None) if interval is None else (100 * interval[0],
                                                         100 * interval[1])
      return percent_mean(present[figure_name]), low, high

    def total(column_name, path=path):
      return int(_read_column(path, column_name).to_numpy().sum())

    def kept(column_name, indices, path=path):
      return _taken(_read_column(path, column_name), indices)

    sentence_counts = _read_column(path, "n_sentences").to_numpy()
    n_sentences = int(sentence_counts.sum())
    multi = total("n_multi_citation")
    multi_supported = total("n_multi_supported")
    qampari = indices_of["qampari_f1"]
    with_qa = indices_of["str_em"]
    # The name ItemsFold wrote the file under is the system_name of its items.
    rows.append(CitationsSystemRow(
        name, n_items, int(np.count_nonzero(sentence_counts)), n_sentences,
        total("n_citations"),
        *figure("citation_rec"), *figure("citation_prec"),
        _share(multi, n_sentences), _share(multi_supported, multi),
        _share(total("n_overcited"), multi_supported),
        len(with_qa), *figure("str_em"),
        percent_mean(kept("str_hit", with_qa).astype(float)),
        len(qampari),
        float(np.mean(kept("qampari_num_preds", qampari))) if len(qampari) else None,
        percent_mean(kept("qampari_prec", qampari)),
        percent_mean(kept("qampari_rec", qampari)),
        percent_mean(kept("qampari_rec_top5", qampari)),
        *figure("qampari_f1"),
        percent_mean(kept("qampari_f1_top5", qampari)),
        len(indices_of["claims_nli"]), *figure("claims_nli"),
        total("length") / n_items,
        total("reference_calls")))
  return rows


def _number(value: Optional[float], low: Optional[float] = None,
            high: Optional[float] = None) -> str:
  """A figure that is a percentage already, to 2 decimals, as ALCE prints it."""
  return percent(value, low, high, scale=1, digits=2)


def citations_markdown(rows) -> str:
  lines = [
      "Citation recall and precision (ALCE), in % as ALCE prints them (100 x the "
      "mean over answers with at least one sentence); 95% bootstrap CIs over "
      "questions in brackets, the same resamples for every system. STR-EM / "
      "STR-Hit over answers with `qa_pairs`, QAMPARI over QAMPARI answers with "
      "`answers`, claims NLI over answers with `claims`; length in words.",
      "",
      "| system | items | sentences | citations | citation_rec | citation_prec | "
      "multi-citation % | supported % | overcite % | str_em | str_hit | qampari_f1 | "
      "qampari_f1_top5 | claims_nli | length | eval.py calls |",
      "|---|---:|---:|---:|---|---|---:|---:|---:|---|---:|---|---:|---|---:|---:|",
  ]
  for row in rows:
    lines.append(
        f"| {row.system_name} | {row.n_items} | {row.n_sentences} | {row.n_citations} | "
        f"{_number(row.citation_rec, row.citation_rec_ci_low, row.citation_rec_ci_high)} | "
        f"{_number(row.citation_prec, row.citation_prec_ci_low, row.citation_prec_ci_high)}"
        f" | {_number(row.multi_citation_share)} | {_number(row.multi_supported_share)} | "
        f"{_number(row.overcite_share)} | "
        f"{_number(row.str_em, row.str_em_ci_low, row.str_em_ci_high)} | "
        f"{_number(row.str_hit)} | "
        f"{_number(row.qampari_f1, row.qampari_f1_ci_low, row.qampari_f1_ci_high)} | "
        f"{_number(row.qampari_f1_top5)} | "
        f"{_number(row.claims_nli, row.claims_nli_ci_low, row.claims_nli_ci_high)} | "
        f"{row.length:.2f} | {row.reference_calls} |")
  return "\n".join(lines) + "\n"


def _system_rows(systems, bootstrap_samples: int, seed: int):
  return citations_system_rows(sorted(systems, key=lambda system: system[0]),
                               bootstrap_samples, seed)


def _describe(rows):
  return {"systems": len(rows), "items": sum(row.n_items for row in rows)}


class SummarizeCitations(beam.PTransform):
  """PCollection[(system name, path of ItemsFold's file of its items)] ->
  citations.{csv,json,md}; returns WriteSummary's singleton (systems and
  items)."""

  def __init__(self, output_dir: str, header: dict, bootstrap_samples: int, seed: int,
               scorer: dict):
    super().__init__()
    self._output_dir = output_dir
    self._scorer = scorer
    self._header = dict(header, bootstrap={
        "method": "percentile", "level": 0.95, "samples": bootstrap_samples,
        "seed": seed, "unit": "question", "paired": True})
    self._samples = bootstrap_samples
    self._seed = seed

  def expand(self, systems):
    return (systems
            | "ListSystems" >> beam.combiners.ToList()
            | "SummarizeSystems" >> beam.FlatMap(_system_rows, self._samples,
                                                 self._seed)
            | "WriteSummary" >> WriteSummary(
                self._output_dir, "citations", CITATIONS_SYSTEM_SCHEMA,
                dict(self._header, units={"figures": "percent", "length": "words"}),
                citations_markdown, describe=_describe, scorer=self._scorer))
