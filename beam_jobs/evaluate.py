"""evaluate: score attributed QA predictions (AutoAIS, SQuAD EM/F1) per system.

    autoais evaluate --predictions 'runs/*.csv' --corpus CORPUS_DIR \
        [--gold NQ-open.dev.jsonl] --output_dir out/ \
        [--scorer string-match] [--threshold 0.5] [--join auto|lookup|shuffle] \
        [--human_ratings RATINGS] \
        [Beam options: --runner, --direct_num_workers, --direct_running_mode, ...]
    python -m autoais.beam_jobs.evaluate ...

Predictions are CSV (header `question,answer,attribution`, optional
`system_name`, `passage`, `human_rating`), JSONL or Parquet with the same fields,
local or gs://. Gold is NQ-Open dev (NQ-open.dev.jsonl of
google-research-datasets/natural-questions, or
tfds:natural_questions_open/validation); without --gold, AutoAIS is over each
system's own questions and EM/F1 are not computed. Rows are matched to gold by
question text, joined to the corpus by attribution id (or carry their own
`passage`), scored, graded against gold answers, and summarised per system. Human AIS ratings come from a `human_rating`
column or `--human_ratings` (joined by system and question); where rows carry
them, agreement with them is measured per system and across systems
(transforms/stats/agreement.py). Outputs in --output_dir: ratings.csv and
ratings.parquet, scores.txt, leaderboard.{csv,json,md}, agreement.json,
report.html (when rows carry human ratings), dead_letter.jsonl, with a scorer
that finds unsupported spans (--scorer lettucedetect) spans.jsonl (one line per
rated row, counts.span_rows = counts.scored), and run.json, written last, whose
counts reconcile: read = scored + rejected + unmatched.
"""
if __name__ == "__main__":
  # `python -m autoais.beam_jobs.evaluate`: run the package module instead of defining this
  # one's classes a second time under __main__ (Beam pickles DoFns by reference).
  import sys
  from autoais.beam_jobs.evaluate import run
  sys.exit(run())

import functools
from typing import Dict, List

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems
from apache_beam.options.pipeline_options import PipelineOptions

from autoais.beam_jobs.options import (JobArguments, RowTableOptions, ScorerOptions,
                                       ViewsKept, check_bootstrap_flags, given_flags,
                                       row_table_shards, scorer_from_options,
                                       scorer_read_dirs)
from autoais.beam_jobs.running import is_local_runner, run_job
from autoais.beam_jobs.output_dir import OutputDir
from autoais.schemas import UNMATCHED
from autoais.schemas.errors import ConfigError, require
from autoais.transforms.corpus import store
from autoais.transforms.evaluate.leaderboard import (WriteLeaderboard, no_gold_note,
                                                    unanswered_rule)
from autoais.transforms.evaluate.ratings import RatingsFold
from autoais.transforms.evaluate.steps import (LISTED_PASSAGES_RULE, AttachHumanRatings,
                                       AttachPassages, KeepRatedSpans, MatchGoldQuestions,
                                       ScoreAnswers)
from autoais.transforms.io import span_rows
from autoais.transforms.io.gold import TFDS_PREFIX, ReadGold, check_gold_source
from autoais.transforms.io.inputs import match_files, system_name_from_path
from autoais.transforms.io.predictions import check_prediction_file, read_predictions
from autoais.transforms.io.input_records import ReadRecords
from autoais.transforms.labelled.readers import check_human_ratings_file, read_human_ratings
from autoais.transforms.rows.merge import WriteMergedRows, row_table_files
from autoais.transforms.rows.run_record import RunRecord, WriteRunRecord, reconcile
from autoais.transforms.scoring.label import measure_name
from autoais.transforms.stats.metrics import (BuildGoldIndex, QuestionIndexFromPredictions,
                                               SummarizeSystems)

OUTPUT_FILES = ("run.json", "ratings.csv", "ratings.parquet", "scores.txt",
                "leaderboard.csv", "leaderboard.json", "leaderboard.md",
                "agreement.json", "report.html", "dead_letter.jsonl")
JOINS = ("auto", "lookup", "shuffle")
# Bytes per prediction row, to estimate the row count from file sizes.
_BYTES_PER_PREDICTION = 120


