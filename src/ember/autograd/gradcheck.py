"""``gradcheck`` / ``gradgradcheck``: compare analytic gradients with float64 central differences.

``inputs`` is a tensor or a sequence of arguments (a list as well as a tuple): ``fn`` is called
with them unpacked, ``fn(*inputs)``; its result is a tensor or a sequence of values. Outputs that
do not require grad (``a.detach() ** 2``, integer tensors) are left out of the comparison, as in
PyTorch; when no output requires grad, the numerical gradient must be zero.

The analytic side is a vector-Jacobian product with a *random* cotangent ``v`` per output (a rule
that forgets to multiply by ``grad`` fails, which ``.sum()`` would hide); the numerical side
perturbs each input element by ``eps`` in place (through the input's own strides, so a
non-contiguous input works) and measures ``v . (f(x + eps) - f(x - eps)) / (2 eps)``. With
``fast_mode=True`` it is PyTorch's fast mode draw for draw: each input is perturbed along one
random direction ``u`` (two calls of ``fn`` per input) and each (input, output) pair compares
``v . (J u)`` with ``(v^T J) . u``, with PyTorch's vectors (from a default-seeded generator, as
ember's streams are PyTorch's) and its scaled tolerance, so a function with a kink within ``eps``
passes or fails as it does on PyTorch.

Complex inputs and outputs are checked as PyTorch documents ("Gradcheck mechanics"): for a
real-valued loss, PyTorch's gradient is the conjugate Wirtinger derivative times 2, that is
``dL/dRe(z) + i dL/dIm(z)``. The loss here is ``L = sum Re(conj(v) * out)`` with a random complex
cotangent ``v`` for each complex output (a real ``v`` for a real output), which is what backward
with grad_output ``v`` differentiates; the numerical side perturbs the real and the imaginary part
of each complex input element by ``eps`` and assembles ``dL/dRe + i dL/dIm``. A backward that
returns the holomorphic derivative without conjugating it, or drops an imaginary part, fails.
(PyTorch checks the real and imaginary parts of complex outputs in two passes; one complex
cotangent covers both, and its failure message says so.)

A mismatch raises ``GradcheckError`` (a ``RuntimeError``; ``from torch.autograd.gradcheck import
GradcheckError``), or returns False with ``raise_exception=False``.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .. import _backend
from .._tensor import Tensor
from . import grad as autograd_grad

__all__ = ["GradcheckError", "gradcheck", "gradgradcheck"]


class GradcheckError(RuntimeError):
    """Raised by ``gradcheck`` and ``gradgradcheck``: analytic and numerical gradients disagree
    (or backward is not reentrant, or a gradient has the wrong dtype)."""


def _as_tuple(x: Any) -> tuple:
    if isinstance(x, tuple):
        return x
    if isinstance(x, list):
        return tuple(x)
    return (x,)


def _host(t: Tensor) -> np.ndarray:
    """A float64 (complex128 for a complex tensor) NumPy copy of ``t``'s values."""
    a = np.asarray(_backend.to_numpy(t._data))
    return a.astype(np.complex128 if a.dtype.kind == "c" else np.float64)


def _cotangent(rng: np.random.Generator, o: Tensor) -> np.ndarray:
    """A random cotangent for output ``o``: complex (random real and imaginary parts) when ``o``
    is complex, so both parts of the output are checked."""
    shape = tuple(o.shape)
    v = rng.standard_normal(shape)
    if o._data.dtype.kind == "c":
        v = v + 1j * rng.standard_normal(shape)
    return v


def _complex_note(xs: Sequence[Any], outs: Sequence[Any]) -> str:
    if any(getattr(t, "_data", None) is not None and t._data.dtype.kind == "c"
           for t in (*xs, *outs)):
        return (" (complex: the gradient of Re(sum(conj(v) * out)) against dL/dRe + i dL/dIm "
                "of each input element, PyTorch's conjugate Wirtinger convention)")
    return ""


