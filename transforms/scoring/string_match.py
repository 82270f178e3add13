"""The string-match attribution baseline (XOR-AttriQA 5.1; SPEC 5.4).

An answer is attributable iff its SQuAD-normalised form is non-empty, is not
"yes"/"no", and occurs as a whole-token sequence in the normalised passage (title,
headings and text): "1" does not match inside "1972". `nli_score` is 1.0 or 0.0,
and auto_ais is Y iff it exceeds the threshold, as for the NLI scorers.
"""
import collections
import hashlib
import threading
from typing import Any, Dict, Union

import apache_beam as beam

from autoais.transforms.scoring.scorer import Scorer
from autoais.schemas import AttributionExample, AttributionScore
from autoais.transforms.io import progress
from autoais.transforms.scoring.flags import Family
from autoais.transforms.scoring.names import STRING_MATCH
from autoais.transforms.stats.squad import normalize_answer

_YES_NO = frozenset({"yes", "no"})
# About the bytes of an entry beyond its form: its key (a digest, or a text of
# at most _DIGEST_FROM characters), the dict's slot and the ordering links (so
# that many short answers are not counted as nothing).
_ENTRY_CHARS = 200
_DIGEST_FROM = 64


class _RecentNormalized:
  """normalize_answer of recently seen texts, the least recently used dropped
  first once the forms kept pass `max_chars` characters (an entry counts its
  form and _ENTRY_CHARS for its key and slot). Bounded by size, not by count:
  citations' premises are whole cited documents (about 1 KB each), where a
  leaderboard's passages are a few hundred characters and its answers a few
  words. A text longer than _DIGEST_FROM characters is keyed by its digest, so
  that the cache holds its normal form only, not the text beside it; a shorter
  one is its own key (cheaper than its digest). Shared by the threads of a
  worker process."""

  def __init__(self, max_chars: int):
    self._max_chars = max_chars
    self._chars = 0
    self._forms: "collections.OrderedDict[Union[str, bytes], str]" = (
        collections.OrderedDict())
    self._lock = threading.Lock()

  def __call__(self, text: str) -> str:
    # surrogatepass: JSON may carry lone surrogates, which strict UTF-8 refuses.
    key = (text if len(text) <= _DIGEST_FROM else
           hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest())
    with self._lock:
      form = self._forms.get(key)
      if form is not None:
        self._forms.move_to_end(key)
        return form
    form = normalize_answer(text)
    with self._lock:
      if key not in self._forms:
        self._forms[key] = form
        self._chars += len(form) + _ENTRY_CHARS
        while self._chars > self._max_chars:
          _, dropped = self._forms.popitem(last=False)
          self._chars -= len(dropped) + _ENTRY_CHARS
    return form


# Systems of a leaderboard cite the same passages: normalise each once. A
# leaderboard cycles through every question's candidates between two citations
# of a passage, so the cache holds tens of thousands (about 30,000 passages of
# 600 characters, or 18,000 of citations' premises of 1,200).
_normalized_passage = _RecentNormalized(24 << 20)
# Answers repeat across the systems of a leaderboard (about 40,000 of a few
# words, or 30,000 of citations' sentences).
_normalized_answer = _RecentNormalized(8 << 20)


def _searchable(normalized_answer: str) -> bool:
  return bool(normalized_answer) and normalized_answer not in _YES_NO


def answer_is_searchable(answer: str) -> bool:
  """Whether string match looks for `answer` in a passage at all: something is
  left of it once normalised, and it is not "yes" or "no" (which it takes for
  not attributable, whatever the passage says)."""
  return _searchable(_normalized_answer(answer))


def string_match_attributable(answer: str, passage_text: str) -> bool:
  answer = _normalized_answer(answer)
  if not _searchable(answer):
    return False
  return f" {answer} " in f" {_normalized_passage(passage_text)} "


def string_match_score(example: AttributionExample, threshold: float) -> AttributionScore:
  score = 1.0 if string_match_attributable(example.answer, example.passage_text) else 0.0
  return AttributionScore(score, score > threshold, 1, False)


class _StringMatchFn(beam.DoFn):

  def __init__(self, threshold: float):
    self._threshold = threshold

  def setup(self):
    self._rows_in = progress.Tally("rows_to_score")
    self._rows_scored = progress.Tally("rows_scored")

  def process(self, keyed_example):
    key, example = keyed_example
    self._rows_in.add()
    if example is None:
      yield key, None
    else:
      self._rows_scored.add()
      yield key, string_match_score(example, self._threshold)

  def finish_bundle(self):
    self._rows_in.flush()
    self._rows_scored.flush()


class _ScoreByStringMatch(beam.PTransform):

  def __init__(self, threshold: float):
    super().__init__()
    self._threshold = threshold

  def expand(self, keyed_examples):
    scored = keyed_examples | "MatchAnswerStrings" >> beam.ParDo(
        _StringMatchFn(self._threshold))
    stats = keyed_examples.pipeline | "NoModelStats" >> beam.Create([{}])
    return {"scored": scored, "stats": stats}


class StringMatchScorer(Scorer):

  name = STRING_MATCH
  _fixed = {"model": None, "decision": "threshold"}

  def __init__(self, threshold: float = 0.5):
    self._options = {"threshold": threshold}

  def score_keyed(self, work_dir: str, rows_of=None) -> beam.PTransform:
    del work_dir, rows_of  # one DoFn, no grouping; no row counted in run.json
    return _ScoreByStringMatch(self._options["threshold"])


def check_flags(options, local_run: bool) -> Dict[str, Any]:
  """--scorer string-match takes no flag of its own (any is refused)."""
  del options, local_run
  return {}


FAMILY = Family(STRING_MATCH, "the baseline: the answer found in the passage", (),
                check_flags, StringMatchScorer)
