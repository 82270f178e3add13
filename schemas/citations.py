"""Element types of `autoais citations` only, each beside its pyarrow schema:
an ALCE item as read, and the per-sentence, per-item and per-system rows the
job writes. Percentages are ALCE's (100 x a mean), as its eval.py prints them.
"""
from typing import List, NamedTuple, Optional

import pyarrow as pa


class CitationItem(NamedTuple):
  """One item of an ALCE result file (or of its JSON Lines variant) as read:
  the answer with its inline `[n]` citations and the documents it cites."""
  system_name: str
  question: str
  item_index: int  # position in the file's `data` list (JSON Lines: among its items)
  output: str  # as given (the job cuts it at its first line break)
  docs: List[str]  # each formatted "Title: {title}\n{text or sent}"
  qa_pairs: Optional[List[List[str]]]  # ASQA: the short answers of each QA pair
  answers: Optional[List[List[str]]]  # QAMPARI: the aliases of each gold answer
  claims: Optional[List[str]]  # ELI5: the gold claims
  qampari: bool  # split the answer into list items (file name or --qampari)
  # Human judgements in ALCE's human_eval format, where the item carries them
  # (its `sentences`): per sentence, `sentence_recall_score` (1: the cited
  # documents fully support it) and the `citation_precision_score` of each
  # judged citation (2 fully, 1 partly, 0 not supporting).
  human_recall: Optional[List[int]]
  human_citations: Optional[List[List[int]]]
  source_file: str
  source_line: int  # where the item starts


CITATION_ITEM_SCHEMA = pa.schema([
    pa.field("system_name", pa.string(), nullable=False),
    pa.field("question", pa.string(), nullable=False),
    pa.field("item_index", pa.int64(), nullable=False),
    pa.field("output", pa.string(), nullable=False),
    pa.field("docs", pa.list_(pa.string()), nullable=False),
    pa.field("qa_pairs", pa.list_(pa.list_(pa.string()))),
    pa.field("answers", pa.list_(pa.list_(pa.string()))),
    pa.field("claims", pa.list_(pa.string())),
    pa.field("qampari", pa.bool_(), nullable=False),
    pa.field("human_recall", pa.list_(pa.int64())),
    pa.field("human_citations", pa.list_(pa.list_(pa.int64()))),
    pa.field("source_file", pa.string(), nullable=False),
    pa.field("source_line", pa.int64(), nullable=False),
])


class CitationSentenceRow(NamedTuple):
  """One sentence (QAMPARI: one list item) of an answer: citations_rows.parquet /
  .csv. Citation lists are written as text, comma-separated."""
  system_name: str
  question: str
  item_index: int
  sentence_index: int
  sentence: str  # as split, citations included
  hypothesis: str  # the sentence with citations removed (what is scored)
  cited: str  # the citation numbers as written, e.g. "1,3"
  used: str  # the document numbers scored (at most --at_most_citations), "" if none
  status: str  # "scored" / "no_citation" / "out_of_range"
  supported: bool  # the cited documents entail the sentence (recall)
  nli_score: Optional[float]  # of the joint premise; None where not scored
  needed: str  # per used citation, Y / N (precision test); "" where not applicable
  precision_credit: int  # needed citations this sentence adds to precision
  # The human judgements of an item whose judgements align with its sentences
  # (CitationItemRow.human_check "aligned"): the sentence fully supported, and
  # the citation_precision_score (0 / 1 / 2) of each used citation; else None, "".
  human_supported: Optional[bool]
  human_citation_scores: str
  scorer: str
  source_file: str
  source_line: int


CITATION_SENTENCE_SCHEMA = pa.schema([
    pa.field("system_name", pa.string(), nullable=False),
    pa.field("question", pa.string(), nullable=False),
    pa.field("item_index", pa.int64(), nullable=False),
    pa.field("sentence_index", pa.int64(), nullable=False),
    pa.field("sentence", pa.string(), nullable=False),
    pa.field("hypothesis", pa.string(), nullable=False),
    pa.field("cited", pa.string(), nullable=False),
    pa.field("used", pa.string(), nullable=False),
    pa.field("status", pa.string(), nullable=False),
    pa.field("supported", pa.bool_(), nullable=False),
    pa.field("nli_score", pa.float64()),
    pa.field("needed", pa.string(), nullable=False),
    pa.field("precision_credit", pa.int64(), nullable=False),
    pa.field("human_supported", pa.bool_()),
    pa.field("human_citation_scores", pa.string(), nullable=False),
    pa.field("scorer", pa.string(), nullable=False),
    pa.field("source_file", pa.string(), nullable=False),
    pa.field("source_line", pa.int64(), nullable=False),
])


