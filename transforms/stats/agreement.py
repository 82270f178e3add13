"""Agreement of attribution scores with human labels (SPEC 5.5), with mergeable
accumulators: rows are counted where they are produced, workers' counts are
merged, and the statistics are computed once, at the end, by scikit-learn and
scipy on the merged counts.

Row level, per group and overall (`AgreementCounts` -> `agreement_statistics`):
n rated, human AIS (share labelled attributable), accuracy, balanced accuracy and
Cohen's kappa of the decision, ROC-AUC and PR-AUC (average precision) of
`nli_score`, counts per human label.

  * Decision statistics come from the 2x2 confusion counts, handed to
    scikit-learn as four weighted rows (`sample_weight` = the counts): the same
    integers, hence the same figures, as scikit-learn on every row.
  * ROC-AUC and PR-AUC come from `ScoreCounts`: positives and negatives per
    distinct score, merged across workers, then `roc_auc_score` and
    `average_precision_score` on the distinct scores weighted by their counts.
    scikit-learn builds its curve from cumulative weighted counts at distinct
    scores, so this is exactly scikit-learn on the rows (integer sums are exact
    in float64), in memory that grows with the distinct scores, not the rows.
  * Memory bound: a group's counts never hold more than EXACT_SCORE_LIMIT
    (16,384) distinct scores, about 400 KB. Past that, the group's scores are
    rounded up to a grid of GRID_BINS (16,384) steps, ceil(s * 2^14) / 2^14, and
    its AUCs are no longer exact. Only pairs of a positive and a negative in one
    grid step can be ordered differently, so the error of ROC-AUC is at most
    sum_b(pos_b * neg_b) / (2 P N), and that of average precision at most
    sum_b (pos_b / P) * (the largest minus the smallest precision the step's
    orderings allow); both bounds are computed from the counts and reported
    beside the figures (0 when exact). Which groups are rounded depends on the
    data alone (more distinct scores than the limit), not on how the rows were
    split among workers, so results stay deterministic. Every per-system group
    of an NQ-Open leaderboard (3,610 questions) and every public agreement set
    the tests read stays exact; bench/agreement.py measures the bounds at 1M
    rows of distinct scores (ROC-AUC within 3.5e-5, observed 7e-8).

Calibration (`best_threshold`): the threshold that maximises accuracy or
balanced accuracy of `nli_score > t` on a calibration set, over every cut
between its distinct scores.

Benchmarks (`mean_over_groups`): the unweighted mean over data sets of each
data set's balanced accuracy and ROC-AUC, as LLM-AggreFact's and TRUE's
leaderboards print them, with percentile-bootstrap CIs that resample the items
within each data set, drawn from the merged counts (a multinomial over the
confusion cells, or over the (score, label) cells).

System level (`system_level_agreement`): Pearson, Spearman and Kendall tau
between per-system AutoAIS and human AIS (scipy), with percentile-bootstrap CIs
from resampling questions, paired across systems (metrics.BootstrapWeights);
their p-values exact by permutation up to 8 systems (`correlations`, which says
in `p_value_method` how each was computed);
McNemar's exact test (a two-sided binomial test on the questions where exactly
one of the two is attributable) between neighbours of the AutoAIS ranking.
"""
import array
import functools
import hashlib
import itertools
import math
import warnings
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

import apache_beam as beam
import numpy as np

EXACT_SCORE_LIMIT = 1 << 14
GRID_BINS = 1 << 14
_PENDING_ROWS = 4096
METRICS = ("accuracy", "balanced_accuracy")
AUC_METHOD = (
    "exact: positives and negatives per distinct nli_score, merged across "
    f"workers, then scikit-learn on the distinct scores weighted by their counts; "
    f"past {EXACT_SCORE_LIMIT} distinct scores in a group, scores are rounded up to "
    f"multiples of 1/{GRID_BINS} and the reported error bounds are non-zero")


def _quantize(scores: np.ndarray) -> np.ndarray:
  return np.clip(np.ceil(scores * GRID_BINS), 0, GRID_BINS) / GRID_BINS


def _aggregate(scores: np.ndarray, positives: np.ndarray, negatives: np.ndarray):
  unique, inverse = np.unique(scores, return_inverse=True)
  return (unique,
          np.bincount(inverse, weights=positives, minlength=len(unique)).astype(np.int64),
          np.bincount(inverse, weights=negatives, minlength=len(unique)).astype(np.int64))


