"""The Python API: every job as a function, a scorer to call, the AutoAIS inputs.

    import autoais

    result = autoais.evaluate(predictions="runs/*.csv", corpus="corpus/",
                              gold="NQ-open.dev.jsonl", output_dir="out/")
    result.output_dir        # "out/"
    result.leaderboard       # [{"system_name": ..., "autoais": ..., ...}, ...]
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
import warnings
from typing import Any, Dict, List, Optional, Sequence

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

  def __init__(self, job: str, output_dir: str, exit_code: int):
    self.job = job
    self.output_dir = output_dir
    self.exit_code = exit_code
    self.run = json.loads(_read_text(output_dir, _RECORDS.get(job, "run.json")))
    leaderboard = _LEADERBOARDS.get(job)
    self.leaderboard = self.table(leaderboard) if leaderboard else None

  def table(self, name: str) -> List[Dict[str, Any]]:
    """The rows of the CSV file `name` in the output directory (of its shards
    in order, `{stem}-SSSSS-of-NNNNN.csv`, where the run wrote it with
    --num_shards), as dicts keyed by its header: a column whose every non-empty cell is a number holds ints or
    floats (names excepted), an empty cell is None."""
    rows = []
    from autoais.transforms.rows.merge import row_table_parts  # pylint: disable=import-outside-toplevel
    for part in row_table_parts(str(self.output_dir).rstrip("/"), name) or [name]:
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


def _typed_rows(rows: List[Dict[str, str]]) -> List[Dict[str, Any]]:
  numeric = set()
  for column in (rows[0] if rows else {}):
    cells = [row[column] for row in rows if row[column] not in ("", None)]
    if column in _NAME_COLUMNS or not cells:
      continue
    try:
      for cell in cells:
        _number(cell)
    except ValueError:
      continue
    numeric.add(column)
  return [{column: None if value in ("", None) else
           _number(value) if column in numeric else value
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


def run(job: str, **flags) -> Optional[JobResult]:
  """Runs `job` (a name of `autoais JOB`, e.g. "evaluate" or "build-corpus") with
  `flags`; see the module docstring."""
  import importlib  # pylint: disable=import-outside-toplevel
  from autoais.beam_jobs.cli import JOBS  # pylint: disable=import-outside-toplevel
  from autoais.beam_jobs.common import errors_raised  # pylint: disable=import-outside-toplevel
  from autoais.schemas.errors import ConfigError, JobFailed  # pylint: disable=import-outside-toplevel
  if job not in JOBS:
    raise ConfigError(f"unknown job {job!r}: choose from {', '.join(JOBS)}")
  module = importlib.import_module(JOBS[job])
  with errors_raised():
    code = module.run(flags_to_argv(flags))
  if code in (1, 2):  # serve reports its errors itself, as the command does
    raise (JobFailed if code == 1 else ConfigError)(
        f"autoais {job} exited with code {code} (its message is above)")
  if job == "serve":
    return None
  output_dir = flags.get("output") if job == "build-corpus" else flags.get("output_dir")
  result = JobResult(job, str(output_dir), code)
  if code != 0:
    warnings.warn(f"autoais {job}: the run finished with status "
                  f"{result.run.get('status')!r} (exit code {code}); see run.json",
                  stacklevel=3)
  return result


def build_corpus(**flags) -> JobResult:
  """`autoais build-corpus`: passages to a sharded Parquet corpus (docs/build-corpus.md)."""
  return run("build-corpus", **flags)


def evaluate(**flags) -> JobResult:
  """`autoais evaluate`: AutoAIS, EM and F1 per system (docs/evaluate.md)."""
  return run("evaluate", **flags)


def agreement(**flags) -> JobResult:
  """`autoais agreement`: a labelled attribution set scored against its labels
  (docs/agreement.md)."""
  return run("agreement", **flags)


def ais_annotations(**flags) -> JobResult:
  """`autoais ais-annotations`: the AIS paper's tables from raw annotations
  (docs/ais-annotations.md)."""
  return run("ais-annotations", **flags)


def claims(**flags) -> JobResult:
  """`autoais claims`: claim-level attribution of long answers (docs/claims.md)."""
  return run("claims", **flags)


def citations(**flags) -> JobResult:
  """`autoais citations`: ALCE citation recall and precision (docs/citations.md)."""
  return run("citations", **flags)


def audit(**flags) -> JobResult:
  """`autoais audit`: many candidate passages per answer (docs/audit.md)."""
  return run("audit", **flags)


def sck(**flags) -> JobResult:
  """`autoais sck`: SCK answer quality (docs/sck.md)."""
  return run("sck", **flags)


def compare(**flags) -> JobResult:
  """`autoais compare`: what changed between two evaluate (or claims, or
  agreement) runs (docs/compare.md);
  `result.leaderboard` holds the systems' changes, `result.table("compare.csv")`
  the flipped rows; exit_code 3 where --fail_on_regression found one."""
  return run("compare", **flags)


def training_data(**flags) -> JobResult:
  """`autoais training-data`: labelled sets into a family's training examples,
  split by question (docs/finetune.md); `result.run["splits"]` holds the sizes
  and label balance."""
  return run("training-data", **flags)


def finetune(**flags) -> JobResult:
  """`autoais finetune`: a detector trained on training-data outputs
  (docs/finetune.md); `result.run` is its model_card.json (threshold,
  validation figures, base, data digests)."""
  return run("finetune", **flags)


def serve(**flags) -> None:
  """`autoais serve`: the NLI model over HTTP (docs/serve.md); returns when the
  server stops (SIGTERM)."""
  run("serve", **flags)


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


def load_scorer(family: str, **flags) -> LoadedScorer:
  """A scorer of (premise, hypothesis) pairs: `family` is a `--scorer` of the
  jobs (t5, nli-classifier, minicheck, remote, vertex, llm-judge) and `flags`
  are its flags as keywords (model=, dtype=, device=, endpoint=, ...), checked as
  the jobs check them; the model loads at the first `score` call. string-match
  is refused: it matches an answer in a passage and reads no premise."""
  from apache_beam.options.pipeline_options import PipelineOptions  # pylint: disable=import-outside-toplevel
  from autoais.beam_jobs.common import (ScorerOptions, option_dests, parse_options,  # pylint: disable=import-outside-toplevel
                                        scorer_from_options)
  from autoais.schemas.errors import ConfigError  # pylint: disable=import-outside-toplevel
  if "scorer" in flags:
    raise ConfigError("name the family as load_scorer's first argument, not scorer=")
  unknown = sorted(set(flags) - option_dests(ScorerOptions))
  if unknown:
    # parse_options knows every job's flags once their modules are imported:
    # refuse a job's flag here rather than let it be ignored.
    raise ConfigError(f"load_scorer takes scorer flags only, not "
                      f"{', '.join(f'{name}=' for name in unknown)}")
  options = parse_options(flags_to_argv(dict(scorer=family, **flags)), ScorerOptions)
  scorer = scorer_from_options(options.view_as(PipelineOptions), local_run=True)
  handler = scorer.model_handler()
  if handler is None:
    raise ConfigError(f"--scorer {family} scores an answer against a passage, not a "
                      "premise and a hypothesis: load_scorer takes t5, nli-classifier, "
                      "minicheck, remote, vertex or llm-judge")
  return LoadedScorer(scorer, handler)
