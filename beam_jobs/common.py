"""What every job shares: strict option parsing, configuration errors, the
scorer flags (declared here, checked once into a ScorerConfig by
transforms/scoring/config.py), and the `run(argv)` wrapper that turns a bad configuration or an
unusable input into a clear message and exit code 2 (before anything is
written, where it is found at launch). The output-directory rule is
beam_jobs/output_dir.py.
"""
import argparse
import contextlib
import contextvars
import difflib
import importlib
import logging
import shutil
import sys
import tempfile
import time
from typing import Callable, Dict, FrozenSet, Iterable, List, Optional, Sequence, Type

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems
from apache_beam.metrics.metric import MetricsFilter
from apache_beam.options.pipeline_options import (PipelineOptions, StandardOptions,
                                                  _BeamArgumentParser)
from apache_beam.runners.portability.fn_api_runner import FnApiRunner

from autoais.models import hub
# require and require_choice are the jobs' checks of their own flags too.
from autoais.schemas.errors import (ConfigError, CorpusError, InputError, JobFailed, ModelError,  # pylint: disable=unused-import
                                    require, require_choice)
from autoais.transforms.scoring.config import scorer_config
from autoais.transforms.scoring.names import JUDGE_APIS, SCORERS, STRING_MATCH
from autoais.transforms.scoring.scorer import Scorer
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


def boolean_flag(value: str) -> bool:
  """A boolean flag that takes a value (Flex Templates pass --name=value)."""
  lowered = value.strip().lower()
  if lowered in ("true", "1", "yes"):
    return True
  if lowered in ("false", "0", "no"):
    return False
  raise ValueError(f"expected true or false, got {value!r}")


