"""``autocast``: run each op in the precision PyTorch's autocast picks for it (mixed precision).

Inside ``with ember.autocast(device_type, dtype):`` every op on PyTorch's autocast lists for that
device type casts its floating inputs of that device (float64 never takes part) before computing:

* **lower precision** (``linear``, ``matmul``/``mm``/``bmm``/``addmm``/``baddbmm``/``addbmm``,
  convolutions, ``prelu``, ``scaled_dot_product_attention``, ...): to ``dtype`` (CPU default
  bfloat16, CUDA default float16). The products accumulate in float32 and round once.
* **float32** (losses, ``cdist``, 3-D pooling, linear algebra on the CPU; on CUDA also
  ``layer_norm``/``group_norm``/``rms_norm``, ``exp``/``log``/``pow``..., ``softmax``/
  ``log_softmax``/``sum``/``prod``/``cumsum`` when no ``dtype=`` is given): to float32.
* **promote** (CPU: ``cat``, ``stack``, ``index_copy``; CUDA: ``addcmul``, ``addcdiv``,
  ``atan2``, ``dot``, ``cross``, ``tensordot``, ``scatter_add``, ...): to the widest input type.

Other ops run in their inputs' dtype (mixed inputs promote as usual). The tables ``CPU_OPS`` and
``CUDA_OPS`` below are PyTorch 2.13's lists (``aten/src/ATen/autocast_mode.{h,cpp}``), by the
names of ember's functions. The casts are ordinary differentiable ``.to`` casts, so gradients reach
float32 parameters in float32.

How ops take part: an op function on a list starts with

    if _amp.active:
        input, weight = cast("linear", input, weight)

``_amp`` is this module's ``flag``: ``active`` is True while autocast is on in any thread (``cast``
then consults this thread's ``state``). Outside autocast an op pays that one attribute read.

Cast cache (``cache_enabled=True``, as PyTorch): inside a region the lower-precision cast of a
float32 leaf that requires grad (a parameter) is made once and reused; the cache is emptied when
the outermost region exits. ember also recasts when the parameter changed in place, or when grad
mode differs from when the cast was made (PyTorch would reuse the stale cast in both cases).

Like grad mode, the state is per thread, as in PyTorch.

Speed on the CPU: NumPy has no bfloat16/float16 GEMM, so a lower-precision product widens its
inputs to float32, multiplies there and rounds the result: autocast costs time on the CPU (the
casts, one eager-kernel pass each: 5-8% of issue 29's MLP step, docs/benchmarks.md "CPU
autocast") and gains none; it gives PyTorch's numerics. On CUDA (CuPy) float16/bfloat16 GEMMs
use the GPU's tensor cores.
"""

from __future__ import annotations

import functools
import threading
import warnings
import weakref
from collections.abc import Callable
from typing import Any

from .. import _dtype
from .. import _kernels_loader as _kernels
from ..ops import _autocast
from ..ops._autocast import flag  # the flag the ops' hooks read

__all__ = [
    "autocast",
    "is_autocast_available",
    "is_autocast_enabled",
    "set_autocast_enabled",
    "get_autocast_dtype",
    "set_autocast_dtype",
    "is_autocast_cache_enabled",
    "set_autocast_cache_enabled",
    "clear_autocast_cache",
    "custom_fwd",
    "custom_bwd",
]

_DEVICE_TYPES = ("cpu", "cuda")

# -- PyTorch 2.13's op lists, by ember function name ------------------------------------------
# LOWER: to the autocast dtype. FP32: to float32. FP32_OPT: to float32 unless the call passes an
# explicit ``dtype=`` (softmax, sum...; the op only calls the hook when it got none). PROMOTE: to
# the widest floating input type. BANNED: raise (binary_cross_entropy on CUDA, as PyTorch).
LOWER, FP32, FP32_OPT, PROMOTE, BANNED = "lower", "fp32", "fp32_opt", "promote", "banned"

