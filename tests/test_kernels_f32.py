"""The float32 eager kernels of ember/_kernels.c that compute in float32 arithmetic (the ELU
family, softplus and logsigmoid: "Float32-arithmetic kernels", within 1 ulp) or in float64 lanes
(sigmoid, silu, silu's backward and the gradients of softplus and logsigmoid: rounded once from
a float64 value within 2^-33, 0.501 ulp) against float64 ground truth over a dense sweep of the
float32 line (every 128th float32 in [-120, 120], subnormals and +-0 included: 17.5M points),
the same bits at 1 and 2 threads, and the same bits in every instruction-set variant that this
machine can run (the extension compiled again without its clones, for the baseline and for
x86-64-v3, in a subprocess).
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest
from test_kernels import build_isa_variant, run_variant, ulps

import ember
from ember import _kernels_loader as L

needs_kernels = pytest.mark.skipif(L.active is None, reason=f"kernels off: {L.reason}")


def _sweep(stride: int = 128, top: float = 120.0) -> np.ndarray:
    bits = np.arange(0, int(np.float32(top).view(np.uint32)) + 1, stride, dtype=np.uint32)
    pos = bits.view(np.float32)
    return np.concatenate([pos, -pos])


def _sig64(x: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        return 1 / (1 + np.exp(-x))


@pytest.fixture(scope="module")
def sweep() -> tuple[np.ndarray, np.ndarray]:
    x = _sweep()
    g = np.random.default_rng(3).standard_normal(x.size).astype(np.float32)
    return x, g


@needs_kernels
def test_sigmoid_silu_and_silu_backward_are_within_one_ulp_over_a_dense_sweep(sweep) -> None:
    x, g = sweep
    assert x.size >= 1 << 24
    x64, g64 = x.astype(np.float64), g.astype(np.float64)
    s, sc = _sig64(x64), _sig64(-x64)
    # float64 lanes, one rounding: 0.501 ulp at most (the 1-ulp budget would allow 1.0), the
    # subnormal results too (the conversion to float32 rounds them once)
    assert ulps(L.activation("sigmoid", x), s) < 0.51
    assert ulps(L.activation("silu", x), x64 * s) < 0.51
    # at x = -1.2785 the derivative crosses zero: an absolute 1e-9 |grad| there (float64's own
    # sum of terms near 1 is not much better)
    d = g64 * s * (1 + x64 * sc)
    assert ulps(L.activation_backward("silu", x, g), d, 1e-9 * np.abs(g64)) < 0.51


@needs_kernels
def test_logsigmoid_is_within_one_ulp_over_a_dense_sweep(sweep) -> None:
    x, g = sweep
    x64, g64 = x.astype(np.float64), g.astype(np.float64)
    assert ulps(L.activation("logsigmoid", x), -np.logaddexp(0, -x64)) < 1.0
    assert ulps(L.activation_backward("logsigmoid", x, g), g64 * _sig64(-x64)) < 0.51


@needs_kernels
@pytest.mark.parametrize("beta, thr", [(1.0, 20.0), (2.0, 5.0), (0.3, 1.0)])
def test_softplus_is_within_one_ulp_over_a_dense_sweep(sweep, beta, thr) -> None:
    x, g = sweep
    x, g = x[1::2].copy(), g[1::2].copy()
    g64 = g.astype(np.float64)
    bx = (x * np.float32(beta)).astype(np.float64)  # a float32 product, as PyTorch's
    exact = np.where(bx > np.float32(thr), x.astype(np.float64),
                     np.logaddexp(0, bx) / float(np.float32(beta)))
    assert ulps(L.activation("softplus", x, beta, thr), exact) < 1.0
    exact = np.where(bx > np.float32(thr), g64, g64 * _sig64(bx))
    assert ulps(L.activation_backward("softplus", x, g, beta, thr), exact) < 0.51


SELU = (1.6732632423543772848170429916717, 1.0507009873554804934193349852946, 1.0)


@needs_kernels
@pytest.mark.parametrize("params", [(1.0, 1.0, 1.0), SELU, (2.0, 1.0, 0.5), (0.5, 1.0, 2.0)])
def test_elu_family_is_within_one_ulp_over_a_dense_sweep(sweep, params) -> None:
    x, g = sweep
    x, g = x[::2].copy(), g[::2].copy()  # (the x > 0 half is one float32 product)
    x64, g64 = x.astype(np.float64), g.astype(np.float64)
    alpha, scale, s_in = params
    with np.errstate(over="ignore", invalid="ignore"):
        exact = np.where(x64 > 0, (x * np.float32(scale)).astype(np.float64),
                         alpha * scale * np.expm1(x64 * s_in))
        d = np.where(x64 <= 0, g64 * np.exp(x64 * s_in) * (alpha * scale * s_in),
                     (g * np.float32(scale)).astype(np.float64))
    assert ulps(L.activation("elu", x, *params), exact) < 1.0
    assert ulps(L.activation_backward("elu", x, g, *params), d) < 1.0


@needs_kernels
def test_float32_sigmoid_and_silu_edges() -> None:
    x = np.array([np.inf, -np.inf, np.nan, 0.0, -0.0, 1e-45, -1e-45, 3.4e38, -3.4e38, 2e19,
                  -2e19, -114.9, -115.1, 115.1, -87.0, 88.8, -104.0, -108.0], np.float32)
    one = np.ones_like(x)
    s = L.activation("sigmoid", x)
    with np.errstate(invalid="ignore", over="ignore", under="ignore"):
        np.testing.assert_array_equal(s[:3], [1.0, 0.0, np.nan])
        assert s[3] == s[4] == 0.5 and s[8] == 0.0 and s[7] == 1.0
        y = L.activation("silu", x)
        np.testing.assert_array_equal(y[:3], [np.inf, np.nan, np.nan])  # -inf * 0, as PyTorch
        assert y[8] == 0.0 and np.signbit(y[8]) and y[7] == x[7] and y[10] == 0.0
        assert y[5] == np.float32(1e-45) * np.float32(0.5) or y[5] == 0.0  # 2^-150: a tie
        d = L.activation_backward("silu", x, one)
        assert np.isnan(d[:3]).all() and d[3] == d[4] == 0.5 and d[7] == 1.0 and d[8] == 0.0
        x64 = x.astype(np.float64)
        ok = np.isfinite(x64) & (np.abs(x64) < 1e3)
        assert ulps(s[ok], _sig64(x64[ok])) < 1.0
        assert ulps(y[ok], x64[ok] * _sig64(x64[ok])) < 1.0


@needs_kernels
def test_float32_kernels_give_the_same_bits_at_1_and_2_threads(sweep) -> None:
    x, g = sweep
    x, g = x[: 1 << 22], g[: 1 << 22]
    before = ember.get_num_threads()
    try:
        res = []
        for n in (1, 2):
            ember.set_num_threads(n)
            res.append([L.activation("sigmoid", x), L.activation("silu", x),
                        L.activation_backward("silu", x, g), L.activation("elu", x, *SELU),
                        L.activation_backward("elu", x, g, *SELU),
                        L.activation("softplus", x, 2.0, 5.0),
                        L.activation_backward("softplus", x, g, 2.0, 5.0),
                        L.activation("logsigmoid", x), L.activation_backward("logsigmoid", x, g)])
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
x, g = np.load(sys.argv[2]), np.load(sys.argv[3])
outs = []
SELU = (1.6732632423543772848170429916717, 1.0507009873554804934193349852946, 1.0)
for name, args, params in (("sigmoid", (x,), ()), ("silu", (x,), ()),
                           ("silu_backward", (x, g), ()), ("elu", (x,), SELU),
                           ("elu_backward", (x, g), SELU), ("softplus", (x,), (2.0, 5.0)),
                           ("softplus_backward", (x, g), (2.0, 5.0)), ("logsigmoid", (x,), ()),
                           ("logsigmoid_backward", (x, g), ()), ("exp", (x,), ()),
                           ("tanh", (x,), ())):
    out = np.empty_like(x)
    getattr(k, name)(*args, out, *params)
    outs.append(out)
np.save(sys.argv[4], np.stack(outs))
"""


