"""The human check's pieces: alignment of an item's judgements with its
sentences, the human figures of one answer, and the automatic precision credit
of each used citation."""
from autoais.schemas import CitationItem, CitationSentenceRow
from autoais.transforms.citations import alce
from autoais.transforms.citations.human import automatic_credits, human_check_markdown
from autoais.transforms.citations.steps import human_check, human_figures

DOCS = ["Title: A\na", "Title: B\nb", "Title: C\nc"]


def _item(output, recall=None, citations=None):
  return CitationItem("s", "q?", 0, output, DOCS, None, None, None, False, recall,
                      citations, "f.json", 1)


def _check(output, recall, citations):
  item = _item(output, recall, citations)
  return human_check(item, alce.plan_sentences(item, alce.scored_output(output), 3))


def test_judgements_align_sentence_by_sentence_and_citation_by_used_citation():
  output = "Paris is big [1][2]. It is old [9]. It has a river."
  assert _check(output, None, None) == "no_judgements"
  assert _check(output, [1, 0, 0], [[2, 0], [], []]) == "aligned"
  assert _check(output, [1, 0], [[2, 0], []]) == "sentence_count_differs"
  # [9] is out of range: no valid citation to judge.
  assert _check(output, [1, 0, 0], [[2, 0], [0], []]) == "citation_count_differs"
  # Only the first three citations are used, hence judged.
  assert _check("A [1][2][3][1].", [1], [[2, 2, 2]]) == "aligned"
  assert _check("A [1][2][3][1].", [1], [[2, 2, 2, 2]]) == "citation_count_differs"


def test_human_figures_as_alces_analysis():
  # Sentence 2 unsupported: its citation counts 0 whatever its score; a
  # partial support (1) counts as support.
  recall, precision = human_figures([1, 0, 1], [[2, 1], [2], []])
  assert (recall, precision) == (2 / 3, 2 / 3)
  assert human_figures([1, 1], [[0], [2]]) == (1.0, 0.5)
  assert human_figures([0], [[]]) == (0.0, 0)
  assert human_figures([], []) == (None, None)


def _row(supported, used, needed):
  return CitationSentenceRow("s", "q?", 0, 0, "x", "x", used, used, "scored", supported,
                             1.0, needed, 0, None, "", "t5", "f.json", 1)


def test_automatic_credits_follow_alces_precision():
  assert automatic_credits(_row(False, "1,2", "")) == [False, False]
  assert automatic_credits(_row(True, "2", "")) == [True]
  assert automatic_credits(_row(True, "1,2,3", "Y,N,Y")) == [True, False, True]
  assert automatic_credits(_row(False, "", "")) == []


def test_markdown_says_when_nothing_was_judged():
  assert human_check_markdown([]).startswith("No item carries human citation judgements")
