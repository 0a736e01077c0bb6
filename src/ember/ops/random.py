"""Random numbers: ``Generator``, ``manual_seed``, RNG state, and the random creation functions.

The CPU generator is PyTorch's: a Mersenne Twister seeded as PyTorch seeds it, whose draws go
through PyTorch's conversions (``_mt19937.py``), so after ``manual_seed(s)`` ``rand``, ``randn``,
``randint``, ``randperm``, ``normal_``, ``bernoulli_``... give PyTorch's CPU numbers, and
``get_rng_state()`` is PyTorch's byte layout. CUDA tensors' values are drawn on the CPU from the
same generator, then moved (PyTorch's CUDA generator, Philox, gives other numbers).
"""

from __future__ import annotations

import math
import os
import warnings
from typing import Any

import numpy as np

from .. import _backend, _dtype
from .._tensor_base import TensorBase
from ..autograd import grad_mode
from ..autograd.function import Op
from . import _args, _mt19937, _out
from ._mt19937 import fma64, libm, unit53
from .casting import copy_from
from .creation import _contiguous_strides, _like, _like_strides, _place, _strided
from .inplace import inplace

__all__ = [
    "Generator", "bernoulli", "default_generator", "get_rng_state", "initial_seed", "manual_seed", "multinomial", "normal", "poisson", "rand", "rand_like", "randint", "randint_like", "randn", "randn_like", "randperm", "seed", "set_rng_state",
]


_DEFAULT_SEED = 67280421310721  # PyTorch's default initial seed


_MASK64 = (1 << 64) - 1


# randint's and randint_like's overloads, as PyTorch's parser binds them (_args.overload)
_RANDINT_FORMS = (("high", "size"), ("low", "high", "size"))


_RANDINT_LIKE_FORMS = (("high",), ("low", "high"))


_SPARE_BIT_GENERATORS: list[np.random.MT19937] = []  # those of collected Generators


def manual_seed(seed: int) -> Generator:
    """Seed the default generator (CPU draws, and CUDA draws, which ember makes on the CPU)."""
    return default_generator.manual_seed(seed)


def seed() -> int:
    return default_generator.seed()


def initial_seed() -> int:
    return default_generator.initial_seed()


def get_rng_state() -> Any:
    """The default generator's state: a uint8 tensor in PyTorch's layout (5056 bytes)."""
    return default_generator.get_state()


def set_rng_state(new_state: Any) -> None:
    default_generator.set_state(new_state)


def int64_draw(generator: Generator | None = None) -> int:
    """``int(torch.empty((), dtype=torch.int64).random_(generator=generator))`` without the tensor:
    a 64-bit draw modulo 2**63 (how samplers and DataLoaders seed each epoch)."""
    return int(_mt19937.words64(_gen(generator)._bg, 1)[0]) % (1 << 63)


class Generator:
    """A random number generator: ``ember.Generator().manual_seed(0)``; PyTorch's CPU streams."""

    def __init__(self, device: Any = "cpu") -> None:
        self.device = _backend.device(device)
        try:  # (pop is atomic: two threads never take the same one)
            self._bg = _SPARE_BIT_GENERATORS.pop()
        except IndexError:
            self._bg = np.random.MT19937(0)
        # NumPy's Generator over the same words, for draws not yet written as PyTorch's
        self._rng = np.random.Generator(self._bg)
        self.manual_seed(_DEFAULT_SEED)

    def __del__(self) -> None:
        # a bit generator costs ~150 us to build (NumPy seeds it through a SeedSequence), and a
        # DataLoader's RandomSampler makes a Generator each epoch, as PyTorch's does: reuse them
        bg, spare = self.__dict__.get("_bg"), _SPARE_BIT_GENERATORS
        if bg is not None and spare is not None and len(spare) < 8:  # (None: at exit)
            spare.append(bg)

    def manual_seed(self, seed: int) -> Generator:
        seed = int(seed)
        if seed < 0:
            seed &= _MASK64
        if seed > _MASK64:
            raise ValueError(f"manual_seed(): the seed must fit 64 bits, got {seed}")
        self._seed = seed
        _mt19937.seed_words(self._bg, seed)
        self._normal: float | None = None  # Box-Muller's second value, for the next scalar draw
        self._normal_f: float | None = None  # its float twin (kept for the state's bytes)
        return self

    def seed(self) -> int:
        s = int.from_bytes(os.urandom(8), "little")
        self.manual_seed(s)
        return s

    def initial_seed(self) -> int:
        return self._seed

    def get_state(self) -> Any:
        """The state as a uint8 tensor in PyTorch's layout (a ``torch.get_rng_state()`` can be
        given to ``set_state`` and the other way round)."""
        st = self._bg.state["state"]
        key, pos = st["key"], int(st["pos"])
        fresh = pos >= _mt19937.N and np.array_equal(key, _mt19937.seeded_key(self._seed))
        raw = _mt19937.pack_state(self._seed, key, pos, fresh, self._normal, self._normal_f)
        return TensorBase._make(np.frombuffer(raw, dtype=np.uint8).copy())

    def set_state(self, state: Any) -> Generator:
        if isinstance(state, TensorBase):
            if state.dtype is not _dtype.uint8:
                raise TypeError(f"RNG state must be a torch.ByteTensor (uint8), got {state.dtype}")
            raw = bytes(_backend.to_numpy(state._data).ravel())
        elif isinstance(state, (bytes, bytearray)):
            raw = bytes(state)
        else:
            raw = bytes(np.asarray(state, np.uint8).ravel())
        seed, key, pos, normal, normal_f = _mt19937.unpack_state(raw)
        _mt19937.set_key(self._bg, key, pos)
        self._seed = seed
        self._normal, self._normal_f = normal, normal_f
        return self

    def __getstate__(self) -> dict:
        return {"device": str(self.device), "state": bytes(self.get_state()._data)}

    def __setstate__(self, d: dict) -> None:
        self.__init__(d["device"])
        self.set_state(np.frombuffer(d["state"], np.uint8))


