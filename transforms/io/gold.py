"""Gold answers, for `autoais evaluate` and `autoais audit`: NQ-Open JSON Lines or
`tfds:NAME/SPLIT`. A bad line is dead-lettered like any other (its question leaves
the denominators, and run.json counts it); a repeated question keeps its first
line. Gold indexes count the accepted questions in source order.
"""
from typing import Iterator, Union

import apache_beam as beam

from autoais.schemas import DeadLetter, GoldAnswer
from autoais.schemas.errors import InputError
from autoais.transforms.io.fields import has_surrogates, json_record, rejected
from autoais.transforms.io.inputs import check_input_file, data_format
from autoais.transforms.io.input_records import ReadRecords, jsonl_records, read_columns

TFDS_PREFIX = "tfds:"


def check_gold_source(source: str) -> None:
  """Raises InputError if a gold JSONL file cannot be read or its first record
  lacks the question or the answers (a tfds: source is checked where it is
  read)."""
  if source.startswith(TFDS_PREFIX):
    return
  if data_format(source) != "jsonl":
    raise InputError(f"{source}: gold answers are JSON Lines "
                     '({"question": ..., "answer": [...]}), optionally compressed')
  check_input_file(source)
  read_columns(source).require(("question", ("answer", "answers")))


def _read_tfds_gold(spec: str) -> Iterator[GoldAnswer]:
  import tensorflow_datasets as tfds  # pylint: disable=import-outside-toplevel
  name, _, split = spec[len(TFDS_PREFIX):].partition("/")
  dataset = tfds.load(name, split=split or "validation")
  for index, example in enumerate(tfds.as_numpy(dataset)):
    yield GoldAnswer(example["question"].decode("utf-8").strip(),
                     [a.decode("utf-8") for a in example["answer"]], index)


def parse_gold(fields, path: str, line: int) -> Union[tuple, DeadLetter]:
  """(question, answers) of a gold record, or its DeadLetter."""
  question = fields.get("question")
  answers = fields.get("answer", fields.get("answers"))
  if isinstance(answers, str):
    answers = [answers]
  if not isinstance(question, str) or not question.strip():
    return rejected(path, line, "missing_field" if question is None else "wrong_type",
                    "the question is missing, empty or not a string",
                    json_record(fields), "question")
  if (not isinstance(answers, list) or not answers or
      not all(isinstance(a, str) for a in answers)):
    return rejected(path, line, "missing_field" if answers is None else "wrong_type",
                    "expected a non-empty list of strings", json_record(fields),
                    "answer")
  for name, value in (("question", question), ("answer", "".join(answers))):
    if has_surrogates(value):
      return rejected(path, line, "non_utf8", "text that is not UTF-8",
                      json_record(fields), name)
  return question.strip(), answers


def read_gold(source: str) -> Iterator[Union[GoldAnswer, DeadLetter]]:
  """Gold questions in source order: NQ-Open JSONL or `tfds:NAME/SPLIT`."""
  if source.startswith(TFDS_PREFIX):
    yield from _read_tfds_gold(source)
    return
  first_line = {}
  for item in jsonl_records(source):
    if isinstance(item, DeadLetter):
      yield item
      continue
    line, fields = item
    parsed = parse_gold(fields, source, line)
    if isinstance(parsed, DeadLetter):
      yield parsed
      continue
    question, answers = parsed
    if question in first_line:
      yield rejected(source, line, "duplicate_gold_question",
                     f"the question already appears at line {first_line[question]}; "
                     "the first one is kept", json_record(fields), "question")
      continue
    first_line[question] = line
    yield GoldAnswer(question, answers, len(first_line) - 1)


class ReadGold(beam.PTransform):
  """PBegin -> ReadRecords' outputs (records: GoldAnswer, dead_letter, counts)
  from a JSONL file or `tfds:NAME/SPLIT`; the source is opened on a worker, not
  on the launching machine."""

  def __init__(self, source: str):
    super().__init__()
    self._source = source

  def expand(self, pbegin):
    return pbegin | "ReadGoldRecords" >> ReadRecords([self._source], read_gold)