_LOWER_BOTH = (
    "conv1d", "conv2d", "conv3d", "conv_tbc", "conv_transpose1d", "conv_transpose2d",
    "conv_transpose3d", "convolution", "prelu", "addmm", "matmul", "mm", "linalg_vecdot",
    "linear", "addbmm", "baddbmm", "bmm", "scaled_dot_product_attention",
)
_LOWER_CUDA_ONLY = (
    "addmv", "addr", "einsum", "mv", "chain_matmul", "linalg_multi_dot", "lstm_cell",
    "gru_cell", "rnn_tanh_cell", "rnn_relu_cell",
)
# Recurrent layers, by what PyTorch's implementations return under autocast: on CUDA cuDNN's
# RNN is autocast as a whole (every layer type comes back in the autocast dtype); on the CPU the
# LSTM layer is oneDNN's (``mkldnn_rnn_layer``, on the CPU list) and the Elman RNN layer and cell
# are compositions of autocast ``linear`` calls, so those come back in the autocast dtype, while
# the GRU layer and the LSTM/GRU cells mix their autocast products with the float32 state and
# come back float32 (not listed on the CPU)
_LOWER_RNN_CUDA = ("lstm", "gru", "rnn_tanh", "rnn_relu")
_LOWER_RNN_CPU = ("lstm", "rnn_tanh", "rnn_relu", "rnn_tanh_cell", "rnn_relu_cell")
_FP32_CUDA = (
    "acos", "asin", "cosh", "erfinv", "exp", "expm1", "log", "log10", "log2", "log1p",
    "reciprocal", "rsqrt", "sinh", "tan", "pow", "softplus", "layer_norm", "rms_norm",
    "group_norm", "norm", "nuclear_norm", "cosine_similarity", "poisson_nll_loss",
    "cosine_embedding_loss", "nll_loss", "hinge_embedding_loss", "kl_div", "l1_loss",
    "smooth_l1_loss", "huber_loss", "mse_loss", "margin_ranking_loss", "multilabel_margin_loss",
    "soft_margin_loss", "triplet_margin_loss", "multi_margin_loss",
    "binary_cross_entropy_with_logits", "dist", "pdist", "cdist", "renorm", "logsumexp",
    "interpolate", "upsample", "upsample_nearest", "upsample_bilinear",
    # cross_entropy is log_softmax (float32 on CUDA) then nll_loss (float32)
    "cross_entropy",
)
_FP32_OPT_CUDA = (
    "prod", "softmax", "log_softmax", "softmin", "cumprod", "cumsum", "vector_norm", "matrix_norm", "sum",
)
_PROMOTE_CUDA = (
    "addcdiv", "addcmul", "atan2", "bilinear", "cross", "dot", "vdot", "grid_sample",
    "index_put", "tensordot", "scatter_add",
)
_FP32_CPU = (
    "avg_pool3d", "binary_cross_entropy", "grid_sample", "polar", "prod", "quantile",
    "nanquantile", "stft", "cdist", "trace", "view_as_complex", "cholesky", "cholesky_inverse",
    "cholesky_solve", "inverse", "lu_solve", "orgqr", "ormqr", "pinverse", "max_pool3d",
    "max_unpool2d", "max_unpool3d", "adaptive_avg_pool3d", "reflection_pad1d",
    "reflection_pad2d", "replication_pad1d", "replication_pad2d", "replication_pad3d",
    "mse_loss", "cosine_embedding_loss", "nll_loss", "hinge_embedding_loss", "poisson_nll_loss",
    "smooth_l1_loss", "cross_entropy", "l1_loss", "huber_loss", "margin_ranking_loss",
    "soft_margin_loss", "triplet_margin_loss", "multi_margin_loss", "ctc_loss", "kl_div",
    "multilabel_margin_loss", "binary_cross_entropy_with_logits",
    "fft_fft", "fft_ifft", "fft_fft2", "fft_ifft2", "fft_fftn", "fft_ifftn", "fft_rfft",
    "fft_irfft", "fft_rfft2", "fft_irfft2", "fft_rfftn", "fft_irfftn", "fft_hfft", "fft_ihfft",
    "linalg_cond", "matrix_rank", "solve", "linalg_cholesky", "svdvals", "eigvals", "eigvalsh",
    "inv", "householder_product", "tensorinv", "tensorsolve", "geqrf", "lu_factor", "qr",
    "svd", "triangular_solve", "solve_triangular", "fractional_max_pool2d",
    "fractional_max_pool3d", "adaptive_max_pool3d", "linalg_qr", "cholesky_ex", "linalg_svd",
    "eig", "eigh", "lstsq", "inv_ex",
)
_PROMOTE_CPU = ("cat", "stack", "index_copy")