def _gen(generator: Generator | None) -> Generator:
    return generator or default_generator


def _rng(generator: Generator | None) -> np.random.Generator:
    """NumPy's Generator over the generator's words (for draws not yet written as PyTorch's)."""
    return (generator or default_generator)._rng


default_generator = Generator()


# As in PyTorch, the default generator starts from a fresh seed in each process (an unseeded run
# does not repeat the last one); new ``Generator()`` objects start from _DEFAULT_SEED.
default_generator.seed()


# ---------------------------------------------------------------------------------------------
# where PyTorch's kernels write: memory order


def _axes(arr: Any) -> list[int] | None:
    """The axes of ``arr`` from the slowest in memory to the fastest: the order PyTorch's serial
    kernels walk an output in; None for C order."""
    if arr.ndim < 2 or arr.flags.c_contiguous:
        return None
    axes = sorted(range(arr.ndim), key=lambda i: -abs(arr.strides[i]) if arr.shape[i] > 1 else 0)
    return None if axes == list(range(arr.ndim)) else axes


def _dense_axes(arr: Any) -> list[int] | None:
    """``_axes`` for a dense layout (what ``empty_like`` keeps); None (C order) otherwise."""
    axes = _axes(arr)
    if axes is None:
        return None
    step = arr.itemsize
    for i in reversed(axes):
        if arr.shape[i] > 1 and arr.strides[i] != step:
            return None
        step *= arr.shape[i]
    return axes


def _like_layout(vals: np.ndarray, input: Any, memory_format: Any, st: Any = False) -> np.ndarray:
    """Flat values in memory order -> the array of a ``*_like`` result (``empty_like``'s
    layout: ``creation._like_strides``, or ``st`` when given), as PyTorch fills it."""
    if st is False:
        st = _like_strides(input._data, memory_format)
    shape = input._data.shape
    return vals.reshape(shape) if st is None else _strided(vals, shape, st)


def _arrange(vals: np.ndarray, shape: tuple, axes: list[int] | None) -> np.ndarray:
    """Flat values in memory order -> the logical array of ``shape``."""
    if axes is None:
        return vals.reshape(shape)
    return vals.reshape([shape[i] for i in axes]).transpose(np.argsort(axes))


def _in_order(arr: np.ndarray, axes: list[int] | None) -> np.ndarray:
    """The logical array ``arr`` flattened in memory order (the inverse of ``_arrange``)."""
    return arr.reshape(-1) if axes is None else arr.transpose(axes).reshape(-1)


def _numel(shape: tuple) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


# ---------------------------------------------------------------------------------------------


def rand(*size: Any, generator: Generator | None = None, out: Any = None, dtype: Any = None,
         layout: Any = None, device: Any = None, pin_memory: bool = False,
         requires_grad: bool = False, **size_kw: Any) -> Any:
    """Uniform samples on [0, 1). ``size``: ints, one sequence, or ``size=``."""
    shape = _args.size("rand", size, size_kw, _args.RANDOM)
    if layout is not None:
        _args.check_layout(layout)
    dt = _float_dtype("rand", dtype, out, complex_ok=True)
    if _backend.meta_target(device):  # no values on the meta device, and no draw (as PyTorch)
        return _finish(_backend.MetaArray(shape, dt.np), dt, device, requires_grad, out, "rand")
    if dt.is_complex:  # real and imaginary parts from U[0, 1) each: PyTorch's view_as_real fill
        arr = _mt19937.uniform(_gen(generator), 2 * _numel(shape), dt.to_real())
        arr = arr.view(dt.np).reshape(shape)
    else:
        arr = _mt19937.uniform(_gen(generator), _numel(shape), dt).reshape(shape)
    return _finish(arr, dt, device, requires_grad, out, "rand")


