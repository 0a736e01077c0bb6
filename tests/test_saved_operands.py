"""What an op saves for backward, as PyTorch's: a mixed-dtype op's pack hook
(``saved_tensors_hooks``) gets the operand itself, not ember's promoted copy; logaddexp's and
lerp's backward read the saved operands (a write through ``.data`` after the op reaches them,
and an in-place change fails the version check), against the installed PyTorch."""

from __future__ import annotations

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")


def _values(out):
    if out is None:
        return None
    if isinstance(out, (tuple, list)):
        return [_values(o) for o in out]
    if isinstance(out, (bool, int, float, str)):
        return out
    return out.detach().numpy()


def _assert_same(prog):
    """``prog(m)`` on torch and ember: the same values (or both None), dtypes compared too."""
    t, e = _values(prog(torch)), _values(prog(ember))

    def cmp(a, b):
        if isinstance(a, list):
            assert isinstance(b, list) and len(a) == len(b)
            for x, y in zip(a, b):
                cmp(x, y)
        elif isinstance(a, np.ndarray):
            assert b.dtype == a.dtype, (a.dtype, b.dtype)
            np.testing.assert_allclose(b, a, rtol=1e-6, atol=1e-7, equal_nan=True)
        else:
            assert a == b

    cmp(t, e)


# ---------------------------------------------------------------------------------------------
# saved_tensors_hooks and promoted operands

MIXED = {
    "mul": lambda m, x, c: x * c,
    "div": lambda m, x, c: c / x,
    "atan2": lambda m, x, c: m.atan2(x, c),
    "pow": lambda m, x, c: m.pow(x.abs() + 1, c) + m.pow(c.abs() + 1, x),
    "hypot": lambda m, x, c: m.hypot(x, c),
    "logaddexp": lambda m, x, c: m.logaddexp(x, c),
}


@pytest.mark.parametrize("op", sorted(MIXED))
def test_pack_hook_gets_the_operand_itself(op):
    """x float32, c float64: PyTorch's pack hook receives x itself (its backward casts it), and
    never a float64 copy of it; the gradients go through the hooks' values."""

    def prog(m):
        x = m.tensor([[-1.5, 0.375], [1.25, -1.125]], requires_grad=True)
        c = m.tensor([[0.375, 1.125]], dtype=m.float64, requires_grad=True)
        seen = []

        def pack(t):
            seen.append(t)
            return t.detach().clone()  # as offloading hooks do: not the tensor itself

        with m.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            y = MIXED[op](m, x, c)
        got_x = any(s is x for s in seen)
        copies = sum(1 for s in seen if s is not x and s.dtype == m.float64
                     and s.shape == x.shape and bool((s == x.double()).all()))
        w = m.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=m.float64)
        (y * w).sum().backward()
        return got_x, copies, x.grad, c.grad

    _assert_same(prog)


def test_pack_hook_operand_under_create_graph():
    """The same under create_graph: the unpacked x is cast again (a recorded cast) and the second
    backward through the gradient agrees with PyTorch's."""

    def prog(m):
        x = m.tensor([0.5, -1.25, 2.0], requires_grad=True)
        c = m.tensor([1.5, 0.25, -0.75], dtype=m.float64, requires_grad=True)
        seen = []
        with m.autograd.graph.saved_tensors_hooks(lambda t: (seen.append(t), t)[1], lambda t: t):
            y = c / x * x
        (gx,) = m.autograd.grad(y.sum(), x, create_graph=True)
        gx.sum().backward()
        return any(s is x for s in seen), gx, x.grad, c.grad

    _assert_same(prog)


def test_saved_self_of_a_mixed_dtype_op_is_the_operand():
    """``grad_fn._saved_self`` shows x (float32), as PyTorch's."""
    for m in (torch, ember):
        x = m.tensor([1.0, 2.0], requires_grad=True)
        y = x * m.tensor([0.5, 3.0], dtype=m.float64, requires_grad=True)
        assert y.grad_fn._saved_self.dtype == m.float32
        assert y.grad_fn._saved_self is x