class ScoreCounts:
  """Human positives and negatives per distinct score (see the module docstring).

  `add` buffers rows and folds them in by the thousand; `merge` folds another
  accumulator in. Arrays hold the distinct scores in ascending order.
  """

  def __init__(self):
    self.scores = np.empty(0, dtype=np.float64)
    self.positives = np.empty(0, dtype=np.int64)
    self.negatives = np.empty(0, dtype=np.int64)
    self.quantized = False
    self._pending_scores = array.array("d")
    self._pending_labels = array.array("b")

  def add(self, score: float, positive: bool) -> None:
    self._pending_scores.append(score)
    self._pending_labels.append(positive)
    # Fold in when the buffer is as large as the distinct scores: each row then
    # costs amortised O(log n), however many distinct scores there are.
    if len(self._pending_scores) >= max(_PENDING_ROWS, len(self.scores)):
      self.flush()

  def add_arrays(self, scores, positive) -> None:
    scores = np.asarray(scores, dtype=np.float64)
    positive = np.asarray(positive, dtype=bool)
    self._absorb(scores, positive.astype(np.int64), (~positive).astype(np.int64))

  def flush(self) -> "ScoreCounts":
    if self._pending_scores:
      scores = np.frombuffer(self._pending_scores, dtype=np.float64).copy()
      positive = np.frombuffer(self._pending_labels, dtype=np.int8).astype(bool)
      self._pending_scores = array.array("d")
      self._pending_labels = array.array("b")
      self.add_arrays(scores, positive)
    return self

  def merge(self, other: "ScoreCounts") -> None:
    other.flush()
    if other.quantized and not self.quantized:
      self._round_to_grid()
    self._absorb(other.scores, other.positives, other.negatives)

  def _absorb(self, scores, positives, negatives) -> None:
    if len(scores) == 0:
      return
    if not np.all(np.isfinite(scores)):
      raise ValueError("nli_score must be a finite number")
    if self.quantized:
      scores = _quantize(scores)
    self.scores, self.positives, self.negatives = _aggregate(
        np.concatenate([self.scores, scores]),
        np.concatenate([self.positives, positives]),
        np.concatenate([self.negatives, negatives]))
    if not self.quantized and len(self.scores) > EXACT_SCORE_LIMIT:
      self._round_to_grid()

  def _round_to_grid(self) -> None:
    self.quantized = True
    self.scores, self.positives, self.negatives = _aggregate(
        _quantize(self.scores), self.positives, self.negatives)

  # --------------------------------------------------------------------------
  # Read-outs (after flush()).

  @property
  def n_positive(self) -> int:
    return int(self.positives.sum())

  @property
  def n_negative(self) -> int:
    return int(self.negatives.sum())

  def weighted_rows(self) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(labels, scores, weights): one row per (distinct score, label) with its
    count, for scikit-learn's `sample_weight`."""
    self.flush()
    labels = np.concatenate([np.ones(len(self.scores)), np.zeros(len(self.scores))])
    scores = np.concatenate([self.scores, self.scores])
    weights = np.concatenate([self.positives, self.negatives]).astype(np.float64)
    keep = weights > 0
    return labels[keep], scores[keep], weights[keep]

  def both_classes(self) -> bool:
    return self.n_positive > 0 and self.n_negative > 0

  def roc_auc(self) -> Optional[float]:
    if not self.both_classes():
      return None
    from sklearn.metrics import roc_auc_score  # pylint: disable=import-outside-toplevel
    labels, scores, weights = self.weighted_rows()
    return float(roc_auc_score(labels, scores, sample_weight=weights))

  def pr_auc(self) -> Optional[float]:
    if not self.both_classes():
      return None
    from sklearn.metrics import average_precision_score  # pylint: disable=import-outside-toplevel
    labels, scores, weights = self.weighted_rows()
    return float(average_precision_score(labels, scores, sample_weight=weights))

  def roc_auc_error_bound(self) -> float:
    """0 when exact; else the most that pairs tied by the grid can move ROC-AUC."""
    self.flush()
    if not self.quantized or not self.both_classes():
      return 0.0
    tied = float(np.sum(self.positives.astype(np.float64) * self.negatives))
    return tied / (2.0 * self.n_positive * self.n_negative)

  def pr_auc_error_bound(self) -> float:
    """0 when exact; else sum over grid steps of (positives in the step / P)
    times the spread of precision over the orderings the step allows."""
    self.flush()
    if not self.quantized or not self.both_classes():
      return 0.0
    positives = self.positives[::-1].astype(np.float64)
    negatives = self.negatives[::-1].astype(np.float64)
    above_pos = np.cumsum(positives) - positives
    above_neg = np.cumsum(negatives) - negatives
    has = positives > 0
    best = (above_pos + positives)[has] / (above_pos + positives + above_neg)[has]
    worst = (above_pos + 1)[has] / (above_pos + 1 + above_neg + negatives)[has]
    return float(np.sum(positives[has] / self.n_positive * (best - worst)))

  def roc_curve(self):
    from sklearn.metrics import roc_curve  # pylint: disable=import-outside-toplevel
    labels, scores, weights = self.weighted_rows()
    fpr, tpr, _ = roc_curve(labels, scores, sample_weight=weights)
    return fpr, tpr

  def threshold_sweep(self):
    """(thresholds, true positives, false positives) of `score > t` for every
    distinct cut: t below the lowest score (all attributable), then each
    distinct score."""
    self.flush()
    n_pos, n_neg = self.n_positive, self.n_negative
    below = np.nextafter(self.scores[:1], -np.inf) if len(self.scores) else np.zeros(1)
    thresholds = np.concatenate([below, self.scores])
    true_pos = np.concatenate([[n_pos], n_pos - np.cumsum(self.positives)])
    false_pos = np.concatenate([[n_neg], n_neg - np.cumsum(self.negatives)])
    return thresholds, true_pos, false_pos

  def histogram(self, bins: int = 20):
    """(edges, positives per bin, negatives per bin) over [0, 1]."""
    self.flush()
    edges = np.linspace(0.0, 1.0, bins + 1)
    pos, _ = np.histogram(self.scores, bins=edges, weights=self.positives)
    neg, _ = np.histogram(self.scores, bins=edges, weights=self.negatives)
    return edges, pos, neg

  def reliability(self, bins: int = 10):
    """(mean score, share attributable, rows) per non-empty bin, binned as
    sklearn.calibration.calibration_curve(strategy='uniform') bins."""
    self.flush()
    edges = np.linspace(0.0, 1.0, bins + 1)
    ids = np.searchsorted(edges[1:-1], self.scores)
    totals = (self.positives + self.negatives).astype(np.float64)
    rows = np.bincount(ids, weights=totals, minlength=bins)
    score_sums = np.bincount(ids, weights=self.scores * totals, minlength=bins)
    positive_sums = np.bincount(ids, weights=self.positives, minlength=bins)
    nonzero = rows > 0
    return (score_sums[nonzero] / rows[nonzero], positive_sums[nonzero] / rows[nonzero],
            rows[nonzero])


