"""``torch.autograd.functional``: Jacobians, Hessians and vector products of whole functions.

Built on ``ember.autograd.grad``. ``jacobian`` runs one backward pass per output element
(``vectorize`` and ``strategy="forward-mode"`` are accepted and give the same values: ember has
no forward mode, so both run reverse mode). ``jvp`` and ``hvp`` use the double-vjp trick: the vjp
u -> J^T u is linear in u, so differentiating <J^T u, v> with respect to u gives J v.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import ember

from .._tensor import Tensor
from ..autograd.grad_mode import enable_grad
from . import grad as _grad

__all__ = ["hessian", "hvp", "jacobian", "jvp", "vhp", "vjp"]



def _as_tuple(x: Any, arg_name: str, fn_name: str) -> tuple[bool, tuple]:
    """(was_tuple, values as a tuple), with PyTorch's TypeError for non-tensors."""
    is_tuple = True
    if not isinstance(x, tuple):
        x = (x,)
        is_tuple = False
    for i, el in enumerate(x):
        if not isinstance(el, Tensor):
            if is_tuple:
                raise TypeError(
                    f"The {arg_name} given to {fn_name} must be either a Tensor or a tuple of "
                    f"Tensors but the value at index {i} has type {type(el)}."
                )
            raise TypeError(
                f"The {arg_name} given to {fn_name} must be either a Tensor or a tuple of Tensors "
                f"but the given {arg_name} has type {type(el)}."
            )
    return is_tuple, x


def _tuple_postprocess(res: Any, to_unpack: Any) -> Any:
    """Unpack nested tuples to match the user's single-tensor / tuple choices."""
    if isinstance(to_unpack, tuple):
        if not to_unpack[1]:
            res = tuple(el[0] for el in res)
        if not to_unpack[0]:
            res = res[0]
    elif not to_unpack:
        res = res[0]
    return res


def _prepare_inputs(inputs: tuple, create_graph: bool, need_graph: bool) -> tuple:
    """Fresh differentiable stand-ins for the inputs (kept in the user's graph when
    ``create_graph`` and the input already requires grad)."""
    out = []
    for inp in inputs:
        if create_graph and inp.requires_grad:
            out.append(inp.view_as(inp))
        else:
            out.append(inp.detach().requires_grad_(need_graph))
    return tuple(out)


def _finish(values: Any, create_graph: bool) -> Any:
    """Detach results unless the caller asked for a graph."""
    if isinstance(values, tuple):
        return tuple(_finish(v, create_graph) for v in values)
    if values is None or create_graph:
        return values
    return values.detach()


def _grads(outputs: tuple, inputs: tuple, grad_outputs: tuple, create_graph: bool,
           retain_graph: bool | None = None) -> tuple:
    """autograd.grad over the outputs that need grad; None for inputs they do not reach."""
    pairs = [(o, g) for o, g in zip(outputs, grad_outputs) if o.requires_grad]
    if not pairs:
        return (None,) * len(inputs)
    need = [i for i, x in enumerate(inputs) if x.requires_grad]
    if not need:
        return (None,) * len(inputs)
    got = _grad([o for o, _ in pairs], [inputs[i] for i in need], [g for _, g in pairs],
                retain_graph=True if retain_graph is None else retain_graph,
                create_graph=create_graph, allow_unused=True)
    res: list = [None] * len(inputs)
    for i, g in zip(need, got):
        res[i] = g
    return tuple(res)


def _fill_zeros(grads: tuple, refs: tuple, strict: bool, stage: str, create_graph: bool) -> tuple:
    out = []
    for i, (g, r) in enumerate(zip(grads, refs)):
        if g is None:
            if strict:
                if stage == "back":
                    raise RuntimeError(
                        f"The output of the user-provided function is independent of input {i}. "
                        "This is not allowed in strict mode."
                    )
                if stage == "double_back":
                    raise RuntimeError(
                        f"The jacobian of the user-provided function is independent of input {i}. "
                        "This is not allowed in strict mode."
                    )
                raise RuntimeError(
                    f"The backward pass through the user-provided function is independent of "
                    f"input {i}. This is not allowed in strict mode."
                )
            g = ember.zeros_like(r)
        out.append(g)
    return tuple(out)


def _check_v(v: tuple, refs: tuple, fn_name: str, what: str) -> None:
    if len(v) != len(refs):
        raise RuntimeError(
            f"The given v should contain a single Tensor for each of the {what}; got {len(v)} "
            f"tensors for {len(refs)} {what} in {fn_name}."
        )
    for i, (a, b) in enumerate(zip(v, refs)):
        if tuple(a.shape) != tuple(b.shape):
            raise RuntimeError(
                f"Entry {i} in v has invalid size: should be {tuple(b.shape)} but got "
                f"{tuple(a.shape)}."
            )


def _call(func: Callable, inputs: tuple, fn_name: str, strict: bool = False) -> tuple[bool, tuple]:
    out = func(*inputs)
    is_tuple, outs = _as_tuple(out, "outputs of the user-provided function", fn_name)
    if strict:
        for i, o in enumerate(outs):
            if not o.requires_grad:
                raise RuntimeError(
                    f"Output {i} of the user-provided function does not require gradients. The "
                    "outputs must be computed in a differentiable manner from the input when "
                    "running in strict mode."
                )
    return is_tuple, outs


