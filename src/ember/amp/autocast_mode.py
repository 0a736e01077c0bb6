"""``autocast``: run matrix products in a lower precision inside a region (mixed precision).

Inside ``with ember.autocast(device_type, dtype):`` the ops on autocast's *lower-precision list*
(``linear``, ``matmul``/``mm``/``bmm``/``addmm``/``baddbmm``, convolutions,
``scaled_dot_product_attention``) cast their floating inputs of that device (float32, float16,
bfloat16; never float64) to ``dtype`` and compute there; the ops on the *float32 list*
(``cross_entropy``, ``nll_loss``, ``mse_loss``, ...) cast lower-precision inputs up to float32.
Other ops run in their inputs' dtype. The casts are ordinary differentiable ``.to`` calls, so
gradients reach float32 parameters in float32.

How ops take part: an op function asks ``lower(*tensors)`` (or ``fp32(*tensors)``) for its
inputs before computing. The check is one flag, ``state.active``, so code outside autocast pays
one attribute read. Until an op calls the hook, autocast is a no-op for that op (it still keeps
the state scripts query: ``is_autocast_enabled``, ``get_autocast_dtype``).

Like grad mode, the state is per thread, as in PyTorch.
On the CPU there is no speed to gain from it: NumPy has no bfloat16/float16 BLAS.
"""

from __future__ import annotations

import functools
import threading
import warnings
from collections.abc import Callable
from typing import Any

from .. import _dtype

__all__ = [
    "autocast",
    "is_autocast_available",
    "is_autocast_enabled",
    "set_autocast_enabled",
    "get_autocast_dtype",
    "set_autocast_dtype",
    "is_autocast_cache_enabled",
    "set_autocast_cache_enabled",
    "clear_autocast_cache",
    "custom_fwd",
    "custom_bwd",
]

_DEVICE_TYPES = ("cpu", "cuda")

# The state: per device type, whether autocast is on and its dtype. ``active`` is True when any
# device type is enabled: the one thing an op's hook reads when autocast is off.
class _ThreadState(threading.local):
    active = False

    def __init__(self) -> None:  # runs once in each thread that reads the state
        self.enabled: dict[str, bool] = {"cpu": False, "cuda": False}
        self.dtypes: dict[str, Any] = {"cpu": _dtype.bfloat16, "cuda": _dtype.float16}
        self.cache_enabled = True


state = _ThreadState()


def _refresh() -> None:
    state.active = state.enabled["cpu"] or state.enabled["cuda"]


def _check_device_type(device_type: Any) -> str:
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if device_type not in _DEVICE_TYPES:
        raise RuntimeError(
            f"User specified an unsupported autocast device_type '{device_type}': ember's "
            f"autocast supports {', '.join(repr(d) for d in _DEVICE_TYPES)}"
        )
    return device_type


def is_autocast_available(device_type: str) -> bool:
    """True for the device types autocast knows ('cpu', 'cuda')."""
    return device_type in _DEVICE_TYPES


def is_autocast_enabled(device_type: str | None = None) -> bool:
    """Whether autocast is on for ``device_type`` (no argument: 'cuda', PyTorch's legacy form)."""
    return state.enabled[_check_device_type("cuda" if device_type is None else device_type)]


def set_autocast_enabled(device_type: Any, enabled: bool | None = None) -> None:
    """Switch autocast on or off for a device type (``set_autocast_enabled(True)``: 'cuda')."""
    if enabled is None:  # legacy one-argument form
        device_type, enabled = "cuda", device_type
    state.enabled[_check_device_type(device_type)] = bool(enabled)
    _refresh()


def get_autocast_dtype(device_type: str) -> Any:
    """The dtype autocast uses on ``device_type`` (defaults: cpu bfloat16, cuda float16)."""
    return state.dtypes[_check_device_type(device_type)]


def set_autocast_dtype(device_type: str, dtype: Any) -> None:
    """Set the dtype autocast uses on ``device_type``."""
    state.dtypes[_check_device_type(device_type)] = dtype


