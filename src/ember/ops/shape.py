"""Shape and view ops: reshape/view, squeeze/unsqueeze, permute/transpose, expand, cat/stack,
split/chunk/unbind, flip/roll, repeat, unfold, as_strided ...

View ops (``is_view = True``) return NumPy views of their input (no copy) and share its version
counter, as PyTorch's views share storage. Every backward is written with ``ctx.call`` of another
op (or array methods that Tensor also has), so all of them are twice differentiable.
"""

from __future__ import annotations

import math
import operator
from typing import Any

import numpy as np

from .. import _backend, _dtype
from .._tensor_base import TensorBase
from ..autograd.function import Op
from . import elementwise as _ew

__all__ = [
    "reshape",
    "view",
    "view_as",
    "flatten",
    "unflatten",
    "ravel",
    "squeeze",
    "unsqueeze",
    "expand",
    "expand_as",
    "broadcast_to",
    "broadcast_tensors",
    "broadcast_shapes",
    "repeat",
    "repeat_interleave",
    "tile",
    "permute",
    "movedim",
    "moveaxis",
    "transpose",
    "swapaxes",
    "swapdims",
    "contiguous",
    "cat",
    "concat",
    "concatenate",
    "stack",
    "hstack",
    "vstack",
    "dstack",
    "column_stack",
    "row_stack",
    "split",
    "tensor_split",
    "hsplit",
    "vsplit",
    "dsplit",
    "chunk",
    "unbind",
    "flip",
    "fliplr",
    "flipud",
    "roll",
    "narrow",
    "select",
    "unfold",
    "rot90",
    "as_strided",
    "atleast_1d",
    "atleast_2d",
    "atleast_3d",
]


# ---------------------------------------------------------------------------------------------
# argument helpers


def _is_t(x: Any) -> bool:
    return hasattr(x, "_data") and hasattr(x, "grad_fn")


def _make(arr: Any) -> Any:
    return TensorBase._make(arr)


def _int(v: Any, what: str = "size", pos: int = 0) -> int:
    if _is_t(v):
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
        if isinstance(s0, tuple | list):
            size = tuple(s0)
        elif _is_t(s0) and s0._data.ndim == 1:
            size = tuple(int(v) for v in s0._data.tolist())
    return tuple(_int(s, "size", i) for i, s in enumerate(size))


def _dims_arg(dims: tuple, what: str = "dims") -> tuple[int, ...]:
    if len(dims) == 1 and isinstance(dims[0], tuple | list):
        dims = tuple(dims[0])
    return tuple(_int(d, what, i) for i, d in enumerate(dims))


def _wrap(dim: Any, ndim: int, scalar_ok: bool = True) -> int:
    """Wrap a negative dim; 0-d tensors accept dims 0 and -1 (as in PyTorch) if ``scalar_ok``."""
    dim = _int(dim, "dim")
    n = max(ndim, 1) if scalar_ok else ndim
    if not -n <= dim < n:
        raise IndexError(
            f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim})"
        )
    return dim % n


def _c_order(a: Any) -> Any:
    """``a`` in C order (a copy only when it is not): PyTorch's cat/stack/roll return
    contiguous tensors whatever their inputs' layout; NumPy's keep the inputs' order."""
    return a if a.flags.c_contiguous else a.copy()


def _call(ctx: Any, op: Any, *args: Any) -> Any:
    """``ctx.call(op, *args)``, giving the fresh node of the raw path its ``xp`` (which
    ``Node.call`` does not set yet) so that ``op.forward`` can use ``ctx.xp``."""
    if ctx._tensor_mode:
        return op.apply(*args)
    node = op._node_cls()
    node.xp = ctx.xp
    node.needs_input_grad = (False,) * len(args)
    return op.forward(node, *args)


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
    if type(arr) is np.ndarray:
        try:
            arr.reshape(shape, copy=False)
        except ValueError:
            return False
        return True
    if arr.flags.c_contiguous or arr.size <= 1:
        return True
    out = arr.reshape(shape)
    from .._backend import xp_of

    return bool(xp_of(arr).may_share_memory(out, arr))


def _promote_all(tensors: list, name: str) -> list:
    """Cast every tensor to the common dtype (``torch.cat``/``stack`` promote across inputs)."""
    dts = {t._data.dtype for t in tensors}
    if len(dts) == 1:
        return tensors
    rt = None
    for t in tensors:
        d = t.dtype
        rt = d if rt is None else _dtype.promote_types(rt, d)
    from .elementwise import cast

    return [cast(t, rt) for t in tensors]


def _tensor_list(tensors: Any, name: str) -> list:
    if _is_t(tensors):
        raise TypeError(
            f"{name}(): argument 'tensors' must be a sequence of Tensors, not a Tensor; "
            f"wrap it in a list: {name}([t, ...])"
        )
    out = list(tensors)
    for i, t in enumerate(out):
        if not _is_t(t):
            raise TypeError(
                f"{name}(): expected Tensor as element {i} in argument 0, but got "
                f"{type(t).__name__}"
            )
    return out


# ---------------------------------------------------------------------------------------------
# reshaping views


class Reshape(Op):
    """out = x reshaped (a view)          grad_x = grad reshaped back"""

    node_name = "ViewBackward0"
    is_view = True

    @staticmethod
    def forward(ctx: Any, x: Any, shape: tuple) -> Any:
        ctx.shape = x.shape
        return x.reshape(shape)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        return grad.reshape(ctx.shape), None


class ReshapeCopy(Reshape):
    """out = x reshaped (a copy: the layout does not allow a view)          grad_x = grad reshaped"""

    node_name = "UnsafeViewBackward0"
    is_view = False


