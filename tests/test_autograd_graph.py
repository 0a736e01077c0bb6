"""``torch.autograd.graph``: saved-tensor hooks, graph types and multi-grad hooks, against PyTorch;
and ember's ``saved_tensors`` report."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import ember

try:
    import torch
except ImportError:  # pragma: no cover - CI installs torch
    torch = None

ENGINES = [ember] + ([torch] if torch is not None else [])
needs_torch = pytest.mark.skipif(torch is None, reason="needs PyTorch")


def _packs(m: Any, program: Any) -> tuple[list, list]:
    """(shapes packed, gradient) for ``program(m, x)`` run under counting hooks."""
    m.manual_seed(0)
    x = m.tensor(np.linspace(-1, 1, 12).reshape(3, 4), dtype=m.float64, requires_grad=True)
    packed: list = []

    def pack(t: Any) -> Any:
        packed.append(tuple(t.shape))
        return t

    with m.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        y = program(m, x)
    y.backward()
    return sorted(packed), x.grad.numpy().round(12).tolist()


PROGRAMS = {
    "mul_sin": lambda m, x: (x * x).sin().sum(),
    "matmul": lambda m, x: (x @ x.t()).sum(),
    "exp": lambda m, x: x.exp().sum(),
    "tanh": lambda m, x: x.tanh().sum(),
    "div": lambda m, x: (x / (x * x + 1)).sum(),
}


@needs_torch
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_pack_hooks_see_what_pytorch_saves(name: str) -> None:
    assert _packs(ember, PROGRAMS[name]) == _packs(torch, PROGRAMS[name])


@pytest.mark.parametrize("m", ENGINES, ids=lambda m: m.__name__)
def test_unpack_result_is_what_backward_uses(m: Any) -> None:
    x = m.tensor([1.0, 2.0, 3.0], requires_grad=True)
    with m.autograd.graph.saved_tensors_hooks(lambda t: t.detach() * 0 + 5, lambda t: t):
        y = (x * 2).exp().sum()  # exp saves its result: backward sees 5s instead
    y.backward()
    assert x.grad.tolist() == [10.0, 10.0, 10.0]


@pytest.mark.parametrize("m", ENGINES, ids=lambda m: m.__name__)
def test_hooks_nest_and_custom_functions_see_unpacked_tensors(m: Any) -> None:
    calls: list[str] = []

    class Sq(m.autograd.Function):
        @staticmethod
        def forward(ctx: Any, a: Any) -> Any:
            ctx.save_for_backward(a)
            return a * a

        @staticmethod
        def backward(ctx: Any, g: Any) -> Any:
            (a,) = ctx.saved_tensors
            return 2 * a * g

    x = m.tensor([3.0], requires_grad=True)
    with m.autograd.graph.saved_tensors_hooks(lambda t: calls.append("outer") or t, lambda t: t):
        with m.autograd.graph.saved_tensors_hooks(lambda t: (calls.append("inner"), t)[1],
                                                  lambda t: calls.append("unpack") or t):
            y = Sq.apply(x)
    y.backward()
    assert x.grad.tolist() == [6.0]
    assert calls == ["inner", "unpack"]


@pytest.mark.parametrize("m", ENGINES, ids=lambda m: m.__name__)
def test_save_on_cpu_and_disable(m: Any) -> None:
    x = m.tensor([1.0, 2.0], requires_grad=True)
    with m.autograd.graph.save_on_cpu():
        y = (x * x).sum()
    y.backward()
    assert x.grad.tolist() == [2.0, 4.0]
    with m.autograd.graph.disable_saved_tensors_hooks("no hooks here"):
        with pytest.raises(RuntimeError, match="no hooks here"):
            with m.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
                pass


@pytest.mark.parametrize("m", ENGINES, ids=lambda m: m.__name__)
def test_node_type_and_gradient_edge(m: Any) -> None:
    x = m.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    assert isinstance(y.grad_fn, m.autograd.graph.Node)
    assert not isinstance(3, m.autograd.graph.Node)
    edge = m.autograd.graph.get_gradient_edge(y)
    assert edge.node is y.grad_fn and edge.output_nr == 0
    leaf = m.autograd.graph.get_gradient_edge(x)
    assert leaf.node.name().endswith("AccumulateGrad")
    with pytest.raises(RuntimeError):
        m.autograd.graph.get_gradient_edge(m.ones(1))
    z = x * x
    with m.no_grad():
        m.autograd.graph.increment_version(x)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.sum().backward()


@pytest.mark.parametrize("m", ENGINES, ids=lambda m: m.__name__)
def test_multi_grad_hook(m: Any) -> None:
    a = m.tensor([1.0], requires_grad=True)
    b = m.tensor([2.0], requires_grad=True)
    c = m.tensor([3.0], requires_grad=True)
    seen: list = []
    h = m.autograd.graph.register_multi_grad_hook(
        (a, b, c), lambda grads: seen.append([None if g is None else g.tolist() for g in grads]))
    (a * b).sum().backward()
    assert seen == [[[2.0], [1.0], None]]
    (a * 3).sum().backward()
    assert seen[-1] == [[3.0], None, None]
    h.remove()
    (a * b).sum().backward()
    assert len(seen) == 2
    first: list = []
    m.autograd.graph.register_multi_grad_hook((a, b), lambda g: first.append(g.tolist()),
                                              mode="any")
    (a * b).sum().backward()
    assert len(first) == 1


def test_saved_tensors_report_counts_and_empties_after_backward() -> None:
    x = ember.randn(64, 32, requires_grad=True)
    w = ember.randn(16, 32, requires_grad=True)
    y = ember.nn.functional.linear(x, w).relu().sum()
    report = ember.autograd.graph.saved_tensors(y)
    names = [n for n, _ in report]
    assert any("Relu" in n or "relu" in n.lower() for n in names)
    total = sum(b for _, arrs in report for *_, b in arrs)
    assert total >= 64 * 32 * 4  # at least the input of linear
    assert all(isinstance(b, int) for _, arrs in report for *_, b in arrs)
    y.backward()
    after = ember.autograd.graph.saved_tensors(y)
    assert sum(b for _, arrs in after for *_, b in arrs) == 0


def test_saved_tensors_report_walks_a_long_chain_without_recursion() -> None:
    x = ember.ones(1, requires_grad=True)
    y = x
    for _ in range(20000):
        y = y * 1.0
    assert len(ember.autograd.graph.saved_tensors(y)) >= 20000


def test_hooks_take_the_python_path_and_pack_the_same_in_both_cores() -> None:
    from ember.autograd import function

    assert function.saved_hooks == []
    with ember.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
        assert len(function.saved_hooks) == 1
        y = ember.ones(2, requires_grad=True) * 2
        assert isinstance(y.grad_fn._saved, function.PackedSaves) or y.grad_fn._saved is None
    assert function.saved_hooks == []
