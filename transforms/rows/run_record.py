"""run.json of a job: one frame, the job's own fields inside it, written last.

    class _ClaimsRecord(RunRecord):
      job = "claims"
      def fields(self, read_counts, written, dead, ..., scorer_stats, model_info):
        return {"counts": ..., "inputs": ..., "scorer": self.scorer_fields(...)}

    pipeline | "WriteRunRecord" >> WriteRunRecord(
        output_dir, work_dir, _ClaimsRecord(...),
        dead_letters={"claims": (read.dead_letter, ...)},
        counts={"read_counts": read.counts}, values={"written": ...},
        scorer=plan.scorer, scorer_stats=scored["stats"])

`RunRecord(**side_inputs)` gives {"job", "status", the job's fields in the
order `fields` returns them, the software versions, the start time and
duration}. It is built when the pipeline is, so that the duration counts from
there.

The status is "complete", or "empty_inputs" when a file that rows are read from
yielded none: the job declares those files per input role
(`rows_from(role, counts, flag, files)`: the role's dead letters, the name of
the counts side input that holds its ReadRecords counts), and a file none of
whose records outlived the dead letters (or that held none) is listed in
run.json's `empty_inputs` with its counts and main reason. `empty_inputs(path)`
reads that list back from a run.json (the run's exit code 3).
"""
import json
import time
from typing import Any, Dict, List, Mapping, Optional, Sequence

import apache_beam as beam
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems

from autoais.schemas import REJECTED, UNMATCHED
from autoais.transforms.io.dead_letters import WriteDeadLetters
from autoais.transforms.io.manifest import (SumCounts, WriteManifest, utc_now,
                                    versions_and_timings)


COMPLETE = "complete"
EMPTY_INPUTS = "empty_inputs"
# A finished run whose figures crossed a bar the user set (compare's
# --fail_on_regression): exit code 3, like EMPTY_INPUTS.
REGRESSION = "regression"


class RunRecord:
  """Subclasses set `job` and implement `fields(**side_inputs)`, and declare
  the files rows are read from with `rows_from`."""
  job: str

  def __init__(self, scorer: Optional[Dict[str, Any]] = None):
    self._scorer = scorer
    self._started, self._started_at = time.time(), utc_now()
    self._rows_from: Dict[str, tuple] = {}

  def rows_from(self, role: str, counts: str, flag: str, files: Sequence[str]) -> None:
    """Declares `files` (given by `flag`) as files that rows are read from,
    whose dead letters go under `role` and whose ReadRecords counts reach the
    record as the side input `counts`."""
    self._rows_from[role] = (counts, flag, list(files))

  def _empty_inputs(self, side_inputs) -> List[Dict[str, Any]]:
    """The declared files that yielded no row, each with its counts and main
    reason (the commonest, "no_records" where it held none)."""
    empty = []
    for role, (counts, flag, files) in self._rows_from.items():
      if not files:  # an optional input not given
        continue
      read = (side_inputs.get(counts) or {}).get("by_file", {})
      dead = side_inputs["dead"][role].get("by_file", {})
      for path in files:
        file_dead = dead.get(path, {REJECTED: 0, UNMATCHED: 0, "by_reason": {}})
        if read.get(path, 0) > file_dead[REJECTED] + file_dead[UNMATCHED]:
          continue
        reasons = file_dead["by_reason"]
        empty.append({
            "file": path, "flag": flag, "read": read.get(path, 0),
            REJECTED: file_dead[REJECTED], UNMATCHED: file_dead[UNMATCHED],
            "main_reason": (max(sorted(reasons), key=reasons.get) if reasons
                            else "no_records")})
    return empty

  def scorer_fields(self, model_info: dict, scorer_stats: dict) -> Dict[str, Any]:
    """The scorer's description, the model's details and its counters."""
    return dict(self._scorer, **model_info, **scorer_stats)

  def fields(self, **side_inputs) -> Dict[str, Any]:
    raise NotImplementedError

  def __call__(self, **side_inputs) -> Dict[str, Any]:
    empty = self._empty_inputs(side_inputs)
    head = {"job": self.job, "status": EMPTY_INPUTS if empty else COMPLETE}
    if empty:
      head[EMPTY_INPUTS] = empty
    return {**head, **self.fields(**side_inputs),
            **versions_and_timings(self._started, self._started_at)}


