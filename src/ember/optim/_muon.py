"""Muon: momentum orthogonalized by Newton-Schulz iterations (Keller Jordan), for the 2-D
weights of hidden layers; biases, embeddings and other parameters go to another optimizer."""

from __future__ import annotations

import math
from types import SimpleNamespace
from typing import Any

import numpy as np

from .. import _dtype
from .._tensor import Tensor
from ..ops import sparse as _sparse
from .optimizer import Optimizer, ParamsT, _lerp_, _norm, _xp

__all__ = ["Muon"]

_ADJUST_LR_FNS = ("original", "match_rms_adamw")


class Muon(Optimizer):
    r"""Muon, PyTorch's algorithm::

        B = momentum * B + (1 - momentum) * g           (as lerp(B, g, 1 - momentum))
        M = lerp(g, B, momentum) if nesterov else B
        O = NS(M): X = M / max(||M||, eps), transposed when tall, then ns_steps times
            A = X X^T;   X = a X + (b A + c A A) X      ((a, b, c) = ns_coefficients)
        p = p * (1 - lr * weight_decay)
        p = p - lr * ratio * O

    The Newton-Schulz iteration runs in bfloat16 (as PyTorch's: products summed in float32,
    each result rounded to bfloat16), so ember's steps match PyTorch's. ``ratio`` follows
    ``adjust_lr_fn`` for a (rows, cols) weight: ``sqrt(max(1, rows / cols))`` ("original",
    the default) or ``0.2 * sqrt(max(rows, cols))`` ("match_rms_adamw", which lets Muon reuse
    AdamW's learning rate and weight decay).

    State per parameter: ``'momentum_buffer'`` (B). Every parameter must be 2-D; complex
    parameters and sparse gradients are refused.

    Args:
        params: 2-D parameters or parameter groups.
        lr: learning rate (float or 0-d tensor). Default 1e-3.
        weight_decay: decoupled weight decay. Default 0.1.
        momentum: momentum factor. Default 0.95.
        nesterov: use Nesterov momentum. Default True.
        ns_coefficients: (a, b, c) of the quintic iteration. Default (3.4445, -4.775, 2.0315).
        eps: the smallest norm divided by. Default 1e-7.
        ns_steps: Newton-Schulz iterations (fewer than 100). Default 5.
        adjust_lr_fn: None (as "original"), "original" or "match_rms_adamw".

    Example::

        hidden = [p for p in model.parameters() if p.ndim == 2]
        others = [p for p in model.parameters() if p.ndim != 2]
        opts = [ember.optim.Muon(hidden, lr=0.02), ember.optim.AdamW(others, lr=3e-4)]
    """

    _complex_as_real = False  # (it refuses complex parameters itself, as PyTorch's)

    def __init__(
        self,
        params: ParamsT,
        lr: float | Tensor = 1e-3,
        weight_decay: float = 0.1,
        momentum: float = 0.95,
        nesterov: bool = True,
        ns_coefficients: tuple[float, float, float] = (3.4445, -4.775, 2.0315),
        eps: float = 1e-7,
        ns_steps: int = 5,
        adjust_lr_fn: str | None = None,
    ) -> None:
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 <= lr:
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 <= momentum:
            raise ValueError(f"momentum should be >= 0 but is: {momentum}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight decay should be >= 0 but is: {weight_decay}")
        if adjust_lr_fn is not None and adjust_lr_fn not in _ADJUST_LR_FNS:
            raise ValueError(f"Adjust learning rate function {adjust_lr_fn} is not supported "
                             f"(use None, {' or '.join(map(repr, _ADJUST_LR_FNS))})")
        defaults = dict(
            lr=lr, weight_decay=weight_decay, momentum=momentum, nesterov=nesterov,
            ns_coefficients=ns_coefficients, eps=eps, ns_steps=ns_steps,
            adjust_lr_fn=adjust_lr_fn,
        )
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                if p.ndim != 2:
                    raise ValueError(
                        "Muon only supports 2D parameters whereas we found a parameter with "
                        f"size: {p.size()} (give biases, embeddings and other parameters to "
                        "another optimizer, such as AdamW)"
                    )

    def _update(self, p: Tensor, g: Any, o: SimpleNamespace) -> None:
        if isinstance(g, _sparse.RECORDS):
            raise self._no_sparse()
        d = p._data
        if d.dtype.kind == "c":
            raise RuntimeError("Muon does not support complex parameters")
        if g.ndim != 2:
            raise ValueError(f"Param gradient must be a 2D matrix, got shape {list(g.shape)}")
        xp = _xp(d)
        state = self.state[p]
        if "momentum_buffer" not in state:
            state["momentum_buffer"] = Tensor._make(xp.zeros_like(g))
        buf = state["momentum_buffer"]._data
        m = xp.empty(g.shape, g.dtype)  # the step's one full-size temporary of the parameter's dtype
        _lerp_(buf, g, 1.0 - o.momentum, scratch=m)
        if o.nesterov:
            xp.copyto(m, g)
            _lerp_(m, buf, o.momentum, scratch=xp.empty_like(g) if o.momentum < 0.5 else None)
        else:
            xp.copyto(m, buf)
        if m.dtype != np.float32:  # rounded once, straight to bfloat16, as PyTorch's cast
            m = _round(m).astype(np.float32)  # (the float64 buffer goes now)
        u = _newton_schulz(m, o.ns_coefficients, o._group["ns_steps"], o.eps)  # (an int)
        lr = o._group["lr"]
        # a tensor lr stays a scalar of its dtype (PyTorch's arithmetic rounds through it)
        lr = np.dtype(lr.dtype.np).type(float(lr)) if isinstance(lr, Tensor) else o.lr
        rows, cols = d.shape[:2]
        if o.adjust_lr_fn is None or o.adjust_lr_fn == "original":
            ratio = math.sqrt(max(1, rows / cols))
        elif o.adjust_lr_fn == "match_rms_adamw":
            ratio = 0.2 * math.sqrt(max(rows, cols))
        else:
            ratio = 1.0
        d *= 1 - lr * o.weight_decay
        if u.dtype != d.dtype:  # (a float64 parameter adds bfloat16 values in float64)
            u = u.astype(d.dtype)
        u *= -(lr * ratio)
        d += u