def _differentiable(outs: tuple) -> list[int]:
    """The positions of the outputs that require grad (PyTorch checks only those)."""
    return [k for k, o in enumerate(outs) if isinstance(o, Tensor) and o.requires_grad]


def _float_outputs(outs: tuple) -> list[int]:
    return [k for k, o in enumerate(outs) if isinstance(o, Tensor) and o.is_floating_point()]


def _fail(raise_exception: bool, message: str) -> bool:
    if raise_exception:
        raise GradcheckError(message)
    return False


def gradcheck(
    func: Callable[..., Any],
    inputs: Tensor | Sequence[Any],
    *,
    eps: float = 1e-6,
    atol: float = 1e-5,
    rtol: float = 1e-3,
    raise_exception: bool = True,
    nondet_tol: float = 0.0,
    check_undefined_grad: bool = True,
    check_grad_dtypes: bool = False,
    check_batched_grad: bool = False,
    check_batched_forward_grad: bool = False,
    check_forward_ad: bool = False,
    check_backward_ad: bool = True,
    fast_mode: bool = False,
    masked: bool | None = None,
) -> bool:
    """Check ``func``'s gradients w.r.t. every input tensor with ``requires_grad`` (use float64).

    PyTorch's parameters and defaults. ``nondet_tol``: backward runs twice and the results may
    differ by this much. ``check_undefined_grad``: with several differentiable outputs, backward
    through each output alone (the others get no gradient) must add up to the full one.
    ``check_grad_dtypes``: each gradient has its input's dtype. ``check_batched_grad`` and
    ``check_batched_forward_grad`` add nothing (ember's ``vmap`` is a loop over the unbatched
    computation); ``masked`` concerns sparse inputs, which ember lacks. ``check_forward_ad``
    needs forward-mode AD, which ember lacks (NotImplementedError).
    """
    if check_forward_ad:
        raise NotImplementedError(
            "gradcheck(check_forward_ad=True): ember has no forward-mode AD "
            "(torch.autograd.forward_ad); check reverse mode only (check_forward_ad=False)")
    if not check_backward_ad:
        raise AssertionError(
            "Expected at least one of check_forward_ad or check_backward_ad to be True")
    inputs = _as_tuple(inputs)
    diff = [i for i, x in enumerate(inputs) if isinstance(x, Tensor) and x.requires_grad]
    if not diff:
        raise ValueError(
            "gradcheck expects at least one input tensor to require gradient, but none of them "
            "have requires_grad=True.")
    for i in diff:
        if inputs[i].dtype.name not in ("float64", "complex128"):
            warnings.warn(
                f"Input #{i} requires gradient and is not a double precision floating point or "
                f"complex (it is {inputs[i].dtype}). This check will likely fail if all the "
                "inputs are not of double precision floating point or complex.",
                stacklevel=2,
            )
    rng = np.random.default_rng(0)
    outs = _as_tuple(func(*inputs))
    keep = _differentiable(outs)
    if not keep:
        return _check_no_differentiable_outputs(func, inputs, diff, outs, eps, raise_exception)
    vs = [_cotangent(rng, outs[k]) for k in keep]
    xs = [inputs[i] for i in diff]

    def vjp(which: list[int]) -> list:
        got = autograd_grad(
            [outs[keep[j]] for j in which], xs,
            [Tensor._make(vs[j].astype(outs[keep[j]]._data.dtype)) for j in which],
            retain_graph=True, allow_unused=True)
        return list(got)

    grads = vjp(list(range(len(keep))))
    analytic = [np.zeros(x.shape) if g is None else _host(g) for g, x in zip(grads, xs)]
    for g, x, i in zip(grads, xs, diff):
        if g is not None and tuple(g.shape) != tuple(x.shape):
            return _fail(raise_exception, f"Gradient for input #{i} has shape {tuple(g.shape)}, "
                                          f"expected the input's shape {tuple(x.shape)}")
        if check_grad_dtypes and g is not None and g.dtype != x.dtype:
            return _fail(raise_exception, f"Gradient has dtype mismatch: input #{i} is "
                                          f"{x.dtype}, its gradient {g.dtype}")

    # the numerical side
    def total(vals: tuple) -> float:
        s = 0.0
        for j, k in enumerate(keep):
            s += float(np.real(np.conj(vs[j]) * _host(vals[k])).sum())
        return s

    if fast_mode:
        bad = _fast_check(func, inputs, diff, xs, outs, keep, eps, rtol, atol)
        if bad is not None:
            bad += _complex_note(xs, [outs[k] for k in keep])
        if bad is not None:
            return _fail(raise_exception, bad)
    for n, (i, x) in enumerate(zip(diff, xs)):
        if fast_mode:
            break  # (checked above)
        numeric_arr = _per_element(func, inputs, x, eps, total)
        if not np.allclose(analytic[n], numeric_arr, rtol=rtol, atol=atol):
            shown_n, shown_a = numeric_arr.reshape(-1), analytic[n].reshape(-1)
            worst = int(np.argmax(np.abs(shown_a - shown_n)))
            return _fail(raise_exception, (
                f"Jacobian mismatch for output {keep if len(keep) > 1 else keep[0]} with respect "
                f"to input {i} (shape {tuple(x.shape)}), compared as v^T J, one entry per input "
                f"element with a random cotangent v per output"
                f"{_complex_note(xs, [outs[k] for k in keep])},\nnumerical:{shown_n[:8]}\n"
                f"analytical:{shown_a[:8]}\nlargest difference at flat index {worst}: numerical "
                f"{shown_n[worst]!r}, analytical {shown_a[worst]!r}"))

    # backward is reentrant: the same cotangents give the same gradients again
    again = vjp(list(range(len(keep))))
    for g, a, i in zip(again, analytic, diff):
        b = np.zeros(a.shape) if g is None else _host(g)
        if b.shape != a.shape or np.abs(b - a).max(initial=0.0) > nondet_tol:
            return _fail(raise_exception, (
                "Backward is not reentrant, i.e., running backward with same input and "
                "grad_output multiple times gives different values, although analytical gradient "
                f"matches numerical gradient (input #{i}). The tolerance for nondeterminism was "
                f"{nondet_tol}: pass nondet_tol=<tol> if the op is meant to be non-deterministic."))

    if check_undefined_grad and len(keep) > 1:
        summed = [np.zeros(a.shape) for a in analytic]
        for j in range(len(keep)):  # the other outputs get no gradient at all
            for n, g in enumerate(vjp([j])):
                if g is not None:
                    summed[n] = summed[n] + _host(g)
        for s, a, i in zip(summed, analytic, diff):
            if not np.allclose(s, a, rtol=rtol, atol=atol):
                return _fail(raise_exception, (
                    f"Backward through each output alone (the others undefined) does not add up "
                    f"to backward through all outputs, for input #{i}: the backward does not "
                    "handle undefined output gradients (None, or zeros when materialized) "
                    "correctly."))
    return True


