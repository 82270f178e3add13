"""The T5 family's model inputs (models/t5_nli.py scores them):
"premise: P hypothesis: H" as the tokenizer tokenises it, a list of texts
in one call (LockedTokenizer.input_ids), and past the model's length
(threshold mode) the premise's windows.

An input is never cut in the hypothesis: the premise's pieces (its offsets,
tokenised alone) are split into overlapping windows that each fit beside
the whole hypothesis; a window is the premise's text from one piece to
another as "premise: TEXT hypothesis: H", tokenised, shrunk a piece at a
time while too long. Every window is scored; the row takes the best.
"""
from typing import List, NamedTuple, Optional, Sequence

from autoais.models.checkpoints import LockedTokenizer
from autoais.schemas import AttributionExample

WINDOW_OVERLAP = 0.25
MIN_WINDOW_TOKENS = 16


class EncodedExample(NamedTuple):
  windows: List[List[int]]  # input ids of each window, EOS included
  truncated: bool  # the premise had to be windowed


def model_text(premise: str, hypothesis: str) -> str:
  return f"premise: {premise} hypothesis: {hypothesis}"


def encode_many(tokenizer: LockedTokenizer, max_input_tokens: int,
                examples: Sequence[AttributionExample],
                windowed: bool = True) -> List[EncodedExample]:
  """The model input(s) of each example: one, or (`windowed`, past the
  model's length) one per premise window."""
  whole = tokenizer.input_ids([model_text(e.premise, e.hypothesis) for e in examples])
  encoded = [EncodedExample([ids], False) for ids in whole]
  if windowed:
    long = [i for i, ids in enumerate(whole) if len(ids) > max_input_tokens]
    windows = _windows(tokenizer, max_input_tokens, [examples[i] for i in long],
                       [whole[i] for i in long])
    for i, item in zip(long, windows):
      encoded[i] = item
  return encoded


class _Plan(NamedTuple):
  example: AttributionExample
  offsets: List[tuple]  # (start, end) of each premise piece
  size: int  # pieces a window holds before it is shrunk
  stride: int


def _windows(tokenizer: LockedTokenizer, limit: int, examples: Sequence[AttributionExample],
             wholes: Sequence[List[int]]) -> List[EncodedExample]:
  """The windows of each example whose whole input (`wholes`) is too long.
  Every window of every example is tokenised in one call as first cut; an
  example where one of them must shrink is cut again window by window (a
  shrunk window moves where the next one starts)."""
  if not examples:
    return []
  premises = list(dict.fromkeys(example.premise for example in examples))
  offsets = dict(zip(premises, (spans for _, spans in tokenizer.input_ids(
      premises, add_special_tokens=False, offsets=True))))
  fixed = tokenizer.input_ids([model_text("", example.hypothesis) for example in examples])
  plans = []
  for example, head in zip(examples, fixed):
    size = max(MIN_WINDOW_TOKENS, limit - len(head) - 2)
    plans.append(_Plan(example, offsets[example.premise], size,
                       max(1, int(size * (1 - WINDOW_OVERLAP)))))
  cuts = [[(start, end) for start, end, _ in _cuts(plan)] if plan.offsets else []
          for plan in plans]
  texts = [_text(plan, start, end) for plan, spans in zip(plans, cuts) for start, end in spans]
  found = iter(tokenizer.input_ids(texts))
  results = []
  for plan, whole, spans in zip(plans, wholes, cuts):
    if not spans:  # a premise of no pieces: the hypothesis alone is too long
      results.append(EncodedExample([whole], True))
      continue
    windows = [next(found) for _ in spans]
    if any(len(window) > limit and end - start > MIN_WINDOW_TOKENS
           for window, (start, end) in zip(windows, spans)):
      windows = [window for _, _, window in _cuts(plan, tokenizer, limit)]
    results.append(EncodedExample(windows, True))
  return results


def _cuts(plan: _Plan, tokenizer: Optional[LockedTokenizer] = None, limit: int = 0):
  """(start, end, ids) of each window of the premise's pieces: with
  `tokenizer`, each window tokenised and shrunk a piece at a time until it
  fits in `limit` (or holds MIN_WINDOW_TOKENS pieces); else as first cut,
  ids None."""
  count, start = len(plan.offsets), 0
  while True:
    end, window = min(start + plan.size, count), None
    while tokenizer is not None:
      (window,) = tokenizer.input_ids([_text(plan, start, end)])
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