def randn(*size: Any, generator: Generator | None = None, out: Any = None, dtype: Any = None,
          layout: Any = None, device: Any = None, pin_memory: bool = False,
          requires_grad: bool = False, **size_kw: Any) -> Any:
    """Standard normal samples. ``size``: ints, one sequence, or ``size=``."""
    shape = _args.size("randn", size, size_kw, _args.RANDOM)
    if layout is not None:
        _args.check_layout(layout)
    dt = _float_dtype("randn", dtype, out, complex_ok=True)
    if _backend.meta_target(device):  # no values on the meta device, and no draw (as PyTorch)
        return _finish(_backend.MetaArray(shape, dt.np), dt, device, requires_grad, out, "randn")
    if dt.is_complex:  # each part N(0, 1/2), so that E|z|^2 = 1: PyTorch's view_as_real fill
        arr = _mt19937.normal(_gen(generator), 2 * _numel(shape), dt.to_real(), 0.0,
                              1 / math.sqrt(2))
        arr = arr.view(dt.np).reshape(shape)
    else:
        arr = _mt19937.normal(_gen(generator), _numel(shape), dt, 0.0, 1.0).reshape(shape)
    return _finish(arr, dt, device, requires_grad, out, "randn")


def randint(*args: Any, generator: Generator | None = None, out: Any = None, dtype: Any = None,
            layout: Any = None, device: Any = None, pin_memory: bool = False,
            requires_grad: bool = False, **bounds: Any) -> Any:
    """``randint(high, size)`` or ``randint(low, high, size)``: integers in [low, high), int64
    unless ``dtype`` (or ``out``) says otherwise. The arguments bind as PyTorch's overloads do
    (``randint(low=2, size=s)`` raises TypeError); ``inspect.signature`` shows the merged form."""
    b = _args.overload("randint", args, bounds, _RANDINT_FORMS, None, _args.RANDOM, {"low": 0})
    low, high, size = b["low"], b["high"], b["size"]
    shape = _args.sequence("randint", "size", size)
    low = _args.integer("randint", "low", low)
    high = _args.integer("randint", "high", high)
    if high <= low:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} >= "
                           f"to={high}")
    if out is not None:
        dt = _args.out_dtype("randint", dtype, out)
    else:
        dt = _dtype.to_dtype(dtype) if dtype is not None else _dtype.int64
    if layout is not None:
        _args.check_layout(layout)
    _check_int_range(dt, low, high)
    arr = _mt19937.integers(_gen(generator), _numel(shape), low, high).astype(dt.np).reshape(shape)
    return _finish(arr, dt, device, requires_grad, out, "randint")


def randperm(n: int, *, generator: Generator | None = None, out: Any = None, dtype: Any = None,
             layout: Any = None, device: Any = None, pin_memory: bool = False,
             requires_grad: bool = False) -> Any:
    """A random permutation of 0..n-1 (int64 unless ``dtype`` or ``out`` says otherwise)."""
    n = _args.integer("randperm", "n", n)
    if n < 0:
        raise RuntimeError(f"Trying to create tensor with negative dimension {n}: [{n}]")
    if out is not None:
        dt = _args.out_dtype("randperm", dtype, out)
    else:
        dt = _dtype.to_dtype(dtype) if dtype is not None else _dtype.int64
    if layout is not None:
        _args.check_layout(layout)
    arr = _mt19937.randperm(_gen(generator), n).astype(dt.np)
    return _finish(arr, dt, device, requires_grad, out, "randperm")


