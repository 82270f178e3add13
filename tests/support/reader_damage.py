"""Hypothesis strategies that write input files with planted damage, and the
invariant every reader must keep on them
(tests/robustness/test_reader_properties.py).

A generated file is a list of records, each either good (with the element the
reader must produce from it) or damaged in one known way (with the reasons and
field the reader must report). The file's bytes are built record by record, so
the physical line (or Parquet row) where each record starts is known exactly;
blank lines, line endings (\\n, \\r\\n, \\r, mixed), a byte-order mark and gzip
vary around them.

One generated damage is limited by the CSV format itself: a stray opening quote
that a later quote closes encloses a legal multi-line field, and when the record
so formed has the header's width no reader can call it damage. The generator
keeps only stray quotes that CSV can tell apart (`_closes_as_a_record`); the
reader rejects those at their line and reads the lines after them again.

The invariant (`check_reader`), for any generated file:
  * reading never raises;
  * one item per record: read = parsed + rejected;
  * the parsed elements are exactly the good records' elements, in order, with
    their source file and line: no good row lost, none invented;
  * each damaged record is one DeadLetter of its kind (mostly "rejected") at its
    line, naming the file, the line and (where the damage has one) the field,
    with a reason the damage allows; its dead_letter.jsonl line encodes as UTF-8.
    (A record is what yields one item: a row, or one entry of a candidate list,
    which shares its line with the list's other entries, in order.)
"""
import csv
import gzip
import io
import json
import math
import os
import re
from typing import Callable, Dict, List, NamedTuple, Optional, Sequence, Tuple

import pyarrow as pa
import pyarrow.parquet as pq
from hypothesis import assume
from hypothesis import strategies as st

from autoais.schemas import (REJECTED, UNMATCHED, AuditAnswer, Candidate, ClaimInput,
                     CorpusRecord, DeadLetter, GoldAnswer, HumanRating, KgStatement, Prediction,
                     SckInput, Topic)
from autoais.transforms.audit.readers import inline_passage_id
from autoais.transforms.corpus.passages import pyserini_contents
from autoais.transforms.io.dead_letters import dead_letter_json

# A marker for "put a byte that is not UTF-8 here"; kept out of generated text.
_INVALID_BYTE_MARK = "\ue000"
_INVALID_BYTE = b"\xff"


def _short(value) -> str:
  """A repr that keeps failure reports readable when fields are huge."""
  text = repr(value)
  return text if len(text) <= 300 else f"{text[:150]}...<{len(text)} chars>...{text[-100:]}"


class Record:
  """One planted record: its bytes (or Parquet row), and what must come of it.

  data: bytes for text formats, a {column: value} dict for Parquet; expected:
  the element a good record yields (its source line unset); reasons: for damage,
  the reasons a reader may report; field: the field it must name (None: any);
  kind: the dead letter's kind; same_line: the record is one more item of the
  previous record's line (an entry of a candidate list; its data is empty);
  line: where the record starts, set when the file is assembled.
  """

  def __init__(self, data, expected=None, reasons: Sequence[str] = (),
               field: Optional[str] = None, stray_quote: bool = False,
               kind: str = REJECTED, same_line: bool = False):
    self.data = data
    self.expected = expected
    self.reasons = tuple(reasons)
    self.field = field
    self.stray_quote = stray_quote
    self.kind = kind
    self.same_line = same_line
    self.line = 0

  @property
  def good(self) -> bool:
    return not self.reasons

  def __repr__(self):
    return (f"Record(line={self.line}, data={_short(self.data)}, "
            f"expected={_short(self.expected)}, reasons={self.reasons}, "
            f"field={self.field})")

  def _repr_pretty_(self, printer, cycle):
    printer.text(repr(self))


class GeneratedFile:
  """A generated input file: its name, its records and its bytes."""

  def __init__(self, name: str, records: List[Record], data: bytes):
    self.name = name
    self.records = records
    self.data = data

  def write(self, directory: str, prefix: str = "") -> str:
    path = os.path.join(directory, prefix + self.name)
    with open(path, "wb") as f:
      f.write(self.data)
    return path

  def __repr__(self):
    return (f"GeneratedFile(name={self.name!r}, data={_short(self.data)},\n  records=" +
            ",\n    ".join(map(repr, self.records)) + ")")

  def _repr_pretty_(self, printer, cycle):
    printer.text(repr(self))


# ----------------------------------------------------------------------------
# Text that a good record may carry: any Unicode scalar (no lone surrogates),
# weighted towards what breaks readers: quotes, commas, line breaks, NUL, BOM.

_AWKWARD = st.sampled_from(['"', ",", "\n", "\r", "\r\n", "\x00", "\ufeff", "\t",
                            "'", "\\", "\u2028", "\x85", "«", "»", "😀", " "])
_ANY_CHAR = st.characters(blacklist_categories=("Cs",),
                          blacklist_characters=_INVALID_BYTE_MARK)
_TEXT = st.lists(st.one_of(_ANY_CHAR, _AWKWARD), max_size=12).map("".join)
# Values that survive str.strip() unchanged and are not blank.
_STRIPPED = _TEXT.map(str.strip).filter(bool)
# Past csv's default field limit (131,072 characters).
_HUGE = st.integers(131_073, 140_000).map(lambda n: "x" * n)
_RATINGS = {"Y": "Y", "N": "N", "yes": "Y", "no": "N", " y ": "Y", "No": "N",
            "": None}


def _maybe_huge(strategy):
  """Mostly `strategy`, sometimes (1 in 16) a huge value."""
  return st.integers(0, 15).flatmap(lambda pick: _HUGE if pick == 0 else strategy)


def _line_breaks(text: str) -> int:
  return len(re.findall(r"\r\n|\r|\n", text))


# ----------------------------------------------------------------------------
# Predictions.

REQUIRED = ("question", "answer")
# Every generated file declares `attribution` (a file must declare it or
# `passage`); a row without it (absent or null) is a good row whose attribution
# is empty, which evaluate counts as missing_attribution.
ATTRIBUTION = ("attribution",)
OPTIONAL = ("system_name", "passage", "human_rating")
EXTRA = ("notes", "score", "Question")


@st.composite
def _good_prediction_fields(draw, columns, allow_null=False):
  """{column: value} of a good prediction, and its expected Prediction fields."""
  fields = {
      "question": draw(_STRIPPED),
      "answer": draw(_maybe_huge(_TEXT.filter(str.strip))),
      "attribution": draw(_TEXT.map(str.strip)),
  }
  if "system_name" in columns:
    fields["system_name"] = draw(_STRIPPED)
  if "passage" in columns:
    fields["passage"] = draw(_maybe_huge(_TEXT))
  if "human_rating" in columns:
    fields["human_rating"] = draw(st.sampled_from(sorted(_RATINGS)))
  for column in columns:
    if column in EXTRA:
      fields[column] = draw(_TEXT)
  if allow_null:
    for column in ("passage", "human_rating", "system_name"):
      if column in fields and draw(st.integers(0, 4)) == 0:
        fields[column] = None
  return fields


def _expected_prediction(fields, default_system):
  system = fields.get("system_name")
  return Prediction(
      system_name=system if system else default_system,
      question=fields["question"],
      answer=fields["answer"],
      attribution=fields.get("attribution") or "",
      # A passage of white space is none, as an empty one is.
      passage=fields.get("passage") if (fields.get("passage") or "").strip() else None,
      human_rating=_RATINGS[fields["human_rating"]] if fields.get("human_rating")
      is not None else None,
      source_file="", source_line=0)


