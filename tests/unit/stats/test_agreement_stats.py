"""The agreement accumulators against scikit-learn and scipy on the same rows:
merged in any split and order, they give scikit-learn's figures exactly (or,
past the exact limit, within the error bound they report)."""
import random
import sys

import numpy as np
import pytest
from scipy import stats
from sklearn import metrics as skm
from sklearn.calibration import calibration_curve

from autoais.transforms.stats import agreement
from autoais.transforms.stats.agreement import (AgreementCounts, ScoreCounts,
                                        agreement_statistics, best_threshold,
                                        decision_statistics)


def _rows(n=5000, seed=0, decimals=3):
  """Scores with many ties (rounded), labels correlated with them."""
  rng = np.random.default_rng(seed)
  labels = rng.random(n) < 0.4
  scores = rng.beta(2 + 2 * labels, 3)
  if decimals is not None:
    scores = np.round(scores, decimals)
  return scores, labels


def _split_and_merge(scores, labels, parts, seed):
  """Rows added one by one into `parts` accumulators, merged in a shuffled order."""
  accumulators = [AgreementCounts() for _ in range(parts)]
  owner = np.random.default_rng(seed).integers(0, parts, len(scores))
  threshold = 0.5
  for score, label, part in zip(scores, labels, owner):
    accumulators[part].add(bool(label), bool(score > threshold), float(score),
                           None, "Y" if label else "N")
  random.Random(seed).shuffle(accumulators)
  merged = accumulators[0]
  for other in accumulators[1:]:
    merged.merge(other)
  return merged


def test_statistics_equal_sklearn_whatever_the_split():
  scores, labels = _rows()
  decisions = scores > 0.5
  expected = {
      "accuracy": skm.accuracy_score(labels, decisions),
      "balanced_accuracy": skm.balanced_accuracy_score(labels, decisions),
      "cohen_kappa": skm.cohen_kappa_score(labels, decisions),
      "roc_auc": skm.roc_auc_score(labels, scores),
      "pr_auc": skm.average_precision_score(labels, scores),
  }
  results = []
  for parts, seed in ((1, 0), (3, 1), (7, 2)):
    result = agreement_statistics(_split_and_merge(scores, labels, parts, seed))
    results.append(result)
    for name, value in expected.items():
      assert result[name] == pytest.approx(value, abs=1e-12), name
    assert result["auc_exact"] and result["roc_auc_error_bound"] == 0.0
    assert result["n_rated"] == len(scores)
    assert result["human_ais"] == labels.mean()
    assert result["predicted_ais"] == decisions.mean()
    assert result["by_human_label"]["Y"] == {
        "n": int(labels.sum()), "predicted_attributable": int((decisions & labels).sum())}
  # Bit-identical across splits and merge orders (JSON would show any difference).
  assert results[0] == results[1] == results[2]
  assert 0.5 < expected["roc_auc"] < 1.0  # a non-trivial case


def test_planted_bug_would_be_caught():
  """The comparison is sharp: swapping one row's label moves ROC-AUC."""
  scores, labels = _rows(n=500, seed=3)
  counts = ScoreCounts()
  flipped = labels.copy()
  flipped[np.argmax(scores)] ^= True
  counts.add_arrays(scores, flipped)
  assert counts.roc_auc() != skm.roc_auc_score(labels, scores)


def test_past_the_exact_limit_scores_are_gridded_within_the_stated_bound(monkeypatch):
  monkeypatch.setattr(agreement, "EXACT_SCORE_LIMIT", 500)
  scores, labels = _rows(n=20000, seed=4, decimals=None)  # all distinct
  merged = []
  for parts, seed in ((1, 0), (5, 1)):
    counts = _split_and_merge(scores, labels, parts, seed).scores
    assert counts.quantized and len(counts.scores) <= agreement.GRID_BINS + 1
    merged.append(agreement_statistics(_split_and_merge(scores, labels, parts, seed)))
  assert merged[0] == merged[1]
  result = merged[0]
  assert not result["auc_exact"]
  roc, ap = skm.roc_auc_score(labels, scores), skm.average_precision_score(labels, scores)
  assert 0 < abs(result["roc_auc"] - roc) <= result["roc_auc_error_bound"] < 1e-3
  assert abs(result["pr_auc"] - ap) <= result["pr_auc_error_bound"] < 1e-2
  # Decision statistics stay exact: they come from confusion counts.
  assert result["accuracy"] == skm.accuracy_score(labels, scores > 0.5)


