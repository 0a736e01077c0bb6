"""``out=`` and PyTorch's calling forms on the pointwise, comparison, special, softmax and sorting
rooms, each compared with the installed PyTorch.

``out=`` follows PyTorch's rules (``ember/ops/_out.py``): the result lands in the given tensor (also
a view), which is returned; a wrong-shaped non-empty ``out`` is resized with PyTorch's warning, an
empty one silently; a result dtype that does not cast to ``out``'s raises; and autograd through
``out=`` is refused. The special cases are PyTorch's calling forms that a plain reading of its
docs misses: two Python numbers (``torch.add(2, 3)`` is ``tensor(5)``), a number base named
``self`` (``torch.pow(self=2, exponent=t)``), ``where``'s three overloads, ``nan_to_num``'s
``nan=None``...
"""

from __future__ import annotations

import inspect
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

X = np.array([[0.25, 0.5, 0.75], [0.125, 0.625, 0.875]], dtype=np.float32)  # in every domain
Y = np.array([[0.5, 0.25, 0.875], [0.75, 0.375, 0.125]], dtype=np.float32)
N = np.array([[0, 1, 2], [3, 4, 5]], dtype=np.int64)
B = np.array([[True, False, True], [False, True, True]])


def _ns(m: Any, path: str) -> Callable:
    obj = m
    for part in path.split("."):
        obj = getattr(obj, part)
    return obj


UNARY = """abs absolute ceil floor trunc fix round sign sgn neg negative exp exp2 expm1 log log2
log10 log1p sqrt rsqrt sin cos tan asin arcsin acos atan sinh cosh tanh asinh atanh sigmoid erf
erfc erfinv frac reciprocal square deg2rad rad2deg lgamma digamma i0 logit sinc nan_to_num
special.erf special.erfc special.erfcx special.erfinv special.expit special.exp2 special.expm1
special.log1p special.logit special.sinc special.gammaln special.digamma special.psi special.i0
special.i0e special.i1 special.i1e special.ndtr special.ndtri special.log_ndtr special.entr
special.round special.modified_bessel_i0 special.modified_bessel_i1
special.spherical_bessel_j0""".split()
BINARY = """add sub subtract mul multiply div divide true_divide pow float_power remainder fmod
floor_divide atan2 arctan2 hypot maximum minimum fmax fmin logaddexp logaddexp2 xlogy copysign
special.xlogy special.xlog1py""".split()
BOOL_RESULT = "eq ne lt le gt ge greater less not_equal logical_and logical_or logical_xor".split()
INT_ONLY = "bitwise_and bitwise_or bitwise_xor".split()