# Damage that applies to the fields of any format, with what a reader must say.
def _field_damage(draw, fields, columns):
  """Damages one field of a good record's fields; returns (fields, reasons, field)."""
  choices = ["empty_question", "empty_answer", "non_utf8"]
  if "human_rating" in columns:
    choices.append("invalid_rating")
  if "system_name" in columns:
    choices.append("empty_system_name")
  kind = draw(st.sampled_from(choices))
  fields = dict(fields)
  if kind == "empty_question":
    fields["question"] = draw(st.sampled_from(["", " ", "\t \u3000"]))
    return fields, ("empty_question",), "question"
  if kind == "empty_answer":
    fields["answer"] = draw(st.sampled_from(["", "  ", "\u00a0"]))
    return fields, ("empty_answer",), "answer"
  if kind == "invalid_rating":
    fields["human_rating"] = draw(st.sampled_from(["maybe", "1", "Yes!", "true"]))
    return fields, ("invalid_value",), "human_rating"
  if kind == "empty_system_name":
    fields["system_name"] = " "
    return fields, ("empty_system_name",), "system_name"
  target = draw(st.sampled_from([c for c in REQUIRED + ATTRIBUTION + OPTIONAL
                                 if c in fields and
                                 fields[c] is not None]))
  text = fields[target]
  at = draw(st.integers(0, len(text)))
  fields[target] = text[:at] + _INVALID_BYTE_MARK + text[at:]
  return fields, ("non_utf8",), target


def _encode(text: str) -> bytes:
  return text.encode("utf-8").replace(_INVALID_BYTE_MARK.encode("utf-8"), _INVALID_BYTE)


def _csv_line(values: Sequence[str], ending: str) -> str:
  buffer = io.StringIO()
  # Quoting as for "\r\n" (fields holding \r or \n are quoted), then the ending.
  csv.writer(buffer, lineterminator="\r\n").writerow(values)
  return buffer.getvalue()[:-2] + ending


_ENDINGS = st.sampled_from(["\n", "\r\n", "\r"])


@st.composite
def csv_prediction_files(draw, index: int = 0):
  optional = draw(st.lists(st.sampled_from(OPTIONAL), unique=True))
  extra = draw(st.lists(st.sampled_from(EXTRA), unique=True, max_size=2))
  columns = draw(st.permutations(list(REQUIRED + ATTRIBUTION) + optional + extra))
  mixed = draw(st.booleans())
  file_ending = draw(_ENDINGS)

  def ending():
    return draw(_ENDINGS) if mixed else file_ending

  stem = f"sys-{index}"
  header = [f" {c} " if draw(st.integers(0, 5)) == 0 else c for c in columns]
  records = []
  for _ in range(draw(st.integers(0, 10))):
    fields = draw(_good_prediction_fields(columns))
    kind = draw(st.sampled_from(["good"] * 5 + ["field", "width", "stray_quote",
                                                 "garbage"]))
    values = [fields[c] for c in columns]
    if kind == "good":
      records.append(Record(_encode(_csv_line(values, ending())),
                            _expected_prediction(fields, stem)))
    elif kind == "field":
      damaged, reasons, field = _field_damage(draw, fields, columns)
      records.append(Record(_encode(_csv_line([damaged[c] for c in columns], ending())),
                            reasons=reasons, field=field))
    elif kind == "width":
      # On one physical line: a record over several lines with the wrong width is
      # taken for an unclosed quote and its later lines are read again.
      values = [re.sub(r"[\r\n]", " ", value) for value in values]
      values = values + ["extra"] * draw(st.integers(1, 2)) if draw(st.booleans()) \
          else values[:draw(st.integers(0, len(values) - 1))]
      line = _csv_line(values, ending())
      if not values:
        line = "," + line  # one empty field, not a blank line
      records.append(Record(_encode(line), reasons=("malformed_csv",)))
    elif kind == "stray_quote":
      # A quote that opens a field and never closes on its line.
      cut = draw(st.integers(0, len(columns) - 1))
      opened = draw(_TEXT.map(lambda t: re.sub(r'["\r\n]', "", t)))
      line = ",".join(["x"] * cut + ['"' + opened]) + ending()
      records.append(Record(_encode(line), reasons=("malformed_csv",), stray_quote=True))
    else:
      # Bytes that are not text, with no quote or line break, one field too few
      # or too many: malformed or not UTF-8, never a record.
      noise = draw(st.binary(max_size=30)).translate(None, b'"\r\n,')
      width = draw(st.sampled_from([1, len(columns) + 1]))
      line = _INVALID_BYTE + noise + b"," * (width - 1) + ending().encode()
      records.append(Record(line, reasons=("malformed_csv", "non_utf8")))
  return _assemble_text(draw, f"{stem}.csv", _csv_line(header, ending()), records,
                        blank=ending, width=len(columns))


@st.composite
def jsonl_prediction_files(draw, index: int = 0):
  columns = REQUIRED + ATTRIBUTION + tuple(
      draw(st.lists(st.sampled_from(OPTIONAL), unique=True)))
  ending = draw(st.sampled_from(["\n", "\r\n"]))
  stem = f"sys-{index}"
  records = []
  for _ in range(draw(st.integers(0, 10))):
    fields = draw(_good_prediction_fields(columns + EXTRA, allow_null=True))
    kind = draw(st.sampled_from(["good"] * 5 + ["field", "json", "type", "missing"]))
    if kind == "good":
      records.append(Record(_json_line(draw, fields, ending),
                            _expected_prediction(fields, stem)))
    elif kind == "field":
      damaged, reasons, field = _field_damage(draw, fields, columns)
      if reasons == ("non_utf8",) and draw(st.booleans()):
        # A lone surrogate escape (valid JSON, not valid text).
        damaged[field] = damaged[field].replace(_INVALID_BYTE_MARK, "\ud800")
        line = json.dumps(damaged).encode() + ending.encode()
        records.append(Record(line, reasons=reasons, field=field))
      else:
        records.append(Record(_json_line(draw, damaged, ending), reasons=reasons,
                              field=field))
    elif kind == "type":
      field = draw(st.sampled_from(columns))
      # A list with a number: a wrong type for every field (`passage` takes a
      # list of strings).
      fields[field] = draw(st.sampled_from([1972, 0.5, True, ["a", 7], {"a": 1}]))
      records.append(Record(_json_line(draw, fields, ending), reasons=("wrong_type",),
                            field=field))
    elif kind == "missing":
      field = draw(st.sampled_from(REQUIRED + ATTRIBUTION))
      if draw(st.booleans()):
        del fields[field]
      else:
        fields[field] = None
      if field in ATTRIBUTION:
        records.append(Record(_json_line(draw, fields, ending),
                              _expected_prediction(fields, stem)))
      else:
        records.append(Record(_json_line(draw, fields, ending),
                              reasons=("missing_field",), field=field))
    else:
      records.append(Record(draw(_broken_json_lines()) + ending.encode(),
                            reasons=("malformed_json", "non_utf8")))
  return _assemble_text(draw, f"{stem}.jsonl", "", records, blank=lambda: ending)


def _json_line(draw, fields, ending) -> bytes:
  text = json.dumps(fields, ensure_ascii=False)
  if _INVALID_BYTE_MARK not in text and draw(st.booleans()):
    text = json.dumps(fields, ensure_ascii=True)
  return _encode(text) + ending.encode()


