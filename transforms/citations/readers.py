"""Readers of ALCE result files (`autoais citations`).

    read_alce_document(path, qampari)  ALCE's result file: one JSON object whose
                                       `data` list holds the items (other keys,
                                       such as `args`, are ignored); system =
                                       the file stem
    read_alce_lines(path, qampari)     the JSON Lines variant: one item a line,
                                       system = its `system_name` field or the
                                       file stem
    read_alce_human_eval(path, qampari)
                                       ALCE's human_eval layout, {dataset:
                                       {system file: {question id: item,
                                       "overall_results": ...}}}: system = the
                                       system file's stem

An item: `question`, `output` (strings), `docs` (a list of {title, text} or
{title, sent}; `sent` wins, as in ALCE), and optionally `qa_pairs` (ASQA: a
list of {short_answers: [...]}), `answers` (QAMPARI: a list of alias lists) and
`claims` (ELI5: a list of strings), and human judgements in ALCE's human_eval
format, `sentences`: a list, per sentence of the answer, of
{sentence_recall_score: 0 | 1, citations: [{citation_precision_score: 0 | 1 |
2}, ...]} (other keys of those objects are not read). `qampari` (True / False / None) says whether
the items are QAMPARI answers; None decides by the file name, as ALCE does
("qampari" in it). Each reader yields, per item, a `CitationItem` or a
`DeadLetter` naming the file, the line where the item starts and the field; a
bad item never raises. In a result file whose JSON is broken, the items before
the break are read and the break is one dead letter (nothing after it can be).
"""
import json
import os
from typing import Iterator, List, Optional, Union

from autoais.schemas import CitationItem, DeadLetter
from autoais.transforms.citations.alce import format_document
from autoais.transforms.io.fields import has_surrogates, json_record, raw_record, rejected
from autoais.transforms.io.inputs import UTF8_BOM, open_input, system_name_from_path
from autoais.transforms.io.input_records import JSON_DECODER, RepeatedKey, jsonl_records

_WHITESPACE = " \t\n\r"
# What every item needs (in the JSON Lines variant, checked in the first record
# at launch).
ITEM_FIELDS = ("question", "output", "docs")


class _BadField(Exception):

  def __init__(self, field: str, reason: str, message: str):
    super().__init__(message)
    self.field, self.reason, self.message = field, reason, message


def is_qampari_file(path: str) -> bool:
  """ALCE's rule: a file whose name holds "qampari" holds QAMPARI answers (the
  name only here; ALCE tests the whole path it is given)."""
  return "qampari" in os.path.basename(path)


def _text(value, field: str, required: bool = True) -> Optional[str]:
  if value is None:
    if required:
      raise _BadField(field, "missing_field", "required field is missing")
    return None
  if not isinstance(value, str):
    raise _BadField(field, "wrong_type", f"expected a string, found {type(value).__name__}")
  if has_surrogates(value):
    raise _BadField(field, "non_utf8", "bytes that are not UTF-8")
  return value


def _list(value, field: str) -> list:
  if not isinstance(value, list):
    raise _BadField(field, "wrong_type", f"expected a list, found {type(value).__name__}")
  return value


def _docs(value) -> List[str]:
  docs = []
  for index, doc in enumerate(_list(value, "docs")):
    name = f"docs[{index}]"
    if not isinstance(doc, dict):
      raise _BadField(name, "wrong_type", "a document is an object {title, text}")
    title = _text(doc.get("title"), f"{name}.title")
    if "sent" in doc:
      body = _text(doc.get("sent"), f"{name}.sent")
    else:
      body = _text(doc.get("text"), f"{name}.text")
    docs.append(format_document(title, body))
  return docs


