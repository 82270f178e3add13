"""audit: corpus-wide attribution audit of answers against many candidate passages
(XOR-AttriQA 4, 5.3; SPEC 5.7).

    autoais audit --answers answers.csv --candidates 'runs/*.trec' \
        --topics topics.tsv --corpus CORPUS_DIR --output_dir out/ \
        [--gold ../shared/data/nq_open/NQ-open.dev.jsonl] \
        [--candidates_from run|article] [--top_k K] \
        [--scorer string-match|t5 --model DIR ...] [--bootstrap_samples 1000]
    python -m beam_jobs.audit ...

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
(+ candidates below --top_k, + candidates replaced by their article).
"""
if __name__ == "__main__":
  # `python -m beam_jobs.audit`: run the package module (Beam pickles DoFns by
  # reference).
  import sys
  from beam_jobs.audit import run
  sys.exit(run())

import json
from typing import NamedTuple, Optional

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems
from apache_beam.options.pipeline_options import PipelineOptions

from beam_jobs.common import (JobArguments, ScorerOptions, is_local_runner, require,
                              run_job, scorer_from_options)
from schemas.errors import ConfigError
from beam_jobs.output_dir import OutputDir
from schemas import (AUDIT_ANSWER_ROW_SCHEMA, AUDIT_CANDIDATE_SCHEMA,
                     AUDIT_SYSTEM_SCHEMA, REJECTED, AuditCandidateRow, AuditPair,
                     DeadLetter)
from transforms.audit.readers import (ANSWER_FIELDS, candidates_format,
                                      read_audit_answers, read_candidates, read_topics)
from transforms.audit.steps import (ARTICLE, AUDIT_KEY, CANDIDATE_SOURCES, JOIN_KEY, RUN,
                                    AccountAnswersFn, AnswerAudit, AuditOutcomes,
                                    BuildAnswerIndex, BuildTopicIndex, ExpandArticleFn,
                                    FirstCandidate, MatchCandidatesFn, PrepareExamplesFn,
                                    answer_row_key, audit_system_row,
                                    candidate_scoring_failed, later_topic,
                                    passage_to_look_up, top1_article, unit_key)
from transforms.corpus import store
from transforms.io.dead_letters import WriteDeadLetters
from transforms.io.gold import TFDS_PREFIX, ReadGold, check_gold_source
from transforms.io.inputs import (check_input_file, check_text_file, data_format,
                                  match_files)
from transforms.io.manifest import (SumCounts, WriteManifest, reconcile)
from transforms.io.records import ReadRecords, read_header
from transforms.scoring.attribution import (ScoreAttribution, first_failure,
                                            scored_or_failed)
from transforms.stats.metrics import BuildGoldIndex
from transforms.rows.merge import RowFold, RowTable, WriteMergedRows
from transforms.rows.record import RunRecord, scorer_side_inputs
from transforms.rows.summary import WriteSummary, percent
from schemas.errors import InputError

OUTPUT_FILES = ("run.json", "audit_candidates.parquet", "audit_answers.parquet",
                "audit_answers.csv", "audit.csv", "audit.json", "audit.md",
                "dead_letter.jsonl")