class EvaluateOptions(ViewsKept, PipelineOptions):
  """evaluate's own flags; the scorer flags (--scorer, --model, ...) are
  beam_jobs.options.ScorerOptions, shared with the other scoring jobs."""

  # Listed in `--help` after the job's own flags (beam_jobs.parsing.job_help).
  SHARED_OPTIONS = (ScorerOptions, RowTableOptions)

  @classmethod
  def _add_argparse_args(cls, parser):
    group = JobArguments(parser, "evaluate")
    group.add_argument("--predictions", help="Prediction files: path, glob or comma "
                       "list (.csv, .jsonl, .parquet; .gz allowed), local or gs://.")
    group.add_argument("--corpus", default=None,
                       help="Corpus directory from build-corpus (optional when "
                       "predictions carry a passage column).")
    group.add_argument("--gold", help="Gold answers: NQ-Open JSONL "
                       "({'question','answer':[...]}) or "
                       "tfds:natural_questions_open/validation. Without it: AutoAIS "
                       "over each system's own questions, no EM / F1.")
    group.add_argument("--output_dir", help="Directory for the outputs.")
    group.add_argument("--join", default="auto", choices=JOINS,
                       help="Corpus join: point lookups, a shuffle join, or auto: "
                       "lookups on local runners or when predictions are few "
                       "against the corpus, else shuffle.")
    group.add_argument("--bootstrap_samples", type=int, default=1000,
                       help="Bootstrap resamples for 95%% CIs (default 1000).")
    group.add_argument("--seed", type=int, default=0, help="Bootstrap seed.")
    group.add_argument("--human_ratings", default=None,
                       help="Human AIS ratings (CSV / JSONL / Parquet with system_name, "
                       "question, human_rating Y/N), joined to the predictions by "
                       "(system, question); they replace a human_rating column.")


class _Plan:
  """What validation found out: inputs, join strategy, and what run.json records."""

  def __init__(self, options: EvaluateOptions, runner):
    require(options, "predictions", "output_dir")
    local = is_local_runner(runner)
    self.scorer = scorer_from_options(options, local)
    check_bootstrap_flags(options)
    self.prediction_files = match_files(options.predictions)
    if not self.prediction_files:
      raise ConfigError(f"--predictions {options.predictions!r} matches no files")
    self.human_rating_files = []
    if options.human_ratings:
      self.human_rating_files = match_files(options.human_ratings)
      if not self.human_rating_files:
        raise ConfigError(f"--human_ratings {options.human_ratings!r} matches no files")
    self.num_shards = row_table_shards(options)
    self.output = OutputDir(
        "evaluate", options.output_dir, row_table_files(
            OUTPUT_FILES + ((span_rows.FILE_NAME,) if self.scorer.gives_spans else ()),
            (RatingsFold,), self.num_shards),
        reads={"--predictions": self.prediction_files,
               "--gold": ([options.gold] if options.gold and
                          not options.gold.startswith(TFDS_PREFIX) else []),
               "--human_ratings": self.human_rating_files},
        read_dirs={"--corpus": options.corpus, **scorer_read_dirs(options)})
    self.output.check()
    carry_passages = True
    unnamed: Dict[str, List[str]] = {}
    for path in self.prediction_files:
      columns = check_prediction_file(path)
      # A JSON Lines record carries its own fields: a row without a passage is
      # found out when it is read (dead-lettered as no_passage).
      if columns.kind == "column":
        carry_passages &= "passage" in columns.names
      if columns.names is not None and "system_name" not in columns.names:
        unnamed.setdefault(system_name_from_path(path), []).append(path)
    for system, paths in unnamed.items():
      if len(paths) > 1:
        # Each file's rows would be one system's, the second file's answers
        # rejected as repeats of the first's.
        raise ConfigError(
            f"--predictions: {len(paths)} files without a system_name name their "
            f"rows after the same file stem, {system!r} ({', '.join(paths)}): they "
            "would be read as one system. Rename them, or give their rows a "
            "system_name")
    if options.gold:
      check_gold_source(options.gold)
    for path in self.human_rating_files:
      check_human_ratings_file(path)
    self.manifest = None
    self.join = None
    self.join_reason = "no corpus: passages come from the predictions"
    if options.corpus:
      self.manifest = store.read_manifest(options.corpus)
      self.join, self.join_reason = self._choose_join(options, local)
    elif not carry_passages:
      raise ConfigError("--corpus is required: the predictions have no passage column")
    elif "join" in given_flags(options, EvaluateOptions):
      raise ConfigError(f"--join {options.join} chooses how predictions are joined to "
                        "--corpus: without a corpus the passages come from the "
                        "predictions and nothing is joined")

  def _choose_join(self, options, local):
    if options.join != "auto":
      return options.join, "--join"
    if local:
      return "lookup", "a local runner holds shuffled data in memory"
    sizes = FileSystems.match(self.prediction_files)
    estimated = sum(m.metadata_list[0].size_in_bytes for m in sizes
                    if m.metadata_list) // _BYTES_PER_PREDICTION
    if estimated * 10 < self.manifest["num_passages"]:
      return "lookup", (f"about {estimated} predictions against "
                        f"{self.manifest['num_passages']} passages")
    return "shuffle", (f"about {estimated} predictions against "
                       f"{self.manifest['num_passages']} passages")