def normal(mean: Any, std: Any = 1.0, size: Any = None, *, generator: Generator | None = None,
           out: Any = None, dtype: Any = None, layout: Any = None, device: Any = None,
           pin_memory: bool = False, requires_grad: bool = False) -> Any:
    """``normal(mean, std)`` elementwise when either is a tensor (their broadcast shape, dtype and
    device), or ``normal(mean: float, std: float, size)`` for numbers."""
    if isinstance(mean, TensorBase) or isinstance(std, TensorBase):
        if (size is not None or dtype is not None or layout is not None or device is not None
                or requires_grad):
            raise TypeError(
                "normal(): size, dtype, layout, device and requires_grad go with "
                "normal(mean: float, std: float, size); with a tensor mean or std the result "
                "takes their shape, dtype and device")
        m = _backend.to_numpy(mean._data) if isinstance(mean, TensorBase) else mean
        s = _backend.to_numpy(std._data) if isinstance(std, TensorBase) else std
        if isinstance(std, TensorBase):
            if (s < 0).any():
                raise RuntimeError("normal expects all elements of std >= 0.0")
        elif std < 0:
            raise RuntimeError(f"normal expects std >= 0.0, but found std {std}")
        try:
            shape = np.broadcast_shapes(np.shape(m), np.shape(s))
        except ValueError:
            raise RuntimeError(f"normal(): mean of shape {list(np.shape(m))} and std of shape "
                               f"{list(np.shape(s))} do not broadcast") from None
        if isinstance(mean, TensorBase) and isinstance(std, TensorBase):
            dt = _dtype.promote_types(mean.dtype, std.dtype)
        else:
            dt = (mean if isinstance(mean, TensorBase) else std).dtype
        ref = mean if isinstance(mean, TensorBase) else std
        # PyTorch: out.normal_(0, std) + mean for a number std, else out.normal_(0, 1) * std +
        # mean, each step rounded in the result's dtype
        n = _numel(shape)
        noise_std = 1.0 if isinstance(std, TensorBase) else float(std)
        if dt.is_complex:  # PyTorch's normal_ of a complex out: view_as_real's 2n draws, each
            rdt = dt.to_real()  # part with std / sqrt(2)
            arr = _mt19937.normal(_gen(generator), 2 * n, rdt, 0.0, noise_std / math.sqrt(2))
            arr = np.asarray(arr).astype(rdt.np, copy=False).view(dt.np).reshape(shape)
        else:
            arr = _mt19937.normal(_gen(generator), n, dt, 0.0, noise_std).reshape(shape)
        if isinstance(std, TensorBase):
            arr = arr * np.asarray(s).astype(dt.np, copy=False)
        arr = (arr + np.asarray(m).astype(dt.np, copy=False)).astype(dt.np, copy=False)
        result = _place(arr, dt, ref.device, False)
        return result if out is None else _out.write(out, result, "normal")
    if size is None:
        raise TypeError("normal() missing 1 required positional argument: 'size' (with numbers "
                        "for mean and std, call normal(mean, std, size))")
    shape = _args.sequence("normal", "size", size)
    if std < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {std}")
    if layout is not None:
        _args.check_layout(layout)
    dt = _float_dtype("normal", dtype, out)
    arr = _mt19937.normal(_gen(generator), _numel(shape), dt, float(mean), float(std))
    return _finish(arr.reshape(shape), dt, device, requires_grad, out, "normal")


