"""PyTorch's CPU random streams, computed with NumPy: the Mersenne Twister and the conversions.

PyTorch's CPU generator is an mt19937 seeded with the standard ``init_genrand`` of the seed's low
32 bits. NumPy's ``MT19937`` bit generator makes the same 32-bit words once its key is set to that
seeding, so every draw here is PyTorch's transformation of those words, found by experiment
against PyTorch 2.13 (x86-64, AVX2/AVX-512 kernels):

- a float32 (also float16/bfloat16) uniform is the low 24 bits of one word times 2**-24; a
  float64 uniform is the low 53 bits of a 64-bit draw (two words, the first the high half);
- integers in a range are a word (a 64-bit draw when the range reaches 2**32) modulo the range;
- normals come from Box-Muller: 16-element blocks for contiguous outputs of at least 16 elements
  (float32 through the AVX2 kernel's Cephes-style ``log``/``sincos``, reproduced here op for op,
  fused multiply-adds included), and one pair per two draws, the second value cached in the
  generator, for smaller or strided outputs.

The C library's ``log``/``log1p``/``tan``/``exp`` are what PyTorch's scalar kernels call; NumPy's
vectorised float64 versions may differ from them in the last bit, so float64 results go through
``math`` element by element (float32 and smaller results round the same either way).
"""

from __future__ import annotations

import math
import struct
from typing import Any

import numpy as np

from .. import _dtype
from .. import _kernels_loader as _kernels
from .._native_core import native

N = 624  # words of state


STATE_BYTES = 5056  # PyTorch's CPUGeneratorImplState


_HEADER = struct.Struct("<QiiQ")  # initial seed, left, seeded, next


_NORMAL = struct.Struct("<dddi4xf?3x")  # normal_x, normal_y (the cached double), normal_rho,


# normal_is_valid; the cached float and its flag
_WORDS_AT = _HEADER.size  # 624 uint64 words (each holding a uint32)


_NORMAL_AT = _WORDS_AT + 8 * N


_keys: dict[int, np.ndarray] = {}  # the seeded key of recent seeds (``manual_seed`` in loops)


def seeded_key(seed: int) -> np.ndarray:
    """mt19937's ``init_genrand`` of the seed's low 32 bits: the 624 words before the first twist."""
    s = seed & 0xFFFFFFFF
    key = _keys.get(s)
    if key is None:
        words = [s]
        append = words.append
        for j in range(1, N):
            s = (1812433253 * (s ^ (s >> 30)) + j) & 0xFFFFFFFF
            append(s)
        key = np.array(words, dtype=np.uint32)
        key.flags.writeable = False
        if len(_keys) >= 64:
            _keys.pop(next(iter(_keys)))
        _keys[seed & 0xFFFFFFFF] = key
    return key


# NumPy's own init_genrand (the seeding of its legacy RandomState), 100x faster than the loop above
_LEGACY_SEEDING = getattr(np.random.MT19937, "_legacy_seeding", None)


def seed_words(bg: np.random.MT19937, seed: int) -> None:
    """Put ``bg`` at the start of ``seed``'s stream: ``seeded_key(seed)``, before the first twist."""
    if _LEGACY_SEEDING is not None:
        _LEGACY_SEEDING(bg, seed & 0xFFFFFFFF)
    else:
        set_key(bg, seeded_key(seed), N)


def set_key(bg: np.random.MT19937, key: np.ndarray, pos: int) -> None:
    bg.state = {"bit_generator": "MT19937", "state": {"key": key, "pos": pos}}


def pack_state(seed: int, key: np.ndarray, pos: int, fresh: bool, normal: float | None,
               normal_f: float | None) -> bytes:
    """PyTorch's byte layout of a CPU generator's state (``torch.get_rng_state()``)."""
    left = 1 if pos >= N else N + 1 - pos
    nxt = 0 if fresh else pos
    head = _HEADER.pack(seed, left, 1, nxt)
    tail = _NORMAL.pack(0.0, 0.0 if normal is None else normal, 0.0, normal is not None,
                        0.0 if normal_f is None else normal_f, normal_f is not None)
    return head + np.asarray(key, np.uint64).astype("<u8").tobytes() + tail