def vjp(func: Callable, inputs: Any, v: Any = None, create_graph: bool = False,
        strict: bool = False) -> tuple:
    """(func(inputs), v^T J): the vector-Jacobian product at ``inputs``.

    Args:
        func: a function of tensors returning a tensor or a tuple of tensors.
        inputs: a tensor or a tuple of tensors.
        v: like func's output; may be omitted when the output has a single element.
        create_graph: keep a graph through the results (for higher derivatives).
        strict: raise if an input does not influence the output (instead of zeros).
    """
    with enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "vjp")
        inputs = _prepare_inputs(inputs, create_graph, True)
        is_outputs_tuple, outputs = _call(func, inputs, "vjp", strict)
        if v is not None:
            _, v = _as_tuple(v, "v", "vjp")
            _check_v(v, outputs, "vjp", "outputs of the user-provided function")
        else:
            if len(outputs) != 1 or outputs[0].numel() != 1:
                raise RuntimeError("The vector v can only be None if the user-provided function "
                                   "returns a single Tensor with a single element.")

            v = (ember.ones_like(outputs[0]),)
        grads = _grads(outputs, inputs, v, create_graph)
        grads = _fill_zeros(grads, inputs, strict, "back", create_graph)
    return (_tuple_postprocess(_finish(outputs, create_graph), is_outputs_tuple),
            _tuple_postprocess(_finish(grads, create_graph), is_inputs_tuple))


def jvp(func: Callable, inputs: Any, v: Any = None, create_graph: bool = False,
        strict: bool = False) -> tuple:
    """(func(inputs), J v): the Jacobian-vector product at ``inputs`` (by the double-vjp trick).

    Args:
        v: like ``inputs``; may be omitted when the input has a single element.
    """
    with enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jvp")
        inputs = _prepare_inputs(inputs, create_graph, True)
        if v is not None:
            _, v = _as_tuple(v, "v", "jvp")
            _check_v(v, inputs, "jvp", "inputs")
        else:
            if len(inputs) != 1 or inputs[0].numel() != 1:
                raise RuntimeError("The vector v can only be None if the input to the "
                                   "user-provided function is a single Tensor with a single element.")
            v = (ember.ones_like(inputs[0]),)
        is_outputs_tuple, outputs = _call(func, inputs, "jvp", strict)
        dummies = tuple(ember.zeros_like(o).requires_grad_(True) for o in outputs)
        g = _grads(outputs, inputs, dummies, create_graph=True)
        g_pairs = [(gi, vi) for gi, vi in zip(g, v) if gi is not None and gi.requires_grad]
        if g_pairs:
            jv = _grads(tuple(p[0] for p in g_pairs), dummies, tuple(p[1] for p in g_pairs),
                        create_graph)
        else:
            jv = (None,) * len(outputs)
        if strict and any(x is None for x in g):
            i = next(i for i, x in enumerate(g) if x is None)
            raise RuntimeError(f"The output of the user-provided function is independent of "
                               f"input {i}. This is not allowed in strict mode.")
        jv = _fill_zeros(jv, outputs, strict, "back_trick", create_graph)
    return (_tuple_postprocess(_finish(outputs, create_graph), is_outputs_tuple),
            _tuple_postprocess(_finish(jv, create_graph), is_outputs_tuple))


def jacobian(func: Callable, inputs: Any, create_graph: bool = False, strict: bool = False,
             vectorize: bool = False, strategy: str = "reverse-mode") -> Any:
    """The Jacobian of ``func`` at ``inputs``: for output i and input j a tensor of shape
    ``out_i.shape + in_j.shape``, nested as PyTorch nests it (a Tensor when both are single
    tensors, a tuple over the tuple side, a tuple of tuples ``[i][j]`` when both are tuples).

    ``vectorize`` and ``strategy="forward-mode"`` are accepted; ember always uses reverse mode,
    one backward pass per output element.
    """
    if strategy not in ("forward-mode", "reverse-mode"):
        raise ValueError('Expected strategy to be either "forward-mode" or "reverse-mode". Hint: '
                         'If your function has more outputs than inputs, "forward-mode" tends to '
                         'be more performant. Otherwise, prefer to use "reverse-mode".')
    if strategy == "forward-mode":
        if create_graph:
            raise NotImplementedError("torch.autograd.functional.jacobian: `strict=True` and "
                                      "`strategy=\"forward-mode\"` are not supported together (yet)."
                                      if strict else "torch.autograd.functional.jacobian: "
                                      "`create_graph=True` and `strategy=\"forward-mode\"` are "
                                      "not supported together (yet). Please either set "
                                      "`create_graph=False` or `strategy=\"reverse-mode\"`.")
        if not vectorize:
            raise ValueError("torch.autograd.functional.jacobian: `strategy=\"forward-mode\"` "
                             "requires `vectorize=True`.")
    with enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
        inputs = _prepare_inputs(inputs, create_graph, True)
        is_outputs_tuple, outputs = _call(func, inputs, "jacobian", strict)
        jac: list = []
        for i, out in enumerate(outputs):
            n = out.numel()
            rows: list[list] = [[] for _ in inputs]
            for k in range(n):
                e = ember.zeros(n, dtype=out.dtype, device=out.device)
                e[k] = 1.0
                e = e.reshape(out.shape)
                if out.requires_grad:
                    g = _grads((out,), inputs, (e,), create_graph)
                else:
                    g = (None,) * len(inputs)
                for j, (gj, inp) in enumerate(zip(g, inputs)):
                    if gj is None:
                        if strict:
                            raise RuntimeError(
                                f"Output {i} of the user-provided function is independent of "
                                f"input {j}. This is not allowed in strict mode."
                            )
                        gj = ember.zeros_like(inp)
                    rows[j].append(gj)
            per_input = []
            for j, inp in enumerate(inputs):
                if rows[j]:
                    block = ember.stack(rows[j], 0)
                else:
                    block = ember.zeros((0,) + tuple(inp.shape), dtype=inp.dtype, device=inp.device)
                per_input.append(block.reshape(tuple(out.shape) + tuple(inp.shape)))
            jac.append(tuple(per_input))
        result = _finish(tuple(jac), create_graph)
    return _tuple_postprocess(result, (is_outputs_tuple, is_inputs_tuple))