def bernoulli(input: Any, p: float | None = None, *, generator: Generator | None = None,
              out: Any = None) -> Any:
    """Draws 1 with probability ``input`` (elementwise; or ``p`` for every element), else 0;
    same dtype as input. ``out=`` goes with ``bernoulli(input)`` only, as in PyTorch."""
    if not isinstance(input, TensorBase):
        raise TypeError(f"bernoulli(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    if p is None:
        if not input.dtype.is_floating_point:
            raise NotImplementedError(
                f"bernoulli(): input holds the probabilities and must be floating point, got "
                f"{input.dtype}. Cast it (input.float()), or give p=.")
        probs = _backend.to_numpy(input._data)
        if ((probs < 0) | (probs > 1)).any():
            raise RuntimeError("bernoulli(): expected every probability in input to be in "
                               "[0, 1] (Expected p_in >= 0 && p_in <= 1)")
    else:
        if out is not None:
            raise TypeError("bernoulli(): out= goes with bernoulli(input), not with p=")
        if isinstance(p, TensorBase):
            raise TypeError("bernoulli(): argument 'p' must be float, not Tensor (for a tensor "
                            "of probabilities call bernoulli(p))")
        if not 0 <= p <= 1:
            raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={p}")
    dt = input._data.dtype if out is None or not isinstance(out, TensorBase) else out.dtype.np
    # PyTorch fills empty_like(input) (input's layout) in memory order
    axes = _dense_axes(input._data)
    gen = _gen(generator)
    if p is None:
        flat = _mt19937.bernoulli_tensor(gen, _in_order(probs, axes), input.dtype)
    else:
        flat = unit53(gen._bg, input._data.size) < p
    arr = _arrange(flat.astype(dt), input._data.shape, axes)  # into out's dtype, as PyTorch
    result = TensorBase._make(_backend.to_device(arr, input.device))
    return result if out is None else _args.write_new(out, result, "bernoulli")


def poisson(input: Any, generator: Generator | None = None) -> Any:
    """Draws from Poisson(rate) for each element of ``input`` (non-negative rates), in its
    dtype; the draw's gradient with respect to the rates is zero, as in PyTorch."""
    if not isinstance(input, TensorBase):
        raise TypeError(f"poisson(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"poisson(): the rates must be floating point, got "
                                  f"{input.dtype}; cast them (input.float())")
    rates = _backend.to_numpy(input._data).astype(np.float64)
    if not (rates >= 0).all():
        raise RuntimeError("invalid Poisson rate, expected rate to be non-negative (and not NaN)")
    arr = _mt19937.poisson(_gen(generator), rates.reshape(-1)).reshape(rates.shape)
    arr = _backend.to_device(arr.astype(input._data.dtype), input.device)
    return PoissonSample.apply(input, arr)


def multinomial(input: Any, num_samples: int, replacement: bool = False, *,
                generator: Generator | None = None, out: Any = None) -> Any:
    """Sample indices from each row's (unnormalised) weights."""
    num_samples = _args.integer("multinomial", "num_samples", num_samples)
    if out is not None and isinstance(out, TensorBase) and out.dtype is not _dtype.int64:
        raise RuntimeError(f"multinomial expects Long tensor out, got: "
                           f"{_dtype.legacy_name(out.dtype)}")
    w = np.asarray(_backend.to_numpy(input._data), np.float64)
    squeeze = w.ndim == 1
    w2 = w.reshape(1, -1) if squeeze else w
    if w2.ndim != 2:
        raise RuntimeError("prob_dist must be 1 or 2 dim")
    if replacement and num_samples > 1:  # PyTorch's kernel checks entry by entry
        for row in w2:
            bad = np.flatnonzero(~(row >= 0) | ~np.isfinite(row))
            if bad.size:
                what = "< 0" if not row[bad[0]] >= 0 else "= infinity or NaN"
                raise RuntimeError(f"invalid multinomial distribution (encountering probability "
                                   f"entry {what})")
    elif (w2 < 0).any() or not np.isfinite(w2).all():
        raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
    if (w2.sum(-1) <= 0).any():
        raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
    n_cat = w2.shape[1]
    if not replacement and num_samples > n_cat:
        raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without replacement")
    gen = _gen(generator)
    if replacement and num_samples > 1:
        # PyTorch: per row, a float64 uniform per sample, the first category whose normalised
        # cumulative weight reaches it
        cdf = np.cumsum(w2, axis=1)
        cdf /= cdf[:, -1:]
        u = unit53(gen._bg, w2.shape[0] * num_samples).reshape(w2.shape[0], num_samples)
        idx = np.stack([np.searchsorted(cdf[i], u[i], side="left") for i in range(w2.shape[0])])
        idx = np.minimum(idx, n_cat - 1)
    else:
        # PyTorch: weights / Exp(1) draws (in the input's dtype), the largest num_samples
        pdt = input.dtype if input.dtype.is_floating_point else _dtype.float32
        q = _mt19937.exponential(gen, w2.size, pdt, 1.0).reshape(w2.shape)
        with np.errstate(divide="ignore", invalid="ignore"):
            keys = w2.astype(pdt.np) / q
        idx = np.argsort(-keys, axis=1, kind="stable")[:, :num_samples]
    idx = idx.astype(np.int64)
    if squeeze:
        idx = idx[0]
    result = TensorBase._make(_backend.to_device(idx, input.device))
    return result if out is None else _args.write_new(out, result, "multinomial")


def rand_like(input: Any, *, generator: Generator | None = None, dtype: Any = None,
              layout: Any = None, device: Any = None, pin_memory: bool = False,
              requires_grad: bool = False, memory_format: Any = None) -> Any:
    """Uniform samples on [0, 1) in ``input``'s shape, dtype and device unless given."""
    dt, dev = _like("rand_like", input, dtype, device, layout, memory_format)
    _check_float("rand_like", dt, complex_ok=True)
    if dt.is_complex:
        arr = _mt19937.uniform(_gen(generator), 2 * input._data.size, dt.to_real()).view(dt.np)
    else:
        arr = _mt19937.uniform(_gen(generator), input._data.size, dt)
    return _place(_like_layout(arr, input, memory_format), dt, dev, requires_grad)


def randn_like(input: Any, *, generator: Generator | None = None, dtype: Any = None,
               layout: Any = None, device: Any = None, pin_memory: bool = False,
               requires_grad: bool = False, memory_format: Any = None) -> Any:
    """Standard normal samples in ``input``'s shape, dtype and device unless given."""
    dt, dev = _like("randn_like", input, dtype, device, layout, memory_format)
    _check_float("randn_like", dt, complex_ok=True)
    st = _like_strides(input._data, memory_format)  # (empty_like's layout: a contiguous one
    flat = _contiguous_strides(input._data.shape, st)  # takes the vectorised path, as PyTorch's)
    if dt.is_complex:
        arr = _mt19937.normal(_gen(generator), 2 * input._data.size, dt.to_real(), 0.0,
                              1 / math.sqrt(2), flat).view(dt.np)
    else:
        arr = _mt19937.normal(_gen(generator), input._data.size, dt, 0.0, 1.0, flat)
    return _place(_like_layout(arr, input, memory_format, st), dt, dev, requires_grad)


def randint_like(input: Any, *args: Any, generator: Generator | None = None, dtype: Any = None,
                 layout: Any = None, device: Any = None, pin_memory: bool = False,
                 requires_grad: bool = False, memory_format: Any = None, **bounds: Any) -> Any:
    """``randint_like(input, high)`` or ``randint_like(input, low, high)``: integers in
    [low, high) in ``input``'s shape, dtype and device unless given (the bounds bind as
    PyTorch's overloads do: ``randint_like(x, low=2)`` raises TypeError)."""
    b = _args.overload("randint_like", args, bounds, _RANDINT_LIKE_FORMS, None,
                       _args.EMPTY + ("generator",), {"low": 0})
    low, high = b["low"], b["high"]
    low = _args.integer("randint_like", "low", low)
    high = _args.integer("randint_like", "high", high)
    if high <= low:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} >= "
                           f"to={high}")
    dt, dev = _like("randint_like", input, dtype, device, layout, memory_format)
    _check_int_range(dt, low, high)
    arr = _mt19937.integers(_gen(generator), input._data.size, low, high).astype(dt.np)
    return _place(_like_layout(arr, input, memory_format), dt, dev, requires_grad)


