"""What the creation and random rooms share: parsing the arguments PyTorch's factories take.

PyTorch's factory functions parse their own arguments in C++; these helpers give ours the same
rules where a plain Python signature cannot:

- ``size(name, args, kwargs, accepted)``: a size given as ``f(2, 3)``, ``f((2, 3))``,
  ``f([2, 3])``, ``f(torch.Size(...))`` or ``f(size=(2, 3))``, with PyTorch's errors (both forms at
  once, a non-int element, a negative dim);
- ``unexpected_keyword(name, key, accepted)``: the ``TypeError`` for a keyword the function does
  not take, naming the closest one it does ("did you mean 'dtype'?");
- ``out_dtype`` / ``write_new``: a factory's ``out=``: the dtype comes from ``out`` unless given
  (and must then equal it), ``out`` is resized without a warning, as PyTorch's factories do.
"""

from __future__ import annotations

import difflib
import inspect
import operator
import sys
from collections.abc import Iterable
from typing import Any

from .. import _dtype, _dtype_info
from .._tensor_base import TensorBase
from . import _out

# the keywords of PyTorch's factories: creation (zeros...), random (rand...), and the *_like ones
FACTORY = ("size", "out", "dtype", "layout", "device", "pin_memory", "requires_grad")
RANDOM = ("size", "generator", "out", "dtype", "layout", "device", "pin_memory", "requires_grad")
EMPTY = FACTORY + ("memory_format",)
NEW = ("size", "dtype", "layout", "device", "pin_memory", "requires_grad")


def unexpected_keyword(name: str, key: str, accepted: Iterable[str]) -> TypeError:
    """``name() got an unexpected keyword argument 'key' (did you mean 'dtype'?)``."""
    msg = f"{name}() got an unexpected keyword argument '{key}'"
    close = difflib.get_close_matches(key, list(accepted), n=1)
    if close:
        msg += f" (did you mean '{close[0]}'?)"
    return TypeError(msg)


def size(name: str, args: tuple, kwargs: dict | None = None,
         accepted: Iterable[str] = FACTORY) -> tuple[int, ...]:
    """The size a factory got: varargs ints, one sequence (tuple, list, ``Size``) or ``size=``.
    ``kwargs`` holds the keywords the function's signature did not name: only ``size`` may be
    there; any other raises ``TypeError`` naming the closest of ``accepted``."""
    if kwargs:
        for key in kwargs:
            if key != "size":
                raise unexpected_keyword(name, key, accepted)
        if args:
            raise TypeError(f"{name}() got multiple values for argument 'size'")
        seq = kwargs["size"]
        if not isinstance(seq, (tuple, list)):
            raise TypeError(f"{name}(): argument 'size' must be tuple of ints, not "
                            f"{type(seq).__name__}")
        args = seq
    elif not args:
        raise TypeError(f'{name}() missing 1 required positional arguments: "size"')
    elif isinstance(args[0], (tuple, list)):
        if len(args) > 1:
            raise TypeError(f"{name}() takes 1 positional argument but {len(args)} were given")
        args = args[0]
    for s in args:  # the common case: plain non-negative ints
        if type(s) is not int or s < 0:
            return _ints(name, args)
    return tuple(args)


def overload(name: str, args: tuple, kwargs: dict, forms: tuple[tuple[str, ...], ...],
             defaults: dict[str, Any] | None = None, accepted: Iterable[str] = (),
             absent: dict[str, Any] | None = None) -> dict[str, Any]:
    """Bind ``args`` and ``kwargs`` as PyTorch's parser does for overloads whose parameters shift
    (``arange(end)`` / ``arange(start, end, step=1)``, ``randint(high, size)`` /
    ``randint(low, high, size)``): the first of ``forms`` (parameter names in positional order)
    that takes every positional and keyword argument and leaves no parameter without a value
    (``defaults`` gives the optional ones; ``absent`` the values of those a form lacks). ``arange(start=1)`` fits none and raises TypeError,
    as in PyTorch."""
    defaults = defaults or {}
    for form in forms:
        if len(args) > len(form):
            continue
        bound = dict(zip(form, args))
        if any(k in bound or k not in form for k in kwargs):
            continue
        bound.update(kwargs)
        if all(p in bound or p in defaults for p in form):
            return {**(absent or {}), **{p: defaults[p] for p in form if p not in bound},
                    **bound}
    names = {p for form in forms for p in form}
    for key in kwargs:
        if key not in names:
            raise unexpected_keyword(name, key, names | set(accepted))
    given = [type(a).__name__ for a in args] + [f"{k}=" for k in kwargs]
    raise TypeError(f"{name}() received an invalid combination of arguments ({', '.join(given)}); "
                    "PyTorch's forms: " + ", ".join(f"{name}({', '.join(f)})" for f in forms))


def shown_signature(fn: Any, bounds: dict[str, Any]) -> inspect.Signature:
    """``fn``'s signature with its ``*args``/``**bounds`` (parsed by :func:`overload`) shown as
    the named parameters PyTorch's overloads merge to, with these defaults."""
    params = []
    for p in inspect.signature(fn).parameters.values():
        if p.kind is p.VAR_POSITIONAL:
            params += [inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=d)
                       for n, d in bounds.items()]
        elif p.kind is not p.VAR_KEYWORD:
            params.append(p)
    return inspect.Signature(params)


def sequence(name: str, arg: str, value: Any) -> tuple[int, ...]:
    """A size that must be a sequence (``full``'s, ``empty_strided``'s): an int is refused."""
    if not isinstance(value, (tuple, list)):
        raise TypeError(f"{name}(): argument '{arg}' must be tuple of ints, not "
                        f"{type(value).__name__}")
    for s in value:  # the common case: plain non-negative ints
        if type(s) is not int or s < 0:
            return _ints(name, value, arg)
    return tuple(value)


