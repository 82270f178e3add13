"""Element types of `autoais sck` only, each beside its pyarrow schema: the
answers it reads, the knowledge graph (statements, and entities as joined to the
answers), and the rows it writes.
"""
from typing import List, NamedTuple, Optional

import pyarrow as pa


class SckInput(NamedTuple):
  """One answer to score with SCK (`autoais sck`; SPEC 5.9), as read."""
  system_name: str
  question: str
  answer: str
  reference_answer: Optional[str]  # the ground-truth answer, where given
  intent: Optional[str]  # a given question intent (transforms/sck/intent.py INTENTS)
  source_file: str
  source_line: int


SCK_INPUT_SCHEMA = pa.schema([
    pa.field("system_name", pa.string(), nullable=False),
    pa.field("question", pa.string(), nullable=False),
    pa.field("answer", pa.string(), nullable=False),
    pa.field("reference_answer", pa.string()),
    pa.field("intent", pa.string()),
    pa.field("source_file", pa.string(), nullable=False),
    pa.field("source_line", pa.int64(), nullable=False),
])


class KgStatement(NamedTuple):
  """One statement of a knowledge graph (`--kg`): an edge between two entity ids,
  or, with the predicates rdfs:label / skos:altLabel / schema:description, an
  entity's name, alias or description (transforms/sck/knowledge_graph.py)."""
  subject: str
  predicate: str
  object: str
  source_file: str
  source_line: int


KG_STATEMENT_SCHEMA = pa.schema([
    pa.field("subject", pa.string(), nullable=False),
    pa.field("predicate", pa.string(), nullable=False),
    pa.field("object", pa.string(), nullable=False),
    pa.field("source_file", pa.string(), nullable=False),
    pa.field("source_line", pa.int64(), nullable=False),
])


class KgEdge(NamedTuple):
  """An outgoing edge of an entity, with the object's label (None: the object is
  a literal or an id without a label)."""
  predicate: str
  object: str
  object_label: Optional[str]


KG_EDGE_SCHEMA = pa.schema([
    pa.field("predicate", pa.string(), nullable=False),
    pa.field("object", pa.string(), nullable=False),
    pa.field("object_label", pa.string()),
])


class EntityRecord(NamedTuple):
  """A knowledge-graph entity as joined to the answers that mention it."""
  id: str
  label: str
  aliases: List[str]
  description: Optional[str]
  out_edges: List[KgEdge]  # sorted by (predicate, object)
  in_predicates: List[str]  # predicates of the edges that point at it, sorted


ENTITY_RECORD_SCHEMA = pa.schema([
    pa.field("id", pa.string(), nullable=False),
    pa.field("label", pa.string(), nullable=False),
    pa.field("aliases", pa.list_(pa.string()), nullable=False),
    pa.field("description", pa.string()),
    pa.field("out_edges", pa.list_(pa.struct(list(KG_EDGE_SCHEMA))), nullable=False),
    pa.field("in_predicates", pa.list_(pa.string()), nullable=False),
])


class SckRow(NamedTuple):
  """One scored answer: sck_rows.parquet / .csv. Scores are fractions; a score
  is None where it is undefined (no entity to count); the JSON columns hold the
  evidence behind each score (README: SCK answer quality)."""
  system_name: str
  question: str
  answer: str
  reference_answer: Optional[str]
  intent: str
  intent_source: str  # "given" (input column) / "rules" (transforms/sck/intent.py)
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
