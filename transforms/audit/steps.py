"""Corpus-wide attribution audits (XOR-AttriQA 4, 5.3; SPEC 5.7): the steps of
`autoais audit` between reading its inputs and writing its outputs.

Answers are matched to candidate lists by query: by `query_id` where the answer
has one, else by question text (a TREC run's query ids become questions through
the topics file). A candidate list belongs to a system (the TREC tag, or the
JSONL `system_name`): it is audited for that system's answer to its query, or,
where the answers name no system, for the query's unnamed answer, which then
takes the list's system. Answers are few next to candidates: they are held as a
side input (AnswerIndex), and the candidates stream past them, then through a
sorted merge join with the corpus (transforms/corpus/store.py: SortedJoinPassages;
candidates spread over the whole corpus would make point lookups re-read row
groups), the scorer, and into sorted runs, so that memory stays flat however
many candidates each answer has.

Per answer (AuditOutcome, from the candidate rows in rank order): the top-1
candidate (best rank) and whether it is attributable (N when it is not in the
corpus), whether any candidate is, and the reranked choice: the candidate with
the highest nli_score, ties by rank.
"""
import array
import functools
from typing import Dict, Iterable, NamedTuple, Optional, Tuple

import apache_beam as beam
import numpy as np

from autoais.schemas import (REJECTED, UNMATCHED, AuditAnswer, AuditAnswerRow, AuditPair,
                     AuditSystemRow, Candidate, DeadLetter, Topic)
from autoais.transforms.corpus.passages import parse_passage
from autoais.transforms.corpus.store import article_of
from autoais.transforms.io.fields import json_record
from autoais.transforms.scoring.attribution import scoring_failed
from autoais.transforms.scoring.examples import qa_example
from autoais.transforms.stats.metrics import (BootstrapWeights, percent_of, written,
                                               written_interval)

RUN, ARTICLE = "run", "article"
CANDIDATE_SOURCES = (RUN, ARTICLE)
# The sort key of candidate rows: a system's answers by question, each answer's
# candidates by rank.
AUDIT_KEY = ("system_name", "question", "answer_file", "answer_line", "rank",
             "candidate_id", "source_file", "source_line")


def _first(a, b):
  """The element read first (file, line)."""
  if a is None:
    return b
  return a if (a.source_file, a.source_line) <= (b.source_file, b.source_line) else b


def answer_key(answer: AuditAnswer) -> Tuple[str, str]:
  return ("id", answer.query_id) if answer.query_id is not None else (
      "question", answer.question)


class AnswerIndex:
  """The answers to audit by query key and system (None: unnamed), the first
  read of each (key, system) kept."""

  def __init__(self, answers: Iterable[AuditAnswer]):
    self._by_key: Dict[Tuple[str, str], Dict[Optional[str], AuditAnswer]] = {}
    for answer in answers:
      systems = self._by_key.setdefault(answer_key(answer), {})
      systems[answer.system_name] = _first(systems.get(answer.system_name), answer)

  def is_kept(self, answer: AuditAnswer) -> bool:
    return self._by_key[answer_key(answer)][answer.system_name] == answer

  def kept_answer(self, answer: AuditAnswer) -> AuditAnswer:
    return self._by_key[answer_key(answer)][answer.system_name]

  def match(self, candidate: Candidate, topics: Dict[str, str]
            ) -> Tuple[Optional[AuditAnswer], bool]:
    """(the answer a candidate is for or None, whether it was found through a
    question that `topics` gave the candidate's query id)."""
    keys = []
    if candidate.query_id is not None:
      keys.append(("id", candidate.query_id))
    question = candidate.question or topics.get(candidate.query_id)
    if question is not None:
      keys.append(("question", question))
    for key in keys:
      systems = self._by_key.get(key)
      if systems:
        answer = systems.get(candidate.system_name) or systems.get(None)
        if answer is not None:
          return answer, key[0] == "question" and candidate.question is None
    return None, False


class BuildAnswerIndex(beam.CombineFn):
  """AuditAnswer elements -> one AnswerIndex."""

  def create_accumulator(self):
    return []

  def add_input(self, accumulator, answer):
    accumulator.append(answer)
    return accumulator

  def merge_accumulators(self, accumulators):
    return [answer for accumulator in accumulators for answer in accumulator]

  def extract_output(self, accumulator):
    return AnswerIndex(accumulator)


