"""Record-level readers for predictions, gold answers and corpus sources.

Every reader yields, per input record, either a parsed element or a `DeadLetter`
naming the file, the line (1-based physical line where the record starts; the row
number for Parquet) and the field at fault. A bad record never raises; a bad
*file* (unknown format, missing required column) raises `InputError` so that the
job stops before it writes anything. Paths are anything Beam's `FileSystems`
opens: local paths, `gs://` URIs, `.gz` files.
"""
import csv
import io
import json
import os
from typing import Dict, Iterator, List, Optional, Sequence, Union

import apache_beam as beam
import pyarrow as pa
import pyarrow.parquet as pq
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems
from apache_beam.transforms.window import GlobalWindow
from apache_beam.utils.timestamp import MIN_TIMESTAMP
from apache_beam.utils.windowed_value import WindowedValue

from schemas import (REJECTED, CorpusRecord, DeadLetter, GoldAnswer, Prediction)
from transforms.passages import pyserini_contents

REQUIRED_PREDICTION_FIELDS = ("question", "answer", "attribution")
OPTIONAL_PREDICTION_FIELDS = ("system_name", "passage", "human_rating")
_HUMAN_RATINGS = {"y": "Y", "yes": "Y", "n": "N", "no": "N"}
_MAX_RECORD_CHARS = 65536
_COMPRESSED_SUFFIXES = (".gz", ".bz2", ".deflate", ".zst", ".lzma")

# Large CSV fields (Wikipedia passages) exceed csv's default 128 KiB limit.
csv.field_size_limit(64 * 1024 * 1024)


class InputError(ValueError):
  """A whole input is unusable: the job must stop before writing anything."""


def data_format(path: str) -> str:
  """'csv', 'jsonl' or 'parquet', from the file name (compression suffix aside)."""
  name = path.lower()
  for suffix in _COMPRESSED_SUFFIXES:
    if name.endswith(suffix):
      name = name[:-len(suffix)]
  if name.endswith(".csv"):
    return "csv"
  if name.endswith((".jsonl", ".json", ".ndjson")):
    return "jsonl"
  if name.endswith((".parquet", ".pq")):
    return "parquet"
  raise InputError(
      f"{path}: unknown file format (expected .csv, .jsonl or .parquet, "
      "optionally compressed)")


def system_name_from_path(path: str) -> str:
  """The file stem, the default system name of a predictions file."""
  name = os.path.basename(path.rstrip("/"))
  for suffix in _COMPRESSED_SUFFIXES:
    if name.lower().endswith(suffix):
      name = name[:-len(suffix)]
  return os.path.splitext(name)[0]


def match_files(pattern: str) -> List[str]:
  """Expands a path, glob or comma-separated list of them to sorted files."""
  paths = []
  for part in (p.strip() for p in pattern.split(",")):
    if not part:
      continue
    results = FileSystems.match([part])[0].metadata_list
    paths.extend(m.path for m in results if not m.path.endswith("/"))
  return sorted(set(paths))


def _open(path: str):
  return FileSystems.open(path, compression_type=CompressionTypes.AUTO)


def _raw_record(text: str) -> str:
  if len(text) > _MAX_RECORD_CHARS:
    return text[:_MAX_RECORD_CHARS] + "...[truncated]"
  return text


def _json_record(fields: Dict[str, object]) -> str:
  def printable(value):
    if isinstance(value, str):
      return value.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    return value
  return _raw_record(json.dumps({k: printable(v) for k, v in fields.items()},
                                ensure_ascii=False, sort_keys=True, default=str))


def _has_surrogates(text: str) -> bool:
  try:
    text.encode("utf-8")
    return False
  except UnicodeEncodeError:
    return True


def rejected(path: str, line: int, reason: str, message: str, record: str,
             field: Optional[str] = None) -> DeadLetter:
  location = f"{path}:{line}" + (f": field '{field}'" if field else "")
  return DeadLetter(path, line, REJECTED, reason, field,
                    f"{location}: {message}", record)


# ----------------------------------------------------------------------------
# Tabular records: CSV with a header line, JSON Lines, Parquet.


