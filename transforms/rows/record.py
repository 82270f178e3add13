"""run.json of a job: one frame, the job's own fields inside it.

    class _ClaimsRecord(RunRecord):
      job = "claims"
      def fields(self, read_counts, written, ...):
        return {"counts": ..., "inputs": ..., "scorer": self.scorer_fields(...)}

    pipeline | "WriteRunManifest" >> WriteManifest(path, _ClaimsRecord(...), {...})

`RunRecord(**side_inputs)` gives {"job", "status": "complete", the job's
fields in the order `fields` returns them, the software versions, the start
time and duration}. It is built when the pipeline is, so that the duration
counts from there.
"""
import time
from typing import Any, Dict, Optional

import apache_beam as beam

from transforms.io.manifest import SumCounts, utc_now, versions_and_timings


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