class AuditOptions(PipelineOptions):
  """audit's own flags; the scorer flags are beam_jobs.common.ScorerOptions."""

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
    if options.candidates_from not in CANDIDATE_SOURCES:
      raise ConfigError(f"--candidates_from {options.candidates_from!r}: choose from "
                        f"{', '.join(CANDIDATE_SOURCES)}")
    if options.top_k is not None and options.top_k < 1:
      raise ConfigError("--top_k must be positive")
    if options.bootstrap_samples < 1:
      raise ConfigError("--bootstrap_samples must be positive")
    self.scorer = scorer_from_options(options, is_local_runner(runner))
    self.answer_files = self._files(options.answers, "--answers")
    has_query_ids = False
    for path in self.answer_files:
      check_input_file(path)
      header = read_header(path, ANSWER_FIELDS)
      missing = [name for name in ("question", "answer") if name not in header]
      if data_format(path) != "jsonl" and missing:
        raise InputError(f"{path}:1: missing required column(s) {', '.join(missing)} "
                         f"(found: {', '.join(header) or 'none'})")
      has_query_ids |= data_format(path) == "jsonl" or "query_id" in header
    self.candidate_files = self._files(options.candidates, "--candidates")
    formats = set()
    for path in self.candidate_files:
      formats.add(candidates_format(path))
      check_text_file(path)
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
    self.output = OutputDir(
        "audit", options.output_dir, OUTPUT_FILES, reads=reads,
        read_dirs={"--corpus": options.corpus,
                   "--model": options.view_as(ScorerOptions).model})

  @staticmethod
  def _files(pattern: str, flag: str):
    files = match_files(pattern)
    if not files:
      raise ConfigError(f"{flag} {pattern!r} matches no files")
    return files


# ----------------------------------------------------------------------------
# Steps.


class _GradeAnswersFn(beam.DoFn):
  """Fills in EM / F1 of answers whose question is in gold."""

  def process(self, answer, gold):
    graded = gold.grade(answer.question, answer.answer)
    if graded is None:
      yield beam.pvalue.TaggedOutput("stats", {"answers_not_in_gold": 1})
      yield answer
    else:
      yield answer._replace(em=graded[1], f1=graded[2])


class _RejectLaterTopicsFn(beam.DoFn):

  def process(self, topic, kept):
    dead = later_topic(topic, kept)
    if dead is not None:
      yield dead


class _RateCandidatesFn(beam.DoFn):
  """((pair, found), score or ScoringFailure) -> its AuditCandidateRow; every
  candidate of an answer one of whose candidates could not be scored is left
  out (the answer's figures would be over the others only): dead-lettered if it
  is a line of the input that was found in the corpus (one not found is
  dead-lettered already; an article passage is no input line)."""

  def __init__(self, scorer: str):
    self._scorer = scorer

  def process(self, keyed_outcome, failed_answers):
    (pair, found), outcome = keyed_outcome
    failure = failed_answers.get(answer_row_key(pair))
    if failure is None:
      yield candidate_row(pair, found, outcome, self._scorer)
    elif found and not pair.from_article:
      yield beam.pvalue.TaggedOutput("dead_letter",
                                     candidate_scoring_failed(pair, failure))


def candidate_row(pair, found: bool, score, scorer: str) -> AuditCandidateRow:
  if score is None:
    nli_score, auto_ais, n_windows, truncated = None, "N", 0, False
  else:
    nli_score, n_windows, truncated = score.nli_score, score.n_windows, score.truncated
    auto_ais = "Y" if score.attributable else "N"
  return AuditCandidateRow(
      pair.system_name, pair.question, pair.query_id, pair.answer, pair.passage_id,
      pair.rank, pair.retrieval_score, found, auto_ais, nli_score, n_windows,
      truncated, pair.from_article, pair.em, pair.f1, scorer, pair.answer_file,
      pair.answer_line, pair.source_file, pair.source_line)


class _MergedCandidate(NamedTuple):
  """The fields of a candidate row that the writer reads as Python values."""
  system_name: str
  question: str
  query_id: Optional[str]
  answer: str
  candidate_id: str
  rank: int
  found: bool
  auto_ais: str
  nli_score: Optional[float]
  from_article: bool
  em: Optional[float]
  f1: Optional[float]
  answer_file: str
  answer_line: int


