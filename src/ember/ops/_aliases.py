"""NumPy's argument names on PyTorch's builtins: ``torch.sum(x, axis=1)``, ``t.sum(keepdims=True)``.

PyTorch's C++-bound functions and Tensor methods take ``axis`` for ``dim``, ``keepdims`` for
``keepdim``, ``x``, ``a`` or ``x1`` for ``input`` and ``x2`` for ``other``; its Python-level functions
(``torch.nn.functional.softmax``, ``torch.split``, ``torch.norm``) do not. ember's op functions
are written with PyTorch's names only; ``numpy_names(fn)`` gives the function the namespace and
the Tensor method table bind: ``fn`` itself when it has none of those parameters, else a
generated twin that also takes the aliases.

The twin is one Python frame with every parameter positional-with-default, so that the
interpreter fills them from a tuple (keyword-only defaults cost a dict lookup each):

    def sum(input=_M, dim=None, keepdim=False, _more=_M, x=_M, a=_M, x1=_M, axis=_M,
            keepdims=_M, dtype=None, out=None):
        if _more is _M and x is _M and ... and input is not _M:
            return _fn(input, dim, keepdim, dtype, out)     # the plain call
        return _slow(...)                                   # an alias, or a wrong call

``_more`` catches a positional argument past PyTorch's positional parameters (so ``dtype`` and
``out`` stay keyword-only, and an alias slot is never filled positionally); ``_fn`` is the op
with its keyword-only parameters made positional, so the forwarding call is all positional. The
plain call costs one frame and a few identity tests (docs/signatures.md has the timings);
``inspect.signature`` and ``help`` show the op's own signature.
"""

from __future__ import annotations

import functools
import inspect
import types
from collections.abc import Callable
from typing import Any

# alias -> the parameter it names
ALIASES = {"x": "input", "a": "input", "x1": "input", "x2": "other", "axis": "dim",
           "keepdims": "keepdim"}


_TARGETS = {}


# PyTorch's functions and methods written in Python: they take PyTorch's names only.
PYTHON_LEVEL = frozenset({
    "norm", "split", "unique", "unique_consecutive", "unflatten", "tensordot", "einsum",
    "meshgrid", "cdist", "chain_matmul", "block_diag", "broadcast_tensors", "cartesian_prod",
    "atleast_1d", "atleast_2d", "atleast_3d", "unravel_index", "stft", "istft", "lu",
    "dim_order", "broadcast_shapes", "align_to", "refine_names", "rename",
})


_cache: dict[int, Callable] = {}


def numpy_names(fn: Any, name: str | None = None) -> Any:
    """``fn``, or its twin that also takes NumPy's names for its parameters (see the module
    docstring). ``name``: the public name it is bound under (PyTorch's Python-level functions
    keep ``fn``). The same ``fn`` always gives the same twin."""
    if not isinstance(fn, types.FunctionType) or (name or fn.__name__) in PYTHON_LEVEL:
        return fn
    twin = _cache.get(id(fn))
    if twin is not None and twin.__wrapped__ is fn:  # type: ignore[attr-defined]
        return twin
    twin = _make(fn)
    if twin is not fn:
        _cache[id(fn)] = twin
    return twin


def install(namespace: dict[str, Any]) -> None:
    """Give every op function in ``namespace`` (a module's globals) NumPy's names."""
    for name, obj in list(namespace.items()):
        if (not name.startswith("_") and isinstance(obj, types.FunctionType)
                and obj.__module__.startswith("ember.ops")):
            namespace[name] = numpy_names(obj, name)


# PyTorch's builtins with a number-base overload (``pow.Scalar(Scalar self, Tensor exponent)``):
# its number base is named ``self`` (``torch.pow(self=2, exponent=t)``), a tensor one ``input``.
SCALAR_SELF = frozenset({
    "pow", "float_power", "remainder", "xlogy", "xlog1py", "zeta", "bitwise_and", "bitwise_or",
    "bitwise_xor", "bitwise_left_shift", "bitwise_right_shift", "bucketize",
})


class _Missing:
    __slots__ = ()

    def __repr__(self) -> str:
        return "<required>"


class _Spec:
    __slots__ = ("name", "params", "n_positional", "aliases", "defaults")

    def __init__(self, name: str, params: list[str], n_positional: int, aliases: list[str],
                 defaults: dict[str, Any]) -> None:
        self.name, self.params, self.n_positional = name, params, n_positional
        self.aliases, self.defaults = aliases, defaults