class _EvaluateRecord(RunRecord):
  """run.json from the pipeline's counts."""
  job = "evaluate"
  summed = ("read_counts", "gold_read_counts", "join_stats", "human_rating_counts",
            "passage_counts")
  values = ("ratings", "leaderboard", "gold", "span_rows")

  def __init__(self, options: EvaluateOptions, plan: _Plan):
    super().__init__(plan.scorer.describe())
    # Gold is looked up (a gold file without a usable question stops the job).
    self.rows_from("predictions", "read_counts", "--predictions", plan.prediction_files)
    self.rows_from("human_ratings", "human_rating_counts", "--human_ratings",
                   plan.human_rating_files)
    self._inputs = {
        "predictions": plan.prediction_files,
        "gold": options.gold,
        "human_ratings": plan.human_rating_files or None,
        "corpus": options.corpus,
        "corpus_passages": plan.manifest["num_passages"] if plan.manifest else None,
    }
    self._join = {"strategy": plan.join, "reason": plan.join_reason,
                  "corpus_bytes": plan.manifest["total_bytes"] if plan.manifest else 0}

  def fields(self, read_counts, gold_read_counts, ratings, dead, join_stats,
             leaderboard, gold, scorer_stats, model_info, passage_counts,
             human_rating_counts=None, span_rows=None):
    counts = reconcile(read_counts.get("read", 0), ratings["scored"],
                       dead["predictions"])
    counts["unmatched_questions_discarded"] = counts["by_reason"].get(
        f"{UNMATCHED}:question_not_in_gold", 0)
    if span_rows is not None:  # a line of spans.jsonl per rated (scored) row
      counts["span_rows"] = span_rows
      if span_rows != ratings["scored"]:
        raise RuntimeError(f"{span_rows} lines of spans for {ratings['scored']} rated rows")
    join = dict(self._join, **join_stats)
    if join.get("corpus_bytes"):
      join["bytes_read_fraction"] = join.get("bytes_read", 0) / join["corpus_bytes"]
    manifest = {"counts": counts}
    if gold.graded:
      gold_counts = reconcile(gold_read_counts.get("read", 0), gold.n, dead["gold"])
      gold_counts["questions"] = gold_counts.pop("scored")
      manifest["gold_counts"] = gold_counts
      manifest["unanswered"] = {
          "rule": unanswered_rule(gold.empty_matches()),
          "gold_questions_the_empty_answer_matches": gold.empty_matches()}
    else:
      manifest["no_gold"] = no_gold_note(measure_name(self._scorer))
    if human_rating_counts is not None:
      # A rating is joined (to every kept prediction of its system and question),
      # rejected (bad record, repeated rating) or unmatched (no prediction).
      rating_counts = reconcile(human_rating_counts.get("read", 0),
                                human_rating_counts.get("joined", 0),
                                dead["human_ratings"])
      rating_counts["joined"] = rating_counts.pop("scored")
      rating_counts["replaced_column_value"] = human_rating_counts.get(
          "replaced_column_value", 0)
      manifest["human_rating_counts"] = rating_counts
    manifest.update({
        "n_gold": gold.n if gold.graded else None,
        "gold_digest": gold.digest if gold.graded else None,
        "systems": leaderboard["systems"],
        "human_rated_rows": leaderboard["human_rated_rows"],
        "inputs": dict(self._inputs),
        "join": join,
        # Where the scored passages came from: the rows' own `passage`, where
        # they carry one (then their attribution is not looked up), else the
        # corpus by attribution id.
        "passages": {
            "from_rows": passage_counts.get("from_rows", 0),
            "from_rows_over_attribution": passage_counts.get(
                "from_rows_over_attribution", 0),
            "from_row_lists": passage_counts.get("from_row_lists", 0),
            "listed_passages": passage_counts.get("listed_passages", 0),
            "rule": "a row's own passage is scored where it carries one; its "
                    "attribution, where it names one too, is not looked up",
            "list_rule": LISTED_PASSAGES_RULE},
        "scorer": self.scorer_fields(model_info, scorer_stats),
    })
    return manifest



