"""The sentence splitter of the scorers that chunk documents by sentence as
MiniCheck does (`--scorer llm-judge`, models/llm_judge.py).

MiniCheck splits with NLTK's `sent_tokenize` (Punkt's English model, which
must be downloaded: `nltk.download("punkt_tab")`). Where that model is
installed it is used, and the scores are MiniCheck's; where it is not, NLTK's
Punkt algorithm runs untrained (no learned abbreviations: "Dr. Smith" may be cut
after "Dr."), which needs no downloaded data. Which one ran is recorded
(`splitter_info`) in run.json and in the score cache's identity, since another
split can change a score.
"""
import functools
from typing import Callable, Dict, List


@functools.lru_cache(maxsize=1)
def _punkt() -> Callable[[str], List[str]]:
  import nltk  # pylint: disable=import-outside-toplevel
  try:
    nltk.data.find("tokenizers/punkt_tab/english/")
  except LookupError:
    from nltk.tokenize.punkt import PunktSentenceTokenizer  # pylint: disable=import-outside-toplevel
    return PunktSentenceTokenizer().tokenize
  return functools.partial(nltk.sent_tokenize, language="english")


def split_sentences(text: str) -> List[str]:
  """The sentences of `text` (whitespace between them dropped)."""
  return _punkt()(text)


def splitter_info() -> Dict[str, str]:
  """Which splitter runs in this process, and NLTK's version."""
  import nltk  # pylint: disable=import-outside-toplevel
  trained = isinstance(_punkt(), functools.partial)
  return {"splitter": "nltk-punkt-english" if trained else "nltk-punkt-untrained",
          "splitter_version": nltk.__version__}
