"""Test-only fault injection: transient DoFn failures under bundle retries, and
pauses at which a test kills a job (tests/robustness/test_faults.py).

Dataflow retries a failed bundle: it discards the bundle's outputs, throws its
DoFn instances away, and runs the bundle again on fresh ones, while whatever the
failed attempt did to the outside world (files written, renamed, deleted) stays.
The FnApiRunner, which local runs use, does not retry. `RetryingFnApiRunner`
does what Dataflow does: a failed bundle is run again, up to MAX_ATTEMPTS times,
its outputs staged and kept only when an attempt succeeds (the SDK worker
already discards a failed bundle's DoFn instances).

`inject(pipeline, {label: Fault})` wraps the DoFn of each ParDo whose full label
contains `label`: the wrapper fails the first `attempts` bundle attempts of that
DoFn (counted in a file, so across processes and retries) at a chosen point:
when the bundle starts, once the DoFn has emitted `after` outputs in the
bundle (a generator it is running is closed mid-way), or once the bundle has
finished (all its side effects done).
`Fault(pause_file=...)` instead touches the file and sleeps at that point: the
test then kills the process.

    python -m tests.support.faults --pause LABEL:WHEN:AFTER --pause_file F JOB [args]
runs a job with a pause, for the kill tests.
"""
import argparse
import importlib
import os
import sys
import time
from typing import Dict, NamedTuple, Optional

import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.pipeline import PipelineVisitor
from apache_beam.runners.common import DoFnSignature
from apache_beam.runners.portability.fn_api_runner import fn_runner

from autoais.beam_jobs.cli import JOBS
from autoais.beam_jobs.parsing import parse_options

MAX_ATTEMPTS = 4  # Dataflow's retries of a batch work item


class InjectedFault(RuntimeError):
  """What a faulty DoFn raises."""


# ----------------------------------------------------------------------------
# A runner that retries failed bundles.


class _StagedBuffer:
  """Records what one attempt writes to an output buffer."""

  cleared = False

  def __init__(self, staged, buffer_id, transform_id):
    self._staged = staged
    self._key = (buffer_id, transform_id)

  def append(self, data):
    self._staged.append((self._key, data))

  def reset(self):
    pass


class _StagedOutputs:
  """A bundle context whose output buffers hold an attempt's outputs apart until
  `commit()`; everything else is the real context's."""

  def __init__(self, real):
    self._real = real
    self._staged = []

  def get_buffer(self, buffer_id, transform_id):
    return _StagedBuffer(self._staged, buffer_id, transform_id)

  def __getattr__(self, name):
    return getattr(self._real, name)

  def commit(self):
    for (buffer_id, transform_id), data in self._staged:
      buffer = self._real.get_buffer(buffer_id, transform_id)
      if getattr(buffer, "cleared", False):
        buffer.reset()
      buffer.append(data)


class _RetryingBundles:
  """Mixin for the FnApiRunner's bundle managers: retry a failed bundle."""

  def process_bundle(self, inputs, expected_outputs, fired_timers,
                     expected_output_timers, dry_run=False):
    real = self.bundle_context_manager
    for attempt in range(1, MAX_ATTEMPTS + 1):
      staged = _StagedOutputs(real)
      self.bundle_context_manager = staged
      try:
        result = super().process_bundle(inputs, expected_outputs, fired_timers,
                                         expected_output_timers, dry_run)
      except Exception:  # pylint: disable=broad-except
        if attempt == MAX_ATTEMPTS:
          raise
        RetryingFnApiRunner.retries += 1
        continue
      finally:
        self.bundle_context_manager = real
      staged.commit()
      return result
    raise AssertionError("unreachable")


class _RetryingBundleManager(_RetryingBundles, fn_runner.BundleManager):
  pass


class _RetryingParallelBundleManager(_RetryingBundles, fn_runner.ParallelBundleManager):
  pass


class RetryingFnApiRunner(fn_runner.FnApiRunner):
  """The FnApiRunner, retrying failed bundles as Dataflow does (see above)."""

  retries = 0  # bundle attempts that failed and were retried, in this process

  def _get_bundle_manager(self, bundle_context_manager):
    manager = super()._get_bundle_manager(bundle_context_manager)
    retrying = (_RetryingParallelBundleManager
                if isinstance(manager, fn_runner.ParallelBundleManager)
                else _RetryingBundleManager)
    manager.__class__ = retrying
    return manager


# ----------------------------------------------------------------------------
# Faulty DoFns.

START, ELEMENT, FINISH = "start", "element", "finish"


