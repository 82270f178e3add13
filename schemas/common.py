"""Element types that several jobs share, each beside its pyarrow schema.

Predictions (read by evaluate, and by agreement --format ratings), gold answers
(evaluate, and audit with --gold), what a scorer takes and gives back (models/ and
every job that scores), the score cache's rows (transforms/scoring/cache.py), and
the dead letters that every job writes. The job modules of this package import
from here, never the other way round.
"""
from typing import List, NamedTuple, Optional

import pyarrow as pa


class Prediction(NamedTuple):
  """One system output row as read from a predictions file."""
  system_name: str
  question: str
  answer: str
  attribution: str
  # A passage already joined to the row (ratings.csv carries one), in the
  # Pyserini « title » « headings » text form or the AIS display form.
  passage: Optional[str]
  human_rating: Optional[str]  # "Y" / "N" / None
  source_file: str
  source_line: int
  # A list of passages given in the row's `passage` field (passage is then
  # None): each is scored, and the row takes the choice audit would make.
  passages: Optional[List[str]] = None


PREDICTION_SCHEMA = pa.schema([
    pa.field("system_name", pa.string(), nullable=False),
    pa.field("question", pa.string(), nullable=False),
    pa.field("answer", pa.string(), nullable=False),
    pa.field("attribution", pa.string(), nullable=False),
    pa.field("passage", pa.string()),
    pa.field("human_rating", pa.string()),
    pa.field("source_file", pa.string(), nullable=False),
    pa.field("source_line", pa.int64(), nullable=False),
    pa.field("passages", pa.list_(pa.string())),
])


class GoldAnswer(NamedTuple):
  """One gold question (NQ-Open format) and its position in the gold source."""
  question: str
  answers: List[str]
  gold_index: int


GOLD_ANSWER_SCHEMA = pa.schema([
    pa.field("question", pa.string(), nullable=False),
    pa.field("answers", pa.list_(pa.string()), nullable=False),
    pa.field("gold_index", pa.int64(), nullable=False),
])


class AttributionExample(NamedTuple):
  """What a scorer sees: an NLI premise/hypothesis pair, plus the raw answer and
  passage text for the string-match baseline."""
  premise: str
  hypothesis: str
  answer: str
  passage_text: str  # title, headings and text
  # The question a response answers where the hypothesis is the response
  # itself (RAGTruth's QA items), for a scorer whose prompt takes it apart
  # (--scorer lettucedetect); None elsewhere. The other scorers read neither
  # it nor anything derived from it; it is part of the example's key
  # (transforms.scoring.examples.example_digest).
  question: Optional[str] = None


ATTRIBUTION_EXAMPLE_SCHEMA = pa.schema([
    pa.field("premise", pa.string(), nullable=False),
    pa.field("hypothesis", pa.string(), nullable=False),
    pa.field("answer", pa.string(), nullable=False),
    pa.field("passage_text", pa.string(), nullable=False),
    pa.field("question", pa.string()),
])


# The AutoAIS hypothesis of an answer to a question (SPEC 5.2): what
# transforms/scoring/examples.py builds, and what --scorer lettucedetect reads
# the question and the answer back out of.
QA_HYPOTHESIS = "The answer to the question '{question}' is '{answer}'"


class UnsupportedSpan(NamedTuple):
  """Characters of an answer that a span detector (--scorer lettucedetect)
  finds unsupported by the passage: answer[start:end] in Python's string
  indices, and the largest unsupported probability of its tokens."""
  start: int
  end: int
  probability: float


UNSUPPORTED_SPAN_SCHEMA = pa.schema([
    pa.field("start", pa.int64(), nullable=False),
    pa.field("end", pa.int64(), nullable=False),
    pa.field("probability", pa.float64(), nullable=False),
])


class AttributionScore(NamedTuple):
  nli_score: float
  attributable: bool
  n_windows: int
  truncated: bool
  # The answer's unsupported spans, from a scorer that finds them
  # (lettucedetect; an empty list: none found); None from the others.
  spans: Optional[List[UnsupportedSpan]] = None


ATTRIBUTION_SCORE_SCHEMA = pa.schema([
    pa.field("nli_score", pa.float64(), nullable=False),
    pa.field("attributable", pa.bool_(), nullable=False),
    pa.field("n_windows", pa.int64(), nullable=False),
    pa.field("truncated", pa.bool_(), nullable=False),
    pa.field("spans", pa.list_(pa.struct(list(UNSUPPORTED_SPAN_SCHEMA)))),
])


class ScoringFailure(NamedTuple):
  """Why a scorer could not score an example (a remote endpoint refused it, or
  kept failing after every retry; a local model cannot score it). `status` is
  the HTTP status of the last answer, 0 where none came (a timeout, a dropped
  connection), LOCAL_FAILURE where no HTTP was involved."""
  status: int
  message: str


# ScoringFailure.status of an example a model on the worker cannot score (a
# MiniCheck document with no sentence to chunk).
LOCAL_FAILURE = -1


SCORING_FAILURE_SCHEMA = pa.schema([
    pa.field("status", pa.int64(), nullable=False),
    pa.field("message", pa.string(), nullable=False),
])


class ScoreCacheEntry(NamedTuple):
  """One score of the score cache (transforms/scoring/cache.py): a model's score
  of one (premise, hypothesis) pair, keyed by the pair's digest; the model is
  the cache directory's identity."""
  digest: bytes
  nli_score: float
  attributable: bool
  n_windows: int
  truncated: bool
  spans: Optional[List[UnsupportedSpan]] = None  # as AttributionScore's


SCORE_CACHE_ENTRY_SCHEMA = pa.schema([
    pa.field("digest", pa.binary(), nullable=False),
    pa.field("nli_score", pa.float64(), nullable=False),
    pa.field("attributable", pa.bool_(), nullable=False),
    pa.field("n_windows", pa.int64(), nullable=False),
    pa.field("truncated", pa.bool_(), nullable=False),
    pa.field("spans", pa.list_(pa.struct(list(UNSUPPORTED_SPAN_SCHEMA)))),
])


class DeadLetter(NamedTuple):
  """An input row that was not scored, with where it came from and why.

  `kind` is "rejected" (bad input) or "unmatched" (question not in gold,
  attribution not in the corpus): `run.json` counts the two apart.
  """
  source_file: str
  source_line: int
  kind: str
  reason: str
  field: Optional[str]
  message: str
  record: str  # the raw record: JSON of its fields, or the raw line


DEAD_LETTER_SCHEMA = pa.schema([
    pa.field("source_file", pa.string(), nullable=False),
    pa.field("source_line", pa.int64(), nullable=False),
    pa.field("kind", pa.string(), nullable=False),
    pa.field("reason", pa.string(), nullable=False),
    pa.field("field", pa.string()),
    pa.field("message", pa.string(), nullable=False),
    pa.field("record", pa.string(), nullable=False),
])

# The two kinds of DeadLetter.
REJECTED = "rejected"
UNMATCHED = "unmatched"
