"""ember: PyTorch's API, NumPy's footprint, code you can read.

``import ember as torch`` and write PyTorch. CPU arrays are NumPy arrays; CUDA arrays are CuPy's.
"""

from __future__ import annotations

from ._version import __ember_version__, __version__  # "2.13.0+ember": the API implemented
from . import version  # torch.version (__version__, cuda, hip...)
from . import _blas_spin  # OpenBLAS's idle threads sleep at once (set before NumPy loads it)

_spin_set = _blas_spin.before_numpy()
import numpy as _np  # noqa: E402 - after the OpenBLAS setting above

_blas_spin.after_numpy(_spin_set)
import types as _types

from . import _overrides


class _BuiltinFunction(staticmethod):
    """A namespace function that stays unbound when stored on a class, as PyTorch's builtins
    do: ``class M(nn.Module): conv = torch.conv2d`` then ``self.conv(x, w)``. A call goes straight
    to the function (a staticmethod object is callable); ``inspect.signature``, ``help`` and the
    docstring are the function's; it pickles by its public name."""

    def __reduce__(self) -> str:
        return self.__qualname__

    def __repr__(self) -> str:
        return f"<function {self.__module__}.{self.__qualname__}>"


_BuiltinFunction.__name__ = _BuiltinFunction.__qualname__ = "builtin_function"  # help()'s kind
_builtins: dict[int, _BuiltinFunction] = {}

# PyTorch's functions written in Python: they bind as methods, and so do ember's
_PYTHON_LEVEL = frozenset({
    "are_deterministic_algorithms_enabled", "atleast_1d", "atleast_2d", "atleast_3d",
    "block_diag", "broadcast_shapes", "broadcast_tensors", "cartesian_prod", "cdist",
    "chain_matmul", "classproperty", "compile", "compiled_with_cxx11_abi", "cond", "eig", "einsum",
    "from_dlpack", "get_default_device", "get_deterministic_debug_mode", "get_file_path",
    "get_float32_matmul_precision", "get_rng_state", "initial_seed",
    "is_deterministic_algorithms_warn_only_enabled", "is_storage", "is_tensor",
    "is_warn_always_enabled", "load", "lobpcg", "lstsq", "lu", "manual_seed", "matrix_rank",
    "meshgrid", "norm", "pca_lowrank", "prepare_multiprocessing_environment", "save", "seed",
    "set_default_device", "set_default_dtype", "set_default_tensor_type",
    "set_deterministic_debug_mode", "set_float32_matmul_precision", "set_printoptions",
    "set_rng_state", "set_warn_always", "solve", "split", "stft", "svd_lowrank", "sym_float",
    "sym_int", "sym_ite", "sym_max", "sym_min", "sym_not", "sym_sqrt", "sym_sum", "symeig",
    "tensordot", "thread_safe_generator", "typename", "unique", "unique_consecutive",
    "unravel_index", "use_deterministic_algorithms", "vmap", "while_loop",
})

# those of them that take tensors, and so dispatch __torch_function__ as PyTorch's do
_PYTHON_LEVEL_DISPATCHED = frozenset({
    "atleast_1d", "atleast_2d", "atleast_3d", "block_diag", "broadcast_tensors",
    "cartesian_prod", "cdist", "chain_matmul", "einsum", "lobpcg", "lstsq", "lu", "matrix_rank",
    "meshgrid", "norm", "pca_lowrank", "solve", "split", "stft", "svd_lowrank", "tensordot",
    "unique", "unique_consecutive",
})


def _as_builtin(fn: object, module: str, name: str) -> object:
    """``fn`` as a ``_BuiltinFunction`` named ``module.name`` (one per function: an alias such
    as ``absolute`` is the same object as ``abs``, and pickles under the first name)."""
    w = _builtins.get(id(fn))
    if w is not None and _overrides.implementation(w.__func__) is fn:
        return w
    d = _overrides.dispatcher(fn)  # __torch_function__ dispatch (_overrides.py)
    w = _BuiltinFunction(d)
    _overrides.set_public(d, w)
    w.__module__, w.__name__, w.__qualname__ = module, name, name
    _builtins[id(fn)] = w
    return w


def _as_builtins(namespace: dict, module: str, keep: frozenset = frozenset()) -> None:
    """Make the public functions of ``namespace`` (a module's globals) _BuiltinFunctions, but
    those named in ``keep`` (PyTorch's Python-level functions there)."""
    for name, obj in list(namespace.items()):
        if type(obj) is _types.FunctionType and name[0] != "_":
            if name not in keep:
                namespace[name] = _as_builtin(obj, module, name)
            elif name in _PYTHON_LEVEL_DISPATCHED:  # binds as a method, and dispatches
                namespace[name] = _overrides.dispatcher(obj)
                namespace[name].__module__ = module