class Squeeze(Reshape):
    """out = x without some size-1 dims          grad_x = grad reshaped back"""

    node_name = "SqueezeBackward0"


class SqueezeDim(Reshape):
    """out = x without one size-1 dim          grad_x = grad reshaped back"""

    node_name = "SqueezeBackward1"


class SqueezeDims(Reshape):
    """out = x without some size-1 dims          grad_x = grad reshaped back"""

    node_name = "SqueezeBackward2"


class Unsqueeze(Reshape):
    """out = x with a new size-1 dim          grad_x = grad reshaped back"""

    node_name = "UnsqueezeBackward0"


def reshape(x: Any, *size: Any, shape: Any = None) -> Any:
    """Tensor with the same data in ``shape`` (a view when the layout allows, else a copy)."""
    shape = _infer_shape(_shape_arg(size if shape is None else (shape,)), x._data.size)
    if _can_view(x._data, shape):
        return Reshape.apply(x, shape)
    return ReshapeCopy.apply(x, shape)


def view(x: Any, *shape: Any, size: Any = None) -> Any:
    """View of ``x`` with another shape (no copy; an error when strides do not allow it).

    ``x.view(dtype)`` reinterprets the bytes as another dtype of the same size.
    """
    if size is not None:
        shape = (size,)
    if len(shape) == 1 and not isinstance(shape[0], int | tuple | list) and not _is_t(shape[0]):
        return _view_dtype(x, shape[0])
    shape = _infer_shape(_shape_arg(shape), x._data.size)
    if not _can_view(x._data, shape):
        st = [s // x._data.itemsize for s in x._data.strides]
        raise RuntimeError(
            "view size is not compatible with input tensor's size and stride (at least one "
            f"dimension spans across two contiguous subspaces): input shape {_lst(x._data.shape)} "
            f"with stride {st} cannot be viewed as {list(shape)}. Use .reshape(...) instead."
        )
    return Reshape.apply(x, shape)


def _view_dtype(x: Any, dt: Any) -> Any:
    d = _dtype.to_dtype(dt)
    if d.np.itemsize != x._data.itemsize:
        raise RuntimeError(
            f"view(dtype): ember only reinterprets between dtypes of the same size, got "
            f"{x.dtype} ({x._data.itemsize} bytes) -> {d} ({d.np.itemsize} bytes)"
        )
    if x._data.dtype == d.np:
        return Reshape.apply(x, x._data.shape)
    if x.requires_grad:
        raise RuntimeError(
            f"view(dtype) of a tensor that requires grad is not differentiable ({x.dtype} -> "
            f"{d}); call .detach() first"
        )
    out = _make(x._data.view(d.np))
    out._version = x._version_counter()
    out._base = x if x._base is None else x._base
    return out


def view_as(x: Any, other: Any) -> Any:
    """``x.view(other.shape)``."""
    return view(x, tuple(other._data.shape))


def flatten(x: Any, start_dim: int = 0, end_dim: int = -1) -> Any:
    """Merge dims ``start_dim..end_dim`` into one (a 0-d tensor becomes 1-d)."""
    nd = x._data.ndim
    s, e = _wrap(start_dim, nd), _wrap(end_dim, nd)
    if s > e:
        raise RuntimeError(
            f"flatten() has invalid args: start_dim cannot come after end_dim (got start_dim="
            f"{start_dim}, end_dim={end_dim} for a {nd}-d tensor)"
        )
    if nd == 0:
        return reshape(x, (1,))
    if s == e:
        return x
    shp = x._data.shape
    return reshape(x, shp[:s] + (math.prod(shp[s : e + 1]),) + shp[e + 1 :])


def unflatten(x: Any, dim: int, sizes: Any) -> Any:
    """Split dim ``dim`` into ``sizes`` (one may be -1)."""
    shp = x._data.shape
    d = _wrap(dim, x._data.ndim, scalar_ok=False)
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
    return reshape(x, shp[:d] + sizes + shp[d + 1 :])


def ravel(x: Any) -> Any:
    """Flattened 1-D tensor (a copy only when needed)."""
    return reshape(x, (-1,))


def squeeze(x: Any, dim: Any = None) -> Any:
    """Remove size-1 dims (all, one ``dim``, or a tuple of dims; others are left alone)."""
    shp = x._data.shape
    nd = len(shp)
    if dim is None:
        new = tuple(s for s in shp if s != 1)
        return Squeeze.apply(x, new)
    if isinstance(dim, tuple | list):
        dims = {_wrap(d, nd) for d in dim}
        cls: Any = SqueezeDims
    else:
        dims = {_wrap(dim, nd)}
        cls = SqueezeDim
    new = tuple(s for i, s in enumerate(shp) if not (i in dims and s == 1))
    return cls.apply(x, new)


def unsqueeze(x: Any, dim: int) -> Any:
    """Insert a size-1 dim at ``dim`` (in ``[-ndim-1, ndim]``)."""
    shp = x._data.shape
    nd = len(shp)
    d = _int(dim, "dim")
    if not -nd - 1 <= d <= nd:
        raise IndexError(
            f"Dimension out of range (expected to be in range of [{-nd - 1}, {nd}], but got {d})"
        )
    d %= nd + 1
    return Unsqueeze.apply(x, shp[:d] + (1,) + shp[d:])


# ---------------------------------------------------------------------------------------------
# broadcasting


class Expand(Op):
    """out = x broadcast to a larger shape (a view)          grad_x = grad summed back (engine)"""

    node_name = "ExpandBackward0"
    is_view = True

    @staticmethod
    def forward(ctx: Any, x: Any, shape: tuple) -> Any:
        out = ctx.xp.broadcast_to(x, shape)
        if isinstance(out, np.ndarray) and x.flags.writeable:
            out.flags.writeable = True  # NumPy's is read-only; PyTorch's writes through to x
        return out

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


def expand(x: Any, *sizes: Any) -> Any:
    """Broadcast view of ``x`` to ``sizes`` (-1 keeps a dim; new dims go in front)."""
    shape = _expand_shape(x._data.shape, _shape_arg(sizes))
    return Expand.apply(x, shape)


def expand_as(x: Any, other: Any) -> Any:
    """``x.expand(other.shape)``."""
    return expand(x, tuple(other._data.shape))


def broadcast_to(x: Any, size: Any) -> Any:
    """``x.expand(size)``."""
    shape = _expand_shape(x._data.shape, _shape_arg((size,)), "broadcast_to")
    return Expand.apply(x, shape)


def broadcast_to_method(x: Any, *size: Any, **kwargs: Any) -> Any:
    """``Tensor.broadcast_to``: the sizes as varargs (``x.broadcast_to(2, 3, 4)``), one
    sequence, or ``size=``, as PyTorch's method accepts (the function takes one size only)."""
    if kwargs:
        if size or set(kwargs) != {"size"}:
            raise TypeError(
                f"broadcast_to() got unexpected arguments {sorted(kwargs)}; pass the sizes as "
                "x.broadcast_to(2, 3) or x.broadcast_to(size=(2, 3))"
            )
        size = (kwargs["size"],)
    shape = _expand_shape(x._data.shape, _shape_arg(size), "broadcast_to")
    return Expand.apply(x, shape)


def broadcast_shapes(*shapes: Any) -> Any:
    """The shape that tensors of ``shapes`` broadcast to (a ``Size``)."""
    from .._size import Size

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
    if len(tensors) == 1 and isinstance(tensors[0], tuple | list):
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


# ---------------------------------------------------------------------------------------------
# permuting dims


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
        return _call(ctx, Permute, grad, tuple(inv)), None


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
        return _call(ctx, Transpose, grad, *ctx.d), None, None


def permute(x: Any, *order: Any, dims: Any = None) -> Any:
    """View of ``x`` with dims in the order ``dims``."""
    dims = _dims_arg(order if dims is None else (dims,))
    nd = x._data.ndim
    if len(dims) != nd:
        raise RuntimeError(
            f"permute(): number of dims don't match in permute: the tensor has {nd} dims (shape "
            f"{_lst(x._data.shape)}) but {len(dims)} were given ({list(dims)})"
        )
    w = tuple(_wrap(d, nd) for d in dims)
    if len(set(w)) != len(w):
        raise RuntimeError(f"permute(): duplicate dims are not allowed (got {list(dims)})")
    if nd == 0:
        return Permute.apply(x, ())
    return Permute.apply(x, w)


def transpose(x: Any, dim0: int, dim1: int) -> Any:
    """View of ``x`` with ``dim0`` and ``dim1`` swapped."""
    nd = x._data.ndim
    return Transpose.apply(x, _wrap(dim0, nd), _wrap(dim1, nd))


swapaxes = transpose
swapdims = transpose


def movedim(x: Any, source: Any, destination: Any) -> Any:
    """Move dims ``source`` to positions ``destination`` (others keep their order)."""
    nd = x._data.ndim
    src = (source,) if not isinstance(source, tuple | list) else tuple(source)
    dst = (destination,) if not isinstance(destination, tuple | list) else tuple(destination)
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
        return Permute.apply(x, ())
    order: list[int | None] = [None] * nd
    for a, b in zip(s, t):
        order[b] = a
    rest = iter(d for d in range(nd) if d not in s)
    perm = tuple(o if o is not None else next(rest) for o in order)
    return Permute.apply(x, perm)


moveaxis = movedim


class Contiguous(Op):
    """out = C-contiguous copy of x          grad_x = grad"""

    node_name = "CloneBackward0"

    @staticmethod
    def forward(ctx: Any, x: Any) -> Any:
        return x.copy()

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        return grad


def contiguous(x: Any, memory_format: Any = None) -> Any:
    """``x`` itself when C-contiguous, else a C-contiguous copy."""
    if x._data.flags.c_contiguous:
        return x
    return Contiguous.apply(x)


# ---------------------------------------------------------------------------------------------
# basic slicing: narrow / select and their adjoint (embed into zeros)


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
        return _call(ctx, _Embed, grad, ctx.shape, ctx.idx), None


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
        return _call(ctx, _Sub, grad, ctx.idx), None, None


def narrow(x: Any, dim: int, start: Any, length: int) -> Any:
    """View of ``length`` elements of dim ``dim`` from ``start``."""
    nd = x._data.ndim
    if nd == 0:
        raise RuntimeError("narrow() cannot be applied to a 0-dim tensor.")
    d = _wrap(dim, nd)
    n = x._data.shape[d]
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
            f"(narrow of dim {d} of a tensor of shape {_lst(x._data.shape)})."
        )
    return Narrow.apply(x, (slice(None),) * d + (slice(start, start + length),))