def _csv_records(path: str) -> Iterator[Union[tuple, DeadLetter]]:
  """Yields (line, {column: value}) or DeadLetter for each CSV record.

  Bytes that are not UTF-8 survive decoding as surrogates so that the row can be
  rejected naming its field; quoted fields may span lines.
  """
  with _open(path) as binary:
    text = io.TextIOWrapper(binary, encoding="utf-8-sig", errors="surrogateescape",
                            newline="")
    reader = csv.reader(text, strict=True)
    try:
      header = next(reader)
    except StopIteration:
      return
    except csv.Error as error:
      raise InputError(f"{path}:1: unreadable CSV header: {error}") from error
    start = reader.line_num + 1
    while True:
      try:
        values = next(reader)
      except StopIteration:
        return
      except csv.Error as error:
        yield rejected(path, start, "malformed_csv", f"malformed CSV record: {error}",
                       _raw_record(f"(unparseable from line {start})"))
        start = reader.line_num + 1
        continue
      line, start = start, reader.line_num + 1
      if not values:
        continue  # blank line
      if len(values) != len(header):
        yield rejected(
            path, line, "malformed_csv",
            f"expected {len(header)} fields ({', '.join(header)}), found {len(values)}",
            _json_record({"values": values}))
        continue
      yield line, dict(zip(header, values))


def _jsonl_records(path: str) -> Iterator[Union[tuple, DeadLetter]]:
  with _open(path) as binary:
    for line, raw in enumerate(binary, start=1):
      if not raw.strip():
        continue
      try:
        decoded = raw.decode("utf-8")
      except UnicodeDecodeError as error:
        yield rejected(path, line, "non_utf8",
                       f"bytes that are not UTF-8 at offset {error.start}",
                       _raw_record(raw.decode("utf-8", "backslashreplace")))
        continue
      try:
        fields = json.loads(decoded)
      except ValueError as error:
        yield rejected(path, line, "malformed_json", f"not a JSON object: {error}",
                       _raw_record(decoded.rstrip("\n")))
        continue
      if not isinstance(fields, dict):
        yield rejected(path, line, "malformed_json", "not a JSON object",
                       _raw_record(decoded.rstrip("\n")))
        continue
      yield line, fields


def _parquet_records(path: str, columns: Sequence[str]) -> Iterator[tuple]:
  with _open(path) as binary:
    parquet = pq.ParquetFile(binary)
    present = [c for c in columns if c in parquet.schema_arrow.names]
    row = 0
    for batch in parquet.iter_batches(batch_size=8192, columns=present):
      values = [column.to_pylist() for column in batch.columns]
      for record in zip(*values):
        row += 1
        yield row, dict(zip(present, record))


def read_header(path: str) -> List[str]:
  """Column names of a CSV or Parquet file (JSON Lines have none: empty list)."""
  fmt = data_format(path)
  if fmt == "csv":
    with _open(path) as binary:
      first = binary.readline()
    try:
      return next(csv.reader([first.decode("utf-8-sig").rstrip("\r\n")]))
    except (UnicodeDecodeError, csv.Error, StopIteration) as error:
      raise InputError(f"{path}:1: unreadable CSV header: {error}") from error
  if fmt == "parquet":
    with _open(path) as binary:
      schema = pq.ParquetFile(binary).schema_arrow
    for name in schema.names:
      if not (pa.types.is_string(schema.field(name).type) or
              pa.types.is_large_string(schema.field(name).type)):
        raise InputError(
            f"{path}: column '{name}' has type {schema.field(name).type}, "
            "expected string")
    return list(schema.names)
  return []


def records(path: str, columns: Sequence[str]) -> Iterator[Union[tuple, DeadLetter]]:
  fmt = data_format(path)
  if fmt == "csv":
    return _csv_records(path)
  if fmt == "jsonl":
    return _jsonl_records(path)
  return _parquet_records(path, columns)


# ----------------------------------------------------------------------------
# Predictions.


def check_prediction_file(path: str) -> None:
  """Raises InputError if a CSV/Parquet predictions file lacks a required column."""
  header = read_header(path)
  if data_format(path) == "jsonl":
    return
  missing = [f for f in REQUIRED_PREDICTION_FIELDS if f not in header]
  if missing:
    raise InputError(
        f"{path}:1: missing required column(s) {', '.join(missing)} "
        f"(found: {', '.join(header) or 'none'})")


