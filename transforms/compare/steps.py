"""Two runs' row tables (evaluate's ratings, claims' claim rows, agreement's
items), joined by (system, question), and each system's change with the
statistics to trust it. For agreement, read "system" as a group of items and
"question" as an item (comparison_groups).

    changes = pipeline | "CompareRatings" >> CompareRatings(
        EVALUATE_ROWS, {"baseline": baseline_files, "candidate": candidate_files},
        work_dir, samples, seed, fail_points, leaderboards)

The rows are read from the runs' row tables (or their shards) and joined in
the pipeline by system and question, then grouped by system, both through runs
on disk under `work_dir` (transforms/io/spilled_groups.py), never on the
launching machine.

The unit of pairing and of the bootstrap is the question: one answer of the
system (evaluate: one rated row; claims: the answer's claims). Per system, the
questions both runs answered are put in question order; each run's AutoAIS of a
question is the share of its rows rated Y (evaluate: 0 or 1; claims: the
answer's share of attributable claims, so the mean over questions is claims'
macro AutoAIS). Two evaluate runs with gold are compared in AutoAIS over every
gold question, as their leaderboards count it (paper mode): a question one run
rated and the other did not (no prediction, or an attribution not in the
corpus) is N in the other, and those neither rated are N in both (put after
the others), so that the change is the difference of the two leaderboards'
AutoAIS and a system whose rows went missing falls; EM and F1 stay over the
questions both runs rated (a run's answer to a question it did not rate is
not in its ratings). The change of AutoAIS (and evaluate's EM, F1) is the mean over
the questions of candidate minus baseline, in points, with a 95% percentile
interval from the paired bootstrap the leaderboards use
(transforms/stats/metrics.py BootstrapWeights: numpy's default_rng(seed),
resamples of the n questions drawn in chunks of 50 x n indexes).

The decisions are paired row by row: evaluate's one row per question (and
agreement's per item); claims' claims of the same text in the same answer (the
k-th occurrence of a text with the k-th). McNemar's exact test runs on those
paired decisions (agreement: on whether each agrees with the human label), and
the flipped rows are those whose decision differs. A claim whose text changed
between the runs counts for its answer's AutoAIS but has no partner to flip.
Agreement runs also get accuracy and balanced accuracy against the human labels
(_agreement_change).

Citations runs read the sentence rows: a sentence is rated Y where its cited
documents support it, so an answer's AutoAIS is its citation recall and the
mean over answers citations.json's citation_rec; sentences are paired as
claims are, by their text without citations, so a sentence whose citations
changed is paired with itself and may flip. Each answer's citation precision
(the needed citations its sentences add, over the citations they use; 0 where
they use none) is compared the same way, with the same resamples.
"""
from typing import Dict, List, NamedTuple, Optional, Sequence, Tuple

import apache_beam as beam
import numpy as np
from apache_beam.io.filesystems import FileSystems
from apache_beam.io.parquetio import ReadAllFromParquet

from autoais.schemas import CompareFlipRow, CompareSystemRow
from autoais.schemas.errors import InputError
from autoais.transforms.io.spilled_groups import SpilledCoGroupByKey
from autoais.transforms.scoring.label import named_figures
from autoais.transforms.stats.agreement import mcnemar_exact
from autoais.transforms.stats.metrics import BootstrapWeights, percentile_intervals

RUNS = ("baseline", "candidate")
BOTH, ADDED, REMOVED = "both", "added", "removed"


class RowKind(NamedTuple):
  """What compare reads of one job's runs, and the row table's columns that
  play each part (rows are read into these parts' names: system_name,
  question, claim, answer, attribution, passage, auto_ais, nli_score, em, f1,
  label, position, and for citations credit and cited)."""
  job: str
  table: str  # the row table (also found as its --num_shards shards)
  summary: str  # the per-system (agreement: per-group) summary
  headline: str  # its headline AutoAIS (agreement: a share, not a percent)
  system: Optional[str]  # the system; None: agreement's groups of items
  question: str  # pairs the runs' rows within a system
  decision: str  # "Y" / "N", or True / False (citations' supported)
  claim: Optional[str]  # pairs a question's rows by text; None: one row
  answer: str
  attribution: Optional[str]
  passage: Optional[str]
  graded: bool  # whether the rows carry EM and F1
  label: Optional[str]  # the human label (agreement): True where attributable
  position: Optional[str] = None  # orders a question's rows (claims, citations)
  # citations: the precision credit of a sentence and the citations it uses
  # (comma-separated document numbers), whose sums give its answer's precision
  precision: Optional[Tuple[str, str]] = None
  # The columns that say what a paired row is (agreement: the item itself),
  # which must be the same in both runs: an item id is a file's line where
  # the format has none, and pairs another item once the file is edited.
  identity: Tuple[str, ...] = ()


