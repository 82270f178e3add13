"""Element types of `autoais audit` only, each beside its pyarrow schema: the
answers, candidate passages and topics it reads, the pairs it spills on their way
through the corpus join, and the rows it writes.
"""
from typing import NamedTuple, Optional

import pyarrow as pa


class AuditAnswer(NamedTuple):
  """An answer to audit, as read; em / f1 are filled in when --gold is given."""
  system_name: Optional[str]  # None: the system of the candidates it is matched to
  question: str
  query_id: Optional[str]
  answer: str
  em: Optional[float]
  f1: Optional[float]
  source_file: str
  source_line: int


AUDIT_ANSWER_SCHEMA = pa.schema([
    pa.field("system_name", pa.string()),
    pa.field("question", pa.string(), nullable=False),
    pa.field("query_id", pa.string()),
    pa.field("answer", pa.string(), nullable=False),
    pa.field("em", pa.float64()),
    pa.field("f1", pa.float64()),
    pa.field("source_file", pa.string(), nullable=False),
    pa.field("source_line", pa.int64(), nullable=False),
])


class Candidate(NamedTuple):
  """One candidate passage of a retrieval run, as read (a TREC run line, or an
  entry of a candidates JSONL list)."""
  system_name: str  # TREC: the run tag
  query_id: Optional[str]
  question: Optional[str]  # TREC: from the topics file, where given
  passage_id: str  # corpus id; a passage given inline: "inline:" + a digest
  passage: Optional[str]  # the passage text, where given inline
  rank: int
  retrieval_score: Optional[float]
  source_file: str
  source_line: int
  # Its place in a JSON Lines file's list (candidates[entry]); None for a TREC line.
  entry: Optional[int] = None


CANDIDATE_SCHEMA = pa.schema([
    pa.field("system_name", pa.string(), nullable=False),
    pa.field("query_id", pa.string()),
    pa.field("question", pa.string()),
    pa.field("passage_id", pa.string(), nullable=False),
    pa.field("passage", pa.string()),
    pa.field("rank", pa.int64(), nullable=False),
    pa.field("retrieval_score", pa.float64()),
    pa.field("source_file", pa.string(), nullable=False),
    pa.field("source_line", pa.int64(), nullable=False),
    pa.field("entry", pa.int64()),
])


class Topic(NamedTuple):
  """A line of a topics TSV: query id and question."""
  query_id: str
  question: str
  source_file: str
  source_line: int


TOPIC_SCHEMA = pa.schema([
    pa.field("query_id", pa.string(), nullable=False),
    pa.field("question", pa.string(), nullable=False),
    pa.field("source_file", pa.string(), nullable=False),
    pa.field("source_line", pa.int64(), nullable=False),
])


class AuditPair(NamedTuple):
  """A candidate matched with the answer it is audited for (flat: it is spilled
  to sorted runs on its way through the corpus join)."""
  system_name: str
  question: str
  query_id: Optional[str]
  answer: str
  em: Optional[float]
  f1: Optional[float]
  passage_id: str
  passage: Optional[str]  # given inline
  rank: int
  retrieval_score: Optional[float]
  from_article: bool  # --candidates_from article: a passage of the top-1's article
  answer_file: str
  answer_line: int
  source_file: str  # of the candidate
  source_line: int
  entry: Optional[int] = None  # of the candidate (Candidate.entry)


AUDIT_PAIR_SCHEMA = pa.schema([
    pa.field("system_name", pa.string(), nullable=False),
    pa.field("question", pa.string(), nullable=False),
    pa.field("query_id", pa.string()),
    pa.field("answer", pa.string(), nullable=False),
    pa.field("em", pa.float64()),
    pa.field("f1", pa.float64()),
    pa.field("passage_id", pa.string(), nullable=False),
    pa.field("passage", pa.string()),
    pa.field("rank", pa.int64(), nullable=False),
    pa.field("retrieval_score", pa.float64()),
    pa.field("from_article", pa.bool_(), nullable=False),
    pa.field("answer_file", pa.string(), nullable=False),
    pa.field("answer_line", pa.int64(), nullable=False),
    pa.field("source_file", pa.string(), nullable=False),
    pa.field("source_line", pa.int64(), nullable=False),
    pa.field("entry", pa.int64()),
])


class AuditCandidateRow(NamedTuple):
  """One answer x candidate: audit_candidates.parquet. Rows of candidates not in
  the corpus (found False) only reach the audit's per-answer figures."""
  system_name: str
  question: str
  query_id: Optional[str]
  answer: str
  candidate_id: str
  rank: int
  retrieval_score: Optional[float]
  found: bool
  auto_ais: str  # "Y" / "N"
  nli_score: Optional[float]
  n_windows: int
  truncated: bool
  from_article: bool
  em: Optional[float]  # of the answer, with --gold
  f1: Optional[float]
  scorer: str
  answer_file: str
  answer_line: int
  source_file: str
  source_line: int


AUDIT_CANDIDATE_SCHEMA = pa.schema([
    pa.field("system_name", pa.string(), nullable=False),
    pa.field("question", pa.string(), nullable=False),
    pa.field("query_id", pa.string()),
    pa.field("answer", pa.string(), nullable=False),
    pa.field("candidate_id", pa.string(), nullable=False),
    pa.field("rank", pa.int64(), nullable=False),
    pa.field("retrieval_score", pa.float64()),
    pa.field("found", pa.bool_(), nullable=False),
    pa.field("auto_ais", pa.string(), nullable=False),
    pa.field("nli_score", pa.float64()),
    pa.field("n_windows", pa.int64(), nullable=False),
    pa.field("truncated", pa.bool_(), nullable=False),
    pa.field("from_article", pa.bool_(), nullable=False),
    pa.field("em", pa.float64()),
    pa.field("f1", pa.float64()),
    pa.field("scorer", pa.string(), nullable=False),
    pa.field("answer_file", pa.string(), nullable=False),
    pa.field("answer_line", pa.int64(), nullable=False),
    pa.field("source_file", pa.string(), nullable=False),
    pa.field("source_line", pa.int64(), nullable=False),
])