def unpack_state(raw: bytes) -> tuple[int, np.ndarray, int, float | None, float | None]:
    """(seed, key, NumPy pos, cached double normal, cached float normal) from PyTorch's bytes."""
    if len(raw) != STATE_BYTES:
        raise RuntimeError(f"Expected a CPUGeneratorImplState of size {STATE_BYTES} but found the "
                           f"input RNG state size to be {len(raw)} (a state from "
                           "torch.get_rng_state() or Generator.get_state())")
    seed, left, _seeded, nxt = _HEADER.unpack_from(raw, 0)
    if not 1 <= left <= N or nxt > N:
        raise RuntimeError("Invalid mt19937 state")
    key = np.frombuffer(raw, "<u8", N, _WORDS_AT).astype(np.uint32)
    _x, y, _rho, y_ok, f, f_ok = _NORMAL.unpack_from(raw, _NORMAL_AT)
    return seed, key, N + 1 - left, (y if y_ok else None), (f if f_ok else None)


# ---------------------------------------------------------------------------------------------
# words and uniforms


_M24 = np.uint64(0xFFFFFF)


_M53 = np.uint64((1 << 53) - 1)


_S32 = np.uint64(32)


def words(bg: np.random.MT19937, n: int) -> np.ndarray:
    """n 32-bit words (as uint64)."""
    return bg.random_raw(n)


def words64(bg: np.random.MT19937, n: int) -> np.ndarray:
    """n 64-bit draws: two words each, the first the high half."""
    w = bg.random_raw(2 * n)
    hi = w[0::2]
    hi <<= _S32
    hi |= w[1::2]
    return hi


def unit24(bg: np.random.MT19937, n: int) -> np.ndarray:
    """n float32 uniforms on [0, 1): a word's low 24 bits / 2**24."""
    if n > 64 and (u := _kernels.mt_uniform(bg, n, np.float32)) is not None:
        return u  # (the eager kernel: the same words and values in one pass)
    # NumPy's full-range uint32 integers are the raw words (checked in the tests), in half the
    # memory of random_raw's uint64
    w = np.random.Generator(bg).integers(0, 1 << 32, n, dtype=np.uint32) if n > 64 else \
        bg.random_raw(n)
    w &= 0xFFFFFF
    u = w.astype(np.float32)
    u *= np.float32(2.0**-24)
    return u


def unit53(bg: np.random.MT19937, n: int) -> np.ndarray:
    """n float64 uniforms on [0, 1): a 64-bit draw's low 53 bits / 2**53."""
    if n > 32 and (u := _kernels.mt_uniform(bg, n, np.float64)) is not None:
        return u
    w = words64(bg, n)
    w &= _M53
    u = w.astype(np.float64)
    u *= 2.0**-53
    return u


# ---------------------------------------------------------------------------------------------
# fused multiply-add, as PyTorch's kernels (built with FMA) compute a * b + c


_SPLIT = 134217729.0  # 2**27 + 1


def fma32(a: Any, b: Any, c: Any) -> np.ndarray:
    """float32 fma: the float64 product of two float32 values is exact; one rounding after."""
    t = np.multiply(a, b, dtype=np.float64)
    t += c
    return t.astype(np.float32)


def fma64(a: Any, b: Any, c: Any) -> np.ndarray:
    """float64 fma from error-free transformations (Dekker's product, Knuth's sum)."""
    a = np.asarray(a, np.float64)
    b = np.asarray(b, np.float64)
    p = a * b
    t = _SPLIT * a
    ah = t - (t - a)
    al = a - ah
    t = _SPLIT * b
    bh = t - (t - b)
    bl = b - bh
    e = ((ah * bh - p) + ah * bl + al * bh) + al * bl
    s = p + c
    bb = s - p
    err = (p - (s - bb)) + (c - bb)
    return s + (err + e)


def libm(fn: Any, x: np.ndarray) -> np.ndarray:
    """``fn`` (a ``math`` function) elementwise: the C library's result, as PyTorch's scalar
    kernels get it."""
    flat = x.ravel().tolist()
    return np.array([fn(v) for v in flat], dtype=np.float64).reshape(x.shape)


# ---------------------------------------------------------------------------------------------
# Box-Muller


_F = np.float32


_LOG_P = tuple(_F(c) for c in (-1.1514610310e-1, 1.1676998740e-1, -1.2420140846e-1,
                               1.4249322787e-1, -1.6668057665e-1, 2.0000714765e-1,
                               -2.4999993993e-1, 3.3333331174e-1))


_TWO_PI_F = _F(2 * math.pi)


EXACT_NORMALS = 1 << 18  # float32 normals up to this many: the kernel's arithmetic op for op


_CHUNK = 1 << 14  # uniforms per pass of the exact path (its temporaries stay in cache)


