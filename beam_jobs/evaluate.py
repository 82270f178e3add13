"""evaluate: score attributed QA predictions (AutoAIS, SQuAD EM/F1) per system.

    autoais evaluate --predictions 'runs/*.csv' --corpus CORPUS_DIR \
        --gold ../shared/data/nq_open/NQ-open.dev.jsonl --output_dir out/ \
        [--scorer string-match] [--threshold 0.5] [--join auto|lookup|shuffle] \
        [--human_ratings RATINGS] \
        [Beam options: --runner, --direct_num_workers, --direct_running_mode, ...]
    python -m beam_jobs.evaluate ...

Predictions are CSV (header `question,answer,attribution`, optional
`system_name`, `passage`, `human_rating`), JSONL or Parquet with the same fields,
local or gs://. Rows are matched to gold by question text, joined to the corpus
by attribution id (or carry their own `passage`), scored, graded against gold
answers, and summarised per system. Human AIS ratings come from a `human_rating`
column or `--human_ratings` (joined by system and question); where rows carry
them, agreement with them is measured per system and across systems
(transforms/stats/agreement.py). Outputs in --output_dir (SPEC 3): ratings.csv and
ratings.parquet, scores.txt, leaderboard.{csv,json,md}, agreement.json,
report.html (when rows carry human ratings), dead_letter.jsonl and run.json,
written last, whose counts reconcile: read = scored + rejected + unmatched.
"""
if __name__ == "__main__":
  # `python -m beam_jobs.evaluate`: run the package module instead of defining this
  # one's classes a second time under __main__ (Beam pickles DoFns by reference).
  import sys
  from beam_jobs.evaluate import run
  sys.exit(run())

import functools
import json
from typing import NamedTuple, Optional, Tuple

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems
from apache_beam.options.pipeline_options import PipelineOptions

from beam_jobs.common import (JobArguments, ScorerOptions, is_local_runner, require,
                              run_job, scorer_from_options)
from schemas.errors import ConfigError
from beam_jobs.output_dir import OutputDir
from schemas import (LEADERBOARD_SCHEMA, RATING_SCHEMA, REJECTED, UNMATCHED,
                     AttributionScore, DeadLetter, GoldMatch, RatingRow, ScoringFailure)
from transforms.corpus import store
from transforms.corpus.passages import ParsedPassage, display_passage, parse_passage
from transforms.io.atomic import atomic_create, write_text_atomically
from transforms.io.dead_letters import WriteDeadLetters
from transforms.io.fields import rejected
from transforms.io.gold import TFDS_PREFIX, ReadGold, check_gold_source
from transforms.io.inputs import data_format, match_files
from transforms.io.manifest import (SumCounts, WriteManifest, reconcile)
from transforms.io.predictions import check_prediction_file, read_predictions
from transforms.io.records import ReadRecords
from transforms.io.sorted_runs import RowRef
from transforms.io.tables import csv_bytes
from transforms.labelled.readers import (check_human_ratings_file, read_human_ratings,
                                         unmatched)
from transforms.scoring.attribution import ScoreAttribution, scoring_failed_message
from transforms.scoring.examples import qa_example
from transforms.stats.agreement import (AUC_METHOD, AgreementCounts, agreement_statistics,
                                        system_level_agreement)
from transforms.stats.metrics import (BuildGoldIndex, SummarizeSystems, SystemOutcomes,
                                      sorted_rows)
from transforms.stats.report import leaderboard_report_html
from transforms.rows.merge import RowFold, RowTable, WriteMergedRows
from transforms.rows.record import RunRecord, scorer_side_inputs

OUTPUT_FILES = ("run.json", "ratings.csv", "ratings.parquet", "scores.txt",
                "leaderboard.csv", "leaderboard.json", "leaderboard.md",
                "agreement.json", "report.html", "dead_letter.jsonl")
RATING_KEY = ("system_name", "question", "source_file", "source_line")
JOINS = ("auto", "lookup", "shuffle")
# Bytes per prediction row, to estimate the row count from file sizes.
_BYTES_PER_PREDICTION = 120