class _AuditFold(RowFold):
  """An answer's candidates arrive together, in rank order: writes
  audit_candidates.parquet and audit_answers.parquet / .csv, dead-letters
  repeated candidates of an answer, and gives one AuditOutcomes per system."""
  row_type = AuditCandidateRow
  merged_type = _MergedCandidate
  sort_key = AUDIT_KEY
  run_name = "candidates"
  tables = (RowTable("audit_candidates", AUDIT_CANDIDATE_SCHEMA, write_csv=False),
            RowTable("audit_answers", AUDIT_ANSWER_ROW_SCHEMA))

  def __init__(self):
    self._stats = {"audited_answers": 0, "candidates_scored": 0,
                   "article_candidates": 0}
    self._unit, self._audit, self._first, self._outcomes = None, None, None, None

  def _finish_answer(self, tables):
    if self._audit is not None:
      row = self._audit.row(self._first.system_name, self._first)
      tables["audit_answers"].add_row(row)
      self._outcomes.add(row)
      self._stats["audited_answers"] += 1
      self._audit = None

  def start_system(self, system_name):
    self._outcomes = AuditOutcomes(system_name)

  def add(self, row, ref, tables):
    unit = (row.system_name, row.answer_file, row.answer_line)
    if unit != self._unit:
      self._finish_answer(tables)
      self._unit, self._audit, self._first = unit, AnswerAudit(), row
    if not self._audit.add(row.candidate_id, row.rank, row.found, row.auto_ais == "Y",
                           row.nli_score):
      if row.found:  # one not found is dead-lettered already, as unknown
        yield self._duplicate(ref)
      return
    if row.found:
      tables["audit_candidates"].add(ref)
      self._stats["article_candidates" if row.from_article
                  else "candidates_scored"] += 1

  def end_system(self, tables):
    self._finish_answer(tables)
    yield self._outcomes

  @staticmethod
  def _duplicate(ref) -> DeadLetter:
    row = ref.row(AuditCandidateRow)
    return DeadLetter(
        row.source_file, row.source_line, REJECTED, "duplicate_candidate", "docid",
        f"{row.source_file}:{row.source_line}: field 'docid': passage "
        f"{row.candidate_id!r} is already a candidate of this answer of system "
        f"{row.system_name!r} at a better rank; the first is kept",
        json.dumps({"system_name": row.system_name, "question": row.question,
                    "id": row.candidate_id, "rank": row.rank}, ensure_ascii=False))

  def stats(self):
    return self._stats


def _with_ci(row, name: str) -> str:
  return percent(*(getattr(row, name + suffix) for suffix in ("", "_ci_low",
                                                              "_ci_high")))


def audit_markdown(rows) -> str:
  lines = [
      "Attribution of each system's answers in %: of the top-1 candidate, of any "
      "candidate, and of the candidate the scorer ranks first (reranked); gain = "
      "(reranked - top-1) / top-1; EM / non-EM: top-1 and reranked attribution of "
      "exact-match and other answers (with --gold). 95% bootstrap CIs over "
      "questions in brackets.",
      "",
      "| system | answers | candidates | top-1 | any | reranked | gain | EM answers | "
      "top-1 EM | top-1 non-EM | reranked EM | reranked non-EM |",
      "|---|---:|---:|---|---|---|---|---:|---|---|---|---|",
  ]
  for r in rows:
    rates = [_with_ci(r, name) for name in ("top1", "any", "reranked", "reranking_gain")]
    split = [_with_ci(r, name)
             for name in ("top1_em", "top1_non_em", "reranked_em", "reranked_non_em")]
    lines.append(f"| {r.system_name} | {r.n_answers} | {r.n_candidates} | "
                 + " | ".join(rates) + f" | {r.n_em} / {r.n_graded} | "
                 + " | ".join(split) + " |")
  return "\n".join(lines) + "\n"


class _AuditRecord(RunRecord):
  job = "audit"

  def __init__(self, options: AuditOptions, plan: _Plan):
    super().__init__(plan.scorer.describe())
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
                      replaced_by_article=replaced)
    counts = {"answers": answers, "candidates": candidates}
    if topic_reads is not None:
      counts["topics"] = reconcile(topic_reads.get("read", 0), topics_kept,
                                   dead["topics"])
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


def _sum(label: str, pcoll):
  return pcoll | label >> beam.CombineGlobally(SumCounts())


