"""bfloat16 products by AVX512-BF16 (``_kernels_loader.bf16_gemm``, src/ember/_kernels_gemm.c;
issue 29's CPU autocast): float32 sums of exact bfloat16 products, for every layout (transposed
and broadcast operands read where they lie), every blocking edge, the same bits at any thread
count and however the columns are split; autocast's linear and matmul take it, with the float32
path's results up to the order of the float32 sums."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember import _kernels_loader as L
from helpers import HAVE_TORCH, count_calls, torch


def _bf16() -> np.dtype:
    return ember.bfloat16.np if hasattr(ember.bfloat16, "np") else np.dtype("bfloat16")


ready = L.active is not None and L.bf16_gemm_ready(_bf16())
needs_bf16_gemm = pytest.mark.skipif(
    not ready, reason=f"no bf16_gemm here (kernels: {L.reason})")


def _ints(rng: np.random.Generator, shape: tuple, lo: int = -8, hi: int = 9) -> np.ndarray:
    """small integers: their products and sums are exact in float32, so any order of the sums
    gives the float64 product's value exactly"""
    return rng.integers(lo, hi, shape).astype(np.float32).astype(_bf16())


def _operand(rng: np.random.Generator, rows: int, cols: int, transposed: bool) -> np.ndarray:
    if transposed:
        return _ints(rng, (cols, rows)).T
    return _ints(rng, (rows, cols))


def _exact(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a.astype(np.float64) @ b.astype(np.float64)).astype(np.float32)


@needs_bf16_gemm
@pytest.mark.parametrize("ta", [False, True])
@pytest.mark.parametrize("tb", [False, True])
@pytest.mark.parametrize("m, k, n", [
    (1, 1, 1), (5, 3, 7), (12, 2, 32), (13, 33, 31), (37, 65, 33), (200, 257, 70),
    (25, 513, 2100), (193, 300, 40), (12, 0, 5)])
def test_every_layout_and_blocking_edge_gives_the_exact_product(m: int, k: int, n: int,
                                                               ta: bool, tb: bool) -> None:
    """M past the micro-kernel's 12 rows and the 192-row blocks, N past its 32 columns and the
    2048-column panels, K odd and past the 256-k panels, K = 0; either operand transposed"""
    rng = np.random.default_rng(m * 1000 + k * 10 + n)
    a, b = _operand(rng, m, k, ta), _operand(rng, k, n, tb)
    out = L.bf16_gemm(a, b)
    assert out.dtype == np.float32 and out.shape == (m, n)
    np.testing.assert_array_equal(out, _exact(a, b))


@needs_bf16_gemm
def test_general_strides_and_batches_broadcast() -> None:
    rng = np.random.default_rng(5)
    big = _ints(rng, (3, 90, 80))
    a = big[:, 1:60:2, ::3]  # (3, 30, 27): neither axis contiguous
    b = _ints(rng, (27, 40))
    np.testing.assert_array_equal(L.bf16_gemm(a, b), _exact(a, b))
    b3 = _ints(rng, (3, 40, 27)).transpose(0, 2, 1)
    np.testing.assert_array_equal(L.bf16_gemm(a, b3), _exact(a, b3))
    a1 = _ints(rng, (1, 30, 27))
    np.testing.assert_array_equal(L.bf16_gemm(a1, b3), _exact(a1, b3))
    w = _ints(rng, (2, 5, 27))  # convolution's (groups, O / groups, K) against (N, groups, K, L)
    cols = _ints(rng, (4, 2, 27, 33))
    np.testing.assert_array_equal(L.bf16_gemm(w, cols), _exact(w, cols))
    assert L.bf16_gemm(_ints(rng, (2, 3, 4)), _ints(rng, (3, 4, 5))) is None  # batches differ
    assert L.bf16_gemm(a, a) is None  # inner sizes differ
    assert L.bf16_gemm(a.astype(np.float32), b.astype(np.float32)) is None  # not bfloat16


