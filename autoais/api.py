"""The Python API: every job as a function, a scorer to call, the AutoAIS inputs.

    import autoais

    result = autoais.evaluate(predictions="runs/*.csv", corpus="corpus/",
                              gold="NQ-open.dev.jsonl", output_dir="out/")
    result.output_dir        # "out/"
    result.leaderboard       # [{"system_name": ..., "string_match": ..., ...}, ...]
                             # (a model's figure: "autoais")
    result.run               # run.json as a dict

    scorer = autoais.load_scorer("t5", model="google/t5_xxl_true_nli_mixture",
                                 dtype="bfloat16", device="cuda")
    scorer.score([autoais.premise(passage)],
                 [autoais.hypothesis("who wrote hamlet", "Shakespeare")])  # [0.97]

A job function takes the job's flags as keyword arguments, named as the flags
(`output_dir=` for `--output_dir`, `direct_num_workers=` for Beam's), and runs
the job in this process as `autoais JOB` does: the same checks, the same
outputs, the same file-safety rules. A value that is None is left out; True and
False are written true / false; a list or tuple of paths is joined with commas
(the jobs' inputs take comma lists). An unknown keyword is refused, as an
unknown flag is. Errors are raised, not returned: a bad configuration or an
unusable input as ConfigError / InputError / CorpusError / ModelError (the CLI's
exit code 2), a failed run as JobFailed (exit code 1).

The package's own modules are reached through `autoais.` only, so a project's
own `models`, `schemas` or `transforms` packages do not get in the way.
"""
import csv
import io
import json
import re
import warnings
from typing import Any, Dict, List, Optional, Sequence

# Off in a call unless verbose=True (the command's default prints them).
_PROGRESS = "progress_interval"
# The per-system table each job writes (the CSV a leaderboard is read from);
# jobs without one have none.
_LEADERBOARDS = {"evaluate": "leaderboard.csv", "claims": "claims.csv",
                 "citations": "citations.csv", "audit": "audit.csv", "sck": "sck.csv",
                 "compare": "compare_systems.csv"}
# The record a run writes last: run.json, corpus.json for build-corpus, the
# model card for finetune.
_RECORDS = {"build-corpus": "corpus.json", "finetune": "model_card.json"}
# Columns of those tables that name things: never read as numbers, even where
# every name looks like one (a system called 2023).
_NAME_COLUMNS = frozenset({"system_name", "intent", "dataset", "system"})


class JobResult:
  """What a finished job left: `output_dir`, `run` (its run.json, or
  corpus.json for build-corpus), `leaderboard` (the rows of its per-system
  table, where the job writes one: leaderboard.csv of evaluate, claims.csv,
  citations.csv, audit.csv, sck.csv; else None) and `exit_code` (0, or the
  code of a run that finished with a warning status). `table(name)` reads any
  CSV the job wrote."""

  def __init__(self, job: str, output_dir: str, exit_code: int, console: str = ""):
    self.job = job
    self.output_dir = output_dir
    self.exit_code = exit_code
    self.console = console
    self.run = json.loads(_read_text(output_dir, _RECORDS.get(job, "run.json")))
    leaderboard = _LEADERBOARDS.get(job)
    self.leaderboard = self.table(leaderboard) if leaderboard else None

  def table(self, name: str) -> List[Dict[str, Any]]:
    """The rows of the CSV file `name` ("leaderboard" or "leaderboard.csv") in
    the output directory (of its shards in order, `{stem}-SSSSS-of-NNNNN.csv`,
    where the run wrote it with --num_shards), as dicts keyed by its header: a
    column whose every non-empty cell is a number holds ints or floats (names
    excepted), one of true / false cells bools, an empty cell is None. A name
    the run did not write raises FileNotFoundError naming the tables it did."""
    from apache_beam.io.filesystems import FileSystems  # pylint: disable=import-outside-toplevel
    from autoais.transforms.rows.merge import row_table_parts  # pylint: disable=import-outside-toplevel
    name = name if name.endswith(".csv") else f"{name}.csv"
    directory = str(self.output_dir).rstrip("/")
    parts = row_table_parts(directory, name) or [name]
    if not FileSystems.exists(FileSystems.join(directory, parts[0])):
      found = FileSystems.match([FileSystems.join(directory, "*.csv")])[0].metadata_list
      written = sorted({re.sub(r"-\d{5}-of-\d{5}\.csv$", ".csv", path.rsplit("/", 1)[-1])
                        .removesuffix(".csv") for path in (meta.path for meta in found)})
      raise FileNotFoundError(
          f"{self.job} wrote no {name} in {directory}; its tables: "
          f"{', '.join(written) or 'none'}")
    rows = []
    for part in parts:
      rows.extend(csv.DictReader(io.StringIO(_read_text(self.output_dir, part))))
    return _typed_rows(rows)

  def __repr__(self) -> str:
    return (f"JobResult(job={self.job!r}, output_dir={self.output_dir!r}, "
            f"status={self.run.get('status')!r})")


