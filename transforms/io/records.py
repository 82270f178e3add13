"""Record-level readers for predictions, gold answers and corpus sources.

Every reader yields, per input record, either a parsed element or a `DeadLetter`
naming the file, the line (1-based physical line where the record starts; the row
number for Parquet) and the field at fault. A bad record never raises; a bad
*file* (unknown format, missing required column) raises `InputError` so that the
job stops before it writes anything. Paths are anything Beam's `FileSystems`
opens: local paths, `gs://` URIs, `.gz` files.
"""
import bz2
import collections
import csv
import gzip
import io
import json
import lzma
import os
import shutil
import tempfile
import zlib
from typing import BinaryIO, Dict, Iterator, List, Optional, Sequence, Union

import apache_beam as beam
import pyarrow as pa
import pyarrow.parquet as pq
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems
from apache_beam.transforms.window import GlobalWindow
from apache_beam.utils.timestamp import MIN_TIMESTAMP
from apache_beam.utils.windowed_value import WindowedValue

from schemas import (REJECTED, CorpusRecord, DeadLetter, GoldAnswer, Prediction)
from schemas.errors import InputError
from transforms.corpus.passages import pyserini_contents

REQUIRED_PREDICTION_FIELDS = ("question", "answer", "attribution")
OPTIONAL_PREDICTION_FIELDS = ("system_name", "passage", "human_rating")
_PREDICTION_FIELDS = REQUIRED_PREDICTION_FIELDS + OPTIONAL_PREDICTION_FIELDS
HUMAN_RATINGS = {"y": "Y", "yes": "Y", "n": "N", "no": "N"}
_MAX_RECORD_CHARS = 65536
# Python's own decompressors (C speed, proper io objects); other suffixes Beam
# knows (.deflate, .zst) go through Beam's CompressedFile.
_DECOMPRESSORS = {".gz": gzip.GzipFile, ".bz2": bz2.BZ2File, ".xz": lzma.LZMAFile,
                  ".lzma": lzma.LZMAFile}
_BEAM_COMPRESSED = {".deflate": CompressionTypes.DEFLATE, ".zst": CompressionTypes.ZSTD}
_COMPRESSED_SUFFIXES = tuple(_DECOMPRESSORS) + tuple(_BEAM_COMPRESSED)
# What a damaged compressed or Parquet file raises while it is read (bz2 and
# pyarrow say OSError). Reads of plain files catch none of these: an I/O error
# there is the storage's, for the runner to retry, not the file's.
_DAMAGED_DATA_ERRORS = (EOFError, zlib.error, lzma.LZMAError, gzip.BadGzipFile,
                        pa.ArrowException, OSError, ValueError)
_READ_BUFFER_BYTES = 1 << 20
# A quoted CSV field may run over this many physical lines; past it, the record
# is taken for an unclosed quote, rejected, and reading resumes on its next line.
MAX_CSV_RECORD_LINES = 1000
_UTF8_BOM = b"\xef\xbb\xbf"
_UTF16_32_BOMS = (b"\xff\xfe", b"\xfe\xff", b"\x00\x00\xfe\xff")

# Large CSV fields (Wikipedia passages) exceed csv's default 128 KiB limit.
csv.field_size_limit(64 * 1024 * 1024)


def data_format(path: str) -> str:
  """'csv', 'jsonl' or 'parquet', from the file name (compression suffix aside)."""
  name = _compression_suffix(path)[0].lower()
  if name.endswith(".csv"):
    return "csv"
  if name.endswith((".jsonl", ".json", ".ndjson")):
    return "jsonl"
  if name.endswith((".parquet", ".pq")):
    return "parquet"
  raise InputError(
      f"{path}: unknown file format (expected .csv, .jsonl or .parquet, "
      "optionally compressed: " + ", ".join(_COMPRESSED_SUFFIXES) + ")")


def _compression_suffix(path: str):
  """(path without its compression suffix, the suffix or '')."""
  lowered = path.lower()
  for suffix in _COMPRESSED_SUFFIXES:
    if lowered.endswith(suffix):
      return path[:-len(suffix)], suffix
  return path, ""


def system_name_from_path(path: str) -> str:
  """The file stem, the default system name of a predictions file."""
  name = _compression_suffix(os.path.basename(path.rstrip("/")))[0]
  return os.path.splitext(name)[0]


