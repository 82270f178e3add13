"""Running a job: `run_job` parses and checks its flags (beam_jobs/parsing.py),
builds its pipeline, runs it on the local FnApiRunner or the runner named, and
turns a bad configuration or an unusable input into a clear message and exit
code 2 (before anything is written, where it is found at launch), a failed run
into 1, and a run with an input that yielded no row (or compare's regression)
into 3; `errors_raised()` makes it raise instead (the Python API). Then it
prints the job's summary table and the files it wrote. The output-directory
rule is beam_jobs/output_dir.py.
"""
import contextlib
import contextvars
import logging
import math
import shutil
import sys
import tempfile
import time
from typing import Callable, List, Optional, Type

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems
from apache_beam.metrics.metric import MetricsFilter
from apache_beam.options.pipeline_options import PipelineOptions, StandardOptions
from apache_beam.runners.portability.fn_api_runner import FnApiRunner

from autoais.beam_jobs.options import RunOptions
from autoais.beam_jobs.parsing import help_requested, job_help, parse_options
from autoais.schemas.errors import ConfigError, CorpusError, InputError, JobFailed, ModelError
from autoais.transforms.io import progress
from autoais.transforms.io.cloud_storage import check_gcs_flags
from autoais.transforms.io.sorted_runs import scratch_codec
from autoais.transforms.rows.run_record import REGRESSION, empty_inputs, read_run_record

EXIT_CONFIG_ERROR = 2
EXIT_JOB_FAILED = 1
# The run completed and wrote its outputs, but an input file yielded no row
# (run.json: status "empty_inputs").
EXIT_EMPTY_INPUTS = 3
# compare --fail_on_regression found a regression (run.json: status "regression").
EXIT_REGRESSION = 3

CONFIGURATION_ERRORS = (ConfigError, InputError, CorpusError, ModelError)


_LOCAL_RUNNER_NAMES = (None, "DirectRunner", "SwitchingDirectRunner")


def local_runner_or_none(options: PipelineOptions):
  """The runner for a local run: Beam's portable FnApiRunner.

  In Beam 2.77 the DirectRunner first tries Prism, which downloads a Go binary at
  run time and ignores --direct_running_mode; it falls back to the FnApiRunner
  when that fails. Local runs go to the FnApiRunner directly, which honours
  --direct_num_workers and --direct_running_mode. Other runners: None.
  """
  if options.view_as(StandardOptions).runner in _LOCAL_RUNNER_NAMES:
    return FnApiRunner()
  return None


_LOCAL_RUNNER_CLASSES = ("DirectRunner", "SwitchingDirectRunner", "BundleBasedDirectRunner",
                         "TestDirectRunner")


def is_local_runner(runner) -> bool:
  """True for the runners of a local run: the FnApiRunner (and its subclasses)
  and Beam's direct runners, which hold shuffled data in memory."""
  return (isinstance(runner, FnApiRunner) or
          type(runner).__name__ in _LOCAL_RUNNER_CLASSES)


# Set by `errors_raised()`: run_job raises what it would print and turn into an
# exit code (the Python API's callers get exceptions, not exit codes).
_RAISE_ERRORS = contextvars.ContextVar("autoais_raise_errors", default=False)


@contextlib.contextmanager
def errors_raised():
  """Within it, run_job raises a configuration or input error as it is
  (ConfigError, InputError, CorpusError, ModelError) and a failed run as
  JobFailed, instead of printing them and returning 2 or 1."""
  token = _RAISE_ERRORS.set(True)
  try:
    yield
  finally:
    _RAISE_ERRORS.reset(token)


def check_scratch_codec() -> None:
  """Refuses an AUTOAIS_SCRATCH_CODEC that names no codec before anything is
  built, not when the first run file is written."""
  try:
    scratch_codec()
  except ValueError as error:
    raise ConfigError(str(error)) from None


class _BeamNoiseFilter(logging.Filter):
  """Drops Beam's warning that a composite's input type hint (a dict of
  PCollections, as WriteRunRecord takes) "will be ignored": said once per
  such step at every build (8 in compare, 16 in citations, 21 in sck), it
  tells a user nothing about the run."""

  def filter(self, record):
    return "This input type hint will be ignored" not in str(record.msg)


_NOISE_FILTER = _BeamNoiseFilter()
# Loggers whose INFO lines say nothing about the run (the state cache's size).
_QUIET_LOGGERS = ("apache_beam.runners.worker.statecache",)