def hessian(func: Callable, inputs: Any, create_graph: bool = False, strict: bool = False,
            vectorize: bool = False, outer_jacobian_strategy: str = "reverse-mode") -> Any:
    """The Hessian of a scalar function: for inputs i, j a tensor ``in_i.shape + in_j.shape``
    (a Tensor for one input, a tuple of tuples for a tuple of inputs)."""
    is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "hessian")
    if outer_jacobian_strategy not in ("forward-mode", "reverse-mode"):
        raise ValueError('Expected strategy to be either "forward-mode" or "reverse-mode".')

    def ensure_single_output_function(*inp: Any) -> Any:
        out = func(*inp)
        is_out_tuple, t_out = _as_tuple(out, "outputs of the user-provided function", "hessian")
        if is_out_tuple:
            raise RuntimeError("The function given to hessian should return a single Tensor")
        if t_out[0].numel() != 1:
            raise RuntimeError("The Tensor returned by the function given to hessian should "
                               f"contain a single element (it has shape {tuple(t_out[0].shape)}; "
                               "the Hessian is of a scalar function)")
        return t_out[0].reshape(())

    def jac_func(*inp: Any) -> Any:
        return jacobian(ensure_single_output_function, inp, create_graph=True, strict=strict)

    res = jacobian(jac_func, inputs, create_graph=create_graph, strict=strict)
    return _tuple_postprocess(res, (is_inputs_tuple, is_inputs_tuple))


def vhp(func: Callable, inputs: Any, v: Any = None, create_graph: bool = False,
        strict: bool = False) -> tuple:
    """(func(inputs), v^T H) for a scalar ``func``."""
    with enable_grad():
        is_inputs_tuple, inputs = _as_tuple(inputs, "inputs", "vhp")
        inputs = _prepare_inputs(inputs, create_graph, True)
        if v is not None:
            _, v = _as_tuple(v, "v", "vhp")
            _check_v(v, inputs, "vhp", "inputs")
        else:
            if len(inputs) != 1 or inputs[0].numel() != 1:
                raise RuntimeError("The vector v can only be None if the input to the "
                                   "user-provided function is a single Tensor with a single element.")
            v = (ember.ones_like(inputs[0]),)
        is_outputs_tuple, outputs = _call(func, inputs, "vhp", strict)
        if is_outputs_tuple:
            raise RuntimeError("The function given to vhp should return a single Tensor")
        if outputs[0].numel() != 1:
            raise RuntimeError("The Tensor returned by the function given to vhp should contain "
                               f"a single element (it has shape {tuple(outputs[0].shape)})")
        jac = _grads(outputs, inputs, (ember.ones_like(outputs[0]),), create_graph=True)
        if strict and any(g is None for g in jac):
            i = next(i for i, g in enumerate(jac) if g is None)
            raise RuntimeError(f"The output of the user-provided function is independent of "
                               f"input {i}. This is not allowed in strict mode.")
        pairs = [(g, vi) for g, vi in zip(jac, v) if g is not None and g.requires_grad]
        if pairs:
            res = _grads(tuple(p[0] for p in pairs), inputs, tuple(p[1] for p in pairs), create_graph)
        else:
            res = (None,) * len(inputs)
        res = _fill_zeros(res, inputs, strict, "double_back", create_graph)
    return (_finish(outputs[0], create_graph), _tuple_postprocess(_finish(res, create_graph),
                                                                  is_inputs_tuple))


def hvp(func: Callable, inputs: Any, v: Any = None, create_graph: bool = False,
        strict: bool = False) -> tuple:
    """(func(inputs), H v) for a scalar ``func`` (H is symmetric, so this equals ``vhp``)."""
    out, res = vhp(func, inputs, v, create_graph, strict)
    return out, res
