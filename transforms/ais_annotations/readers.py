"""The reader of `autoais ais-annotations` inputs: the AIS release's consensus
files (CSV, or JSON Lines / Parquet with the same columns), one data set per
file, named by the file (`dataset_of`). Each row is one model output: an
AisAnnotation, or the DeadLetter naming the first field at fault.
"""
from typing import Dict, Iterator, Optional, Union

from autoais.schemas import AisAnnotation, DeadLetter
from autoais.transforms.io.fields import json_record, rejected
from autoais.transforms.io.inputs import check_input_file, system_name_from_path
from autoais.transforms.io.input_records import read_columns, records

MODEL_COLUMN = "model-name"
ID_COLUMN = "ex-idx"
LABEL_COLUMNS = ("Flagged", "INT", "INT & AIS")
AGREEMENT_COLUMNS = ("# agree (INT)", "# agree (AIS)")
REQUIRED_COLUMNS = (MODEL_COLUMN,) + LABEL_COLUMNS + AGREEMENT_COLUMNS
COLUMNS = (ID_COLUMN,) + REQUIRED_COLUMNS


def dataset_of(path: str) -> str:
  """The data set a release file holds: ann_qrecc.csv -> qrecc."""
  stem = system_name_from_path(path)
  return stem[len("ann_"):] if stem.startswith("ann_") and len(stem) > 4 else stem


_BINARY = {"0": False, "1": True}


def _binary(value) -> Optional[bool]:
  if isinstance(value, bool):
    return value
  if isinstance(value, int):
    return {0: False, 1: True}.get(value)
  if isinstance(value, str):
    return _BINARY.get(value.strip())
  return None


_NO_COUNT = object()


def _agreement(value):
  """An agreement count, None for the release's -1 (or an empty cell), or
  _NO_COUNT if the value is not a count."""
  if value is None or (isinstance(value, str) and not value.strip()):
    return None
  if isinstance(value, bool):
    return _NO_COUNT
  if isinstance(value, str):
    try:
      value = int(value.strip())
    except ValueError:
      return _NO_COUNT
  if not isinstance(value, int) or value < -1:
    return _NO_COUNT
  return None if value == -1 else value


def check_annotations_file(path: str) -> None:
  """Raises InputError if a release file cannot be read or lacks a required
  column (in JSON Lines, a field of its first record)."""
  check_input_file(path)
  read_columns(path).require(REQUIRED_COLUMNS)


def parse_annotation(fields: Dict[str, object], path: str, line: int,
                     dataset: str) -> Union[AisAnnotation, DeadLetter]:
  """An AisAnnotation, or the DeadLetter naming the first field at fault."""
  def reject(reason, message, field):
    return rejected(path, line, reason, message, json_record(fields), field)

  for name in REQUIRED_COLUMNS:
    if fields.get(name) is None:
      return reject("missing_field", "required field is missing", name)
  model = fields[MODEL_COLUMN]
  if not isinstance(model, str) or not model.strip():
    return reject("empty_model", "the model name is empty or not text", MODEL_COLUMN)
  labels = {}
  for name in LABEL_COLUMNS:
    labels[name] = _binary(fields[name])
    if labels[name] is None:
      return reject("invalid_value", f"expected 0 or 1, found {fields[name]!r}", name)
  agreements = {}
  for name in AGREEMENT_COLUMNS:
    agreements[name] = _agreement(fields[name])
    if agreements[name] is _NO_COUNT:
      return reject("invalid_value", "expected a count of raters (or -1 for none), "
                    f"found {fields[name]!r}", name)
  flagged, interpretable, attributable = (labels[name] for name in LABEL_COLUMNS)
  if flagged and (interpretable or attributable):
    return reject("inconsistent_labels", "a flagged output cannot be labelled "
                  "interpretable or attributable", "Flagged")
  if attributable and not interpretable:
    return reject("inconsistent_labels", "attributable (INT & AIS = 1) but not "
                  "interpretable (INT = 0)", "INT & AIS")
  example_id = fields.get(ID_COLUMN)
  try:
    model.encode("utf-8")
    example_id = "" if example_id is None else str(example_id).strip()
    example_id.encode("utf-8")
  except UnicodeEncodeError:
    return reject("non_utf8", "bytes that are not UTF-8", MODEL_COLUMN)
  return AisAnnotation(dataset, model.strip(), example_id, flagged, interpretable,
                       attributable, agreements[AGREEMENT_COLUMNS[0]],
                       agreements[AGREEMENT_COLUMNS[1]], path, line)


def read_annotations(path: str) -> Iterator[Union[AisAnnotation, DeadLetter]]:
  dataset = dataset_of(path)
  for item in records(path, COLUMNS):
    if isinstance(item, DeadLetter):
      yield item
    else:
      line, fields = item
      yield parse_annotation(fields, path, line, dataset)
