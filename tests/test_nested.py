"""``torch.nested``: nested tensors of the jagged and strided layouts, compared with PyTorch."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")
warnings.filterwarnings("ignore", message=".*nested tensors is in prototype.*")

A = np.arange(6.0, dtype=np.float32).reshape(2, 3)
B = np.arange(12.0, dtype=np.float32).reshape(4, 3) - 5


def _nt(lib: Any, layout: Any = None, **kw: Any) -> Any:
    parts = [lib.tensor(A), lib.tensor(B)]
    if layout == "jagged":
        return lib.nested.nested_tensor(parts, layout=lib.jagged, **kw)
    return lib.nested.nested_tensor(parts, **kw)


def _vals(x: Any) -> Any:
    if getattr(x, "is_nested", False):
        return [c.detach().numpy() for c in x.unbind()]
    return x.detach().numpy()


def _same(a: Any, b: Any) -> None:
    a, b = _vals(a), _vals(b)
    if isinstance(a, list):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            assert x.dtype == y.dtype and x.shape == y.shape
            np.testing.assert_allclose(x, y, rtol=1e-6, atol=1e-6)
    else:
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("layout", [None, "jagged"])
def test_metadata(layout: Any) -> None:
    e, t = _nt(ember, layout), _nt(torch, layout)
    for x in (e, t):
        assert x.is_nested and x.dim() == 3 and x.size(0) == 2 and x.size(2) == 3
        assert x.numel() == 18 and x.is_contiguous()
    assert len(e) == 2 and len(list(e)) == 2
    assert str(e.layout) == str(t.layout)
    if layout == "jagged":
        assert str(e.shape).replace(str(e.size(1)), "j") == str(t.shape).replace(str(t.size(1)),
                                                                                   "j")
        _same(e.values(), t.values())
        _same(e.offsets(), t.offsets())
        assert e.lengths() is None and e._ragged_idx == 1
        assert repr(e).replace(str(e.size(1)), "j") == repr(t).replace(str(t.size(1)), "j")
    else:
        assert repr(e) == repr(t)
        for x in (e, t):
            with pytest.raises(RuntimeError, match="irregular"):
                x.size(1)
    assert not ember.tensor([1.0]).is_nested


@pytest.mark.parametrize("layout", [None, "jagged"])
@pytest.mark.parametrize("fn", [
    lambda m, x: x + 1, lambda m, x: x * x, lambda m, x: x.sin(), lambda m, x: m.relu(x),
    lambda m, x: 2 - x, lambda m, x: x / 3, lambda m, x: x + m.ones(3), lambda m, x: x.float(),
    lambda m, x: x.detach(), lambda m, x: x.clone(), lambda m, x: x.softmax(-1),
    lambda m, x: m.nn.functional.linear(x, m.ones(4, 3), m.arange(4.0)),
    lambda m, x: x @ m.ones(3, 2), lambda m, x: m.nn.functional.gelu(x),
    lambda m, x: m.nn.functional.layer_norm(x, (3,)), lambda m, x: x.to(m.float64),
    lambda m, x: m.nested.to_padded_tensor(x, -1.0), lambda m, x: x.to_padded_tensor(0.0),
    lambda m, x: x.unbind()[1], lambda m, x: x[0], lambda m, x: list(x)[1],
])
def test_ops_as_pytorch(layout: Any, fn: Any) -> None:
    try:
        want = fn(torch, _nt(torch, layout))
    except (RuntimeError, NotImplementedError, ValueError):
        assert layout is None  # PyTorch's strided layout lacks a few; ember runs them all
        fn(ember, _nt(ember, layout))
        return
    _same(fn(ember, _nt(ember, layout)), want)


def test_jagged_reductions() -> None:
    for fn in (lambda x: x.sum(), lambda x: x.max(), lambda x: x.sum(dim=-1),
               lambda x: x.mean(-1), lambda x: x.sum(dim=1), lambda x: x.mean(dim=1)):
        _same(fn(_nt(ember, "jagged")), fn(_nt(torch, "jagged")))


def test_from_jagged_narrow_and_padding() -> None:
    def run(m: Any) -> Any:
        v = m.arange(12.0).reshape(6, 2)
        nt = m.nested.nested_tensor_from_jagged(v, m.tensor([0, 2, 6]))
        nt2 = m.nested.nested_tensor_from_jagged(v, lengths=m.tensor([2, 4]))
        x = m.arange(24.0).reshape(3, 4, 2)
        nr = m.nested.narrow(x, 1, m.tensor([0, 1, 2]), m.tensor([2, 3, 1]), layout=m.jagged)
        padded = m.nested.to_padded_tensor(nt * 2, 0.0, output_size=(2, 5, 2))
        return (nt, nt2.offsets(), nr, nr.offsets(), nr.lengths(), padded, nt + 1,
                (nt + nt).values(), m.nested.as_nested_tensor(x, layout=m.jagged))

    for a, b in zip(run(ember), run(torch)):
        _same(a, b)
    for m in (ember, torch):
        nr = m.nested.narrow(m.ones(3, 4, 2), 1, 1, 2, layout=m.jagged)
        assert not nr.is_contiguous()
        with pytest.raises(RuntimeError, match="holes"):
            m.nested.to_padded_tensor(nr, 0.0)


def test_autograd_reaches_the_components() -> None:
    grads = []
    for m in (ember, torch):
        a = m.tensor(A, requires_grad=True)
        b = m.tensor(B, requires_grad=True)
        for layout in (None, m.jagged):
            nt = m.nested.as_nested_tensor([a, b], layout=layout)
            assert nt.requires_grad
            p = m.nested.to_padded_tensor((nt * nt).sin(), 0.0)
            (p * m.arange(float(p.numel())).reshape(p.shape)).sum().backward()
        grads.append((a.grad, b.grad))
    _same(grads[0][0], grads[1][0])
    _same(grads[0][1], grads[1][1])


def test_errors() -> None:
    for m in (ember, torch):
        with pytest.raises(RuntimeError, match="single ragged dimension"):
            m.nested.nested_tensor([m.ones(2, 3), m.ones(3, 4)], layout=m.jagged)
        with pytest.raises(RuntimeError, match="same dimension"):
            m.nested.nested_tensor([m.ones(2, 3), m.ones(3)])
        with pytest.raises(RuntimeError, match="narrow"):
            _nt(m, "jagged").narrow(0, 0, 1)
    nt = _nt(ember, "jagged")
    with pytest.raises(NotImplementedError, match="scaled_dot_product_attention.*to_padded"):
        ember.nn.functional.scaled_dot_product_attention(nt, nt, nt)
    with pytest.raises(RuntimeError, match="different structures"):
        nt + ember.nested.nested_tensor([ember.ones(3, 3), ember.ones(3, 3)], layout=ember.jagged)
    _same(_nt(ember).narrow(0, 1, 1), _nt(torch).narrow(0, 1, 1))