def _broken_json_lines():
  return st.one_of(
      st.just(b"{"),
      _TEXT.map(lambda t: b"# " + t.replace("\n", " ").replace("\r", " ").encode()),
      st.binary(max_size=20).map(lambda b: _INVALID_BYTE + b.translate(None, b"\r\n")),
      st.sampled_from([b"[1, 2]", b"42", b'"text"', b"null",
                       b'{"question": "a\x00b", "answer": "x", "attribution": ""}',
                       b"[" * 50000 + b"]" * 50000]),
  )


@st.composite
def parquet_prediction_files(draw, index: int = 0):
  optional = draw(st.lists(st.sampled_from(OPTIONAL), unique=True))
  columns = list(REQUIRED + ATTRIBUTION) + optional
  types = {c: draw(st.sampled_from(["string", "large_string", "dictionary", "binary"]))
           for c in columns}
  stem = f"sys-{index}"
  records = []
  for _ in range(draw(st.integers(0, 10))):
    fields = draw(_good_prediction_fields(columns, allow_null=True))
    kind = draw(st.sampled_from(["good"] * 4 + ["field", "null"]))
    if kind == "good":
      records.append(Record(fields, _expected_prediction(fields, stem)))
    elif kind == "null":
      field = draw(st.sampled_from(REQUIRED + ATTRIBUTION))
      fields[field] = None
      if field in ATTRIBUTION:
        records.append(Record(fields, _expected_prediction(fields, stem)))
      else:
        records.append(Record(fields, reasons=("missing_field",), field=field))
    else:
      damaged, reasons, field = _field_damage(draw, fields, columns)
      if reasons == ("non_utf8",) and types[field] != "binary":
        damaged[field] = damaged[field].replace(_INVALID_BYTE_MARK, "")
        reasons, field = None, None
        records.append(Record(damaged, _expected_prediction(damaged, stem)))
        continue
      records.append(Record(damaged, reasons=reasons, field=field))
  extra_int = draw(st.booleans())
  arrays = []
  for column in columns:
    values = [record.data.get(column) for record in records]
    if types[column] == "binary":
      arrays.append(pa.array([None if v is None else _encode(v) for v in values],
                             pa.binary()))
    elif types[column] == "large_string":
      arrays.append(pa.array(values, pa.large_string()))
    elif types[column] == "dictionary":
      arrays.append(pa.array(values, pa.string()).dictionary_encode())
    else:
      arrays.append(pa.array(values, pa.string()))
  names = list(columns)
  if extra_int:
    arrays.append(pa.array(list(range(len(records))), pa.int64()))
    names.append("score")
  table = pa.Table.from_arrays(arrays, names=names)
  sink = pa.BufferOutputStream()
  pq.write_table(table, sink, row_group_size=draw(st.integers(1, 4)))
  for row, record in enumerate(records, start=1):
    record.line = row
  name, data = f"{stem}.parquet", sink.getvalue().to_pybytes()
  if draw(st.booleans()):
    name, data = name + ".gz", gzip.compress(data)
  return GeneratedFile(name, records, data)


# ----------------------------------------------------------------------------
# Corpus sources: Pyserini {"id","contents"} and {"id","title","text"[,"headings"]}.


@st.composite
def corpus_files(draw, index: int = 0):
  ending = draw(st.sampled_from(["\n", "\r\n"]))
  records = []
  for _ in range(draw(st.integers(0, 10))):
    passage_id = draw(_TEXT.filter(str.strip))
    pyserini = draw(st.booleans())
    if pyserini:
      fields = {"id": passage_id, "contents": draw(_maybe_huge(_TEXT))}
      contents = fields["contents"]
    else:
      fields = {"id": passage_id, "title": draw(_TEXT), "text": draw(_maybe_huge(_TEXT))}
      if draw(st.booleans()):
        fields["headings"] = draw(st.one_of(st.none(), _TEXT))
      contents = pyserini_contents(fields["title"], fields["text"], fields.get("headings"))
    kind = draw(st.sampled_from(["good"] * 5 + ["id", "body", "type", "utf8", "json"]))
    if kind == "good":
      records.append(Record(_json_line(draw, fields, ending),
                            CorpusRecord(passage_id, contents, "", 0)))
    elif kind == "id":
      if draw(st.booleans()):
        fields.pop("id")
        records.append(Record(_json_line(draw, fields, ending),
                              reasons=("missing_field",), field="id"))
      else:
        fields["id"] = draw(st.sampled_from(["", " ", "\n\t"]))
        records.append(Record(_json_line(draw, fields, ending), reasons=("empty_id",),
                              field="id"))
    elif kind == "body":
      if pyserini:
        fields.pop("contents")
        missing = "contents"
      else:
        missing = draw(st.sampled_from(["title", "text"]))
        fields.pop(missing)
        missing = "contents" if missing == "title" else "text"
      records.append(Record(_json_line(draw, fields, ending), reasons=("missing_field",),
                            field=missing))
    elif kind == "type":
      field = draw(st.sampled_from(sorted(fields)))
      fields[field] = draw(st.sampled_from([7, 1.5, False, ["x"], {"y": 2}]))
      records.append(Record(_json_line(draw, fields, ending), reasons=("wrong_type",),
                            field=field))
    elif kind == "utf8":
      field = draw(st.sampled_from(sorted(k for k, v in fields.items() if v is not None)))
      fields[field] = fields[field] + _INVALID_BYTE_MARK
      records.append(Record(_json_line(draw, fields, ending), reasons=("non_utf8",),
                            field=field))
    else:
      records.append(Record(draw(_broken_json_lines()) + ending.encode(),
                            reasons=("malformed_json", "non_utf8")))
  return _assemble_text(draw, f"passages-{index}.jsonl", "", records,
                        blank=lambda: ending)


# ----------------------------------------------------------------------------
# Gold answers: {"question": ..., "answer": [...]} (also "answers", a bare string).


@st.composite
def gold_files(draw):
  ending = draw(st.sampled_from(["\n", "\r\n"]))
  records, questions = [], []
  for _ in range(draw(st.integers(0, 10))):
    question = draw(_STRIPPED.filter(lambda q: q not in questions))
    answers = draw(st.lists(_TEXT, min_size=1, max_size=3))
    key = draw(st.sampled_from(["answer", "answers"]))
    fields = {"question": question, key: answers}
    if len(answers) == 1 and draw(st.booleans()):
      fields[key] = answers[0]
    kinds = ["good"] * 5 + ["question", "answers", "json", "utf8"]
    if questions:
      kinds.append("duplicate")
    kind = draw(st.sampled_from(kinds))
    if kind == "good":
      records.append(Record(_json_line(draw, fields, ending),
                            GoldAnswer(question, answers, len(questions))))
      questions.append(question)
    elif kind == "duplicate":
      fields["question"] = " " + draw(st.sampled_from(questions)) + " "
      records.append(Record(_json_line(draw, fields, ending),
                            reasons=("duplicate_gold_question",), field="question"))
    elif kind == "question":
      value = draw(st.sampled_from([None, "", "  ", 7, ["q"]]))
      if value is None:
        fields.pop("question")
      else:
        fields["question"] = value
      records.append(Record(_json_line(draw, fields, ending),
                            reasons=("missing_field", "wrong_type"), field="question"))
    elif kind == "answers":
      value = draw(st.sampled_from([None, [], [1], {"a": "b"}, 3]))
      if value is None:
        fields.pop(key)
      else:
        fields[key] = value
      records.append(Record(_json_line(draw, fields, ending),
                            reasons=("missing_field", "wrong_type"), field="answer"))
    elif kind == "utf8":
      fields["question"] = question + _INVALID_BYTE_MARK
      records.append(Record(_json_line(draw, fields, ending), reasons=("non_utf8",)))
    else:
      records.append(Record(draw(_broken_json_lines()) + ending.encode(),
                            reasons=("malformed_json", "non_utf8")))
  return _assemble_text(draw, "gold.jsonl", "", records, blank=lambda: ending)


