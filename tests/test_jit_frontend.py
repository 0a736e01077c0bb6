"""``torch.jit.script`` refuses what PyTorch's TorchScript front end refuses, with its exception
classes, and keeps accepting what it accepts (libraries probe scripting this way)."""

from __future__ import annotations

import warnings
from typing import Optional

import pytest

import ember
from ember import jit, nn


# -- functions to script (module level: scripting reads their source) ------------------------
def kwargs_fn(x, **kwargs):
    return x


def varargs_fn(x, *args):
    return x


def kwonly_default(x, *, y: int = 1):
    return x


def kwonly_required(x, *, y: int):
    return x


def try_fn(x):
    try:
        return x
    except Exception:
        return x


def lambda_inside(x):
    f = lambda y: y  # noqa: E731
    return f(x)


def import_inside(x):
    import math  # noqa: F401

    return x


def nested_def(x):
    def g(y):
        return y + 1

    return g(x)


def set_literal(x):
    s = {1, 2}  # noqa: F841
    return x


def walrus(x):
    if (y := x + 1) is not None:
        return y
    return x


def generator(x):
    yield x


def for_else(x):
    for _ in range(3):
        pass
    else:
        return x


def kwargs_expansion(x):
    d = {"dim": 0}
    return x.sum(**d)


def calls_kwargs_fn(x):
    return kwargs_fn(x) + 1


def untyped_int_default(x, dim=1):
    return x


def mutable_default(x, sizes: list[int] = [1]):  # noqa: B006
    return x


def set_in_a_branch_never_taken(x):
    if not jit.is_scripting():  # the front end reads both branches
        s = {1}  # noqa: F841
    return x


class _Indexed(ember.Tensor):
    """A tensor subclass with an attribute of its own (as graph libraries' index tensors)."""


def subclass_attribute(x: _Indexed):
    return x.num_cols


def untyped_attribute(x):
    return x.num_cols


def subclass_attribute_outside_scripting(x: _Indexed):
    if not jit.is_scripting() and isinstance(x, _Indexed):
        return x.num_cols
    return x


def subclass_attribute_in_else(x: _Indexed):
    if jit.is_scripting():
        return x
    else:
        return x.num_cols


def helper_with_try(x):
    try:
        return x
    except Exception:
        return x


def calls_helper_outside_scripting(x):
    if jit.is_scripting():
        return x
    return helper_with_try(x)


REFUSED = [(subclass_attribute, "RuntimeError"), (untyped_attribute, "RuntimeError"),
           (kwargs_fn, "NotSupportedError"), (varargs_fn, "NotSupportedError"),
           (kwonly_default, "NotSupportedError"), (try_fn, "UnsupportedNodeError"),
           (lambda_inside, "UnsupportedNodeError"), (import_inside, "UnsupportedNodeError"),
           (nested_def, "UnsupportedNodeError"), (set_literal, "UnsupportedNodeError"),
           (walrus, "UnsupportedNodeError"), (generator, "UnsupportedNodeError"),
           (for_else, "NotSupportedError"), (kwargs_expansion, "NotSupportedError"),
           (calls_kwargs_fn, "NotSupportedError"), (untyped_int_default, "RuntimeError"),
           (mutable_default, "RuntimeError"),
           (set_in_a_branch_never_taken, "UnsupportedNodeError")]


# -- accepted, as PyTorch accepts them ------------------------------------------------------
def plain(x, y):
    return x * y + 1


def typed(x, n: int = 2, scale: float = 1.0, flag: bool = True):
    return x * n * scale if flag else x


def optional_arg(x, y: Optional[ember.Tensor] = None):  # noqa: UP045 - TorchScript spelling
    if y is None:
        return x
    return x + y


def comprehension(xs: list[int]):
    return [i * 2 for i in xs] + [sum(i for i in xs)]


def with_no_grad(x):
    with ember.no_grad():
        return x + 1


def type_comment(x, n=2):
    # type: (Tensor, int) -> Tensor
    return x * n


def calls_ignored(x):
    return ignored_helper(x)


@jit.ignore
def ignored_helper(x, **kwargs):
    try:
        return x
    except Exception:
        return x


ACCEPTED = [plain, typed, optional_arg, comprehension, with_no_grad, type_comment, kwonly_required,
            calls_ignored, subclass_attribute_outside_scripting, subclass_attribute_in_else,
            calls_helper_outside_scripting]


# -- modules ------------------------------------------------------------------------------
class KwargsForward(nn.Module):
    def forward(self, x, **kwargs):
        return x


