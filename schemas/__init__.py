"""Element types and pyarrow schemas of every input, output and spilled row.

Each element type is a `typing.NamedTuple` defined once here; beside it sits the
pyarrow schema used wherever rows of that type touch Parquet or Arrow files
(inputs, outputs, and the sorted runs that jobs spill to disk).
`tests/test_schemas.py` holds every type against its schema.

Beam encodes these NamedTuples with its schema-aware `RowCoder` (registered
below), so they cross process boundaries without pickling.
"""
from typing import List, NamedTuple, Optional, Sequence, Type

import apache_beam as beam
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


class GoldAnswer(NamedTuple):
  """One gold question (NQ-Open format) and its position in the gold source."""
  question: str
  answers: List[str]
  gold_index: int


class GoldMatch(NamedTuple):
  """A prediction whose question is in gold, with its answer already graded."""
  prediction: Prediction
  gold_index: int
  em: float
  f1: float


class AttributionExample(NamedTuple):
  """What a scorer sees: an NLI premise/hypothesis pair, plus the raw answer and
  passage text for the string-match baseline."""
  premise: str
  hypothesis: str
  answer: str
  passage_text: str  # title, headings and text


class AttributionScore(NamedTuple):
  nli_score: float
  attributable: bool
  n_windows: int
  truncated: bool


class ScoringFailure(NamedTuple):
  """Why a scorer could not score an example (a remote endpoint refused it, or
  kept failing after every retry). `status` is the HTTP status of the last
  answer, 0 where none came (a timeout, a dropped connection)."""
  status: int
  message: str


class ScoreCacheEntry(NamedTuple):
  """One score of the score cache (transforms/scoring/cache.py): a model's score
  of one (premise, hypothesis) pair, keyed by the pair's digest; the model is
  the cache directory's identity."""
  digest: bytes
  nli_score: float
  attributable: bool
  n_windows: int
  truncated: bool


class CorpusRecord(NamedTuple):
  """A passage as read from a corpus source, before it is laid out."""
  id: str
  contents: str
  source_file: str
  source_line: int


class CorpusPassage(NamedTuple):
  """A passage as stored in the Parquet corpus (Pyserini `contents` form)."""
  id: str
  contents: str


class ArticleEntry(NamedTuple):
  """A row of the corpus article index: a passage id under its article key."""
  article: str
  passage_id: str


class RatingRow(NamedTuple):
  """One evaluated prediction: the ratings.csv columns, then extra columns.

  Rows whose attribution was not found carry `passage=None` and
  `nli_score=None`; they count for EM/F1 but never reach ratings.csv.
  """
  system_name: str
  question: str
  answer: str
  attribution: str
  passage: Optional[str]  # AIS display format (SPEC 5.1)
  human_rating: Optional[str]
  auto_ais: str  # "Y" / "N"
  nli_score: Optional[float]
  em: float
  f1: float
  gold_index: int
  scorer: str
  n_windows: int
  truncated: bool
  source_file: str
  source_line: int


class LeaderboardRow(NamedTuple):
  """Per-system aggregates. AutoAIS and coverage are fractions in [0, 1], EM and
  F1 are percentages (the units of the reference script's scores file)."""
  system_name: str
  n_gold: int
  n_predicted: int
  n_scored: int
  n_unmatched_attribution: int
  coverage: float  # n_scored / n_gold
  autoais: float  # paper mode: Y over all gold questions
  autoais_ci_low: float
  autoais_ci_high: float
  autoais_scored: Optional[float]  # Y over scored rows (coverage-aware)
  em: float
  em_ci_low: float
  em_ci_high: float
  f1: float
  f1_ci_low: float
  f1_ci_high: float
  n_human_rated: int
  human_ais: Optional[float]  # share of human-rated rows rated Y
  human_agreement: Optional[float]  # accuracy of auto_ais against human_rating
  human_kappa: Optional[float]  # Cohen's kappa of auto_ais against human_rating
  # Agreement with human ratings on the rated rows (transforms/agreement.py).
  autoais_rated: Optional[float]  # share of human-rated rows with auto_ais Y
  human_balanced_accuracy: Optional[float]
  human_roc_auc: Optional[float]  # of nli_score, over rated rows that were scored
  human_pr_auc: Optional[float]  # average precision of nli_score, same rows


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