# ----------------------------------------------------------------------------
# Decision statistics from confusion counts.

# Cells of a 2x2 confusion count list: index 2 * human + predicted.
TN, FP, FN, TP = 0, 1, 2, 3


def _none_if_nan(value) -> Optional[float]:
  value = float(value)
  return None if math.isnan(value) else value


def decision_statistics(confusion: Sequence[int]) -> Dict[str, object]:
  """Accuracy, balanced accuracy, Cohen's kappa (scikit-learn) of a decision
  against human labels, from its confusion counts [tn, fp, fn, tp]."""
  cells = [(cell >> 1, cell & 1, int(count)) for cell, count in enumerate(confusion)
           if count]
  n = sum(count for _, _, count in cells)
  n_human = confusion[FN] + confusion[TP]
  result = {"n": n, "predicted_ais": None, "accuracy": None, "balanced_accuracy": None,
            "cohen_kappa": None,
            "confusion": {"tp": int(confusion[TP]), "fp": int(confusion[FP]),
                          "tn": int(confusion[TN]), "fn": int(confusion[FN])}}
  if not n:
    return result
  # Imported only where rows carry human labels: scikit-learn takes most of a
  # second to import, which a run without them (most runs) need not pay.
  from sklearn.metrics import (accuracy_score, balanced_accuracy_score,  # pylint: disable=import-outside-toplevel
                               cohen_kappa_score)
  human = np.array([c[0] for c in cells])
  predicted = np.array([c[1] for c in cells])
  weights = np.array([c[2] for c in cells], dtype=np.float64)
  result["predicted_ais"] = (confusion[FP] + confusion[TP]) / n
  result["accuracy"] = float(accuracy_score(human, predicted, sample_weight=weights))
  with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    if 0 < n_human < n:
      result["balanced_accuracy"] = float(
          balanced_accuracy_score(human, predicted, sample_weight=weights))
    result["cohen_kappa"] = _none_if_nan(
        cohen_kappa_score(human, predicted, sample_weight=weights))
  return result


