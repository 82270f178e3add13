"""Sentence splitting for document chunking (`--scorer minicheck`).

    splitter = sentence_splitter()        # on a worker: NLTK punkt where its data is
    splitter.split("One. Two.")           # installed, else syntok
    splitter.name, splitter.version       # recorded in run.json and the score cache

MiniCheck's own code splits with NLTK's `sent_tokenize`, whose punkt data is a
separate download. Where that data is installed (found at run time by NLTK's
own lookup), it is used, so scores are MiniCheck's exactly. Elsewhere the
splitter is syntok (PyPI, pure Python, no data to download), chosen on real
passages (docs/scorers.md says why). Both are called as `sent_tokenize` is: one
block of text without line breaks in, its sentences out, stripped, none empty.
pack_sentences packs sentences into chunks as MiniCheck does (`--scorer
minicheck` and `--scorer llm-judge`).
"""
import importlib.metadata
import importlib.util
import re
from typing import Callable, List, NamedTuple, Sequence

NLTK_PUNKT = "nltk-punkt"
SYNTOK = "syntok"
# Where nltk >= 3.9's sent_tokenize reads English punkt parameters.
_PUNKT_RESOURCE = "tokenizers/punkt_tab/english/"


class SentenceSplitter(NamedTuple):
  name: str
  version: str
  split: Callable[[str], List[str]]

  def describe(self):
    return {"name": self.name, "version": self.version}


# Citation markers as ALCE's answers write them ("[1]", "[12]").
_CITATION = re.compile(r"\[\d+\]")


def _mask_citations(block: str) -> str:
  """`block` with each citation marker replaced by as many capitals ("[1]" ->
  "XXX"), and its first character by a space where it follows a full stop,
  question or exclamation mark directly: syntok otherwise reads "Paris [1][2].
  It" as one sentence and "Paris.[1] It" as one word, where punkt (the
  reference scripts' splitter) cuts both. Same length: offsets are kept."""
  def mask(match):
    start, end = match.span()
    gap = start > 0 and block[start - 1] in ".?!"
    return (" " if gap else "X") + "X" * (end - start - 1)
  return _CITATION.sub(mask, block)


def syntok_sentences(block: str) -> List[str]:
  """The sentences of `block` as syntok segments it (citation markers masked,
  see _mask_citations), each an exact, stripped slice of the block: cut at the
  offset of each sentence's first token (syntok's token values can differ from
  the text, e.g. "n't" read as "not"), moved to the start of the citation
  marker it falls in, so no character is changed or lost."""
  from syntok import segmenter  # pylint: disable=import-outside-toplevel
  markers = [match.span() for match in _CITATION.finditer(block)]
  starts = []
  for paragraph in segmenter.analyze(_mask_citations(block)):
    for sentence in paragraph:
      if sentence:
        start = sentence[0].offset
        starts.append(next((a for a, b in markers if a < start < b), start))
  pieces = (block[start:end].strip()
            for start, end in zip(starts, starts[1:] + [len(block)]))
  return [piece for piece in pieces if piece]


def punkt_installed() -> bool:
  """Whether NLTK's own lookup finds its English punkt parameters."""
  if importlib.util.find_spec("nltk") is None:
    return False
  try:
    import nltk  # pylint: disable=import-outside-toplevel
    nltk.data.find(_PUNKT_RESOURCE)
  except (ImportError, LookupError):
    return False
  return True


def sentence_splitter() -> SentenceSplitter:
  """NLTK's punkt (MiniCheck's own splitter) where its data is installed on
  this machine, else syntok."""
  if punkt_installed():
    from nltk.tokenize import sent_tokenize  # pylint: disable=import-outside-toplevel
    return SentenceSplitter(NLTK_PUNKT, importlib.metadata.version("nltk"), sent_tokenize)
  return SentenceSplitter(SYNTOK, importlib.metadata.version("syntok"), syntok_sentences)


def pack_sentences(sentences: Sequence[str], sizes: Sequence[int],
                   chunk_size: int) -> List[str]:
  """MiniCheck's chunks: sentences added to the chunk until the next would
  take it past `chunk_size` (a sentence larger than that starts a chunk of its
  own, leaving an empty one behind), each chunk joined by spaces, a line
  break's surrounding spaces removed, blank chunks dropped."""
  chunks, current, total = [], [], 0
  for sentence, size in zip(sentences, sizes):
    if total + size > chunk_size:
      chunks.append(" ".join(current))
      current, total = [], 0
    current.append(sentence)
    total += size
  if current:
    chunks.append(" ".join(current))
  cleaned = (chunk.replace(" \n ", "\n").strip() for chunk in chunks)
  return [chunk for chunk in cleaned if chunk]
