"""Record-level reading of tabular input files (CSV with a header line, JSON Lines,
Parquet), and `ReadRecords`, the Beam transform around every reader.

Every reader (predictions, gold answers and corpus sources beside this module and
in transforms/corpus/sources.py, and each job's readers) yields, per input record,
either a parsed element or a `DeadLetter` naming the file, the line (1-based
physical line where the record starts; the row number for Parquet) and the field
at fault. A bad record never raises; a bad *file* (unknown format, missing
required column) raises `InputError` so that the job stops before it writes
anything: `read_columns(path).require(...)` checks, at launch, a CSV header, a
Parquet schema, or the first record of a JSON Lines file, which stands for the
file as a header does. Paths are anything Beam's `FileSystems` opens: local paths, `gs://`
URIs, `.gz` files.
"""
import collections
import contextlib
import csv
import io
import json
from typing import Dict, Iterator, List, NamedTuple, Optional, Sequence, Union

import apache_beam as beam
import pyarrow as pa
from apache_beam.transforms.window import GlobalWindow
from apache_beam.utils.timestamp import MIN_TIMESTAMP
from apache_beam.utils.windowed_value import WindowedValue

from autoais.schemas import DeadLetter
from autoais.schemas.errors import InputError
from autoais.transforms.io.fields import has_surrogates, json_record, raw_record, rejected
from autoais.transforms.io.inputs import (DAMAGED_DATA_ERRORS, UTF8_BOM, data_format, open_input,
                                  open_parquet)
from autoais.transforms.io.untyped_output import UntypedOutputDoFn

# A quoted CSV field may run over this many physical lines; past it, the record
# is taken for an unclosed quote, rejected, and reading resumes on its next line.
MAX_CSV_RECORD_LINES = 1000

# Large CSV fields (Wikipedia passages) exceed csv's default 128 KiB limit.
csv.field_size_limit(64 * 1024 * 1024)


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


class RepeatedKey(ValueError):
  """A JSON object that gives one key twice: json keeps the last value
  unseen, and which one the writer meant is not known."""

  def __init__(self, key: str):
    super().__init__(f"the key {key!r} is given twice in one object (a JSON reader "
                     "keeps one of the two unseen)")
    self.key = key


def _unique_keys(pairs):
  found = dict(pairs)
  if len(found) != len(pairs):
    seen = set()
    raise RepeatedKey(next(key for key, _ in pairs if key in seen or seen.add(key)))
  return found


# Every JSON input is decoded by it: a repeated key is refused, not resolved.
JSON_DECODER = json.JSONDecoder(object_pairs_hook=_unique_keys)


def _json_object(text: str):
  """The decoded value, or None where the text is not JSON; RepeatedKey raised."""
  try:
    return JSON_DECODER.decode(text)
  except RepeatedKey:
    raise
  except (ValueError, RecursionError):
    return None


def _repeated_key(path: str, line: int, error: RepeatedKey, decoded: str) -> DeadLetter:
  return rejected(path, line, "repeated_key", str(error),
                  raw_record(decoded.rstrip("\r\n")), error.key)


def jsonl_records(path: str) -> Iterator[Union[tuple, DeadLetter]]:
  """Yields (line, {field: value}) or DeadLetter for each line of JSON Lines
  (lines end with \\n; a \\r before it and a UTF-8 byte-order mark are ignored)."""
  with open_input(path) as binary:
    for line, raw in enumerate(binary, start=1):
      if raw.startswith(UTF8_BOM):
        raw = raw[len(UTF8_BOM):]
      if not raw.strip():
        continue
      try:
        decoded = raw.decode("utf-8")
      except UnicodeDecodeError as error:
        # Parsed all the same (bytes kept as surrogates) to name the field that
        # holds them; a line that is not JSON either is rejected as not UTF-8.
        decoded = raw.decode("utf-8", "surrogateescape")
        try:
          fields = _json_object(decoded)
        except RepeatedKey as repeated:
          yield _repeated_key(path, line, repeated, decoded)
          continue
        if not isinstance(fields, dict):
          yield rejected(path, line, "non_utf8",
                         f"bytes that are not UTF-8 at offset {error.start}",
                         raw_record(decoded.rstrip("\r\n")))
          continue
      else:
        try:
          fields = JSON_DECODER.decode(decoded)
        except RepeatedKey as repeated:
          yield _repeated_key(path, line, repeated, decoded)
          continue
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
  parquet = open_parquet(path)
  try:
    present = [c for c in columns if c in parquet.schema_arrow.names]
    row = 0
    try:
      for batch in parquet.iter_batches(batch_size=8192, columns=present):
        values = [_text_column(column) for column in batch.columns]
        for record in zip(*values):
          row += 1
          yield row, dict(zip(present, record))
    except DAMAGED_DATA_ERRORS as error:
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


# A need of `Columns.require`: a name, or a tuple of alternatives, each a name or
# a tuple of names needed together: ("id", ("contents", ("title", "text"))).
Need = Union[str, tuple]


def _alternatives(need: Need) -> List[tuple]:
  if isinstance(need, str):
    return [(need,)]
  return [(alternative,) if isinstance(alternative, str) else tuple(alternative)
          for alternative in need]


