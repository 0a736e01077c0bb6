"""``ember.autograd``: the engine's public face: ``backward``, ``grad``, ``Function``, grad modes."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from . import engine, grad_mode  # noqa: F401 - ember.autograd.grad_mode is public
from .function import Function, Node
from .grad_mode import enable_grad, inference_mode, no_grad, set_grad_enabled
from .variable import Variable  # noqa: F401 - deprecated alias of Tensor

__all__ = [
    "Function", "Node", "backward", "grad", "no_grad", "enable_grad", "set_grad_enabled",
    "inference_mode", "gradcheck", "gradgradcheck", "detect_anomaly", "set_detect_anomaly",
]


def _roots(tensors: Sequence[Any], grads: Sequence[Any] | None, create_graph: bool, what: str) -> list:
    from .._tensor import Tensor

    roots = []
    grads = list(grads) if grads is not None else [None] * len(tensors)
    if len(grads) != len(tensors):
        raise RuntimeError(f"grad can be implicitly created only for scalar outputs; got {len(grads)} "
                           f"gradients for {len(tensors)} outputs")
    for t, g in zip(tensors, grads):
        if not t.requires_grad:
            raise RuntimeError(
                "element 0 of tensors does not require grad and does not have a grad_fn. "
                f"({what} was called on a tensor of shape {tuple(t.shape)} that no "
                "operation with requires_grad=True inputs produced: check that the parameters have "
                "requires_grad=True, and that the forward pass did not run under no_grad() or use "
                ".detach()/.item()/.numpy() on the way.)"
            )
        if g is None:
            if t._data.size != 1:
                raise RuntimeError(
                    f"grad can be implicitly created only for scalar outputs (this tensor has shape "
                    f"{tuple(t.shape)}). Reduce it to one number first, e.g. loss = out.mean() or "
                    "out.sum(), or pass gradient=... with the same shape as the output."
                )
            xp = t._data.__array_namespace__() if hasattr(t._data, "__array_namespace__") else None
            arr = (xp or __import__("numpy")).ones(t._data.shape, t._data.dtype)
            g = Tensor._make(arr) if create_graph else arr
        else:
            if not isinstance(g, Tensor):
                from .._creation import tensor

                g = tensor(g, dtype=t.dtype)
            if tuple(g.shape) != tuple(t.shape):
                raise RuntimeError(
                    f"Mismatch in shape: grad_output[0] has a shape of {g.shape} and output[0] has a "
                    f"shape of {t.shape}."
                )
            g = g if create_graph else g._data
        if t.grad_fn is not None:
            roots.append((t.grad_fn, t._output_nr, g))
        else:
            roots.append((function._accumulator(t), 0, g))
    return roots


def backward(tensors: Any, grad_tensors: Any = None, retain_graph: bool | None = None,
             create_graph: bool = False, inputs: Any = None) -> None:
    """Accumulate gradients of ``tensors`` into the ``.grad`` of every leaf they depend on."""
    from .._tensor import Tensor

    if isinstance(tensors, Tensor):
        tensors = [tensors]
        if grad_tensors is not None and isinstance(grad_tensors, Tensor):
            grad_tensors = [grad_tensors]
    if retain_graph is None:
        retain_graph = create_graph
    roots = _roots(list(tensors), grad_tensors, create_graph, "backward()")
    if inputs is not None:
        inputs = [inputs] if isinstance(inputs, Tensor) else list(inputs)
        got = grad(list(tensors), inputs, grad_tensors, retain_graph=retain_graph,
                   create_graph=create_graph, allow_unused=True)
        for t, g in zip(inputs, got):
            if g is not None:
                t.grad = g if t.grad is None else t.grad + g
        return
    engine.run_backward(roots, retain_graph, create_graph)


def grad(outputs: Any, inputs: Any, grad_outputs: Any = None, retain_graph: bool | None = None,
         create_graph: bool = False, only_inputs: bool = True, allow_unused: bool | None = None,
         is_grads_batched: bool = False, materialize_grads: bool = False) -> tuple:
    """The gradients of ``outputs`` with respect to ``inputs`` (nothing is written to ``.grad``)."""
    from .._tensor import Tensor

    outputs = [outputs] if isinstance(outputs, Tensor) else list(outputs)
    single = isinstance(inputs, Tensor)
    inputs = [inputs] if single else list(inputs)
    if grad_outputs is not None and isinstance(grad_outputs, Tensor):
        grad_outputs = [grad_outputs]
    if retain_graph is None:
        retain_graph = create_graph
    for i, t in enumerate(inputs):
        if not t._rg:
            raise RuntimeError(f"One of the differentiated Tensors (input {i}) does not require grad")
    roots = _roots(outputs, grad_outputs, create_graph, "autograd.grad()")
    keys = []
    capture: dict = {}
    for t in inputs:
        key = (t.grad_fn, t._output_nr) if t.grad_fn is not None else (function._accumulator(t), 0)
        keys.append(key)
        capture.setdefault(key, [])
    engine.run_backward(roots, retain_graph, create_graph, capture)
    result = []
    for i, (t, key) in enumerate(zip(inputs, keys)):
        got = capture[key]
        if not got:
            if not (allow_unused or materialize_grads):
                raise RuntimeError(
                    f"One of the differentiated Tensors (input {i}, shape {tuple(t.shape)}) appears "
                    "to not have been used in the graph. Set allow_unused=True if this is the "
                    "desired behavior."
                )
            result.append(t.new_zeros(t.shape) if materialize_grads else None)
            continue
        g = got[0]
        result.append(g if isinstance(g, Tensor) else Tensor._make(g))
    return tuple(result)


def gradcheck(*args: Any, **kwargs: Any) -> bool:
    from ._gradcheck import gradcheck as _gc

    return _gc(*args, **kwargs)


def gradgradcheck(*args: Any, **kwargs: Any) -> bool:
    from ._gradcheck import gradgradcheck as _ggc

    return _ggc(*args, **kwargs)


def detect_anomaly(check_nan: bool = True) -> Any:
    from .anomaly import detect_anomaly as _da

    return _da(check_nan)


def set_detect_anomaly(mode: bool, check_nan: bool = True) -> Any:
    from .anomaly import set_detect_anomaly as _sda

    return _sda(mode, check_nan)


from . import function, functional  # noqa: E402, F401 - functional: torch.autograd.functional


def __getattr__(name: str) -> object:
    if name == "profiler":  # torch.autograd.profiler, loaded on first use
        import importlib

        return importlib.import_module(f"{__name__}.profiler")
    from .._missing import attribute_error

    raise attribute_error("torch.autograd", name)
