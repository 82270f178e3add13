"""Readers of `autoais audit` inputs: answers, candidate passages, topics.

    read_audit_answers(path)     CSV / JSONL / Parquet rows `question, answer`,
                                 optional `system_name` and `query_id`
    read_trec_run(path)          TREC run lines `qid Q0 docid rank score tag`
                                 (white-space separated; the tag names the system)
    read_topics(path)            TSV lines `qid<TAB>question`
    read_candidates_jsonl(path)  lines {"system_name", "question" and/or
                                 "query_id", "candidates": [{"id", "rank"} or
                                 {"passage", "rank"}, ...]}

Each yields, per record (a run line, a topic, an entry of a candidate list),
the parsed element or a `DeadLetter` naming the file, the line and the field.
An answer row without `system_name` takes the system of the candidates it is
matched to. A passage given inline has no corpus id: it is named
`inline:` + the first 16 hex digits of its BLAKE2b digest.
"""
import hashlib
import math
from typing import Iterator, NamedTuple, Optional, Union

from autoais.schemas import UNMATCHED, AuditAnswer, Candidate, DeadLetter, Topic
from autoais.transforms.io.fields import (clean_text_fields, has_surrogates, json_record,
                                  raw_record, rejected)
from autoais.transforms.io.inputs import (check_input_file, check_text_file, data_format,
                                  open_input)
from autoais.transforms.io.input_records import Columns, jsonl_records, read_columns, records
from autoais.schemas.errors import InputError

ANSWER_FIELDS = ("question", "answer", "system_name", "query_id")
TREC_FIELDS = ("qid", "Q0", "docid", "rank", "score", "tag")
INLINE_PREFIX = "inline:"


def inline_passage_id(passage: str) -> str:
  digest = hashlib.blake2b(passage.encode("utf-8"), digest_size=8).hexdigest()
  return INLINE_PREFIX + digest


def _query_id(value) -> Union[str, None, bool]:
  """A query id as text (JSON numbers allowed), None if absent, False if bad."""
  if value is None:
    return None
  if isinstance(value, bool):
    return False
  if isinstance(value, int):
    return str(value)
  if isinstance(value, str) and value.strip() and not has_surrogates(value):
    return value.strip()
  return False


def check_answers_file(path: str) -> Columns:
  """Raises InputError if an answers file cannot be read or lacks `question` or
  `answer` (in JSON Lines, in its first record); returns its Columns."""
  check_input_file(path)
  return read_columns(path, ANSWER_FIELDS).require(("question", "answer"))


def read_audit_answers(path: str) -> Iterator[Union[AuditAnswer, DeadLetter]]:
  for item in records(path, ANSWER_FIELDS):
    if isinstance(item, DeadLetter):
      yield item
      continue
    line, fields = item
    query_id = fields.get("query_id")
    if isinstance(query_id, str) and not query_id.strip():
      query_id = None  # an empty cell: the answer is matched by its question
    query_id = _query_id(query_id)
    if query_id is False:
      yield rejected(path, line, "wrong_type", "expected a non-empty string or an "
                     "integer", json_record(fields), "query_id")
      continue
    values = clean_text_fields(dict(fields, query_id=None), ANSWER_FIELDS,
                                ("question", "answer"), path, line)
    if isinstance(values, DeadLetter):
      yield values
      continue
    if not values["question"].strip():
      yield rejected(path, line, "empty_question", "the question is empty",
                     json_record(fields), "question")
      continue
    if not values["answer"].strip():
      yield rejected(path, line, "empty_answer", "the answer is empty",
                     json_record(fields), "answer")
      continue
    system = values["system_name"]
    if system is not None and not system.strip():
      system = None  # an empty cell: the candidates' system
    yield AuditAnswer(system.strip() if system else None, values["question"].strip(),
                      query_id, values["answer"], None, None, path, line)


def _text_lines(path: str):
  """(line number, text or None if not UTF-8, raw bytes) of a text file (a UTF-8
  byte-order mark before the first line is not part of it)."""
  with open_input(path) as binary:
    for number, raw in enumerate(binary, start=1):
      try:
        text = raw.decode("utf-8-sig" if number == 1 else "utf-8")
        yield number, text.rstrip("\r\n"), raw
      except UnicodeDecodeError:
        yield number, None, raw


def _not_utf8(path, number, raw):
  return rejected(path, number, "non_utf8", "bytes that are not UTF-8",
                  raw_record(raw.decode("utf-8", "backslashreplace").rstrip("\r\n")))


def read_trec_run(path: str) -> Iterator[Union[Candidate, DeadLetter]]:
  for number, text, raw in _text_lines(path):
    if text is None:
      yield _not_utf8(path, number, raw)
      continue
    if not text.strip():
      continue
    values = text.split()
    record = raw_record(text)
    if len(values) != len(TREC_FIELDS):
      yield rejected(path, number, "malformed_trec",
                     f"expected {len(TREC_FIELDS)} white-space separated fields "
                     f"({' '.join(TREC_FIELDS)}), found {len(values)}", record)
      continue
    qid, _, docid, rank, score, tag = values
    try:
      rank = int(rank)
    except ValueError:
      yield rejected(path, number, "wrong_type", f"expected an integer, found {rank!r}",
                     record, "rank")
      continue
    try:
      score = float(score)
    except ValueError:
      yield rejected(path, number, "wrong_type", f"expected a number, found {score!r}",
                     record, "score")
      continue
    if not math.isfinite(score):
      score = None
    yield Candidate(tag, qid, None, docid, None, rank, score, path, number)