def build_pipeline(pipeline: beam.Pipeline, options: PipelineOptions) -> OutputDir:
  """Validates the options, claims the output directory, then adds the evaluate
  steps to `pipeline`; returns the claimed OutputDir."""
  options = options.view_as(EvaluateOptions)
  plan = _Plan(options, pipeline.runner)
  record = _EvaluateRecord(options, plan)
  work_dir = plan.output.claim()
  decode = options.view_as(ScorerOptions).decision == "decode"

  read = pipeline | "ReadPredictions" >> ReadRecords(plan.prediction_files,
                                                     read_predictions)
  if options.gold:
    gold = pipeline | "ReadGold" >> ReadGold(options.gold)
    gold_index = gold.records | "IndexGold" >> beam.CombineGlobally(BuildGoldIndex())
    dead_letters = {"gold": gold.dead_letter}
    counts = {"read_counts": read.counts, "gold_read_counts": gold.counts}
  else:
    # No gold: every question a system answers counts, over its own questions.
    gold_index = read.records | "IndexQuestions" >> QuestionIndexFromPredictions()
    dead_letters = {}
    counts = {"read_counts": read.counts, "gold_read_counts": None}
  counts["human_rating_counts"] = None
  matched = read.records | "MatchGoldQuestions" >> MatchGoldQuestions(gold_index)
  matches = matched.matched
  if plan.human_rating_files:
    human = pipeline | "ReadHumanRatings" >> ReadRecords(plan.human_rating_files,
                                                         read_human_ratings)
    rated = matches | "AttachHumanRatings" >> AttachHumanRatings(human.records)
    matches = rated.matched
    dead_letters["human_ratings"] = (human.dead_letter, rated.dead_letter)
    counts["human_rating_counts"] = (human.counts, rated.stats)
  passages = matches | "AttachPassages" >> AttachPassages(options.corpus, plan.join)
  scored = passages["joined"] | "ScoreAnswers" >> ScoreAnswers(
      plan.scorer, decode, FileSystems.join(work_dir, "scoring"))
  ratings = scored["rows"] | "WriteRatings" >> WriteMergedRows(
      functools.partial(RatingsFold, options.corpus is not None), options.output_dir,
      work_dir, plan.num_shards)
  counts["span_rows"], shown_spans = None, None
  if plan.scorer.gives_spans:
    # Each row ratings.csv rates (a later answer of a system to a question is
    # rejected there, and its spans here); rows sharing a triple, scored once,
    # each have their line.
    rated_spans = scored["spans"] | "KeepRatedSpans" >> KeepRatedSpans(
        ratings["dead_letter"])
    counts["span_rows"] = rated_spans | "WriteSpans" >> span_rows.WriteSpanRows(
        FileSystems.join(options.output_dir, span_rows.FILE_NAME), work_dir)
    shown_spans = rated_spans | "FirstSpanRows" >> span_rows.FirstSpanRows()
  summary = ratings["outcomes"] | "SummarizeSystems" >> SummarizeSystems(
      gold_index, options.bootstrap_samples, options.seed)
  leaderboard = summary.rows | "WriteLeaderboard" >> WriteLeaderboard(
      options.output_dir, gold_index, summary, options.bootstrap_samples, options.seed,
      plan.scorer.describe(), shown_spans)
  dead_letters["predictions"] = (read.dead_letter, matched.unmatched,
                                 ratings["dead_letter"], scored["dead_letter"])
  _ = dict(counts, dead=dead_letters, join_stats=passages["stats"],
           passage_counts=passages["own"], ratings=ratings["stats"],
           leaderboard=leaderboard, gold=gold_index, scorer_stats=scored["stats"]
           ) | "WriteRunRecord" >> WriteRunRecord(options.output_dir, work_dir, record,
                                                  scorer=plan.scorer)
  return plan.output


def run(argv=None) -> int:
  return run_job("evaluate", argv, EvaluateOptions, build_pipeline)
