"""Writers shared by the jobs: sorted dead-letter files, single-file outputs, run.json.

Single-file outputs are written by one worker from a singleton element (so they
are written once, after their inputs are complete), to a temporary name first
and then renamed, so a failed job never leaves a half-written file under the
final name. `run.json` is written last and is the mark of a complete run.
"""
import collections
import contextlib
import datetime
import json
import platform
import shutil
import uuid
from typing import Dict

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems

from schemas import DeadLetter, REJECTED, UNMATCHED
from transforms.sorted_runs import SpillSortedRuns, delete_runs, merge_sorted_runs

DEAD_LETTER_KEY = ("source_file", "source_line", "reason", "field", "message")


@contextlib.contextmanager
def atomic_create(path: str):
  """A writable binary file that appears under `path` only once closed without
  error; until then it is a temporary file beside it."""
  temporary = f"{path}.tmp-{uuid.uuid4().hex}"
  sink = FileSystems.create(temporary)
  try:
    yield sink
  except BaseException:
    sink.close()
    FileSystems.delete([temporary])
    raise
  sink.close()
  if FileSystems.exists(path):
    FileSystems.delete([path])
  FileSystems.rename([temporary], [path])


def write_text_atomically(path: str, text: str) -> None:
  with atomic_create(path) as sink:
    sink.write(text.encode("utf-8"))


def delete_tree(path: str) -> None:
  """Deletes a directory (local) or every object under a prefix (gs://)."""
  if FileSystems.get_scheme(path) in (None, "file"):
    shutil.rmtree(path.removeprefix("file://"), ignore_errors=True)
    return
  objects = FileSystems.match([path.rstrip("/") + "/**"])[0].metadata_list
  if objects:
    FileSystems.delete([metadata.path for metadata in objects])


def dead_letter_json(row: DeadLetter) -> str:
  """One dead_letter.jsonl line; the raw record is embedded as JSON when it is."""
  record = row.record
  try:
    parsed = json.loads(record)
    if isinstance(parsed, dict):
      record = parsed
  except ValueError:
    pass
  return json.dumps({
      "source_file": row.source_file,
      "source_line": row.source_line,
      "kind": row.kind,
      "reason": row.reason,
      "field": row.field,
      "message": row.message,
      "record": record,
  }, ensure_ascii=False)


class _WriteDeadLettersFn(beam.DoFn):

  def __init__(self, path: str):
    self._path = path

  def process(self, unused_impulse, run_paths):
    counts = collections.Counter()
    by_reason = collections.Counter()
    runs = [run for _, run in run_paths]

    with atomic_create(self._path) as sink:
      for row in merge_sorted_runs(runs, DeadLetter, DEAD_LETTER_KEY):
        sink.write(dead_letter_json(row).encode("utf-8") + b"\n")
        counts[row.kind] += 1
        by_reason[f"{row.kind}:{row.reason}"] += 1
    delete_runs(runs)
    yield {
        REJECTED: counts[REJECTED],
        UNMATCHED: counts[UNMATCHED],
        "by_reason": dict(sorted(by_reason.items())),
    }


class WriteDeadLetters(beam.PTransform):
  """A tuple of PCollection[DeadLetter] -> one dead_letter.jsonl sorted by (file,
  line, reason); returns a singleton PCollection of counts by kind and reason.

  Each input is spilled where it is produced and only run paths are flattened:
  the FnApiRunner would hold the inputs of a Flatten in memory.
  """

  def __init__(self, path: str, work_dir: str):
    super().__init__()
    self._path = path
    self._work_dir = work_dir

  def expand(self, dead_letter_pcolls):
    run_dir = FileSystems.join(self._work_dir, "dead_letter")
    runs = tuple(
        pcoll | f"SpillDeadLetterRuns{index}" >> SpillSortedRuns(
            run_dir, DeadLetter, DEAD_LETTER_KEY)
        for index, pcoll in enumerate(dead_letter_pcolls)) | "CollectRuns" >> beam.Flatten()
    pipeline = dead_letter_pcolls[0].pipeline
    return (pipeline
            | "StartDeadLetterFile" >> beam.Create([None])
            | "MergeDeadLetterRuns" >> beam.ParDo(
                _WriteDeadLettersFn(self._path), beam.pvalue.AsList(runs)))


class SumCounts(beam.CombineFn):
  """Sums dicts of counts key by key (values may be nested dicts of counts)."""

  def create_accumulator(self):
    return {}

  def add_input(self, accumulator, counts):
    for key, value in counts.items():
      if isinstance(value, dict):
        accumulator[key] = self.add_input(accumulator.get(key, {}), value)
      else:
        accumulator[key] = accumulator.get(key, 0) + value
    return accumulator

  def merge_accumulators(self, accumulators):
    merged = {}
    for accumulator in accumulators:
      self.add_input(merged, accumulator)
    return merged

  def extract_output(self, accumulator):
    return accumulator


def software_versions() -> Dict[str, str]:
  import apache_beam  # pylint: disable=import-outside-toplevel
  import numpy  # pylint: disable=import-outside-toplevel
  import pyarrow  # pylint: disable=import-outside-toplevel
  versions = {
      "python": platform.python_version(),
      "apache_beam": apache_beam.__version__,
      "pyarrow": pyarrow.__version__,
      "numpy": numpy.__version__,
  }
  try:
    from importlib.metadata import version  # pylint: disable=import-outside-toplevel
    versions["autoais_beam"] = version("autoais-beam")
  except Exception:  # pylint: disable=broad-except
    versions["autoais_beam"] = "unknown"
  return versions


def utc_now() -> str:
  return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


class _WriteManifestFn(beam.DoFn):

  def __init__(self, path: str, build_manifest, work_dir: str):
    self._path = path
    self._build_manifest = build_manifest
    self._work_dir = work_dir

  def process(self, unused_impulse, **side_inputs):
    manifest = self._build_manifest(**side_inputs)
    write_text_atomically(self._path, json.dumps(manifest, indent=2, sort_keys=False,
                                                 ensure_ascii=False) + "\n")
    if self._work_dir:
      delete_tree(self._work_dir)
    yield self._path


class WriteManifest(beam.PTransform):
  """Writes a JSON manifest once every side input is complete.

  `build_manifest(**values)` receives each named singleton side input and returns
  the manifest dict. The job's scratch directory is removed afterwards.
  """

  def __init__(self, path: str, build_manifest, side_inputs: Dict[str, object],
               work_dir: str = ""):
    super().__init__()
    self._fn = _WriteManifestFn(path, build_manifest, work_dir)
    self._side_inputs = side_inputs

  def expand(self, pbegin):
    singletons = {name: beam.pvalue.AsSingleton(pcoll)
                  for name, pcoll in self._side_inputs.items()}
    return (pbegin
            | "StartManifest" >> beam.Create([None])
            | "WriteManifestFile" >> beam.ParDo(self._fn, **singletons))


def reconcile(read: int, scored: int, dead: Dict[str, int]) -> Dict[str, object]:
  """The counts block of run.json; raises if a row went missing or was doubled."""
  counts = {
      "read": read,
      "scored": scored,
      REJECTED: dead[REJECTED],
      UNMATCHED: dead[UNMATCHED],
  }
  counts["reconciled"] = read == scored + dead[REJECTED] + dead[UNMATCHED]
  if not counts["reconciled"]:
    raise RuntimeError(f"row counts do not reconcile: {counts}")
  counts["by_reason"] = dead.get("by_reason", {})
  return counts