def _text_field(fields, name, path, line, required) -> Union[str, None, DeadLetter]:
  value = fields.get(name)
  if value is None:
    if required:
      return rejected(path, line, "missing_field", "required field is missing",
                      _json_record(fields), name)
    return None
  if not isinstance(value, str):
    return rejected(path, line, "wrong_type",
                    f"expected a string, found {type(value).__name__}",
                    _json_record(fields), name)
  if _has_surrogates(value):
    return rejected(path, line, "non_utf8", "bytes that are not UTF-8",
                    _json_record(fields), name)
  return value


_PREDICTION_FIELDS = REQUIRED_PREDICTION_FIELDS + OPTIONAL_PREDICTION_FIELDS


def _clean_text_fields(fields, names, required, path, line):
  """{name: str or None}, or the DeadLetter of the first bad field.

  The common case (every field a valid string) is checked in one pass; only a
  bad record is examined field by field to name the culprit.
  """
  values = {name: fields.get(name) for name in names}
  try:
    "".join(value for value in values.values() if value is not None).encode("utf-8")
    if all(values[name] is not None for name in required):
      return values
  except (TypeError, UnicodeEncodeError):
    pass
  for name in names:
    checked = _text_field(fields, name, path, line, required=name in required)
    if isinstance(checked, DeadLetter):
      return checked
  return values


def parse_prediction(fields: Dict[str, object], path: str, line: int,
                     default_system: str) -> Union[Prediction, DeadLetter]:
  values = _clean_text_fields(fields, _PREDICTION_FIELDS, REQUIRED_PREDICTION_FIELDS,
                              path, line)
  if isinstance(values, DeadLetter):
    return values
  question = values["question"].strip()
  if not question:
    return rejected(path, line, "empty_question", "the question is empty",
                    _json_record(fields), "question")
  if not values["answer"].strip():
    return rejected(path, line, "empty_answer", "the answer is empty",
                    _json_record(fields), "answer")
  system = values["system_name"]
  if system is None:
    system = default_system
  elif not system.strip():
    return rejected(path, line, "empty_system_name", "the system name is empty",
                    _json_record(fields), "system_name")
  rating = values["human_rating"]
  if rating is not None and rating.strip():
    rating = _HUMAN_RATINGS.get(rating.strip().lower())
    if rating is None:
      return rejected(path, line, "invalid_value",
                      f"human_rating must be Y or N, found {values['human_rating']!r}",
                      _json_record(fields), "human_rating")
  else:
    rating = None
  return Prediction(
      system_name=system.strip(),
      question=question,
      answer=values["answer"],
      attribution=values["attribution"].strip(),
      passage=values["passage"] or None,
      human_rating=rating,
      source_file=path,
      source_line=line)


def read_predictions(path: str) -> Iterator[Union[Prediction, DeadLetter]]:
  default_system = system_name_from_path(path)
  for item in records(path, REQUIRED_PREDICTION_FIELDS + OPTIONAL_PREDICTION_FIELDS):
    if isinstance(item, DeadLetter):
      yield item
    else:
      line, fields = item
      yield parse_prediction(fields, path, line, default_system)


# ----------------------------------------------------------------------------
# Gold answers: the reference, so a bad line stops the job.

TFDS_PREFIX = "tfds:"


def _read_tfds_gold(spec: str) -> Iterator[GoldAnswer]:
  import tensorflow_datasets as tfds  # pylint: disable=import-outside-toplevel
  name, _, split = spec[len(TFDS_PREFIX):].partition("/")
  dataset = tfds.load(name, split=split or "validation")
  for index, example in enumerate(tfds.as_numpy(dataset)):
    yield GoldAnswer(example["question"].decode("utf-8").strip(),
                     [a.decode("utf-8") for a in example["answer"]], index)


