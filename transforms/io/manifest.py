"""run.json, the manifest every job writes last: the mark of a complete run.

`WriteManifest` writes it once every side input is complete, then removes the
job's scratch directory; `reconcile` makes the counts block of one input role and
checks it; `SumCounts` sums the count dicts that workers report; and
`versions_and_timings` gives its last entries.
"""
import datetime
import json
import platform
import time
from typing import Dict

import apache_beam as beam

from autoais.schemas import REJECTED, UNMATCHED
from autoais.transforms.io.atomic import delete_tree, write_text_atomically


class SumCounts(beam.CombineFn):
  """Sums dicts of counts key by key (values may be nested dicts of counts);
  keys named largest_* keep their maximum instead."""

  def create_accumulator(self):
    return {}

  def add_input(self, accumulator, counts):
    for key, value in counts.items():
      if isinstance(value, dict):
        accumulator[key] = self.add_input(accumulator.get(key, {}), value)
      elif key.startswith("largest_"):
        accumulator[key] = max(accumulator.get(key, 0), value)
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


def versions_and_timings(started: float, started_at: str) -> dict:
  """The last entries of every job's manifest: software versions, and when the
  run started and ended (`started`: its time.time(), `started_at`: utc_now())."""
  return {"versions": software_versions(),
          "timings": {"started_at": started_at, "finished_at": utc_now(),
                      "wall_seconds": round(time.time() - started, 3)}}


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


def reconcile(read: int, scored: int, dead: Dict[str, object]) -> Dict[str, object]:
  """A counts block of run.json for one input role (`dead`: its entry from
  WriteDeadLetters); raises if a row went missing or was doubled."""
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