class ViewsKept:
  """Put first in a job's options class (`class EvaluateOptions(ViewsKept,
  PipelineOptions)`): view_as answers each class's view once per options
  object.

  Beam's view_as builds the class's argparse parser and parses the job's flags
  again on every call, and the pipeline calls it on its options for every
  transform it applies and every type it checks: about 1,700 parses for
  citations' pipeline, 0.6 to 0.8 CPU s of a run at any size. A view has no
  state of its own (its values live in the options' shared _all_options, which
  a set attribute writes through to), so the one kept behaves as a new one
  would. The mixin is not a PipelineOptions subclass: Beam collects a job's
  flags from PipelineOptions' direct subclasses, which the job's class stays.
  Copies and pickles leave the kept views out (the pipeline deep-copies its
  options) and keep their own.
  """

  def view_as(self, cls):
    views = self.__dict__.get("_views_kept")
    if views is None:
      views = {}
      # PipelineOptions' __setattr__ takes option names only.
      object.__setattr__(self, "_views_kept", views)
    view = views.get(cls)
    if view is None:
      view = views[cls] = super().view_as(cls)
    return view

  def __getstate__(self):
    state = dict(super().__getstate__())
    state.pop("_views_kept", None)
    return state


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
                       help="For --scorer t5, nli-classifier and minicheck: the NLI "
                       "model, a local or gs:// directory or a Hugging Face hub id "
                       "(org/name, e.g. google/t5_xxl_true_nli_mixture: resolved "
                       "with huggingface_hub into its cache, HF_HOME; HF_HUB_OFFLINE "
                       "and HF_TOKEN from the environment). Weights in safetensors "
                       "(model.safetensors, or shards with "
                       "model.safetensors.index.json) with its tokenizer: for "
                       "--scorer t5 a T5/mT5 checkpoint, for --scorer nli-classifier "
                       "a sequence-classification NLI checkpoint, for --scorer "
                       "minicheck a MiniCheck checkpoint (Flan-T5, RoBERTa or "
                       "DeBERTa). Without --scorer, --model is refused: the default "
                       "scorer, string-match, reads no model.")
    group.add_argument("--model_revision", default=None,
                       help="For a hub id --model: the branch, tag or commit to load "
                       "(default main), resolved to a commit at launch; run.json "
                       "records the id, the revision and the commit.")
    group.add_argument("--tokenizer", default=None,
                       help="For --scorer t5 / nli-classifier / minicheck: the tokenizer "
                       "(a local or gs:// directory, or a hub id; tokenizer.json, or "
                       "spiece.model with tokenizer_config.json) where the model has "
                       "none. Default: the model's. For --scorer llm-judge "
                       "(required): the judge's tokenizer (tokenizer.json and its "
                       "chat template), which counts the chunks' tokens.")
    group.add_argument("--tokenizer_revision", default=None,
                       help="For a hub id --tokenizer: the branch, tag or commit "
                       "(default main), as --model_revision.")
    group.add_argument("--positive_label", default=None,
                       help="For --scorer nli-classifier: the head's label (a name in "
                       "config.json's id2label, any case) whose probability is the "
                       "score. Default: the one label named entailment, entail, "
                       "supported or support.")
    group.add_argument("--chunk_size", type=int, default=None,
                       help="For --scorer minicheck and llm-judge: the size of the "
                       "document chunks the claim is checked against (whitespace "
                       "words for MiniCheck-Flan-T5, tokens for -RoBERTa and "
                       "-DeBERTa, tokens of the judge's tokenizer for llm-judge). "
                       "Default MiniCheck's: 500 words, 400 tokens, 32468 tokens.")
    group.add_argument("--dtype", default="float32",
                       help="float32 or bfloat16 (float16 is refused: T5 overflows).")
    group.add_argument("--device", default="cpu", help="cpu or cuda.")
    group.add_argument("--decision", default="threshold",
                       help="threshold (nli_score > --threshold; long premises "
                       "windowed) or decode (the Attributed QA script's rule, for "
                       "parity: its premise, no windows, generate() with the model's "
                       "generation config reads '1').")
    group.add_argument("--max_input_tokens", type=int, default=None,
                       help="Model input length; longer premises are windowed "
                       "(default: the tokenizer's model_max_length, else 512).")
    group.add_argument("--token_budget", type=int, default=None,
                       help="Padded tokens per model batch (default 2048 on cpu, "
                       "16384 on cuda).")
    group.add_argument("--torch_threads", type=int, default=0,
                       help="CPU threads of the model in each worker process "
                       "(torch.set_num_threads). Default 0: torch's default, one "
                       "per core. Where a machine runs several worker processes, "
                       "each with its own model (Dataflow runs one SDK process per "
                       "vCPU; --direct_num_workers locally), 1 keeps them from "
                       "competing for the cores.")
    group.add_argument("--large_model", type=boolean_flag, default=False,
                       help="true: load one model per machine, shared across worker "
                       "processes (for 11B checkpoints). Default false.")
    group.add_argument("--endpoint", default=None,
                       help="For --scorer remote: the URL of an NLI server in the "
                       "Vertex AI prediction format (`autoais serve`), e.g. "
                       "http://10.0.0.5:8080 (POST {endpoint}/predict).")
    group.add_argument("--request_timeout", type=float, default=60.0,
                       help="--scorer remote / llm-judge: seconds before a request times out "
                       "(then retried). Default 60.")
    group.add_argument("--max_retries", type=int, default=8,
                       help="--scorer remote / llm-judge: retries of a request after a 5xx, 429, "
                       "timeout or dropped connection, before its rows go to dead "
                       "letter. Default 8.")
    group.add_argument("--retry_backoff", type=float, default=1.0,
                       help="--scorer remote / llm-judge: first retry delay in seconds, doubled "
                       "at each retry (with jitter; at most 60). Default 1.")
    group.add_argument("--instances_per_request", type=int, default=32,
                       help="--scorer remote/vertex: instances per prediction "
                       "request (Vertex AI public endpoints take 1.5 MB). Default 32.")
    group.add_argument("--endpoint_id", default=None,
                       help="For --scorer vertex: the Vertex AI endpoint id (with "
                       "--project and --location).")
    group.add_argument("--location", default=None,
                       help="For --scorer vertex: the endpoint's region, e.g. "
                       "us-central1.")
    group.add_argument("--judge_url", default=None,
                       help="For --scorer llm-judge: the base URL of an OpenAI-"
                       "compatible endpoint (`vllm serve`), e.g. http://HOST:8000/v1.")
    group.add_argument("--judge_model", default=None,
                       help="For --scorer llm-judge: the model name sent in each "
                       "request, e.g. bespokelabs/Bespoke-MiniCheck-7B.")
    group.add_argument("--judge_api", default="chat", choices=JUDGE_APIS,
                       help="For --scorer llm-judge: chat (the server applies the "
                       "chat template) or completions (rendered here with "
                       "--tokenizer's chat template). Default %(default)s.")
    group.add_argument("--judge_api_key_env", default=None,
                       help="For --scorer llm-judge: the NAME of an environment "
                       "variable holding the endpoint's API key (sent as a Bearer "
                       "token; set it on the workers). Never the key itself.")
    group.add_argument("--judge_concurrency", type=int, default=16,
                       help="For --scorer llm-judge: requests in flight at once per "
                       "worker process (the server batches them). Default 16.")
    group.add_argument("--score_cache", default=None,
                       help="Score cache directory (local or gs://): scores of "
                       "(model, premise, hypothesis) kept across runs, so a rerun "
                       "sends only new triples to the model "
                       "(transforms/scoring/cache.py).")