EVALUATE_ROWS = RowKind("evaluate", "ratings.parquet", "leaderboard.json", "autoais",
                        "system_name", "question", "auto_ais", None, "answer",
                        "attribution", "passage", True, None)
CLAIMS_ROWS = RowKind("claims", "claims_rows.parquet", "claims.json", "macro_autoais",
                      "system_name", "question", "auto_ais", "claim", "claim", None,
                      "evidence", False, None, "claim_index")
AGREEMENT_ROWS = RowKind("agreement", "agreement_rows.parquet", "agreement.json",
                         "predicted_ais", None, "item_id", "decision", None, "hypothesis",
                         None, None, False, "human_attributable",
                         identity=("premise_digest", "hypothesis", "human_label"))
CITATIONS_ROWS = RowKind("citations", "citations_rows.parquet", "citations.json",
                         "citation_rec", "system_name", "question", "supported",
                         "hypothesis", "sentence", "used", None, False, None,
                         "sentence_index", ("precision_credit", "used"))
ROW_KINDS = {kind.job: kind for kind in (EVALUATE_ROWS, CLAIMS_ROWS, AGREEMENT_ROWS,
                                         CITATIONS_ROWS)}
# agreement: every item is compared in ALL_ITEMS and in its groups, named
# "{grouping}={group}" after agreement.json's groupings (data_source=cmu); a
# flipped item is listed once, its system_name its groups ("data_source=cmu;
# model_name=gpt2", or ALL_ITEMS without groups).
ALL_ITEMS = "all items"
_GROUP_COLUMNS = ("group", "secondary_group")


def read_columns(kind: RowKind) -> List[str]:
  """The row table's columns compare reads."""
  parts = ([kind.system] if kind.system else list(_GROUP_COLUMNS)) + [
      kind.question, kind.decision, "nli_score", kind.answer]
  parts += [column for column in (kind.claim, kind.attribution, kind.passage, kind.label,
                                  kind.position) if column is not None]
  parts += list(kind.precision or ()) + list(kind.identity)
  if kind.graded:
    parts += ["em", "f1"]
  return list(dict.fromkeys(parts))


def comparison_groups(kind: RowKind, row: dict, groupings: Sequence[str]) -> List[str]:
  """The systems (agreement: the groups) a row is compared in."""
  if kind.system is not None:
    return [row[kind.system]]
  names = [ALL_ITEMS]
  for grouping, column in zip(groupings, _GROUP_COLUMNS):
    if row[column] is not None:
      names.append(f"{grouping}={row[column]}")
  return names


def headlines(kind: RowKind, summary: Dict, measure: str) -> Dict[str, Optional[float]]:
  """Each system's (group's) headline figure in percent, from its summary:
  leaderboard.json's autoais, claims.json's macro_autoais, agreement.json's
  predicted AIS (a share, made a percent); `measure`: what the run's figures
  are called (label.measure_name), after which a summary names its figure's
  keys (`string_match` for the baseline; a run written before it did keeps
  `autoais`, which is read too)."""
  named = named_figures(kind.headline, measure)
  if kind.system is None:
    def percent(figures):
      value = (figures or {}).get(kind.headline)
      return None if value is None else _rounded(100.0 * value)
    found = {ALL_ITEMS: percent(summary.get("overall"))}
    for grouping, groups in (summary.get("groups") or {}).items():
      for group, figures in groups.items():
        found[f"{grouping}={group}"] = percent(figures)
    return found
  return {row["system_name"]: row[named] if named in row else row.get(kind.headline)
          for row in summary.get("systems", [])}


def _rounded(value: Optional[float]) -> Optional[float]:
  # Points to 12 significant digits: no float noise in the files.
  return None if value is None else float(f"{value:.12g}")


def _flip(system: str, question: str, baseline: dict, candidate: dict) -> CompareFlipRow:
  change = None
  if baseline["nli_score"] is not None and candidate["nli_score"] is not None:
    change = _rounded(candidate["nli_score"] - baseline["nli_score"])
  return CompareFlipRow(
      system, question, baseline["answer"], candidate["answer"],
      baseline.get("attribution"), candidate.get("attribution"), baseline.get("passage"),
      candidate.get("passage"), baseline["auto_ais"], candidate["auto_ais"],
      baseline["nli_score"], candidate["nli_score"], change)


