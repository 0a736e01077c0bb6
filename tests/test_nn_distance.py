import numpy as np

import ember
from helpers import check_op, randn


def test_cosine_similarity_module():
    check_op(lambda m, a, b: m.nn.CosineSimilarity(dim=1)(a, b), randn(4, 5), randn(4, 5, seed=1))


def test_pairwise_distance_module():
    check_op(lambda m, a, b: m.nn.PairwiseDistance(p=3.0, keepdim=True)(a, b),
             randn(4, 5), randn(4, 5, seed=1))
    d = ember.nn.PairwiseDistance()(ember.zeros(2, 3), ember.zeros(2, 3))
    assert np.allclose(d.numpy(), np.sqrt(3) * 1e-6, rtol=1e-3)
