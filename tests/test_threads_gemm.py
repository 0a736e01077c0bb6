"""Matrix products split by ember (``ember._threads.gemm``; the kernels' ``blas_gemm`` in
_kernels_blas.c, and the ctypes reference without the kernels): one thread's values bit for bit,
at every thread count, in both paths, for every layout the BLAS takes as it is; None where the
split does not apply; OpenBLAS's thread count restored after; the ops that use it."""

from __future__ import annotations

import functools
import threading

import numpy as np
import pytest

import ember
from ember import _backend, _threads
from ember import _kernels_loader as L
from helpers import count_calls

needs_blas = pytest.mark.skipif(not _threads._find_gemm_blas(),
                                reason="no OpenBLAS exporting cblas gemm and its thread count")
needs_kernels = pytest.mark.skipif(L.active is None, reason="ember._kernels not built")

SHAPES = [(2048, 256, 768), (256, 2048, 1024), (513, 129, 1025), (300, 64, 4097), (5000, 64, 64),
          (257, 3000, 64), (4096, 65, 71), (700, 100, 700)]


@pytest.fixture
def threads():
    saved = ember.get_num_threads()
    yield
    ember.set_num_threads(saved)


def _one_thread(a, b):
    saved = ember.get_num_threads()
    ember.set_num_threads(1)
    try:
        return a.dot(b)
    finally:
        ember.set_num_threads(saved)


@functools.cache
def _rows_alike() -> bool:
    """Whether NumPy's BLAS computes a product's rows in a 64-aligned part of them as in the whole
    product: OpenBLAS's AVX-512 (SkylakeX) sgemm does; its Haswell one, on an AVX2-only CPU, sums
    the rows at the edges of its row blocks otherwise (a 2048 x 256 x 768 product cut at row 1024
    differs from the whole in 688 rows, by an ulp). ember's split gives one thread's bits where
    the BLAS allows it, and within rounding of them elsewhere."""
    rng = np.random.default_rng(5)
    a = rng.standard_normal((2048, 256)).astype(np.float32)
    b = rng.standard_normal((256, 768)).astype(np.float32)
    return np.array_equal(_one_thread(a, b), np.concatenate(
        [_one_thread(a[:1024], b), _one_thread(a[1024:], b)]))


def _assert_one_threads(got, ref, err_msg=""):
    """got == ref bit for bit where ``_rows_alike``, else within float32 rounding."""
    if _rows_alike():
        np.testing.assert_array_equal(got, ref, err_msg=err_msg)
    else:
        np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-4, err_msg=err_msg)


def _layouts(a, b):
    """The operands as they are, transposed in memory, and slices with a longer leading side."""
    wide_a = np.zeros((a.shape[0], a.shape[1] + 5), a.dtype)
    wide_a[:, 2:2 + a.shape[1]] = a
    yield a, b
    yield np.asfortranarray(a), b
    yield a, np.asfortranarray(b)
    yield np.asfortranarray(a), np.asfortranarray(b)
    yield wide_a[:, 2:2 + a.shape[1]], np.ascontiguousarray(b.T).T


@needs_blas
@pytest.mark.parametrize("n_threads", [1, 2, 3])
@pytest.mark.parametrize("shape", SHAPES)
def test_values_are_one_threads_in_both_paths(shape, n_threads, threads):
    _assert_one_threads_bits(shape, n_threads, seed=sum(shape))


def _assert_one_threads_bits(shape, n_threads, seed):
    """``_threads.gemm`` at ``n_threads``, with the kernels and without, in every layout of
    ``_layouts``: a C-contiguous float32 result equal to one thread's product bit for bit."""
    m, k, n = shape
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    ember.set_num_threads(n_threads)
    for x, y in _layouts(a, b):
        ref = _one_thread(x, y)
        out = _threads.gemm(x, y)
        with L.disabled():
            ref_path = _threads.gemm(x, y)
        for got in (out, ref_path):
            assert got is not None and got.dtype == np.float32 and got.flags.c_contiguous
            _assert_one_threads(got, ref)


