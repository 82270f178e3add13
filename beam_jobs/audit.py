"""audit: corpus-wide attribution audit of answers against many candidate passages
(XOR-AttriQA, Muller et al. 2023, §4 and §5.3).

    autoais audit --answers answers.csv --candidates 'runs/*.trec' \
        --topics topics.tsv --corpus CORPUS_DIR --output_dir out/ \
        [--gold NQ-open.dev.jsonl] \
        [--candidates_from run|article] [--top_k K] \
        [--scorer string-match|t5 --model DIR ...] [--bootstrap_samples 1000]
    python -m autoais.beam_jobs.audit ...

Answers: rows `system_name, question, answer` (CSV / JSONL / Parquet; an
optional `query_id` where candidates are keyed by id; without `system_name`,
an answer takes the system of its candidates). Candidates: TREC run files
(`qid Q0 docid rank score tag`, the tag naming the system) with a topics TSV
(`qid<TAB>question`) where answers carry no query_id, or JSON Lines
`{system_name, question, candidates: [{id, rank} | {passage, rank}]}`. Matching
rules: transforms/audit/steps.py. With `--candidates_from article` an answer's
candidates are every passage of the article its top-1 passage belongs to,
found through the corpus's article index (transforms/corpus/store.py).

Per answer: candidates, top-1 decision, any attributable, the reranked choice
(highest nli_score, ties by rank) with its id, rank and score, EM / F1 with
--gold. Per system: top-1, any and reranked attribution rates, the relative
gain of reranking over top-1, top-1 and reranked attribution of exact-match
and of other answers, each with a 95% bootstrap CI over questions.

Outputs in --output_dir: audit_candidates.parquet (one row per answer x
candidate found), audit_answers.parquet / .csv, audit.csv / .json / .md,
dead_letter.jsonl (unknown ids, candidates no answer asks for, answers without
candidates, duplicates, bad lines; an answer a candidate of which a hosted model
could not score, with its candidates), and run.json, written last, whose counts
reconcile for answers and for candidates: read = scored + rejected + unmatched
(+ candidates past --top_k, + candidates replaced by their article).
"""
if __name__ == "__main__":
  # `python -m autoais.beam_jobs.audit`: run the package module (Beam pickles DoFns by
  # reference).
  import sys
  from autoais.beam_jobs.audit import run
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
from autoais.transforms.audit.readers import (check_answers_file, check_candidates_file,
                                      read_audit_answers, read_candidates)
from autoais.transforms.audit.stages import (ExpandToArticles, GradeAnswers, IndexTopics,
                                     JoinCandidatePassages, MatchCandidates,
                                     RateCandidates, SelectCandidates)
from autoais.transforms.audit.steps import ARTICLE, CANDIDATE_SOURCES, RUN, BuildAnswerIndex
from autoais.transforms.audit.tables import AuditFold, SummarizeAudit
from autoais.transforms.corpus import store
from autoais.transforms.io.gold import TFDS_PREFIX, check_gold_source
from autoais.transforms.io.inputs import check_text_file, match_files
from autoais.transforms.io.input_records import ReadRecords
from autoais.transforms.rows.merge import WriteMergedRows, row_table_files
from autoais.transforms.rows.run_record import RunRecord, WriteRunRecord, reconcile

OUTPUT_FILES = ("run.json", "audit_candidates.parquet", "audit_answers.parquet",
                "audit_answers.csv", "audit.csv", "audit.json", "audit.md",
                "dead_letter.jsonl")


class AuditOptions(ViewsKept, PipelineOptions):
  """audit's own flags; the scorer flags are beam_jobs.options.ScorerOptions."""

  # Listed in `--help` after the job's own flags (beam_jobs.parsing.job_help).
  SHARED_OPTIONS = (ScorerOptions, RowTableOptions)

  @classmethod
  def _add_argparse_args(cls, parser):
    group = JobArguments(parser, "audit")
    group.add_argument("--answers", help="Answer files: path, glob or comma list "
                       "(.csv, .jsonl, .parquet; compressed allowed), local or gs://.")
    group.add_argument("--candidates", help="Candidate files: TREC runs (any name "
                       "but .jsonl / .csv / .parquet) or candidate JSON Lines.")
    group.add_argument("--topics", default=None, help="Topics TSV (qid<TAB>question) "
                       "for TREC runs whose answers carry no query_id.")
    group.add_argument("--corpus", default=None, help="Corpus directory from "
                       "build-corpus (needed unless every candidate is given inline).")
    group.add_argument("--output_dir", help="Directory for the outputs.")
    group.add_argument("--gold", default=None, help="Gold answers for EM / F1: "
                       "NQ-Open JSONL or tfds:natural_questions_open/validation.")
    group.add_argument("--candidates_from", default=RUN,
                       help="run: the candidates as given; article: every passage "
                       "of the article of each answer's top-1 candidate.")
    group.add_argument("--top_k", type=int, default=None,
                       help="Audit only candidates ranked 1..K.")
    group.add_argument("--bootstrap_samples", type=int, default=1000,
                       help="Bootstrap resamples for 95%% CIs (default 1000).")
    group.add_argument("--seed", type=int, default=0, help="Bootstrap seed.")


