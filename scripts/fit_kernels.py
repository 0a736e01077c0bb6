"""Fit the polynomials of src/ember/_kernels.c and print them as C arrays (lowest degree first).

Relative least squares at Chebyshev points against mpmath at 40 digits (close to minimax); the
maximum relative error on a dense grid is printed beside each. ``python scripts/fit_kernels.py``
(needs mpmath; takes about a minute). tests/test_kernels.py checks the resulting functions against
float64 and mpmath ground truth, so a refit that loses accuracy fails there.
"""

from __future__ import annotations

import mpmath as mp
import numpy as np

mp.mp.dps = 40
ERFCX_K = 4.0      # erfcx(z) (1 + z/K) as a polynomial in t = (z - K)/(z + K)
ERFCX_ZMAX = 10.5  # beyond it float32's erfc (and gelu's x Phi(x)) round to zero


def fit(fun, a: float, b: float, deg: int, npts: int = 800) -> tuple[np.ndarray, float]:
    k = np.arange(npts)
    u = 0.5 * (a + b) + 0.5 * (b - a) * np.cos(np.pi * (k + 0.5) / npts)
    f = np.array([float(fun(mp.mpf(float(q)))) for q in u])
    vander = np.vander(u, deg + 1, increasing=True)
    c, *_ = np.linalg.lstsq(vander / np.abs(f)[:, None], f / np.abs(f), rcond=None)
    grid = np.linspace(a, b, 6001)
    exact = np.array([float(fun(mp.mpf(float(q)))) for q in grid])
    approx = np.polynomial.polynomial.polyval(grid, c)
    return c, float(np.max(np.abs(approx / exact - 1)))


def erfcx_t(t):
    z = ERFCX_K * (1 + t) / (1 - t)
    return mp.exp(z * z) * mp.erfc(z) * (1 + z / ERFCX_K)


def erf_over_x(s):  # erf(x)/x as a function of s = x^2
    if s == 0:
        return 2 / mp.sqrt(mp.pi)
    x = mp.sqrt(s)
    return mp.erf(x) / x


def exp_q(r):  # (exp(r) - 1 - r) / r^2
    return (mp.exp(r) - 1 - r) / r**2 if r != 0 else mp.mpf(0.5)


def main() -> None:
    half_ln2 = float(mp.log(2) / 2)
    t_hi = (ERFCX_ZMAX - ERFCX_K) / (ERFCX_ZMAX + ERFCX_K)
    fits = [
        ("ERFCX32", erfcx_t, -1.0, t_hi, 10, "d"),
        ("ERF_SMALL32", erf_over_x, 0.0, 0.25, 5, "d"),
        ("EXP_Q32D", exp_q, -half_ln2, half_ln2, 5, "d"),
        ("EXP_Q64", exp_q, -half_ln2, half_ln2, 10, "d"),
        ("EXP_Q32F", exp_q, -half_ln2, half_ln2, 4, "f"),
    ]
    for name, fun, a, b, deg, kind in fits:
        c, err = fit(fun, a, b, deg)
        if kind == "f":
            c = c.astype(np.float32)
            lits = [f"{float(v)!r}f" for v in c]
        else:
            lits = [repr(float(v)) for v in c]
        ctype = "float" if kind == "f" else "double"
        print(f"/* max relative error {err:.2e} on [{a:.6g}, {b:.6g}] */")
        print(f"static const {ctype} {name}[{deg + 1}] = {{{', '.join(lits)}}};")


if __name__ == "__main__":
    main()