def _string_lists(value, field: str, inner: Optional[str] = None) -> List[List[str]]:
  """A non-empty list of non-empty string lists (`inner`: the key holding each
  list in an object, as qa_pairs' short_answers)."""
  lists = []
  for index, entry in enumerate(_list(value, field)):
    name = f"{field}[{index}]"
    if inner is not None:
      if not isinstance(entry, dict):
        raise _BadField(name, "wrong_type", f"expected an object with {inner!r}")
      entry, name = entry.get(inner), f"{name}.{inner}"
    strings = [_text(text, f"{name}[{k}]") for k, text in enumerate(_list(entry, name))]
    lists.append(strings)
  if not lists:
    raise _BadField(field, "empty_field", "an empty list (ALCE divides by its length)")
  return lists


def _judged_score(judged, name: str, key: str, allowed: range) -> int:
  """`judged[key]` of the judged object at field `name`, one of `allowed`."""
  if not isinstance(judged, dict):
    raise _BadField(name, "wrong_type", f"a judgement is an object {{{key}, ...}}")
  field, value = f"{name}.{key}", judged.get(key)
  if value is None:
    raise _BadField(field, "missing_field", "required field is missing")
  # bool is an int in Python (True == 1), as in ALCE's own checks.
  if isinstance(value, float) and value.is_integer():
    value = int(value)
  if not isinstance(value, int) or value not in allowed:
    raise _BadField(field, "invalid_value" if isinstance(value, int) else "wrong_type",
                    f"expected one of {', '.join(map(str, allowed))}, found {value!r}")
  return int(value)


def _human_judgements(value):
  """(per sentence recall score, per sentence the citation precision scores)
  of `sentences`, or (None, None) without it."""
  if value is None:
    return None, None
  recall, citations = [], []
  for index, sentence in enumerate(_list(value, "sentences")):
    name = f"sentences[{index}]"
    recall.append(_judged_score(sentence, name, "sentence_recall_score", range(2)))
    citations.append([
        _judged_score(citation, f"{name}.citations[{k}]", "citation_precision_score",
                      range(3))
        for k, citation in enumerate(_list(sentence.get("citations", []),
                                           f"{name}.citations"))])
  return recall, citations


def parse_item(fields, system: str, index: int, qampari: bool, path: str,
               line: int) -> Union[CitationItem, DeadLetter]:
  if not isinstance(fields, dict):
    return rejected(path, line, "malformed_item", f"item {index} is not a JSON object",
                    raw_record(json.dumps(fields, ensure_ascii=False, default=str)))
  try:
    question = _text(fields.get("question"), "question")
    output = _text(fields.get("output"), "output")
    docs = _docs(fields.get("docs"))
    qa_pairs = (None if fields.get("qa_pairs") is None else
                _string_lists(fields["qa_pairs"], "qa_pairs", "short_answers"))
    # Only QAMPARI reads `answers` (ASQA's and ELI5's hold other things).
    answers = (_string_lists(fields["answers"], "answers")
               if qampari and fields.get("answers") is not None else None)
    claims = None
    if fields.get("claims") is not None:
      claims = [_text(claim, f"claims[{k}]")
                for k, claim in enumerate(_list(fields["claims"], "claims"))]
      if not claims:
        raise _BadField("claims", "empty_field",
                        "an empty list (ALCE divides by its length)")
    human_recall, human_citations = _human_judgements(fields.get("sentences"))
  except _BadField as bad:
    return rejected(path, line, bad.reason, f"item {index}: {bad.message}",
                    json_record(fields), bad.field)
  return CitationItem(system, question, index, output, docs, qa_pairs, answers, claims,
                      qampari, human_recall, human_citations, path, line)


def read_alce_lines(path: str, qampari: Optional[bool] = None
                    ) -> Iterator[Union[CitationItem, DeadLetter]]:
  default_system = system_name_from_path(path)
  qampari = is_qampari_file(path) if qampari is None else qampari
  index = 0
  for item in jsonl_records(path):
    if isinstance(item, DeadLetter):
      yield item
      continue
    line, fields = item
    system = fields.get("system_name", default_system)
    if not isinstance(system, str) or not system.strip() or has_surrogates(system):
      yield rejected(path, line, "empty_system_name" if isinstance(system, str)
                     else "wrong_type", "the system name is empty or not a string",
                     json_record(fields), "system_name")
      continue
    yield parse_item(fields, system.strip(), index, qampari, path, line)
    index += 1