@needs_blas
@pytest.mark.parametrize("n_threads", [2, 3])
@pytest.mark.parametrize("shape", [(4096, 400, 32), (4096, 32, 400), (1408, 32, 400),
                                   (1000, 16, 1000), (300, 1200, 17)])
def test_thin_products_split_at_two_threads_are_one_threads(shape, n_threads, threads):
    """Products with k or n from GEMM_MIN_SIDE to GEMM_THIN_SIDE (a CNN's 32 output channels)
    split at two threads or more: one thread's bits, both paths."""
    m, k, n = shape
    _assert_one_threads_bits(shape, n_threads, seed=m + 7 * k + n)


@needs_blas
@pytest.mark.parametrize("n_threads", [1, 2, 3])
@pytest.mark.parametrize("shape", SHAPES[:4])
def test_bias_is_added_after_the_product_in_both_paths(shape, n_threads, threads):
    """A bias each part adds to its rows: the bits of one thread's product, then ``+= bias``
    (Linear's forward), at every thread count, with the kernels and without."""
    m, k, n = shape
    rng = np.random.default_rng(m * k + n)
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    bias = rng.standard_normal(n).astype(np.float32)
    ember.set_num_threads(n_threads)
    for x, y in _layouts(a, b):
        ref = _one_thread(x, y)
        ref += bias
        got = [_threads.gemm(x, y, None, bias), _backend.gemm(x, y, bias)]
        with L.disabled():
            got.append(_threads.gemm(x, y, None, bias))
        for g in got:
            assert g is not None and g.dtype == np.float32
            _assert_one_threads(g, ref)
    # a bias the split does not take (float64, another length, strided): None, nothing written
    assert _threads.gemm(a, b, None, bias.astype(np.float64)) is None
    assert _threads.gemm(a, b, None, bias[:-1]) is None
    assert _threads.gemm(a, b, None, np.repeat(bias, 2)[::2]) is None
    wide = _backend.gemm(a, b, bias.astype(np.float64))  # (NumPy's in-place add instead)
    _assert_one_threads(wide, _one_thread(a, b) + bias.astype(np.float32))


def _column_parts_bits(a, b, bias, n_threads):
    """The product of ``a`` and ``b`` (``+ bias``) as ``_threads.gemm`` splits its columns at
    ``n_threads``, computed part by part at one thread: one BLAS call on each block of b's
    columns into the same block of out's, then the bias on it."""
    m, n = a.shape[0], b.shape[1]
    out = np.empty((m, n), np.float32)
    saved = ember.get_num_threads()
    ember.set_num_threads(1)
    try:
        for j0, j1 in _threads.gemm_parts(n, m * a.shape[1], n_threads, _threads.GEMM_PART_COLS,
                                          _threads.GEMM_COL_ALIGN):
            out[:, j0:j1] = a.dot(b[:, j0:j1])
            if bias is not None:
                out[:, j0:j1] += bias[j0:j1]
    finally:
        ember.set_num_threads(saved)
    return out


@needs_blas
@pytest.mark.parametrize("n_threads", [2, 3])
@pytest.mark.parametrize("shape", [(32, 1408, 400), (128, 784, 512), (255, 512, 777),
                                   (17, 3000, 300), (64, 128, 4100)])