def _table(*groups: tuple[str, tuple[str, ...]]) -> dict[str, str]:
    out: dict[str, str] = {}
    for policy, names in groups:
        for n in names:
            out[n] = policy
    return out


CPU_OPS: dict[str, str] = _table((LOWER, _LOWER_BOTH + _LOWER_RNN_CPU), (FP32, _FP32_CPU),
                                 (PROMOTE, _PROMOTE_CPU))
CUDA_OPS: dict[str, str] = _table((LOWER, _LOWER_BOTH + _LOWER_CUDA_ONLY + _LOWER_RNN_CUDA),
                                  (FP32, _FP32_CUDA),
                                  (FP32_OPT, _FP32_OPT_CUDA), (PROMOTE, _PROMOTE_CUDA),
                                  (BANNED, ("binary_cross_entropy",)))
_POLICIES = {"cpu": CPU_OPS, "cuda": CUDA_OPS}


# -- the state ------------------------------------------------------------------------------
# Per device type, whether autocast is on and its dtype. ``active`` is True when any device type
# is enabled: the one thing an op's hook reads when autocast is off.
class _ThreadState(threading.local):
    active = False

    def __init__(self) -> None:  # runs once in each thread that reads the state
        self.enabled: dict[str, bool] = {"cpu": False, "cuda": False}
        self.dtypes: dict[str, Any] = {"cpu": _dtype.bfloat16, "cuda": _dtype.float16}
        self.cache_enabled = True
        self.nesting = 0  # autocast regions entered and not left (the cache lives while > 0)
        # id(source) -> (weakref to source, its version, grad mode, the cast)
        self.cache: dict[int, tuple[Any, int, bool, Any]] = {}
        self.casts = 0  # casts made by the hooks in this thread (a counter for tests)


state = _ThreadState()


_flag_lock = threading.Lock()


def _refresh() -> None:
    on = state.enabled["cpu"] or state.enabled["cuda"]
    if on != state.active:
        state.active = on
        with _flag_lock:
            flag.threads += 1 if on else -1
            flag.active = flag.threads > 0


def _check_device_type(device_type: Any) -> str:
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if device_type not in _DEVICE_TYPES:
        raise RuntimeError(
            f"User specified an unsupported autocast device_type '{device_type}': ember's "
            f"autocast supports {', '.join(repr(d) for d in _DEVICE_TYPES)}"
        )
    return device_type


def is_autocast_available(device_type: str) -> bool:
    """True for the device types autocast knows ('cpu', 'cuda')."""
    return device_type in _DEVICE_TYPES


# PyTorch's other device types with an autocast state: never on here (ember has no arrays there)
_OTHER_DEVICE_TYPES = frozenset({"ipu", "xpu", "maia", "xla", "mps", "hpu", "mtia",
                                 "privateuseone"})


def is_autocast_enabled(device_type: str | None = None) -> bool:
    """Whether autocast is on for ``device_type`` (no argument: 'cuda', PyTorch's legacy form);
    False for PyTorch's other device types ('mps', 'xpu'...), as on a PyTorch without them."""
    if device_type in _OTHER_DEVICE_TYPES:
        return False
    return state.enabled[_check_device_type("cuda" if device_type is None else device_type)]


def set_autocast_enabled(device_type: Any, enabled: bool | None = None) -> None:
    """Switch autocast on or off for a device type (``set_autocast_enabled(True)``: 'cuda')."""
    if enabled is None:  # legacy one-argument form
        device_type, enabled = "cuda", device_type
    state.enabled[_check_device_type(device_type)] = bool(enabled)
    _refresh()


