"""BootstrapWeights: the resamples do not depend on how they are drawn or kept."""
import numpy as np
import pytest

from autoais.transforms.stats.metrics import BootstrapWeights, bootstrap_chunk_rows


@pytest.mark.parametrize("n, samples", [(1, 3), (7, 120), (400, 51), (30_000, 40)])
def test_resamples_are_one_draw_of_samples_by_n_indexes(n, samples):
  draws = np.random.default_rng(4).integers(0, n, size=(samples, n), dtype=np.int64)
  expected = np.stack([np.bincount(drawn, minlength=n) for drawn in draws]) / n
  values = list(np.random.default_rng(1).random((2, n)))
  means = []
  for cache in (True, False):
    weights = BootstrapWeights(n, samples, 4, cache=cache)
    assert np.array_equal(np.concatenate(list(weights._chunks())), expected)
    means.append(weights.resample_means(values))
  # Exact: both ways draw the same chunks and sum them in the same order;
  # only where the weights are kept differs.
  assert np.array_equal(means[0], means[1])


@pytest.mark.parametrize("n", [1, 400, 20_000, 30_000, 109_000, 3_000_000])
def test_a_chunk_holds_bounded_weights_and_fifty_resamples_where_n_is_small(n):
  rows = bootstrap_chunk_rows(n)
  assert 1 <= rows <= 50
  assert rows == 50 if n <= 20_000 else rows * n <= 1024 * 1024 or rows == 1
  chunks = list(BootstrapWeights(n, 3 * rows + 1, 4, cache=False)._chunks())
  assert [len(chunk) for chunk in chunks] == [rows, rows, rows, 1]
