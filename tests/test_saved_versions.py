"""Which in-place changes after a forward make backward refuse: exactly those PyTorch refuses,
because each op keeps what PyTorch's derivative formula keeps (docs/autograd.md)."""

from __future__ import annotations

from typing import Any

import pytest

import ember

try:
    import torch
except ImportError:  # pragma: no cover - CI installs torch
    torch = None


def _linear(m: Any, x_rg: bool, w_rg: bool, change: str) -> Any:
    x = m.randn(3, 4, requires_grad=x_rg)
    w = m.randn(5, 4, requires_grad=w_rg)
    y = m.nn.functional.linear(x, w, m.zeros(5))
    return y, {"x": x, "w": w}[change]


def _einsum(m: Any, x_rg: bool, w_rg: bool, change: str) -> Any:
    x = m.randn(3, 4, requires_grad=x_rg)
    w = m.randn(4, 5, requires_grad=w_rg)
    return m.einsum("ij,jk->ik", x, w), {"x": x, "w": w}[change]


def _dot(m: Any, x_rg: bool, w_rg: bool, change: str) -> Any:
    x = m.randn(4, requires_grad=x_rg)
    w = m.randn(4, requires_grad=w_rg)
    return x @ w, {"x": x, "w": w}[change]


def _mm(m: Any, x_rg: bool, w_rg: bool, change: str) -> Any:
    x = m.randn(3, 4, requires_grad=x_rg)
    w = m.randn(4, 2, requires_grad=w_rg)
    return m.mm(x, w), {"x": x, "w": w}[change]


def _addcmul(m: Any, x_rg: bool, w_rg: bool, change: str) -> Any:
    x = m.randn(3, requires_grad=x_rg)
    w = m.randn(3, requires_grad=w_rg)
    return m.addcmul(m.zeros(3), x, w), {"x": x, "w": w}[change]


def _refuses(m: Any, case: Any, x_rg: bool, w_rg: bool, change: str) -> bool:
    m.manual_seed(0)
    y, t = case(m, x_rg, w_rg, change)
    with m.no_grad():
        t.add_(1)
    try:
        y.sum().backward()
    except RuntimeError as e:
        assert "modified by an inplace operation" in str(e)
        return True
    return False


def _addcdiv(m: Any, x_rg: bool, w_rg: bool, change: str) -> Any:
    x = m.randn(3, requires_grad=x_rg)
    w = (m.rand(3) + 1).requires_grad_(w_rg)
    return m.addcdiv(m.zeros(3), x, w), {"x": x, "w": w}[change]


def _mul(m: Any, x_rg: bool, w_rg: bool, change: str) -> Any:
    x = m.randn(3, requires_grad=x_rg)
    w = m.randn(3, requires_grad=w_rg)
    return x * w, {"x": x, "w": w}[change]


def _matmul_batched(m: Any, x_rg: bool, w_rg: bool, change: str) -> Any:
    x = m.randn(2, 3, 4, requires_grad=x_rg)
    w = m.randn(4, 2, requires_grad=w_rg)
    return x @ w, {"x": x, "w": w}[change]


def _conv2d(m: Any, x_rg: bool, w_rg: bool, change: str) -> Any:
    x = m.randn(1, 2, 5, 5, requires_grad=x_rg)
    w = m.randn(3, 2, 3, 3, requires_grad=w_rg)
    return m.nn.functional.conv2d(x, w), {"x": x, "w": w}[change]


def _conv_transpose1d(m: Any, x_rg: bool, w_rg: bool, change: str) -> Any:
    x = m.randn(1, 2, 5, requires_grad=x_rg)
    w = m.randn(2, 3, 3, requires_grad=w_rg)
    return m.nn.functional.conv_transpose1d(x, w), {"x": x, "w": w}[change]


CASES = {"conv2d": _conv2d, "conv_transpose1d": _conv_transpose1d, "addcdiv": _addcdiv, "mul": _mul, "matmul_batched": _matmul_batched, "linear": _linear, "einsum": _einsum, "dot": _dot, "mm": _mm, "addcmul": _addcmul}


@pytest.mark.skipif(torch is None, reason="needs PyTorch")
@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("grads", [(True, True), (True, False), (False, True)])
@pytest.mark.parametrize("change", ["x", "w"])
def test_in_place_change_refused_as_on_torch(name: str, grads: tuple, change: str) -> None:
    want = _refuses(torch, CASES[name], *grads, change)
    assert _refuses(ember, CASES[name], *grads, change) == want