class AisAnnotation(NamedTuple):
  """One model output of the AIS paper's release (a row of ann_{dataset}.csv):
  the consensus of its raters (SPEC 5.6). Flagged outputs carry no labels;
  attributable implies interpretable."""
  dataset: str  # from the file name: ann_{dataset}.csv
  model: str  # model-name
  example_id: str  # ex-idx ("" where the file has none)
  flagged: bool  # Flagged
  interpretable: bool  # INT
  attributable: bool  # INT & AIS
  # Raters agreeing with the consensus (# agree (INT), # agree (AIS)); None where
  # the release writes -1 (flagged; not interpretable).
  int_agreement: Optional[int]
  ais_agreement: Optional[int]
  source_file: str
  source_line: int


class HumanRating(NamedTuple):
  """One human AIS rating of a system's answer to a question (`--human_ratings`),
  joined to the predictions by (system_name, question)."""
  system_name: str
  question: str
  human_rating: str  # "Y" / "N"
  source_file: str
  source_line: int


class AisTableRow(NamedTuple):
  """One model of ais_tables.csv: the release's Flag / Int / AIS beside the
  paper's printed cells (strings as printed, one decimal, percent)."""
  dataset: str
  paper_table: Optional[int]
  model: str
  paper_label: Optional[str]
  items: int
  flagged: int
  interpretable: int
  attributable: int
  flag: str
  paper_flag: Optional[str]
  flag_equal: Optional[bool]
  int: str
  int_mark: bool
  int_p_value: Optional[float]
  paper_int: Optional[str]
  paper_int_mark: Optional[bool]
  int_equal: Optional[bool]
  ais: str
  ais_mark: bool
  ais_p_value: Optional[float]
  paper_ais: Optional[str]
  paper_ais_mark: Optional[bool]
  ais_equal: Optional[bool]
  status: str  # reproduced / explained / partly explained / not in the paper
  explanation: str


class AisAgreementRow(NamedTuple):
  """One bar of a rater-agreement distribution (ais_agreement.csv): how many of
  a model's outputs had `agreeing_raters` raters agreeing with the consensus on
  `question` (INT over outputs not flagged, AIS over interpretable outputs;
  None where the release gives no count)."""
  dataset: str
  model: str
  question: str  # "INT" or "AIS"
  agreeing_raters: Optional[int]
  items: int
  share: float


class LabelledItem(NamedTuple):
  """One human-labelled attribution item of an agreement set (or one premise
  chunk of it: WiCE items have several, scored apart and maxed)."""
  item_id: str
  group: Optional[str]  # the format's grouping (system, source data set, ...)
  secondary_group: Optional[str]  # a second grouping (BEGIN: model_name)
  example: AttributionExample
  human_label: str  # the label as written in the source
  human_attributable: bool  # the label read as attributable or not
  source_file: str
  source_line: int


class AgreementRow(NamedTuple):
  """One scored item of `autoais agreement` (agreement_rows.parquet / .csv)."""
  group: Optional[str]
  secondary_group: Optional[str]
  item_id: str
  premise_digest: str  # blake2b-128 hex of the premise(s): the text stays private
  hypothesis: str
  human_label: str
  human_attributable: bool
  nli_score: float
  decision: str  # "Y" / "N": the scorer's decision at --threshold (or decode)
  calibrated_decision: Optional[str]  # nli_score > the calibrated threshold
  n_premises: int
  n_windows: int
  truncated: bool
  source_file: str
  source_line: int


class ClaimInput(NamedTuple):
  """One claim of a long-form answer as read (ExpertQA records or flat JSONL),
  before cleaning. An answer is identified by (system_name, question) and located
  at (source_file, answer_line)."""
  system_name: str
  question: str
  claim_index: int  # position among its answer's claims, from 0
  claim: str  # as given, citation markers included
  evidence: List[str]  # as given; empty: the claim cites nothing
  support: Optional[str]  # human label: Complete / Partial / Incomplete / Missing / ...
  abstained: bool  # the answer abstains (transforms/claims.py: did_abstain)
  answer_line: int  # line of the answer's record (flat JSONL: of its first claim)
  source_file: str
  source_line: int


