"""Shape and views: reshape/view/view_as, flatten/unflatten/ravel, squeeze/unsqueeze,
expand/broadcast_to/broadcast_tensors/broadcast_shapes, permute/transpose/movedim, contiguous,
narrow/select, unfold, as_strided (the reshaping part of torch's "Indexing, Slicing, Joining,
Mutating Ops", and its view ops). Their neighbours: cat/stack/split/chunk/unbind, repeat/tile and
flip/roll in ``joining.py`` (built on the views and argument helpers here); ``x[key]`` in
``indexing.py``; diagonal in ``linalg.py``.

View ops (``is_view = True``) return NumPy views of their input (no copy) and share its version
counter, as PyTorch's views share storage. Every backward is written with ``ctx.call`` of another
op (or array methods that Tensor also has), so all of them are twice differentiable."""

from __future__ import annotations

import contextlib
import math
import operator
from typing import Any

import numpy as np

from .. import _backend, _dtype_info
from .. import _kernels_loader as _kernels
from .._backend import CPU_ARRAY
from .._size import Size
from .._tensor_base import TensorBase, wrap_dim
from ..autograd.function import Op
from . import _args
from .casting import view_dtype as _view_dtype

__all__ = [
    "reshape", "view", "view_as", "flatten", "unflatten", "ravel", "squeeze", "unsqueeze",
    "expand", "expand_as", "broadcast_to", "broadcast_tensors", "broadcast_shapes", "permute",
    "movedim", "moveaxis", "transpose", "swapaxes", "swapdims", "contiguous", "narrow", "select",
    "unfold", "as_strided",
]


# ---------------------------------------------------------------------------------------------
# argument helpers


def _int(v: Any, what: str = "size", pos: int = 0) -> int:
    if isinstance(v, TensorBase):
        if v._data.size != 1 or v._data.dtype.kind not in "iub":
            raise TypeError(
                f"{what} must be a tuple of ints, but found a tensor of shape "
                f"{tuple(v._data.shape)} and dtype {v.dtype} at pos {pos}"
            )
        return int(v._data.reshape(()).item())
    try:
        return operator.index(v)
    except TypeError:
        raise TypeError(
            f"{what} must be a tuple of ints, but found element of type {type(v).__name__} at "
            f"pos {pos}"
        ) from None


def _shape_arg(size: tuple) -> tuple[int, ...]:
    """Sizes given as varargs ``(2, 3)``, one tuple/list/Size ``((2, 3),)`` or a 1-D tensor."""
    if len(size) == 1:
        s0 = size[0]
        if isinstance(s0, (tuple, list)):
            size = tuple(s0)
        elif isinstance(s0, TensorBase) and s0._data.ndim == 1:
            size = tuple(int(v) for v in s0._data.tolist())
    return tuple(_int(s, "size", i) for i, s in enumerate(size))


def _dims_arg(dims: tuple, what: str = "dims") -> tuple[int, ...]:
    if len(dims) == 1 and isinstance(dims[0], (tuple, list)):
        dims = tuple(dims[0])
    return tuple(_int(d, what, i) for i, d in enumerate(dims))


def _wrap(dim: Any, ndim: int, scalar_ok: bool = True) -> int:
    """``dim`` (an int or a one-element integer tensor) wrapped by ``wrap_dim``; a 0-d tensor
    accepts dims 0 and -1 (as in PyTorch) only if ``scalar_ok``."""
    dim = _int(dim, "dim")
    if scalar_ok or ndim:
        return wrap_dim(dim, ndim)
    raise IndexError(f"Dimension out of range (expected to be in range of [0, -1], but got {dim})")


def _lst(shape: Any) -> list[int]:
    return [int(s) for s in shape]


