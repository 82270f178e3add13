"""dead_letter.jsonl: every job's rejected and unmatched records in one file,
sorted by (file, line, reason, field, message), with their counts by input role
for run.json (`WriteDeadLetters`); `dead_letter_json` is one line of it.
"""
import collections
import json

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems

from autoais.schemas import DeadLetter, REJECTED, UNMATCHED
from autoais.transforms.io import progress
from autoais.transforms.io.atomic import atomic_create
from autoais.transforms.io.counts import CombineInBundles, MergeAccumulators
from autoais.transforms.io.sorted_runs import SpillSortedRuns, merge_sorted_runs

DEAD_LETTER_KEY = ("source_file", "source_line", "reason", "field", "message")


def dead_letter_json(row: DeadLetter) -> str:
  """One dead_letter.jsonl line; the raw record is embedded as JSON when it is."""
  record = row.record
  try:
    parsed = json.loads(record)
    if isinstance(parsed, dict):
      record = parsed
  except (ValueError, RecursionError):  # not JSON, or nested too deep to decode
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


def write_sorted_jsonl(path: str, run_paths, element_type, key_fields, line) -> int:
  """Writes the rows of sorted runs ((shard, RunSlice) pairs) in key order to
  the JSON Lines file `path`, one `line(row)` each; returns how many. The runs
  are left for the job's scratch directory to take away: were this bundle
  retried after deleting them, the retry would find nothing to merge."""
  runs = [run for _, run in run_paths]
  written = 0
  with atomic_create(path) as sink:
    for row in merge_sorted_runs(runs, element_type, key_fields):
      sink.write(line(row).encode("utf-8") + b"\n")
      written += 1
  return written


class _WriteDeadLettersFn(beam.DoFn):

  def __init__(self, path: str):
    self._path = path

  def process(self, unused_impulse, run_paths, counts):
    written = write_sorted_jsonl(self._path, run_paths, DeadLetter, DEAD_LETTER_KEY,
                                 dead_letter_json)
    progress.count("dead_lettered", written)
    progress.flush()
    # The counts come out once the file is written: run.json waits for them.
    yield counts


class _CountDeadLetters(beam.CombineFn):
  """Dead letters of the input role `role` -> a Counter of (role, file, kind,
  reason); extracted, whatever roles the Counter holds, as {role: {rejected,
  unmatched, by_reason, by_file: {file: {rejected, unmatched, by_reason}}}}
  for each of `roles` (zeros for a role with none), every level sorted."""

  def __init__(self, roles, role=None):
    self._roles = roles
    self._role = role

  def create_accumulator(self):
    return collections.Counter()

  def add_input(self, accumulator, row: DeadLetter):
    accumulator[(self._role, row.source_file, row.kind, row.reason)] += 1
    return accumulator

  def merge_accumulators(self, accumulators):
    merged = collections.Counter()
    for accumulator in accumulators:
      merged.update(accumulator)
    return merged

  def extract_output(self, accumulator):
    totals = {role: collections.Counter() for role in self._roles}
    by_file = {role: collections.defaultdict(collections.Counter) for role in self._roles}
    for (role, source_file, kind, reason), count in accumulator.items():
      totals[role][(kind, reason)] += count
      by_file[role][source_file][(kind, reason)] += count
    output = {}
    for role in sorted(self._roles):
      counts = _kind_and_reason_counts(totals[role])
      counts["by_file"] = {source_file: _kind_and_reason_counts(file_counts)
                           for source_file, file_counts in sorted(by_file[role].items())}
      output[role] = counts
    return output


def _kind_and_reason_counts(counts) -> dict:
  """{rejected, unmatched, by_reason} of a Counter of (kind, reason)."""
  totals = {REJECTED: 0, UNMATCHED: 0}
  by_reason = {}
  for (kind, reason), count in sorted(counts.items()):
    totals[kind] = totals.get(kind, 0) + count
    by_reason[f"{kind}:{reason}"] = count
  return dict(totals, by_reason=by_reason)


class WriteDeadLetters(beam.PTransform):
  """{role: PCollection[DeadLetter] or a tuple of them} -> one dead_letter.jsonl
  sorted by (file, line, reason, field, message); returns a singleton
  PCollection {role: {"rejected": n, "unmatched": m, "by_reason": {...},
  "by_file": {file: {"rejected", "unmatched", "by_reason"}}}} with an entry
  (zeros where none) for every role: each input role ("predictions", "gold",
  ...) reconciles on its own in run.json.

  Each input is spilled where it is produced and only run paths are flattened:
  the FnApiRunner would hold the inputs of a Flatten in memory.
  """

  def __init__(self, path: str, work_dir: str):
    super().__init__()
    self._path = path
    self._work_dir = work_dir

  def expand(self, dead_letters_by_role):
    run_dir = FileSystems.join(self._work_dir, "dead_letter")
    runs, counts = [], []
    roles = sorted(dead_letters_by_role)
    for role, pcolls in sorted(dead_letters_by_role.items()):
      if not isinstance(pcolls, (tuple, list)):
        pcolls = (pcolls,)
      label = role.title().replace("_", "")
      for index, pcoll in enumerate(pcolls):
        runs.append(pcoll | f"SpillDeadLetterRuns{label}{index}" >> SpillSortedRuns(
            run_dir, DeadLetter, DEAD_LETTER_KEY))
        # Counted per bundle where they are made; the Counters meet in one
        # combine, which puts them in order.
        counts.append(pcoll | f"CountDeadLetters{label}{index}" >> CombineInBundles(
            _CountDeadLetters(roles, role)))
    counts = (tuple(counts) | "CollectDeadLetterCounts" >> beam.Flatten()
              | "SumDeadLetterCounts" >> beam.CombineGlobally(
                  MergeAccumulators(_CountDeadLetters(roles))))
    return (runs[0].pipeline
            | "StartDeadLetterFile" >> beam.Create([None])
            | "MergeDeadLetterRuns" >> beam.ParDo(
                _WriteDeadLettersFn(self._path),
                beam.pvalue.AsList(tuple(runs) | "CollectRuns" >> beam.Flatten()),
                beam.pvalue.AsSingleton(counts)))
