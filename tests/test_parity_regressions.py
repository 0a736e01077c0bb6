"""Regressions for disagreements with PyTorch 2.13 that the differential tester found.

Each test runs a minimal repro of one disagreement class (named as in
/work/notes/fuzz_findings.md) on ember and on torch and compares what happens: the values, the
dtype, the gradients, or that both raise the same exception class.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


def _outcome(m, fn):
    """``("ok", result)`` or ``("raises", exception class name)`` of ``fn(m)``."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return "ok", fn(m)
    except Exception as e:  # noqa: BLE001 - the class is what is compared
        return "raises", type(e).__name__


def _np(v):
    if v is None:
        return None
    if isinstance(v, tuple | list):
        return [_np(w) for w in v]
    if hasattr(v, "detach"):
        return (str(v.dtype).split(".")[-1], v.detach().numpy().copy())
    return v


def same(fn) -> None:
    """``fn(m)`` gives the same values and dtypes (or raises the same class) on both."""
    e_kind, e = _outcome(ember, fn)
    t_kind, t = _outcome(torch, fn)
    assert e_kind == t_kind, f"ember {e_kind} {e!r}, torch {t_kind} {t!r}"
    if e_kind == "raises":
        assert e == t, f"ember raises {e}, torch raises {t}"
        return
    _compare(_np(e), _np(t))


def _compare(e, t) -> None:
    if isinstance(t, list):
        assert isinstance(e, list) and len(e) == len(t)
        for a, b in zip(e, t):
            _compare(a, b)
        return
    if t is None or not isinstance(t, tuple):
        assert e == t, f"ember {e!r}, torch {t!r}"
        return
    assert e[0] == t[0], f"dtype: ember {e[0]}, torch {t[0]}"
    assert e[1].shape == t[1].shape
    np.testing.assert_allclose(e[1].astype(np.float64), t[1].astype(np.float64), rtol=1e-6,
                               equal_nan=True)
    zero = t[1] == 0
    if t[1].dtype.kind == "f":
        assert np.array_equal(np.signbit(e[1][zero]), np.signbit(t[1][zero])), "signed zeros"


# -- promotion family ------------------------------------------------------------------------


@pytest.mark.parametrize("expr", [
    "x // -3", "x + -3", "x - -3", "x * -1", "x % -3", "x < -3", "x & -3", "-3 - x",
    "-3 // x", "x + 256", "m.add(x, -1)", "x.add(-3, alpha=2)", "m.where(x > 3, x, -1)",
    "x.to(m.int8) + 1000", "x.to(m.int8) * 300",
])
def test_uint8_negative_python_int(expr):
    """A Python int out of an integer tensor's range wraps (PyTorch); NumPy raised OverflowError."""
    same(lambda m: eval(expr, {"m": m, "x": m.tensor([[4, 3, 4], [5, 5, 250]], dtype=m.uint8)}))


@pytest.mark.parametrize("expr", [
    "a ** m.tensor([4, 2, -1])", "a ** m.tensor(-2)", "m.pow(2, m.tensor([-1, 2]))",
    "a ** m.tensor([-1, -2, -3])", "a.to(m.uint8) ** m.tensor([-1, -2, -1])",
    "a ** -1", "m.tensor([0, 1, -1]) ** m.tensor([-1, -1, -1])",
    "m.tensor([3, 1, 1], dtype=m.uint8) ** -3", "m.tensor([3, 1], dtype=m.uint8) ** 2",
    "b ** -1", "m.tensor([3, 1], dtype=m.uint8) ** m.tensor(-3)",
])
def test_int_pow_negative_tensor_exponent(expr):
    """Integer ** negative integer tensor: 1, (-1)**e or 0, as PyTorch (a negative number
    exponent still raises)."""
    same(lambda m: eval(expr, {"m": m, "a": m.tensor([-2, 1, -1], dtype=m.int32),
                               "b": m.tensor([True, False])}))