def select(x: Any, dim: int, index: Any) -> Any:
    """View of ``x`` at ``index`` of dim ``dim`` (that dim is removed)."""
    nd = x._data.ndim
    if nd == 0:
        raise IndexError("select() cannot be applied to a 0-dim tensor.")
    d = _wrap(dim, nd)
    n = x._data.shape[d]
    i = _int(index, "index")
    if not -n <= i < n:
        raise IndexError(
            f"select(): index {i} out of range for tensor of size {_lst(x._data.shape)} at "
            f"dimension {d}"
        )
    return Select.apply(x, (slice(None),) * d + (i % n, Ellipsis))


# ---------------------------------------------------------------------------------------------
# joining


class Cat(Op):
    """out = concatenate(xs, dim)          grad_xs[i] = grad[..., offset_i : offset_i + n_i, ...]"""

    node_name = "CatBackward0"

    @staticmethod
    def forward(ctx: Any, *args: Any) -> Any:
        xs, dim = args[:-1], args[-1]
        used = [x for x in xs if not (x.ndim == 1 and x.shape[0] == 0)] or list(xs[:1])
        ctx.dim = dim
        ctx.sizes = [None if (x.ndim == 1 and x.shape[0] == 0 and len(used) and x is not used[0])
                     else x.shape[dim] for x in xs]
        if len(used) > 1:  # (C order, as PyTorch's; NumPy keeps the inputs' order)
            return _c_order(ctx.xp.concatenate(used, axis=dim))
        return used[0].copy()

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        d = ctx.dim
        out = []
        off = 0
        for k, n in enumerate(ctx.sizes):
            if not ctx.needs_input_grad[k]:
                if n is not None:
                    off += n
                out.append(None)
                continue
            if n is None:  # a skipped empty 1-D tensor: its gradient is empty too
                out.append(_call(ctx, _Sub, grad.reshape(-1), (slice(0, 0),)))
                continue
            out.append(_call(ctx, _Sub, grad, (slice(None),) * d + (slice(off, off + n),)))
            off += n
        return (*out, None)


