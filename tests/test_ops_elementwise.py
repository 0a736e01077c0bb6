"""The elementwise op table: forward vs NumPy, float32 kept, float64 gradcheck and gradgradcheck,
PyTorch parity (values, dtypes, gradients) for every op in the pointwise rooms
(ember/ops/pointwise*.py), ember/ops/comparison.py and ember/ops/casting.py."""

import math

import numpy as np
import pytest

import ember
from ember import _special
from helpers import HAVE_TORCH, check_op, positive, randn, torch

needs_torch = pytest.mark.skipif(not HAVE_TORCH, reason="needs PyTorch")


def unit(*shape, seed=0):
    """Values in (-0.9, 0.9): the domain of asin, acos, atanh, erfinv."""
    return np.tanh(randn(*shape, seed=seed)) * 0.9


def above_one(*shape, seed=0):
    return positive(*shape, seed=seed) + 1.0


def away_from_ints(*shape, seed=0):
    """Values not near integers (floor/round kinks) or zero."""
    x = randn(*shape, seed=seed) * 3
    return np.floor(x) + 0.25 + 0.5 * (np.abs(x - np.floor(x)) > 0.5)


# (name, fn on module m, input maker, NumPy reference, double backward supported)
UNARY = [
    ("exp", lambda m, x: m.exp(x), randn, np.exp, True),
    ("exp2", lambda m, x: m.exp2(x), randn, np.exp2, True),
    ("expm1", lambda m, x: m.expm1(x), randn, np.expm1, True),
    ("log", lambda m, x: m.log(x), positive, np.log, True),
    ("log2", lambda m, x: m.log2(x), positive, np.log2, True),
    ("log10", lambda m, x: m.log10(x), positive, np.log10, True),
    ("log1p", lambda m, x: m.log1p(x), positive, np.log1p, True),
    ("sqrt", lambda m, x: m.sqrt(x), positive, np.sqrt, True),
    ("rsqrt", lambda m, x: m.rsqrt(x), positive, lambda a: 1 / np.sqrt(a), True),
    ("reciprocal", lambda m, x: m.reciprocal(x), positive, np.reciprocal, True),
    ("sin", lambda m, x: m.sin(x), randn, np.sin, True),
    ("cos", lambda m, x: m.cos(x), randn, np.cos, True),
    ("tan", lambda m, x: m.tan(x), unit, np.tan, True),
    ("asin", lambda m, x: m.asin(x), unit, np.arcsin, True),
    ("acos", lambda m, x: m.acos(x), unit, np.arccos, True),
    ("atan", lambda m, x: m.atan(x), randn, np.arctan, True),
    ("sinh", lambda m, x: m.sinh(x), randn, np.sinh, True),
    ("cosh", lambda m, x: m.cosh(x), randn, np.cosh, True),
    ("tanh", lambda m, x: m.tanh(x), randn, np.tanh, True),
    ("asinh", lambda m, x: m.asinh(x), randn, np.arcsinh, True),
    ("acosh", lambda m, x: m.acosh(x), above_one, np.arccosh, True),
    ("atanh", lambda m, x: m.atanh(x), unit, np.arctanh, True),
    ("sigmoid", lambda m, x: m.sigmoid(x), randn, lambda a: 1 / (1 + np.exp(-a)), True),
    ("relu", lambda m, x: m.relu(x), randn, lambda a: np.maximum(a, 0), True),
    ("abs", lambda m, x: m.abs(x), randn, np.abs, True),
    ("neg", lambda m, x: -x, randn, np.negative, True),
    ("square", lambda m, x: m.square(x), randn, np.square, True),
    ("erf", lambda m, x: m.erf(x), randn, lambda a: np.vectorize(math.erf, otypes=[float])(a), True),
    ("erfc", lambda m, x: m.erfc(x), randn, lambda a: np.vectorize(math.erfc, otypes=[float])(a), True),
    ("erfinv", lambda m, x: m.erfinv(x), unit, None, True),
    ("frac", lambda m, x: m.frac(x), away_from_ints, lambda a: a - np.trunc(a), True),
    ("floor", lambda m, x: m.floor(x), away_from_ints, np.floor, False),
    ("ceil", lambda m, x: m.ceil(x), away_from_ints, np.ceil, False),
    ("round", lambda m, x: m.round(x), away_from_ints, np.round, False),
    ("trunc", lambda m, x: m.trunc(x), away_from_ints, np.trunc, False),
    ("sign", lambda m, x: m.sign(x), randn, np.sign, False),
    ("pow_scalar", lambda m, x: x**3, randn, lambda a: a**3, True),
    ("pow_half", lambda m, x: x**0.5, positive, np.sqrt, True),
    ("rpow", lambda m, x: 2.0**x, randn, lambda a: 2.0**a, True),
    ("clamp", lambda m, x: m.clamp(x, -0.5, 0.7), away_from_ints, lambda a: np.clip(a, -0.5, 0.7), True),
    ("clamp_min", lambda m, x: x.clamp(min=0.1), randn, lambda a: np.maximum(a, 0.1), True),
    ("nan_to_num", lambda m, x: m.nan_to_num(x), randn, np.nan_to_num, True),
    ("logit", lambda m, x: m.logit(x), lambda *s, seed=0: (unit(*s, seed=seed) + 1) / 2,
     lambda a: np.log(a / (1 - a)), True),
    ("deg2rad", lambda m, x: m.deg2rad(x), randn, np.deg2rad, True),
    ("sinc", lambda m, x: m.sinc(x), randn, np.sinc, True),
]