def _supports(flag: str) -> bool:
    try:
        return flag in Path("/proc/cpuinfo").read_text().split()
    except OSError:
        return False


@needs_kernels
@pytest.mark.skipif(sys.platform != "linux" or shutil.which("cc") is None
                    or os.uname().machine != "x86_64", reason="needs cc on x86-64 Linux")
@pytest.mark.parametrize("march", ["x86-64", "x86-64-v3"])
def test_float32_kernels_give_the_same_bits_in_each_isa_variant(sweep, march, tmp_path) -> None:
    """The extension built again without target clones for one instruction set (the baseline,
    where fmaf is the C library's; or AVX2 with FMA) gives the bits of the variant running
    here (AVX-512F on such a CPU); exp and tanh too (tests/test_kernels_exp_tanh.py)."""
    if march == "x86-64-v3" and not all(_supports(f) for f in ("avx2", "fma", "bmi2")):
        pytest.skip("this CPU cannot run x86-64-v3 code")
    x, g = sweep
    x, g = x[::4].copy(), g[::4].copy()  # 4.4M points
    so = build_isa_variant(march, tmp_path)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "g.npy", g)
    run_variant(_VARIANT, so, tmp_path / "x.npy", tmp_path / "g.npy", tmp_path / "out.npy")
    got = np.load(tmp_path / "out.npy")
    here = [L.activation("sigmoid", x), L.activation("silu", x),
            L.activation_backward("silu", x, g), L.activation("elu", x, *SELU),
            L.activation_backward("elu", x, g, *SELU), L.activation("softplus", x, 2.0, 5.0),
            L.activation_backward("softplus", x, g, 2.0, 5.0), L.activation("logsigmoid", x),
            L.activation_backward("logsigmoid", x, g), L.exp(x), L.tanh(x)]
    names = ("sigmoid", "silu", "silu_backward", "elu", "elu_backward", "softplus",
             "softplus_backward", "logsigmoid", "logsigmoid_backward", "exp", "tanh")
    for name, a, b in zip(names, got, here):
        assert a.tobytes() == b.tobytes(), (name, march, L.active.isa())


@needs_kernels
def test_the_ops_take_the_float32_kernels() -> None:
    """F.logsigmoid's forward too (it kept NumPy's passes while its kernel was no faster)."""
    x = (np.random.default_rng(8).standard_normal(100_003) * 6).astype(np.float32)
    F = ember.nn.functional
    for name, fn, params in (("logsigmoid", F.logsigmoid, ()), ("sigmoid", ember.sigmoid, ()),
                             ("silu", F.silu, ()), ("softplus", F.softplus, (1.0, 20.0)),
                             ("elu", F.elu, (1.0, 1.0, 1.0))):
        with ember.no_grad():
            got = fn(ember.tensor(x)).numpy()
        assert got.tobytes() == L.activation(name, x, *params).tobytes(), name
