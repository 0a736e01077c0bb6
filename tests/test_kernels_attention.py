"""The float32 small-attention kernels (ember/_kernels.c ``attention``, ``attention_backward``):
scaled_dot_product_attention without dropout, float mask or grouped heads, with no mask or the
causal one (is_causal, or an equal bool attn_mask), computed per (batch, head) slice by
register-blocked products that skip the causal upper triangle. Against float64 ground truth
(within the NumPy path's own float32 error, not its bits: the products sum in another order),
the NumPy path (kernels off), the same bits at 1 and 2 threads and in each instruction-set
variant, and the paths it leaves alone."""

from __future__ import annotations

import math
import os
import shutil
import sys

import numpy as np
import pytest
from test_kernels import build_isa_variant, run_variant
from test_kernels_f32 import _supports

import ember
import ember.nn.functional as F
from ember import _kernels_loader as L
from helpers import count_calls

needs_kernels = pytest.mark.skipif(L.active is None, reason=f"kernels off: {L.reason}")

SHAPES = [  # (batch dims, L, S, E, Ev)
    ((2, 4), 64, 64, 32, 32),  # the benchmark GPT's heads
    ((3,), 5, 7, 3, 9),
    ((2, 3), 7, 5, 40, 33),
    ((2,), 33, 70, 8, 8),
    ((1, 2), 9, 3, 4, 4),
    ((), 1, 1, 1, 1),
    ((2,), 32, 40, 32, 16),  # (operands taken in place where their sizes need no padding:
    ((2,), 16, 12, 64, 32),  # each mix of the conditions)
]