def test_grid_bounds_hold_on_coarse_grids(monkeypatch):
  """With a coarse grid the bounds are tight enough to be tested: the exact
  figures of any within-bin order lie inside them."""
  monkeypatch.setattr(agreement, "EXACT_SCORE_LIMIT", 10)
  monkeypatch.setattr(agreement, "GRID_BINS", 8)
  scores, labels = _rows(n=3000, seed=5, decimals=None)
  counts = ScoreCounts()
  counts.add_arrays(scores, labels)
  roc_bound, ap_bound = counts.roc_auc_error_bound(), counts.pr_auc_error_bound()
  assert abs(counts.roc_auc() - skm.roc_auc_score(labels, scores)) <= roc_bound
  assert abs(counts.pr_auc() - skm.average_precision_score(labels, scores)) <= ap_bound
  # The worst within-bin orders: positives first, then negatives first.
  bins = np.ceil(scores * 8)
  for sign in (1, -1):
    worst = bins + sign * 1e-3 * labels
    assert abs(counts.roc_auc() - skm.roc_auc_score(labels, worst)) <= roc_bound + 1e-12
    assert (abs(counts.pr_auc() - skm.average_precision_score(labels, worst))
            <= ap_bound + 1e-12)


def test_decision_statistics_equal_sklearn_including_degenerate_cases():
  rng = np.random.default_rng(6)
  cases = [(rng.random(300) < 0.3, rng.random(300) < 0.6),
           (np.ones(20, bool), rng.random(20) < 0.5),  # one human class
           (rng.random(20) < 0.5, np.zeros(20, bool))]  # one decision
  for human, decided in cases:
    confusion = np.bincount(2 * human.astype(int) + decided, minlength=4)
    result = decision_statistics(confusion)
    assert result["accuracy"] == skm.accuracy_score(human, decided)
    kappa = skm.cohen_kappa_score(human, decided)
    assert result["cohen_kappa"] == (None if np.isnan(kappa) else pytest.approx(kappa,
                                                                              abs=1e-12))
    if 0 < human.sum() < len(human):
      assert result["balanced_accuracy"] == pytest.approx(
          skm.balanced_accuracy_score(human, decided), abs=1e-12)
    else:
      assert result["balanced_accuracy"] is None



def test_a_group_without_human_labels_needs_no_scikit_learn(monkeypatch):
  """Most evaluate runs rate no row by hand: their statistics are all None,
  and scikit-learn (most of a second to import) is not imported for them."""
  monkeypatch.setitem(sys.modules, "sklearn.metrics", None)  # any import of it fails
  counts = AgreementCounts()
  counts.scores.flush()
  statistics = agreement.agreement_statistics(counts)
  assert statistics["n_rated"] == 0
  assert statistics["accuracy"] is statistics["roc_auc"] is statistics["pr_auc"] is None
  with pytest.raises(ImportError):
    decision_statistics([1, 0, 0, 1])

def _sweep(scores, labels, metric, default):
  """Every cut between distinct scores, scored by scikit-learn on the rows."""
  distinct = np.unique(scores)
  candidates = np.concatenate([[np.nextafter(distinct[0], -np.inf)], distinct])
  score = {"accuracy": skm.accuracy_score,
           "balanced_accuracy": skm.balanced_accuracy_score}[metric]
  values = [round(score(labels, scores > t), 12) for t in candidates]
  best = max(values)
  ties = [t for t, v in zip(candidates, values) if v == best]
  return min(ties, key=lambda t: (abs(t - default), t)), best


@pytest.mark.parametrize("metric", ["accuracy", "balanced_accuracy"])
def test_best_threshold_is_the_exhaustive_sweeps(metric):
  scores, labels = _rows(n=1500, seed=7, decimals=2)
  counts = ScoreCounts()
  counts.add_arrays(scores, labels)
  chosen = best_threshold(counts, metric, 0.5)
  threshold, value = _sweep(scores, labels, metric, 0.5)
  assert chosen["threshold"] == threshold
  assert chosen["value"] == pytest.approx(value, abs=1e-12)
  assert chosen["threshold"] != 0.5