def box_muller16_f32(u: np.ndarray, mean: float, std: float) -> np.ndarray:
    """float32 normals from uniforms in blocks of 16 (len(u) a multiple of 16): element j of a
    block pairs with element j + 8; ``r cos`` goes to j, ``r sin`` to j + 8. Up to
    ``EXACT_NORMALS`` values, bit for bit PyTorch's AVX2 kernel; past that, NumPy's float32
    log/sin/cos (several times faster; within 4 ulps of PyTorch's values, most equal). The eager
    kernel, where built, is bit for bit PyTorch's at every size."""
    if (fast := _kernels.box_muller16(u, mean, std)) is not None:
        return fast
    if len(u) > EXACT_NORMALS:
        b = u.reshape(-1, 2, 8)
        r = np.log((_F(1) - b[:, 0]).astype(np.float64)).astype(np.float32)
        r *= _F(-2)
        np.sqrt(r, out=r)
        theta = b[:, 1] * _TWO_PI_F
        out = np.empty_like(b)
        np.multiply(r, np.cos(theta), out=out[:, 0])
        np.multiply(r, np.sin(theta, out=theta), out=out[:, 1])
        out = out.reshape(-1)
    elif len(u) > _CHUNK:
        out = np.empty_like(u)
        for i in range(0, len(u), _CHUNK):
            out[i:i + _CHUNK] = _box_muller16_exact(u[i:i + _CHUNK])
    else:
        out = _box_muller16_exact(u)
    if mean != 0.0 or std != 1.0:
        out = fma32(out, _F(std), _F(mean))
    return out


def box_muller16_f64(u: np.ndarray, mean: float, std: float) -> np.ndarray:
    """float64 normals in blocks of 16, as PyTorch's scalar ``normal_fill_16`` (the eager
    kernel, where built, calls the C library's log, cos and sin as PyTorch does)."""
    if (fast := _kernels.box_muller16(u, mean, std)) is not None:
        return fast
    b = u.reshape(-1, 2, 8)
    one_minus = 1.0 - b[:, 0]  # the C library's log, bit for bit, up to EXACT_NORMALS values
    r = np.sqrt(-2.0 * (libm(math.log, one_minus) if len(u) <= EXACT_NORMALS else
                        np.log(one_minus)))
    theta = (2.0 * math.pi) * b[:, 1]
    out = np.empty_like(b)
    np.multiply(r, np.cos(theta), out=out[:, 0])
    np.multiply(r, np.sin(theta), out=out[:, 1])
    out = out.reshape(-1)
    if mean != 0.0 or std != 1.0:
        out = fma64(out, std, mean)
    return out


def _log_ps(x: np.ndarray) -> np.ndarray:
    """The AVX2 kernel's float32 natural log (a Cephes polynomial), with its fused steps."""
    x = np.maximum(x, _F(1.17549435e-38))
    i = x.view(np.int32)
    e = ((i >> 23) - 0x7F).astype(np.float32)
    e += _F(1)
    m = ((i & ~0x7F800000) | 0x3F000000).view(np.float32)
    small = m < _F(0.707106781186547524)
    x = m - _F(1)
    e -= small
    x += np.where(small, m, _F(0))
    z = x * x
    y = np.full_like(x, _F(7.0376836292e-2))
    for c in _LOG_P:
        y = fma32(y, x, c)
    y *= x
    y = fma32(y, z, e * _F(-2.12194440e-4))
    y = fma32(z, _F(-0.5), y)
    x += y
    return fma32(e, _F(0.693359375), x)