def quiet_beam_noise() -> None:
  """Keeps Beam's noise off the console (once per process)."""
  root = logging.getLogger()
  if _NOISE_FILTER not in root.filters:
    root.addFilter(_NOISE_FILTER)
  for name in _QUIET_LOGGERS:
    logging.getLogger(name).setLevel(logging.WARNING)


def check_progress_interval(options: PipelineOptions) -> None:
  """--progress_interval 0 (none) or a positive number of seconds: a negative
  one read as 0, NaN printed a line on every turn of the loop, and infinity
  failed in the progress thread."""
  interval = options.view_as(RunOptions).progress_interval
  if not (interval == 0 or 0 < interval < math.inf):
    raise ConfigError(f"--progress_interval {interval}: seconds between progress "
                      "lines, positive, or 0 for none")


def run_job(job_name: str, argv: Optional[List[str]],
            options_class: Type[PipelineOptions],
            build_pipeline: Callable[[beam.Pipeline, PipelineOptions], object]) -> int:
  """Parses, validates, builds and runs a job; returns the process exit code.

  `build_pipeline` returns the job's claimed OutputDir (beam_jobs/output_dir.py),
  whose scratch directory is removed if the run fails.
  """
  logging.getLogger().setLevel(logging.INFO)
  quiet_beam_noise()
  argv = sys.argv[1:] if argv is None else argv
  started = time.time()
  try:
    if help_requested(argv):
      print(job_help(job_name, argv, options_class), end="")
      return 0
    options = parse_options(argv, options_class)
    check_progress_interval(options)
    check_gcs_flags(options)
    check_scratch_codec()
    pipeline = beam.Pipeline(runner=local_runner_or_none(options), options=options)
    output_dir = build_pipeline(pipeline, options)
  except CONFIGURATION_ERRORS as error:
    if _RAISE_ERRORS.get():
      raise
    print(f"autoais {job_name}: error: {error}", file=sys.stderr)
    return EXIT_CONFIG_ERROR
  try:
    with output_dir.held() if output_dir is not None else contextlib.nullcontext():
      _run_with_progress(job_name, pipeline, options)
  except Exception as error:  # pylint: disable=broad-except
    if output_dir is not None:
      output_dir.discard_scratch()
    input_error = _input_error_in(error)
    if input_error is not None:
      # An input found unusable while it was read (a truncated gzip, a gold file
      # with no usable question): the same exit as a refusal at launch.
      if _RAISE_ERRORS.get():
        raise InputError(input_error) from error
      print(f"autoais {job_name}: error: {input_error}", file=sys.stderr)
      return EXIT_CONFIG_ERROR
    logging.exception("autoais %s failed", job_name)
    if _RAISE_ERRORS.get():
      raise JobFailed(f"autoais {job_name} failed: {_root_cause(error)}") from error
    print(f"autoais {job_name}: failed: {_root_cause(error)}", file=sys.stderr)
    return EXIT_JOB_FAILED
  logging.info("autoais %s finished in %.1f s", job_name, time.time() - started)
  if output_dir is not None:
    try:
      print_outputs(job_name, output_dir)
    except Exception:  # pylint: disable=broad-except
      # The run succeeded and its outputs are written: a directory that cannot
      # be listed or read back now is worth a warning, not a failed run.
      logging.warning("autoais %s: could not read back %s", job_name, output_dir.path,
                      exc_info=True)
  return _exit_code_of_outputs(job_name, output_dir)


def _exit_code_of_outputs(job_name: str, output_dir) -> int:
  """0, or EXIT_EMPTY_INPUTS, said on the console's last lines, where the run's
  run.json lists input files that yielded no row."""
  if output_dir is None or "run.json" not in output_dir.outputs:
    return 0
  record = read_run_record(output_dir.join("run.json"))
  if record.get("status") == REGRESSION:
    print(f"autoais {job_name}: the outputs are written, and "
          f"{record.get('regression_measure', 'AutoAIS')} fell by more "
          f"than {record.get('fail_on_regression')} points, with a 95% interval below "
          f"0, for: {', '.join(record.get('regressions', []))} (run.json: status "
          f"\"regression\"; exit code {EXIT_REGRESSION})", file=sys.stderr)
    return EXIT_REGRESSION
  empty = empty_inputs(output_dir.join("run.json"))
  if not empty:
    return 0
  print(f"autoais {job_name}: the outputs are written, but {len(empty)} input "
        f"file(s) yielded no row (run.json: status \"empty_inputs\"; exit code "
        f"{EXIT_EMPTY_INPUTS}):", file=sys.stderr)
  for entry in empty:
    print(f"  {entry['flag']} {entry['file']}: {entry['read']} read, "
          f"{entry['rejected']} rejected, {entry['unmatched']} unmatched; main "
          f"reason {entry['main_reason']} (dead_letter.jsonl)", file=sys.stderr)
  return EXIT_EMPTY_INPUTS