class ClaimRow(NamedTuple):
  """One scored claim: claims_rows.parquet / .csv."""
  system_name: str
  question: str
  claim_index: int
  claim: str  # cleaned
  evidence: Optional[str]  # the premise scored (cleaned); None without evidence
  n_evidence: int  # evidence items the claim cites
  support: Optional[str]
  human_label: Optional[str]  # "Y" (support Complete) / "N" / None (no usable label)
  abstained: bool
  auto_ais: str  # "Y" / "N"
  nli_score: Optional[float]  # None without evidence
  n_windows: int
  truncated: bool
  reranked: bool  # --evidence_mode rerank chose evidence sentences for this claim
  scorer: str
  answer_line: int
  source_file: str
  source_line: int


class ClaimsSystemRow(NamedTuple):
  """Per-system claim-level attribution: claims.csv / .json / .md. AutoAIS
  figures are fractions; macro = mean over answers of the mean over their claims,
  micro = mean over claims; claims without evidence count as N."""
  system_name: str
  n_answers: int
  n_claims: int
  n_claims_without_evidence: int
  n_abstaining_answers: int
  macro_autoais: float
  macro_ci_low: float
  macro_ci_high: float
  micro_autoais: float
  micro_ci_low: float
  micro_ci_high: float
  macro_autoais_non_abstaining: Optional[float]
  micro_autoais_non_abstaining: Optional[float]
  n_human_labelled: int
  human_ais: Optional[float]  # share of labelled claims with support Complete
  human_accuracy: Optional[float]
  human_balanced_accuracy: Optional[float]
  human_kappa: Optional[float]
  human_roc_auc: Optional[float]  # of nli_score (0 without evidence)


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


class Topic(NamedTuple):
  """A line of a topics TSV: query id and question."""
  query_id: str
  question: str
  source_file: str
  source_line: int


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


class AuditSystemRow(NamedTuple):
  """Per-system audit: audit.csv / .json / .md. Rates are fractions of the
  system's audited answers, with 95% bootstrap CIs over its questions;
  reranking_gain = (reranked - top1) / top1."""
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


class SckInput(NamedTuple):
  """One answer to score with SCK (`autoais sck`; SPEC 5.9), as read."""
  system_name: str
  question: str
  answer: str
  reference_answer: Optional[str]  # the ground-truth answer, where given
  intent: Optional[str]  # a given question intent (transforms/intent.py INTENTS)
  source_file: str
  source_line: int


class KgStatement(NamedTuple):
  """One statement of a knowledge graph (`--kg`): an edge between two entity ids,
  or, with the predicates rdfs:label / skos:altLabel / schema:description, an
  entity's name, alias or description (transforms/knowledge_graph.py)."""
  subject: str
  predicate: str
  object: str
  source_file: str
  source_line: int


class KgEdge(NamedTuple):
  """An outgoing edge of an entity, with the object's label (None: the object is
  a literal or an id without a label)."""
  predicate: str
  object: str
  object_label: Optional[str]


class EntityRecord(NamedTuple):
  """A knowledge-graph entity as joined to the answers that mention it."""
  id: str
  label: str
  aliases: List[str]
  description: Optional[str]
  out_edges: List[KgEdge]  # sorted by (predicate, object)
  in_predicates: List[str]  # predicates of the edges that point at it, sorted


class SckRow(NamedTuple):
  """One scored answer: sck_rows.parquet / .csv. Scores are fractions; a score
  is None where it is undefined (no entity to count); the JSON columns hold the
  evidence behind each score (README: SCK answer quality)."""
  system_name: str
  question: str
  answer: str
  reference_answer: Optional[str]
  intent: str
  intent_source: str  # "given" (input column) / "rules" (transforms/intent.py)
  intent_evidence: str  # JSON
  sck_score: Optional[float]
  s_score: float
  c_score: Optional[float]
  k_score: Optional[float]
  weight_s: float  # the intent's Table 3 weights (alpha, beta, gamma of Eq. 5)
  weight_c: float
  weight_k: float
  s_features: str  # JSON: per Table 2 feature, observed / expected / score
  c_basis: str  # "reference" / "question" / "none": whose entities C recalls
  c_entities: str  # JSON: expected entities and whether the answer has them
  ve_score: Optional[float]
  er_score: Optional[float]
  kg_attr_score: Optional[float]
  text_entities: str  # JSON: linked and unlinked entity mentions of the answer
  er_entities: str  # JSON: per verifiable entity, Jaccard and cosine
  n_sentences: int
  n_attributable: int
  n_extrapolatory: int
  n_contradictory: int
  sentences: str  # JSON: per sentence, entities, triples, decision, rationale
  scorer: str
  source_file: str
  source_line: int