def _describe(need: Need) -> str:
  described = [" and ".join(names) for names in _alternatives(need)]
  return described[0] if len(described) == 1 else f"({', or '.join(described)})"


class Columns(NamedTuple):
  """The fields a file declares, read at launch (`read_columns`): a CSV header
  or a Parquet schema (`kind` "column", line 1), or the fields of a JSON Lines
  file's first record (`kind` "field", at its line). `names` is None for a JSON
  Lines file whose first line holds no JSON object: that line is dead-lettered
  when the file is read, and nothing is checked."""
  path: str
  line: int
  names: Optional[List[str]]
  kind: str

  def require(self, required: Sequence[Need]) -> "Columns":
    """Raises InputError naming the file, the line and each need of `required`
    the names do not meet; returns self."""
    if self.names is None:
      return self
    missing = [_describe(need) for need in required if not any(
        all(name in self.names for name in names) for names in _alternatives(need))]
    if missing:
      where = " in the first record" if self.kind == "field" else ""
      raise InputError(
          f"{self.path}:{self.line}: missing required {self.kind}(s) "
          f"{', '.join(missing)}{where} (found: {', '.join(self.names) or 'none'})")
    return self


def read_columns(path: str, text_columns: Sequence[str] = ()) -> Columns:
  """The Columns of a CSV, Parquet or JSON Lines file (cheap: a header, a
  footer or one line).

  Parquet columns named in `text_columns` must hold text (string, binary or a
  dictionary of strings): another type is refused, naming the column.
  """
  fmt = data_format(path)
  if fmt == "csv":
    return Columns(path, 1, next(_csv_rows(path), None) or [], "column")
  if fmt == "parquet":
    parquet = open_parquet(path)
    schema = parquet.schema_arrow
    parquet.close()
    for name in text_columns:
      if name in schema.names and not _is_text_type(schema.field(name).type):
        raise InputError(
            f"{path}: column '{name}' has type {schema.field(name).type}, "
            "expected string")
    return Columns(path, 1, list(schema.names), "column")
  with contextlib.closing(jsonl_records(path)) as items:
    first = next(items, None)
  if first is None:
    return Columns(path, 1, [], "field")
  if isinstance(first, DeadLetter):
    return Columns(path, first.source_line, None, "field")
  line, fields = first
  return Columns(path, line, list(fields), "field")


def records(path: str, columns: Sequence[str]) -> Iterator[Union[tuple, DeadLetter]]:
  fmt = data_format(path)
  if fmt == "csv":
    return _csv_records(path)
  if fmt == "jsonl":
    return jsonl_records(path)
  return _parquet_records(path, columns)


# ----------------------------------------------------------------------------
# The Beam transform around the readers.


class LeftOut(NamedTuple):
  """What a reader yields for a record it read and leaves out at the user's
  choice (agreement --split: a RAGTruth response of another split): neither
  an element nor a dead letter (nothing is wrong with it), counted by
  ReadRecords as read and under `left_out`."""
  reason: str


class _ReadRecordsFn(UntypedOutputDoFn):

  def __init__(self, read_file):
    self._read_file = read_file

  def start_bundle(self):
    self._read = collections.Counter()
    self._left_out = collections.defaultdict(collections.Counter)

  def process(self, path):
    for item in self._read_file(path):
      self._read[path] += 1
      if isinstance(item, LeftOut):
        self._left_out[path][item.reason] += 1
      elif isinstance(item, DeadLetter):
        yield beam.pvalue.TaggedOutput("dead_letter", item)
      else:
        yield item

  def finish_bundle(self):
    if self._read:
      counts = {"read": sum(self._read.values()), "by_file": dict(self._read)}
      if self._left_out:
        counts["left_out"] = {path: dict(reasons) for path, reasons in
                              self._left_out.items()}
      yield beam.pvalue.TaggedOutput("counts", WindowedValue(
          counts, MIN_TIMESTAMP, [GlobalWindow()]))
      self._read = collections.Counter()
      self._left_out.clear()


def left_out_counts(read_counts) -> Dict[str, int]:
  """{reason: records} a reader left out (LeftOut), over every file of
  ReadRecords' summed counts."""
  total = collections.Counter()
  for reasons in (read_counts or {}).get("left_out", {}).values():
    total.update(reasons)
  return dict(total)


class ReadRecords(beam.PTransform):
  """Reads files record by record with `read_file(path)` (read_predictions,
  read_corpus_source). Outputs: main (parsed elements), 'dead_letter' and
  'counts' (per-bundle {'read': n, 'by_file': {path: n}}: every record, parsed
  or not; where a reader left records out (LeftOut), also 'left_out': {path:
  {reason: n}})."""

  def __init__(self, paths: Sequence[str], read_file):
    super().__init__()
    self._paths = list(paths)
    self._read_file = read_file

  def expand(self, pbegin):
    return (pbegin
            | "ListInputFiles" >> beam.Create(self._paths)
            | "ParseRecords" >> beam.ParDo(_ReadRecordsFn(self._read_file)).with_outputs(
                "dead_letter", "counts", main="records"))
