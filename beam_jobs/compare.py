"""compare: what changed between two `autoais evaluate` runs (or two `autoais
claims` runs, two `autoais citations` runs, or two `autoais agreement` runs of
one labelled set), with the statistics to trust it.

    autoais compare --baseline LAST_NIGHT_DIR --candidate TONIGHT_DIR --output_dir OUT \
        [--fail_on_regression POINTS] [--allow_changed_scorer true] \
        [--bootstrap_samples 1000] [--seed 0]
    python -m autoais.beam_jobs.compare ...

Reads each run's run.json, its per-system summary (leaderboard.json; claims:
claims.json; agreement: agreement.json, per group of items; citations:
citations.json) and its row table (ratings.parquet; claims_rows.parquet;
agreement_rows.parquet; citations_rows.parquet; or their shards), local or
gs://. Refuses (exit 2, saying why) two runs whose
scorer differs (name, family, model or tokenizer checksum, threshold, decision
mode, dtype) unless --allow_changed_scorer, two runs over different gold
answers (file name, question count, or content where run.json records its
gold_digest), two claims runs with different
--evidence_mode, two citations runs that cut or split answers differently
(--at_most_citations, --qampari, the sentence splitter), two agreement runs
of different formats or input files, runs of two different jobs, and runs of a job compare does not read. The rows are joined by system and question in the pipeline
(transforms/compare/steps.py).

Outputs in --output_dir: compare.csv / compare.parquet (the rows both runs
scored whose decision flipped, with both answers, passages and scores, most
lowered score first; with gold, also a question rated Y in one run alone),
compare_systems.csv, compare.json and compare.md (per system: AutoAIS of both
runs, with gold over every gold question as the leaderboards count it, else
over the questions both scored (citations: citation recall, and citation
precision beside it), the change of
AutoAIS, EM and F1 in points with a 95% paired-bootstrap interval, McNemar's
exact test, the leaderboards' headline AutoAIS; systems added and removed),
report.html (a forest plot of the changes), dead_letter.jsonl and run.json,
written last. With --fail_on_regression POINTS, a system whose AutoAIS fell by
more than POINTS with an interval below 0 makes run.json's status "regression"
and the exit code 3, after every output is written (agreement runs: its
balanced accuracy against the human labels fell).
"""
if __name__ == "__main__":
  # `python -m autoais.beam_jobs.compare`: run the package module (Beam pickles
  # DoFns by reference).
  import sys
  from autoais.beam_jobs.compare import run
  sys.exit(run())

import json
from typing import Dict, List

import apache_beam as beam
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems
from apache_beam.options.pipeline_options import PipelineOptions

from autoais.beam_jobs.options import JobArguments, ViewsKept, check_bootstrap_flags
from autoais.beam_jobs.running import run_job
from autoais.beam_jobs.output_dir import OutputDir
from autoais.schemas import DeadLetter
from autoais.schemas.errors import ConfigError, require
from autoais.transforms.compare.steps import (ROW_KINDS, RUNS, CompareRatings, RowKind,
                                              headlines)
from autoais.transforms.compare.tables import WriteCompareFiles
from autoais.transforms.rows.merge import row_table_parts
from autoais.transforms.rows.run_record import REGRESSION, RunRecord, WriteRunRecord
from autoais.transforms.scoring.flags import boolean_flag
from autoais.transforms.scoring.label import (compared_measure, measure_name, named_figures,
                                              scored_by)
from autoais.transforms.scoring.scorer import SCORE_IDENTITY

OUTPUT_FILES = ("run.json", "compare.csv", "compare.parquet", "compare_systems.csv",
                "compare.json", "compare.md", "report.html", "dead_letter.jsonl")
# The scorer fields of run.json that make two runs' decisions comparable.
SCORER_FIELDS = ("name", "family", "weights_sha256", "tokenizer_sha256", "threshold",
                 "decision", "dtype", "positive_label", "model_commit")