class SckSummaryRow(NamedTuple):
  """Mean scores of one system over its answers of one intent (intent "all":
  every answer): sck.csv / .json / .md. Means skip undefined scores."""
  system_name: str
  intent: str
  n_answers: int
  sck: Optional[float]
  s: float
  c: Optional[float]
  n_c: int  # answers with a defined C
  k: Optional[float]
  ve: Optional[float]
  er: Optional[float]
  kg_attr: Optional[float]
  n_contradictory_sentences: int


REJECTED = "rejected"
UNMATCHED = "unmatched"

PREDICTION_SCHEMA = pa.schema([
    pa.field("system_name", pa.string(), nullable=False),
    pa.field("question", pa.string(), nullable=False),
    pa.field("answer", pa.string(), nullable=False),
    pa.field("attribution", pa.string(), nullable=False),
    pa.field("passage", pa.string()),
    pa.field("human_rating", pa.string()),
    pa.field("source_file", pa.string(), nullable=False),
    pa.field("source_line", pa.int64(), nullable=False),
])

GOLD_ANSWER_SCHEMA = pa.schema([
    pa.field("question", pa.string(), nullable=False),
    pa.field("answers", pa.list_(pa.string()), nullable=False),
    pa.field("gold_index", pa.int64(), nullable=False),
])

GOLD_MATCH_SCHEMA = pa.schema([
    pa.field("prediction", pa.struct(list(PREDICTION_SCHEMA)), nullable=False),
    pa.field("gold_index", pa.int64(), nullable=False),
    pa.field("em", pa.float64(), nullable=False),
    pa.field("f1", pa.float64(), nullable=False),
])

ATTRIBUTION_EXAMPLE_SCHEMA = pa.schema([
    pa.field("premise", pa.string(), nullable=False),
    pa.field("hypothesis", pa.string(), nullable=False),
    pa.field("answer", pa.string(), nullable=False),
    pa.field("passage_text", pa.string(), nullable=False),
])

ATTRIBUTION_SCORE_SCHEMA = pa.schema([
    pa.field("nli_score", pa.float64(), nullable=False),
    pa.field("attributable", pa.bool_(), nullable=False),
    pa.field("n_windows", pa.int64(), nullable=False),
    pa.field("truncated", pa.bool_(), nullable=False),
])

SCORING_FAILURE_SCHEMA = pa.schema([
    pa.field("status", pa.int64(), nullable=False),
    pa.field("message", pa.string(), nullable=False),
])

SCORE_CACHE_ENTRY_SCHEMA = pa.schema([
    pa.field("digest", pa.binary(), nullable=False),
    pa.field("nli_score", pa.float64(), nullable=False),
    pa.field("attributable", pa.bool_(), nullable=False),
    pa.field("n_windows", pa.int64(), nullable=False),
    pa.field("truncated", pa.bool_(), nullable=False),
])

CORPUS_RECORD_SCHEMA = pa.schema([
    pa.field("id", pa.string(), nullable=False),
    pa.field("contents", pa.string(), nullable=False),
    pa.field("source_file", pa.string(), nullable=False),
    pa.field("source_line", pa.int64(), nullable=False),
])

CORPUS_PASSAGE_SCHEMA = pa.schema([
    pa.field("id", pa.string(), nullable=False),
    pa.field("contents", pa.string(), nullable=False),
])

ARTICLE_ENTRY_SCHEMA = pa.schema([
    pa.field("article", pa.string(), nullable=False),
    pa.field("passage_id", pa.string(), nullable=False),
])

RATING_SCHEMA = pa.schema([
    pa.field("system_name", pa.string(), nullable=False),
    pa.field("question", pa.string(), nullable=False),
    pa.field("answer", pa.string(), nullable=False),
    pa.field("attribution", pa.string(), nullable=False),
    pa.field("passage", pa.string()),
    pa.field("human_rating", pa.string()),
    pa.field("auto_ais", pa.string(), nullable=False),
    pa.field("nli_score", pa.float64()),
    pa.field("em", pa.float64(), nullable=False),
    pa.field("f1", pa.float64(), nullable=False),
    pa.field("gold_index", pa.int64(), nullable=False),
    pa.field("scorer", pa.string(), nullable=False),
    pa.field("n_windows", pa.int64(), nullable=False),
    pa.field("truncated", pa.bool_(), nullable=False),
    pa.field("source_file", pa.string(), nullable=False),
    pa.field("source_line", pa.int64(), nullable=False),
])