# ----------------------------------------------------------------------------
# Tables: the readers of CSV (with a header), JSON Lines or Parquet rows built on
# transforms/io/input_records.py:records. A `Table` says what a good row holds and what
# the reader makes of it, and the damage only that reader knows; `table_files`
# adds the damage every such reader shares.

_EXTRA_COLUMNS = ("notes", "rater")
_WRONG_TYPES = [0.5, True, ["Y"], {"a": 1}]
_BLANKS = ["", " ", "\t \u3000", "\u00a0"]


class Table(NamedTuple):
  """stem: the file stem (a reader's default system name); fields(draw, columns,
  fmt): a good row's {column: value} for the reader's columns among `columns`;
  expected(fields, stem): its element (an optional column absent or None is
  absent); damage(draw, fields, columns): (fields, reasons, field) of one
  reader-specific damage; text_reasons: the reasons a column's bytes that are not
  UTF-8 may get (default non_utf8)."""
  stem: str
  required: Tuple[str, ...]
  optional: Tuple[str, ...]
  fields: Callable
  expected: Callable
  damage: Callable
  text_reasons: Dict[str, Tuple[str, ...]] = {}


@st.composite
def table_files(draw, table: Table):
  fmt = draw(st.sampled_from(["csv", "jsonl", "parquet"]))
  columns = draw(st.permutations(
      list(table.required) + draw(st.lists(st.sampled_from(table.optional), unique=True)
                                  if table.optional else st.just([]))
      + draw(st.lists(st.sampled_from(_EXTRA_COLUMNS), unique=True, max_size=1))))
  known = [c for c in columns if c not in _EXTRA_COLUMNS]
  ending = draw(_ENDINGS if fmt == "csv" else st.sampled_from(["\n", "\r\n"]))
  records = []
  for _ in range(draw(st.integers(0, 10))):
    fields = table.fields(draw, columns, fmt)
    for column in columns:
      fields.setdefault(column, draw(_TEXT))
    if fmt != "csv":
      for column in set(table.optional) & set(columns):
        if draw(st.integers(0, 4)) == 0:
          fields[column] = None
    kinds = ["good"] * 4 + ["value", "utf8"]
    kinds += {"csv": ["width", "stray_quote"], "jsonl": ["type", "missing", "json"],
              "parquet": ["missing"]}[fmt]
    kind = draw(st.sampled_from(kinds))
    reasons, field, expected = (), None, None
    if kind == "good":
      expected = table.expected(fields, table.stem)
    elif kind == "value":
      fields, reasons, field = table.damage(draw, dict(fields), columns)
    elif kind == "utf8":
      field = draw(st.sampled_from([c for c in known if isinstance(fields[c], str)]))
      fields[field] += _INVALID_BYTE_MARK
      reasons = table.text_reasons.get(field, ("non_utf8",))
    elif kind == "type":
      field = draw(st.sampled_from(known))
      fields[field] = draw(st.sampled_from(_WRONG_TYPES))
      reasons = ("wrong_type",)
    elif kind == "missing":
      field = draw(st.sampled_from(table.required))
      if fmt == "jsonl" and draw(st.booleans()):
        del fields[field]
      else:
        fields[field] = None
      reasons = ("missing_field",)
    if fmt == "parquet":
      records.append(Record(fields, expected, reasons, field))
    elif fmt == "jsonl":
      data = (draw(_broken_json_lines()) + ending.encode() if kind == "json" else
              _json_line(draw, fields, ending))
      records.append(Record(data, expected, reasons or
                            (("malformed_json", "non_utf8") if kind == "json" else ()),
                            field))
    elif kind == "width":
      values = [re.sub(r"[\r\n]", " ", fields[c]) for c in columns] + ["extra"]
      records.append(Record(_encode(_csv_line(values, ending)),
                            reasons=("malformed_csv",)))
    elif kind == "stray_quote":
      opened = re.sub(r'["\r\n]', "", fields[table.required[0]])
      records.append(Record(_encode('"' + opened + ending), reasons=("malformed_csv",),
                            stray_quote=True))
    else:
      records.append(Record(_encode(_csv_line([fields[c] for c in columns], ending)),
                            expected, reasons, field))
  name = f"{table.stem}.{fmt}"
  if fmt == "parquet":
    table_data = pa.table({c: pa.array([None if r.data.get(c) is None else
                                        _encode(r.data[c]) for r in records], pa.binary())
                           for c in columns})
    sink = pa.BufferOutputStream()
    pq.write_table(table_data, sink, row_group_size=draw(st.integers(1, 4)))
    for row, record in enumerate(records, start=1):
      record.line = row
    data = sink.getvalue().to_pybytes()
    if draw(st.booleans()):
      name, data = name + ".gz", gzip.compress(data)
    return GeneratedFile(name, records, data)
  if fmt == "jsonl":
    return _assemble_text(draw, name, "", records, blank=lambda: ending)
  return _assemble_text(draw, name, _csv_line(columns, ending), records,
                        blank=lambda: ending, width=len(columns))


def _blank_one(draw, fields, names, reason):
  """One of `names` made blank: (fields, (reason(name),), name)."""
  name = draw(st.sampled_from(names))
  fields[name] = draw(st.sampled_from(_BLANKS))
  return fields, (reason(name),), name


# Human ratings (`evaluate --human_ratings`): system_name, question, human_rating.

_GOOD_RATINGS = {"Y": "Y", "N": "N", "yes": "Y", "no": "N", " y ": "Y", "No": "N"}


def _rating_fields(draw, columns, fmt):
  return {"system_name": draw(_STRIPPED), "question": draw(_maybe_huge(_STRIPPED)),
          "human_rating": draw(st.sampled_from(sorted(_GOOD_RATINGS)))}


def _rating_damage(draw, fields, columns):
  if draw(st.booleans()):
    return _blank_one(draw, fields, ["system_name", "question"], lambda _: "empty_field")
  fields["human_rating"] = draw(st.sampled_from(["", "maybe", "1", "Yes!"]))
  return fields, ("invalid_value",), "human_rating"


HUMAN_RATINGS = Table(
    "ratings", ("system_name", "question", "human_rating"), (), _rating_fields,
    lambda f, stem: HumanRating(f["system_name"], f["question"],
                                _GOOD_RATINGS[f["human_rating"]], "", 0),
    _rating_damage)


# SCK answers (`autoais sck`): question, answer; optional reference_answer,
# system_name (default: the file stem), intent (any spelling of a known intent).

_INTENT_SPELLINGS = {"": None, " ": None, "factoid": "factoid",
                     "Evidence-based": "evidence-based", "evidence_based": "evidence-based",
                     "EVIDENCE BASED": "evidence-based", " Reason ": "reason",
                     "comparison\t": "comparison", "Instruction": "instruction",
                     "experience": "experience", "DEBATE": "debate"}