def _cases() -> list[tuple[str, Callable, str]]:
    """(id, call(m, o) -> result with out=o, the result dtype's name)."""
    cases: list[tuple[str, Callable, str]] = []
    for name in UNARY:
        cases.append((name, lambda m, o, f=name: _ns(m, f)(m.tensor(X), out=o),
                      "float64" if name == "float_power" else "float32"))
    for name in BINARY:
        cases.append((name, lambda m, o, f=name: _ns(m, f)(m.tensor(X), m.tensor(Y), out=o),
                      "float64" if name == "float_power" else "float32"))
    for name in BOOL_RESULT:
        cases.append((name, lambda m, o, f=name: _ns(m, f)(m.tensor(X), m.tensor(Y), out=o),
                      "bool"))
    for name in INT_ONLY:
        cases.append((name, lambda m, o, f=name: _ns(m, f)(m.tensor(N), m.tensor(N + 3), out=o),
                      "int64"))
    cases += [
        ("bitwise_not", lambda m, o: m.bitwise_not(m.tensor(N), out=o), "int64"),
        ("logical_not", lambda m, o: m.logical_not(m.tensor(B), out=o), "bool"),
        ("signbit", lambda m, o: m.signbit(m.tensor(X - 0.5), out=o), "bool"),
        ("isposinf", lambda m, o: m.isposinf(m.tensor(X), out=o), "bool"),
        ("isneginf", lambda m, o: m.isneginf(m.tensor(X), out=o), "bool"),
        ("clamp", lambda m, o: m.clamp(m.tensor(X), 0.3, 0.6, out=o), "float32"),
        ("clamp_tensors", lambda m, o: m.clamp(m.tensor(X), m.tensor(Y) - 0.2, m.tensor(Y),
                                               out=o), "float32"),
        ("clip", lambda m, o: m.clip(m.tensor(X), max=0.6, out=o), "float32"),
        ("clamp_min", lambda m, o: m.clamp_min(m.tensor(X), 0.4, out=o), "float32"),
        ("clamp_max", lambda m, o: m.clamp_max(m.tensor(X), 0.4, out=o), "float32"),
        ("add_alpha", lambda m, o: m.add(m.tensor(X), m.tensor(Y), alpha=2, out=o), "float32"),
        ("sub_alpha", lambda m, o: m.sub(m.tensor(X), 2.0, alpha=3, out=o), "float32"),
        ("div_floor", lambda m, o: m.div(m.tensor(X), m.tensor(Y), rounding_mode="floor",
                                         out=o), "float32"),
        ("div_trunc", lambda m, o: m.div(m.tensor(X) * 7, 2, rounding_mode="trunc", out=o),
         "float32"),
        ("pow_scalar_base", lambda m, o: m.pow(2, m.tensor(X), out=o), "float32"),
        ("round_decimals", lambda m, o: m.round(m.tensor(X) * 3, decimals=1, out=o), "float32"),
        ("heaviside", lambda m, o: m.heaviside(m.tensor(X - 0.5), m.tensor(Y), out=o),
         "float32"),
        ("addcmul", lambda m, o: m.addcmul(m.tensor(X), m.tensor(Y), m.tensor(X), value=2,
                                           out=o), "float32"),
        ("addcdiv", lambda m, o: m.addcdiv(m.tensor(X), m.tensor(Y), m.tensor(X), value=2,
                                           out=o), "float32"),
        ("lerp", lambda m, o: m.lerp(m.tensor(X), m.tensor(Y), 0.3, out=o), "float32"),
        ("lerp_tensor", lambda m, o: m.lerp(m.tensor(X), m.tensor(Y), m.tensor(Y), out=o),
         "float32"),
        ("where", lambda m, o: m.where(m.tensor(B), m.tensor(X), m.tensor(Y), out=o), "float32"),
        ("nan_to_num", lambda m, o: m.nan_to_num(m.tensor([np.nan, np.inf, 1.0]), posinf=9.0,
                                                 out=o), "float32"),
        ("logit_eps", lambda m, o: m.logit(m.tensor(X), 0.3, out=o), "float32"),
        ("polygamma", lambda m, o: m.polygamma(1, m.tensor(X), out=o), "float32"),
        ("mvlgamma", lambda m, o: m.mvlgamma(m.tensor(X) + 2, 2, out=o), "float32"),
        ("special.polygamma", lambda m, o: m.special.polygamma(2, m.tensor(X), out=o),
         "float32"),
        ("special.multigammaln", lambda m, o: m.special.multigammaln(m.tensor(X) + 2, 3, out=o),
         "float32"),
        ("special.chebyshev_polynomial_t",
         lambda m, o: m.special.chebyshev_polynomial_t(m.tensor(X), m.tensor(N), out=o),
         "float32"),
        ("special.hermite_polynomial_h",
         lambda m, o: m.special.hermite_polynomial_h(m.tensor(X), 3, out=o), "float32"),
        ("special.legendre_polynomial_p",
         lambda m, o: m.special.legendre_polynomial_p(x=m.tensor(X), n=2, out=o), "float32"),
        ("softmax", lambda m, o: m.softmax(m.tensor(X), 1, out=o), "float32"),
        ("log_softmax", lambda m, o: m.log_softmax(m.tensor(X), 0, out=o), "float32"),
        ("softmax_dtype", lambda m, o: m.softmax(m.tensor(X), 1, m.float64, out=o), "float64"),
        ("argsort", lambda m, o: m.argsort(m.tensor(X), stable=True, dim=1, out=o), "int64"),
        ("msort", lambda m, o: m.msort(m.tensor(X), out=o), "float32"),
        ("searchsorted", lambda m, o: m.searchsorted(m.tensor([0.2, 0.5, 0.8]), m.tensor(X),
                                                     out=o), "int64"),
        ("histc", lambda m, o: m.histc(m.tensor(X), bins=4, min=0, max=1, out=o), "float32"),
    ]
    return cases


