"""nn.init: distributions (bounds, moments), gains and fans vs PyTorch, generators, errors, and
the layers' default initialisation."""

import math
import warnings

import numpy as np
import pytest

import ember
from ember import nn
from ember.nn import init
from helpers import HAVE_TORCH

if HAVE_TORCH:
    import torch

needs_torch = pytest.mark.skipif(not HAVE_TORCH, reason="parity test needs torch")


def _np(t):
    return t.detach().numpy()


@needs_torch
@pytest.mark.parametrize("nl,param", [("linear", None), ("conv2d", None), ("sigmoid", None),
                                      ("tanh", None), ("relu", None), ("leaky_relu", None),
                                      ("leaky_relu", 0.2), ("leaky_relu", math.sqrt(5)),
                                      ("selu", None)])
def test_calculate_gain_matches_torch(nl, param):
    assert init.calculate_gain(nl, param) == torch.nn.init.calculate_gain(nl, param)


def test_calculate_gain_errors():
    with pytest.raises(ValueError, match="Unsupported nonlinearity gelu"):
        init.calculate_gain("gelu")
    with pytest.raises(ValueError, match="negative_slope True not a valid number"):
        init.calculate_gain("leaky_relu", True)


@needs_torch
@pytest.mark.parametrize("shape", [(3, 5), (8, 4, 3, 3), (6, 2, 5), (2, 3, 1, 1, 4)])
def test_fans_match_torch(shape):
    e = init._calculate_fan_in_and_fan_out(ember.empty(*shape))
    t = torch.nn.init._calculate_fan_in_and_fan_out(torch.empty(*shape))
    assert e == t
    with pytest.raises(ValueError, match="fewer than 2 dimensions"):
        init._calculate_fan_in_and_fan_out(ember.empty(4))


def test_uniform_normal_constant():
    t = ember.empty(200, 300)
    assert init.uniform_(t, -2.0, 3.0) is t
    a = _np(t)
    assert a.min() >= -2.0 and a.max() < 3.0
    assert abs(a.mean() - 0.5) < 0.03 and abs(a.var() - 25 / 12) < 0.05
    init.normal_(t, 1.0, 0.5)
    a = _np(t)
    assert abs(a.mean() - 1.0) < 0.01 and abs(a.std() - 0.5) < 0.01
    assert t.dtype == ember.float32
    init.constant_(t, 0.3)
    assert np.all(_np(t) == np.float32(0.3))
    init.ones_(t)
    assert np.all(_np(t) == 1)
    init.zeros_(t)
    assert not _np(t).any()


def test_trunc_normal():
    t = ember.empty(300, 300)
    init.trunc_normal_(t, mean=0.5, std=1.0, a=-1.0, b=2.0)
    a = _np(t)
    assert a.min() >= -1.0 and a.max() <= 2.0
    # moments of N(0.5, 1) truncated to [-1, 2]: symmetric around 0.5
    alpha, beta = -1.5, 1.5
    pdf = lambda z: math.exp(-z * z / 2) / math.sqrt(2 * math.pi)  # noqa: E731
    z = math.erf(beta / math.sqrt(2))
    var = 1 - (beta * pdf(beta) - alpha * pdf(alpha)) / z
    assert abs(a.mean() - 0.5) < 0.01
    assert abs(a.var() - var) < 0.01
    t2 = ember.empty(1000)
    init.trunc_normal_(t2, std=0.02)  # absolute bounds [-2, 2]: effectively untruncated
    assert abs(_np(t2).std() - 0.02) < 0.002


def test_xavier_and_kaiming_bounds_and_std():
    t = ember.empty(400, 300)
    init.xavier_uniform_(t, gain=2.0)
    bound = 2.0 * math.sqrt(6 / 700)
    a = _np(t)
    assert np.abs(a).max() <= bound and np.abs(a).max() > 0.98 * bound
    init.xavier_normal_(t)
    assert abs(_np(t).std() - math.sqrt(2 / 700)) < 0.002
    init.kaiming_uniform_(t, a=math.sqrt(5))
    bound = math.sqrt(6 / ((1 + 5) * 300))  # = 1/sqrt(fan_in)
    assert np.abs(_np(t)).max() <= bound and np.abs(_np(t)).max() > 0.98 * bound
    init.kaiming_normal_(t, mode="fan_out", nonlinearity="relu")
    assert abs(_np(t).std() - math.sqrt(2 / 400)) < 0.002
    conv = ember.empty(64, 16, 3, 3)
    init.kaiming_normal_(conv)
    assert abs(_np(conv).std() - math.sqrt(2 / (1 + 0.01**2) / 144)) < 0.004
    with pytest.raises(ValueError, match="Mode fan_avg not supported"):
        init.kaiming_uniform_(t, mode="fan_avg")
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        init.kaiming_uniform_(ember.empty(0, 3))
    assert "zero-element" in str(w[0].message)


