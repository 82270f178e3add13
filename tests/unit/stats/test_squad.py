"""SQuAD normalisation, EM and F1 against t5.evaluation (the reference), value by value."""
import random

import pytest

from tests.support.files import read_jsonl
from tests.support.paths import shared_file
from autoais.transforms.stats.squad import exact_match_and_f1, normalize_answer, token_f1

qa_utils = pytest.importorskip("t5.evaluation.qa_utils")

TRICKY = [
    "", " ", "The", "the the a an", "A Tale of Two Cities", "an apple a day",
    "Théâtre — L'Opéra", "U.S.A.", "don't", "the-end", "the’s", "«Mount Everest»",
    "100 °C", "1,000,000", "  spaced\tout\nanswer ", "ÀN ÉLAN", "theatre", "Anne",
    "A", "ß", "İstanbul", "naïve café", "a.k.a. the man", "(the) [answer]!",
]


@pytest.mark.parametrize("text", TRICKY)
def test_normalize_equals_reference(text):
  assert normalize_answer(text) == qa_utils.normalize_squad(text)


def _reference(golds, prediction):
  golds = [qa_utils.normalize_squad(g) for g in golds]
  prediction = qa_utils.normalize_squad(prediction)
  em = qa_utils._metric_max_over_ground_truths(  # pylint: disable=protected-access
      qa_utils._exact_match_score, golds, prediction)
  f1 = qa_utils._metric_max_over_ground_truths(  # pylint: disable=protected-access
      qa_utils._f1_score, golds, prediction)
  return float(em), float(f1)


def test_em_f1_equal_reference_on_nq_answers():
  gold = read_jsonl(shared_file("nq_open/NQ-open.dev.jsonl"))
  rng = random.Random(0)
  checked = 0
  for record in gold:
    answers = record["answer"]
    other = gold[rng.randrange(len(gold))]["answer"][0]
    words = answers[0].split()
    candidates = [answers[0], answers[-1].upper() + ".", f"the {answers[0]}", "",
                  other, " ".join(words[: max(1, len(words) // 2)]),
                  " ".join(words + words[:1]), rng.choice(TRICKY)]
    for prediction in candidates:
      assert exact_match_and_f1(answers, prediction) == _reference(answers, prediction), (
          answers, prediction)
      checked += 1
  assert checked == 8 * len(gold)


def test_token_f1_is_bit_identical_on_partial_overlaps():
  rng = random.Random(1)
  vocabulary = "a b c d e f g h".split()
  for _ in range(20000):
    gold = " ".join(rng.choices(vocabulary, k=rng.randint(0, 7)))
    predicted = " ".join(rng.choices(vocabulary, k=rng.randint(0, 7)))
    assert token_f1(gold, predicted) == float(qa_utils._f1_score(gold, predicted))  # pylint: disable=protected-access


def test_gold_without_answers_is_an_error():
  with pytest.raises(ValueError):
    exact_match_and_f1([], "x")