CASES = _cases()


def _same(e: Any, t: Any) -> None:
    assert isinstance(e, ember.Tensor), type(e)
    assert str(e.dtype).split(".")[-1] == str(t.dtype).split(".")[-1], (e.dtype, t.dtype)
    assert tuple(e.shape) == tuple(t.shape)
    np.testing.assert_allclose(e.detach().numpy().astype(np.float64),
                               t.detach().numpy().astype(np.float64), rtol=1e-5, atol=1e-6)


def _empty(m: Any, shape: tuple, dtype: str) -> Any:
    return m.zeros(shape, dtype=getattr(m, dtype))


def _run(m: Any, call: Callable, o: Any) -> tuple[Any, list[str], BaseException | None]:
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        try:
            return call(m, o), [str(x.message) for x in w if "resized" in str(x.message)], None
        except (RuntimeError, TypeError) as e:
            return None, [], e


@pytest.mark.parametrize("name,call,dtype", CASES, ids=[c[0] for c in CASES])
def test_out_matches_pytorch(name: str, call: Callable, dtype: str) -> None:
    """out= of the right shape, an empty one and a wrong-shaped one (resized with PyTorch's
    warning), on both engines: the same values and dtype, ``out`` itself returned."""
    ref = call(torch, None)
    shape = tuple(ref.shape)
    for out_shape, warns in ((shape, False), ((0,), False), ((7,), True)):
        oe, ot = _empty(ember, out_shape, dtype), _empty(torch, out_shape, dtype)
        re_, we, ee = _run(ember, call, oe)
        rt, wt, et = _run(torch, call, ot)
        assert et is None, et
        assert ee is None, ee
        assert re_ is oe
        _same(oe, ot)
        assert bool(we) == bool(wt) == warns, (we, wt)


def test_out_write_through_a_view() -> None:
    for m in (ember, torch):
        buf = m.zeros(4, 3)
        m.exp(m.tensor(X), out=buf[1:3])
        m.clamp(m.tensor(X[0]), 0.3, 0.6, out=buf[3])
        if m is ember:
            mine = buf.numpy()
        else:
            np.testing.assert_allclose(mine, buf.numpy(), rtol=1e-6)


@pytest.mark.parametrize("call", [
    lambda m, x, o: m.abs(x, out=o),
    lambda m, x, o: m.pow(x, 2, out=o),
    lambda m, x, o: m.add(x, x, out=o),
    lambda m, x, o: m.clamp(x, 0.3, out=o),
    lambda m, x, o: m.where(x > 0.4, x, x * 0, out=o),
    lambda m, x, o: m.lerp(x, x * 2, 0.5, out=o),
    lambda m, x, o: m.special.xlog1py(x, x, out=o),
])
def test_out_refuses_autograd(call: Callable) -> None:
    """(PyTorch's softmax and special.ndtr compute without a graph instead; ember refuses there
    too, as for every op: docs/signatures.md)"""
    for m in (ember, torch):
        x = m.tensor(X, requires_grad=True)
        with pytest.raises(RuntimeError, match="out="):
            call(m, x, m.zeros(2, 3))
        with m.no_grad():  # allowed without grad mode, as in PyTorch
            call(m, x, m.zeros(2, 3))