def _ref(q, k, v, g, scale, causal):
    """out and the three gradients in float64."""
    q, k, v, g = (a.astype(np.float64) for a in (q, k, v, g))
    s = q @ k.swapaxes(-1, -2) * scale
    if causal:
        s = np.where(np.tri(s.shape[-2], s.shape[-1], 0, dtype=bool), s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    gp = g @ v.swapaxes(-1, -2)
    gs = p * (gp - (gp * p).sum(-1, keepdims=True))
    return p @ v, gs @ k * scale, gs.swapaxes(-1, -2) @ q * scale, p.swapaxes(-1, -2) @ g


def _inputs(batch, Lq, S, E, Ev, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(batch + shape, dtype=np.float32)
            for shape in ((Lq, E), (S, E), (S, Ev), (Lq, Ev))]


def _run(q, k, v, g, causal, mask=False):
    """out, grad_q, grad_k, grad_v through F.scaled_dot_product_attention."""
    ts = [ember.tensor(a, requires_grad=True) for a in (q, k, v)]
    kw = {"is_causal": True} if causal and not mask else {}
    if mask:
        kw["attn_mask"] = ember.tensor(np.tri(q.shape[-2], k.shape[-2], 0, dtype=bool))
    out = F.scaled_dot_product_attention(*ts, **kw)
    out.backward(ember.tensor(g))
    return [out.detach().numpy()] + [t.grad.numpy() for t in ts]


@needs_kernels
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("causal", [True, False])
def test_attention_kernel_within_the_numpy_paths_rounding(shape, causal, monkeypatch):
    """Each result's largest error against float64 is at most twice the NumPy path's (plus a
    few float32 ulps of the result's scale), and the kernel ran, forward and backward."""
    q, k, v, g = _inputs(*shape, seed=len(shape[0]) + shape[1])
    calls = count_calls(monkeypatch, L.active, "attention")
    back = count_calls(monkeypatch, L.active, "attention_backward")
    got = _run(q, k, v, g, causal)
    assert calls["n"] == 1 and back["n"] == 1
    with L.disabled():
        plain = _run(q, k, v, g, causal)
    exact = _ref(q, k, v, g, 1 / math.sqrt(q.shape[-1]), causal)
    for a, b, x in zip(got, plain, exact):
        assert a.shape == x.shape and a.dtype == np.float32
        slack = 4 * np.finfo(np.float32).eps * max(np.abs(x).max(), 1e-30)
        assert np.abs(a - x).max() <= 2 * np.abs(b - x).max() + slack


@needs_kernels
def test_a_causal_bool_mask_takes_the_causal_kernel(monkeypatch):
    q, k, v, g = _inputs((2, 3), 12, 12, 8, 8)
    calls = count_calls(monkeypatch, L.active, "attention")
    by_mask = _run(q, k, v, g, True, mask=True)
    by_flag = _run(q, k, v, g, True)
    assert calls["n"] == 2
    for a, b in zip(by_mask, by_flag):
        assert a.tobytes() == b.tobytes()


@needs_kernels
def test_the_gpt_heads_layout_and_its_output_order(monkeypatch):
    """q, k, v as nanoGPT makes them (a split, a view, a transpose): the kernel runs, and the
    output keeps the query's memory order (its transpose(1, 2) is contiguous), as before; the
    gradients keep q's, k's and v's."""
    B, T, H, E = 2, 16, 4, 8
    rng = np.random.default_rng(5)
    x = ember.tensor(rng.standard_normal((B, T, 3 * H * E), dtype=np.float32),
                     requires_grad=True)
    calls = count_calls(monkeypatch, L.active, "attention")

    def heads(x):
        q, k, v = x.split(H * E, dim=2)
        return [t.view(B, T, H, E).transpose(1, 2) for t in (q, k, v)]

    qkv = heads(x)
    seen = []
    for t in qkv:
        t.register_hook(lambda g: seen.append(g.transpose(1, 2).stride()[2:] == (E, 1)))
    y = F.scaled_dot_product_attention(*qkv, is_causal=True)
    assert calls["n"] == 1
    assert y.transpose(1, 2).is_contiguous()
    y.square().sum().backward()
    # the gradients in the heads' order (views of one array laid out as x: below), so the
    # views' backward merges (H, E) without copying
    assert seen == [True] * 3
    got = x.grad.numpy().copy()
    x.grad = None
    with L.disabled():
        F.scaled_dot_product_attention(*heads(x), is_causal=True).square().sum().backward()
    np.testing.assert_allclose(got, x.grad.numpy(), rtol=1e-4, atol=1e-5)


@needs_kernels
def test_same_bits_at_one_and_two_threads():
    q, k, v, g = _inputs((4, 4), 64, 64, 32, 32, seed=9)
    saved = ember.get_num_threads()
    try:
        runs = []
        for n in (1, 2):
            ember.set_num_threads(n)
            runs.append(_run(q, k, v, g, True))
    finally:
        ember.set_num_threads(saved)
    for a, b in zip(*runs):
        assert a.tobytes() == b.tobytes()


@needs_kernels
@pytest.mark.parametrize("case", ["dropout", "float_mask", "other_mask", "float64", "gqa"])
def test_other_calls_keep_the_numpy_path(case, monkeypatch):
    q, k, v, _ = _inputs((2, 4), 6, 6, 4, 4)
    kw: dict = {}
    if case == "dropout":
        kw["dropout_p"] = 0.5
    elif case == "float_mask":
        kw["attn_mask"] = ember.zeros(6, 6)
    elif case == "other_mask":
        kw["attn_mask"] = ember.tensor(np.tri(6, 6, 1, dtype=bool))
    elif case == "float64":
        q, k, v = (a.astype(np.float64) for a in (q, k, v))
    else:
        k, v = k[:, :2], v[:, :2]
        kw["enable_gqa"] = True
    calls = count_calls(monkeypatch, L.active, "attention")
    F.scaled_dot_product_attention(*(ember.tensor(a) for a in (q, k, v)), **kw)
    assert calls["n"] == 0


@needs_kernels
def test_double_backward_through_the_kernels_forward():
    """create_graph: backward runs the recorded formulas from the kernel's saved
    probabilities (a transposed view), as with the NumPy forward."""
    q, k, v, g = _inputs((1, 2), 5, 5, 3, 3, seed=2)

    def second(on):
        ts = [ember.tensor(a.astype(np.float32), requires_grad=True) for a in (q, k, v)]
        with (L.enabled() if on else L.disabled()):
            out = F.scaled_dot_product_attention(*ts, is_causal=True)
            gq, = ember.autograd.grad((out * ember.tensor(g)).sum(), ts[0], create_graph=True)
            gq.square().sum().backward()
        return [t.grad.numpy() for t in ts]

    for a, b in zip(second(True), second(False)):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)


@needs_kernels
def test_bad_arguments_raise():
    z = np.zeros((1, 2, 2), np.float32)
    with pytest.raises(ValueError):
        L.active.attention(z, z, z, z, z, 1, 2, 2, 3, 2, 1.0, True)  # D = 3: sizes disagree
    with pytest.raises(ValueError):  # float64
        L.active.attention(z.astype(np.float64), z, z, z, z, 1, 2, 2, 2, 2, 1.0, True)
    with pytest.raises(ValueError):  # columns not adjacent
        L.active.attention(z.swapaxes(1, 2), z, z, z, z, 1, 2, 2, 2, 2, 1.0, True)
    with pytest.raises(TypeError):  # p float64
        L.active.attention(z, z, z, z, z.astype(np.float64), 1, 2, 2, 2, 2, 1.0, True)


