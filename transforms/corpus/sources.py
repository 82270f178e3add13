"""Corpus sources for `autoais build-corpus`: Pyserini records (`id`, `contents`)
or rows of `id`, `title`, `text` and optional `headings`, in CSV, JSON Lines or
Parquet, each read into a CorpusRecord or its DeadLetter (transforms/io/input_records.py).
"""
from typing import Iterator, Union

from autoais.schemas import CorpusRecord, DeadLetter
from autoais.transforms.corpus.passages import pyserini_contents
from autoais.transforms.io.fields import clean_text_fields, json_record, rejected
from autoais.transforms.io.inputs import check_input_file
from autoais.transforms.io.input_records import read_columns, records

CORPUS_FIELDS = ("id", "contents", "title", "text", "headings")


def check_corpus_file(path: str) -> None:
  """Raises InputError if a corpus source cannot be read (check_input_file) or
  lacks the columns of a passage (in JSON Lines, its first record the fields)."""
  check_input_file(path)
  read_columns(path, CORPUS_FIELDS).require(("id", ("contents", ("title", "text"))))


def parse_corpus_record(fields, path: str, line: int) -> Union[CorpusRecord, DeadLetter]:
  values = clean_text_fields(fields, CORPUS_FIELDS, ("id",), path, line)
  if isinstance(values, DeadLetter):
    return values
  if not values["id"].strip():
    return rejected(path, line, "empty_id", "the passage id is empty",
                    json_record(fields), "id")
  contents = values["contents"]
  if contents is None:
    if values["title"] is None or values["text"] is None:
      missing = "contents" if values["title"] is None else "text"
      return rejected(path, line, "missing_field",
                      "needs 'contents' (Pyserini) or 'title' and 'text'",
                      json_record(fields), missing)
    contents = pyserini_contents(values["title"], values["text"], values["headings"])
  return CorpusRecord(values["id"], contents, path, line)


def read_corpus_source(path: str) -> Iterator[Union[CorpusRecord, DeadLetter]]:
  for item in records(path, CORPUS_FIELDS):
    if isinstance(item, DeadLetter):
      yield item
    else:
      line, fields = item
      yield parse_corpus_record(fields, path, line)