@pytest.mark.parametrize("name,fn,make,ref,gg", UNARY, ids=[u[0] for u in UNARY])
@pytest.mark.parametrize("shape", [(3, 4), (), (0, 2)], ids=["3x4", "0d", "empty"])
def test_unary(name, fn, make, ref, gg, shape):
    x = make(*shape)
    check_op(fn, x, ref=ref, gradgrad=gg and shape == (3, 4), atol=1e-6, rtol=1e-5)


BINARY = [
    ("add", lambda m, a, b: a + b, randn, randn, np.add),
    ("sub", lambda m, a, b: a - b, randn, randn, np.subtract),
    ("rsub", lambda m, a, b: 2.5 - a * b, randn, randn, lambda a, b: 2.5 - a * b),
    ("add_alpha", lambda m, a, b: m.add(a, b, alpha=-1.5), randn, randn, lambda a, b: a - 1.5 * b),
    ("sub_alpha", lambda m, a, b: m.sub(a, b, alpha=2), randn, randn, lambda a, b: a - 2 * b),
    ("rsub_alpha", lambda m, a, b: m.rsub(a, b, alpha=0.5), randn, randn, lambda a, b: b - 0.5 * a),
    ("rsub_number_alpha", lambda m, a, b: m.rsub(a * b, 2.0, alpha=3), randn, randn,
     lambda a, b: 2.0 - 3 * a * b),
    ("mul", lambda m, a, b: a * b, randn, randn, np.multiply),
    ("div", lambda m, a, b: a / b, randn, positive, np.divide),
    ("rdiv", lambda m, a, b: 1.5 / b + a, randn, positive, lambda a, b: 1.5 / b + a),
    ("pow", lambda m, a, b: a**b, positive, randn, np.power),
    ("atan2", lambda m, a, b: m.atan2(a, b), randn, positive, np.arctan2),
    ("maximum", lambda m, a, b: m.maximum(a, b), randn, randn, np.maximum),
    ("minimum", lambda m, a, b: m.minimum(a, b), randn, randn, np.minimum),
    ("logaddexp", lambda m, a, b: m.logaddexp(a, b), randn, randn, np.logaddexp),
    ("hypot", lambda m, a, b: m.hypot(a, b), positive, positive, np.hypot),
    ("remainder", lambda m, a, b: m.remainder(a, b), randn, positive,
     lambda a, b: np.remainder(a, b)),
    ("fmod", lambda m, a, b: m.fmod(a, b), randn, positive, np.fmod),
    ("lerp", lambda m, a, b: m.lerp(a, b, 0.3), randn, randn, lambda a, b: a + 0.3 * (b - a)),
    ("where", lambda m, a, b: m.where(a > 0, a, b), randn, randn, lambda a, b: np.where(a > 0, a, b)),
    ("xlogy", lambda m, a, b: m.xlogy(a, b), randn, positive, lambda a, b: a * np.log(b)),
    ("addcmul", lambda m, a, b: m.addcmul(a, a, b, value=0.5), randn, randn,
     lambda a, b: a + 0.5 * a * b),
    ("addcdiv", lambda m, a, b: m.addcdiv(a, a, b, value=0.5), randn, positive,
     lambda a, b: a + 0.5 * a / b),
]