@pytest.mark.parametrize("expr", [
    "True - a", "a - True", "f - True", "b - 1", "1 - b", "m.sub(b, 1)", "m.sub(a, b)",
    "b - b", "f - b", "b - f", "m.sub(b, 1, alpha=2)",
])
def test_bool_subtraction(expr):
    same(lambda m: eval(expr, {"m": m, "a": m.tensor(-2, dtype=m.int32),
                               "f": m.tensor([2.5]), "b": m.tensor([True, False])}))


@pytest.mark.parametrize("expr", [
    "m.atan2(f, 3)", "m.atan2(3, f)", "m.eq(3, f)", "m.lt(3, f)", "m.ge(3.0, f)", "m.eq(f, 3)",
    "m.add(3, f)", "m.mul(3, f)", "m.atan2(f, f)",
])
def test_python_scalar_first_argument(expr):
    same(lambda m: eval(expr, {"m": m, "f": m.tensor([1.5, -2.0])}))


@pytest.mark.parametrize("expr", [
    "b ** False", "b ** True", "m.pow(b, True)", "b ** b", "True ** b", "b ** 2", "b // b",
    "b // 2",
])
def test_bool_pow_floordiv(expr):
    same(lambda m: eval(expr, {"m": m, "b": m.tensor([True, False])}))


@pytest.mark.parametrize("expr", [
    "m.sub(m.tensor(2), m.tensor([4, 1], dtype=m.uint8), alpha=0.5)",
    "m.add(m.tensor(2), 1, alpha=0.5)", "m.add(b, b, alpha=0.5)",
    "m.sub(m.tensor([3, -3]), 0, alpha=2)", "m.add(f, 2, alpha=2)",
    "m.add(m.tensor([1, 2]), 2.5, alpha=2)",
    "m.add(m.tensor(1.75, dtype=m.float64), b, alpha=0.5)",
    "m.add(m.tensor(1.75, dtype=m.float64), m.tensor([1, 2]), alpha=0.5)",
    "m.add(b, b, alpha=2)", "m.add(b, b, alpha=0)", "m.add(m.tensor([1, 2]), b, alpha=2)",
    "m.add(m.tensor([1, 2], dtype=m.uint8), m.tensor([1], dtype=m.int8), alpha=3)",
    "m.add(f, m.tensor([1]), alpha=0.5)",
    "m.add(m.tensor(True), True, alpha=2)", "m.add(m.tensor(True), False, alpha=2)",
    "m.add(b, True, alpha=0)", "m.add(m.tensor(1), True, alpha=2)",
])
def test_alpha_promotion(expr):
    """add/sub with alpha: promoted first, then scaled; a float alpha with integral operands
    raises; a number ``other`` works."""
    same(lambda m: eval(expr, {"m": m, "b": m.tensor([True, False]), "f": m.tensor([1.5])}))


# -- reductions family -----------------------------------------------------------------------


@pytest.mark.parametrize("expr", ["m.argmax(b)", "m.argmin(b, 1)", "b.argmax(0, keepdim=True)",
                                  "m.argmin(b.int(), 1)"])
def test_argmax_bool(expr):
    """argmax/argmin of a bool tensor raise, as in PyTorch."""
    same(lambda m: eval(expr, {"m": m, "b": m.tensor([[True, False], [False, True]])}))


@pytest.mark.parametrize("expr", [
    "f & 1", "f | i", "f ^ b", "b & 1.5", "m.bitwise_and(f, 1)", "i & 3", "b | b",
])
def test_bitwise_float_error_class(expr):
    """Bitwise ops on floats raise NotImplementedError (PyTorch's class), not TypeError."""
    same(lambda m: eval(expr, {"m": m, "f": m.tensor([1.5]), "i": m.tensor([2]),
                               "b": m.tensor([True])}))


@pytest.mark.parametrize("expr", [
    "m.prod(x, (2,), dtype=m.int64)", "x.prod((1,))", "x.norm((0,))", "x.norm(True)",
    "x.detach().bool().norm((0,))", "x.norm(2, (0,))",
])
def test_argument_errors_before_dtype_errors(expr):
    """A bad dim/p raises TypeError first (PyTorch's argument parsing), before dtype checks."""
    same(lambda m: eval(expr, {"m": m, "x": m.ones(2, 3, 4, dtype=m.float64, requires_grad=True)}))


