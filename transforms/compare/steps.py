"""Two runs' row tables (evaluate's ratings or claims' claim rows), joined by
(system, question), and each system's change with the statistics to trust it.

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
macro AutoAIS). The change of AutoAIS (and evaluate's EM, F1) is the mean over
the questions of candidate minus baseline, in points, with a 95% percentile
interval from the paired bootstrap the leaderboards use
(transforms/stats/metrics.py BootstrapWeights: numpy's default_rng(seed),
resamples of the n questions drawn in chunks of 50 x n indexes).

The decisions are paired row by row: evaluate's one row per question; claims'
claims of the same text in the same answer (the k-th occurrence of a text with
the k-th). McNemar's exact test runs on those paired decisions, and the flipped
rows are those whose decision differs. A claim whose text changed between the
runs counts for its answer's AutoAIS but has no partner to flip.
"""
from typing import Dict, List, NamedTuple, Optional, Sequence, Tuple

import apache_beam as beam
import numpy as np
from apache_beam.io.filesystems import FileSystems
from apache_beam.io.parquetio import ReadAllFromParquet

from autoais.schemas import CompareFlipRow, CompareSystemRow
from autoais.transforms.io.spilled_groups import SpilledCoGroupByKey
from autoais.transforms.stats.agreement import mcnemar_exact
from autoais.transforms.stats.metrics import BootstrapWeights

RUNS = ("baseline", "candidate")
BOTH, ADDED, REMOVED = "both", "added", "removed"


class RowKind(NamedTuple):
  """What compare reads of one job's runs."""
  job: str
  table: str  # the row table (also found as its --num_shards shards)
  summary: str  # the per-system summary holding the headline AutoAIS
  headline: str  # its field, in percent
  columns: Tuple[str, ...]  # read from the row table
  claim: Optional[str]  # the column that pairs a question's rows; None: one row
  answer: str  # the flip row's answer: the column shown as the answer
  attribution: Optional[str]
  passage: str
  graded: bool  # whether the rows carry EM and F1


EVALUATE_ROWS = RowKind(
    "evaluate", "ratings.parquet", "leaderboard.json", "autoais",
    ("system_name", "question", "answer", "attribution", "passage", "auto_ais",
     "nli_score", "em", "f1"), None, "answer", "attribution", "passage", True)
CLAIMS_ROWS = RowKind(
    "claims", "claims_rows.parquet", "claims.json", "macro_autoais",
    ("system_name", "question", "claim_index", "claim", "evidence", "auto_ais",
     "nli_score"), "claim", "claim", None, "evidence", False)
ROW_KINDS = {kind.job: kind for kind in (EVALUATE_ROWS, CLAIMS_ROWS)}


def _rounded(value: Optional[float]) -> Optional[float]:
  # Points to 12 significant digits: no float noise in the files.
  return None if value is None else float(f"{value:.12g}")


def _flip(kind: RowKind, system: str, question: str, baseline: dict,
          candidate: dict) -> CompareFlipRow:
  change = None
  if baseline["nli_score"] is not None and candidate["nli_score"] is not None:
    change = _rounded(candidate["nli_score"] - baseline["nli_score"])
  attribution = (lambda row: None) if kind.attribution is None else (
      lambda row: row[kind.attribution])
  return CompareFlipRow(
      system, question, baseline[kind.answer], candidate[kind.answer],
      attribution(baseline), attribution(candidate), baseline[kind.passage],
      candidate[kind.passage], baseline["auto_ais"], candidate["auto_ais"],
      baseline["nli_score"], candidate["nli_score"], change)


def _yes_share(rows: Sequence[dict]) -> float:
  """A question's AutoAIS in one run: the share of its rows rated Y."""
  return float(np.mean([row["auto_ais"] == "Y" for row in rows]))


def paired_rows(kind: RowKind, baseline: Sequence[dict], candidate: Sequence[dict]
                ) -> List[Tuple[dict, dict]]:
  """A question's rows of both runs whose decisions are compared: the one row
  of each (evaluate), or the claims of the same text, the k-th occurrence of a
  text with the k-th, in the baseline's order."""
  if kind.claim is None:
    return [(baseline[0], candidate[0])]
  by_text: Dict[str, List[dict]] = {}
  for row in candidate:
    by_text.setdefault(row[kind.claim], []).append(row)
  pairs = []
  for row in baseline:
    partners = by_text.get(row[kind.claim])
    if partners:
      pairs.append((row, partners.pop(0)))
  return pairs


def _ordered(rows) -> List[dict]:
  return sorted(rows, key=lambda row: row.get("claim_index", 0))


