"""``torch._foreach_*``: one op over lists of tensors, as optimizer libraries batch their updates
(``torch._foreach_mul_(exp_avgs, beta1)``). PyTorch runs fused multi-tensor kernels; ember runs the
tensor op on each entry in turn, with the same results, the same autograd for the out-of-place
forms and PyTorch's argument forms:

- unary ops: ``_foreach_sqrt(self)`` -> a tuple of new tensors; ``_foreach_sqrt_(self)`` updates
  each tensor in place and returns ``self``;
- binary ops take, as ``other``, a list of tensors (``alpha=`` for add/sub), one number, a list of
  numbers (one per tensor) or one tensor (applied to every entry); ``_foreach_pow`` also takes a
  number as ``self`` (``2 ** exponents``);
- ``_foreach_addcmul``/``addcdiv(self, tensor1, tensor2, value)`` with ``value`` a number, a list
  of numbers or a 1-D tensor of them; ``_foreach_lerp(self, tensors1, weight)`` with ``weight`` a
  number, a list of numbers or a list of tensors;
- ``_foreach_norm(self, ord=2, dtype=None)`` and ``_foreach_max(self)``: a tuple of 0-d tensors;
  ``_foreach_copy_``, ``_foreach_zero_``, ``_foreach_clone``.

Lists must be non-empty and of equal lengths (PyTorch's ``RuntimeError`` otherwise).
``utils._foreach_utils._has_foreach_support`` still answers False: PyTorch's own optimizers keep
their per-tensor path, which is the same arithmetic.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from numbers import Number
from typing import Any

from . import linalg
from ._tensor import Tensor

__all__: list[str] = []

TensorList = Sequence[Tensor]


def _check(name: str, self: Any) -> None:
    if not isinstance(self, list | tuple):
        raise TypeError(f"{name}(): argument 'self' must be a list or tuple of Tensors, not "
                        f"{type(self).__name__}")
    if not self:
        raise RuntimeError("Tensor list must have at least one tensor.")
    for i, t in enumerate(self):
        if not isinstance(t, Tensor):
            raise TypeError(f"{name}(): expected Tensor as element {i} in argument 'self', but "
                            f"got {type(t).__name__}")


def _same_length(self: TensorList, other: Sequence[Any]) -> None:
    if len(other) != len(self):
        raise RuntimeError("Tensor lists must have the same number of tensors, got "
                           f"{len(self)} and {len(other)}")


def _operands(name: str, self: TensorList, other: Any, arg: str = "other") -> tuple[list, bool]:
    """``other`` spread over ``self``: (one operand per tensor, whether they are tensors)."""
    if isinstance(other, Tensor):
        return [other] * len(self), True
    if isinstance(other, list | tuple):
        if any(isinstance(o, Tensor) for o in other):
            for i, o in enumerate(other):
                if not isinstance(o, Tensor):
                    raise TypeError(f"{name}(): expected Tensor as element {i} in argument "
                                    f"'{arg}', but got {type(o).__name__}")
            _same_length(self, other)
            return list(other), True
        if len(other) != len(self):
            raise RuntimeError("Tensor list must have same number of elements as scalar list.")
        return list(other), False
    if isinstance(other, Number):
        return [other] * len(self), False
    raise TypeError(f"{name}(): '{arg}' must be a Tensor, a number or a list of either, not "
                    f"{type(other).__name__}")


def _unary(method: str) -> tuple[Callable, Callable]:
    name = f"_foreach_{method}"

    def op(self: TensorList) -> tuple[Tensor, ...]:
        _check(name, self)
        return tuple(getattr(t, method)() for t in self)

    def op_(self: TensorList) -> TensorList:
        _check(name + "_", self)
        for t in self:
            getattr(t, method + "_")()
        return self

    op.__doc__ = f"``{method}`` of each tensor: a tuple of new tensors."
    op_.__doc__ = f"``{method}_`` on each tensor in place; returns ``self``."
    return op, op_


_MINMAX = {"maximum": "clamp_min", "minimum": "clamp_max"}


def _binary(method: str, with_alpha: bool = False) -> tuple[Callable, Callable]:
    name = f"_foreach_{method}"

    def run(fname: str, self: TensorList, other: Any, alpha: Any, inplace: bool) -> list:
        _check(fname, self)
        operands, tensors = _operands(fname, self, other)
        kw = {}
        if alpha is not None:
            if not (with_alpha and tensors):
                raise TypeError(f"{fname}(): 'alpha' is taken with a list of tensors or a tensor "
                                f"as 'other', not with {type(other).__name__}")
            kw["alpha"] = alpha
        if method in _MINMAX:  # Tensor has no maximum_/minimum_; with numbers: clamp_min/max
            if not tensors:
                fn = _MINMAX[method] + ("_" if inplace else "")
                return [getattr(t, fn)(o) for t, o in zip(self, operands, strict=True)]
            if inplace:
                return [t.copy_(getattr(t, method)(o)) for t, o in zip(self, operands, strict=True)]
        fn = method + "_" if inplace else method
        return [getattr(t, fn)(o, **kw) for t, o in zip(self, operands, strict=True)]

    def op(self: TensorList, other: Any, *, alpha: Any = None) -> tuple[Tensor, ...]:
        return tuple(run(name, self, other, alpha, False))

    def op_(self: TensorList, other: Any, *, alpha: Any = None) -> TensorList:
        run(name + "_", self, other, alpha, True)
        return self

    op.__doc__ = f"``{method}`` of each tensor with ``other`` (see the module): new tensors."
    op_.__doc__ = f"``{method}_`` of each tensor with ``other``, in place; returns ``self``."
    return op, op_


def _pointwise3(method: str) -> tuple[Callable, Callable]:
    name = f"_foreach_{method}"

    def run(fname: str, self: TensorList, tensor1: TensorList, tensor2: TensorList,
            value: Any, inplace: bool) -> list:
        _check(fname, self)
        _check(fname, tensor1)
        _check(fname, tensor2)
        _same_length(self, tensor1)
        _same_length(self, tensor2)
        if isinstance(value, Tensor):  # a 1-D tensor of one scalar per entry
            if value.dim() != 1 or value.numel() != len(self):
                raise RuntimeError(f"{fname}(): a tensor of scalars must be 1-D with one value "
                                   f"per tensor ({len(self)}), got shape {tuple(value.shape)}")
            values = value.tolist()
        else:
            values, tensors = _operands(fname, self, value, "scalars")
            if tensors:
                raise TypeError(f"{fname}(): 'value' must be a number, a list of numbers or a "
                                "1-D tensor of them")
        fn = method + "_" if inplace else method
        return [getattr(t, fn)(a, b, value=v)
                for t, a, b, v in zip(self, tensor1, tensor2, values, strict=True)]

    def op(self: TensorList, tensor1: TensorList, tensor2: TensorList,
           value: Any = 1) -> tuple[Tensor, ...]:
        return tuple(run(name, self, tensor1, tensor2, value, False))

    def op_(self: TensorList, tensor1: TensorList, tensor2: TensorList,
            value: Any = 1) -> TensorList:
        run(name + "_", self, tensor1, tensor2, value, True)
        return self

    op.__doc__ = f"``{method}(t, a, b, value=v)`` for each entry: new tensors."
    op_.__doc__ = f"``{method}_(a, b, value=v)`` on each tensor in place; returns ``self``."
    return op, op_


def _lerp_run(fname: str, self: TensorList, tensors1: TensorList, weight: Any,
              inplace: bool) -> list:
    _check(fname, self)
    _check(fname, tensors1)
    _same_length(self, tensors1)
    weights, _ = _operands(fname, self, weight, "weight")
    fn = "lerp_" if inplace else "lerp"
    return [getattr(t, fn)(e, w) for t, e, w in zip(self, tensors1, weights, strict=True)]


def _foreach_lerp(self: TensorList, tensors1: TensorList, weight: Any) -> tuple[Tensor, ...]:
    """``lerp(t, end, weight)`` for each entry (weight: a number, numbers or tensors)."""
    return tuple(_lerp_run("_foreach_lerp", self, tensors1, weight, False))


def _foreach_lerp_(self: TensorList, tensors1: TensorList, weight: Any) -> TensorList:
    """``t.lerp_(end, weight)`` for each entry, in place; returns ``self``."""
    _lerp_run("_foreach_lerp_", self, tensors1, weight, True)
    return self


def _foreach_pow(self: Any, exponent: Any) -> tuple[Tensor, ...]:
    """``t ** exponent`` for each entry, or ``self ** t`` when ``self`` is a number."""
    if isinstance(self, Number):
        _check("_foreach_pow", exponent)
        return tuple(self ** t for t in exponent)
    return _pow(self, exponent)


_pow, _foreach_pow_ = _binary("pow")


def _foreach_norm(self: TensorList, ord: Any = 2, dtype: Any = None) -> tuple[Tensor, ...]:  # noqa: A002
    """``linalg.vector_norm(t, ord, dtype=dtype)`` of each tensor: a tuple of 0-d tensors."""
    _check("_foreach_norm", self)
    return tuple(linalg.vector_norm(t, ord, dtype=dtype) for t in self)


def _foreach_max(self: TensorList) -> tuple[Tensor, ...]:
    """The largest value of each tensor: a tuple of 0-d tensors."""
    _check("_foreach_max", self)
    return tuple(t.max() for t in self)


def _foreach_clone(self: TensorList) -> tuple[Tensor, ...]:
    """A copy of each tensor."""
    _check("_foreach_clone", self)
    return tuple(t.clone() for t in self)


def _foreach_copy_(self: TensorList, src: TensorList, non_blocking: bool = False) -> TensorList:
    """``t.copy_(s)`` for each pair, in place; returns ``self``."""
    _check("_foreach_copy_", self)
    _check("_foreach_copy_", src)
    _same_length(self, src)
    for t, s in zip(self, src, strict=True):
        t.copy_(s, non_blocking)
    return self


def _foreach_zero_(self: TensorList) -> TensorList:
    """``t.zero_()`` for each tensor; returns ``self``."""
    _check("_foreach_zero_", self)
    for t in self:
        t.zero_()
    return self


_UNARY = ["abs", "acos", "asin", "atan", "ceil", "cos", "cosh", "erf", "erfc", "exp", "expm1",
          "floor", "frac", "lgamma", "log", "log10", "log1p", "log2", "neg", "reciprocal",
          "round", "rsqrt", "sigmoid", "sign", "sin", "sinh", "sqrt", "tan", "tanh", "trunc"]
_BINARY = {"add": True, "sub": True, "mul": False, "div": False, "maximum": False,
           "minimum": False, "clamp_min": False, "clamp_max": False}

for _m in _UNARY:
    globals()[f"_foreach_{_m}"], globals()[f"_foreach_{_m}_"] = _unary(_m)
for _m, _alpha in _BINARY.items():
    globals()[f"_foreach_{_m}"], globals()[f"_foreach_{_m}_"] = _binary(_m, _alpha)
for _m in ("addcmul", "addcdiv"):
    globals()[f"_foreach_{_m}"], globals()[f"_foreach_{_m}_"] = _pointwise3(_m)
del _m, _alpha

NAMES = sorted(n for n in globals() if n.startswith("_foreach_"))
for _n in NAMES:
    globals()[_n].__name__ = globals()[_n].__qualname__ = _n
del _n