# ---------------------------------------------------------------------------------------------
# the in-place random fills: Tensor methods (``ember/_tensor.py`` sets them on Tensor)


_UNSET = object()


_INT_BOUNDS: dict = {}  # dtype -> (lowest, highest), filled on first use


def uniform_(self: Any, *args: Any, generator: Generator | None = None, **kwargs: Any) -> Any:
    """``uniform_(from=0, to=1, *, generator=None)``: fill with samples from U[from, to).
    (``from`` is a Python keyword: pass it positionally or as ``**{"from": a}``.)"""
    a, b = _params("uniform_", args, kwargs, ("from", "to"), (0.0, 1.0))
    _check_float("uniform_", self.dtype, complex_ok=True)
    top = float(np.finfo(self._data.dtype).max)
    for arg, v in (("from", a), ("to", b)):
        if not -top <= v <= top:
            raise RuntimeError(f"{arg} is out of bounds for {self.dtype} ({arg}={v})")
    if a > b:
        raise RuntimeError(f"uniform_ expects to return a [from, to) range, but found from={a} > "
                           f"to={b}")
    return _fill(self, "uniform", a, b, generator=generator)


def normal_(self: Any, mean: float = 0.0, std: float = 1.0, *,
            generator: Generator | None = None) -> Any:
    """Fill with samples from N(mean, std**2)."""
    _check_float("normal_", self.dtype, complex_ok=True)
    mean, std = float(mean), float(std)
    if std < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {std}")
    if self.dtype.is_complex:  # each part N(mean, std^2 / 2), as PyTorch's
        std = std / math.sqrt(2)
    return _fill(self, "normal", mean, std, generator=generator)


def bernoulli_(self: Any, p: Any = 0.5, *, generator: Generator | None = None) -> Any:
    """Fill with 1 where a draw falls under ``p`` (a number, or a tensor broadcast to self)."""
    if isinstance(p, TensorBase):
        try:
            np.broadcast_to(np.empty(p._data.shape, np.bool_), self._data.shape)
        except ValueError:
            raise RuntimeError(f"bernoulli_(): p of shape {list(p.shape)} does not broadcast to "
                               f"the tensor's shape {list(self.shape)}") from None
    elif not 0 <= p <= 1:
        raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={p}")
    return _fill(self, "bernoulli", p, generator=generator)


