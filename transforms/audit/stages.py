"""The stages of `autoais audit` as composite PTransforms, in the order the job
applies them (beam_jobs/audit.py):

    GradeAnswers          answers -> answers with EM / F1 (--gold)
    IndexTopics           TREC topics -> {query id: question}, repeats dead-lettered
    MatchCandidates       candidates -> AuditPairs of the answers that ask for them
    SelectCandidates      an answer's pairs -> those it is audited on, in rank order
    ExpandToArticles      top-1 pairs -> every passage of their article
    JoinCandidatePassages pairs -> (CandidateKey, example) with corpus passages
    RateCandidates        examples -> AuditCandidateRows, answers accounted for

Each returns a dict of PCollections: its main output and, where it has them,
`dead_letter` (rows not audited, with a reason), `stats` (counts for run.json)
and `join_stats`. The per-element rules are plain functions and DoFns in
transforms/audit/steps.py.
"""
from typing import Optional

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems

from autoais.schemas import AuditCandidateRow, AuditPair
from autoais.transforms.audit.readers import read_topics
from autoais.transforms.audit.steps import (JOIN_KEY, AccountAnswersFn, BuildTopicIndex,
                                    ExpandArticleFn, MatchCandidatesFn,
                                    PrepareExamplesFn, SelectCandidatesFn, answer_row_key,
                                    candidate_scoring_failed, later_topic,
                                    passage_to_look_up, top1_article, unit_key)
from autoais.transforms.corpus import store
from autoais.transforms.io.gold import ReadGold
from autoais.transforms.io.input_records import ReadRecords
from autoais.transforms.io.spilled_groups import SpilledGroupByKey
from autoais.transforms.scoring.attribution import (ScoreAttribution, first_failure,
                                            score_columns, scored_or_failed)
from autoais.transforms.stats.metrics import BuildGoldIndex


class _GradeAnswersFn(beam.DoFn):
  """Fills in EM / F1 of answers whose question is in gold."""

  def process(self, answer, gold):
    graded = gold.grade(answer.question, answer.answer)
    if graded is None:
      yield beam.pvalue.TaggedOutput("stats", {"answers_not_in_gold": 1})
      yield answer
    else:
      yield answer._replace(em=graded[1], f1=graded[2])


class GradeAnswers(beam.PTransform):
  """PCollection[AuditAnswer] -> {"answers": with EM / F1 where the question is
  in `gold_source`, "stats": answers not in gold, "gold_counts" /
  "gold_dead_letter": the gold reader's, "gold_questions": a singleton count}."""

  def __init__(self, gold_source: str):
    super().__init__()
    self._gold_source = gold_source

  def expand(self, answers):
    gold = answers.pipeline | "ReadGold" >> ReadGold(self._gold_source)
    gold_index = gold.records | "IndexGold" >> beam.CombineGlobally(BuildGoldIndex())
    graded = answers | "GradeAgainstGold" >> beam.ParDo(
        _GradeAnswersFn(), beam.pvalue.AsSingleton(gold_index)).with_outputs(
            "stats", main="answers")
    return {"answers": graded.answers, "stats": graded.stats,
            "gold_counts": gold.counts, "gold_dead_letter": gold.dead_letter,
            "gold_questions": gold_index | "CountGoldQuestions" >> beam.Map(
                lambda index: index.n)}


class _RejectLaterTopicsFn(beam.DoFn):

  def process(self, topic, kept):
    dead = later_topic(topic, kept)
    if dead is not None:
      yield dead


class IndexTopics(beam.PTransform):
  """pipeline -> {"questions": a singleton {query id: question} of the first
  topic of each id, "counts": the reader's, "kept": a singleton count,
  "dead_letter" / "repeated": bad lines, later topics of an id}."""

  def __init__(self, topic_files):
    super().__init__()
    self._topic_files = topic_files

  def expand(self, pbegin):
    read = pbegin | "ReadTopics" >> ReadRecords(self._topic_files, read_topics)
    kept = read.records | "KeepFirstTopics" >> beam.CombineGlobally(BuildTopicIndex())
    return {
        "questions": kept | "TopicQuestions" >> beam.Map(
            lambda topics: {qid: topic.question for qid, topic in topics.items()}),
        "counts": read.counts,
        "kept": kept | "CountTopics" >> beam.Map(len),
        "dead_letter": read.dead_letter,
        "repeated": read.records | "RejectRepeatedTopics" >> beam.ParDo(
            _RejectLaterTopicsFn(), beam.pvalue.AsSingleton(kept)),
    }


