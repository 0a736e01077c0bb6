"""The compiled call's guards (ember/_compile/guards.py) and their C twins (_native_guards.c):
the same answers on every kind of argument, module tree and traced outside tensor, and a
compiled call that still re-traces when any guarded value changes."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember import _native_core, nn
from ember._compile import guards

CORES = ["python"] + (["native"] if _native_core.native is not None else [])


def _impl(core: str):
    if core == "python":
        return guards.python_arg_key, guards.python_module_key, guards.python_guards_hold
    n = _native_core.native
    return n.arg_key, n.module_key, n.guards_hold


def _args():
    t = ember.ones(2, 3)
    return [
        (),
        (t,),
        (t, ember.zeros(4, dtype=ember.float64, requires_grad=True), 3, 2.5, "s", None, True),
        (t, [t]),  # a container: the caller flattens
        ((1, 2),),
        ({"a": t},),
        (np.float32(1.0), ember.tensor(3)),
    ]


@pytest.mark.parametrize("core", CORES)
def test_arg_key_matches_the_python_reference(core):
    arg_key = _impl(core)[0]
    for args in _args():
        assert arg_key(args) == guards.python_arg_key(args)
    t = ember.ones(2, 3)
    assert arg_key((t,)) == ((np.ndarray, (2, 3), np.dtype(np.float32), False),)
    assert arg_key((t, [1])) is None
    assert arg_key((t.requires_grad_(),)) != arg_key((ember.ones(2, 3),))


def _tree():
    model = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.Linear(4, 2, bias=False))
    mods = list(model.modules())
    return model, mods, [dict(m._modules) for m in mods]


@pytest.mark.parametrize("core", CORES)
def test_module_key_matches_the_python_reference(core):
    module_key = _impl(core)[1]
    model, mods, kids = _tree()
    extra = [ember.ones(2), None]
    want = guards.python_module_key(mods, kids, extra)
    assert module_key(mods, kids, extra) == want
    assert want[0] == (True,) * len(mods) and len(want[1]) == sum(
        len(m._parameters) + len(m._buffers) for m in mods) + 2
    model.eval()
    assert module_key(mods, kids, extra)[0] == (False,) * len(mods)
    model[0].weight = nn.Parameter(ember.ones(4, 3))  # a new parameter: a new identity
    assert module_key(mods, kids, extra) == guards.python_module_key(mods, kids, extra) != want
    model[2] = nn.Linear(4, 2)  # a replaced child: the caller walks the modules again
    assert module_key(mods, kids, extra) is None
    assert guards.python_module_key(mods, kids, extra) is None


@pytest.mark.parametrize("core", CORES)
def test_guards_hold_matches_the_python_reference(core):
    guards_hold = _impl(core)[2]
    w = ember.ones(3, 2, requires_grad=True)
    free = [(w, 0, (3, 2), np.dtype(np.float32), np.ndarray, True)]
    assert guards_hold(free) is True
    assert guards_hold([]) is True
    for changed in [(w, 0, (2, 3), np.dtype(np.float32), np.ndarray, True),
                    (w, 0, (3, 2), np.dtype(np.float64), np.ndarray, True),
                    (w, 0, (3, 2), np.dtype(np.float32), list, True),
                    (w, 0, (3, 2), np.dtype(np.float32), np.ndarray, False)]:
        assert guards_hold(free + [changed]) is False
        assert guards.python_guards_hold(free + [changed]) is False
    with pytest.raises((TypeError, ValueError)):  # (an entry of another form)
        guards_hold([(w, 0)])


def test_a_compiled_call_retraces_when_a_guarded_value_changes():
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 1))
    f = ember.compile(lambda x: model(x).sum())
    x = ember.randn(5, 3)
    ember._compile.reset()
    for _ in range(4):
        want = model(x).sum().item()
        assert f(x).item() == pytest.approx(want, rel=1e-6)
    s = dict(ember._compile.stats)
    assert s["replays"] == 2 and s["traces"] == 2
    model.eval()  # a training flag
    f(x)
    model[0].weight = nn.Parameter(ember.randn(4, 3))  # a parameter's identity
    assert f(x).item() == pytest.approx(model(x).sum().item(), rel=1e-6)
    f(ember.randn(6, 3))  # a shape
    assert ember._compile.stats["traces"] == s["traces"] + 3