def _per_element(func: Callable, inputs: tuple, x: Tensor, eps: float,
                 total: Callable[[tuple], float]) -> np.ndarray:
    """``d total(func(inputs)) / d x`` by central differences, one element of ``x`` at a time,
    written through ``x``'s own strides (a non-contiguous view is perturbed where it lives); for
    a complex ``x``, ``d total / d Re + i d total / d Im`` (both parts perturbed in turn)."""
    arr = x._data
    steps = (eps, 1j * eps) if arr.dtype.kind == "c" else (eps,)
    numeric = np.zeros(arr.shape, np.complex128 if len(steps) == 2 else np.float64)
    for idx in np.ndindex(*arr.shape):  # not under no_grad: func may itself differentiate
        orig = arr[idx].item()
        for step in steps:
            arr[idx] = orig + step
            plus = total(_as_tuple(func(*inputs)))
            arr[idx] = orig - step
            minus = total(_as_tuple(func(*inputs)))
            arr[idx] = orig
            d = (plus - minus) / (2 * eps)
            numeric[idx] += d if step == eps else 1j * d
    return numeric


def _fast_check(func: Callable, inputs: tuple, diff: list[int], xs: list, outs: tuple,
                keep: list[int], eps: float, rtol: float, atol: float) -> str | None:
    """PyTorch's fast mode, draw for draw: one direction ``u`` per input that requires grad, then
    one cotangent ``v`` per differentiable output, each ``rand(numel)`` from a fresh default-seeded
    generator (float32 draws in the tensor's dtype, scaled to unit norm); for each (input, output)
    pair, the numerical ``v . (J u)`` (central differences along ``eps u``) against the analytic
    ``(v^T J) . u``, within ``atol * sum(u) * sum(v) + rtol * |numerical|``. With the same draws
    as PyTorch's, a borderline function (a kink within ``eps``) passes or fails as it does there.
    Returns the failure's message, or None."""
    from ..ops.random import Generator, rand

    gen = Generator()

    def unit(t: Tensor) -> np.ndarray:
        if t._data.dtype.kind == "c":  # a complex direction: real, then imaginary draws
            vec = _host(rand(t.numel(), generator=gen)) + 1j * _host(
                rand(t.numel(), generator=gen))
            vec /= np.sqrt((np.abs(vec) ** 2).sum())
            return vec.reshape(tuple(t.shape))
        vec = _host(rand(t.numel(), generator=gen)).astype(t._data.dtype)
        vec /= np.sqrt((vec * vec).sum())
        return vec.reshape(tuple(t.shape))

    def size(u: np.ndarray) -> float:
        return float(u.sum()) if u.dtype.kind != "c" else float(np.abs(u).sum())

    us = [unit(x) for x in xs]
    vs = [unit(outs[k]) for k in keep]
    # analytic: one backward per output, its v alone
    analytic = []
    for j, k in enumerate(keep):
        got = autograd_grad([outs[k]], xs, [Tensor._make(vs[j].astype(outs[k]._data.dtype))],
                            retain_graph=True, allow_unused=True)
        analytic.append([0.0 if g is None else float(np.real(np.conj(_host(g)) * u).sum())
                         for g, u in zip(got, us)])
    for n, (i, x) in enumerate(zip(diff, xs)):
        jus = _directional_each(func, inputs, x, us[n], eps, keep)
        for j, k in enumerate(keep):
            numeric = float(np.real(np.conj(vs[j]) * jus[j]).sum())
            expected = analytic[j][n]
            tol = atol * size(us[n]) * size(vs[j]) + rtol * abs(numeric)
            if not abs(expected - numeric) <= tol:
                return (f"Jacobian mismatch for output {k} with respect to input {i} (shape "
                        f"{tuple(x.shape)}), compared as v^T J u along a random direction u "
                        f"(fast_mode, PyTorch's draws),\nnumerical:{numeric!r}\n"
                        f"analytical:{expected!r}")
    return None