def system_change(kind: RowKind, system: str,
                  questions: Sequence[Tuple[str, List[dict], List[dict]]],
                  n_rows: Dict[str, int], samples: int, seed: int,
                  fail_points: Optional[float],
                  leaderboards: Dict[str, Dict[str, float]]
                  ) -> Tuple[CompareSystemRow, List[CompareFlipRow]]:
  """The change of one system present in both runs, from the questions both
  answered (question, baseline rows, candidate rows), and the rows whose
  decision flipped, in question order."""
  questions = sorted(questions, key=lambda question: question[0])
  n = len(questions)
  base_y = np.array([_yes_share(b) for _, b, _ in questions], dtype=float)
  cand_y = np.array([_yes_share(c) for _, _, c in questions], dtype=float)
  differences = [100.0 * (cand_y - base_y)]
  paired = [(question, b, c) for question, base, cand in questions
            for b, c in paired_rows(kind, _ordered(base), _ordered(cand))]
  graded = kind.graded and n > 0 and all(
      b["em"] is not None and c["em"] is not None for _, b, c in paired)
  if graded:
    for field in ("em", "f1"):
      differences.append(100.0 * np.array([c[field] - b[field] for _, b, c in paired],
                                          dtype=float))
  changes, intervals = [None] * 3, [(None, None)] * 3
  if n:
    bootstrap = BootstrapWeights(n, samples, seed)
    for index, (difference, interval) in enumerate(
        zip(differences, bootstrap.intervals(differences))):
      changes[index] = _rounded(float(difference.mean()))
      intervals[index] = tuple(_rounded(bound) for bound in interval)
  decisions = {run: np.array([row[index]["auto_ais"] == "Y" for _, *row in paired],
                             dtype=bool) for index, run in enumerate(RUNS)}
  test = (mcnemar_exact(decisions["candidate"], decisions["baseline"]) if paired
          else {"only_higher": 0, "only_lower": 0, "p_value": None})
  change, (low, high) = changes[0], intervals[0]
  regression = bool(fail_points is not None and change is not None
                    and change < -fail_points and high < 0)
  row = CompareSystemRow(
      system, BOTH, n_rows.get("baseline", 0), n_rows.get("candidate", 0), n,
      _rounded(100.0 * base_y.mean()) if n else None,
      _rounded(100.0 * cand_y.mean()) if n else None,
      change, low, high, changes[1], *intervals[1], changes[2], *intervals[2],
      test["only_higher"], test["only_lower"], test["p_value"],
      leaderboards["baseline"].get(system), leaderboards["candidate"].get(system),
      regression)
  flips = [_flip(kind, system, question, b, c) for question, b, c in paired
           if b["auto_ais"] != c["auto_ais"]]
  return row, flips


def one_run_system(system: str, run: str, n_rows: Dict[str, int],
                   leaderboards: Dict[str, Dict[str, float]]) -> CompareSystemRow:
  """A system that only one of the runs holds."""
  return CompareSystemRow(
      system, ADDED if run == "candidate" else REMOVED, n_rows.get("baseline", 0),
      n_rows.get("candidate", 0), 0, None, None, None, None, None, None, None, None,
      None, None, None, 0, 0, None, leaderboards["baseline"].get(system),
      leaderboards["candidate"].get(system), False)


class _PairRowsFn(beam.DoFn):
  """((system, question), {"baseline": [rows], "candidate": [rows]}) ->
  (system, (question, baseline rows, candidate rows)) where both runs answered
  it; every row also counts for its run on "counts" as (system, run)."""

  def __init__(self, kind: RowKind):
    self._kind = kind

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
      yield system, (question, found["baseline"], found["candidate"])


class _SystemChangeFn(beam.DoFn):

  def __init__(self, kind: RowKind, samples: int, seed: int,
               fail_points: Optional[float], leaderboards: Dict[str, Dict[str, float]]):
    self._kind = kind
    self._samples = samples
    self._seed = seed
    self._fail_points = fail_points
    self._leaderboards = leaderboards

  def process(self, grouped):
    system, groups = grouped
    runs = {run: count for run, count in groups["counts"]}
    pairs = list(groups["pairs"])
    present = [run for run in RUNS if runs.get(run)]
    if len(present) == 1:
      yield one_run_system(system, present[0], runs, self._leaderboards)
      return
    row, flips = system_change(self._kind, system, pairs, runs, self._samples, self._seed,
                               self._fail_points, self._leaderboards)
    yield row
    for flip in flips:
      yield beam.pvalue.TaggedOutput("flips", flip)


class CompareRatings(beam.PTransform):
  """Applied to the pipeline, given the runs' job (a RowKind), {"baseline":
  [row table Parquet files], "candidate": [...]} and a scratch directory ->
  {"systems": PCollection[CompareSystemRow], "flips":
  PCollection[CompareFlipRow]}."""

  def __init__(self, kind: RowKind, files: Dict[str, Sequence[str]], work_dir: str,
               samples: int, seed: int, fail_points: Optional[float],
               leaderboards: Dict[str, Dict[str, float]]):
    super().__init__()
    self._kind = kind
    self._files = {run: list(files[run]) for run in RUNS}
    self._work_dir = work_dir
    self._fn = _SystemChangeFn(kind, samples, seed, fail_points, leaderboards)

  def expand(self, pbegin):
    keyed = {}
    for run in RUNS:
      label = run.title()
      keyed[run] = (pbegin
                    | f"List{label}Tables" >> beam.Create(self._files[run])
                    | f"Read{label}Ratings" >> ReadAllFromParquet(
                        columns=list(self._kind.columns))
                    | f"Key{label}Rows" >> beam.Map(
                        lambda row: ((row["system_name"], row["question"]), row)))
    paired = (keyed
              | "JoinRunsByQuestion" >> SpilledCoGroupByKey(
                  FileSystems.join(self._work_dir, "questions"))
              | "PairRows" >> beam.ParDo(_PairRowsFn(self._kind)).with_outputs(
                  "counts", main="pairs"))
    counts = (paired.counts
              | "CountRowsPerRun" >> beam.combiners.Count.PerElement()
              | "KeyCountsBySystem" >> beam.MapTuple(
                  lambda system_run, count: (system_run[0], (system_run[1], count))))
    changes = ({"pairs": paired.pairs, "counts": counts}
               | "GroupBySystem" >> SpilledCoGroupByKey(
                   FileSystems.join(self._work_dir, "systems"))
               | "MeasureChanges" >> beam.ParDo(self._fn).with_outputs(
                   "flips", main="systems"))
    return {"systems": changes.systems, "flips": changes.flips}
