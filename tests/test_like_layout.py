"""The ``*_like`` factories' layout, as PyTorch's: ``preserve_format`` (the default) keeps a dense
input's strides (size-1 dims' too) and lays a strided or expanded one out densely in its dims'
order; ``contiguous_format`` is C order; ``channels_last`` puts the channels innermost. Random
permutations, slices and expands against PyTorch, and the seeded random ones' values."""

from __future__ import annotations

import random

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

LIKES = {
    "zeros_like": lambda m, x, **k: m.zeros_like(x, **k),
    "ones_like": lambda m, x, **k: m.ones_like(x, **k),
    "empty_like": lambda m, x, **k: m.empty_like(x, **k),
    "full_like": lambda m, x, **k: m.full_like(x, 2.5, **k),
    "rand_like": lambda m, x, **k: m.rand_like(x, **k),
    "randn_like": lambda m, x, **k: m.randn_like(x, **k),
    "randint_like": lambda m, x, **k: m.randint_like(x, 7, **k),
}


def _input(m, shape, perm, step_dim, expand):
    x = m.arange(float(np.prod(shape))).reshape(shape).permute(perm)
    if step_dim is not None:
        x = x[(slice(None),) * step_dim + (slice(None, None, 2),)]
    if expand is not None:
        dim, n = expand
        x = x.unsqueeze(dim).expand(*[n if i == dim else -1 for i in range(x.dim() + 1)])
    return x


def _layout(fn, m, x, kw):
    y = fn(m, x, **kw)
    return tuple(y.shape), tuple(y.stride()), y.is_contiguous()


@pytest.mark.parametrize("seed", range(4))
def test_like_layout_as_pytorch_random_inputs(seed):
    rng = random.Random(seed)
    checked = 0
    for _ in range(60):
        nd = rng.randint(0, 5)
        sizes = [1, 2, 3, 4] + ([0] if rng.random() < 0.1 else [])
        shape = tuple(rng.choice(sizes) for _ in range(nd))
        perm = list(range(nd))
        rng.shuffle(perm)
        step_dim = rng.randrange(nd) if nd and rng.random() < 0.3 else None
        expand = (rng.randint(0, nd), rng.choice([1, 3])) if rng.random() < 0.2 else None
        fmt = rng.choice([None, None, "preserve_format", "contiguous_format", "channels_last"])
        dt = rng.choice([None, "float64"])
        xt = _input(torch, shape, perm, step_dim, expand)
        xe = _input(ember, shape, perm, step_dim, expand)
        if xe.stride() != xt.stride():
            continue  # (an empty view's own strides still differ: docs/testing.md)
        if fmt == "channels_last" and xt.dim() != 4:
            fmt = None
        for name, fn in LIKES.items():
            kt, ke = {}, {}
            if fmt is not None:
                kt["memory_format"], ke["memory_format"] = getattr(torch, fmt), getattr(ember, fmt)
            if dt is not None and name != "randint_like":
                kt["dtype"], ke["dtype"] = getattr(torch, dt), getattr(ember, dt)
            want = _layout(fn, torch, xt, kt)
            got = _layout(fn, ember, xe, ke)
            assert got == want, (name, tuple(xt.shape), xt.stride(), fmt, dt, got, want)
            checked += 1
    assert checked > 200


@pytest.mark.parametrize("make", [
    lambda m: m.zeros(3, 4, 5).permute(2, 0, 1),
    lambda m: m.zeros(4, 6).t()[:, ::2],
    lambda m: m.zeros(2, 3, 4, 5).permute(0, 2, 3, 1),
    lambda m: m.zeros(6, 20).t(),
    lambda m: m.zeros(3, 1, 4).permute(2, 1, 0),
], ids=["permuted", "strided", "nhwc", "transposed", "size1"])
@pytest.mark.parametrize("name", ["rand_like", "randn_like", "randint_like"])
def test_random_likes_fill_pytorchs_layout_in_memory_order(make, name):
    got = []
    for m in (torch, ember):
        m.manual_seed(5)
        y = LIKES[name](m, make(m))
        got.append((y.stride(), y.numpy().copy()))
    assert got[1][0] == got[0][0]
    assert np.array_equal(got[1][1], got[0][1])


def test_c_ordered_input_keeps_c_order_and_dtype():
    x = ember.ones(2, 3)
    for name, fn in LIKES.items():
        y = fn(ember, x)
        assert y.stride() == (3, 1) and y.is_contiguous(), name
        assert y.dtype == ember.float32, name  # (randint_like too: the input's, as PyTorch's)