@pytest.mark.parametrize("expr", [
    "x.amin()", "x.amax(())", "x.amin(1)", "x.amin(0)", "x.max()", "x.aminmax()",
    "x.amin((0, 1))", "m.zeros(0).amax()",
])
def test_empty_amin_error_class(expr):
    """amax/amin of an empty tensor over all dims: PyTorch's RuntimeError ("specify the
    reduction dim"), an IndexError only for a named empty dim."""
    same(lambda m: eval(expr, {"m": m, "x": m.zeros(2, 0, dtype=m.int64)}))


def _grad_of(m, fn, value, dtype="float64"):
    x = m.tensor(value, dtype=getattr(m, dtype), requires_grad=True)
    out = fn(m, x)
    (out * m.linspace(0.5, 1.5, out.numel(), dtype=out.dtype).reshape(out.shape)).sum().backward()
    return out, x.grad


@pytest.mark.parametrize("fn", [
    lambda m, x: m.norm(x, 0), lambda m, x: m.norm(x, 0, dim=0),
    lambda m, x: m.linalg.vector_norm(x, 0, dim=1),
])
def test_norm_p0(fn):
    """The 0-"norm" counts non-zeros: PyTorch gives it no gradient at all (x.grad stays None)."""
    same(lambda m: _grad_of(m, fn, [[-0.75, 0.0], [2.0, 1.0]]))


@pytest.mark.parametrize("expr", [
    "x.sum((0,), keepdim=True, dtype=m.int64)", "m.sum(x, dtype=m.int32)",
    "x.prod(dtype=m.int64)", "x.cumsum(0, dtype=m.int64)", "x.nansum(dtype=m.int64)",
    "x.mean(dtype=m.int64)", "m.softmax(x, 0, dtype=m.int64)",
    "x.detach().sum(dtype=m.int64)", "x.sum(dtype=m.float64)",
])
def test_int_dtype_reduce_grad(expr):
    """An integer ``dtype=`` on a tensor that requires grad raises ("Autograd not support")."""
    same(lambda m: eval(expr, {"m": m, "x": m.tensor([-1.875, 0.25, 0.5], requires_grad=True)}))


@pytest.mark.parametrize("fn", [
    lambda m, x: m.var(x, -1, correction=2), lambda m, x: m.var(x, -1, correction=1),
    lambda m, x: m.std(x, -1, correction=2), lambda m, x: m.var(x.t(), -1, correction=3),
    lambda m, x: m.std(x.t(), -1, correction=3), lambda m, x: m.var(x.t(), -1, correction=2),
    lambda m, x: m.var_mean(x.t(), -1, correction=3)[0],
])
def test_var_dof_nonpositive(fn):
    """var/std backward divide by the unclamped n - correction (-0 or a finite value where
    ember gave NaN)."""
    same(lambda m: _grad_of(m, fn, [[1.0], [-0.375]]))


@pytest.mark.parametrize("expr", [
    "m.softmax(m.zeros(0, 3, dtype=m.int64), 0)", "m.log_softmax(m.zeros(2, 0, dtype=m.bool), -1)",
    "m.softmax(m.zeros(0, 3), 0, dtype=m.int64)", "m.softmax(m.zeros(0, 3, dtype=m.int64), 5)",
    "m.softmax(m.zeros(2, 3, dtype=m.int64), 0)", "m.softmax(m.zeros(0, 3), 1)",
])
def test_softmax_empty_int(expr):
    """softmax/log_softmax of an empty integer or bool tensor return it (PyTorch); non-empty
    ones raise."""
    same(lambda m: eval(expr, {"m": m}))


# -- indexing family -------------------------------------------------------------------------


