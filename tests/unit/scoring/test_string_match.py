"""The string-match baseline (SPEC 5.4)."""
import pytest

from autoais.transforms.scoring.string_match import (_ENTRY_CHARS, _RecentNormalized,
                                                     string_match_attributable,
                                                     string_match_score)
from autoais.schemas import AttributionExample


@pytest.mark.parametrize("answer, passage, expected", [
    ("Jason Flemyng", "in which Flemyng played Dr. Henry Jekyll", False),
    ("Flemyng", "in which Flemyng played Dr. Henry Jekyll", True),
    ("1", "The war ended in 1972.", False),  # whole tokens only
    ("1972", "The war ended in 1972.", True),
    ("The Beatles!", "songs by beatles were", True),  # normalised both sides
    ("yes", "yes, the sun is a star", False),  # yes/no answers never
    ("No", "no doubt", False),
    ("the", "the the the", False),  # normalises to empty
    ("New York", "New\nYork City", True),  # whitespace collapsed
    ("St. Elsewhere", "St Elsewhere Episodes", True),
])
def test_string_match(answer, passage, expected):
  assert string_match_attributable(answer, passage) is expected


def test_score_is_one_or_zero_and_decision_uses_threshold():
  example = AttributionExample("premise", "hypothesis", "Flemyng", "Flemyng played")
  assert string_match_score(example, 0.5) == (1.0, True, 1, False, None)  # no spans
  assert string_match_score(example, 1.0).attributable is False
  missing = example._replace(answer="Depp")
  assert string_match_score(missing, 0.5) == (0.0, False, 1, False, None)



# Short texts are their own keys, long ones (past _DIGEST_FROM) their digests.
@pytest.mark.parametrize("prefix", ["", "Long " * 20])
def test_recent_forms_are_bounded_by_size_least_recent_dropped_first(prefix):
  forms_of = [f"{prefix.lower()}text {k}" for k in range(4)]
  entry = len(forms_of[0]) + _ENTRY_CHARS
  forms = _RecentNormalized(3 * entry)
  texts = [f"{prefix}The Text {k}!" for k in range(4)]
  assert [forms(text) for text in texts[:3]] == forms_of[:3]
  assert forms(texts[0]) == forms_of[0]  # now the most recently used
  assert forms(texts[3]) == forms_of[3]  # past the bound: the second goes
  assert sorted(forms._forms.values()) == [forms_of[0], forms_of[2], forms_of[3]]
  assert forms._chars == 3 * entry