class AuditAnswerRow(NamedTuple):
  """One audited answer: audit_answers.parquet / .csv."""
  system_name: str
  question: str
  query_id: Optional[str]
  answer: str
  n_candidates: int  # found in the corpus (or given inline), duplicates removed
  n_unknown_candidates: int  # not in the corpus
  n_attributable: int
  top1_id: str  # the best-ranked candidate, found or not
  top1_rank: int
  top1_attributable: str  # "Y" / "N" (N when not in the corpus)
  any_attributable: str
  reranked_id: Optional[str]  # highest nli_score, ties by rank; None: none found
  reranked_rank: Optional[int]
  reranked_nli_score: Optional[float]
  reranked_attributable: str
  em: Optional[float]
  f1: Optional[float]
  answer_file: str
  answer_line: int


AUDIT_ANSWER_ROW_SCHEMA = pa.schema([
    pa.field("system_name", pa.string(), nullable=False),
    pa.field("question", pa.string(), nullable=False),
    pa.field("query_id", pa.string()),
    pa.field("answer", pa.string(), nullable=False),
    pa.field("n_candidates", pa.int64(), nullable=False),
    pa.field("n_unknown_candidates", pa.int64(), nullable=False),
    pa.field("n_attributable", pa.int64(), nullable=False),
    pa.field("top1_id", pa.string(), nullable=False),
    pa.field("top1_rank", pa.int64(), nullable=False),
    pa.field("top1_attributable", pa.string(), nullable=False),
    pa.field("any_attributable", pa.string(), nullable=False),
    pa.field("reranked_id", pa.string()),
    pa.field("reranked_rank", pa.int64()),
    pa.field("reranked_nli_score", pa.float64()),
    pa.field("reranked_attributable", pa.string(), nullable=False),
    pa.field("em", pa.float64()),
    pa.field("f1", pa.float64()),
    pa.field("answer_file", pa.string(), nullable=False),
    pa.field("answer_line", pa.int64(), nullable=False),
])


class AuditSystemRow(NamedTuple):
  """Per-system audit: audit.csv / .json / .md. Rates are percents of the
  system's audited answers, with 95% bootstrap CIs over its questions;
  reranking_gain = (reranked - top1) / top1, a relative change (not a percent)."""
  system_name: str
  n_answers: int
  n_candidates: int
  top1: float
  top1_ci_low: float
  top1_ci_high: float
  any: float
  any_ci_low: float
  any_ci_high: float
  reranked: float
  reranked_ci_low: float
  reranked_ci_high: float
  reranking_gain: Optional[float]
  reranking_gain_ci_low: Optional[float]
  reranking_gain_ci_high: Optional[float]
  n_graded: int  # answers whose question is in --gold
  n_em: int
  top1_em: Optional[float]  # top-1 attribution of exact-match answers
  top1_em_ci_low: Optional[float]
  top1_em_ci_high: Optional[float]
  top1_non_em: Optional[float]
  top1_non_em_ci_low: Optional[float]
  top1_non_em_ci_high: Optional[float]
  reranked_em: Optional[float]
  reranked_em_ci_low: Optional[float]
  reranked_em_ci_high: Optional[float]
  reranked_non_em: Optional[float]
  reranked_non_em_ci_low: Optional[float]
  reranked_non_em_ci_high: Optional[float]


AUDIT_SYSTEM_SCHEMA = pa.schema([
    pa.field("system_name", pa.string(), nullable=False),
    pa.field("n_answers", pa.int64(), nullable=False),
    pa.field("n_candidates", pa.int64(), nullable=False),
    pa.field("top1", pa.float64(), nullable=False),
    pa.field("top1_ci_low", pa.float64(), nullable=False),
    pa.field("top1_ci_high", pa.float64(), nullable=False),
    pa.field("any", pa.float64(), nullable=False),
    pa.field("any_ci_low", pa.float64(), nullable=False),
    pa.field("any_ci_high", pa.float64(), nullable=False),
    pa.field("reranked", pa.float64(), nullable=False),
    pa.field("reranked_ci_low", pa.float64(), nullable=False),
    pa.field("reranked_ci_high", pa.float64(), nullable=False),
    pa.field("reranking_gain", pa.float64()),
    pa.field("reranking_gain_ci_low", pa.float64()),
    pa.field("reranking_gain_ci_high", pa.float64()),
    pa.field("n_graded", pa.int64(), nullable=False),
    pa.field("n_em", pa.int64(), nullable=False),
    pa.field("top1_em", pa.float64()),
    pa.field("top1_em_ci_low", pa.float64()),
    pa.field("top1_em_ci_high", pa.float64()),
    pa.field("top1_non_em", pa.float64()),
    pa.field("top1_non_em_ci_low", pa.float64()),
    pa.field("top1_non_em_ci_high", pa.float64()),
    pa.field("reranked_em", pa.float64()),
    pa.field("reranked_em_ci_low", pa.float64()),
    pa.field("reranked_em_ci_high", pa.float64()),
    pa.field("reranked_non_em", pa.float64()),
    pa.field("reranked_non_em_ci_low", pa.float64()),
    pa.field("reranked_non_em_ci_high", pa.float64()),
])
