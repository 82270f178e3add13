"""claims: claim-level attribution of long-form answers (ExpertQA).

    autoais claims --input ExpertQA/data/r2_compiled_anon.jsonl --output_dir out/ \
        [--format expertqa|jsonl] [--evidence_mode concat|max|rerank] \
        [--scorer string-match|t5 --model DIR ...] [--bootstrap_samples 1000] [--seed 0]
    python -m autoais.beam_jobs.claims ...

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
  # `python -m autoais.beam_jobs.claims`: run the package module (Beam pickles DoFns by
  # reference).
  import sys
  from autoais.beam_jobs.claims import run
  sys.exit(run())

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems
from apache_beam.options.pipeline_options import PipelineOptions

from autoais.beam_jobs.options import (JobArguments, RowTableOptions, ScorerOptions,
                                       ViewsKept, check_bootstrap_flags, row_table_shards,
                                       scorer_from_options, scorer_read_dirs)
from autoais.beam_jobs.running import is_local_runner, run_job
from autoais.beam_jobs.output_dir import OutputDir
from autoais.schemas.errors import ConfigError, require, require_choice
from autoais.transforms.claims.readers import CLAIM_FIELDS, read_claims_jsonl
from autoais.transforms.claims.steps import EVIDENCE_MODES, RERANK, ScoreClaims
from autoais.transforms.claims.tables import ClaimsFold, SummarizeClaims
from autoais.transforms.io.inputs import check_input_file, data_format, match_files
from autoais.transforms.io.input_records import ReadRecords, read_columns
from autoais.transforms.labelled.expertqa import EXPERTQA_FIELDS, read_expertqa
from autoais.transforms.rows.merge import WriteMergedRows, row_table_files
from autoais.transforms.rows.run_record import RunRecord, WriteRunRecord, reconcile
from autoais.transforms.scoring.names import STRING_MATCH

OUTPUT_FILES = ("run.json", "claims_rows.parquet", "claims_rows.csv", "claims.csv",
                "claims.json", "claims.md", "dead_letter.jsonl")
FORMATS = {"expertqa": read_expertqa, "jsonl": read_claims_jsonl}
_REQUIRED_FIELDS = {"expertqa": EXPERTQA_FIELDS, "jsonl": CLAIM_FIELDS}


DEFAULT_FORMAT = "expertqa"


class ClaimsOptions(ViewsKept, PipelineOptions):
  """claims' own flags; the scorer flags are beam_jobs.options.ScorerOptions."""

  # Listed in `--help` after the job's own flags (beam_jobs.parsing.job_help).
  SHARED_OPTIONS = (ScorerOptions, RowTableOptions)

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
    require_choice("--format", self.format, sorted(FORMATS))
    require_choice("--evidence_mode", options.evidence_mode, EVIDENCE_MODES)
    self.scorer = scorer_from_options(options, is_local_runner(runner))
    if options.evidence_mode == RERANK:
      # Rerank acts on claims whose input the scorer had to cut (rows
      # `truncated`); these two scorers never cut one, so it would score as concat.
      never_cut = ("string-match cuts no input" if self.scorer.name == STRING_MATCH
                   else "--decision decode scores each whole input"
                   if self.scorer.describe().get("decision") == "decode" else None)
      if never_cut:
        raise ConfigError(f"--evidence_mode rerank chooses evidence sentences for a claim "
                          f"whose input is longer than the model's, and {never_cut}: "
                          "no claim would be reranked (use concat)")
    check_bootstrap_flags(options)
    self.files = match_files(options.input)
    if not self.files:
      raise ConfigError(f"--input {options.input!r} matches no files")
    for path in self.files:
      if data_format(path) != "jsonl":
        raise ConfigError(f"{path}: claims are read from JSON Lines files")
      check_input_file(path)
      read_columns(path).require(_REQUIRED_FIELDS[self.format])
    self.num_shards = row_table_shards(options)
    self.output = OutputDir(
        "claims", options.output_dir, row_table_files(
            OUTPUT_FILES, (ClaimsFold,), self.num_shards), reads={"--input": self.files},
        read_dirs=scorer_read_dirs(options))


class _ClaimsRecord(RunRecord):
  job = "claims"
  summed = ("read_counts",)
  values = ("written", "summary")

  def __init__(self, options: ClaimsOptions, plan: _Plan):
    super().__init__(plan.scorer.describe())
    self.rows_from("claims", "read_counts", "--input", plan.files)
    self._inputs = {"input": plan.files, "format": plan.format,
                    "evidence_mode": options.evidence_mode}

  def fields(self, read_counts, written, dead, summary, scorer_stats, model_info):
    return {
        "counts": reconcile(read_counts.get("read", 0), written["scored"],
                            dead["claims"]),
        "systems": summary["systems"],
        "answers": summary["answers"],
        "inputs": dict(self._inputs),
        "scorer": self.scorer_fields(model_info, scorer_stats),
    }


def build_pipeline(pipeline: beam.Pipeline, options: PipelineOptions) -> OutputDir:
  """Validates the options, claims the output directory, then adds the claims
  steps to `pipeline`; returns the claimed OutputDir."""
  options = options.view_as(ClaimsOptions)
  plan = _Plan(options, pipeline.runner)
  record = _ClaimsRecord(options, plan)
  work_dir = plan.output.claim()

  read = pipeline | "ReadClaims" >> ReadRecords(plan.files, FORMATS[plan.format])
  scored = read.records | "ScoreClaims" >> ScoreClaims(
      plan.scorer, FileSystems.join(work_dir, "scoring"), options.evidence_mode)
  written = scored["rows"] | "WriteClaimRows" >> WriteMergedRows(
      ClaimsFold, options.output_dir, work_dir, plan.num_shards)
  summary = written["outcomes"] | "SummarizeClaims" >> SummarizeClaims(
      options.output_dir, options.evidence_mode, options.bootstrap_samples,
      options.seed, plan.scorer.describe())
  _ = {"dead": {"claims": (read.dead_letter, scored["dead_letter"], written["dead_letter"])},
       "read_counts": read.counts, "written": written["stats"], "summary": summary,
       "scorer_stats": scored["stats"]} | "WriteRunRecord" >> WriteRunRecord(
           options.output_dir, work_dir, record, scorer=plan.scorer)
  return plan.output


def run(argv=None) -> int:
  return run_job("claims", argv, ClaimsOptions, build_pipeline)
