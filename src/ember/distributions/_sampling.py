"""PyTorch's CPU samplers for the Gamma family, drawn from ember's generator (PyTorch's stream).

PyTorch samples Gamma(alpha, 1) one element at a time, in memory order, with Marsaglia and
Tsang's method (2000): below alpha = 1 the sample of alpha + 1 is scaled by ``U ** (1 / alpha)``;
then normals ``x`` (until ``y = 1 + c x`` is positive) and a uniform decide acceptance, with the
squeeze test ``u < 1 - 0.0331 x**4`` before the logarithmic one. Its uniforms are float64
(``1 - u`` of a 53-bit draw) and its normals the scalar Box-Muller path, whose second value waits
in the generator. The arithmetic is float64, except that a float32 (or smaller) ``alpha`` is
stepped up and has 1/3 taken off in float32, and the constants are float32 literals, as in
PyTorch's kernel; the result is rounded to the input's dtype and kept above its smallest normal
number. ``Dirichlet`` (and ``Beta``) draw their gammas in float64 and normalise them in float64
(``_special.dirichlet``).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..ops import _mt19937

_THIRD_F = float(np.float32(1.0) / np.float32(3.0))  # 1.0f / 3.0f
_SQUEEZE_F = float(np.float32(0.0331))  # 0.0331f


class Draws:
    """PyTorch's scalar draws (float64 uniforms, cached Box-Muller normals) from a generator,
    served from a buffer of uniforms; ``close()`` leaves the generator just past the words used
    (and the normal cache as PyTorch leaves it)."""

    def __init__(self, gen: Any, hint: int) -> None:
        self.gen = gen
        self.bg = gen._bg
        self.saved = self.bg.state
        self.supply: list[float] = _mt19937.unit53(self.bg, max(hint, 16)).tolist()
        self.used = 0

    def uniform(self) -> float:
        if self.used == len(self.supply):
            self.supply += _mt19937.unit53(self.bg, len(self.supply)).tolist()
        self.used += 1
        return self.supply[self.used - 1]

    def normal(self) -> float:
        gen = self.gen
        if gen._normal is not None:
            z, gen._normal = gen._normal, None
            return z
        u1 = self.uniform()  # the angle, then the radius (as _mt19937.scalar_normals)
        u2 = self.uniform()
        r = math.sqrt(-2.0 * math.log1p(-u2))
        theta = 2.0 * math.pi * u1
        gen._normal = r * math.sin(theta)
        return r * math.cos(theta)

    def close(self) -> None:
        self.bg.state = self.saved
        self.bg.random_raw(2 * self.used)


def _gamma_one(alpha: float, single: bool, d: Draws) -> float:
    """One Gamma(alpha, 1) sample (before the final rounding); ``single``: alpha is float32."""
    f32 = np.float32
    scale = 1.0
    if alpha < 1.0:
        if alpha == 0.0:
            return 0.0
        inv = float(f32(1.0) / f32(alpha)) if single else 1.0 / alpha
        scale *= (1.0 - d.uniform()) ** inv
        alpha = float(f32(alpha) + f32(1.0)) if single else alpha + 1.0
    dd = float(f32(alpha) - f32(_THIRD_F)) if single else alpha - _THIRD_F
    c = 1.0 / math.sqrt(9.0 * dd)
    while True:
        while True:
            x = d.normal()
            y = 1.0 + c * x
            if y > 0:
                break
        v = y * y * y
        u = 1.0 - d.uniform()
        xx = x * x
        if u < 1.0 - _SQUEEZE_F * xx * xx:
            return scale * dd * v
        if math.log(u) < 0.5 * xx + dd * (1.0 - v + math.log(v)):
            return scale * dd * v


def standard_gamma(gen: Any, alpha: np.ndarray) -> np.ndarray:
    """PyTorch's ``_standard_gamma`` of a flat array of concentrations (float32, float64, or a
    smaller float computed as float32), in its dtype."""
    dt = alpha.dtype
    single = dt != np.float64
    tiny = float(np.finfo(dt).tiny)
    d = Draws(gen, 4 * alpha.size)
    try:
        vals = [_gamma_one(a, single, d) for a in alpha.astype(np.float64).tolist()]
    finally:
        d.close()
    out = np.asarray(vals, np.float64).astype(dt)
    return np.maximum(out, dt.type(tiny))


# log(k!) - Stirling's approximation of it, for k < 10 (the tail formula from 10 up)
_STIRLING_TAIL = (0.08106146679532726, 0.04134069595540929, 0.02767792568499834,
                  0.02079067210376509, 0.01664469118982119, 0.01387612882307075,
                  0.01189670994589177, 0.01041126526197209, 0.009255462182712733,
                  0.008330563433362871)


def _stirling_tail(k: float) -> float:
    if k <= 9:
        return _STIRLING_TAIL[int(k)]
    kp1sq = (k + 1) * (k + 1)
    return (1.0 / 12 - (1.0 / 360 - 1.0 / 1260 / kp1sq) / kp1sq) / (k + 1)


def _binomial_one(n: float, p: float, single: bool, d: Draws) -> float:
    """PyTorch's binomial sample: inversion by geometric jumps below n p = 10, else Hormann's
    BTRS; p > 1/2 samples the failures. ``single``: n and p are float32 (their own products,
    square root, log1p and floor in float32, as PyTorch's kernel computes them)."""
    sc = np.float32 if single else float
    if n <= 0.0 or p <= 0.0:
        return 0.0
    if p >= 1.0:
        return n
    if p > 0.5:
        q = float(sc(1.0) - sc(p))
        return n - _binomial_low(n, q, sc, d)
    if p <= 0.5:
        return _binomial_low(n, p, sc, d)
    return math.nan


def _binomial_low(n: float, p: float, sc: Any, d: Draws) -> float:
    fn, fp = sc(n), sc(p)
    if float(fn * fp) < 10.0:  # inversion
        logp = float(np.log1p(-fp)) if sc is np.float32 else math.log1p(-p)
        total, count = 0.0, 0.0
        while True:
            total += math.ceil(math.log(d.uniform()) / logp)
            if total > n:
                return count
            count += 1
    std = float(np.sqrt(fn * fp * (sc(1) - fp))) if sc is np.float32 else \
        math.sqrt(n * p * (1 - p))
    b = 1.15 + 2.53 * std
    a = -0.0873 + 0.0248 * b + 0.01 * p
    c = float(fn * fp) + 0.5
    v_r = 0.92 - 4.2 / b
    r = float(fp / (sc(1) - fp))
    alpha = (2.83 + 5.1 / b) * std
    m = float(math.floor(float((fn + sc(1)) * fp)))
    while True:
        u = d.uniform() - 0.5
        v = d.uniform()
        us = 0.5 - abs(u)
        k = float(sc(math.floor((2 * a / us + b) * u + c)))
        if k < 0 or k > n:
            continue
        if us >= 0.07 and v <= v_r:
            return k
        v = math.log(v * alpha / (a / (us * us) + b))
        bound = ((m + 0.5) * math.log((m + 1) / (r * (n - m + 1)))
                 + (n + 1) * math.log((n - m + 1) / (n - k + 1))
                 + (k + 0.5) * math.log(r * (n - k + 1) / (k + 1))
                 + _stirling_tail(m) + _stirling_tail(n - m)
                 - _stirling_tail(k) - _stirling_tail(n - k))
        if v <= bound:
            return k


def binomial(gen: Any, count: np.ndarray, prob: np.ndarray) -> np.ndarray:
    """PyTorch's ``binomial`` of flat count and prob arrays (one dtype), in that dtype."""
    dt = prob.dtype
    single = dt != np.float64
    d = Draws(gen, 4 * prob.size)
    try:
        vals = [_binomial_one(n, p, single, d) for n, p in
                zip(count.astype(np.float64).tolist(), prob.astype(np.float64).tolist())]
    finally:
        d.close()
    return np.asarray(vals, np.float64).astype(dt)