def is_autocast_cache_enabled() -> bool:
    """Whether casts of weights are cached (accepted; ember does not cache)."""
    return state.cache_enabled


def set_autocast_cache_enabled(enabled: bool) -> None:
    """Accepted for compatibility: ember casts each time (no cache)."""
    state.cache_enabled = bool(enabled)


def clear_autocast_cache() -> None:
    """Nothing to clear: ember keeps no cast cache."""


class autocast:
    """A context manager (and decorator) that turns mixed precision on for one device type.

    Args:
        device_type: 'cpu' or 'cuda'.
        dtype: the lower precision (default: ``get_autocast_dtype(device_type)``: bfloat16 on
            the CPU, float16 on CUDA). The CPU accepts bfloat16 and float16 only.
        enabled: False makes the region run without autocast (nested regions included).
        cache_enabled: accepted (ember keeps no cast cache).

    Example::

        >>> with torch.autocast(device_type="cpu", dtype=torch.bfloat16):
        ...     y = model(x)
    """

    def __init__(self, device_type: str, dtype: Any = None, enabled: bool = True,
                 cache_enabled: bool | None = None) -> None:
        self.device = _check_device_type(device_type)
        self.fast_dtype = get_autocast_dtype(device_type) if dtype is None else dtype
        self._enabled = bool(enabled)
        self._cache_enabled = state.cache_enabled if cache_enabled is None else bool(cache_enabled)
        if not isinstance(self.fast_dtype, _dtype.dtype):
            raise ValueError(f"autocast: dtype must be a torch dtype, got {self.fast_dtype!r}")
        if self._enabled and self.device == "cpu" and self.fast_dtype not in (
                _dtype.bfloat16, _dtype.float16):
            warnings.warn(
                "In CPU autocast, but the target dtype is not supported. Disabling autocast.\n"
                "CPU Autocast only supports dtype of torch.bfloat16, torch.float16 currently.",
                stacklevel=2,
            )
            self._enabled = False
        if self._enabled and self.device == "cuda":
            from .. import cuda

            if not cuda.is_available():
                warnings.warn(
                    "User provided device_type of 'cuda', but CUDA is not available. Disabling",
                    stacklevel=2,
                )
                self._enabled = False
            elif self.fast_dtype is _dtype.bfloat16 and not cuda.is_bf16_supported():
                raise RuntimeError(
                    "Current CUDA Device does not support bfloat16. Please switch dtype to float16."
                )
        if self._enabled and self.fast_dtype.np is None:
            raise RuntimeError(
                f"autocast to {self.fast_dtype} needs the ml_dtypes package (pip install "
                "ml_dtypes): NumPy has no bfloat16 of its own"
            )
        self._saved: list[tuple[bool, Any, bool]] = []

    def __enter__(self) -> autocast:
        st = state
        self._saved.append((st.enabled[self.device], st.dtypes[self.device], st.cache_enabled))
        st.enabled[self.device] = self._enabled
        st.dtypes[self.device] = self.fast_dtype
        st.cache_enabled = self._cache_enabled
        _refresh()
        return self

    def __exit__(self, *exc: Any) -> None:
        st = state
        st.enabled[self.device], st.dtypes[self.device], st.cache_enabled = self._saved.pop()
        _refresh()

    def __call__(self, func: Callable) -> Callable:
        @functools.wraps(func)
        def decorate_autocast(*args: Any, **kwargs: Any) -> Any:
            with self:
                return func(*args, **kwargs)

        return decorate_autocast

    def __repr__(self) -> str:
        return (f"autocast(device_type={self.device!r}, dtype={self.fast_dtype}, "
                f"enabled={self._enabled})")


# -- the hooks ops call ---------------------------------------------------------------------


def _target(t: Any) -> Any:
    """The dtype ``t`` should be cast to by a lower-precision op, or None to leave it."""
    if not hasattr(t, "is_floating_point") or not t.is_floating_point():
        return None
    if t.dtype is _dtype.float64:
        return None
    dev = t.device.type
    if not state.enabled.get(dev, False):
        return None
    dt = state.dtypes[dev]
    return None if t.dtype is dt else dt


