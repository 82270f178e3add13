"""Readers of claim-level attribution inputs (`autoais claims`).

    read_expertqa(path)       ExpertQA records: one JSON line per question,
                              {"question", "answers": {system: {"answer_string",
                              "claims": [{"claim_string", "evidence": [...],
                              "support", ...}]}}}
    read_claims_jsonl(path)   one JSON line per claim: {"system_name" (default:
                              the file stem), "question", "claim", "evidence":
                              [...], "support"?, "answer"?}

Both yield, per claim, a `ClaimInput` or a `DeadLetter` naming the file, the line
and the field (`answers.<system>.claims[<i>].evidence`); a line that is not a
JSON object, or whose question or answers are unusable, is one dead letter. An
answer without claims is an `unmatched` dead letter: it has nothing to score.
Like transforms/io/records.py's readers, a bad record never raises.
"""
from typing import Dict, Iterator, List, NamedTuple, Optional, Tuple, Union

from schemas import UNMATCHED, ClaimInput, DeadLetter
from transforms.claims.steps import did_abstain
from transforms.io.records import (has_surrogates, json_record, jsonl_records, rejected,
                                   system_name_from_path)


def _text(value) -> Optional[str]:
  """A usable string, or None (missing, not a string, not UTF-8)."""
  if not isinstance(value, str) or has_surrogates(value):
    return None
  return value


def _evidence(value) -> Optional[List[str]]:
  """The evidence list ([] for a missing or null one), or None if malformed."""
  if value is None:
    return []
  if not isinstance(value, list) or not all(
      isinstance(item, str) and not has_surrogates(item) for item in value):
    return None
  return list(value)


def _support(value) -> Union[Optional[str], bool]:
  """The human support label (None where absent), or False if malformed (not a
  string, or not UTF-8: it is written to the claims table)."""
  if value is None:
    return None
  if _text(value) is None:
    return False
  return value.strip() or None


def _bad_type(value) -> str:
  return "missing_field" if value is None else "wrong_type"


def read_expertqa(path: str) -> Iterator[Union[ClaimInput, DeadLetter]]:
  for item in jsonl_records(path):
    if isinstance(item, DeadLetter):
      yield item
      continue
    line, fields = item
    question = _text(fields.get("question"))
    if question is None or not question.strip():
      yield rejected(path, line, _bad_type(fields.get("question")),
                     "the question is missing, empty or not a string",
                     json_record(fields), "question")
      continue
    answers = fields.get("answers")
    if not isinstance(answers, dict) or not answers:
      yield rejected(path, line, _bad_type(answers),
                     "expected an object of answers by system name",
                     json_record({"question": question, "answers": answers}),
                     "answers")
      continue
    for system in sorted(answers):
      yield from _expertqa_answer(path, line, question.strip(), system,
                                  answers[system])


def _expertqa_answer(path, line, question, system, answer):
  field = f"answers.{system}"
  context = {"question": question, "system_name": system}
  if not system.strip() or has_surrogates(system):
    yield rejected(path, line, "empty_system_name", "the system name is empty",
                   json_record(context), field)
    return
  if not isinstance(answer, dict):
    yield rejected(path, line, "wrong_type", "expected an answer object",
                   json_record(dict(context, answer=answer)), field)
    return
  answer_string = answer.get("answer_string")
  if answer_string is not None and _text(answer_string) is None:
    yield rejected(path, line, "wrong_type", "expected a string",
                   json_record(dict(context, answer_string=answer_string)),
                   f"{field}.answer_string")
    return
  claims = answer.get("claims")
  if not isinstance(claims, list):
    yield rejected(path, line, _bad_type(claims), "expected a list of claims",
                   json_record(dict(context, claims=claims)), f"{field}.claims")
    return
  if not claims:
    yield DeadLetter(path, line, UNMATCHED, "answer_without_claims",
                     f"{field}.claims",
                     f"{path}:{line}: field '{field}.claims': the answer has no "
                     "claims; nothing to score",
                     json_record(dict(context, answer_string=answer_string)))
    return
  abstained = did_abstain(answer_string or "")
  for index, claim in enumerate(claims):
    claim_field = f"{field}.claims[{index}]"
    record = json_record(dict(context, claim_index=index, claim=claim))
    if not isinstance(claim, dict):
      yield rejected(path, line, "wrong_type", "expected a claim object", record,
                     claim_field)
      continue
    parsed = _claim_fields(claim.get("claim_string"), claim.get("evidence"),
                           claim.get("support"))
    if isinstance(parsed, _BadField):
      yield rejected(path, line, parsed.reason, parsed.message, record,
                     f"{claim_field}.{parsed.name}")
      continue
    text, evidence, support = parsed
    yield ClaimInput(system.strip(), question, index, text, evidence, support,
                     abstained, line, path, line)


class _BadField(NamedTuple):
  name: str
  reason: str
  message: str


def _claim_fields(claim, evidence, support, claim_name: str = "claim_string"):
  """(claim, evidence, support), or the _BadField at fault."""
  text = _text(claim)
  if text is None:
    return _BadField(claim_name, _bad_type(claim), "expected the claim, a string")
  if not text.strip():
    return _BadField(claim_name, "empty_claim", "the claim is empty")
  items = _evidence(evidence)
  if items is None:
    return _BadField("evidence", "wrong_type", "expected a list of strings")
  label = _support(support)
  if label is False:
    return _BadField("support", "wrong_type", "expected a string of UTF-8 text")
  return text, items, label


def read_claims_jsonl(path: str) -> Iterator[Union[ClaimInput, DeadLetter]]:
  """The flat format. The claims of one answer are the lines that share its
  system and question; they are numbered in file order, and the answer is
  located at the line of its first claim. A line's `abstained` says whether its
  `answer` (or an earlier line's of the same answer) abstains; the claims job
  takes an answer as abstaining if any of its lines says so."""
  default_system = system_name_from_path(path)
  # (system, question) -> [first line, claims so far, abstained so far]
  answers: Dict[Tuple[str, str], list] = {}
  for item in jsonl_records(path):
    if isinstance(item, DeadLetter):
      yield item
      continue
    line, fields = item
    record = json_record(fields)
    system = fields.get("system_name", default_system)
    if _text(system) is None or not system.strip():
      yield rejected(path, line, "empty_system_name" if isinstance(system, str)
                     else "wrong_type", "the system name is empty or not a string",
                     record, "system_name")
      continue
    question = _text(fields.get("question"))
    if question is None or not question.strip():
      yield rejected(path, line, _bad_type(fields.get("question")),
                     "the question is missing, empty or not a string", record,
                     "question")
      continue
    answer = fields.get("answer")
    if answer is not None and _text(answer) is None:
      yield rejected(path, line, "wrong_type", "expected a string", record, "answer")
      continue
    parsed = _claim_fields(fields.get("claim"), fields.get("evidence"),
                           fields.get("support"), claim_name="claim")
    if isinstance(parsed, _BadField):
      yield rejected(path, line, parsed.reason, parsed.message, record, parsed.name)
      continue
    text, evidence, support = parsed
    key = (system.strip(), question.strip())
    state = answers.setdefault(key, [line, 0, False])
    state[2] = state[2] or did_abstain(answer or "")
    yield ClaimInput(key[0], key[1], state[1], text, evidence, support, state[2],
                     state[0], path, line)
    state[1] += 1