class CompareOptions(ViewsKept, PipelineOptions):
  """compare's flags."""

  @classmethod
  def _add_argparse_args(cls, parser):
    group = JobArguments(parser, "compare")
    group.add_argument("--baseline", help="The earlier evaluate (claims, citations, "
                       "agreement) run's output directory (local or gs://).")
    group.add_argument("--candidate", help="The later run's output directory (the "
                       "same job as --baseline).")
    group.add_argument("--output_dir", help="Directory for the outputs.")
    group.add_argument("--allow_changed_scorer", type=boolean_flag, default=False,
                       help="true: compare runs whose scorers differ (the change of "
                       "model is then the subject; the outputs say so).")
    group.add_argument("--fail_on_regression", type=float, default=None,
                       help="Exit 3 (run.json status \"regression\") when a system's "
                       "AutoAIS (citations: citation recall; agreement runs: a "
                       "group's balanced accuracy, its accuracy where the items hold "
                       "one label) fell "
                       "by more than this many points with a 95%% interval below 0.")
    group.add_argument("--bootstrap_samples", type=int, default=1000,
                       help="Bootstrap resamples for 95%% CIs (default 1000).")
    group.add_argument("--seed", type=int, default=0, help="Bootstrap seed.")


def _read_json(path: str, flag: str, directory: str) -> Dict:
  """A run's JSON file; a directory or file that is not there is named with
  its flag, as the user gave it."""
  if not FileSystems.exists(path):
    if not FileSystems.exists(directory):
      raise ConfigError(f"{flag} {directory}: no such directory")
    raise ConfigError(f"{flag} {directory}: no {path.rsplit('/', 1)[-1]} there: not "
                      f"the output directory of a finished run of "
                      f"{' or '.join(ROW_KINDS)}")
  try:
    with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as f:
      return json.loads(f.read().decode("utf-8"))
  except (OSError, IOError) as error:
    raise ConfigError(f"{flag} {path}: cannot be read: {error}") from error
  except ValueError as error:
    raise ConfigError(f"{path}: not JSON: {error}") from error


def _row_table_files(kind: RowKind, flag: str, directory: str) -> List[str]:
  """The run's row table, or its shards (--num_shards)."""
  parts = row_table_parts(directory, kind.table)
  if not parts:
    raise ConfigError(f"{flag} {directory}: no {kind.table} (nor its shards): "
                      f"not the output directory of a finished {kind.job} run")
  return [FileSystems.join(directory, part) for part in parts]


def _scorer_differences(baseline: Dict, candidate: Dict) -> List[str]:
  """What differs between two scorer blocks: SCORER_FIELDS, and where both
  runs record it, each field of their score identity (what names the scores:
  the weights or endpoint and every setting that changes a score; runs made
  before it was recorded are compared by SCORER_FIELDS alone)."""
  differences = [f"{field}: {baseline.get(field)!r} -> {candidate.get(field)!r}"
                 for field in SCORER_FIELDS if baseline.get(field) != candidate.get(field)]
  identities = [run.get(SCORE_IDENTITY) for run in (baseline, candidate)]
  if all(isinstance(identity, dict) for identity in identities):
    before, after = identities
    differences += [f"{SCORE_IDENTITY}.{key}: {before.get(key)!r} -> {after.get(key)!r}"
                    for key in sorted(set(before) | set(after))
                    if before.get(key) != after.get(key)
                    and key not in SCORER_FIELDS + ("scorer",)]
  return differences


# What makes two citations runs' sentences and decisions comparable: how the
# answers were cut into sentences and how many citations each may use.
CITATIONS_SETTINGS = (("at_most_citations", "--at_most_citations"),
                      ("qampari", "--qampari"), ("sentence_splitter", "the sentence splitter"))


def _input_differences(baseline: Dict, candidate: Dict) -> List[str]:
  """Why two runs of one job did not read comparable inputs: claims' evidence
  mode; citations' sentence cutting; agreement's format or input files (by
  name)."""
  def inputs(run):
    return run.get("inputs") or {}
  modes = [inputs(run).get("evidence_mode") for run in (baseline, candidate)]
  if modes[0] != modes[1]:
    return [f"the claims runs chose evidence differently (--evidence_mode "
            f"{modes[0]!r} -> {modes[1]!r}): a change would be the mode's, not the "
            "systems'"]
  if baseline.get("job") == "citations":
    return [f"the citations runs cut answers differently ({name}: "
            f"{inputs(baseline).get(field)!r} -> {inputs(candidate).get(field)!r}): "
            "their sentences or the citations scored are not the same"
            for field, name in CITATIONS_SETTINGS
            if inputs(baseline).get(field) != inputs(candidate).get(field)]
  if baseline.get("job") != "agreement":
    return []
  formats = [inputs(run).get("format") for run in (baseline, candidate)]
  names = [sorted(path.rstrip("/").rsplit("/", 1)[-1] for path in inputs(run).get(
      "input") or ()) for run in (baseline, candidate)]
  if formats[0] != formats[1] or names[0] != names[1]:
    return [f"the agreement runs read different labelled sets (format, files: "
            f"{formats[0]!r}, {names[0]} -> {formats[1]!r}, {names[1]}): their items "
            "are not the same"]
  return []


