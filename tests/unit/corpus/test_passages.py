"""Passage formats (SPEC 5.1): the NLI premise and the AIS display form."""
from autoais.transforms.corpus.passages import (display_passage, nli_premise, parse_passage,
                                        pyserini_contents)

ELSEWHERE = ('« St. Elsewhere » « St. Elsewhere, Episodes, "Their Town" » In a '
             "somewhat change-of-pace episode, Drs. Craig and Novino visit.")


def test_premise_is_headings_then_text():
  parsed = parse_passage(ELSEWHERE)
  assert nli_premise(parsed) == ('St. Elsewhere, Episodes, "Their Town". In a '
                                 "somewhat change-of-pace episode, Drs. Craig and "
                                 "Novino visit.")


def test_display_has_title_section_blank_line_text():
  assert display_passage(parse_passage(ELSEWHERE)) == (
      "Title: St. Elsewhere\n"
      'Section: Episodes, "Their Town"\n'
      "\n"
      "In a somewhat change-of-pace episode, Drs. Craig and Novino visit.")


def test_no_section_line_when_headings_equal_title():
  parsed = parse_passage("« Mars » « Mars » Mars is the fourth planet.")
  assert display_passage(parsed) == "Title: Mars\n\nMars is the fourth planet."
  assert nli_premise(parsed) == "Mars. Mars is the fourth planet."


def test_headings_not_starting_with_title_are_kept_whole():
  parsed = parse_passage("« Chrysler 300 letter series » « First Generation, 1955 "
                         "C-300 » The C-300 was the first.")
  assert display_passage(parsed).splitlines()[1] == (
      "Section: First Generation, 1955 C-300")


def test_unmatched_passage_is_used_as_is():
  raw = "Just a paragraph without headings."
  parsed = parse_passage(raw)
  assert nli_premise(parsed) == raw
  assert display_passage(parsed) == raw


def test_display_form_parses_back_to_the_same_premise():
  display = display_passage(parse_passage(ELSEWHERE))
  assert nli_premise(parse_passage(display)) == nli_premise(parse_passage(ELSEWHERE))
  assert display_passage(parse_passage(display)) == display


def test_title_and_text_sources_become_pyserini_contents():
  contents = pyserini_contents("Mars", "Mars is red.")
  assert contents == "« Mars » « Mars » Mars is red."
  assert nli_premise(parse_passage(contents)) == "Mars. Mars is red."