LEADERBOARD_SCHEMA = pa.schema([
    pa.field("system_name", pa.string(), nullable=False),
    pa.field("n_gold", pa.int64(), nullable=False),
    pa.field("n_predicted", pa.int64(), nullable=False),
    pa.field("n_scored", pa.int64(), nullable=False),
    pa.field("n_unmatched_attribution", pa.int64(), nullable=False),
    pa.field("coverage", pa.float64(), nullable=False),
    pa.field("autoais", pa.float64(), nullable=False),
    pa.field("autoais_ci_low", pa.float64(), nullable=False),
    pa.field("autoais_ci_high", pa.float64(), nullable=False),
    pa.field("autoais_scored", pa.float64()),
    pa.field("em", pa.float64(), nullable=False),
    pa.field("em_ci_low", pa.float64(), nullable=False),
    pa.field("em_ci_high", pa.float64(), nullable=False),
    pa.field("f1", pa.float64(), nullable=False),
    pa.field("f1_ci_low", pa.float64(), nullable=False),
    pa.field("f1_ci_high", pa.float64(), nullable=False),
    pa.field("n_human_rated", pa.int64(), nullable=False),
    pa.field("human_ais", pa.float64()),
    pa.field("human_agreement", pa.float64()),
    pa.field("human_kappa", pa.float64()),
    pa.field("autoais_rated", pa.float64()),
    pa.field("human_balanced_accuracy", pa.float64()),
    pa.field("human_roc_auc", pa.float64()),
    pa.field("human_pr_auc", pa.float64()),
])

HUMAN_RATING_SCHEMA = pa.schema([
    pa.field("system_name", pa.string(), nullable=False),
    pa.field("question", pa.string(), nullable=False),
    pa.field("human_rating", pa.string(), nullable=False),
    pa.field("source_file", pa.string(), nullable=False),
    pa.field("source_line", pa.int64(), nullable=False),
])

LABELLED_ITEM_SCHEMA = pa.schema([
    pa.field("item_id", pa.string(), nullable=False),
    pa.field("group", pa.string()),
    pa.field("secondary_group", pa.string()),
    pa.field("example", pa.struct(list(ATTRIBUTION_EXAMPLE_SCHEMA)), nullable=False),
    pa.field("human_label", pa.string(), nullable=False),
    pa.field("human_attributable", pa.bool_(), nullable=False),
    pa.field("source_file", pa.string(), nullable=False),
    pa.field("source_line", pa.int64(), nullable=False),
])

AGREEMENT_ROW_SCHEMA = pa.schema([
    pa.field("group", pa.string()),
    pa.field("secondary_group", pa.string()),
    pa.field("item_id", pa.string(), nullable=False),
    pa.field("premise_digest", pa.string(), nullable=False),
    pa.field("hypothesis", pa.string(), nullable=False),
    pa.field("human_label", pa.string(), nullable=False),
    pa.field("human_attributable", pa.bool_(), nullable=False),
    pa.field("nli_score", pa.float64(), nullable=False),
    pa.field("decision", pa.string(), nullable=False),
    pa.field("calibrated_decision", pa.string()),
    pa.field("n_premises", pa.int64(), nullable=False),
    pa.field("n_windows", pa.int64(), nullable=False),
    pa.field("truncated", pa.bool_(), nullable=False),
    pa.field("source_file", pa.string(), nullable=False),
    pa.field("source_line", pa.int64(), nullable=False),
])

DEAD_LETTER_SCHEMA = pa.schema([
    pa.field("source_file", pa.string(), nullable=False),
    pa.field("source_line", pa.int64(), nullable=False),
    pa.field("kind", pa.string(), nullable=False),
    pa.field("reason", pa.string(), nullable=False),
    pa.field("field", pa.string()),
    pa.field("message", pa.string(), nullable=False),
    pa.field("record", pa.string(), nullable=False),
])

AIS_ANNOTATION_SCHEMA = pa.schema([
    pa.field("dataset", pa.string(), nullable=False),
    pa.field("model", pa.string(), nullable=False),
    pa.field("example_id", pa.string(), nullable=False),
    pa.field("flagged", pa.bool_(), nullable=False),
    pa.field("interpretable", pa.bool_(), nullable=False),
    pa.field("attributable", pa.bool_(), nullable=False),
    pa.field("int_agreement", pa.int64()),
    pa.field("ais_agreement", pa.int64()),
    pa.field("source_file", pa.string(), nullable=False),
    pa.field("source_line", pa.int64(), nullable=False),
])

