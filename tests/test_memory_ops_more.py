"""Issue 28, the rest of the single ops: ``embedding_bag(mode="max")``, ``take``, ``group_norm``,
``fold``, ``interpolate`` and ``grid_sample``. For each: what its node saves (by identity and
size), values and gradients against PyTorch (edge cases included), float64 gradients against
finite differences, and a peak (tracemalloc) with a bound the old code exceeded."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember.autograd import gradcheck, gradgradcheck
from helpers import peak_bytes

try:
    import torch
except ImportError:  # pragma: no cover - CI installs torch
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed")
MB = 1 << 20
rng = np.random.default_rng(0)


def _saved(t: ember.Tensor) -> tuple:
    return t.grad_fn._saved


def _both(fn: Callable, *arrays: np.ndarray, grad_of: tuple = (0,), rtol: float = 1e-5,
          atol: float = 1e-5) -> None:
    """fn(module, *tensors) on ember and torch: equal values (NaN where torch has NaN) and
    gradients for one random cotangent."""
    if torch is None:
        return
    res = []
    for m in (ember, torch):
        ts = [m.tensor(a, requires_grad=i in grad_of) for i, a in enumerate(arrays)]
        out = fn(m, *ts)
        g = np.random.default_rng(5).standard_normal(tuple(out.shape)).astype(
            out.detach().numpy().dtype)
        out.backward(m.tensor(g))
        res.append([out.detach().numpy()] + [ts[i].grad.numpy() for i in grad_of])
    for e, t in zip(*res):
        assert e.dtype == t.dtype and e.shape == t.shape
        np.testing.assert_allclose(e, t, rtol=rtol, atol=atol, equal_nan=True)


def _step_peak(step: Callable[[], None], *leaves: ember.Tensor) -> int:
    """The peak of ``step`` (a forward+backward) run a second time, leaf gradients cleared."""
    step()
    for t in leaves:
        t.grad = None
    peak = peak_bytes(step)
    for t in leaves:
        t.grad = None
    return peak


# -- embedding_bag(mode="max") ------------------------------------------------------------------

def _bag_max(m, w, idx, off=None, **kw):
    return m.nn.functional.embedding_bag(m.tensor(idx), w, None if off is None else m.tensor(off),
                                         mode="max", **kw)


@needs_torch
@pytest.mark.parametrize("dim", [1, 5, 700])
def test_embedding_bag_max_matches_torch(dim):
    w = rng.standard_normal((40, dim)).astype(np.float32)
    w[rng.random(w.shape) < 0.2] = 0.5  # ties: the first entry wins
    idx2 = rng.integers(0, 40, (9, 6))
    idx2[0] = 3  # a bag of padding only
    flat = rng.integers(0, 40, 60)
    off = np.array([0, 4, 4, 20, 59])  # an empty bag, a bag of one
    for pad in (None, 3, -37):
        _both(lambda m, w, pad=pad: _bag_max(m, w, idx2, padding_idx=pad), w)
        _both(lambda m, w, pad=pad: _bag_max(m, w, flat, off, padding_idx=pad), w)
    _both(lambda m, w: _bag_max(m, w, flat, np.r_[off, 60], include_last_offset=True), w)
    _both(lambda m, w: _bag_max(m, w, idx2.astype(np.int32)), w)
    _both(lambda m, w: _bag_max(m, w, np.zeros(0, np.int64), np.array([0, 0])), w)
    long = rng.integers(0, 40, (3, 300))
    _both(lambda m, w: _bag_max(m, w, long), w)  # bags over blocks
    _both(lambda m, w: _bag_max(m, w, flat, off, max_norm=1.0), w.copy())


@needs_torch
def test_embedding_bag_max_nans_follow_pytorchs_running_max():
    # a NaN first entry stays the maximum; a later NaN is passed over (PyTorch's `>` scan)
    w = rng.standard_normal((12, 700)).astype(np.float32)
    w[rng.random(w.shape) < 0.3] = np.nan
    idx = rng.integers(0, 12, (5, 7))
    _both(lambda m, w: _bag_max(m, w, idx), w)
    flat = rng.integers(0, 12, 900)  # bags longer than a block (700 columns: 374 rows a block)
    _both(lambda m, w: _bag_max(m, w, flat, np.array([0, 1, 400, 899])), w)


def test_embedding_bag_max_gradcheck_and_errors():
    w = ember.randn(10, 3, dtype=ember.float64, requires_grad=True)
    idx = ember.tensor(rng.integers(0, 10, (4, 3)))
    flat, off = ember.tensor([1, 2, 3, 4, 2]), ember.tensor([0, 2, 2])
    for f in (lambda w: F.embedding_bag(idx, w, mode="max"),
              lambda w: F.embedding_bag(flat, w, off, mode="max", padding_idx=2)):
        assert gradcheck(f, (w,)) and gradgradcheck(f, (w,))
    with pytest.raises(NotImplementedError, match="per_sample_weights"):
        F.embedding_bag(idx, w, mode="max", per_sample_weights=ember.ones(4, 3))
    assert F.embedding_bag(idx, w.float(), mode="max").dtype == ember.float32


def test_embedding_bag_max_saves_max_indices_only():
    w = ember.randn(20_000, 256, requires_grad=True)  # 20 MB
    idx = ember.randint(0, 20_000, (2048, 32))  # 65536 entries: their rows would be 64 MB
    out = F.embedding_bag(idx, w, mode="max")
    assert out.grad_fn.name() == "EmbeddingBagBackward0"
    (arg,) = _saved(out)  # PyTorch's max_indices: the weight row of each output element
    assert arg.shape == (2048, 256) and arg.dtype == np.int64
    np.testing.assert_array_equal(out.detach().numpy(), w.detach().numpy()[arg, np.arange(256)])
    # the table's gradient (20 MB) + output and max_indices (6 MB); the old composite gathered
    # the bags' rows (64 MB), their masked copy and their gradient
    peak = _step_peak(lambda: F.embedding_bag(idx, w, mode="max").sum().backward(), w)
    assert peak < 1.6 * w._data.nbytes, peak / MB


# -- take ---------------------------------------------------------------------------------------

@needs_torch
def test_take_matches_torch():
    x = rng.standard_normal((30, 20)).astype(np.float32)
    idx = rng.integers(-600, 600, (40, 7))  # negative positions count from the end; repeats add
    _both(lambda m, x: m.take(x, m.tensor(idx)), x, atol=0)
    _both(lambda m, x: m.take(x.t(), m.tensor(idx)), x, atol=0)  # a non-contiguous source
    _both(lambda m, x: m.take(x[0, 0], m.tensor([0, -1, 0])), x, atol=0)  # a 0-d source
    _both(lambda m, x: m.take(x, m.tensor(np.zeros((0, 3), np.int64))), x, atol=0)
    _both(lambda m, x: m.take(x, m.tensor(5)), x, atol=0)  # a 0-d index
    _both(lambda m, x: m.take(x, m.tensor(idx)), x.astype(np.float64), atol=0)


def test_take_gradcheck_and_gradient_buffer():
    x = ember.randn(4, 5, dtype=ember.float64, requires_grad=True)
    idx = ember.tensor([[0, -1, 7], [7, 19, 3]])
    assert gradcheck(lambda x: ember.take(x, idx), (x,))
    assert gradgradcheck(lambda x: ember.take(x, idx), (x,))
    y = ember.randn(1000, 1000, requires_grad=True)  # 4 MB
    big = ember.randint(-1_000_000, 1_000_000, (250_000,))
    out = ember.take(y, big)
    assert out.grad_fn.name() == "TakeBackward0"
    assert len(_saved(out)) == 1 and _saved(out)[0] is big._data  # the index only
    out.sum().backward()
    # the backward's buffer has the source's shape and becomes .grad as it is (no reshaped view)
    assert y.grad._data.base is None and y.grad.shape == (1000, 1000)
    # the gradient (4 MB; the output is freed before it); the old code also built the
    # wrapped positions (2 MB int64) and handed .grad a reshaped view of a flat sum
    peak = _step_peak(lambda: ember.take(y, big).sum().backward(), y)
    assert peak < 5 * MB, peak / MB
