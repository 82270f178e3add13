"""BootstrapWeights: the resamples do not depend on how they are drawn or kept."""
import numpy as np
import pytest

from autoais.transforms.stats.metrics import BootstrapWeights


@pytest.mark.parametrize("n, samples", [(1, 3), (7, 120), (400, 51)])
def test_resamples_are_one_draw_of_samples_by_n_indexes(n, samples):
  draws = np.random.default_rng(4).integers(0, n, size=(samples, n), dtype=np.int64)
  expected = np.stack([np.bincount(drawn, minlength=n) for drawn in draws]) / n
  values = list(np.random.default_rng(1).random((2, n)))
  means = []
  for cache in (True, False):
    weights = BootstrapWeights(n, samples, 4, cache=cache)
    assert np.array_equal(np.concatenate(list(weights._chunks())), expected)
    means.append(weights.resample_means(values))
  assert np.array_equal(means[0], means[1])