def get_autocast_dtype(device_type: str) -> Any:
    """The dtype autocast uses on ``device_type`` (defaults: cpu bfloat16, cuda float16)."""
    return state.dtypes[_check_device_type(device_type)]


def set_autocast_dtype(device_type: str, dtype: Any) -> None:
    """Set the dtype autocast uses on ``device_type``."""
    state.dtypes[_check_device_type(device_type)] = dtype


def is_autocast_cache_enabled() -> bool:
    """Whether lower-precision casts of parameters are cached inside autocast regions."""
    return state.cache_enabled


def set_autocast_cache_enabled(enabled: bool) -> None:
    """Switch the cast cache on or off (this thread)."""
    state.cache_enabled = bool(enabled)


def clear_autocast_cache() -> None:
    """Drop every cached cast (done for you when the outermost autocast region exits)."""
    state.cache.clear()


def autocast_increment_nesting() -> int:
    """Count one more autocast region entered; returns the depth."""
    state.nesting += 1
    return state.nesting


def autocast_decrement_nesting() -> int:
    """Count one region left; returns the depth (0: outside every region)."""
    state.nesting -= 1
    return state.nesting


class autocast:
    """A context manager (and decorator) that turns mixed precision on for one device type.

    Args:
        device_type: 'cpu' or 'cuda'.
        dtype: the lower precision (default: ``get_autocast_dtype(device_type)``: bfloat16 on
            the CPU, float16 on CUDA). The CPU accepts bfloat16 and float16 only.
        enabled: False makes the region run without autocast (nested regions included).
        cache_enabled: cache the lower-precision casts of parameters inside the region (default:
            the current setting, True unless changed).

    Example::

        >>> with torch.autocast(device_type="cpu", dtype=torch.bfloat16):
        ...     y = model(x)            # linear/conv in bfloat16, the loss in float32
    """

    def __init__(self, device_type: str, dtype: Any = None, enabled: bool = True,
                 cache_enabled: bool | None = None) -> None:
        self.device = _check_device_type(device_type)
        self.fast_dtype = get_autocast_dtype(device_type) if dtype is None else dtype
        # (kept as given: PyTorch refuses a non-bool when the region is entered, below)
        self._enabled = enabled
        self._cache_enabled = state.cache_enabled if cache_enabled is None else cache_enabled
        if not isinstance(self.fast_dtype, _dtype.dtype):
            raise ValueError(f"autocast: dtype must be a torch dtype, got {self.fast_dtype!r}")
        if self._enabled and self.device == "cpu" and self.fast_dtype not in (
                _dtype.bfloat16, _dtype.float16):
            warnings.warn(
                "In CPU autocast, but the target dtype is not supported. Disabling autocast.\n"
                "CPU Autocast only supports dtype of torch.bfloat16, torch.float16 currently.",
                stacklevel=2,
            )
            self._enabled = False
        if self._enabled and self.device == "cuda":
            from .. import cuda

            if not cuda.is_available():
                warnings.warn(
                    "User provided device_type of 'cuda', but CUDA is not available. Disabling",
                    stacklevel=2,
                )
                self._enabled = False
            elif self.fast_dtype is _dtype.bfloat16 and not cuda.is_bf16_supported():
                raise RuntimeError(
                    "Current CUDA Device does not support bfloat16. Please switch dtype to float16."
                )
        if self._enabled and self.fast_dtype.np is None:
            raise RuntimeError(
                f"autocast to {self.fast_dtype} needs the ml_dtypes package (pip install "
                "ml_dtypes): NumPy has no bfloat16 of its own"
            )
        self._saved: list[tuple[bool, Any, bool]] = []

    def __enter__(self) -> autocast:
        for name, v in (("enabled", self._enabled), ("cache_enabled", self._cache_enabled)):
            if type(v) is not bool:
                raise TypeError(
                    f"autocast: {name} must be a bool, not {type(v).__name__} (PyTorch refuses "
                    f"it when the region is entered, too); pass {name}=bool(...)")
        st = state
        self._saved.append((st.enabled[self.device], st.dtypes[self.device], st.cache_enabled))
        st.enabled[self.device] = self._enabled
        st.dtypes[self.device] = self.fast_dtype
        st.cache_enabled = self._cache_enabled
        st.nesting += 1
        _refresh()
        return self

    def __exit__(self, *exc: Any) -> None:
        st = state
        st.nesting -= 1
        if st.nesting == 0:
            st.cache.clear()
            if _kernels._ROUNDED:
                _kernels.drop_rounded()
        st.enabled[self.device], st.dtypes[self.device], st.cache_enabled = self._saved.pop()
        _refresh()

    def __call__(self, func: Callable) -> Callable:
        @functools.wraps(func)
        def decorate_autocast(*args: Any, **kwargs: Any) -> Any:
            with self:
                return func(*args, **kwargs)

        return decorate_autocast

    def __repr__(self) -> str:
        return (f"autocast(device_type={self.device!r}, dtype={self.fast_dtype}, "
                f"enabled={self._enabled})")