class BuildTopicIndex(beam.CombineFn):
  """Topic elements -> {query id: question}, the first read of each id kept."""

  def create_accumulator(self):
    return {}

  def add_input(self, accumulator, topic):
    accumulator[topic.query_id] = _first(accumulator.get(topic.query_id), topic)
    return accumulator

  def merge_accumulators(self, accumulators):
    merged = {}
    for accumulator in accumulators:
      for topic in accumulator.values():
        self.add_input(merged, topic)
    return merged

  def extract_output(self, accumulator):
    return accumulator


def later_topic(topic: Topic, kept: Dict[str, Topic]) -> Optional[DeadLetter]:
  first = kept[topic.query_id]
  if first == topic:
    return None
  return DeadLetter(
      topic.source_file, topic.source_line, REJECTED, "duplicate_topic", "qid",
      f"{topic.source_file}:{topic.source_line}: field 'qid': query id "
      f"{topic.query_id!r} already appears at {first.source_file}:{first.source_line}",
      json_record({"qid": topic.query_id, "question": topic.question}))


def _answer_fields(answer: AuditAnswer) -> dict:
  return {"system_name": answer.system_name, "question": answer.question,
          "query_id": answer.query_id, "answer": answer.answer}


def _answer_json(answer: AuditAnswer) -> str:
  return json_record(_answer_fields(answer))


def _candidate_fields(candidate) -> dict:
  """A Candidate or an AuditPair as a dead letter's record."""
  return {"system_name": candidate.system_name, "query_id": candidate.query_id,
          "question": candidate.question, "id": candidate.passage_id,
          "rank": candidate.rank}


def _candidate_json(candidate) -> str:
  return json_record(_candidate_fields(candidate))


def candidate_scoring_failed(pair: AuditPair, failure) -> DeadLetter:
  """A candidate left out with its answer: scoring it or another candidate of
  the answer failed."""
  return scoring_failed(
      pair.source_file, pair.source_line, None,
      f"candidate {pair.passage_id!r} of the answer of system {pair.system_name!r} "
      f"at {pair.answer_file}:{pair.answer_line}, left out with that answer",
      failure, _candidate_fields(pair))


def answer_row_key(pair: AuditPair) -> Tuple[str, int]:
  """The answer row (file, line) a pair is audited for."""
  return (pair.answer_file, pair.answer_line)


class AccountAnswersFn(beam.DoFn):
  """Each answer read is audited, a later duplicate, has no candidates, or is
  left out because scoring one of its candidates failed (`failed_answers`:
  answer_row_key -> ScoringFailure). Main output: {"audited": 1} per audited
  answer row."""

  def process(self, answer, index: AnswerIndex, candidate_counts, failed_answers):
    if not index.is_kept(answer):
      kept = index.kept_answer(answer)
      yield beam.pvalue.TaggedOutput("dead_letter", DeadLetter(
          answer.source_file, answer.source_line, REJECTED, "duplicate_answer",
          "question",
          f"{answer.source_file}:{answer.source_line}: field 'question': this "
          f"query already has an answer{_of_system(answer)} at "
          f"{kept.source_file}:{kept.source_line}; the first one is kept",
          _answer_json(answer)))
    elif (answer.source_file, answer.source_line) not in candidate_counts:
      yield beam.pvalue.TaggedOutput("dead_letter", DeadLetter(
          answer.source_file, answer.source_line, UNMATCHED, "no_candidates",
          "question",
          f"{answer.source_file}:{answer.source_line}: field 'question': no "
          f"candidate passages{_of_system(answer)} for this query; not audited",
          _answer_json(answer)))
    elif (answer.source_file, answer.source_line) in failed_answers:
      failure = failed_answers[answer.source_file, answer.source_line]
      yield beam.pvalue.TaggedOutput("dead_letter", scoring_failed(
          answer.source_file, answer.source_line, None,
          f"a candidate passage of this answer{_of_system(answer)}", failure,
          _answer_fields(answer)))
    else:
      yield {"audited": 1}


