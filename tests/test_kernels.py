"""The eager kernels (ember._kernels, through ember/_kernels_loader.py): each against float64 ground
truth in float32 ulps, against the NumPy formula it replaces (the kernels off in the same
process), against PyTorch (forward and backward), at the edges (inf, NaN, -0.0, subnormals, huge
|x|, empty arrays, one-element rows), and the loader's choices (off, stale, not built).

Every test that needs the extension skips when it is absent or off (EMBER_PURE_PYTHON=1); there
the ops run their NumPy formulas, which the rest of the suite checks.
"""

from __future__ import annotations

import math
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember import _kernels_loader as L
from helpers import HAVE_TORCH, torch

ROOT = Path(__file__).resolve().parent.parent
needs_kernels = pytest.mark.skipif(L.active is None, reason=f"kernels off: {L.reason}")
needs_torch = pytest.mark.skipif(not HAVE_TORCH, reason="PyTorch is not installed")

_erf = np.vectorize(math.erf, otypes=[np.float64])
_erfc = np.vectorize(math.erfc, otypes=[np.float64])
C = math.sqrt(2 / math.pi)
K = 0.044715


def ulps(got: np.ndarray, exact: np.ndarray, slack: float | np.ndarray = 0.0) -> float:
    """The largest |got - exact| in float32 ulps of the exact value (subnormal ulps below
    2^-126), less an absolute ``slack`` (a number, or one per element); non-finite exact values
    must match exactly."""
    got = np.asarray(got, np.float64)
    fin = np.isfinite(exact)
    assert np.array_equal(np.isnan(got[~fin]), np.isnan(exact[~fin]))
    assert np.array_equal(got[~fin & ~np.isnan(exact)], exact[~fin & ~np.isnan(exact)])
    e = exact[fin]
    below = np.abs(e).astype(np.float32)  # the float32 at or below |e|: its spacing is e's ulp
    below = np.where(below > np.abs(e), np.nextafter(below, np.float32(0)), below)
    ulp = np.maximum(np.spacing(below).astype(np.float64), 2.0**-149)
    slack = np.broadcast_to(slack, exact.shape)[fin]
    err = np.maximum(np.abs(got[fin] - e) - slack, 0.0)
    return float(np.max(err / ulp)) if e.size else 0.0


