"""The human check of `autoais citations` (issue 18, item 4): where items carry
human citation judgements in ALCE's human_eval format, how the automatic
citation recall and precision agree with them.

    human = ({"sentences": sentence_rows, "systems": items_per_system}
             | "CheckAgainstHumans" >> CheckAgainstHumans(output_dir))

Only items whose judgements align with the sentences split here (steps.py
human_check) are read. Per system and over every system pooled, on those items:

  * figures: the human citation recall and precision (steps.human_figures) and
    the automatic ones, 100 x the mean over the items, in file order, as ALCE
    prints them;
  * recall judgements, one per sentence: the automatic `supported` against the
    human `sentence_recall_score`, with the agreement job's statistics
    (transforms/stats/agreement.py: accuracy, balanced accuracy, Cohen's kappa,
    confusion counts; ROC-AUC and PR-AUC of nli_score over the sentences
    scored);
  * precision judgements, one per used citation: credited automatically where
    ALCE's precision credits it (a supported sentence's only citation, or a
    needed one of several), by the human where the sentence is supported and
    the document supports it fully or partly (ALCE's analysis of its human
    evaluation), with the same statistics (no score: the credit is a decision
    of up to three model calls).

Across systems, Pearson / Spearman / Kendall between the human and the
automatic figures (defined from three systems). Writes citations_human.csv /
.json / .md; returns one dict for run.json (items judged, by alignment).
"""
from typing import Dict, List, Optional

import apache_beam as beam
import pyarrow as pa
import pyarrow.compute as pc

from autoais.schemas import CITATIONS_HUMAN_SCHEMA, CitationSentenceRow, CitationsHumanRow
from autoais.transforms.citations.steps import ALIGNED, HUMAN_CHECKS, NO_JUDGEMENTS
from autoais.transforms.citations.tables import item_table, percent_mean
from autoais.transforms.io.summary import write_summary_files
from autoais.transforms.rows.summary import named_by_scorer, percent
from autoais.transforms.stats.agreement import (FN, FP, TN, TP, AgreementCounts,
                                        agreement_statistics, correlations)

RECALL, PRECISION = "recall", "precision"
STEM = "citations_human"
ALL_SYSTEMS = "all systems"


def automatic_credits(row: CitationSentenceRow) -> List[bool]:
  """Per used citation of a sentence, whether ALCE's citation precision
  credits it."""
  used = len(row.used.split(",")) if row.used else 0
  if not row.supported:
    return [False] * used
  if used == 1:
    return [True]
  return [flag == "Y" for flag in row.needed.split(",")]


def _judgements(row: CitationSentenceRow):
  """(system, (kind, human, automatic, score)) per judgement of an aligned
  sentence."""
  if row.human_supported is None:
    return
  yield row.system_name, (RECALL, row.human_supported, row.supported, row.nli_score)
  human_scores = [int(score) for score in row.human_citation_scores.split(",")
                  ] if row.human_citation_scores else []
  for score, credited in zip(human_scores, automatic_credits(row)):
    yield row.system_name, (PRECISION, row.human_supported and score > 0, credited,
                            None)


class _CountJudgementsFn(beam.CombineFn):
  """(kind, human, automatic, score) -> {kind: AgreementCounts}."""

  def create_accumulator(self):
    return {RECALL: AgreementCounts(), PRECISION: AgreementCounts()}

  def add_input(self, accumulator, element):
    kind, human, automatic, score = element
    accumulator[kind].add(bool(human), bool(automatic), score)
    return accumulator

  def merge_accumulators(self, accumulators):
    accumulators = iter(accumulators)
    merged = next(accumulators)
    for accumulator in accumulators:
      for kind, counts in accumulator.items():
        merged[kind].merge(counts)
    return merged

  def extract_output(self, accumulator):
    for counts in accumulator.values():
      counts.scores.flush()
    return accumulator