class AgreementCounts:
  """Mergeable counts of one group: the decision's confusion counts, those of
  the calibrated decision, `ScoreCounts` of the scored rows, and per human
  label (as written in the source) the rows and how many were decided
  attributable."""

  def __init__(self):
    self.confusion = [0, 0, 0, 0]
    self.calibrated = [0, 0, 0, 0]
    self.scores = ScoreCounts()
    self.labels: Dict[str, List[int]] = {}

  def add(self, human: bool, decision: bool, score: Optional[float] = None,
          calibrated: Optional[bool] = None, label: Optional[str] = None) -> None:
    self.confusion[2 * human + decision] += 1
    if calibrated is not None:
      self.calibrated[2 * human + calibrated] += 1
    if score is not None:
      self.scores.add(score, human)
    if label is not None:
      counts = self.labels.setdefault(label, [0, 0])
      counts[0] += 1
      counts[1] += decision

  def add_arrays(self, human, decision, scores, scored) -> None:
    """Vectorised add of rows (no calibration, no labels): `scored` marks the
    rows whose score counts for the AUCs."""
    human = np.asarray(human, dtype=bool)
    decision = np.asarray(decision, dtype=bool)
    cells = np.bincount(2 * human.astype(np.int64) + decision, minlength=4)
    self.confusion = [a + int(b) for a, b in zip(self.confusion, cells)]
    scored = np.asarray(scored, dtype=bool)
    self.scores.add_arrays(np.asarray(scores, dtype=np.float64)[scored], human[scored])

  def merge(self, other: "AgreementCounts") -> "AgreementCounts":
    self.confusion = [a + b for a, b in zip(self.confusion, other.confusion)]
    self.calibrated = [a + b for a, b in zip(self.calibrated, other.calibrated)]
    self.scores.merge(other.scores)
    for label, (n, yes) in other.labels.items():
      counts = self.labels.setdefault(label, [0, 0])
      counts[0] += n
      counts[1] += yes
    return self

  @property
  def n(self) -> int:
    return sum(self.confusion)


class MergeAgreementCounts(beam.CombineFn):
  """(human, decision, score, calibrated, label) tuples or AgreementCounts ->
  one AgreementCounts."""

  def create_accumulator(self):
    return AgreementCounts()

  def add_input(self, accumulator, element):
    if isinstance(element, AgreementCounts):
      return accumulator.merge(element)
    accumulator.add(*element)
    return accumulator

  def merge_accumulators(self, accumulators):
    accumulators = iter(accumulators)
    merged = next(accumulators)
    for accumulator in accumulators:
      merged.merge(accumulator)
    return merged

  def compact(self, accumulator):
    accumulator.scores.flush()
    return accumulator

  def extract_output(self, accumulator):
    accumulator.scores.flush()
    return accumulator


def agreement_statistics(counts: AgreementCounts) -> Dict[str, object]:
  """The row-level statistics of one group (see the module docstring)."""
  scores = counts.scores.flush()
  decision = decision_statistics(counts.confusion)
  n = decision.pop("n")
  n_human = counts.confusion[FN] + counts.confusion[TP]
  stats = {
      "n_rated": n,
      "n_human_attributable": n_human,
      "human_ais": n_human / n if n else None,
      **decision,
      "n_scored": scores.n_positive + scores.n_negative,
      "distinct_scores": int(len(scores.scores)),
      "roc_auc": scores.roc_auc(),
      "pr_auc": scores.pr_auc(),
      "auc_exact": not scores.quantized,
      "roc_auc_error_bound": scores.roc_auc_error_bound(),
      "pr_auc_error_bound": scores.pr_auc_error_bound(),
      "by_human_label": {label: {"n": n_label, "predicted_attributable": yes}
                         for label, (n_label, yes) in sorted(counts.labels.items())},
  }
  if sum(counts.calibrated):
    calibrated = decision_statistics(counts.calibrated)
    calibrated.pop("n")
    stats["at_calibrated_threshold"] = calibrated
  return stats