def _read_text(directory: str, name: str) -> str:
  from apache_beam.io.filesystem import CompressionTypes  # pylint: disable=import-outside-toplevel
  from apache_beam.io.filesystems import FileSystems  # pylint: disable=import-outside-toplevel
  path = FileSystems.join(str(directory).rstrip("/"), name)
  with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as f:
    return f.read().decode("utf-8")


def _number(text: str):
  try:
    return int(text)
  except ValueError:
    return float(text)


_BOOLS = {"true": True, "false": False}


def _typed_rows(rows: List[Dict[str, str]]) -> List[Dict[str, Any]]:
  """Cells as Python values, column by column: numbers, bools (a column of
  true / false only: 'false' read as a string would be truthy), text."""
  kinds = {}
  for column in (rows[0] if rows else {}):
    cells = [row[column] for row in rows if row[column] not in ("", None)]
    if column in _NAME_COLUMNS or not cells:
      continue
    if all(cell in _BOOLS for cell in cells):
      kinds[column] = _BOOLS.get
      continue
    try:
      for cell in cells:
        _number(cell)
    except ValueError:
      continue
    kinds[column] = _number
  return [{column: None if value in ("", None) else
           kinds[column](value) if column in kinds else value
           for column, value in row.items()} for row in rows]


def _flag_value(value: Any) -> str:
  if isinstance(value, bool):
    return "true" if value else "false"
  if isinstance(value, (list, tuple)):
    return ",".join(str(item) for item in value)
  return str(value)


def flags_to_argv(flags: Dict[str, Any]) -> List[str]:
  """Keyword arguments as the command line's flags (`--name=value`); None is
  left out."""
  return [f"--{name}={_flag_value(value)}" for name, value in flags.items()
          if value is not None]


def run(job: str, verbose: bool = False, **flags) -> Optional[JobResult]:
  """Runs `job` (a name of `autoais JOB`, e.g. "evaluate" or "build-corpus") with
  `flags`; see the module docstring. `verbose`: print what the command prints
  (else it is kept in the result's `console`)."""
  import contextlib  # pylint: disable=import-outside-toplevel
  import importlib  # pylint: disable=import-outside-toplevel
  from autoais.beam_jobs.cli import JOBS  # pylint: disable=import-outside-toplevel
  from autoais.beam_jobs.running import CONFIGURATION_ERRORS, errors_raised  # pylint: disable=import-outside-toplevel
  from autoais.schemas.errors import ConfigError, JobFailed  # pylint: disable=import-outside-toplevel
  if job not in JOBS:
    raise ConfigError(f"unknown job {job!r}: choose from {', '.join(JOBS)}")
  _check_keywords(job, flags)
  module = importlib.import_module(JOBS[job])
  if not verbose and job != "serve" and _PROGRESS in _dests(job) and flags.get(
      _PROGRESS) is None:
    flags[_PROGRESS] = 0
  console = io.StringIO()
  quiet = (contextlib.nullcontext() if verbose or job == "serve" else
           _redirected(console))
  try:
    with errors_raised(), quiet:
      code = module.run(flags_to_argv(flags))
  except CONFIGURATION_ERRORS as error:
    raise _from_here(error) from None
  except SystemExit as exit_:
    # argparse refuses a value it cannot parse by exiting, its message on
    # stderr: raised as every other refusal is, with that message.
    said = [line for line in console.getvalue().splitlines() if "error:" in line]
    raise ConfigError(said[-1] if said else f"autoais {job}: a flag was refused "
                      f"(exit {exit_.code}; its message is above)") from None
  if code in (1, 2):  # serve reports its errors itself, as the command does
    raise (JobFailed if code == 1 else ConfigError)(
        f"autoais {job} exited with code {code} (its message is above)")
  if job == "serve":
    return None
  output_dir = flags.get("output") if job == "build-corpus" else flags.get("output_dir")
  result = JobResult(job, str(output_dir), code, console.getvalue())
  if code != 0:
    warnings.warn(f"autoais {job}: the run finished with status "
                  f"{result.run.get('status')!r} (exit code {code}); see run.json",
                  stacklevel=3)
  return result