def _document_text(path: str) -> str:
  """A JSON document's text, BOM dropped, bytes that are not UTF-8 kept as
  surrogates (the readers name them per field)."""
  with open_input(path) as binary:
    raw = binary.read()
  if raw.startswith(UTF8_BOM):
    raw = raw[len(UTF8_BOM):]
  return raw.decode("utf-8", "surrogateescape")


class _Lines:
  """Line numbers of positions in a text."""

  def __init__(self, text: str):
    self._text, self._position, self._line = text, 0, 1

  def at(self, position: int) -> int:
    if position < self._position:
      self._position, self._line = 0, 1
    self._line += self._text.count("\n", self._position, position)
    self._position = position
    return self._line


class _Walker:
  """A cursor over a JSON document: punctuation checked here, values decoded by
  json's own decoder."""

  def __init__(self, text: str):
    self.text, self.position = text, 0
    self._decoder = json.JSONDecoder()

  def _skip(self) -> None:
    text, position = self.text, self.position
    while position < len(text) and text[position] in _WHITESPACE:
      position += 1
    self.position = position

  def at(self, character: str) -> bool:
    self._skip()
    return self.text.startswith(character, self.position)

  def expect(self, characters: str, what: str) -> None:
    self._skip()
    if self.position >= len(self.text) or self.text[self.position] not in characters:
      raise json.JSONDecodeError(f"expected {what}", self.text, self.position)
    self.position += 1

  def start(self) -> int:
    self._skip()
    return self.position

  def value(self):
    """The next value; RepeatedKey (the walker past the value) where an object
    in it gives a key twice."""
    start = self.start()
    try:
      value, self.position = JSON_DECODER.raw_decode(self.text, start)
    except RepeatedKey:
      _, self.position = self._decoder.raw_decode(self.text, start)
      raise
    return value

  def skip(self) -> None:
    """Past the next value, which is not read."""
    _, self.position = self._decoder.raw_decode(self.text, self.start())

  def repeated(self, key: str, seen: set) -> None:
    """A JSONDecodeError where `key` is already among the `seen` keys of the
    object walked: json would keep its last value unseen."""
    if key in seen:
      raise _RepeatedMember(f"the key {key!r} is given twice in one object",
                            self.text, self.position)
    seen.add(key)


class _RepeatedMember(json.JSONDecodeError):
  """A key of the walked document given twice in one object."""


def _repeated_item(path: str, line: int, index: int, error: RepeatedKey, text: str,
                   start: int) -> DeadLetter:
  return rejected(path, line, "repeated_key", f"item {index}: {error}",
                  raw_record(text[start:start + 200]), error.key)


def _broken(error) -> str:
  return "repeated_key" if isinstance(error, _RepeatedMember) else "malformed_json"


