"""Random numbers: ``Generator``, ``manual_seed``, RNG state, and the random creation functions.

Streams come from NumPy's PCG64. They differ from PyTorch's streams, but one seed always gives
the same numbers on every run and every device (values are drawn on the CPU, then moved).
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np

from .. import _backend, _dtype
from .._tensor_base import TensorBase
from ..autograd import grad_mode
from .casting import copy_from
from .creation import _place, _size
from .inplace import inplace

__all__ = [
    "Generator", "bernoulli", "default_generator", "get_rng_state", "initial_seed", "manual_seed", "multinomial", "normal", "rand", "rand_like", "randint", "randint_like", "randn", "randn_like", "randperm", "seed", "set_rng_state",
]


_DEFAULT_SEED = 67280421310721  # PyTorch's default initial seed


def manual_seed(seed: int) -> Generator:
    """Seed every ember random stream (CPU and CUDA draws share this generator)."""
    return default_generator.manual_seed(seed)


def seed() -> int:
    return default_generator.seed()


def initial_seed() -> int:
    return default_generator.initial_seed()


def get_rng_state() -> Any:
    return default_generator.get_state()


def set_rng_state(state: Any) -> None:
    default_generator.set_state(state)


class Generator:
    """A random number generator: ``ember.Generator().manual_seed(0)``."""

    def __init__(self, device: Any = "cpu") -> None:
        self.device = _backend.device(device)
        self._seed = _DEFAULT_SEED
        self._rng = np.random.Generator(np.random.PCG64(self._seed))

    def manual_seed(self, seed: int) -> Generator:
        seed = int(seed)
        if seed < 0:
            seed &= 0xFFFFFFFFFFFFFFFF
        self._seed = seed
        self._rng = np.random.Generator(np.random.PCG64(seed))
        return self

    def seed(self) -> int:
        s = int(time.time_ns() ^ np.random.SeedSequence().entropy) & 0xFFFFFFFFFFFFFFFF
        self.manual_seed(s)
        return s

    def initial_seed(self) -> int:
        return self._seed

    def get_state(self) -> Any:
        """The state as a uint8 tensor (PyTorch's ByteTensor convention)."""
        st = self._rng.bit_generator.state
        raw = (
            int(st["state"]["state"]).to_bytes(16, "little")
            + int(st["state"]["inc"]).to_bytes(16, "little")
            + int(st["has_uint32"]).to_bytes(1, "little")
            + int(st["uinteger"]).to_bytes(4, "little")
            + int(self._seed).to_bytes(8, "little")
        )
        return TensorBase._make(np.frombuffer(raw, dtype=np.uint8).copy())

    def set_state(self, state: Any) -> Generator:
        raw = bytes(np.asarray(state._data if isinstance(state, TensorBase) else state, np.uint8))
        if len(raw) != 45:
            raise RuntimeError(
                f"RNG state is wrong size: expected 45 bytes (an ember generator state), got {len(raw)}"
            )
        bg = np.random.PCG64()
        bg.state = {
            "bit_generator": "PCG64",
            "state": {
                "state": int.from_bytes(raw[0:16], "little"),
                "inc": int.from_bytes(raw[16:32], "little"),
            },
            "has_uint32": raw[32],
            "uinteger": int.from_bytes(raw[33:37], "little"),
        }
        self._rng = np.random.Generator(bg)
        self._seed = int.from_bytes(raw[37:45], "little")
        return self

    def __getstate__(self) -> dict:
        return {"device": str(self.device), "state": bytes(self.get_state()._data)}

    def __setstate__(self, d: dict) -> None:
        self.__init__(d["device"])
        self.set_state(np.frombuffer(d["state"], np.uint8))


def _rng(generator: Generator | None) -> np.random.Generator:
    return (generator or default_generator)._rng


default_generator = Generator()


# As in PyTorch, the default generator starts from a fresh seed in each process (an unseeded run
# does not repeat the last one); new ``Generator()`` objects start from _DEFAULT_SEED.
default_generator.seed()


# ---------------------------------------------------------------------------------------------


def rand(*size: Any, generator: Generator | None = None, dtype: Any = None, device: Any = None,
         requires_grad: bool = False, **_: Any) -> Any:
    """Uniform samples on [0, 1)."""
    dt = _float_dtype(dtype)
    arr = _rng(generator).random(_size(size), dtype=_draw_dtype(dt)).astype(dt.np, copy=False)
    return _finish(arr, dt, device, requires_grad)


def randn(*size: Any, generator: Generator | None = None, dtype: Any = None, device: Any = None,
          requires_grad: bool = False, **_: Any) -> Any:
    """Standard normal samples."""
    dt = _float_dtype(dtype)
    arr = _rng(generator).standard_normal(_size(size), dtype=_draw_dtype(dt)).astype(dt.np, copy=False)
    return _finish(arr, dt, device, requires_grad)


def randint(*args: Any, generator: Generator | None = None, dtype: Any = None, device: Any = None,
            requires_grad: bool = False, size: Any = None, **_: Any) -> Any:
    """``randint(high, size)`` or ``randint(low, high, size)``: integers in [low, high)."""
    args = list(args)
    if size is None:
        size = args.pop()
    if len(args) == 1:
        low, high = 0, args[0]
    elif len(args) == 2:
        low, high = args
    else:
        raise TypeError("randint(low=0, high, size) takes a high bound and a size")
    low, high = int(low), int(high)
    if high <= low:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} >= to={high}")
    dt = _dtype.to_dtype(dtype) if dtype is not None else _dtype.int64
    arr = _rng(generator).integers(low, high, size=tuple(size), dtype=np.int64).astype(dt.np)
    return _finish(arr, dt, device, requires_grad)