def build_isa_variant(march: str, tmp_path: Path) -> Path:
    """src/ember/_kernels.c (and the extension's other C files) compiled again without its
    target clones, for one instruction set (``-march``), into ``tmp_path``: the path of the
    extension (``bench.isa_variant.build``, which also times such a build)."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from bench.isa_variant import build

    return build(march, tmp_path)


def run_variant(script: str, so: Path, *paths: Path) -> str:
    """``script`` (which loads the extension ``so`` from argv[1]) in a fresh interpreter with the
    native core off, the ``paths`` after it: what it printed."""
    return subprocess.run([sys.executable, "-c", script, str(so), *map(str, paths)], check=True,
                          timeout=300, env={**os.environ, "EMBER_PURE_PYTHON": "1"},
                          capture_output=True, text=True).stdout


def _points() -> np.ndarray:
    """float32 points across every range the kernels treat apart, plus normal activations."""
    rng = np.random.default_rng(0)
    parts = [
        rng.standard_normal(100_000) * 2,
        rng.uniform(-12, 12, 100_000),
        np.linspace(-0.6, 0.6, 20_001),                        # erf's small-|x| branch and its edge
        np.linspace(-15, 15, 30_001),                          # the tails, to underflow
        np.geomspace(1e-38, 1e-2, 3_000), -np.geomspace(1e-38, 1e-2, 3_000),
        np.array([0.5, -0.5, 0.4999999, 10.5, 10.05, 26.0, 1e4, 1e19, 3e38]),
    ]
    return np.concatenate(parts).astype(np.float32)


X = _points()
X64 = X.astype(np.float64)
EDGES = np.array([np.inf, -np.inf, np.nan, 0.0, -0.0, 1e-45, -1e-45, 1e-40, -1e-40, 3.4e38,
                  -3.4e38, 2e19, -2e19], np.float32)


def _gelu_tanh32(x: np.ndarray) -> np.ndarray:
    """The float32 tanh-form kernel itself (the ops keep NumPy's passes for it: as fast)."""
    out = np.empty_like(x)
    L.active.gelu_tanh(x, out)
    return out


def _phi(x: np.ndarray) -> np.ndarray:
    return 0.5 * _erfc(-x / math.sqrt(2))


def _tanh_parts(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """1 + tanh(u) and 1 - tanh(u)^2 in float64 without cancellation, u = c (x + k x^3)."""
    u = C * (x + K * x**3)
    with np.errstate(over="ignore"):
        e = np.exp(-2 * np.abs(u))
        opt = np.where(u >= 0, 2 / (1 + e), 2 * e / (1 + e))
        sech2 = 1 / np.cosh(u) ** 2
    return opt, sech2


# -- accuracy against float64 ground truth --------------------------------------------------------
@needs_kernels
def test_erf_and_erfc_are_within_one_ulp() -> None:
    # correctly rounded but for the fits' 1.2e-9 (0.02 ulp) and CPython's float64 erf's own error
    assert ulps(L.erf(X), _erf(X64)) <= 0.53
    assert ulps(L.erfc(X), _erfc(X64)) <= 0.53  # relative, down to the tail's subnormals


@needs_kernels
def test_erf_backward_is_within_one_ulp() -> None:
    g = np.random.default_rng(11).standard_normal(X.size).astype(np.float32)
    with np.errstate(under="ignore"):
        exact = g.astype(np.float64) * (2 / math.sqrt(math.pi)) * np.exp(-X64 * X64)
    assert ulps(L.erf_backward(X, g), exact) <= 0.51
    assert ulps(L.erf_backward(X, g, complement=True), -exact) <= 0.51
    e = L.erf_backward(EDGES, np.ones_like(EDGES))
    assert np.isnan(e[2]) and list(e[:2]) == [0, 0] and e[3] == np.float32(2 / math.sqrt(math.pi))


@needs_kernels
def test_gelu_is_within_one_ulp() -> None:
    with np.errstate(over="ignore", invalid="ignore"):
        assert ulps(L.gelu(X), X64 * _phi(X64)) <= 0.70  # 0.69: the central fit's 0.197 (degree 12)


@needs_kernels
def test_gelu_backward_is_within_one_ulp() -> None:
    g = np.random.default_rng(1).standard_normal(X.size).astype(np.float32)
    g64 = g.astype(np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        d = _phi(X64) + X64 * np.exp(-X64 * X64 / 2) / math.sqrt(2 * math.pi)
    # d(x) crosses zero at x = -0.7518...: there what remains is the absolute error of the sum
    # Phi(x) + x phi(x) of float64 terms fitted to 1.2e-9, far below float32's resolution of
    # the terms it sums (PyTorch's float32 kernel: ~1e-7)
    assert ulps(L.gelu_backward(X, g), g64 * d, slack=1e-9 * np.abs(g64)) <= 0.58


# -- the central paths of erf, erfc and gelu: |x| < 3, one float64 polynomial in x^2 ----------------
def _dense_sweep(stride: int = 128, top: float = 120.0) -> np.ndarray:
    """Every stride-th float32 in [-top, top] (+-0 and subnormals included), and both sides of
    |x| = 3 (erf, erfc) and 3.5 (gelu), where the kernels change from the central polynomial to
    exp * erfcx."""
    bits = np.arange(0, int(np.float32(top).view(np.uint32)) + 1, stride, dtype=np.uint32)
    edges = np.float32([3.0, 3.5])
    below = np.nextafter(edges, np.float32(0), dtype=np.float32)
    pos = np.concatenate([bits.view(np.float32), edges, below, edges * np.float32(1 - 3e-5),
                          edges * np.float32(1 + 3e-5)])
    return np.concatenate([pos, -pos])


@pytest.fixture(scope="module")
def dense() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    x = _dense_sweep()
    return x, x.astype(np.float64), np.random.default_rng(5).standard_normal(x.size).astype(
        np.float32)


@needs_kernels
def test_erf_family_is_within_one_ulp_over_a_dense_sweep(dense) -> None:
    """17.5M points, 96% of them central: a central polynomial fitted (or evaluated) short of
    its weighted bound fails here first where it cancels, erfc near x = 3 (2.2e-5) and gelu near
    x = -3.5 (Phi = 2.3e-4); a truncated one (its last coefficient dropped) fails by far."""
    x, x64, g = dense
    assert x.size >= 1 << 24
    with np.errstate(over="ignore", invalid="ignore", under="ignore"):
        assert ulps(L.erf(x), _erf(x64)) <= 0.53
        assert ulps(L.erfc(x), _erfc(x64)) <= 0.53
        phi = _phi(x64)
        # gelu's central polynomials trade accuracy for speed (degrees 12 and 13, fits of 0.197
        # and 0.135 ulp): 0.693 and 0.567 ulp measured here
        assert ulps(L.gelu(x), x64 * phi) <= 0.70
        g64 = g.astype(np.float64)
        d = phi + x64 * np.exp(-x64 * x64 / 2) / math.sqrt(2 * math.pi)
        assert ulps(L.gelu_backward(x, g), g64 * d, slack=1e-9 * np.abs(g64)) <= 0.58


def _erf_family(x: np.ndarray, g: np.ndarray) -> list[np.ndarray]:
    return [L.erf(x), L.erfc(x), L.gelu(x), L.gelu_backward(x, g)]


@needs_kernels
def test_erf_family_bits_do_not_depend_on_the_neighbours() -> None:
    """Blocks of 128, 32 or 16 all-central elements run the central path alone, the others
    choose per element: an element's bits are the same whatever its block holds and wherever it
    starts (the unspoiled run takes many 128-blocks whole, the spoiled one none)."""
    rng = np.random.default_rng(6)
    x = np.concatenate([rng.uniform(-3, 3, 50_000), rng.standard_normal(50_000) * 1.5]).astype(
        np.float32)
    g = rng.standard_normal(x.size).astype(np.float32)
    ref = _erf_family(x, g)
    spoiled = x.copy()
    spoiled[::37] = np.float32(50.0)  # every block around these takes the general way
    spoiled[5::41] = np.float32(np.nan)
    keep = np.ones(x.size, bool)
    keep[::37] = keep[5::41] = False
    for a, r in zip(_erf_family(spoiled, g), ref):
        assert a[keep].tobytes() == r[keep].tobytes()
    for k in (1, 7, 15, 17, 31):
        for a, r in zip(_erf_family(x[k:], g[k:]), ref):
            assert a.tobytes() == r[k:].tobytes()


_VARIANT = """
import importlib.util, sys
import numpy as np
spec = importlib.util.spec_from_file_location("ember._kernels", sys.argv[1])
k = importlib.util.module_from_spec(spec)
spec.loader.exec_module(k)
x, g = np.load(sys.argv[2]), np.load(sys.argv[3])
outs = [np.empty_like(x) for _ in range(4)]
k.erf(x, outs[0]); k.erfc(x, outs[1]); k.gelu(x, outs[2]); k.gelu_backward(x, g, outs[3])
np.save(sys.argv[4], np.stack(outs))
print(k.fma_in_hardware())
"""


@needs_kernels
@pytest.mark.skipif(sys.platform != "linux" or shutil.which("cc") is None
                    or os.uname().machine != "x86_64", reason="needs cc on x86-64 Linux")
@pytest.mark.parametrize("march", ["x86-64", "x86-64-v3"])
def test_erf_family_gives_the_same_bits_in_each_isa_variant(dense, march, tmp_path) -> None:
    """The central polynomials use explicit fma: one instruction in the AVX-512F and x86-64-v3
    variants, the C library's correctly rounded fma in the baseline; the extension built again
    without clones for each gives the bits of the variant running here."""
    if march == "x86-64-v3" and "avx2" not in Path("/proc/cpuinfo").read_text().split():
        pytest.skip("this CPU cannot run x86-64-v3 code")
    x, _, g = dense
    x, g = x[::8].copy(), g[::8].copy()
    so = build_isa_variant(march, tmp_path)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "g.npy", g)
    printed = run_variant(_VARIANT, so, tmp_path / "x.npy", tmp_path / "g.npy",
                          tmp_path / "out.npy")
    got = np.load(tmp_path / "out.npy")
    for name, a, b in zip(("erf", "erfc", "gelu", "gelu_backward"), got, _erf_family(x, g)):
        assert a.tobytes() == b.tobytes(), (name, march, L.active.isa())
    # the baseline build calls the C library's fmaf; x86-64-v3 has the instruction
    assert printed.split() == [str(march == "x86-64-v3")]


@needs_kernels
def test_fma_based_kernels_give_way_where_fma_is_a_library_call(monkeypatch) -> None:
    """Without the fma instruction (an x86-64 CPU without AVX2/FMA) the kernels built on fmaf
    ran 1.5-10x slower than the NumPy formulas: those ops take the formulas there, the others
    keep their kernels."""
    assert L.soft_fma is (not L.active.fma_in_hardware())
    cpuinfo = Path("/proc/cpuinfo")
    if L.active.isa() in ("avx512f", "avx2") and cpuinfo.exists() and \
            {"avx2", "fma", "bmi2"} <= set(cpuinfo.read_text().split()):
        assert not L.soft_fma
    x = np.random.default_rng(3).standard_normal((8, 64)).astype(np.float32)
    q = x.reshape(2, 4, 64)
    monkeypatch.setattr(L, "soft_fma", True)
    assert L.erf(x) is None and L.erfc(x) is None and L.erfinv(x * 0.1) is None
    assert L.exp(x) is None and L.tanh(x) is None
    assert L.erf_backward(x, x) is None and L.erfinv_backward(x, x) is None
    assert L.gelu(x) is None and L.gelu_backward(x, x) is None
    for name in ("sigmoid", "silu", "logsigmoid"):
        assert L.activation(name, x) is None
    assert L.activation_backward("silu", x, x) is None
    assert L.softmax(x) is None and L.softmax_lse(x, True) is None
    assert L.cross_entropy_rows(x, np.zeros(8, np.int64), True) is None
    assert L.attention(q, q, q, 0.125, True) is None
    # not built on fmaf: kept
    assert L.gelu(x, "tanh") is not None and L.activation("mish", x) is not None
    assert L.activation_backward("sigmoid", x, x) is not None
    assert L.softmax_backward(x, x) is not None
    assert L.layer_norm(x, None, None, 1, 1e-5) is not None
    kernel = np.empty_like(x)
    L.active.gelu(x, kernel)
    y = F.gelu(ember.tensor(x)).numpy()  # the op takes the formula: within its rounding
    np.testing.assert_allclose(y, kernel, rtol=2e-6, atol=1e-7)
    with L.disabled():
        assert F.gelu(ember.tensor(x)).numpy().tobytes() == y.tobytes()


@needs_kernels
def test_gelu_tanh_and_its_backward_are_within_one_ulp() -> None:
    g = np.random.default_rng(2).standard_normal(X.size).astype(np.float32)
    opt, sech2 = _tanh_parts(X64)
    with np.errstate(over="ignore", invalid="ignore"):
        assert ulps(_gelu_tanh32(X), 0.5 * X64 * opt) <= 0.53
        big = np.abs(X64) > 1e18  # where x^2 overflows float32 (see the edge test)
        d = 0.5 * opt + 0.5 * X64 * sech2 * C * (1 + 3 * K * X64**2)
    got = L.gelu_backward(X, g, "tanh")
    assert ulps(got[~big], (g * d)[~big], slack=1e-9 * np.abs(g[~big])) <= 0.53


@needs_kernels
def test_gelu_tanh_float64_is_within_a_few_ulp() -> None:
    x = X64[np.abs(X64) < 1e6]
    opt, sech2 = _tanh_parts(x)
    exact = 0.5 * x * opt
    got = L.gelu(x, "tanh")
    assert got.dtype == np.float64
    # relative error within a few ulp of the conditioning: exp(-2|u|) turns u's rounding
    # (|u| 2^-53 absolute) into as much relative error in the tail
    u = np.abs(C * (x + K * x**3))
    ok = exact != 0
    rel = np.abs(got[ok] - exact[ok]) / np.abs(exact[ok])
    assert np.all(rel <= 2.0**-52 * (8 + 8 * u[ok]))
    d = 0.5 * opt + 0.5 * x * sech2 * C * (1 + 3 * K * x**2)
    gd = L.gelu_backward(x, np.ones_like(x), "tanh")
    # (and an absolute 4e-16 around its root at x = -0.7524, where its terms cancel)
    assert np.all(np.abs(gd - d) <= 2.0**-52 * (8 + 8 * u) * np.abs(d) + 4e-16)


def _rows(shape: tuple, scale: float = 3.0, seed: int = 3) -> np.ndarray:
    return (np.random.default_rng(seed).standard_normal(shape) * scale).astype(np.float32)


@needs_kernels
@pytest.mark.parametrize("n", [1, 2, 15, 16, 17, 100, 4096])
def test_softmax_and_log_softmax_against_float64(n: int) -> None:
    x = _rows((64, n))
    # x - max rounds to float32 first, in the kernel as in the NumPy formula and PyTorch's
    shifted = (x - x.max(-1, keepdims=True)).astype(np.float64)
    e = np.exp(shifted)
    s = e.sum(-1, keepdims=True)
    # exp within 1 ulp, the float32 sum and the division half an ulp each
    assert ulps(L.softmax(x), e / s) <= 2.5
    exact = shifted - np.log(s)
    # y = (x - max) - log(sum): one rounding of each term (PyTorch's formula too)
    got = L.softmax(x, log=True)
    assert np.all(np.abs(got - exact) <= 1.01 * np.spacing(np.abs(exact).astype(np.float32))
                  + np.spacing(np.log(s).astype(np.float32)))


@needs_kernels
@pytest.mark.parametrize("n", [1, 17, 4096])
def test_softmax_backward_against_float64(n: int) -> None:
    x, g = _rows((32, n)), _rows((32, n), 1.0, 4)
    y = L.softmax(x)
    y64, g64 = y.astype(np.float64), g.astype(np.float64)
    exact = y64 * (g64 - (g64 * y64).sum(-1, keepdims=True))
    tol = 4 * np.spacing(np.float32(1)) * y64 * (np.abs(g64) + np.abs(g64 * y64).sum(-1, keepdims=True))
    assert np.all(np.abs(L.softmax_backward(y, g) - exact) <= tol + 1e-45)
    ly = L.softmax(x, log=True)
    ly64 = ly.astype(np.float64)
    exact = g64 - np.exp(ly64) * g64.sum(-1, keepdims=True)
    tol = 4 * np.spacing(np.float32(1)) * (np.abs(g64) + np.exp(ly64) * np.abs(g64).sum(-1, keepdims=True))
    assert np.all(np.abs(L.softmax_backward(ly, g, log=True) - exact) <= tol)


@needs_kernels
@pytest.mark.parametrize("shape,k", [((64, 4096), 1), ((8, 3, 5, 7), 2), ((5, 1), 1), ((3, 33), 1)])
def test_layer_norm_against_float64(shape: tuple, k: int) -> None:
    x = _rows(shape) + 1.5
    nshape = shape[len(shape) - k:]
    w, b = _rows(nshape, 1.0, 5), _rows(nshape, 1.0, 6)
    y, mean, rstd = L.layer_norm(x, w, b, k, 1e-5)
    axes = tuple(range(len(shape) - k, len(shape)))
    x64 = x.astype(np.float64)
    mu = x64.mean(axes, keepdims=True)
    r = 1 / np.sqrt(((x64 - mu) ** 2).mean(axes, keepdims=True) + 1e-5)
    assert mean.shape == rstd.shape == mu.shape and mean.dtype == rstd.dtype == np.float32
    assert ulps(mean, mu) <= 0.5 and ulps(rstd, r) <= 1.0  # float64 sums (of float32 x - mean)
    exact = (x64 - mu) * r * w + b
    scale = np.abs((x64 - mu) * r * w) + np.abs(b)
    assert np.all(np.abs(y - exact) <= 8 * np.spacing(np.float32(1)) * (scale + np.abs(mu * r * w)))
    g = _rows(shape, 1.0, 7)
    gx, gw, gb = L.layer_norm_backward(x, w, mean, rstd, g, k, (True, True, True))
    xhat = (x64 - mu) * r
    lead = tuple(range(len(shape) - k))
    np.testing.assert_allclose(gb, g.sum(lead), rtol=1e-6, atol=1e-5)
    np.testing.assert_allclose(gw, (g * xhat).sum(lead), rtol=1e-5, atol=1e-4)
    gh = g * w.astype(np.float64)
    exact = r * (gh - gh.mean(axes, keepdims=True) - xhat * (gh * xhat).mean(axes, keepdims=True))
    np.testing.assert_allclose(gx, exact, rtol=1e-4, atol=1e-4 * float(np.abs(exact).max()))


def _lane_sums(terms: np.ndarray) -> np.ndarray:
    """Each row's float64 sum in the kernels' order (LANE_SUM): lane j takes the terms j,
    j + 16, ... of the whole blocks of 16, in order, then the tail's term j; the 16 lanes are
    added pairwise (j + 8 into j, then j + 4, j + 2, j + 1)."""
    n = terms.shape[-1]
    t = n - n % 16
    acc = np.zeros(terms.shape[:-1] + (16,))
    for i in range(0, t, 16):
        acc += terms[..., i:i + 16]
    acc[..., :n - t] += terms[..., t:]
    for w in (8, 4, 2, 1):
        acc[..., :w] += acc[..., w:2 * w]
    return acc[..., 0]


def _layer_norm_in_kernel_order(x, w, b, g, eps=1e-5):
    """layer_norm's forward and grad_x as the kernels compute them, in NumPy: the float64 lane
    sums above, then the formula's float32 operations in order (each correctly rounded, as the
    kernels' are with no contraction)."""
    f4 = np.float32
    n = x.shape[-1]
    mu = (_lane_sums(x.astype(np.float64)) / n).astype(f4)[:, None]
    d = (x - mu).astype(np.float64)
    rs = (1.0 / np.sqrt(_lane_sums(d * d) / n + eps)).astype(f4)[:, None]
    y = (x - mu) * rs
    y = y * w if w is not None else y
    y = y + b if b is not None else y
    h = g * w if w is not None else g
    xhat = (x - mu) * rs
    mg = (_lane_sums(h.astype(np.float64)) / n).astype(f4)[:, None]
    mgx = (_lane_sums(h.astype(np.float64) * xhat.astype(np.float64)) / n).astype(f4)[:, None]
    return y, mu, rs, (h - (xhat * mgx + mg)) * rs


@needs_kernels
@pytest.mark.parametrize("shape", [(768, 4096), (40, 4099), (6, 33), (3, 7)])
def test_layer_norm_float32_is_the_formula_in_its_order_bit_for_bit(shape: tuple) -> None:
    """float32 layer_norm forward and grad_x equal their operations in the kernels' documented
    order bit for bit: the backward's two row sums share one pass (8-wide float64 vectors) with
    LANE_SUM's lanes; (768, 4096) is 12 MiB out, so y and grad_x take the non-temporal stores
    (NT_MIN_BYTES), the others plain stores; with and without w and b; at 1 and 2 threads."""
    rng = np.random.default_rng(21)
    x = (rng.standard_normal(shape) * 2 + 3).astype(np.float32)
    g = rng.standard_normal(shape).astype(np.float32)
    w0 = rng.standard_normal(shape[-1]).astype(np.float32)
    b0 = rng.standard_normal(shape[-1]).astype(np.float32)
    if shape[-1] > 17:  # two terms that cancel in lanes 0 and 1: the sums' order shows in the bits
        x[:, 0], x[:, 17] = 3e9, -3e9
        g[:, 0], g[:, 17], w0[17] = 1e15, -1e15, w0[0]
    saved = L.active.get_num_threads()
    try:
        for w, b in ((w0, b0), (w0, None), (None, b0), (None, None)):
            want = _layer_norm_in_kernel_order(x, w, b, g)
            for threads in (1, 2):
                L.set_num_threads(threads)
                y, mu, rs = L.layer_norm(x, w, b, 1, 1e-5)
                gx = L.layer_norm_backward(x, w, mu, rs, g, 1, (True, False, False))[0]
                for got, ref in zip((y, mu, rs, gx), want):
                    assert got.tobytes() == ref.astype(np.float32).tobytes(), (w is None, b is None)
    finally:
        L.set_num_threads(saved)


LN_BLOCK, LN_MAX_BLOCKS, LN_FUSED_MAX_N = 1 << 13, 16, 1 << 14  # layer_norm_backward's blocks


@needs_kernels
@pytest.mark.parametrize("rows,n", [(3000, 100), (40, 4099), (7, 16), (5, 20000)])
def test_layer_norm_column_sums_by_blocks_of_rows(rows: int, n: int) -> None:
    """grad_w and grad_b: float64 sums of g x_hat and g, rows in order within blocks (as many
    as LN_BLOCK elements make, 1 to LN_MAX_BLOCKS, of equal rows but the last) and the blocks
    added in order where grad_x's pass computes them (float32, n <= LN_FUSED_MAX_N), rows in
    order in one pass otherwise (as without grad_x); the same bits at 1, 2 and 3 threads."""
    rng = np.random.default_rng(31)
    x = (rng.standard_normal((rows, n)) * 3 + 1).astype(np.float32)
    g = rng.standard_normal((rows, n)).astype(np.float32)
    w, b = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    nb = min(max(rows * n // LN_BLOCK, 1), LN_MAX_BLOCKS)
    rb = -(-rows // nb) if n <= LN_FUSED_MAX_N else rows
    if rb < rows:  # terms that cancel across two blocks: the order of the sums shows in the bits
        g[0], g[rb] = 1e12, -1e12
    _, mu, rs = L.layer_norm(x, w, b, 1, 1e-5)
    xhat = (x - mu) * rs  # float32, as the kernel's
    terms = g.astype(np.float64) * xhat.astype(np.float64), g.astype(np.float64)
    want = []
    for t in terms:
        total = np.zeros(n)
        for r0 in range(0, rows, rb):
            block = np.zeros(n)
            for r in range(r0, min(r0 + rb, rows)):  # rows in order
                block += t[r]
            total += block
        want.append(total.astype(np.float32))
    separate = []
    for t in terms:  # without grad_x: one pass, rows in order
        total = np.zeros(n)
        for r in range(rows):
            total += t[r]
        separate.append(total.astype(np.float32))
    if rb < rows:
        assert want[1].tobytes() != separate[1].tobytes()  # (the test tells the orders apart)
    saved = L.active.get_num_threads()
    try:
        for threads in (1, 2, 3):
            L.set_num_threads(threads)
            _, gw, gb = L.layer_norm_backward(x, w, mu, rs, g, 1, (True, True, True))
            assert gw.tobytes() == want[0].tobytes() and gb.tobytes() == want[1].tobytes()
            _, gw, gb = L.layer_norm_backward(x, w, mu, rs, g, 1, (False, True, True))
            assert gw.tobytes() == separate[0].tobytes()
            assert gb.tobytes() == separate[1].tobytes()
    finally:
        L.set_num_threads(saved)


@needs_kernels
def test_backward_kernels_take_a_broadcast_gradient(monkeypatch) -> None:
    """A sum's gradient (a stride-0 broadcast view) reaches layer_norm's and gelu's backward
    kernels as a C-ordered copy, not the NumPy formulas."""
    from helpers import count_calls
    x0 = np.random.default_rng(4).standard_normal((64, 256)).astype(np.float32)
    for name, f in (("layer_norm_backward", lambda x: F.layer_norm(x, (256,))),
                    ("gelu_backward", F.gelu)):
        calls = count_calls(monkeypatch, L.active, name)
        x = ember.tensor(x0, requires_grad=True)
        f(x).sum().backward()
        assert calls["n"] == 1, name
        with L.disabled():
            x2 = ember.tensor(x0, requires_grad=True)
            f(x2).sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), x2.grad.numpy(), rtol=1e-5, atol=1e-6)


@needs_kernels
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_layer_norm_nontemporal_outputs_match_plain_stores(dtype) -> None:
    """A call at or over NT_MIN_BYTES out (non-temporal stores) gives the bits of the same rows in
    calls under it (plain stores), forward and grad_x, also into outputs that start off a
    16-byte boundary (the stores begin at the first aligned element)."""
    rows, n = (800, 4099) if dtype == np.float32 else (400, 4099)  # 12.5 MiB out
    rng = np.random.default_rng(22)
    x = (rng.standard_normal((rows, n)) + 1).astype(dtype)
    g = rng.standard_normal((rows, n)).astype(dtype)
    w, b = rng.standard_normal(n).astype(dtype), rng.standard_normal(n).astype(dtype)
    k = L.active
    mu, rs = np.empty((rows, 1), dtype), np.empty((rows, 1), dtype)
    y, gx = np.empty_like(x), np.empty_like(x)
    for part in np.array_split(np.arange(rows), 8):  # 1.6 MiB each: plain stores
        s = slice(part[0], part[-1] + 1)
        k.layer_norm(x[s], w, b, y[s], mu[s], rs[s], n, 1e-5)
        k.layer_norm_backward(x[s], w, mu[s], rs[s], g[s], gx[s], None, None, n)
    for off in (0, 1):
        big_y = np.empty(x.size + off, dtype)[off:].reshape(rows, n)
        big_gx = np.empty(x.size + off, dtype)[off:].reshape(rows, n)
        mu2, rs2 = np.empty_like(mu), np.empty_like(rs)
        k.layer_norm(x, w, b, big_y, mu2, rs2, n, 1e-5)
        k.layer_norm_backward(x, w, mu2, rs2, g, big_gx, None, None, n)
        assert big_y.tobytes() == y.tobytes() and big_gx.tobytes() == gx.tobytes(), off
        assert mu2.tobytes() == mu.tobytes() and rs2.tobytes() == rs.tobytes()


# -- the same results as the NumPy formulas (kernels off, one process) ------------------------------
def _both(fn):
    """fn() with the kernels on, then off."""
    with L.enabled():
        on = fn()
    with L.disabled():
        off = fn()
    return on, off


def _np(t):
    return t.detach().numpy()


@needs_kernels
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_ops_agree_with_their_numpy_formulas(dtype) -> None:
    rng = np.random.default_rng(8)
    x = rng.standard_normal((64, 257)).astype(dtype) * 2
    w = rng.standard_normal(257).astype(dtype)
    b = rng.standard_normal(257).astype(dtype)
    g = rng.standard_normal((64, 257)).astype(dtype)
    tol = dict(rtol=3e-6, atol=3e-6) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-12)
    cases = {
        "erf": lambda t: ember.erf(t), "erfc": lambda t: ember.erfc(t),
        "gelu": lambda t: F.gelu(t), "gelu_tanh": lambda t: F.gelu(t, approximate="tanh"),
        "softmax": lambda t: ember.softmax(t, -1), "log_softmax": lambda t: ember.log_softmax(t, -1),
        "layer_norm": lambda t: F.layer_norm(t, (257,), ember.tensor(w), ember.tensor(b)),
        "layer_norm_plain": lambda t: F.layer_norm(t, (257,)),
    }
    for name, fn in cases.items():
        def run(fn=fn):
            t = ember.tensor(x, requires_grad=True)
            y = fn(t)
            y.backward(ember.tensor(g))
            return _np(y), t.grad.numpy()
        (y1, g1), (y0, g0) = _both(run)
        assert y1.dtype == y0.dtype == dtype and g1.dtype == dtype, name
        np.testing.assert_allclose(y1, y0, **tol, err_msg=name)
        np.testing.assert_allclose(g1, g0, **tol, err_msg=name)


@needs_kernels
def test_the_kernels_are_chosen_only_where_they_apply() -> None:
    x = np.ones((4, 6), np.float32)
    assert L.erf(x) is not None and L.softmax(x) is not None
    for bad in (x.astype(np.float16), x[:, ::2], x.T, np.ones((0, 6), np.float32), x.tolist()):
        assert L.erf(bad) is None and L.softmax(bad) is None and L.gelu(bad) is None
    assert L.erf(x.astype(np.float64)) is None  # float64 erf: SciPy's or the table
    assert L.erf_backward(x, x[::-1].copy()) is not None and L.erf_backward(x, x[:, ::2]) is None
    assert L.gelu(x.astype(np.float64)) is None and L.gelu(x.astype(np.float64), "tanh") is not None
    assert L.gelu(x, "tanh") is not None and L.gelu_backward(x, x, "tanh") is not None
    assert L.gelu_backward(x, x.astype(np.float64)) is None  # mixed dtypes
    assert L.gelu_backward(x, np.ones((6, 4), np.float32)) is None  # other shape
    assert L.layer_norm(x, np.ones(5, np.float32), None, 1, 1e-5) is None
    class Sub(np.ndarray):
        pass

    assert L.erf(x.astype(">f4")) is None and L.erf(x.view(Sub)) is None  # byte order, subclass
    ro = x.copy()
    ro.flags.writeable = False  # read-only inputs are fine
    np.testing.assert_array_equal(L.erf(ro), L.erf(x))
    with L.disabled():
        assert L.erf(x) is None and L.active is None
    assert L.active is not None


# -- against PyTorch ----------------------------------------------------------------------------
@needs_kernels
@needs_torch
@pytest.mark.parametrize("case", ["erf", "erfc", "gelu", "gelu_tanh", "softmax", "log_softmax",
                                  "layer_norm"])
def test_forward_and_backward_match_torch(case: str) -> None:
    rng = np.random.default_rng(9)
    x = (rng.standard_normal((128, 1024)) * 2).astype(np.float32)
    g = rng.standard_normal((128, 1024)).astype(np.float32)
    w = rng.standard_normal(1024).astype(np.float32)
    b = rng.standard_normal(1024).astype(np.float32)

    def fn(m, t):
        if case == "erf":
            return m.erf(t)
        if case == "erfc":
            return m.erfc(t)
        if case in ("gelu", "gelu_tanh"):
            return m.nn.functional.gelu(t, approximate="tanh" if case == "gelu_tanh" else "none")
        if case in ("softmax", "log_softmax"):
            return getattr(m, case)(t, -1)
        return m.nn.functional.layer_norm(t, (1024,), m.tensor(w), m.tensor(b))

    res = []
    for m in (ember, torch):
        t = m.tensor(x, requires_grad=True)
        y = fn(m, t)
        y.backward(m.tensor(g))
        res.append((y.detach().numpy(), t.grad.numpy()))
    (y1, g1), (y0, g0) = res
    np.testing.assert_allclose(y1, y0, rtol=2e-6, atol=2e-6)
    np.testing.assert_allclose(g1, g0, rtol=2e-5, atol=2e-5)


@needs_kernels
@needs_torch
def test_layer_norm_weight_and_bias_gradients_match_torch() -> None:
    rng = np.random.default_rng(10)
    x = rng.standard_normal((4, 6, 32)).astype(np.float32)
    g = rng.standard_normal((4, 6, 32)).astype(np.float32)
    w = rng.standard_normal((6, 32)).astype(np.float32)
    b = rng.standard_normal((6, 32)).astype(np.float32)
    grads = []
    for m in (ember, torch):
        t, tw, tb = (m.tensor(a, requires_grad=True) for a in (x, w, b))
        m.nn.functional.layer_norm(t, (6, 32), tw, tb).backward(m.tensor(g))
        grads.append([a.grad.numpy() for a in (t, tw, tb)])
    for a, r in zip(*grads):
        np.testing.assert_allclose(a, r, rtol=1e-5, atol=1e-5)


# -- edges ----------------------------------------------------------------------------------------
@needs_kernels
def test_erf_edges() -> None:
    e64 = EDGES.astype(np.float64)
    with np.errstate(invalid="ignore"):
        assert ulps(L.erf(EDGES), _erf(e64)) <= 0.51 and ulps(L.erfc(EDGES), _erfc(e64)) <= 0.51
    got = L.erf(EDGES)
    assert np.signbit(got[4]) and got[4] == 0  # erf(-0.0) = -0.0
    assert list(L.erf(EDGES[:3])[:2]) == [1, -1] and list(L.erfc(EDGES[:2])) == [0, 2]


@needs_kernels
@needs_torch
@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_edges_as_the_numpy_formula(approximate: str) -> None:
    """inf gives inf, -inf NaN (inf * 0) and -0.0 stays -0.0, as PyTorch's float64 gelu and the
    NumPy formula; the gradient is NaN at +-inf."""
    x = EDGES[:5]
    with L.disabled():
        ref = _np(F.gelu(ember.tensor(x), approximate=approximate))
    got = L.gelu(x, approximate) if approximate == "none" else _gelu_tanh32(x)
    np.testing.assert_array_equal(got, ref)
    assert np.signbit(got[4])
    d = L.gelu_backward(x, np.ones_like(x), approximate)
    assert np.isnan(d[:3]).all() and list(d[3:]) == [0.5, 0.5]
    t = torch.tensor(x.astype(np.float64), requires_grad=True)
    torch.nn.functional.gelu(t, approximate=approximate).backward(torch.ones(5, dtype=torch.float64))
    np.testing.assert_array_equal(np.isnan(t.grad.numpy()), np.isnan(d))


@needs_kernels
def test_gelu_at_huge_and_subnormal_inputs() -> None:
    x = np.array([1e-45, -1e-45, 1e-40, -1e-40, 3e38, -3e38, -20.0, -13.0], np.float32)
    for approximate in ("none", "tanh"):
        y = L.gelu(x) if approximate == "none" else _gelu_tanh32(x)
        assert ulps(y[:4], x[:4] * 0.5) <= 1  # gelu(x) ~ x/2 near 0 (2^-150 is a tie)
        assert y[4] == x[4] and y[5] == 0 and np.signbit(y[5]) and y[6] == 0


@needs_kernels
def test_softmax_edges() -> None:
    inf, nan = np.inf, np.nan
    x = np.array([[0.0, -inf, 1.0], [-inf, -inf, -inf], [1.0, inf, 0.0], [1.0, nan, 2.0],
                  [1e30, -1e30, 0.0], [-1e-45, 1e-45, 0.0]], np.float32)
    with L.disabled(), np.errstate(all="ignore"):
        ref = _np(ember.softmax(ember.tensor(x), -1)), _np(ember.log_softmax(ember.tensor(x), -1))
    got = L.softmax(x), L.softmax(x, log=True)
    for a, r in zip(got, ref):
        np.testing.assert_array_equal(np.isnan(a), np.isnan(r))
        np.testing.assert_allclose(a, r, rtol=1e-6, atol=0)
    one = np.array([[3.0], [-inf], [nan]], np.float32)  # one-element rows
    np.testing.assert_array_equal(L.softmax(one), [[1.0], [nan], [nan]])
    np.testing.assert_array_equal(L.softmax(one, log=True), [[0.0], [nan], [nan]])
    assert L.softmax(np.ones((3, 0), np.float32)) is None  # empty: the formula's copy


@needs_kernels
def test_ops_on_empty_and_one_element_inputs() -> None:
    for shape in [(0,), (0, 5), (1,), (1, 1), (2, 1)]:
        x = ember.ones(shape, requires_grad=True)
        for fn in (ember.erf, F.gelu, lambda t: ember.softmax(t, -1),
                   lambda t, shape=shape: F.layer_norm(t, shape[-1:])):
            y = fn(x)
            y.sum().backward()
            assert y.shape == x.shape and y.dtype == ember.float32
    assert F.layer_norm(ember.ones(2, 1), (1,)).tolist() == [[0.0], [0.0]]


@needs_kernels
def test_create_graph_keeps_the_formula_and_double_backward() -> None:
    x = ember.tensor([0.3, -1.2, 2.0], requires_grad=True)
    for approximate in ("none", "tanh"):
        (g,) = ember.autograd.grad(F.gelu(x, approximate=approximate).sum(), x, create_graph=True)
        (gg,) = ember.autograd.grad(g.sum(), x)
        with L.disabled():
            (g0,) = ember.autograd.grad(F.gelu(x, approximate=approximate).sum(), x,
                                        create_graph=True)
            (gg0,) = ember.autograd.grad(g0.sum(), x)
        np.testing.assert_allclose(g.detach().numpy(), g0.detach().numpy(), rtol=1e-6)
        # (the tanh form's formula takes torch.tanh: the kernel's against NumPy's, an ulp or two
        # apart, in second-derivative terms that cancel to 1e-6 relative)
        np.testing.assert_allclose(gg.numpy(), gg0.numpy(), rtol=1e-6 if approximate == "none"
                                   else 1e-5)


# -- threads ------------------------------------------------------------------------------------
def _all_kernels(x: np.ndarray, g: np.ndarray) -> list[np.ndarray]:
    rows = x.reshape(-1, 1000)
    grow = g.reshape(-1, 1000)
    w, b = grow[0].copy(), grow[1].copy()
    y, mean, rstd = L.layer_norm(rows, w, b, 1, 1e-5)
    out = [L.erf(x), L.erfc(x), L.erf_backward(x, g), L.gelu(x), L.gelu_backward(x, g),
           L.gelu_backward(x, g, "tanh"), L.softmax(rows), L.softmax(rows, log=True),
           L.softmax_backward(L.softmax(rows), grow), y, mean, rstd,
           *L.layer_norm_backward(rows, w, mean, rstd, grow, 1, (True, True, True))]
    x64 = x.astype(np.float64)
    out += [L.gelu(x64, "tanh"), L.softmax(x64.reshape(-1, 1000)),
            *L.layer_norm(x64.reshape(-1, 1000), None, None, 1, 1e-5)]
    return out


@needs_kernels
def test_results_do_not_depend_on_the_thread_count() -> None:
    rng = np.random.default_rng(12)
    x = rng.standard_normal(300_000).astype(np.float32)
    g = rng.standard_normal(300_000).astype(np.float32)
    saved = L.active.get_num_threads()
    try:
        L.set_num_threads(1)
        ref = _all_kernels(x, g)
        for n in (2, 3, 7):
            L.set_num_threads(n)
            assert L.active.get_num_threads() in (1, n)
            for a, r in zip(_all_kernels(x, g), ref):
                np.testing.assert_array_equal(a, r)
    finally:
        L.set_num_threads(saved)


@needs_kernels
def test_set_num_threads_reaches_the_kernels() -> None:
    saved = L.active.get_num_threads()
    try:
        ember.set_num_threads(3)
        assert L.active.get_num_threads() in (1, 3)  # (1: a build without threads)
    finally:
        ember.set_num_threads(saved)


@needs_kernels
def test_kernels_from_several_python_threads() -> None:
    import threading

    x = np.random.default_rng(13).standard_normal(200_000).astype(np.float32)
    ref = L.gelu(x)
    errors = []

    def work() -> None:
        for _ in range(20):
            if not np.array_equal(L.gelu(x), ref):
                errors.append(1)

    saved = L.active.get_num_threads()
    L.set_num_threads(2)
    try:
        threads = [threading.Thread(target=work) for _ in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert not errors and not any(t.is_alive() for t in threads)
    finally:
        L.set_num_threads(saved)


@needs_kernels
@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork")
def test_a_forked_child_runs_the_kernels() -> None:
    """The pool's workers do not survive fork: the child starts its own (no deadlock)."""
    x = np.random.default_rng(14).standard_normal(200_000).astype(np.float32)
    saved = L.active.get_num_threads()
    L.set_num_threads(2)
    try:
        ref = L.gelu(x)  # the parent's workers exist now
        code = ("import numpy as np, os, sys; from ember import _kernels_loader as L; "
                "x = np.random.default_rng(14).standard_normal(200_000).astype(np.float32); "
                "L.set_num_threads(2); L.gelu(x); pid = os.fork(); "
                "r = L.gelu(x) if pid == 0 else None; "
                "os._exit(0 if r is not None and np.isfinite(r).all() else 1) if pid == 0 else None; "
                "sys.exit(os.waitpid(pid, 0)[1] != 0)")
        out = subprocess.run([sys.executable, "-c", code], timeout=120, capture_output=True,
                             text=True, env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
        assert out.returncode == 0, out.stderr
        assert np.array_equal(L.gelu(x), ref)
    finally:
        L.set_num_threads(saved)


# -- the loader and the build -------------------------------------------------------------------
def test_pure_python_switch_turns_the_kernels_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EMBER_PURE_PYTHON", "1")
    mod, why = L._load()
    assert mod is None and "EMBER_PURE_PYTHON" in why


@needs_kernels
def test_a_stale_extension_is_not_used(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(L, "source_hash", lambda files, root=None: "0" * 64)
    with pytest.warns(RuntimeWarning, match="stale.*build_ext --inplace"):
        mod, why = L._load()
    assert mod is None and "stale" in why


def test_setup_builds_the_listed_sources() -> None:
    text = (ROOT / "setup.py").read_text()
    listed = re.search(r"KERNELS_C_SOURCES = (\(.*?\))", text).group(1)
    assert eval(listed) == L.C_SOURCES  # noqa: S307 - a literal tuple from our own file
    assert "-ffp-contract=off" in text and "-ffast-math" not in text.replace("never -ffast-math", "")


def test_a_build_without_a_compiler_skips_the_kernels(tmp_path: Path) -> None:
    """A failed kernel build never fails the install: one line, and the ops use NumPy."""
    pytest.importorskip("setuptools")
    out = subprocess.run(
        [sys.executable, "setup.py", "-q", "build_ext", "--build-lib", str(tmp_path / "lib"),
         "--build-temp", str(tmp_path / "tmp")],
        capture_output=True, text=True, timeout=300, cwd=ROOT,
        env={**os.environ, "CC": "/bin/false", "EMBER_REQUIRE_NATIVE": ""})
    assert out.returncode == 0, out.stderr
    assert "ember._kernels was not built" in out.stderr
    assert not list((tmp_path / "lib").rglob("_kernels*.so"))


# -- activations built on exp (issue 29, second slice) --------------------------------------------
def _sig64(x: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1.0, e) / (1.0 + e)


SELU = (1.6732632423543772848170429916717, 1.0507009873554804934193349852946, 1.0)


@needs_kernels
def test_activations_are_within_one_ulp() -> None:
    g = np.random.default_rng(21).standard_normal(X.size).astype(np.float32)
    g64 = g.astype(np.float64)
    s, sc = _sig64(X64), _sig64(-X64)
    with np.errstate(over="ignore", invalid="ignore"):
        sp = np.logaddexp(0, X64)
        t = np.tanh(sp)
        dmish = t + X64 * s / np.cosh(sp) ** 2
    # sigmoid, silu and their backward compute in float64 lanes and round once: 0.501 ulp at
    # most (test_kernels_f32.py sweeps them densely)
    assert ulps(L.activation("sigmoid", X), s) < 0.51
    assert ulps(L.activation("silu", X), X64 * s) < 0.51
    assert ulps(L.activation("mish", X), X64 * t) <= 0.51
    assert ulps(L.activation_backward("logsigmoid", X, g), g64 * sc) < 0.51
    # the derivatives of silu (at x = -1.278...) and mish (x = -1.19...) cross zero: there what
    # remains is the absolute error of a float64 sum of terms near 1, far below float32's
    slack = 1e-9 * np.abs(g64)
    assert ulps(L.activation_backward("silu", X, g), g64 * s * (1 + X64 * sc), slack) < 0.51
    assert ulps(L.activation_backward("mish", X, g), g64 * dmish, slack) <= 0.51
    for beta, thr in ((1.0, 20.0), (2.0, 5.0), (0.5, 20.0), (0.3, 1.0)):
        bx = (X * np.float32(beta)).astype(np.float64)
        b32 = float(np.float32(beta))
        exact = np.where(bx > np.float32(thr), X64, np.logaddexp(0, bx) / b32)
        assert ulps(L.activation("softplus", X, beta, thr), exact) < 1.0, beta
        exact = np.where(bx > np.float32(thr), g64, g64 * _sig64(bx))
        assert ulps(L.activation_backward("softplus", X, g, beta, thr), exact) < 0.51, beta
    for alpha, scale, s_in in ((1.0, 1.0, 1.0), SELU, (2.0, 1.0, 0.5), (0.5, 1.0, 2.0)):
        pos32 = (X * np.float32(scale)).astype(np.float64)  # float32 product, as PyTorch's
        with np.errstate(over="ignore", invalid="ignore"):
            exact = np.where(X64 > 0, pos32, alpha * scale * np.expm1(X64 * s_in))
            d = np.where(X64 <= 0, g64 * np.exp(X64 * s_in) * (alpha * scale * s_in),
                         (g * np.float32(scale)).astype(np.float64))
        # (float32 arithmetic, as sigmoid's: within 1 ulp)
        assert ulps(L.activation("elu", X, alpha, scale, s_in), exact) < 1.0
        assert ulps(L.activation_backward("elu", X, g, alpha, scale, s_in), d) < 1.0


@needs_kernels
def test_float64_sigmoid_and_silu_are_within_a_few_ulp() -> None:
    x = np.concatenate([X64, np.random.default_rng(4).standard_normal(10_000) * 30])
    g = np.random.default_rng(5).standard_normal(x.size)
    s, sc = _sig64(x), _sig64(-x)
    eps = np.finfo(np.float64).eps
    assert np.max(np.abs(L.activation("sigmoid", x) - s) / np.maximum(s, 1e-300)) <= 3 * eps
    ok = np.abs(x * s) > 1e-300
    rel = np.abs(L.activation("silu", x) - x * s)[ok] / np.abs(x * s)[ok]
    assert np.max(rel) <= 4 * eps
    d = g * s * (1 + x * sc)
    err = np.abs(L.activation_backward("silu", x, g) - d) - 1e-15 * np.abs(g)
    assert np.max(err / np.maximum(np.abs(d), 1e-300)) <= 4 * eps


@needs_kernels
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_tanh_and_sigmoid_backward_are_the_numpy_formulas_bit_for_bit(dtype) -> None:
    rng = np.random.default_rng(6)
    x = (rng.standard_normal(100_003) * 3).astype(dtype)
    g = rng.standard_normal(x.size).astype(dtype)
    y, s = np.tanh(x), _sig64(x.astype(np.float64)).astype(dtype)
    np.testing.assert_array_equal(L.activation_backward("tanh", y, g), g * (1 - y * y))
    np.testing.assert_array_equal(L.activation_backward("sigmoid", s, g), g * s * (1 - s))


ACTS = {
    "sigmoid": lambda m, t: m.sigmoid(t), "tanh": lambda m, t: m.tanh(t),
    "silu": lambda m, t: m.nn.functional.silu(t), "mish": lambda m, t: m.nn.functional.mish(t),
    "softplus": lambda m, t: m.nn.functional.softplus(t),
    "softplus_b2_t10": lambda m, t: m.nn.functional.softplus(t, beta=2.0, threshold=10.0),
    "elu": lambda m, t: m.nn.functional.elu(t), "selu": lambda m, t: m.nn.functional.selu(t),
    "celu": lambda m, t: m.nn.functional.celu(t, alpha=2.0),
    "elu_a05": lambda m, t: m.nn.functional.elu(t, alpha=0.5),
    "logsigmoid": lambda m, t: m.nn.functional.logsigmoid(t),
}


@needs_kernels
@needs_torch
@pytest.mark.parametrize("case", sorted(ACTS))
def test_activations_match_torch(case: str) -> None:
    rng = np.random.default_rng(10)
    x = np.concatenate([(rng.standard_normal(70_000) * 4), [np.inf, -np.inf, np.nan, 0.0, -0.0,
                        1e-45, -1e-45, 1e-40, -1e-40, 3.4e38, -3.4e38, 2e19, -2e19, 20.0, 10.0,
                        -88.0, 89.0, 40.5, -1.278, -1.19]]).astype(np.float32)
    g = rng.standard_normal(x.size).astype(np.float32)
    res = []
    for m in (ember, torch):
        t = m.tensor(x, requires_grad=True)
        y = ACTS[case](m, t)
        y.backward(m.tensor(g))
        res.append((y.detach().numpy(), t.grad.numpy()))
    (y1, g1), (y0, g0) = res
    assert y1.dtype == g1.dtype == np.float32
    # PyTorch's float32 loops flush some results below 1e-37 to 0 and round a few ulp further
    # from the float64 value than the kernels (which are within 1 ulp of it: above)
    np.testing.assert_allclose(y1, y0, rtol=3e-6, atol=1e-37, equal_nan=True)
    if "elu" in case:  # at a NaN x PyTorch's vector loop gives NaN, its scalar loop (and ours)
        g0 = np.where(np.isnan(x), g1, g0)  # grad * scale
    assert np.array_equal(np.isnan(g1), np.isnan(g0))
    fin = ~np.isnan(g0)
    # (near the zeros of silu's and mish's derivatives, relative to the gradient)
    bad = np.abs(g1 - g0)[fin] > 3e-6 * np.abs(g0[fin]) + 1e-6 * np.abs(g[fin]) + 1e-37
    assert not bad.any(), (x[fin][bad][:5], g1[fin][bad][:5], g0[fin][bad][:5])


@needs_kernels
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_activations_agree_with_their_numpy_formulas(dtype) -> None:
    rng = np.random.default_rng(13)
    x = (rng.standard_normal((64, 1031)) * 4).astype(dtype)
    x[0, :6] = [0.0, -0.0, np.inf, -np.inf, 30.0, -30.0]
    g = rng.standard_normal(x.shape).astype(dtype)
    tol = dict(rtol=3e-6, atol=1e-30) if dtype == np.float32 else dict(rtol=1e-14, atol=1e-300)
    # (a result 1 ulp below 1 where the formula rounds to 1 moves the gradient by 6e-8 |grad|,
    # tanh's grad (1 - y y) by 1.2e-7 |grad|)
    gtol = dict(rtol=3e-6, atol=0) if dtype == np.float32 else dict(rtol=1e-14, atol=1e-15)
    gabs = 1.3e-7 * np.abs(g) if dtype == np.float32 else 0.0
    for name, fn in ACTS.items():
        def run(fn=fn):
            t = ember.tensor(x, requires_grad=True)
            y = fn(ember, t)
            y.backward(ember.tensor(g))
            return _np(y), t.grad.numpy()
        (y1, g1), (y0, g0) = _both(run)
        assert y1.dtype == y0.dtype == g1.dtype == dtype, name
        with np.errstate(invalid="ignore"):
            np.testing.assert_allclose(y1, y0, **tol, equal_nan=True, err_msg=name)
            near = g0 + np.clip(np.nan_to_num(g1 - g0), -gabs, gabs)
            np.testing.assert_allclose(g1, near, **gtol, equal_nan=True, err_msg=name)


@needs_kernels
def test_activation_kernels_apply_only_where_they_should() -> None:
    x = np.ones((4, 6), np.float32)
    assert L.activation("mish", x) is not None and L.activation("silu", x[:, ::2]) is None
    assert L.activation("mish", x.astype(np.float64)) is None  # float32 only
    assert L.activation("silu", x.astype(np.float64)) is not None
    assert L.activation("silu", x.astype(np.float16)) is None
    assert L.activation_backward("silu", x, x.astype(np.float64)) is None
    assert L.activation_backward("elu", x, x[:1], 1.0, 1.0, 1.0) is None  # broadcast grad
    with L.disabled():
        assert L.activation("sigmoid", x) is None
    with pytest.raises(TypeError):
        L.active.elu(x, np.empty_like(x), 1.0)  # parameters checked
    with pytest.raises(TypeError):
        L.active.mish(x.astype(np.float64), np.empty((4, 6)))


@needs_kernels
def test_activations_do_not_depend_on_the_thread_count() -> None:
    rng = np.random.default_rng(14)
    x = (rng.standard_normal(300_001) * 4).astype(np.float32)
    g = rng.standard_normal(x.size).astype(np.float32)

    def all_of() -> list:
        out = [L.activation(n, x) for n in ("sigmoid", "silu", "mish")]
        out += [L.activation_backward(n, x, g) for n in ("silu", "mish", "logsigmoid", "tanh")]
        out += [L.activation("softplus", x, 1.0, 20.0), L.activation("elu", x, *SELU),
                L.activation_backward("elu", x, g, *SELU),
                L.activation_backward("softplus", x, g, 2.0, 3.0)]
        return out

    saved = L.active.get_num_threads()
    try:
        L.set_num_threads(1)
        ref = all_of()
        for n in (2, 3):
            L.set_num_threads(n)
            for a, r in zip(all_of(), ref):
                np.testing.assert_array_equal(a, r)
    finally:
        L.set_num_threads(saved)


# -- optimizer steps: bit for bit the NumPy paths ---------------------------------------------------
OPTS = [
    ("Adam", dict(lr=1e-3)), ("Adam", dict(lr=1e-2, amsgrad=True, weight_decay=0.1)),
    ("AdamW", dict(lr=1e-2, weight_decay=0.1)), ("AdamW", dict(lr=3e-3, maximize=True, amsgrad=True)),
    ("AdamW", dict(lr=1e-3, weight_decay=0.0, eps=0.0)),
    ("SGD", dict(lr=0.1, momentum=0.9)),
    ("SGD", dict(lr=0.1, momentum=0.9, nesterov=True, weight_decay=1e-2)),
    ("SGD", dict(lr=0.05, momentum=0.5, dampening=0.3, maximize=True)),
    ("RMSprop", dict(lr=1e-2)),
    ("RMSprop", dict(lr=1e-2, centered=True, momentum=0.9, weight_decay=0.1)),
    ("RMSprop", dict(lr=1e-3, alpha=0.9, momentum=0.5, maximize=True)),
    ("RMSprop", dict(lr=1e-2, centered=True, eps=0.0)),
]


def _steps(name: str, kw: dict, dtype, n: int = 100_003) -> tuple:
    rng = np.random.default_rng(30)
    p = ember.nn.Parameter(ember.tensor(rng.standard_normal((n // 7, 7)).astype(dtype)))
    opt = getattr(ember.optim, name)([p], **kw)
    for i in range(4):
        g = rng.standard_normal(p.shape).astype(dtype) * (10.0 ** -i)
        g.flat[::997] = 0.0
        if i == 3:
            g.flat[5] = np.nan  # a NaN gradient spreads the same way
        p.grad = ember.tensor(g)
        opt.step()
    state = {k: v.numpy().copy() for k, v in opt.state[p].items()}
    return p.detach().numpy().copy(), state


@needs_kernels
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("case", range(len(OPTS)))
def test_optimizer_steps_are_the_numpy_path_bit_for_bit(case: int, dtype) -> None:
    name, kw = OPTS[case]
    on, off = _both(lambda: _steps(name, kw, dtype))
    np.testing.assert_array_equal(on[0], off[0])
    assert on[0].dtype == dtype and sorted(on[1]) == sorted(off[1])
    for k in on[1]:
        np.testing.assert_array_equal(on[1][k], off[1][k], err_msg=k)
    saved = L.active.get_num_threads()
    try:
        L.set_num_threads(3)
        again = _steps(name, kw, dtype)
    finally:
        L.set_num_threads(saved)
    np.testing.assert_array_equal(again[0], on[0])


@needs_kernels
def test_optimizer_kernels_apply_only_where_they_should() -> None:
    x = np.ones(8, np.float32)
    args = (1.0, 0.9, 0.999, 0.5, 1e-8, 1e-3)
    assert L.adam_step(x, x.copy(), x.copy(), x.copy(), None, *args)
    assert not L.adam_step(x, x.astype(np.float64), x.copy(), x.copy(), None, *args)
    assert not L.adam_step(x, np.ones(16, np.float32)[::2], x.copy(), x.copy(), None, *args)
    assert not L.adam_step(x.astype(np.float16), x, x, x, None, *args)
    assert L.sgd_momentum_step(x, x.copy(), x.copy(), 0.9, 0.0, 0.1, False)
    assert not L.sgd_momentum_step(x, x.copy(), np.ones(7, np.float32), 0.9, 0.0, 0.1, False)
    ro = x.copy()
    ro.flags.writeable = False
    assert not L.sgd_momentum_step(ro, x.copy(), x.copy(), 0.9, 0.0, 0.1, False)
    assert L.rmsprop_step(x, x.copy(), x.copy(), None, x.copy(), 0.99, 1e-8, 0.9, 0.1)
    assert not L.rmsprop_step(x, x.copy(), x.copy(), np.ones(7, np.float32), None, 0.99, 1e-8,
                              0.0, 0.1)
    assert not L.rmsprop_step(x, x.astype(np.float64), x.copy(), None, None, 0.99, 1e-8, 0.0, 0.1)
    with L.disabled():
        assert not L.adam_step(x, x.copy(), x.copy(), x.copy(), None, *args)
        assert not L.rmsprop_step(x, x.copy(), x.copy(), None, None, 0.99, 1e-8, 0.0, 0.1)


@needs_kernels
def test_the_optimizers_take_the_kernels(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []
    for fn in ("adam_step", "sgd_momentum_step", "rmsprop_step", "adam_many", "sgd_many",
               "rmsprop_many"):
        real = getattr(L, fn)
        monkeypatch.setattr(L, fn, lambda *a, real=real, fn=fn: bool(real(*a))
                            and (calls.append(fn) or True))  # (the result passed on)
    for name, kw in (("AdamW", {}), ("SGD", dict(lr=0.1, momentum=0.9)),
                     ("RMSprop", dict(momentum=0.9, centered=True)), ("RMSprop", {})):
        p = ember.nn.Parameter(ember.ones(100))
        opt = getattr(ember.optim, name)([p], **kw)
        for _ in range(2):
            p.grad = ember.ones(100)
            opt.step()
    # (from the second step a group goes whole: adam_many, sgd_many; SGD's first step makes
    # the momentum buffers)
    assert calls == ["adam_step", "adam_many", "sgd_many"] + ["rmsprop_step", "rmsprop_many"] * 2


@needs_kernels
@needs_torch
@pytest.mark.parametrize("kw", [dict(), dict(centered=True, momentum=0.9, weight_decay=0.1),
                                dict(alpha=0.9, momentum=0.5, maximize=True)])
def test_rmsprop_kernel_matches_torch(kw: dict) -> None:
    rng = np.random.default_rng(31)
    w0 = rng.standard_normal(5000).astype(np.float32)
    grads = [rng.standard_normal(5000).astype(np.float32) for _ in range(5)]
    res = []
    for m in (ember, torch):
        p = m.nn.Parameter(m.tensor(w0.copy()))
        opt = m.optim.RMSprop([p], lr=1e-2, **kw)
        for g in grads:
            p.grad = m.tensor(g)
            opt.step()
        res.append(p.detach().numpy())
    assert res[0].dtype == np.float32
    # (centered: sqrt(v - a a) cancels in the first steps; the NumPy path differs alike)
    np.testing.assert_allclose(res[0], res[1], rtol=1e-5, atol=3e-5 if kw else 1e-6)


# -- rms_norm ------------------------------------------------------------------------------------
@needs_kernels
@pytest.mark.parametrize("shape,k", [((64, 4096), 1), ((8, 3, 5, 7), 2), ((3, 33), 1)])
@pytest.mark.parametrize("with_w", [True, False])
def test_rms_norm_against_float64(shape: tuple, k: int, with_w: bool) -> None:
    rng = np.random.default_rng(40)
    x = (rng.standard_normal(shape) * 3).astype(np.float32)
    w = rng.standard_normal(shape[-k:]).astype(np.float32) if with_w else None
    g = rng.standard_normal(shape).astype(np.float32)
    axes = tuple(range(x.ndim - k, x.ndim))
    x64, g64 = x.astype(np.float64), g.astype(np.float64)
    r64 = 1 / np.sqrt((x64 * x64).mean(axis=axes, keepdims=True) + 1e-6)
    y, r = L.rms_norm(x, w, k, 1e-6)
    assert y.dtype == r.dtype == np.float32 and r.shape == x.shape[:x.ndim - k] + (1,) * k
    assert ulps(r, r64) <= 0.51  # float64 sums, one rounding
    # y = (x r) w in float32 from the float32 rstd (the formula's order): two or three
    # roundings of half an ulp, each relative to its own value's binade
    w64 = 1.0 if w is None else w.astype(np.float64)
    assert ulps(y, x64 * r64 * w64) <= (2.5 if w is not None else 1.5)
    gx, gw = L.rms_norm_backward(x, w, r, g, k, (True, True))
    gh = g64 * w64
    xh = x64 * r64
    exact = r64 * (gh - xh * (gh * xh).mean(axis=axes, keepdims=True))
    scale = np.abs(gh).max()
    assert np.max(np.abs(gx - exact)) <= 4e-7 * scale
    if with_w:
        lead = tuple(range(x.ndim - k))
        np.testing.assert_allclose(gw, (g64 * xh).sum(axis=lead), rtol=1e-5,
                                   atol=1e-6 * np.abs(g64 * xh).sum(axis=lead).max())
    else:
        assert gw is None


@needs_kernels
@needs_torch
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_rms_norm_matches_torch_and_the_numpy_formula(dtype) -> None:
    rng = np.random.default_rng(41)
    x = (rng.standard_normal((96, 1000)) * 2).astype(dtype)
    w = rng.standard_normal(1000).astype(dtype)
    g = rng.standard_normal(x.shape).astype(dtype)

    def run(m):
        t, wt = m.tensor(x, requires_grad=True), m.tensor(w, requires_grad=True)
        y = m.nn.functional.rms_norm(t, (1000,), wt, 1e-5)
        y.backward(m.tensor(g))
        return y.detach().numpy(), t.grad.numpy(), wt.grad.numpy()

    tol = dict(rtol=2e-5, atol=2e-5) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-12)
    ours, formula = _both(lambda: run(ember))
    for a, b, c in zip(ours, formula, run(torch)):
        assert a.dtype == dtype and a.shape == b.shape
        np.testing.assert_allclose(a, c, **tol)
        np.testing.assert_allclose(a, b, **tol)


@needs_kernels
def test_rms_norm_double_backward_and_thread_count() -> None:
    rng = np.random.default_rng(42)
    x = rng.standard_normal((6, 9)).astype(np.float64)
    w = rng.standard_normal(9)
    t, wt = ember.tensor(x, requires_grad=True), ember.tensor(w, requires_grad=True)
    assert ember.autograd.gradcheck(lambda a, b: F.rms_norm(a, (9,), b), (t, wt))
    assert ember.autograd.gradgradcheck(lambda a, b: F.rms_norm(a, (9,), b), (t, wt))
    big = rng.standard_normal((300, 1001)).astype(np.float32)
    gw = rng.standard_normal(1001).astype(np.float32)
    saved = L.active.get_num_threads()
    try:
        outs = []
        for n in (1, 2, 3):
            L.set_num_threads(n)
            y, r = L.rms_norm(big, gw, 1, 1e-6)
            outs.append((y, r, *L.rms_norm_backward(big, gw, r, big[::-1].copy(), 1, (1, 1))))
    finally:
        L.set_num_threads(saved)
    for o in outs[1:]:
        for a, b in zip(o, outs[0]):
            np.testing.assert_array_equal(a, b)


# -- cross_entropy's backward over (N, C) logits --------------------------------------------------
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_cross_entropy_backward_matches_its_formula_and_torch(reduction: str, dtype) -> None:
    rng = np.random.default_rng(50)
    x = (rng.standard_normal((37, 11)) * 3).astype(dtype)
    t = rng.integers(0, 11, 37)
    t[::5] = -100  # ignored
    w = rng.uniform(0.5, 2, 11).astype(dtype)
    for weight in (None, w):
        xt = ember.tensor(x, requires_grad=True)
        wt_ = None if weight is None else ember.tensor(weight)
        loss = F.cross_entropy(xt, ember.tensor(t), weight=wt_, reduction=reduction)
        g = np.ones(loss.shape, dtype) if reduction != "none" else rng.standard_normal(37).astype(dtype)
        loss.backward(ember.tensor(g))
        # the formula: g * wt * where(onehot, p - 1, p), g divided by the summed weight for mean
        m = x.max(axis=1, keepdims=True)
        e = np.exp(x - m)
        p = e / e.sum(axis=1, keepdims=True)
        valid = t != -100
        tc = np.where(valid, t, 0)
        wt = (weight[tc] if weight is not None else np.ones(37, dtype)) * valid
        gg = g / wt.sum() if reduction == "mean" else g
        gg = gg[:, None] if reduction == "none" else gg
        onehot = np.arange(11)[None, :] == tc[:, None]
        ref = gg * wt[:, None] * np.where(onehot, p - 1, p)
        assert xt.grad.numpy().dtype == dtype
        np.testing.assert_allclose(xt.grad.numpy(), ref, rtol=1e-5 if dtype == np.float32 else 1e-12,
                                   atol=1e-7 if dtype == np.float32 else 1e-15)
        if torch is not None:
            tx = torch.tensor(x, requires_grad=True)
            tl = torch.nn.functional.cross_entropy(
                tx, torch.tensor(t), weight=None if weight is None else torch.tensor(weight),
                reduction=reduction)
            tl.backward(torch.tensor(g))
            np.testing.assert_allclose(xt.grad.numpy(), tx.grad.numpy(), rtol=2e-5, atol=2e-6)


@needs_kernels
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_cross_entropy_forward_kernel_matches_the_formula_and_torch(dtype) -> None:
    rng = np.random.default_rng(51)
    x = (rng.standard_normal((40, 300)) * 4).astype(dtype)
    x[1, 7] = np.inf
    x[2, :] = -np.inf
    x[3, 9] = np.nan
    x[4, :] = 1e30
    t = rng.integers(0, 300, 40)
    probs = rng.dirichlet(np.ones(300), 40).astype(dtype)
    p, lse = L.softmax_lse(x[5:], True)
    x64 = x[5:].astype(np.float64)
    m = x64.max(axis=1, keepdims=True)
    exact = np.log(np.exp(x64 - m).sum(axis=1, keepdims=True)) + m
    if dtype == np.float32:
        assert ulps(lse, exact) <= 0.51 and lse.shape == (35, 1)
    assert L.softmax_lse(x, False)[0] is None
    for target in (t, probs):
        for reduction in ("none", "mean"):
            def run(m, target=target, reduction=reduction):
                xt = m.tensor(x, requires_grad=True)
                loss = m.nn.functional.cross_entropy(xt, m.tensor(target), reduction=reduction)
                loss.backward(m.ones_like(loss))
                return loss.detach().numpy(), xt.grad.numpy()
            on, off = _both(lambda run=run: run(ember))
            for a, b in zip(on, off):
                assert a.dtype == dtype
                with np.errstate(invalid="ignore"):
                    np.testing.assert_allclose(a, b, rtol=2e-6, atol=1e-7, equal_nan=True)
            if torch is not None and reduction == "none":  # (rows 0-4: the formula's edges,
                for a, b in zip(on, run(torch)):  # which the kernel keeps, differ from PyTorch's)
                    np.testing.assert_allclose(a[5:], b[5:], rtol=2e-5, atol=1e-6)


@needs_torch
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_nll_loss_backward_scatters_as_torch(reduction: str) -> None:
    rng = np.random.default_rng(52)
    x = rng.standard_normal((29, 13)).astype(np.float32)
    t = rng.integers(0, 13, 29)
    t[::4] = -100
    w = rng.uniform(0.5, 2, 13).astype(np.float32)
    g = np.float32(-2.0) if reduction != "none" else rng.standard_normal(29).astype(np.float32)
    res = []
    for m in (ember, torch):
        xt = m.tensor(x, requires_grad=True)
        loss = m.nn.functional.nll_loss(xt, m.tensor(t), weight=m.tensor(w), reduction=reduction)
        loss.backward(m.tensor(g))
        res.append(xt.grad.numpy())
    assert res[0].dtype == np.float32
    np.testing.assert_allclose(res[0], res[1], rtol=1e-6, atol=0)
    np.testing.assert_array_equal(np.signbit(res[0]), np.signbit(res[1]))  # +0 off the targets


@needs_kernels
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("transposed", [False, True])
@pytest.mark.parametrize("direct", [False, True])
def test_dropout_noise_kernel_draws_the_numpy_paths_stream(dtype, transposed, direct,
                                                           monkeypatch) -> None:
    """bernoulli53 reads the generator's words through NumPy's bit generator interface (or, where
    the loader's one check passes, steps its MT19937 state itself): the same mask as the NumPy
    path (kernels off), the generator left in the same state, PyTorch's mask."""
    if direct and not L._check_direct_mt(L.active):
        pytest.skip("this NumPy's MT19937 state is not the layout the kernel knows")
    monkeypatch.setattr(L, "_direct_mt", direct)

    def run(mod):
        mod.manual_seed(11)
        x = mod.ones(40, 70, dtype=getattr(mod, dtype))
        if transposed:
            x = x.t()
        y = mod.nn.functional.dropout(x, 0.3)
        after = mod.rand(5)  # where the stream was left
        return y.numpy(), after.numpy()

    fast = run(ember)
    with L.disabled():
        slow = run(ember)
    for a, b in zip(fast, slow):
        np.testing.assert_array_equal(a, b)
    assert fast[0].dtype == np.dtype(dtype)
    assert set(np.unique(fast[0])) <= {0.0, fast[0].max()}
    if HAVE_TORCH:
        for a, b in zip(fast, run(torch)):
            np.testing.assert_array_equal(a, b)


@needs_kernels
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_softmax_lse_short_rows_equal_the_lane_path(dtype) -> None:
    """Rows of at most 16 (a classifier's few classes) take a branch without the unused lanes;
    padding each row with -inf to 32 columns runs the lane path on the same terms (exp(-inf) adds
    +0.0): softmax and logsumexp must agree bit for bit."""
    rng = np.random.default_rng(3)
    for n in range(1, 17):
        x = (rng.standard_normal((300, n)) * 6).astype(dtype)
        x[rng.random(x.shape) < 0.03] = -np.inf
        x[7] = -np.inf  # a row of -inf only
        x[9, 0] = np.nan
        p, lse = np.empty_like(x), np.empty((300, 1), dtype)
        L.active.softmax_lse(x, p, lse, n)
        wide = np.full((300, 32), -np.inf, dtype)
        wide[:, :n] = x
        pw, lsew = np.empty_like(wide), np.empty((300, 1), dtype)
        L.active.softmax_lse(wide, pw, lsew, 32)
        np.testing.assert_array_equal(lse, lsew)
        np.testing.assert_array_equal(p, pw[:, :n])
        lse_only = np.empty((300, 1), dtype)
        L.active.softmax_lse(x, None, lse_only, n)
        np.testing.assert_array_equal(lse_only, lse)


@needs_kernels
def test_direct_mt19937_twist_gives_numpys_words() -> None:
    """The kernel's own MT19937 twist (three vectorised runs) steps NumPy's state as NumPy does:
    the draws before the first twist tell whether the state's layout is the one the kernel
    knows (else skip); every draw after it, over many twists, must then be NumPy's."""
    a, b = np.random.MT19937(2024), np.random.MT19937(2024)
    a.random_raw(100)
    b.random_raw(100)
    n = 20000  # 40,000 words: 64 twists
    out = np.empty(n, np.float64)
    L.active.bernoulli53(a.capsule, 1 << 52, out, 1.0, True)
    words = b.random_raw(2 * n).astype(np.uint64)
    draws = (words[0::2] << np.uint64(32)) | words[1::2]
    want = ((draws & np.uint64((1 << 53) - 1)) < np.uint64(1 << 52)).astype(np.float64)
    before_twist = (624 - 100) // 2
    if not np.array_equal(out[:before_twist], want[:before_twist]):
        pytest.skip("this NumPy's MT19937 state is not the layout the kernel knows")
    np.testing.assert_array_equal(out, want)
    assert a.random_raw(3).tolist() == b.random_raw(3).tolist()  # the state left alike


@needs_kernels
@pytest.mark.parametrize("direct", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_mt_uniform_gives_the_numpy_paths_uniforms(direct, dtype, monkeypatch) -> None:
    """rand/uniform_/normal_'s uniforms from one kernel pass (mt_uniform) equal ops/_mt19937.py's
    NumPy path (unit24: low 24 bits of a word; unit53: low 53 bits of a 64-bit draw), value for
    value across chunk edges, and leave the generator where the NumPy path leaves it."""
    from ember.ops import _mt19937

    if direct and not L._check_direct_mt(L.active):
        pytest.skip("this NumPy's MT19937 state is not the layout the kernel knows")
    monkeypatch.setattr(L, "_direct_mt", direct)
    unit = _mt19937.unit24 if dtype == np.float32 else _mt19937.unit53
    for n in (65, 1000, 1024, 2049, 5000, 70001):
        a, b = np.random.MT19937(n), np.random.MT19937(n)
        got = L.mt_uniform(a, n, dtype)
        with L.disabled():
            want = unit(b, n)
        assert got.dtype == want.dtype == dtype
        np.testing.assert_array_equal(got, want)
        assert a.random_raw(3).tolist() == b.random_raw(3).tolist()
