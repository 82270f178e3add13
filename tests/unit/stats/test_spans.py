"""Character precision, recall and F1 of predicted spans against human spans
(transforms/stats/spans.py), against the same figures from sets of characters."""
import random

import pytest

from autoais.transforms.stats.spans import SpanCounts, merged_spans, span_counts


def _characters(spans):
  return {i for start, end in spans for i in range(start, end)}


def test_counts_are_those_of_character_sets():
  rng = random.Random(5)
  total = SpanCounts()
  gold_all, predicted_all, overlap_all = 0, 0, 0
  for _ in range(300):
    gold = [(s, s + rng.randint(0, 15)) for s in rng.sample(range(60), rng.randint(0, 4))]
    predicted = [(s, s + rng.randint(0, 15))
                 for s in rng.sample(range(60), rng.randint(0, 4))]
    counts = span_counts(gold, predicted)
    gold_chars, predicted_chars = _characters(gold), _characters(predicted)
    assert counts == (len(gold_chars & predicted_chars), len(predicted_chars),
                      len(gold_chars))
    total = total + counts
    gold_all += len(gold_chars)
    predicted_all += len(predicted_chars)
    overlap_all += len(gold_chars & predicted_chars)
  assert total.precision() == pytest.approx(overlap_all / predicted_all)
  assert total.recall() == pytest.approx(overlap_all / gold_all)
  p, r = overlap_all / predicted_all, overlap_all / gold_all
  assert total.f1() == pytest.approx(2 * p * r / (p + r))


def test_merging_and_undefined_figures():
  assert merged_spans([(5, 9), (0, 3), (3, 4), (8, 12), (7, 7)]) == [(0, 4), (5, 12)]
  assert span_counts([], []) == SpanCounts(0, 0, 0)
  none = span_counts([(0, 4)], [])
  assert (none.precision(), none.recall(), none.f1()) == (None, 0.0, None)
  disjoint = span_counts([(0, 4)], [(4, 8)])
  assert (disjoint.precision(), disjoint.recall(), disjoint.f1()) == (0.0, 0.0, 0.0)
  exact = span_counts([(2, 6), (10, 12)], [(10, 12), (2, 6)])
  assert (exact.precision(), exact.recall(), exact.f1()) == (1.0, 1.0, 1.0)
