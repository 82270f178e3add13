"""claims: claim-level attribution of long-form answers (ExpertQA; SPEC 5.8).

    autoais claims --input ../shared/data/expertqa/rand_val.jsonl --output_dir out/ \
        [--format expertqa|jsonl] [--evidence_mode concat|max|rerank] \
        [--scorer string-match|t5 --model DIR ...] [--bootstrap_samples 1000] [--seed 0]
    python -m beam_jobs.claims ...

Input: ExpertQA records (question -> answers per system -> claims, each with its
`evidence` list and the human `support` label), or a flat JSONL of one claim a
line (`system_name, question, claim, evidence: [...], support?, answer?`); see
transforms/labelled/expertqa.py and transforms/claims/readers.py. Evidence is
cleaned as ExpertQA's auto-attribution script cleans it
(transforms/labelled/expertqa.py), claims without evidence are N, and the
evidence modes are those of transforms/claims/steps.py.

Outputs in --output_dir: claims_rows.parquet / .csv (one row per claim, sorted
by system, question, answer, claim), claims.csv / .json / .md (per system:
macro AutoAIS, mean over answers of the mean over their claims, and micro,
over claims, each with a 95% bootstrap CI over answers; the same without
abstaining answers; claims without evidence; agreement with the human `support`
label, Complete = attributable: accuracy, balanced accuracy, Cohen's kappa,
ROC-AUC of nli_score), dead_letter.jsonl, and run.json, written last, whose
claim counts reconcile: read = scored + rejected + unmatched.
"""
if __name__ == "__main__":
  # `python -m beam_jobs.claims`: run the package module (Beam pickles DoFns by
  # reference).
  import sys
  from beam_jobs.claims import run
  sys.exit(run())

import json
import time
from typing import NamedTuple, Optional

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems
from apache_beam.options.pipeline_options import PipelineOptions

from beam_jobs.common import (JobArguments, ScorerOptions, is_local_runner, require,
                              run_job, scorer_from_options)
from schemas.errors import ConfigError
from beam_jobs.output_dir import OutputDir
from schemas import (CLAIM_ROW_SCHEMA, CLAIMS_SYSTEM_SCHEMA, REJECTED, ClaimRow,
                     DeadLetter)
from transforms.claims.readers import read_claims_jsonl
from transforms.claims.steps import (CLAIM_KEY, EVIDENCE_MODES, ClaimOutcomes,
                                     ScoreClaims, claims_system_row)
from transforms.io.dead_letters import WriteDeadLetters
from transforms.io.inputs import check_input_file, data_format, match_files
from transforms.io.manifest import (SumCounts, WriteManifest, reconcile, utc_now,
                                    versions_and_timings)
from transforms.io.records import ReadRecords
from transforms.io.sorted_runs import RowRef, SpillSortedRuns, merge_run_refs
from transforms.io.summary import write_summary_files
from transforms.io.tables import SortedTableWriter
from transforms.labelled.expertqa import read_expertqa

OUTPUT_FILES = ("run.json", "claims_rows.parquet", "claims_rows.csv", "claims.csv",
                "claims.json", "claims.md", "dead_letter.jsonl")
FORMATS = {"expertqa": read_expertqa, "jsonl": read_claims_jsonl}


DEFAULT_FORMAT = "expertqa"


class ClaimsOptions(PipelineOptions):
  """claims' own flags; the scorer flags are beam_jobs.common.ScorerOptions."""

  @classmethod
  def _add_argparse_args(cls, parser):
    group = JobArguments(parser, "claims")
    group.add_argument("--input", help="Claim files: path, glob or comma list "
                       "(JSON Lines, optionally compressed), local or gs://.")
    group.add_argument("--output_dir", help="Directory for the outputs.")
    # No argparse default: the agreement job shares --format, without one.
    group.add_argument("--format", help="expertqa: ExpertQA records; jsonl: one claim "
                       f"a line (default {DEFAULT_FORMAT}).")
    group.add_argument("--evidence_mode", default="concat",
                       help="concat: the joined evidence, windowed by the scorer; "
                       "max: the best evidence item; rerank: ExpertQA's choice of "
                       "evidence sentences where the input is too long "
                       "(default %(default)s).")
    group.add_argument("--bootstrap_samples", type=int, default=1000,
                       help="Bootstrap resamples for 95%% CIs (default 1000).")
    group.add_argument("--seed", type=int, default=0, help="Bootstrap seed.")


