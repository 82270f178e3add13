"""The fields of an input record, for every reader: text fields checked
(`clean_text_fields`, `system_name_field`), and the `DeadLetter` of a bad record
(`rejected`) naming the file, the line and the field at fault, with the record as
printable text (`raw_record`, `json_record`).
"""
import json
from typing import Dict, Optional, Union

from autoais.schemas import REJECTED, DeadLetter

_MAX_RECORD_CHARS = 65536


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


def _printable_fields(value):
  """_printable of every text of a record, nested lists and objects included:
  escaped before the record is written as JSON, so that it stays JSON."""
  if isinstance(value, dict):
    return {_printable(k): _printable_fields(v) for k, v in value.items()}
  if isinstance(value, list):
    return [_printable_fields(item) for item in value]
  return _printable(value)


def json_record(fields: Dict[str, object]) -> str:
  return raw_record(json.dumps(_printable_fields(fields), ensure_ascii=False,
                               sort_keys=True, default=str))


def has_surrogates(text: str) -> bool:
  try:
    text.encode("utf-8")
    return False
  except UnicodeEncodeError:
    return True


def surrogate_field(value, where: str = "") -> Optional[str]:
  """Where in a record (its fields, nested lists and objects) the first text
  holding bytes that are not UTF-8 lies: "references[2]", "meta.id"; None
  where none does."""
  if isinstance(value, str):
    return where if has_surrogates(value) else None
  if isinstance(value, dict):
    children = ((f"{where}.{key}" if where else str(key), child)
                for key, child in value.items())
  elif isinstance(value, list):
    children = ((f"{where}[{index}]", child) for index, child in enumerate(value))
  else:
    return None
  for name, child in children:
    found = surrogate_field(child, name)
    if found is not None:
      return found
  return None


def rejected(path: str, line: int, reason: str, message: str, record: str,
             field: Optional[str] = None) -> DeadLetter:
  # A field named by the data (an ExpertQA system's key) can hold bytes that
  # are not UTF-8: escaped, or the dead letter could not be written.
  field = _printable(field)
  location = f"{path}:{line}" + (f": field '{field}'" if field else "")
  return DeadLetter(path, line, REJECTED, reason, field,
                    f"{location}: {message}", record)


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
