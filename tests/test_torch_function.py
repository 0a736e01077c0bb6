"""``__torch_function__``: Tensor subclasses, plain classes and modes, as PyTorch dispatches them.

Each scenario runs the same code on ember and on PyTorch (when installed) and compares what the
classes saw (function names and types) and what came back (types and values). The dispatchers
are C with the native core and Python without (CI runs this file in both modes).
"""

from __future__ import annotations

import inspect
import pickle
from typing import Any

import numpy as np
import pytest

import ember
from ember import _overrides

try:
    import torch
except ImportError:  # pragma: no cover - CI installs torch
    torch = None

ENGINES = [ember] + ([torch] if torch is not None else [])
needs_torch = pytest.mark.skipif(torch is None, reason="needs PyTorch")


def _fname(func: Any) -> str:
    name = getattr(func, "__name__", repr(func))
    return {"__add__": "add", "__mul__": "mul", "__radd__": "add"}.get(name, name)


def _subclass_program(m: Any) -> list[Any]:
    class S(m.Tensor):
        pass

    a = m.ones(2, 3).as_subclass(S)
    p = m.nn.Parameter(m.ones(2, 3))
    out = [a + 1, m.add(a, 1), a.sum(), m.nn.functional.relu(a), a[0], m.cat([m.ones(1, 3), a]),
           a.max(dim=1), m.split(a, 1)[0], p * 2, p * a, a.t(), m.matmul(a, m.ones(3, 2))]
    return [(type(o).__name__ if not isinstance(o, tuple) else
             (type(o).__name__, [type(x).__name__ for x in o])) for o in out]


@pytest.mark.parametrize("m", ENGINES, ids=lambda m: m.__name__)
def test_subclass_results_keep_the_subclass(m: Any) -> None:
    got = _subclass_program(m)
    assert got[0] == "S" and got[8] == "Tensor" and got[9] == "S"
    if torch is not None and m is ember:
        want = _subclass_program(torch)
        # return_types named tuples print under their own names on both engines
        assert [g if not isinstance(g, tuple) else g[1] for g in got] == \
               [w if not isinstance(w, tuple) else w[1] for w in want]


def test_subclass_stays_on_the_graph() -> None:
    class S(ember.Tensor):
        pass

    x = ember.tensor([1.0, 2.0], requires_grad=True)
    s = x.as_subclass(S)
    y = (s * s).sum()
    assert type(y) is S
    y.backward()
    np.testing.assert_allclose(x.grad.numpy(), [2.0, 4.0])


def _plain_class_program(m: Any) -> list[Any]:
    seen: list[Any] = []

    class L:
        def __init__(self, v: float) -> None:
            self.v = v

        @classmethod
        def __torch_function__(cls, func: Any, types: Any, args: Any = (),
                               kwargs: Any = None) -> Any:
            seen.append((_fname(func), [t.__name__ for t in types], len(args),
                         sorted(k for k in (kwargs or {}) if k != "inplace")))
            return "handled"

    t = m.ones(2)
    results = [m.add(L(1), t), m.nn.functional.relu(L(1)), m.cat([t, L(2)]), t + L(1),
               m.Tensor.add(t, L(1)), m.add(t, other=L(1)), m.matmul(t, L(1)),
               m.mean(L(1)), m.stack([L(1), t])]
    # (F.relu on PyTorch passes inplace= as a keyword, ember passes what the caller passed)
    return [seen, results]


@needs_torch
def test_a_plain_class_receives_the_calls_as_on_torch() -> None:
    assert _plain_class_program(ember) == _plain_class_program(torch)


@pytest.mark.parametrize("m", ENGINES, ids=lambda m: m.__name__)
def test_the_func_handed_over_is_the_public_function(m: Any) -> None:
    funcs: list[Any] = []

    class L:
        @classmethod
        def __torch_function__(cls, func: Any, types: Any, args: Any = (),
                               kwargs: Any = None) -> Any:
            funcs.append(func)
            return 0

    m.add(L(), 1)
    m.Tensor.add(m.ones(1), L())
    m.nn.functional.relu(L())
    assert funcs[0] is m.add and funcs[1] is m.Tensor.add
    assert funcs[2] is m.nn.functional.relu


@pytest.mark.parametrize("m", ENGINES, ids=lambda m: m.__name__)
def test_all_declining_is_a_type_error(m: Any) -> None:
    class N:
        @classmethod
        def __torch_function__(cls, func: Any, types: Any, args: Any = (),
                               kwargs: Any = None) -> Any:
            return NotImplemented

    with pytest.raises(TypeError, match="torch.add"):
        m.add(N(), m.ones(1))


def _unwrapping_subclass_program(m: Any) -> list[Any]:
    """A wrapper subclass in the style libraries write: unwrap, call, rewrap, log."""
    log: list[str] = []

    class Logged(m.Tensor):
        @classmethod
        def __torch_function__(cls, func: Any, types: Any, args: Any = (),
                               kwargs: Any = None) -> Any:
            log.append(_fname(func))
            return super().__torch_function__(func, types, args, kwargs)

    a = m.ones(2, 2).as_subclass(Logged)
    b = m.nn.functional.linear(a, m.ones(2, 2))
    c = (b * 2).sum(dim=0)
    d = m.stack([c, c])
    return [log, type(b).__name__, type(d).__name__, d.as_subclass(m.Tensor).tolist()]