def test_few_rows_split_by_columns(shape, n_threads, threads):
    """A product with fewer rows than two row parts (a convolution's weight gradient, an MLP's
    batch of 128) splits its columns at two threads or more: each part one call on a block of
    b's columns, so the values are those of those calls (with and without the kernels, every
    layout, with a bias too), within rounding of one thread's whole product; at one thread NumPy's
    dot takes it."""
    m, k, n = shape
    rng = np.random.default_rng(m + 3 * k + n)
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    bias = rng.standard_normal(n).astype(np.float32)
    ember.set_num_threads(n_threads)
    parts = _threads.gemm_parts(n, m * k, n_threads, _threads.GEMM_PART_COLS,
                                _threads.GEMM_COL_ALIGN)
    assert len(parts) >= 2 and all(p[0] % _threads.GEMM_COL_ALIGN == 0 for p in parts)
    for x, y in _layouts(a, b):
        for bb in (None, bias):
            want = _column_parts_bits(x, y, bb, n_threads)
            got = [_threads.gemm(x, y, None, bb)]
            if bb is not None:
                got.append(_backend.gemm(x, y, bb))
            with L.disabled():
                got.append(_threads.gemm(x, y, None, bb))
            whole = _one_thread(x, y) + (0 if bb is None else bb)
            for g in got:
                assert g is not None and g.dtype == np.float32 and g.flags.c_contiguous
                np.testing.assert_array_equal(g, want)
                np.testing.assert_allclose(g, whole, rtol=1e-5, atol=1e-4)
    ember.set_num_threads(1)
    assert _threads.gemm(a, b) is None


@needs_blas
def test_parts_cover_the_rows_aligned():
    assert _threads.gemm_parts(1000, 1 << 20, 1) == [(0, 1000)]
    parts = _threads.gemm_parts(1000, 1 << 20, 3)
    assert parts[0][0] == 0 and parts[-1][1] == 1000 and len(parts) == 3
    assert all(p[1] == q[0] for p, q in zip(parts, parts[1:]))
    assert all(i % _threads.GEMM_ALIGN == 0 for p in parts for i in p if i < 1000)
    # each part does GEMM_PART_MACS at least, and has GEMM_PART_ROWS rows at least
    assert len(_threads.gemm_parts(1000, 1 << 12, 8)) == 1000 // 256
    assert len(_threads.gemm_parts(1000, 1 << 22, 16)) == 1000 // 128
    assert len(_threads.gemm_parts(255, 1 << 22, 8)) == 1


@needs_blas
def test_none_where_the_split_does_not_apply():
    f32 = np.ones((512, 512), np.float32)
    assert _threads.gemm(np.ones((32, 32), np.float32), np.ones((32, 32), np.float32)) is None
    assert _threads.gemm(np.ones((1, 1 << 18), np.float32), np.ones((1 << 18, 4), np.float32)) \
        is None  # a row vector: NumPy's gemv
    # fewer rows than two parts have: at one thread NumPy's dot (at two, its columns split:
    # test_few_rows_split_by_columns)
    saved = ember.get_num_threads()
    try:
        ember.set_num_threads(1)
        assert _threads.gemm(np.ones((255, 512), np.float32), f32) is None
        assert not _threads.gemm_applies(255, 512)
        ember.set_num_threads(2)
        assert _threads.gemm_applies(255, 512) and _threads.gemm_applies(16, 128)
        assert not _threads.gemm_applies(255, 127)  # (two column parts of 64 at least)
        assert not _threads.gemm_applies(15, 512)  # (a row vector's or a few rows' product)
        # under GEMM_COL_MACS multiply-adds OpenBLAS's threads were faster (32 x 256 x 512)
        wide = np.ones((1024, 512), np.float32)
        assert _threads.gemm(np.ones((32, 256), np.float32), wide[:256]) is None
        assert _threads.gemm(np.ones((32, 1024), np.float32), wide) is not None  # (16M)
    finally:
        ember.set_num_threads(saved)
    # a thin side (k or n under GEMM_MIN_SIDE; under GEMM_THIN_SIDE at one thread)
    assert _threads.gemm(np.ones((4096, 8), np.float32), np.ones((8, 512), np.float32)) is None
    assert _threads.gemm(np.ones((4096, 512), np.float32), np.ones((512, 8), np.float32)) is None
    thin = np.ones((4096, 32), np.float32), np.ones((32, 512), np.float32)
    saved = ember.get_num_threads()
    try:
        ember.set_num_threads(1)
        assert _threads.gemm(*thin) is None
        ember.set_num_threads(2)
        assert _threads.gemm(*thin) is not None
    finally:
        ember.set_num_threads(saved)
    assert _threads.gemm(f32.astype(np.float16), f32.astype(np.float16)) is None
    assert _threads.gemm(f32.astype(np.int32), f32.astype(np.int32)) is None
    assert _threads.gemm(f32, f32.astype(np.float64)) is None
    # float64: OpenBLAS's dgemm computes edge tiles differently in a part (not one thread's)
    assert _threads.gemm(f32.astype(np.float64), f32.astype(np.float64)) is None
    assert _threads.gemm(f32, np.ones((256, 512), np.float32)) is None  # k mismatch: NumPy says
    assert _threads.gemm(np.ones((512, 1024), np.float32)[:, ::2], f32) is None  # strided
    assert _threads.gemm(f32, f32, out=np.empty((512, 512), np.float64)) is None
    assert _threads.gemm(f32, f32, out=np.empty((512, 1024), np.float32)[:, ::2]) is None
    assert _threads.gemm(f32, f32, out=f32) is None  # out overlaps an operand