def read_alce_document(path: str, qampari: Optional[bool] = None
                       ) -> Iterator[Union[CitationItem, DeadLetter]]:
  """The items of `data`, each located at the line where it starts: the
  document is walked member by member (json's own decoder for each value) so
  that an item's line is known and the items before a break are kept."""
  system = system_name_from_path(path)
  qampari = is_qampari_file(path) if qampari is None else qampari
  text = _document_text(path)
  walker, lines = _Walker(text), _Lines(text)
  found, index, keys = False, 0, set()
  try:
    walker.expect("{", 'a JSON object {"data": [...]}')
    while not walker.at("}"):
      key = walker.value()
      walker.repeated(key, keys)
      walker.expect(":", "':'")
      if key == "data" and walker.at("["):
        found = True
        walker.expect("[", "'['")
        while not walker.at("]"):
          if index:
            walker.expect(",", "',' or ']'")
          start = walker.start()
          line = lines.at(start)
          try:
            yield parse_item(walker.value(), system, index, qampari, path, line)
          except RepeatedKey as repeated:
            yield _repeated_item(path, line, index, repeated, text, start)
          index += 1
        walker.expect("]", "']'")
      else:
        walker.skip()
      if walker.at("}"):
        break
      walker.expect(",", "',' or '}'")
  except (json.JSONDecodeError, RecursionError) as error:
    where = max(getattr(error, "pos", walker.position), walker.position)
    after = f" (after item {index - 1})" if found and index else ""
    yield rejected(path, lines.at(where), _broken(error),
                   f"not a JSON document{after}: {error}",
                   raw_record(text[where:where + 200]), "data" if found else None)
    return
  if not found:
    yield rejected(path, 1, "missing_field", "an ALCE result file holds its items in "
                   "a 'data' list (ALCE's human_eval files: --format human_eval)",
                   raw_record(text[:200]), "data")


# The key of ALCE's human_eval files that holds a system's summary, not an item.
OVERALL_RESULTS = "overall_results"


def read_alce_human_eval(path: str, qampari: Optional[bool] = None
                         ) -> Iterator[Union[CitationItem, DeadLetter]]:
  """The items of ALCE's human_eval layout, {dataset: {system file: {question
  id: item, "overall_results": ...}}}, each located at the line where it
  starts; system = the system file's stem; QAMPARI (qampari None) where the
  file, dataset or system name holds "qampari". Walked as read_alce_document."""
  text = _document_text(path)
  walker, lines = _Walker(text), _Lines(text)
  index = 0
  where = "{dataset: {system: {question id: item}}}"
  try:
    walker.expect("{", f"a JSON object {where}")
    for dataset in _members(walker, where):
      walker.expect("{", f"dataset {dataset!r}: an object {{system: ...}}")
      for system_file in _members(walker, where):
        walker.expect("{", f"system {system_file!r}: an object {{question id: item}}")
        system = system_name_from_path(system_file)
        is_qampari = qampari
        if is_qampari is None:
          is_qampari = any("qampari" in name for name in (
              os.path.basename(path), str(dataset), system_file))
        for key in _members(walker, where):
          if key == OVERALL_RESULTS:
            walker.skip()
            continue
          start = walker.start()
          line = lines.at(start)
          try:
            fields = walker.value()
          except RepeatedKey as repeated:
            yield _repeated_item(path, line, index, repeated, text, start)
            index += 1
            continue
          if not system.strip() or has_surrogates(system):
            yield rejected(path, line, "empty_system_name", f"item {index}: the system "
                           f"key {system_file!r} names no system", json_record(fields))
          else:
            yield parse_item(fields, system.strip(), index, is_qampari, path, line)
          index += 1
  except (json.JSONDecodeError, RecursionError) as error:
    at = max(getattr(error, "pos", walker.position), walker.position)
    after = f" (after item {index - 1})" if index else ""
    yield rejected(path, lines.at(at), _broken(error),
                   f"not ALCE's human_eval layout {where}{after}: {error}",
                   raw_record(text[at:at + 200]))


def _members(walker: _Walker, where: str) -> Iterator[str]:
  """The keys of the object the walker has just entered, the walker left at
  each key's value (which the caller reads); consumes the closing brace."""
  first, keys = True, set()
  while not walker.at("}"):
    if not first:
      walker.expect(",", "',' or '}'")
    first = False
    key = walker.value()
    if not isinstance(key, str):
      raise json.JSONDecodeError(f"expected a key of {where}", walker.text,
                                 walker.position)
    walker.repeated(key, keys)
    walker.expect(":", "':'")
    yield key
  walker.expect("}", "'}'")
