"""The per-image convolution loops split over the threads (``ember._threads.split``: each part's
products on one OpenBLAS thread): the same values as one thread, bit for bit, forward and both
gradients, float32 and bfloat16; OpenBLAS's count restored after; a second caller runs alone."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember import _kernels_loader as L
from ember import _threads
from ember.ops.nn import _kernels as conv_kernels
from helpers import count_calls

needs_setter = pytest.mark.skipif(
    not _threads._blas_fns_cached(), reason="no OpenBLAS whose thread count ember sets")


@pytest.fixture
def threads():
    saved = ember.get_num_threads()
    yield
    ember.set_num_threads(saved)


def test_split_parts_cover_the_range_once_per_thread(threads):
    ember.set_num_threads(1)
    assert _threads.split_parts(64) is None
    ember.set_num_threads(2)
    if not _threads._blas_fns_cached():
        assert _threads.split_parts(64) is None
        return
    assert _threads.split_parts(64) == [(0, 32), (32, 64)]
    assert _threads.split_parts(5) == [(0, 2), (2, 5)]
    assert _threads.split_parts(1) is None
    ember.set_num_threads(3)
    assert _threads.split_parts(2) == [(0, 1), (1, 2)]


@needs_setter
def test_split_runs_every_part_with_blas_at_one_thread_and_restores(threads):
    ember.set_num_threads(2)
    getter = _threads._blas_fns_cached()[0][1]
    before = getter()
    seen, ran = [], []

    def part(lo: int, hi: int) -> None:
        seen.append(getter())
        ran.append((lo, hi, threading.get_ident()))

    assert _threads.split(part, [(0, 3), (3, 7)])
    assert sorted(r[:2] for r in ran) == [(0, 3), (3, 7)]
    assert seen == [1, 1]
    assert getter() == before


@needs_setter
def test_a_second_caller_inside_a_split_runs_whole(threads):
    ember.set_num_threads(2)
    inner = []

    def part(lo: int, hi: int) -> None:
        if lo == 0:
            inner.append(_threads.split(lambda a, b: None, [(0, 1), (1, 2)]))

    assert _threads.split(part, [(0, 1), (1, 2)])
    assert inner == [False]


def test_an_error_in_a_part_reaches_the_caller_and_restores_blas(threads):
    ember.set_num_threads(2)
    if not _threads._blas_fns_cached():
        pytest.skip("no OpenBLAS whose thread count ember sets")
    getter = _threads._blas_fns_cached()[0][1]
    before = getter()

    def part(lo: int, hi: int) -> None:
        if lo > 0:
            raise ValueError("part failed")

    with pytest.raises(ValueError, match="part failed"):
        _threads.split(part, [(0, 1), (1, 2)])
    assert getter() == before


def _conv_run(threads_n: int, x: np.ndarray, w: np.ndarray, b: np.ndarray, stride: int,
              padding: int, dtype: object = None) -> list[np.ndarray]:
    ember.set_num_threads(threads_n)
    xt = ember.tensor(x, requires_grad=True)
    wt = ember.tensor(w, requires_grad=True)
    bt = ember.tensor(b, requires_grad=True)
    if dtype is not None:
        xt, wt, bt = (t.detach().to(dtype).requires_grad_() for t in (xt, wt, bt))
    y = F.conv2d(xt, wt, bt, stride=stride, padding=padding)
    y.backward(ember.ones_like(y))
    return [t.float().detach().numpy().copy() for t in (y, xt.grad, wt.grad, bt.grad)]


# (N, C, H, W), (O, C, kh, kw), stride, padding: ResNet's stem (per-image columns) and a
# single-channel 5 x 5 (the direct kernel's forward, the per-image gradients)
CASES = [((8, 3, 32, 32), (16, 3, 7, 7), 2, 3), ((16, 1, 28, 28), (16, 1, 5, 5), 1, 0)]


@needs_setter
@pytest.mark.skipif(L.active is None, reason="the per-image paths need ember._kernels")
@pytest.mark.parametrize("xs, ws, stride, padding", CASES)
def test_per_image_convolution_splits_and_equals_one_thread(threads, monkeypatch, xs, ws,
                                                            stride, padding):
    rng = np.random.default_rng(0)
    x = rng.standard_normal(xs).astype(np.float32)
    w = rng.standard_normal(ws).astype(np.float32)
    b = rng.standard_normal(ws[0]).astype(np.float32)
    monkeypatch.setattr(conv_kernels, "_IMAGE_SPLIT_MACS", 1)
    one = _conv_run(1, x, w, b, stride, padding)
    calls = count_calls(monkeypatch, _threads, "split")
    two = _conv_run(2, x, w, b, stride, padding)
    assert calls["n"] >= 2  # (the forward or the input gradient, and the weight gradient)
    for a, c in zip(one, two):
        np.testing.assert_array_equal(a, c)


@needs_setter
@pytest.mark.skipif(L.active is None, reason="the per-image paths need ember._kernels")
def test_bfloat16_convolution_splits_and_equals_one_thread(threads, monkeypatch):
    """The bfloat16 products' flag reaches the parts (a context variable): a part on a worker
    multiplies as the caller's part does."""
    rng = np.random.default_rng(1)
    x = rng.standard_normal((8, 3, 32, 32)).astype(np.float32)
    w = rng.standard_normal((64, 3, 7, 7)).astype(np.float32)  # (products the kernel takes)
    b = rng.standard_normal(64).astype(np.float32)
    monkeypatch.setattr(conv_kernels, "_IMAGE_SPLIT_MACS", 1)
    one = _conv_run(1, x, w, b, 2, 3, ember.bfloat16)
    calls = count_calls(monkeypatch, _threads, "split")
    ready = L.active is not None and L.bf16_gemm_ready(ember.bfloat16.np)
    kernel = count_calls(monkeypatch, L, "bf16_gemm") if ready else None
    two = _conv_run(2, x, w, b, 2, 3, ember.bfloat16)
    assert kernel is None or kernel["n"] > 0
    assert calls["n"] >= 2
    for a, c in zip(one, two):
        np.testing.assert_array_equal(a, c)