def _infer_shape(shape: tuple[int, ...], numel: int) -> tuple[int, ...]:
    """Resolve one ``-1`` in ``shape`` so that it holds ``numel`` elements."""
    infer = None
    known = 1
    for i, s in enumerate(shape):
        if s == -1:
            if infer is not None:
                raise RuntimeError(f"only one dimension can be inferred (shape {list(shape)})")
            infer = i
        elif s < 0:
            raise RuntimeError(f"invalid shape dimension {s} in shape {list(shape)}")
        else:
            known *= s
    if infer is None:
        if known != numel:
            raise RuntimeError(
                f"shape '{list(shape)}' is invalid for input of size {numel}; the new shape must "
                f"hold exactly {numel} elements"
            )
        return shape
    if known == 0:
        raise RuntimeError(
            f"cannot reshape tensor of 0 elements into shape {list(shape)} because the "
            "unspecified dimension size -1 can be any value and is ambiguous"
        )
    if numel % known:
        raise RuntimeError(
            f"shape '{list(shape)}' is invalid for input of size {numel}; the new shape must "
            f"hold exactly {numel} elements"
        )
    return shape[:infer] + (numel // known,) + shape[infer + 1 :]


def _can_view(arr: Any, shape: tuple[int, ...]) -> bool:
    """Whether ``arr`` can take ``shape`` without a copy (NumPy decides)."""
    if type(arr) is CPU_ARRAY:
        try:
            arr.reshape(shape, copy=False)
        except ValueError:
            return False
        return True
    if arr.flags.c_contiguous or arr.size <= 1:
        return True
    out = arr.reshape(shape)
    return bool(_backend.xp_of(arr).may_share_memory(out, arr))


# ---------------------------------------------------------------------------------------------
# reshaping views


def reshape(input: Any, shape: Any) -> Any:
    """Tensor with the same data in ``shape``, one sequence (a view when the layout allows,
    else a copy; ``Tensor.reshape`` also takes varargs: _tensor_methods.py)."""
    shape = _infer_shape(_shape_arg((_args.one_sequence("reshape", "shape", shape),)),
                         input._data.size)
    if _can_view(input._data, shape):
        return Reshape.apply(input, shape)
    return ReshapeCopy.apply(input, shape)


def view(input: Any, *shape: Any, size: Any = None, dtype: Any = None) -> Any:
    """View of ``input`` with another shape (no copy; an error when strides do not allow it).
    The shape comes as varargs, one sequence or ``size=``. ``input.view(dtype)`` (or
    ``view(dtype=...)``) reinterprets the bytes as another dtype of the same size."""
    if size is None and dtype is None and shape and type(input._data) is CPU_ARRAY and \
            all(type(s) is int and s >= -1 for s in shape):  # the common call, x.view(B, T, -1):
        with contextlib.suppress(ValueError):  # NumPy's copy-free reshape; refusals: below
            return Reshape.apply(input, input._data.reshape(shape, copy=False).shape)
    if size is not None or dtype is not None:
        if shape or (size is not None and dtype is not None):
            raise TypeError("view() takes one of: the sizes, size=, or a dtype (dtype=)")
        if dtype is not None:
            return _view_dtype(input, dtype)
        shape = (size,)
    if len(shape) == 1 and not isinstance(shape[0], (int, tuple, list, TensorBase)):
        return _view_dtype(input, shape[0])
    shape = _infer_shape(_shape_arg(shape), input._data.size)
    if not _can_view(input._data, shape):
        st = [s // input._data.itemsize for s in input._data.strides]
        raise RuntimeError(
            "view size is not compatible with input tensor's size and stride (at least one "
            "dimension spans across two contiguous subspaces): input shape "
            f"{_lst(input._data.shape)} "
            f"with stride {st} cannot be viewed as {list(shape)}. Use .reshape(...) instead."
        )
    return Reshape.apply(input, shape)


def view_as(input: Any, other: Any) -> Any:
    """``input.view(other.shape)``."""
    return view(input, tuple(other._data.shape))


def flatten(input: Any, start_dim: int = 0, end_dim: int = -1) -> Any:
    """Merge dims ``start_dim..end_dim`` into one (a 0-d tensor becomes 1-d)."""
    nd = input._data.ndim
    s, e = _wrap(start_dim, nd), _wrap(end_dim, nd)
    if s > e:
        raise RuntimeError(
            f"flatten() has invalid args: start_dim cannot come after end_dim (got start_dim="
            f"{start_dim}, end_dim={end_dim} for a {nd}-d tensor)"
        )
    if nd == 0:
        return reshape(input, (1,))
    if s == e:
        return input
    shp = input._data.shape
    return reshape(input, shp[:s] + (math.prod(shp[s : e + 1]),) + shp[e + 1 :])


def unflatten(input: Any, dim: int, sizes: Any) -> Any:
    """Split dim ``dim`` into ``sizes`` (one may be -1)."""
    shp = input._data.shape
    d = _wrap(dim, input._data.ndim, scalar_ok=False)
    sizes = _shape_arg((sizes,))
    if not sizes:
        raise RuntimeError("unflatten: sizes must be non-empty")
    try:
        sizes = _infer_shape(sizes, shp[d])
    except RuntimeError:
        raise RuntimeError(
            f"unflatten: Provided sizes {list(sizes)} don't multiply up to the size of dim {dim} "
            f"({shp[d]}) in the input tensor of shape {_lst(shp)}"
        ) from None
    return reshape(input, shp[:d] + sizes + shp[d + 1 :])


def ravel(input: Any) -> Any:
    """Flattened 1-D tensor (a copy only when needed)."""
    return reshape(input, (-1,))


def squeeze(input: Any, dim: Any = None) -> Any:
    """Remove size-1 dims (all, one ``dim``, or a tuple of dims; others are left alone)."""
    shp = input._data.shape
    nd = len(shp)
    if dim is None:
        return Squeeze.apply(input, tuple(i for i, s in enumerate(shp) if s == 1))
    if isinstance(dim, (tuple, list)):
        dims = {_wrap(d, nd) for d in dim}
        cls: Any = SqueezeDims
    else:
        dims = {_wrap(dim, nd)}
        cls = SqueezeDim
    return cls.apply(input, tuple(i for i in sorted(dims) if i < nd and shp[i] == 1))


def unsqueeze(input: Any, dim: int) -> Any:
    """Insert a size-1 dim at ``dim`` (in ``[-ndim-1, ndim]``)."""
    shp = input._data.shape
    nd = len(shp)
    d = _int(dim, "dim")
    if not -nd - 1 <= d <= nd:
        raise IndexError(
            f"Dimension out of range (expected to be in range of [{-nd - 1}, {nd}], but got {d})"
        )
    return Unsqueeze.apply(input, d % (nd + 1))


class Reshape(Op):
    """out = x reshaped (a view)          grad_x = grad reshaped back"""

    node_name = "ViewBackward0"
    is_view = True

    @staticmethod
    def forward(ctx: Any, x: Any, shape: tuple) -> Any:
        ctx.shape = x.shape
        out = x.reshape(shape)  # (size-1 dims: PyTorch's strides, where NumPy picks others)
        return _backend.view_restrided(x, out) if 1 in shape and out.size else out

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        return grad.reshape(ctx.shape), None


class ReshapeCopy(Reshape):
    """out = x reshaped (a copy: the layout does not allow a view)          grad_x = grad reshaped"""

    node_name = "UnsafeViewBackward0"
    is_view = False

    @staticmethod
    def forward(ctx: Any, x: Any, shape: tuple) -> Any:
        ctx.shape = x.shape
        if (out := _kernels.dense_copy(x)) is not None:  # (a transposed view: tiled)
            return out.reshape(shape)
        return x.reshape(shape)  # a fresh C-order copy: PyTorch's strides already


class Squeeze(Reshape):
    """out = x without the size-1 dims ``axes`` (others keep strides)      grad_x = grad reshaped"""

    node_name = "SqueezeBackward0"

    @staticmethod
    def forward(ctx: Any, x: Any, axes: tuple) -> Any:
        ctx.shape = x.shape
        return x.squeeze(axes) if axes else x.reshape(x.shape)


class SqueezeDim(Squeeze):
    """out = x without one size-1 dim          grad_x = grad reshaped back"""

    node_name = "SqueezeBackward1"


class SqueezeDims(Squeeze):
    """out = x without some size-1 dims          grad_x = grad reshaped back"""

    node_name = "SqueezeBackward2"


class Unsqueeze(Reshape):
    """out = x with a size-1 dim at ``dim`` (PyTorch's stride)          grad_x = grad reshaped"""

    node_name = "UnsqueezeBackward0"

    @staticmethod
    def forward(ctx: Any, x: Any, dim: int) -> Any:
        ctx.shape, st = x.shape, x.strides
        out = x.reshape(x.shape[:dim] + (1,) + x.shape[dim:])
        want = st[:dim] + ((x.shape[dim] * st[dim]) if dim < x.ndim else x.itemsize,) + st[dim:]
        return out if out.strides == want else _backend.with_strides(out, want)


# ---------------------------------------------------------------------------------------------
# broadcasting


def expand(input: Any, *sizes: Any, size: Any = None, implicit: bool = False) -> Any:
    """Broadcast view of ``input`` to ``sizes`` (-1 keeps a dim; new dims go in front).

    The sizes come as varargs, one sequence or ``size=``; ``implicit`` is accepted and ignored,
    as PyTorch's (it only marks expands inserted by broadcasting).
    """
    if size is not None:
        if sizes:
            raise TypeError("expand() got the sizes both positionally and as size=")
        sizes = (size,)
    shape = _expand_shape(input._data.shape, _shape_arg(sizes))
    return Expand.apply(input, shape)


def expand_as(input: Any, other: Any) -> Any:
    """``input.expand(other.shape)``."""
    return expand(input, tuple(other._data.shape))


def broadcast_to(input: Any, size: Any) -> Any:
    """``input.expand(size)``."""
    shape = _expand_shape(input._data.shape, _shape_arg((size,)), "broadcast_to")
    return Expand.apply(input, shape)


def broadcast_to_method(input: Any, *sizes: Any, size: Any = None) -> Any:
    """``Tensor.broadcast_to``: the sizes as varargs (``input.broadcast_to(2, 3, 4)``), one
    sequence, or ``size=``, as PyTorch's method accepts (the function takes one size only)."""
    if size is not None:
        if sizes:
            raise TypeError("broadcast_to() got the sizes both positionally and as size=; pass "
                            "x.broadcast_to(2, 3) or x.broadcast_to(size=(2, 3))")
        sizes = (size,)
    shape = _expand_shape(input._data.shape, _shape_arg(sizes), "broadcast_to")
    return Expand.apply(input, shape)


def broadcast_shapes(*shapes: Any) -> Any:
    """The shape that tensors of ``shapes`` broadcast to (a ``Size``)."""
    norm = [(int(s),) if isinstance(s, int) else tuple(int(v) for v in s) for s in shapes]
    nd = max((len(s) for s in norm), default=0)
    out = [1] * nd
    for s in norm:
        for i, v in enumerate(s):
            j = nd - len(s) + i
            if v < 0:
                raise RuntimeError(f"Trying to create tensor with negative dimension {v}: {list(s)}")
            if out[j] == 1:
                out[j] = v
            elif v != 1 and v != out[j]:
                raise RuntimeError(
                    "Shape mismatch: objects cannot be broadcast to a single shape: "
                    f"{' and '.join(str(list(q)) for q in norm)} differ at dim {j - nd} "
                    f"({out[j]} vs {v})"
                )
    return Size(out)


def broadcast_tensors(*tensors: Any) -> tuple:
    """Expand all tensors to their common broadcast shape."""
    if len(tensors) == 1 and isinstance(tensors[0], (tuple, list)):
        tensors = tuple(tensors[0])
    try:
        shape = tuple(broadcast_shapes(*(t._data.shape for t in tensors)))
    except RuntimeError:
        shapes = ", ".join(str(_lst(t._data.shape)) for t in tensors)
        raise RuntimeError(
            f"broadcast_tensors: shapes {shapes} cannot be broadcast together (each dim, from the "
            "right, must match or be 1)"
        ) from None
    return tuple(t if t._data.shape == shape else Expand.apply(t, shape) for t in tensors)


class Expand(Op):
    """out = x broadcast to a larger shape (a view)          grad_x = grad summed back (engine)"""

    node_name = "ExpandBackward0"
    is_view = True

    @staticmethod
    def forward(ctx: Any, x: Any, shape: tuple) -> Any:
        out = ctx.xp.broadcast_to(x, shape)
        if _backend.is_numpy_backed(out) and x.flags.writeable:
            out.flags.writeable = True  # NumPy's is read-only; PyTorch's writes through to x
        return _backend.expand_restrided(x, out) if 1 in shape else out  # (NumPy's size-1: 0)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        return grad, None  # the engine sums the broadcast dims back to x's shape


def _expand_shape(shp: tuple, sizes: tuple, name: str = "expand") -> tuple[int, ...]:
    nd, ns = len(shp), len(sizes)
    if ns < nd:
        raise RuntimeError(
            f"{name}(size={list(sizes)}): the number of sizes provided ({ns}) must be greater or "
            f"equal to the number of dimensions in the tensor ({nd}, shape {_lst(shp)})"
        )
    lead = ns - nd
    out = []
    for i, s in enumerate(sizes):
        if i < lead:
            if s < 0:
                raise RuntimeError(
                    f"The expanded size of the tensor ({s}) isn't allowed in a leading, "
                    f"non-existing dimension {i} (target sizes {list(sizes)})"
                )
            out.append(s)
            continue
        cur = shp[i - lead]
        if s == -1:
            out.append(cur)
        elif cur == s or cur == 1:
            if s < 0:
                raise RuntimeError(f"Trying to create tensor with negative dimension {s}: "
                                   f"{list(sizes)}")
            out.append(s)
        else:
            raise RuntimeError(
                f"The expanded size of the tensor ({s}) must match the existing size ({cur}) at "
                f"non-singleton dimension {i}.  Target sizes: {list(sizes)}.  Tensor sizes: "
                f"{_lst(shp)}"
            )
    return tuple(out)


# ---------------------------------------------------------------------------------------------
# permuting dims


def permute(input: Any, dims: Any) -> Any:
    """View of ``input`` with dims in the order ``dims`` (one sequence; ``Tensor.permute`` also
    takes varargs)."""
    return permute_method(input, dims=_args.one_sequence("permute", "dims", dims))


def permute_method(input: Any, *order: Any, dims: Any = None) -> Any:
    """``Tensor.permute``: the dims as varargs, one sequence, or ``dims=``."""
    if dims is not None and order:
        raise TypeError("permute() got the dims both positionally and as dims=")
    dims = _dims_arg(order if dims is None else (dims,))
    nd = input._data.ndim
    if len(dims) != nd:
        raise RuntimeError(
            f"permute(): number of dims don't match in permute: the tensor has {nd} dims (shape "
            f"{_lst(input._data.shape)}) but {len(dims)} were given ({list(dims)})"
        )
    w = tuple(_wrap(d, nd) for d in dims)
    if len(set(w)) != len(w):
        raise RuntimeError(f"permute(): duplicate dims are not allowed (got {list(dims)})")
    if nd == 0:
        return Permute.apply(input, ())
    return Permute.apply(input, w)


def transpose(input: Any, dim0: int, dim1: int) -> Any:
    """View of ``input`` with ``dim0`` and ``dim1`` swapped."""
    nd = input._data.ndim
    return Transpose.apply(input, _wrap(dim0, nd), _wrap(dim1, nd))


def movedim(input: Any, source: Any, destination: Any) -> Any:
    """Move dims ``source`` to positions ``destination`` (others keep their order)."""
    nd = input._data.ndim
    src = (source,) if not isinstance(source, (tuple, list)) else tuple(source)
    dst = (destination,) if not isinstance(destination, (tuple, list)) else tuple(destination)
    if len(src) != len(dst):
        raise RuntimeError(
            f"movedim: Invalid source or destination dims: source ({list(src)} dims) should "
            f"contain the same number of dims as destination ({list(dst)} dims)"
        )
    s = [_wrap(d, nd) for d in src]
    t = [_wrap(d, nd) for d in dst]
    if len(set(s)) != len(s):
        raise RuntimeError(f"movedim: repeated dim in `source` ({list(src)})")
    if len(set(t)) != len(t):
        raise RuntimeError(f"movedim: repeated dim in `destination` ({list(dst)})")
    if nd == 0:
        return Permute.apply(input, ())
    order: list[int | None] = [None] * nd
    for a, b in zip(s, t):
        order[b] = a
    rest = iter(d for d in range(nd) if d not in s)
    perm = tuple(o if o is not None else next(rest) for o in order)
    return Permute.apply(input, perm)


def contiguous(input: Any, *, memory_format: Any = _dtype_info.contiguous_format) -> Any:
    """``input`` itself when C-contiguous, else a C-contiguous copy."""
    if input._data.flags.c_contiguous:
        return input
    return Contiguous.apply(input)


def swapaxes(input: Any, axis0: int, axis1: int) -> Any:
    """``transpose`` under NumPy's parameter names (PyTorch's ``swapaxes(input, axis0, axis1)``)."""
    nd = input._data.ndim
    return Transpose.apply(input, _wrap(axis0, nd), _wrap(axis1, nd))


class Permute(Op):
    """out = x with dims reordered (a view)          grad_x = grad permuted by the inverse order"""

    node_name = "PermuteBackward0"
    is_view = True

    @staticmethod
    def forward(ctx: Any, x: Any, dims: tuple) -> Any:
        ctx.dims = dims
        return x.transpose(dims)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        inv = [0] * len(ctx.dims)
        for i, d in enumerate(ctx.dims):
            inv[d] = i
        return ctx.call(Permute, grad, tuple(inv)), None


class Transpose(Op):
    """out = x with dims d0 and d1 swapped (a view)          grad_x = grad with them swapped back"""

    node_name = "TransposeBackward0"
    is_view = True

    @staticmethod
    def forward(ctx: Any, x: Any, d0: int, d1: int) -> Any:
        ctx.d = (d0, d1)
        return x.swapaxes(d0, d1) if x.ndim else x.reshape(())

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        return ctx.call(Transpose, grad, *ctx.d), None, None


class Contiguous(Op):
    """out = C-contiguous copy of x          grad_x = grad"""

    node_name = "CloneBackward0"

    @staticmethod
    def forward(ctx: Any, x: Any) -> Any:
        out = _kernels.dense_copy(x)  # (a transposed or permuted view: by tiles)
        return out if out is not None else x.copy()

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        return grad


swapdims = transpose


moveaxis = movedim


# ---------------------------------------------------------------------------------------------
# basic slicing: narrow / select and their adjoint (embed into zeros)


def narrow(input: Any, dim: int, start: Any, length: int) -> Any:
    """View of ``length`` elements of dim ``dim`` from ``start``."""
    nd = input._data.ndim
    if nd == 0:
        raise RuntimeError("narrow() cannot be applied to a 0-dim tensor.")
    d = _wrap(dim, nd)
    n = input._data.shape[d]
    start, length = _int(start, "start"), _int(length, "length")
    if not -n <= start <= n:
        raise IndexError(
            f"start out of range (expected to be in range of [{-n}, {n}], but got {start})"
        )
    if start < 0:
        start += n
    if length < 0:
        raise RuntimeError(f"narrow(): length must be non-negative (got {length}).")
    if start + length > n:
        raise RuntimeError(
            f"start ({start}) + length ({length}) exceeds dimension size ({n}) "
            f"(narrow of dim {d} of a tensor of shape {_lst(input._data.shape)})."
        )
    return Narrow.apply(input, (slice(None),) * d + (slice(start, start + length),))


def select(input: Any, dim: int, index: Any) -> Any:
    """View of ``input`` at ``index`` of dim ``dim`` (that dim is removed)."""
    nd = input._data.ndim
    if nd == 0:
        raise IndexError("select() cannot be applied to a 0-dim tensor.")
    d = _wrap(dim, nd)
    n = input._data.shape[d]
    i = _int(index, "index")
    if not -n <= i < n:
        raise IndexError(
            f"select(): index {i} out of range for tensor of size {_lst(input._data.shape)} at "
            f"dimension {d}"
        )
    return Select.apply(input, (slice(None),) * d + (i % n, Ellipsis))


class _Sub(Op):
    """out = x[idx] for a tuple of slices/ints (a view)          grad_x = zeros with grad at idx"""

    node_name = "SliceBackward0"
    is_view = True

    @staticmethod
    def forward(ctx: Any, x: Any, idx: tuple) -> Any:
        ctx.shape = x.shape
        ctx.idx = idx
        return x[idx]

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        return ctx.call(_Embed, grad, ctx.shape, ctx.idx), None


class Narrow(_Sub):
    """out = x[..., start:start+length, ...] (a view)          grad_x = grad embedded in zeros"""

    node_name = "SliceBackward0"


class Select(_Sub):
    """out = x[..., index, ...] (a view)          grad_x = grad embedded in zeros"""

    node_name = "SelectBackward0"


class _Embed(Op):
    """out = zeros(shape) with out[idx] = g          grad_g = grad[idx]"""

    node_name = "SliceBackwardBackward0"

    @staticmethod
    def forward(ctx: Any, g: Any, shape: tuple, idx: tuple) -> Any:
        ctx.idx = idx
        out = ctx.xp.zeros(shape, g.dtype)
        out[idx] = g
        return out

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        return ctx.call(_Sub, grad, ctx.idx), None, None


# ---------------------------------------------------------------------------------------------
# sliding windows and strided views


def unfold(input: Any, dimension: int, size: int, step: int) -> Any:
    """View of all windows of ``size`` along ``dimension`` every ``step`` (new last dim)."""
    x = input
    nd = x._data.ndim
    d = _wrap(dimension, nd)
    size, step = _int(size, "size"), _int(step, "step")
    n = x._data.shape[d] if nd else 1
    if size < 0:
        raise RuntimeError(f"size is {size} but must be >= 0")
    if size > n:
        raise RuntimeError(
            f"maximum size for tensor at dimension {d} is {n} but size is {size} (unfold of a "
            f"tensor of shape {_lst(x._data.shape)})"
        )
    if step <= 0:
        raise RuntimeError(f"step is {step} but must be > 0")
    if nd == 0:
        return Unfold.apply(reshape(x, (1,)), 0, size, step).reshape(size)
    return Unfold.apply(x, d, size, step)


def as_strided(input: Any, size: Any, stride: Any, storage_offset: int | None = None) -> Any:
    """View of the input's memory with the given sizes, strides (in elements) and offset."""
    x = input
    size = _shape_arg((size,))
    stride = _shape_arg((stride,))
    if len(size) != len(stride):
        raise RuntimeError(
            f"mismatch in length of strides and shape: size {list(size)} has {len(size)} dims, "
            f"stride {list(stride)} has {len(stride)}"
        )
    if any(s < 0 for s in size) or any(s < 0 for s in stride):
        raise RuntimeError(
            f"as_strided: negative sizes or strides are not supported (size {list(size)}, "
            f"stride {list(stride)})"
        )
    own = x.storage_offset()
    off = own if storage_offset is None else _int(storage_offset, "storage_offset")
    delta = off - own
    ext = _backend.storage_extent(x._data)
    if ext is not None:
        before, avail = ext
        need = delta + sum((n - 1) * s for n, s in zip(size, stride)) + 1
        if math.prod(size) and (delta < -before or need > avail):
            raise RuntimeError(
                f"setStorage: sizes {list(size)}, strides {list(stride)}, storage offset {off}, "
                f"and itemsize {x._data.itemsize} requiring a storage size of "
                f"{(own + need) * x._data.itemsize} are out of bounds for storage of size "
                f"{(before + avail) * x._data.itemsize}"
            )
    return AsStrided.apply(x, size, stride, delta)


class Unfold(Op):
    """out[..., w, ..., j] = x[..., w * step + j, ...] (a view: windows of ``size`` along dim)
    grad_x = the window gradients added back at their positions"""

    node_name = "UnfoldBackward0"
    is_view = True

    @staticmethod
    def forward(ctx: Any, x: Any, dim: int, size: int, step: int) -> Any:
        ctx.shape, ctx.args = x.shape, (dim, size, step)
        n = x.shape[dim]
        nw = (n - size) // step + 1
        st = x.strides
        shape = x.shape[:dim] + (nw,) + x.shape[dim + 1 :] + (size,)
        strides = st[:dim] + (st[dim] * step,) + st[dim + 1 :] + (st[dim],)
        return ctx.xp.lib.stride_tricks.as_strided(x, shape, strides)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        return ctx.call(_UnfoldBackward, grad, ctx.shape, *ctx.args), None, None, None


class _UnfoldBackward(Op):
    """out = zeros(shape) with each window of g added at its position          grad_g = unfold"""

    node_name = "UnfoldBackwardBackward0"

    @staticmethod
    def forward(ctx: Any, g: Any, shape: tuple, dim: int, size: int, step: int) -> Any:
        xp = ctx.xp
        ctx.args = (dim, size, step)
        out = xp.zeros(shape, g.dtype)
        nw = g.shape[dim]
        pre = (slice(None),) * dim
        if size <= nw:  # loop over the window offsets
            for j in range(size):
                out[pre + (slice(j, j + step * (nw - 1) + 1, step),)] += g[..., j]
        else:  # loop over the windows
            for w in range(nw):
                win = xp.moveaxis(g[pre + (w,)], -1, dim)
                out[pre + (slice(w * step, w * step + size),)] += win
        return out

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        return ctx.call(Unfold, grad, *ctx.args), None, None, None, None


class AsStrided(Op):
    """out = the view of x's memory with sizes/strides/offset
    grad_x = grad scattered-added to the memory positions it reads, gathered at x's positions"""

    node_name = "AsStridedBackward0"
    is_view = True

    @staticmethod
    def forward(ctx: Any, x: Any, size: tuple, stride: tuple, delta: int) -> Any:
        xp = ctx.xp
        st = xp.lib.stride_tricks
        item = x.itemsize
        ctx.meta = (x.shape, tuple(s // item for s in x.strides), size, stride, delta)
        base = x
        if delta:
            sgn = 1 if delta > 0 else -1
            base = st.as_strided(x, (abs(delta) + 1,), (sgn * item,))[abs(delta) :]
        return st.as_strided(base, size, tuple(s * item for s in stride))

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        xshape, xstride, size, stride, delta = ctx.meta
        if 0 in size:  # an empty view reads nothing: fresh zeros, no graph (as PyTorch)
            return ctx.xp.zeros(xshape, grad.dtype), None, None, None
        xidx = _mem_index(np, xshape, xstride, 0)
        if np.unique(xidx).size != xidx.size:
            raise NotImplementedError(
                f"as_strided backward: the input (shape {list(xshape)}, stride {list(xstride)}) "
                "has overlapping memory (e.g. from expand); call .contiguous() on it first"
            )
        oidx = _mem_index(np, size, stride, delta)
        lo = min(int(xidx.min(initial=0)), int(oidx.min(initial=0)))
        hi = max(int(xidx.max(initial=0)), int(oidx.max(initial=0))) + 1
        xi, oi = xidx - lo, oidx - lo
        data = grad._data if isinstance(grad, TensorBase) else grad
        if not _backend.is_cpu_array(data):  # move the index arrays to the gradient's device
            dev = _backend.device_of(data)
            xi, oi = _backend.to_device(xi, dev), _backend.to_device(oi, dev)
        mem = ctx.call(_ScatterAdd, grad, oi, hi - lo)
        return ctx.call(_Gather, mem, xi), None, None, None


class _ScatterAdd(Op):
    """out[m] = sum of g where idx == m (length L)          grad_g = grad[idx]"""

    node_name = "AsStridedScatterBackward0"

    @staticmethod
    def forward(ctx: Any, g: Any, idx: Any, length: int) -> Any:
        ctx.idx, ctx.length = idx, length
        out = ctx.xp.bincount(idx.reshape(-1), weights=g.reshape(-1), minlength=length)
        return out.astype(g.dtype)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        return ctx.call(_Gather, grad, ctx.idx), None, None


class _Gather(Op):
    """out = m[idx] (m 1-D)          grad_m = bincount of grad at idx"""

    node_name = "AsStridedGatherBackward0"

    @staticmethod
    def forward(ctx: Any, m: Any, idx: Any) -> Any:
        ctx.idx, ctx.length = idx, m.shape[0]
        return m[idx]

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        return ctx.call(_ScatterAdd, grad, ctx.idx, ctx.length), None


def _mem_index(xp: Any, shape: tuple, stride: tuple, offset: int) -> Any:
    idx = xp.full(tuple(shape), offset, dtype=np.int64)
    for k, (n, s) in enumerate(zip(shape, stride)):
        sh = [1] * len(shape)
        sh[k] = n
        idx = idx + (xp.arange(n, dtype=np.int64) * s).reshape(sh)
    return idx