class _Plan:

  def __init__(self, options: AuditOptions, runner):
    require(options, "answers", "candidates", "output_dir")
    require_choice("--candidates_from", options.candidates_from, CANDIDATE_SOURCES)
    if options.top_k is not None and options.top_k < 1:
      raise ConfigError("--top_k must be positive")
    if options.top_k is not None and options.candidates_from == ARTICLE:
      raise ConfigError("--top_k: with --candidates_from article an answer's candidates "
                        "are the passages of its top-1 candidate's article, whatever K "
                        "keeps of the run; drop one of them")
    check_bootstrap_flags(options)
    self.scorer = scorer_from_options(options, is_local_runner(runner))
    self.answer_files = self._files(options.answers, "--answers")
    has_query_ids = False
    for path in self.answer_files:
      columns = check_answers_file(path)
      # A JSON Lines record carries its own fields: any may hold a query_id.
      has_query_ids |= columns.kind == "field" or "query_id" in columns.names
    self.candidate_files = self._files(options.candidates, "--candidates")
    formats = {check_candidates_file(path) for path in self.candidate_files}
    self.topic_files = self._files(options.topics, "--topics") if options.topics else []
    for path in self.topic_files:
      check_text_file(path)
    if "trec" in formats and not self.topic_files and not has_query_ids:
      raise ConfigError("TREC runs name queries by id: give --topics (qid<TAB>"
                        "question) or answers with a query_id column")
    if options.gold:
      check_gold_source(options.gold)
    self.manifest = None
    if options.corpus:
      self.manifest = store.read_manifest(options.corpus)
      if options.candidates_from == ARTICLE:
        store.read_article_index(options.corpus)
    elif "trec" in formats or options.candidates_from == ARTICLE:
      raise ConfigError("--corpus is required: TREC runs and --candidates_from "
                        "article name passages by corpus id")
    reads = {"--answers": self.answer_files, "--candidates": self.candidate_files,
             "--topics": self.topic_files}
    if options.gold and not options.gold.startswith(TFDS_PREFIX):
      reads["--gold"] = [options.gold]
    self.num_shards = row_table_shards(options)
    self.output = OutputDir(
        "audit", options.output_dir, row_table_files(
            OUTPUT_FILES, (AuditFold,), self.num_shards), reads=reads,
        read_dirs={"--corpus": options.corpus, **scorer_read_dirs(options)})

  @staticmethod
  def _files(pattern: str, flag: str):
    files = match_files(pattern)
    if not files:
      raise ConfigError(f"{flag} {pattern!r} matches no files")
    return files


class _AuditRecord(RunRecord):
  job = "audit"
  summed = ("answer_reads", "candidate_reads", "topic_reads", "gold_reads", "audited",
            "steps", "join_stats")
  values = ("topics_kept", "gold_questions", "written", "summary")

  def __init__(self, options: AuditOptions, plan: _Plan):
    super().__init__(plan.scorer.describe())
    # Topics and gold are looked up, as a corpus is: no row is read from them.
    self.rows_from("answers", "answer_reads", "--answers", plan.answer_files)
    self.rows_from("candidates", "candidate_reads", "--candidates", plan.candidate_files)
    self._inputs = {
        "answers": plan.answer_files, "candidates": plan.candidate_files,
        "topics": plan.topic_files, "gold": options.gold, "corpus": options.corpus,
        "corpus_passages": plan.manifest["num_passages"] if plan.manifest else None,
        "candidates_from": options.candidates_from, "top_k": options.top_k}
    self._corpus_bytes = plan.manifest["total_bytes"] if plan.manifest else 0

  def fields(self, answer_reads, candidate_reads, topic_reads, topics_kept,
             gold_reads, gold_questions, audited, steps, written, dead, summary,
             join_stats, scorer_stats, model_info):
    answers = reconcile(answer_reads.get("read", 0), audited.get("audited", 0),
                        dead["answers"])
    answers["audited_as_system_answers"] = written["audited_answers"]
    answers["not_in_gold"] = steps.get("answers_not_in_gold", 0)
    beyond = steps.get("beyond_top_k", 0)
    replaced = steps.get("replaced_by_article", 0)
    candidates = reconcile(candidate_reads.get("read", 0),
                           written["candidates_scored"] + beyond + replaced,
                           dead["candidates"])
    candidates.update(scored=written["candidates_scored"], beyond_top_k=beyond,
                      replaced_by_article=replaced,
                      lists_ranked_against_scores=steps.get(
                          "lists_ranked_against_scores", 0))
    counts = {"answers": answers, "candidates": candidates}
    if topic_reads is not None:
      counts["topics"] = reconcile(topic_reads.get("read", 0), topics_kept,
                                   dead["topics"])
      # Where every candidate carries its question, or answers match by query
      # id, no candidate needs a topic: 0 says so.
      counts["topics"]["candidates_matched"] = steps.get("matched_through_topics", 0)
    if gold_reads is not None:
      counts["gold"] = reconcile(gold_reads.get("read", 0), gold_questions,
                                 dead["gold"])
    join = dict(join_stats, corpus_bytes=self._corpus_bytes,
                article_candidates=written["article_candidates"],
                articles_missing=steps.get("articles_missing", 0),
                article_passages_missing=steps.get("article_passages_missing", 0))
    if self._corpus_bytes:
      # Passage bytes over the passage shards' size (the article index's reads
      # are article_bytes_read).
      join["bytes_read_fraction"] = join.get("bytes_read", 0) / self._corpus_bytes
    return {
        "counts": counts,
        "systems": summary["systems"],
        "inputs": dict(self._inputs),
        "join": join,
        "scorer": self.scorer_fields(model_info, scorer_stats),
    }