def _sincos_ps(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The AVX2 kernel's float32 sin and cos (Cephes), for x >= 0, with its fused steps."""
    j = (x * _F(1.27323954473516)).astype(np.int32)
    j += 1
    j &= ~1
    y = j.astype(np.float32)
    x = fma32(y, _F(-0.78515625), x)
    x = fma32(y, _F(-2.4187564849853515625e-4), x)
    x = fma32(y, _F(-3.77489497744594108e-8), x)
    z = x * x
    yc = fma32(_F(2.443315711809948e-5), z, _F(-1.388731625493765e-3))
    yc = fma32(yc, z, _F(4.166664568298827e-2))
    yc *= z
    yc = fma32(yc, z, -(z * _F(0.5)))
    yc += _F(1)
    ys = fma32(_F(-1.9515295891e-4), z, _F(8.3321608736e-3))
    ys = fma32(ys, z, _F(-1.6666654611e-1))
    ys *= z
    ys = fma32(ys, x, x)
    poly = (j & 2) == 0
    s = np.where(poly, ys, yc)
    c = np.where(poly, yc, ys)
    np.negative(s, out=s, where=(j & 4) != 0)
    np.negative(c, out=c, where=((j - 2) & 4) == 0)
    return s, c


def _box_muller16_exact(u: np.ndarray) -> np.ndarray:
    b = u.reshape(-1, 2, 8)
    u1 = _F(1) - b[:, 0]
    r = np.sqrt(_F(-2) * _log_ps(u1))
    s, c = _sincos_ps(_TWO_PI_F * b[:, 1])
    out = np.empty_like(b)
    np.multiply(r, c, out=out[:, 0])
    np.multiply(r, s, out=out[:, 1])
    return out.reshape(-1)


# ---------------------------------------------------------------------------------------------
# PyTorch's draws, as flat arrays in the order PyTorch's kernels fill memory (``gen``: a
# Generator, whose ``_bg`` makes the words and ``_normal`` holds the cached normal)


def uniform(gen: Any, n: int, dt: Any, a: float = 0.0, b: float = 1.0) -> Any:
    """``uniform_(a, b)``: a word's low 24 bits (53 of a 64-bit draw for float64) scaled; a
    value that rounds up to ``b`` in the dtype becomes ``a``, as PyTorch's [a, b) does."""
    if dt is _dtype.float64:
        u = unit53(gen._bg, n)
        if a == 0.0 and b == 1.0:
            return u
        v = fma64(u, b - a, a)
    else:
        u = unit24(gen._bg, n)
        if a == 0.0 and b == 1.0 and dt is _dtype.float32:
            return u
        fa, fb = np.float32(a), np.float32(b)
        v = fma32(u, fb - fa, fa) if (a, b) != (0.0, 1.0) else u
        if dt is not _dtype.float32:
            v = v.astype(dt.np)
    top, low = np.asarray(b).astype(v.dtype), np.asarray(a).astype(v.dtype)
    return np.where(v >= top, low, v)


def scalar_normals(gen: Any, n: int) -> np.ndarray:
    """n standard normals one at a time, as PyTorch's scalar path: each Box-Muller pair takes two
    float64 uniforms (angle, then radius); its sine waits in the generator for the next draw."""
    out = np.empty(n)
    i = 0
    if n and gen._normal is not None:
        out[0] = gen._normal
        gen._normal = None
        i = 1
    pairs = (n - i + 1) // 2
    if pairs:
        u = unit53(gen._bg, 2 * pairs).reshape(pairs, 2)
        r = np.sqrt(-2.0 * libm(math.log1p, -u[:, 1]))
        theta = (2.0 * math.pi) * u[:, 0]
        both = np.empty((pairs, 2))
        np.multiply(r, libm(math.cos, theta), out=both[:, 0])
        np.multiply(r, libm(math.sin, theta), out=both[:, 1])
        both = both.reshape(-1)
        out[i:] = both[:n - i]
        if (n - i) % 2:
            gen._normal = float(both[-1])
    return out


def normal(gen: Any, n: int, dt: Any, mean: float, std: float,
                   contiguous: bool = True) -> np.ndarray:
    """``normal_(mean, std)``: 16-element Box-Muller blocks for contiguous outputs of 16 or more
    (the last, partial block recomputed from 16 new uniforms), else the scalar path."""
    if n >= 16 and contiguous:
        if dt is _dtype.float64:
            uni, bm = unit53, box_muller16_f64
        else:
            uni, bm = unit24, box_muller16_f32
        u = uni(gen._bg, n)
        whole = n - n % 16
        out = bm(u[:whole], mean, std)
        if whole < n:  # the last 16 again, from new uniforms (float16/bfloat16: the leftover
            # uniforms, then only as many new ones as the block lacks)
            if dt is _dtype.float16 or dt is _dtype.bfloat16:
                last = np.concatenate([u[whole:], uni(gen._bg, 16 - (n - whole))])
            else:
                last = uni(gen._bg, 16)
            out = np.concatenate([out[:n - 16], bm(last, mean, std)])
        return out if out.dtype == dt.np else out.astype(dt.np)
    z = scalar_normals(gen, n)
    if mean != 0.0 or std != 1.0:
        z = fma64(z, std, mean)
    return z if dt is _dtype.float64 else z.astype(dt.np)


def integers(gen: Any, n: int, low: int, high: int) -> np.ndarray:
    """Integers in [low, high) as int64: a word (a 64-bit draw from a range of 2**28 up, as
    PyTorch 2.13 does) modulo the range, plus low (PyTorch's wrapping arithmetic)."""
    span = high - low
    w = words64(gen._bg, n) if span >= 1 << 28 else words(gen._bg, n)
    w %= np.uint64(span)
    w += np.uint64(low & 0xFFFFFFFFFFFFFFFF)
    return w.view(np.int64)


def random_bits(gen: Any, n: int, dt: Any, low: int | None, high: int | None) -> np.ndarray:
    """``random_(low, high)``; ``high=None``: to the dtype's top (2**mantissa for floats); the
    whole int64 range when low is its minimum."""
    if low is None:  # random_(): a 64-bit draw for int64 and float64, else a word, modulo the top
        w = words64(gen._bg, n) if dt in (_dtype.int64, _dtype.float64) else words(gen._bg, n)
        w %= np.uint64(top(dt.np))
        return w.astype(dt.np)
    if high is None:
        if dt is _dtype.int64 and low == -(1 << 63):
            return words64(gen._bg, n).view(np.int64)
        high = top(dt.np)
    vals = integers(gen, n, low, high)
    return vals.astype(dt.np)


def randperm(gen: Any, n: int) -> np.ndarray:
    """Fisher-Yates: position i swaps with i + (word mod (n - i))."""
    if n < 2:
        return np.arange(n, dtype=np.int64)
    z = words(gen._bg, n - 1) % (n - np.arange(n - 1, dtype=np.uint64))
    if native is not None:  # the same loop in C (_native_random.c)
        r = np.arange(n, dtype=np.int64)
        native.fisher_yates(z.astype(np.int64), r)
        return r
    out = list(range(n))
    for i, zi in enumerate(z.tolist()):
        j = zi + i
        out[i], out[j] = out[j], out[i]
    return np.array(out, dtype=np.int64)


def exponential(gen: Any, n: int, dt: Any, lambd: float) -> np.ndarray:
    u = unit53(gen._bg, n)
    logs = libm(math.log1p, -u) if dt is _dtype.float64 else np.log1p(-u)
    return ((-1.0 / lambd) * logs).astype(dt.np, copy=False)


def bernoulli_tensor(gen: Any, probs: np.ndarray, p_dtype: Any) -> np.ndarray:
    """``bernoulli_(p)`` with a tensor p (flat, in fill order): a float64 uniform per element
    for float64 p, else a float32 one, compared ``u < p``."""
    if p_dtype is _dtype.float64:
        return unit53(gen._bg, probs.size) < probs
    return unit24(gen._bg, probs.size) < probs.astype(np.float32, copy=False)


def poisson(gen: Any, rates: np.ndarray) -> np.ndarray:
    """Poisson counts one rate at a time, as PyTorch's CPU kernel: multiplied uniforms below
    10, Hormann's transformed rejection (PTRS) from 10 up; float64 uniforms."""
    bg = gen._bg
    saved = bg.state
    supply = unit53(bg, 2 * rates.size + 16).tolist()
    used = 0

    def uniform() -> float:
        nonlocal supply, used
        if used == len(supply):
            supply += unit53(bg, len(supply)).tolist()
        used += 1
        return supply[used - 1]

    out = np.empty(rates.size)
    for i, lam in enumerate(rates.tolist()):
        if lam >= 10:
            slam = math.sqrt(lam)
            loglam = math.log(lam)
            b = 0.931 + 2.53 * slam
            a = -0.059 + 0.02483 * b
            log_inv_alpha = math.log(1.1239 + 1.1328 / (b - 3.4))
            vr = 0.9277 - 3.6224 / (b - 2)
            while True:
                u = uniform() - 0.5
                v = uniform()
                us = 0.5 - abs(u)
                k = math.floor((2 * a / us + b) * u + lam + 0.43)
                if us >= 0.07 and v <= vr:
                    break
                if k < 0 or (us < 0.013 and v > us):
                    continue
                if (math.log(v) + log_inv_alpha - math.log(a / (us * us) + b)
                        <= -lam + k * loglam - math.lgamma(k + 1)):
                    break
            out[i] = k
        elif lam == 0:
            out[i] = 0
        else:
            limit = math.exp(-lam)
            k = 0
            prod = uniform()
            while prod > limit:
                k += 1
                prod *= uniform()
            out[i] = k
    bg.state = saved  # consume exactly the words used
    bg.random_raw(2 * used)
    return out


def top(np_dtype: Any) -> int:
    """``random_()``'s exclusive top: 2**mantissa + 1 for floats, the max + 1 for integers."""
    if np_dtype.kind == "f":
        return 2 ** (np.finfo(np_dtype).nmant + 1) + 1
    if np_dtype.name == "bfloat16":
        return 2**8 + 1
    if np_dtype.kind == "b":
        return 2
    return int(np.iinfo(np_dtype).max) + 1