def match_files(pattern: str) -> List[str]:
  """Expands a path, glob or comma-separated list of them to sorted paths.

  A path that names a directory is returned as is, for check_input_file to
  refuse with a clear message.
  """
  paths = []
  for part in (p.strip() for p in pattern.split(",")):
    if not part:
      continue
    results = FileSystems.match([part])[0].metadata_list
    paths.extend(m.path for m in results if not m.path.endswith("/"))
  return sorted(set(paths))


class _InputStream(io.RawIOBase):
  """The (decompressed) bytes of an input file. A read that fails because the
  data is damaged (a truncated gzip, say) raises InputError naming the file."""

  def __init__(self, path: str, source, closeables, damage_errors):
    super().__init__()
    self._path = path
    self._source = source
    self._closeables = closeables
    self._damage_errors = damage_errors

  def readable(self):
    return True

  def readinto(self, buffer):
    try:
      data = self._source.read(len(buffer))
    except self._damage_errors as error:
      raise InputError(f"{self._path}: unreadable data ({type(error).__name__}: "
                       f"{error}): a truncated or damaged file?") from error
    buffer[:len(data)] = data
    return len(data)

  def close(self):
    if not self.closed:
      for closeable in self._closeables:
        closeable.close()
    super().close()


def _open_raw(path: str):
  try:
    if _is_local_directory(path):
      raise IsADirectoryError(path)
    return FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED)
  except IsADirectoryError as error:
    raise InputError(f"{path}: is a directory; give a file, a glob such as "
                     f"'{path.rstrip('/')}/*', or a comma-separated list") from error
  except PermissionError as error:
    raise InputError(f"{path}: cannot be read (permission denied)") from error
  except FileNotFoundError as error:
    raise InputError(f"{path}: no such file") from error
  except (OSError, IOError) as error:
    raise InputError(f"{path}: cannot be opened: {error}") from error


def _is_local_directory(path: str) -> bool:
  return (FileSystems.get_scheme(path) in (None, "file") and
          os.path.isdir(path.removeprefix("file://")))


def open_input(path: str) -> BinaryIO:
  """A buffered binary reader of an input file, local or gs://, decompressed by
  its suffix. Opening and reading raise InputError naming the file."""
  raw = _open_raw(path)
  suffix = _compression_suffix(path)[1]
  if suffix == ".gz":
    # GzipFile leaves the file object it reads open: both are closed with the stream.
    source = gzip.GzipFile(fileobj=raw, mode="rb")
    closeables = [source, raw]
  elif suffix in _DECOMPRESSORS:
    source = _DECOMPRESSORS[suffix](raw, mode="rb")
    closeables = [source, raw]
  elif suffix in _BEAM_COMPRESSED:
    raw.close()
    source = FileSystems.open(path, compression_type=_BEAM_COMPRESSED[suffix])
    closeables = [source]
  else:
    source, closeables = raw, [raw]
  damage_errors = _DAMAGED_DATA_ERRORS if suffix else ()
  return io.BufferedReader(_InputStream(path, source, closeables, damage_errors),
                           buffer_size=_READ_BUFFER_BYTES)


def _open_parquet(path: str) -> pq.ParquetFile:
  """A Parquet file (seekable: a compressed one is spooled to a local temporary
  file first). A file whose footer cannot be read raises InputError."""
  if _compression_suffix(path)[1]:
    spool = tempfile.TemporaryFile()
    with open_input(path) as source:
      shutil.copyfileobj(source, spool, _READ_BUFFER_BYTES)
    spool.seek(0)
    binary = spool
  else:
    binary = _open_raw(path)
  try:
    return pq.ParquetFile(binary)
  except _DAMAGED_DATA_ERRORS as error:
    binary.close()
    raise InputError(f"{path}: not a readable Parquet file ({error}): a truncated "
                     "or damaged file?") from error


def check_input_file(path: str) -> None:
  """Refuses (InputError) a file no reader could use: a directory, a missing or
  unreadable file, an empty one, a compressed file whose start does not
  decompress, UTF-16/32 text, a Parquet file without a readable footer. Cheap:
  it reads the first 64 KiB (and a Parquet footer), never the whole file.
  Damage further in is found while the job reads and also stops it, naming the
  file."""
  fmt = data_format(path)
  if fmt == "parquet":
    _open_parquet(path).close()
    return
  check_text_file(path)