def one_sequence(name: str, arg: str, value: Any) -> Any:
    """``value`` when it is one sequence (tuple, list, Size), as the ``int[]`` parameters of
    PyTorch's namespace functions take (``torch.reshape(x, 12)`` raises TypeError)."""
    if not isinstance(value, (tuple, list)):
        raise TypeError(f"{name}(): argument '{arg}' (position 2) must be tuple of ints, not "
                        f"{type(value).__name__} (the varargs form is the method's: "
                        f"x.{name}(...))")
    return value


def integer(name: str, arg: str, value: Any) -> int:
    """An int argument (``randint``'s bounds, ``randperm``'s ``n``...): ints, NumPy ints and
    one-element integer tensors; floats and bools are refused as PyTorch refuses them."""
    if type(value) is int:
        return value
    if isinstance(value, TensorBase):
        if value.dtype.is_floating_point or value._data.size != 1:
            raise TypeError(f"{name}(): argument '{arg}' must be int, not Tensor")
        return int(value.item())
    if isinstance(value, bool) or not hasattr(type(value), "__index__"):
        raise TypeError(f"{name}(): argument '{arg}' must be int, not {type(value).__name__}")
    return operator.index(value)


def check_layout(layout: Any) -> None:
    """``layout=torch.strided`` (or ``None``) is what ember tensors are; others are refused."""
    if layout is not None and layout is not _dtype_info.strided:
        raise NotImplementedError(
            f"layout={layout!r} is not supported: ember tensors are dense (torch.strided). "
            "Drop layout=, or build a dense tensor and convert it where PyTorch is available.")


def check_memory_format(memory_format: Any, ndim: int, preserve: bool = True) -> None:
    """``memory_format=``: contiguous (and, for ``*_like``, preserve) always; channels_last
    needs a 4-d tensor, channels_last_3d a 5-d one (ember keeps NumPy's layout either way)."""
    if memory_format is None:
        return
    name = getattr(memory_format, "_name", None)
    if name is None:
        raise TypeError(f"argument 'memory_format' must be torch.memory_format, not "
                        f"{type(memory_format).__name__}")
    if name == "preserve_format" and not preserve:
        raise RuntimeError("unsupported memory format Preserve")
    rank = {"channels_last": 4, "channels_last_3d": 5}.get(name)
    if rank is not None and ndim != rank:
        raise RuntimeError(f"required rank {rank} tensor to use {name} format (got a {ndim}-d "
                           "size)")


def real_part_of(value: complex, dtype: Any) -> float:
    """A Python complex written into a tensor of the real ``dtype`` (``fill_``, ``x[i] =``,
    ``full``): its real part when it has no imaginary part, else PyTorch's overflow error."""
    if value.imag:
        raise RuntimeError(f"value cannot be converted to type {dtype} without overflow (a "
                           f"complex {value} into a real tensor: make the tensor complex, e.g. "
                           "dtype=torch.complex64, or write value.real)")
    return value.real


def out_dtype(name: str, dtype: Any, out: Any) -> Any:
    """The dtype a factory makes with ``out=``: ``out``'s, which ``dtype`` (if given) must equal."""
    if not isinstance(out, TensorBase):
        raise TypeError(f"{name}(): argument 'out' must be Tensor, not {type(out).__name__}")
    if dtype is None:
        return out.dtype
    dt = _dtype.to_dtype(dtype)
    if dt != out.dtype:
        raise RuntimeError(
            f"dtype {_dtype.legacy_name(dt)} does not match dtype of out parameter "
            f"({_dtype.legacy_name(out.dtype)}). Drop dtype= (the result takes out's), or give "
            f"out of dtype {dt}.")
    return dt


def write_new(out: Any, result: Any, name: str, requires_grad: bool = False) -> Any:
    """Write a factory's result into ``out``. PyTorch's factories resize ``out`` without the
    deprecation warning other ops give; ``requires_grad=True`` is then set on ``out``."""
    if tuple(out.shape) != tuple(result.shape) and not out.requires_grad:
        _out._resize(out, tuple(result.shape))
    _out.write(out, result, name)
    if requires_grad:
        out.requires_grad = True
    return out


def user_stacklevel() -> int:
    """The ``stacklevel`` that points a warning at the first frame outside ember (the caller's
    line, however many ember frames sit between: with the pure-Python core, a public
    function's ``__torch_function__`` dispatcher is one more)."""
    level = 1
    frame = sys._getframe(1)
    while frame is not None and frame.f_globals.get("__name__", "").startswith("ember."):
        frame = frame.f_back
        level += 1
    return level


class Shown:
    """A default that only marks "not given" (``eye(n, m=n)``: ``m=None`` is refused, as in
    PyTorch), shown in signatures as ``text``."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text


def _ints(name: str, seq: Any, arg: str = "size") -> tuple[int, ...]:
    """Each element an int (NumPy ints and one-element integer tensors count); none negative."""
    out = []
    for i, s in enumerate(seq):
        if type(s) is not int:
            if isinstance(s, TensorBase) and not s.dtype.is_floating_point and s._data.size == 1:
                s = int(s.item())
            elif isinstance(s, (bool, TensorBase)) or not hasattr(type(s), "__index__"):
                raise TypeError(f"{name}(): argument '{arg}' must be tuple of ints, but found "
                                f"element of type {type(s).__name__} at pos {i}")
            else:
                s = operator.index(s)
        out.append(s)
    for s in out:
        if s < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {s}: {out}")
    return tuple(out)