def _yes_share(rows: Sequence[dict]) -> float:
  """A question's AutoAIS in one run: the share of its rows rated Y."""
  return float(np.mean([row["auto_ais"] == "Y" for row in rows]))


def paired_rows(kind: RowKind, baseline: Sequence[dict], candidate: Sequence[dict]
                ) -> List[Tuple[dict, dict]]:
  """A question's rows of both runs whose decisions are compared: the one row
  of each (evaluate), or the claims (citations: sentences without their
  citations) of the same text, the k-th occurrence of a text with the k-th, in
  the baseline's order."""
  if kind.claim is None:
    return [(baseline[0], candidate[0])]
  by_text: Dict[str, List[dict]] = {}
  for row in candidate:
    by_text.setdefault(row["claim"], []).append(row)
  pairs = []
  for row in baseline:
    partners = by_text.get(row["claim"])
    if partners:
      pairs.append((row, partners.pop(0)))
  return pairs


def _ordered(rows) -> List[dict]:
  return sorted(rows, key=lambda row: row.get("position", 0))


def _precision(rows: Sequence[dict]) -> float:
  """An answer's citation precision from its sentence rows: the needed
  citations they add over the citations they use (0 where they use none, as
  citations_items records it)."""
  used = sum(row["cited"] for row in rows)
  return sum(row["credit"] for row in rows) / used if used else 0.0


class QuestionPair(NamedTuple):
  """What a system's change needs of one question both runs answered: each
  run's AutoAIS of it, EM and F1 of both runs (None without gold), and the
  paired rows' decisions, True for Y."""
  question: str
  baseline_yes: float
  candidate_yes: float
  graded: Optional[Tuple[float, float, float, float]]  # EM, F1 of baseline, candidate
  baseline_decisions: Tuple[bool, ...]
  candidate_decisions: Tuple[bool, ...]
  labels: Tuple[bool, ...]  # agreement: the paired rows' human labels; else ()
  precision: Optional[Tuple[float, float]] = None  # citations: of baseline, candidate
  both_rated: bool = True  # False: a gold question one run alone rated


# The side of a gold question that a run did not rate: N, as its leaderboard
# counts it, with nothing to show.
_NOT_RATED = {"answer": None, "attribution": None, "passage": None, "auto_ais": "N",
              "nli_score": None}


def one_sided_question(system: str, question: str, run: str, row: dict
                       ) -> Tuple[QuestionPair, List[CompareFlipRow]]:
  """A gold question that only `run` rated (evaluate, with gold): N in the
  other run; a flip where `run` rated it Y."""
  baseline, candidate = (row, _NOT_RATED) if run == "baseline" else (_NOT_RATED, row)
  yes = (baseline["auto_ais"] == "Y", candidate["auto_ais"] == "Y")
  pair = QuestionPair(question, float(yes[0]), float(yes[1]), None, (yes[0],),
                      (yes[1],), (), both_rated=False)
  return pair, [_flip(system, question, baseline, candidate)] if any(yes) else []


def pair_question(kind: RowKind, system: str, question: str, baseline: Sequence[dict],
                  candidate: Sequence[dict]) -> Tuple[QuestionPair, List[CompareFlipRow]]:
  """One question both runs answered (each run's rows of it), and its rows
  whose decision flipped."""
  paired = paired_rows(kind, _ordered(baseline), _ordered(candidate))
  graded = None
  if kind.graded and all(b["em"] is not None and c["em"] is not None
                         for b, c in paired):
    (b, c), = paired  # evaluate: one row a question
    graded = (b["em"], b["f1"], c["em"], c["f1"])
  summary = QuestionPair(
      question, _yes_share(baseline), _yes_share(candidate), graded,
      tuple(b["auto_ais"] == "Y" for b, _ in paired),
      tuple(c["auto_ais"] == "Y" for _, c in paired),
      tuple(bool(b["label"]) for b, _ in paired) if kind.label is not None else (),
      (_precision(baseline), _precision(candidate)) if kind.precision else None)
  flips = []
  if kind.system is not None or system == ALL_ITEMS:
    # An agreement item is listed once (from all items), under its groups.
    flips = [_flip(b.get("groups", system), question, b, c) for b, c in paired
             if b["auto_ais"] != c["auto_ais"]]
  return summary, flips


