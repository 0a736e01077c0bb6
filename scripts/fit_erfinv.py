"""Fit the two polynomials of the float32 erfinv kernel (src/ember/_kernels.c) and print them
as C arrays (lowest degree first).

erfinv(x) = x P(t) with w = -log(1 - x^2): the central piece in t = w/W0*2 - 1 for w <= W0, the
tail in t = (sqrt(w) - S0)/(S1 - S0)*2 - 1 for w up to WMAX (float32's largest x below 1 gives
w = 15.94). Relative least squares at Chebyshev points against mpmath at 40 digits (close to
minimax); the maximum relative error on a dense grid is printed beside each.
``python scripts/fit_erfinv.py`` (needs mpmath; about half a minute). tests/test_kernels_fma.py
checks the kernel against mpmath, so a refit that loses accuracy fails there.
"""

from __future__ import annotations

import mpmath as mp
import numpy as np

mp.mp.dps = 40
W0 = 5.0      # central piece: w in [0, W0]
WMAX = 16.0   # tail: w in [W0, WMAX]


def g(w):  # erfinv(x)/x at w = -log(1 - x^2)
    if w == 0:
        return mp.sqrt(mp.pi) / 2
    x = mp.sqrt(-mp.expm1(-w))
    return mp.erfinv(x) / x


def fit(fun, deg: int, npts: int = 600) -> tuple[np.ndarray, float]:
    """Coefficients in t on [-1, 1] of fun(t)."""
    k = np.arange(npts)
    t = np.cos(np.pi * (k + 0.5) / npts)
    f = np.array([float(fun(mp.mpf(float(q)))) for q in t])
    vander = np.polynomial.chebyshev.chebvander(t, deg)
    c, *_ = np.linalg.lstsq(vander / np.abs(f)[:, None], f / np.abs(f), rcond=None)
    mono = np.polynomial.chebyshev.cheb2poly(c)
    grid = np.linspace(-1, 1, 4001)
    exact = np.array([float(fun(mp.mpf(float(q)))) for q in grid])
    # evaluated as the kernel does (Horner in float64 on the monomial coefficients)
    approx = np.zeros_like(grid)
    for a in mono[::-1]:
        approx = approx * grid + a
    return mono, float(np.max(np.abs(approx / exact - 1)))


def main() -> None:
    s0, s1 = mp.sqrt(W0), mp.sqrt(WMAX)
    central = lambda t: g((t + 1) / 2 * W0)  # noqa: E731
    tail = lambda t: g(((t + 1) / 2 * (s1 - s0) + s0) ** 2)  # noqa: E731
    for name, fun, deg in (("ERFINV_C", central, 11), ("ERFINV_T", tail, 11)):
        c, err = fit(fun, deg)
        print(f"/* max relative error {err:.3g} */")
        body = ", ".join(repr(float(v)) for v in c)
        print(f"static const double {name}[{len(c)}] = {{{body}}};")
    print(f"/* S0 = {float(s0)!r}, S1 = {float(s1)!r} */")


if __name__ == "__main__":
    main()