class EvaluateOptions(PipelineOptions):
  """evaluate's own flags; the scorer flags (--scorer, --model, ...) are
  beam_jobs.common.ScorerOptions, shared with the other scoring jobs."""

  @classmethod
  def _add_argparse_args(cls, parser):
    group = JobArguments(parser, "evaluate")
    group.add_argument("--predictions", help="Prediction files: path, glob or comma "
                       "list (.csv, .jsonl, .parquet; .gz allowed), local or gs://.")
    group.add_argument("--corpus", default=None,
                       help="Corpus directory from build-corpus (optional when "
                       "predictions carry a passage column).")
    group.add_argument("--gold", help="Gold answers: NQ-Open JSONL "
                       "({'question','answer':[...]}) or tfds:natural_questions_open/validation.")
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
    require(options, "predictions", "gold", "output_dir")
    local = is_local_runner(runner)
    self.scorer = scorer_from_options(options, local)
    if options.bootstrap_samples < 1:
      raise ConfigError("--bootstrap_samples must be positive")
    self.prediction_files = match_files(options.predictions)
    if not self.prediction_files:
      raise ConfigError(f"--predictions {options.predictions!r} matches no files")
    self.human_rating_files = []
    if options.human_ratings:
      self.human_rating_files = match_files(options.human_ratings)
      if not self.human_rating_files:
        raise ConfigError(f"--human_ratings {options.human_ratings!r} matches no files")
    self.output = OutputDir(
        "evaluate", options.output_dir, OUTPUT_FILES,
        reads={"--predictions": self.prediction_files,
               "--gold": [] if options.gold.startswith(TFDS_PREFIX) else [options.gold],
               "--human_ratings": self.human_rating_files},
        read_dirs={"--corpus": options.corpus,
                   "--model": options.view_as(ScorerOptions).model,
                   "--score_cache": options.view_as(ScorerOptions).score_cache})
    self.output.check()
    carry_passages = True
    for path in self.prediction_files:
      header = check_prediction_file(path)
      # JSON Lines declare no columns: a row without a passage is found out when
      # it is read (dead-lettered as no_passage).
      if data_format(path) != "jsonl":
        carry_passages &= "passage" in header
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


# ----------------------------------------------------------------------------
# Row-level steps.


class _MatchGoldFn(beam.DoFn):
  """Keeps predictions whose question is in gold, grading their answer."""

  def process(self, prediction, gold):
    graded = gold.grade(prediction.question, prediction.answer)
    if graded is None:
      yield beam.pvalue.TaggedOutput("unmatched", DeadLetter(
          prediction.source_file, prediction.source_line, UNMATCHED,
          "question_not_in_gold", "question",
          f"{prediction.source_file}:{prediction.source_line}: field 'question': "
          "not a gold question; discarded",
          _prediction_json(prediction)))
      return
    yield GoldMatch(prediction, *graded)


class _AttachHumanRatingsFn(beam.DoFn):
  """((system, question), {"matches": [GoldMatch], "ratings": [HumanRating]})
  -> the matches carrying the rating. The first rating (by file and line) of a
  (system, question) counts; later ones are rejected; a rating with no
  gold-matched prediction is dead-lettered as unmatched."""

  def process(self, keyed):
    (system, question), grouped = keyed
    matches = list(grouped["matches"])
    ratings = sorted(grouped["ratings"], key=lambda r: (r.source_file, r.source_line))
    if not ratings:
      yield from matches
      return
    kept = ratings[0]
    for duplicate in ratings[1:]:
      yield beam.pvalue.TaggedOutput("dead_letter", rejected(
          duplicate.source_file, duplicate.source_line, "duplicate_human_rating",
          f"system {system!r} already has a rating of this question at "
          f"{kept.source_file}:{kept.source_line}", _rating_json(duplicate),
          "question"))
    if not matches:
      yield beam.pvalue.TaggedOutput("dead_letter", unmatched(
          kept.source_file, kept.source_line, "no_prediction",
          f"no prediction of system {system!r} answers this gold question",
          _rating_json(kept), "question"))
      return
    replaced = sum(1 for match in matches if match.prediction.human_rating not in (
        None, kept.human_rating))
    yield beam.pvalue.TaggedOutput("stats", {"joined": 1, "replaced_column_value":
                                             replaced})
    for match in matches:
      yield match._replace(prediction=match.prediction._replace(
          human_rating=kept.human_rating))