def _directional_each(func: Callable, inputs: tuple, x: Tensor, u: np.ndarray, eps: float,
                      keep: list[int]) -> list[np.ndarray]:
    """``J u`` for each output in ``keep``: (f(x + eps u) - f(x - eps u)) / (2 eps), the minus
    side evaluated first, as PyTorch's."""
    arr = x._data
    orig = arr.copy()
    xp = _backend.xp_of(arr)
    step = xp.asarray(u * eps, dtype=arr.dtype)
    try:
        arr[...] = orig - step
        minus = [_host(o) for o in _as_tuple(func(*inputs))]
        arr[...] = orig + step
        plus = [_host(o) for o in _as_tuple(func(*inputs))]
    finally:
        arr[...] = orig
    return [(plus[k] - minus[k]) / (2 * eps) for k in keep]


def _check_no_differentiable_outputs(func: Callable, inputs: tuple, diff: list[int], outs: tuple,
                                     eps: float, raise_exception: bool) -> bool:
    """No output requires grad: each floating output's numerical gradient must be zero."""
    floats = _float_outputs(outs)
    for k in floats:
        def value(vals: tuple, k: int = k) -> float:
            h = _host(vals[k])
            return float(h.real.sum() + h.imag.sum()) if h.dtype.kind == "c" else float(h.sum())

        for i in diff:
            numeric = _per_element(func, inputs, inputs[i], eps, value)
            if np.any(numeric != 0):
                return _fail(raise_exception, (
                    f"Numerical gradient for function expected to be zero: output {k} does not "
                    f"require grad, yet it changes with input #{i} (numerical gradient "
                    f"{numeric.reshape(-1)[:8]}); did the function detach() something it "
                    "should not?"))
    return True


