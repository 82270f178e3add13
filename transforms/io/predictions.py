"""Predictions: the reader of `autoais evaluate --predictions` (CSV, JSON Lines or
Parquet rows of question, answer, an attribution (a corpus id) or the passage
itself, and, optionally, system_name and human_rating), also the ratings format
of `autoais agreement`.

A row names its passage by `attribution` (looked up in --corpus), carries it
in `passage` (no corpus needed), or both (the row's own passage is scored). A
file must declare one of the two (a CSV or Parquet column, a JSON Lines first
record's field); a row with neither, or an empty attribution, is counted as
not attributable (evaluate's `missing_attribution`). In JSON Lines `passage`
may be a list of passages: each is scored, and the row takes the passage
audit's reranking would choose (transforms/evaluate/steps.py); an empty list is
no passage, as null is; an item that is not a non-empty string rejects the row.
"""
from typing import Dict, Iterator, List, Union

from autoais.schemas import DeadLetter, Prediction
from autoais.transforms.io.fields import (clean_text_fields, has_surrogates, json_record,
                                  rejected, system_name_field)
from autoais.transforms.io.inputs import check_input_file, system_name_from_path
from autoais.transforms.io.input_records import Columns, read_columns, records

REQUIRED_PREDICTION_FIELDS = ("question", "answer")
# A file declares at least one of these; a row may carry either or both.
PASSAGE_FIELDS = ("attribution", "passage")
OPTIONAL_PREDICTION_FIELDS = ("system_name", "human_rating")
_PREDICTION_FIELDS = (REQUIRED_PREDICTION_FIELDS + PASSAGE_FIELDS +
                      OPTIONAL_PREDICTION_FIELDS)
HUMAN_RATINGS = {"y": "Y", "yes": "Y", "n": "N", "no": "N"}


def check_prediction_file(path: str) -> Columns:
  """Raises InputError if a predictions file cannot be read (check_input_file) or
  lacks a required column (in JSON Lines, a required field of its first
  record): question, answer, and attribution or passage; returns its Columns."""
  check_input_file(path)
  return read_columns(path, _PREDICTION_FIELDS).require(
      REQUIRED_PREDICTION_FIELDS + (PASSAGE_FIELDS,))


def _passage_list(fields, path: str, line: int) -> Union[List[str], DeadLetter]:
  """A row's list of passages, or the DeadLetter of its first bad item: a list
  is the row's evidence, so a part of it that cannot be read is not dropped."""
  passages = fields["passage"]
  for number, passage in enumerate(passages, 1):
    if not isinstance(passage, str):
      reason, problem = "wrong_type", f"expected a string, found {type(passage).__name__}"
    elif has_surrogates(passage):
      reason, problem = "non_utf8", "bytes that are not UTF-8"
    elif not passage.strip():
      reason, problem = "invalid_value", "an empty passage"
    else:
      continue
    return rejected(path, line, reason, f"item {number} of the list of passages: {problem}",
                    json_record(fields), "passage")
  return list(passages)


def parse_prediction(fields: Dict[str, object], path: str, line: int,
                     default_system: str) -> Union[Prediction, DeadLetter]:
  passages = None
  if isinstance(fields.get("passage"), list):
    passages = _passage_list(fields, path, line)
    if isinstance(passages, DeadLetter):
      return passages
  # The other fields are read as in a row with one passage (or none).
  values = clean_text_fields(fields if passages is None else dict(fields, passage=None),
                             _PREDICTION_FIELDS, REQUIRED_PREDICTION_FIELDS, path, line)
  if isinstance(values, DeadLetter):
    return values
  question = values["question"].strip()
  if not question:
    return rejected(path, line, "empty_question", "the question is empty",
                    json_record(fields), "question")
  if not values["answer"].strip():
    return rejected(path, line, "empty_answer", "the answer is empty",
                    json_record(fields), "answer")
  system = system_name_field(values, default_system, fields, path, line)
  if isinstance(system, DeadLetter):
    return system
  rating = values["human_rating"]
  if rating is not None and rating.strip():
    rating = HUMAN_RATINGS.get(rating.strip().lower())
    if rating is None:
      return rejected(path, line, "invalid_value",
                      f"human_rating must be Y or N, found {values['human_rating']!r}",
                      json_record(fields), "human_rating")
  else:
    rating = None
  return Prediction(
      system_name=system,
      question=question,
      answer=values["answer"],
      attribution=(values["attribution"] or "").strip(),
      # A cell of white space is no passage (the row falls back to its
      # attribution), as an empty one is.
      passage=values["passage"] if (values["passage"] or "").strip() else None,
      human_rating=rating,
      source_file=path,
      source_line=line,
      passages=passages or None)


def read_predictions(path: str) -> Iterator[Union[Prediction, DeadLetter]]:
  default_system = system_name_from_path(path)
  for item in records(path, _PREDICTION_FIELDS):
    if isinstance(item, DeadLetter):
      yield item
    else:
      line, fields = item
      yield parse_prediction(fields, path, line, default_system)