AIS_TABLE_SCHEMA = pa.schema([
    pa.field("dataset", pa.string(), nullable=False),
    pa.field("paper_table", pa.int64()),
    pa.field("model", pa.string(), nullable=False),
    pa.field("paper_label", pa.string()),
    pa.field("items", pa.int64(), nullable=False),
    pa.field("flagged", pa.int64(), nullable=False),
    pa.field("interpretable", pa.int64(), nullable=False),
    pa.field("attributable", pa.int64(), nullable=False),
    pa.field("flag", pa.string(), nullable=False),
    pa.field("paper_flag", pa.string()),
    pa.field("flag_equal", pa.bool_()),
    pa.field("int", pa.string(), nullable=False),
    pa.field("int_mark", pa.bool_(), nullable=False),
    pa.field("int_p_value", pa.float64()),
    pa.field("paper_int", pa.string()),
    pa.field("paper_int_mark", pa.bool_()),
    pa.field("int_equal", pa.bool_()),
    pa.field("ais", pa.string(), nullable=False),
    pa.field("ais_mark", pa.bool_(), nullable=False),
    pa.field("ais_p_value", pa.float64()),
    pa.field("paper_ais", pa.string()),
    pa.field("paper_ais_mark", pa.bool_()),
    pa.field("ais_equal", pa.bool_()),
    pa.field("status", pa.string(), nullable=False),
    pa.field("explanation", pa.string(), nullable=False),
])

AIS_AGREEMENT_SCHEMA = pa.schema([
    pa.field("dataset", pa.string(), nullable=False),
    pa.field("model", pa.string(), nullable=False),
    pa.field("question", pa.string(), nullable=False),
    pa.field("agreeing_raters", pa.int64()),
    pa.field("items", pa.int64(), nullable=False),
    pa.field("share", pa.float64(), nullable=False),
])

CLAIM_INPUT_SCHEMA = pa.schema([
    pa.field("system_name", pa.string(), nullable=False),
    pa.field("question", pa.string(), nullable=False),
    pa.field("claim_index", pa.int64(), nullable=False),
    pa.field("claim", pa.string(), nullable=False),
    pa.field("evidence", pa.list_(pa.string()), nullable=False),
    pa.field("support", pa.string()),
    pa.field("abstained", pa.bool_(), nullable=False),
    pa.field("answer_line", pa.int64(), nullable=False),
    pa.field("source_file", pa.string(), nullable=False),
    pa.field("source_line", pa.int64(), nullable=False),
])

CLAIM_ROW_SCHEMA = pa.schema([
    pa.field("system_name", pa.string(), nullable=False),
    pa.field("question", pa.string(), nullable=False),
    pa.field("claim_index", pa.int64(), nullable=False),
    pa.field("claim", pa.string(), nullable=False),
    pa.field("evidence", pa.string()),
    pa.field("n_evidence", pa.int64(), nullable=False),
    pa.field("support", pa.string()),
    pa.field("human_label", pa.string()),
    pa.field("abstained", pa.bool_(), nullable=False),
    pa.field("auto_ais", pa.string(), nullable=False),
    pa.field("nli_score", pa.float64()),
    pa.field("n_windows", pa.int64(), nullable=False),
    pa.field("truncated", pa.bool_(), nullable=False),
    pa.field("reranked", pa.bool_(), nullable=False),
    pa.field("scorer", pa.string(), nullable=False),
    pa.field("answer_line", pa.int64(), nullable=False),
    pa.field("source_file", pa.string(), nullable=False),
    pa.field("source_line", pa.int64(), nullable=False),
])