def check_text_file(path: str) -> None:
  """check_input_file for a text file of any format (a TREC run, a TSV): refuses
  a directory, a missing, unreadable or empty file, UTF-16/32 text."""
  with open_input(path) as binary:
    head = binary.read(65536)
  if not head.removeprefix(_UTF8_BOM).strip():
    raise InputError(f"{path}: is empty" + (
        " (after decompression)" if _compression_suffix(path)[1] else ""))
  if head.startswith(_UTF16_32_BOMS):
    raise InputError(f"{path}: is UTF-16 or UTF-32 text; autoais reads UTF-8 "
                     "(convert it, e.g. with iconv -t UTF-8)")


def raw_record(text: str) -> str:
  if len(text) > _MAX_RECORD_CHARS:
    text = text[:_MAX_RECORD_CHARS] + "...[truncated]"
  return _printable(text)


def _printable(value):
  """Text that can be written as UTF-8: undecodable bytes (kept as surrogates by
  the readers) become \\xNN escapes, other lone surrogates (a JSON "\\ud800")
  \\uNNNN escapes."""
  if not isinstance(value, str):
    return value
  try:
    value.encode("utf-8")
    return value
  except UnicodeEncodeError:
    return "".join(_escape_surrogate(ch) if "\ud800" <= ch <= "\udfff" else ch
                   for ch in value)


def _escape_surrogate(ch: str) -> str:
  code = ord(ch)
  if 0xDC80 <= code <= 0xDCFF:  # a byte kept by surrogateescape
    return f"\\x{code - 0xDC00:02x}"
  return f"\\u{code:04x}"


def json_record(fields: Dict[str, object]) -> str:
  if isinstance(fields, dict):
    fields = {_printable(k): _printable(v) for k, v in fields.items()}
  return raw_record(json.dumps(fields, ensure_ascii=False, sort_keys=True,
                                default=str))


def has_surrogates(text: str) -> bool:
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


class _RecordTooLong(Exception):
  pass


class _PhysicalLines:
  """The physical lines of a text stream (ended by \\n, \\r\\n or \\r), numbered,
  for csv.reader: the lines of a record that proves malformed are handed out
  again, all but the first, so that one stray quote costs one line, not every
  line up to the next quote."""

  def __init__(self, text):
    self._source = iter(text)
    self._replay = collections.deque()
    self.record_lines: List[str] = []
    self.next_line = 1  # the physical line number of the record being read

  def __iter__(self):
    return self

  def __next__(self) -> str:
    if len(self.record_lines) >= MAX_CSV_RECORD_LINES:
      raise _RecordTooLong(
          f"a record runs over more than {MAX_CSV_RECORD_LINES} lines (an "
          "unclosed quote?)")
    line = self._replay.popleft() if self._replay else next(self._source)
    self.record_lines.append(line)
    return line

  def accept_record(self) -> None:
    self.next_line += len(self.record_lines)
    self.record_lines = []

  def reject_record(self) -> None:
    self._replay.extendleft(reversed(self.record_lines[1:]))
    self.next_line += 1
    self.record_lines = []


def _csv_header(values: List[str], path: str, line: int) -> List[str]:
  header = [name.strip() for name in values]
  seen = set()
  for name in header:
    if name in seen:
      raise InputError(f"{path}:{line}: CSV header names column '{name}' twice")
    seen.add(name)
    if has_surrogates(name):
      raise InputError(f"{path}:{line}: CSV header is not UTF-8 text")
  return header


def _csv_rows(path: str) -> Iterator[Union[tuple, DeadLetter]]:
  """Yields the header (a list), then (line, values) or DeadLetter per record.

  Bytes that are not UTF-8 survive decoding as surrogates so that the row can be
  rejected naming its field; quoted fields may span lines. A record that cannot
  be parsed, or spans several lines with the wrong number of fields, is
  rejected at its first line and reading resumes on the line after it.
  """
  with open_input(path) as binary:
    text = io.TextIOWrapper(binary, encoding="utf-8-sig", errors="surrogateescape",
                            newline="")
    lines = _PhysicalLines(text)
    reader = csv.reader(lines, strict=True)
    width = None
    while True:
      start = lines.next_line
      try:
        values = next(reader)
      except StopIteration:
        return
      except (csv.Error, _RecordTooLong) as error:
        if width is None:
          raise InputError(f"{path}:{start}: unreadable CSV header: {error}") from error
        yield rejected(path, start, "malformed_csv", f"malformed CSV record: {error}",
                       raw_record(lines.record_lines[0].rstrip("\r\n")))
        lines.reject_record()
        continue
      if not values:  # a blank line
        lines.accept_record()
        continue
      if width is None:
        header = _csv_header(values, path, start)
        width = len(header)
        lines.accept_record()
        yield header
        continue
      if len(values) != width:
        yield rejected(
            path, start, "malformed_csv",
            f"expected {width} fields, found {len(values)}",
            json_record({"values": values}))
        if len(lines.record_lines) > 1:
          lines.reject_record()
        else:
          lines.accept_record()
        continue
      lines.accept_record()
      yield start, values