class Fault(NamedTuple):
  """Fail (or pause at) the first `attempts` bundle attempts of a DoFn: when a
  bundle starts, once the DoFn emitted `after` outputs in the bundle (at the
  bundle's end if it emits fewer), or when the bundle has finished."""
  when: str = ELEMENT
  attempts: int = 2
  after: int = 1
  pause_file: Optional[str] = None


class _FaultyDoFn(beam.DoFn):
  """Runs `fn`; fails (or pauses) its first bundle attempts as `fault` says."""

  def __init__(self, fn: beam.DoFn, fault: Fault, counter_path: str):
    super().__init__()
    self._fn = fn
    self._fault = fault
    self._counter_path = counter_path

  def setup(self):
    self._fn.setup()

  def start_bundle(self):
    with open(self._counter_path, "ab") as counter:
      counter.write(b".")
      attempt = counter.tell()
    self._faulty = attempt <= self._fault.attempts
    self._emitted = 0
    if self._faulty and self._fault.when == START:
      self._strike("start of bundle")
    return self._fn.start_bundle()

  def process(self, element, *args, **kwargs):
    outputs = self._fn.process(element, *args, **kwargs)
    if outputs is None:
      return
    try:
      for output in outputs:
        yield output
        self._emitted += 1
        if (self._faulty and self._fault.when == ELEMENT and
            self._emitted == self._fault.after):
          self._strike(f"after {self._emitted} outputs")
    finally:
      if hasattr(outputs, "close"):
        outputs.close()

  def finish_bundle(self):
    outputs = self._fn.finish_bundle()
    if outputs is not None:
      yield from outputs
    if self._faulty and self._fault.when in (FINISH, ELEMENT):
      # ELEMENT faults whose element emitted fewer outputs strike here.
      self._strike("end of bundle")

  def teardown(self):
    self._fn.teardown()

  def _strike(self, where: str):
    self._faulty = False
    if self._fault.pause_file:
      with open(self._fault.pause_file, "w", encoding="utf-8") as marker:
        marker.write(where)
      while True:  # the test kills the process here
        time.sleep(60)
    raise InjectedFault(f"injected fault at {where}")


def inject(pipeline: beam.Pipeline, faults: Dict[str, Fault], state_dir: str) -> list:
  """Wraps the DoFn of every ParDo whose full label contains a key of `faults`;
  returns the labels wrapped. Attempt counters live in `state_dir`."""
  wrapped = []

  class _Visitor(PipelineVisitor):

    def visit_transform(self, applied):
      transform = applied.transform
      if not isinstance(transform, beam.ParDo):
        return
      for label, fault in faults.items():
        if label in applied.full_label:
          counter = os.path.join(state_dir, f"attempts-{len(wrapped)}")
          transform.fn = transform.dofn = _FaultyDoFn(transform.fn, fault, counter)
          transform._signature = DoFnSignature(transform.fn)  # pylint: disable=protected-access
          wrapped.append(applied.full_label)

  pipeline.visit(_Visitor())
  missing = [label for label in faults if not any(label in w for w in wrapped)]
  if missing:
    raise ValueError(f"no ParDo labelled {missing}; wrapped {wrapped}")
  return wrapped


def _options_class(module):
  for value in vars(module).values():
    if (isinstance(value, type) and issubclass(value, PipelineOptions) and
        value.__module__ == module.__name__):
      return value
  raise ValueError(f"{module.__name__} defines no PipelineOptions")


def run_job(job: str, argv, faults: Dict[str, Fault], state_dir: str,
            runner=None) -> list:
  """Builds a job's pipeline as `autoais JOB argv` would, injects the faults,
  runs it (on RetryingFnApiRunner unless `runner` is given); returns the wrapped
  labels. Raises what the run raises."""
  module = importlib.import_module(JOBS[job])
  options = parse_options([str(arg) for arg in argv], _options_class(module))
  pipeline = beam.Pipeline(runner=runner or RetryingFnApiRunner(), options=options)
  output_dir = module.build_pipeline(pipeline, options)
  wrapped = inject(pipeline, faults, state_dir)
  with output_dir.held():  # as beam_jobs.running.run_job holds it
    pipeline.run().wait_until_finish()
  return wrapped


def main(argv=None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--pause", required=True, help="LABEL:WHEN:AFTER")
  parser.add_argument("--pause_file", required=True)
  parser.add_argument("--state_dir", required=True)
  parser.add_argument("job", choices=sorted(JOBS))
  args, job_argv = parser.parse_known_args(argv)
  label, when, after = args.pause.rsplit(":", 2)
  fault = Fault(when=when, attempts=1, after=int(after), pause_file=args.pause_file)
  run_job(args.job, job_argv, {label: fault}, args.state_dir,
          runner=fn_runner.FnApiRunner())
  return 0


if __name__ == "__main__":
  sys.exit(main())
