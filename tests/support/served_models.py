"""Test-only: a stand-in for a loaded model of `autoais serve` (serve/batching.py
ServedModel wraps it), whose cost and numbers the test chooses.

    inner = FakeWindowModel(held=True)    # every probabilities() call waits ...
    model = ServedModel(inner, "fake")
    ...
    inner.release()                       # ... until the test lets the model go on

An example's premise is split at "|" into its windows; a window's probability
is tests.support.scorers.hash_score of (window, hypothesis), so the expected
score of an example is the best of its windows. `inner.calls` records the
windows of every probabilities() call (what the model was asked to score),
`inner.encoded` the examples of every encode_many() call;
`inner.started` is set once a call has begun. A held model stays busy for as long
as the test needs it busy (a deadline to pass, a queue to fill), whatever the
machine's load, instead of for a fixed time.
"""
import threading
from typing import List, NamedTuple

import numpy as np

from autoais.models.token_budget import TokenBudgetModel
from tests.support.scorers import RELEASE_WAIT_S, hash_score


class FakeEncoded(NamedTuple):
  windows: List[tuple]
  truncated: bool


class FakeWindowModel:

  max_input_tokens = 512
  window_scores = staticmethod(TokenBudgetModel.window_scores)

  def __init__(self, held: bool = False, fail_marker: str = "FAIL-ME"):
    self.fail_marker = fail_marker
    self.calls: List[List[tuple]] = []
    self.encoded: List[list] = []
    self.started = threading.Event()  # set when a probabilities() call begins
    self._released = threading.Event()
    if not held:
      self._released.set()

  def release(self) -> None:
    """Lets the calls of a held model return (now and from now on)."""
    self._released.set()

  def encode_many(self, examples) -> List[FakeEncoded]:
    self.encoded.append(list(examples))
    encoded = []
    for example in examples:
      parts = example.premise.split("|")
      encoded.append(FakeEncoded([(part, example.hypothesis) for part in parts],
                                 len(parts) > 1))
    return encoded

  def probabilities(self, windows) -> np.ndarray:
    self.calls.append(list(windows))
    self.started.set()
    if not self._released.wait(RELEASE_WAIT_S):
      # Never released: the test fails on what it checks, not by hanging, and the
      # calls after this one do not wait.
      self._released.set()
    if any(self.fail_marker in premise for premise, _ in windows):
      raise RuntimeError("the model failed on this input")
    return np.array([hash_score(p, h) for p, h in windows], dtype=np.float64)


def expected_score(premise: str, hypothesis: str) -> float:
  return max(hash_score(part, hypothesis) for part in premise.split("|"))