@pytest.mark.parametrize("call", [
    lambda m, o: m.exp(m.tensor(X), out=o),  # a float result into an int out
    lambda m, o: m.div(m.tensor(N), 2, out=o),
    lambda m, o: m.softmax(m.tensor(X), 1, out=o),
    lambda m, o: m.sort(m.tensor(X), out=(m.zeros(2, 3, dtype=m.int64), m.zeros(2, 3))),
])
def test_out_refuses_a_narrower_kind(call: Callable) -> None:
    for m in (ember, torch):
        with pytest.raises(RuntimeError):
            call(m, m.zeros(2, 3, dtype=m.int64))


def test_multi_output_out_keeps_return_types() -> None:
    for m in (ember, torch):
        x = m.tensor(X)
        v, i = m.zeros(2, 3), m.zeros(2, 3, dtype=m.int64)
        r = m.sort(x, dim=1, descending=True, stable=True, out=(v, i))
        assert r.values is v and r.indices is i
        v2, i2 = m.zeros(2, 2), m.zeros(2, 2, dtype=m.int64)
        r2 = m.topk(x, 2, sorted=True, out=(v2, i2))
        assert r2.values is v2 and r2.indices is i2
        v3, i3 = m.zeros(2), m.zeros(2, dtype=m.int64)
        r3 = m.kthvalue(x, 2, 1, out=(v3, i3))
        assert r3[0] is v3 and type(r3).__name__.startswith("kthvalue")
        if m is ember:
            mine = [a.numpy().copy() for a in (v, i, v2, i2, v3, i3)]
        else:
            for a, b in zip(mine, (v, i, v2, i2, v3, i3)):
                np.testing.assert_array_equal(a, b.numpy())


# -- PyTorch's calling forms -----------------------------------------------------------------