def test_reliability_and_histogram_equal_sklearn_and_numpy():
  scores, labels = _rows(n=2000, seed=8)
  counts = ScoreCounts()
  counts.add_arrays(scores, labels)
  mean_score, share, rows = counts.reliability(10)
  prob_true, prob_pred = calibration_curve(labels, scores, n_bins=10)
  np.testing.assert_allclose(share, prob_true, atol=1e-12)
  np.testing.assert_allclose(mean_score, prob_pred, atol=1e-12)
  assert rows.sum() == len(scores)
  edges, pos, neg = counts.histogram(20)
  np.testing.assert_array_equal(pos, np.histogram(scores[labels], bins=edges)[0])
  np.testing.assert_array_equal(neg, np.histogram(scores[~labels], bins=edges)[0])


def test_correlations_and_mcnemar_equal_scipy():
  rng = np.random.default_rng(9)
  x = rng.random(23)
  y = x ** 3 + 0.01 * rng.random(23)
  result = agreement.correlations(x, y)
  assert result["pearson"]["statistic"] == stats.pearsonr(x, y).statistic
  assert result["spearman"]["statistic"] == stats.spearmanr(x, y).statistic
  assert result["kendall"]["statistic"] == stats.kendalltau(x, y).statistic
  monotone = agreement.correlations(x, np.exp(5 * x))
  assert monotone["spearman"]["statistic"] == pytest.approx(1.0)
  assert monotone["kendall"]["statistic"] == pytest.approx(1.0)
  assert monotone["pearson"]["statistic"] < 0.99
  assert agreement.correlations(x, np.ones(23))["pearson"]["statistic"] is None
  a, b = rng.random(400) < 0.6, rng.random(400) < 0.5
  test = agreement.mcnemar_exact(a, b)
  only_a, only_b = int((a & ~b).sum()), int((~a & b).sum())
  assert (test["only_higher"], test["only_lower"]) == (only_a, only_b)
  assert test["p_value"] == stats.binomtest(only_a, only_a + only_b).pvalue


def _p_by_enumeration(function, x, y):
  """Two-sided permutation p-value written out here: scipy's statistic on every
  ordering of y, the share at least as far from 0 as the observed one."""
  import itertools
  observed = abs(function(x, y).statistic)
  values = [abs(function(x, [y[i] for i in order]).statistic)
            for order in itertools.permutations(range(len(y)))]
  return np.mean([value >= observed - 1e-12 for value in values])


@pytest.mark.parametrize("x, y", [
    ([0.10, 0.50, 0.90], [0.20, 0.30, 0.80]),  # three systems ranked alike
    ([0.3, 0.1, 0.7, 0.4, 0.9], [0.2, 0.25, 0.6, 0.1, 0.95]),
    ([0.3, 0.1, 0.7, 0.4, 0.9, 0.5], [0.2, 0.2, 0.6, 0.1, 0.6, 0.3]),  # ties in y
])
def test_small_n_correlation_p_values_are_exact_permutation_p_values(x, y):
  result = agreement.correlations(x, y)
  for name, function in (("pearson", stats.pearsonr), ("spearman", stats.spearmanr),
                         ("kendall", stats.kendalltau)):
    assert result[name]["statistic"] == function(x, y).statistic
    assert result[name]["p_value"] == pytest.approx(_p_by_enumeration(function, x, y),
                                                    abs=1e-12), name
    assert result[name]["p_value_method"].startswith("exact permutation: all ")
  # scipy's asymptotic Spearman p-value for three systems in the same order is 0.
  if len(x) == 3:
    assert stats.spearmanr(x, y).pvalue == 0
    assert result["spearman"]["p_value"] == pytest.approx(1 / 3)
  # Without ties, Kendall's permutation p-value is scipy's exact one.
  if len(set(y)) == len(y):
    assert result["kendall"]["p_value"] == pytest.approx(
        stats.kendalltau(x, y, method="exact").pvalue, abs=1e-12)


def test_correlation_p_values_past_the_exact_limit_are_scipys_and_say_so():
  rng = np.random.default_rng(3)
  x = rng.random(agreement.EXACT_PERMUTATION_MAX_N + 1)
  y = x + rng.random(len(x))
  result = agreement.correlations(x, y)
  assert result["spearman"]["p_value"] == stats.spearmanr(x, y).pvalue
  assert "asymptotic" in result["spearman"]["p_value_method"]
  assert result["kendall"]["p_value"] == stats.kendalltau(x, y, method="exact").pvalue
  assert result["kendall"]["p_value_method"].startswith("scipy.stats.kendalltau: exact")
