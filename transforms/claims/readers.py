"""Readers of claim-level attribution inputs (`autoais claims`).

    read_expertqa(path)       ExpertQA records (transforms/labelled/expertqa.py,
                              shared with `autoais agreement --format expertqa`)
    read_claims_jsonl(path)   one JSON line per claim: {"system_name" (default:
                              the file stem), "question", "claim", "evidence":
                              [...], "support"?, "answer"?}

Both yield, per claim, a `ClaimInput` or a `DeadLetter` naming the file, the line
and the field; a line that is not a JSON object, or whose fields are unusable, is
one dead letter. Like transforms/io/input_records.py's readers, a bad record never
raises.
"""
from typing import Dict, Iterator, Tuple, Union

from autoais.schemas import ClaimInput, DeadLetter
from autoais.transforms.io.fields import json_record, rejected
from autoais.transforms.io.inputs import system_name_from_path
from autoais.transforms.io.input_records import jsonl_records
from autoais.transforms.labelled.expertqa import (BadField, claim_fields, did_abstain,
                                                  text_fault, usable_text)


# What every line of the flat format needs (checked in its first record at launch).
CLAIM_FIELDS = ("question", "claim")


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
    if usable_text(system) is None or not system.strip():
      reason, message = text_fault(system, "the system name is empty or not a string")
      if isinstance(system, str) and not system.strip():
        reason = "empty_system_name"
      elif reason == "missing_field":  # given as null
        reason = "wrong_type"
      yield rejected(path, line, reason, message, record, "system_name")
      continue
    question = usable_text(fields.get("question"))
    if question is None or not question.strip():
      yield rejected(path, line, *text_fault(
          fields.get("question"), "the question is missing, empty or not a string"),
                     record, "question")
      continue
    answer = fields.get("answer")
    if answer is not None and usable_text(answer) is None:
      yield rejected(path, line, *text_fault(answer, "expected a string"), record, "answer")
      continue
    parsed = claim_fields(fields.get("claim"), fields.get("evidence"),
                          fields.get("support"), claim_name="claim")
    if isinstance(parsed, BadField):
      yield rejected(path, line, parsed.reason, parsed.message, record, parsed.name)
      continue
    text, evidence, support = parsed
    key = (system.strip(), question.strip())
    state = answers.setdefault(key, [line, 0, False])
    state[2] = state[2] or did_abstain(answer or "")
    yield ClaimInput(key[0], key[1], state[1], text, evidence, support, state[2],
                     state[0], path, line)
    state[1] += 1