def lower(*tensors: Any) -> tuple:
    """For an op on autocast's lower-precision list: its inputs cast to the autocast dtype of
    their device (float64, non-floating and None inputs pass through). Differentiable."""
    if not state.active:
        return tensors
    out = []
    for t in tensors:
        dt = _target(t)
        out.append(t if dt is None else t.to(dt))
    return tuple(out)


def fp32(*tensors: Any) -> tuple:
    """For an op on autocast's float32 list: float16/bfloat16 inputs cast to float32."""
    if not state.active:
        return tensors
    out = []
    for t in tensors:
        if (hasattr(t, "is_floating_point") and t.is_floating_point()
                and t.dtype in (_dtype.float16, _dtype.bfloat16)
                and state.enabled.get(t.device.type, False)):
            t = t.to(_dtype.float32)
        out.append(t)
    return tuple(out)


# -- custom autograd Functions under autocast ------------------------------------------------


def custom_fwd(fwd: Callable | None = None, *, device_type: str = "cuda",
               cast_inputs: Any = None) -> Callable:
    """Decorator for a custom Function's ``forward``: with ``cast_inputs``, run it with autocast
    off and its floating inputs cast to that dtype (when autocast is on for ``device_type``)."""
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)
    _check_device_type(device_type)

    @functools.wraps(fwd)
    def decorate_fwd(*args: Any, **kwargs: Any) -> Any:
        if cast_inputs is None or not state.enabled[device_type]:
            return fwd(*args, **kwargs)

        def cast(a: Any) -> Any:
            if (hasattr(a, "is_floating_point") and a.is_floating_point()
                    and a.device.type == device_type):
                return a.to(cast_inputs)
            return a

        with autocast(device_type=device_type, enabled=False):
            return fwd(*[cast(a) for a in args], **{k: cast(v) for k, v in kwargs.items()})

    return decorate_fwd


def custom_bwd(bwd: Callable | None = None, *, device_type: str = "cuda") -> Callable:
    """Decorator for a custom Function's ``backward`` (accepted; ember's backward runs as is)."""
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)
    return bwd


# -- PyTorch's deprecated per-device spellings (torch.get_autocast_gpu_dtype()...) -----------

def _deprecated_name(msg: str) -> None:
    warnings.warn(msg, DeprecationWarning, stacklevel=3)


def get_autocast_gpu_dtype() -> Any:
    _deprecated_name("torch.get_autocast_gpu_dtype() is deprecated. Please use torch.get_autocast_dtype('cuda') instead.")
    return get_autocast_dtype("cuda")


def get_autocast_cpu_dtype() -> Any:
    _deprecated_name("torch.get_autocast_cpu_dtype() is deprecated. Please use torch.get_autocast_dtype('cpu') instead.")
    return get_autocast_dtype("cpu")


def set_autocast_gpu_dtype(dtype: Any) -> None:
    _deprecated_name("torch.set_autocast_gpu_dtype(dtype) is deprecated. Please use torch.set_autocast_dtype('cuda', dtype) instead.")
    set_autocast_dtype("cuda", dtype)


def set_autocast_cpu_dtype(dtype: Any) -> None:
    _deprecated_name("torch.set_autocast_cpu_dtype(dtype) is deprecated. Please use torch.set_autocast_dtype('cpu', dtype) instead.")
    set_autocast_dtype("cpu", dtype)


def is_autocast_cpu_enabled() -> bool:
    _deprecated_name("torch.is_autocast_cpu_enabled() is deprecated. Please use torch.is_autocast_enabled('cpu') instead.")
    return is_autocast_enabled("cpu")


def set_autocast_cpu_enabled(enabled: bool) -> None:
    _deprecated_name("torch.set_autocast_cpu_enabled(enabled) is deprecated. Please use torch.set_autocast_enabled('cpu', enabled) instead.")
    set_autocast_enabled("cpu", enabled)