@needs_bf16_gemm
def test_float_values_within_the_float32_sums_rounding() -> None:
    rng = np.random.default_rng(6)
    a = rng.standard_normal((300, 700)).astype(_bf16())
    b = rng.standard_normal((700, 500)).astype(_bf16())
    got = L.bf16_gemm(a, b).astype(np.float64)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    ref = a64 @ b64
    bound = 700 * 2.0**-24 * (np.abs(a64) @ np.abs(b64))
    assert np.all(np.abs(got - ref) <= bound)
    assert np.abs(got - ref).max() > 0  # (float32 sums: not the float64 values)


@needs_bf16_gemm
def test_the_same_bits_at_any_thread_count_and_column_split() -> None:
    rng = np.random.default_rng(7)
    a = rng.standard_normal((400, 777)).astype(_bf16())
    b = rng.standard_normal((777, 900)).astype(_bf16())
    tall = rng.standard_normal((3000, 777)).astype(_bf16())
    narrow = rng.standard_normal((777, 20)).astype(_bf16())
    before = ember.get_num_threads()
    try:
        ember.set_num_threads(1)
        one = L.bf16_gemm(a, b), L.bf16_gemm(tall, narrow)
        ember.set_num_threads(2)
        two = L.bf16_gemm(a, b), L.bf16_gemm(tall, narrow)
    finally:
        ember.set_num_threads(before)
    for x, y in zip(one, two):
        np.testing.assert_array_equal(x, y)
    np.testing.assert_array_equal(L.bf16_gemm(a, b[:, 37:100]), one[0][:, 37:100])
    np.testing.assert_array_equal(L.bf16_gemm(a[5:17], b), one[0][5:17])


@needs_bf16_gemm
def test_nan_and_infinity_propagate() -> None:
    a = np.ones((3, 4), np.float32)
    b = np.ones((4, 2), np.float32)
    a[0, 1], a[1, 2], b[3, 1] = np.nan, np.inf, 0.0
    a[2, 3] = np.inf
    got = L.bf16_gemm(a.astype(_bf16()), b.astype(_bf16()))
    assert np.isnan(got[0]).all()
    assert got[1, 0] == np.inf and got[1, 1] == np.inf
    assert got[2, 0] == np.inf and np.isnan(got[2, 1])  # inf * 0


@needs_bf16_gemm
def test_bad_buffers_are_refused() -> None:
    a = np.zeros((1, 4, 3), np.uint16)
    b = np.zeros((1, 3, 5), np.uint16)
    with pytest.raises(ValueError, match="out"):
        L.active.bf16_gemm(a, b, np.zeros((1, 4, 6), np.float32))
    with pytest.raises(ValueError, match="3-D"):
        L.active.bf16_gemm(a[0], b[0], np.zeros((4, 5), np.float32))
    with pytest.raises(ValueError, match="2-byte"):
        L.active.bf16_gemm(a.astype(np.float32), b, np.zeros((1, 4, 5), np.float32))
    buf = np.zeros(64, np.float32)
    with pytest.raises(ValueError, match="overlap"):
        L.active.bf16_gemm(buf.view(np.uint16)[:12].reshape(1, 4, 3), b,
                           buf[:20].reshape(1, 4, 5))


def _autocast_run(op: str, x32: np.ndarray, w32: np.ndarray) -> list:
    x = ember.tensor(x32, requires_grad=True)
    w = ember.tensor(w32, requires_grad=True)
    with ember.autocast("cpu", dtype=ember.bfloat16):
        if op == "linear":
            y = ember.nn.functional.linear(x, w, ember.ones(w32.shape[0]) * 0.5)
        else:
            y = x @ w
    assert y.dtype == ember.bfloat16
    (y.float() * ember.linspace(-1, 1, y.shape[-1])).sum().backward()
    return [y.detach().float().numpy(), x.grad.numpy(), w.grad.numpy()]


