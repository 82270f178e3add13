"""The T5 family's model inputs (models/t5_nli.py scores them):
"premise: P hypothesis: H" as the tokenizer tokenises it, and past the
model's length (threshold mode) the premise's windows.

Pieces gives a list of texts' ids. Where the tokenizer's own normaliser and
pre-tokeniser cut plain text (printable ASCII, tabs, line feeds) at white
space into words tokenised alike wherever they stand (checked at load: T5's
and mT5's tokenizers as transformers builds them), a plain text's ids are
its words', each distinct word tokenised once while a bounded cache
(TextCache) keeps it; other texts go to the tokenizer whole, a list in one
call (bench/README.md, "Tokenisation shortcuts", measured the cache).

An input is never cut in the hypothesis: the premise's pieces (its offsets,
tokenised alone) are split into overlapping windows that each fit beside
the whole hypothesis; a window is the premise's text from one piece to
another as "premise: TEXT hypothesis: H", tokenised, shrunk a piece at a
time while too long. Every window is scored; the row takes the best.
"""
import re
from typing import List, NamedTuple, Optional, Sequence

from autoais.models.checkpoints import special_tokens_around
from autoais.models.token_budget import TextCache
from autoais.schemas import AttributionExample

WINDOW_OVERLAP = 0.25
MIN_WINDOW_TOKENS = 16
# Characters of the recent words whose ids are kept (about 75,000 words,
# some 20 MiB with their ids).
WORD_CACHE_CHARS = 1 << 19
_PLAIN = re.compile(r"[\x20-\x7e\t\n]*")


class EncodedExample(NamedTuple):
  windows: List[List[int]]  # input ids of each window, EOS included
  truncated: bool  # the premise had to be windowed


def model_text(premise: str, hypothesis: str) -> str:
  return f"premise: {premise} hypothesis: {hypothesis}"


class Pieces:
  """The ids of texts as `tokenizer` (a LockedTokenizer) gives them, plain
  texts word by word where the tokenizer allows it (the module docstring)."""

  def __init__(self, tokenizer):
    self.tokenizer = tokenizer
    found = special_tokens_around(tokenizer, ["x"]) if _words_apart(tokenizer) else None
    # The special ids before and after any text's pieces, as the tokenizer's
    # own post-processor puts them.
    self._specials = None if found is None else tuple(ids for ids, _ in found[0])
    self._words = TextCache(WORD_CACHE_CHARS)

  def ids(self, texts: Sequence[str], special_tokens: bool = True) -> List[List[int]]:
    if self._specials is None:
      return self.tokenizer.input_ids(texts, special_tokens) if texts else []
    split = [text.split() if _PLAIN.fullmatch(text) else None for text in texts]
    words, missing = self._words.found([w for found in split if found for w in found])
    if missing:
      for word, ids in zip(missing, self.tokenizer.input_ids(missing,
                                                             add_special_tokens=False)):
        words[word] = ids
        self._words.put(word, ids)
    others = iter(self.tokenizer.input_ids(
        [text for text, found in zip(texts, split) if found is None], special_tokens)
                  if None in split else [])
    prefix, suffix = self._specials if special_tokens else ([], [])
    return [next(others) if found is None
            else prefix + [i for word in found for i in words[word]] + suffix
            for found in split]


def _words_apart(tokenizer) -> bool:
  """Whether plain text is cut into words at its white space by the
  tokenizer's own normaliser and pre-tokeniser, each word's pre-token that
  of the word alone, and no added token holds or strips white space: then a
  plain text's ids are its words' ids (the model tokenises each pre-token on
  its own). Checked on every pair of printable ASCII characters."""
  backend = getattr(tokenizer, "backend_tokenizer", None)
  if backend is None or backend.pre_tokenizer is None:
    return False
  if any(token.lstrip or token.rstrip or any(c.isspace() for c in token.content)
         for token in backend.get_added_tokens_decoder().values()):
    return False
  printable = [chr(c) for c in range(0x21, 0x7f)]
  words = ["".join(pair) for pair in zip(printable * len(printable),
                                         sorted(printable * len(printable)))]
  probe = "".join(word + " \t\n  "[i % 4] for i, word in enumerate(words)) + " x\ty\nz"

  def pre_tokens(text):
    normalized = backend.normalizer.normalize_str(text) if backend.normalizer else text
    return [token for token, _ in backend.pre_tokenizer.pre_tokenize_str(normalized)]

  alone = [pre_tokens(word) for word in probe.split()]
  return (all(len(tokens) == 1 for tokens in alone)
          and pre_tokens(probe) == [tokens[0] for tokens in alone])


