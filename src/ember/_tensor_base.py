"""``TensorBase``: what every tensor is, below the ops that compute with it.

A tensor is a backend array (NumPy on cpu, CuPy on cuda) plus the fields autograd needs. This
class holds exactly that, and nothing that runs an op, so the autograd engine and the ops can be
written against it without importing the user-facing ``Tensor`` (``ember/_tensor.py``), which sits
above the ops and binds them as methods. It is the same split as PyTorch's: its Python ``Tensor``
subclasses the C++ ``TensorBase``.

One hand-off goes upward, by registration rather than import: ``Tensor``'s module calls
``register_tensor_class(Tensor)`` when it loads, and from then on ``TensorBase._make`` (the
internal constructor every op uses) creates ``Tensor`` objects.
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from . import _backend, _dtype, _native_core
from ._backend import CPU_ARRAY
from ._dtype import dtype as _dtype_cls
from ._size import Size


class TensorBase:
    """An array with a dtype, a device and the autograd fields (see ``ember.Tensor``)."""

    # Set on every tensor: slots. Rarely set (leaf grads, hooks, views' bases, version counters):
    # class-level defaults, stored per tensor only when assigned, so creating a tensor is cheap.
    __slots__ = ("_data", "_rg", "_grad_fn", "_output_nr", "__weakref__", "__dict__")
    _grad: Any = None
    _version: list | None = None  # [n]: shared by a tensor, its views and its detach()es
    _base: Any = None  # for a view: the tensor (not itself a view) whose memory it shows
    _attr_version = 0  # for a view: the version its grad_fn was derived at (see refresh_view)
    _view_kind = 0  # for a view: MULTI_OUTPUT | NO_GRAD_VIEW flags (in-place is refused)
    _accum: Any = None
    _retains = False  # retain_grad() was called (PyTorch's flag: it stays through in-place ops)
    _hooks: list | None = None
    _post_accumulate_hooks: list | None = None
    _INTERNAL = frozenset({"_grad", "_version", "_base", "_accum", "_hooks", "_post_accumulate_hooks",
                           "_attr_version", "_view_kind"})
    _data: Any

    @staticmethod
    def _make(data: Any, requires_grad: bool = False, grad_fn: Any = None,
              output_nr: int = 0) -> Any:
        """Wrap a backend array in a new tensor (the internal constructor; no copy)."""
        t = object.__new__(_tensor_class)
        if type(data) is not CPU_ARRAY:
            if isinstance(data, np.generic):
                data = np.asarray(data)
            elif not _backend.is_array(data):
                data = np.asarray(data)
        t._data = data
        t._rg = requires_grad
        t._grad_fn = grad_fn
        t._output_nr = output_nr
        if _on_make is not None:  # compile is tracing: it notes where each tensor was made
            _on_make(t)
        return t

    def _init_fields(self, data: Any, requires_grad: bool = False) -> None:
        """Set the fields of a tensor made by ``__new__`` (legacy constructors, unpickling)."""
        self._data = data
        self._rg = requires_grad
        self._grad_fn = None
        self._output_nr = 0

    # -- identity ---------------------------------------------------------------------------
    @property
    def shape(self) -> Size:
        return Size(self._data.shape)

    @property
    def ndim(self) -> int:
        return self._data.ndim

    @property
    def dtype(self) -> _dtype_cls:
        return _dtype.from_numpy(self._data.dtype)

    @property
    def device(self) -> _backend.device:
        return _backend.device_of(self._data)

    # -- the version counter (in-place ops bump it; saved tensors check it) -----------------
    def _version_counter(self) -> list:
        v = self._version
        if v is None:
            v = self._version = [0]
        return v

    def _bump_version(self) -> None:
        v = self._version
        if v is None:
            self._version = [1]
        else:
            v[0] += 1

    def __hash__(self) -> int:
        return id(self)


_tensor_class: type = TensorBase  # until ember._tensor registers Tensor
# set by compile's tracer while a region is traced (ember/_compile/trace.py); None otherwise
_on_make: Any = None

# ember._native's TensorBase._make does the common call (a NumPy array, no tracer) in C and hands
# every other call to this Python function, the reference (docs/design.md, "The native core").
_make_python = TensorBase._make
if _native_core.native is not None:
    _native_core.native.tensor_base_init(globals())
    TensorBase._make = staticmethod(_native_core.native.tensor_make)  # type: ignore[method-assign]


def register_tensor_class(cls: type) -> None:
    """Make ``TensorBase._make`` create instances of ``cls`` (called once, by ``ember._tensor``)."""
    global _tensor_class
    _tensor_class = cls


def data_of(x: Any) -> Any:
    """The backend array of a tensor; arrays and numbers pass through."""
    return x._data if isinstance(x, TensorBase) else x


def wrap_dim(dim: int, ndim: int) -> int:
    """``dim`` (an int or anything with ``__index__``) as a non-negative index into ``ndim``
    dimensions (0-d tensors accept 0 and -1)."""
    dim = operator.index(dim)
    n = max(ndim, 1)
    if not -n <= dim < n:
        raise IndexError(
            f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim})"
        )
    return dim % n