# PyTorch prints nothing for log(0), exp(1000), 0 * inf, sqrt(-1), nan -> int...: the results are
# inf/nan and that is the answer. NumPy would warn from inside every op (mul, sub, the engine's
# gradient sums, its own reductions), so its floating-point warnings are switched off once here.
# A per-op np.errstate would cost ~1 us on every call (~40% of a small op's forward); this costs
# nothing. Side effect: NumPy code in the same thread no longer warns either (np.errstate or
# np.seterr turns them back on); threads started later begin from NumPy's defaults (warnings
# on). tests/test_warnings.py holds ember to PyTorch's silence.
_np.seterr(all="ignore")

# Large temporaries are kept by the C allocator for reuse instead of being unmapped and faulted
# in again every step (glibc; EMBER_MALLOC=system leaves it alone): _allocator.py.
from . import _allocator

_allocator.tune()

from . import _dtype
from ._backend import OutOfMemoryError, device
from ._dtype import (
    bfloat16,
    float16,
    float32,
    float64,
    get_default_dtype,
    int8,
    int16,
    int32,
    int64,
    promote_types,
    set_default_dtype,
    uint8,
    uint16,
    uint32,
    uint64,
)
from ._dtype import bool_ as bool  # noqa: A001 - PyTorch's name
from ._dtype import (  # named without tensors yet (_dtype.py's docstring)
    complex32,
    complex64,
    complex128,
    float4_e2m1fn_x2,
    float8_e4m3fn,
    float8_e4m3fnuz,
    float8_e5m2,
    float8_e5m2fnuz,
    float8_e8m0fnu,
)
from ._dtype import complex32 as chalf
from ._dtype import complex64 as cfloat
from ._dtype import complex128 as cdouble
from ._dtype import can_cast
from ._dtype import dtype as dtype
from ._dtype_info import *  # noqa: F403
from ._size import Size
from ._switches import *  # noqa: F403
from ._tensor import Tensor
from . import _tensor_sparse  # noqa: F401 - sparse layouts: Tensor's SparseTensor subclass
from .autograd.grad_mode import (
    enable_grad,
    inference_mode,
    is_grad_enabled,
    is_inference_mode_enabled,
    no_grad,
    set_grad_enabled,
)
from .ops.creation import (
    arange,
    as_tensor,
    asarray,
    empty,
    empty_like,
    empty_strided,
    eye,
    from_numpy,
    full,
    full_like,
    linspace,
    logspace,
    ones,
    ones_like,
    scalar_tensor,
    tensor,
    zeros,
    zeros_like,
)
from .ops.creation import range_ as range  # noqa: A001 - PyTorch's (deprecated) name
from .ops.random import (
    Generator,
    bernoulli,
    default_generator,
    get_rng_state,
    initial_seed,
    manual_seed,
    multinomial,
    poisson,
    normal,
    rand,
    rand_like,
    randint,
    randint_like,
    randn,
    randn_like,
    randperm,
    seed,
    set_rng_state,
)
from .ops.casting import *  # noqa: F403
from .ops.pointwise import *  # noqa: F403
from .ops.pointwise_fused import *  # noqa: F403
from .ops.pointwise_math import *  # noqa: F403
from .ops.pointwise_piecewise import *  # noqa: F403
from .ops.pointwise_complex import *  # noqa: F403
from .ops.comparison import *  # noqa: F403
from .ops.cumulative import *  # noqa: F403
from .ops.reduction import *  # noqa: F403
from .ops.reduction_stats import *  # noqa: F403
from .ops.reduction_stats import _segment_reduce as segment_reduce  # noqa: F401
from .ops.softmax_family import *  # noqa: F403
from .ops import return_types  # torch.return_types: the named result tuples
from .ops.blas import *  # noqa: F403
from .ops.linalg import *  # noqa: F403
from .ops.linalg_factor import *  # noqa: F403
from .ops.other import *  # noqa: F403
from .ops.other_matrix import *  # noqa: F403
from .ops.other_variants import *  # noqa: F403
from .ops.shape import *  # noqa: F403
from .ops.joining import *  # noqa: F403
from .ops.indexing import *  # noqa: F403
from .ops.indexing_scatter import *  # noqa: F403
from .ops.sorting import *  # noqa: F403
from .ops.sparse import *  # noqa: F403
from .ops.sparse_creation import *  # noqa: F403
from .ops.special import digamma, erfcx as _erfcx, i0, lgamma, logit, mvlgamma, polygamma, sinc  # noqa: F401
from .ops.special import igamma, igammac  # noqa: F401
from .ops.spectral_stft import istft, stft  # noqa: F401
from .ops._aliases import install as _numpy_names
from .ops._aliases import numpy_names as _numpy_names_of

