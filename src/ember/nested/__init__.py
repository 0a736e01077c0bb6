"""``torch.nested``: a batch of tensors of different lengths, as one tensor.

Two layouts, as PyTorch has them:

- ``layout=torch.jagged`` (the one PyTorch recommends): components ``(n_i, *D)`` that differ in
  their first dim only, stored as one ``values()`` tensor ``(sum n_i, *D)`` and ``offsets()``
  (``lengths()`` for a non-contiguous one made by ``narrow``); ``shape`` is ``(B, j1, *D)``,
  ``j1`` standing for the ragged dim;
- the default (``torch.strided``): components of one rank whose sizes may differ in any dim;
  ``size(d)`` answers for regular dims only.

What runs: construction (``nested_tensor``, ``as_nested_tensor``, ``nested_tensor_from_jagged``,
``narrow``), ``unbind``/indexing/iteration, ``to_padded_tensor``, elementwise functions and
operators (with numbers, with a nested tensor of the same structure, or with a dense tensor
that broadcasts over the trailing dims), conversions (``to``, ``float``, ``detach``,
``clone``), ``F.linear``, ``@`` with a matrix, ``softmax``/``log_softmax``/``layer_norm`` over
the trailing dims, and ``sum``/``mean`` (all, over a trailing dim, or, for jagged, over the
ragged dim). Autograd flows through the components. Anything else (``scaled_dot_product_attention``
included) raises ``NotImplementedError`` naming the function: convert with ``to_padded_tensor``
(and a mask) or ``unbind``.
"""

from __future__ import annotations

import itertools
import weakref
from typing import Any

import ember as torch
from ember import Tensor

__all__ = ["nested_tensor", "as_nested_tensor", "nested_tensor_from_jagged", "to_padded_tensor",
           "narrow", "NestedTensor"]


class NestedInt:
    """The size of a ragged dim (``j1``): equal only to itself (tensors that share offsets)."""

    _ids = itertools.count(1)

    def __init__(self) -> None:
        self.id = next(self._ids)

    def __repr__(self) -> str:
        return f"j{self.id}"

    def __eq__(self, other: object) -> bool:
        return other is self

    def __hash__(self) -> int:
        return hash(("j", self.id))


_ragged_sizes: dict[int, tuple[Any, NestedInt]] = {}  # id(offsets) -> (weakref, its j)


def _ragged_size(offsets: Tensor) -> NestedInt:
    """One ``j`` per offsets tensor (nested tensors that share offsets share it)."""
    hit = _ragged_sizes.get(id(offsets))
    if hit is not None and hit[0]() is offsets:
        return hit[1]
    j = NestedInt()
    key = id(offsets)
    _ragged_sizes[key] = (weakref.ref(offsets, lambda _: _ragged_sizes.pop(key, None)), j)
    return j