class RunOptions(PipelineOptions):
  """Flags of how a job runs, for every job."""

  @classmethod
  def _add_argparse_args(cls, parser):
    group = parser.add_argument_group("run")
    group.add_argument("--progress_interval", type=float, default=10.0,
                       help="Seconds between progress lines on the console for "
                       "local runs (rows and model examples done, rate, ETA); 0: "
                       "none. Dataflow shows the same counters as job metrics.")


class RowTableOptions(PipelineOptions):
  """How a job writes its row tables, for every job that merges rows
  (transforms/rows/merge.py)."""

  @classmethod
  def _add_argparse_args(cls, parser):
    group = parser.add_argument_group("row tables")
    # No argparse default: build-corpus's --num_shards (its corpus's shards,
    # default 64) shares the name, and Beam gives every class of a process
    # one default.
    group.add_argument(
        "--num_shards", type=int,
        help="Write each row table as N files, {table}-SSSSS-of-NNNNN.parquet and "
        ".csv, merged and written on N workers: a system's rows in one shard, "
        "picked by a hash of its name, so every file's bytes depend on the "
        "inputs alone (default 1: one file per table, merged on one worker; "
        "see docs/scale.md for when to shard).")


def row_table_shards(options: PipelineOptions) -> int:
  """--num_shards of a row-writing job (1 where not given)."""
  num_shards = options.view_as(RowTableOptions).num_shards
  if num_shards is None:
    return 1
  if num_shards < 1:
    raise ConfigError("--num_shards must be positive")
  return num_shards


def options_parser(*classes: Type[PipelineOptions]) -> _BeamArgumentParser:
  """A strict parser (no abbreviations) of the flags `classes` declare."""
  parser = _BeamArgumentParser(allow_abbrev=False)
  for cls in classes:
    cls._add_argparse_args(parser)  # pylint: disable=protected-access
  return parser


def option_dests(options_class: Type[PipelineOptions]) -> FrozenSet[str]:
  """The names (dests) of the flags `options_class` declares."""
  return frozenset(action.dest for action in options_parser(options_class)._actions  # pylint: disable=protected-access
                   if action.dest != "help")


def given_flags(options: PipelineOptions,
                options_class: Type[PipelineOptions]) -> FrozenSet[str]:
  """The dests of `options_class`'s flags that the command line gave, with any
  value (its default's too): a flag's default cannot tell "given" from "left
  out". Read from the flags the options were parsed from (Beam keeps them)."""
  parser = options_parser(options_class)
  for action in parser._actions:  # pylint: disable=protected-access
    action.default = argparse.SUPPRESS
  flags = getattr(options, "_flags", None) or []
  given, _ = parser.parse_known_args(list(flags))
  return frozenset(vars(given))


def scorer_from_options(options: PipelineOptions, local_run: bool) -> Scorer:
  """The run's scorer: its ScorerConfig built and checked once from the scorer
  flags (transforms/scoring/config.py; cheaply: the model itself is loaded on
  the workers)."""
  given = given_flags(options, ScorerOptions)
  return scorer_config(options.view_as(ScorerOptions), given, local_run).scorer()