# -- the hooks ops call ---------------------------------------------------------------------

_casting: Any = None  # ember.ops.casting, bound on first use (ops import this module)
_grad_mode: Any = None


def _to(t: Any, dt: Any) -> Any:
    """``t.to(dt)``, differentiable (counted in ``state.casts``)."""
    global _casting
    if _casting is None:
        from ..ops import casting as _c

        _casting = _c
    state.casts += 1
    return _casting.cast(t, dt)


def _eligible(t: Any, dev: str) -> bool:
    """A floating tensor of device type ``dev`` other than float64 (PyTorch's is_eligible)."""
    try:
        dt = t.dtype
    except AttributeError:
        return False
    return (dt.is_floating_point and dt is not _dtype.float64 and not dt.is_complex
            and t.device.type == dev)


def _cached_lower(t: Any, dt: Any) -> Any:
    """The cast of ``t`` to ``dt``, cached for float32 leaves that require grad (parameters)."""
    global _grad_mode
    st = state
    if not (st.cache_enabled and t.dtype is _dtype.float32 and t.requires_grad and t.is_leaf
            and t._base is None):
        return _to(t, dt)
    if _grad_mode is None:
        from ..autograd import grad_mode as _g

        _grad_mode = _g
    grad_on = _grad_mode.state.enabled
    version = t._version[0] if t._version is not None else 0
    hit = st.cache.get(id(t))
    if hit is not None and hit[0]() is t and hit[1] == version and hit[2] == grad_on \
            and hit[3].dtype is dt:
        return hit[3]
    out = _to(t, dt)
    st.cache[id(t)] = (weakref.ref(t), version, grad_on, out)
    return out


def _device_of(args: tuple) -> str | None:
    for a in args:
        if isinstance(a, (list, tuple)):
            d = _device_of(tuple(a))
            if d is not None:
                return d
            continue
        try:
            if a.dtype.is_floating_point:
                return a.device.type
        except AttributeError:
            continue
    return None


def _widest(args: tuple, dev: str, acc: Any = None) -> Any:
    for a in args:
        if isinstance(a, (list, tuple)):
            acc = _widest(tuple(a), dev, acc)
        elif _eligible(a, dev):
            acc = a.dtype if acc is None else _dtype.promote_types(acc, a.dtype)
    return acc


def _map(args: tuple, dev: str, fn: Callable) -> tuple:
    out = []
    for a in args:
        if isinstance(a, (list, tuple)):
            a = type(a)(_map(tuple(a), dev, fn))
        elif _eligible(a, dev):
            a = fn(a)
        out.append(a)
    return tuple(out)


# Lower-precision ops whose CPU path widens its half operands by _kernels_loader.half_cast (so
# it takes the float32 values a cast kept); others (convolution: products in bfloat16 arrays)
# would leave them unused.
_WIDENS = frozenset(("linear", "addmm", "addbmm", "baddbmm", "matmul", "mm", "bmm"))


