"""Element types of `autoais agreement` only, each beside its pyarrow schema:
the human-labelled items it reads (transforms/labelled/readers.py), with the
hallucination spans of the formats that mark them, and the scored rows it writes.
"""
from typing import List, NamedTuple, Optional

import pyarrow as pa

from autoais.schemas.common import (ATTRIBUTION_EXAMPLE_SCHEMA, UNSUPPORTED_SPAN_SCHEMA,
                                    AttributionExample, UnsupportedSpan)


class TextSpan(NamedTuple):
  """A span of characters a human marked in a hypothesis (RAGTruth's `labels`,
  FaithBench's hallucinated annotations):
  text[start:end] of the response, in Python's string indices (code points)."""
  start: int
  end: int
  label: Optional[str]  # as written (RAGTruth: label_type; FaithBench: its labels, ", ")


TEXT_SPAN_SCHEMA = pa.schema([
    pa.field("start", pa.int64(), nullable=False),
    pa.field("end", pa.int64(), nullable=False),
    pa.field("label", pa.string()),
])


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
  # What `autoais training-data` splits on and mines hard negatives from: the
  # question the item answers (None where the hypothesis is a claim that stands
  # alone), and the corpus passage id it cites (ratings rows only).
  question: Optional[str] = None
  attribution: Optional[str] = None
  # The spans a human marked unsupported in the hypothesis, where the format
  # has them (ragtruth, faithbench), for span-level scoring; empty elsewhere.
  spans: List[TextSpan] = ()


LABELLED_ITEM_SCHEMA = pa.schema([
    pa.field("item_id", pa.string(), nullable=False),
    pa.field("group", pa.string()),
    pa.field("secondary_group", pa.string()),
    pa.field("example", pa.struct(list(ATTRIBUTION_EXAMPLE_SCHEMA)), nullable=False),
    pa.field("human_label", pa.string(), nullable=False),
    pa.field("human_attributable", pa.bool_(), nullable=False),
    pa.field("source_file", pa.string(), nullable=False),
    pa.field("source_line", pa.int64(), nullable=False),
    pa.field("question", pa.string()),
    pa.field("attribution", pa.string()),
    pa.field("spans", pa.list_(pa.struct(list(TEXT_SPAN_SCHEMA))), nullable=False),
])


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


class SpanRow(NamedTuple):
  """One scored item's unsupported spans (spans.jsonl), where the scorer finds
  spans (--scorer lettucedetect): `text` is the text checked (the answer of a
  question's hypothesis, else the hypothesis), the spans in its characters.
  An agreement item is named by its `item_id`; an evaluate row, which has no
  id, by its `system_name` and `question` (the key ratings.csv keeps a row
  by), its item_id None."""
  source_file: str
  source_line: int
  item_id: Optional[str]
  text: str
  spans: List[UnsupportedSpan]
  # The spans a human marked in the same text, where the format has them
  # (ragtruth's labels); None elsewhere.
  human_spans: Optional[List[TextSpan]] = None
  # evaluate's rows; None in agreement's.
  system_name: Optional[str] = None
  question: Optional[str] = None


SPAN_ROW_SCHEMA = pa.schema([
    pa.field("source_file", pa.string(), nullable=False),
    pa.field("source_line", pa.int64(), nullable=False),
    pa.field("item_id", pa.string()),
    pa.field("text", pa.string(), nullable=False),
    pa.field("spans", pa.list_(pa.struct(list(UNSUPPORTED_SPAN_SCHEMA))), nullable=False),
    pa.field("human_spans", pa.list_(pa.struct(list(TEXT_SPAN_SCHEMA)))),
    pa.field("system_name", pa.string()),
    pa.field("question", pa.string()),
])