@needs_blas
def test_out_is_written():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((300, 400)).astype(np.float32)
    b = rng.standard_normal((400, 500)).astype(np.float32)
    out = np.full((300, 500), np.nan, np.float32)
    assert _threads.gemm(a, b, out) is out
    _assert_one_threads(out, _one_thread(a, b))


@needs_blas
@pytest.mark.parametrize("kernels", [True, False])
def test_blas_count_restored_and_parts_at_one_thread(kernels, threads, monkeypatch):
    ember.set_num_threads(2)
    before = _threads.blas_threads(use_threadpoolctl=False)
    a = np.ones((1024, 512), np.float32)
    calls = count_calls(monkeypatch, _threads, "split")
    if kernels and L.active is None:
        pytest.skip("ember._kernels not built")
    ctx = L.enabled() if kernels else L.disabled()
    with ctx:
        out = _threads.gemm(a, a.T)
    np.testing.assert_array_equal(out, _one_thread(a, a.T))
    assert _threads.blas_threads(use_threadpoolctl=False) == before
    assert calls["n"] == (0 if kernels else 1)  # the reference path's parts run through split


@needs_blas
def test_no_split_inside_a_split(threads):
    ember.set_num_threads(2)
    a = np.ones((512, 512), np.float32)
    got = []

    def part(lo: int, hi: int) -> None:
        got.append(_threads.gemm(a, a))

    assert _threads.split(part, [(0, 1), (1, 2)])
    assert got == [None, None]


@needs_kernels
@needs_blas
def test_kernel_refuses_bad_arrays():
    mod = L.active
    _threads.gemm(np.ones((512, 512), np.float32), np.ones((512, 512), np.float32))  # hand over
    a = np.ones((64, 64), np.float32)
    with pytest.raises(ValueError, match="overlap"):
        mod.blas_gemm(a, a, a)
    with pytest.raises(ValueError, match="float32"):
        mod.blas_gemm(a, a.astype(np.float64), np.empty((64, 64), np.float32))
    with pytest.raises(ValueError, match="float32"):
        mod.blas_gemm(a.astype(np.float64), a.astype(np.float64), np.empty((64, 64)))
    with pytest.raises(ValueError, match="unit stride"):
        mod.blas_gemm(np.ones((64, 128), np.float32)[:, ::2], a, np.empty((64, 64), np.float32))
    with pytest.raises(ValueError, match=r"\(\.\.\., M, K\)"):
        mod.blas_gemm(a, np.ones((32, 64), np.float32), np.empty((64, 64), np.float32))
    with pytest.raises(TypeError):
        mod.blas_gemm(a, a)
    out = np.empty((64, 64), np.float32)
    assert mod.blas_gemm(np.ones((64, 0), np.float32), np.ones((0, 64), np.float32), out)
    np.testing.assert_array_equal(out, 0)
    bias = np.arange(64, dtype=np.float32)
    assert mod.blas_gemm(np.ones((64, 0), np.float32), np.ones((0, 64), np.float32), out, bias)
    np.testing.assert_array_equal(out, np.broadcast_to(bias, (64, 64)))
    with pytest.raises(ValueError, match="bias"):
        mod.blas_gemm(a, a, out, bias.astype(np.float64))
    with pytest.raises(ValueError, match="bias"):
        mod.blas_gemm(a, a, out, bias[:32])
    with pytest.raises(ValueError, match="bias"):
        mod.blas_gemm(a[None], a[None], out[None], bias)
    with pytest.raises(ValueError, match="overlap"):
        mod.blas_gemm(a, a, out, out[0])
    with pytest.raises(TypeError):
        mod.blas_gemm(a, a, out, bias, bias)


