"""Everyday ops made as fast as PyTorch's (issue 29, the survey's slow list): nan_to_num as one
C pass (ember/_kernels.c "nan_to_num"), and the NumPy-level fixes that follow it. Each keeps its
values bit for bit (kernel on and off; PyTorch's where stated) and its dtype."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember import _kernels_loader as L
from helpers import HAVE_TORCH, torch

needs_kernels = pytest.mark.skipif(L.active is None, reason=f"kernels off: {L.reason}")
needs_torch = pytest.mark.skipif(not HAVE_TORCH, reason="PyTorch is not installed")

EDGES = np.array([-0.0, 0.0, np.nan, -np.nan, -1, 2, -np.inf, np.inf, 1e-45, 3e38, -3e38],
                 np.float64)


def _values(dtype: type) -> np.ndarray:
    rng = np.random.default_rng(0)
    x = np.concatenate([np.tile(EDGES, 500), rng.standard_normal(20_011) * 3]).astype(dtype)
    bits = x.view(np.uint32 if dtype == np.float32 else np.uint64)
    bits[2::97] |= 0x7f800123 if dtype == np.float32 else 0x7ff0000000000123  # NaN payloads
    return x


NAN_ARGS = [{}, {"nan": 1.5}, {"posinf": 7.0, "neginf": -8.0}, {"nan": -0.0, "posinf": 1e300},
            {"nan": 2, "posinf": 3, "neginf": 4}]


@needs_kernels
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("kw", NAN_ARGS)
def test_nan_to_num_kernel_equals_the_numpy_path(dtype, kw) -> None:
    x = _values(dtype)
    t = ember.tensor(x)
    got = t.nan_to_num(**kw).numpy()
    assert got.dtype == dtype
    with L.disabled():
        ref = ember.tensor(x).nan_to_num(**kw).numpy()
    assert got.tobytes() == ref.tobytes()
    fin = np.finfo(dtype)
    want = np.nan_to_num(x, nan=kw.get("nan", 0.0), posinf=kw.get("posinf", fin.max),
                         neginf=kw.get("neginf", fin.min))
    assert got.tobytes() == want.tobytes()
    assert L.nan_to_num(x, 0.0, 1.0, -1.0) is not None  # (the kernel applies here)


@needs_torch
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("kw", NAN_ARGS)
def test_nan_to_num_matches_pytorch(dtype, kw) -> None:
    x = _values(dtype)
    got = ember.tensor(x).nan_to_num(**kw).numpy()
    want = torch.from_numpy(x.copy()).nan_to_num(**kw).numpy()
    assert got.tobytes() == want.tobytes()


def test_nan_to_num_gradient_and_small_arrays() -> None:
    x = _values(np.float32)
    t = ember.tensor(x, requires_grad=True)
    t.nan_to_num(nan=1.0).sum().backward()
    np.testing.assert_array_equal(t.grad.numpy(), np.isfinite(x).astype(np.float32))
    assert L.nan_to_num(x[:100], 0.0, 1.0, -1.0) is None  # small: NumPy's call
    assert L.nan_to_num(x[::2], 0.0, 1.0, -1.0) is None  # strided
    assert L.nan_to_num(x.astype(np.float16), 0.0, 1.0, -1.0) is None
    s = ember.tensor(x[::2]).nan_to_num().numpy()
    assert s.tobytes() == np.nan_to_num(x[::2], posinf=3.4028235e38, neginf=-3.4028235e38).tobytes()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("m,n", [(1024, 1000), (3, 5), (70, 1), (1, 4099), (0, 9)])
def test_outer_kernel_equals_the_numpy_path_and_pytorch(dtype, m, n) -> None:
    rng = np.random.default_rng(1)
    a = (rng.standard_normal(m) * 1e19).astype(dtype)
    b = (rng.standard_normal(n) * 1e-19).astype(dtype)
    a[::7] = np.nan if m else a[::7]
    b[::5] = -0.0 if n else b[::5]
    got = []
    for off in (False, True):
        ta, tb = ember.tensor(a, requires_grad=True), ember.tensor(b, requires_grad=True)
        if off:
            with L.disabled():
                y = ember.outer(ta, tb)
        else:
            y = ember.outer(ta, tb)
        assert y.dtype == ember.tensor(a).dtype and y.shape == (m, n)
        assert type(y.grad_fn).__name__ == "MulBackward0"
        g = np.cos(np.arange(m * n, dtype=dtype)).reshape(m, n)
        y.backward(ember.tensor(g))
        got.append((y.detach().numpy(), ta.grad.numpy(), tb.grad.numpy()))
    for x, r in zip(*got):
        assert x.tobytes() == r.tobytes()
    if L.active is not None and m * n >= 4096:
        assert L.outer(a, b) is not None
    if HAVE_TORCH:
        want = torch.outer(torch.from_numpy(a), torch.from_numpy(b)).numpy()
        assert got[0][0].tobytes() == want.tobytes()


def test_outer_mixed_dtypes_promote_as_before() -> None:
    a = ember.arange(100, dtype=ember.float32)
    b = ember.arange(90, dtype=ember.float64)
    assert ember.outer(a, b).dtype == ember.float64
    assert ember.outer(a.int(), b.int()).dtype == ember.int32
    assert L.outer(a.numpy(), b.numpy()) is None
    with ember.no_grad():
        out = ember.empty(100, 100)
        ember.outer(a, a, out=out)
    np.testing.assert_array_equal(out.numpy(), np.outer(a.numpy(), a.numpy()))


SUM_CASES = [((32, 64, 32, 32), (-1, -2)), ((2048, 1024), -1), ((4096, 64), 1), ((5000, 9), -1),
             ((3, 100_003), -1), ((1 << 20,), None), ((64, 129), None), ((7, 8, 600), (1, 2)),
             ((9000, 3), -1), ((100, 130), 0), ((40, 50, 60), (0, 2)), ((4, 1024, 2), 1)]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape,dim", SUM_CASES)
@pytest.mark.parametrize("keepdim", [False, True])
def test_sum_and_mean_keep_numpys_pairwise_bits(dtype, shape, dim, keepdim) -> None:
    rng = np.random.default_rng(2)
    x = (rng.standard_normal(shape) * rng.choice([1.0, 1e4, 1e-4], shape)).astype(dtype)
    x.flat[::1001] = -0.0
    axes = None if dim is None else tuple(np.atleast_1d(dim) % len(shape))
    want = np.add.reduce(x, axes, keepdims=keepdim)
    t = ember.tensor(x, requires_grad=True)
    kw = {} if dim is None else {"dim": dim, "keepdim": keepdim}
    for off in (False, True):
        if off:
            with L.disabled():
                s, m = t.sum(**kw), t.mean(**kw)
        else:
            s, m = t.sum(**kw), t.mean(**kw)
        assert s.dtype == t.dtype and m.dtype == t.dtype
        assert s.detach().numpy().tobytes() == np.asarray(want).tobytes()
        n = x.size // max(np.asarray(want).size, 1)
        assert m.detach().numpy().tobytes() == np.asarray(want / n).tobytes()
    m.sum().backward()  # (the backward is unchanged: 1/n everywhere)
    assert np.all(t.grad.numpy() == dtype(1.0) / dtype(n))
    applies = L.active is not None and (dim is None or tuple(sorted(axes)) == tuple(
        range(len(shape) - len(axes), len(shape))))
    assert (L.row_sum(x, None if dim is None else tuple(sorted(axes)), keepdim) is not None) \
        == applies


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape,dim", SUM_CASES)
def test_norm_2_keeps_its_bits(dtype, shape, dim) -> None:
    rng = np.random.default_rng(4)
    x = (rng.standard_normal(shape) * rng.choice([1.0, 1e4, 1e-4], shape)).astype(dtype)
    axes = None if dim is None else tuple(np.atleast_1d(dim) % len(shape))
    want = np.sqrt(np.add.reduce(x * x, axes, keepdims=True))
    t = ember.tensor(x, requires_grad=True)
    y = t.norm(dim=dim, keepdim=True)
    assert y.dtype == t.dtype
    assert y.detach().numpy().tobytes() == want.tobytes()
    y.sum().backward()
    g = t.grad.numpy().copy()
    t.grad = None
    with L.disabled():
        y0 = t.norm(dim=dim, keepdim=True)
        y0.sum().backward()
    assert y0.detach().numpy().tobytes() == want.tobytes()
    assert t.grad.numpy().tobytes() == g.tobytes()
    assert ember.linalg.vector_norm(t, 2, dim).detach().numpy().tobytes() == \
        want.reshape(np.add.reduce(x, axes).shape).tobytes()


@needs_torch
def test_norm_and_clip_grad_norm_match_pytorch_closely() -> None:
    x = np.random.default_rng(5).standard_normal((512, 300)).astype(np.float32)
    np.testing.assert_allclose(ember.tensor(x).norm().item(), torch.from_numpy(x).norm().item(),
                               rtol=1e-6)


@needs_kernels
@pytest.mark.parametrize("axes", [1, -1, np.int64(1), (1,), [-1], (-2, -1), (-1, -2), 0, (0,)])
def test_row_sum_takes_every_axes_form(axes) -> None:
    x = np.random.default_rng(14).standard_normal((64, 128)).astype(np.float32)
    got = L.row_sum(x, axes, True)
    ax = tuple(np.atleast_1d(axes).tolist())
    if 0 in {a % 2 for a in ax} and len(ax) == 1:
        assert got is None  # (a leading axis: NumPy's reduction)
    else:
        assert got.tobytes() == np.add.reduce(x, ax, keepdims=True).tobytes()
    lse = ember.logsumexp(ember.tensor(x), axes).numpy()  # (_sum_arr with these axes)
    np.testing.assert_allclose(lse, np.log(np.exp(x.astype(np.float64)).sum(ax)), rtol=1e-6)
    with L.disabled():
        assert ember.logsumexp(ember.tensor(x), axes).numpy().tobytes() == lse.tobytes()


@needs_kernels
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("threads", [1, 2, 3])
def test_row_sum_interleaved_leaves_and_split_rows_keep_numpys_bits(dtype, threads) -> None:
    # rows whose pairwise tree has nodes of four (or two) equal leaves take the interleaved
    # path, others the plain recursion; a single row from PW_SPLIT (2**18) elements splits its
    # tree's top four levels over the threads: NumPy's bits at every size and thread count
    rng = np.random.default_rng(21)
    sizes = [4096, 4100, 4352, 4360, 5000, 8192, 12288, 16384 + 8, 65536, 100_003,
             (1 << 18) - 8, 1 << 18, (1 << 18) + 24, 300_001, 1 << 20]
    before = ember.get_num_threads()
    ember.set_num_threads(threads)
    try:
        for n in sizes:
            x = (rng.standard_normal(n) * rng.choice([1.0, 1e4, 1e-4], n)).astype(dtype)
            x[::777] = -0.0
            assert L.row_sum(x, None, False).tobytes() == np.add.reduce(x).tobytes(), n
            assert L.row_sum(x, None, False, True).tobytes() == np.add.reduce(x * x).tobytes(), n
        rows = rng.standard_normal((3, 262_144 + 16)).astype(dtype)
        assert L.row_sum(rows, (1,), False).tobytes() == np.add.reduce(rows, 1).tobytes()
        special = rng.standard_normal(1 << 19).astype(dtype)
        special[[5, 70_000]] = [np.inf, -np.inf]
        assert np.isnan(L.row_sum(special, None, False))
        special[70_000] = np.nan
        assert np.isnan(L.row_sum(special, None, False))
        zeros = np.full(1 << 19, -0.0, dtype)
        assert L.row_sum(zeros, None, False).tobytes() == np.add.reduce(zeros).tobytes()
    finally:
        ember.set_num_threads(before)


def test_adaptive_avg_pool_to_one_is_the_mean_bit_for_bit() -> None:
    x = np.random.default_rng(3).standard_normal((8, 64, 7, 7)).astype(np.float32)
    t = ember.tensor(x)
    y = ember.nn.functional.adaptive_avg_pool2d(t, 1)
    assert y.shape == (8, 64, 1, 1) and y.dtype == ember.float32
    assert y.numpy().tobytes() == (np.add.reduce(x, (2, 3), keepdims=True) / 49).tobytes()
    with L.disabled():
        assert y.numpy().tobytes() == ember.nn.functional.adaptive_avg_pool2d(t, 1).numpy().tobytes()
    assert L.row_sum(x[:, :, ::2], (2, 3), True) is None  # strided: NumPy's reduction


CUM_CASES = [((1024, 1024), -1), ((1024, 1024), 0), ((8, 300, 700), 1), ((5000,), 0),
             ((3, 4, 5, 600), 2), ((2, 1000, 3), 1), ((4096, 2), 0), ((70, 65), 1)]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape,dim", CUM_CASES)
def test_cumsum_kernel_equals_the_numpy_path_forward_and_backward(dtype, shape, dim) -> None:
    rng = np.random.default_rng(6)
    x = (rng.standard_normal(shape) * rng.choice([1.0, 1e6, 1e-6], shape)).astype(dtype)
    x.flat[::997] = -0.0
    x.flat[5::4999] = np.inf
    g = rng.standard_normal(shape).astype(dtype)
    res = []
    for off in (False, True):
        t = ember.tensor(x, requires_grad=True)
        if off:
            with L.disabled():
                y = t.cumsum(dim)
                y.backward(ember.tensor(g))
        else:
            y = t.cumsum(dim)
            y.backward(ember.tensor(g))
        assert y.dtype == t.dtype
        res.append((y.detach().numpy(), t.grad.numpy()))
    for a, b in zip(*res):
        assert a.tobytes() == b.tobytes()
    want = np.cumsum(x, dim, dtype=np.float64).astype(dtype)
    assert res[0][0].tobytes() == want.tobytes()
    rev = np.flip(np.cumsum(np.flip(g, dim), dim, dtype=np.float64), dim).astype(dtype)
    assert res[0][1].tobytes() == rev.tobytes()
    if L.active is not None:
        assert L.cumsum(x, dim) is not None


@needs_torch
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_cumsum_matches_pytorch(dim) -> None:
    rng = np.random.default_rng(7)
    x = (rng.standard_normal((300, 400)) * 1e3).astype(np.float32)
    x[3, 0] = -0.0
    got = ember.tensor(x).cumsum(dim).numpy()
    want = torch.from_numpy(x).cumsum(dim).numpy()
    assert np.array_equal(got, want)  # (values; a leading -0.0 stays -0.0 here, as before)


def _linspace_reference(s: float, e: float, n: int, dt: type) -> np.ndarray:
    """The former formula (full-size index, both halves everywhere, a where): the values the
    two-halves one must keep."""
    if dt == np.float32:
        s0, e0 = np.float32(s), np.float32(e)
        step, wide = np.float64((e0 - s0) / np.float32(n - 1)), np.float64
    elif np.dtype(dt).kind in "iu":
        s0, e0 = np.float64(dt(int(s))), np.float64(dt(int(e)))
        step, wide = (e0 - s0) / np.float64(n - 1), np.float64
    else:
        s0, e0 = np.float64(s), np.float64(e)
        step, wide = np.longdouble((e0 - s0) / np.float64(n - 1)), np.longdouble
    idx = np.arange(n)
    up = wide(s0) + step * idx.astype(wide)
    down = wide(e0) - step * (n - 1 - idx).astype(wide)
    return np.where(idx < n // 2, up, down).astype(dt)


@pytest.mark.parametrize("dtype", [ember.float32, ember.float64, ember.int64, ember.int32])
@pytest.mark.parametrize("s,e", [(0, 1), (-3.7, 11.2), (5, -5), (1e-3, 1e3), (2, 2), (-100, 100)])
@pytest.mark.parametrize("n", [2, 3, 7, 1000, 1 << 20, (1 << 16) + 1])
def test_linspace_keeps_its_values(dtype, s, e, n) -> None:
    got = ember.linspace(s, e, n, dtype=dtype).numpy()
    want = _linspace_reference(s, e, n, got.dtype.type)
    assert got.dtype == want.dtype and got.tobytes() == want.tobytes()
    if HAVE_TORCH and dtype == ember.float32:
        t = torch.linspace(s, e, n, dtype=torch.float32).numpy()
        assert got.tobytes() == t.tobytes()


def _topk_both(x: np.ndarray, k: int, dim: int, largest: bool) -> list:
    res = []
    for off in (False, True):
        t = ember.tensor(x, requires_grad=True)
        if off:
            with L.disabled():
                v, i = t.topk(k, dim, largest)
        else:
            v, i = t.topk(k, dim, largest)
        w = np.cos(np.arange(v.numel())).reshape(tuple(v.shape)).astype(x.dtype)
        (v * ember.tensor(w)).sum().backward()
        res.append((v.detach().numpy(), i.numpy(), t.grad.numpy()))
    for a, b in zip(*res):
        assert a.dtype == b.dtype and a.tobytes() == b.tobytes()
    return res[0]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("k", [1, 5, 10, 64, 65])
@pytest.mark.parametrize("largest", [True, False])
@pytest.mark.parametrize("shape,dim", [((512, 1024), -1), ((4, 8, 300), 2), ((300, 200), 0)])
def test_topk_kernel_keeps_values_indices_and_gradient(dtype, k, largest, shape, dim) -> None:
    x = np.random.default_rng(8).standard_normal(shape).astype(dtype)
    v, i, _ = _topk_both(x, k, dim, largest)
    if HAVE_TORCH:
        tv, ti = torch.from_numpy(x).topk(k, dim, largest)
        assert v.tobytes() == tv.numpy().tobytes() and np.array_equal(i, ti.numpy())
    srt = np.sort(x, dim)
    best = np.take(srt, range(x.shape[dim] - k - 1, x.shape[dim]) if largest else range(k + 1),
                   dim)
    tie = (np.diff(best, axis=dim) == 0).any()  # (then the NumPy path's choice: no kernel)
    if dim in (-1, len(shape) - 1):  # (the kernel reads the last dim; others: NumPy's path)
        applies = L.active is not None and k <= 64 and not tie
        assert (L.topk(x, k, largest) is not None) == applies


@pytest.mark.parametrize("largest", [True, False])
def test_topk_ties_and_nans_keep_the_numpy_paths_choice(largest) -> None:
    rng = np.random.default_rng(9)
    ties = rng.integers(0, 50, (64, 1000)).astype(np.float32)  # every row has ties
    _topk_both(ties, 10, -1, largest)
    assert L.topk(ties, 10, largest) is None
    x = rng.standard_normal((64, 1000)).astype(np.float32)
    x[3, 17] = np.nan
    _topk_both(x, 10, -1, largest)
    assert L.topk(x, 10, largest) is None
    y = rng.standard_normal((64, 1000)).astype(np.float32)
    y[5, :2] = [-0.0, 0.0]  # equal: a tie if both reach the k best
    y[5, 2:] = np.abs(y[5, 2:]) + 1 if not largest else -np.abs(y[5, 2:]) - 1
    _topk_both(y, 10, -1, largest)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "bool", "float16", "bfloat16",
                                   "complex64", "uint8"])
@pytest.mark.parametrize("shape", [(1024, 1024), (3, 70, 90), (90, 70), (2, 2, 64, 40)])
@pytest.mark.parametrize("k", [-2000, -91, -3, 0, 2, 89, 5000])
def test_tril_triu_kernel_equals_the_numpy_path(dtype, shape, k) -> None:
    x = np.random.default_rng(10).standard_normal(shape) * 10
    t = ember.tensor(x).to(getattr(ember, dtype) if dtype != "bool" else ember.bool)
    for fn in (ember.tril, ember.triu):
        got = fn(t, k)
        with L.disabled():
            ref = fn(t, k)
        assert got.dtype == t.dtype and got.shape == t.shape
        assert got.numpy().tobytes() == ref.numpy().tobytes()
        if HAVE_TORCH and dtype in ("float32", "int64", "bool"):
            want = getattr(torch, fn.__name__)(torch.from_numpy(t.numpy().copy()), k).numpy()
            assert got.numpy().tobytes() == want.tobytes()
    if L.active is not None:
        assert L.triangle(t.numpy(), k, True) is not None


def test_tril_gradient_and_strided_input() -> None:
    x = np.random.default_rng(11).standard_normal((128, 96)).astype(np.float32)
    x[0, 5] = np.nan
    t = ember.tensor(x, requires_grad=True)
    y = ember.tril(t, 1)
    y.backward(ember.ones(128, 96))
    np.testing.assert_array_equal(t.grad.numpy(), np.tril(np.ones((128, 96), np.float32), 1))
    assert y.detach().numpy().tobytes() == np.tril(x, 1).tobytes()
    s = ember.tensor(x).t()  # (a transposed view: NumPy's where)
    assert ember.triu(s, -1).numpy().tobytes() == np.triu(x.T, -1).tobytes()
    assert L.triangle(x.T, 0, True) is None


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16, np.int32, np.int64, np.uint64])
@pytest.mark.parametrize("span", ["small", "wide", "extreme"])
@pytest.mark.parametrize("shape", [(1 << 16,), (300, 70), (1,)])
def test_unique_of_integers_equals_numpys(dtype, span, shape) -> None:
    rng = np.random.default_rng(12)
    info = np.iinfo(dtype)
    if span == "small":
        a = rng.integers(max(info.min, -500), min(info.max, 500), shape, endpoint=True)
    elif span == "wide":
        a = rng.integers(max(info.min, -(1 << 40)), min(info.max, 1 << 40), shape, endpoint=True)
    else:
        a = rng.integers(info.min, info.max, shape, endpoint=True, dtype=dtype)
        a.flat[:2] = [info.min, info.max] if a.size > 1 else [info.max]
    a = a.astype(dtype)
    vals, inv, counts = np.unique(a.reshape(-1), return_inverse=True, return_counts=True)
    t = ember.tensor(a)
    v = ember.unique(t)
    assert v.numpy().dtype == a.dtype and v.numpy().tobytes() == vals.tobytes()
    v2, i2, c2 = ember.unique(t, return_inverse=True, return_counts=True)
    assert v2.numpy().tobytes() == vals.tobytes()
    assert i2.dtype == ember.int64 and i2.shape == t.shape
    np.testing.assert_array_equal(i2.numpy().reshape(-1), inv.reshape(-1))
    assert c2.dtype == ember.int64
    np.testing.assert_array_equal(c2.numpy(), counts)
    _, c3 = ember.unique(t, return_counts=True)
    np.testing.assert_array_equal(c3.numpy(), counts)
    if HAVE_TORCH and dtype in (np.int64, np.int32, np.uint8):
        tv, ti, tc = torch.unique(torch.from_numpy(a), return_inverse=True, return_counts=True)
        assert np.array_equal(tv.numpy(), vals) and np.array_equal(ti.numpy(), i2.numpy())
        assert np.array_equal(tc.numpy(), counts)


@needs_kernels
@pytest.mark.parametrize("size", [1 << 20, 4099, 7])
def test_float16_cast_by_f16c_keeps_numpys_bits(size) -> None:
    """to(float16) takes F16C's vcvtps2ph where the CPU has it; blocks with a NaN are redone
    by the portable rule, so NaN payloads stay NumPy's (vcvtps2ph would quiet them)."""
    rng = np.random.default_rng(13)
    u = rng.integers(0, 2**32, size, dtype=np.uint64).astype(np.uint32)
    u[::3] = (rng.standard_normal(u[::3].size).astype(np.float32) * 3e4).view(np.uint32)
    u[1::97] = 0x7f800001  # signalling NaNs, payload 1
    u[2::101] = 0x477ff000  # 65520: rounds up to inf
    x = u.view(np.float32)
    with np.errstate(all="ignore"):
        want = x.astype(np.float16)
    got = ember.tensor(x).to(ember.float16).numpy()
    assert got.tobytes() == want.tobytes()


def test_on_pure_python() -> None:
    """This file's tests again with EMBER_PURE_PYTHON=1 (the NumPy paths)."""
    import os

    if os.environ.get("EMBER_PURE_PYTHON"):
        pytest.skip("already pure Python")
    from helpers import rerun_on_pure_python

    rerun_on_pure_python(__file__, "not on_pure_python")