def cat(tensors: Any, dim: int = 0, *, out: Any = None) -> Any:
    """Concatenate tensors along an existing dim (dtypes promoted; empty 1-D tensors skipped)."""
    ts = _tensor_list(tensors, "cat")
    if not ts:
        raise ValueError("torch.cat(): expected a non-empty list of Tensors")
    for i, t in enumerate(ts):
        if t._data.ndim == 0:
            raise RuntimeError(
                f"zero-dimensional tensor (at position {i}) cannot be concatenated; use stack(), "
                "or unsqueeze it first (t.reshape(1))"
            )
    skip = [t._data.ndim == 1 and t._data.shape[0] == 0 for t in ts]
    used = [t for t, s in zip(ts, skip) if not s]
    ref = used[0] if used else ts[0]
    nd = ref._data.ndim
    d = _wrap(dim, nd)
    shapes = [_lst(t._data.shape) for t in ts]
    for i, t in enumerate(ts):
        if skip[i] and used:
            continue
        if t._data.ndim != nd:
            raise RuntimeError(
                f"Tensors must have same number of dimensions: got {nd} and {t._data.ndim} "
                f"(torch.cat of shapes {shapes})"
            )
        for a in range(nd):
            if a != d and t._data.shape[a] != ref._data.shape[a]:
                raise RuntimeError(
                    f"Sizes of tensors must match except in dimension {d}. Expected size "
                    f"{ref._data.shape[a]} but got size {t._data.shape[a]} for tensor number {i} "
                    f"in the list (torch.cat of shapes {shapes} along dim {d})."
                )
    ts = _promote_all(ts, "cat")
    res = Cat.apply(*ts, d)
    if out is not None:
        out.copy_(res)
        return out
    return res


concat = cat
concatenate = cat


class Stack(Op):
    """out = stack(xs, dim)          grad_xs[i] = grad.select(dim, i)"""

    node_name = "StackBackward0"

    @staticmethod
    def forward(ctx: Any, *args: Any) -> Any:
        xs, dim = args[:-1], args[-1]
        ctx.dim = dim
        ctx.n = len(xs)
        return _c_order(ctx.xp.stack(xs, axis=dim))  # (C order, as PyTorch's)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        pre = (slice(None),) * ctx.dim
        out = [_call(ctx, _Sub, grad, pre + (i, Ellipsis)) if ctx.needs_input_grad[i] else None
               for i in range(ctx.n)]
        return (*out, None)


def stack(tensors: Any, dim: int = 0, *, out: Any = None) -> Any:
    """Stack equally shaped tensors along a new dim ``dim``."""
    ts = _tensor_list(tensors, "stack")
    if not ts:
        raise RuntimeError("stack expects a non-empty TensorList")
    s0 = ts[0]._data.shape
    for i, t in enumerate(ts):
        if t._data.shape != s0:
            raise RuntimeError(
                f"stack expects each tensor to be equal size, but got {_lst(s0)} at entry 0 and "
                f"{_lst(t._data.shape)} at entry {i}"
            )
    nd = len(s0) + 1
    d = _int(dim, "dim")
    if not -nd <= d < nd:
        raise IndexError(
            f"Dimension out of range (expected to be in range of [{-nd}, {nd - 1}], but got {d})"
        )
    ts = _promote_all(ts, "stack")
    res = Stack.apply(*ts, d % nd)
    if out is not None:
        out.copy_(res)
        return out
    return res


def _seq(tensors: tuple) -> tuple:
    if len(tensors) == 1 and isinstance(tensors[0], tuple | list):
        return tuple(tensors[0])
    return tensors


def atleast_1d(*tensors: Any) -> Any:
    """Tensors with at least 1 dim (0-d become shape (1,))."""
    ts = _seq(tensors)
    res = tuple(reshape(t, (1,)) if t._data.ndim == 0 else t for t in ts)
    return res[0] if len(tensors) == 1 and _is_t(tensors[0]) else res


def atleast_2d(*tensors: Any) -> Any:
    """Tensors with at least 2 dims (0-d -> (1, 1), (n,) -> (1, n))."""
    ts = _seq(tensors)
    res = tuple(reshape(t, (1,) * (2 - t._data.ndim) + t._data.shape) if t._data.ndim < 2 else t
                for t in ts)
    return res[0] if len(tensors) == 1 and _is_t(tensors[0]) else res