def test_eye_dirac_orthogonal_sparse():
    e = ember.empty(3, 5)
    init.eye_(e)
    np.testing.assert_array_equal(_np(e), np.eye(3, 5))
    with pytest.raises(ValueError, match="Only tensors with 2 dimensions"):
        init.eye_(ember.empty(2, 2, 2))
    w = ember.empty(4, 2, 3, 3)
    init.dirac_(w, groups=2)
    a = _np(w)
    assert a.sum() == 4 and a[0, 0, 1, 1] == 1 and a[1, 1, 1, 1] == 1 and a[2, 0, 1, 1] == 1
    if HAVE_TORCH:
        tw = torch.empty(4, 2, 3, 3)
        torch.nn.init.dirac_(tw, groups=2)
        np.testing.assert_array_equal(a, tw.numpy())
    for shape in [(6, 4), (4, 6), (5, 2, 3)]:
        q = ember.empty(*shape)
        init.orthogonal_(q, gain=1.5)
        m = _np(q).reshape(shape[0], -1).astype(np.float64)
        gram = m @ m.T if shape[0] <= m.shape[1] else m.T @ m
        np.testing.assert_allclose(gram, 2.25 * np.eye(gram.shape[0]), atol=1e-5)
    with pytest.raises(ValueError, match="2 or more dimensions"):
        init.orthogonal_(ember.empty(3))
    s = ember.empty(10, 40)
    init.sparse_(s, sparsity=0.3, std=0.5)
    zeros_per_col = (_np(s) == 0).sum(0)
    assert (zeros_per_col == 3).all()


def test_generator_reproducibility_and_no_grad():
    g = ember.Generator().manual_seed(7)
    a = init.normal_(ember.empty(5), generator=g)
    g.manual_seed(7)
    b = init.normal_(ember.empty(5), generator=g)
    np.testing.assert_array_equal(_np(a), _np(b))
    ember.manual_seed(1)
    c = init.uniform_(ember.empty(5))
    ember.manual_seed(1)
    d = init.uniform_(ember.empty(5))
    np.testing.assert_array_equal(_np(c), _np(d))
    p = nn.Parameter(ember.zeros(3, 4))
    init.xavier_uniform_(p)  # a leaf that requires grad: filled in place, no graph
    assert p.grad_fn is None and p.requires_grad and isinstance(p, nn.Parameter)


def test_deprecated_aliases_warn():
    with pytest.warns(FutureWarning, match="deprecated in favor of `nn.init.normal_`"):
        init.normal(ember.empty(2))


def test_layer_default_inits_follow_torch():
    ember.manual_seed(0)
    lin = nn.Linear(50, 400)
    bound = 1 / math.sqrt(50)
    w, b = _np(lin.weight), _np(lin.bias)
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.97 * bound
    assert abs(w.std() - bound / math.sqrt(3)) < 0.003
    assert np.abs(b).max() <= bound
    bil = nn.Bilinear(8, 3, 100)
    assert np.abs(_np(bil.weight)).max() <= 1 / math.sqrt(8)
    assert np.abs(_np(bil.weight)).max() > 0.95 / math.sqrt(8)
    emb = nn.Embedding(1000, 50)
    assert abs(_np(emb.weight).std() - 1.0) < 0.02
    pr = nn.PReLU(3, init=0.1)
    np.testing.assert_allclose(_np(pr.weight), 0.1)
    d = nn.Linear(4, 3, dtype=ember.float64)
    assert d.weight.dtype == ember.float64 and d.bias.dtype == ember.float64
    assert nn.Linear(4, 3, bias=False).bias is None
