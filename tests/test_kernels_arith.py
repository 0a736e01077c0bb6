"""Elementwise arithmetic on the kernels' pool (_kernels.c ``arith``, _kernels_loader.arith):
NumPy's add, subtract, multiply and divide bit for bit, in and out of place, with a full, a
repeating-row or a number operand; and the threads' paths that take it (_threads.run,
run_into)."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember import _kernels_loader as L
from ember import _threads
from helpers import count_calls

pytestmark = pytest.mark.skipif(L.active is None, reason="the kernels are not built")

OPS = [np.add, np.subtract, np.multiply, np.divide]


def _data(shape, dt, seed):
    a = np.random.default_rng(seed).standard_normal(shape).astype(dt)
    a.flat[::7] = 0.0
    a.flat[1::19] = -0.0
    a.flat[3::13] = np.nan
    a.flat[5::23] = np.inf
    a.flat[2::29] = np.finfo(dt).tiny / 8  # subnormal
    return a


def _same_bits(x, y):
    assert x.dtype == y.dtype and x.shape == y.shape
    np.testing.assert_array_equal(x.view(np.uint8), y.view(np.uint8))


@pytest.fixture
def two_threads():
    saved = ember.get_num_threads()
    ember.set_num_threads(2)
    yield
    ember.set_num_threads(saved)


@pytest.mark.parametrize("f", OPS)
@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("form, shape", [
    (form, shape) for form in ("full", "row", "row1", "float", "int")
    for shape in ((7,), (37, 129), (300, 1000))
    if not (form == "row1" and len(shape) == 1)])  # ((1, n) does not fit an out of shape (n,))
def test_arith_equals_numpy_in_and_out_of_place(two_threads, f, dt, form, shape):
    a = _data(shape, dt, 1)
    b = {"full": _data(shape, dt, 2), "row": _data(shape[-1:], dt, 3),
         "row1": _data((1,) + shape[-1:], dt, 4), "float": 0.37, "int": -3}[form]
    with np.errstate(all="ignore"):
        want = f(a, b)
        out = np.empty_like(a)
        assert L.arith(f, a, b, out)
        _same_bits(out, want)
        c = a.copy()
        assert L.arith(f, c, b, c)  # in place: out is a
        _same_bits(c, want)
        if form == "full":  # out is b
            d = b.copy()
            assert L.arith(f, a, d, d)
            _same_bits(d, want)


@pytest.mark.parametrize("f", [np.add, np.subtract])
@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("scale", [-0.01, 3, 1e-30])
@pytest.mark.parametrize("row", [False, True])
def test_arith_with_a_scale_rounds_the_product_first(two_threads, f, dt, scale, row):
    a = _data((300, 1000), dt, 10)
    b = _data((1000,) if row else (300, 1000), dt, 11)
    with np.errstate(all="ignore"):
        want = f(a, b * scale)  # (NumPy's two calls: add(alpha=)'s formula)
        c = a.copy()
        assert L.arith(f, c, b, c, scale)
    _same_bits(c, want)


@pytest.mark.parametrize("f, scale", [(np.multiply, 2.0), (np.add, True), (np.add, 1j),
                                      (np.add, 1 << 60), (None, 2.0)])
def test_arith_declines_a_scale_it_does_not_take(f, scale):
    out = np.full(8, 7, np.float32)
    assert not L.arith(f, None if f is None else out, np.ones(8, np.float32), out, scale)
    assert (out == 7).all()


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_arith_copies_and_fills(dt):
    out = np.empty((50, 64), dt)
    row = _data((64,), dt, 5)
    assert L.arith(None, None, row, out)
    _same_bits(out, np.ascontiguousarray(np.broadcast_to(row, out.shape)))
    full = _data((50, 64), dt, 6)
    assert L.arith(None, None, full, out)
    _same_bits(out, full)
    assert L.arith(None, None, 2.5, out)
    _same_bits(out, np.full((50, 64), 2.5, dt))


_OVERLAP = np.zeros(4097, np.float32)


@pytest.mark.parametrize("args", [
    (np.add, np.ones(4, np.float32), np.ones(4, np.float64), np.empty(4, np.float32)),  # dtypes
    (np.add, np.ones(4, np.float32), np.ones(3, np.float32), np.empty(4, np.float32)),  # shapes
    (np.add, np.ones((4, 3), np.float32), np.ones(4, np.float32), np.empty((4, 3), np.float32)),
    (np.add, np.ones((4, 3), np.float32)[:, :2], 1.0, np.empty((4, 2), np.float32)),  # strided
    (np.add, np.ones(4, np.int32), 1, np.empty(4, np.int32)),                          # ints
    (np.add, np.ones(4, np.float32), 1 << 60, np.empty(4, np.float32)),   # an int past 2^53
    (np.maximum, np.ones(4, np.float32), 1.0, np.empty(4, np.float32)),  # another ufunc
    (np.add, np.ones(4, np.float32), True, np.empty(4, np.float32)),     # a bool
    (np.add, np.ones(4, np.float32), 1.0, np.empty(4, np.float32)[::-1]),  # out strided
    (None, np.ones(4, np.float32), 1.0, np.empty(4, np.float32)),        # copy with an a
    (np.add, _OVERLAP[1:], 1.0, _OVERLAP[:-1]),          # a shares out's memory, shifted
    (np.add, np.ones(4096, np.float32), _OVERLAP[1:], _OVERLAP[:-1]),  # b does
    (np.add, np.ones(4, np.float32), np.ones((1, 4), np.float32), np.empty(4, np.float32)),
])
def test_arith_declines_what_it_does_not_compute(args):
    out = args[-1]
    out[...] = 7
    _OVERLAP[...] = 7
    assert not L.arith(*args)
    assert (out == 7).all() and (_OVERLAP == 7).all()


def test_the_threads_paths_take_the_kernels_pool(two_threads, monkeypatch):
    calls = {"n": 0}
    arith = L.arith

    def spy(*a):
        done = arith(*a)
        calls["n"] += done
        return done
    monkeypatch.setattr(L, "arith", spy)
    a = _data((512, 300), np.float32, 7)
    b = _data((300,), np.float32, 8)
    assert a.size >= _threads.cut_arith
    _same_bits(_threads.run(np.multiply, a, b), a * b)
    c = a.copy()
    _threads.run_into(np.subtract, c, c, b)
    _same_bits(c, a - b)
    _threads.run_into(_threads.fill_into, c, 0)
    assert not c.any()
    assert calls["n"] == 3
    # under cut_cheap, a case the kernel declines is not split on the Python pool either
    assert _threads.run(np.add, a, a[:, :1].copy()) is None


def test_ops_take_it_from_cut_arith_and_keep_their_values(two_threads):
    rng = np.random.default_rng(9)
    x0 = rng.standard_normal((600, 300)).astype(np.float32)
    y0 = rng.standard_normal((600, 300)).astype(np.float32)
    x = ember.tensor(x0, requires_grad=True)
    y = ember.tensor(y0, requires_grad=True)
    r = (x * y + x / (y * y + 1.0) - y)
    r.sum().backward()
    with np.errstate(all="ignore"):
        want = x0 * y0 + x0 / (y0 * y0 + 1.0) - y0
    _same_bits(r.detach().numpy(), want)
    ember.set_num_threads(1)
    x1 = ember.tensor(x0, requires_grad=True)
    y1 = ember.tensor(y0, requires_grad=True)
    (x1 * y1 + x1 / (y1 * y1 + 1.0) - y1).sum().backward()
    _same_bits(x.grad.numpy(), x1.grad.numpy())
    _same_bits(y.grad.numpy(), y1.grad.numpy())


@pytest.mark.parametrize("div", [False, True])
@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("value", [0.37, -3, 1e-30, 7.0])
@pytest.mark.parametrize("shape", [(7,), (37, 129), (300, 1000)])
def test_addc_equals_numpys_three_calls(two_threads, div, dt, value, shape):
    """addcmul/addcdiv in one pass: x + (t1 op t2) * value, NumPy's roundings, in and out of
    place (out is x, t1 or t2), with NaN, infinities, signed zeros, subnormals, 0 divisors."""
    x, t1, t2 = (_data(shape, dt, s) for s in (5, 6, 7))
    with np.errstate(all="ignore"):
        want = np.add(x, np.multiply((np.divide if div else np.multiply)(t1, t2), value))
        out = np.empty_like(x)
        assert L.addc(div, x, t1, t2, out, value)
        _same_bits(out, want)
        for which in range(3):
            ops = [x.copy(), t1.copy(), t2.copy()]
            assert L.addc(div, *ops, ops[which], value)
            _same_bits(ops[which], want)
        same = t1.copy()  # t1 and t2 one array (an Adam step's g * g)
        want2 = np.add(x, np.multiply((np.divide if div else np.multiply)(same, same), value))
        assert L.addc(div, x, same, same, out, value)
        _same_bits(out, want2)


def test_addc_declines_what_it_does_not_take():
    x = np.ones(8, np.float32)
    out = np.empty(8, np.float32)
    assert not L.addc(False, x, x.astype(np.float64), x, out, 1.0)  # mixed dtypes
    assert not L.addc(False, x, x[:4], x, out, 1.0)                # another shape
    assert not L.addc(False, x, x, x, out, np.float32(2.0))        # not a Python number
    assert not L.addc(False, x, x, x, out, 1 << 60)                # an int past 2^53
    buf = np.zeros(9, np.float32)
    assert not L.addc(False, buf[1:], x, x, buf[:8], 1.0)          # overlaps out partly
    assert not L.addc(False, x, x, x, x[::-1].copy()[::-1], 1.0)   # out not C-ordered


@pytest.mark.parametrize("op", ["addcmul", "addcdiv"])
def test_addcmul_and_addcdiv_take_the_kernel_in_place_and_out(monkeypatch, op):
    calls = count_calls(monkeypatch, L, "addc")
    rng = np.random.default_rng(8)
    x0, a0, b0 = (rng.standard_normal((64, 100)).astype(np.float32) for _ in range(3))
    x, a, b = ember.tensor(x0), ember.tensor(a0), ember.tensor(b0)
    r = getattr(ember, op)(x, a, b, value=0.25)
    with ember.no_grad():
        getattr(x, op + "_")(a, b, value=0.25)
    assert calls["n"] == 2
    f = np.multiply if op == "addcmul" else np.divide
    want = x0 + f(a0, b0) * np.float32(0.25)
    _same_bits(r.numpy(), want)
    _same_bits(x.numpy(), want)


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("slope", [0.2, 0.01, -1.5, 0.0, 3])
@pytest.mark.parametrize("shape", [(7,), (37, 129), (300, 1000)])
def test_leaky_relu_equals_numpys_where(two_threads, dt, slope, shape):
    """leaky_relu and its gradient in one pass: np.where's values bit for bit (NaN takes the
    slope branch, -0.0 stays -0.0, slope rounded to the dtype first)."""
    x, g = _data(shape, dt, 11), _data(shape, dt, 12)
    with np.errstate(all="ignore"):
        _same_bits(L.piecewise("leaky_relu", x, slope), np.where(x > 0, x, x * slope))
        _same_bits(L.piecewise("leaky_relu", x, slope, grad=g), np.where(x > 0, g, g * slope))


def test_leaky_relu_declines_and_the_op_takes_it(monkeypatch):
    x = np.ones(8, np.float32)
    leaky = "leaky_relu"
    assert L.piecewise(leaky, x.astype(np.float16), 0.2) is None
    assert L.piecewise(leaky, x[::2], 0.2) is None                          # not C-ordered
    assert L.piecewise(leaky, x, 0.2, grad=x.astype(np.float64)) is None    # mixed dtypes
    assert L.piecewise(leaky, x, np.float32(0.2)) is None                   # not a Python number
    calls = count_calls(monkeypatch, L, "piecewise")
    x0 = np.random.default_rng(3).standard_normal((4, 5)).astype(np.float32)
    t = ember.tensor(x0, requires_grad=True)
    y = ember.nn.functional.leaky_relu(t, 0.2)
    y.backward(ember.ones_like(y))
    assert calls["n"] == 2
    _same_bits(y.detach().numpy(), np.where(x0 > 0, x0, x0 * np.float32(0.2)))
    _same_bits(t.grad.numpy(), np.where(x0 > 0, 1, np.float32(0.2)).astype(np.float32))


def _piecewise_numpy(name, x, a, b, g):
    """The NumPy formulas of ops/nn/activation.py and ops/_blockwise.py, forward or gradient."""
    t = x.dtype.type
    if name == "hardtanh":
        return np.minimum(b, np.maximum(a, x)) if g is None else np.where((x > a) & (x < b), g, 0)
    if name == "hardsigmoid":
        return (np.minimum(np.maximum(x + 3, 0), 6) / 6 if g is None
                else g * ((x > -3) & (x < 3)) / 6)
    if name == "hardswish":
        if g is None:
            o = np.maximum(x + 3, 0)
            o = np.minimum(o, 6)
            return o * x / 6
        o = (x / 3 + 0.5) * g
        o = np.where(~(x < 3), g, o)
        return np.where(x <= -3, t(0), o)
    if name == "threshold":
        return np.where(x > a, x, np.asarray(b, x.dtype)) if g is None else np.where(x > a, g, 0)
    keep = (x > a) | (x < -a)
    if g is not None:
        return g * keep
    if name == "hardshrink":
        return np.where(keep, x, x * 0)
    return np.where(x > a, x - a, np.where(x < -a, x + a, x * 0))


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("name, a, b", [
    ("hardtanh", -1.0, 1.0), ("hardtanh", 0.0, 6.0), ("hardtanh", -0.3, 2), ("hardsigmoid", 0, 0),
    ("hardswish", 0, 0), ("threshold", 0.1, 20.0), ("threshold", -1, -7.5),
    ("hardshrink", 0.5, 0), ("softshrink", 0.5, 0), ("softshrink", 0.0, 0)])
@pytest.mark.parametrize("grad", [False, True])
def test_piecewise_equals_the_numpy_formulas(two_threads, dt, name, a, b, grad):
    """hardtanh/relu6, hardsigmoid, hardswish, threshold and the shrinks in one pass, forward
    and gradient: the NumPy formulas' values bit for bit (NaN, infinities, signed zeros,
    subnormals, the kinks at -3, 3, the bounds and +-lambda themselves)."""
    x = _data((300, 1000), dt, 13) * dt(4)
    x.flat[7::101] = -3.0
    x.flat[8::103] = 3.0
    x.flat[9::107] = dt(a)
    x.flat[10::109] = -dt(a)
    x.flat[11::113] = dt(b)
    g = _data(x.shape, dt, 14) if grad else None
    with np.errstate(all="ignore"):
        want = _piecewise_numpy(name, x, a, b, g)
        got = L.piecewise(name, x, a, b, g)
    _same_bits(got, want.astype(dt, copy=False))


def test_piecewise_declines_and_the_ops_take_it(monkeypatch):
    x = np.ones(8, np.float32)
    assert L.piecewise("hardtanh", x.astype(np.float16), -1.0, 1.0) is None
    assert L.piecewise("hardtanh", x[::2], -1.0, 1.0) is None
    assert L.piecewise("threshold", x, 1e39, 0.0) is None             # past float32's range
    assert L.piecewise("hardtanh", x, float("nan"), 1.0) is None
    assert L.piecewise("hardtanh", x, np.float32(0.0), 1.0) is None   # not a Python number
    calls = count_calls(monkeypatch, L, "piecewise")
    F = ember.nn.functional
    t = ember.tensor(np.linspace(-5, 5, 64, dtype=np.float32), requires_grad=True)
    for f in (F.relu6, F.hardtanh, F.hardsigmoid, F.hardswish, F.hardshrink, F.softshrink,
              lambda v: F.threshold(v, 0.5, -1.0)):
        f(t).sum().backward()
    assert calls["n"] == 14


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("shape, wsize", [((300, 1000), 1), ((4, 6, 5, 7), 6), ((64, 33), 33),
                                          ((5,), 1)])
def test_prelu_equals_numpys_formulas(two_threads, dt, shape, wsize):
    """PReLU's output, input gradient and weight-gradient terms in one pass: Prelu's NumPy
    formulas bit for bit (NaN, infinities, signed zeros, subnormals)."""
    x, g = _data(shape, dt, 15), _data(shape, dt, 16)
    w = np.random.default_rng(17).standard_normal(wsize).astype(dt)
    wb = w.reshape(()) if wsize == 1 else w.reshape((-1,) + (1,) * (len(shape) - 2))
    with np.errstate(all="ignore"):
        _same_bits(L.prelu(0, x, w), np.where(x > 0, x, wb * x))
        _same_bits(L.prelu(1, x, w, g), np.where(x > 0, g, wb * g))
        _same_bits(L.prelu(2, x, w, g), np.where(x > 0, g * 0, g * x))


def test_prelu_declines_and_the_op_takes_it(monkeypatch):
    x = np.ones((4, 3), np.float32)
    assert L.prelu(0, x, np.ones(2, np.float32)) is None             # not one per channel
    assert L.prelu(0, x, np.ones(3, np.float64)) is None             # mixed dtypes
    assert L.prelu(1, x, np.ones(3, np.float32)) is None             # a gradient without g
    calls = count_calls(monkeypatch, L, "prelu")
    x0 = np.random.default_rng(18).standard_normal((2, 3, 4)).astype(np.float32)
    t = ember.tensor(x0, requires_grad=True)
    m = ember.nn.PReLU(3)
    y = m(t)
    y.backward(ember.ones_like(y))
    assert calls["n"] == 3
    w = m.weight.detach().numpy().reshape(3, 1)
    _same_bits(y.detach().numpy(), np.where(x0 > 0, x0, w * x0))
    np.testing.assert_allclose(m.weight.grad.numpy(), np.where(x0 > 0, 0, x0).sum(axis=(0, 2)),
                               rtol=1e-6)


def _same_but_nan_signs(x, y):
    """Bit for bit, except a NaN's sign (the compiler may fold b + -(p) into b - p, which keeps
    a NaN product's sign where NumPy's negation flips it; nothing a user sees)."""
    nan = np.isnan(y)
    np.testing.assert_array_equal(np.isnan(x), nan)
    _same_bits(np.where(nan, 0, x), np.where(nan, 0, y))


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("w", [0.3, -0.2, 0.5, 0.9, 1.0, 2, -3.5])
def test_lerp_equals_lerps_numpy_formula(two_threads, dt, w):
    """lerp with a number weight in one pass, in and out of place: Lerp's NumPy formula bit for
    bit (float32: from start or end by |w| < 0.5, the product and sum in float64 rounded once)."""
    a, b = _data((300, 1000), dt, 19), _data((300, 1000), dt, 20)
    with np.errstate(all="ignore"):
        d = b - a
        if dt == np.float32:
            w32 = np.float32(w)
            lo, hi = (a, d * np.float64(w32)) if abs(w32) < 0.5 else \
                (b, -(d * np.float64(np.float32(1) - w32)))
            want = (lo.astype(np.float64) + hi).astype(np.float32)
        else:
            want = a + w * d if abs(w) < 0.5 else b - d * (1 - w)
        _same_but_nan_signs(L.lerp(a, b, w), want)
        for which in (0, 1):
            ops = [a.copy(), b.copy()]
            assert L.lerp(*ops, w, out=ops[which]) is ops[which]
            _same_but_nan_signs(ops[which], want)
    assert L.lerp(a[:10, :10], b[:10, :10], w) is None  # (small: NumPy's calls)
    assert L.lerp(a, b, np.float32(w)) is None


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("huber", [False, True])
@pytest.mark.parametrize("beta", [1.0, 0.3, 2.5])
@pytest.mark.parametrize("grad", ["none", "array", "scalar"])
def test_smooth_l1_equals_its_numpy_path(two_threads, dt, huber, beta, grad):
    """SmoothL1Loss/HuberLoss's terms and gradient in one pass: the NumPy path's operations bit
    for bit (NaN, infinities, signed zeros, subnormals, |d| at beta itself)."""
    x, t = _data((300, 1000), dt, 21), _data((300, 1000), dt, 22)
    x.flat[::31] = t.flat[::31] + dt(beta)
    with np.errstate(all="ignore"):
        d = x - t
        ad = np.abs(d)
        if grad == "none":
            far = (ad - 0.5 * beta) * beta if huber else ad - 0.5 * beta
            want = np.where(ad < beta, d * d * (0.5 if huber else 0.5 / beta), far)
            _same_bits(L.smooth_l1(huber, x, t, beta), want)
            return
        g = _data(x.shape, dt, 23) if grad == "array" else dt(0.37)
        if huber:
            want = np.clip(d, -beta, beta) * g
        else:
            inner = d * (g * (0.5 / beta))
            inner *= 2
            want = np.where(ad < beta, inner, np.sign(d) * g)
        _same_bits(L.smooth_l1(huber, x, t, beta, g), want)


@pytest.mark.parametrize("loss", ["smooth_l1_loss", "huber_loss"])
def test_smooth_l1_and_huber_take_the_kernel_both_ways(monkeypatch, loss):
    calls = []
    kernel = L.smooth_l1

    def spy(*a):
        r = kernel(*a)
        calls.append(r is not None)
        return r
    monkeypatch.setattr(L, "smooth_l1", spy)
    rng = np.random.default_rng(24)
    x0, t0 = rng.standard_normal((64, 100)), rng.standard_normal((64, 100))
    x = ember.tensor(x0, requires_grad=True)
    getattr(ember.nn.functional, loss)(x, ember.tensor(t0)).backward()
    assert calls == [True, True]
    d = x0 - t0
    want = (np.clip(d, -1, 1) if loss == "huber_loss" else np.where(np.abs(d) < 1, d, np.sign(d)))
    np.testing.assert_allclose(x.grad.numpy(), want / d.size, rtol=1e-12)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_mse_loss_sums_the_squares_in_one_pass_with_the_same_bits(two_threads, reduction, dt):
    """mse_loss's forward sums (x - t)^2 without the squared array (row_sum's square form):
    the bits of squaring then summing, as before."""
    from ember.ops._reduce import _sum_arr
    rng = np.random.default_rng(25)
    x0, t0 = rng.standard_normal((300, 1000)).astype(dt), rng.standard_normal((300, 1000)).astype(dt)
    got = ember.nn.functional.mse_loss(ember.tensor(x0), ember.tensor(t0),
                                       reduction=reduction).numpy()
    sq = (x0 - t0) * (x0 - t0)
    want = sq if reduction == "none" else _sum_arr(sq, None, False)
    if reduction == "mean":
        want = (want / sq.size).astype(dt)
    _same_bits(np.asarray(got).reshape(-1), np.asarray(want, dt).reshape(-1))


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_sign_equals_pytorchs_rule_in_one_pass(two_threads, dt):
    """sign: -1, 0 or 1 with +0 at NaN and at -0.0: NumPy's sign under the NaN where, bit for
    bit, and what tensor.sign() returns."""
    x = _data((300, 1000), dt, 26)
    with np.errstate(all="ignore"):
        want = np.where(x == x, np.sign(x), 0).astype(dt)
    _same_bits(L.piecewise("sign", x), want)
    _same_bits(ember.tensor(x).sign().numpy(), want)


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_abs_gradient_is_grad_times_sign_in_one_pass(two_threads, dt, monkeypatch):
    """abs's backward, grad * sign(x) (0 at x = 0 and at NaN), by the sign kernel's gradient form:
    the NumPy formula's bits (NaN, infinite and signed-zero gradients included), also from a
    sum's broadcast gradient."""
    x, g = _data((300, 1000), dt, 27), _data((300, 1000), dt, 28)
    with np.errstate(all="ignore"):
        want = g * np.where(x == x, np.sign(x), 0)
    _same_bits(L.piecewise("sign", x, grad=g), want)
    calls = count_calls(monkeypatch, L.active, "piecewise")
    t = ember.tensor(x, requires_grad=True)
    t.abs().backward(ember.tensor(g))
    _same_bits(t.grad.numpy(), want)
    t.grad = None
    t.abs().sum().backward()
    with np.errstate(all="ignore"):
        _same_bits(t.grad.numpy(), np.where(x == x, np.sign(x), 0).astype(dt))
    assert calls["n"] == 1 + -(-x.size // L._EACH_CHUNK)  # (the sum's gradient: in chunks)


def test_embedding_backward_scatters_a_broadcast_gradient_in_one_pass(monkeypatch):
    """embedding(...).sum().backward(): the sum's broadcast gradient reaches the scatter kernel
    (as a C-ordered copy) and gives NumPy's add.at counts."""
    rng = np.random.default_rng(29)
    idx = rng.integers(0, 50, 400)
    w = ember.tensor(rng.standard_normal((50, 16)).astype(np.float32), requires_grad=True)
    calls = count_calls(monkeypatch, L.active, "scatter_rows")
    ember.nn.functional.embedding(ember.tensor(idx), w).sum().backward()
    want = np.zeros((50, 16), np.float32)
    np.add.at(want, idx, np.ones((400, 16), np.float32))
    _same_bits(w.grad.numpy(), want)
    assert calls["n"] == 1


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_select_is_numpys_where_bit_for_bit(two_threads, dt):
    """select: np.where's values (NaN payloads, signed zeros, infinities, subnormals carried)
    for arrays and numbers on either side, a random mask, a mask broadcast over the batch and a
    transposed operand; None where operands broadcast or the dtype is not float32/float64."""
    a, b = _data((60, 50, 40), dt, 30), _data((60, 50, 40), dt, 31)
    c = np.random.default_rng(32).random(a.shape) < 0.5
    for x, y in ((a, b), (a, 0.0), (-2.5, b), (a, -np.inf), (a, np.asarray(1.5, dt)), (a, 7)):
        _same_bits(L.select(c, x, y), np.where(c, x, y).astype(dt))
    small = c[:1, :1]  # (1, 1, 40): broadcast over the batch
    _same_bits(L.select(small, a, b), np.where(small, a, b))
    t = np.ascontiguousarray(a.transpose(2, 1, 0)).transpose(2, 1, 0)  # (a's values, F order)
    _same_bits(L.select(c, t, 0.0), np.where(c, a, dt(0.0)))
    assert L.select(c, a[:1], b) is None  # (operands that broadcast: NumPy's where)
    assert L.select(c, a.astype(np.float16), 0.0) is None
    assert L.select(c.astype(np.uint8), a, b) is None
    if dt == np.float32:
        assert L.select(c, a, 1e300) is None  # (no float32 for it)


def test_where_and_masked_fill_take_select_forward_and_backward(monkeypatch):
    """torch.where and masked_fill run the select kernel both ways, with PyTorch's values: the
    gradient where the condition holds (or is False) and zero elsewhere, a causal mask broadcast
    over the heads."""
    calls = count_calls(monkeypatch, L.active, "select")
    x0 = _data((4, 3, 16, 16), np.float32, 33)
    x0[~np.isfinite(x0)] = 1.0
    x = ember.tensor(x0, requires_grad=True)
    y = ember.tensor(-x0, requires_grad=True)
    c = x > 0.2
    out = ember.where(c, x, y)
    _same_bits(out.detach().numpy(), np.where(x0 > 0.2, x0, -x0))
    out.sum().backward()
    _same_bits(x.grad.numpy(), np.where(x0 > 0.2, 1, 0).astype(np.float32))
    _same_bits(y.grad.numpy(), np.where(x0 > 0.2, 0, 1).astype(np.float32))
    causal = ember.tril(ember.ones(16, 16)).view(1, 1, 16, 16) == 0
    x.grad = None
    filled = x.masked_fill(causal, float("-inf"))
    want = np.where(np.tril(np.ones((16, 16))) == 0, np.float32(-np.inf), x0)
    _same_bits(filled.detach().numpy(), want)
    (filled.softmax(-1) * ember.tensor(x0)).sum().backward()
    assert calls["n"] == 5  # where forward, its two gradients, masked_fill forward and backward
    assert (x.grad.numpy()[..., np.triu_indices(16, 1)[0], np.triu_indices(16, 1)[1]] == 0).all()


def test_a_repeated_gradient_runs_in_chunks_without_a_full_copy(monkeypatch):
    """An elementwise backward kernel given a sum's gradient (one value, every stride 0) runs
    over chunks with one chunk of that value: the bits of the dense gradient, and no array of
    the input's size made for it."""
    x = _data((3, L._EACH_CHUNK + 1000), np.float32, 34)
    g = np.broadcast_to(np.float32(0.75), x.shape)
    made = []
    real_full = np.full
    monkeypatch.setattr(np, "full", lambda shape, *a, **k: made.append(shape) or real_full(
        shape, *a, **k))
    got = L.activation_backward("sigmoid", x, g)
    assert made == [L._EACH_CHUNK]
    _same_bits(got, L.activation_backward("sigmoid", x, np.ascontiguousarray(g)))