def read_topics(path: str) -> Iterator[Union[Topic, DeadLetter]]:
  first_line = {}
  for number, text, raw in _text_lines(path):
    if text is None:
      yield _not_utf8(path, number, raw)
      continue
    if not text.strip():
      continue
    qid, tab, question = text.partition("\t")
    record = raw_record(text)
    if not tab or not qid.strip():
      yield rejected(path, number, "malformed_topic",
                     "expected a query id, a tab, then the question", record, "qid")
      continue
    if not question.strip():
      yield rejected(path, number, "empty_question", "the question is empty", record,
                     "question")
      continue
    qid = qid.strip()
    if qid in first_line:
      yield rejected(path, number, "duplicate_topic",
                     f"query id {qid!r} already appears at line {first_line[qid]}; "
                     "the first one is kept", record, "qid")
      continue
    first_line[qid] = number
    yield Topic(qid, question.strip(), path, number)


def candidates_format(path: str) -> str:
  """'jsonl' for a .jsonl / .json / .ndjson file (compressed or not), 'trec' for
  any other name but .csv and .parquet, which are refused."""
  try:
    fmt = data_format(path)
  except InputError:
    return "trec"
  if fmt != "jsonl":
    raise InputError(f"{path}: candidates are TREC run files or JSON Lines, not {fmt}")
  return "jsonl"


def check_candidates_file(path: str) -> str:
  """Raises InputError if a candidates file cannot be read or, for a candidate
  list (JSON Lines), its first record lacks a field every list needs; returns
  its format (candidates_format)."""
  fmt = candidates_format(path)
  check_text_file(path)
  if fmt == "jsonl":
    read_columns(path).require(("system_name", "candidates", ("question", "query_id")))
  return fmt


def read_candidates(path: str) -> Iterator[Union[Candidate, DeadLetter]]:
  """read_trec_run or read_candidates_jsonl, by the file name."""
  if candidates_format(path) == "jsonl":
    return read_candidates_jsonl(path)
  return read_trec_run(path)


def _rank(value) -> Optional[int]:
  if isinstance(value, bool) or not isinstance(value, int):
    return None
  return value


def read_candidates_jsonl(path: str) -> Iterator[Union[Candidate, DeadLetter]]:
  for item in jsonl_records(path):
    if isinstance(item, DeadLetter):
      yield item
      continue
    line, fields = item
    record = json_record({k: v for k, v in fields.items() if k != "candidates"})
    system = fields.get("system_name")
    if not isinstance(system, str) or not system.strip() or has_surrogates(system):
      yield rejected(path, line, "missing_field" if system is None else "wrong_type",
                     "expected the system name, a non-empty string", record,
                     "system_name")
      continue
    question = fields.get("question")
    if question is not None and (not isinstance(question, str) or
                                 not question.strip() or has_surrogates(question)):
      yield rejected(path, line, "wrong_type", "expected a non-empty string", record,
                     "question")
      continue
    query_id = _query_id(fields.get("query_id"))
    if query_id is False:
      yield rejected(path, line, "wrong_type",
                     "expected a non-empty string or an integer", record, "query_id")
      continue
    if question is None and query_id is None:
      yield rejected(path, line, "missing_field", "a candidate list needs a question "
                     "or a query_id", record, "question")
      continue
    candidates = fields.get("candidates")
    if not isinstance(candidates, list):
      yield rejected(path, line, "missing_field" if candidates is None else
                     "wrong_type", "expected a list of candidates", record,
                     "candidates")
      continue
    if not candidates:
      yield DeadLetter(path, line, UNMATCHED, "no_candidates", "candidates",
                       f"{path}:{line}: field 'candidates': the list is empty; "
                       "nothing to audit", record)
      continue
    question = question.strip() if question else None
    for index, entry in enumerate(candidates):
      parsed = _candidate_entry(entry)
      if isinstance(parsed, _BadEntry):
        name, message = parsed
        field = f"candidates[{index}]" + (f".{name}" if name else "")
        yield rejected(path, line, "wrong_type", message,
                       json_record({"system_name": system, "question": question,
                                     "query_id": query_id, "candidate": entry}), field)
        continue
      passage_id, passage, rank, score = parsed
      yield Candidate(system.strip(), query_id, question, passage_id, passage, rank,
                      score, path, line, index)


class _BadEntry(NamedTuple):
  field: str
  message: str


def _candidate_entry(entry):
  """(passage_id, passage, rank, score), or the _BadEntry at fault."""
  if not isinstance(entry, dict):
    return _BadEntry("", "expected an object with an id or a passage, and a rank")
  rank = _rank(entry.get("rank"))
  if rank is None:
    return _BadEntry("rank", "expected an integer rank")
  score = entry.get("score")
  if score is not None and (isinstance(score, bool) or
                            not isinstance(score, (int, float))):
    return _BadEntry("score", "expected a number")
  passage_id, passage = entry.get("id"), entry.get("passage")
  if passage_id is not None:
    if not isinstance(passage_id, str) or not passage_id.strip() or has_surrogates(
        passage_id):
      return _BadEntry("id", "expected a non-empty string")
    return passage_id, None, rank, None if score is None else float(score)
  if not isinstance(passage, str) or not passage.strip() or has_surrogates(passage):
    return _BadEntry("passage", "expected an id, or a passage: a non-empty string")
  return inline_passage_id(passage), passage, rank, (
      None if score is None else float(score))
