"""CPU autocast's bfloat16 fast paths (issue 29, "Mixed precision on the CPU"): the ops of the
MLP step take bit-level routes on bfloat16 instead of ml_dtypes' scalar loops, with the same
results as those loops and as PyTorch (ReLU through the bits, float16's too; NaNs stay NaN, as
PyTorch's)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import ember
from ember.ops import pointwise_piecewise as pwp
from helpers import HAVE_TORCH, torch

BF16 = np.dtype(ml_dtypes.bfloat16)
ALL_BITS = np.arange(1 << 16, dtype=np.uint16)  # every bfloat16 value, NaNs and -0.0 included


def _bits(t):
    return t.detach().numpy().view(np.uint16)


@pytest.mark.parametrize("dt", [BF16, np.dtype(np.float16)], ids=["bfloat16", "float16"])
def test_relu_half_is_maximum_on_every_value(dt):
    x = ALL_BITS.view(dt)
    ref = np.maximum(np.zeros((), dt), x)  # NumPy's/ml_dtypes' loop: the reference of the bits
    # but -0.0 stays -0.0, as PyTorch's relu (NumPy's float16 maximum(0, -0.0) gives +0.0)
    ref = np.where(ALL_BITS == 0x8000, ALL_BITS, ref.view(np.uint16)).view(dt)
    np.testing.assert_array_equal(pwp._relu_half(x).view(np.uint16), ref.view(np.uint16))
    out = ref
    g = np.random.default_rng(0).standard_normal(out.shape).astype(dt)
    g[::7] = np.float32("nan")  # NaN gradients pass or are dropped bit for bit, not multiplied
    keep = np.where(~(out <= 0), g, np.zeros((), dt))
    np.testing.assert_array_equal(pwp._relu_half_backward(g, out).view(np.uint16),
                                  keep.view(np.uint16))
    assert pwp._relu_half(ALL_BITS.view(np.int16)) is None  # (other 2-byte dtypes: NumPy's)


def test_relu_half_tensor_takes_the_bit_path(monkeypatch):
    calls = []
    fwd, bwd = pwp._relu_half, pwp._relu_half_backward
    monkeypatch.setattr(pwp, "_relu_half", lambda x: calls.append("f") or fwd(x))
    monkeypatch.setattr(pwp, "_relu_half_backward",
                        lambda g, o: calls.append("b") or bwd(g, o))
    for dt in (ember.bfloat16, ember.float16):
        x = ember.randn(300, 500).to(dt).requires_grad_()
        y = ember.relu(x)
        y.sum().backward()
        assert y.dtype is dt and x.grad.dtype is dt
        xs = x.detach().float().numpy()
        np.testing.assert_array_equal(y.float().detach().numpy(), np.maximum(xs, 0))
        np.testing.assert_array_equal(x.grad.float().numpy(), (xs > 0).astype(np.float32))
    assert calls == ["f", "b"] * 2


@pytest.mark.skipif(not HAVE_TORCH, reason="needs PyTorch")
@pytest.mark.parametrize("name", ["bfloat16", "float16"])
def test_relu_half_like_torch_on_every_value(name):
    x = ember.tensor(ALL_BITS.view(np.int16)).view(getattr(ember, name)).requires_grad_()
    tx = torch.tensor(ALL_BITS.view(np.int16)).view(getattr(torch, name)).requires_grad_()
    y, ty = ember.relu(x), torch.relu(tx)
    a, b = _bits(y), ty.detach().view(torch.int16).numpy().view(np.uint16)
    nan = np.isnan(y.detach().float().numpy())
    np.testing.assert_array_equal(nan, np.isnan(ty.detach().float().numpy()))
    # the numbers bit for bit (-0.0 stays -0.0); NaN bits are PyTorch's vector loop's business
    np.testing.assert_array_equal(a[~nan], b[~nan])
    g = np.random.default_rng(1).standard_normal(1 << 16).astype(np.float32)
    y.backward(ember.tensor(g).to(getattr(ember, name)))
    ty.backward(torch.tensor(g).to(getattr(torch, name)))
    np.testing.assert_array_equal(_bits(x.grad), tx.grad.view(torch.int16).numpy().view(np.uint16))


def _mlp(m, dims):
    layers = []
    for i in range(len(dims) - 1):
        layers.append(m.nn.Linear(dims[i], dims[i + 1]))
        if i < len(dims) - 2:
            layers.append(m.nn.ReLU())
    return m.nn.Sequential(*layers)


@pytest.mark.skipif(not HAVE_TORCH, reason="needs PyTorch")
def test_mlp_adamw_steps_under_autocast_like_torch(monkeypatch):
    """The issue's step (Linear/ReLU MLP, cross_entropy, AdamW on float32 parameters), smaller:
    the loss and every float32 gradient as PyTorch's under the same autocast. The bfloat16
    roundings are the same; the GEMMs may sum in another order than oneDNN's, so a few
    elements may differ by a bfloat16 step."""
    relu_calls = []
    fwd = pwp._relu_half
    monkeypatch.setattr(pwp, "_relu_half", lambda x: relu_calls.append(1) or fwd(x))
    dims = (64, 128, 64, 10)
    ember.manual_seed(0)
    em, tm = _mlp(ember, dims), _mlp(torch, dims)
    with torch.no_grad():
        for p, tp in zip(em.parameters(), tm.parameters(), strict=True):
            tp.copy_(torch.from_numpy(p.detach().numpy().copy()))
    rng = np.random.default_rng(0)
    x = rng.standard_normal((32, dims[0])).astype(np.float32)
    y = rng.integers(0, dims[-1], 32)
    eopt = ember.optim.AdamW(em.parameters(), lr=1e-3)
    topt = torch.optim.AdamW(tm.parameters(), lr=1e-3)
    for step in range(3):
        eopt.zero_grad()
        topt.zero_grad()
        with ember.autocast("cpu", dtype=ember.bfloat16):
            out = em(ember.tensor(x))
            loss = ember.nn.functional.cross_entropy(out, ember.tensor(y))
        with torch.autocast("cpu", dtype=torch.bfloat16):
            tout = tm(torch.tensor(x))
            tloss = torch.nn.functional.cross_entropy(tout, torch.tensor(y))
        assert out.dtype is ember.bfloat16 and loss.dtype is ember.float32
        loss.backward()
        tloss.backward()
        # step 0 from the same parameters: (almost) every bfloat16 output and gradient bit for
        # bit; later steps start from parameters that may differ by AdamW's first, sign-like
        # steps wherever a tiny gradient differed, so they are compared within tolerances
        first = step == 0
        np.testing.assert_allclose(loss.item(), tloss.item(), rtol=1e-5 if first else 1e-3)
        a, b = out.detach().float().numpy(), tout.detach().float().numpy()
        assert not first or (a == b).mean() > 0.95
        np.testing.assert_allclose(a, b, rtol=2 ** -7, atol=1e-3 if first else 1e-2)
        for (name, p), tp in zip(em.named_parameters(), tm.parameters(), strict=True):
            g, tg = p.grad.numpy(), tp.grad.numpy()
            assert g.dtype == np.float32, name
            assert not first or (g == tg).mean() > 0.95, name
            scale = np.abs(tg).max()
            np.testing.assert_allclose(g, tg, rtol=2 ** -6, atol=(2e-2 if first else 5e-2) * scale,
                                       err_msg=name)
        eopt.step()
        topt.step()
    assert len(relu_calls) == 2 * 3  # the bit path ran in every step


def test_bench_autocast_mlp_runs_and_counts_the_casts():
    """bench/autocast_mlp.py's step in both configurations; with the eager kernels on, the 38
    passes of the casts a step that docs/benchmarks.md ("CPU autocast") accounts for (43 casts,
    five of them the float32 values a half_round kept; more would be a regression), or 27 where
    the CPU multiplies bfloat16 itself (``bf16_gemm``: no operand is widened for sgemm)."""
    import ember._kernels_loader as L
    from bench import autocast_mlp

    step = autocast_mlp.make_step(ember)
    best = autocast_mlp.interleaved(step, 1)
    assert set(best) == {"float32", "bf16 autocast"} and all(v > 0 for v in best.values())
    if L.active is not None:
        direct = L.bf16_gemm_ready(ember.bfloat16.np)
        assert autocast_mlp.count_casts(step) == (27 if direct else 38)
