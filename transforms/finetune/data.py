"""The training-data outputs `autoais finetune --train` reads: each
directory's run.json (its family) and its train / validation / test tables,
checked before anything trains (InputError, exit 2, naming the file) and
described for the model card (sizes, labels, sha256 of every file read).
"""
import hashlib
import json
import os
from typing import Dict, List, NamedTuple, Sequence, Tuple

import pyarrow.parquet as pq

from autoais.schemas import SPLITS
from autoais.schemas.errors import InputError

_COLUMNS = ("premise", "hypothesis", "label", "source")


class Example(NamedTuple):
  premise: str
  hypothesis: str
  label: int
  source: str


class TrainingData(NamedTuple):
  splits: Dict[str, List[Example]]  # every directory's rows, directory by directory
  described: List[dict]  # per directory: its files, digests and sizes


def _sha256(path: str) -> str:
  digest = hashlib.sha256()
  with open(path, "rb") as f:
    for block in iter(lambda: f.read(1 << 20), b""):
      digest.update(block)
  return digest.hexdigest()


def _balance(rows: Sequence[Example]) -> Dict[str, int]:
  positive = sum(row.label for row in rows)
  return {"examples": len(rows), "positive": positive, "negative": len(rows) - positive}


def read_training_data(directories: Sequence[str], family: str) -> TrainingData:
  splits = {split: [] for split in SPLITS}
  described = []
  for directory in directories:
    record_path = os.path.join(directory, "run.json")
    try:
      with open(record_path, encoding="utf-8") as f:
        record = json.load(f)
    except (OSError, ValueError) as error:
      raise InputError(f"--train {record_path}: not the run.json of an `autoais "
                       f"training-data` output ({error})") from error
    if record.get("job") != "training-data" or record.get("status") not in (
        "complete", "empty_inputs"):
      raise InputError(f"--train {record_path}: not the run.json of a complete "
                       "`autoais training-data` run")
    data_family = record.get("settings", {}).get("family")
    if data_family != family:
      raise InputError(f"--train {record_path}: examples of family {data_family!r}, "
                       f"not --family {family} (rerun training-data with --family "
                       f"{family})")
    files = {"run.json": {"sha256": _sha256(record_path)}}
    for split in SPLITS:
      path = os.path.join(directory, f"{split}.parquet")
      try:
        table = pq.read_table(path, columns=list(_COLUMNS))
      except Exception as error:  # pylint: disable=broad-except
        raise InputError(f"--train {path}: cannot be read as a training-data split "
                         f"({error})") from error
      rows = [Example(*values) for values in zip(*(table.column(name).to_pylist()
                                                   for name in _COLUMNS))]
      bad = [row for row in rows if row.label not in (0, 1)]
      if bad:
        raise InputError(f"--train {path}: label {bad[0].label!r}: labels are 1 or 0")
      splits[split].extend(rows)
      files[f"{split}.parquet"] = dict(_balance(rows), sha256=_sha256(path))
    described.append({"directory": directory,
                      "task_name": record.get("settings", {}).get("task_name"),
                      "files": files})
  return TrainingData(splits, described)


def check_trainable(data: TrainingData, directories: Sequence[str]) -> None:
  """Refuses data nothing can be learnt or chosen from: an empty train or
  validation split, or one holding a single class."""
  where = ", ".join(os.path.join(d, "{split}.parquet") for d in directories)
  for split in ("train", "validation"):
    rows = data.splits[split]
    files = where.format(split=split)
    if not rows:
      raise InputError(f"--train {files}: the {split} split is empty")
    labels = {row.label for row in rows}
    if len(labels) < 2:
      raise InputError(f"--train {files}: the {split} split holds one class only "
                       f"(every label {labels.pop()}): a detector needs both, and "
                       "the threshold is calibrated on the validation split")


def split_sizes(data: TrainingData) -> Dict[str, Dict[str, int]]:
  return {split: _balance(rows) for split, rows in data.splits.items()}


def pairs(rows: Sequence[Example]) -> List[Tuple[str, str]]:
  return [(row.premise, row.hypothesis) for row in rows]