class CitationItemRow(NamedTuple):
  """One answer's figures: citations_items.parquet / .csv. Figures an item
  does not have (no sentences, no qa_pairs, not QAMPARI, no claims) are None."""
  system_name: str
  question: str
  item_index: int
  n_sentences: int
  n_citations: int  # citations counted by precision (in range, at most N a sentence)
  n_supported: int
  citation_rec: Optional[float]  # fraction; None without sentences (ALCE skips it)
  citation_prec: Optional[float]
  n_multi_citation: int  # sentences with several citations
  n_multi_supported: int
  n_overcited: int  # citations found not needed
  str_em: Optional[float]  # fraction of QA pairs whose short answer occurs
  str_hit: Optional[bool]
  qampari_num_preds: Optional[int]
  qampari_prec: Optional[float]
  qampari_rec: Optional[float]
  qampari_rec_top5: Optional[float]
  qampari_f1: Optional[float]
  qampari_f1_top5: Optional[float]
  n_claims: int
  claims_nli: Optional[float]  # fraction of gold claims the answer entails
  length: int  # words of the answer, citations removed
  reference_calls: int  # model calls ALCE's eval.py makes for this item
  # HUMAN_CHECKS: whether the item's human judgements align with its sentences
  # and used citations (only aligned items enter the human check).
  human_check: str
  human_citation_rec: Optional[float]  # as citation_rec, from the judgements
  human_citation_prec: Optional[float]
  source_file: str
  source_line: int


CITATION_ITEM_ROW_SCHEMA = pa.schema([
    pa.field("system_name", pa.string(), nullable=False),
    pa.field("question", pa.string(), nullable=False),
    pa.field("item_index", pa.int64(), nullable=False),
    pa.field("n_sentences", pa.int64(), nullable=False),
    pa.field("n_citations", pa.int64(), nullable=False),
    pa.field("n_supported", pa.int64(), nullable=False),
    pa.field("citation_rec", pa.float64()),
    pa.field("citation_prec", pa.float64()),
    pa.field("n_multi_citation", pa.int64(), nullable=False),
    pa.field("n_multi_supported", pa.int64(), nullable=False),
    pa.field("n_overcited", pa.int64(), nullable=False),
    pa.field("str_em", pa.float64()),
    pa.field("str_hit", pa.bool_()),
    pa.field("qampari_num_preds", pa.int64()),
    pa.field("qampari_prec", pa.float64()),
    pa.field("qampari_rec", pa.float64()),
    pa.field("qampari_rec_top5", pa.float64()),
    pa.field("qampari_f1", pa.float64()),
    pa.field("qampari_f1_top5", pa.float64()),
    pa.field("n_claims", pa.int64(), nullable=False),
    pa.field("claims_nli", pa.float64()),
    pa.field("length", pa.int64(), nullable=False),
    pa.field("reference_calls", pa.int64(), nullable=False),
    pa.field("human_check", pa.string(), nullable=False),
    pa.field("human_citation_rec", pa.float64()),
    pa.field("human_citation_prec", pa.float64()),
    pa.field("source_file", pa.string(), nullable=False),
    pa.field("source_line", pa.int64(), nullable=False),
])


class CitationsSystemRow(NamedTuple):
  """Per-system figures: citations.csv / .json / .md. Percentages as ALCE
  prints them (100 x the mean over items); CIs: 95% percentile bootstrap over
  questions, the same resamples for every system (paired where questions
  coincide). A figure no item of the system has is None."""
  system_name: str
  n_items: int
  n_items_with_sentences: int
  n_sentences: int
  n_citations: int
  citation_rec: Optional[float]
  citation_rec_ci_low: Optional[float]
  citation_rec_ci_high: Optional[float]
  citation_prec: Optional[float]
  citation_prec_ci_low: Optional[float]
  citation_prec_ci_high: Optional[float]
  multi_citation_share: Optional[float]  # % of sentences with several citations
  multi_supported_share: Optional[float]  # % of those the joint set supports
  overcite_share: Optional[float]  # % of those with a citation not needed
  n_items_with_qa_pairs: int
  str_em: Optional[float]
  str_em_ci_low: Optional[float]
  str_em_ci_high: Optional[float]
  str_hit: Optional[float]
  n_qampari_items: int
  qampari_num_preds: Optional[float]
  qampari_prec: Optional[float]
  qampari_rec: Optional[float]
  qampari_rec_top5: Optional[float]
  qampari_f1: Optional[float]
  qampari_f1_ci_low: Optional[float]
  qampari_f1_ci_high: Optional[float]
  qampari_f1_top5: Optional[float]
  n_items_with_claims: int
  claims_nli: Optional[float]
  claims_nli_ci_low: Optional[float]
  claims_nli_ci_high: Optional[float]
  length: float  # mean words per answer
  reference_calls: int  # model calls eval.py makes for this system's file