def test_data_write_with_hooks_reaches_backward():
    """A write through x.data after the op, the hooks keeping x itself: both read the new x."""

    def prog(m):
        x = m.tensor([0.5, -1.25, 2.0], requires_grad=True)
        c = m.tensor([1.5, 0.25, -0.75], dtype=m.float64, requires_grad=True)
        with m.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
            y = c * x
        x.data.mul_(-3)
        y.sum().backward()
        return x.grad, c.grad

    _assert_same(prog)


# ---------------------------------------------------------------------------------------------
# logaddexp / lerp: what backward reads


OPS = {
    "logaddexp": lambda m, a, b, w: m.logaddexp(a, b),
    "logaddexp2": lambda m, a, b, w: m.logaddexp2(a, b),
    "lerp_tensor_weight": lambda m, a, b, w: m.lerp(a, b, w),
    "lerp_scalar_weight": lambda m, a, b, w: m.lerp(a, b, 0.3),
    "lerp_inplace": lambda m, a, b, w: a.clone().lerp_(b, w),
}


@pytest.mark.parametrize("op", sorted(OPS))
def test_data_write_after_op_reaches_backward(op):
    """Same-dtype ``.data`` writes to the saved operands after the op: PyTorch's backward reads
    the new values (logaddexp: grad / (1 + exp(b - a)); lerp's weight: grad * (end - start))."""

    def prog(m):
        a = m.tensor([0.5, -1.25, 2.0], requires_grad=True)
        b = m.tensor([1.5, 0.25, -0.75], requires_grad=True)
        w = m.tensor([0.25, 0.5, 0.75], requires_grad=True)
        y = OPS[op](m, a, b, w)
        a.data.mul_(-2).add_(0.5)
        b.data.mul_(3)
        w.data.mul_(0.5)
        (y * m.tensor([1.0, 2.0, 3.0])).sum().backward()
        return a.grad, b.grad, w.grad

    _assert_same(prog)


@pytest.mark.parametrize("weight_grad", [False, True])
@pytest.mark.parametrize("op", ["logaddexp", "logaddexp2", "lerp_tensor_weight"])
def test_inplace_change_of_saved_operand(op, weight_grad):
    """An in-place change of an operand after the op fails backward where PyTorch's does: lerp
    keeps start and end only when the weight needs a gradient."""

    def prog(m):
        a = m.tensor([0.5, -1.25, 2.0], requires_grad=True)
        b = m.tensor([1.5, 0.25, -0.75], requires_grad=True)
        w = m.tensor([0.25, 0.5, 0.75], requires_grad=weight_grad)
        a2 = a * 1
        y = OPS[op](m, a2, b, w)
        a2.add_(1)
        try:
            y.sum().backward()
        except RuntimeError as e:
            return "modified by an inplace operation" in str(e)
        return a.grad

    _assert_same(prog)


def test_logaddexp_gradients_far_apart_and_double_backward():
    """PyTorch's formula where exp overflows (a zero gradient, no warning) and under
    create_graph, real and complex."""

    def prog(m, fn, cplx):
        dt = m.complex128 if cplx else m.float64
        a = m.tensor([0.5, -1.25, 30.0, -200.0], dtype=dt, requires_grad=True)
        b = m.tensor([1.5, 0.25, -30.0, 300.0], dtype=dt, requires_grad=True)
        a2, b2 = (a * (1 + 0.5j), b * (1 - 0.25j)) if cplx else (a, b)
        y = getattr(m, fn)(a2, b2) * m.tensor([1.0, 2.0, 3.0, 4.0], dtype=dt)
        ga, gb = m.autograd.grad(y.sum().real if cplx else y.sum(), (a, b), create_graph=True)
        (ga.abs().sum() + (gb * gb).abs().sum()).backward()
        return ga, gb, a.grad, b.grad

    for fn, cplx in (("logaddexp", False), ("logaddexp2", False), ("logaddexp", True)):
        _assert_same(lambda m, fn=fn, cplx=cplx: prog(m, fn, cplx))
