"""Where ember refused what PyTorch accepts, or accepted what it refuses (issue 31): each case runs
on ember and on the installed PyTorch and must agree (result flags, gradients, error classes)."""

from __future__ import annotations

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

MODULES = [ember, torch]


def _outcome(fn, m):
    """What ``fn(m)`` does: ('ok', value) or ('raise', exception class name)."""
    try:
        return "ok", fn(m)
    except Exception as e:  # noqa: BLE001 - every exception is data here
        return "raise", type(e).__name__


# ---- zero-gradient ops stay in the graph ---------------------------------------------------

_ZERO_GRAD_OPS = {
    "floordiv": lambda m, x, b: x // 2,
    "floordiv_tensor": lambda m, x, b: x // b,
    "rfloordiv": lambda m, x, b: 2 // x,
    "floor_divide": lambda m, x, b: m.floor_divide(x, b),
    "div_floor": lambda m, x, b: m.div(x, b, rounding_mode="floor"),
    "div_trunc": lambda m, x, b: m.div(x, b, rounding_mode="trunc"),
    "div_floor_scalar": lambda m, x, b: m.div(x, 2, rounding_mode="floor"),
    "rdiv_trunc": lambda m, x, b: m.div(5, x, rounding_mode="trunc"),
    "heaviside": lambda m, x, b: m.heaviside(x, m.tensor(0.5)),
    "heaviside_values": lambda m, x, b: m.heaviside(x.detach(), b),
    "ifloordiv": lambda m, x, b: _inplace(x, lambda y: y.__ifloordiv__(b)),
    "floor_divide_": lambda m, x, b: _inplace(x, lambda y: y.floor_divide_(2)),
    "div_trunc_": lambda m, x, b: _inplace(x, lambda y: y.div_(b, rounding_mode="trunc")),
    "div_floor_": lambda m, x, b: _inplace(x, lambda y: y.div_(2, rounding_mode="floor")),
    "heaviside_": lambda m, x, b: _inplace(x, lambda y: y.heaviside_(m.tensor(0.5))),
}


def _inplace(x, op):
    y = x * 1
    op(y)
    return y


def _zero_grad_run(m, name):
    x = m.tensor([1.5, 2.5, -3.5, 0.0], requires_grad=True)
    b = m.tensor([2.0, -3.0, 4.0, 0.5], requires_grad=True)
    y = _ZERO_GRAD_OPS[name](m, x, b)
    flags = (y.requires_grad, y.is_leaf, type(y.grad_fn).__name__, str(y.dtype).split(".")[-1])
    y.retain_grad()  # (refused by ember when the result was detached)
    try:
        (y * m.tensor([0.5, 1.0, 1.5, 2.0])).sum().backward()
    except RuntimeError as e:
        return flags, y.detach().numpy(), ("raises", str(e).split(" (")[0].replace("_ is", " is"))
    grads = tuple(None if t.grad is None else t.grad.numpy() for t in (x, b, y))
    return flags, y.detach().numpy(), grads


@pytest.mark.parametrize("name", sorted(_ZERO_GRAD_OPS))
def test_zero_gradient_ops_stay_in_the_graph(name):
    """``//``, floor_divide, div(rounding_mode=...), heaviside (and in-place forms) record a node
    as PyTorch's do: div's rounding modes give zero gradients; ``//`` and heaviside raise at
    backward (PyTorch has no derivative for them), instead of a detached result."""
    e_flags, e_val, e_grads = _zero_grad_run(ember, name)
    t_flags, t_val, t_grads = _zero_grad_run(torch, name)
    assert e_flags == t_flags
    np.testing.assert_array_equal(e_val, t_val)
    if isinstance(t_grads[0], str):
        assert e_grads == t_grads
        return
    for ge, gt in zip(e_grads, t_grads):
        assert (ge is None) == (gt is None)
        if gt is not None:
            np.testing.assert_array_equal(ge, gt)


def test_div_rounding_mode_keeps_its_inputs_as_pytorch():
    """div(rounding_mode=...) saves its operands as PyTorch's DivBackward2 does: a second
    backward raises, and so does backward after an operand changed in place."""
    for m in MODULES:
        x = m.tensor([1.5, 2.5], requires_grad=True)
        y = m.div(x, 2, rounding_mode="floor")
        y.sum().backward()
        with pytest.raises(RuntimeError, match="second time"):
            y.sum().backward()
        b = m.tensor([2.0, 3.0]) * 1
        y = m.div(x, b, rounding_mode="trunc")
        b.mul_(2)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            y.sum().backward()


def test_rounded_division_values_and_dtypes():
    """The recorded paths keep the values and dtypes (float16 computes in float32, ints stay
    ints and are not recorded)."""
    for fn in (
        lambda m, h: m.div(h, 0.7, rounding_mode="floor"),
        lambda m, h: m.div(h, 0.7, rounding_mode="trunc"),
        lambda m, h: h // 0.7,
        lambda m, h: m.div(m.tensor([5, -7]), 2, rounding_mode="trunc"),
        lambda m, h: m.tensor([5, -7]) // 2,
        lambda m, h: m.div(m.tensor([5, -7]), 2.5, rounding_mode="floor"),
    ):
        res = []
        for m in MODULES:
            h = m.tensor([1.5, 2.5, -3.5, 100.3], dtype=m.float16, requires_grad=True)
            y = fn(m, h)
            res.append((y.detach().numpy(), str(y.dtype), y.requires_grad))
        np.testing.assert_array_equal(res[0][0], res[1][0])
        assert res[0][1:] == res[1][1:]
