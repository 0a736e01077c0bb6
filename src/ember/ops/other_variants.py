"""Other forms of ops that live in other rooms: ``split_with_sizes`` and the ``unsafe_*`` splits,
the ``*_scatter`` ops (a copy with a view's window replaced), the ``*_copy`` forms of views (a new
tensor instead of a view), ``sum_to_size``, and ``torch.exp_(x)`` and friends (the in-place Tensor
methods as functions). Each is a composite of the op it names, so autograd needs nothing new.

Neighbours: ``shape.py`` and ``joining.py`` (the views and splits these copy), ``other.py``.
"""

from __future__ import annotations

import builtins
from typing import Any

from .._tensor_base import TensorBase
from . import _out

__all__ = [
    "split_with_sizes", "select_scatter", "slice_scatter", "diagonal_scatter", "expand_copy",
    "permute_copy", "t_copy", "transpose_copy", "unsqueeze_copy", "squeeze_copy", "view_copy",
    "diagonal_copy", "select_copy", "detach_copy", "alias_copy", "narrow_copy", "unfold_copy",
    "as_strided_copy", "unbind_copy", "split_copy", "split_with_sizes_copy", "slice_copy",
    "unsafe_chunk", "unsafe_split", "unsafe_split_with_sizes", "sum_to_size",
]


# ---------------------------------------------------------------------------------------------
# splits


def split_with_sizes(input: Any, split_sizes: Any, dim: int = 0) -> tuple:
    """``split`` with a list of sizes that must add up to the dimension's length."""
    sizes = [builtins.int(s) for s in split_sizes]
    if builtins.sum(sizes) != input.shape[dim]:
        raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to "
                           f"{input.shape[dim]} (input tensor's size at dimension {dim}), but got "
                           f"split_sizes={sizes}")
    return tuple(input.split(sizes, dim))


def unsafe_chunk(input: Any, chunks: int, dim: int = 0) -> tuple:
    """``chunk``, as a tuple (PyTorch's variant without the view checks)."""
    return tuple(input.chunk(chunks, dim))


def unsafe_split(input: Any, split_size: Any, dim: int = 0) -> tuple:
    """``split``, as a tuple (PyTorch's variant without the view checks)."""
    return tuple(input.split(split_size, dim))


def unsafe_split_with_sizes(input: Any, split_sizes: Any, dim: int = 0) -> tuple:
    """``split_with_sizes`` (PyTorch's variant without the view checks)."""
    return split_with_sizes(input, split_sizes, dim)


# ---------------------------------------------------------------------------------------------
# scatter views into a copy, and the ``*_copy`` forms of views


def select_scatter(input: Any, src: Any, dim: int, index: int) -> Any:
    """``input`` with ``input.select(dim, index)`` replaced by ``src``."""
    return _scatter_into(input, src, lambda t: t.select(dim, index))


def slice_scatter(input: Any, src: Any, dim: int = 0, start: int | None = None,
                  end: int | None = None, step: int = 1, *, out: Any = None) -> Any:
    """``input`` with the slice ``start:end:step`` along ``dim`` replaced by ``src``."""
    def view(t: Any) -> Any:
        idx = [slice(None)] * t.dim()
        idx[dim] = slice(start, end, step)
        return t[tuple(idx)]
    result = _scatter_into(input, src, view)
    return result if out is None else _out.write(out, result, "slice_scatter")