def atleast_3d(*tensors: Any) -> Any:
    """Tensors with at least 3 dims (0-d -> (1,1,1), (n,) -> (1,n,1), (m,n) -> (m,n,1))."""
    ts = _seq(tensors)
    res = []
    for t in ts:
        s = t._data.shape
        if len(s) == 0:
            res.append(reshape(t, (1, 1, 1)))
        elif len(s) == 1:
            res.append(reshape(t, (1, s[0], 1)))
        elif len(s) == 2:
            res.append(reshape(t, s + (1,)))
        else:
            res.append(t)
    out = tuple(res)
    return out[0] if len(tensors) == 1 and _is_t(tensors[0]) else out


def hstack(tensors: Any, *, out: Any = None) -> Any:
    """Concatenate column-wise (dim 0 for 1-D tensors, else dim 1)."""
    ts = list(atleast_1d(tuple(_tensor_list(tensors, "hstack"))))
    if not ts:
        raise RuntimeError("hstack expects a non-empty TensorList")
    return cat(ts, 0 if ts[0]._data.ndim == 1 else 1, out=out)


def vstack(tensors: Any, *, out: Any = None) -> Any:
    """Concatenate row-wise after ``atleast_2d``."""
    ts = list(atleast_2d(tuple(_tensor_list(tensors, "vstack"))))
    if not ts:
        raise RuntimeError("vstack expects a non-empty TensorList")
    return cat(ts, 0, out=out)


row_stack = vstack


def dstack(tensors: Any, *, out: Any = None) -> Any:
    """Concatenate depth-wise (dim 2) after ``atleast_3d``."""
    ts = list(atleast_3d(tuple(_tensor_list(tensors, "dstack"))))
    if not ts:
        raise RuntimeError("dstack expects a non-empty TensorList")
    return cat(ts, 2, out=out)


def column_stack(tensors: Any, *, out: Any = None) -> Any:
    """Stack 1-D tensors as columns (0-d/1-d become (n, 1)), then concatenate along dim 1."""
    ts = _tensor_list(tensors, "column_stack")
    if not ts:
        raise RuntimeError("column_stack expects a non-empty TensorList")
    cols = [reshape(t, (t._data.size, 1)) if t._data.ndim <= 1 else t for t in ts]
    return cat(cols, 1, out=out)


# ---------------------------------------------------------------------------------------------
# splitting (multi-output views)


class Split(Op):
    """outs[k] = x[..., a_k:b_k, ...] (views)
    grad_x = concatenate(grads) when the pieces tile x, else the sum of each embedded in zeros"""

    node_name = "SplitWithSizesBackward0"
    is_view = True

    @staticmethod
    def forward(ctx: Any, x: Any, dim: int, bounds: tuple) -> Any:
        ctx.dim, ctx.bounds, ctx.shape = dim, bounds, x.shape
        pre = (slice(None),) * dim
        return tuple(x[pre + (slice(a, b),)] for a, b in bounds)

    @staticmethod
    def backward(ctx: Any, *grads: Any) -> Any:
        d, bounds = ctx.dim, ctx.bounds
        tiles = bounds[0][0] == 0 and bounds[-1][1] == ctx.shape[d] and all(
            bounds[k][1] == bounds[k + 1][0] for k in range(len(bounds) - 1))
        if tiles:
            if len(grads) == 1:
                return grads[0], None, None
            return ctx.xp.concatenate(list(grads), axis=d), None, None
        pre = (slice(None),) * d
        total = None
        for g, (a, b) in zip(grads, bounds):
            if g is None or a >= b:
                continue
            e = _call(ctx, _Embed, g, ctx.shape, pre + (slice(a, b),))
            total = e if total is None else total + e
        if total is None:
            total = ctx.xp.zeros(ctx.shape, grads[0].dtype)
        return total, None, None


class SplitEqual(Split):
    """outs[k] = x[..., k*s:(k+1)*s, ...] (views)          grad_x = concatenate(grads)"""

    node_name = "SplitBackward0"


def _split_bounds(sizes: list[int]) -> tuple:
    b = []
    off = 0
    for s in sizes:
        b.append((off, off + s))
        off += s
    return tuple(b)