# The columns of the items that _system_row reads.
_ITEM_COLUMNS = ["human_check", "human_citation_rec", "citation_rec",
                 "human_citation_prec", "citation_prec"]


def _system_row(name: Optional[str], items: pa.Table, counts: Dict[str, AgreementCounts],
                statistics: Dict[str, Dict[str, object]],
                n_items: Optional[int] = None) -> CitationsHumanRow:
  """`items`: the table of the system's (or of all systems') items, in file
  order, with at least _ITEM_COLUMNS, or only those of them that carry
  judgements, with `n_items` the count of all; `statistics`:
  agreement_statistics of each kind's `counts`."""
  # Masks over the items in Arrow (a run of a million items would make a
  # million Python strings of each column); the few figured values are made
  # Python values, in item order, for the means.
  check = items.column("human_check")
  judged = pc.sum(pc.not_equal(check, NO_JUDGEMENTS)).as_py() or 0
  aligned = pc.equal(check, ALIGNED)
  figured = pc.and_(aligned, pc.is_valid(items.column("human_citation_rec")))

  def mean_of(column):
    return percent_mean(items.column(column).filter(figured).to_pylist())

  recall, precision = statistics[RECALL], statistics[PRECISION]
  return CitationsHumanRow(
      name, items.num_rows if n_items is None else n_items, judged,
      pc.sum(aligned).as_py() or 0, counts[RECALL].n, counts[PRECISION].n,
      mean_of("human_citation_rec"), mean_of("citation_rec"),
      mean_of("human_citation_prec"), mean_of("citation_prec"),
      recall["accuracy"], recall["balanced_accuracy"], recall["cohen_kappa"],
      recall["roc_auc"], *(counts[RECALL].confusion[cell] for cell in (TP, FP, TN, FN)),
      precision["accuracy"], precision["balanced_accuracy"], precision["cohen_kappa"],
      *(counts[PRECISION].confusion[cell] for cell in (TP, FP, TN, FN)))


def _empty_counts():
  return _CountJudgementsFn().create_accumulator()


def _statistics(counts: Dict[str, AgreementCounts]) -> Dict[str, Dict[str, object]]:
  return {kind: agreement_statistics(counts[kind]) for kind in (RECALL, PRECISION)}


def human_check_markdown(rows: List[CitationsHumanRow]) -> str:
  if not any(row.n_items_judged for row in rows):
    return ("No item carries human citation judgements (ALCE's human_eval format, "
            "an item's `sentences`): nothing to check.\n")
  lines = [
      "Citation recall and precision against human judgements (ALCE's human_eval "
      "format), over the items whose judgements align with the sentences split "
      "here. Figures in % as ALCE prints them, human then automatic on the same "
      "items; agreement of the automatic decisions with the human ones per "
      "sentence (recall) and per used citation (precision).",
      "",
      "| system | items judged | aligned | sentences | citations | recall human | "
      "recall auto | precision human | precision auto | recall accuracy | recall "
      "kappa | recall ROC-AUC | precision accuracy | precision kappa |",
      "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
  ]

  def number(value):
    return "" if value is None else f"{value:.3f}"

  for row in rows:
    lines.append(
        f"| {row.system_name or ALL_SYSTEMS} | {row.n_items_judged} | "
        f"{row.n_items_aligned} | {row.n_sentences} | {row.n_citations} | "
        f"{percent(row.human_citation_rec, scale=1, digits=2)} | "
        f"{percent(row.citation_rec, scale=1, digits=2)} | "
        f"{percent(row.human_citation_prec, scale=1, digits=2)} | "
        f"{percent(row.citation_prec, scale=1, digits=2)} | "
        f"{number(row.recall_accuracy)} | {number(row.recall_cohen_kappa)} | "
        f"{number(row.recall_roc_auc)} | {number(row.precision_accuracy)} | "
        f"{number(row.precision_cohen_kappa)} |")
  return "\n".join(lines) + "\n"