def _of_system(answer: AuditAnswer) -> str:
  return f" of system {answer.system_name!r}" if answer.system_name else ""


class MatchCandidatesFn(beam.DoFn):
  """Candidate -> AuditPair, or an `unmatched` dead letter when no answer asks
  for it."""

  def process(self, candidate: Candidate, index: AnswerIndex, topics: Dict[str, str]):
    answer, through_topics = index.match(candidate, topics)
    if through_topics:
      yield beam.pvalue.TaggedOutput("stats", {"matched_through_topics": 1})
    if answer is None:
      yield beam.pvalue.TaggedOutput("dead_letter", DeadLetter(
          candidate.source_file, candidate.source_line, UNMATCHED, "no_answer",
          "qid" if candidate.question is None else "question",
          f"{candidate.source_file}:{candidate.source_line}: no answer of system "
          f"{candidate.system_name!r} (or without a system) for query "
          f"{candidate.query_id or candidate.question!r}",
          _candidate_json(candidate)))
      return
    yield AuditPair(candidate.system_name, answer.question, answer.query_id,
                    answer.answer, answer.em, answer.f1, candidate.passage_id,
                    candidate.passage, candidate.rank, candidate.retrieval_score, False,
                    answer.source_file, answer.source_line, candidate.source_file,
                    candidate.source_line, candidate.entry)


def unit_key(pair: AuditPair) -> Tuple[str, str, int]:
  """The audited answer a pair belongs to: (system, answer file, answer line)."""
  return (pair.system_name, pair.answer_file, pair.answer_line)


def _read_order(pair: AuditPair) -> Tuple[str, int, int]:
  return (pair.source_file, pair.source_line, -1 if pair.entry is None else pair.entry)


def _where(pair: AuditPair) -> str:
  return f"{pair.source_file}:{pair.source_line}"


def _field(pair: AuditPair, trec: str, jsonl: str) -> str:
  """A pair's field as its file names it: a TREC column, or an entry's key."""
  return trec if pair.entry is None else f"candidates[{pair.entry}].{jsonl}"


def _rejected_pair(pair: AuditPair, reason: str, field: str, why: str) -> DeadLetter:
  return DeadLetter(pair.source_file, pair.source_line, REJECTED, reason, field,
                    f"{_where(pair)}: field {field!r}: {why}", _candidate_json(pair))


class SelectCandidatesFn(beam.DoFn):
  """(audited answer, its AuditPairs) -> the pairs it is audited on, in rank
  order: those of its first list (the first file that has any), each rank once
  and each passage once (the first in rank, then reading, order), with `top_k`
  the K first of them. A pair of a later list for the same answer (a run given
  twice, two runs under one tag), a rank or a passage given again, is
  dead-lettered; a pair past the K first is counted. Left in, they would put
  two candidates at one rank, and the top-1 would be whichever id sorts first.
  Tagged "firsts": (the top-1 pair, how many pairs were kept), for
  --candidates_from article."""

  def __init__(self, top_k: Optional[int]):
    self._top_k = top_k

  def process(self, grouped):
    _, pairs = grouped
    pairs = sorted(pairs, key=_read_order)
    # A list is a file's candidates of one query and system: a TREC run's
    # lines of the query and tag, the JSON Lines lines of the query and system.
    first_file, ranked = pairs[0].source_file, []
    for pair in pairs:
      if pair.source_file == first_file:
        ranked.append(pair)
        continue
      yield beam.pvalue.TaggedOutput("dead_letter", _rejected_pair(
          pair, "repeated_list", "tag" if pair.entry is None else "system_name",
          f"a second candidate list of system {pair.system_name!r} for the answer at "
          f"{pair.answer_file}:{pair.answer_line} (the first: {_where(pairs[0])}); "
          "only the first is audited"))
    ranked.sort(key=lambda pair: (pair.rank, _read_order(pair)))
    ranks, passages, kept, scores = {}, {}, [], []
    for pair in ranked:
      if pair.rank in ranks:
        yield beam.pvalue.TaggedOutput("dead_letter", _rejected_pair(
            pair, "repeated_rank", _field(pair, "rank", "rank"),
            f"rank {pair.rank} is already that of candidate "
            f"{ranks[pair.rank].passage_id!r} ({_where(ranks[pair.rank])}) of this "
            "list; the first is kept"))
        continue
      ranks[pair.rank] = pair
      if pair.passage_id in passages:
        yield beam.pvalue.TaggedOutput("dead_letter", _rejected_pair(
            pair, "duplicate_candidate",
            _field(pair, "docid", "id" if pair.passage is None else "passage"),
            f"passage {pair.passage_id!r} is already a candidate of this answer of "
            f"system {pair.system_name!r}, at rank {passages[pair.passage_id]}; the "
            "first is kept"))
        continue
      passages[pair.passage_id] = pair.rank
      if self._top_k is not None and len(kept) >= self._top_k:
        yield beam.pvalue.TaggedOutput("stats", {"beyond_top_k": 1})
        continue
      kept.append(pair)
      if pair.retrieval_score is not None:
        scores.append(pair.retrieval_score)
      yield pair
    if any(later > earlier for earlier, later in zip(scores, scores[1:])):
      # Audited by rank, as the docs say; trec_eval orders a run by its scores.
      yield beam.pvalue.TaggedOutput("stats", {"lists_ranked_against_scores": 1})
    yield beam.pvalue.TaggedOutput("firsts", (kept[0], len(kept)))