def _rating_json(rating) -> str:
  return json.dumps({"system_name": rating.system_name, "question": rating.question,
                     "human_rating": rating.human_rating}, ensure_ascii=False)


class AttachHumanRatings(beam.PTransform):
  """PCollection[GoldMatch] + PCollection[HumanRating] -> outputs main (GoldMatch
  with the rating), dead_letter (ratings not used) and stats ({"joined": n}):
  a CoGroupByKey on (system, question)."""

  def __init__(self, ratings):
    super().__init__()
    self._ratings = ratings

  def expand(self, matches):
    keyed_matches = matches | "KeyMatches" >> beam.Map(
        lambda match: ((match.prediction.system_name, match.prediction.question),
                       match))
    keyed_ratings = self._ratings | "KeyRatings" >> beam.Map(
        lambda rating: ((rating.system_name, rating.question), rating))
    return ({"matches": keyed_matches, "ratings": keyed_ratings}
            | "JoinRatings" >> beam.CoGroupByKey()
            | "AttachRatings" >> beam.ParDo(_AttachHumanRatingsFn()).with_outputs(
                "dead_letter", "stats", main="matched"))


def _prediction_json(prediction, **extra) -> str:
  return json.dumps({"system_name": prediction.system_name,
                     "question": prediction.question, "answer": prediction.answer,
                     "attribution": prediction.attribution, **extra},
                    ensure_ascii=False)


class RatedMatch(NamedTuple):
  """What a rating row needs of a prediction besides its score: the graded
  prediction and the passage shown beside it (None: no passage)."""
  match: GoldMatch
  passage: Optional[str]


def _failed_row_dead_letter(rated: RatedMatch, failure: ScoringFailure) -> DeadLetter:
  """A row the scorer could not score (a remote endpoint refused it, or failed
  after every retry): rejected, with the HTTP status in the record."""
  prediction = rated.match.prediction
  return DeadLetter(
      prediction.source_file, prediction.source_line, REJECTED, "scoring_failed", None,
      f"{prediction.source_file}:{prediction.source_line}: "
      f"{scoring_failed_message(failure)}",
      _prediction_json(prediction, http_status=failure.status))


def attribution_to_look_up(match: GoldMatch) -> Optional[str]:
  """The corpus id a row needs, or None where no lookup is needed (the row
  carries its passage) or possible (no attribution)."""
  prediction = match.prediction
  if prediction.passage is None and prediction.attribution:
    return prediction.attribution
  return None


class AttachPassages(beam.PTransform):
  """PCollection[GoldMatch] -> {'joined': (GoldMatch, corpus passage or None),
  'stats': join read statistics}. Rows that carry their own `passage` skip the
  lookup (see prepare_example)."""

  def __init__(self, corpus_dir: Optional[str], join: Optional[str]):
    super().__init__()
    self._corpus_dir = corpus_dir
    self._join = join

  def expand(self, matches):
    if self._corpus_dir is None:
      joined = matches | "SkipCorpus" >> beam.Map(lambda match: (match, None))
      stats = matches.pipeline | "NoJoinStats" >> beam.Create([{}])
      return {"joined": joined, "stats": stats}
    if self._join == "shuffle":
      return matches | "ShuffleJoinCorpus" >> store.ShuffleJoinPassages(
          self._corpus_dir, attribution_to_look_up)
    return matches | "LookUpCorpus" >> store.LookupPassages(
        self._corpus_dir, attribution_to_look_up)