def _setitem(m, key, value):
    y = m.tensor(np.arange(24, dtype=np.float64).reshape(2, 3, 4), requires_grad=True).clone()
    k = eval(key, {"m": m, "np": np, "y": y})
    y[k] = eval(value, {"m": m, "np": np})
    return y


@pytest.mark.parametrize("key,value", [
    ("(True, np.array([0, 1]))", "m.tensor(1.625, dtype=m.float32)"),
    ("[0, 1]", "m.tensor(1.5, dtype=m.float32)"),
    ("[0, 1]", "m.ones(3, 4, dtype=m.float32)"),
    ("m.tensor([0, 1])", "m.ones(4, dtype=m.int64)"),
    ("y > 3", "m.ones(20, dtype=m.float32)"),
    ("y > 3", "m.tensor(1.5, dtype=m.float32)"),
    ("True", "m.tensor(1.5, dtype=m.float32)"),
    ("(0, [0, 1])", "m.ones(4, dtype=m.float32)"),
    ("(0, 0, [0, 1])", "m.tensor([1, 2])"),
    ("[0, 1]", "m.tensor(1.5, dtype=m.float64)"),
    ("0", "m.ones(3, 4, dtype=m.float32)"),
    ("True", "m.ones(4, dtype=m.float32)"), ("(True,)", "m.ones(4, dtype=m.float32)"),
    ("(True, ...)", "m.ones(4, dtype=m.float32)"), ("m.tensor(True)", "m.tensor(1.0)"),
    ("(y > 3).numpy()", "m.tensor(1.0)"), ("y > 3", "m.tensor(1)"),
    ("(0, m.tensor(0), np.array([False, True, True, False]))", "m.tensor(2.5, dtype=m.float32)"),
    ("(slice(None), 0, np.array([False, True, True, False]))", "m.tensor(2.5, dtype=m.float32)"),
    ("(Ellipsis, np.array([False, True, True, False]))", "m.tensor(2.5, dtype=m.float32)"),
    ("(0, 0, [True, False, True, False])", "m.tensor(2.5, dtype=m.float32)"),
    ("[True, False]", "m.tensor(2.5, dtype=m.float32)"),
    ("(m.tensor([0]), 0, np.array([False, True, True, False]))", "m.tensor(2.5, dtype=m.float32)"),
    ("(0, 0, np.array([False, True, True, False]))", "m.ones(2, dtype=m.float32)"),
    ("(0, 0, m.tensor([1, 2]))", "m.tensor(2.5, dtype=m.float32)"),
    ("(np.array([True, False]),)", "m.tensor([2.875], dtype=m.float32)"),
    ("np.array([True, True])", "m.ones(1, 1, dtype=m.float32)"),
    ("np.array([True, True])", "m.ones(2, dtype=m.float32)"),
    ("[0]", "m.ones(1, dtype=m.float32)"), ("(0, [0, 1])", "m.ones(1, dtype=m.float32)"),
])
def test_index_put_dtype_mismatch(key, value):
    same(lambda m: _setitem(m, key, value))


@pytest.mark.parametrize("key,value", [
    ("False", "m.tensor([], dtype=m.float64)"), ("False", "m.ones(5, dtype=m.float64)"),
    ("False", "m.ones(3, 2, dtype=m.float32)"), ("False", "3.0"),
    ("(False, 0)", "m.ones(5, dtype=m.float64)"), ("m.tensor(False)", "m.ones(5, dtype=m.float64)"),
    ("y > 100", "m.ones(5, dtype=m.float64)"), ("y > 100", "m.ones(0, dtype=m.float64)"),
])
def test_index_write_empty_target(key, value):
    """A lone ``False`` key writes nothing and checks nothing (PyTorch); other empty targets
    still check the value's shape."""
    same(lambda m: _setitem(m, key, value))


# -- shape family ----------------------------------------------------------------------------