class _Plan:

  def __init__(self, options: ClaimsOptions, runner):
    require(options, "input", "output_dir")
    self.format = options.format or DEFAULT_FORMAT
    if self.format not in FORMATS:
      raise ConfigError(f"--format {self.format!r}: choose from "
                        f"{', '.join(sorted(FORMATS))}")
    if options.evidence_mode not in EVIDENCE_MODES:
      raise ConfigError(f"--evidence_mode {options.evidence_mode!r}: choose from "
                        f"{', '.join(EVIDENCE_MODES)}")
    self.scorer = scorer_from_options(options, is_local_runner(runner))
    if options.bootstrap_samples < 1:
      raise ConfigError("--bootstrap_samples must be positive")
    self.files = match_files(options.input)
    if not self.files:
      raise ConfigError(f"--input {options.input!r} matches no files")
    for path in self.files:
      if data_format(path) != "jsonl":
        raise ConfigError(f"{path}: claims are read from JSON Lines files")
      check_input_file(path)
    self.output = OutputDir(
        "claims", options.output_dir, OUTPUT_FILES, reads={"--input": self.files},
        read_dirs={"--model": options.view_as(ScorerOptions).model})


class _MergedClaim(NamedTuple):
  """The fields of a claim row that the writer reads as Python values."""
  system_name: str
  question: str
  source_file: str
  answer_line: int
  auto_ais: str
  nli_score: Optional[float]
  n_evidence: int
  human_label: Optional[str]
  abstained: bool


class _WriteClaimRowsFn(beam.DoFn):
  """Merges the sorted claim runs: keeps the first answer per (system,
  question), writes claims_rows.parquet / .csv, and emits one ClaimOutcomes per
  system (rows arrive sorted by system)."""

  def __init__(self, output_dir: str):
    self._output_dir = output_dir

  def process(self, unused_impulse, shard_runs):
    runs = [run for _, run in shard_runs]
    kept_claims = 0
    answer = None  # (system, question, source_file, answer_line) of the kept answer
    outcomes = None
    with SortedTableWriter(self._output_dir, "claims_rows", CLAIM_ROW_SCHEMA) as table:
      for ref in merge_run_refs(runs, _MergedClaim._fields, CLAIM_KEY):
        row = _MergedClaim._make(ref.values)
        origin = (row.system_name, row.question, row.source_file, row.answer_line)
        new_answer = answer is None or origin != answer
        if new_answer and answer is not None and origin[:2] == answer[:2]:
          yield beam.pvalue.TaggedOutput("dead_letter", _duplicate(ref, answer))
          continue
        answer = origin
        if outcomes is None or outcomes.system_name != row.system_name:
          if outcomes is not None:
            yield outcomes
          outcomes = ClaimOutcomes(row.system_name)
        outcomes.add(new_answer, row.auto_ais == "Y", row.n_evidence > 0,
                     row.human_label, row.nli_score, row.abstained)
        kept_claims += 1
        table.add(ref)
      if outcomes is not None:
        yield outcomes
    yield beam.pvalue.TaggedOutput("stats", {"scored": kept_claims})


def _duplicate(ref: RowRef, kept) -> DeadLetter:
  row = ClaimRow(**ref.batch.slice(ref.index, 1).to_pylist()[0])
  return DeadLetter(
      row.source_file, row.source_line, REJECTED, "duplicate_answer", "question",
      f"{row.source_file}:{row.source_line}: field 'question': claim "
      f"{row.claim_index} of system {row.system_name!r}: the system already "
      f"answered this question at {kept[2]}:{kept[3]}; the first answer is kept",
      json.dumps({"system_name": row.system_name, "question": row.question,
                  "claim_index": row.claim_index, "claim": row.claim},
                 ensure_ascii=False))


class _SystemRowFn(beam.DoFn):

  def __init__(self, bootstrap_samples: int, seed: int):
    self._samples = bootstrap_samples
    self._seed = seed

  def process(self, outcomes: ClaimOutcomes):
    yield claims_system_row(outcomes, self._samples, self._seed)


def _percent(value) -> str:
  return "" if value is None else f"{value * 100:.1f}"


def claims_markdown(rows) -> str:
  lines = [
      "Claim-level AutoAIS in % (claims without evidence count as N); macro: mean "
      "over answers of the mean over their claims; micro: over claims; 95% "
      "bootstrap CIs over answers in brackets. Human agreement against `support` "
      "(Complete = attributable).",
      "",
      "| system | answers | claims | without evidence | abstaining | macro | micro | "
      "macro w/o abstaining | micro w/o abstaining | labelled | human AIS | "
      "accuracy | balanced accuracy | kappa | ROC-AUC |",
      "|---|---:|---:|---:|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
  ]
  for row in rows:
    kappa = "" if row.human_kappa is None else f"{row.human_kappa:.3f}"
    auc = "" if row.human_roc_auc is None else f"{row.human_roc_auc:.3f}"
    lines.append(
        f"| {row.system_name} | {row.n_answers} | {row.n_claims} | "
        f"{row.n_claims_without_evidence} | {row.n_abstaining_answers} | "
        f"{_percent(row.macro_autoais)} [{_percent(row.macro_ci_low)}, "
        f"{_percent(row.macro_ci_high)}] | {_percent(row.micro_autoais)} "
        f"[{_percent(row.micro_ci_low)}, {_percent(row.micro_ci_high)}] | "
        f"{_percent(row.macro_autoais_non_abstaining)} | "
        f"{_percent(row.micro_autoais_non_abstaining)} | {row.n_human_labelled} | "
        f"{_percent(row.human_ais)} | {_percent(row.human_accuracy)} | "
        f"{_percent(row.human_balanced_accuracy)} | {kappa} | {auc} |")
  return "\n".join(lines) + "\n"