def top1_article(first_and_count) -> Optional[str]:
  """The article of a top-1 pair; None for a passage given inline."""
  pair, _ = first_and_count
  if pair.passage is not None:
    return None
  return article_of(pair.passage_id)


class ExpandArticleFn(beam.DoFn):
  """((top-1 pair, candidates read), article passage ids) -> the answer's
  candidates: the top-1 passage (rank 1), then the article's other passages in
  id order (ranks 2, 3, ...)."""

  def process(self, first_and_passages):
    (pair, count), passage_ids = first_and_passages
    yield beam.pvalue.TaggedOutput("stats", {"replaced_by_article": count - 1,
                                             "articles_missing": not passage_ids})
    yield pair._replace(rank=1)
    rank = 1
    for passage_id in passage_ids or ():
      if passage_id == pair.passage_id:
        continue
      rank += 1
      yield pair._replace(passage_id=passage_id, rank=rank, retrieval_score=None,
                          from_article=True)


# The corpus join sorts pairs by passage (transforms/corpus/store.py:
# SortedJoinPassages); a passage given inline is not looked up.
JOIN_KEY = ("passage_id", "system_name", "answer_file", "answer_line", "source_file",
            "source_line", "rank")


def passage_to_look_up(pair: AuditPair) -> Optional[str]:
  return None if pair.passage is not None else pair.passage_id


@functools.lru_cache(maxsize=16384)
def _parsed(passage: str):
  return parse_passage(passage)


class CandidateKey(NamedTuple):
  """What a candidate's score is keyed by on its way through the scorer: the
  pair and whether its passage was found (one not found is N, unscored)."""
  pair: AuditPair
  found: bool


class PrepareExamplesFn(beam.DoFn):
  """(pair, corpus passage or None) -> (CandidateKey, example or None); a
  candidate of the input that is not in the corpus is also dead-lettered (its
  row still reaches the per-answer figures: a top-1 not in the corpus is N).
  With `reference_premise` (--decision decode), premises are built as the
  Attributed QA script builds them (transforms/corpus/passages.py: reference_premise)."""

  def __init__(self, reference_premise: bool = False):
    self._reference_premise = reference_premise

  def process(self, pair_and_contents):
    pair, contents = pair_and_contents
    passage = pair.passage or contents
    if passage is None:
      if pair.from_article:
        yield beam.pvalue.TaggedOutput("stats", {"article_passages_missing": 1})
      else:
        yield beam.pvalue.TaggedOutput("dead_letter", DeadLetter(
            pair.source_file, pair.source_line, UNMATCHED, "candidate_not_in_corpus",
            "docid",
            f"{pair.source_file}:{pair.source_line}: field 'docid': passage "
            f"{pair.passage_id!r} is not in the corpus; counted as not attributable",
            _candidate_json(pair)))
      yield CandidateKey(pair, False), None
      return
    yield CandidateKey(pair, True), qa_example(pair.question, pair.answer, _parsed(passage),
                                   self._reference_premise)