# A run names at most this many of its output files (a corpus has a file per
# shard); the rest are counted.
_NAMED_OUTPUTS = 10


def print_outputs(job_name: str, output_dir) -> None:
  """After a successful run, on stdout: the job's summary table (its first
  Markdown output, from the top to the end of its first table), then, last,
  the output directory and the files the run wrote there. Read back through
  FileSystems, so gs:// directories too."""
  found = FileSystems.match([FileSystems.join(output_dir.path, "*")])[0].metadata_list
  present = {path.rstrip("/").rsplit("/", 1)[-1] for path in
             (metadata.path for metadata in found)}
  written = [name for name in output_dir.outputs if name in present]
  summary = next((name for name in written if name.endswith(".md")), None)
  if summary is not None:
    with FileSystems.open(output_dir.join(summary)) as markdown:
      print(first_table(markdown.read().decode("utf-8")) + "\n")
  named = ", ".join(written[:_NAMED_OUTPUTS]) + (
      f" and {len(written) - _NAMED_OUTPUTS} more" if len(written) > _NAMED_OUTPUTS
      else "")
  print(f"autoais {job_name}: outputs in {output_dir.path}: {named}", flush=True)


def first_table(markdown: str) -> str:
  """Markdown from its top to the end of its first table."""
  lines = markdown.rstrip("\n").split("\n")
  in_table = False
  for number, line in enumerate(lines):
    if line.startswith("|"):
      in_table = True
    elif in_table:
      return "\n".join(lines[:number])
  return "\n".join(lines)


def _run_with_progress(job_name: str, pipeline: beam.Pipeline,
                       options: PipelineOptions) -> None:
  """Runs the pipeline; on a local run, with progress lines on the console every
  --progress_interval seconds and a last line of the exact totals."""
  interval = options.view_as(RunOptions).progress_interval
  if local_runner_or_none(options) is None or not interval or interval <= 0:
    pipeline.run().wait_until_finish()
    return
  directory = tempfile.mkdtemp(prefix="autoais-progress-")
  started = time.monotonic()
  try:
    with progress.ConsoleProgress(job_name, interval, directory=directory):
      result = pipeline.run()
      result.wait_until_finish()
  finally:
    shutil.rmtree(directory, ignore_errors=True)
  totals = {}
  counters = result.metrics().query(
      MetricsFilter().with_namespace(progress.NAMESPACE))["counters"]
  for counter in counters:
    value = counter.committed if counter.committed is not None else counter.attempted
    totals[counter.key.metric.name] = totals.get(counter.key.metric.name, 0) + value
  if totals:
    print(progress.progress_line(job_name, totals, time.monotonic() - started, None),
          file=sys.stderr, flush=True)


_INPUT_ERROR_NAMES = ("InputError: ", "CorpusError: ")


def _input_error_in(error: BaseException) -> Optional[str]:
  """The message of an InputError or CorpusError behind a pipeline failure (the
  runner reports a worker's exception as text), or None."""
  # In-process runs keep the exception in the chain; worker processes send only
  # its text, "InputError: message [while running 'Step']" (no public API gives
  # the worker's exception): tests/unit/test_beam_internals.py pins both.
  chain = error
  while chain is not None:
    if isinstance(chain, (InputError, CorpusError)):
      return _without_step(str(chain))
    chain = chain.__cause__ or chain.__context__
  for line in reversed(str(error).splitlines()):
    for name in _INPUT_ERROR_NAMES:
      if name in line:
        return _without_step(line.split(name, 1)[1].strip())
  return None


def _without_step(message: str) -> str:
  """A worker's message without the step Beam appends ("... [while running 'X']")."""
  return message.split(" [while running")[0].strip()


def _root_cause(error: BaseException) -> str:
  message = str(error).strip().splitlines()
  for line in reversed(message):
    for known in ("RuntimeError", "ValueError"):
      if known in line:
        return line.strip()
  return message[-1] if message else type(error).__name__