_numpy_names(globals())  # axis=, keepdims=, x=... on the ops, as PyTorch's builtins take
from . import random  # noqa: E402
from ._tensor_str import get_printoptions, set_printoptions
from . import autograd, cuda, backends, accelerator  # noqa: E402

import sys as _sys

torch = _sys.modules[__name__]  # PyTorch's module has itself as an attribute: torch.torch
del _sys

# PyTorch's dtype aliases
float = float32  # noqa: A001
double = float64
half = float16
long = int64
int = int32  # noqa: A001
short = int16


def set_num_threads(n: object) -> None:
    """Threads for CPU math, as PyTorch's: the eager kernels' pool (``ember._kernels``), NumPy's
    BLAS (threadpoolctl where installed, else the loaded OpenBLAS libraries through ctypes) and
    the pool that splits large elementwise NumPy calls (``ember._threads``). Results do not
    depend on it (docs/running.md, "Threads")."""
    import builtins

    from . import _threads

    if isinstance(n, builtins.bool) or not isinstance(n, (builtins.int, _np.integer)):
        raise RuntimeError(f"set_num_threads expects an int, but got {type(n).__name__}")
    n = builtins.int(n)  # `int` in this module is PyTorch's dtype alias
    if n < 1:
        raise RuntimeError(f"set_num_threads expects a positive integer, got {n}")
    _threads.set_num_threads(n)


def get_num_threads() -> object:
    """The thread count set by ``set_num_threads``, else ``OMP_NUM_THREADS`` (at most the usable
    CPUs), else the CPUs this process may use, as PyTorch's."""
    from . import _threads

    return _threads.get_num_threads()


def is_tensor(obj: object) -> bool:
    return isinstance(obj, Tensor)


def is_floating_point(input: Tensor) -> bool:
    return input.is_floating_point()


is_floating_point = _numpy_names_of(is_floating_point)  # x= too, as PyTorch's builtin


def numel(t: Tensor) -> int:
    return t.numel()


class _LegacyTensorType(type):
    """``isinstance(t, torch.FloatTensor)``: a CPU tensor of that dtype, as in PyTorch."""

    _dtype: dtype

    def __instancecheck__(cls, obj: object) -> bool:
        return isinstance(obj, Tensor) and obj.dtype is cls._dtype and not obj.is_cuda


def _legacy(dt: dtype) -> type:
    class _LegacyTensor(Tensor, metaclass=_LegacyTensorType):
        """Legacy typed constructor (``torch.FloatTensor([1, 2])``); instances are plain Tensors."""

        _dtype = dt

        def __new__(cls, *args: object, **kwargs: object) -> Tensor:  # type: ignore[misc]
            t = Tensor(*args, **kwargs)
            return t.to(dt)

    return _LegacyTensor


FloatTensor = _legacy(float32)
DoubleTensor = _legacy(float64)
HalfTensor = _legacy(float16)
LongTensor = _legacy(int64)
IntTensor = _legacy(int32)
ShortTensor = _legacy(int16)
CharTensor = _legacy(int8)
ByteTensor = _legacy(uint8)
BoolTensor = _legacy(bool)
for _n, _c in (("FloatTensor", FloatTensor), ("DoubleTensor", DoubleTensor),
               ("HalfTensor", HalfTensor), ("LongTensor", LongTensor), ("IntTensor", IntTensor),
               ("ShortTensor", ShortTensor), ("CharTensor", CharTensor),
               ("ByteTensor", ByteTensor), ("BoolTensor", BoolTensor)):
    _c.__name__ = _c.__qualname__ = _n
del _n, _c


# Submodules load on first use (``ember.nn``, ``ember.optim``...), keeping ``import ember`` fast.
_LAZY_SUBMODULES = frozenset({"nn", "optim", "utils", "linalg", "serialization", "demo", "amp",
                              "special", "distributed", "testing", "multiprocessing", "onnx",
                              "jit", "hub", "profiler", "_dynamo", "distributions", "func", "compiler",
                              "cpu", "xpu", "mps", "torch_version", "functional",
                              "overrides", "fx", "futures", "_C", "__config__", "_subclasses",
                              "sparse", "nested", "fft", "storage", "library"})