def _make(fn: types.FunctionType) -> Any:
    if fn.__code__.co_flags & (inspect.CO_VARARGS | inspect.CO_VARKEYWORDS):
        return fn  # (*args/**kwargs parsed by the op: a shown __signature__ is not its own)
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):  # pragma: no cover
        return fn
    params = list(sig.parameters.values())
    if any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD, p.POSITIONAL_ONLY) for p in params):
        return fn
    names = [p.name for p in params]
    aliases = [a for t in names for a in _TARGETS.get(t, ())]
    if fn.__name__ in SCALAR_SELF and "input" in names:
        aliases.append("self")
    if not aliases or any(a in names for a in aliases):
        return fn
    positional = [p for p in params if p.kind is p.POSITIONAL_OR_KEYWORD]
    keyword = [p for p in params if p.kind is p.KEYWORD_ONLY]
    # the op with its keyword-only parameters made positional (no local moves: they already
    # follow the positional ones), so the twin forwards every argument positionally
    code = fn.__code__
    inner = types.FunctionType(
        code.replace(co_argcount=code.co_argcount + code.co_kwonlyargcount, co_kwonlyargcount=0),
        fn.__globals__, fn.__name__, None, fn.__closure__)
    # required parameters from the first aliased or defaulted one on become optional (_M) in
    # the twin and are tested in the plain path
    first_opt = next((i for i, p in enumerate(positional)
                      if p.default is not p.empty or p.name in _TARGETS), len(positional))
    required = [p.name for p in positional[first_opt:] if p.default is p.empty]
    head = [p.name for p in positional[:first_opt]]
    tail = [p.name for p in positional[first_opt:]]
    slots = tail + ["_more"] + aliases + [p.name for p in keyword]
    defaults = tuple(_M if p.default is p.empty else p.default for p in positional[first_opt:])
    defaults += (_M,) * (1 + len(aliases))
    defaults += tuple(_M if p.default is p.empty else p.default for p in keyword)
    tests = ["_more is _M"] + [f"{a} is _M" for a in aliases] + \
        [f"{r} is not _M" for r in required] + [f"{p.name} is not _M" for p in keyword
                                               if p.default is p.empty]
    real = [p.name for p in positional] + [p.name for p in keyword]
    src = (f"def _factory(_fn, _slow, _M):\n"
           f"    def {fn.__name__}({', '.join(head + slots)}):\n"
           f"        if {' and '.join(tests)}:\n"
           f"            return _fn({', '.join(real)})\n"
           f"        return _slow(({', '.join(real)},), ({', '.join(aliases)},), _more)\n"
           f"    return {fn.__name__}\n")
    # the op's module name: stack walks (profiler, anomaly mode) skip the twin as ember's own frame
    namespace: dict[str, Any] = {"__name__": fn.__module__}
    exec(compile(src, f"<numpy names of {fn.__module__}.{fn.__qualname__}>", "exec"), namespace)
    spec = _Spec(fn.__name__, real, len(positional), aliases,
                 {p.name: _M if p.default is p.empty else p.default for p in params})
    twin = namespace["_factory"](inner, functools.partial(_slow, spec, inner), _M)
    twin.__defaults__ = defaults
    functools.update_wrapper(twin, fn)
    twin.__signature__ = sig
    return twin


def _slow(spec: _Spec, inner: Callable, values: tuple, alias_values: tuple, more: Any) -> Any:
    """A call that used an alias, missed a required argument, or gave too many positionals."""
    name = spec.name
    if more is not _M:
        raise TypeError(f"{name}() takes at most {spec.n_positional} positional arguments but "
                        f"more were given")
    args = dict(zip(spec.params, values, strict=True))
    taken: dict[str, str] = {}
    for alias, value in zip(spec.aliases, alias_values, strict=True):
        if value is _M:
            continue
        target = ALIASES.get(alias, "input")  # (self: a number base, see SCALAR_SELF)
        if alias == "self" and not isinstance(value, (bool, int, float, complex)):
            raise TypeError(f"{name}(): self= takes a number (PyTorch's number-base overload); "
                            f"pass a tensor as input=, not {type(value).__name__}")
        if target in taken:
            raise TypeError(f"{name}() got values for argument '{target}' from both "
                            f"'{taken[target]}' and '{alias}'")
        current = args[target]
        if current is not _M and current is not spec.defaults[target]:
            why = "a number base" if alias == "self" else f"NumPy's name for '{target}'"
            raise TypeError(f"{name}() got multiple values for argument '{target}' "
                            f"('{alias}' is {why})")
        taken[target] = alias
        args[target] = value
    missing = [p for p, v in args.items() if v is _M]
    if missing:
        raise TypeError(f"{name}() missing {len(missing)} required positional arguments: "
                        + ", ".join(f'"{p}"' for p in missing))  # PyTorch's wording
    return inner(*args.values())


for _alias, _target in ALIASES.items():
    _TARGETS.setdefault(_target, []).append(_alias)


del _alias, _target


_M = _Missing()