def test_linear_keeps_only_what_the_needed_gradients_use() -> None:
    x = ember.randn(8, 4, requires_grad=True)
    w = ember.randn(5, 4)  # frozen weight: x's gradient needs w, W's gradient (none) needs x
    y = ember.nn.functional.linear(x, w)
    saved = y.grad_fn._saved
    assert saved[0] is None and saved[1] is w._data
    y.sum().backward()
    assert x.grad.shape == (8, 4)


# -- index and mask arguments: kept by the backward that reads them, so changed in place before
#    backward they make it refuse (never a gradient sent to the new positions)

def _mask() -> Any:
    return [[True, False, True], [False, True, False]]


INDEX_CASES = {
    "gather": lambda m, x: (lambda i: (x.gather(1, i), i))(m.tensor([[1, 2], [2, 1]])),
    "scatter": lambda m, x: (lambda i: (x.scatter(1, i, 5.0), i))(m.tensor([[1], [2]])),
    "scatter_add": lambda m, x: (lambda i: (m.zeros(2, 3).scatter_add(1, i, x[:, :1] * 1), i))(
        m.tensor([[1], [2]])),
    "scatter_reduce": lambda m, x: (lambda i: (x.scatter_reduce(1, i, x[:, :1] * 1, "sum"), i))(
        m.tensor([[1], [2]])),
    "index_add": lambda m, x: (lambda i: (m.zeros(2, 3).index_add(1, i, x[:, :2] * 1), i))(
        m.tensor([1, 2])),
    "index_add_nograd_source": lambda m, x: (lambda i: (x.index_add(1, i, m.ones(2, 2)), i))(
        m.tensor([1, 2])),
    "index_copy": lambda m, x: (lambda i: (x.index_copy(1, i, x[:, :2] * 1), i))(
        m.tensor([1, 2])),
    "index_fill": lambda m, x: (lambda i: (x.index_fill(1, i, 0.0), i))(m.tensor([1, 2])),
    "index_select": lambda m, x: (lambda i: (x.index_select(1, i), i))(m.tensor([1, 2])),
    "take": lambda m, x: (lambda i: (x.take(i), i))(m.tensor([1, 4])),
    "put": lambda m, x: (lambda i: (x.put(i, x.view(-1)[:2] * 1), i))(m.tensor([1, 4])),
    "masked_fill": lambda m, x: (lambda k: (x.masked_fill(k, 0.0), k))(m.tensor(_mask())),
    "masked_select": lambda m, x: (lambda k: (x.masked_select(k), k))(m.tensor(_mask())),
    "masked_scatter": lambda m, x: (lambda k: (x.masked_scatter(k, x * 2), k))(m.tensor(_mask())),
    "getitem_long": lambda m, x: (lambda i: (x[i], i))(m.tensor([1, 0])),
    "getitem_mask": lambda m, x: (lambda k: (x[k], k))(m.tensor(_mask())),
    "setitem_mask": lambda m, x: (lambda y, k: (y.__setitem__(k, 0.0), (y, k))[1])(
        x * 1, m.tensor(_mask())),
    "embedding": lambda m, x: (lambda i: (m.nn.functional.embedding(i, x), i))(m.tensor([1, 0])),
}


def _index_refuses(m: Any, case: Any) -> Any:
    x = m.arange(1.0, 7.0).reshape(2, 3).requires_grad_()
    out, idx = case(m, x)
    with m.no_grad():
        if idx.dtype == m.bool:
            idx.logical_not_()
        else:
            idx.sub_(1).clamp_(min=0)
    try:
        (out * m.arange(float(out.numel())).reshape(out.shape)).sum().backward()
    except RuntimeError as e:
        assert "modified by an inplace operation" in str(e)
        return "refused"
    return x.grad.tolist()


@pytest.mark.skipif(torch is None, reason="needs PyTorch")
@pytest.mark.parametrize("name", sorted(INDEX_CASES))
def test_an_index_changed_in_place_is_refused_as_on_torch(name: str) -> None:
    assert _index_refuses(ember, INDEX_CASES[name]) == _index_refuses(torch, INDEX_CASES[name])