def encode_many(pieces: Pieces, max_input_tokens: int, examples: Sequence[AttributionExample],
                windowed: bool = True) -> List[EncodedExample]:
  """The model input(s) of each example: one, or (`windowed`, past the
  model's length) one per premise window."""
  whole = pieces.ids([model_text(e.premise, e.hypothesis) for e in examples])
  encoded = [EncodedExample([ids], False) for ids in whole]
  if windowed:
    long = [i for i, ids in enumerate(whole) if len(ids) > max_input_tokens]
    windows = _windows(pieces, max_input_tokens, [examples[i] for i in long],
                       [whole[i] for i in long])
    for i, item in zip(long, windows):
      encoded[i] = item
  return encoded


class _Plan(NamedTuple):
  example: AttributionExample
  offsets: List[tuple]  # (start, end) of each premise piece
  size: int  # pieces a window holds before it is shrunk
  stride: int


def _windows(pieces: Pieces, limit: int, examples: Sequence[AttributionExample],
             wholes: Sequence[List[int]]) -> List[EncodedExample]:
  """The windows of each example whose whole input (`wholes`) is too long.
  Every window of every example is tokenised in one call as first cut; an
  example where one of them must shrink is cut again window by window (a
  shrunk window moves where the next one starts)."""
  if not examples:
    return []
  premises = list(dict.fromkeys(example.premise for example in examples))
  offsets = dict(zip(premises, (spans for _, spans in pieces.tokenizer.input_ids(
      premises, add_special_tokens=False, offsets=True))))
  fixed = pieces.ids([model_text("", example.hypothesis) for example in examples])
  plans = []
  for example, head in zip(examples, fixed):
    size = max(MIN_WINDOW_TOKENS, limit - len(head) - 2)
    plans.append(_Plan(example, offsets[example.premise], size,
                       max(1, int(size * (1 - WINDOW_OVERLAP)))))
  cuts = [[(start, end) for start, end, _ in _cuts(plan)] if plan.offsets else []
          for plan in plans]
  texts = [_text(plan, start, end) for plan, spans in zip(plans, cuts) for start, end in spans]
  found = iter(pieces.ids(texts))
  results = []
  for plan, whole, spans in zip(plans, wholes, cuts):
    if not spans:  # a premise of no pieces: the hypothesis alone is too long
      results.append(EncodedExample([whole], True))
      continue
    windows = [next(found) for _ in spans]
    if any(len(window) > limit and end - start > MIN_WINDOW_TOKENS
           for window, (start, end) in zip(windows, spans)):
      windows = [window for _, _, window in _cuts(plan, pieces, limit)]
    results.append(EncodedExample(windows, True))
  return results


def _cuts(plan: _Plan, pieces: Optional[Pieces] = None, limit: int = 0):
  """(start, end, ids) of each window of the premise's pieces: with
  `pieces`, each window tokenised and shrunk a piece at a time until it
  fits in `limit` (or holds MIN_WINDOW_TOKENS pieces); else as first cut,
  ids None."""
  count, start = len(plan.offsets), 0
  while True:
    end, window = min(start + plan.size, count), None
    while pieces is not None:
      (window,) = pieces.ids([_text(plan, start, end)])
      if len(window) <= limit or end - start <= MIN_WINDOW_TOKENS:
        break
      end -= 1
    yield start, end, window
    if end >= count:
      return
    start = min(start + plan.stride, end)


def _text(plan: _Plan, start: int, end: int) -> str:
  text = plan.example.premise[plan.offsets[start][0]:plan.offsets[end - 1][1]]
  return model_text(text, plan.example.hypothesis)