def _sck_fields(draw, columns, fmt):
  fields = {"question": draw(_TEXT.filter(str.strip)),
            "answer": draw(_maybe_huge(_TEXT.filter(str.strip)))}
  if "reference_answer" in columns:
    fields["reference_answer"] = draw(_maybe_huge(_TEXT))
  if "system_name" in columns:
    fields["system_name"] = draw(_TEXT.filter(str.strip))
  if "intent" in columns:
    fields["intent"] = draw(st.sampled_from(sorted(_INTENT_SPELLINGS)))
  return fields


def _sck_answer(fields, stem):
  reference, intent = fields.get("reference_answer"), fields.get("intent")
  return SckInput((fields.get("system_name") or stem).strip(), fields["question"].strip(),
                  fields["answer"], reference if reference and reference.strip() else None,
                  None if intent is None else _INTENT_SPELLINGS[intent], "", 0)


def _sck_damage(draw, fields, columns):
  names = ["question", "answer"] + [c for c in ("system_name", "intent") if c in columns]
  name = draw(st.sampled_from(names))
  if name == "intent":
    fields["intent"] = draw(st.sampled_from(["maybe", "factoids", "1", "evidence"]))
    return fields, ("invalid_value",), "intent"
  return _blank_one(draw, fields, [name], lambda n: f"empty_{n}")


SCK_ANSWERS = Table("answers", ("question", "answer"),
                    ("reference_answer", "system_name", "intent"), _sck_fields,
                    _sck_answer, _sck_damage)


# Knowledge-graph statements (`--kg`): subject, predicate, object, each stripped.

_KG_COLUMNS = ("subject", "predicate", "object")

KG_STATEMENTS = Table(
    "statements", _KG_COLUMNS, (),
    lambda draw, columns, fmt: {c: draw(_maybe_huge(_TEXT.filter(str.strip)))
                                for c in _KG_COLUMNS},
    lambda f, stem: KgStatement(*(f[c].strip() for c in _KG_COLUMNS), "", 0),
    lambda draw, fields, columns: _blank_one(draw, fields, _KG_COLUMNS,
                                             lambda _: "empty_field"))


# Audit answers (`autoais audit --answers`): question, answer; optional
# system_name (blank: the candidates' system) and query_id (text, or a JSON
# integer; blank: matched by question).


def _audit_fields(draw, columns, fmt):
  fields = {"question": draw(_TEXT.filter(str.strip)),
            "answer": draw(_maybe_huge(_TEXT.filter(str.strip)))}
  if "system_name" in columns:
    fields["system_name"] = draw(_TEXT)
  if "query_id" in columns:
    fields["query_id"] = draw(st.integers(-2**63, 2**63) if fmt == "jsonl" and
                              draw(st.booleans()) else _TEXT)
  return fields


def _audit_answer(fields, stem):
  system, query_id = fields.get("system_name"), fields.get("query_id")
  if isinstance(query_id, str):
    query_id = query_id.strip() or None
  return AuditAnswer((system.strip() or None) if system else None,
                     fields["question"].strip(),
                     None if query_id is None else str(query_id), fields["answer"],
                     None, None, "", 0)


AUDIT_ANSWERS = Table(
    "answers", ("question", "answer"), ("system_name", "query_id"), _audit_fields,
    _audit_answer,
    lambda draw, fields, columns: _blank_one(draw, fields, ["question", "answer"],
                                             lambda n: f"empty_{n}"),
    # A query id that is not UTF-8 is refused as not a usable id.
    text_reasons={"query_id": ("wrong_type",)})


# ----------------------------------------------------------------------------
# `autoais audit` candidates and topics: TREC run lines, candidate lists in JSON
# Lines, topics TSV. Lines end with \n (a \r before it is ignored), like JSON Lines.

_LINE_ENDINGS = st.sampled_from(["\n", "\r\n"])
# Text with no white space (a TREC field), and text of one line. Neither opens
# with U+FEFF: on the first line that is a byte-order mark, not text.
_TOKEN = _TEXT.map(lambda t: "".join(t.split()).lstrip("\ufeff")).filter(bool)
_ONE_LINE = _TEXT.map(lambda t: re.sub(r"[\r\n]", "", t))
_SPACES = st.sampled_from([" ", "\t", "  ", " \t "])


@st.composite
def trec_run_files(draw):
  ending = draw(_LINE_ENDINGS)
  records = []
  for _ in range(draw(st.integers(0, 10))):
    score = draw(st.one_of(st.floats(), st.integers(-10**6, 10**6)))
    values = [draw(_TOKEN), draw(_TOKEN), draw(_maybe_huge(_TOKEN)),
              str(draw(st.integers(-10**6, 10**9))), repr(score), draw(_TOKEN)]
    kind = draw(st.sampled_from(["good"] * 5 + ["width", "rank", "score", "utf8"]))
    reasons, field, expected = (), None, None
    if kind == "good":
      score = float(score)
      expected = Candidate(values[5], values[0], None, values[2], None, int(values[3]),
                           score if math.isfinite(score) else None, "", 0)
    elif kind == "width":
      values = values[:draw(st.integers(1, 5))] if draw(st.booleans()) else (
          values + draw(st.lists(_TOKEN, min_size=1, max_size=2)))
      reasons = ("malformed_trec",)
    elif kind == "rank":
      values[3] = draw(st.sampled_from(["1.0", "x", "one", "1e3", "#1"]))
      reasons, field = ("wrong_type",), "rank"
    elif kind == "score":
      values[4] = draw(st.sampled_from(["high", "1,5", "x1", "0x1p3"]))
      reasons, field = ("wrong_type",), "score"
    else:
      at = draw(st.integers(0, len(values) - 1))
      values[at] += _INVALID_BYTE_MARK
      reasons = ("non_utf8",)
    line = draw(_SPACES).join(values)
    if draw(st.integers(0, 3)) == 0:
      line = draw(_SPACES) + line + draw(_SPACES)
    records.append(Record(_encode(line + ending), expected, reasons, field))
  return _assemble_text(draw, "run.trec", "", records,
                        blank=lambda: draw(st.sampled_from(["", " ", "\t"])) + ending)


@st.composite
def topic_files(draw):
  ending = draw(_LINE_ENDINGS)
  records, qids = [], []
  for _ in range(draw(st.integers(0, 10))):
    qid = draw(_ONE_LINE.map(lambda t: t.replace("\t", "").lstrip("\ufeff"))
               .filter(str.strip))
    question = draw(_maybe_huge(_ONE_LINE.filter(str.strip)))
    kinds = ["good"] * 5 + ["tab", "qid", "question", "utf8"] + (
        ["duplicate"] if qids else [])
    kind = draw(st.sampled_from(kinds))
    reasons, field, expected = (), None, None
    if kind == "good":
      if qid.strip() in qids:
        kind, reasons, field = "duplicate", ("duplicate_topic",), "qid"
      else:
        qids.append(qid.strip())
        expected = Topic(qid.strip(), question.strip(), "", 0)
    elif kind == "duplicate":
      qid = draw(_SPACES.map(lambda s: s.replace("\t", ""))) + draw(st.sampled_from(qids))
      reasons, field = ("duplicate_topic",), "qid"
    elif kind == "tab":
      reasons, field = ("malformed_topic",), "qid"
    elif kind == "qid":
      qid = draw(st.sampled_from(["", " ", "\u3000"]))
      reasons, field = ("malformed_topic",), "qid"
    elif kind == "question":
      question = draw(st.sampled_from(["", " ", "\t\t", "\u00a0"]))
      reasons, field = ("empty_question",), "question"
    else:
      question += _INVALID_BYTE_MARK
      reasons = ("non_utf8",)
    line = qid if kind == "tab" else qid + "\t" + question
    records.append(Record(_encode(line + ending), expected, reasons, field))
  return _assemble_text(draw, "topics.tsv", "", records,
                        blank=lambda: draw(st.sampled_from(["", " ", "\t"])) + ending)