def build_pipeline(pipeline: beam.Pipeline, options: PipelineOptions) -> OutputDir:
  """Validates the options, claims the output directory, then adds the audit
  steps to `pipeline`; returns the claimed OutputDir."""
  options = options.view_as(AuditOptions)
  plan = _Plan(options, pipeline.runner)
  record = _AuditRecord(options, plan)
  work_dir = plan.output.claim()
  scorer_name = plan.scorer.describe()["name"]
  step_stats = []

  answers_read = pipeline | "ReadAnswers" >> ReadRecords(plan.answer_files,
                                                         read_audit_answers)
  answers = answers_read.records
  gold_read = None
  if options.gold:
    gold_read = pipeline | "ReadGold" >> ReadGold(options.gold)
    gold_index = gold_read.records | "IndexGold" >> beam.CombineGlobally(
        BuildGoldIndex())
    graded = answers | "GradeAnswers" >> beam.ParDo(
        _GradeAnswersFn(), beam.pvalue.AsSingleton(gold_index)).with_outputs(
            "stats", main="answers")
    answers = graded.answers
    step_stats.append(graded.stats)
  index = answers | "IndexAnswers" >> beam.CombineGlobally(BuildAnswerIndex())

  topics_read, topic_dead = None, ()
  if plan.topic_files:
    topics_read = pipeline | "ReadTopics" >> ReadRecords(plan.topic_files, read_topics)
    kept_topics = topics_read.records | "IndexTopics" >> beam.CombineGlobally(
        BuildTopicIndex())
    topic_dead = (topics_read.dead_letter,
                  topics_read.records | "RejectRepeatedTopics" >> beam.ParDo(
                      _RejectLaterTopicsFn(), beam.pvalue.AsSingleton(kept_topics)))
    questions = kept_topics | "TopicQuestions" >> beam.Map(
        lambda kept: {qid: topic.question for qid, topic in kept.items()})
  else:
    questions = pipeline | "NoTopics" >> beam.Create([{}])

  candidates_read = pipeline | "ReadCandidates" >> ReadRecords(plan.candidate_files,
                                                               read_candidates)
  matched = candidates_read.records | "MatchAnswers" >> beam.ParDo(
      MatchCandidatesFn(options.top_k), beam.pvalue.AsSingleton(index),
      beam.pvalue.AsSingleton(questions)).with_outputs(
          "dead_letter", "stats", main="pairs")
  step_stats.append(matched.stats)
  per_answer = (matched.pairs
                | "KeyByAnswerRow" >> beam.Map(lambda pair: (answer_row_key(pair), 1))
                | "CountCandidatesPerAnswer" >> beam.CombinePerKey(sum))

  pairs = matched.pairs
  join_stats = []
  if options.candidates_from == ARTICLE:
    firsts = (pairs
              | "KeyByAuditedAnswer" >> beam.Map(lambda pair: (unit_key(pair), pair))
              | "FindTopCandidate" >> beam.CombinePerKey(FirstCandidate())
              | "DropAnswerKeys" >> beam.Values())
    articles = firsts | "LookUpArticles" >> store.LookupArticles(options.corpus,
                                                                 top1_article)
    expanded = articles["joined"] | "ExpandArticles" >> beam.ParDo(
        ExpandArticleFn()).with_outputs("stats", main="pairs")
    pairs = expanded.pairs
    step_stats.append(expanded.stats)
    join_stats.append(articles["stats"])
  if options.corpus:
    looked = pairs | "JoinPassages" >> store.SortedJoinPassages(
        options.corpus, FileSystems.join(work_dir, "join"), AuditPair, JOIN_KEY,
        passage_to_look_up)
    joined = looked["joined"]
    join_stats.append(looked["stats"])
  else:
    joined = pairs | "NoCorpus" >> beam.Map(lambda pair: (pair, None))
  prepared = joined | "PrepareExamples" >> beam.ParDo(
      PrepareExamplesFn(options.view_as(ScorerOptions).decision == "decode")
  ).with_outputs("dead_letter", "stats", main="examples")
  step_stats.append(prepared.stats)
  scored = prepared.examples | "ScoreAttribution" >> ScoreAttribution(plan.scorer)
  # Answers one of whose candidates could not be scored: left out whole, with
  # their candidates (few: a side input).
  failed_answers = beam.pvalue.AsDict(
      scored["failed"]
      | "KeyFailuresByAnswerRow" >> beam.MapTuple(
          lambda key, failure: (answer_row_key(key[0]), failure))
      | "FirstFailurePerAnswer" >> beam.CombinePerKey(first_failure))
  accounted = answers | "AccountAnswers" >> beam.ParDo(
      AccountAnswersFn(), beam.pvalue.AsSingleton(index),
      beam.pvalue.AsDict(per_answer), failed_answers).with_outputs(
          "dead_letter", main="audited")
  rated = (scored_or_failed(scored, "CollectCandidateOutcomes")
           | "RateCandidates" >> beam.ParDo(_RateCandidatesFn(scorer_name),
                                            failed_answers).with_outputs(
                                                "dead_letter", main="rows"))
  written = rated.rows | "WriteAudit" >> WriteMergedRows(_AuditFold, options.output_dir,
                                                        work_dir)
  summary = (
      written["outcomes"]
      | "SummarizeSystems" >> beam.Map(audit_system_row, options.bootstrap_samples,
                                       options.seed)
      | "WriteSummary" >> WriteSummary(options.output_dir, "audit", AUDIT_SYSTEM_SCHEMA, {
          "candidates_from": options.candidates_from,
          "units": {"rates": "fraction", "reranking_gain": "relative"},
          "bootstrap": {"method": "percentile", "level": 0.95,
                        "samples": options.bootstrap_samples, "seed": options.seed,
                        "unit": "question (a system's answers)"}}, audit_markdown))
  dead_letters = {
      "answers": (answers_read.dead_letter, accounted.dead_letter),
      "candidates": (candidates_read.dead_letter, matched.dead_letter,
                     prepared.dead_letter, rated.dead_letter, written["dead_letter"]),
  }
  if topic_dead:
    dead_letters["topics"] = topic_dead
  if gold_read is not None:
    dead_letters["gold"] = gold_read.dead_letter
  dead = dead_letters | "WriteDeadLetters" >> WriteDeadLetters(
      FileSystems.join(options.output_dir, "dead_letter.jsonl"), work_dir)
  empty = pipeline | "NoCounts" >> beam.Create([None])
  _ = pipeline | "WriteRunManifest" >> WriteManifest(
      FileSystems.join(options.output_dir, "run.json"), record,
      {
          "answer_reads": _sum("SumAnswerReads", answers_read.counts),
          "candidate_reads": _sum("SumCandidateReads", candidates_read.counts),
          "topic_reads": (_sum("SumTopicReads", topics_read.counts)
                          if topics_read else empty),
          "topics_kept": (kept_topics | "CountTopics" >> beam.Map(len)
                          if topics_read else empty),
          "gold_reads": _sum("SumGoldReads", gold_read.counts) if gold_read else empty,
          "gold_questions": (gold_index | "CountGoldQuestions" >> beam.Map(
              lambda gold: gold.n) if gold_read else empty),
          "audited": _sum("SumAuditedAnswers", accounted.audited),
          "steps": _sum("SumStepStats", tuple(step_stats)
                        | "CollectStepStats" >> beam.Flatten()),
          "written": written["stats"],
          "dead": dead,
          "summary": summary,
          "join_stats": _sum("SumJoinStats", (tuple(join_stats) or (
              pipeline | "NoJoinStats" >> beam.Create([{}]),))
                             | "CollectJoinStats" >> beam.Flatten()),
          **scorer_side_inputs(pipeline, plan.scorer, scored["stats"]),
      },
      work_dir=work_dir)
  return plan.output


def run(argv=None) -> int:
  return run_job("audit", argv, AuditOptions, build_pipeline)