def prepare_example(match: GoldMatch, corpus_passage: Optional[str],
                    reference_premise: bool = False):
  """-> (RatedMatch, AttributionExample or None).

  The row's own `passage` column wins over the corpus passage. With
  `reference_premise` (--decision decode) the premise is the reference
  script's (its text ends at the first line break); the display passage stays
  whole.
  """
  passage = match.prediction.passage or corpus_passage
  if passage is None:
    return RatedMatch(match, None), None
  parsed, display = _passage_forms(passage)
  prediction = match.prediction
  return (RatedMatch(match, display),
          qa_example(prediction.question, prediction.answer, parsed, reference_premise))


# The systems of a leaderboard cite the same passages: parse and render each once
# (the corpus lookup hands out the same string objects, so hits hash nothing).
# 16k recent passages hold about 25 MB.
@functools.lru_cache(maxsize=16384)
def _passage_forms(passage: str) -> Tuple[ParsedPassage, str]:
  parsed = parse_passage(passage)
  return parsed, display_passage(parsed)


def rating_row(match: GoldMatch, passage: Optional[str],
               score: Optional[AttributionScore], scorer: str) -> RatingRow:
  prediction = match.prediction
  if score is None:
    nli_score, auto_ais, n_windows, truncated = None, "N", 0, False
  else:
    nli_score, n_windows, truncated = score.nli_score, score.n_windows, score.truncated
    auto_ais = "Y" if score.attributable else "N"
  # Positional: this runs once per row.
  return RatingRow(prediction.system_name, prediction.question, prediction.answer,
                   prediction.attribution, passage, prediction.human_rating, auto_ais,
                   nli_score, match.em, match.f1, match.gold_index, scorer, n_windows,
                   truncated, prediction.source_file, prediction.source_line)


# ----------------------------------------------------------------------------
# Outputs.


class _MergedRow(NamedTuple):
  """The fields of a rating row that the ratings writer reads as Python values."""
  system_name: str
  question: str
  source_file: str
  source_line: int
  gold_index: int
  em: float
  f1: float
  auto_ais: str
  nli_score: Optional[float]
  human_rating: Optional[str]


class _RatingsFold(RowFold):
  """Keeps the first prediction per (system, question), writes
  ratings.csv/.parquet, and gives one SystemOutcomes per system."""
  row_type = RatingRow
  merged_type = _MergedRow
  sort_key = RATING_KEY
  run_name = "ratings"
  tables = (RowTable("ratings", RATING_SCHEMA),)
  unique = ("system_name", "question")

  def __init__(self, has_corpus: bool):
    self._has_corpus = has_corpus
    self._counts = {"kept": 0, "scored": 0}
    self._outcomes = None

  def start_system(self, system_name):
    self._outcomes = SystemOutcomes(system_name)

  def add(self, row, ref, tables):
    self._counts["kept"] += 1
    self._outcomes.add(row.gold_index, row.em, row.f1, row.auto_ais == "Y",
                       row.nli_score is not None, row.human_rating, row.nli_score)
    if row.nli_score is None:
      yield self._unmatched(ref)
      return
    self._counts["scored"] += 1
    tables["ratings"].add(ref)

  def end_system(self, tables):
    yield self._outcomes

  def stats(self):
    return self._counts

  def _unmatched(self, ref: RowRef) -> DeadLetter:
    row = ref.row(RatingRow)
    if not row.attribution:
      reason, message = "missing_attribution", "no attribution given"
    elif self._has_corpus:
      reason, message = "attribution_not_in_corpus", (
          f"attribution {row.attribution!r} is not in the corpus")
    else:
      reason, message = "no_passage", "no passage column value and no --corpus"
    return DeadLetter(
        row.source_file, row.source_line, UNMATCHED, reason, "attribution",
        f"{row.source_file}:{row.source_line}: field 'attribution': {message}; "
        "counted as not attributable",
        _prediction_json(row))

  def duplicate(self, ref: RowRef, kept) -> DeadLetter:
    row = ref.row(RatingRow)
    return DeadLetter(
        row.source_file, row.source_line, REJECTED, "duplicate_prediction", "question",
        f"{row.source_file}:{row.source_line}: field 'question': system "
        f"{row.system_name!r} already answered this question at "
        f"{kept.source_file}:{kept.source_line}",
        _prediction_json(row))