def _redirected(sink: io.StringIO):
  """What the command prints (stdout, and its own lines on stderr) into `sink`."""
  import contextlib  # pylint: disable=import-outside-toplevel
  stack = contextlib.ExitStack()
  stack.enter_context(contextlib.redirect_stdout(sink))
  stack.enter_context(contextlib.redirect_stderr(sink))
  return stack


def _dests(job: str) -> set:
  return {action.dest for _, actions in _flag_groups(job) for action in actions}


def _check_keywords(job: str, flags: Dict[str, Any]) -> None:
  """Refuses a keyword that is no flag of the job (nor Beam's), in the
  keyword's own form, with the flag it most likely meant."""
  from autoais.beam_jobs.options import option_dests  # pylint: disable=import-outside-toplevel
  from autoais.beam_jobs.parsing import near_miss  # pylint: disable=import-outside-toplevel
  from autoais.schemas.errors import ConfigError  # pylint: disable=import-outside-toplevel
  own = _dests(job)
  unknown = [name for name in flags if name not in own]
  if not unknown:
    return
  beam = set()
  if _is_beam_job(job):
    from apache_beam.options.pipeline_options import PipelineOptions  # pylint: disable=import-outside-toplevel
    beam = {dest for cls in PipelineOptions.__subclasses__()
            if not cls.__module__.startswith("autoais.") for dest in option_dests(cls)}
  # Beam's own options (runner=, direct_num_workers=, ...) are left to the job's
  # parser, which knows the runner's; another job's flag is refused there too.
  wrong = [name for name in unknown if name not in beam]
  if not wrong:
    return
  from autoais.beam_jobs.cli import JOBS  # pylint: disable=import-outside-toplevel
  others = set()
  for other in JOBS:
    if other != job:
      others |= _dests(other)
  said = []
  for name in wrong:
    meant = near_miss(name, own)
    said.append(f"{name}=" + (f" (did you mean {meant}=?)" if meant else
                              " (another job's flag)" if name in others else ""))
  raise ConfigError(f"{job.replace('-', '_')}() got unknown keyword argument(s): "
                    + ", ".join(said))


# ----------------------------------------------------------------------------
# A function per job, made from the job's flags: `autoais.evaluate(...)` has
# the signature and docstring of `autoais evaluate`'s flags, and a job added
# to beam_jobs/cli.py JOBS gets its function with no edit here.


def job_names() -> List[str]:
  """The Python names of the jobs (`build_corpus` for `autoais build-corpus`)."""
  from autoais.beam_jobs.cli import JOBS  # pylint: disable=import-outside-toplevel
  return [job.replace("-", "_") for job in JOBS]


def _is_beam_job(job: str) -> bool:
  """False for serve and finetune: one process with its own argument_parser(),
  which takes no Beam pipeline options."""
  import importlib  # pylint: disable=import-outside-toplevel
  from autoais.beam_jobs.cli import JOBS  # pylint: disable=import-outside-toplevel
  return _options_class(importlib.import_module(JOBS[job])) is not None


def _options_class(module):
  """The PipelineOptions subclass a job module defines (each defines one), or
  None for a job that is not a Beam job (serve: its argument_parser)."""
  from apache_beam.options.pipeline_options import PipelineOptions  # pylint: disable=import-outside-toplevel
  for value in vars(module).values():
    if (isinstance(value, type) and issubclass(value, PipelineOptions)
        and value.__module__ == module.__name__):
      return value
  return None


def _flag_groups(job: str):
  """[(title, [argparse actions])]: the job's own flags, then the shared ones it
  takes (scorer flags, row tables), then the run flags (progress)."""
  import importlib  # pylint: disable=import-outside-toplevel
  from autoais.beam_jobs.cli import JOBS  # pylint: disable=import-outside-toplevel
  from autoais.beam_jobs.options import options_parser  # pylint: disable=import-outside-toplevel
  from autoais.beam_jobs.parsing import job_options  # pylint: disable=import-outside-toplevel
  module = importlib.import_module(JOBS[job])
  options_class = _options_class(module)
  if options_class is None:
    parser = module.argument_parser()
    return [(f"{job}'s flags", [a for a in parser._actions if a.dest != "help"])]  # pylint: disable=protected-access
  groups = []
  for cls in job_options(options_class):
    actions = [a for a in options_parser(cls)._actions if a.dest != "help"]  # pylint: disable=protected-access
    title = (f"{job}'s flags" if cls is options_class else
             "scorer flags (docs/scorers.md)" if cls.__name__ == "ScorerOptions" else
             "run flags" if cls.__name__ == "RunOptions" else
             f"{cls.__name__.removesuffix('Options').lower()} flags")
    groups.append((title, actions))
  return groups