VIEWS = {
    "t": lambda x: x[0].t(), "permute": lambda x: x.permute(2, 0, 1),
    "permute2": lambda x: x.permute(1, 2, 0), "slice": lambda x: x[:, :, ::2],
}
OPS = {
    "stack": lambda m, y: m.stack([y, y * 2.0], -2), "cat": lambda m, y: m.cat([y, y], 0),
    "roll": lambda m, y: y.roll(1, 0), "tril": lambda m, y: y.tril(), "triu": lambda m, y: y.triu(1),
    "flip": lambda m, y: y.flip(0), "clone": lambda m, y: y.clone(), "sum": lambda m, y: y.sum(0),
    "mean": lambda m, y: y.mean(1), "softmax": lambda m, y: y.softmax(-1),
    "cumsum": lambda m, y: y.cumsum(0), "amax": lambda m, y: y.amax(1),
    "max_dim": lambda m, y: y.max(1)[0], "var": lambda m, y: y.var(0),
    "logsumexp": lambda m, y: y.logsumexp(1), "mul": lambda m, y: y * 2.0,
}


@pytest.mark.parametrize("view", list(VIEWS))
@pytest.mark.parametrize("op", list(OPS))
def test_view_of_op_result_layout(view, op):
    """An op's result is contiguous exactly when PyTorch's is, so ``.view(-1)`` of it works or
    raises alike (reductions, cat, stack, roll, tril: contiguous; clone, flip, elementwise:
    the dense input's layout)."""
    def run(m):
        x = m.tensor(np.arange(24, dtype=np.float64).reshape(2, 3, 4), requires_grad=True)
        r = OPS[op](m, VIEWS[view](x))
        return r.is_contiguous(), r.view(-1)

    same(run)


@pytest.mark.parametrize("expr", [
    "x.unsqueeze(0).expand(2, -1).float().view(4, 2)", "x.unsqueeze(0).expand(2, -1).float()",
    "x.reshape(2, 2).t().float()", "x.reshape(2, 2).t().float().is_contiguous()",
    "x[::2].float().is_contiguous()",
])
def test_view_of_cast_of_expanded(expr):
    """A cast keeps a dense tensor's layout and makes anything else contiguous (PyTorch's
    preserve_format), so .view() after .float() of an expanded tensor works."""
    same(lambda m: eval(expr, {"m": m, "x": m.tensor([-1.625, 1.875, 0.125, 0.5],
                                                       dtype=m.float64, requires_grad=True)}))


@pytest.mark.parametrize("expr", [
    "1 / m.relu(z)", "1 / m.clamp(z, min=0)", "1 / m.clamp(z, max=0.0)", "1 / m.clamp(z, -0.0, 0.0)",
    "1 / m.nn.functional.hardtanh(z, -0.0, 0.0)", "1 / m.nn.functional.relu6(z)",
    "1 / m.clamp_min(z, 0)", "1 / m.clamp(z, min=m.zeros(4))",
])
def test_signed_zero(expr):
    """relu/clamp/hardtanh keep -0.0 (a tie keeps x), as PyTorch."""
    same(lambda m: eval(expr, {"m": m, "z": m.tensor([-0.0, 0.0, -1.0, 2.0])}))


def test_clone_memory_format():
    for m in (ember, torch):
        x = m.ones(3, 4).t()
        assert m.clone(x, memory_format=m.contiguous_format).is_contiguous()
        assert not m.clone(x).is_contiguous()


def test_no_float64_upcast_in_new_paths():
    """The rewritten ops keep float32 (no silent NumPy float64)."""
    x = ember.tensor([0.25, 0.5], requires_grad=True)
    for out in (ember.xlogy(x, 2.0), ember.xlogy(2.0, x), x.logit(), x.sinc(), x.nan_to_num(),
                ember.copysign(x, -1.0), ember.hypot(x, x), ember.lerp(x, x, 0.5), x ** -0.5,
                ember.addcdiv(x, x, x + 1), ember.add(x, ember.tensor([1, 2]), alpha=0.5)):
        assert out.dtype == ember.float32
        out.sum().backward()
        assert x.grad.dtype == ember.float32
    assert not math.isnan(float(x.grad.sum()))
