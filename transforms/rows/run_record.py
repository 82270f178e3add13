"""run.json, the record every job writes last (the mark of a complete run): one
frame, the job's own fields inside it.

    class _ClaimsRecord(RunRecord):
      job = "claims"
      summed = ("read_counts",)           # count dicts, summed
      values = ("written", "summary")      # singletons, as they are
      def fields(self, read_counts, written, summary, dead, scorer_stats, model_info):
        return {"counts": ..., "inputs": ..., "scorer": self.scorer_fields(...)}

    _ = ({"dead": {"claims": (read.dead_letter, ...)}, "read_counts": read.counts,
          "written": ..., "summary": ..., "scorer_stats": scored["stats"]}
         | "WriteRunRecord" >> WriteRunRecord(output_dir, work_dir, _ClaimsRecord(...),
                                              scorer=plan.scorer))

A record type declares what it receives (`summed`, `values`; always `dead`, the
dead letters' counts per input role; with a scorer, `scorer_stats` and
`model_info`), and WriteRunRecord checks the dict it is given, and the
parameters of the type's `fields`, against that declaration when the pipeline
is built: a name missing, extra or misspelt is a TypeError there, not on a
worker at the end of a run.

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

`WriteManifest` writes a JSON file once its side inputs are complete (run.json
here, corpus.json for build-corpus), then removes the job's scratch directory;
`reconcile` makes the counts block of one input role and checks it;
`versions_and_timings` gives run.json's last entries.
"""
import datetime
import inspect
import json
import platform
import time
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

import apache_beam as beam
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems

from autoais.schemas import REJECTED, UNMATCHED
from autoais.transforms.io.atomic import delete_tree, write_text_atomically
from autoais.transforms.io.counts import SumCounts
from autoais.transforms.io.dead_letters import WriteDeadLetters


COMPLETE = "complete"
EMPTY_INPUTS = "empty_inputs"
# A finished run whose figures crossed a bar the user set (compare's
# --fail_on_regression): exit code 3, like EMPTY_INPUTS.
REGRESSION = "regression"


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