class MatchCandidates(beam.PTransform):
  """PCollection[Candidate] -> {"pairs": AuditPair per candidate an answer asks
  for, "per_answer": (answer row, candidates matched), "dead_letter":
  candidates no answer asks for, "stats": candidates matched through topics}.
  `index`: the singleton AnswerIndex; `questions`: the singleton topics."""

  def __init__(self, index, questions):
    super().__init__()
    self._index = index
    self._questions = questions

  def expand(self, candidates):
    matched = candidates | "MatchAnswers" >> beam.ParDo(
        MatchCandidatesFn(), beam.pvalue.AsSingleton(self._index),
        beam.pvalue.AsSingleton(self._questions)).with_outputs(
            "dead_letter", "stats", main="pairs")
    per_answer = (matched.pairs
                  | "KeyByAnswerRow" >> beam.Map(lambda pair: (answer_row_key(pair), 1))
                  | "CountCandidatesPerAnswer" >> beam.CombinePerKey(sum))
    return {"pairs": matched.pairs, "per_answer": per_answer,
            "dead_letter": matched.dead_letter, "stats": matched.stats}


class SelectCandidates(beam.PTransform):
  """PCollection[AuditPair] -> {"pairs": the pairs each answer is audited on
  (SelectCandidatesFn), "firsts": (an answer's top-1 pair, pairs kept),
  "dead_letter": later lists, ranks and passages given again, "stats":
  candidates past `top_k`, lists whose scores do not fall with rank}. An
  answer's pairs are grouped through runs on disk under `work_dir`."""

  def __init__(self, top_k: Optional[int], work_dir: str):
    super().__init__()
    self._top_k = top_k
    self._work_dir = work_dir

  def expand(self, pairs):
    selected = (pairs
                | "KeyByAuditedAnswer" >> beam.Map(lambda pair: (unit_key(pair), pair))
                | "GroupByAuditedAnswer" >> SpilledGroupByKey(self._work_dir)
                | "SelectByRank" >> beam.ParDo(SelectCandidatesFn(self._top_k)
                                               ).with_outputs("firsts", "dead_letter",
                                                              "stats", main="pairs"))
    return {"pairs": selected.pairs, "firsts": selected.firsts,
            "dead_letter": selected.dead_letter, "stats": selected.stats}


class ExpandToArticles(beam.PTransform):
  """PCollection[(top-1 AuditPair, pairs kept)] of each answer -> {"pairs": the
  top-1 pair (rank 1), then every other passage of its article
  (--candidates_from article), "stats": candidates replaced and articles
  missing, "join_stats": the article index's reads}."""

  def __init__(self, corpus_dir: str):
    super().__init__()
    self._corpus_dir = corpus_dir

  def expand(self, firsts):
    articles = firsts | "LookUpArticles" >> store.LookupArticles(self._corpus_dir,
                                                                  top1_article)
    expanded = articles["joined"] | "ExpandArticles" >> beam.ParDo(
        ExpandArticleFn()).with_outputs("stats", main="pairs")
    return {"pairs": expanded.pairs, "stats": expanded.stats,
            "join_stats": articles["stats"]}


class JoinCandidatePassages(beam.PTransform):
  """PCollection[AuditPair] -> {"examples": (CandidateKey, example or None),
  "dead_letter": candidates not in the corpus, "stats", "join_stats"}: a sorted
  merge join with the corpus (none without `corpus_dir`: every candidate then
  carries its passage), then the scorer's examples (`reference_premise`: as
  the Attributed QA script builds them)."""

  def __init__(self, corpus_dir: Optional[str], work_dir: str, reference_premise: bool):
    super().__init__()
    self._corpus_dir = corpus_dir
    self._work_dir = work_dir
    self._reference_premise = reference_premise

  def expand(self, pairs):
    if self._corpus_dir:
      looked = pairs | "JoinPassages" >> store.SortedJoinPassages(
          self._corpus_dir, FileSystems.join(self._work_dir, "join"), AuditPair,
          JOIN_KEY, passage_to_look_up)
      joined, join_stats = looked["joined"], looked["stats"]
    else:
      joined = pairs | "NoCorpus" >> beam.Map(lambda pair: (pair, None))
      join_stats = pairs.pipeline | "NoJoinStats" >> beam.Create([{}])
    prepared = joined | "PrepareExamples" >> beam.ParDo(
        PrepareExamplesFn(self._reference_premise)).with_outputs(
            "dead_letter", "stats", main="examples")
    return {"examples": prepared.examples, "dead_letter": prepared.dead_letter,
            "stats": prepared.stats, "join_stats": join_stats}