def cast(op: str, *args: Any) -> tuple:
    """The arguments of ``op`` as autocast wants them on their device type: ``args`` (tensors,
    lists of tensors, anything else passes through) with the eligible tensors cast per ``op``'s
    policy on the device type of the first floating tensor. Ops call it when ``flag.active``; ops off the device type's list get ``args`` back unchanged."""
    dev = _device_of(args)
    if dev is None or not state.enabled.get(dev, False):
        return args
    policy = _POLICIES[dev].get(op)
    if policy is None:
        return args
    if policy is LOWER:
        dt = state.dtypes[dev]
        if op not in _WIDENS or _kernels.bf16_gemm_ready(dt.np):  # (the product takes the
            # bfloat16 arrays as they are: nothing to keep)
            return _map(args, dev, lambda t: t if t.dtype is dt else _cached_lower(t, dt))
        # the op computes in float32 from the rounded values: each large cast keeps them, from
        # the pass that rounds, for the op's cast back (_kernels_loader.half_round)
        _kernels.keep_rounded = True
        try:
            return _map(args, dev, lambda t: t if t.dtype is dt else _cached_lower(t, dt))
        finally:
            _kernels.keep_rounded = False
    if policy is FP32 or policy is FP32_OPT:
        f32 = _dtype.float32
        return _map(args, dev, lambda t: t if t.dtype is f32 else _to(t, f32))
    if policy is PROMOTE:
        wide = _widest(args, dev)
        return _map(args, dev, lambda t: t if t.dtype is wide else _to(t, wide))
    raise RuntimeError(
        "torch.nn.functional.binary_cross_entropy and torch.nn.BCELoss are unsafe to autocast.\n"
        "Many models use a sigmoid layer right before the binary cross entropy layer.\n"
        "In this case, combine the two layers using torch.nn.functional.binary_cross_entropy_"
        "with_logits\nor torch.nn.BCEWithLogitsLoss.  binary_cross_entropy_with_logits and "
        "BCEWithLogits are\nsafe to autocast."
    )


def cast1(op: str, t: Any) -> Any:
    """``cast(op, t)[0]``: for ops with one tensor input."""
    return cast(op, t)[0]


def lower(*tensors: Any) -> tuple:
    """Every eligible tensor cast to the autocast dtype of its device (float64, non-floating and
    None pass through), whatever the op. Differentiable; parameters come from the cast cache."""
    if not state.active:
        return tensors
    out = []
    for t in tensors:
        if t is not None and hasattr(t, "dtype"):
            dev = t.device.type
            if state.enabled.get(dev, False) and _eligible(t, dev):
                dt = state.dtypes[dev]
                t = t if t.dtype is dt else _cached_lower(t, dt)
        out.append(t)
    return tuple(out)


def fp32(*tensors: Any) -> tuple:
    """Every float16/bfloat16 tensor on an autocast-enabled device cast to float32."""
    if not state.active:
        return tensors
    out = []
    for t in tensors:
        if (t is not None and hasattr(t, "dtype") and t.dtype in (_dtype.float16, _dtype.bfloat16)
                and state.enabled.get(t.device.type, False)):
            t = _to(t, _dtype.float32)
        out.append(t)
    return tuple(out)


# -- custom autograd Functions under autocast ------------------------------------------------


def custom_fwd(fwd: Callable | None = None, *, device_type: str = "cuda",
               cast_inputs: Any = None) -> Callable:
    """Decorator for a custom Function's ``forward(ctx, ...)``.

    Without ``cast_inputs`` the forward runs under the caller's autocast state, which is noted on
    ``ctx`` so that a ``@custom_bwd`` backward runs under the same state. With ``cast_inputs``
    (and autocast on for ``device_type``) the forward runs with autocast off and its floating
    inputs of that device type (float64 excepted) cast to ``cast_inputs``."""
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)
    _check_device_type(device_type)

    @functools.wraps(fwd)
    def decorate_fwd(*args: Any, **kwargs: Any) -> Any:
        on = state.enabled[device_type]
        ctx = args[0] if args else None
        _note(ctx, "_dtype", state.dtypes[device_type])
        if cast_inputs is None:
            _note(ctx, "_fwd_used_autocast", on)
            return fwd(*args, **kwargs)
        _note(ctx, "_fwd_used_autocast", False)
        if not on:
            return fwd(*args, **kwargs)

        def conv(a: Any) -> Any:
            if _eligible(a, device_type):
                return a.to(cast_inputs)
            if isinstance(a, (list, tuple)):
                return type(a)(conv(v) for v in a)
            return a

        with autocast(device_type=device_type, enabled=False):
            return fwd(*[conv(a) for a in args], **{k: conv(v) for k, v in kwargs.items()})

    return decorate_fwd