def best_threshold(scores: ScoreCounts, metric: str, default: float) -> Dict[str, object]:
  """The threshold t maximising `metric` of `nli_score > t` over every distinct
  cut of the scores; among equal maxima, the one nearest `default`, then the
  lowest. Metrics are compared as integers (accuracy: tp + tn; balanced
  accuracy: tp * N + tn * P), so ties are exact."""
  if metric not in METRICS:
    raise ValueError(f"unknown calibration metric {metric!r}")
  thresholds, true_pos, false_pos = scores.threshold_sweep()
  n_pos, n_neg = scores.n_positive, scores.n_negative
  true_neg = n_neg - false_pos
  if metric == "accuracy":
    objective = true_pos + true_neg
  else:
    if not scores.both_classes():
      raise ValueError("balanced accuracy needs both human labels in the "
                       "calibration set")
    objective = true_pos * n_neg + true_neg * n_pos
  best = objective.max()
  candidates = np.flatnonzero(objective == best)
  distance = np.abs(thresholds[candidates] - default)
  chosen = candidates[np.lexsort((thresholds[candidates], distance))[0]]
  confusion = [0, 0, 0, 0]
  confusion[TP], confusion[FP] = int(true_pos[chosen]), int(false_pos[chosen])
  confusion[TN], confusion[FN] = int(true_neg[chosen]), int(n_pos - true_pos[chosen])
  on_calibration = decision_statistics(confusion)
  return {"metric": metric, "threshold": float(thresholds[chosen]),
          "value": on_calibration[metric], "candidates": int(len(thresholds)),
          "exact": not scores.quantized, "on_calibration_set": on_calibration,
          "tie_break": f"nearest {default!r}, then the lowest"}


# ----------------------------------------------------------------------------
# Benchmarks (LLM-AggreFact, TRUE): the unweighted mean over data sets of each
# data set's figure, with a percentile bootstrap that resamples the items within
# each data set.

_RESAMPLE_CHUNK = 50
MEAN_METRICS = ("balanced_accuracy", "roc_auc")
# With a calibration set: the mean of the data sets' balanced accuracy at the
# calibrated threshold (one threshold, or each data set's own).
CALIBRATED_MEAN = "balanced_accuracy_at_calibrated_threshold"


def _percentile_interval(values, level: float) -> Optional[List[float]]:
  """The `level` percentile interval of bootstrap `values` (None without any)."""
  if not len(values):
    return None
  tail = (1 - level) / 2 * 100
  return [float(v) for v in np.percentile(values, [tail, 100 - tail])]


def _group_rng(seed: int, metric: str, group: str) -> np.random.Generator:
  """The generator of one group's resamples of one figure: seeded by the seed
  and a digest of the names, so that a group's resamples do not depend on which
  other groups a run has, nor on their order."""
  digest = hashlib.blake2b(f"{metric}\0{group}".encode("utf-8", "surrogatepass"),
                           digest_size=8).digest()
  return np.random.default_rng([seed, int.from_bytes(digest, "big")])


def _multinomial_chunks(counts: np.ndarray, samples: int, rng: np.random.Generator):
  """Resampled counts of each cell: n items drawn with replacement from the n
  counted (a multinomial over the cells), in chunks of rows."""
  n = int(counts.sum())
  shares = counts / n
  for start in range(0, samples, _RESAMPLE_CHUNK):
    yield rng.multinomial(n, shares, size=min(_RESAMPLE_CHUNK, samples - start))


def resampled_balanced_accuracy(confusion: Sequence[int], samples: int,
                                rng: np.random.Generator) -> np.ndarray:
  """Balanced accuracy of each resample of a group's items, from its confusion
  counts [tn, fp, fn, tp]; NaN where a resample lacks a class."""
  draws = np.concatenate(list(_multinomial_chunks(
      np.asarray(confusion, dtype=np.float64), samples, rng))).astype(np.float64)
  positives, negatives = draws[:, FN] + draws[:, TP], draws[:, TN] + draws[:, FP]
  with np.errstate(divide="ignore", invalid="ignore"):
    return np.where((positives > 0) & (negatives > 0),
                    (draws[:, TP] / positives + draws[:, TN] / negatives) / 2, np.nan)


def resampled_roc_auc(scores: ScoreCounts, samples: int,
                      rng: np.random.Generator) -> np.ndarray:
  """ROC-AUC of each resample of a group's items, from its positives and
  negatives per distinct score: the share of (positive, negative) pairs ordered
  right, ties counting one half (what roc_auc_score computes); NaN where a
  resample lacks a class."""
  scores.flush()
  k = len(scores.scores)
  cells = np.concatenate([scores.positives, scores.negatives]).astype(np.float64)
  values = []
  for draws in _multinomial_chunks(cells, samples, rng):
    positives, negatives = draws[:, :k].astype(np.float64), draws[:, k:].astype(
        np.float64)
    below = np.cumsum(negatives, axis=1) - negatives
    right = np.sum(positives * (below + negatives / 2), axis=1)
    pairs = positives.sum(axis=1) * negatives.sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
      values.append(np.where(pairs > 0, right / pairs, np.nan))
  return np.concatenate(values)