def system_change(system: str, questions: Sequence[QuestionPair],
                  n_rows: Dict[str, int], samples: int, seed: int,
                  fail_points: Optional[float],
                  leaderboards: Dict[str, Dict[str, float]],
                  gold_questions: Optional[int] = None) -> CompareSystemRow:
  """The change of one system present in both runs, from the questions both
  answered; with `gold_questions` (evaluate runs with gold), AutoAIS over that
  many gold questions, those one run alone rated (QuestionPair.both_rated
  False) and those neither rated (N in both) included."""
  questions = sorted(questions, key=lambda pair: pair.question)
  rated = [pair for pair in questions if pair.both_rated]
  n = len(rated)
  base_y = np.array([pair.baseline_yes for pair in questions], dtype=float)
  cand_y = np.array([pair.candidate_yes for pair in questions], dtype=float)
  if gold_questions is not None:
    unrated = np.zeros(gold_questions - len(questions))
    base_y, cand_y = np.concatenate([base_y, unrated]), np.concatenate([cand_y, unrated])
  # AutoAIS, EM, F1, citation precision: None where the runs lack the figure
  differences = [100.0 * (cand_y - base_y), None, None, None]
  if n and all(pair.graded is not None for pair in rated):
    for index in (0, 1):  # EM, F1
      differences[index + 1] = 100.0 * np.array(
          [pair.graded[index + 2] - pair.graded[index] for pair in rated], dtype=float)
  if n and all(pair.precision is not None for pair in rated):
    base_p, cand_p = (np.array([pair.precision[index] for pair in rated], dtype=float)
                      for index in (0, 1))
    differences[3] = 100.0 * (cand_p - base_p)
  changes, intervals = [None] * 4, [(None, None)] * 4
  bootstrap = BootstrapWeights(n, samples, seed) if n else None
  # The figures over the same questions share their resamples (AutoAIS over
  # the gold questions has its own).
  by_length: Dict[int, List[int]] = {}
  for index, difference in enumerate(differences):
    if difference is not None and len(difference):
      by_length.setdefault(len(difference), []).append(index)
  for length, group in by_length.items():
    weights = bootstrap if length == n else BootstrapWeights(length, samples, seed)
    for index, interval in zip(group, weights.intervals(
        [differences[index] for index in group])):
      changes[index] = _rounded(float(differences[index].mean()))
      intervals[index] = tuple(_rounded(bound) for bound in interval)
  precision = _NO_PRECISION
  if differences[3] is not None:
    precision = (_rounded(100.0 * base_p.mean()), _rounded(100.0 * cand_p.mean()),
                 changes[3], *intervals[3])
  base_decisions = np.array([y for pair in questions for y in pair.baseline_decisions],
                            dtype=bool)
  cand_decisions = np.array([y for pair in questions for y in pair.candidate_decisions],
                            dtype=bool)
  labelled = n > 0 and all(pair.labels for pair in rated)
  agreement = _NO_AGREEMENT
  if labelled:
    labels = np.array([y for pair in questions for y in pair.labels], dtype=bool)
    agreement = _agreement_change(base_decisions == labels, cand_decisions == labels,
                                  labels, bootstrap)
    # Two classifiers of the same items: McNemar on which of them is right.
    tested = (base_decisions == labels, cand_decisions == labels)
  else:
    tested = (base_decisions, cand_decisions)
  p_value = mcnemar_exact(tested[1], tested[0])["p_value"] if len(tested[0]) else None
  change, (low, high) = changes[0], intervals[0]
  if labelled:
    # A scorer regresses in balanced accuracy. Where the items hold one label
    # it is undefined, and the recall of that label, the accuracy, is what is
    # left of it (as scikit-learn's balanced_accuracy_score averages the labels
    # present): without it, no fall of such a group could fail the run.
    change, low, high = agreement[-3:] if agreement[-3] is not None else agreement[2:5]
  regression = bool(fail_points is not None and change is not None
                    and change < -fail_points and high is not None and high < 0)
  return CompareSystemRow(
      system, BOTH, n_rows.get("baseline", 0), n_rows.get("candidate", 0), n,
      _rounded(100.0 * base_y.mean()) if len(base_y) else None,
      _rounded(100.0 * cand_y.mean()) if len(cand_y) else None,
      changes[0], *intervals[0], changes[1], *intervals[1], changes[2], *intervals[2],
      *agreement, *precision, int(np.sum(~base_decisions & cand_decisions)),
      int(np.sum(base_decisions & ~cand_decisions)), p_value,
      leaderboards["baseline"].get(system), leaderboards["candidate"].get(system),
      regression)