def _csv_records(path: str) -> Iterator[Union[tuple, DeadLetter]]:
  """Yields (line, {column: value}) or DeadLetter for each CSV record."""
  rows = _csv_rows(path)
  header = next(rows, None)
  if header is None:
    return
  for item in rows:
    if isinstance(item, DeadLetter):
      yield item
    else:
      line, values = item
      yield line, dict(zip(header, values))


def _json_object(text: str):
  try:
    return json.loads(text)
  except (ValueError, RecursionError):
    return None


def jsonl_records(path: str) -> Iterator[Union[tuple, DeadLetter]]:
  """Yields (line, {field: value}) or DeadLetter for each line of JSON Lines
  (lines end with \\n; a \\r before it and a UTF-8 byte-order mark are ignored)."""
  with open_input(path) as binary:
    for line, raw in enumerate(binary, start=1):
      if raw.startswith(_UTF8_BOM):
        raw = raw[len(_UTF8_BOM):]
      if not raw.strip():
        continue
      try:
        decoded = raw.decode("utf-8")
      except UnicodeDecodeError as error:
        # Parsed all the same (bytes kept as surrogates) to name the field that
        # holds them; a line that is not JSON either is rejected as not UTF-8.
        decoded = raw.decode("utf-8", "surrogateescape")
        fields = _json_object(decoded)
        if not isinstance(fields, dict):
          yield rejected(path, line, "non_utf8",
                         f"bytes that are not UTF-8 at offset {error.start}",
                         raw_record(decoded.rstrip("\r\n")))
          continue
      else:
        try:
          fields = json.loads(decoded)
        except (ValueError, RecursionError) as error:
          yield rejected(path, line, "malformed_json", f"not a JSON object: {error}",
                         raw_record(decoded.rstrip("\r\n")))
          continue
      if not isinstance(fields, dict):
        yield rejected(path, line, "malformed_json", "not a JSON object",
                       raw_record(decoded.rstrip("\r\n")))
        continue
      yield line, fields


def _text_column(column) -> list:
  """A Parquet column as Python values; binary values are decoded (bytes that are
  not UTF-8 become surrogates, for the row to be rejected naming its field)."""
  if pa.types.is_dictionary(column.type):
    column = column.cast(column.type.value_type)
  values = column.to_pylist()
  if pa.types.is_binary(column.type) or pa.types.is_large_binary(column.type):
    return [None if value is None else value.decode("utf-8", "surrogateescape")
            for value in values]
  return values


def _parquet_records(path: str, columns: Sequence[str]) -> Iterator[tuple]:
  parquet = _open_parquet(path)
  try:
    present = [c for c in columns if c in parquet.schema_arrow.names]
    row = 0
    try:
      for batch in parquet.iter_batches(batch_size=8192, columns=present):
        values = [_text_column(column) for column in batch.columns]
        for record in zip(*values):
          row += 1
          yield row, dict(zip(present, record))
    except _DAMAGED_DATA_ERRORS as error:
      raise InputError(f"{path}: unreadable Parquet data after row {row} ({error}): "
                       "a truncated or damaged file?") from error
  finally:
    parquet.close()


def _is_text_type(data_type) -> bool:
  if pa.types.is_dictionary(data_type):
    data_type = data_type.value_type
  return (pa.types.is_string(data_type) or pa.types.is_large_string(data_type) or
          pa.types.is_binary(data_type) or pa.types.is_large_binary(data_type) or
          pa.types.is_null(data_type))


def read_header(path: str, text_columns: Sequence[str] = ()) -> List[str]:
  """Column names of a CSV or Parquet file (JSON Lines have none: empty list).

  Parquet columns named in `text_columns` must hold text (string, binary or a
  dictionary of strings): another type is refused, naming the column.
  """
  fmt = data_format(path)
  if fmt == "csv":
    header = next(_csv_rows(path), None)
    return header or []
  if fmt == "parquet":
    parquet = _open_parquet(path)
    schema = parquet.schema_arrow
    parquet.close()
    for name in text_columns:
      if name in schema.names and not _is_text_type(schema.field(name).type):
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
    return jsonl_records(path)
  return _parquet_records(path, columns)