class _WriteSummaryFn(beam.DoFn):

  def __init__(self, output_dir: str, options: dict):
    self._output_dir = output_dir
    self._options = options

  def process(self, rows):
    rows = sorted(rows, key=lambda row: row.system_name)
    write_summary_files(
        self._output_dir, "claims", rows, CLAIMS_SYSTEM_SCHEMA,
        dict(self._options, units={"autoais": "fraction", "agreement": "fraction"},
             systems=[row._asdict() for row in rows]),
        claims_markdown(rows))
    yield {"systems": len(rows), "answers": sum(row.n_answers for row in rows)}


class _RunManifest:

  def __init__(self, options: ClaimsOptions, plan: _Plan, started: float,
               started_at: str):
    self._inputs = {"input": plan.files, "format": plan.format,
                    "evidence_mode": options.evidence_mode}
    self._scorer = plan.scorer.describe()
    self._started = started
    self._started_at = started_at

  def __call__(self, read_counts, written, dead, summary, scorer_stats, model_info):
    counts = reconcile(read_counts.get("read", 0), written["scored"], dead["claims"])
    return {
        "job": "claims",
        "status": "complete",
        "counts": counts,
        "systems": summary["systems"],
        "answers": summary["answers"],
        "inputs": dict(self._inputs),
        "scorer": dict(self._scorer, **model_info, **scorer_stats),
        **versions_and_timings(self._started, self._started_at),
    }


def build_pipeline(pipeline: beam.Pipeline, options: PipelineOptions) -> OutputDir:
  """Validates the options, claims the output directory, then adds the claims
  steps to `pipeline`; returns the claimed OutputDir."""
  options = options.view_as(ClaimsOptions)
  plan = _Plan(options, pipeline.runner)
  started, started_at = time.time(), utc_now()
  work_dir = plan.output.claim()

  read = pipeline | "ReadClaims" >> ReadRecords(plan.files, FORMATS[plan.format])
  scored = read.records | "ScoreClaims" >> ScoreClaims(plan.scorer,
                                                       options.evidence_mode)
  runs = scored["rows"] | "SpillClaimRuns" >> SpillSortedRuns(
      FileSystems.join(work_dir, "claims"), ClaimRow, CLAIM_KEY)
  written = (
      pipeline
      | "StartClaimRowsFile" >> beam.Create([None])
      | "WriteClaimRows" >> beam.ParDo(
          _WriteClaimRowsFn(options.output_dir), beam.pvalue.AsList(runs)).with_outputs(
              "dead_letter", "stats", main="outcomes"))
  summary = (
      written.outcomes
      | "SummarizeSystems" >> beam.ParDo(_SystemRowFn(options.bootstrap_samples,
                                                      options.seed))
      | "ListSystems" >> beam.combiners.ToList()
      | "WriteSummary" >> beam.ParDo(_WriteSummaryFn(options.output_dir, {
          "evidence_mode": options.evidence_mode,
          "bootstrap": {"method": "percentile", "level": 0.95,
                        "samples": options.bootstrap_samples, "seed": options.seed,
                        "unit": "answer"}})))
  dead = ({"claims": (read.dead_letter, scored["dead_letter"], written.dead_letter)}
          | "WriteDeadLetters" >> WriteDeadLetters(
              FileSystems.join(options.output_dir, "dead_letter.jsonl"), work_dir))
  _ = pipeline | "WriteRunManifest" >> WriteManifest(
      FileSystems.join(options.output_dir, "run.json"),
      _RunManifest(options, plan, started, started_at),
      {
          "read_counts": read.counts | "SumReadCounts" >> beam.CombineGlobally(
              SumCounts()),
          "written": written.stats,
          "dead": dead,
          "summary": summary,
          "scorer_stats": scored["stats"] | "SumScorerStats" >> beam.CombineGlobally(
              SumCounts()),
          "model_info": pipeline | "DescribeScorer" >> plan.scorer.model_info(),
      },
      work_dir=work_dir)
  return plan.output


def run(argv=None) -> int:
  return run_job("claims", argv, ClaimsOptions, build_pipeline)