_NO_AGREEMENT = (None,) * 10
_NO_PRECISION = (None,) * 5


def _agreement_change(base_right: np.ndarray, cand_right: np.ndarray,
                      labels: np.ndarray, bootstrap: BootstrapWeights) -> Tuple:
  """Accuracy and balanced accuracy of both runs against the human labels, in
  percent, and their changes in points with paired-bootstrap intervals (the
  resamples of the other changes): (accuracy baseline, candidate, change, low,
  high, balanced accuracy baseline, candidate, change, low, high). Balanced
  accuracy, the mean of the recall of each label, is None where the items hold
  one label only, and its interval leaves out the resamples that do."""
  difference = 100.0 * (cand_right.astype(float) - base_right.astype(float))
  positive = labels.astype(float)
  negative = 1.0 - positive
  means = bootstrap.resample_means([difference, difference * positive, positive,
                                    difference * negative, negative])
  (low, high), = percentile_intervals(means[:, :1])
  accuracy = (_rounded(100.0 * base_right.mean()), _rounded(100.0 * cand_right.mean()),
              _rounded(float(difference.mean())), _rounded(low), _rounded(high))
  if not labels.any() or labels.all():
    return accuracy + (None,) * 5

  def balanced(right):
    return 50.0 * (right[labels].mean() + right[~labels].mean())
  with np.errstate(divide="ignore", invalid="ignore"):
    resampled = 0.5 * (means[:, 1] / means[:, 2] + means[:, 3] / means[:, 4])
  resampled = resampled[np.isfinite(resampled)]
  base, cand = _rounded(balanced(base_right)), _rounded(balanced(cand_right))
  bounds = ((None, None) if not len(resampled)
            else percentile_intervals(resampled[:, None])[0])
  # The change of the figures as written: two means of the same value, summed
  # in another order, differ in their last bits (1.4e-14 for no change).
  return accuracy + (base, cand, _rounded(cand - base),
                     *(None if bound is None else _rounded(bound) for bound in bounds))


def one_run_system(system: str, run: str, n_rows: Dict[str, int],
                   leaderboards: Dict[str, Dict[str, float]]) -> CompareSystemRow:
  """A system that only one of the runs holds."""
  return CompareSystemRow(
      system, ADDED if run == "candidate" else REMOVED, n_rows.get("baseline", 0),
      n_rows.get("candidate", 0), 0, None, None, None, None, None, None, None, None,
      None, None, None, *_NO_AGREEMENT, *_NO_PRECISION, 0, 0, None,
      leaderboards["baseline"].get(system),
      leaderboards["candidate"].get(system), False)


def keyed_rows(row: dict, kind: RowKind, groupings: Sequence[str]):
  """A row of the table as ((system, question), row in the parts' names), once
  per system (agreement: group) it is compared in."""
  decision = row[kind.decision]
  if isinstance(decision, bool):  # citations: whether the sentence is supported
    decision = "Y" if decision else "N"
  parts = {"question": row[kind.question], "answer": row[kind.answer],
           "auto_ais": decision, "nli_score": row["nli_score"]}
  for part, column in (("claim", kind.claim), ("attribution", kind.attribution),
                       ("passage", kind.passage), ("label", kind.label),
                       ("position", kind.position)):
    if column is not None:
      parts[part] = row[column]
  if kind.precision:
    credit, used = kind.precision
    parts["credit"] = row[credit]
    parts["cited"] = len(row[used].split(",")) if row[used] else 0
  if kind.identity:
    parts["identity"] = {column: row[column] for column in kind.identity}
  for column in ("em", "f1"):
    if column in row:
      parts[column] = row[column]
  systems = comparison_groups(kind, row, groupings)
  if kind.system is None:
    parts["groups"] = "; ".join(systems[1:]) or ALL_ITEMS
  for system in systems:
    yield (system, parts["question"]), dict(parts, system_name=system)