SPECIAL = [
    # two Python numbers: a 0-d tensor of the numbers' dtype (int64, the default float, bool)
    lambda m: m.mul(5, 3),
    lambda m: m.add(2, 3),
    lambda m: m.add(2.5, 3),
    lambda m: m.add(1, 2, alpha=3),
    lambda m: m.sub(5, 2, alpha=2),
    lambda m: m.subtract(5, 2),
    lambda m: m.multiply(True, 3),
    lambda m: m.mul(2.5, True),
    lambda m: m.div(7, 2),
    lambda m: m.true_divide(7, 2),
    lambda m: m.div(7, 2, rounding_mode="floor"),
    lambda m: m.floor_divide(7, 2),
    lambda m: m.add(1, m.tensor(X)),
    lambda m: m.add(np.float64(2.0), 3),  # NumPy scalars count as Python numbers
    lambda m: m.mul(np.int32(2), 3),
    lambda m: m.add(2, 3, out=m.zeros(())),
    lambda m: m.pow(2, 3),  # refused on both
    lambda m: m.remainder(5, 3),  # refused on both
    # a number base is named self
    lambda m: m.pow(self=2, exponent=m.tensor(X)),
    lambda m: m.float_power(self=2, exponent=m.tensor(X)),
    lambda m: m.remainder(self=5, other=m.tensor(X)),
    lambda m: m.xlogy(self=2, other=m.tensor(X)),
    lambda m: m.special.xlog1py(self=2, other=m.tensor(X)),
    lambda m: m.bitwise_and(self=5, other=m.tensor(N)),
    lambda m: m.pow(self=m.tensor(X), exponent=2),  # refused on both
    lambda m: m.tensor(X).pow(self=2),  # refused on both
    # subtract's number overload takes alpha positionally
    lambda m: m.subtract(m.tensor(X), 2, 3),
    lambda m: m.tensor(X).subtract(2, 3),
    lambda m: m.true_divide(m.tensor(X), 2, rounding_mode="floor"),  # refused on both
    # clamp
    lambda m: m.clamp(m.tensor(X), min=m.tensor(Y) - 0.3, max=m.tensor(Y)),
    lambda m: m.clamp(m.tensor(X), max=m.tensor(Y)),
    lambda m: m.clamp(m.tensor(X)),  # neither: refused on both
    lambda m: m.clip(m.tensor(X), None, 0.5),
    # nan_to_num: nan=None replaces NaN with 0
    lambda m: m.nan_to_num(m.tensor([np.nan, np.inf, -np.inf, 1.0])),
    lambda m: m.nan_to_num(m.tensor([np.nan, np.inf, 1.0]), nan=None, posinf=5.0),
    lambda m: m.nan_to_num(m.tensor([np.nan, 1.0]), 2.0, neginf=-1.0),
    lambda m: m.tensor([np.nan, -np.inf]).nan_to_num(nan=None),
    # where: the condition alone gives a tuple; numbers on either side
    lambda m: m.where(m.tensor(B)),
    lambda m: m.where(m.tensor(B), m.tensor(X), 0.0),
    lambda m: m.where(m.tensor(B), 1.0, m.tensor(Y)),
    lambda m: m.where(m.tensor(B), 1.0, 0.0),
    lambda m: m.where(m.tensor(B), 1, 0),
    lambda m: m.where(condition=m.tensor(B), input=m.tensor(X), other=m.tensor(Y)),
    # sort / argsort / topk
    lambda m: m.sort(m.tensor(X), stable=True, dim=0, descending=True),
    lambda m: m.sort(m.tensor(X), 0, True),
    lambda m: m.sort(m.tensor(X), 0, True, True),  # stable is keyword-only: refused on both
    lambda m: m.tensor(X).sort(stable=False, descending=True),
    lambda m: m.argsort(m.tensor(X), stable=True, dim=0, descending=True),
    lambda m: m.tensor(X).argsort(1, True),
    lambda m: m.topk(m.tensor(X), 2, sorted=False).values.sort().values,
    lambda m: m.topk(m.tensor(X), 2, dim=0, largest=False, sorted=True),
    # lerp
    lambda m: m.lerp(m.tensor(X), m.tensor(Y), weight=m.tensor(Y)),
    lambda m: m.lerp(input=m.tensor(X), end=m.tensor(Y), weight=0.3),
    lambda m: m.lerp(m.tensor(X), m.tensor(Y), m.tensor(0.5, dtype=m.float64)),
    lambda m: m.lerp(m.tensor(X), m.tensor(Y), m.tensor(Y, dtype=m.float64)),  # refused
    lambda m: m.lerp(m.tensor(X), m.tensor(Y, dtype=m.float64), 0.5),  # refused on both
    # div's rounding modes
    lambda m: m.div(m.tensor(X) * 7, m.tensor(Y), rounding_mode="floor"),
    lambda m: m.div(m.tensor(X) * -7, 2, rounding_mode="trunc"),
    lambda m: m.div(m.tensor(N), 2, rounding_mode="floor"),
    lambda m: m.div(m.tensor(N), -4, rounding_mode="trunc"),
    lambda m: m.div(m.tensor(X), 2, rounding_mode="bad"),  # refused on both
    # round's decimals
    lambda m: m.round(m.tensor(X) * 1.2345, decimals=2),
    lambda m: m.round(m.tensor(X) * 1234.5, decimals=-2),
    lambda m: m.round(m.tensor(N)),
    lambda m: m.round(m.tensor(N), decimals=1),  # refused on both
    lambda m: m.special.round(m.tensor(X) * 3, decimals=1),
    # softmax's dtype: positional on torch.softmax, keyword-only on special.log_softmax
    lambda m: m.softmax(m.tensor(X), 1, m.float64),
    lambda m: m.special.log_softmax(m.tensor(X), 1, dtype=m.float64),
    lambda m: m.special.softmax(m.tensor(X), 0, m.float64),
    lambda m: m.special.log_softmax(m.tensor(X), 1, m.float64),  # refused on both
    # special functions: PyTorch's parameter names and number arguments
    lambda m: m.special.xlog1py(2, m.tensor(X)),
    lambda m: m.special.xlog1py(m.tensor(X), 2),
    lambda m: m.special.xlog1py(input=m.tensor(N), other=m.tensor(N)),
    lambda m: m.special.ndtr(input=m.tensor(X)),
    lambda m: m.special.entr(input=m.tensor(X)),
    lambda m: m.special.chebyshev_polynomial_t(0.5, m.tensor(N)),
    lambda m: m.special.chebyshev_polynomial_u(x=m.tensor(X), n=3),
    lambda m: m.special.spherical_bessel_j0(x=m.tensor(X)),
    lambda m: m.special.erf(x=m.tensor(X)),
    lambda m: m.special.softmax(x=m.tensor(X), axis=1),
    lambda m: m.special.logsumexp(m.tensor(X), axis=1, keepdims=True),
    lambda m: m.mvlgamma(m.tensor([0.4, 0.5, 1.0, 2.5]), 3),
]

