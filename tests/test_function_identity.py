"""A custom ``autograd.Function``'s ``apply`` hands back the tensors its ``forward`` returned
(attributes set on them survive), as PyTorch's does; inputs returned as-is come back as views that
in-place ops refuse; ``once_differentiable`` and ``FunctionCtx`` (``torch.autograd.function``).
Each scenario runs on ember and, when it is installed, on PyTorch, and the outcomes must agree."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import ember

try:
    import torch
except ImportError:  # pragma: no cover - CI installs torch
    torch = None

MODULES = [ember] if torch is None else [ember, torch]


def _fn(m: Any) -> Any:
    class Probe(m.autograd.Function):
        @staticmethod
        def forward(ctx: Any, x: Any, mode: str) -> Any:
            if mode == "fresh":
                hard = x.round()
                hard.soft = x * 1
                return hard
            if mode == "input":
                return x
            if mode == "view":
                v = x[:2]
                v.tag = "view"
                return v
            if mode == "view_of_intermediate":
                v = (x * 2)[1:]
                v.tag = "view"
                return v
            if mode == "multi":
                y, z = x * 2, x * 3
                y.tag, z.tag = "y", "z"
                return y, z, 5, None
            if mode == "dup":
                y = x * 2
                return y, y
            if mode == "nondiff":
                y = x * 2
                y.tag = "nd"
                ctx.mark_non_differentiable(y)
                return y
            if mode == "int":
                y = (x > 0).long()
                y.tag = "int"
                return y
            if mode == "list":
                return [x * 2, x * 3]
            if mode == "namedtuple":
                return _NT(x * 2, x * 3)
            if mode == "dirty":
                x.mul_(2)
                x.tag = "dirty"
                ctx.mark_dirty(x)
                return x
            if mode == "inplace_in_forward":
                y = x * 2
                y.add_(1)
                ctx.save_for_backward(y)
                return y
            raise AssertionError(mode)

        @staticmethod
        def backward(ctx: Any, *grads: Any) -> Any:
            return grads[0], None

    return Probe


class _NT(tuple):  # a namedtuple-like tuple subclass
    def __new__(cls, a: Any, b: Any) -> Any:
        return super().__new__(cls, (a, b))


def _describe(m: Any, x: Any, out: Any) -> list:
    outs = out if isinstance(out, tuple | list) else (out,)
    rows = [type(out).__name__ if isinstance(out, tuple | list) else "tensor"]
    for o in outs:
        if not isinstance(o, m.Tensor):
            rows.append(o)
            continue
        rows.append((
            getattr(o, "tag", None), o is x, o._base is x,
            None if o.grad_fn is None else type(o.grad_fn).__name__, o.requires_grad,
            o.detach().tolist(),
        ))
    return rows


@pytest.mark.parametrize("mode", ["fresh", "input", "view", "view_of_intermediate", "multi",
                                  "dup", "nondiff", "int", "list", "namedtuple",
                                  "inplace_in_forward"])
@pytest.mark.parametrize("grad", ["requires_grad", "plain", "no_grad"])
def test_apply_returns_forward_outputs_as_pytorch(mode: str, grad: str) -> None:
    seen = []
    for m in MODULES:
        x = m.tensor([1.25, -2.5, 3.75], requires_grad=grad != "plain") * 1
        if grad == "plain":
            x = x.detach()
        if grad == "no_grad":
            with m.no_grad():
                out = _fn(m).apply(x, mode)
        else:
            out = _fn(m).apply(x, mode)
        seen.append(_describe(m, x, out))
        if mode == "dup":
            assert out[0] is out[1]
    if len(seen) == 2:
        assert seen[0] == seen[1]


def test_attributes_set_in_forward_survive() -> None:
    x = ember.tensor([0.2, 1.7], requires_grad=True)
    out = _fn(ember).apply(x, "fresh")
    assert out.soft.tolist() == pytest.approx([0.2, 1.7])
    assert out.grad_fn is not None and out.grad_fn.name() == "ProbeBackward"
    out.sum().backward()
    assert x.grad.tolist() == [1.0, 1.0]


def test_dirty_input_is_returned_itself() -> None:
    for m in MODULES:
        x = m.tensor([1.0, 2.0], requires_grad=True) * 1
        version = (lambda t: (t._version or [0])[0]) if m is ember else (lambda t: t._version)
        v = version(x)
        out = _fn(m).apply(x, "dirty")
        assert out is x and x.tag == "dirty"
        assert version(x) == v + 2  # one for mul_, one for mark_dirty (as PyTorch)
        assert type(x.grad_fn).__name__ == "ProbeBackward"


def test_saved_output_modified_in_forward_is_not_stale() -> None:
    """An output changed in place inside forward, then saved, is at the version it was saved at."""
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    out = _fn(ember).apply(x, "inplace_in_forward")
    out.sum().backward()
    assert x.grad.tolist() == [1.0, 1.0]


@pytest.mark.parametrize("mode", ["input", "view", "view_of_intermediate"])
def test_view_outputs_refuse_inplace_as_pytorch(mode: str) -> None:
    for m in MODULES:
        x = m.tensor([1.0, 2.0, 3.0], requires_grad=True) * 1
        out = _fn(m).apply(x, mode)
        with pytest.raises(RuntimeError, match="created inside a custom Function"):
            out.add_(1)
        if mode != "view_of_intermediate":
            x2 = m.tensor([1.0, 2.0, 3.0], requires_grad=True) * 1
            out2 = _fn(m).apply(x2, mode)
            x2.add_(1)
            with pytest.raises(RuntimeError, match="its base or another view of its base"):
                (out2 * 1).sum().backward()
        plain = m.tensor([1.0, 2.0, 3.0])  # nothing requires grad: in-place is fine
        _fn(m).apply(plain, mode).add_(1)


def test_input_returned_as_is_is_a_view_with_the_custom_backward() -> None:
    x = ember.tensor([1.0, 2.0], requires_grad=True)
    out = _fn(ember).apply(x, "input")
    assert out is not x and out._base is x
    assert np.shares_memory(out.detach().numpy(), x.detach().numpy())
    (out * 3).sum().backward()
    assert x.grad.tolist() == [3.0, 3.0]


# -- once_differentiable and FunctionCtx ---------------------------------------------------------


def _square(m: Any) -> Any:
    fn_mod = m.autograd.function

    class Square(m.autograd.Function):
        @staticmethod
        def forward(ctx: Any, x: Any) -> Any:
            assert isinstance(ctx, fn_mod.FunctionCtx)
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        @fn_mod.once_differentiable
        def backward(ctx: Any, g: Any) -> Any:
            assert not m.is_grad_enabled()
            (x,) = ctx.saved_tensors
            return g * 2 * x

    return Square


@pytest.mark.parametrize("m", MODULES, ids=lambda m: m.__name__)
def test_once_differentiable(m: Any) -> None:
    sq = _square(m)
    x = m.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = sq.apply(x)
    assert isinstance(y.grad_fn, m.autograd.function.FunctionCtx)
    assert not isinstance((x * 2).grad_fn, m.autograd.function.FunctionCtx)
    (g,) = m.autograd.grad((y * y).sum(), x, create_graph=True)  # the grad needs grad
    assert g.tolist() == [4.0, 32.0, 108.0] and g.requires_grad
    with pytest.raises(RuntimeError, match="differentiate twice a function that was marked"):
        g.sum().backward()
    (g,) = m.autograd.grad(sq.apply(x).sum(), x, create_graph=True)  # ones: no graph needed
    assert g.tolist() == [2.0, 4.0, 6.0] and not g.requires_grad
    sq.apply(x).sum().backward()
    assert x.grad.tolist() == [2.0, 4.0, 6.0]


@pytest.mark.parametrize("m", MODULES, ids=lambda m: m.__name__)
def test_function_ctx_can_be_made_directly(m: Any) -> None:
    ctx = m.autograd.function.FunctionCtx()
    y = _square(m).forward(ctx, m.tensor([3.0]))
    assert y.tolist() == [9.0]