@pytest.mark.skipif(L.active is None, reason="the kernels' pool needs ember._kernels")
@pytest.mark.parametrize("spin", ["0", "200"])
def test_the_pools_idle_poll_setting_keeps_results(spin):
    """EMBER_POOL_SPIN_US: how long an idle worker of the kernels' pool polls before it sleeps;
    a time setting only (0: sleep at once)."""
    import os
    import subprocess
    import sys
    code = ("import numpy as np, ember; ember.set_num_threads(2); "
            "x = ember.tensor(np.random.default_rng(0).random((1 << 21,), dtype=np.float32)); "
            "print([float(x.sum()), float(x.exp().sum()), float(x.sum())])")
    outs = []
    for value in (spin, None):
        env = dict(os.environ)
        env.pop("EMBER_POOL_SPIN_US", None)
        if value is not None:
            env["EMBER_POOL_SPIN_US"] = value
        outs.append(subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                                   text=True, check=True).stdout)
    assert outs[0] == outs[1] and outs[0].startswith("[")


@pytest.mark.parametrize("make", [
    lambda: np.broadcast_to(np.float32(1.5), (64, 300)),          # a sum's gradient
    lambda: np.broadcast_to(np.arange(300, dtype=np.float64), (64, 300)),
    lambda: np.arange(64 * 300, dtype=np.float32).reshape(300, 64).T,  # strided
    lambda: np.arange(5000, dtype=np.float32)[::2],
])
def test_threads_copy_equals_numpys_copy(threads, monkeypatch, make):
    ember.set_num_threads(2)
    monkeypatch.setattr(_threads, "cut_cheap", 1)
    calls = count_calls(monkeypatch, _threads, "_parallel")
    a = make()
    out = _threads.copy(a)
    assert calls["n"] == 1
    assert out.flags.c_contiguous and out.flags.owndata and out.dtype == a.dtype
    np.testing.assert_array_equal(out, a)
    ember.set_num_threads(1)
    assert _threads.copy(a) is None