class _PairRowsFn(beam.DoFn):
  """((system, question), {"baseline": [rows], "candidate": [rows]}) ->
  (system, QuestionPair) where both runs answered it, and its flipped rows on
  "flips"; every row also counts for its run on "counts" as (system, run)."""

  def __init__(self, kind: RowKind, over_gold: bool):
    self._kind = kind
    self._over_gold = over_gold

  def process(self, joined):
    (system, question), runs = joined
    found = {}
    for run in RUNS:
      rows = list(runs[run])
      for _ in rows:
        yield beam.pvalue.TaggedOutput("counts", (system, run))
      if rows:
        # A ratings table holds one row per (system, question); a claims table
        # one answer's claims.
        found[run] = rows if self._kind.claim is not None else rows[:1]
    if len(found) == 2:
      _check_same_item(question, found["baseline"][0], found["candidate"][0])
      pair, flips = pair_question(self._kind, system, question, found["baseline"],
                                  found["candidate"])
      yield system, pair
      for flip in flips:
        yield beam.pvalue.TaggedOutput("flips", flip)
    elif self._over_gold and found:
      (run, rows), = found.items()
      pair, flips = one_sided_question(system, question, run, rows[0])
      yield system, pair
      for flip in flips:
        yield beam.pvalue.TaggedOutput("flips", flip)


def _check_same_item(question: str, baseline: dict, candidate: dict) -> None:
  """InputError (exit 2) where a paired row is not the same item in both runs."""
  before, after = baseline.get("identity"), candidate.get("identity")
  if before != after:
    differing = [column for column in before if before[column] != after[column]]
    raise InputError(
        f"item {question!r} is another item in --candidate than in --baseline (its "
        f"{', '.join(differing)} differ): the agreement runs read different labelled "
        "sets under the same file names (an edited file?); their items cannot be "
        "paired")


class _SystemChangeFn(beam.DoFn):

  def __init__(self, samples: int, seed: int, fail_points: Optional[float],
               leaderboards: Dict[str, Dict[str, float]],
               gold_questions: Optional[int]):
    self._samples = samples
    self._seed = seed
    self._fail_points = fail_points
    self._leaderboards = leaderboards
    self._gold_questions = gold_questions

  def process(self, grouped):
    system, groups = grouped
    runs = {run: count for run, count in groups["counts"]}
    present = [run for run in RUNS if runs.get(run)]
    if len(present) == 1:
      yield one_run_system(system, present[0], runs, self._leaderboards)
      return
    yield system_change(system, list(groups["pairs"]), runs, self._samples, self._seed,
                        self._fail_points, self._leaderboards, self._gold_questions)


class CompareRatings(beam.PTransform):
  """Applied to the pipeline, given the runs' job (a RowKind), {"baseline":
  [row table Parquet files], "candidate": [...]} and a scratch directory (and
  for agreement, the names of the runs' groupings; for evaluate runs with
  gold, its number of questions, over which AutoAIS is compared) ->
  {"systems": PCollection[CompareSystemRow], "flips":
  PCollection[CompareFlipRow]}."""

  def __init__(self, kind: RowKind, files: Dict[str, Sequence[str]], work_dir: str,
               samples: int, seed: int, fail_points: Optional[float],
               leaderboards: Dict[str, Dict[str, float]], groupings: Sequence[str] = (),
               gold_questions: Optional[int] = None):
    super().__init__()
    self._kind = kind
    self._groupings = tuple(groupings)
    self._files = {run: list(files[run]) for run in RUNS}
    self._work_dir = work_dir
    self._gold_questions = gold_questions
    self._fn = _SystemChangeFn(samples, seed, fail_points, leaderboards, gold_questions)

  def expand(self, pbegin):
    keyed = {}
    for run in RUNS:
      label = run.title()
      keyed[run] = (pbegin
                    | f"List{label}Tables" >> beam.Create(self._files[run])
                    | f"Read{label}Ratings" >> ReadAllFromParquet(
                        columns=read_columns(self._kind))
                    | f"Key{label}Rows" >> beam.FlatMap(keyed_rows, self._kind,
                                                         self._groupings))
    paired = (keyed
              | "JoinRunsByQuestion" >> SpilledCoGroupByKey(
                  FileSystems.join(self._work_dir, "questions"))
              | "PairRows" >> beam.ParDo(_PairRowsFn(
                  self._kind, self._gold_questions is not None)).with_outputs(
                  "counts", "flips", main="pairs"))
    counts = (paired.counts
              | "CountRowsPerRun" >> beam.combiners.Count.PerElement()
              | "KeyCountsBySystem" >> beam.MapTuple(
                  lambda system_run, count: (system_run[0], (system_run[1], count))))
    systems = ({"pairs": paired.pairs, "counts": counts}
               | "GroupBySystem" >> SpilledCoGroupByKey(
                   FileSystems.join(self._work_dir, "systems"))
               | "MeasureChanges" >> beam.ParDo(self._fn))
    return {"systems": systems, "flips": paired.flips}