def mean_over_groups(counts: Dict[str, AgreementCounts],
                     statistics: Dict[str, Dict[str, object]], samples: int,
                     seed: int, level: float = 0.95) -> Dict[str, object]:
  """For each of MEAN_METRICS, and CALIBRATED_MEAN where `statistics` have
  figures at a calibrated threshold: the unweighted mean over groups of the groups'
  figures (`statistics`, agreement_statistics of `counts`), the groups where it
  is defined, and its percentile interval over `samples` resamples, each the
  mean of the groups' figures on their items resampled with replacement within
  the group. A figure's resamples come from its own counts (confusion counts;
  positives and negatives per score); a resample in which some group lacks a
  class defines no mean and is left out (counted)."""
  result = {"bootstrap": {"method": "percentile", "level": level, "samples": samples,
                          "seed": seed, "resampled": "items within each group, "
                          "with replacement"}}
  resamplers = {
      "balanced_accuracy": lambda c, rng: resampled_balanced_accuracy(
          c.confusion, samples, rng),
      "roc_auc": lambda c, rng: resampled_roc_auc(c.scores, samples, rng),
      CALIBRATED_MEAN: lambda c, rng: resampled_balanced_accuracy(
          c.calibrated, samples, rng),
  }
  figures = {metric: {name: entry[metric] for name, entry in statistics.items()}
             for metric in MEAN_METRICS}
  if any("at_calibrated_threshold" in entry for entry in statistics.values()):
    figures[CALIBRATED_MEAN] = {
        name: entry.get("at_calibrated_threshold", {}).get("balanced_accuracy")
        for name, entry in statistics.items()}
  for metric, values in figures.items():
    names = sorted(name for name, value in values.items() if value is not None)
    entry = {"mean": None, "ci": None, "n_groups": len(names), "groups": names,
             "left_out": sorted(set(statistics) - set(names)), "resamples_used": 0}
    if names:
      entry["mean"] = float(np.mean([values[name] for name in names]))
      means = np.mean(np.stack(
          [resamplers[metric](counts[name], _group_rng(seed, metric, name))
           for name in names], axis=1), axis=1)
      defined = means[~np.isnan(means)]
      entry["resamples_used"] = int(len(defined))
      entry["ci"] = _percentile_interval(defined, level)
    result[metric] = entry
  return result


# ----------------------------------------------------------------------------
# Across systems (or groups).


# Up to this many points (systems, groups), the correlations' p-values come from
# every ordering of one side against the other (8! = 40,320 orderings): exact
# under the null of no association. scipy's Spearman p-value is asymptotic (a t
# distribution) and meaningless there: 0 for three systems ranked alike.
EXACT_PERMUTATION_MAX_N = 8
# Beyond it, what scipy does, as recorded in each entry's p_value_method.
_SCIPY_P_VALUE_METHODS = {
    "pearson": "scipy.stats.pearsonr: exact under bivariate normality (beta distribution)",
    "spearman": "scipy.stats.spearmanr: asymptotic (t distribution)",
    "kendall exact": "scipy.stats.kendalltau: exact (no ties, at most 33 points)",
    "kendall asymptotic": "scipy.stats.kendalltau: asymptotic (normal approximation)",
}


def correlations(x: Sequence[float], y: Sequence[float]) -> Dict[str, object]:
  """Pearson, Spearman and Kendall tau (scipy's statistics) with their two-sided
  p-values and how each was computed (`p_value_method`): exact permutation
  p-values up to EXACT_PERMUTATION_MAX_N points, else scipy's (Kendall's exact
  without ties up to 33 points). None where undefined (fewer than 3 points or a
  constant side)."""
  from scipy import stats  # pylint: disable=import-outside-toplevel
  x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
  result = {}
  defined = len(x) >= 3 and np.ptp(x) > 0 and np.ptp(y) > 0
  exact = permutation_p_values(x, y) if (
      defined and len(x) <= EXACT_PERMUTATION_MAX_N) else None
  ties = len(np.unique(x)) < len(x) or len(np.unique(y)) < len(y)
  kendall_method = "exact" if not ties and len(x) <= 33 else "asymptotic"
  for name, function in (("pearson", stats.pearsonr), ("spearman", stats.spearmanr),
                         ("kendall", functools.partial(stats.kendalltau,
                                                       method=kendall_method))):
    if not defined:
      result[name] = {"statistic": None, "p_value": None, "p_value_method": None}
      continue
    outcome = function(x, y)
    if exact is not None:
      p_value = exact[name]
      method = (f"exact permutation: all {math.factorial(len(x))} orderings of the "
                f"{len(x)} points")
    else:
      p_value = _none_if_nan(outcome.pvalue)
      method = _SCIPY_P_VALUE_METHODS[
          f"kendall {kendall_method}" if name == "kendall" else name]
    result[name] = {"statistic": _none_if_nan(outcome.statistic), "p_value": p_value,
                    "p_value_method": method}
  return result