def custom_bwd(bwd: Callable | None = None, *, device_type: str = "cuda") -> Callable:
    """Decorator for a custom Function's ``backward(ctx, ...)``: it runs under the autocast state
    its ``@custom_fwd`` forward ran under (on/off and dtype for ``device_type``)."""
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)
    _check_device_type(device_type)

    @functools.wraps(bwd)
    def decorate_bwd(*args: Any, **kwargs: Any) -> Any:
        ctx = args[0] if args else None
        used = getattr(ctx, "_fwd_used_autocast", False)
        dtype = getattr(ctx, "_dtype", state.dtypes[device_type])
        with _region(device_type, used, dtype):
            return bwd(*args, **kwargs)

    return decorate_bwd


def _note(ctx: Any, name: str, value: Any) -> None:
    try:
        setattr(ctx, name, value)
    except AttributeError:  # not an object that takes attributes: nothing to remember
        pass


class _region:
    """Set autocast for one device type without autocast()'s checks (custom_bwd replays a state
    that was valid when its forward ran)."""

    def __init__(self, device_type: str, enabled: bool, dtype: Any) -> None:
        self.device, self.enabled, self.dtype = device_type, bool(enabled), dtype

    def __enter__(self) -> None:
        st = state
        self.saved = (st.enabled[self.device], st.dtypes[self.device])
        st.enabled[self.device], st.dtypes[self.device] = self.enabled, self.dtype
        st.nesting += 1
        _refresh()

    def __exit__(self, *exc: Any) -> None:
        st = state
        st.nesting -= 1
        if st.nesting == 0:
            st.cache.clear()
        st.enabled[self.device], st.dtypes[self.device] = self.saved
        _refresh()


# -- PyTorch's deprecated per-device spellings (torch.get_autocast_gpu_dtype()...) -----------

def _deprecated_name(msg: str) -> None:
    warnings.warn(msg, DeprecationWarning, stacklevel=3)


def get_autocast_gpu_dtype() -> Any:
    _deprecated_name("torch.get_autocast_gpu_dtype() is deprecated. Please use torch.get_autocast_dtype('cuda') instead.")
    return get_autocast_dtype("cuda")


def get_autocast_cpu_dtype() -> Any:
    _deprecated_name("torch.get_autocast_cpu_dtype() is deprecated. Please use torch.get_autocast_dtype('cpu') instead.")
    return get_autocast_dtype("cpu")


def set_autocast_gpu_dtype(dtype: Any) -> None:
    _deprecated_name("torch.set_autocast_gpu_dtype(dtype) is deprecated. Please use torch.set_autocast_dtype('cuda', dtype) instead.")
    set_autocast_dtype("cuda", dtype)


def set_autocast_cpu_dtype(dtype: Any) -> None:
    _deprecated_name("torch.set_autocast_cpu_dtype(dtype) is deprecated. Please use torch.set_autocast_dtype('cpu', dtype) instead.")
    set_autocast_dtype("cpu", dtype)


def is_autocast_cpu_enabled() -> bool:
    _deprecated_name("torch.is_autocast_cpu_enabled() is deprecated. Please use torch.is_autocast_enabled('cpu') instead.")
    return is_autocast_enabled("cpu")


def set_autocast_cpu_enabled(enabled: bool) -> None:
    _deprecated_name("torch.set_autocast_cpu_enabled(enabled) is deprecated. Please use torch.set_autocast_enabled('cpu', enabled) instead.")
    set_autocast_enabled("cpu", enabled)


_autocast.install(cast)  # the ops' hooks now apply this module's policy