def _annotation(action):
  kind = action.type
  if getattr(kind, "__name__", "") in ("boolean_flag", "_boolean") or isinstance(
      action.default, bool):
    kind = bool
  elif kind not in (int, float):
    kind = str
  return Optional[kind] if action.default is None else kind


def _described(action) -> str:
  text = (action.help or "").replace("%%", "%")
  if action.choices:
    text += f" One of: {', '.join(map(str, action.choices))}."
  return text


def _job_function(job_name: str):
  """The function that runs `job_name` (its Python name) with its flags as
  typed keyword arguments."""
  import inspect  # pylint: disable=import-outside-toplevel
  import textwrap  # pylint: disable=import-outside-toplevel
  job = job_name.replace("_", "-")
  groups = _flag_groups(job)
  parameters, documented = [], []
  for title, actions in groups:
    documented.append(f"\n{title[0].upper()}{title[1:]}:")
    for action in actions:
      default, annotation, said = action.default, _annotation(action), repr(action.default)
      if action.dest == _PROGRESS and job != "serve":
        # run() turns progress lines off unless verbose: the signature says so.
        default, annotation = None, Optional[float]
        said = f"None: off, or with verbose=True the command's {action.default!r}"
      parameters.append(inspect.Parameter(
          action.dest, inspect.Parameter.KEYWORD_ONLY, default=default,
          annotation=annotation))
      documented.append(textwrap.fill(
          f"{action.dest} (default {said}): {_described(action)}",
          width=78, initial_indent="  ", subsequent_indent="      "))
  parameters.append(inspect.Parameter("verbose", inspect.Parameter.KEYWORD_ONLY,
                                      default=False, annotation=bool))
  beam = _is_beam_job(job)
  if beam:
    parameters.append(inspect.Parameter("beam_options", inspect.Parameter.VAR_KEYWORD))

  def function(**flags):
    return run(job, **flags)

  import importlib  # pylint: disable=import-outside-toplevel
  from autoais.beam_jobs.cli import JOBS  # pylint: disable=import-outside-toplevel
  summary = (importlib.import_module(JOBS[job]).__doc__ or job).strip().split("\n\n")[0]
  function.__name__ = function.__qualname__ = job_name
  function.__module__ = __name__
  function.__signature__ = inspect.Signature(
      parameters, return_annotation=None if job == "serve" else JobResult)
  function.__doc__ = "\n".join([
      f"`autoais {job}` in this process; returns "
      + ("when the server stops (SIGTERM)." if job == "serve" else
         "its JobResult (docs/python-api.md)."),
      "", summary, "",
      textwrap.fill(
          "Every flag is a keyword argument named as the flag (None: left out). "
          "verbose=True prints what the command prints (the summary table, "
          "progress); else it is kept in result.console."
          + (" Beam's pipeline options (runner=, direct_num_workers=, ...) are "
             "keywords too." if beam else ""), width=78),
      *documented])
  return function


_JOB_FUNCTIONS: Dict[str, Any] = {}


def __getattr__(name: str):
  if not name.startswith("_") and name in job_names():
    if name not in _JOB_FUNCTIONS:
      _JOB_FUNCTIONS[name] = _job_function(name)
    return _JOB_FUNCTIONS[name]
  raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
  return sorted(set(globals()) | set(job_names()))


def premise(passage: str) -> str:
  """The NLI premise of a corpus passage (`« title » « headings » text`, or any
  text, used as it is): `{headings}. {text}`."""
  from autoais.transforms.corpus.passages import nli_premise, parse_passage  # pylint: disable=import-outside-toplevel
  return nli_premise(parse_passage(passage))


def hypothesis(question: str, answer: str) -> str:
  """The AutoAIS hypothesis: `The answer to the question '{question}' is '{answer}'`."""
  from autoais.transforms.scoring.examples import qa_hypothesis  # pylint: disable=import-outside-toplevel
  return qa_hypothesis(question, answer)