SIGNED_ZEROS = [  # a zero remainder takes the dividend's sign, as PyTorch's
    lambda m: m.remainder(m.tensor([5.0, -3.0, -0.0, 3.0, 0.0, -5.0, 7.0]),
                          m.tensor([-1.0, 1.5, 1.0, -1.5, -2.0, 1.0, 2.0])),
    lambda m: m.remainder(m.tensor([5.0, -3.0, 4.5]), -1.5),
    lambda m: m.remainder(5, m.tensor([-1.0, 2.5])),
    lambda m: m.tensor([4.5, -4.5], dtype=m.float64) % 1.5,
]


@pytest.mark.parametrize("call", SIGNED_ZEROS, ids=[str(i) for i in range(len(SIGNED_ZEROS))])
def test_remainder_zero_sign_matches_pytorch(call: Callable) -> None:
    mine, ref = call(ember), call(torch)
    _same(mine, ref)
    assert np.array_equal(np.signbit(mine.numpy()), np.signbit(ref.numpy()))


def _outcome(m: Any, call: Callable) -> Any:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return call(m)
    except (RuntimeError, TypeError, NotImplementedError) as e:
        return type(e)


@pytest.mark.parametrize("call", SPECIAL, ids=[str(i) for i in range(len(SPECIAL))])
def test_calling_forms_match_pytorch(call: Callable) -> None:
    mine, ref = _outcome(ember, call), _outcome(torch, call)
    if isinstance(ref, type):
        assert mine is ref, (mine, ref)
        return
    assert not isinstance(mine, type), mine
    if isinstance(ref, tuple):
        assert isinstance(mine, tuple) and len(mine) == len(ref)
        for a, b in zip(mine, ref):
            _same(a, b)
    else:
        _same(mine, ref)


def test_self_is_a_number_base_only() -> None:
    x = ember.tensor(X)
    with pytest.raises(TypeError, match="number"):
        ember.pow(self=x, exponent=2)
    with pytest.raises(TypeError, match="multiple values"):
        ember.pow(x, self=2, exponent=x)
    with pytest.raises(TypeError):
        ember.add(self=2, other=x)  # add has no number-base overload named self


@pytest.mark.parametrize("name,args", [("abs_", ()), ("clamp_", (0.0, 0.5)), ("add_", (1.0,)),
                                       ("exp_", ()), ("lerp_", (0.0, 0.5))])
def test_inplace_methods_take_no_out(name: str, args: tuple) -> None:
    """``t.abs_(out=o)`` raises TypeError, as in PyTorch (the result goes into ``t``)."""
    for m in (ember, torch):
        t = m.tensor(X)
        args_ = tuple(m.tensor(Y) if name == "lerp_" and i == 0 else a for i, a in enumerate(args))
        with pytest.raises(TypeError):
            getattr(t, name)(*args_, out=m.zeros(2, 3))
    assert "out" not in inspect.signature(getattr(ember.Tensor, name)).parameters