def permutation_p_values(x: np.ndarray, y: np.ndarray) -> Dict[str, float]:
  """Two-sided p-values of Pearson, Spearman and Kendall tau from every ordering
  of y against x: the share of orderings whose statistic is at least as far from
  0 as the observed one. Each statistic's denominator is the same in every
  ordering (the spreads and ties of x and y do not move), so orderings are
  compared by their numerators: sum of products of centred values (of ranks for
  Spearman), and the sum of concordant minus discordant pairs."""
  from scipy import stats  # pylint: disable=import-outside-toplevel
  orderings = np.array(list(itertools.permutations(range(len(x)))))
  rank_x, rank_y = stats.rankdata(x), stats.rankdata(y)
  first, second = np.triu_indices(len(x), k=1)
  sign_x = np.sign(x[first] - x[second])
  numerators = {
      "pearson": (y[orderings] - y.mean()) @ (x - x.mean()),
      "spearman": (rank_y[orderings] - rank_y.mean()) @ (rank_x - rank_x.mean()),
      "kendall": np.sign(y[orderings][:, first] - y[orderings][:, second]) @ sign_x,
  }
  p_values = {}
  for name, values in numerators.items():
    observed = abs(values[0])  # orderings[0] is the identity: the data as given
    # Float sums of the same terms in another order can differ in the last bits.
    tolerance = 1e-9 * max(np.abs(values).max(), 1e-300)
    p_values[name] = float(np.mean(np.abs(values) >= observed - tolerance))
  return p_values


def bootstrap_correlation_intervals(x_resamples: np.ndarray, y_resamples: np.ndarray,
                                    level: float = 0.95) -> Dict[str, object]:
  """Percentile intervals of each correlation over bootstrap resamples (rows:
  resamples, columns: systems). A resample where a system has no rated row, or
  a side is constant, defines no correlation and is left out (counted)."""
  from scipy import stats  # pylint: disable=import-outside-toplevel
  values = {"pearson": [], "spearman": [], "kendall": []}
  skipped = 0
  for x, y in zip(x_resamples, y_resamples):
    if not (np.all(np.isfinite(x)) and np.all(np.isfinite(y))) or (
        np.ptp(x) == 0 or np.ptp(y) == 0):
      skipped += 1
      continue
    values["pearson"].append(stats.pearsonr(x, y).statistic)
    values["spearman"].append(stats.spearmanr(x, y).statistic)
    values["kendall"].append(stats.kendalltau(x, y).statistic)
  intervals = {name: _percentile_interval(
      np.array([value for value in samples if not math.isnan(value)]), level)
                for name, samples in values.items()}
  return {"intervals": intervals, "resamples_used": len(x_resamples) - skipped,
          "resamples_skipped": skipped}


def mcnemar_exact(a: np.ndarray, b: np.ndarray) -> Dict[str, object]:
  """McNemar's exact test of two paired binary outcomes: scipy's two-sided
  binomial test of the discordant pairs against p = 1/2."""
  from scipy import stats  # pylint: disable=import-outside-toplevel
  a, b = np.asarray(a, dtype=bool), np.asarray(b, dtype=bool)
  only_a, only_b = int(np.sum(a & ~b)), int(np.sum(~a & b))
  p_value = (float(stats.binomtest(only_a, only_a + only_b, 0.5).pvalue)
             if only_a + only_b else 1.0)
  return {"only_higher": only_a, "only_lower": only_b, "p_value": p_value}