class LoadedScorer:
  """A scorer family's model, loaded once in this process (see load_scorer)."""

  def __init__(self, scorer, handler):
    self._scorer = scorer
    self._handler = handler
    self._model = None

  @property
  def description(self) -> Dict[str, Any]:
    """The scorer's fields as run.json records them (from the flags)."""
    return self._scorer.describe()

  def score(self, premises: Sequence[str], hypotheses: Sequence[str]) -> List[float]:
    """nli_score of each (premise, hypothesis) pair, in order, as the jobs
    compute it (windows over long premises, the family's chunking). A pair the
    model cannot score (a hosted model's refusal, a blank MiniCheck document)
    raises ModelError naming its position."""
    from autoais.schemas import AttributionExample, ScoringFailure  # pylint: disable=import-outside-toplevel
    from autoais.schemas.errors import ModelError  # pylint: disable=import-outside-toplevel
    premises, hypotheses = list(premises), list(hypotheses)
    if len(premises) != len(hypotheses):
      raise ValueError(f"{len(premises)} premises but {len(hypotheses)} hypotheses")
    for name, texts in (("premises", premises), ("hypotheses", hypotheses)):
      if not all(isinstance(text, str) for text in texts):
        raise TypeError(f"{name} must be strings")
    if self._model is None:
      self._model = self._handler.load_model()
    batch_size = self._handler.batch_elements_kwargs().get("max_batch_size") or 64
    scores = []
    for start in range(0, len(premises), batch_size):
      batch = [AttributionExample(premise_, hypothesis_, hypothesis_, premise_)
               for premise_, hypothesis_ in zip(premises[start:start + batch_size],
                                                hypotheses[start:start + batch_size])]
      for offset, result in enumerate(self._handler.run_inference(batch, self._model)):
        if isinstance(result.inference, ScoringFailure):
          raise ModelError(f"pair {start + offset} was not scored: "
                           f"{result.inference.message}")
        scores.append(float(result.inference.nli_score))
    return scores


def _from_here(error: Exception) -> Exception:
  """A configuration error raised again from the API's call: its message says
  what is wrong and what to do; the frames of the checks (and a hub client's
  network errors) behind it would bury it in a notebook."""
  return type(error)(str(error))


def load_scorer(family: str, **flags) -> LoadedScorer:
  """A scorer of (premise, hypothesis) pairs: `family` is a `--scorer` of the
  jobs (t5, nli-classifier, minicheck, hhem, factcg, lettucedetect, remote, vertex,
  llm-judge) and `flags` are its flags as keywords (model=, dtype=, device=, endpoint=, ...), checked as
  the jobs check them; the model loads at the first `score` call. string-match
  is refused: it matches an answer in a passage and reads no premise."""
  from apache_beam.options.pipeline_options import PipelineOptions  # pylint: disable=import-outside-toplevel
  from autoais.beam_jobs.options import ScorerOptions, option_dests, scorer_from_options  # pylint: disable=import-outside-toplevel
  from autoais.beam_jobs.parsing import parse_options  # pylint: disable=import-outside-toplevel
  from autoais.beam_jobs.running import CONFIGURATION_ERRORS  # pylint: disable=import-outside-toplevel
  from autoais.schemas.errors import ConfigError  # pylint: disable=import-outside-toplevel
  if "scorer" in flags:
    raise ConfigError("name the family as load_scorer's first argument, not scorer=")
  unknown = sorted(set(flags) - option_dests(ScorerOptions))
  if unknown:
    # parse_options knows every job's flags once their modules are imported:
    # refuse a job's flag here rather than let it be ignored.
    raise ConfigError(f"load_scorer takes scorer flags only, not "
                      f"{', '.join(f'{name}=' for name in unknown)}")
  unused = sorted(set(flags) & {"threshold", "score_cache", "large_model"})
  if unused:
    # score() returns nli_scores from a model loaded in this process: no
    # decision is taken, no cache read, no model shared across processes.
    raise ConfigError(f"load_scorer's score() returns each pair's nli_score from the "
                      f"model loaded here, so {', '.join(f'{name}=' for name in unused)} "
                      "would change nothing (decide with nli_score > threshold; the score "
                      "cache and a shared model are the jobs')")
  try:
    options = parse_options(flags_to_argv(dict(scorer=family, **flags)), ScorerOptions)
    scorer = scorer_from_options(options.view_as(PipelineOptions), local_run=True)
  except CONFIGURATION_ERRORS as error:
    raise _from_here(error) from None
  handler = scorer.model_handler()
  if handler is None:
    raise ConfigError(f"--scorer {family} scores an answer against a passage, not a "
                      "premise and a hypothesis: load_scorer takes t5, nli-classifier, "
                      "minicheck, hhem, factcg, lettucedetect, remote, vertex or llm-judge")
  return LoadedScorer(scorer, handler)
