"""Progress of a long run: Beam metrics counters, and a console line for local runs.

    progress.count("rows_scored", n)      # inside a DoFn or a ModelHandler

Every count is a Beam metrics counter in the namespace "autoais" (Dataflow shows
them on the job page, under the steps that count them). On a local run, where
the FnApiRunner reports metrics only when the pipeline ends, `run_job` also
starts a `ConsoleProgress` reporter: each process that counts (the launching
process, and each worker process of `--direct_running_mode=multi_processing`)
writes its running totals to a small JSON file in a directory named by the
environment variable AUTOAIS_PROGRESS_DIR, at most once a second, and the
reporter prints their sum at a steady interval: rows and model examples done,
their rates, and an estimate of the time left for the model's work (known once
the distinct examples are queued for the model, which on the FnApiRunner
happens before the model stage starts).

The counters:
  rows_to_score   rows handed to the scorer (with or without a passage)
  rows_scored     rows that came back with a score
  model_queued    distinct examples queued for the model (cache misses)
  model_examples  examples the model scored
  cache_hits      distinct examples answered from the score cache
  dead_lettered   rows written to dead_letter.jsonl
"""
import json
import os
import sys
import threading
import time
from typing import Dict, Optional

from apache_beam.metrics import Metrics

NAMESPACE = "autoais"
COUNTERS = ("rows_to_score", "rows_scored", "model_queued", "model_examples",
            "cache_hits", "dead_lettered")
PROGRESS_DIR_ENV = "AUTOAIS_PROGRESS_DIR"
_FLUSH_SECONDS = 1.0

_counters = {name: Metrics.counter(NAMESPACE, name) for name in COUNTERS}


class _LocalTotals:
  """This process's totals, written to the progress directory at most once a
  second and at the end of each bundle."""

  def __init__(self):
    self._lock = threading.Lock()
    self._totals: Dict[str, int] = {}  # of the current progress directory
    self._unwritten: Dict[str, int] = {}
    self._written = time.monotonic()
    self._directory: Optional[str] = None

  def add(self, name: str, n: int) -> None:
    with self._lock:
      self._unwritten[name] = self._unwritten.get(name, 0) + n
      if time.monotonic() - self._written >= _FLUSH_SECONDS:
        self._write()

  def flush(self) -> None:
    with self._lock:
      self._write()

  def _write(self) -> None:
    self._written = time.monotonic()
    directory = os.environ.get(PROGRESS_DIR_ENV)
    if directory != self._directory:  # a new run in this process
      self._directory, self._totals = directory, {}
    for name, n in self._unwritten.items():
      self._totals[name] = self._totals.get(name, 0) + n
    self._unwritten = {}
    if not directory:
      return
    path = os.path.join(directory, f"{os.getpid()}.json")
    temporary = f"{path}.tmp"
    try:
      with open(temporary, "w", encoding="utf-8") as f:
        json.dump(self._totals, f)
      os.replace(temporary, path)
    except OSError:
      pass  # progress is best effort: never fail a run over it


_local = _LocalTotals()


def count(name: str, n: int = 1) -> None:
  """Adds n to a progress counter (see the module docstring); call it from a
  DoFn (or a ModelHandler) of the step that did the work. Per-row steps count
  through a Tally."""
  if n:
    _counters[name].inc(n)
    _local.add(name, n)


def flush() -> None:
  """Writes this process's totals now (call it at the end of a bundle)."""
  _local.flush()


class Tally:
  """A per-row counter of one DoFn: counts in steps of `every` rows, so that a
  row costs an addition; call flush() in finish_bundle."""

  def __init__(self, name: str, every: int = 256):
    self._name = name
    self._every = every
    self._pending = 0

  def add(self, n: int = 1) -> None:
    self._pending += n
    if self._pending >= self._every:
      count(self._name, self._pending)
      self._pending = 0

  def flush(self) -> None:
    count(self._name, self._pending)
    self._pending = 0
    flush()