_VARIANT = """
import importlib.util, sys
import numpy as np
spec = importlib.util.spec_from_file_location("ember._kernels", sys.argv[1])
k = importlib.util.module_from_spec(spec)
spec.loader.exec_module(k)
q, kk, v, g = np.load(sys.argv[2])
res = []
for causal in (True, False):
    out = np.empty_like(q)
    pt = np.empty(q.shape[:-2] + (kk.shape[-2], q.shape[-2]), np.float32)
    k.attention(q, kk, v, out, pt, 6, 20, 20, 24, 24, 0.2, causal)
    gq, gk, gv = (np.empty_like(a) for a in (q, kk, v))
    k.attention_backward(q, kk, v, g, pt, gq, gk, gv, 6, 20, 20, 24, 24, 0.2, causal)
    res += [out, pt.swapaxes(-1, -2), gq, gk, gv]
np.save(sys.argv[3], np.stack([r.reshape(6, 20, -1)[..., :20] for r in res]))
"""


@needs_kernels
@pytest.mark.skipif(sys.platform != "linux" or shutil.which("cc") is None
                    or os.uname().machine != "x86_64", reason="needs cc on x86-64 Linux")
@pytest.mark.parametrize("march", ["x86-64", "x86-64-v3"])
def test_same_bits_in_each_isa_variant(march, tmp_path):
    """The extension built for the baseline (the C library's fmaf in the exp) or AVX2 with FMA
    gives the bits of the variant running here, causal and not (sizes that pad: 20 x 24)."""
    if march == "x86-64-v3" and not all(_supports(f) for f in ("avx2", "fma", "bmi2")):
        pytest.skip("this CPU cannot run x86-64-v3 code")
    q, k, v, g = _inputs((2, 3), 20, 20, 24, 24, seed=4)
    np.save(tmp_path / "x.npy", np.stack([q, k, v, g]))
    so = build_isa_variant(march, tmp_path)
    run_variant(_VARIANT, so, tmp_path / "x.npy", tmp_path / "out.npy")
    got = np.load(tmp_path / "out.npy")
    here = []
    for causal in (True, False):
        out, p = L.attention(q, k, v, 0.2, causal)
        grads = L.attention_backward(q, k, v, p, g, 0.2, causal, (True, True, True))
        here += [out, p, *grads]
    want = np.stack([r.reshape(6, 20, -1)[..., :20] for r in here])
    assert got.tobytes() == want.tobytes(), (march, L.active.isa())


@needs_kernels
def test_a_projections_head_split_gets_its_gradient_without_a_concatenation(monkeypatch):
    """q, k, v split from one projection's output: their gradients are views of one new
    array at their places, so the split's backward returns that array (nothing concatenated),
    with the values of the kernels-off run (within rounding)."""
    from ember.ops import joining
    B, T, H, E = 2, 16, 4, 8
    rng = np.random.default_rng(6)
    x = ember.tensor(rng.standard_normal((B, T, 3 * H * E), dtype=np.float32), requires_grad=True)
    w = ember.tensor(rng.standard_normal((3 * H * E, 3 * H * E), dtype=np.float32) * 0.1,
                     requires_grad=True)

    def run():
        q, k, v = F.linear(x, w).split(H * E, dim=2)
        q, k, v = (t.view(B, T, H, E).transpose(1, 2) for t in (q, k, v))
        F.scaled_dot_product_attention(q, k, v, is_causal=True).square().sum().backward()
        out = x.grad.numpy().copy(), w.grad.numpy().copy()
        x.grad = w.grad = None
        return out

    hits = []
    orig = joining._tiled_buffer
    monkeypatch.setattr(joining, "_tiled_buffer", lambda *a: hits.append(orig(*a)) or hits[-1])
    got = run()
    assert len(hits) == 1 and hits[0] is not None
    with L.disabled():
        plain = run()
    assert hits[1] is None  # (the NumPy path's gradients: separate arrays, concatenated)
    for a, b in zip(got, plain):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


def test_tiled_buffer_takes_only_exact_tilings():
    from ember.ops.joining import _tiled_buffer
    whole = np.arange(24, dtype=np.float32).reshape(2, 12)
    pieces = [whole[:, 0:4], whole[:, 4:8], whole[:, 8:12]]
    bounds = ((0, 4), (4, 8), (8, 12))
    got = _tiled_buffer(pieces, (2, 12), 1, bounds)
    assert got is not None and np.shares_memory(got, whole) and got.shape == (2, 12)
    assert _tiled_buffer(pieces[::-1], (2, 12), 1, bounds) is None  # out of place
    assert _tiled_buffer([p.copy() for p in pieces], (2, 12), 1, bounds) is None
    assert _tiled_buffer([whole[:, 0:4], whole[:, 4:8], whole[:, 8:11]], (2, 12), 1,
                         ((0, 4), (4, 8), (8, 11))) is None