def diagonal_scatter(input: Any, src: Any, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Any:
    """``input`` with ``input.diagonal(offset, dim1, dim2)`` replaced by ``src``."""
    return _scatter_into(input, src, lambda t: t.diagonal(offset, dim1, dim2))


def alias_copy(input: Any, *, out: Any = None) -> Any:
    """A copy of ``input``."""
    return input.clone() if out is None else _out.write(out, input, "alias_copy")


def slice_copy(input: Any, dim: int = 0, start: int | None = None, end: int | None = None,
               step: int = 1, *, out: Any = None) -> Any:
    """``input[..., start:end:step, ...]`` along ``dim``, as a new tensor."""
    idx = [slice(None)] * input.dim()
    idx[dim] = slice(start, end, step)
    return _fresh(input[tuple(idx)], out, "slice_copy")


def unbind_copy(input: Any, dim: int = 0, *, out: Any = None) -> Any:
    """``unbind``, each slice a new tensor (not a view)."""
    return _fresh_list(input.unbind(dim), out, "unbind_copy")


def split_copy(input: Any, split_size: Any, dim: int = 0, *, out: Any = None) -> Any:
    """``split``, each piece a new tensor (not a view)."""
    return _fresh_list(input.split(split_size, dim), out, "split_copy")


def split_with_sizes_copy(input: Any, split_sizes: Any, dim: int = 0, *, out: Any = None) -> Any:
    """``split_with_sizes``, each piece a new tensor (not a view)."""
    return _fresh_list(split_with_sizes(input, split_sizes, dim), out, "split_with_sizes_copy")


def sum_to_size(input: Any, *sizes: Any, size: Any = None) -> Any:
    """Sum ``input`` down to ``size`` (the shape it was broadcast from): the sizes as varargs,
    one sequence, or ``size=``."""
    if size is not None:
        if sizes:
            raise TypeError("sum_to_size() got the sizes both positionally and as size=")
        sizes = (size,)
    size = sizes
    if len(size) == 1 and isinstance(size[0], (list, tuple)):
        size = tuple(size[0])
    size = tuple(builtins.int(s) for s in size)
    shape = tuple(input.shape)
    lead = len(shape) - len(size)
    if lead < 0 or any(s not in (1, d) for s, d in zip(size, shape[lead:], strict=True)):
        raise RuntimeError(f"size {{{', '.join(map(str, size))}}} is not expandable to size "
                           f"{{{', '.join(map(str, shape))}}}.")
    out = input
    if lead:
        out = out.sum(tuple(builtins.range(lead)))
    dims = tuple(i for i, (s, d) in enumerate(zip(size, out.shape, strict=True)) if s == 1 and d != 1)
    if dims:
        out = out.sum(dims, keepdim=True)
    return out


def expand_copy(input: Any, size: Any, *, implicit: bool = False, out: Any = None) -> Any:
    """``input.expand(size)`` as a new tensor (not a view)."""
    return _fresh(input.expand(size), out, "expand_copy")


def permute_copy(input: Any, dims: Any, *, out: Any = None) -> Any:
    """``input.permute(dims)`` as a new tensor (not a view)."""
    return _fresh(input.permute(dims), out, "permute_copy")


def t_copy(input: Any, *, out: Any = None) -> Any:
    """``input.t()`` as a new tensor (not a view)."""
    return _fresh(input.t(), out, "t_copy")


def transpose_copy(input: Any, dim0: int, dim1: int, *, out: Any = None) -> Any:
    """``input.transpose(dim0, dim1)`` as a new tensor (not a view)."""
    return _fresh(input.transpose(dim0, dim1), out, "transpose_copy")


def unsqueeze_copy(input: Any, dim: int, *, out: Any = None) -> Any:
    """``input.unsqueeze(dim)`` as a new tensor (not a view)."""
    return _fresh(input.unsqueeze(dim), out, "unsqueeze_copy")


def squeeze_copy(input: Any, dim: Any = None, *, out: Any = None) -> Any:
    """``input.squeeze(dim)`` as a new tensor (not a view)."""
    return _fresh(input.squeeze(dim), out, "squeeze_copy")


def view_copy(input: Any, size: Any = None, *, dtype: Any = None, out: Any = None) -> Any:
    """``input.view(size)`` (or ``input.view(dtype)``) as a new tensor (not a view)."""
    if size is not None and not isinstance(size, (int, tuple, list, TensorBase)):
        size, dtype = None, size  # view_copy(x, torch.int32): PyTorch's dtype overload
    if (size is None) == (dtype is None):
        raise TypeError("view_copy() takes one of size or dtype")
    res = input.view(size) if dtype is None else input.view(dtype=dtype)
    return _fresh(res, out, "view_copy")


def diagonal_copy(input: Any, offset: int = 0, dim1: int = 0, dim2: int = 1, *,
                  out: Any = None) -> Any:
    """``input.diagonal(offset, dim1, dim2)`` as a new tensor (not a view)."""
    return _fresh(input.diagonal(offset, dim1, dim2), out, "diagonal_copy")


def select_copy(input: Any, dim: int, index: Any, *, out: Any = None) -> Any:
    """``input.select(dim, index)`` as a new tensor (not a view)."""
    return _fresh(input.select(dim, index), out, "select_copy")


def detach_copy(input: Any, *, out: Any = None) -> Any:
    """``input.detach()`` as a new tensor (not a view)."""
    return _fresh(input.detach(), out, "detach_copy")


def narrow_copy(input: Any, dim: int, start: Any, length: int, *, out: Any = None) -> Any:
    """``input.narrow(dim, start, length)`` as a new tensor (not a view)."""
    return _fresh(input.narrow(dim, start, length), out, "narrow_copy")


def unfold_copy(input: Any, dimension: int, size: int, step: int, *, out: Any = None) -> Any:
    """``input.unfold(dimension, size, step)`` as a new tensor (not a view)."""
    return _fresh(input.unfold(dimension, size, step), out, "unfold_copy")


def as_strided_copy(input: Any, size: Any, stride: Any, storage_offset: int | None = None, *,
                    out: Any = None) -> Any:
    """``input.as_strided(size, stride, storage_offset)`` as a new tensor (not a view)."""
    return _fresh(input.as_strided(size, stride, storage_offset), out, "as_strided_copy")


def _fresh_list(pieces: Any, out: Any, name: str) -> Any:
    """Views as new tensors, or written into the list ``out`` (PyTorch's ``Tensor(a!)[] out``:
    the call then returns None)."""
    if out is None:
        return tuple(t.clone() for t in pieces)
    pieces = tuple(pieces)
    if not isinstance(out, (list, tuple)) or len(out) != len(pieces):
        raise RuntimeError(f"{name}(): out= must be a list of {len(pieces)} tensors, one per "
                           f"piece, got {type(out).__name__}")
    for o, t in zip(out, pieces, strict=True):
        _out.write(o, t, name)
    return None


def _scatter_into(input: Any, src: Any, view: Any) -> Any:
    """A copy of ``input`` whose window ``view(copy)`` holds ``src`` (differentiable in both)."""
    out = input.clone()
    window = view(out)
    if tuple(window.shape) != tuple(src.shape):
        raise RuntimeError(f"expected src to have a size equal to the slice of self. src size = "
                           f"{list(src.shape)}, slice size = {list(window.shape)}")
    window.copy_(src)
    return out


def _fresh(result: Any, out: Any, name: str) -> Any:
    """``result`` (a view) as a new tensor, or written into ``out``."""
    return result.clone() if out is None else _out.write(out, result, name)


# ---------------------------------------------------------------------------------------------
# torch.<name>_: the in-place Tensor methods as functions


# ``torch.exp_(x)`` and friends: the in-place Tensor methods as functions
_TORCH_INPLACE = (
    "abs_ acos_ acosh_ addmv_ arccos_ arccosh_ arcsin_ arcsinh_ arctan_ arctanh_ asin_ asinh_ "
    "atan_ atanh_ ceil_ clamp_ clamp_max_ clamp_min_ clip_ cos_ cosh_ deg2rad_ erf_ erfc_ exp2_ "
    "exp_ expm1_ fix_ floor_ frac_ gcd_ i0_ lcm_ ldexp_ log10_ log1p_ log2_ log_ logit_ "
    "nan_to_num_ "
    "neg_ negative_ rad2deg_ reciprocal_ round_ rsqrt_ sigmoid_ sin_ sinc_ sinh_ sqrt_ square_ "
    "tan_ tanh_ trunc_ xlogy_ zero_ fill_ detach_ index_put_"
).split()


def _torch_inplace(name: str) -> Any:
    def fn(input: Any, *args: Any, **kwargs: Any) -> Any:
        return getattr(input, name)(*args, **kwargs)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"``torch.{name}(input, ...)`` is ``input.{name}(...)``."
    return fn


for _n in _TORCH_INPLACE:
    globals()[_n] = _torch_inplace(_n)


__all__ += _TORCH_INPLACE