def _candidate_entry(draw, index):
  """(entry, its (passage_id, passage, rank, score) or None, reasons, field)."""
  rank = draw(st.integers(-2**40, 2**40))
  score = draw(st.one_of(st.none(), st.integers(-2**60, 2**60),
                         st.floats(allow_nan=False)))
  entry = {"rank": rank}
  if score is not None or draw(st.booleans()):
    entry["score"] = score
  by_id = draw(st.booleans())
  if by_id:
    entry["id"] = draw(_maybe_huge(_TEXT.filter(str.strip)))
    if draw(st.integers(0, 4)) == 0:
      entry["passage"] = draw(_TEXT)  # an id wins over a passage
  else:
    entry["passage"] = draw(_maybe_huge(_TEXT.filter(str.strip)))
  field = f"candidates[{index}]"
  kind = draw(st.sampled_from(["good"] * 4 + ["entry", "rank", "score", "text"]))
  if kind == "entry":
    return draw(st.sampled_from([None, "d1", 3, ["d1"]])), None, ("wrong_type",), field
  if kind == "rank":
    entry["rank"] = draw(st.sampled_from([None, "1", 1.0, True]))
    if entry["rank"] is None and draw(st.booleans()):
      del entry["rank"]
    return entry, None, ("wrong_type",), field + ".rank"
  if kind == "score":
    entry["score"] = draw(st.sampled_from(["1.0", False, [1]]))
    return entry, None, ("wrong_type",), field + ".score"
  if kind == "text":
    name = "id" if by_id else "passage"
    if draw(st.booleans()):
      entry[name] = draw(st.sampled_from(["", " ", 7, ["x"]]))
      return entry, None, ("wrong_type",), f"{field}.{name}"
    entry[name] += _INVALID_BYTE_MARK  # read as not a usable string
    return entry, None, ("wrong_type", "non_utf8"), f"{field}.{name}"
  score = None if score is None else float(score)
  if by_id:
    return entry, (entry["id"], None, rank, score), (), None
  return entry, (inline_passage_id(entry["passage"]), entry["passage"], rank,
                 score), (), None


# A candidate list's damage: (field, reason, the values that cause it).
_LIST_DAMAGE = [
    ("system_name", "missing_field", [None]),
    ("system_name", "wrong_type", ["", " ", 7, ["s"]]),
    ("question", "wrong_type", ["", " ", 7, ["q"]]),
    ("query_id", "wrong_type", ["", " ", True, 0.5, ["q"]]),
    ("question", "missing_field", []),  # neither question nor query_id
    ("candidates", "missing_field", [None]),
    ("candidates", "wrong_type", [{"id": "d"}, "d1", 3]),
]


@st.composite
def candidate_list_files(draw):
  """JSON Lines of candidate lists: each entry is one record (one item)."""
  ending = draw(_LINE_ENDINGS)
  records = []
  for _ in range(draw(st.integers(0, 8))):
    system = draw(_TEXT.filter(str.strip))
    fields = {"system_name": system}
    question, query_id = None, None
    keys = draw(st.sampled_from([("question",), ("query_id",), ("question", "query_id")]))
    if "question" in keys:
      question = draw(_TEXT.filter(str.strip))
      fields["question"] = question
    if "query_id" in keys:
      query_id = draw(st.one_of(_TEXT.filter(str.strip), st.integers(-2**63, 2**63)))
      fields["query_id"] = query_id
    entries = [_candidate_entry(draw, i) for i in range(draw(st.integers(1, 4)))]
    fields["candidates"] = [entry for entry, _, _, _ in entries]
    for extra in draw(st.lists(st.sampled_from(_EXTRA_COLUMNS), unique=True)):
      fields[extra] = draw(_TEXT)
    kind = draw(st.sampled_from(["good"] * 5 + ["list", "empty", "utf8", "json"]))
    if kind == "good":
      expected_qid = None if query_id is None else (
          str(query_id) if isinstance(query_id, int) else query_id.strip())
      first = True
      for index, (entry, parsed, reasons, field) in enumerate(entries):
        data = _json_line(draw, fields, ending) if first else b""
        if parsed is None:
          record = Record(data, reasons=reasons, field=field, same_line=not first)
        else:
          record = Record(data, Candidate(system.strip(), expected_qid,
                                          question.strip() if question else None,
                                          *parsed, "", 0, index), same_line=not first)
        records.append(record)
        first = False
      continue
    if kind == "list":
      field, reason, values = draw(st.sampled_from(_LIST_DAMAGE))
      if not values:
        fields.pop("question", None)
        fields.pop("query_id", None)
      elif values == [None] and draw(st.booleans()):
        del fields[field]
      else:
        fields[field] = draw(st.sampled_from(values))
      records.append(Record(_json_line(draw, fields, ending), reasons=(reason,),
                            field=field))
    elif kind == "empty":
      fields["candidates"] = []
      records.append(Record(_json_line(draw, fields, ending), reasons=("no_candidates",),
                            field="candidates", kind=UNMATCHED))
    elif kind == "utf8":
      field = draw(st.sampled_from([k for k in ("system_name", "question", "query_id")
                                    if isinstance(fields.get(k), str)]))
      fields[field] += _INVALID_BYTE_MARK
      # Read as not a usable string.
      records.append(Record(_json_line(draw, fields, ending),
                            reasons=("wrong_type", "non_utf8"), field=field))
    else:
      records.append(Record(draw(_broken_json_lines()) + ending.encode(),
                            reasons=("malformed_json", "non_utf8")))
  return _assemble_text(draw, "candidates.jsonl", "", records, blank=lambda: ending)


# ----------------------------------------------------------------------------
# Flat claims (`autoais claims`): one JSON line per claim, {"system_name" (default:
# the file stem), "question", "claim", "evidence"?, "support"?, "answer"?}. The
# claims of one answer (system and question, stripped) are numbered in file
# order and located at the line of the first; an answer abstains from the
# first line whose `answer` abstains on.

_CLAIM_ANSWERS = {"Paris is the capital.": False, "I don't know.": True,
                  "Sorry. The context does not say.": True}
# (field, reasons, the values that cause them; None: the key left out too).
_CLAIM_DAMAGE = [
    ("system_name", ("empty_system_name",), ["", " ", "\u3000"]),
    ("system_name", ("wrong_type",), [None, 7, ["s"]]),
    ("question", ("missing_field",), [None]),
    ("question", ("wrong_type",), ["", " ", 7, ["q"]]),
    ("claim", ("missing_field",), [None]),
    ("claim", ("empty_claim",), ["", " \n "]),
    ("claim", ("wrong_type",), [7, {"c": 1}]),
    ("evidence", ("wrong_type",), ["text", [1], ["a", None], {"a": 1}]),
    ("support", ("wrong_type",), [7, ["Complete"], True]),
    ("support", ("invalid_value",), ["Kinda", "0", "supported"]),
    ("answer", ("wrong_type",), [7, ["a"]]),
]
# ExpertQA's support labels as a file may write them (any case, spaced, N/A,
# empty): read as given, stripped.
_SUPPORT_LABELS = st.sampled_from(["Complete", " partial ", "", "MISSING", "Incomplete",
                                   "n/a", "N/A"])


