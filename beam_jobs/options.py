"""The flags jobs share and how a job declares its own: the scorer flags
(ScorerOptions, checked once into a ScorerConfig by
transforms/scoring/config.py), the run and row-table flags, JobArguments (a
job's flags, each added once to Beam's parser), ViewsKept, and the readers of
parsed options (given_flags, scorer_from_options, ...). Parsing a command line
against a job's flags is beam_jobs/parsing.py; running the job,
beam_jobs/running.py.

Four Beam or argparse internals are relied on here, each where no public API
does the same; tests/unit/test_beam_internals.py pins the behaviour each is
used for:
* Beam's _BeamArgumentParser (options_parser): every PipelineOptions subclass
  imported in the process is parsed with a job's flags, as Beam does, and a
  template's declares flags with add_value_provider_argument, which only
  Beam's parser has;
* PipelineOptions._add_argparse_args called from outside the class
  (options_parser): the hook by which a class declares its flags; Beam offers
  no public call that puts one class's flags into a parser of ours;
* argparse's parser._actions (option_dests): the only list of a parser's
  flags that does not parse (a parse of no flags exits on a required one);
* PipelineOptions._flags (given_flags): the command line the options were
  made from; the public get_all_options gives values, which cannot tell a flag
  given with its default from one left out.
ViewsKept relies on a view holding no state of its own (its class docstring);
tests/deploy/test_cli.py pins that kept views behave as new ones.
"""
import argparse
from typing import Dict, FrozenSet, Optional, Type

from apache_beam.options.pipeline_options import PipelineOptions, _BeamArgumentParser

from autoais.models import hub
from autoais.schemas.errors import ConfigError
from autoais.transforms.scoring.config import scorer_config
from autoais.transforms.scoring.registry import add_scorer_flags, scorer_flags
from autoais.transforms.scoring.scorer import Scorer


class JobArguments:
  """A job's argument group in Beam's parser, adding each flag once.

  Beam registers every PipelineOptions subclass in one parser (get_all_options,
  and parse_options in beam_jobs/parsing.py), and jobs share flag names
  (--output_dir, --corpus, --gold, --seed, ...): a flag another job's options
  already added is skipped (argparse refuses a second declaration of a flag with
  ArgumentError), and every declaration of a flag in the process must have the
  same type and default, which is checked here against the first.

      group = JobArguments(parser, "evaluate")
      group.add_argument("--corpus", default=None, help=...)
  """
  # flag: (type, default) of its first declaration in this process.
  _declared: Dict[str, tuple] = {}

  def __init__(self, parser, title: str):
    self._parser = parser
    self._group = parser.add_argument_group(title)

  def add_argument(self, flag: str, **kwargs) -> None:
    declared = (kwargs.get("type"), kwargs.get("default"))
    first = self._declared.setdefault(flag, declared)
    if first != declared:
      raise ValueError(f"{flag} is declared by two jobs with different types or "
                       f"defaults: {first} and {declared}")
    try:
      self._group.add_argument(flag, **kwargs)
    except argparse.ArgumentError:
      # "conflicting option string": another class's options added it to this
      # parser; a job's with the same type and default (checked above), and
      # any class's with the same default.
      existing = self._parser.get_default(kwargs.get("dest", flag.lstrip("-").replace("-", "_")))
      if existing != declared[1]:
        raise ValueError(f"{flag} is declared by two jobs with different defaults: "
                         f"{existing!r} and {declared[1]!r}") from None


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
  """The attribution scorer flags every job that scores shares, made from the
  families' table (transforms/scoring/registry.py)."""

  @classmethod
  def _add_argparse_args(cls, parser):
    add_scorer_flags(parser.add_argument_group("scorer"), scorer_flags())


class RunOptions(PipelineOptions):
  """Flags of how a job runs, for every job."""

  @classmethod
  def _add_argparse_args(cls, parser):
    group = parser.add_argument_group("run")
    group.add_argument("--progress_interval", type=float, default=10.0,
                       help="Seconds between progress lines on the console for "
                       "local runs (rows and model examples done, rate, ETA); 0: "
                       "none. Dataflow shows the same counters as job metrics.")


def check_bootstrap_flags(options) -> None:
  """--bootstrap_samples positive and --seed not negative, for every job with
  bootstrap intervals: numpy's generators refuse a negative seed, which failed
  the run after its rows were scored."""
  if options.bootstrap_samples < 1:
    raise ConfigError("--bootstrap_samples must be positive")
  if options.seed < 0:
    raise ConfigError("--seed must be a non-negative integer")


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
        ".csv, merged and written on N workers: a system's rows in one shard "
        "(agreement: an input file's), picked by a hash of its name, so every "
        "file's bytes depend on the "
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


def options_parser(*classes: Type[PipelineOptions], **parser_args) -> _BeamArgumentParser:
  """A strict parser (no abbreviations) of the flags `classes` declare;
  `parser_args` go to the parser (usage, description, add_help, ...)."""
  # Beam's parser, not argparse's: any PipelineOptions subclass imported in the
  # process is parsed with a job's flags (Beam's get_all_options does the same),
  # and a template's declares flags with its add_value_provider_argument.
  # _add_argparse_args is how a class declares its flags; Beam's get_all_options
  # calls it the same way.
  parser = _BeamArgumentParser(allow_abbrev=False, **parser_args)
  for cls in classes:
    cls._add_argparse_args(parser)  # pylint: disable=protected-access
  return parser


def option_dests(options_class: Type[PipelineOptions]) -> FrozenSet[str]:
  """The names (dests) of the flags `options_class` declares."""
  # argparse lists a parser's flags only in _actions: a parse of no flags would
  # list them too, but exits where a class declares a required flag (any
  # PipelineOptions subclass imported in the process is read: autoais/api.py).
  return frozenset(action.dest for action in options_parser(options_class)._actions  # pylint: disable=protected-access
                   if action.dest != "help")


def given_flags(options: PipelineOptions,
                options_class: Type[PipelineOptions]) -> FrozenSet[str]:
  """The dests of `options_class`'s flags that the command line gave, with any
  value (its default's too): a flag's default cannot tell "given" from "left
  out". Read from the flags the options were parsed from (Beam keeps them in
  _flags: its public get_all_options gives values only)."""
  return dests_given(options_parser(options_class), getattr(options, "_flags", None) or [],
                     option_dests(options_class))


def dests_given(parser: argparse.ArgumentParser, argv, dests) -> FrozenSet[str]:
  """Those of `dests` that `argv` gives to `parser`, with any value (its
  default's too); `autoais serve`'s parser is asked the same way."""
  # argparse sets a flag's default only where the namespace lacks the attribute:
  # one that still holds the marker after the parse was not given.
  left_out = object()
  namespace = argparse.Namespace(**dict.fromkeys(dests, left_out))
  parser.parse_known_args(list(argv), namespace=namespace)
  return frozenset(dest for dest in dests if getattr(namespace, dest) is not left_out)


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

