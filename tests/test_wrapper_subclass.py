"""``Tensor._make_wrapper_subclass`` and ``Tensor._make_subclass``: tensor subclasses that hold no
data of their own and wrap another tensor, as graph libraries' index tensors do. Each scenario
runs on ember and on PyTorch (when installed) and compares what comes back.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import ember
from ember._meta import WrapperDataError

try:
    import torch
except ImportError:  # pragma: no cover - CI installs torch
    torch = None

ENGINES = [ember] + ([torch] if torch is not None else [])


def _index_class(lib: Any) -> type:
    """An index tensor as a graph library writes one: the data in ``_data``, a ``dim_size``,
    ``__torch_function__`` unwraps, and ``flip``/``[...]`` keep the class."""

    class Index(lib.Tensor):
        @staticmethod
        def __new__(cls, data: Any, dim_size: int | None = None) -> Any:
            out = lib.Tensor._make_wrapper_subclass(
                cls, data.size(), strides=data.stride(), dtype=data.dtype, device=data.device,
                layout=data.layout, requires_grad=False)
            out._data = data
            out.dim_size = dim_size
            return out

        @classmethod
        def __torch_function__(cls, func: Any, types: Any, args: Any = (),
                               kwargs: Any = None) -> Any:
            def unwrap(x: Any) -> Any:
                if isinstance(x, (list, tuple)):
                    return type(x)(unwrap(y) for y in x)
                return x._data if isinstance(x, Index) else x

            args, kwargs = unwrap(args), {k: unwrap(v) for k, v in (kwargs or {}).items()}
            with lib._C.DisableTorchFunctionSubclass():
                out = func(*args, **kwargs)
            if func in (lib.Tensor.flip, lib.flip, lib.Tensor.__getitem__):
                return Index(out)
            return out

        @classmethod
        def __torch_dispatch__(cls, func: Any, types: Any, args: Any = (),
                               kwargs: Any = None) -> Any:
            raise NotImplementedError(f"__torch_dispatch__({func})")

    return Index


def _elem_class(lib: Any) -> type:
    """The wrapper of PyTorch's documentation: no ``__torch_function__`` of its own; its
    ``__torch_dispatch__`` unwraps ``elem`` and wraps tensor results."""

    class Wrapper(lib.Tensor):
        @staticmethod
        def __new__(cls, elem: Any) -> Any:
            r = lib.Tensor._make_wrapper_subclass(cls, elem.shape, dtype=elem.dtype,
                                                  device=elem.device,
                                                  requires_grad=elem.requires_grad)
            r.elem = elem
            return r

        @classmethod
        def __torch_dispatch__(cls, func: Any, types: Any, args: Any = (),
                               kwargs: Any = None) -> Any:
            def unwrap(x: Any) -> Any:
                if isinstance(x, (list, tuple)):
                    return type(x)(unwrap(y) for y in x)
                return x.elem if isinstance(x, Wrapper) else x

            out = func(*unwrap(args), **{k: unwrap(v) for k, v in (kwargs or {}).items()})
            if isinstance(out, lib.Tensor) and not isinstance(out, Wrapper):
                return Wrapper(out)
            return out

    return Wrapper


def _both(fn: Any) -> list[Any]:
    return [fn(lib) for lib in ENGINES]


def _same(a: Any, b: Any) -> None:
    if isinstance(a, (tuple, list)):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            _same(x, y)
    elif hasattr(a, "detach"):
        assert str(a.dtype).split(".")[-1] == str(b.dtype).split(".")[-1]
        assert type(a).__name__ == type(b).__name__
        np.testing.assert_allclose(np.asarray(a.detach().tolist()), np.asarray(b.detach().tolist()))
    else:
        assert a == b or str(a) == str(b), (a, b)


def _check(fn: Any) -> None:
    results = _both(fn)
    for r in results[1:]:
        _same(results[0], r)


def test_metadata_answers_from_what_was_given() -> None:
    def run(lib: Any) -> Any:
        i = _index_class(lib)(lib.tensor([0, 1, 1, 2]), dim_size=3)
        return (type(i).__name__, tuple(i.shape), str(i.dtype), str(i.device), i.requires_grad,
                i.dim(), i.ndim, tuple(i.size()), i.size(0), i.stride(), i.numel(),
                i.is_floating_point(), i.is_contiguous(), i.element_size(), i.is_leaf,
                i.grad_fn is None, i.dim_size, len(i), str(i.layout))

    _check(run)


def test_operations_go_through_torch_function() -> None:
    def run(lib: Any) -> Any:
        d = lib.tensor([0, 1, 1, 2])
        i = _index_class(lib)(d, dim_size=3)
        f = i.flip(0)
        return (i + 1, lib.cat([i, d]), i.sum(), f, f._data, i[1:], i.numpy().tolist(),
                i.tolist(), repr(i), np.asarray(i).tolist(), lib.bincount(i), i.max().item())

    _check(run)


def test_metadata_of_a_bare_wrapper() -> None:
    def run(lib: Any) -> Any:
        cls = _elem_class(lib)
        j = lib.Tensor._make_wrapper_subclass(cls, (3,), dtype=lib.float32, requires_grad=True)
        k = lib.Tensor._make_wrapper_subclass(cls, [2, 3], strides=(1, 2), storage_offset=1,
                                              dtype=lib.float64)
        z = lib.Tensor._make_wrapper_subclass(cls, (2, 3))
        return (j.requires_grad, j.is_leaf, j.grad_fn is None, j.is_floating_point(),
                j.stride(), str(j.dtype), k.stride(), k.storage_offset(), k.is_contiguous(),
                str(k.dtype), str(z.dtype), str(z.device), z.stride(), tuple(z.shape))

    _check(run)


def test_torch_dispatch_gets_the_calls_of_a_class_without_torch_function() -> None:
    def run(lib: Any) -> Any:
        cls = _elem_class(lib)
        w = cls(lib.tensor([1.0, -2.0, 3.0]))
        r = lib.relu(w)
        s = (w * 2).sum()
        return (type(r).__name__, r.elem, type(s).__name__, s.elem, (w + w).elem, w.size(),
                w.dim())

    _check(run)


def test_reading_the_wrappers_own_data_raises_clearly() -> None:
    cls = _index_class(ember)
    i = cls(ember.tensor([0, 1, 1, 2]))
    with ember._C.DisableTorchFunctionSubclass():
        for op in (lambda: i.sum(), lambda: i.numpy(), lambda: i.tolist(), lambda: i + 1):
            with pytest.raises(WrapperDataError, match="Index .*has no data of its own"):
                op()
    assert isinstance(i._data, ember.Tensor)  # the class's own attribute stays its own


def test_errors_as_pytorch() -> None:
    for lib in ENGINES:
        class NoDispatch(lib.Tensor):
            pass

        with pytest.raises(TypeError, match="must define __torch_dispatch__"):
            lib.Tensor._make_wrapper_subclass(NoDispatch, (2,))
        with pytest.raises(TypeError, match="does not inherit from Tensor"):
            lib.Tensor._make_wrapper_subclass(int, (2,))
        with pytest.raises(RuntimeError, match="floating point"):
            lib.Tensor._make_wrapper_subclass(_elem_class(lib), (2,), dtype=lib.int64,
                                              requires_grad=True)
    assert ember.Tensor.__torch_dispatch__ is ember._C._disabled_torch_dispatch_impl


def test_make_subclass_shares_data_as_a_leaf() -> None:
    def run(lib: Any) -> Any:
        class P(lib.Tensor):
            @staticmethod
            def __new__(cls, data: Any) -> Any:
                return lib.Tensor._make_subclass(cls, data, True)

        x = lib.tensor([1.0, 2.0]) * 1
        p = P(x)
        x.add_(1)
        return type(p).__name__, p.requires_grad, p.is_leaf, p.detach()

    _check(run)