class _LineOf:
  """The line of a record, known once the file is assembled."""

  def __init__(self, record: Record):
    self.record = record

  def __repr__(self):
    return f"<the line of a record, {self.record.line}>"


@st.composite
def claim_files(draw):
  ending = draw(_LINE_ENDINGS)
  stem = "claims"
  answers = {}  # (system, question) -> [its first Record, claims so far, abstained]
  records = []
  for _ in range(draw(st.integers(0, 10))):
    fields = {}
    system = draw(st.one_of(st.none(), st.sampled_from(["a", " a ", "b"]),
                            _TEXT.filter(str.strip)))
    if system is not None:
      fields["system_name"] = system
    fields["question"] = draw(st.one_of(st.sampled_from(["Q1", " Q1 ", "Q2"]),
                                        _maybe_huge(_TEXT.filter(str.strip))))
    fields["claim"] = draw(_maybe_huge(_TEXT.filter(str.strip)))
    for name, values in (("evidence", st.lists(_TEXT, max_size=3)),
                         ("support", _SUPPORT_LABELS),
                         ("answer", st.sampled_from(sorted(_CLAIM_ANSWERS)))):
      value = draw(st.none() | values)
      if value is not None or draw(st.booleans()):
        fields[name] = value
    for extra in draw(st.lists(st.sampled_from(_EXTRA_COLUMNS), unique=True)):
      fields[extra] = draw(_TEXT)
    kind = draw(st.sampled_from(["good"] * 5 + ["value", "utf8", "json"]))
    if kind == "good":
      record = Record(_json_line(draw, fields, ending))
      key = ((system if system is not None else stem).strip(), fields["question"].strip())
      first, index, abstained = answers.setdefault(key, [_LineOf(record), 0, False])
      abstained = abstained or _CLAIM_ANSWERS.get(fields.get("answer"), False)
      support = (fields.get("support") or "").strip() or None
      record.expected = ClaimInput(key[0], key[1], index, fields["claim"],
                                   fields.get("evidence") or [], support, abstained,
                                   first, "", 0)
      answers[key][1:] = [index + 1, abstained]
      records.append(record)
      continue
    if kind == "value":
      field, reasons, values = draw(st.sampled_from(_CLAIM_DAMAGE))
      value = draw(st.sampled_from(values))
      if value is None and field != "system_name" and draw(st.booleans()):
        fields.pop(field, None)
      else:
        fields[field] = value
    elif kind == "utf8":
      field = draw(st.sampled_from(["system_name", "question", "claim", "evidence",
                                    "support", "answer"]))
      if field == "evidence":
        fields["evidence"] = (fields.get("evidence") or []) + [_INVALID_BYTE_MARK]
        field = f"evidence[{len(fields['evidence']) - 1}]"
      else:
        fields[field] = (fields.get(field) or "x") + _INVALID_BYTE_MARK
      reasons = ("non_utf8",)
    else:
      records.append(Record(draw(_broken_json_lines()) + ending.encode(),
                            reasons=("malformed_json", "non_utf8")))
      continue
    records.append(Record(_json_line(draw, fields, ending), reasons=reasons, field=field))
  return _assemble_text(draw, f"{stem}.jsonl", "", records, blank=lambda: ending)


# ----------------------------------------------------------------------------
# ExpertQA records (`autoais claims --format expertqa`): one JSON line per
# question, {"question", "answers": {system: {"answer_string", "claims":
# [{"claim_string", "evidence"?, "support"?}]}}}. Each claim is one item, the
# answers in sorted system order, all located at the question's line; a line
# whose question or answers are unusable is one dead letter, an answer that is
# unusable or has no claims one dead letter.

# (field, reasons, values; None: the key left out too).
_EXPERTQA_LINE_DAMAGE = [
    ("question", ("missing_field",), [None]),
    ("question", ("wrong_type",), ["", " ", 7, ["q"]]),
    ("answers", ("missing_field",), [None]),
    ("answers", ("wrong_type",), [{}, [], "a", 7]),
]
_EXPERTQA_ANSWER_DAMAGE = [
    ("", ("wrong_type",), [7, "answer", ["a"]]),
    ("answer_string", ("wrong_type",), [7, ["a"]]),
    ("claims", ("missing_field",), [None]),
    ("claims", ("wrong_type",), ["claim", {"claim_string": "c"}, 7]),
]
_EXPERTQA_CLAIM_DAMAGE = [
    ("", ("wrong_type",), [None, "claim", 7]),
    ("claim_string", ("missing_field",), [None]),
    ("claim_string", ("empty_claim",), ["", " \n "]),
    ("claim_string", ("wrong_type",), [7, {"c": 1}]),
    ("evidence", ("wrong_type",), ["text", [1], ["a", None], {"a": 1}]),
    ("support", ("wrong_type",), [7, ["Complete"], True]),
    ("support", ("invalid_value",), ["Kinda", "0", "supported"]),
]


def _damage(draw, container: dict, choices, default_field: str):
  """Damages one field of `container` (field "": the container itself, which
  the caller replaces with the returned value): (field name, reasons, value)."""
  name, reasons, values = draw(st.sampled_from(choices))
  value = draw(st.sampled_from(values))
  if name and value is None and draw(st.booleans()):
    container.pop(name, None)
  elif name:
    container[name] = value
  return (f"{default_field}.{name}" if name else default_field), reasons, value


def _expertqa_claim(draw, field: str):
  """(claim object, its (claim, evidence, support) or None, reasons, field)."""
  claim = {"claim_string": draw(_maybe_huge(_TEXT.filter(str.strip)))}
  for name, values in (("evidence", st.lists(_TEXT, max_size=3)),
                       ("support", _SUPPORT_LABELS)):
    value = draw(st.none() | values)
    if value is not None or draw(st.booleans()):
      claim[name] = value
  kind = draw(st.sampled_from(["good"] * 4 + ["value", "utf8"]))
  if kind == "value":
    name, reasons, value = _damage(draw, claim, _EXPERTQA_CLAIM_DAMAGE, field)
    return (value if name == field else claim), None, reasons, name
  if kind == "utf8":
    name = draw(st.sampled_from(["claim_string", "evidence", "support"]))
    if name == "evidence":
      claim["evidence"] = (claim.get("evidence") or []) + [_INVALID_BYTE_MARK]
      name = f"evidence[{len(claim['evidence']) - 1}]"
    else:
      claim[name] = (claim.get(name) or "x") + _INVALID_BYTE_MARK
    return claim, None, ("non_utf8",), f"{field}.{name}"
  support = (claim.get("support") or "").strip() or None
  return claim, (claim["claim_string"], claim.get("evidence") or [], support), (), None