CLAIMS_SYSTEM_SCHEMA = pa.schema([
    pa.field("system_name", pa.string(), nullable=False),
    pa.field("n_answers", pa.int64(), nullable=False),
    pa.field("n_claims", pa.int64(), nullable=False),
    pa.field("n_claims_without_evidence", pa.int64(), nullable=False),
    pa.field("n_abstaining_answers", pa.int64(), nullable=False),
    pa.field("macro_autoais", pa.float64(), nullable=False),
    pa.field("macro_ci_low", pa.float64(), nullable=False),
    pa.field("macro_ci_high", pa.float64(), nullable=False),
    pa.field("micro_autoais", pa.float64(), nullable=False),
    pa.field("micro_ci_low", pa.float64(), nullable=False),
    pa.field("micro_ci_high", pa.float64(), nullable=False),
    pa.field("macro_autoais_non_abstaining", pa.float64()),
    pa.field("micro_autoais_non_abstaining", pa.float64()),
    pa.field("n_human_labelled", pa.int64(), nullable=False),
    pa.field("human_ais", pa.float64()),
    pa.field("human_accuracy", pa.float64()),
    pa.field("human_balanced_accuracy", pa.float64()),
    pa.field("human_kappa", pa.float64()),
    pa.field("human_roc_auc", pa.float64()),
])

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
])

TOPIC_SCHEMA = pa.schema([
    pa.field("query_id", pa.string(), nullable=False),
    pa.field("question", pa.string(), nullable=False),
    pa.field("source_file", pa.string(), nullable=False),
    pa.field("source_line", pa.int64(), nullable=False),
])

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
])

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

SCK_INPUT_SCHEMA = pa.schema([
    pa.field("system_name", pa.string(), nullable=False),
    pa.field("question", pa.string(), nullable=False),
    pa.field("answer", pa.string(), nullable=False),
    pa.field("reference_answer", pa.string()),
    pa.field("intent", pa.string()),
    pa.field("source_file", pa.string(), nullable=False),
    pa.field("source_line", pa.int64(), nullable=False),
])

KG_STATEMENT_SCHEMA = pa.schema([
    pa.field("subject", pa.string(), nullable=False),
    pa.field("predicate", pa.string(), nullable=False),
    pa.field("object", pa.string(), nullable=False),
    pa.field("source_file", pa.string(), nullable=False),
    pa.field("source_line", pa.int64(), nullable=False),
])

KG_EDGE_SCHEMA = pa.schema([
    pa.field("predicate", pa.string(), nullable=False),
    pa.field("object", pa.string(), nullable=False),
    pa.field("object_label", pa.string()),
])

ENTITY_RECORD_SCHEMA = pa.schema([
    pa.field("id", pa.string(), nullable=False),
    pa.field("label", pa.string(), nullable=False),
    pa.field("aliases", pa.list_(pa.string()), nullable=False),
    pa.field("description", pa.string()),
    pa.field("out_edges", pa.list_(pa.struct(list(KG_EDGE_SCHEMA))), nullable=False),
    pa.field("in_predicates", pa.list_(pa.string()), nullable=False),
])

SCK_ROW_SCHEMA = pa.schema([
    pa.field("system_name", pa.string(), nullable=False),
    pa.field("question", pa.string(), nullable=False),
    pa.field("answer", pa.string(), nullable=False),
    pa.field("reference_answer", pa.string()),
    pa.field("intent", pa.string(), nullable=False),
    pa.field("intent_source", pa.string(), nullable=False),
    pa.field("intent_evidence", pa.string(), nullable=False),
    pa.field("sck_score", pa.float64()),
    pa.field("s_score", pa.float64(), nullable=False),
    pa.field("c_score", pa.float64()),
    pa.field("k_score", pa.float64()),
    pa.field("weight_s", pa.float64(), nullable=False),
    pa.field("weight_c", pa.float64(), nullable=False),
    pa.field("weight_k", pa.float64(), nullable=False),
    pa.field("s_features", pa.string(), nullable=False),
    pa.field("c_basis", pa.string(), nullable=False),
    pa.field("c_entities", pa.string(), nullable=False),
    pa.field("ve_score", pa.float64()),
    pa.field("er_score", pa.float64()),
    pa.field("kg_attr_score", pa.float64()),
    pa.field("text_entities", pa.string(), nullable=False),
    pa.field("er_entities", pa.string(), nullable=False),
    pa.field("n_sentences", pa.int64(), nullable=False),
    pa.field("n_attributable", pa.int64(), nullable=False),
    pa.field("n_extrapolatory", pa.int64(), nullable=False),
    pa.field("n_contradictory", pa.int64(), nullable=False),
    pa.field("sentences", pa.string(), nullable=False),
    pa.field("scorer", pa.string(), nullable=False),
    pa.field("source_file", pa.string(), nullable=False),
    pa.field("source_line", pa.int64(), nullable=False),
])