class SystemAgreement:
  """What the system-level statistics need of one system: its row-level
  counts over rated rows, its AutoAIS, and per bootstrap resample the means of
  (AutoAIS, rated and auto Y, rated and human Y, rated) over gold questions;
  plus its AutoAIS per gold question (bit-packed) for the paired tests."""

  def __init__(self, system_name: str, counts: AgreementCounts, autoais: float,
               autoais_ci: Tuple[float, float], resample_means: Optional[np.ndarray],
               attributable: np.ndarray):
    self.system_name = system_name
    self.counts = counts
    self.autoais = autoais
    self.autoais_ci = autoais_ci
    self.resample_means = resample_means
    self.n_gold = len(attributable)
    self.attributable_bits = np.packbits(np.asarray(attributable, dtype=bool))

  def attributable(self) -> np.ndarray:
    return np.unpackbits(self.attributable_bits, count=self.n_gold).astype(bool)

  @property
  def n_rated(self) -> int:
    return self.counts.n

  @property
  def human_ais(self) -> Optional[float]:
    n = self.counts.n
    return (self.counts.confusion[FN] + self.counts.confusion[TP]) / n if n else None

  @property
  def autoais_rated(self) -> Optional[float]:
    n = self.counts.n
    return (self.counts.confusion[FP] + self.counts.confusion[TP]) / n if n else None


# Columns of SystemAgreement.resample_means.
RESAMPLE_AUTOAIS, RESAMPLE_RATED_AUTO, RESAMPLE_RATED_HUMAN, RESAMPLE_RATED = range(4)


def ratio_or_nan(numerator, denominator):
  """numerator / denominator elementwise; NaN where the denominator is 0."""
  with np.errstate(divide="ignore", invalid="ignore"):
    return np.where(denominator > 0, numerator / np.where(denominator > 0, denominator,
                                                          1), np.nan)


def system_level_agreement(systems: Iterable[SystemAgreement],
                           bootstrap: Dict[str, object],
                           over_gold: bool = True,
                           measure: str = "AutoAIS") -> Dict[str, object]:
  """Correlations over systems (with bootstrap CIs) and the neighbour tests;
  `bootstrap` describes the resamples (method, samples, seed) for the record.
  `over_gold` False: the systems' AutoAIS is over their own questions (evaluate
  without gold) and the paired tests over the run's questions. `measure`: what
  the descriptions call the systems' figure (string-match for the baseline)."""
  systems = sorted(systems, key=lambda s: s.system_name)
  rated = [s for s in systems if s.n_rated]
  result = {"n_systems": len(systems), "n_systems_rated": len(rated),
            "bootstrap": bootstrap}
  comparisons = {
      "autoais_rated_vs_human_ais": (
          f"per-system {measure} over the human-rated rows against human AIS over "
          "the same rows",
          [s.autoais_rated for s in rated],
          lambda m: ratio_or_nan(m[:, RESAMPLE_RATED_AUTO], m[:, RESAMPLE_RATED])),
      "autoais_vs_human_ais": (
          f"per-system {measure} (paper mode, over all gold questions) against human "
          "AIS" if over_gold else
          f"per-system {measure} (over its own predicted questions) against human AIS",
          [s.autoais for s in rated],
          lambda m: m[:, RESAMPLE_AUTOAIS]),
  }
  human = [s.human_ais for s in rated]
  for name, (description, autoais, resampled) in comparisons.items():
    entry = {"description": description, "x": autoais, "y": human,
             "systems": [s.system_name for s in rated], **correlations(autoais, human)}
    usable = [s for s in rated if s.resample_means is not None]
    if len(rated) >= 3 and len(usable) == len(rated):
      x = np.stack([resampled(s.resample_means) for s in rated], axis=1)
      y = np.stack([ratio_or_nan(s.resample_means[:, RESAMPLE_RATED_HUMAN],
                           s.resample_means[:, RESAMPLE_RATED]) for s in rated], axis=1)
      intervals = bootstrap_correlation_intervals(x, y)
      for method, interval in intervals.pop("intervals").items():
        entry[method]["ci"] = interval
      entry.update(intervals)
    result[name] = entry
  ranking = sorted(systems, key=lambda s: (-s.autoais, s.system_name))
  tests = []
  for higher, lower in zip(ranking, ranking[1:]):
    tests.append({"higher": higher.system_name, "lower": lower.system_name,
                  "autoais_higher": higher.autoais, "autoais_lower": lower.autoais,
                  **mcnemar_exact(higher.attributable(), lower.attributable())})
  result["neighbour_tests"] = {
      "test": "McNemar's exact test on " + (
          "gold questions" if over_gold else
          "the run's questions (one a system did not answer counts as N)") +
              " (two-sided binomial test of "
              "the questions only one of the two systems gets attributable; "
              "scipy.stats.binomtest), p-values not adjusted for multiple comparisons",
      "pairs": tests}
  return result
