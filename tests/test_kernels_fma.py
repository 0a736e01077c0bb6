"""The eager kernels that compute by fma (correctly rounded in every instruction-set variant:
the CLONES_FMA kernels of ember/_kernels.c): the float32 erfinv kernel and its backward ("erfinv
in float64 arithmetic"), within 1 ulp of float64 ground truth over a dense sweep of (-1, 1)
(every 64th float32: 33M points), PyTorch's special values, and the op taking it; and with
them the float32 softmax family, whose exp (k_expf_fma) is reduced and evaluated by fmaf, and
normal_'s Box-Muller (bit for bit PyTorch's: tests/test_random_streams.py). All:
the same bits at 1 and 2 threads and in each instruction-set variant this machine runs."""

from __future__ import annotations

import os
import shutil
import sys

import numpy as np
import pytest
from test_kernels import build_isa_variant, run_variant, ulps
from test_kernels_f32 import _supports

import ember
from ember import _kernels_loader as L
from ember import _special
from helpers import torch

needs_kernels = pytest.mark.skipif(L.active is None, reason=f"kernels off: {L.reason}")


def _reference(x: np.ndarray) -> np.ndarray:
    """erfinv in float64 by the NumPy path (Halley steps on erf: a few float64 ulp)."""
    saved = _special.USE_SCIPY
    _special.USE_SCIPY = False
    try:
        return _special.erfinv(x.astype(np.float64))
    finally:
        _special.USE_SCIPY = saved


@pytest.fixture(scope="module")
def sweep() -> np.ndarray:
    bits = np.arange(0, int(np.float32(1.0).view(np.uint32)), 64, dtype=np.uint32)
    pos = bits.view(np.float32)
    edge = np.nextafter(np.float32(1), np.float32(0)) - np.arange(4096, dtype=np.float32) * 2**-24
    return np.concatenate([pos, -pos[::7], edge, -edge]).astype(np.float32)


@needs_kernels
def test_erfinv_is_within_one_ulp_over_a_dense_sweep(sweep) -> None:
    x = sweep
    got = L.erfinv(x)
    assert got.dtype == np.float32
    # measured: 0.507 ulp at worst (the fits' 5e-10 relative error on one rounding)
    assert ulps(got, _reference(x)) < 0.51


@needs_kernels
def test_erfinv_backward_is_within_one_ulp(sweep) -> None:
    y = L.erfinv(sweep[::16].copy())
    g = np.random.default_rng(4).standard_normal(y.size).astype(np.float32)
    exact = g.astype(np.float64) * (np.sqrt(np.pi) / 2) * np.exp(y.astype(np.float64) ** 2)
    assert ulps(L.erfinv_backward(y, g), exact) < 0.51


@needs_kernels
def test_erfinv_special_values() -> None:
    x = np.float32([1, -1, 1.0000001, -2, np.inf, -np.inf, np.nan, 0, -0.0, 1e-45, -1e-45,
                    2**-126])
    got = L.erfinv(x)
    np.testing.assert_array_equal(got[:2], [np.inf, -np.inf])
    assert np.isnan(got[2:7]).all()
    assert got[7] == 0 and not np.signbit(got[7]) and np.signbit(got[8])
    # erfinv(x) = sqrt(pi)/2 x (1 + ...) for tiny x: subnormal results round as float64's
    np.testing.assert_array_equal(got[9:], (x[9:].astype(np.float64) * (np.sqrt(np.pi) / 2))
                                  .astype(np.float32))
    gb = L.erfinv_backward(np.float32([np.inf, -np.inf, np.nan, 0.0]), np.float32([1, 1, 1, 2]))
    assert gb[0] == np.inf and gb[1] == np.inf and np.isnan(gb[2])
    assert gb[3] == np.float32(np.sqrt(np.pi))


@needs_kernels
def test_fma_kernels_give_the_same_bits_at_1_and_2_threads(sweep) -> None:
    x = sweep[: 1 << 22]
    g = np.ones_like(x)
    before = ember.get_num_threads()
    try:
        res = []
        for n in (1, 2):
            ember.set_num_threads(n)
            y = L.erfinv(x)
            res.append([y, L.erfinv_backward(y, g), *_rows(x).values()])
    finally:
        ember.set_num_threads(before)
    for a, b in zip(*res):
        assert a.tobytes() == b.tobytes()


_VARIANT = """
import importlib.util, sys
import numpy as np
spec = importlib.util.spec_from_file_location("ember._kernels", sys.argv[1])
k = importlib.util.module_from_spec(spec)
spec.loader.exec_module(k)
x = np.load(sys.argv[2])
y, gy = np.empty_like(x), np.empty_like(x)
k.erfinv(x, y)
k.erfinv_backward(y, x, gy)
rows = (x[: 1 << 20] * 40).reshape(256, -1)
sm, lsm, lb = np.empty_like(rows), np.empty_like(rows), np.empty_like(rows)
p = np.empty_like(rows)
sb, lbp = np.empty_like(rows), np.empty_like(rows)
k.softmax(rows, sm, rows.shape[1])
k.log_softmax(rows, lsm, rows.shape[1])
k.log_softmax_backward(lsm, rows, lb, rows.shape[1])
k.log_softmax_backward(rows * np.float32(0.05), rows, lbp, rows.shape[1])
k.softmax_backward(sm, rows, sb, rows.shape[1])
lse0, lse1 = np.empty((256, 1), np.float32), np.empty((256, 1), np.float32)
k.softmax_lse(rows, p, lse0, rows.shape[1])
k.softmax_lse(rows, None, lse1, rows.shape[1])
lse = np.concatenate([lse0, lse1], 1)
u = np.abs(x[: 1 << 20]) % np.float32(1)
bm = np.empty_like(u)
k.box_muller16(u, bm, 0.5, 2.0, 1.0)
np.save(sys.argv[3], np.stack([y, gy]))
np.save(sys.argv[4], np.stack([sm, lsm, lb, p, sb, lbp]))
np.save(sys.argv[5], lse)
np.save(sys.argv[6], bm)
"""