@needs_blas
def test_products_of_the_ops_use_it(threads, monkeypatch):
    """Linear forward and backward, mm and matmul of a batch by a matrix go through it (and give
    PyTorch's shapes and one thread's values)."""
    ember.set_num_threads(2)
    calls = count_calls(monkeypatch, _threads, "gemm")
    rng = np.random.default_rng(1)
    x = ember.tensor(rng.standard_normal((8, 64, 128)).astype(np.float32), requires_grad=True)
    lin = ember.nn.Linear(128, 512)
    y = lin(x)
    y.sum().backward()
    assert calls["n"] >= 3  # forward, grad_x, grad_w
    w = lin.weight.detach().numpy()
    _assert_one_threads(
        y.detach().numpy(), _one_thread(x.detach().numpy().reshape(-1, 128), w.T).reshape(8, 64, 512)
        + lin.bias.detach().numpy())
    a = ember.tensor(rng.standard_normal((300, 200)).astype(np.float32))
    b = ember.tensor(rng.standard_normal((200, 400)).astype(np.float32))
    n = calls["n"]
    _assert_one_threads(ember.mm(a, b).numpy(), _one_thread(a.numpy(), b.numpy()))
    assert calls["n"] == n + 1
    assert _backend.gemm(a.numpy(), b.numpy()).shape == (300, 400)