def _gold_differences(baseline: Dict, candidate: Dict) -> List[str]:
  """Why two runs' gold answers differ: the file's name or question count, or
  their content (gold_digest: the questions with their answers, which runs
  recorded before it was written lack)."""
  def gold(run):
    path = (run.get("inputs") or {}).get("gold")
    return (None if path is None else path.rstrip("/").rsplit("/", 1)[-1],
            run.get("n_gold"))
  if gold(baseline) != gold(candidate):
    return [f"gold (file, questions): {gold(baseline)} -> {gold(candidate)}"]
  digests = [run.get("gold_digest") for run in (baseline, candidate)]
  if None not in digests and digests[0] != digests[1]:
    return [f"gold content (gold_digest): {digests[0]} -> {digests[1]}"]
  return []


class _Plan:

  def __init__(self, options: CompareOptions):
    require(options, "baseline", "candidate", "output_dir")
    check_bootstrap_flags(options)
    if options.fail_on_regression is not None and options.fail_on_regression < 0:
      raise ConfigError("--fail_on_regression must be 0 or more points")
    self.dirs = {"baseline": options.baseline.rstrip("/"),
                 "candidate": options.candidate.rstrip("/")}
    self.runs, self.files, self.leaderboards = {}, {}, {}
    for run in RUNS:
      flag, directory = f"--{run}", self.dirs[run]
      record = _read_json(FileSystems.join(directory, "run.json"), flag, directory)
      if record.get("job") not in ROW_KINDS:
        raise ConfigError(f"{flag} {directory}: a run of {record.get('job')!r}; "
                          f"compare reads runs of {' or '.join(ROW_KINDS)}")
      if record.get("status") not in ("complete", "empty_inputs"):
        raise ConfigError(f"{flag} {directory}: run.json status "
                          f"{record.get('status')!r}: not a finished run")
      self.runs[run] = record
    jobs = [self.runs[run]["job"] for run in RUNS]
    if jobs[0] != jobs[1]:
      raise ConfigError(f"--baseline is a run of {jobs[0]!r} and --candidate of "
                        f"{jobs[1]!r}: compare reads two runs of the same job")
    self.kind = ROW_KINDS[jobs[0]]
    groupings = {}
    for run in RUNS:
      flag, directory = f"--{run}", self.dirs[run]
      self.files[run] = _row_table_files(self.kind, flag, directory)
      summary = _read_json(FileSystems.join(directory, self.kind.summary), flag,
                           directory)
      self.leaderboards[run] = headlines(self.kind, summary,
                                         measure_name(self.runs[run].get("scorer")))
      groupings[run] = tuple(summary.get("groupings") or ())
    self.groupings = groupings["candidate"]
    for difference in _input_differences(self.runs["baseline"], self.runs["candidate"]):
      raise ConfigError(difference)
    gold = _gold_differences(self.runs["baseline"], self.runs["candidate"])
    if gold:
      raise ConfigError("the runs were graded against different gold answers ("
                        + "; ".join(gold) + "): their EM and AutoAIS over gold "
                        "questions are not comparable")
    # Two evaluate runs with gold (the same, as checked): AutoAIS is compared
    # over its questions, as their leaderboards count it.
    self.gold_questions = (self.runs["candidate"].get("n_gold")
                           if self.kind.graded else None)
    self.scorer_changed = _scorer_differences(self.runs["baseline"].get("scorer", {}),
                                              self.runs["candidate"].get("scorer", {}))
    if options.allow_changed_scorer and not self.scorer_changed:
      raise ConfigError("--allow_changed_scorer true lets runs scored differently be "
                        "compared, and these two were scored alike: drop it")
    if self.scorer_changed and not options.allow_changed_scorer:
      raise ConfigError("the runs were scored differently (" + "; ".join(
          self.scorer_changed) + "): a change would be the scorer's, not the systems'. "
          "Pass --allow_changed_scorer true to compare the scorers themselves")
    labelled = self.kind.label is not None
    measure = compared_measure(*(self.runs[run].get("scorer") for run in RUNS))
    # What a regression is a fall of, as the console says it (run.json).
    if labelled:
      self.regression_measure = ("balanced accuracy (accuracy in a group whose items "
                                 "hold one label)")
    else:
      self.regression_measure = measure + (" (citation recall)" if self.kind.precision
                                           else "")
    self.header = {
        "job": self.kind.job,
        "regression_on": named_figures(
            "balanced_accuracy" if labelled else "autoais (citation recall)"
            if self.kind.precision else "autoais", measure),
        **({"regression_on_one_label": "accuracy (a group whose items hold one label "
                                       "has no balanced accuracy)"} if labelled else {}),
        "mcnemar": ("whether each decision agrees with the human label" if labelled
                    else "the paired decisions"),
        "baseline": self.dirs["baseline"], "candidate": self.dirs["candidate"],
        "scorer": self.runs["candidate"].get("scorer", {}).get("name"),
        "scorer_changed": self.scorer_changed,
        # What scored each run, as its run.json records it (named on every page).
        "scorers": {run: self.runs[run].get("scorer") for run in RUNS},
        "scored_by": {run: scored_by(self.runs[run].get("scorer")) for run in RUNS},
        "gold_compared_by": ("content (gold_digest)" if all(
            self.runs[run].get("gold_digest") for run in RUNS) else
                             "file name and question count"),
        "bootstrap": {"samples": options.bootstrap_samples, "seed": options.seed,
                      "unit": "question", "paired": True},
        **({"autoais_over": ("every gold question, as the leaderboards count it (one "
                             "a run did not rate is N there)" if self.gold_questions
                             else "the questions both runs scored")}
           if self.kind.job == "evaluate" else {}),
        "fail_on_regression": options.fail_on_regression,
        "units": {"autoais": "percent", "changes": "points"}}
    reads = {f"--{run}": self.files[run] + [FileSystems.join(self.dirs[run], name)
                                            for name in ("run.json", self.kind.summary)]
             for run in RUNS}
    self.output = OutputDir("compare", options.output_dir, OUTPUT_FILES, reads=reads,
                            read_dirs={f"--{run}": self.dirs[run] for run in RUNS})