def split(tensor: Any, split_size_or_sections: Any, dim: int = 0) -> tuple:
    """Split into chunks of ``split_size`` (the last may be smaller) or of the listed sizes."""
    x = tensor
    nd = x._data.ndim
    if nd == 0:
        raise RuntimeError("split expects at least a 1-dimensional tensor (got a 0-d tensor)")
    d = _wrap(dim, nd)
    n = x._data.shape[d]
    s = split_size_or_sections
    if isinstance(s, tuple | list) or (_is_t(s) and s._data.ndim == 1):
        sizes = list(_shape_arg((s,)))
        if any(v < 0 for v in sizes) or sum(sizes) != n:
            raise RuntimeError(
                f"split_with_sizes expects split_sizes to sum exactly to {n} (input tensor's size "
                f"at dimension {d}), but got split_sizes={sizes}"
            )
        return Split.apply(x, d, _split_bounds(sizes))
    s = _int(s, "split_size")
    if s < 0:
        raise RuntimeError(f"split expects split_size be non-negative, but got split_size={s}")
    if s == 0 and n != 0:
        raise RuntimeError(
            f"split_size can only be 0 if dimension size is 0, but got dimension size of {n}"
        )
    k = max((n + s - 1) // s, 1) if s else 1
    sizes = [s] * (k - 1) + [n - s * (k - 1)]
    return SplitEqual.apply(x, d, _split_bounds(sizes))


def chunk(input: Any, chunks: int, dim: int = 0) -> tuple:
    """Split into ``chunks`` pieces of ``ceil(n / chunks)`` (fewer when they run out)."""
    x = input
    chunks = _int(chunks, "chunks")
    if chunks <= 0:
        raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
    nd = x._data.ndim
    if nd == 0:
        raise RuntimeError("chunk expects at least a 1-dimensional tensor")
    d = _wrap(dim, nd)
    n = x._data.shape[d]
    size = (n + chunks - 1) // chunks
    if size == 0 and n == 0:
        return SplitEqual.apply(x, d, ((0, 0),) * chunks)
    return split(x, size, d)


def tensor_split(input: Any, indices_or_sections: Any, dim: int = 0) -> tuple:
    """Split into ``sections`` nearly equal parts, or at the given ``indices``."""
    x = input
    nd = x._data.ndim
    if nd == 0:
        raise RuntimeError(
            "tensor_split expected at least a 1-dimensional tensor, but got a tensor with 0 dims"
        )
    d = _wrap(dim, nd)
    n = x._data.shape[d]
    ios = indices_or_sections
    if _is_t(ios):
        if ios._data.dtype.kind not in "iu":
            raise RuntimeError(
                f"tensor_split expected tensor_indices_or_sections to have an integral dtype, "
                f"but got {ios.dtype}"
            )
        if ios._data.ndim > 1:
            raise RuntimeError(
                "tensor_split expected tensor_indices_or_sections to be a zero-dimensional or "
                f"one-dimensional tensor, but got a tensor with {ios._data.ndim} dims"
            )
        ios = int(ios._data) if ios._data.ndim == 0 else [int(v) for v in ios._data.tolist()]
    if isinstance(ios, tuple | list):
        idx = [_int(v, "indices") for v in ios]
        bounds = []
        prev = 0
        for v in idx:
            v = min(max(v + n if v < 0 else v, 0), n)
            bounds.append((prev, max(v, prev)))
            prev = v
        bounds.append((prev, n))
        return Split.apply(x, d, tuple(bounds))
    k = _int(ios, "sections")
    if k <= 0:
        raise RuntimeError(f"number of sections must be larger than 0, got {k}")
    q, r = divmod(n, k)
    return Split.apply(x, d, _split_bounds([q + 1] * r + [q] * (k - r)))


def _dir_split(x: Any, ios: Any, d: int, name: str, need: int) -> tuple:
    if x._data.ndim < need:
        raise RuntimeError(
            f"torch.{name} requires a tensor with at least {need} dimension, but got a tensor "
            f"with {x._data.ndim} dimensions!"
        )
    if isinstance(ios, int) or (_is_t(ios) and ios._data.ndim == 0):
        k = _int(ios, "sections")
        n = x._data.shape[d]
        if k == 0 or n % k:
            raise RuntimeError(
                f"torch.{name} attempted to split along dimension {d}, but the size of the "
                f"dimension {n} is not divisible by the split_size {k}!"
            )
    return tensor_split(x, ios, d)


def hsplit(input: Any, indices_or_sections: Any) -> tuple:
    """``tensor_split`` along dim 1 (dim 0 for 1-D tensors); sections must divide evenly."""
    d = 0 if input._data.ndim == 1 else 1
    return _dir_split(input, indices_or_sections, d, "hsplit", 1)


def vsplit(input: Any, indices_or_sections: Any) -> tuple:
    """``tensor_split`` along dim 0 of a tensor with >= 2 dims."""
    return _dir_split(input, indices_or_sections, 0, "vsplit", 2)


def dsplit(input: Any, indices_or_sections: Any) -> tuple:
    """``tensor_split`` along dim 2 of a tensor with >= 3 dims."""
    return _dir_split(input, indices_or_sections, 2, "dsplit", 3)


class Unbind(Op):
    """outs[i] = x.select(dim, i) (views)          grad_x = stack(grads, dim)"""

    node_name = "UnbindBackward0"
    is_view = True

    @staticmethod
    def forward(ctx: Any, x: Any, dim: int) -> Any:
        ctx.dim = dim
        pre = (slice(None),) * dim
        return tuple(x[pre + (i, Ellipsis)] for i in range(x.shape[dim]))

    @staticmethod
    def backward(ctx: Any, *grads: Any) -> Any:
        return ctx.xp.stack(list(grads), axis=ctx.dim), None


def unbind(input: Any, dim: int = 0) -> tuple:
    """Tuple of all slices along ``dim`` (that dim removed)."""
    nd = input._data.ndim
    if nd == 0:
        raise IndexError("Dimension specified as 0 but tensor has no dimensions")
    return Unbind.apply(input, _wrap(dim, nd))


# ---------------------------------------------------------------------------------------------
# reordering elements


class Flip(Op):
    """out = x reversed along dims          grad_x = grad reversed along the same dims"""

    node_name = "FlipBackward0"

    @staticmethod
    def forward(ctx: Any, x: Any, dims: tuple) -> Any:
        ctx.dims = dims
        return _ew._layout_copy(ctx.xp.flip(x, axis=dims) if dims else x)  # (x's layout)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        return _call(ctx, Flip, grad, ctx.dims), None


def flip(input: Any, *order: Any, dims: Any = None) -> Any:
    """Reverse the order of elements along ``dims`` (a copy, as in PyTorch)."""
    ds = _dims_arg(order if dims is None else (dims,))
    nd = input._data.ndim
    w = tuple(_wrap(d, nd) for d in ds)
    if len(set(w)) != len(w):
        raise RuntimeError(
            f"dims has duplicates, original flip dims size={len(w)}, but unique flip dims "
            f"size={len(set(w))}"
        )
    if nd == 0:
        w = ()
    return Flip.apply(input, w)


def fliplr(input: Any) -> Any:
    """Flip dim 1 (left/right)."""
    if input._data.ndim < 2:
        raise RuntimeError(f"Input must be >= 2-d (got shape {_lst(input._data.shape)}).")
    return flip(input, 1)


def flipud(input: Any) -> Any:
    """Flip dim 0 (up/down)."""
    if input._data.ndim < 1:
        raise RuntimeError("Input must be >= 1-d (got a 0-d tensor).")
    return flip(input, 0)


class Roll(Op):
    """out = x rolled by shifts along dims          grad_x = grad rolled by -shifts"""

    node_name = "RollBackward0"

    @staticmethod
    def forward(ctx: Any, x: Any, shifts: Any, dims: Any) -> Any:
        ctx.shifts, ctx.dims = shifts, dims
        return _c_order(ctx.xp.roll(x, shifts, axis=dims))  # (C order, as PyTorch's)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        neg = -ctx.shifts if isinstance(ctx.shifts, int) else tuple(-s for s in ctx.shifts)
        return _call(ctx, Roll, grad, neg, ctx.dims), None, None


def roll(input: Any, shifts: Any, dims: Any = None) -> Any:
    """Shift elements circularly along ``dims`` (the flattened tensor when ``dims`` is None)."""
    sh = (_int(shifts, "shifts"),) if not isinstance(shifts, tuple | list) else tuple(
        _int(s, "shifts") for s in shifts)
    if dims is None:
        if len(sh) != 1:
            raise RuntimeError(
                f"shifts and dimensions must align. shifts: {len(sh)}, dims:0 (with dims=None, "
                "give one shift for the flattened tensor)"
            )
        return Roll.apply(input, sh[0], None)
    ds = (dims,) if not isinstance(dims, tuple | list) else tuple(dims)
    if len(sh) != len(ds):
        raise RuntimeError(f"shifts and dimensions must align. shifts: {len(sh)}, dims:{len(ds)}")
    nd = input._data.ndim
    w = tuple(_wrap(d, nd) for d in ds)
    if nd == 0:
        return Roll.apply(input, sh[0], None)
    return Roll.apply(input, sh, w)


def rot90(input: Any, k: int = 1, dims: Any = (0, 1)) -> Any:
    """Rotate by 90 degrees ``k`` times in the plane of ``dims`` (from dims[0] towards dims[1])."""
    dims = tuple(dims)
    nd = input._data.ndim
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    if nd < 2:
        raise RuntimeError(f"expected total dims >= 2, but got total dims = {nd}")
    d0, d1 = _wrap(dims[0], nd), _wrap(dims[1], nd)
    if d0 == d1:
        raise RuntimeError(
            f"expected rotation dims to be different, but got dim0 = {d0} and dim1 = {d1}"
        )
    k = _int(k, "k") % 4
    return Rot90.apply(input, k, d0, d1)


class Rot90(Op):
    """out = x rotated k quarter turns in the plane (d0 -> d1), a copy
    grad_x = grad rotated -k quarter turns"""

    @staticmethod
    def forward(ctx: Any, x: Any, k: int, d0: int, d1: int) -> Any:
        ctx.k, ctx.d0, ctx.d1 = k, d0, d1
        return ctx.xp.rot90(x, k, axes=(d0, d1)).copy()  # (a C-order copy, even for k = 0)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        return _call(ctx, Rot90, grad, (-ctx.k) % 4, ctx.d0, ctx.d1), None, None, None


# ---------------------------------------------------------------------------------------------
# repeating


class Repeat(Op):
    """out = x tiled reps times per dim
    grad_x = grad reshaped to (r0, s0, r1, s1, ...) and summed over the r axes"""

    node_name = "RepeatBackward0"

    @staticmethod
    def forward(ctx: Any, x: Any, reps: tuple) -> Any:
        ctx.shape = x.shape
        ctx.reps = reps
        return ctx.xp.tile(x, reps)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        reps = ctx.reps
        padded = (1,) * (len(reps) - len(ctx.shape)) + tuple(ctx.shape)
        split = []
        for r, s in zip(reps, padded):
            split += [r, s]
        g = grad.reshape(tuple(split)).sum(axis=tuple(range(0, 2 * len(reps), 2)))
        return g.reshape(ctx.shape), None


def repeat(input: Any, *sizes: Any) -> Any:
    """Tile ``input`` ``sizes[i]`` times along each dim (new leading dims when more sizes)."""
    reps = _shape_arg(sizes)
    nd = input._data.ndim
    if len(reps) < nd:
        raise RuntimeError(
            "Number of dimensions of repeat dims can not be smaller than number of dimensions of "
            f"tensor (repeat{list(reps)} of a tensor of shape {_lst(input._data.shape)})"
        )
    if any(r < 0 for r in reps):
        raise RuntimeError(f"Trying to create tensor with negative dimension: repeats {list(reps)}")
    return Repeat.apply(input, reps)


def tile(input: Any, dims: Any) -> Any:
    """``repeat`` with ``dims`` padded by leading ones to the tensor's ndim."""
    reps = _shape_arg((dims,)) if isinstance(dims, tuple | list) else (_int(dims, "dims"),)
    nd = input._data.ndim
    reps = (1,) * (nd - len(reps)) + reps
    return repeat(input, reps)


class RepeatInterleave(Op):
    """out = each slice of x along dim repeated r (or r[i]) times
    grad_x = grad summed over each block of repeats"""

    node_name = "ViewBackward0"  # PyTorch repeats a number of times by expand + view

    @staticmethod
    def forward(ctx: Any, x: Any, repeats: Any, dim: int, idx: Any = None) -> Any:
        ctx.shape, ctx.repeats, ctx.dim, ctx.idx = x.shape, repeats, dim, idx
        if idx is not None:  # per-slice repeats: gather with the precomputed index
            return ctx.xp.take(x, idx, axis=dim)
        return ctx.xp.repeat(x, repeats, axis=dim)

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        r, d, shp = ctx.repeats, ctx.dim, ctx.shape
        if ctx.idx is None:
            g = grad.reshape(tuple(shp[:d]) + (shp[d], r) + tuple(shp[d + 1 :]))
            return g.sum(axis=d + 1), None, None, None
        return _call(ctx, _SegmentSum, grad, r, d, ctx.idx), None, None, None


class RepeatInterleaveT(RepeatInterleave):
    """repeat_interleave with tensor repeats (same rule; PyTorch index_selects)."""

    node_name = "IndexSelectBackward0"


class _SegmentSum(Op):
    """out[i] = sum of grad's block i (block sizes r) along dim          grad_g = grad repeated r"""

    node_name = "RepeatInterleaveBackwardBackward0"

    @staticmethod
    def forward(ctx: Any, g: Any, r: Any, dim: int, idx: Any) -> Any:
        xp = ctx.xp
        ctx.r, ctx.dim, ctx.idx = r, dim, idx
        shape = g.shape[:dim] + (r.shape[0],) + g.shape[dim + 1 :]
        out = xp.zeros(shape, g.dtype)
        if g.shape[dim] == 0 or g.size == 0:
            return out
        nz = r > 0
        starts = xp.cumsum(r) - r
        out[(slice(None),) * dim + (nz,)] = xp.add.reduceat(g, starts[nz], axis=dim)
        return out

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        return _call(ctx, RepeatInterleave, grad, ctx.r, ctx.dim, ctx.idx), None, None, None


def repeat_interleave(input: Any, repeats: Any = None, dim: int | None = None, *,
                      output_size: int | None = None) -> Any:
    """Repeat each element (or slice along ``dim``) ``repeats`` times (int or 1-D tensor)."""
    from .._backend import CPU, device_of, to_device

    if repeats is None:  # repeat_interleave(repeats): indices 0..n-1 repeated
        r = input._data
        if r.ndim > 1 or r.dtype.kind not in "iu":
            raise RuntimeError(
                f"repeat_interleave: repeats must be a 0-dim or 1-dim integer tensor, got shape "
                f"{_lst(r.shape)} and dtype {input.dtype}"
            )
        rh = np.asarray(to_device(r, CPU)).reshape(-1)
        if (rh < 0).any():
            raise RuntimeError("repeats can not be negative")
        idx = np.repeat(np.arange(rh.shape[0], dtype=np.int64), rh)
        return _make(to_device(idx, device_of(r)))
    x = input
    if dim is None:
        x = reshape(x, (-1,))
        d = 0
    else:
        d = _wrap(dim, x._data.ndim)
        if x._data.ndim == 0:
            x = reshape(x, (1,))
    n = x._data.shape[d]
    if _is_t(repeats) and repeats._data.ndim == 1 and repeats._data.shape[0] != 1:
        if repeats._data.dtype.kind not in "iu":
            raise RuntimeError(f"repeat_interleave: repeats must have an integer dtype, got "
                               f"{repeats.dtype}")
        rh = np.asarray(to_device(repeats._data, CPU)).astype(np.int64)
        if rh.shape[0] != n:
            raise RuntimeError(
                f"repeats must have the same size as input along dim, but got repeats.size(0) = "
                f"{rh.shape[0]} and input.size({d}) = {n}"
            )
        if (rh < 0).any():
            raise RuntimeError("repeats can not be negative")
        dev = device_of(x._data)
        idx = np.repeat(np.arange(n, dtype=np.int64), rh)
        return RepeatInterleaveT.apply(x, to_device(rh, dev), d, to_device(idx, dev))
    if _is_t(repeats) and repeats._data.ndim > 1:
        raise RuntimeError(
            f"repeat_interleave: repeats must be 0-dim or 1-dim tensor, got shape "
            f"{_lst(repeats._data.shape)}"
        )
    r = _int(repeats, "repeats")
    if r < 0:
        raise RuntimeError(f"repeats can not be negative (got {r})")
    return (RepeatInterleaveT if _is_t(repeats) else RepeatInterleave).apply(x, r, d)


# ---------------------------------------------------------------------------------------------
# sliding windows and strided views


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
        return _call(ctx, _UnfoldBackward, grad, ctx.shape, *ctx.args), None, None, None


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
        return _call(ctx, Unfold, grad, *ctx.args), None, None, None, None


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
        data = grad._data if hasattr(grad, "_data") else grad
        if type(data) is not np.ndarray:  # move the index arrays to the gradient's device
            from .._backend import device_of, to_device

            xi, oi = to_device(xi, device_of(data)), to_device(oi, device_of(data))
        mem = _call(ctx, _ScatterAdd, grad, oi, hi - lo)
        return _call(ctx, _Gather, mem, xi), None, None, None


def _mem_index(xp: Any, shape: tuple, stride: tuple, offset: int) -> Any:
    idx = xp.full(tuple(shape), offset, dtype=np.int64)
    for k, (n, s) in enumerate(zip(shape, stride)):
        sh = [1] * len(shape)
        sh[k] = n
        idx = idx + (xp.arange(n, dtype=np.int64) * s).reshape(sh)
    return idx


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
        return _call(ctx, _Gather, grad, ctx.idx), None, None


class _Gather(Op):
    """out = m[idx] (m 1-D)          grad_m = bincount of grad at idx"""

    node_name = "AsStridedGatherBackward0"

    @staticmethod
    def forward(ctx: Any, m: Any, idx: Any) -> Any:
        ctx.idx, ctx.length = idx, m.shape[0]
        return m[idx]

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        return _call(ctx, _ScatterAdd, grad, ctx.idx, ctx.length), None


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
