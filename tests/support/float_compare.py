"""Comparing a model's scores, and the decisions taken on them, between runs
that batch them differently.

A model's float result depends on the batch it was computed in (the padding,
the batch shape, the kernel the shape picks): the same example scored in
another batch can differ in its last bits, and by more on some CPUs (issue 51:
1e-5 relative on an AVX-512 Xeon). Where two runs form the same batches on one
machine (the same inputs: model calls are fixed by the data, so runners and
worker counts do not change them) the project promises byte-identical outputs
and the tests compare exactly. Where they do not (another set of examples, a
cache filled by another run, a server batching the requests it is sent, one
example at a time), scores are compared within BATCH_TOLERANCE, and decisions
(Y/N, and the summaries counted from them) exactly only once
assert_clear_of_threshold has shown that no score lies near the threshold,
where a last-bit difference could flip one.
"""
from typing import Iterable

# Scores of one example computed in different batches agree to about 1e-7 on
# the CPUs tried; 1e-5 absolute leaves room for the CPUs that differ from the
# fifth significant digit (issue 51) on scores between 0 and 1.
BATCH_TOLERANCE = 1e-5


def assert_clear_of_threshold(scores: Iterable[float], threshold: float,
                              tolerance: float = BATCH_TOLERANCE):
  """No score within `tolerance` of `threshold`: decisions taken on these
  scores and on the same examples' scores from other batches are then the same,
  and can be compared exactly. A failure here says the test's inputs are too
  close to the threshold to compare decisions across batches, not that the
  scorer is wrong."""
  scores = [float(score) for score in scores]
  near = [score for score in scores if abs(score - threshold) <= tolerance]
  assert scores and not near, (
      f"scores within {tolerance} of the threshold {threshold}: {near}; another "
      "batch could decide them the other way")