@needs_torch
def test_a_logging_subclass_sees_what_it_sees_on_torch() -> None:
    assert _unwrapping_subclass_program(ember) == _unwrapping_subclass_program(torch)


def _mode_program(m: Any) -> list[str]:
    log: list[str] = []

    class Mode(m.overrides.TorchFunctionMode):
        def __torch_function__(self, func: Any, types: Any, args: Any = (),
                               kwargs: Any = None) -> Any:
            log.append(_fname(func))
            return func(*args, **(kwargs or {}))

    with Mode():
        x = m.ones(2, 3)
        y = m.relu(x @ m.ones(3, 2))
        z = m.nn.functional.softmax(y, dim=-1).sum()
    z = z + 1  # outside: not seen
    return log


@needs_torch
def test_a_mode_sees_every_call_as_on_torch() -> None:
    assert _mode_program(ember) == _mode_program(torch)


@pytest.mark.parametrize("m", ENGINES, ids=lambda m: m.__name__)
def test_a_mode_can_replace_results_and_nests(m: Any) -> None:
    class Zero(m.overrides.TorchFunctionMode):
        def __torch_function__(self, func: Any, types: Any, args: Any = (),
                               kwargs: Any = None) -> Any:
            out = func(*args, **(kwargs or {}))
            return out * 0 if isinstance(out, m.Tensor) else out

    class Count(m.overrides.TorchFunctionMode):
        n = 0

        def __torch_function__(self, func: Any, types: Any, args: Any = (),
                               kwargs: Any = None) -> Any:
            Count.n += 1
            return func(*args, **(kwargs or {}))

    with Zero(), Count():
        v = m.ones(3).add(1)
    assert v.tolist() == [0.0, 0.0, 0.0]
    assert Count.n == 2  # ones, add: the inner mode first, then the outer one
    assert not m._C._is_torch_function_mode_enabled()


@pytest.mark.parametrize("m", ENGINES, ids=lambda m: m.__name__)
def test_disable_subclass_and_parameter(m: Any) -> None:
    class S(m.Tensor):
        pass

    a = m.ones(2).as_subclass(S)
    with m._C.DisableTorchFunctionSubclass():
        assert type(a + 1) is m.Tensor
        assert not m._C._is_torch_function_enabled()
    assert type(a + 1) is S
    p = m.nn.Parameter(m.ones(2))
    assert type(p + 1) is m.Tensor and type(m.relu(p)) is m.Tensor
    assert not m.overrides.has_torch_function((p, m.ones(1)))
    assert m.overrides.has_torch_function((m.ones(1), a))
    assert m.overrides.has_torch_function_unary(a)
    assert m.overrides.is_tensor_like(a) and not m.overrides.is_tensor_like([1])


@pytest.mark.parametrize("m", ENGINES, ids=lambda m: m.__name__)
def test_handle_torch_function_for_python_level_functions(m: Any) -> None:
    class L:
        @classmethod
        def __torch_function__(cls, func: Any, types: Any, args: Any = (),
                               kwargs: Any = None) -> Any:
            return ("L", func.__name__, args[1])

    def scale(x: Any, k: float) -> Any:
        if m.overrides.has_torch_function_unary(x):
            return m.overrides.handle_torch_function(scale, (x,), x, k)
        return x * k

    assert scale(L(), 3) == ("L", "scale", 3)
    assert scale(m.ones(1), 3).tolist() == [3.0]


def test_dispatchers_keep_names_signatures_and_pickle() -> None:
    assert inspect.signature(ember.Tensor.add) == inspect.signature(ember.Tensor.add.__wrapped__)
    assert "other" in inspect.signature(ember.add).parameters
    assert ember.nn.functional.relu.__name__ == "relu"
    assert pickle.loads(pickle.dumps(ember.add)) is ember.add
    assert pickle.loads(pickle.dumps(ember.Tensor.add)) is ember.Tensor.add
    t = ember.ones(2)
    assert t.add.__self__ is t  # binds as a method

    class M(ember.nn.Module):
        act = ember.relu  # a namespace builtin does not bind

        def forward(self, x: Any) -> Any:
            return self.act(x)

    assert M()(ember.tensor([-1.0, 1.0])).tolist() == [0.0, 1.0]


def test_the_dispatcher_is_the_native_one_when_the_core_is_native() -> None:
    from ember._native_core import native

    d = _overrides.dispatcher(lambda x: x)
    if native is not None:
        assert type(d) is native.dispatcher
    else:
        assert inspect.isfunction(d)
    assert d(3) == 3


def test_a_list_argument_is_looked_into() -> None:
    class L:
        @classmethod
        def __torch_function__(cls, func: Any, types: Any, args: Any = (),
                               kwargs: Any = None) -> Any:
            return "seen"

    assert ember.stack((ember.ones(1), L())) == "seen"
    assert ember.cat([ember.ones(1)], dim=0).tolist() == [1.0]
