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
from autoais.transforms.scoring.names import JUDGE_APIS, SCORERS, STRING_MATCH
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
  # argparse sets a flag's default only where the namespace lacks the attribute:
  # one that still holds the marker after the parse was not given.
  left_out = object()
  namespace = argparse.Namespace(**dict.fromkeys(option_dests(options_class), left_out))
  flags = getattr(options, "_flags", None) or []
  options_parser(options_class).parse_known_args(list(flags), namespace=namespace)
  return frozenset(dest for dest, value in vars(namespace).items() if value is not left_out)


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