SCK_SUMMARY_SCHEMA = pa.schema([
    pa.field("system_name", pa.string(), nullable=False),
    pa.field("intent", pa.string(), nullable=False),
    pa.field("n_answers", pa.int64(), nullable=False),
    pa.field("sck", pa.float64()),
    pa.field("s", pa.float64(), nullable=False),
    pa.field("c", pa.float64()),
    pa.field("n_c", pa.int64(), nullable=False),
    pa.field("k", pa.float64()),
    pa.field("ve", pa.float64()),
    pa.field("er", pa.float64()),
    pa.field("kg_attr", pa.float64()),
    pa.field("n_contradictory_sentences", pa.int64(), nullable=False),
])

SCHEMAS = {
    Prediction: PREDICTION_SCHEMA,
    GoldAnswer: GOLD_ANSWER_SCHEMA,
    GoldMatch: GOLD_MATCH_SCHEMA,
    AttributionExample: ATTRIBUTION_EXAMPLE_SCHEMA,
    AttributionScore: ATTRIBUTION_SCORE_SCHEMA,
    ScoringFailure: SCORING_FAILURE_SCHEMA,
    ScoreCacheEntry: SCORE_CACHE_ENTRY_SCHEMA,
    CorpusRecord: CORPUS_RECORD_SCHEMA,
    CorpusPassage: CORPUS_PASSAGE_SCHEMA,
    RatingRow: RATING_SCHEMA,
    LeaderboardRow: LEADERBOARD_SCHEMA,
    DeadLetter: DEAD_LETTER_SCHEMA,
    AisAnnotation: AIS_ANNOTATION_SCHEMA,
    AisTableRow: AIS_TABLE_SCHEMA,
    AisAgreementRow: AIS_AGREEMENT_SCHEMA,
    HumanRating: HUMAN_RATING_SCHEMA,
    LabelledItem: LABELLED_ITEM_SCHEMA,
    AgreementRow: AGREEMENT_ROW_SCHEMA,
    ArticleEntry: ARTICLE_ENTRY_SCHEMA,
    ClaimInput: CLAIM_INPUT_SCHEMA,
    ClaimRow: CLAIM_ROW_SCHEMA,
    ClaimsSystemRow: CLAIMS_SYSTEM_SCHEMA,
    AuditAnswer: AUDIT_ANSWER_SCHEMA,
    Candidate: CANDIDATE_SCHEMA,
    Topic: TOPIC_SCHEMA,
    AuditPair: AUDIT_PAIR_SCHEMA,
    AuditCandidateRow: AUDIT_CANDIDATE_SCHEMA,
    AuditAnswerRow: AUDIT_ANSWER_ROW_SCHEMA,
    AuditSystemRow: AUDIT_SYSTEM_SCHEMA,
    SckInput: SCK_INPUT_SCHEMA,
    KgStatement: KG_STATEMENT_SCHEMA,
    KgEdge: KG_EDGE_SCHEMA,
    EntityRecord: ENTITY_RECORD_SCHEMA,
    SckRow: SCK_ROW_SCHEMA,
    SckSummaryRow: SCK_SUMMARY_SCHEMA,
}

for _element_type in SCHEMAS:
  beam.coders.registry.register_coder(_element_type, beam.coders.RowCoder)


def schema_of(element_type: Type[tuple]) -> pa.Schema:
  return SCHEMAS[element_type]


def to_record_batch(rows: Sequence[tuple], schema: pa.Schema) -> pa.RecordBatch:
  """Rows (tuples in schema field order) to one Arrow record batch."""
  if not rows:
    return pa.RecordBatch.from_pylist([], schema=schema)
  # One conversion of the tuples as a struct array: about twice as fast as
  # transposing the rows into columns in Python.
  batch = pa.RecordBatch.from_struct_array(
      pa.array(rows, type=pa.struct(list(schema))))
  for column, field in zip(batch.columns, schema):
    if column.null_count and not field.nullable:
      raise ValueError(f"field '{field.name}' is not nullable, found "
                       f"{column.null_count} null value(s)")
  return batch


def iter_rows(batch, element_type: Type[tuple]):
  """Yields the rows of an Arrow record batch or table as `element_type`."""
  make = element_type._make
  columns = [column.to_pylist() for column in batch.columns]
  for values in zip(*columns):
    yield make(values)