class RunRecord:
  """Subclasses set `job`, declare what they receive (`summed`: names of count
  dicts, summed; `values`: names of singletons, as they are) and implement
  `fields(**side_inputs)`; they declare the files rows are read from with
  `rows_from`."""
  job: str
  summed: Tuple[str, ...] = ()
  values: Tuple[str, ...] = ()

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
      left_out = (side_inputs.get(counts) or {}).get("left_out", {})
      dead = side_inputs["dead"][role].get("by_file", {})
      for path in files:
        file_dead = dead.get(path, {REJECTED: 0, UNMATCHED: 0, "by_reason": {}})
        file_left_out = left_out.get(path, {})
        if read.get(path, 0) > (file_dead[REJECTED] + file_dead[UNMATCHED] +
                                sum(file_left_out.values())):
          continue
        # Records a reader left out (input_records.LeftOut) count as reasons too.
        reasons = dict(file_dead["by_reason"], **{f"left_out:{reason}": n for reason, n
                                                   in file_left_out.items()})
        entry = {
            "file": path, "flag": flag, "read": read.get(path, 0),
            REJECTED: file_dead[REJECTED], UNMATCHED: file_dead[UNMATCHED],
            "main_reason": (max(sorted(reasons), key=reasons.get) if reasons
                            else "no_records")}
        if file_left_out:
          entry["left_out"] = sum(file_left_out.values())
        empty.append(entry)
    return empty

  def scorer_fields(self, model_info: dict, scorer_stats: dict) -> Dict[str, Any]:
    """The scorer's description, the model's details and its counters."""
    return dict(self._scorer, **model_info, **scorer_stats)

  def fields(self, **side_inputs) -> Dict[str, Any]:
    raise NotImplementedError

  def check_inputs(self, inputs: Mapping[str, Any], scored: bool) -> None:
    """Raises TypeError, while the pipeline is built, where the dict given to
    WriteRunRecord or the parameters of `fields` differ from what the
    record's type declares."""
    kind = type(self).__name__
    declared = {"dead", *self.summed, *self.values} | ({"scorer_stats"} if scored else set())
    if set(inputs) != declared:
      raise TypeError(
          f"WriteRunRecord({kind}): given {sorted(set(inputs) - declared)} that {kind} does "
          f"not declare, and not given {sorted(declared - set(inputs))} that it declares")
    received = declared | ({"model_info"} if scored else set())
    signature = inspect.signature(self.fields)
    try:
      signature.bind(**dict.fromkeys(received))
    except TypeError as error:
      raise TypeError(f"{kind}.fields{signature} does not take what {kind} declares, "
                      f"{sorted(received)}: {error}") from None
    unknown = sorted(name for name, parameter in signature.parameters.items()
                     if name not in received and parameter.kind not in (
                         parameter.VAR_KEYWORD, parameter.VAR_POSITIONAL))
    if unknown:
      raise TypeError(f"{kind}.fields takes {unknown}, which {kind} does not declare")
    # The counts that rows_from names are how empty inputs are found.
    undeclared = sorted(counts for counts, _, _ in self._rows_from.values()
                        if counts not in self.summed)
    if undeclared:
      raise TypeError(f"{kind}.rows_from names counts {undeclared} that {kind} does not "
                      "declare in `summed`")

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

  Applied to a dict of PCollections, as CoGroupByKey is: `dead`, {input role:
  PCollection[DeadLetter] or a tuple of them} (the record receives their counts
  per role as `dead`); each name of `record.summed`, a PCollection of count
  dicts or a tuple of them, summed (SumCounts; an empty tuple sums to {}); each
  name of `record.values`, a singleton PCollection passed as it is. A name
  given None (an optional input not given) reaches the record as None. With
  `scorer`, the dict also holds `scorer_stats` (summed) and the record
  receives `model_info` too (scorer_side_inputs). The dict's names and the
  record's `fields` are checked against the record's declaration here, when
  the pipeline is built (`RunRecord.check_inputs`).
  """

  def __init__(self, output_dir: str, work_dir: str, record: RunRecord, scorer=None):
    super().__init__()
    self._output_dir = output_dir
    self._work_dir = work_dir
    self._record = record
    self._scorer = scorer

  def _extract_input_pvalues(self, pvalueish):
    # A name given None is an input not given: it reaches the record as None.
    pvalueish, pvalues = super()._extract_input_pvalues(pvalueish)
    return pvalueish, {tag: value for tag, value in pvalues.items() if value is not None}

  def expand(self, inputs):
    record = self._record
    record.check_inputs(inputs, self._scorer is not None)
    pipeline = _pipeline_of(inputs)
    summed = {name: inputs[name] for name in record.summed}
    values = {name: inputs[name] for name in record.values}
    side_inputs = {}
    if None in summed.values() or None in values.values():
      none = pipeline | "NoValue" >> beam.Create([None])
      side_inputs.update((name, none) for name, pcoll in
                         list(summed.items()) + list(values.items()) if pcoll is None)
    for name, pcolls in summed.items():
      if pcolls is None:
        continue
      label = name.title().replace("_", "")  # as WriteDeadLetters names its steps
      if isinstance(pcolls, tuple):
        pcolls = (pcolls or (pipeline | f"No{label}" >> beam.Create([{}]),)
                  ) | f"Collect{label}" >> beam.Flatten()
      side_inputs[name] = pcolls | f"Sum{label}" >> beam.CombineGlobally(SumCounts())
    side_inputs.update((name, pcoll) for name, pcoll in values.items()
                       if pcoll is not None)
    if self._scorer is not None:
      side_inputs.update(scorer_side_inputs(pipeline, self._scorer, inputs["scorer_stats"]))
    side_inputs["dead"] = dict(inputs["dead"]) | "WriteDeadLetters" >> WriteDeadLetters(
        FileSystems.join(self._output_dir, "dead_letter.jsonl"), self._work_dir)
    return pipeline | "WriteRunManifest" >> WriteManifest(
        FileSystems.join(self._output_dir, "run.json"), record, side_inputs,
        work_dir=self._work_dir)


def _pipeline_of(inputs):
  """The pipeline of the first PCollection in a dict (of tuples, of dicts) of them."""
  pending = [inputs]
  while pending:
    value = pending.pop()
    if isinstance(value, beam.pvalue.PValue):
      return value.pipeline
    if isinstance(value, dict):
      pending.extend(value.values())
    elif isinstance(value, tuple):
      pending.extend(value)
  raise TypeError("WriteRunRecord needs at least one PCollection")