CITATIONS_SYSTEM_SCHEMA = pa.schema(
    [pa.field("system_name", pa.string(), nullable=False)] +
    [pa.field(name, pa.int64(), nullable=False) for name in (
        "n_items", "n_items_with_sentences", "n_sentences", "n_citations")] +
    [pa.field(name, pa.float64()) for name in (
        "citation_rec", "citation_rec_ci_low", "citation_rec_ci_high", "citation_prec",
        "citation_prec_ci_low", "citation_prec_ci_high", "multi_citation_share",
        "multi_supported_share", "overcite_share")] +
    [pa.field("n_items_with_qa_pairs", pa.int64(), nullable=False)] +
    [pa.field(name, pa.float64()) for name in (
        "str_em", "str_em_ci_low", "str_em_ci_high", "str_hit")] +
    [pa.field("n_qampari_items", pa.int64(), nullable=False)] +
    [pa.field(name, pa.float64()) for name in (
        "qampari_num_preds", "qampari_prec", "qampari_rec", "qampari_rec_top5",
        "qampari_f1", "qampari_f1_ci_low", "qampari_f1_ci_high", "qampari_f1_top5")] +
    [pa.field("n_items_with_claims", pa.int64(), nullable=False)] +
    [pa.field(name, pa.float64()) for name in (
        "claims_nli", "claims_nli_ci_low", "claims_nli_ci_high")] +
    [pa.field("length", pa.float64(), nullable=False),
     pa.field("reference_calls", pa.int64(), nullable=False)])


class CitationsHumanRow(NamedTuple):
  """The human check of one system (system_name None: every system pooled):
  citations_human.csv / .json / .md. Over the items whose human judgements
  (ALCE's human_eval format) align with their sentences and used citations:
  the human and the automatic citation recall and precision in % (ALCE's
  arithmetic on the same items), and the agreement job's statistics of the
  automatic decisions against the human ones, per sentence for recall (the
  sentence supported) and per used citation for precision (a citation counts
  where the human found the sentence supported and the document supporting
  it fully or partly, as ALCE's analysis; automatically, where ALCE's
  precision credits it). Confusion counts with the human judgement as truth,
  supported (1) the positive class."""
  system_name: Optional[str]
  n_items: int
  n_items_judged: int
  n_items_aligned: int
  n_sentences: int
  n_citations: int
  human_citation_rec: Optional[float]
  citation_rec: Optional[float]
  human_citation_prec: Optional[float]
  citation_prec: Optional[float]
  recall_accuracy: Optional[float]
  recall_balanced_accuracy: Optional[float]
  recall_cohen_kappa: Optional[float]
  recall_roc_auc: Optional[float]  # of nli_score, over the sentences scored
  recall_tp: int
  recall_fp: int
  recall_tn: int
  recall_fn: int
  precision_accuracy: Optional[float]
  precision_balanced_accuracy: Optional[float]
  precision_cohen_kappa: Optional[float]
  precision_tp: int
  precision_fp: int
  precision_tn: int
  precision_fn: int


CITATIONS_HUMAN_SCHEMA = pa.schema(
    [pa.field("system_name", pa.string())] +
    [pa.field(name, pa.int64(), nullable=False) for name in (
        "n_items", "n_items_judged", "n_items_aligned", "n_sentences", "n_citations")] +
    [pa.field(name, pa.float64()) for name in (
        "human_citation_rec", "citation_rec", "human_citation_prec", "citation_prec",
        "recall_accuracy", "recall_balanced_accuracy", "recall_cohen_kappa",
        "recall_roc_auc")] +
    [pa.field(name, pa.int64(), nullable=False) for name in (
        "recall_tp", "recall_fp", "recall_tn", "recall_fn")] +
    [pa.field(name, pa.float64()) for name in (
        "precision_accuracy", "precision_balanced_accuracy", "precision_cohen_kappa")] +
    [pa.field(name, pa.int64(), nullable=False) for name in (
        "precision_tp", "precision_fp", "precision_tn", "precision_fn")])