def _newton_schulz(m: Any, coefficients: tuple, steps: int, eps: float) -> Any:
    """``m`` orthogonalised by ``steps`` quintic Newton-Schulz iterations in bfloat16, as
    PyTorch computes them: a float32 array of bfloat16 values (each product is summed in
    float32 and rounded to bfloat16, as PyTorch's bfloat16 matmul does). ``m`` (C-contiguous)
    is overwritten and returned when it is float32; the iteration uses one more array of its
    size and two square ones of its smaller dimension."""
    if steps >= 100:
        raise ValueError("Number of steps must be less than 100 for computational efficiency")
    if m.ndim != 2:
        raise ValueError("Input tensor gradient must be a 2D matrix")
    if len(coefficients) != 3:
        raise ValueError("Coefficients must be a tuple of exactly 3 values")
    xp = _xp(m)
    f32 = np.float32
    a, b, c = (f32(v) for v in coefficients)
    x = _round(m) if m.dtype == f32 else _round(m).astype(f32)
    y = xp.empty_like(x)  # the iteration writes into y, then swaps x and y
    tall = m.shape[0] > m.shape[1]
    xs, ys = (x.T, y.T) if tall else (x, y)  # (wide views of the contiguous buffers)
    n = xp.asarray(_norm(x), dtype=f32)
    _round(n)
    xp.maximum(n, f32(eps), out=n)
    _round(n)
    x /= n
    _round(x)
    for _ in range(steps):
        gram = _round(xs @ xs.T)
        poly = gram @ gram
        poly *= c
        gram *= b
        poly += gram
        _round(poly)
        xp.matmul(poly, xs, out=ys)
        del gram, poly  # (before the next iteration makes its own)
        x *= a
        y += x
        _round(y)
        x, y, xs, ys = y, x, ys, xs
    return x


_BLOCK = 65536  # elements rounded per pass: the bfloat16 copy stays small


def _round(x: Any) -> Any:
    """``x`` (a C-contiguous float array) rounded to bfloat16 values in place, a block at a
    time; returns it."""
    bf16 = _dtype.bfloat16.np
    flat = x.reshape(-1)
    for i in range(0, flat.size, _BLOCK):
        block = flat[i:i + _BLOCK]
        block[...] = block.astype(bf16)
    return x