def scorer_read_dirs(options: PipelineOptions) -> Dict[str, Optional[str]]:
  """The directories the scorer flags name ({flag: path or None}), for a job's
  OutputDir: its output directory may neither lie inside nor hold them."""
  scorer = options.view_as(ScorerOptions)
  # A Hugging Face hub id names no directory here (its files are in the
  # huggingface_hub cache): `google/t5_xxl_true_nli_mixture` is not ./google/.
  return {flag: None if path and hub.is_hub_id(path) else path
          for flag, path in (("--model", scorer.model), ("--tokenizer", scorer.tokenizer),
                             ("--score_cache", scorer.score_cache))}


CONFIGURATION_ERRORS = (ConfigError, InputError, CorpusError, ModelError)


HELP_FLAGS = ("-h", "--help")
HELP_BEAM_FLAG = "--help_beam"
DASK_REFUSED = ("--runner DaskRunner is refused: in Beam 2.77 it routes every output of "
                "a multi-output step to every consumer and drops what a step emits in "
                "finish_bundle, so a job's results would be silently wrong")


def runner_named(argv: Sequence[str]) -> Optional[str]:
  """The value of --runner in argv (None: the local default)."""
  parser = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
  parser.add_argument("--runner", default=None)
  return parser.parse_known_args(list(argv))[0].runner


def import_runner_options(runner: Optional[str]) -> None:
  """Imports the module of `runner` (a name Beam knows, e.g. FlinkRunner, or a
  module path): Beam registers a runner's pipeline options when its module is
  imported (DaskRunner's --dask_client_address, RenderRunner's --render_output),
  and the strict parse below accepts only registered ones. DaskRunner is
  refused (DASK_REFUSED), as is a name no runner has."""
  if runner is None:
    return
  if runner.rsplit(".", 1)[-1].lower() in ("dask", "daskrunner"):
    raise ConfigError(DASK_REFUSED)
  known = {}
  for path in StandardOptions.ALL_KNOWN_RUNNERS:
    name = path.rsplit(".", 1)[-1].lower()
    known[name] = known[name.removesuffix("runner")] = path
  path = known.get(runner.lower(), runner)
  if "." not in path:
    raise ConfigError(f"--runner {runner}: no such runner; choose from "
                      f"{', '.join(StandardOptions.KNOWN_RUNNER_NAMES)}, or give the "
                      "runner's module path (package.module.RunnerClass)")
  module = path.rsplit(".", 1)[0]
  try:
    importlib.import_module(module)
  except ImportError as error:
    raise ConfigError(f"--runner {runner}: cannot import {module}: {error}") from error


def _registered_options(options_class: Type[PipelineOptions]):
  """Every PipelineOptions class Beam would parse for, `options_class` included,
  once each (`python -m` can define a job's classes a second time)."""
  registered = {}
  for cls in PipelineOptions.__subclasses__() + [options_class]:
    registered.setdefault(f"{cls.__module__}.{cls.__qualname__}", cls)
  return list(registered.values())


def job_options(options_class: Type[PipelineOptions]):
  """The project's option classes a job takes: its own, the shared ones it
  names in SHARED_OPTIONS (the scorer flags), and the run flags."""
  return (options_class, *getattr(options_class, "SHARED_OPTIONS", ()), RunOptions)


def _key(cls) -> str:
  return f"{cls.__module__}.{cls.__qualname__}"


def near_miss(name: str, known: Iterable[str]) -> Optional[str]:
  """The known flag name (a dest) a mistyped `name` most likely meant: dashes
  for underscores (`output-dir`), the one name it begins (`bootstrap` for
  bootstrap_samples), else the closest by difflib; None when nothing is close."""
  known = sorted(set(known))
  name = name.lstrip("-").split("=", 1)[0]
  if name.replace("-", "_") in known:
    return name.replace("-", "_")
  begun = [dest for dest in known if dest.startswith(name.replace("-", "_"))]
  if len(begun) == 1:
    return begun[0]
  close = difflib.get_close_matches(name.replace("-", "_"), known, n=1, cutoff=0.75)
  return close[0] if close else None