@st.composite
def expertqa_files(draw):
  ending = draw(_LINE_ENDINGS)
  records = []
  for _ in range(draw(st.integers(0, 6))):
    question = draw(st.one_of(st.sampled_from(["Q1", " Q1 "]),
                              _maybe_huge(_TEXT.filter(str.strip))))
    fields = {"question": question, "answers": {}}
    for extra in draw(st.lists(st.sampled_from(_EXTRA_COLUMNS), unique=True)):
      fields[extra] = draw(_TEXT)
    kind = draw(st.sampled_from(["good"] * 5 + ["line", "utf8", "json"]))
    if kind == "json":
      records.append(Record(draw(_broken_json_lines()) + ending.encode(),
                            reasons=("malformed_json", "non_utf8")))
      continue
    if kind == "utf8":
      fields["question"] += _INVALID_BYTE_MARK  # read as not a usable string
      fields["answers"] = {"a": {"claims": [{"claim_string": "c"}]}}
      records.append(Record(_json_line(draw, fields, ending),
                            reasons=("wrong_type", "non_utf8"), field="question"))
      continue
    if kind == "line":
      field, reasons, _ = _damage(draw, fields, _EXPERTQA_LINE_DAMAGE, "")
      records.append(Record(_json_line(draw, fields, ending), reasons=reasons,
                            field=field.lstrip(".")))
      continue
    # (expected ClaimInput pieces or None, reasons, field, kind) per item, in
    # the reader's order: systems sorted, claims in list order.
    items = []
    systems = draw(st.lists(st.sampled_from(["a", " b ", "c", " "]) | _TEXT,
                            min_size=1, max_size=3, unique=True))
    for system in sorted(systems):
      field = f"answers.{system}"
      answer = {"claims": []}
      answer_string = draw(st.none() | st.sampled_from(sorted(_CLAIM_ANSWERS)))
      if answer_string is not None or draw(st.booleans()):
        answer["answer_string"] = answer_string
      if not system.strip():
        fields["answers"][system] = answer
        items.append((None, ("empty_system_name",), field, REJECTED))
        continue
      outcome = draw(st.sampled_from(["good"] * 4 + ["answer", "no_claims"]))
      if outcome == "no_claims":
        fields["answers"][system] = answer
        items.append((None, ("answer_without_claims",), f"{field}.claims", UNMATCHED))
        continue
      if outcome == "answer":
        name, reasons, value = _damage(draw, answer, _EXPERTQA_ANSWER_DAMAGE, field)
        fields["answers"][system] = value if name == field else answer
        items.append((None, reasons, name, REJECTED))
        continue
      abstained = _CLAIM_ANSWERS.get(answer_string, False)
      for index in range(draw(st.integers(1, 3))):
        claim, parsed, reasons, claim_field = _expertqa_claim(
            draw, f"{field}.claims[{index}]")
        answer["claims"].append(claim)
        if parsed is None:
          items.append((None, reasons, claim_field, REJECTED))
        else:
          text, evidence, support = parsed
          items.append(((system.strip(), question.strip(), index, text, evidence,
                         support, abstained), (), None, REJECTED))
      fields["answers"][system] = answer
    data = _json_line(draw, fields, ending)
    first = None
    for expected, reasons, field, dead_kind in items:
      record = Record(b"" if first else data, reasons=reasons, field=field,
                      kind=dead_kind, same_line=first is not None)
      if expected is not None:
        record.expected = ClaimInput(*expected, _LineOf(first or record), "", 0)
      records.append(record)
      first = first or record
  return _assemble_text(draw, "expertqa.jsonl", "", records, blank=lambda: ending)


# ----------------------------------------------------------------------------
# Assembling text files, and the invariant.


def _assemble_text(draw, name: str, header: str, records: List[Record],
                   blank: Callable[[], str], width: int = 0) -> GeneratedFile:
  """Header, then the records with blank lines between some. A record's line is
  counted in the text as assembled: a "\\r" ending followed by a "\\n" is one
  line break, as a reader sees it."""
  parts = [b"\xef\xbb\xbf"] if draw(st.booleans()) else []
  if header:
    parts.append(_encode(header))
  starts = []
  for index, record in enumerate(records):
    if record.same_line:
      record.line = records[index - 1].line
      starts.append(len(b"".join(parts)))
      continue
    if draw(st.integers(0, 3)) == 0:
      parts.append(blank().encode())
    prefix = b"".join(parts)
    record.line = 1 + _line_breaks(prefix.decode("utf-8", "replace"))
    starts.append(len(prefix))
    parts.append(record.data)
  data = b"".join(parts)
  for record, start in zip(records, starts):
    if record.stray_quote:
      assume(not _closes_as_a_record(data[start:], width))
  if draw(st.booleans()):
    name, data = name + ".gz", gzip.compress(data)
  return GeneratedFile(name, records, data)


def _closes_as_a_record(text: bytes, width: int) -> bool:
  """True if CSV reads a record of the header's width from `text` (which starts
  with a stray quote's line): a later quote then closed the stray one and the
  two enclose a legal multi-line field. No reader can call that damage, so the
  generator keeps only stray quotes that CSV itself can tell apart."""
  reader = csv.reader(io.StringIO(text.decode("utf-8", "surrogateescape"), newline=""),
                      strict=True)
  try:
    return len(next(reader)) == width
  except (csv.Error, StopIteration):
    return False


def with_location(element, path: str, line: int):
  """A good record's expected element, placed at its file and line (a claim's
  answer_line, the _LineOf its answer's first claim, at that record's line)."""
  if isinstance(element, ClaimInput):
    element = element._replace(answer_line=element.answer_line.record.line)
  if isinstance(element, (Prediction, CorpusRecord, HumanRating, SckInput, KgStatement,
                          AuditAnswer, Candidate, Topic, ClaimInput)):
    return element._replace(source_file=path, source_line=line)
  return element


def _first_difference(parsed, expected) -> str:
  if len(parsed) != len(expected):
    return f"parsed {len(parsed)} good rows, expected {len(expected)}"
  for index, (got, want) in enumerate(zip(parsed, expected)):
    if got != want:
      fields = [f"{name}: got {_short(a)}, want {_short(b)}"
                for name, a, b in zip(want._fields, got, want) if a != b]
      return f"good row {index}: " + "; ".join(fields)
  return ""


def check_reader(path: str, generated: GeneratedFile, items: list) -> None:
  """The invariant of the module docstring (items: the reader's whole output)."""
  records = generated.records
  assert len(items) == len(records), (
      f"read {len(items)} items from {len(records)} records")
  parsed = [item for item in items if not isinstance(item, DeadLetter)]
  dead = [item for item in items if isinstance(item, DeadLetter)]
  expected = [with_location(r.expected, path, r.line) for r in records if r.good]
  assert parsed == expected, _first_difference(parsed, expected)
  by_line, damaged = {}, {}
  for row in dead:
    by_line.setdefault(row.source_line, []).append(row)
  for record in records:
    if not record.good:
      damaged.setdefault(record.line, []).append(record)
  for line, planted in damaged.items():
    rows = by_line.get(line, [])
    assert len(rows) == len(planted), (
        f"line {line}: {len(rows)} dead letters for {len(planted)} damaged records, "
        f"{rows}")
    for record, row in zip(planted, rows):
      assert row.source_file == path and row.kind == record.kind, (line, row)
      assert row.reason in record.reasons, (line, row.reason, record.reasons)
      if record.field is not None:
        assert row.field == record.field, (line, row.field, record.field)
      assert row.message.startswith(f"{path}:{line}"), row.message
      dead_letter_json(row).encode("utf-8")