def read_gold(source: str) -> Iterator[GoldAnswer]:
  """Gold questions in source order: NQ-Open JSONL or `tfds:NAME/SPLIT`."""
  if source.startswith(TFDS_PREFIX):
    yield from _read_tfds_gold(source)
    return
  index = 0
  for item in _jsonl_records(source):
    if isinstance(item, DeadLetter):
      raise InputError(f"gold {item.message}")
    line, fields = item
    question = fields.get("question")
    answers = fields.get("answer", fields.get("answers"))
    if isinstance(answers, str):
      answers = [answers]
    if not isinstance(question, str) or not question.strip():
      raise InputError(f"{source}:{line}: field 'question': missing or not a string")
    if (not isinstance(answers, list) or not answers or
        not all(isinstance(a, str) for a in answers)):
      raise InputError(
          f"{source}:{line}: field 'answer': expected a non-empty list of strings")
    yield GoldAnswer(question.strip(), answers, index)
    index += 1


# ----------------------------------------------------------------------------
# Corpus sources for build-corpus.

CORPUS_FIELDS = ("id", "contents", "title", "text", "headings")


def check_corpus_file(path: str) -> None:
  header = read_header(path)
  if data_format(path) == "jsonl":
    return
  if "id" not in header or not ("contents" in header or
                                ("title" in header and "text" in header)):
    raise InputError(
        f"{path}:1: a corpus needs columns id and contents (Pyserini) or id, title "
        f"and text (found: {', '.join(header) or 'none'})")


def parse_corpus_record(fields, path: str, line: int) -> Union[CorpusRecord, DeadLetter]:
  values = _clean_text_fields(fields, CORPUS_FIELDS, ("id",), path, line)
  if isinstance(values, DeadLetter):
    return values
  if not values["id"].strip():
    return rejected(path, line, "empty_id", "the passage id is empty",
                    _json_record(fields), "id")
  contents = values["contents"]
  if contents is None:
    if values["title"] is None or values["text"] is None:
      missing = "contents" if values["title"] is None else "text"
      return rejected(path, line, "missing_field",
                      "needs 'contents' (Pyserini) or 'title' and 'text'",
                      _json_record(fields), missing)
    contents = pyserini_contents(values["title"], values["text"], values["headings"])
  return CorpusRecord(values["id"], contents, path, line)


def read_corpus_source(path: str) -> Iterator[Union[CorpusRecord, DeadLetter]]:
  for item in records(path, CORPUS_FIELDS):
    if isinstance(item, DeadLetter):
      yield item
    else:
      line, fields = item
      yield parse_corpus_record(fields, path, line)


# ----------------------------------------------------------------------------
# The Beam transform around the readers.


class _ReadRecordsFn(beam.DoFn):

  def __init__(self, read_file):
    self._read_file = read_file

  def start_bundle(self):
    self._read = 0

  def process(self, path):
    for item in self._read_file(path):
      self._read += 1
      if isinstance(item, DeadLetter):
        yield beam.pvalue.TaggedOutput("dead_letter", item)
      else:
        yield item

  def finish_bundle(self):
    if self._read:
      yield beam.pvalue.TaggedOutput("counts", WindowedValue(
          {"read": self._read}, MIN_TIMESTAMP, [GlobalWindow()]))
      self._read = 0


class ReadRecords(beam.PTransform):
  """Reads files record by record with `read_file(path)` (read_predictions,
  read_corpus_source). Outputs: main (parsed elements), 'dead_letter' and
  'counts' (per-bundle {'read': n}: every record, parsed or not)."""

  def __init__(self, paths: Sequence[str], read_file):
    super().__init__()
    self._paths = list(paths)
    self._read_file = read_file

  def expand(self, pbegin):
    return (pbegin
            | "ListInputFiles" >> beam.Create(self._paths)
            | "ParseRecords" >> beam.ParDo(_ReadRecordsFn(self._read_file)).with_outputs(
                "dead_letter", "counts", main="records"))


class ReadGold(beam.PTransform):
  """PBegin -> PCollection[GoldAnswer] from a JSONL file or `tfds:NAME/SPLIT`;
  the source is opened on a worker, not on the launching machine."""

  def __init__(self, source: str):
    super().__init__()
    self._source = source

  def expand(self, pbegin):
    return (pbegin
            | "NameGoldSource" >> beam.Create([self._source])
            | "ParseGold" >> beam.FlatMap(read_gold))