def job_option_classes(options_class: Type[PipelineOptions]) -> list:
  """The options classes a job's flags are parsed against: Beam's (every
  registered class outside the project) and the project's that the job
  takes (job_options)."""
  own = {_key(cls) for cls in job_options(options_class)}
  return [cls for cls in _registered_options(options_class)
          if not cls.__module__.startswith("autoais.") or _key(cls) in own]


def _unknown_flags(argv: Sequence[str], classes) -> List[str]:
  _, unknown = options_parser(*classes).parse_known_args(list(argv))
  return unknown


def parse_options(argv: Sequence[str], options_class: Type[PipelineOptions]):
  """Parses argv like Beam does, but refuses flags the job does not take: a flag
  no options class knows (Beam would drop a mistyped `--threshhold` with a
  warning), and a flag of another job's options or of the scorer for a job
  that does not score (Beam registers every options class imported, so in one
  process, as the Python API runs jobs, every job's flags would parse; they
  would be ignored). The options of the runner --runner names are known
  (import_runner_options)."""
  import_runner_options(runner_named(argv))
  registered = _registered_options(options_class)
  classes = job_option_classes(options_class)
  unknown = _unknown_flags(argv, classes)
  if unknown:
    elsewhere = set(unknown) - set(_unknown_flags(unknown, registered))
    not_taken = [flag.split("=", 1)[0] for flag in unknown
                 if flag in elsewhere and flag.startswith("--")]
    if not_taken:
      raise ConfigError(f"{' '.join(not_taken)}: not a flag of this job (another job, "
                        "or a scorer, takes it; this job would ignore it)")
    # The job's own flags first: `--bootstrap` means --bootstrap_samples, not
    # Beam's Kafka --bootstrap_servers.
    own = {dest for cls in job_options(options_class) for dest in option_dests(cls)}
    known = {dest for cls in classes for dest in option_dests(cls)}
    meant = [(flag, near_miss(flag, own) or near_miss(flag, known)) for flag in unknown
             if flag.startswith("--")]
    hints = "; ".join(f"{flag.split('=', 1)[0]}: did you mean --{dest}?"
                      for flag, dest in meant if dest)
    raise ConfigError(f"unknown argument(s): {' '.join(unknown)}"
                      + (f" ({hints})" if hints else ""))
  return options_class(list(argv))


def help_requested(argv: Sequence[str]) -> bool:
  return any(arg in HELP_FLAGS or arg == HELP_BEAM_FLAG for arg in argv)


def job_help(job_name: str, argv: Sequence[str],
             options_class: Type[PipelineOptions]) -> str:
  """`autoais JOB --help`: the job's own flags, then those of the shared option
  classes it names in SHARED_OPTIONS (the scorer flags, for a job that scores),
  then the run flags. With --help_beam instead: Beam's pipeline options, those
  of the runner --runner names included."""
  usage = f"autoais {job_name} [flags]"
  if HELP_BEAM_FLAG in argv:
    import_runner_options(runner_named(argv))
    parser = _BeamArgumentParser(
        usage=usage, add_help=False,
        description=f"Beam's pipeline options, taken by every job (`autoais {job_name} "
        "--help`: the job's own flags).")
    for cls in _registered_options(options_class):
      if not cls.__module__.startswith("autoais."):
        cls._add_argparse_args(parser)  # pylint: disable=protected-access
    return parser.format_help()
  # What the job does: its module docstring's first paragraph.
  docstring = sys.modules[options_class.__module__].__doc__ or job_name
  parser = _BeamArgumentParser(
      usage=usage, add_help=False, description=docstring.strip().split("\n\n")[0],
      epilog=f"Beam's pipeline options are taken too (--runner, --direct_num_workers, "
      f"--direct_running_mode, Dataflow's, Flink's, Spark's): `autoais {job_name} "
      f"{HELP_BEAM_FLAG}` lists them.")
  for cls in job_options(options_class):
    cls._add_argparse_args(parser)  # pylint: disable=protected-access
  return parser.format_help()


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
    print(f"autoais {job_name}: the outputs are written, and AutoAIS fell by more "
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
