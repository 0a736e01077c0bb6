"""A compiled call's guards: the parts of its cache key that are read at every call, and the
check a trusted program makes before it replays (``_CompiledFn.__call__`` in ``__init__.py``).

Three functions, each the reference for its C twin in ``_native_guards.c`` (the native core,
``ember._native``; ``EMBER_PURE_PYTHON=1`` runs these). A compiled seed-sized step is a few
microseconds of arithmetic, so the guards' Python loops were a third of its call
(docs/benchmarks.md, "Session 2026-12-06"):

- ``arg_key(args)``: the key of flat positional arguments: per tensor its array's type (the
  device), shape, dtype and ``requires_grad``; per other value its type and itself; None when
  one of them is a tuple, list or dict (the caller flattens those);
- ``module_key(mods, children, extra)``: every module's ``training`` flag and the identity of
  each of its parameters and buffers, then of the ``extra`` tensors; None when a module's
  children are no longer the ``children`` snapshot (the caller walks the modules again);
- ``guards_hold(free)``: whether every outside tensor the program reads still has the array
  type, shape, dtype and ``requires_grad`` it was traced with.
"""

from __future__ import annotations

from .._native_core import native
from .._tensor_base import TensorBase

CONTAINERS = (tuple, list, dict)


def arg_key(args: tuple) -> tuple | None:
    parts = []
    for x in args:
        if isinstance(x, TensorBase):
            d = x._data
            parts.append((type(d), d.shape, d.dtype, x._rg))
        elif type(x) in CONTAINERS:
            return None
        else:
            parts.append((type(x), x))
    return tuple(parts)


def module_key(mods: list, children: list, extra: list) -> tuple | None:
    flags = []
    ids = []
    for m, kids in zip(mods, children):
        if m._modules != kids:
            return None
        flags.append(m.training)
        ids.extend(map(id, m._parameters.values()))
        ids.extend(map(id, m._buffers.values()))
    ids.extend(map(id, extra))  # (an absent bias: id(None))
    return tuple(flags), tuple(ids)


def guards_hold(free: list) -> bool:
    for t, _slot, shape, dtype, ty, rg in free:
        d = t._data
        if type(d) is not ty or d.shape != shape or d.dtype != dtype or t._rg != rg:
            return False
    return True


python_arg_key, python_module_key, python_guards_hold = arg_key, module_key, guards_hold
if native is not None:
    native.guards_init(TensorBase)
    arg_key, module_key, guards_hold = (  # noqa: F811 - the C twins
        native.arg_key, native.module_key, native.guards_hold)
