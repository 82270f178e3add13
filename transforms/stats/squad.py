"""SQuAD answer normalisation, exact match and token F1 (SPEC 5.3).

The definitions follow the SQuAD v1.1 evaluation as `t5.evaluation.metrics.squad`
applies it: lower-case, delete ASCII punctuation, replace the articles a/an/the
(as whole words) with a space, collapse whitespace. EM and F1 are maxed over the
gold answers. `tests/unit/stats/test_squad.py` holds every value equal to t5's.
"""
import collections
import functools
import re
import string
from typing import Sequence, Tuple

_PUNCTUATION = str.maketrans("", "", string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b")


def normalize_answer(text: str) -> str:
  text = text.lower().translate(_PUNCTUATION)
  text = _ARTICLES.sub(" ", text)
  return " ".join(text.split())


# Answers repeat across the systems of a leaderboard and are normalised for EM/F1
# and again for string matching: keep the recent ones.
normalize_short_answer = functools.lru_cache(maxsize=65536)(normalize_answer)


def token_f1(gold: str, predicted: str) -> float:
  """Token-overlap F1 of two normalised strings (0 when nothing overlaps).

  The float arithmetic (precision and recall first, then their harmonic mean)
  is kept so that values are bit-identical to the reference implementation.
  """
  predicted_tokens = predicted.split()
  gold_tokens = gold.split()
  if predicted_tokens == gold_tokens:
    return 1.0 if predicted_tokens else 0.0
  if set(predicted_tokens).isdisjoint(gold_tokens):
    return 0.0
  overlap = collections.Counter(predicted_tokens) & collections.Counter(gold_tokens)
  n_same = sum(overlap.values())
  if n_same == 0:
    return 0.0
  precision = 1.0 * n_same / len(predicted_tokens)
  recall = 1.0 * n_same / len(gold_tokens)
  return (2 * precision * recall) / (precision + recall)


def grade_normalized(normalized_golds: Sequence[str],
                     normalized_prediction: str) -> Tuple[float, float]:
  """(EM, F1) of a normalised prediction, maxed over normalised gold answers."""
  if not normalized_golds:
    raise ValueError("a gold question needs at least one answer")
  if normalized_prediction and normalized_prediction in normalized_golds:
    return 1.0, 1.0  # an identical gold answer has F1 exactly 1.0, the maximum
  em = float(normalized_prediction in normalized_golds)
  # token_f1 returns 0 at once for the common case: no token shared.
  return em, max(token_f1(gold, normalized_prediction) for gold in normalized_golds)


def exact_match_and_f1(gold_answers: Sequence[str],
                       predicted: str) -> Tuple[float, float]:
  """(EM, F1) of one raw prediction, each maxed over the raw gold answers."""
  return grade_normalized([normalize_answer(answer) for answer in gold_answers],
                          normalize_answer(predicted))

