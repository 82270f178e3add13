"""Test-only scorers and model handlers (not product flags).

Scorers are injected into a job in place of the one its --scorer flag names, by
monkeypatching the job module's `scorer_from_options`. `DigestHandler` is a
cheap, deterministic stand-in for a model, so that tests of how work is grouped,
cached and spread can run 100k examples: it scores an example by
`hash_score` of its premise and hypothesis (what any batch-invariant model
would do: the score depends on the example alone) and reports, in `n_windows`,
how many examples the call that scored it held, so a test can see every call's
size and compare the chunking between runs.
"""
import hashlib
import os
import time
from typing import Any, Callable, Dict, Optional, Sequence

import apache_beam as beam
from apache_beam.ml.inference.base import ModelHandler, PredictionResult

from autoais.transforms.scoring.scorer import Scorer
from autoais.schemas import AttributionExample, AttributionScore


def hash_score(premise: str, hypothesis: str) -> float:
  """A deterministic pseudo-random score in [0, 1) of an example's texts."""
  digest = hashlib.blake2b(f"{premise}\0{hypothesis}".encode("utf-8"),
                           digest_size=8).digest()
  return int.from_bytes(digest, "big") / 2.0 ** 64


class _ScoreFn(beam.DoFn):

  def __init__(self, score: Callable[[AttributionExample], float], threshold: float,
               max_chars: Optional[int] = None):
    self._score = score
    self._threshold = threshold
    self._max_chars = max_chars

  def process(self, keyed_example):
    key, example = keyed_example
    if example is None:
      yield key, None
    else:
      value = self._score(example)
      too_long = self._max_chars is not None and (
          len(example.premise) + len(example.hypothesis) > self._max_chars)
      yield key, AttributionScore(value, value > self._threshold, 1, too_long)


class _ScoreKeyed(beam.PTransform):

  def __init__(self, fn):
    super().__init__()
    self._fn = fn

  def expand(self, keyed_examples):
    return {"scored": keyed_examples | "ApplyTestScore" >> beam.ParDo(self._fn),
            "stats": keyed_examples.pipeline | "NoTestStats" >> beam.Create([{}])}


def _hash_example(example: AttributionExample) -> float:
  return hash_score(example.premise, example.hypothesis)


class HashScorer(Scorer):
  """nli_score = hash_score(premise, hypothesis): figures that are neither all
  0 nor all 1, and depend on the exact premise the job builds. With
  `max_chars`, an example longer than that (premise and hypothesis) is flagged
  `truncated`, as a model flags an input longer than its own."""

  name = "test-hash"

  def __init__(self, max_chars: Optional[int] = None):
    self._max_chars = max_chars

  def score_keyed(self, work_dir: str, rows_of=None) -> beam.PTransform:
    del work_dir, rows_of  # one DoFn, no grouping; no row counted
    return _ScoreKeyed(_ScoreFn(_hash_example, 0.5, self._max_chars))

  def describe(self) -> Dict[str, Any]:
    return {"name": self.name, "model": None, "threshold": 0.5}


_HYPOTHESIS_START = "The answer to the question '"


def question_of(hypothesis: str) -> str:
  """The question of an AutoAIS hypothesis (transforms/scoring/examples.py)."""
  return hypothesis[len(_HYPOTHESIS_START):hypothesis.rindex("' is '")]


class _OracleScore:

  def __init__(self, gold_premises: Dict[str, str]):
    self._gold = gold_premises

  def __call__(self, example: AttributionExample) -> float:
    if self._gold.get(question_of(example.hypothesis)) == example.premise:
      return 0.9
    return 0.5 * hash_score(example.premise, example.hypothesis)


class OracleScorer(Scorer):
  """Knows each question's gold passage: 0.9 for it, below 0.5 (a hash) for any
  other passage, so the gold passage is the only attributable one and reranking
  must find it."""

  name = "test-oracle"

  def __init__(self, gold_premises: Dict[str, str]):
    """gold_premises: question -> the NLI premise of its gold passage."""
    self._score = _OracleScore(gold_premises)

  def score_keyed(self, work_dir: str, rows_of=None) -> beam.PTransform:
    del work_dir, rows_of  # one DoFn, no grouping; no row counted
    return _ScoreKeyed(_ScoreFn(self._score, 0.5))

  def describe(self) -> Dict[str, Any]:
    return {"name": self.name, "model": None, "threshold": 0.5}


# Calls of DigestHandler.run_inference so far in this process, per release file.
_CALLS_BY_RELEASE_FILE: Dict[str, int] = {}
# How long a held model waits to be released before it goes on anyway (the test
# then fails on what it checks rather than hanging).
RELEASE_WAIT_S = 120


class DigestHandler(ModelHandler):
  """With `release_file`, a model held mid-run: in each process, the first call
  is answered at once and every later one waits until that file exists (the
  test creates it once it has seen what it waits for while the model runs),
  whatever the machine's load."""

  def __init__(self, threshold: float = 0.5, release_file: Optional[str] = None):
    super().__init__()
    self._threshold = threshold
    self._release_file = release_file

  def load_model(self):
    return None

  def _wait_for_release(self) -> None:
    calls = _CALLS_BY_RELEASE_FILE.get(self._release_file, 0)
    _CALLS_BY_RELEASE_FILE[self._release_file] = calls + 1
    deadline = time.monotonic() + RELEASE_WAIT_S
    while calls and not os.path.exists(self._release_file):
      if time.monotonic() > deadline:
        # Never released: every call goes on from now (one wait, not one per call).
        open(self._release_file, "a", encoding="utf-8").close()
      time.sleep(0.02)

  def run_inference(self, batch: Sequence, model, inference_args=None):
    if self._release_file:
      self._wait_for_release()
    results = []
    for example in batch:
      score = hash_score(example.premise, example.hypothesis)
      results.append(PredictionResult(example, AttributionScore(
          score, score > self._threshold, len(batch), False)))
    return results


class _PairScore:

  def __init__(self, entailed):
    self._entailed = frozenset(entailed)

  def __call__(self, example: AttributionExample) -> float:
    return 0.9 if (example.premise, example.hypothesis) in self._entailed else 0.1


class PairScorer(Scorer):
  """Entails exactly the (premise, hypothesis) pairs it is given (0.9; any other
  pair 0.1): the judgements of a model the tests cannot run (the seed's
  Flan-T5 XXL), injected where the job must build exactly those pairs."""

  name = "test-pairs"

  def __init__(self, entailed):
    self._score = _PairScore(entailed)

  def score_keyed(self, work_dir: str, rows_of=None) -> beam.PTransform:
    del work_dir, rows_of  # one DoFn, no grouping; no row counted
    return _ScoreKeyed(_ScoreFn(self._score, 0.5))

  def describe(self) -> Dict[str, Any]:
    return {"name": self.name, "model": None, "threshold": 0.5}
