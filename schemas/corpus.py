"""Element types of the passage corpus, each beside its pyarrow schema: the
records build-corpus reads, the passages it lays out as Parquet (joined by evaluate
and audit), and the article index that audit --candidates_from article reads
(transforms/corpus/store.py).
"""
from typing import NamedTuple

import pyarrow as pa


class CorpusRecord(NamedTuple):
  """A passage as read from a corpus source, before it is laid out."""
  id: str
  contents: str
  source_file: str
  source_line: int


CORPUS_RECORD_SCHEMA = pa.schema([
    pa.field("id", pa.string(), nullable=False),
    pa.field("contents", pa.string(), nullable=False),
    pa.field("source_file", pa.string(), nullable=False),
    pa.field("source_line", pa.int64(), nullable=False),
])


class CorpusPassage(NamedTuple):
  """A passage as stored in the Parquet corpus (Pyserini `contents` form)."""
  id: str
  contents: str


CORPUS_PASSAGE_SCHEMA = pa.schema([
    pa.field("id", pa.string(), nullable=False),
    pa.field("contents", pa.string(), nullable=False),
])


class ArticleEntry(NamedTuple):
  """A row of the corpus article index: a passage id under its article key."""
  article: str
  passage_id: str


ARTICLE_ENTRY_SCHEMA = pa.schema([
    pa.field("article", pa.string(), nullable=False),
    pa.field("passage_id", pa.string(), nullable=False),
])