class NestedTensor(Tensor):
    """A nested tensor (see the module docstring); made by the functions of ``torch.nested``."""

    @staticmethod
    def __new__(cls, comps: Any = None, *, values: Any = None, offsets: Any = None,
                lengths: Any = None) -> Any:
        jagged = values is not None
        if jagged:
            o = offsets.tolist()
            n = lengths.tolist() if lengths is not None else [b - a for a, b in zip(o, o[1:])]
            comps = [values.narrow(0, a, k) for a, k in zip(o, n)]
            rest = tuple(values.shape[1:])
            size = (len(comps), max(n, default=0), *rest)
            ref = values
        else:
            ref = comps[0]
            size = (len(comps), *(max(c.shape[d] for c in comps) for d in range(ref.dim())))
        out = Tensor._make_wrapper_subclass(
            cls, size, dtype=ref.dtype, device=ref.device,
            requires_grad=any(c.requires_grad for c in comps) if comps else ref.requires_grad)
        out._comps = tuple(comps)
        out._values, out._offsets, out._lengths = values, offsets, lengths
        return out

    # -- what it is ------------------------------------------------------------------------
    is_nested = property(lambda self: True, doc="True: a nested tensor.")

    @property
    def layout(self) -> Any:
        return torch.jagged if self._values is not None else torch.strided

    @property
    def _ragged_idx(self) -> int:
        return 1

    @property
    def shape(self) -> Any:
        return self.size()

    @property
    def ndim(self) -> int:
        return self.dim()

    def dim(self) -> int:
        return 1 + (self._comps[0].dim() if self._comps else self._values.dim())

    def size(self, dim: int | None = None) -> Any:
        if self._values is None:
            sizes = [len(self._comps)] + [
                self._comps[0].shape[d] if all(c.shape[d] == self._comps[0].shape[d]
                                               for c in self._comps) else None
                for d in range(self.dim() - 1)]
            if dim is None:
                raise RuntimeError("size() of a nested tensor of the strided layout: its sizes "
                                   "differ between components; ask size(d) of a regular dim, or "
                                   "use layout=torch.jagged")
            d = dim % self.dim()
            if sizes[d] is None:
                raise RuntimeError(f"Given dimension {dim} is irregular and does not have a "
                                   "size.")
            return sizes[d]
        sizes = (len(self._comps), _ragged_size(self._offsets), *self._values.shape[1:])
        full = tuple.__new__(torch.Size, sizes)
        return full if dim is None else sizes[dim % len(sizes)]

    def numel(self) -> int:
        return sum(c.numel() for c in self._comps)

    def is_contiguous(self, memory_format: Any = None) -> bool:
        return self._lengths is None

    def __len__(self) -> int:
        return len(self._comps)

    def values(self) -> Tensor:
        """The jagged layout's buffer ``(sum n_i, *D)``; the strided layout's 1-d buffer."""
        if self._values is not None:
            return self._values
        return torch.cat([c.reshape(-1) for c in self._comps])

    def offsets(self) -> Tensor:
        return self._jagged("offsets")._offsets

    def lengths(self) -> Tensor | None:
        return self._jagged("lengths")._lengths

    def _jagged(self, name: str) -> NestedTensor:
        if self._values is None:
            raise AttributeError(f"'Tensor' object has no attribute '{name}' (only nested "
                                 "tensors of the jagged layout have offsets)")
        return self

    def unbind(self, dim: int = 0) -> tuple:
        if dim != 0:
            raise RuntimeError(f"unbind(): nested tensors can only be unbound along dim 0 "
                               f"(got {dim})")
        return self._comps

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, int):
            return self._comps[key]
        raise NotImplementedError(f"indexing a nested tensor with {key!r}: ember takes an int "
                                  "(one component); unbind() or to_padded_tensor() for more")

    def __iter__(self) -> Any:
        return iter(self._comps)

    def to_padded_tensor(self, padding: float, output_size: Any = None) -> Tensor:
        return to_padded_tensor(self, padding, output_size)

    def __repr__(self) -> str:
        if self._values is not None:
            shape = "(" + ", ".join(str(s) for s in self.size()) + ")"
            return (f"NestedTensor(size={shape}, offsets={self._offsets!r}, "
                    f"contiguous={self.is_contiguous()})")
        parts = ["  " + repr(c).replace("\n", "\n  ") for c in self._comps]
        return "nested_tensor([\n" + ",\n".join(parts) + "\n])"

    __str__ = __repr__

    def numpy(self, force: bool = False) -> Any:
        raise RuntimeError(".numpy() is not supported for nested tensors; use "
                           "to_padded_tensor(...).numpy() or the components' unbind()")

    tolist = numpy

    @classmethod
    def __torch_dispatch__(cls, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        raise NotImplementedError(_unsupported(func))

    @classmethod
    def __torch_function__(cls, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = dict(kwargs or {})
        name = getattr(func, "__name__", "")
        nt = next(a for a in (*args, *kwargs.values()) if isinstance(a, NestedTensor))
        with torch._C.DisableTorchFunctionSubclass():
            if name in _POINTWISE or name in _TRAILING:
                if name in _TRAILING:
                    _check_trailing(nt, name, args, kwargs)
                return _map(nt, func, args, kwargs)
            if name in ("sum", "mean"):
                return _reduce(nt, func, args, kwargs)
            if name in ("max", "min", "amax", "amin") and len(args) == 1 and not kwargs:
                return func(nt.values())
            if name in ("size", "dim", "numel", "is_contiguous", "unbind", "values", "offsets",
                        "lengths", "to_padded_tensor", "__getitem__", "__len__", "__iter__",
                        "__repr__", "numpy", "tolist"):
                return getattr(nt, name)(*args[1:], **kwargs)
            if name == "narrow" and args and args[0] is nt:
                return _narrow_nested(nt, *args[1:], **kwargs)
        raise NotImplementedError(_unsupported(func))


def _unsupported(func: Any) -> str:
    name = getattr(func, "__name__", repr(func))
    return (f"{name}() is not supported on nested tensors in ember: convert with "
            "torch.nested.to_padded_tensor(nt, padding) (and a mask), or work on nt.unbind()")


# elementwise: the result has the input's structure
_POINTWISE = frozenset("""
abs neg negative exp expm1 log log1p log2 sin cos tan tanh sigmoid relu relu_ gelu silu mish elu
selu celu leaky_relu hardtanh softplus sqrt rsqrt square reciprocal sign floor ceil round trunc
clamp clip clamp_min clamp_max add sub subtract mul multiply div divide true_divide pow maximum
minimum eq ne lt le gt ge logical_not where clone detach contiguous to float double half bfloat16
long int bool type_as dropout nan_to_num
__add__ __radd__ __sub__ __rsub__ __mul__ __rmul__ __truediv__ __rtruediv__ __pow__ __rpow__
__neg__ __abs__ __eq__ __ne__ __lt__ __le__ __gt__ __ge__ __and__ __or__ __invert__
""".split())
# over the trailing (regular) dims only
_TRAILING = frozenset({"linear", "matmul", "__matmul__", "softmax", "log_softmax", "layer_norm"})


def _check_trailing(nt: NestedTensor, name: str, args: tuple, kwargs: dict) -> None:
    if name in ("softmax", "log_softmax"):
        dim = kwargs.get("dim", args[1] if len(args) > 1 else None)
        if dim is None or dim % nt.dim() < 2:
            raise RuntimeError(f"{name}(): nested tensors take a dim past the batch and ragged "
                               f"dims (dim >= 2 or negative), got {dim}")
    if name in ("matmul", "__matmul__") and (args[0] is not nt or any(
            isinstance(a, NestedTensor) for a in args[1:])):
        raise NotImplementedError("matmul of nested tensors: ember takes nested @ dense matrix")


def _map(nt: NestedTensor, func: Any, args: tuple, kwargs: dict) -> Any:
    """``func`` applied to the values (jagged) or to each component (strided)."""
    others = [a for a in (*args, *kwargs.values()) if isinstance(a, NestedTensor) and a is not nt]
    for o in others:
        if o.layout is not nt.layout or len(o) != len(nt) or (
                nt._values is not None and not (o._offsets is nt._offsets and
                                                o._lengths is nt._lengths)) or any(
                a.shape != b.shape for a, b in zip(o._comps, nt._comps)):
            raise RuntimeError(f"{func.__name__}(): nested tensors of different structures "
                               f"(shapes {_shape_str(nt)} and {_shape_str(o)})")
    dense = [a for a in (*args, *kwargs.values()) if isinstance(a, Tensor)
             and not isinstance(a, NestedTensor)]
    if func.__name__ not in _TRAILING:
        for d in dense:
            if d.dim() > nt.dim() - 2:
                raise RuntimeError(
                    f"{func.__name__}(): a dense tensor of shape {tuple(d.shape)} with a nested "
                    f"tensor of shape {_shape_str(nt)}: ember broadcasts dense tensors over the "
                    f"trailing {nt.dim() - 2} dim(s) only")

    def shift(a: Any) -> Any:
        return a - 1 if type(a) is int and a >= 1 else a

    def call(i: int | None) -> Any:
        def pick(a: Any) -> Any:
            if isinstance(a, NestedTensor):
                return a._values if i is None else a._comps[i]
            return a

        a2 = [pick(a) for a in args]
        k2 = {k: pick(v) for k, v in kwargs.items()}
        if func.__name__ in ("softmax", "log_softmax"):
            if "dim" in k2:
                k2["dim"] = shift(k2["dim"])
            elif len(a2) > 1:
                a2[1] = shift(a2[1])
        return func(*a2, **k2)

    if nt._values is not None:
        out = call(None)
        if isinstance(out, Tensor) and out.dim() >= 1 and out.shape[0] == nt._values.shape[0]:
            return NestedTensor(values=out, offsets=nt._offsets, lengths=nt._lengths)
        return out
    return NestedTensor([call(i) for i in range(len(nt))])


def _reduce(nt: NestedTensor, func: Any, args: tuple, kwargs: dict) -> Any:
    dim = kwargs.pop("dim", args[1] if len(args) > 1 else None)
    keepdim = kwargs.pop("keepdim", args[2] if len(args) > 2 else False)
    if dim is None:
        return func(nt.values(), **kwargs)
    dims = [dim] if isinstance(dim, int) else list(dim)
    if len(dims) != 1:
        raise NotImplementedError(f"{func.__name__}() over several dims of a nested tensor")
    d = dims[0] % nt.dim()
    if d == 0:
        raise RuntimeError(f"{func.__name__}(): reducing over the batch dim of a nested tensor")
    if d == 1:
        if nt._values is None or nt._lengths is not None:
            raise RuntimeError(f"{func.__name__}(): reducing over the ragged dim needs a "
                               "contiguous nested tensor of the jagged layout")
        out = torch._segment_reduce(nt._values, func.__name__, offsets=nt._offsets)
        return out.unsqueeze(1) if keepdim else out
    return _map(nt, lambda x: func(x, d - 1, keepdim, **kwargs), (nt,), {})


def _narrow_nested(nt: NestedTensor, dim: int, start: int, length: int) -> NestedTensor:
    if dim != 0 or nt._values is not None:
        raise RuntimeError(f"narrow(): not supported for NestedTensor on dim={dim}")
    return NestedTensor(list(nt._comps[start:start + length]))


def _shape_str(nt: NestedTensor) -> str:
    return "[" + ", ".join(str(tuple(c.shape)) for c in nt._comps) + "]"


# --------------------------------------------------------------------------------------------
# construction


def _components(tensor_list: Any, dtype: Any, device: Any, copy: bool) -> list:
    comps = []
    for t in tensor_list:
        if not isinstance(t, Tensor):
            t = torch.tensor(t, dtype=dtype, device=device)
        elif copy:
            t = t.detach().clone()
        if dtype is not None or device is not None:
            t = t.to(device=device if device is not None else t.device,
                      dtype=dtype if dtype is not None else t.dtype)
        comps.append(t)
    if not comps:
        raise RuntimeError("nested tensors need at least one component")
    for i, c in enumerate(comps):
        if c.dim() != comps[0].dim():
            raise RuntimeError("All Tensors given to nested_tensor must have the same dimension. "
                               f"Found dimension {c.dim()} for Tensor at index {i} and dimension "
                               f"{comps[0].dim()} for Tensor at index 0.")
    return comps


def _jagged(comps: list) -> NestedTensor:
    if comps[0].dim() == 0 or any(c.shape[1:] != comps[0].shape[1:] for c in comps):
        raise RuntimeError(
            "Cannot represent given tensor list as a nested tensor with the jagged layout. Note "
            "that the jagged layout only allows for a single ragged dimension. For example: (B, "
            f"*, D_0, D_1, ..., D_N), with ragged * dim. (Shapes: {[tuple(c.shape) for c in comps]})")
    n = [c.shape[0] for c in comps]
    offsets = torch.tensor([0, *itertools.accumulate(n)], dtype=torch.int64,
                           device=comps[0].device)
    return NestedTensor(values=torch.cat(comps), offsets=offsets)


def nested_tensor(tensor_list: Any, *, dtype: Any = None, layout: Any = None, device: Any = None,
                  requires_grad: bool = False, pin_memory: bool = False) -> NestedTensor:
    """A nested tensor holding copies of ``tensor_list`` (tensors or lists), a leaf."""
    comps = _components(tensor_list, dtype, device, copy=True)
    if layout is torch.jagged:
        nt = _jagged(comps)
        if requires_grad:
            nt._values.requires_grad_(True)
            nt._comps = NestedTensor(values=nt._values, offsets=nt._offsets)._comps
            nt._rg = True
        return nt
    if layout not in (None, torch.strided):
        raise RuntimeError(f"Specified layout is unsupported for nested tensors: {layout}")
    if requires_grad:
        comps = [c.requires_grad_(True) for c in comps]
    return NestedTensor(comps)


def as_nested_tensor(ts: Any, dtype: Any = None, device: Any = None,
                     layout: Any = None) -> NestedTensor:
    """A nested tensor over ``ts`` (a list of tensors, or a dense tensor whose first dim is the
    batch), staying on their autograd graph."""
    if isinstance(ts, NestedTensor):
        return ts
    if isinstance(ts, Tensor):
        if ts.dim() < 2:
            raise RuntimeError("as_nested_tensor(): a dense tensor needs a batch dim and at "
                               f"least one more (got shape {tuple(ts.shape)})")
        ts = list(ts.unbind(0))
    comps = _components(ts, dtype, device, copy=False)
    if layout is torch.jagged:
        return _jagged(comps)
    if layout not in (None, torch.strided):
        raise RuntimeError(f"Specified layout is unsupported for nested tensors: {layout}")
    return NestedTensor(comps)


def nested_tensor_from_jagged(values: Tensor, offsets: Tensor | None = None,
                              lengths: Tensor | None = None, jagged_dim: int | None = None,
                              min_seqlen: int | None = None,
                              max_seqlen: int | None = None) -> NestedTensor:
    """A jagged nested tensor over ``values`` (``(sum n_i, *D)``): component ``i`` is
    ``values[offsets[i]:offsets[i] + n_i]`` (``n_i`` from ``lengths``, else the offsets)."""
    if jagged_dim not in (None, 1):
        raise NotImplementedError("nested_tensor_from_jagged(jagged_dim != 1)")
    if offsets is None:
        if lengths is None:
            raise RuntimeError("nested_tensor_from_jagged(): At least one of offsets or lengths "
                               "is required.")
        offsets = torch.cat([lengths.new_zeros(1), lengths.cumsum(0)])
        lengths = None
    return NestedTensor(values=values, offsets=offsets, lengths=lengths)


def narrow(tensor: Tensor, dim: int, start: Any, length: Any,
           layout: Any = torch.strided) -> NestedTensor:
    """A jagged nested tensor viewing ``tensor[i, start_i:start_i + length_i]`` (``dim`` is 1;
    ``start`` and ``length`` ints or tensors of one value per row; it has ``lengths()``). The
    strided layout refuses dim 1, as PyTorch's."""
    if dim != 1:
        raise RuntimeError("narrow(): only dim=1 is supported")
    b, t = tensor.shape[0], tensor.shape[1]
    if layout is torch.jagged:
        start = torch.as_tensor(start, dtype=torch.int64).expand(b)
        length = torch.as_tensor(length, dtype=torch.int64).expand(b)
        values = tensor.reshape(b * t, *tensor.shape[2:])
        begins = start + torch.arange(b) * t
        offsets = torch.cat([begins, begins[-1:] + length[-1:]])
        return NestedTensor(values=values, offsets=offsets, lengths=length.clone())
    if not (isinstance(start, int) and isinstance(length, int)):
        raise RuntimeError("start and length must be integers for the strided layout NT impl")
    raise RuntimeError("narrow(): only dim=0 supported for nested tensors, but got: 1 (the "
                       "strided layout; layout=torch.jagged narrows dim 1)")


def to_padded_tensor(input: NestedTensor, padding: float,  # noqa: A002 - PyTorch's name
                     output_size: Any = None) -> Tensor:
    """A dense ``(B, max sizes...)`` tensor, each component padded with ``padding``."""
    comps = input._comps
    if input._lengths is not None:
        raise RuntimeError("to_padded_tensor(): not supported for nested tensors with holes")
    size = [max(c.shape[d] for c in comps) for d in range(comps[0].dim())]
    if output_size is not None:
        output_size = list(output_size)
        if len(output_size) != len(size) + 1 or any(o < s for o, s in zip(output_size[1:], size)):
            raise RuntimeError(f"to_padded_tensor(): output_size {output_size} is smaller than "
                               f"the nested tensor's ({[len(comps), *size]})")
        size = output_size[1:]
    rows = []
    for c in comps:
        pads = []
        for d in reversed(range(c.dim())):
            pads += [0, size[d] - c.shape[d]]
        rows.append(torch.nn.functional.pad(c, pads, value=padding) if any(pads) else c)
    return torch.stack(rows)