def read_totals(directory: str) -> Dict[str, int]:
  """The sum of every process's totals in a progress directory."""
  totals: Dict[str, int] = {}
  try:
    names = os.listdir(directory)
  except OSError:
    return totals
  for name in names:
    if not name.endswith(".json"):
      continue
    try:
      with open(os.path.join(directory, name), encoding="utf-8") as f:
        for key, value in json.load(f).items():
          totals[key] = totals.get(key, 0) + int(value)
    except (OSError, ValueError):
      continue  # being replaced right now: next tick
  return totals


def _duration(seconds: float) -> str:
  seconds = int(round(seconds))
  hours, rest = divmod(seconds, 3600)
  minutes, seconds = divmod(rest, 60)
  if hours:
    return f"{hours}h{minutes:02d}m"
  return f"{minutes}m{seconds:02d}s" if minutes else f"{seconds}s"


def progress_line(job: str, totals: Dict[str, int], elapsed: float,
                  model_rate: Optional[float]) -> str:
  """One console line: rows and model examples done, rates, time left."""
  parts = [f"{job}: {_duration(elapsed)}"]
  if "rows_to_score" in totals or "rows_scored" in totals:
    # Of the rows that reached the scorer, not of those read: rows rejected or
    # not in gold never reach it, and run.json reconciles every row read.
    scored = totals.get("rows_scored", 0)
    parts.append(f"rows {scored:,} scored of {totals.get('rows_to_score', 0):,} "
                 "at the scorer")
    if elapsed > 0:
      parts[-1] += f" ({scored / elapsed:,.0f}/s)"
  queued = totals.get("model_queued", 0)
  done = totals.get("model_examples", 0)
  if queued or done:
    model = f"model {done:,} of {queued:,} examples"
    if model_rate:
      model += f" ({model_rate:,.1f}/s"
      if queued > done:
        model += f", ETA {_duration((queued - done) / model_rate)}"
      model += ")"
    parts.append(model)
  for name in ("cache_hits", "dead_lettered"):
    if totals.get(name):
      parts.append(f"{name.replace('_', ' ')} {totals[name]:,}")
  if len(parts) == 1:  # nothing has reached a scorer (or the job has none)
    parts.append("running")
  return " | ".join(parts)


class ConsoleProgress:
  """Prints progress_line every `interval` seconds while a local run lasts.

      with ConsoleProgress("evaluate", interval=10):
        pipeline.run().wait_until_finish()
  """

  def __init__(self, job: str, interval: float, stream=None, directory: str = ""):
    self._job = job
    self._interval = interval
    self._stream = stream or sys.stderr
    self._directory = directory
    self._stop = threading.Event()
    self._thread = None
    self._previous_env = None

  def __enter__(self):
    self._previous_env = os.environ.get(PROGRESS_DIR_ENV)
    os.makedirs(self._directory, exist_ok=True)
    os.environ[PROGRESS_DIR_ENV] = self._directory
    self._started = time.monotonic()
    self._thread = threading.Thread(target=self._report, name="autoais-progress",
                                    daemon=True)
    self._thread.start()
    return self

  def __exit__(self, *unused_exc):
    self._stop.set()
    self._thread.join()
    if self._previous_env is None:
      os.environ.pop(PROGRESS_DIR_ENV, None)
    else:
      os.environ[PROGRESS_DIR_ENV] = self._previous_env
    return False

  def _report(self) -> None:
    # The model's rate over the last interval: the first model stage includes
    # loading the model, so a rate since the start would understate it.
    last_done, last_time = 0, self._started
    while not self._stop.wait(self._interval):
      now = time.monotonic()
      totals = read_totals(self._directory)
      done = totals.get("model_examples", 0)
      rate = (done - last_done) / (now - last_time) if done > last_done else None
      last_done, last_time = done, now
      print(progress_line(self._job, totals, now - self._started, rate),
            file=self._stream, flush=True)