def random_(self: Any, *args: Any, generator: Generator | None = None, **kwargs: Any) -> Any:
    """``random_(from, to=None)``, ``random_(to)`` or ``random_()``, keyword-only
    ``generator``: integers in [from, to); ``to=None`` (or no bounds) runs to the dtype's top
    (2**mantissa for floats). (``from`` is a Python keyword: pass it positionally or as
    ``**{"from": a}``.)"""
    if len(args) == 1 and not kwargs:
        low, high = 0, args[0]
        if high is None:
            raise TypeError("random_(): argument 'to' must be int, not NoneType")
    else:
        low, high = _params("random_", args, kwargs, ("from", "to"), (_UNSET, _UNSET))
        if low is _UNSET and high is _UNSET:  # random_(): PyTorch's own draw per dtype
            return _fill(self, "random", None, None, generator=generator)
        if low is _UNSET:
            low = 0
        elif high is _UNSET:
            raise TypeError("random_(): 'from' needs 'to' (call random_(from, to), random_(to) "
                            "or random_())")
        if high is _UNSET:
            high = None
    low = _args.integer("random_", "from", low)
    if high is not None:
        high = _args.integer("random_", "to", high)
        if low >= high:
            raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} "
                               f">= to={high}")
        _check_int_range(self.dtype, low, high)
    return _fill(self, "random", low, high, generator=generator)


def exponential_(self: Any, lambd: float = 1.0, *, generator: Generator | None = None) -> Any:
    """Fill with samples from Exp(lambd)."""
    if not self.dtype.is_floating_point:
        raise RuntimeError(
            "Exponential distribution is a continuous probability distribution. dtype must be a "
            f"floating point but you specified {_dtype.legacy_name(self.dtype)}")
    if not lambd > 0:
        raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={lambd}")
    return _fill(self, "exponential", lambd, generator=generator)


def geometric_(self: Any, p: float, *, generator: Generator | None = None) -> Any:
    """Fill with samples from Geometric(p): trials until the first success."""
    if not 0 < p < 1:
        raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={p}")
    return _fill(self, "geometric", p, generator=generator)


def log_normal_(self: Any, mean: float = 1.0, std: float = 2.0, *,
                generator: Generator | None = None) -> Any:
    """Fill with exp(N(mean, std**2)) samples."""
    if not std > 0:
        raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={std}")
    return _fill(self, "log_normal", mean, std, generator=generator)


def cauchy_(self: Any, median: float = 0.0, sigma: float = 1.0, *,
            generator: Generator | None = None) -> Any:
    """Fill with samples from Cauchy(median, sigma)."""
    if not sigma > 0:
        raise RuntimeError(f"cauchy_ expects sigma > 0.0, but found sigma={sigma}")
    return _fill(self, "cauchy", median, sigma, generator=generator)


def _fill(t: Any, kind: str, *args: Any, generator: Generator | None = None) -> Any:
    """In-place random fills (``uniform_``, ``normal_``...), written into the tensor's buffer."""
    if _backend.is_meta(t._data) and not (t._rg and grad_mode.state.enabled):
        t._bump_version()  # the meta device: no values to write, and no draw (as PyTorch)
        return t
    if t._rg and t.grad_fn is None and grad_mode.state.enabled:
        raise RuntimeError(
            "a leaf Variable that requires grad is being used in an in-place operation. "
            "(Initialise parameters inside `with torch.no_grad():`.)"
        )
    gen = _gen(generator)
    arr = t._data
    n = arr.size
    dt = t.dtype
    axes = _axes(arr)  # PyTorch's kernels fill the output in memory order
    if dt.is_complex:  # (uniform_, normal_) PyTorch fills view_as_real(t): (re, im) pairs
        dt, n = dt.to_real(), 2 * n
    if kind == "uniform":
        vals = _mt19937.uniform(gen, n, dt, *args)
    elif kind == "normal":
        vals = _mt19937.normal(gen, n, dt, *args, contiguous=arr.flags.c_contiguous)
    elif kind == "bernoulli":
        (p,) = args
        if isinstance(p, TensorBase):
            probs = np.broadcast_to(_backend.to_numpy(p._data), arr.shape)
            vals = _mt19937.bernoulli_tensor(gen, _in_order(probs, axes), p.dtype)
        else:
            vals = unit53(gen._bg, n) < p
    elif kind == "random":
        vals = _mt19937.random_bits(gen, n, dt, *args)
    elif kind == "exponential":
        vals = _mt19937.exponential(gen, n, dt, *args)
    elif kind == "geometric":
        (p,) = args
        vals = np.ceil(libm(math.log, unit53(gen._bg, n)) / math.log1p(-p))
    elif kind == "log_normal":
        m, s = args
        z = fma64(_mt19937.scalar_normals(gen, n), s, m)
        vals = libm(math.exp, z) if dt is _dtype.float64 else np.exp(z)
    elif kind == "cauchy":
        med, sigma = args
        u = unit53(gen._bg, n)
        x = math.pi * (u - 0.5)
        vals = fma64(sigma, libm(math.tan, x) if dt is _dtype.float64 else np.tan(x), med)
    else:  # pragma: no cover
        raise ValueError(kind)
    if arr.dtype.kind == "c":
        vals = np.asarray(vals).astype(dt.np, copy=False).view(arr.dtype)
    vals = _arrange(np.asarray(vals).astype(arr.dtype, copy=False), arr.shape, axes)
    if grad_mode.state.enabled and t.requires_grad:  # in the graph: overwritten values get a
        # zero gradient, as PyTorch's NormalBackward0 etc. give
        return inplace(t, _copy_from, TensorBase._make(_backend.to_device(vals, t.device)))
    t._data[...] = _backend.to_device(vals, t.device)
    t._bump_version()
    return t


