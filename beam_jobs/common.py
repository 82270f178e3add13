"""What every job shares: strict option parsing, configuration errors, the
scorer flags, and the `run(argv)` wrapper that turns a bad configuration or an
unusable input into a clear message and exit code 2 (before anything is
written, where it is found at launch). The output-directory rule is
beam_jobs/output_dir.py.
"""
import logging
import sys
import time
from typing import Callable, List, Optional, Sequence, Type

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems
from apache_beam.options.pipeline_options import (PipelineOptions, StandardOptions,
                                                  _BeamArgumentParser)
from apache_beam.runners.portability.fn_api_runner import FnApiRunner

from models import SCORERS, STRING_MATCH, Scorer, make_scorer
from models.errors import ModelError
from transforms.corpus import CorpusError
from transforms.sources import InputError

EXIT_CONFIG_ERROR = 2
EXIT_JOB_FAILED = 1


class ConfigError(ValueError):
  """The job's options cannot work: it stops before building anything."""


class JobArguments:
  """A job's argument group in Beam's parser, adding each flag once.

  Beam registers every PipelineOptions subclass in one parser (get_all_options,
  and parse_options below), and jobs share flag names (--output_dir, --corpus,
  --gold, --seed, ...): a flag another job's options already added is skipped,
  and must then have the same type and default, which is checked here.

      group = JobArguments(parser, "evaluate")
      group.add_argument("--corpus", default=None, help=...)
  """

  def __init__(self, parser, title: str):
    self._parser = parser
    self._group = parser.add_argument_group(title)

  def add_argument(self, flag: str, **kwargs) -> None:
    # pylint: disable-next=protected-access
    existing = self._parser._option_string_actions.get(flag)
    if existing is None:
      self._group.add_argument(flag, **kwargs)
      return
    if (existing.type, existing.default) != (kwargs.get("type"), kwargs.get("default")):
      raise ValueError(f"{flag} is declared by two jobs with different types or "
                       f"defaults: {(existing.type, existing.default)} and "
                       f"{(kwargs.get('type'), kwargs.get('default'))}")


def _flag(value: str) -> bool:
  """A boolean flag that takes a value (Flex Templates pass --name=value)."""
  lowered = value.strip().lower()
  if lowered in ("true", "1", "yes"):
    return True
  if lowered in ("false", "0", "no"):
    return False
  raise ValueError(f"expected true or false, got {value!r}")


class ScorerOptions(PipelineOptions):
  """The attribution scorer flags every job that scores shares."""

  @classmethod
  def _add_argparse_args(cls, parser):
    group = parser.add_argument_group("scorer")
    group.add_argument("--scorer", default=STRING_MATCH, choices=SCORERS,
                       help="Attribution scorer (default %(default)s).")
    group.add_argument("--threshold", type=float, default=0.5,
                       help="auto_ais is Y iff nli_score > threshold (default 0.5).")
    group.add_argument("--model", default=None,
                       help="NLI model directory (local or gs://), for --scorer t5: "
                       "a T5/mT5 checkpoint in safetensors with its tokenizer.")
    group.add_argument("--dtype", default="float32",
                       help="float32 or bfloat16 (float16 is refused: T5 overflows).")
    group.add_argument("--device", default="cpu", help="cpu or cuda.")
    group.add_argument("--decision", default="threshold",
                       help="threshold (nli_score > --threshold) or decode (greedy "
                       "generation reads '1', as the reference script does).")
    group.add_argument("--max_input_tokens", type=int, default=None,
                       help="Model input length; longer premises are windowed "
                       "(default: the tokenizer's model_max_length, else 512).")
    group.add_argument("--token_budget", type=int, default=None,
                       help="Padded tokens per model batch (default 2048 on cpu, "
                       "16384 on cuda).")
    group.add_argument("--large_model", type=_flag, default=False,
                       help="true: load one model per machine, shared across worker "
                       "processes (for 11B checkpoints). Default false.")