# Top-level functions that live in modules loaded on first use: name -> module.
_LAZY_ATTRS = {
    **dict.fromkeys(["save", "load"], "ember.serialization"),
    **dict.fromkeys(["autocast", "is_autocast_enabled", "set_autocast_enabled",
                     "get_autocast_dtype", "set_autocast_dtype", "is_autocast_cache_enabled",
                     "set_autocast_cache_enabled", "clear_autocast_cache", "get_autocast_gpu_dtype",
                     "get_autocast_cpu_dtype", "set_autocast_gpu_dtype", "set_autocast_cpu_dtype",
                     "is_autocast_cpu_enabled", "set_autocast_cpu_enabled"],
                    "ember.amp.autocast_mode"),
    "compile": "ember._compile",
    **dict.fromkeys(["SymInt", "SymFloat", "SymBool"], "ember._symbolic"),
    "_assert_async": "ember._asserts",
    "GradScaler": "ember.amp",
    # torch._foreach_*: the list-of-tensors forms of ops (_foreach.py), named without the prefix
    **dict.fromkeys([f"_foreach_{n}" for n in (
        "abs abs_ acos acos_ add add_ addcdiv addcdiv_ addcmul addcmul_ asin asin_ atan atan_ ceil "
        "ceil_ clamp_max clamp_max_ clamp_min clamp_min_ clone copy_ cos cos_ cosh cosh_ div div_ "
        "erf erf_ erfc erfc_ exp exp_ expm1 expm1_ floor floor_ frac frac_ lerp lerp_ lgamma "
        "lgamma_ log log10 log10_ log1p log1p_ log2 log2_ log_ max maximum maximum_ minimum "
        "minimum_ mul mul_ neg neg_ norm pow pow_ reciprocal reciprocal_ round round_ rsqrt rsqrt_ "
        "sigmoid sigmoid_ sign sign_ sin sin_ sinh sinh_ sqrt sqrt_ sub sub_ tan tan_ tanh tanh_ "
        "trunc trunc_ zero_ "
    ).split()], "ember._foreach"),
    "vmap": "ember.func",
    **dict.fromkeys(["_standard_gamma", "_standard_gamma_grad"], "ember.distributions._special"),
    **dict.fromkeys(["UntypedStorage", "TypedStorage"], "ember.storage"),
    "PyTorchFileReader": "ember._archive",
    # PyTorch's C classes under torch (type annotations, isinstance): torch.jit's classes here
    **dict.fromkeys(["ScriptModule", "ScriptFunction"], "ember.jit"),
    **dict.fromkeys(["Stream", "Event"], "ember._stream"),
    "from_dlpack": "ember.utils.dlpack",
    **dict.fromkeys(
        ["conv1d", "conv2d", "conv_transpose1d", "conv_transpose2d", "avg_pool1d",
         "pixel_shuffle", "pixel_unshuffle", "conv3d", "conv_transpose3d", "conv_tbc"],
        "ember.ops.nn"),
    "native_channel_shuffle": "ember.ops.nn",
    **dict.fromkeys(["relu_", "selu_", "celu_", "rrelu_", "threshold_"], "ember.ops.nn"),
    **dict.fromkeys(["rms_norm", "bilinear", "channel_shuffle", "prelu"], "ember.nn.functional"),
    # ATen's signatures, not nn.functional's (torch.dropout(input, p, train)...): ops/nn/namespace.py
    **dict.fromkeys(
        ["dropout", "alpha_dropout", "feature_alpha_dropout", "batch_norm", "instance_norm",
         "layer_norm", "group_norm", "embedding", "max_pool1d", "max_pool2d", "max_pool3d",
         "adaptive_avg_pool1d", "adaptive_max_pool1d", "celu", "selu", "threshold", "rrelu",
         "hardshrink", "cosine_similarity", "pairwise_distance", "pdist"],
        "ember.ops.nn.namespace"),
}


def __getattr__(name: str) -> object:
    if name in _LAZY_ATTRS:
        import importlib

        module = importlib.import_module(_LAZY_ATTRS[name])
        if hasattr(module, name):
            value = getattr(module, name)
            if (type(value) is _types.FunctionType or _overrides.is_dispatcher(value)) \
                    and name not in _PYTHON_LEVEL:  # torch.conv2d: a builtin
                value = _as_builtin(_overrides.implementation(value), __name__, name)
            return value
    if name in _LAZY_SUBMODULES:
        import importlib

        try:
            return importlib.import_module(f"ember.{name}")
        except ModuleNotFoundError as e:
            if e.name != f"ember.{name}":
                raise
    from ._missing import attribute_error

    raise attribute_error("torch", name)


# PyTorch's namespace functions are builtins, which do not bind as methods: ember's neither
_as_builtins(globals(), __name__, _PYTHON_LEVEL)
_segment_reduce = segment_reduce  # one builtin under both names, as PyTorch's