class UnusedBadChild(nn.Module):
    """PyTorch compiles every submodule's forward, called or not."""

    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([KwargsForward()])

    def forward(self, x):
        return x


class BadHelperMethod(nn.Module):
    def forward(self, x):
        return self.helper(x)

    def helper(self, x, *args):
        return x


class UnusedHelperMethod(nn.Module):
    def forward(self, x):
        return self.helper(x)

    @jit.unused
    def helper(self, x, *args):
        return x


class BadExport(nn.Module):
    def forward(self, x):
        return x

    @jit.export
    def other(self, x):
        try:
            return x
        except Exception:
            return x


class Fine(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1))

    def forward(self, x):
        return self.helper(self.net(x))

    def helper(self, x, scale: float = 2.0):
        return x * scale


MODULES = [(KwargsForward, "NotSupportedError"), (UnusedBadChild, "NotSupportedError"),
           (BadHelperMethod, "NotSupportedError"), (UnusedHelperMethod, None),
           (BadExport, "UnsupportedNodeError"), (Fine, None)]


def _outcome(script, obj):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            script(obj)
        except Exception as e:  # noqa: BLE001 - the class is the result
            return type(e).__name__
    return None


@pytest.mark.parametrize(("fn", "expected"), REFUSED, ids=[f.__name__ for f, _ in REFUSED])
def test_script_refuses_as_pytorchs_front_end(fn, expected):
    assert _outcome(jit.script, fn) == expected


@pytest.mark.parametrize("fn", ACCEPTED, ids=[f.__name__ for f in ACCEPTED])
def test_script_accepts_what_pytorch_accepts(fn):
    assert _outcome(jit.script, fn) is None


@pytest.mark.parametrize(("cls", "expected"), MODULES, ids=[c.__name__ for c, _ in MODULES])
def test_script_of_a_module_reads_its_compiled_methods(cls, expected):
    assert _outcome(jit.script, cls()) == expected


def test_frontend_classes_and_message():
    from ember.jit import frontend

    assert issubclass(frontend.UnsupportedNodeError, frontend.NotSupportedError)
    assert issubclass(frontend.NotSupportedError, frontend.FrontendError)
    assert issubclass(frontend.FrontendError, Exception)
    assert not issubclass(frontend.FrontendError, RuntimeError)
    with pytest.raises(frontend.NotSupportedError) as info:
        _quiet_script(kwargs_fn)
    msg = str(info.value)
    assert msg.startswith("Compiled functions can't take variable number of arguments")
    assert "test_jit_frontend.py" in msg and "def kwargs_fn(x, **kwargs):" in msg
    assert "~~~~~~ <--- HERE" in msg
    with pytest.raises(RuntimeError, match="Expected a single top-level function"):
        _quiet_script(lambda x: x)
    with pytest.raises(TypeError):
        _quiet_script(len)
    ns: dict = {"__name__": "made_by_exec"}
    exec("def no_source(x):\n    return x\n", ns)
    with pytest.raises(OSError, match="Can't get source"):
        _quiet_script(ns["no_source"])


def _quiet_script(obj):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return jit.script(obj)


def test_scripted_function_still_runs():
    f = _quiet_script(typed)
    assert f(ember.ones(2), 3).tolist() == [3.0, 3.0]
    m = _quiet_script(Fine())
    assert m(ember.ones(4, 2)).shape == (4, 1)


def test_markers_record_pytorchs_modifiers():
    torch = pytest.importorskip("torch")

    def make(mod):
        def f(x):
            return x

        def g(x):
            return x

        def h(x):
            return x

        return (mod.jit.ignore(f)._torchscript_modifier, mod.jit.unused(g)._torchscript_modifier,
                mod.jit.export(h)._torchscript_modifier)

    assert make(ember) == make(torch)


_REFERS_TO_EMBER = (optional_arg, with_no_grad, set_in_a_branch_never_taken, calls_ignored,
                    subclass_attribute, subclass_attribute_outside_scripting,
                    subclass_attribute_in_else, calls_helper_outside_scripting)


@pytest.mark.parametrize("fn", [f for f, _ in REFUSED] + ACCEPTED, ids=lambda f: f.__name__)
def test_same_outcome_as_pytorch(fn):
    """The same functions given to PyTorch's torch.jit.script: the same exception class, or
    none. (The module cases' expected outcomes above are PyTorch 2.13's for the same classes.)"""
    torch = pytest.importorskip("torch")
    if fn in _REFERS_TO_EMBER:
        pytest.skip("it names ember (or its jit.ignore), which TorchScript cannot compile")
    assert _outcome(jit.script, fn) == _outcome(torch.jit.script, fn)