# ----------------------------------------------------------------------------
# Per answer, per system.


class AnswerAudit:
  """Accumulates one audited answer's candidate rows, in rank order."""

  def __init__(self):
    self.n_found = 0
    self.n_unknown = 0
    self.n_attributable = 0
    self.top1 = None  # (id, rank, attributable)
    self.best = None  # (nli_score, id, rank, attributable)

  def add(self, candidate_id: str, rank: int, found: bool, attributable: bool,
          nli_score: Optional[float]) -> None:
    if self.top1 is None:
      self.top1 = (candidate_id, rank, found and attributable)
    if not found:
      self.n_unknown += 1
      return
    self.n_found += 1
    self.n_attributable += attributable
    # Rows arrive in rank order: a later candidate wins only with a higher score.
    if self.best is None or nli_score > self.best[0]:
      self.best = (nli_score, candidate_id, rank, attributable)

  def row(self, system: str, answer) -> AuditAnswerRow:
    def yes_no(value) -> str:
      return "Y" if value else "N"
    best = self.best or (None, None, None, False)
    return AuditAnswerRow(
        system, answer.question, answer.query_id, answer.answer, self.n_found,
        self.n_unknown, self.n_attributable, self.top1[0], self.top1[1],
        yes_no(self.top1[2]), yes_no(self.n_attributable), best[1], best[2], best[0],
        yes_no(best[3]), answer.em, answer.f1, answer.answer_file, answer.answer_line)


EM_NONE, EM_NO, EM_YES = -1, 0, 1


class AuditOutcomes:
  """One system's audited answers as compact columns."""

  def __init__(self, system_name: str):
    self.system_name = system_name
    self.top1 = array.array("b")
    self.any = array.array("b")
    self.reranked = array.array("b")
    self.em = array.array("b")
    self.n_candidates = 0

  def add(self, row: AuditAnswerRow) -> None:
    self.top1.append(row.top1_attributable == "Y")
    self.any.append(row.any_attributable == "Y")
    self.reranked.append(row.reranked_attributable == "Y")
    self.em.append(EM_NONE if row.em is None else (EM_YES if row.em == 1 else EM_NO))
    self.n_candidates += row.n_candidates


def _column(values) -> np.ndarray:
  return np.frombuffer(values, dtype=np.int8).astype(np.float64)


def audit_system_row(outcomes: AuditOutcomes, bootstrap_samples: int,
                     seed: int) -> AuditSystemRow:
  top1, any_, reranked = (_column(outcomes.top1), _column(outcomes.any),
                          _column(outcomes.reranked))
  em = np.frombuffer(outcomes.em, dtype=np.int8)
  exact = (em == EM_YES).astype(np.float64)
  inexact = (em == EM_NO).astype(np.float64)
  n = len(top1)
  bootstrap = BootstrapWeights(n, bootstrap_samples, seed)
  top1_ci, any_ci, reranked_ci = bootstrap.intervals([top1, any_, reranked])
  ratios = [(reranked - top1, top1), (exact * top1, exact), (inexact * top1, inexact),
            (exact * reranked, exact), (inexact * reranked, inexact)]
  intervals = bootstrap.ratio_intervals(ratios)
  # Rates in percent, as ratios of counts (transforms/stats/metrics.py); the
  # reranking gain, first, is a relative change: 12 significant digits.
  figures = []
  for index, ((numerator, denominator), interval) in enumerate(zip(ratios, intervals)):
    if not denominator.sum():
      figures += [None, None, None]
    elif index == 0:
      low, high = interval or (None, None)
      figures += [written(numerator.sum() / denominator.sum()), written(low),
                  written(high)]
    else:
      figures += [percent_of(int(numerator.sum()), int(denominator.sum())),
                  *written_interval(interval)]
  rates = []
  for column, interval in ((top1, top1_ci), (any_, any_ci), (reranked, reranked_ci)):
    rates += [percent_of(int(column.sum()), n), *written_interval(interval)]
  return AuditSystemRow(
      outcomes.system_name, n, outcomes.n_candidates, *rates, *figures[:3],
      int((em != EM_NONE).sum()), int(exact.sum()), *figures[3:])