@needs_bf16_gemm
@pytest.mark.parametrize("op", ["linear", "matmul", "bmm"])
def test_autocast_products_take_it_and_match_the_float32_path(op: str, monkeypatch) -> None:
    """the kernel's results against the float32 GEMM of the widened operands (the path without
    it): integers exactly; normal values within one bfloat16 rounding"""
    calls = count_calls(monkeypatch, L, "bf16_gemm")
    rng = np.random.default_rng(8)
    shapes = {"linear": ((64, 96), (80, 96)), "matmul": ((64, 96), (96, 80)),
              "bmm": ((2, 3, 64, 96), (2, 3, 96, 80))}[op]
    for ints in (True, False):
        if ints:
            x32, w32 = (rng.integers(-4, 5, s).astype(np.float32) for s in shapes)
        else:
            x32, w32 = (rng.standard_normal(s).astype(np.float32) for s in shapes)
        calls["n"] = 0
        got = _autocast_run(op, x32, w32)
        assert calls["n"] == 3  # forward, both gradients
        monkeypatch.setattr(L, "_BF16_GEMM", {id(L.active): False})
        ref = _autocast_run(op, x32, w32)
        monkeypatch.setattr(L, "_BF16_GEMM", {})
        for g, r in zip(got, ref):
            if ints:
                np.testing.assert_array_equal(g, r)
            else:  # one bfloat16 ulp (2^-7 relative) where a float32 sum rounded the other way
                np.testing.assert_allclose(g, r, rtol=2.0**-7, atol=1e-6)


@needs_bf16_gemm
def test_backward_after_the_kernels_were_turned_off() -> None:
    """a graph recorded with the kernel runs its backward on the float32 path"""
    rng = np.random.default_rng(9)
    x32, w32 = rng.integers(-4, 5, (32, 40)).astype(np.float32), \
        rng.integers(-4, 5, (24, 40)).astype(np.float32)
    x = ember.tensor(x32, requires_grad=True)
    w = ember.tensor(w32, requires_grad=True)
    with ember.autocast("cpu", dtype=ember.bfloat16):
        y = ember.nn.functional.linear(x, w)
    with L.disabled():
        y.float().sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), np.ones((32, 24)).T @ x32)
    np.testing.assert_array_equal(x.grad.numpy(), np.ones((32, 24)) @ w32)


@needs_bf16_gemm
@pytest.mark.skipif(not HAVE_TORCH, reason="PyTorch is not installed")
def test_autocast_mlp_step_against_pytorch() -> None:
    """PyTorch's bfloat16 products (oneDNN) sum in their own order too: losses and gradients
    agree within bfloat16 rounding"""
    rng = np.random.default_rng(10)
    x = rng.standard_normal((64, 128)).astype(np.float32)
    ws = [rng.standard_normal((256, 128)).astype(np.float32) / 11,
          rng.standard_normal((10, 256)).astype(np.float32) / 16]
    y = rng.integers(0, 10, 64)

    def run(m: object) -> list:
        w = [m.tensor(v, requires_grad=True) for v in ws]
        with m.autocast("cpu", dtype=m.bfloat16):
            h = m.nn.functional.relu(m.nn.functional.linear(m.tensor(x), w[0]))
            loss = m.nn.functional.cross_entropy(m.nn.functional.linear(h, w[1]), m.tensor(y))
        loss.backward()
        return [loss.detach().float().numpy()] + [v.grad.numpy() for v in w]

    for g, r in zip(run(ember), run(torch)):
        np.testing.assert_allclose(g, r, rtol=2e-2, atol=2e-3)