def candidate_row(pair, found: bool, score, scorer: str) -> AuditCandidateRow:
  nli_score, auto_ais, n_windows, truncated = score_columns(score)
  return AuditCandidateRow(
      pair.system_name, pair.question, pair.query_id, pair.answer, pair.passage_id,
      pair.rank, pair.retrieval_score, found, auto_ais, nli_score, n_windows,
      truncated, pair.from_article, pair.em, pair.f1, scorer, pair.answer_file,
      pair.answer_line, pair.source_file, pair.source_line)


class _RateCandidatesFn(beam.DoFn):
  """(CandidateKey, score or ScoringFailure) -> its AuditCandidateRow; every
  candidate of an answer one of whose candidates could not be scored is left
  out (the answer's figures would be over the others only): dead-lettered if it
  is a line of the input that was found in the corpus (one not found is
  dead-lettered already; an article passage is no input line)."""

  def __init__(self, scorer: str):
    self._scorer = scorer

  def process(self, keyed_outcome, failed_answers):
    key, outcome = keyed_outcome
    pair = key.pair
    failure = failed_answers.get(answer_row_key(pair))
    if failure is None:
      yield candidate_row(pair, key.found, outcome, self._scorer)
    elif key.found and not pair.from_article:
      yield beam.pvalue.TaggedOutput("dead_letter",
                                     candidate_scoring_failed(pair, failure))


class RateCandidates(beam.PTransform):
  """PCollection[(CandidateKey, example)] -> {"rows": AuditCandidateRow,
  "dead_letter": candidates of answers left out, "audited": {"audited": 1} per
  answer audited, "answer_dead_letter": answers repeated, without candidates
  or left out because scoring a candidate failed, "stats": the scorer's}.
  `answers`: every answer read; `index`: the singleton AnswerIndex;
  `per_answer`: MatchCandidates' counts; a model's examples are grouped in
  runs under `work_dir`."""

  def __init__(self, scorer, answers, index, per_answer, work_dir: str):
    super().__init__()
    self._scorer = scorer
    self._work_dir = work_dir
    self._answers = answers
    self._index = index
    self._per_answer = per_answer

  def expand(self, examples):
    scored = examples | "ScoreAttribution" >> ScoreAttribution(self._scorer,
                                                               self._work_dir)
    # Answers one of whose candidates could not be scored: left out whole, with
    # their candidates (few: a side input).
    failed_answers = beam.pvalue.AsDict(
        scored["failed"]
        | "KeyFailuresByAnswerRow" >> beam.MapTuple(
            lambda key, failure: (answer_row_key(key.pair), failure))
        | "FirstFailurePerAnswer" >> beam.CombinePerKey(first_failure))
    accounted = self._answers | "AccountAnswers" >> beam.ParDo(
        AccountAnswersFn(), beam.pvalue.AsSingleton(self._index),
        beam.pvalue.AsDict(self._per_answer), failed_answers).with_outputs(
            "dead_letter", main="audited")
    # Scores and failures are rated apart, not flattened first: the FnApiRunner
    # holds a Flatten's inputs whole, and the rows are spilled where they are
    # made (WriteMergedRows). A failed candidate's answer is in failed_answers,
    # so it yields a dead letter only.
    name = self._scorer.describe()["name"]
    rated = scored["scored"] | "RateCandidateRows" >> beam.ParDo(
        _RateCandidatesFn(name), failed_answers).with_outputs("dead_letter", main="rows")
    failed = scored["failed"] | "RateFailedCandidates" >> beam.ParDo(
        _RateCandidatesFn(name), failed_answers).with_outputs("dead_letter", main="rows")
    dead = ((rated.dead_letter, failed.dead_letter)
            | "CollectCandidateDeadLetters" >> beam.Flatten())
    return {"rows": rated.rows, "dead_letter": dead,
            "audited": accounted.audited, "answer_dead_letter": accounted.dead_letter,
            "stats": scored["stats"]}

