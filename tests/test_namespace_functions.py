"""Namespace functions bind as methods exactly when PyTorch 2.13's do.

PyTorch's ``torch.add``, ``torch.conv2d``, ``torch.special.erf``, ``torch.linalg.inv`` and
``torch.nn.functional.conv2d`` are builtins: stored on a class they stay plain functions, so
``class M(nn.Module): conv = torch.conv2d`` then ``self.conv(x, weight=w)`` works. Its
Python-level functions (``torch.nn.functional.relu``, ``torch.split``) bind like any function.
ember's namespace functions are ``staticmethod`` objects where PyTorch's are builtins; they still
pickle by name, show their signature and docstring, and Tensor methods stay plain functions.
"""

from __future__ import annotations

import copy
import importlib
import inspect
import io
import pickle
import pydoc
import types

import pytest

import ember

torch = pytest.importorskip("torch")

NAMESPACES = ["", ".special", ".linalg", ".nn.functional"]


def _binds(obj: object) -> bool:
    class Holder:
        f = obj

    return isinstance(Holder().f, types.MethodType)


def _pairs(ns: str, want_builtin: bool) -> list[str]:
    tmod = importlib.import_module("torch" + ns)
    emod = importlib.import_module("ember" + ns)
    names = []
    for name in sorted(dir(tmod)):
        if name.startswith("_"):
            continue
        tv = getattr(tmod, name)
        is_builtin = type(tv) is types.BuiltinFunctionType
        if is_builtin != want_builtin or (not is_builtin and type(tv) is not types.FunctionType):
            continue
        try:
            ev = getattr(emod, name)
        except Exception:  # not in ember (or a stub that raises): nothing to compare
            continue
        if callable(ev) and not isinstance(ev, type):
            names.append(name)
    return names


@pytest.mark.parametrize("ns", NAMESPACES)
def test_pytorch_builtins_do_not_bind(ns):
    emod = importlib.import_module("ember" + ns)
    names = _pairs(ns, want_builtin=True)
    assert len(names) > (300 if ns == "" else 15)
    binding = [n for n in names if _binds(getattr(emod, n))]
    assert binding == [], f"torch{ns}: these bind as methods on ember, not on PyTorch"


@pytest.mark.parametrize("ns", NAMESPACES)
def test_pytorch_python_functions_still_bind(ns):
    emod = importlib.import_module("ember" + ns)
    names = [n for n in _pairs(ns, want_builtin=False)
             if type(getattr(emod, n)) is types.FunctionType or _binds(getattr(emod, n))]
    unbound = [n for n in names if not _binds(getattr(emod, n))]
    assert unbound == []
    if ns == ".nn.functional":
        assert {"relu", "softmax", "dropout"} <= set(names)


@pytest.mark.parametrize("m", [torch, ember], ids=["torch", "ember"])
def test_the_issue_class_attribute_conv2d(m):
    class Net(m.nn.Module):
        conv = m.conv2d
        norm = m.special.erf
        inv = m.linalg.inv
        fconv = m.nn.functional.conv2d

        def forward(self, x):
            w = m.ones(2, 1, 1, 1)
            return self.conv(x, weight=w) + self.fconv(x, w) + self.norm(x) + \
                self.inv(m.eye(2))[0, 0]

    out = Net()(m.ones(1, 1, 2, 2))
    assert tuple(out.shape) == (1, 2, 2, 2)


@pytest.mark.parametrize("fn", [
    ember.add, ember.absolute, ember.abs, ember.sum, ember.range, ember.conv2d, ember.dropout,
    ember.special.erf, ember.special.expit, ember.linalg.inv, ember.nn.functional.linear,
    ember.nn.functional.relu, ember.split,
], ids=lambda f: f.__qualname__)
def test_namespace_functions_pickle_to_themselves(fn):
    assert pickle.loads(pickle.dumps(fn)) is fn
    assert copy.deepcopy(fn) is fn and copy.copy(fn) is fn


def test_namespace_function_introspection():
    add = ember.add
    assert not _binds(add)
    assert inspect.signature(add) == inspect.signature(inspect.unwrap(add))
    assert "input" in inspect.signature(add).parameters
    assert add.__doc__ and add.__doc__ in pydoc.render_doc(add)
    assert add.__name__ == "add" and add.__module__ == "ember"
    assert repr(add) == "<function ember.add>"
    assert ember.range.__name__ == "range"
    assert callable(add) and inspect.isroutine(add)


def test_tensor_methods_bind_as_functions_do():
    """Tensor.add is a __torch_function__ dispatcher over the op function; it binds as a
    method, keeps the function's signature and pickles by name."""
    from ember import _overrides
    from ember._tensor_methods import OP_METHODS

    x = ember.ones(2)
    assert _overrides.implementation(ember.Tensor.add) is OP_METHODS["add"]
    assert isinstance(x.add, types.MethodType)
    assert inspect.signature(ember.Tensor.add) == inspect.signature(OP_METHODS["add"])
    assert x.add(1).tolist() == [2.0, 2.0]


def test_a_saved_namespace_function_loads_in_pytorch():
    buf = io.BytesIO()
    ember.save({"f": ember.add, "g": ember.nn.functional.conv2d}, buf)
    buf.seek(0)
    got = torch.load(buf, weights_only=False)
    assert got["f"] is torch.add and got["g"] is torch.nn.functional.conv2d
