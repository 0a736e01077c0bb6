"""``torch.ops.aten``: PyTorch's operator namespace, for the operators ember runs.

Libraries key tables by operator identity (``HANDLED[torch.ops.aten.add.Tensor] = fn``) or probe
for one (``hasattr(torch.ops.aten, "_sparse_mm_reduce_impl")``). Each overload here is a stable
object that calls ember's op with that overload's schema (``aten.slice.Tensor(x, dim, start,
end, step)``, ``aten._to_copy.default(x, dtype=...)``); calling a packet (``aten.sum(x, [0])``)
picks the first overload whose arguments fit. An operator ember does not run is absent: a plain
AttributeError, as PyTorch gives for a name it lacks.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from .joining import cat, stack

# --------------------------------------------------------------------------------------------
# the namespace


class OpOverload:
    """One schema of an operator: ``torch.ops.aten.add.Tensor``."""

    def __init__(self, packet: OpOverloadPacket, overload: str, fn: Callable) -> None:
        self.overloadpacket = packet
        self._overloadname = overload
        self._op = fn
        self._signature = inspect.signature(fn)
        self.__name__ = f"{packet.__name__}.{overload}"
        self.__qualname__ = self.name()
        self.namespace = "aten"

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._op(*args, **kwargs)

    def name(self) -> str:
        """``"aten::add.Tensor"`` (``"aten::clone"`` for a default overload)."""
        base = f"aten::{self.overloadpacket.__name__}"
        return base if self._overloadname == "default" else f"{base}.{self._overloadname}"

    def __repr__(self) -> str:
        return f"<OpOverload(op='aten.{self.overloadpacket.__name__}', overload='{self._overloadname}')>"

    def __str__(self) -> str:
        return f"aten.{self.__name__}"


class OpOverloadPacket:
    """An operator with its overloads as attributes: ``torch.ops.aten.add``."""

    def __init__(self, name: str, overloads: dict[str, Callable]) -> None:
        self.__name__ = name
        self._qualified_op_name = f"aten::{name}"
        self._overload_names = list(overloads)
        for overload, fn in overloads.items():
            setattr(self, overload, OpOverload(self, overload, fn))

    def overloads(self) -> list[str]:
        """The overload names (``["Tensor", "Scalar"]``)."""
        return list(self._overload_names)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        for overload in self._overload_names:
            op = getattr(self, overload)
            try:
                op._signature.bind(*args, **kwargs)
            except TypeError:
                continue
            return op(*args, **kwargs)
        raise RuntimeError(f"aten::{self.__name__}: no overload takes these arguments "
                           f"(overloads: {', '.join(self._overload_names)})")

    def __getattr__(self, name: str) -> Any:
        raise AttributeError(f"The underlying op of 'aten.{self.__name__}' has no overload name "
                             f"'{name}'")

    def __repr__(self) -> str:
        return f"<OpOverloadPacket(op='aten.{self.__name__}')>"

    def __str__(self) -> str:
        return f"aten.{self.__name__}"


class _OpNamespace:
    """``torch.ops.aten``: one :class:`OpOverloadPacket` per operator ember runs."""

    __name__ = "torch.ops.aten"
    name = "aten"

    def __init__(self, table: dict[str, dict[str, Callable]]) -> None:
        for op, overloads in table.items():
            setattr(self, op, OpOverloadPacket(op, overloads))

    def __getattr__(self, name: str) -> Any:
        raise AttributeError(f"'_OpNamespace' 'aten' object has no attribute '{name}'")

    def __repr__(self) -> str:
        return "<torch.ops.aten: the operators ember runs>"


# --------------------------------------------------------------------------------------------
# the overloads, each with its aten schema


def _add(self: Any, other: Any, *, alpha: Any = 1) -> Any:
    return self.add(other, alpha=alpha)


def _add_(self: Any, other: Any, *, alpha: Any = 1) -> Any:
    return self.add_(other, alpha=alpha)


def _sub(self: Any, other: Any, *, alpha: Any = 1) -> Any:
    return self.sub(other, alpha=alpha)


def _sub_(self: Any, other: Any, *, alpha: Any = 1) -> Any:
    return self.sub_(other, alpha=alpha)


def _mul(self: Any, other: Any) -> Any:
    return self.mul(other)


def _mul_(self: Any, other: Any) -> Any:
    return self.mul_(other)


def _div(self: Any, other: Any) -> Any:
    return self.div(other)


def _div_(self: Any, other: Any) -> Any:
    return self.div_(other)


def _neg(self: Any) -> Any:
    return self.neg()


def _exp(self: Any) -> Any:
    return self.exp()


def _relu(self: Any) -> Any:
    return self.relu()


def _sigmoid(self: Any) -> Any:
    return self.sigmoid()


def _tanh(self: Any) -> Any:
    return self.tanh()


def _mm(self: Any, mat2: Any) -> Any:
    return self.mm(mat2)


def _bmm(self: Any, mat2: Any) -> Any:
    return self.bmm(mat2)


def _addmm(self: Any, mat1: Any, mat2: Any, *, beta: Any = 1, alpha: Any = 1) -> Any:
    return self.addmm(mat1, mat2, beta=beta, alpha=alpha)


def _sparse_addmm(self: Any, mat1: Any, mat2: Any, *, beta: Any = 1, alpha: Any = 1) -> Any:
    # PyTorch's takes a sparse or a dense mat1; ember's tensors are all dense
    return self.addmm(mat1, mat2, beta=beta, alpha=alpha)


def _sparse_mm_reduce_impl(self: Any, other: Any, reduce: str) -> Any:
    # torch.sparse.mm(csr, dense, reduce): the product and an (empty) argument index
    from .. import _dtype
    from .creation import empty
    from .sparse_compressed import sparse_mm_reduce

    return sparse_mm_reduce(self, other, reduce), empty(0, dtype=_dtype.int64)


def _sum(self: Any, *, dtype: Any = None) -> Any:
    return self.sum(dtype=dtype)


def _sum_dim(self: Any, dim: Any, keepdim: bool = False, *, dtype: Any = None) -> Any:
    return self.sum(dim, keepdim=keepdim, dtype=dtype)


def _mean(self: Any, *, dtype: Any = None) -> Any:
    return self.mean(dtype=dtype)


def _mean_dim(self: Any, dim: Any, keepdim: bool = False, *, dtype: Any = None) -> Any:
    return self.mean(dim, keepdim=keepdim, dtype=dtype)


def _clone(self: Any, *, memory_format: Any = None) -> Any:
    return self.clone() if memory_format is None else self.clone(memory_format=memory_format)


def _detach(self: Any) -> Any:
    return self.detach()


def _alias(self: Any) -> Any:
    return self.view_as(self)


def _to_copy(self: Any, *, dtype: Any = None, layout: Any = None, device: Any = None,
             pin_memory: Any = None, non_blocking: bool = False,
             memory_format: Any = None) -> Any:
    return self.to(device=self.device if device is None else device,
                   dtype=self.dtype if dtype is None else dtype, copy=True)


def _pin_memory(self: Any, device: Any = None) -> Any:
    return self.pin_memory()


def _sort(self: Any, dim: int = -1, descending: bool = False) -> Any:
    return tuple(self.sort(dim, descending))


def _sort_stable(self: Any, *, stable: bool | None, dim: int = -1,
                 descending: bool = False) -> Any:
    return tuple(self.sort(dim=dim, descending=descending, stable=bool(stable)))


def _cat(tensors: Any, dim: int = 0) -> Any:
    return cat(tensors, dim)


def _stack(tensors: Any, dim: int = 0) -> Any:
    return stack(tensors, dim)


def _flip(self: Any, dims: Any) -> Any:
    return self.flip(dims)


def _index_select(self: Any, dim: int, index: Any) -> Any:
    return self.index_select(dim, index)


def _select(self: Any, dim: int, index: int) -> Any:
    return self.select(dim, index)


def _slice(self: Any, dim: int = 0, start: int | None = None, end: int | None = None,
           step: int = 1) -> Any:
    if step <= 0:
        raise RuntimeError("slice step must be positive")
    dim = dim + self.dim() if dim < 0 else dim
    return self[(slice(None),) * dim + (slice(start, end, step),)]


def _index(self: Any, indices: Any) -> Any:
    return self[tuple(slice(None) if i is None else i for i in indices)]


def _unbind(self: Any, dim: int = 0) -> Any:
    return self.unbind(dim)


def _view(self: Any, size: Any) -> Any:
    return self.view(size)


def _reshape(self: Any, shape: Any) -> Any:
    return self.reshape(shape)


def _transpose(self: Any, dim0: int, dim1: int) -> Any:
    return self.transpose(dim0, dim1)


def _permute(self: Any, dims: Any) -> Any:
    return self.permute(dims)


def _t(self: Any) -> Any:
    return self.t()


def _unsqueeze(self: Any, dim: int) -> Any:
    return self.unsqueeze(dim)


def _squeeze(self: Any) -> Any:
    return self.squeeze()


def _squeeze_dim(self: Any, dim: int) -> Any:
    return self.squeeze(dim)


def _squeeze_dims(self: Any, dim: Any) -> Any:
    return self.squeeze(tuple(dim))


def _expand(self: Any, size: Any, *, implicit: bool = False) -> Any:
    return self.expand(size)


_TABLE: dict[str, dict[str, Callable]] = {
    "add": {"Tensor": _add, "Scalar": _add}, "add_": {"Tensor": _add_, "Scalar": _add_},
    "sub": {"Tensor": _sub, "Scalar": _sub}, "sub_": {"Tensor": _sub_, "Scalar": _sub_},
    "mul": {"Tensor": _mul, "Scalar": _mul}, "mul_": {"Tensor": _mul_, "Scalar": _mul_},
    "div": {"Tensor": _div, "Scalar": _div}, "div_": {"Tensor": _div_, "Scalar": _div_},
    "neg": {"default": _neg}, "exp": {"default": _exp}, "relu": {"default": _relu},
    "sigmoid": {"default": _sigmoid}, "tanh": {"default": _tanh},
    "mm": {"default": _mm}, "bmm": {"default": _bmm}, "addmm": {"default": _addmm},
    "_sparse_addmm": {"default": _sparse_addmm},
    "_sparse_mm_reduce_impl": {"default": _sparse_mm_reduce_impl},
    "sum": {"default": _sum, "dim_IntList": _sum_dim},
    "mean": {"default": _mean, "dim": _mean_dim},
    "clone": {"default": _clone}, "detach": {"default": _detach}, "alias": {"default": _alias},
    "_to_copy": {"default": _to_copy}, "_pin_memory": {"default": _pin_memory},
    "sort": {"default": _sort, "stable": _sort_stable},
    "cat": {"default": _cat}, "stack": {"default": _stack}, "flip": {"default": _flip},
    "index_select": {"default": _index_select}, "select": {"int": _select},
    "slice": {"Tensor": _slice}, "index": {"Tensor": _index}, "unbind": {"int": _unbind},
    "view": {"default": _view}, "reshape": {"default": _reshape},
    "transpose": {"int": _transpose}, "permute": {"default": _permute}, "t": {"default": _t},
    "unsqueeze": {"default": _unsqueeze}, "squeeze": {"default": _squeeze, "dim": _squeeze_dim, "dims": _squeeze_dims},
    "expand": {"default": _expand},
}

aten = _OpNamespace(_TABLE)