def randperm(n: int, *, generator: Generator | None = None, dtype: Any = None, device: Any = None,
             requires_grad: bool = False, **_: Any) -> Any:
    """A random permutation of 0..n-1."""
    dt = _dtype.to_dtype(dtype) if dtype is not None else _dtype.int64
    arr = _rng(generator).permutation(int(n)).astype(dt.np)
    return _finish(arr, dt, device, requires_grad)


def normal(mean: Any = 0.0, std: Any = 1.0, size: Any = None, *, generator: Generator | None = None,
           dtype: Any = None, device: Any = None, requires_grad: bool = False, **_: Any) -> Any:
    """``normal(mean, std)`` elementwise over tensors, or ``normal(m, s, size)`` for numbers."""
    if isinstance(mean, TensorBase) or isinstance(std, TensorBase):
        ref = mean if isinstance(mean, TensorBase) else std
        m = mean._data if isinstance(mean, TensorBase) else mean
        s = std._data if isinstance(std, TensorBase) else std
        shape = np.broadcast_shapes(np.shape(m), np.shape(s))
        z = _rng(generator).standard_normal(shape)
        arr = (np.asarray(m, np.float64) + np.asarray(s, np.float64) * z).astype(ref._data.dtype)
        return _finish(arr, ref.dtype, ref.device if device is None else device, requires_grad)
    dt = _float_dtype(dtype)
    arr = _rng(generator).normal(mean, std, size=tuple(size) if size is not None else ()).astype(dt.np)
    return _finish(arr, dt, device, requires_grad)


def bernoulli(input: Any, p: float | None = None, *, generator: Generator | None = None) -> Any:
    """Draws 1 with probability ``input`` (elementwise), else 0; same dtype as input."""
    probs = input._data if p is None else np.full(input._data.shape, p)
    probs = _backend.to_numpy(probs)
    arr = (_rng(generator).random(probs.shape) < probs).astype(input._data.dtype)
    return TensorBase._make(_backend.to_device(arr, input.device))


