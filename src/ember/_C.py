"""``torch._C`` at PyTorch's path: the few entries of PyTorch's C extension that Python libraries
reach for while they import, each doing what PyTorch's does for a user's program.

This module is plain Python (ember's own C code is ``ember._native``). Every other name is absent, so a probe
such as ``getattr(torch._C, "_CudaDeviceProperties", None)`` answers None, as it does on a
PyTorch build without that feature.
"""

from __future__ import annotations

import sys
from typing import Any

from . import _overrides, _tensor_wrapper

__all__: list[str] = []


# __torch_function__'s switches (ember/_overrides.py): the same objects the dispatchers read
_disabled_torch_function_impl = _overrides.disabled_torch_function_impl
_disabled_torch_dispatch_impl = _tensor_wrapper.disabled_torch_dispatch_impl
DisableTorchFunctionSubclass = _overrides.DisableTorchFunctionSubclass
DisableTorchFunction = _overrides.DisableTorchFunction


def _is_torch_function_enabled() -> bool:
    return _overrides.is_subclass_dispatch_enabled()


def _is_torch_function_mode_enabled() -> bool:
    return _overrides.is_mode_enabled()


def _is_torch_function_all_disabled() -> bool:
    return bool(_overrides.flags & _overrides.ALL_DISABLED)


def _len_torch_function_stack() -> int:
    return len(_overrides.mode_stack())


def _get_function_stack_at(i: int) -> Any:
    return _overrides.mode_stack()[i]


def _push_on_torch_function_stack(mode: Any) -> None:
    _overrides.push_mode(mode)


def _pop_torch_function_stack() -> Any:
    return _overrides.pop_mode()


def _get_default_device() -> str:
    """``"cpu"``: the device of PyTorch's default tensor type (``torch.set_default_device`` does
    not change this answer in PyTorch either; ``torch.get_default_device()`` reports that)."""
    return "cpu"


def _get_tracing_state() -> None:
    """None: no ``torch.jit.trace`` graph is being recorded (ember's trace records none)."""
    return None


def _are_functorch_transforms_active() -> bool:
    """Whether a ``torch.func`` transform is running: True inside ember's differentiating
    transforms (``grad``, ``vjp``, ``jacrev``, ``hessian``...). ``vmap`` does not count: ember runs
    it as a loop of ordinary calls on real tensors, where code may read values (``.item()``)."""
    func = sys.modules.get("ember.func")  # not imported: no transform can be running
    return func is not None and func._depth[0] > 0


def _log_api_usage_once(event: str) -> None:
    """Nothing: PyTorch logs this only to an embedding application's handler, never to users."""


class _TensorMetaCheck(type):
    """The class of ``_TensorMeta``: makes ``isinstance(cls, torch._C._TensorMeta)`` answer as
    PyTorch's does, True exactly for ``torch.Tensor`` and its subclasses (nn.Parameter too)."""

    def __instancecheck__(cls, obj: Any) -> bool:
        from ._tensor_base import TensorBase

        return isinstance(obj, type) and issubclass(obj, TensorBase)


class _TensorMeta(type, metaclass=_TensorMetaCheck):
    """``torch._C._TensorMeta``: PyTorch's metaclass of ``torch.Tensor``. ember's Tensor is an
    ordinary class, so this names the type for annotations and ``isinstance`` checks (libraries
    annotate a tensor class's type with it: Lightning's lazy checkpoint loader)."""


def _parse_to(*args: Any, **kwargs: Any) -> tuple[Any, Any, bool, Any]:
    """``torch._C._nn._parse_to``: the (device, dtype, non_blocking, memory_format) that
    ``Tensor.to``/``Module.to`` would take from these arguments (None where not given)."""
    from .nn.modules.module import _parse_to as parse

    device, dtype = parse(args, kwargs)
    bools = [a for a in args if isinstance(a, bool)]
    non_blocking = bool(kwargs.get("non_blocking", bools[0] if bools else False))
    return device, dtype, non_blocking, kwargs.get("memory_format")


class _NnNamespace:
    """``torch._C._nn``: of PyTorch's C functions for ``torch.nn``, the argument parser that
    libraries call (Lightning's ``DeviceDtypeModuleMixin.to``)."""

    _parse_to = staticmethod(_parse_to)

    def __getattr__(self, name: str) -> Any:
        raise AttributeError(f"module 'torch._C._nn' has no attribute '{name}'")


_nn = _NnNamespace()


def __getattr__(name: str) -> Any:
    if name == "_LinAlgError":  # torch.linalg.LinAlgError's own name (the same class)
        from .ops.linalg import LinAlgError

        return LinAlgError
    if name == "PyTorchFileReader":  # torch.PyTorchFileReader's own name (the same class)
        from ._archive import PyTorchFileReader

        return PyTorchFileReader
    raise AttributeError(f"module 'torch._C' has no attribute '{name}'")
