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

`RunRecord(**side_inputs)` gives {"job", "status": "complete", the job's
fields in the order `fields` returns them, the software versions, the start
time and duration}. It is built when the pipeline is, so that the duration
counts from there.
"""
import time
from typing import Any, Dict, Mapping, Optional

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems

from autoais.transforms.io.dead_letters import WriteDeadLetters
from autoais.transforms.io.manifest import (SumCounts, WriteManifest, utc_now,
                                    versions_and_timings)


class RunRecord:
  """Subclasses set `job` and implement `fields(**side_inputs)`."""
  job: str

  def __init__(self, scorer: Optional[Dict[str, Any]] = None):
    self._scorer = scorer
    self._started, self._started_at = time.time(), utc_now()

  def scorer_fields(self, model_info: dict, scorer_stats: dict) -> Dict[str, Any]:
    """The scorer's description, the model's details and its counters."""
    return dict(self._scorer, **model_info, **scorer_stats)

  def fields(self, **side_inputs) -> Dict[str, Any]:
    raise NotImplementedError

  def __call__(self, **side_inputs) -> Dict[str, Any]:
    return {"job": self.job, "status": "complete", **self.fields(**side_inputs),
            **versions_and_timings(self._started, self._started_at)}


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