@pytest.mark.parametrize("name,fn,make_a,make_b,ref", BINARY, ids=[b[0] for b in BINARY])
@pytest.mark.parametrize("shapes", [((3, 4), (3, 4)), ((2, 3, 4), (4,)), ((3, 1), (1, 5)), ((), (3,))],
                         ids=["same", "trailing", "outer", "scalar"])
def test_binary(name, fn, make_a, make_b, ref, shapes):
    a = make_a(*shapes[0])
    b = make_b(*shapes[1], seed=1)
    check_op(fn, a, b, ref=ref, gradgrad=shapes[0] == (3, 4) and name not in ("remainder", "fmod"))


def test_kinks_follow_pytorch():
    x = ember.tensor([-1.0, 0.0, 1.0], requires_grad=True)
    ember.relu(x).sum().backward()
    assert x.grad.tolist() == [0, 0, 1]  # relu'(0) = 0
    x.grad = None
    ember.abs(x).sum().backward()
    assert x.grad.tolist() == [-1, 0, 1]  # abs'(0) = 0
    a = ember.tensor([1.0, 2.0], requires_grad=True)
    b = ember.tensor([1.0, 3.0], requires_grad=True)
    ember.maximum(a, b).sum().backward()
    assert a.grad.tolist() == [0.5, 0] and b.grad.tolist() == [0.5, 1]  # ties split evenly
    c = ember.tensor([-1.0, 0.0, 0.5, 1.0], requires_grad=True)
    c.clamp(0.0, 0.5).sum().backward()
    assert c.grad.tolist() == [0, 1, 1, 0]  # the bounds themselves pass the gradient
    z = ember.tensor([0.0, 2.0], requires_grad=True)
    (z**2.0).sum().backward()
    assert z.grad.tolist() == [0, 4]


@needs_torch
def test_kinks_match_torch():
    for fn in (lambda m, x: m.relu(x), lambda m, x: m.abs(x), lambda m, x: x.clamp(0.0, 0.5),
               lambda m, x: m.sqrt(x) * 0 + x, lambda m, x: x ** 2):
        vals = [-1.0, 0.0, 0.5, 1.0]
        e = ember.tensor(vals, requires_grad=True)
        t = torch.tensor(vals, requires_grad=True)
        fn(ember, e).sum().backward()
        fn(torch, t).sum().backward()
        np.testing.assert_allclose(e.grad.numpy(), t.grad.numpy())


def test_pow_grad_wrt_exponent_at_zero_base():
    a = ember.tensor([0.0, 2.0], dtype=ember.float64, requires_grad=True)
    b = ember.tensor([2.0, 3.0], dtype=ember.float64, requires_grad=True)
    (a**b).sum().backward()
    assert b.grad.tolist()[0] == 0 and np.isclose(b.grad.tolist()[1], 8 * math.log(2))