@pytest.mark.parametrize("idx_shape,dt", [((7, 33), np.int64), ((101,), np.int32), ((), np.int64),
                                           ((3, 0), np.int64)])
@pytest.mark.parametrize("n_threads", [2, 3])
def test_take_rows_equals_indexing(threads, monkeypatch, idx_shape, dt, n_threads):
    """An embedding's lookup in one part of the indices per thread: ``table[idx]``'s values,
    shape and dtype (a strided table, int32 indices, a 0-d index, no indices)."""
    ember.set_num_threads(n_threads)
    monkeypatch.setattr(_threads, "TAKE_ROWS_MIN_BYTES", 1)
    calls = count_calls(monkeypatch, _threads, "_parallel")
    rng = np.random.default_rng(5)
    for table in (rng.standard_normal((50, 24)).astype(np.float32),
                  rng.standard_normal((24, 50)).T):
        idx = rng.integers(0, 50, idx_shape).astype(dt)
        out = _threads.take_rows(table, idx)
        ref = table[idx]
        assert out.shape == ref.shape and out.dtype == ref.dtype
        np.testing.assert_array_equal(out, ref)
    assert calls["n"] == (0 if 0 in idx_shape else 2)


def test_a_large_embedding_lookup_splits_and_equals_one_thread(threads, monkeypatch):
    monkeypatch.setattr(_threads, "TAKE_ROWS_MIN_BYTES", 1 << 10)
    calls = count_calls(monkeypatch, _threads, "take_rows")
    w = ember.randn(300, 16, requires_grad=True)
    idx = ember.randint(0, 300, (8, 40))
    outs = []
    for n in (1, 2):
        ember.set_num_threads(n)
        y = F.embedding(idx, w)
        y.backward(ember.ones_like(y))
        outs.append((y.detach().numpy(), w.grad.numpy().copy()))
        w.grad = None
    assert calls["n"] == 2
    for a, b in zip(*outs):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(outs[1][0], w.detach().numpy()[idx.numpy()])


def test_a_sums_gradient_is_copied_over_the_threads_into_its_own_grad(threads, monkeypatch):
    ember.set_num_threads(2)
    monkeypatch.setattr(_threads, "cut_cheap", 1)
    calls = count_calls(monkeypatch, _threads, "copy")
    x = ember.rand(64, 300, requires_grad=True)
    (x.sum(1, keepdim=True) * 3).sum().backward()  # (a column repeated: not a fill)
    assert calls["n"] == 1
    g = x.grad.numpy()
    assert g.flags.owndata and g.flags.writeable and g.strides == (1200, 4)
    np.testing.assert_array_equal(g, np.full((64, 300), 3, np.float32))


@pytest.mark.parametrize("threads_n", [1, 2])
@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("reduce, repeated", [
    (lambda x: x.sum() * 3, True),                # one value: a fill
    (lambda x: (x.sum(0) * ember.arange(300.0)).sum(), True),  # a row over and over
    (lambda x: x.mean(), True),
    (lambda x: (x.sum(1, keepdim=True) * 2).sum(), False),   # a column: copied
])
def test_a_repeated_gradient_is_filled_into_its_own_grad(threads, monkeypatch, threads_n, dt,
                                                          reduce, repeated):
    from ember import _kernels_loader as L
    ember.set_num_threads(threads_n)
    monkeypatch.setattr(_threads, "cut_arith", 1)
    fills = {"n": 0}
    arith = L.arith

    def spy(f, a, b, out, *rest):
        done = arith(f, a, b, out, *rest)
        fills["n"] += f is None and out.shape == (64, 300) and done
        return done
    monkeypatch.setattr(L, "arith", spy)
    x0 = np.random.default_rng(4).random((64, 300)).astype(dt)
    x = ember.tensor(x0, requires_grad=True)
    reduce(x).backward()
    g = x.grad.numpy()
    assert g.flags.owndata and g.flags.writeable and g.flags.c_contiguous and g.dtype == dt
    assert fills["n"] == (1 if repeated and L.active is not None else 0)
    xr = ember.tensor(x0, requires_grad=True)
    with monkeypatch.context() as m:  # the general copy
        m.setattr(_threads, "cut_arith", 1 << 60)
        reduce(xr).backward()
    np.testing.assert_array_equal(g, xr.grad.numpy())