def _format_ci(value, low, high, scale) -> str:
  return f"{value * scale:.1f} [{low * scale:.1f}, {high * scale:.1f}]"


def leaderboard_markdown(rows, n_gold: int) -> str:
  lines = [
      f"AutoAIS over {n_gold} gold questions (paper mode: unanswered or unattributed "
      "questions count as N); EM and F1 in %; 95% bootstrap CIs in brackets.",
      "",
      "| system | predicted | scored | AutoAIS % | EM | F1 | coverage % | "
      "AutoAIS of scored % | human agreement % |",
      "|---|---:|---:|---|---|---|---:|---:|---:|",
  ]
  for row in rows:
    scored = "" if row.autoais_scored is None else f"{row.autoais_scored * 100:.1f}"
    agreement = ("" if row.human_agreement is None
                 else f"{row.human_agreement * 100:.1f} (n={row.n_human_rated})")
    lines.append(
        f"| {row.system_name} | {row.n_predicted} | {row.n_scored} | "
        f"{_format_ci(row.autoais, row.autoais_ci_low, row.autoais_ci_high, 100)} | "
        f"{_format_ci(row.em, row.em_ci_low, row.em_ci_high, 1)} | "
        f"{_format_ci(row.f1, row.f1_ci_low, row.f1_ci_high, 1)} | "
        f"{row.coverage * 100:.1f} | {scored} | {agreement} |")
  return "\n".join(lines) + "\n"