def test_sigmoid_is_stable_for_large_inputs():
    x = ember.tensor([-1000.0, 1000.0, 0.0])
    with np.errstate(over="raise", invalid="raise", divide="raise"):
        assert ember.sigmoid(x).tolist() == [0.0, 1.0, 0.5]


@pytest.mark.parametrize("op", ["eq", "ne", "lt", "le", "gt", "ge"])
def test_comparisons(op):
    a = ember.tensor([1.0, 2.0, 3.0])
    b = ember.tensor([2.0, 2.0, 2.0])
    ref = getattr(np, {"eq": "equal", "ne": "not_equal", "lt": "less", "le": "less_equal",
                       "gt": "greater", "ge": "greater_equal"}[op])
    out = getattr(ember, op)(a, b)
    assert out.dtype == ember.bool and out.tolist() == ref(a.numpy(), b.numpy()).tolist()
    assert getattr(a, op)(2).tolist() == ref(a.numpy(), 2).tolist()
    assert not out.requires_grad


def test_comparison_operators_and_logic():
    a = ember.tensor([1, 2, 3])
    assert (a == 2).tolist() == [False, True, False] and (a != 2).tolist() == [True, False, True]
    assert ((a > 1) & (a < 3)).tolist() == [False, True, False]
    assert ((a < 2) | (a > 2)).tolist() == [True, False, True]
    assert (~(a > 1)).tolist() == [True, False, False]
    assert ember.logical_xor(a > 1, a > 2).tolist() == [False, True, False]
    assert ember.logical_not(a > 1).tolist() == [True, False, False]
    with pytest.raises(NotImplementedError, match="integer and bool"):
        ember.ones(2) & ember.ones(2)
    with pytest.raises(RuntimeError, match="logical_not"):
        _ = -(a > 1)
    with pytest.raises(RuntimeError, match="logical_xor"):
        _ = (a > 1) - (a > 2)


def test_predicates():
    x = ember.tensor([1.0, float("nan"), float("inf"), -float("inf")])
    assert ember.isnan(x).tolist() == [False, True, False, False]
    assert ember.isinf(x).tolist() == [False, False, True, True]
    assert ember.isfinite(x).tolist() == [True, False, False, False]
    assert ember.isposinf(x).tolist() == [False, False, True, False]
    assert ember.nan_to_num(x, nan=0.0, posinf=9.0, neginf=-9.0).tolist() == [1, 0, 9, -9]


