"""ALCE's definitions (transforms/citations/alce.py) on cases worked out by hand
from eval.py and utils.py (tests/jobs/test_citations_parity.py runs eval.py
itself on whole files)."""
import pytest

from autoais.schemas import CitationItem
from autoais.transforms.citations import alce


def _item(output, docs=("Title: A\na", "Title: B\nb", "Title: C\nc"), qampari=False,
          question="q?"):
  return CitationItem("s", question, 0, output, list(docs), None, None, None, qampari,
                      None, None, "f.json", 1)


def test_output_is_stripped_then_cut_at_its_first_line_then_unmarked():
  assert alce.scored_output("  a [1].\nb [2].") == "a [1]."
  assert alce.scored_output("a<|im_end|>") == "a"
  assert alce.scored_output("\n\nlater line") == "later line"


@pytest.mark.parametrize("text,removed", [
    ("Paris [1][2].", "Paris."), ("Paris [1, 2].", "Paris, 2."),
    ("Paris [1] | [2].", "Paris."), ("a ] b [12 c", "a  b c"), ("[3]x [4]", "x"),
    ("no citation", "no citation"), ("Paris[1].", "Paris.")])
def test_remove_citations(text, removed):
  assert alce.remove_citations(text) == removed


def test_plans_cover_missing_out_of_range_zero_and_the_cut():
  item = _item("x")
  output = "One [1]. Two. Three [4]. Four [0]. Five [1][2][3][1]. Six [2][9]."
  plans = alce.plan_sentences(item, output, at_most_citations=3)
  assert [p.status for p in plans] == ["scored", "no_citation", "out_of_range", "scored",
                                       "scored", "out_of_range"]
  assert plans[0].premise == "Title: A\na" and plans[0].hypothesis == "One."
  assert plans[3].used == (2,)  # [0] is ALCE's docs[-1]
  assert plans[4].used == (0, 1, 2)  # the first three
  assert plans[4].premise == "Title: A\na\nTitle: B\nb\nTitle: C\nc"
  assert alce.plan_sentences(_item("x", docs=()), "A [0].", 3)[0].status == "out_of_range"


def test_precision_pairs_leave_one_occurrence_out():
  plan = alce.plan_sentences(_item("x"), "A [1][1][2].", 3)[0]
  assert alce.precision_pairs(_item("x"), plan) == [
      ("Title: A\na", "Title: A\na\nTitle: B\nb"),
      ("Title: A\na", "Title: A\na\nTitle: B\nb"),
      ("Title: B\nb", "Title: A\na\nTitle: A\na")]


def test_qampari_units_are_prefixed_list_items():
  assert alce.answer_units("Which?", "a [1], b [2],c.", qampari=True) == [
      "Which? a [1]", "Which? b [2]", "Which? c"]


def test_item_precision():
  plans = alce.plan_sentences(_item("x"), "A [1]. B [1][2]. C [2][3]. D.", 3)
  assert alce.item_precision(plans, [True, True, False, False],
                             [None, [True, False], None, None]) == (2, 5)


def test_qampari_figures():
  got = alce.qampari_figures("Paris, Lyon, the Nice.",
                             [["paris"], ["nice", "Nizza"], ["marseille"]])
  assert got == (3, 2 / 3, 2 / 3, 2 / 3, 2 / 3, 2 / 3)
  assert alce.qampari_figures("", [["x"]]) == (0, 0, 0, 0, 0, 0)
  assert alce.qampari_figures("a, an", [["x"]])[0] == 0  # articles normalise to ""
  # Seven gold answers, six found: recall 6/7, top-5 recall 5/5.
  got = alce.qampari_figures("p, p, q, r, s, t, u",
                             [["p"], ["q"], ["r"], ["s"], ["t"], ["u"], ["v"]])
  assert got[:4] == (7, 1.0, 6 / 7, 1.0)


def test_str_em_is_a_normalised_substring_test():
  output = "The Eiffel tower was built in 1889 by Gustave Eiffel."
  assert alce.str_em(output, [["1889"], ["Gustave  Eiffel", "G. Eiffel"], ["Paris"]]) == (
      2 / 3, False)
  assert alce.str_em(output, [["89 by"]]) == (1.0, True)  # not whole words