def _rows(x: np.ndarray) -> dict[str, np.ndarray]:
    """The softmax family's float32 kernels on 256 rows of 4096 (x * 40: exp's whole range)."""
    rows = (x[: 1 << 20] * 40).reshape(256, -1)
    lsm = L.softmax(rows, log=True)
    sm = L.softmax(rows)
    p, lse = L.softmax_lse(rows, True)
    _, lse_only = L.softmax_lse(rows, False)
    return {"softmax": sm, "log_softmax": lsm,
            "log_softmax_backward": L.softmax_backward(lsm, rows, log=True), "p": p,
            "lse": np.concatenate([lse, lse_only], 1),
            "softmax_backward": L.softmax_backward(sm, rows),
            # rows with y > 0 (not log-probabilities): the general exp's path
            "log_softmax_backward_any": L.softmax_backward(rows * np.float32(0.05), rows, log=True),
            "box_muller16": L.box_muller16(np.abs(x[: 1 << 20]) % np.float32(1), 0.5, 2.0)}


@needs_kernels
@pytest.mark.skipif(sys.platform != "linux" or shutil.which("cc") is None
                    or os.uname().machine != "x86_64", reason="needs cc on x86-64 Linux")
@pytest.mark.parametrize("march", ["x86-64", "x86-64-v3"])
def test_fma_kernels_give_the_same_bits_in_each_isa_variant(sweep, march, tmp_path) -> None:
    """erfinv's all-central and mixed blocks, and the softmax family, in the baseline (the C
    library's fma) and in AVX2+FMA, against the variant running here."""
    if march == "x86-64-v3" and not all(_supports(f) for f in ("avx2", "fma", "bmi2")):
        pytest.skip("this CPU cannot run x86-64-v3 code")
    x = sweep[::8].copy()
    so = build_isa_variant(march, tmp_path)
    np.save(tmp_path / "x.npy", x)
    outs = [tmp_path / f"out{j}.npy" for j in range(4)]
    run_variant(_VARIANT, so, tmp_path / "x.npy", *outs)
    got, rows, lse, bm = (np.load(f) for f in outs)
    y = L.erfinv(x)
    assert got[0].tobytes() == y.tobytes(), (march, L.active.isa())
    assert got[1].tobytes() == L.erfinv_backward(y, x).tobytes(), (march, L.active.isa())
    here = _rows(x)
    for j, name in enumerate(("softmax", "log_softmax", "log_softmax_backward", "p",
                              "softmax_backward", "log_softmax_backward_any")):
        assert rows[j].tobytes() == here[name].tobytes(), (name, march, L.active.isa())
    assert lse.tobytes() == here["lse"].tobytes(), (march, L.active.isa())
    assert bm.tobytes() == here["box_muller16"].tobytes(), (march, L.active.isa())


@needs_kernels
def test_box_muller16_takes_whole_blocks_only() -> None:
    u = np.full(24, 0.5, np.float32)
    with pytest.raises(ValueError, match="blocks of 16"):
        L.active.box_muller16(u, np.empty_like(u), 0.0, 1.0, 0.0)
    assert L.box_muller16(u, 0.0, 1.0) is None  # the loader leaves it to the NumPy path


@needs_kernels
def test_the_op_takes_the_kernel_forward_and_backward() -> None:
    x = ((np.random.default_rng(5).random(100_003) * 2 - 1) * 0.9999).astype(np.float32)
    t = ember.tensor(x, requires_grad=True)
    y = ember.erfinv(t)
    assert y.dtype == ember.float32
    assert y.detach().numpy().tobytes() == L.erfinv(x).tobytes()
    g = np.random.default_rng(6).standard_normal(x.size).astype(np.float32)
    y.backward(ember.tensor(g))
    assert t.grad.numpy().tobytes() == L.erfinv_backward(L.erfinv(x), g).tobytes()
    # with the kernels off the NumPy formulas give the same values within an ulp or two
    with L.disabled():
        t2 = ember.tensor(x, requires_grad=True)
        y2 = ember.erfinv(t2)
        y2.backward(ember.tensor(g))
    np.testing.assert_allclose(y2.detach().numpy(), y.detach().numpy(), rtol=3e-7, atol=1e-30)
    # (the formula squares y in float32: its relative error grows with y^2, up to ~15 here)
    np.testing.assert_allclose(t2.grad.numpy(), t.grad.numpy(), rtol=3e-6)


@pytest.mark.skipif(torch is None, reason="needs PyTorch")
def test_erfinv_matches_pytorch_within_its_rounding() -> None:
    x = (np.random.default_rng(7).random(200_000) * 2 - 1).astype(np.float32)
    x[:4] = [1, -1, 0, -0.0]
    t = ember.tensor(x, requires_grad=True)
    ours = ember.erfinv(t)
    ours.sum().backward()
    tt = torch.tensor(x, requires_grad=True)
    theirs = torch.erfinv(tt)
    theirs.sum().backward()
    np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=1e-6)
    np.testing.assert_allclose(t.grad.numpy(), tt.grad.numpy(), rtol=1e-5)