def test_integer_arithmetic_dtypes():
    a = ember.tensor([7, -7])
    assert (a // 2).tolist() == [3, -4] and (a // 2).dtype == ember.int64
    assert (a % 3).tolist() == [1, 2] and (a % 3).dtype == ember.int64
    assert (a / 2).tolist() == [3.5, -3.5] and (a / 2).dtype == ember.float32
    assert ember.div(a, 2, rounding_mode="trunc").tolist() == [3, -3]
    assert ember.div(a, 2, rounding_mode="floor").tolist() == [3, -4]
    assert (a * 2).dtype == ember.int64 and (a**2).tolist() == [49, 49]
    with pytest.raises(RuntimeError, match="negative integer powers"):
        a ** -1
    assert ember.exp(ember.tensor([0])).dtype == ember.float32


def test_inplace_variants_match_out_of_place():
    x = ember.tensor([1.0, -2.0, 3.0])
    for name, args in [("add_", (1.0,)), ("sub_", (0.5,)), ("mul_", (2.0,)), ("div_", (4.0,)),
                       ("pow_", (2,)), ("clamp_", (-0.3, 0.3)), ("neg_", ()), ("abs_", ()),
                       ("exp_", ()), ("sqrt_", ()), ("log_", ()), ("tanh_", ()),
                       ("sigmoid_", ()), ("relu_", ()), ("reciprocal_", ()), ("floor_", ())]:
        y = x.clone()
        expected = getattr(ember, name[:-1], None)
        expected = getattr(x.clone(), name[:-1])(*args)
        out = getattr(y, name)(*args)
        assert out is y
        np.testing.assert_allclose(y.numpy(), expected.numpy(), equal_nan=True)
        x = y.abs() + 0.5


def test_add_alpha_and_out():
    a, b = ember.ones(3), ember.ones(3)
    assert ember.add(a, b, alpha=3).tolist() == [4, 4, 4]
    assert ember.sub(a, b, alpha=0.5).tolist() == [0.5] * 3
    out = ember.empty(3)
    ember.add(a, b, out=out)
    assert out.tolist() == [2, 2, 2]


def test_erfinv_round_trip_and_special():
    x = np.linspace(-0.999, 0.999, 101)
    y = _special.erfinv(x)
    np.testing.assert_allclose(np.vectorize(math.erf)(y), x, atol=1e-12)
    assert ember.erfinv(ember.tensor([0.0])).item() == 0.0


def test_casts_are_differentiable():
    w = ember.tensor([1.5, 2.5], requires_grad=True)
    (w.double() ** 2).sum().backward()
    assert w.grad.dtype == ember.float32 and w.grad.tolist() == [3.0, 5.0]
    assert not w.long().requires_grad


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("e", [2, 2.0, 3, 3.0, -1, -1.0, -2, -2.0, -0.5])
def test_pow_special_exponents_bitwise_like_torch(dtype, e):
    """PyTorch computes x**2 and x**3 as products, x**-1 and x**-2 as their reciprocals and
    x**-0.5 as rsqrt; ember does the same (NumPy's float32 power(x, 3) also takes ~150x longer),
    so results are bit for bit PyTorch's, zeros, -0.0 and infinities included; gradients too."""
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(0).standard_normal(2000).astype(dtype)
    x[:4] = [0.0, -0.0, np.inf, -np.inf]
    if e == -0.5:
        x = np.abs(x)
    a, t = ember.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    with np.errstate(all="ignore"):
        out, tout = a**e, t**e
        assert str(out.dtype) == str(tout.dtype)
        np.testing.assert_array_equal(out.detach().numpy(), tout.detach().numpy())
        g = np.random.default_rng(1).standard_normal(2000).astype(dtype)
        out.backward(ember.tensor(g))
        tout.backward(torch.tensor(g))
    np.testing.assert_allclose(a.grad.numpy(), t.grad.numpy(), rtol=1e-6, equal_nan=True)
    ints = ember.tensor([1, 2, 3]) ** (e if isinstance(e, int) and e > 0 else 2)
    assert ints.dtype == ember.int64


@pytest.mark.parametrize("dtype", ["int64", "int32", "uint8", "int8", "bool", "float32"])
@pytest.mark.parametrize("expr", ["a + 3", "3 + a", "a - 2", "2 - a", "a * 3", "3 * a", "a + -1",
                                  "a + (1 << 40)", "a + 2.5", "a * 0", "a + True"])
def test_tensor_with_python_number_dtypes_like_torch(dtype, expr):
    """The int64-with-int fast path (``i + 1``) and the promoting path agree with PyTorch on
    values and dtypes, 0-d and not, including numbers the dtype cannot hold (PyTorch wraps
    or raises; ember must do the same or raise)."""
    torch = pytest.importorskip("torch")
    for shape in ((), (3,)):
        data = np.arange(1, 1 + int(np.prod(shape))).reshape(shape)
        res = []
        for m in (ember, torch):
            a = m.tensor(data.astype(dtype) if dtype != "bool" else data > 1)
            try:
                r = eval(expr, {}, {"a": a})
                res.append((str(r.dtype).split(".")[-1], r.tolist()))
            except (RuntimeError, OverflowError, TypeError) as e:
                res.append(("raises", type(e).__name__ in ("RuntimeError", "OverflowError", "TypeError")))
        if res[1][0] == "raises" or res[0][0] == "raises":
            assert res[0][0] == res[1][0] == "raises" or res[0] == res[1], (expr, shape, res)
        else:
            assert res[0] == res[1], (expr, shape, res)
