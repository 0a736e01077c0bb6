"""``gradcheck`` / ``gradgradcheck``: compare analytic gradients with float64 central differences.

The analytic side is a vector-Jacobian product with a *random* cotangent ``v`` (a rule that
forgets to multiply by ``grad`` fails, which ``.sum()`` would hide); the numerical side perturbs
each input element by ``eps`` and measures ``v . (f(x + eps) - f(x - eps)) / (2 eps)``.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .._tensor import Tensor
from . import grad as autograd_grad


class GradcheckError(RuntimeError):
    """Analytic and numerical gradients disagree."""


def _as_tuple(x: Any) -> tuple:
    return x if isinstance(x, tuple) else (x,)


def _outputs(fn: Callable, inputs: Sequence[Any]) -> list:
    return [o for o in _as_tuple(fn(*inputs)) if isinstance(o, Tensor) and o.is_floating_point()]


def gradcheck(
    fn: Callable,
    inputs: Any,
    *,
    eps: float = 1e-6,
    atol: float = 1e-5,
    rtol: float = 1e-3,
    raise_exception: bool = True,
    seed: int = 0,
    nondet_tol: float = 0.0,
    check_undefined_grad: bool = True,
    fast_mode: bool = False,
    **_: Any,
) -> bool:
    """Check ``fn``'s gradients w.r.t. every input with ``requires_grad`` (use float64 inputs)."""
    inputs = _as_tuple(inputs)
    diff = [i for i, x in enumerate(inputs) if isinstance(x, Tensor) and x.requires_grad]
    for i in diff:
        if inputs[i].dtype.name != "float64":
            warnings.warn(
                f"gradcheck input {i} is {inputs[i].dtype}, not float64: expect it to fail",
                stacklevel=2,
            )
    rng = np.random.default_rng(seed)
    outs = _outputs(fn, inputs)
    vs = [Tensor._make(rng.standard_normal(o.shape).astype(o._data.dtype)) for o in outs]
    diff_outs = [(o, v) for o, v in zip(outs, vs) if o.requires_grad]
    analytic: list[Any] = [None] * len(diff)
    if diff_outs:
        got = autograd_grad([o for o, _ in diff_outs], [inputs[i] for i in diff],
                            [v for _, v in diff_outs], allow_unused=True)
        analytic = [g._data if g is not None else None for g in got]

    def scalar(vals: list) -> float:
        total = 0.0
        for o, v in zip(vals, vs):
            total += float((np.asarray(o._data, np.float64) * np.asarray(v._data, np.float64)).sum())
        return total

    for k, i in enumerate(diff):
        x = inputs[i]
        flat = x._data.reshape(-1)
        numeric = np.zeros(flat.size)
        for j in range(flat.size):  # not under no_grad: fn may itself differentiate
            orig = flat[j].item()
            flat[j] = orig + eps
            plus = scalar(_outputs(fn, inputs))
            flat[j] = orig - eps
            minus = scalar(_outputs(fn, inputs))
            flat[j] = orig
            numeric[j] = (plus - minus) / (2 * eps)
        a = analytic[k]
        a = np.zeros(flat.size) if a is None else np.asarray(a, np.float64).reshape(-1)
        if a.shape != numeric.shape or not np.allclose(a, numeric, rtol=rtol, atol=atol):
            if not raise_exception:
                return False
            worst = int(np.argmax(np.abs(a - numeric))) if a.shape == numeric.shape else -1
            raise GradcheckError(
                f"Jacobian mismatch for input {i} (shape {tuple(x.shape)}):\n"
                f"numerical: {numeric[:8]}...\nanalytical: {a[:8]}...\n"
                f"largest difference at flat index {worst}"
            )
    return True


def gradgradcheck(
    fn: Callable,
    inputs: Any,
    grad_outputs: Any = None,
    *,
    eps: float = 1e-6,
    atol: float = 1e-5,
    rtol: float = 1e-3,
    raise_exception: bool = True,
    seed: int = 1,
    **_: Any,
) -> bool:
    """Check second derivatives: gradcheck of ``v -> grad(fn(x), x, v)`` (needs create_graph)."""
    inputs = _as_tuple(inputs)
    rng = np.random.default_rng(seed)
    outs = _outputs(fn, inputs)
    if grad_outputs is None:
        grad_outputs = [
            Tensor._make(rng.standard_normal(o.shape).astype(o._data.dtype)).requires_grad_()
            for o in outs
        ]
    grad_outputs = list(_as_tuple(grad_outputs) if not isinstance(grad_outputs, list) else grad_outputs)
    diff = [x for x in inputs if isinstance(x, Tensor) and x.requires_grad]
    n_in = len(inputs)

    def first_grads(*args: Any) -> tuple:
        xs, vs = args[:n_in], args[n_in:]
        o = [t for t in _outputs(fn, xs) if t.requires_grad]
        d = [x for x in xs if isinstance(x, Tensor) and x.requires_grad]
        gs = autograd_grad(o, d, list(vs)[: len(o)], create_graph=True, allow_unused=True)
        return tuple(g for g in gs if g is not None)

    if not diff:
        return True
    return gradcheck(first_grads, tuple(inputs) + tuple(grad_outputs), eps=eps, atol=atol,
                     rtol=rtol, raise_exception=raise_exception, seed=seed)
