"""torch.special's incomplete gamma, Hurwitz zeta and Bessel J/Y/K functions, torch.poisson,
torch.igamma/igammac and Tensor.as_subclass, against PyTorch (values over grids with edge values,
dtypes, gradients) and mpmath where PyTorch's own kernels are less accurate than ember's."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

import ember
from ember import _special as S
from helpers import HAVE_TORCH

torch = pytest.importorskip("torch") if HAVE_TORCH else None
pytestmark = pytest.mark.skipif(not HAVE_TORCH, reason="needs PyTorch as the reference")

INF, NAN = math.inf, math.nan
GAMMA_VALS = [0, 1e-300, 1e-5, 0.1, 0.5, 1, 1.5, 2, 5, 9.99, 10, 30, 100, 1e3, INF, NAN, -1, -0.5]
BESSEL_X = np.concatenate([[0.0, -0.0, 1e-300, 1e-10, 1e-3, 0.5, 1, 2, 4, 4.0001, 5, 5.0001, 8,
                            24.99, 25, 25.01, 30, 100, 1e3, 1e5, INF, -INF, NAN, -1, -3.5, -30],
                           np.linspace(0.01, 40, 300)])


def _same(e: np.ndarray, t: np.ndarray, rtol: float, atol: float = 0.0) -> None:
    both_nan = np.isnan(e) & np.isnan(t)
    with np.errstate(all="ignore"):
        close = (e == t) | (np.abs(e - t) <= atol + rtol * np.abs(t))
    bad = ~(both_nan | close)
    assert not bad.any(), list(zip(np.where(bad)[0][:5], e[bad][:5], t[bad][:5]))


@pytest.mark.parametrize("name", ["gammainc", "gammaincc"])
def test_incomplete_gamma_matches_pytorch_over_grid(name):
    a, x = np.array(list(itertools.product(GAMMA_VALS, GAMMA_VALS))).T
    e = getattr(ember.special, name)(ember.tensor(a), ember.tensor(x))
    t = getattr(torch.special, name)(torch.tensor(a), torch.tensor(x))
    assert e.dtype == ember.float64
    # PyTorch's float64 kernel is itself ~1e-9 off at a = x >= 30 (mpmath agrees with ember)
    _same(e.numpy(), t.numpy(), rtol=1e-9, atol=1e-300)
    small = (a < 10) & (x < 10)
    _same(e.numpy()[small], t.numpy()[small], rtol=2e-12, atol=1e-300)


def test_incomplete_gamma_large_a_against_mpmath():
    mpmath = pytest.importorskip("mpmath")
    checked = 0
    for a in [10.0, 30.0, 100.0, 1000.0, 1e4]:
        for f in [1e-6, 0.1, 0.5, 0.9, 0.99, 1.0, 1.01, 1.1, 2.0]:
            x = a * f
            try:
                with mpmath.workdps(40):
                    p = float(mpmath.gammainc(a, 0, x, regularized=True))
                    q = float(mpmath.gammainc(a, x, mpmath.inf, regularized=True))
            except mpmath.libmp.NoConvergence:
                continue
            for got, want in ((S.gammainc(np.array([a]), np.array([x]))[0], p),
                              (S.gammaincc(np.array([a]), np.array([x]))[0], q)):
                assert abs(got - want) <= 1e-12 * abs(want) + 1e-300, (a, f, got, want)
            checked += 1
    assert checked >= 40


def test_incomplete_gamma_float32_dtype_and_gradients():
    a = ember.tensor([0.5, 2.0, 7.0])
    x = ember.tensor([0.3, 2.5, 4.0], requires_grad=True)
    y = ember.special.gammainc(a, x)
    assert y.dtype == ember.float32
    ta, tx = torch.tensor([0.5, 2.0, 7.0]), torch.tensor([0.3, 2.5, 4.0], requires_grad=True)
    np.testing.assert_allclose(y.detach().numpy(), torch.special.gammainc(ta, tx).detach(),
                               rtol=3e-7)
    for name in ("gammainc", "gammaincc"):
        x64 = ember.tensor([0.3, 2.5, 4.0, 40.0], dtype=ember.float64, requires_grad=True)
        a64 = ember.tensor([0.5, 2.0, 7.0, 30.0], dtype=ember.float64)
        fn = getattr(ember.special, name)
        assert ember.autograd.gradcheck(lambda x, fn=fn, a=a64: fn(a, x), (x64,))
        tx64 = torch.tensor([0.3, 2.5, 4.0, 40.0], dtype=torch.float64, requires_grad=True)
        getattr(ember.special, name)(a64, x64).sum().backward()
        getattr(torch.special, name)(torch.tensor(a64.numpy()), tx64).sum().backward()
        np.testing.assert_allclose(x64.grad.numpy(), tx64.grad.numpy(), rtol=1e-12)
    # PyTorch has no derivative in a: backward raises
    a_req = ember.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="not implemented"):
        ember.special.gammainc(a_req, ember.tensor([1.0, 1.0])).sum().backward()


def test_igamma_namespace_methods_and_refusals():
    a, x = ember.tensor([1.0, 2.0]), ember.tensor([1.0, 3.0])
    np.testing.assert_allclose(ember.igamma(a, x).numpy(), a.igamma(x).numpy())
    np.testing.assert_allclose(ember.igammac(a, x).numpy(), 1 - a.igamma(x).numpy(), rtol=1e-6)
    b = a.clone()
    b.igammac_(x)
    np.testing.assert_allclose(b.numpy(), ember.igammac(a, x).numpy())
    with pytest.raises(RuntimeError):
        ember.special.gammainc(ember.tensor([1, 2]), ember.tensor([1, 2]))
    with pytest.raises(TypeError):
        torch.special.gammainc(2.0, torch.tensor([1.0]))
    with pytest.raises(TypeError):
        ember.special.gammainc(2.0, ember.tensor([1.0]))


def test_zeta_matches_pytorch_over_grid():
    xv = [1, 1.0001, 1.5, 2, 3, 4.5, 10, 50, 100, INF, NAN, 0.5, -1, -2, 0]
    qv = [1e-5, 0.1, 0.5, 1, 2, 3.3, 8.9, 9, 20, 1e6, INF, NAN, 0, -1, -2.5, -0.5]
    x, q = np.array(list(itertools.product(xv, qv))).T
    e = ember.special.zeta(ember.tensor(x), ember.tensor(q)).numpy()
    t = torch.special.zeta(torch.tensor(x), torch.tensor(q)).numpy()
    _same(e, t, rtol=1e-12)


def test_zeta_numbers_dtypes_and_gradient():
    q = ember.tensor([1.0, 2.5, 7.0], requires_grad=True)
    tq = torch.tensor([1.0, 2.5, 7.0], requires_grad=True)
    z, tz = ember.special.zeta(2.0, q), torch.special.zeta(2.0, tq)
    assert z.dtype == ember.float32
    np.testing.assert_allclose(z.detach().numpy(), tz.detach().numpy(), rtol=1e-6)
    z.sum().backward()
    tz.sum().backward()
    np.testing.assert_allclose(q.grad.numpy(), tq.grad.numpy(), rtol=1e-6)
    r = ember.special.zeta(ember.tensor([2, 3]), 1)
    assert r.dtype == torch_dtype_name(torch.special.zeta(torch.tensor([2, 3]), 1))
    q64 = ember.tensor([0.7, 3.0], dtype=ember.float64, requires_grad=True)
    assert ember.autograd.gradcheck(lambda q: ember.special.zeta(3.5, q), (q64,))
    x_req = ember.tensor([2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="not implemented"):
        ember.special.zeta(x_req, ember.tensor([1.0])).sum().backward()


def torch_dtype_name(t):
    return getattr(ember, str(t.dtype).split(".")[1])


BESSEL = ["bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "modified_bessel_k0",
          "modified_bessel_k1", "scaled_modified_bessel_k0", "scaled_modified_bessel_k1",
          "airy_ai", "modified_bessel_i0", "modified_bessel_i1"]


@pytest.mark.parametrize("name", BESSEL)
def test_bessel_matches_pytorch(name):
    e = getattr(ember.special, name)(ember.tensor(BESSEL_X)).numpy()
    t = getattr(torch.special, name)(torch.tensor(BESSEL_X)).numpy()
    if name.startswith("bessel") or name == "airy_ai":
        # PyTorch's float64 J, Y and Ai kernels are accurate to ~5e-7 absolute only (mpmath below)
        _same(e, t, rtol=1e-6, atol=1e-6)
    else:
        _same(e, t, rtol=1e-12, atol=1e-300)
    e32 = getattr(ember.special, name)(ember.tensor(BESSEL_X, dtype=ember.float32))
    t32 = getattr(torch.special, name)(torch.tensor(BESSEL_X, dtype=torch.float32))
    assert e32.dtype == ember.float32
    keep = np.abs(BESSEL_X) < 1e3  # beyond, PyTorch's float32 J/Y lose digits (ember: float64)
    _same(e32.numpy()[keep], t32.numpy()[keep], rtol=1e-5, atol=2e-6)
    ei = getattr(ember.special, name)(ember.tensor([1, 2]))
    assert ei.dtype == ember.float32
    # no gradient, as in PyTorch
    r = getattr(ember.special, name)(ember.tensor([1.5], requires_grad=True))
    assert not r.requires_grad
    assert not getattr(torch.special, name)(torch.tensor([1.5], requires_grad=True)).requires_grad


@pytest.mark.parametrize("name,order", [("bessel_j0", 0), ("bessel_j1", 1), ("bessel_y0", 0),
                                        ("bessel_y1", 1)])
def test_bessel_j_y_against_mpmath(name, order):
    mpmath = pytest.importorskip("mpmath")
    xs = np.concatenate([[1e-10, 1e-3, 0.5, 4.0, 5.0, 24.9, 25.1, 1e3, 1e5],
                         np.linspace(0.05, 40, 120)])
    f = mpmath.besselj if name[7] == "j" else mpmath.bessely
    with mpmath.workdps(30):
        want = np.array([float(f(order, mpmath.mpf(float(x)))) for x in xs])
    got = getattr(S, name)(xs)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=5e-15)


def test_airy_ai_against_mpmath():
    mpmath = pytest.importorskip("mpmath")
    xs = np.concatenate([[0.0, 1e-10, 2.0, 2.0001, -2.5, -2.5001, 5.0, 20.0, 100.0, -10.4, -10.5,
                          -20.0, -100.0], np.linspace(-15, 15, 151)])
    with mpmath.workdps(30):
        want = np.array([float(mpmath.airyai(mpmath.mpf(float(x)))) for x in xs])
    np.testing.assert_allclose(S.airy_ai(xs), want, rtol=1e-12, atol=1e-15)


def test_poisson_draws_statistics_grad_and_errors():
    ember.manual_seed(0)
    rates = ember.tensor([0.5, 3.0, 40.0]).expand(100000, 3).contiguous()
    draws = ember.poisson(rates)
    assert draws.dtype == ember.float32 and draws.shape == rates.shape
    np.testing.assert_allclose(draws.mean(0).numpy(), [0.5, 3.0, 40.0], rtol=0.02)
    np.testing.assert_allclose(draws.var(0).numpy(), [0.5, 3.0, 40.0], rtol=0.05)
    assert (draws.numpy() == np.round(draws.numpy())).all()
    r = ember.tensor([1.0, 2.0], requires_grad=True)
    y = ember.poisson(r)
    assert y.requires_grad
    y.sum().backward()
    assert r.grad.tolist() == [0.0, 0.0]
    with pytest.raises(RuntimeError, match="non-negative"):
        ember.poisson(ember.tensor([-1.0]))
    with pytest.raises(NotImplementedError):
        ember.poisson(ember.tensor([1, 2]))
    g = ember.Generator().manual_seed(3)
    a = ember.poisson(ember.full((5,), 4.0), generator=g)
    b = ember.poisson(ember.full((5,), 4.0), generator=ember.Generator().manual_seed(3))
    assert a.tolist() == b.tolist()


def test_as_subclass_keeps_data_and_graph():
    class Marked(ember.Tensor):
        pass

    x = ember.ones(2, requires_grad=True)
    y = (x * 2).as_subclass(Marked)
    assert type(y) is Marked and y.requires_grad and not y.is_leaf
    z = x.as_subclass(Marked)
    z.sum().backward()
    assert x.grad.tolist() == [1.0, 1.0]
    w = ember.zeros(3).as_subclass(Marked)
    w.add_(1)
    assert type(w) is Marked and not w.requires_grad
    with pytest.raises(TypeError, match="inherit from Tensor"):
        x.as_subclass(int)
