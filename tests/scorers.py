"""Test-only model handlers: cheap, deterministic stand-ins for a model, so that
tests of how work is grouped, cached and spread can run 100k examples.

`DigestHandler` scores an example with a number drawn from the digest of its
premise and hypothesis (what any batch-invariant model would do: the score
depends on the example alone) and reports, in `n_windows`, how many examples
the call that scored it held, so a test can see every call's size and compare
the chunking between runs.
"""
import hashlib
import time
from typing import Sequence

from apache_beam.ml.inference.base import ModelHandler, PredictionResult

from schemas import AttributionScore


def digest_score(premise: str, hypothesis: str) -> float:
  digest = hashlib.sha256(f"{premise}\0{hypothesis}".encode("utf-8")).digest()
  return int.from_bytes(digest[:6], "big") / float(1 << 48)


class DigestHandler(ModelHandler):
  """`seconds_per_call`: a pause per call, to stand for a slow model."""

  def __init__(self, threshold: float = 0.5, seconds_per_call: float = 0.0):
    super().__init__()
    self._threshold = threshold
    self._seconds_per_call = seconds_per_call

  def load_model(self):
    return None

  def run_inference(self, batch: Sequence, model, inference_args=None):
    time.sleep(self._seconds_per_call)
    results = []
    for example in batch:
      score = digest_score(example.premise, example.hypothesis)
      results.append(PredictionResult(example, AttributionScore(
          score, score > self._threshold, len(batch), False)))
    return results