def build_pipeline(pipeline: beam.Pipeline, options: PipelineOptions) -> OutputDir:
  """Validates the options, claims the output directory, then adds the audit
  stages (transforms/audit/stages.py) to `pipeline`; returns the claimed
  OutputDir."""
  options = options.view_as(AuditOptions)
  plan = _Plan(options, pipeline.runner)
  record = _AuditRecord(options, plan)
  work_dir = plan.output.claim()
  decode = options.view_as(ScorerOptions).decision == "decode"
  gold_counts = gold_questions = topic_counts = topics_kept = None  # not given
  dead_letters, steps, join_stats = {}, [], []

  answers_read = pipeline | "ReadAnswers" >> ReadRecords(plan.answer_files,
                                                         read_audit_answers)
  answers = answers_read.records
  if options.gold:
    graded = answers | "GradeAnswers" >> GradeAnswers(options.gold)
    answers = graded["answers"]
    steps.append(graded["stats"])
    gold_counts, gold_questions = graded["gold_counts"], graded["gold_questions"]
    dead_letters["gold"] = graded["gold_dead_letter"]
  index = answers | "IndexAnswers" >> beam.CombineGlobally(BuildAnswerIndex())
  if plan.topic_files:
    topics = pipeline | "IndexTopics" >> IndexTopics(plan.topic_files)
    questions = topics["questions"]
    topic_counts, topics_kept = topics["counts"], topics["kept"]
    dead_letters["topics"] = (topics["dead_letter"], topics["repeated"])
  else:
    questions = pipeline | "NoTopics" >> beam.Create([{}])

  candidates_read = pipeline | "ReadCandidates" >> ReadRecords(plan.candidate_files,
                                                               read_candidates)
  matched = candidates_read.records | "MatchCandidates" >> MatchCandidates(
      index, questions)
  selected = matched["pairs"] | "SelectCandidates" >> SelectCandidates(
      options.top_k, FileSystems.join(work_dir, "select"))
  pairs = selected["pairs"]
  steps.extend((matched["stats"], selected["stats"]))
  if options.candidates_from == ARTICLE:
    expanded = selected["firsts"] | "ExpandToArticles" >> ExpandToArticles(options.corpus)
    pairs = expanded["pairs"]
    steps.append(expanded["stats"])
    join_stats.append(expanded["join_stats"])
  joined = pairs | "JoinCandidatePassages" >> JoinCandidatePassages(
      options.corpus, work_dir, decode)
  steps.append(joined["stats"])
  join_stats.append(joined["join_stats"])
  rated = joined["examples"] | "RateCandidates" >> RateCandidates(
      plan.scorer, answers, index, matched["per_answer"],
      FileSystems.join(work_dir, "scoring"))
  written = rated["rows"] | "WriteAudit" >> WriteMergedRows(AuditFold, options.output_dir,
                                                           work_dir, plan.num_shards)
  summary = written["outcomes"] | "SummarizeAudit" >> SummarizeAudit(
      options.output_dir, options.candidates_from, options.bootstrap_samples,
      options.seed, plan.scorer.describe())

  dead_letters["answers"] = (answers_read.dead_letter, rated["answer_dead_letter"])
  dead_letters["candidates"] = (candidates_read.dead_letter, matched["dead_letter"],
                                selected["dead_letter"], joined["dead_letter"],
                                rated["dead_letter"],
                                written["dead_letter"])
  counts = {"answer_reads": answers_read.counts,
            "candidate_reads": candidates_read.counts, "topic_reads": topic_counts,
            "gold_reads": gold_counts, "audited": rated["audited"],
            "steps": tuple(steps), "join_stats": tuple(join_stats)}
  values = {"topics_kept": topics_kept, "gold_questions": gold_questions,
            "written": written["stats"], "summary": summary}
  _ = dict(counts, **values, dead=dead_letters, scorer_stats=rated["stats"]
           ) | "WriteRunRecord" >> WriteRunRecord(options.output_dir, work_dir, record,
                                                  scorer=plan.scorer)
  return plan.output


def run(argv=None) -> int:
  return run_job("audit", argv, AuditOptions, build_pipeline)
