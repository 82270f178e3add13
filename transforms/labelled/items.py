"""What every reader of a labelled set shares: item ids, text fields checked
into values or a DeadLetter naming file, line and field, labels read through a
table, and `unmatched`, the dead letter of a record with no usable label or
nothing to score (counted apart from rejected, bad, records).
"""
from typing import Dict, Iterator, Optional

from autoais.schemas import UNMATCHED, DeadLetter, LabelledItem
from autoais.transforms.io.fields import (clean_text_fields, has_surrogates, json_record,
                                          rejected, surrogate_field)
from autoais.transforms.io.inputs import system_name_from_path


def unmatched(path: str, line: int, reason: str, message: str, record: str,
              field: Optional[str] = None) -> DeadLetter:
  """A record that is well formed but cannot be used (no human label, nothing to
  score): counted apart from rejected (bad) records."""
  location = f"{path}:{line}" + (f": field '{field}'" if field else "")
  return DeadLetter(path, line, UNMATCHED, reason, field, f"{location}: {message}",
                    record)


def default_item_id(path: str, line: int, *parts) -> str:
  """The id of an item whose record has none: file stem, line, then `parts`."""
  return ":".join([system_name_from_path(path), str(line), *map(str, parts)])


def stripped(value: Optional[str]) -> Optional[str]:
  """A text field stripped, None where it is absent or blank."""
  return (value.strip() or None) if value is not None else None


def text_fields(fields, names, required, non_empty, path, line):
  """{name: str or None} of the named fields, or the DeadLetter of the first
  that is missing (of `required`), not a string, not UTF-8, or blank (of
  `non_empty`)."""
  values = clean_text_fields(fields, names, required, path, line)
  if isinstance(values, DeadLetter):
    return values
  for name in non_empty:
    if not values[name].strip():
      return rejected(path, line, "empty_field", "the field is empty",
                      json_record(fields), name)
  return values


def parse_label(values, field: str, labels: Dict[str, bool], fields, path, line):
  """(label as written, attributable) of a label field, or its DeadLetter."""
  label = values[field].strip()
  attributable = labels.get(label.lower())
  if attributable is None:
    return rejected(path, line, "invalid_value",
                    f"{field} must be one of {', '.join(map(repr, labels))} (any "
                    f"case), found {label!r}", json_record(fields), field)
  return label, attributable


def _texts_of(item: LabelledItem) -> str:
  texts = [item.item_id, item.group, item.secondary_group, item.human_label,
           item.question, item.attribution, *item.example,
           *(span.label for span in item.spans)]
  return "".join(text for text in texts if isinstance(text, str))


def parse_records(source, parse) -> Iterator:
  """parse(line, fields) for each record of `source` (sources.records or
  _tsv_records); DeadLetters pass through. An item holding bytes that are not
  UTF-8 where its reader checks no field one by one (a list of passages, a
  nested id) is rejected here, naming the field: it would stop the job where
  the item is digested or written."""
  for record in source:
    if isinstance(record, DeadLetter):
      yield record
      continue
    item = parse(*record)
    if isinstance(item, LabelledItem) and has_surrogates(_texts_of(item)):
      line, fields = record
      item = rejected(item.source_file, line, "non_utf8", "bytes that are not UTF-8",
                      json_record(fields), surrogate_field(fields))
    yield item