# ----------------------------------------------------------------------------
# Predictions.


def check_prediction_file(path: str) -> List[str]:
  """Raises InputError if a predictions file cannot be read (check_input_file) or,
  for CSV and Parquet, lacks a required column; returns its columns (none for
  JSON Lines)."""
  check_input_file(path)
  header = read_header(path, _PREDICTION_FIELDS)
  if data_format(path) == "jsonl":
    return header
  missing = [f for f in REQUIRED_PREDICTION_FIELDS if f not in header]
  if missing:
    raise InputError(
        f"{path}:1: missing required column(s) {', '.join(missing)} "
        f"(found: {', '.join(header) or 'none'})")
  return header


def _text_field(fields, name, path, line, required) -> Union[str, None, DeadLetter]:
  value = fields.get(name)
  if value is None:
    if required:
      return rejected(path, line, "missing_field", "required field is missing",
                      json_record(fields), name)
    return None
  if not isinstance(value, str):
    return rejected(path, line, "wrong_type",
                    f"expected a string, found {type(value).__name__}",
                    json_record(fields), name)
  if has_surrogates(value):
    return rejected(path, line, "non_utf8", "bytes that are not UTF-8",
                    json_record(fields), name)
  return value


def clean_text_fields(fields, names, required, path, line):
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


def system_name_field(values, default_system: str, fields, path: str,
                      line: int) -> Union[str, DeadLetter]:
  """A row's system name, stripped: `default_system` where the field is absent,
  the DeadLetter of an empty one."""
  system = values["system_name"]
  if system is None:
    return default_system.strip()
  if not system.strip():
    return rejected(path, line, "empty_system_name", "the system name is empty",
                    json_record(fields), "system_name")
  return system.strip()


def parse_prediction(fields: Dict[str, object], path: str, line: int,
                     default_system: str) -> Union[Prediction, DeadLetter]:
  values = clean_text_fields(fields, _PREDICTION_FIELDS, REQUIRED_PREDICTION_FIELDS,
                              path, line)
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
      attribution=values["attribution"].strip(),
      passage=values["passage"] or None,
      human_rating=rating,
      source_file=path,
      source_line=line)


def read_predictions(path: str) -> Iterator[Union[Prediction, DeadLetter]]:
  default_system = system_name_from_path(path)
  for item in records(path, _PREDICTION_FIELDS):
    if isinstance(item, DeadLetter):
      yield item
    else:
      line, fields = item
      yield parse_prediction(fields, path, line, default_system)


# ----------------------------------------------------------------------------
# Gold answers. A bad line is dead-lettered like any other (its question leaves
# the denominators, and run.json counts it); a repeated question keeps its first
# line. Gold indexes count the accepted questions in source order.

TFDS_PREFIX = "tfds:"


def check_gold_source(source: str) -> None:
  """Raises InputError if a gold JSONL file cannot be read (a tfds: source is
  checked where it is read)."""
  if source.startswith(TFDS_PREFIX):
    return
  if data_format(source) != "jsonl":
    raise InputError(f"{source}: gold answers are JSON Lines "
                     '({"question": ..., "answer": [...]}), optionally compressed')
  check_input_file(source)


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


# ----------------------------------------------------------------------------
# Corpus sources for build-corpus.

CORPUS_FIELDS = ("id", "contents", "title", "text", "headings")


def check_corpus_file(path: str) -> None:
  """Raises InputError if a corpus source cannot be read (check_input_file) or,
  for CSV and Parquet, lacks the columns of a passage."""
  check_input_file(path)
  header = read_header(path, CORPUS_FIELDS)
  if data_format(path) == "jsonl":
    return
  if "id" not in header or not ("contents" in header or
                                ("title" in header and "text" in header)):
    raise InputError(
        f"{path}:1: a corpus needs columns id and contents (Pyserini) or id, title "
        f"and text (found: {', '.join(header) or 'none'})")


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
  """PBegin -> ReadRecords' outputs (records: GoldAnswer, dead_letter, counts)
  from a JSONL file or `tfds:NAME/SPLIT`; the source is opened on a worker, not
  on the launching machine."""

  def __init__(self, source: str):
    super().__init__()
    self._source = source

  def expand(self, pbegin):
    return pbegin | "ReadGoldRecords" >> ReadRecords([self._source], read_gold)
