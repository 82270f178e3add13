"""Two evaluate runs' ratings, joined by (system, question), and each system's
change with the statistics to trust it.

    changes = pipeline | "CompareRatings" >> CompareRatings(
        {"baseline": baseline_files, "candidate": candidate_files}, work_dir,
        samples, seed, fail_points, leaderboards)

The rows are read from the runs' ratings tables (ratings.parquet or its
shards) and joined in the pipeline by system and question, then grouped by
system, both through runs on disk under `work_dir`
(transforms/io/spilled_groups.py), never on the launching machine. Per system, the questions both runs scored are put in
question order; the change of AutoAIS (and EM, F1) is the mean over them of
candidate minus baseline, in points, with a 95% percentile interval from the
paired bootstrap the leaderboards use (transforms/stats/metrics.py
BootstrapWeights: numpy's default_rng(seed), resamples of the n questions drawn
in chunks of 50 x n indexes), and McNemar's exact test on the paired decisions.
"""
from typing import Dict, List, Optional, Sequence, Tuple

import apache_beam as beam
import numpy as np
from apache_beam.io.filesystems import FileSystems
from apache_beam.io.parquetio import ReadAllFromParquet

from autoais.schemas import CompareFlipRow, CompareSystemRow
from autoais.transforms.io.spilled_groups import SpilledCoGroupByKey
from autoais.transforms.stats.agreement import mcnemar_exact
from autoais.transforms.stats.metrics import BootstrapWeights

RUNS = ("baseline", "candidate")
COLUMNS = ("system_name", "question", "answer", "attribution", "passage", "auto_ais",
           "nli_score", "em", "f1")
BOTH, ADDED, REMOVED = "both", "added", "removed"


def _rounded(value: Optional[float]) -> Optional[float]:
  # Points to 12 significant digits: no float noise in the files.
  return None if value is None else float(f"{value:.12g}")


def _flip(system: str, question: str, baseline: dict, candidate: dict) -> CompareFlipRow:
  change = None
  if baseline["nli_score"] is not None and candidate["nli_score"] is not None:
    change = _rounded(candidate["nli_score"] - baseline["nli_score"])
  return CompareFlipRow(
      system, question, baseline["answer"], candidate["answer"],
      baseline["attribution"], candidate["attribution"], baseline["passage"],
      candidate["passage"], baseline["auto_ais"], candidate["auto_ais"],
      baseline["nli_score"], candidate["nli_score"], change)


def system_change(system: str, pairs: Sequence[Tuple[str, dict, dict]],
                  n_rows: Dict[str, int], samples: int, seed: int,
                  fail_points: Optional[float],
                  leaderboards: Dict[str, Dict[str, float]]
                  ) -> Tuple[CompareSystemRow, List[CompareFlipRow]]:
  """The change of one system present in both runs, from its paired rows
  (question, baseline row, candidate row), and the rows whose decision
  flipped, in question order."""
  pairs = sorted(pairs, key=lambda pair: pair[0])
  n = len(pairs)
  base_y = np.array([b["auto_ais"] == "Y" for _, b, _ in pairs], dtype=bool)
  cand_y = np.array([c["auto_ais"] == "Y" for _, _, c in pairs], dtype=bool)
  differences = [100.0 * (cand_y.astype(float) - base_y.astype(float))]
  graded = n > 0 and all(b["em"] is not None and c["em"] is not None
                         for _, b, c in pairs)
  if graded:
    for field in ("em", "f1"):
      differences.append(100.0 * np.array([c[field] - b[field] for _, b, c in pairs],
                                          dtype=float))
  changes, intervals = [None] * 3, [(None, None)] * 3
  if n:
    bootstrap = BootstrapWeights(n, samples, seed)
    for index, (difference, interval) in enumerate(
        zip(differences, bootstrap.intervals(differences))):
      changes[index] = _rounded(float(difference.mean()))
      intervals[index] = tuple(_rounded(bound) for bound in interval)
  test = mcnemar_exact(cand_y, base_y) if n else {"only_higher": 0, "only_lower": 0,
                                                 "p_value": None}
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
  flips = [_flip(system, question, b, c) for question, b, c in pairs
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
  """((system, question), {"baseline": [row], "candidate": [row]}) -> (system,
  (question, baseline row, candidate row)) where both runs scored it; every
  row also counts for its run on "counts" as (system, run)."""

  def process(self, joined):
    (system, question), runs = joined
    found = {}
    for run in RUNS:
      rows = list(runs[run])
      for _ in rows:
        yield beam.pvalue.TaggedOutput("counts", (system, run))
      if rows:
        found[run] = rows[0]  # a ratings table holds one row per (system, question)
    if len(found) == 2:
      yield system, (question, found["baseline"], found["candidate"])


class _SystemChangeFn(beam.DoFn):

  def __init__(self, samples: int, seed: int, fail_points: Optional[float],
               leaderboards: Dict[str, Dict[str, float]]):
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
    row, flips = system_change(system, pairs, runs, self._samples, self._seed,
                               self._fail_points, self._leaderboards)
    yield row
    for flip in flips:
      yield beam.pvalue.TaggedOutput("flips", flip)


class CompareRatings(beam.PTransform):
  """Applied to the pipeline, given {"baseline": [ratings Parquet files],
  "candidate": [...]} and a scratch directory -> {"systems":
  PCollection[CompareSystemRow], "flips": PCollection[CompareFlipRow]}."""

  def __init__(self, files: Dict[str, Sequence[str]], work_dir: str, samples: int,
               seed: int, fail_points: Optional[float],
               leaderboards: Dict[str, Dict[str, float]]):
    super().__init__()
    self._files = {run: list(files[run]) for run in RUNS}
    self._work_dir = work_dir
    self._fn = _SystemChangeFn(samples, seed, fail_points, leaderboards)

  def expand(self, pbegin):
    keyed = {}
    for run in RUNS:
      label = run.title()
      keyed[run] = (pbegin
                    | f"List{label}Tables" >> beam.Create(self._files[run])
                    | f"Read{label}Ratings" >> ReadAllFromParquet(columns=list(COLUMNS))
                    | f"Key{label}Rows" >> beam.Map(
                        lambda row: ((row["system_name"], row["question"]), row)))
    paired = (keyed
              | "JoinRunsByQuestion" >> SpilledCoGroupByKey(
                  FileSystems.join(self._work_dir, "questions"))
              | "PairRows" >> beam.ParDo(_PairRowsFn()).with_outputs("counts",
                                                                      main="pairs"))
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