@pytest.mark.parametrize("direct", [True, False])
def test_compiled_autocast_step_equals_eager(direct: bool, monkeypatch) -> None:
    """compile writes a float32 linear's product out as ``x.dot(w.T)``; a bfloat16 one keeps
    its rule (the kernel's product, or the widened operands'), so compiled == eager bit for bit"""
    if not direct:
        monkeypatch.setattr(L, "bf16_gemm_ready", lambda dt: False)
    elif not ready:
        pytest.skip("no bf16_gemm here")
    ember.manual_seed(0)
    m = ember.nn.Sequential(ember.nn.Linear(64, 128), ember.nn.ReLU(), ember.nn.Linear(128, 10))
    x, y = ember.randn(32, 64), ember.randint(0, 10, (32,))

    def step(f: object) -> list:
        with ember.autocast("cpu", dtype=ember.bfloat16):
            loss = ember.nn.functional.cross_entropy(f(x), y)
        m.zero_grad()
        loss.backward()
        return [loss.detach().numpy()] + [p.grad.numpy().copy() for p in m.parameters()]

    ref = step(m)
    compiled = ember.compile(m)
    for _ in range(4):  # (the third call runs the compiled program)
        for g, r in zip(step(compiled), ref):
            np.testing.assert_array_equal(g, r)


@needs_bf16_gemm
@pytest.mark.parametrize("shape", [(8, 16, 12, 12), (16, 64, 8, 8)])
def test_bfloat16_convolutions_multiply_in_the_kernel(shape: tuple, monkeypatch) -> None:
    """a convolution of bfloat16 tensors runs the float32 layouts on the half values with its
    products in the bfloat16 kernel (forward, input and weight gradients): integer values give
    the float32 path's results exactly; normal values within one bfloat16 rounding"""
    from ember.ops.nn import _bf16_products as P

    calls = count_calls(monkeypatch, L, "bf16_gemm")
    monkeypatch.setattr(P, "MIN_WORK", 1)
    rng = np.random.default_rng(12)
    N, C, H, W = shape
    for ints in (True, False):
        if ints:
            x32 = rng.integers(-3, 4, shape).astype(np.float32)
            w32 = rng.integers(-3, 4, (32, C, 3, 3)).astype(np.float32)
        else:
            x32 = rng.standard_normal(shape).astype(np.float32)
            w32 = rng.standard_normal((32, C, 3, 3)).astype(np.float32) / 8

        def run(x32: np.ndarray = x32, w32: np.ndarray = w32) -> list:
            x = ember.tensor(x32).to(ember.bfloat16).requires_grad_()
            w = ember.tensor(w32).to(ember.bfloat16).requires_grad_()
            y = ember.nn.functional.conv2d(x, w, padding=1)
            (y.float() * ember.linspace(-1, 1, W)).sum().backward()
            return [v.detach().float().numpy() for v in (y, x.grad, w.grad)]

        calls["n"] = 0
        got = run()
        assert calls["n"] >= 3  # forward, both gradients
        monkeypatch.setattr(L, "_BF16_GEMM", {id(L.active): False})
        ref = run()  # opmath(Conv): the float32 products
        monkeypatch.setattr(L, "_BF16_GEMM", {})
        for g, r in zip(got, ref):
            if ints:
                np.testing.assert_array_equal(g, r)
            else:
                np.testing.assert_allclose(g, r, rtol=2.0**-7, atol=1e-2)


@needs_bf16_gemm
def test_bf16_products_flag_and_layouts(monkeypatch) -> None:
    """outside a flagged region ``matmul`` is NumPy's (the same bits); inside, transposed and
    batched float32 operands holding bfloat16 values go to the kernel and give NumPy's product
    (integers: exact)"""
    from ember.ops.nn import _bf16_products as P

    calls = count_calls(monkeypatch, L, "bf16_gemm")
    monkeypatch.setattr(P, "MIN_WORK", 1)
    rng = np.random.default_rng(13)
    a = rng.integers(-4, 5, (3, 40, 30)).astype(np.float32)
    b = rng.integers(-4, 5, (3, 50, 30)).astype(np.float32).swapaxes(1, 2)
    ref = np.matmul(a, b)
    np.testing.assert_array_equal(P.matmul(a, b), ref)
    assert calls["n"] == 0
    out = np.empty_like(ref)
    got = P.flagged(lambda ctx, x, y: P.matmul(x, y, out=out))(None, a, b)
    np.testing.assert_array_equal(got, ref)
    assert got is out and calls["n"] == 1