def _params(name: str, args: tuple, kwargs: dict, names: tuple[str, ...],
            defaults: tuple) -> list:
    """Bind ``args``/``kwargs`` to ``names`` (parameters Python cannot spell, like ``from``),
    with Python's errors for too many, repeated or unknown arguments."""
    if len(args) > len(names):
        raise TypeError(f"{name}() takes from 0 to {len(names)} positional arguments but "
                        f"{len(args)} were given")
    values = list(args) + list(defaults[len(args):])
    for key, v in kwargs.items():
        if key not in names:
            raise _args.unexpected_keyword(name, key, names + ("generator",))
        i = names.index(key)
        if i < len(args):
            raise TypeError(f"{name}() got multiple values for argument '{key}'")
        values[i] = v
    return values


def _check_int_range(dt: Any, low: int, high: int) -> None:
    """[low, high) must fit an integer (or bool) dtype, as PyTorch's random_ checks; a float
    dtype holds every integer only up to 2**(mantissa + 1): past that, PyTorch's warning."""
    if dt.is_floating_point:
        d = int(np.finfo(dt.np).nmant) + 1
        for what, v in (("from", low), ("to - 1", high - 1)):
            if not -(2**d) <= v <= 2**d:
                warnings.warn(
                    f"{what} is out of bounds [-(2^{d}), 2^{d}]. Due to precision limitations "
                    f"{dt} can support discrete uniform distribution only within this range. "
                    "This warning will become an error in version 1.7 release, please fix the "
                    "code in advance", UserWarning, stacklevel=3)
        return
    bounds = _INT_BOUNDS.get(dt)
    if bounds is None:
        info = np.iinfo(dt.np) if dt is not _dtype.bool_ else None
        bounds = _INT_BOUNDS[dt] = (0, 1) if info is None else (int(info.min), int(info.max))
    lo, hi = bounds
    if low < lo:
        raise RuntimeError(f"from is out of bounds for {dt} (from={low}, lowest {lo})")
    if high - 1 > hi:
        raise RuntimeError(f"to - 1 is out of bounds for {dt} (to={high}, highest {hi})")


def _finish(arr: np.ndarray, dt: Any, device: Any, requires_grad: bool, out: Any = None,
            name: str = "") -> Any:
    if out is None:
        return _place(arr, dt, device, requires_grad)
    res = _place(arr, dt, out.device if device is None else device, False)
    return _args.write_new(out, res, name, requires_grad)


def _float_dtype(name: str, dtype: Any, out: Any, complex_ok: bool = False) -> Any:
    """The dtype of random floats: ``out``'s, ``dtype``, or the default; it must be a float."""
    if out is not None:
        dt = _args.out_dtype(name, dtype, out)
    elif dtype is None:
        return _dtype.get_default_dtype()
    else:
        dt = _dtype.to_dtype(dtype)
    _check_float(name, dt, complex_ok)
    return dt


def _check_float(name: str, dt: Any, complex_ok: bool = False) -> None:
    if not dt.is_floating_point:
        if dt.is_complex:
            dt.np  # noqa: B018 - complex32: a TypeError that names it (NumPy has no such type)
            if complex_ok:
                return
        raise NotImplementedError(f"{name}(): random floats need a floating-point dtype, got "
                                  f"{dt} (for integers use randint / random_)")


def _draw_dtype(dt: Any) -> Any:
    return np.float64 if dt is _dtype.float64 else np.float32


def _copy_from(x: Any, src: Any) -> Any:
    return copy_from(x, src)


randint.__signature__ = _args.shown_signature(  # type: ignore[attr-defined]
    randint, {"low": 0, "high": None, "size": None})


randint_like.__signature__ = _args.shown_signature(  # type: ignore[attr-defined]
    randint_like, {"low": 0, "high": None})


# ---------------------------------------------------------------------------------------------
# op classes


class PoissonSample(Op):
    """out = the drawn counts          grad_rate = 0 (as PyTorch's PoissonBackward0)"""

    node_name = "PoissonBackward0"

    @staticmethod
    def forward(ctx: Any, rate: Any, drawn: Any) -> Any:
        return drawn

    @staticmethod
    def backward(ctx: Any, grad: Any) -> Any:
        return ctx.xp.zeros_like(grad), None