def scorer_from_options(options: PipelineOptions, local_run: bool) -> Scorer:
  """Validates the scorer flags (cheaply: the model itself is loaded on the
  workers) and returns the scorer."""
  options = options.view_as(ScorerOptions)
  if not 0.0 <= options.threshold <= 1.0:
    raise ConfigError(f"--threshold must be in [0, 1], got {options.threshold}")
  if options.scorer == STRING_MATCH:
    if options.decision != "threshold":
      raise ConfigError("--decision decode needs an NLI model (--scorer t5)")
    return make_scorer(STRING_MATCH, options.threshold)
  require(options, "model")
  from models import t5_nli  # pylint: disable=import-outside-toplevel
  t5_nli.check_dtype(options.dtype)
  if options.device not in t5_nli.DEVICES:
    raise ConfigError(f"--device {options.device!r}: choose from cpu, cuda")
  if options.decision not in t5_nli.DECISIONS:
    raise ConfigError(f"--decision {options.decision!r}: choose from threshold, decode")
  if options.token_budget is not None and options.token_budget < 1:
    raise ConfigError("--token_budget must be positive")
  t5_nli.model_files(options.model)
  if local_run and FileSystems.get_scheme(options.model) in (None, "file"):
    t5_nli.label_token_ids(t5_nli.load_tokenizer(options.model), options.model)
    if options.device == "cuda":
      import torch  # pylint: disable=import-outside-toplevel
      if not torch.cuda.is_available():
        raise ConfigError("--device cuda: no CUDA device on this machine")
  return make_scorer(options.scorer, options.threshold, model_path=options.model,
                     dtype=options.dtype, device=options.device,
                     decision=options.decision,
                     max_input_tokens=options.max_input_tokens,
                     token_budget=options.token_budget,
                     large_model=options.large_model)


CONFIGURATION_ERRORS = (ConfigError, InputError, CorpusError, ModelError)


def parse_options(argv: Sequence[str], options_class: Type[PipelineOptions]):
  """Parses argv like Beam does, but refuses flags that no options class knows
  (Beam would drop a mistyped `--threshhold` with a warning)."""
  parser = _BeamArgumentParser(allow_abbrev=False)
  registered = {}
  for cls in PipelineOptions.__subclasses__() + [options_class]:
    registered.setdefault(f"{cls.__module__}.{cls.__qualname__}", cls)
  for cls in registered.values():
    cls._add_argparse_args(parser)  # pylint: disable=protected-access
  _, unknown = parser.parse_known_args(list(argv))
  if unknown:
    raise ConfigError(f"unknown argument(s): {' '.join(unknown)}")
  return options_class(list(argv))


def require(options, *names: str) -> None:
  missing = [f"--{name}" for name in names if not getattr(options, name, None)]
  if missing:
    raise ConfigError(f"missing required option(s): {', '.join(missing)}")


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


def run_job(job_name: str, argv: Optional[List[str]],
            options_class: Type[PipelineOptions],
            build_pipeline: Callable[[beam.Pipeline, PipelineOptions], object]) -> int:
  """Parses, validates, builds and runs a job; returns the process exit code.

  `build_pipeline` returns the job's claimed OutputDir (beam_jobs/output_dir.py),
  whose scratch directory is removed if the run fails.
  """
  logging.getLogger().setLevel(logging.INFO)
  argv = sys.argv[1:] if argv is None else argv
  started = time.time()
  try:
    options = parse_options(argv, options_class)
    pipeline = beam.Pipeline(runner=local_runner_or_none(options), options=options)
    output_dir = build_pipeline(pipeline, options)
  except CONFIGURATION_ERRORS as error:
    print(f"autoais {job_name}: error: {error}", file=sys.stderr)
    return EXIT_CONFIG_ERROR
  try:
    pipeline.run().wait_until_finish()
  except Exception as error:  # pylint: disable=broad-except
    if output_dir is not None:
      output_dir.discard_scratch()
    input_error = _input_error_in(error)
    if input_error is not None:
      # An input found unusable while it was read (a truncated gzip, a gold file
      # with no usable question): the same exit as a refusal at launch.
      print(f"autoais {job_name}: error: {input_error}", file=sys.stderr)
      return EXIT_CONFIG_ERROR
    logging.exception("autoais %s failed", job_name)
    print(f"autoais {job_name}: failed: {_root_cause(error)}", file=sys.stderr)
    return EXIT_JOB_FAILED
  logging.info("autoais %s finished in %.1f s", job_name, time.time() - started)
  return 0


_INPUT_ERROR_NAMES = ("InputError: ", "CorpusError: ")


def _input_error_in(error: BaseException) -> Optional[str]:
  """The message of an InputError or CorpusError behind a pipeline failure (the
  runner reports a worker's exception as text), or None."""
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