def _system_level(rows: List[CitationsHumanRow]) -> Dict[str, object]:
  systems = [row for row in rows if row.system_name is not None
             and row.human_citation_rec is not None]
  return {"systems": len(systems),
          "citation_rec": correlations([row.human_citation_rec for row in systems],
                                       [row.citation_rec for row in systems]),
          "citation_prec": correlations([row.human_citation_prec for row in systems],
                                        [row.citation_prec for row in systems])}


class _WriteHumanCheckFn(beam.DoFn):

  def __init__(self, output_dir: str, scorer: dict):
    self._output_dir = output_dir
    self._scorer = scorer

  def process(self, systems):
    """`systems`: [(system, {"items": [path of ItemsFold's file of its items],
    "counts": [{kind: AgreementCounts}]})]."""
    rows, statistics, judged_items = [], {}, []
    pooled = _empty_counts()
    n_items = 0
    for name, groups in sorted(systems, key=lambda system: system[0]):
      items = item_table(list(groups["items"]), _ITEM_COLUMNS)
      # One accumulator per system (CombinePerKey); none where no sentence of
      # the system was judged.
      counts = next(iter(groups["counts"]), None) or _empty_counts()
      for kind in (RECALL, PRECISION):
        pooled[kind].merge(counts[kind])
      statistics[name] = _statistics(counts)
      rows.append(_system_row(name, items, counts, statistics[name]))
      # The pooled row reads only the items that carry judgements (every
      # figure but the count of items is over them), so one system's items are
      # held at a time, not every system's: a million items' columns at once
      # were a step of the run's last minute.
      n_items += items.num_rows
      judged_items.append(items.filter(
          pc.not_equal(items.column("human_check"), NO_JUDGEMENTS)))
      del items
    statistics[ALL_SYSTEMS] = _statistics(pooled)
    judged_items = (pa.concat_tables(judged_items) if judged_items
                    else item_table([], _ITEM_COLUMNS))
    rows.append(_system_row(None, judged_items, pooled, statistics[ALL_SYSTEMS], n_items))
    checks = {entry["values"].as_py(): entry["counts"].as_py() for entry in
              pc.value_counts(judged_items.column("human_check"))}
    checks[NO_JUDGEMENTS] = n_items - judged_items.num_rows
    by_check = {check: checks.get(check, 0) for check in HUMAN_CHECKS}
    header, markdown, column = named_by_scorer({}, human_check_markdown(rows),
                                               self._scorer)
    document = {
        **header,
        "human_eval_format": "an item's `sentences`: [{sentence_recall_score: 0|1, "
                             "citations: [{citation_precision_score: 0|1|2}]}]",
        "items_by_check": by_check,
        "systems": [row._asdict() for row in rows],
        "statistics": statistics,
        "system_level": _system_level(rows),
    }
    write_summary_files(self._output_dir, STEM, rows, CITATIONS_HUMAN_SCHEMA, document,
                        markdown, scorer=column)
    yield {"items_judged": judged_items.num_rows,
           "items_by_check": by_check}


class CheckAgainstHumans(beam.PTransform):
  """{"sentences": PCollection[CitationSentenceRow], "systems": PCollection[(system
  name, path of ItemsFold's file of its items)]} -> citations_human.{csv,json,md};
  returns a singleton PCollection[dict] for run.json. `scorer`: the run's
  scorer block, named in the three files."""

  def __init__(self, output_dir: str, scorer: dict):
    super().__init__()
    self._output_dir = output_dir
    self._scorer = scorer

  def expand(self, inputs):
    counts = (inputs["sentences"]
              | "KeyJudgements" >> beam.FlatMap(_judgements)
              | "CountJudgements" >> beam.CombinePerKey(_CountJudgementsFn()))
    return ({"items": inputs["systems"], "counts": counts}
            | "JoinJudgements" >> beam.CoGroupByKey()
            | "ListSystems" >> beam.combiners.ToList()
            | "WriteHumanCheck" >> beam.ParDo(_WriteHumanCheckFn(self._output_dir, self._scorer)))