@needs_blas
def test_products_from_threads_at_once(threads):
    """Products from several Python threads at once: each its own values (the pool runs one
    product's parts at a time; the others run whole on their own thread)."""
    ember.set_num_threads(2)
    rng = np.random.default_rng(2)
    pairs = [(rng.standard_normal((400, 300)).astype(np.float32),
              rng.standard_normal((300, 500)).astype(np.float32)) for _ in range(4)]
    refs = [_one_thread(a, b) for a, b in pairs]
    results: list = [None] * 4

    def run(i: int) -> None:
        for _ in range(20):
            results[i] = _threads.gemm(*pairs[i])

    ts = [threading.Thread(target=run, args=(i,)) for i in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    for got, ref in zip(results, refs):
        np.testing.assert_array_equal(got, ref)


STACKS = [((16, 4, 64, 32), (16, 4, 32, 64)), ((8, 100, 48), (48, 70)), ((3, 1, 40, 50), (5, 50, 30)),
          ((2, 3, 129, 7), (2, 3, 7, 200))]


@needs_kernels
@needs_blas
@pytest.mark.parametrize("n_threads", [2, 3])
@pytest.mark.parametrize("shapes", STACKS)
def test_stacked_products_on_the_pool_are_numpys(shapes, n_threads, threads, monkeypatch):
    """Stacked float32 products (attention's per-head ones) run on the kernels' pool, each
    product whole: NumPy's matmul at one thread, bit for bit, broadcast batch dims and
    transposed views included; the kernels off give the same (the Python pool's split)."""
    ember.set_num_threads(n_threads)
    rng = np.random.default_rng(len(shapes[0]))
    a = rng.standard_normal(shapes[0]).astype(np.float32)
    b = rng.standard_normal(shapes[1]).astype(np.float32)
    bt = np.ascontiguousarray(np.swapaxes(b, -1, -2)).swapaxes(-1, -2)  # k.transpose(-2, -1)
    calls = count_calls(monkeypatch, _threads, "_stack_on_pool")
    monkeypatch.setattr(_threads, "MATMUL_SPLIT_MACS", 1)
    for x, y in ((a, b), (a, bt)):
        ref = _one_thread_matmul(x, y)
        on = _threads.matmul(x, y)
        with L.disabled():
            off = _threads.matmul(x, y)
        for got in (on, off):
            assert got is not None and got.dtype == np.float32
            np.testing.assert_array_equal(got, ref)
    assert calls["n"] >= 2


def _one_thread_matmul(a, b):
    saved = ember.get_num_threads()
    ember.set_num_threads(1)
    try:
        return np.matmul(a, b)
    finally:
        ember.set_num_threads(saved)


@needs_kernels
@needs_blas
def test_kernel_stacks_refuse_bad_arrays():
    mod = L.active
    _threads.gemm(np.ones((512, 512), np.float32), np.ones((512, 512), np.float32))  # hand over
    a = np.ones((4, 8, 8), np.float32)
    with pytest.raises(ValueError, match="batch shape"):
        mod.blas_gemm(a, np.ones((3, 8, 8), np.float32), np.empty((4, 8, 8), np.float32))
    with pytest.raises(ValueError, match="one rank"):
        mod.blas_gemm(a, np.ones((8, 8), np.float32), np.empty((4, 8, 8), np.float32))
    with pytest.raises(ValueError, match="overlap"):
        mod.blas_gemm(a, a, a)
    out = np.empty((4, 8, 8), np.float32)
    assert mod.blas_gemm(a, np.broadcast_to(np.eye(8, dtype=np.float32), (4, 8, 8)), out)
    np.testing.assert_array_equal(out, a)


@needs_kernels
@needs_blas
def test_attention_written_out_gradients_match_one_thread(threads):
    """nanoGPT's written-out attention: forward and gradients at 2 threads equal 1 thread's."""
    rng = np.random.default_rng(5)
    arrays = [rng.standard_normal((4, 4, 64, 32)).astype(np.float32) for _ in range(3)]

    def run():
        q, k, v = (ember.tensor(x, requires_grad=True) for x in arrays)
        att = (q @ k.transpose(-2, -1)) * 0.125
        y = ember.softmax(att, dim=-1) @ v
        y.sum().backward()
        return [y.detach().numpy(), q.grad.numpy(), k.grad.numpy(), v.grad.numpy()]

    ember.set_num_threads(1)
    one = run()
    ember.set_num_threads(2)
    for x, y in zip(run(), one):
        np.testing.assert_array_equal(x, y)


@needs_blas
@pytest.mark.parametrize("n_threads", [2, 3])
def test_random_shapes_are_one_threads(n_threads, threads):
    """The parts' rows do not change OpenBLAS's sgemm values (its dgemm's edge tiles would:
    float64 is not split), over seeded random shapes and layouts."""
    rng = np.random.default_rng(20261207 + n_threads)
    ember.set_num_threads(n_threads)
    split = 0
    for _ in range(40):
        m, k, n = int(rng.integers(256, 900)), int(rng.integers(64, 400)), \
            int(rng.integers(64, 900))
        a = rng.standard_normal((m, k)).astype(np.float32)
        b = rng.standard_normal((k, n)).astype(np.float32)
        if rng.random() < 0.5:
            a = np.asfortranarray(a)
        if rng.random() < 0.5:
            b = np.asfortranarray(b)
        got = _threads.gemm(a, b)
        if got is None:
            continue
        split += 1
        _assert_one_threads(got, _one_thread(a, b), err_msg=f"{(m, k, n)}")
    assert split >= 30
