"""Fit the polynomials of src/ember/_kernels.c and print them as C arrays (lowest degree first).

Relative least squares at Chebyshev points against mpmath at 40 digits (close to minimax); the
maximum relative error on a dense grid is printed beside each. The central polynomials of erf,
erfc (|x| < 3) and gelu (|x| < 3.5), no exp and no division, are monomials in x^2 (evaluated by Horner's
rule with fma), fitted in mpmath and weighted by what their error costs the float32 result
(1 - x P cancels for erfc, 1/2 + x G for gelu at negative x); beside each: the largest error
that the float64 coefficients cost the result, in float32 ulps. ``python scripts/fit_kernels.py``
(needs mpmath; takes a minute or two). tests/test_kernels.py checks the resulting functions against
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


def fit_weighted(fun, weight, top: float, deg: int, npts: int = 300,
                 rounds: int = 8) -> tuple[list[float], float]:
    """P of degree deg in s on [0, top] minimising max |P(s) - fun(s)| weight(s): weighted least
    squares at Chebyshev points in mpmath (monomials at 30 digits: no float64 conversion from
    another basis), then Lawson's reweighting towards the minimax fit. Returns the float64
    coefficients and 2^24 max |P(s) - fun(s)| weight(s) for them on a 500-point grid, that is
    the most the fit costs the float32 result, in ulps."""
    with mp.workdps(30):
        k = np.arange(npts)
        ss = [mp.mpf(float(top * (0.5 + 0.5 * np.cos(np.pi * (q + 0.5) / npts)))) for q in k]
        f = [fun(s) for s in ss]
        w = [weight(s) for s in ss]
        lw = [mp.mpf(1)] * npts
        for _ in range(rounds + 1):
            a = mp.matrix(npts, deg + 1)
            b = mp.matrix(npts, 1)
            for i, (s, fi, wi) in enumerate(zip(ss, f, w)):
                sw, p = wi * mp.sqrt(lw[i]), mp.mpf(1)
                for j in range(deg + 1):
                    a[i, j] = sw * p
                    p *= s
                b[i] = sw * fi
            c, _ = mp.qr_solve(a, b)
            err = [abs(mp.polyval([c[j] for j in range(deg, -1, -1)], s) - fi) * wi
                   for s, fi, wi in zip(ss, f, w)]
            total = sum(lv * e for lv, e in zip(lw, err))
            lw = [lv * e / total for lv, e in zip(lw, err)]
        coef = [float(c[j]) for j in range(deg + 1)]
        cm = [mp.mpf(v) for v in coef[::-1]]
        worst = max(abs(mp.polyval(cm, s) - fun(s)) * weight(s)
                    for s in (mp.mpf(q) for q in np.linspace(0, top, 500)))
    return coef, float(worst) * 2.0**24


def erfcx_t(t):
    z = ERFCX_K * (1 + t) / (1 - t)
    return mp.exp(z * z) * mp.erfc(z) * (1 + z / ERFCX_K)


def erf_over_x(s):  # erf(x)/x as a function of s = x^2
    if s == 0:
        return 2 / mp.sqrt(mp.pi)
    x = mp.sqrt(s)
    return mp.erf(x) / x


def gelu_phi(s):  # (Phi(x) - 1/2)/x as a function of s = x^2
    if s == 0:
        return 1 / mp.sqrt(2 * mp.pi)
    x = mp.sqrt(s)
    return (mp.ncdf(x) - mp.mpf(0.5)) / x


def gelu_dphi(s):  # (Phi(x) + x phi(x) - 1/2)/x, gelu's derivative, as a function of s = x^2
    return gelu_phi(s) + mp.exp(-s / 2) / mp.sqrt(2 * mp.pi)


def gelu_weight(s):  # what an error in G costs x Phi(x) = x (1/2 + x G) at x = -sqrt(s)
    x = mp.sqrt(s)
    return (x + mp.mpf("1e-3")) / mp.ncdf(-x)


def gelu_dweight(s):  # the same for the derivative, whose zero (x = -0.75) is checked absolute
    x = mp.sqrt(s)
    d = mp.ncdf(-x) - x * mp.exp(-s / 2) / mp.sqrt(2 * mp.pi)
    return (x + mp.mpf("1e-3")) / max(abs(d), mp.mpf("1e-2"))


def erf_weight(s):  # erf = x P(x^2): relative
    return 1 / erf_over_x(s)


def erfc_weight(s):  # erfc = 1 - x P(x^2): relative to erfc(|x|) where it is small
    x = mp.sqrt(s)
    return max(1 / erf_over_x(s), (x + mp.mpf("1e-3")) / mp.erfc(x))


def exp_q(r):  # (exp(r) - 1 - r) / r^2
    return (mp.exp(r) - 1 - r) / r**2 if r != 0 else mp.mpf(0.5)


def expm1_over_r(r):  # (exp(r) - 1) / r
    return (mp.exp(r) - 1) / r if r != 0 else mp.mpf(1)


def main() -> None:
    half_ln2 = float(mp.log(2) / 2)
    t_hi = (ERFCX_ZMAX - ERFCX_K) / (ERFCX_ZMAX + ERFCX_K)
    fits = [
        ("ERFCX32", erfcx_t, -1.0, t_hi, 10, "d"),
        ("EXP_Q32D", exp_q, -half_ln2, half_ln2, 5, "d"),
        ("EXP_Q64", exp_q, -half_ln2, half_ln2, 10, "d"),
        ("EXP_Q32F", exp_q, -half_ln2, half_ln2, 4, "f"),
        ("EXP_P7D", expm1_over_r, -half_ln2, half_ln2, 6, "d"),
    ]
    central = [  # |x| < GELU_X = 3.5 and ERF_X = 3
        ("GELU_N2PHI32", gelu_phi, gelu_weight, 12.25, 12),  # printed times -2: -2 G
        ("GELU_DPHI32", gelu_dphi, gelu_dweight, 12.25, 13),
        ("ERF_P32", erf_over_x, erf_weight, 9.0, 14),
        ("ERFC_P32", erf_over_x, erfc_weight, 9.0, 16),
    ]
    for name, fun, weight, top, deg in central:
        c, ulps = fit_weighted(fun, weight, top, deg)
        if name == "GELU_N2PHI32":
            c = [-2 * v for v in c]  # exact: the kernel evaluates -(-x - x^2 (2 G)) and halves in float32
        print(f"/* s in [0, {top:g}]: at most {ulps:.3f} ulp of the float32 result */")
        print(f"static const double {name}[{deg + 1}] = {{{', '.join(repr(v) for v in c)}}};")
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