class _CompareRecord(RunRecord):
  job = "compare"
  values = ("summary",)

  def __init__(self, plan: _Plan, fail_points):
    super().__init__()
    self._plan = plan
    self._fail_points = fail_points

  def fields(self, dead, summary):
    del dead  # the ratings are this project's own outputs: nothing is refused
    return {
        "inputs": {run: {"dir": self._plan.dirs[run], "ratings": self._plan.files[run],
                         "started_at": (self._plan.runs[run].get("timings") or {}
                                        ).get("started_at")}
                   for run in RUNS},
        "scorer": self._plan.header["scorer"],
        # Each run's: "scorer" is the candidate's alone.
        "scorers": {run: (self._plan.runs[run].get("scorer") or {}).get("name")
                    for run in RUNS},
        "scorer_changed": self._plan.scorer_changed,
        "fail_on_regression": self._fail_points,
        "regression_measure": self._plan.regression_measure,
        **summary,
    }

  def __call__(self, **side_inputs):
    record = super().__call__(**side_inputs)
    if self._fail_points is not None and record["regressions"]:
      record["status"] = REGRESSION
    return record


def build_pipeline(pipeline: beam.Pipeline, options: PipelineOptions) -> OutputDir:
  """Validates the options and the two runs, claims the output directory, then
  adds the compare steps to `pipeline`; returns the claimed OutputDir."""
  options = options.view_as(CompareOptions)
  plan = _Plan(options)
  record = _CompareRecord(plan, options.fail_on_regression)
  work_dir = plan.output.claim()
  changes = pipeline | "CompareRatings" >> CompareRatings(
      plan.kind, plan.files, FileSystems.join(work_dir, "groups"), options.bootstrap_samples,
      options.seed, options.fail_on_regression, plan.leaderboards, plan.groupings,
      plan.gold_questions)
  summary = changes | "WriteCompareFiles" >> WriteCompareFiles(
      options.output_dir, work_dir, plan.header)
  no_dead_letters = pipeline | "NoDeadLetters" >> beam.Create(
      []).with_output_types(DeadLetter)
  _ = {"dead": {"rows": no_dead_letters}, "summary": summary
       } | "WriteRunRecord" >> WriteRunRecord(options.output_dir, work_dir, record)
  return plan.output


def run(argv=None) -> int:
  return run_job("compare", argv, CompareOptions, build_pipeline)
