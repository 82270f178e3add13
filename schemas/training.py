"""The element type that `autoais training-data` writes and `autoais finetune`
reads, beside its pyarrow schema: one training example in the input form of the family it
trains (the rows of train.parquet, validation.parquet and test.parquet).
"""
from typing import NamedTuple, Optional

import pyarrow as pa

SPLITS = ("train", "validation", "test")
FAMILIES = ("t5", "nli-classifier")


class TrainingExample(NamedTuple):
  """One labelled example of a split. `digest` (hex blake2b-128 of the family's
  input and the label) is the duplicate key and the order of the split's rows;
  `question` is what the split was drawn by (the question, else the claim)."""
  split: str
  digest: str
  source: str  # the --format of the input it came from
  item_id: str
  question: str
  premise: str
  hypothesis: str
  # t5: TRUE's text-to-text form, "premise: {premise} hypothesis: {hypothesis}"
  # and "1" / "0"; None for nli-classifier (it reads the pair and the label).
  inputs: Optional[str]
  targets: Optional[str]
  label: int  # 1 attributable, 0 not
  hard_negative: bool  # mined from the article of a positive, not read
  source_file: str
  source_line: int


TRAINING_EXAMPLE_SCHEMA = pa.schema([
    pa.field("split", pa.string(), nullable=False),
    pa.field("digest", pa.string(), nullable=False),
    pa.field("source", pa.string(), nullable=False),
    pa.field("item_id", pa.string(), nullable=False),
    pa.field("question", pa.string(), nullable=False),
    pa.field("premise", pa.string(), nullable=False),
    pa.field("hypothesis", pa.string(), nullable=False),
    pa.field("inputs", pa.string()),
    pa.field("targets", pa.string()),
    pa.field("label", pa.int64(), nullable=False),
    pa.field("hard_negative", pa.bool_(), nullable=False),
    pa.field("source_file", pa.string(), nullable=False),
    pa.field("source_line", pa.int64(), nullable=False),
])