def multinomial(input: Any, num_samples: int, replacement: bool = False, *,
                generator: Generator | None = None) -> Any:
    """Sample indices from each row's (unnormalised) weights."""
    w = np.asarray(_backend.to_numpy(input._data), np.float64)
    squeeze = w.ndim == 1
    w2 = w.reshape(1, -1) if squeeze else w
    if w2.ndim != 2:
        raise RuntimeError("prob_dist must be 1 or 2 dim")
    if (w2 < 0).any() or not np.isfinite(w2).all():
        raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
    if (w2.sum(-1) <= 0).any():
        raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
    n_cat = w2.shape[1]
    if not replacement and num_samples > n_cat:
        raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without replacement")
    rng = _rng(generator)
    if replacement:
        cdf = np.cumsum(w2, axis=1)
        cdf /= cdf[:, -1:]
        u = rng.random((w2.shape[0], num_samples))
        out = np.stack([np.searchsorted(cdf[i], u[i], side="right") for i in range(w2.shape[0])])
        out = np.minimum(out, n_cat - 1)
    else:
        # Gumbel top-k: the k largest log(w) + Gumbel noise are a draw without replacement
        with np.errstate(divide="ignore"):
            keys = np.log(w2) - np.log(-np.log(rng.random(w2.shape)))
        out = np.argsort(-keys, axis=1, kind="stable")[:, :num_samples]
    out = out.astype(np.int64)
    if squeeze:
        out = out[0]
    return TensorBase._make(_backend.to_device(out, input.device))


def rand_like(x: Any, *, dtype: Any = None, device: Any = None, requires_grad: bool = False, **_: Any) -> Any:
    return rand(*x.shape, dtype=dtype or x.dtype, device=device or x.device, requires_grad=requires_grad)


def randn_like(x: Any, *, dtype: Any = None, device: Any = None, requires_grad: bool = False, **_: Any) -> Any:
    return randn(*x.shape, dtype=dtype or x.dtype, device=device or x.device, requires_grad=requires_grad)


def randint_like(x: Any, low: int, high: int | None = None, *, dtype: Any = None, device: Any = None,
                 **_: Any) -> Any:
    if high is None:
        low, high = 0, low
    return randint(low, high, tuple(x.shape), dtype=dtype or x.dtype, device=device or x.device)


def fill_(t: Any, kind: str, *args: Any, generator: Generator | None = None) -> Any:
    """In-place random fills (``uniform_``, ``normal_``...), written into the tensor's buffer."""
    rng = _rng(generator)
    shape = t._data.shape
    if kind == "uniform":
        a, b = args
        vals = rng.uniform(a, b, shape)
    elif kind == "normal":
        m, s = args
        vals = rng.normal(m, s, shape)
    elif kind == "bernoulli":
        (p,) = args
        p = p._data if isinstance(p, TensorBase) else p
        vals = rng.random(shape) < p
    elif kind == "random":
        low, high = args
        if high is None:
            low, high = 0, (2**24 if t._data.dtype.kind == "f" else np.iinfo(t._data.dtype).max)
        vals = rng.integers(low, high, shape)
    elif kind == "exponential":
        (lambd,) = args
        vals = rng.exponential(1.0 / lambd, shape)
    elif kind == "geometric":
        (p,) = args
        vals = rng.geometric(p, shape)
    elif kind == "log_normal":
        m, s = args
        vals = rng.lognormal(m, s, shape)
    elif kind == "cauchy":
        med, sigma = args
        vals = med + sigma * np.tan(math.pi * (rng.random(shape) - 0.5))
    else:  # pragma: no cover
        raise ValueError(kind)
    vals = np.asarray(vals).astype(t._data.dtype)
    if t._rg and t.grad_fn is None and grad_mode.state.enabled:
        raise RuntimeError(
            "a leaf Variable that requires grad is being used in an in-place operation. "
            "(Initialise parameters inside `with torch.no_grad():`.)"
        )
    if grad_mode.state.enabled and t.requires_grad:  # in the graph: overwritten values get a
        # zero gradient, as PyTorch's NormalBackward0 etc. give
        return inplace(t, _copy_from, TensorBase._make(_backend.to_device(vals, t.device)))
    t._data[...] = _backend.to_device(vals, t.device)
    t._bump_version()
    return t


def _finish(arr: np.ndarray, dtype: Any, device: Any, requires_grad: bool) -> Any:
    return _place(arr, dtype, device, requires_grad)


def _float_dtype(dtype: Any) -> Any:
    dt = _dtype.to_dtype(dtype) if dtype is not None else _dtype.get_default_dtype()
    if not dt.is_floating_point:
        raise RuntimeError(f"expected a floating-point dtype for random floats, got {dt}")
    return dt


def _draw_dtype(dt: Any) -> Any:
    return np.float64 if dt is _dtype.float64 else np.float32


def _copy_from(x: Any, src: Any) -> Any:
    return copy_from(x, src)