def agreement_markdown(content) -> str:
  """leaderboard.md's section on agreement with human ratings."""
  overall = content["overall"]
  if not overall["n_rated"]:
    return ""

  def percent(value):
    return "" if value is None else f"{value * 100:.1f}"

  def figure(value):
    return "" if value is None else f"{value:.3f}"

  lines = ["", "## Agreement with human ratings", "",
           "Rows with a human rating; AutoAIS on rated = share of those rows scored Y. "
           "ROC-AUC and PR-AUC of nli_score over the rated rows that were scored.", "",
           "| system | rated | human AIS % | AutoAIS on rated % | accuracy % | "
           "balanced accuracy % | kappa | ROC-AUC | PR-AUC |",
           "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
  for name, entry in list(content["systems"].items()) + [("**all**", overall)]:
    if not entry.get("n_rated"):
      continue
    lines.append(
        f"| {name} | {entry['n_rated']} | {percent(entry['human_ais'])} | "
        f"{percent(entry['predicted_ais'])} | {percent(entry['accuracy'])} | "
        f"{percent(entry['balanced_accuracy'])} | {figure(entry['cohen_kappa'])} | "
        f"{figure(entry['roc_auc'])} | {figure(entry['pr_auc'])} |")
  level = content["system_level"]
  lines += ["", f"System level ({level['n_systems_rated']} rated systems; 95% "
            "percentile-bootstrap CIs, gold questions resampled, paired across "
            "systems):", "", "| comparison | Pearson | Spearman | Kendall tau |",
            "|---|---|---|---|"]
  for name in ("autoais_rated_vs_human_ais", "autoais_vs_human_ais"):
    entry = level[name]
    cells = []
    for method in ("pearson", "spearman", "kendall"):
      value, ci = entry[method]["statistic"], entry[method].get("ci")
      cells.append("" if value is None else f"{value:.3f}" + (
          f" [{ci[0]:.3f}, {ci[1]:.3f}]" if ci else ""))
    lines.append(f"| {entry['description']} | " + " | ".join(cells) + " |")
  tests = level["neighbour_tests"]
  lines += ["", f"Neighbours in the AutoAIS ranking: {tests['test']}.", "",
            "| higher | lower | only higher Y | only lower Y | p-value |",
            "|---|---|---:|---:|---:|"]
  for test in tests["pairs"]:
    lines.append(f"| {test['higher']} | {test['lower']} | {test['only_higher']} | "
                 f"{test['only_lower']} | {test['p_value']:.3g} |")
  return "\n".join(lines) + "\n"


def agreement_content(systems, gold, bootstrap: dict):
  """agreement.json's content, and the merged counts of every rated row."""
  systems = sorted(systems, key=lambda system: system.system_name)
  overall = AgreementCounts()
  for system in systems:
    overall.merge(system.counts)
  return {
      "n_gold": gold.n,
      "auc_method": AUC_METHOD,
      "overall": agreement_statistics(overall),
      "systems": {system.system_name: agreement_statistics(system.counts)
                  for system in systems},
      "system_level": system_level_agreement(systems, bootstrap),
  }, overall


def scores_text(rows) -> str:
  """The reference script's scores file, one block per system."""
  blocks = []
  for row in rows:
    blocks.append(f"system_name: {row.system_name}\n"
                  f"AutoAIS: {row.autoais}\n"
                  f"SQuAD (em): {row.em}\n"
                  f"SQuAD (f1): {row.f1}\n")
  return "\n".join(blocks)


class _WriteLeaderboardFn(beam.DoFn):

  def __init__(self, output_dir: str, bootstrap_samples: int, seed: int):
    self._output_dir = output_dir
    self._bootstrap = {"method": "percentile", "level": 0.95,
                       "samples": bootstrap_samples, "seed": seed,
                       "unit": "gold question, paired across systems"}

  def process(self, rows, gold, systems):
    rows = sorted_rows(rows)
    content, overall = agreement_content(systems, gold, self._bootstrap)
    join = FileSystems.join
    with atomic_create(join(self._output_dir, "leaderboard.csv")) as sink:
      sink.write(csv_bytes(rows, LEADERBOARD_SCHEMA))
    write_text_atomically(join(self._output_dir, "leaderboard.json"), json.dumps({
        "n_gold": gold.n,
        "units": {"autoais": "fraction", "coverage": "fraction", "em": "percent",
                  "f1": "percent"},
        "bootstrap": self._bootstrap,
        "systems": [row._asdict() for row in rows],
    }, indent=2, ensure_ascii=False) + "\n")
    write_text_atomically(join(self._output_dir, "leaderboard.md"),
                          leaderboard_markdown(rows, gold.n) +
                          agreement_markdown(content))
    write_text_atomically(join(self._output_dir, "scores.txt"), scores_text(rows))
    write_text_atomically(join(self._output_dir, "agreement.json"),
                          json.dumps(content, indent=2, ensure_ascii=False) + "\n")
    if overall.n:
      write_text_atomically(join(self._output_dir, "report.html"),
                            leaderboard_report_html(rows, content, overall))
    yield {"systems": len(rows), "human_rated_rows": overall.n}


class _EvaluateRecord(RunRecord):
  """run.json from the pipeline's counts."""
  job = "evaluate"

  def __init__(self, options: EvaluateOptions, plan: _Plan):
    super().__init__(plan.scorer.describe())
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
               leaderboard, gold, scorer_stats, model_info, human_rating_counts=None):
    counts = reconcile(read_counts.get("read", 0), ratings["scored"],
                       dead["predictions"])
    counts["unmatched_questions_discarded"] = counts["by_reason"].get(
        f"{UNMATCHED}:question_not_in_gold", 0)
    gold_counts = reconcile(gold_read_counts.get("read", 0), gold.n, dead["gold"])
    gold_counts["questions"] = gold_counts.pop("scored")
    join = dict(self._join, **join_stats)
    if join.get("corpus_bytes"):
      join["bytes_read_fraction"] = join.get("bytes_read", 0) / join["corpus_bytes"]
    manifest = {
        "counts": counts,
        "gold_counts": gold_counts,
    }
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
        "n_gold": gold.n,
        "systems": leaderboard["systems"],
        "human_rated_rows": leaderboard["human_rated_rows"],
        "inputs": dict(self._inputs),
        "join": join,
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
  has_corpus = options.corpus is not None

  gold = pipeline | "ReadGold" >> ReadGold(options.gold)
  gold_index = gold.records | "IndexGold" >> beam.CombineGlobally(BuildGoldIndex())
  read = pipeline | "ReadPredictions" >> ReadRecords(plan.prediction_files,
                                                     read_predictions)
  matched = read.records | "MatchGoldQuestions" >> beam.ParDo(
      _MatchGoldFn(), beam.pvalue.AsSingleton(gold_index)).with_outputs(
          "unmatched", main="matched")
  matches = matched.matched
  prediction_dead_letters = (read.dead_letter, matched.unmatched)
  dead_letters = {"gold": gold.dead_letter}
  manifest_inputs = {}
  if plan.human_rating_files:
    human = pipeline | "ReadHumanRatings" >> ReadRecords(plan.human_rating_files,
                                                         read_human_ratings)
    rated = matches | "AttachHumanRatings" >> AttachHumanRatings(human.records)
    matches = rated.matched
    dead_letters["human_ratings"] = (human.dead_letter, rated.dead_letter)
    manifest_inputs["human_rating_counts"] = (
        (human.counts, rated.stats) | "CollectHumanRatingCounts" >> beam.Flatten()
        | "SumHumanRatingCounts" >> beam.CombineGlobally(SumCounts()))
  passages = matches | "AttachPassages" >> AttachPassages(options.corpus, plan.join)
  scorer = plan.scorer.describe()["name"]
  scores = (passages["joined"]
            | "PrepareExamples" >> beam.MapTuple(
                prepare_example,
                reference_premise=options.view_as(ScorerOptions).decision == "decode")
            | "ScoreAttribution" >> ScoreAttribution(plan.scorer))
  ratings = (
      scores["scored"]
      | "RateAnswers" >> beam.MapTuple(
          lambda rated, score: rating_row(rated.match, rated.passage, score, scorer))
      | "WriteRatings" >> WriteMergedRows(functools.partial(_RatingsFold, has_corpus),
                                          options.output_dir, work_dir))
  summary = ratings["outcomes"] | "SummarizeSystems" >> SummarizeSystems(
      gold_index, options.bootstrap_samples, options.seed)
  leaderboard = (
      summary.rows
      | "ListSystems" >> beam.combiners.ToList()
      | "WriteLeaderboard" >> beam.ParDo(
          _WriteLeaderboardFn(options.output_dir, options.bootstrap_samples,
                              options.seed),
          beam.pvalue.AsSingleton(gold_index), beam.pvalue.AsList(summary.agreement)))
  failed = scores["failed"] | "DeadLetterScoringFailures" >> beam.MapTuple(
      _failed_row_dead_letter)
  dead_letters["predictions"] = prediction_dead_letters + (ratings["dead_letter"], failed)
  dead = (dead_letters
          | "WriteDeadLetters" >> WriteDeadLetters(
              FileSystems.join(options.output_dir, "dead_letter.jsonl"), work_dir))
  _ = pipeline | "WriteRunManifest" >> WriteManifest(
      FileSystems.join(options.output_dir, "run.json"), record,
      {
          "read_counts": read.counts | "SumReadCounts" >> beam.CombineGlobally(
              SumCounts()),
          "gold_read_counts": gold.counts | "SumGoldReadCounts" >> beam.CombineGlobally(
              SumCounts()),
          "ratings": ratings["stats"],
          "dead": dead,
          "join_stats": passages["stats"] | "SumJoinStats" >> beam.CombineGlobally(
              SumCounts()),
          "leaderboard": leaderboard,
          "gold": gold_index,
          **scorer_side_inputs(pipeline, plan.scorer, scores["stats"]),
          **manifest_inputs,
      },
      work_dir=work_dir)
  return plan.output


def run(argv=None) -> int:
  return run_job("evaluate", argv, EvaluateOptions, build_pipeline)