def read_run_record(run_json: str) -> Dict[str, Any]:
  """A run.json (local or gs://)."""
  with FileSystems.open(run_json, compression_type=CompressionTypes.UNCOMPRESSED) as f:
    return json.loads(f.read().decode("utf-8"))


def empty_inputs(run_json: str) -> List[Dict[str, Any]]:
  """The `empty_inputs` of a run.json (local or gs://): [] for a complete
  run."""
  record = read_run_record(run_json)
  return record.get(EMPTY_INPUTS, []) if record.get("status") == EMPTY_INPUTS else []


def scorer_side_inputs(pipeline, scorer, stats) -> Dict[str, Any]:
  """The side inputs `RunRecord.scorer_fields` takes: the scorer's counters
  (`stats`, summed) and its model's details."""
  return {"scorer_stats": stats | "SumScorerStats" >> beam.CombineGlobally(SumCounts()),
          "model_info": pipeline | "DescribeScorer" >> scorer.model_info()}


class WriteRunRecord(beam.PTransform):
  """The tail of every job: dead_letter.jsonl, then run.json, written last from
  `record` once every figure it names is complete (the scratch directory
  `work_dir` is removed with it).

  `dead_letters`: {input role: PCollection[DeadLetter] or a tuple of them};
  the record receives their counts per role as `dead`. `counts`: {name: a
  PCollection of count dicts, or a tuple of them}, each summed (SumCounts; an
  empty tuple sums to {}). `values`: {name: a singleton PCollection} passed as
  it is. A name given None (an optional input not given) reaches the record as
  None. With `scorer`, the record also receives `scorer_stats` (summed) and
  `model_info` (scorer_side_inputs). Applied to the pipeline:
  `pipeline | "WriteRunRecord" >> WriteRunRecord(...)`.
  """

  def __init__(self, output_dir: str, work_dir: str, record: RunRecord,
               dead_letters: Mapping[str, Any], counts: Mapping[str, Any] = None,
               values: Mapping[str, Any] = None, scorer=None, scorer_stats=None):
    super().__init__()
    self._output_dir = output_dir
    self._work_dir = work_dir
    self._record = record
    self._dead_letters = dict(dead_letters)
    self._counts = dict(counts or {})
    self._values = dict(values or {})
    self._scorer = scorer
    self._scorer_stats = scorer_stats

  def expand(self, pbegin):
    pipeline = pbegin.pipeline
    side_inputs = {}
    if None in self._counts.values() or None in self._values.values():
      none = pipeline | "NoValue" >> beam.Create([None])
      side_inputs.update((name, none) for name, pcoll in
                         list(self._counts.items()) + list(self._values.items())
                         if pcoll is None)
    for name, pcolls in self._counts.items():
      if pcolls is None:
        continue
      label = name.title().replace("_", "")  # as WriteDeadLetters names its steps
      if isinstance(pcolls, tuple):
        pcolls = (pcolls or (pipeline | f"No{label}" >> beam.Create([{}]),)
                  ) | f"Collect{label}" >> beam.Flatten()
      side_inputs[name] = pcolls | f"Sum{label}" >> beam.CombineGlobally(SumCounts())
    side_inputs.update((name, pcoll) for name, pcoll in self._values.items()
                       if pcoll is not None)
    if self._scorer is not None:
      side_inputs.update(scorer_side_inputs(pipeline, self._scorer, self._scorer_stats))
    side_inputs["dead"] = self._dead_letters | "WriteDeadLetters" >> WriteDeadLetters(
        FileSystems.join(self._output_dir, "dead_letter.jsonl"), self._work_dir)
    return pbegin | "WriteRunManifest" >> WriteManifest(
        FileSystems.join(self._output_dir, "run.json"), self._record, side_inputs,
        work_dir=self._work_dir)
