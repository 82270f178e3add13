"""The reader of `autoais sck` answers: CSV (with a header), JSON Lines or Parquet
rows of

    question, answer            required
    reference_answer            the ground-truth answer (the C-score recalls its
                                entities; without it, the question's)
    system_name                 default: the file stem
    intent                      a known intent (transforms/sck/intent.py), which
                                then replaces the classifier's

Like transforms/io/input_records.py's readers, a bad record never raises: it becomes a
DeadLetter naming the file, the line and the field.
"""
from typing import Iterator, Union

from autoais.schemas import DeadLetter, SckInput
from autoais.transforms.io.fields import (clean_text_fields, json_record, rejected,
                                  system_name_field)
from autoais.transforms.io.inputs import check_input_file, system_name_from_path
from autoais.transforms.io.input_records import read_columns, records
from autoais.transforms.sck.intent import INTENTS, parse_intent

REQUIRED_FIELDS = ("question", "answer")
FIELDS = REQUIRED_FIELDS + ("reference_answer", "system_name", "intent")


def check_answers_file(path: str) -> None:
  check_input_file(path)
  read_columns(path, FIELDS).require(REQUIRED_FIELDS)


def parse_answer(fields, path: str, line: int,
                 default_system: str) -> Union[SckInput, DeadLetter]:
  values = clean_text_fields(fields, FIELDS, REQUIRED_FIELDS, path, line)
  if isinstance(values, DeadLetter):
    return values
  for name in REQUIRED_FIELDS:
    if not values[name].strip():
      return rejected(path, line, f"empty_{name}", f"the {name} is empty",
                      json_record(fields), name)
  system = system_name_field(values, default_system, fields, path, line)
  if isinstance(system, DeadLetter):
    return system
  intent = values["intent"]
  if intent is not None and intent.strip():
    intent = parse_intent(intent)
    if intent is None:
      return rejected(path, line, "invalid_value",
                      f"intent must be one of {', '.join(INTENTS)}, found "
                      f"{values['intent']!r}", json_record(fields), "intent")
  else:
    intent = None
  reference = values["reference_answer"]
  return SckInput(system, values["question"].strip(), values["answer"],
                  reference if reference and reference.strip() else None, intent,
                  path, line)


def read_answers(path: str) -> Iterator[Union[SckInput, DeadLetter]]:
  default_system = system_name_from_path(path)
  for item in records(path, FIELDS):
    if isinstance(item, DeadLetter):
      yield item
    else:
      line, fields = item
      yield parse_answer(fields, path, line, default_system)