def gradgradcheck(
    func: Callable[..., Any],
    inputs: Tensor | Sequence[Any],
    grad_outputs: Tensor | Sequence[Any] | None = None,
    *,
    eps: float = 1e-6,
    atol: float = 1e-5,
    rtol: float = 1e-3,
    gen_non_contig_grad_outputs: bool = False,
    raise_exception: bool = True,
    nondet_tol: float = 0.0,
    check_undefined_grad: bool = True,
    check_grad_dtypes: bool = False,
    check_batched_grad: bool = False,
    check_fwd_over_rev: bool = False,
    check_rev_over_rev: bool = True,
    fast_mode: bool = False,
    masked: bool = False,
) -> bool:
    """Check second derivatives: ``gradcheck`` of ``(x, v) -> grad(func(x), x, v)`` (the first
    backward recorded with create_graph). ``grad_outputs`` (the ``v``) are random when not given,
    non-contiguous with ``gen_non_contig_grad_outputs``; PyTorch's parameters and defaults."""
    if check_fwd_over_rev:
        raise NotImplementedError(
            "gradgradcheck(check_fwd_over_rev=True): ember has no forward-mode AD "
            "(torch.autograd.forward_ad); check reverse over reverse only")
    if not check_rev_over_rev:
        raise AssertionError(
            "Expected at least one of check_fwd_over_rev or check_rev_over_rev to be True")
    inputs = _as_tuple(inputs)
    outs = _as_tuple(func(*inputs))
    keep = _differentiable(outs)
    if grad_outputs is None:
        rng = np.random.default_rng(1)
        grad_outputs = tuple(
            _random_like(outs[k], rng, gen_non_contig_grad_outputs) for k in keep)
    else:
        grad_outputs = _as_tuple(grad_outputs)
    n_in = len(inputs)

    def first_grads(*args: Any) -> tuple:
        xs, vs = args[:n_in], args[n_in:]
        o = _as_tuple(func(*xs))
        ks = _differentiable(o)
        d = [x for x in xs if isinstance(x, Tensor) and x.requires_grad]
        gs = autograd_grad([o[k] for k in ks], d, list(vs)[: len(ks)], create_graph=True,
                           allow_unused=True)
        return tuple(g for g in gs if g is not None)

    return gradcheck(first_grads, inputs + grad_outputs, eps=eps, atol=atol, rtol=rtol,
                     raise_exception=raise_exception, nondet_tol=nondet_tol,
                     check_undefined_grad=check_undefined_grad,
                     check_grad_dtypes=check_grad_dtypes, check_batched_grad=check_batched_grad,
                     fast_mode=fast_mode, masked=masked)


def _random_like(o: Tensor, rng: np.random.Generator, non_contiguous: bool) -> Tensor:
    """A random cotangent for output ``o`` that requires grad (a strided view if asked; random
    real and imaginary parts for a complex output)."""
    shape = tuple(o.shape)
    dtype = o._data.dtype
    if non_contiguous and len(shape) > 0:
        wide = _cotangent(rng, Tensor._make(np.empty((*shape[:-1], shape[-1] * 2), dtype)))
        arr = wide.astype(dtype)[..., ::2]
    else:
        arr = _cotangent(rng, o).astype(dtype)
    xp = _backend.xp_of(o._data)
    if xp is not np:
        arr = xp.asarray(arr)
    return Tensor._make(arr).requires_grad_()