@needs_setter
@pytest.mark.parametrize("sa, sb", [
    ((6, 4, 16, 8), (6, 4, 8, 16)),     # attention's per-head products
    ((1, 5, 16, 8), (1, 5, 8, 16)),     # a unit leading axis: splits the next
    ((5, 16, 8), (8, 16)),              # a matrix shared by the batch
    ((16, 8), (3, 8, 16)),
    ((3, 1, 16, 8), (1, 4, 8, 16)),     # broadcast batch axes
])
def test_threads_matmul_splits_and_equals_one_threads_product(threads, monkeypatch, sa, sb):
    rng = np.random.default_rng(3)
    a = rng.standard_normal(sa).astype(np.float32)
    b = rng.standard_normal(sb).astype(np.float32)
    bt = np.ascontiguousarray(np.swapaxes(b, -1, -2)).swapaxes(-1, -2)  # a transposed view
    ember.set_num_threads(1)
    want = np.matmul(a, b)
    monkeypatch.setattr(_threads, "MATMUL_SPLIT_MACS", 1)
    ember.set_num_threads(2)
    calls = count_calls(monkeypatch, _threads, "split")
    for rhs in (b, bt):
        got = _threads.matmul(a, rhs)
        assert got is not None and got.shape == want.shape and got.dtype == np.float32
        np.testing.assert_array_equal(got, want)
    assert calls["n"] == (0 if L.active is not None else 2)  # (float32 stacks: the kernels' pool)
    with L.disabled():
        for rhs in (b, bt):
            np.testing.assert_array_equal(_threads.matmul(a, rhs), want)
    assert calls["n"] == (2 if L.active is not None else 4)


def test_threads_matmul_declines(threads, monkeypatch):
    a = np.ones((4, 8, 8), np.float32)
    ember.set_num_threads(2)
    assert _threads.matmul(a, a) is None  # under MATMUL_SPLIT_MACS
    monkeypatch.setattr(_threads, "MATMUL_SPLIT_MACS", 1)
    assert _threads.matmul(a[0], a[0]) is None  # no batch axis
    assert _threads.matmul(np.ones((1, 8, 8), np.float32), a[:1]) is None  # nothing to split
    assert _threads.matmul(a, a.astype(np.float64)) is None  # mixed dtypes: NumPy's promotion
    assert _threads.matmul(a.astype(np.int64), a.astype(np.int64)) is None
    ember.set_num_threads(1)
    assert _threads.matmul(a, a) is None


@needs_setter
def test_batched_matmul_op_splits_and_its_gradients_equal_one_thread(threads, monkeypatch):
    rng = np.random.default_rng(4)
    q = rng.standard_normal((4, 2, 16, 8)).astype(np.float32)
    k = rng.standard_normal((4, 2, 16, 8)).astype(np.float32)
    monkeypatch.setattr(_threads, "MATMUL_SPLIT_MACS", 1)

    def run(n: int) -> list[np.ndarray]:
        ember.set_num_threads(n)
        qt, kt = ember.tensor(q, requires_grad=True), ember.tensor(k, requires_grad=True)
        s = qt @ kt.transpose(-2, -1)
        (s * s).sum().backward()
        return [s.detach().numpy(), qt.grad.numpy(), kt.grad.numpy()]

    one = run(1)
    calls = count_calls(monkeypatch, _threads, "split")
    stacks = count_calls(monkeypatch, _threads, "_stack_on_pool")
    two = run(2)
    assert stacks["n"] == 3  # the forward and both gradients' products
    assert calls["n"] == (0 if L.active is not None else 3)  # (else the Python pool's split)
    for a, b in zip(one, two):
        np.testing.assert_array_equal(a, b)
