"""``torch._C`` at PyTorch's path: the few entries of PyTorch's C extension that Python libraries
reach for while they import, each doing what PyTorch's does for a user's program.

ember has no C extension (this module is plain Python). Every other name is absent, so a probe
such as ``getattr(torch._C, "_CudaDeviceProperties", None)`` answers None, as it does on a
PyTorch build without that feature.
"""

from __future__ import annotations

import sys
from typing import Any

__all__: list[str] = []


class _DisabledTorchFunctionImpl:
    """``torch._C._disabled_torch_function_impl(func, types, args=(), kwargs=None)``: call
    ``func(*args, **kwargs)`` without ``__torch_function__`` dispatch.

    Tensor subclasses assign it as ``__torch_function__ = torch._C._disabled_torch_function_impl``
    (``nn.Parameter`` does). Like PyTorch's built-in function it does not bind as a method, so the
    protocol's call ``cls.__torch_function__(func, types, args, kwargs)`` reaches it unchanged.
    ember never dispatches ``__torch_function__``, so calling ``func`` is the whole job.
    """

    __slots__ = ()
    __name__ = __qualname__ = "_disabled_torch_function_impl"

    def __call__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        return func(*args, **(kwargs or {}))

    def __repr__(self) -> str:
        return "<function torch._C._disabled_torch_function_impl>"


_disabled_torch_function_impl = _DisabledTorchFunctionImpl()


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


def __getattr__(name: str) -> Any:
    if name == "_LinAlgError":  # torch.linalg.LinAlgError's own name (the same class)
        from .ops.linalg import LinAlgError

        return LinAlgError
    raise AttributeError(f"module 'torch._C' has no attribute '{name}'")
