"""Threads for CPU math: one setting (``ember.set_num_threads``) for the eager kernels' pool
(``ember._kernels``), NumPy's BLAS, and a small pool of Python threads that splits large
elementwise NumPy calls (NumPy's ufunc loops release the GIL).

The count follows PyTorch's rules: ``set_num_threads(n)``, else ``OMP_NUM_THREADS`` (at most the
CPUs this process may use), else the CPUs this process may use (``os.sched_getaffinity``).

BLAS: threadpoolctl where installed (its ``blas`` libraries); otherwise the OpenBLAS libraries
this process has loaded, found by name and called through ctypes (``openblas_set_num_threads``
and the prefixed/suffixed names NumPy's and SciPy's bundled builds export,
``scipy_openblas_set_num_threads64_``...), as threadpoolctl does. A BLAS loaded after the call
keeps its own default (``OPENBLAS_NUM_THREADS``/``OMP_NUM_THREADS``, else every core).

``run(f, *operands)``: ``f(*operands)`` for a NumPy ufunc ``f``, split over the threads in
contiguous parts of the result when the caller finds at least ``cut`` elements (``cut_cheap``
for memory-bound arithmetic; both are ``sys.maxsize`` at one thread, so a caller's test
``a.size >= _threads.cut`` is the whole cost for small arrays). Each element is computed by the same loop as in one call (flat parts start
at multiples of 1024 elements, so SIMD groups line up), so results are bit-identical at every
thread count. Workers do not survive ``fork``; a child starts its own.
"""

from __future__ import annotations

import contextvars
import ctypes
import glob
import os
import queue
import sys
import threading
from typing import Any

import numpy as np

from . import _kernels_loader

# Elements from which a split pays (measured on a quiet 2-vCPU AMD EPYC: docs/benchmarks.md,
# "Threads"): the hand-off costs 40-80 us, so compute-bound loops (exp, tanh, where's branchy
# loop) split from 512K elements and memory-bound arithmetic (add, mul, div, maximum) from 2M.
THRESHOLD = 1 << 19
THRESHOLD_CHEAP = 1 << 21
ALIGN = 1024  # a flat part starts at a multiple of this many elements
BLOCK = 1 << 16  # elements per block where a part is computed in blocks (where)

_count: int | None = None  # set_num_threads's value; None: the default
cut = sys.maxsize  # the smallest result that splits (sys.maxsize: never)
cut_cheap = sys.maxsize  # the same for memory-bound arithmetic


def default_threads() -> int:
    """PyTorch's default: ``OMP_NUM_THREADS`` (at most the usable CPUs), else the usable CPUs."""
    return _kernels_loader.default_threads()


_default = default_threads()  # read once, as PyTorch reads OMP_NUM_THREADS once


def get_num_threads() -> int:
    return _count if _count is not None else _default


def set_num_threads(n: int) -> None:
    """The thread count for the kernels' pool, NumPy's BLAS and ``run``'s pool."""
    global _count
    _count = n
    _kernels_loader.set_num_threads(n)
    _set_cut(n)
    set_blas_threads(n)


def _set_cut(n: int) -> None:
    global cut, cut_cheap
    cut = THRESHOLD if n > 1 else sys.maxsize
    cut_cheap = THRESHOLD_CHEAP if n > 1 else sys.maxsize


# -- BLAS -------------------------------------------------------------------------------------
_SET_NAMES = [f"{p}openblas_set_num_threads{s}" for p in ("", "scipy_") for s in ("", "64_")]
_GET_NAMES = [f"{p}openblas_get_num_threads{s}" for p in ("", "scipy_") for s in ("", "64_")]


def _loaded_paths() -> list[str]:
    """Paths of the shared libraries this process has loaded (Linux: /proc/self/maps; macOS:
    dyld's image list), else NumPy's and SciPy's bundled library folders."""
    paths: list[str] = []
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                parts = line.split(None, 5)
                if len(parts) == 6 and parts[5].startswith("/"):
                    paths.append(parts[5].strip())
    except OSError:
        if sys.platform == "darwin":
            try:
                dyld = ctypes.CDLL(None)
                dyld._dyld_get_image_name.restype = ctypes.c_char_p
                for i in range(dyld._dyld_image_count()):
                    paths.append(os.fsdecode(dyld._dyld_get_image_name(i)))
            except (OSError, AttributeError):
                pass
        if not paths:
            site = os.path.dirname(os.path.dirname(np.__file__))
            for folder in ("numpy.libs", "scipy.libs", os.path.join("numpy", ".dylibs")):
                paths += glob.glob(os.path.join(site, folder, "*"))
    return list(dict.fromkeys(paths))


def openblas_libraries() -> list[tuple[str, Any, Any]]:
    """(path, set function, get function) of each loaded OpenBLAS that exports them."""
    found = []
    for path in _loaded_paths():
        if "openblas" not in os.path.basename(path).lower():
            continue
        try:
            lib = ctypes.CDLL(path)  # already loaded: the same handle
        except OSError:
            continue
        setter = next((getattr(lib, n) for n in _SET_NAMES if hasattr(lib, n)), None)
        getter = next((getattr(lib, n) for n in _GET_NAMES if hasattr(lib, n)), None)
        if setter is not None and getter is not None:
            setter.argtypes, setter.restype, getter.restype = [ctypes.c_int], None, ctypes.c_int
            found.append((path, setter, getter))
    return found


def _threadpoolctl() -> Any:
    try:
        import threadpoolctl
    except ImportError:
        return None
    return threadpoolctl


def set_blas_threads(n: int, use_threadpoolctl: bool = True) -> None:
    """Limit every loaded BLAS to n threads (threadpoolctl, else the OpenBLAS lookup)."""
    tpc = _threadpoolctl() if use_threadpoolctl else None
    if tpc is not None:
        tpc.threadpool_limits(limits=n, user_api="blas")
        return
    for _, setter, _ in openblas_libraries():
        setter(n)


def blas_threads(use_threadpoolctl: bool = True) -> list[int]:
    """The thread count each loaded BLAS reports (empty where none can be queried)."""
    tpc = _threadpoolctl() if use_threadpoolctl else None
    if tpc is not None:
        return [int(p["num_threads"]) for p in tpc.threadpool_info() if p["user_api"] == "blas"]
    return [int(getter()) for _, _, getter in openblas_libraries()]


# -- products split by ember, OpenBLAS at one thread --------------------------------------------
# Many small products one after another (a convolution's per-image products) gain little from
# OpenBLAS's own threads: each product wakes them and waits for them. ``split`` runs such loops
# in parts on this pool instead, each part's products on one BLAS thread (docs/benchmarks.md,
# "Session 2026-12-06 (c)"). Only where ember can set every loaded OpenBLAS's count
# quickly (its exported setters); elsewhere (another BLAS) the loops run whole, as before.
_blas_fns: list[tuple[Any, Any]] | None = None
_split_lock = threading.Lock()


def _blas_fns_cached() -> list[tuple[Any, Any]]:
    global _blas_fns
    if _blas_fns is None:
        _blas_fns = [(setter, getter) for _, setter, getter in openblas_libraries()]
    return _blas_fns


def split_parts(n: int) -> list[tuple[int, int]] | None:
    """[(start, stop), ...]: ``range(n)`` in contiguous parts, one per thread, where ``split``
    applies (two or more threads, ``n`` >= 2, an OpenBLAS whose count ember sets); else None."""
    t = min(get_num_threads(), n)
    if t < 2 or not _blas_fns_cached():
        return None
    return [(n * i // t, n * (i + 1) // t) for i in range(t)]


def split(f: Any, parts: list[tuple[int, int]]) -> bool:
    """``f(start, stop)`` for each part, the first on this thread and the others on the pool, with
    every OpenBLAS at one thread meanwhile (its count restored after); False (nothing run) where
    another thread of the process is inside a split already."""
    if not _split_lock.acquire(blocking=False):
        return False
    fns = _blas_fns_cached()
    before = [getter() for _, getter in fns]
    try:
        for setter, _ in fns:
            setter(1)
        _parallel(lambda a, b, out: f(a, b), [((a, b), None) for a, b in parts])
    finally:
        for (setter, _), n in zip(fns, before):
            setter(n)
        _split_lock.release()
    return True


MATMUL_SPLIT_MACS = 1 << 22  # a stacked product's multiply-adds from which it splits (~80 us)


def matmul(a: Any, b: Any) -> Any:
    """``np.matmul(a, b)`` for stacked host float arrays with its products split over the threads
    (``split``: along the first batch axis of the result with two or more entries, each part's
    products on one BLAS thread), or None where that does not apply (one thread, under
    ``MATMUL_SPLIT_MACS`` multiply-adds, no batch axis to split, other types). Attention's
    per-head products are small: OpenBLAS runs each on one thread, so NumPy's loop over them
    used one core whatever the setting. Each product is the same BLAS call as in one
    ``np.matmul`` at one thread, so the values are one thread's."""
    if (type(a) is not np.ndarray or type(b) is not np.ndarray or a.ndim < 2 or b.ndim < 2
            or (a.ndim < 3 and b.ndim < 3) or a.dtype != b.dtype or a.dtype.kind != "f"):
        return None
    n, k, m = a.shape[-2], a.shape[-1], b.shape[-1]
    if b.shape[-2] != k:
        return None
    try:
        batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    except ValueError:
        return None
    size = 1
    for d in batch:
        size *= d
    if size * n * k * m < MATMUL_SPLIT_MACS:
        return None
    axis = next((i for i, d in enumerate(batch) if d >= 2), None)
    if axis is None or (parts := split_parts(batch[axis])) is None:
        return None
    out = np.empty(batch + (n, m), a.dtype)
    nd = len(batch)

    def cut(x: Any, i: int, j: int) -> Any:  # x's entries [i, j) along the batch axis
        ax = axis - (nd - (x.ndim - 2))  # x's own axis (its batch dims align on the right)
        if ax < 0 or x.shape[ax] == 1:
            return x  # (broadcast along it)
        return x[(slice(None),) * ax + (slice(i, j),)]

    def part(i: int, j: int) -> None:
        np.matmul(cut(a, i, j), cut(b, i, j), out=out[(slice(None),) * axis + (slice(i, j),)])

    return out if split(part, parts) else None


# -- the pool ---------------------------------------------------------------------------------
_tasks: Any = None  # queue.SimpleQueue of (context, function, args, done) once a worker runs
_workers = 0
_lock = threading.Lock()


def _work(tasks: Any) -> None:
    while True:
        ctx, f, args, kwargs, done = tasks.get()
        try:
            ctx.run(f, *args, **kwargs)
        except BaseException as e:  # handed to the caller, which raises it
            error: BaseException | None = e
        else:
            error = None
        # drop the views before reporting: an idle worker must not keep the caller's arrays
        # (or its context) alive until its next task
        del ctx, f, args, kwargs
        done.put(error)
        del done, error


def _ensure(workers: int) -> Any:
    global _tasks, _workers
    with _lock:
        if _tasks is None:
            _tasks = queue.SimpleQueue()
        while _workers < workers:
            threading.Thread(target=_work, args=(_tasks,), name=f"ember-worker-{_workers}",
                             daemon=True).start()
            _workers += 1
        return _tasks


def _after_fork() -> None:
    global _tasks, _workers, _lock, _split_lock
    _tasks, _workers, _lock, _split_lock = None, 0, threading.Lock(), threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork)


def _parallel(f: Any, parts: list[tuple[tuple[Any, ...], Any]]) -> None:
    """``f(*args, out=out)`` for each (args, out) part: the first on this thread, the others on
    the workers, each under a copy of this thread's context (NumPy's errstate)."""
    tasks = _ensure(len(parts) - 1)
    done: Any = queue.SimpleQueue()
    for args, out in parts[1:]:
        tasks.put((contextvars.copy_context(), f, args, {"out": out}, done))
    error: BaseException | None = None
    try:
        args, out = parts[0]
        f(*args, out=out)
    except BaseException as e:
        error = e
    for _ in parts[1:]:
        e = done.get()
        if e is not None and error is None:
            error = e
    if error is not None:
        raise error


def run(f: Any, *operands: Any) -> Any:
    """``f(*operands)`` (a NumPy ufunc with one output) split over the threads, or None where
    it does not apply: fewer than ``cut`` elements in the result, an operand that is not a
    host array of the result's floating dtype or a Python int/float, a result that NumPy would
    not lay out in C order. A broadcast operand (missing or size-1 leading dimension) is passed
    whole to every part."""
    dtype = None
    for x in operands:
        if type(x) is np.ndarray:
            if dtype is None:
                dtype = x.dtype
            elif x.dtype != dtype:
                return None
        elif type(x) is not float and type(x) is not int:
            return None
    if dtype is None or dtype.kind != "f":
        return None
    return _split(f, operands, dtype)


def call(f: Any, alt: Any, *operands: Any) -> Any:
    """``run(f, *operands)``, or ``alt(*operands)`` where the split does not apply."""
    out = run(f, *operands)
    return alt(*operands) if out is None else out


def where(cond: Any, a: Any, b: Any) -> Any:
    """``np.where(cond, a, b)`` split over the threads (each part's result copied into its part
    of the output), or None where it does not apply (as ``run``; ``cond`` a bool array, a and b
    arrays of one floating dtype or Python numbers). NumPy's where branches per element, so on
    an irregular mask it is compute-bound and gains from threads."""
    if type(cond) is not np.ndarray or cond.dtype != np.bool_:
        return None
    arrays = [x for x in (a, b) if type(x) is np.ndarray]
    if (not arrays or arrays[0].dtype.kind != "f" or any(x.dtype != arrays[0].dtype
                                                          for x in arrays)
            or any(type(x) is not np.ndarray and type(x) is not float and type(x) is not int
                   for x in (a, b))):
        return None
    return _split(_where_into, (cond, a, b), arrays[0].dtype)


def select(cond: Any, a: Any, b: Any) -> Any:
    """``np.where(cond, a, b)``: split where ``where`` applies, else one call."""
    out = where(cond, a, b)
    return np.where(cond, a, b) if out is None else out


def copy(a: Any) -> Any:
    """A C-ordered copy of the host array ``a`` (any strides: a broadcast view too) in parts of
    its leading dimension over the threads, or None where that does not apply (one thread,
    fewer than ``cut_cheap`` elements, a leading dimension under 2)."""
    n = get_num_threads()
    if n < 2 or type(a) is not np.ndarray or a.size < cut_cheap or a.ndim == 0:
        return None
    rows = a.shape[0]
    if rows < 2:
        return None
    out = np.empty(a.shape, a.dtype)
    step = -(-rows // min(n, rows))
    _parallel(_copy_into, [((a[i:i + step],), out[i:i + step]) for i in range(0, rows, step)])
    return out


def _copy_into(a: Any, out: Any) -> None:
    np.copyto(out, a)


def _where_into(cond: Any, a: Any, b: Any, out: Any) -> None:
    """out = np.where(cond, a, b) in blocks of about 64K elements along the leading dimension,
    so the temporaries stay small (not a second full-size result)."""
    rows = out.shape[0]
    per = max(1, BLOCK // max(1, out.size // rows))
    nd = out.ndim
    ops = (cond, a, b)
    for i in range(0, rows, per):
        c, x, y = (v[i:i + per] if type(v) is np.ndarray and v.ndim == nd and v.shape[0] == rows
                   else v for v in ops)
        out[i:i + per] = np.where(c, x, y)


def _split(f: Any, operands: tuple[Any, ...], dtype: Any) -> Any:
    n = get_num_threads()
    if n < 2:
        return None
    arrays = [x for x in operands if type(x) is np.ndarray]
    try:
        shape = np.broadcast_shapes(*(a.shape for a in arrays))
    except ValueError:
        return None
    size = 1
    for d in shape:
        size *= d
    if size < cut or size < 2 * ALIGN:
        return None
    full = [a for a in arrays if a.shape == shape]
    if not full or not all(a.flags.c_contiguous for a in full):
        return None  # (NumPy would choose the layout of a strided operand)
    out = np.empty(shape, dtype)
    if len(full) == len(arrays):  # same shape, all C-contiguous: flat parts
        step = -(-size // n)
        step = -(-step // ALIGN) * ALIGN
        flat = [x.reshape(-1) if type(x) is np.ndarray else x for x in operands]
        o = out.reshape(-1)
        parts = [(tuple(x[i:i + step] if type(x) is np.ndarray else x for x in flat),
                  o[i:i + step]) for i in range(0, size, step)]
    else:  # broadcasting: parts of the leading dimension
        rows = shape[0]
        if rows < 2:
            return None
        step = -(-rows // min(n, rows))
        nd = len(shape)
        parts = [(tuple(x[i:i + step] if type(x) is np.ndarray and x.ndim == nd and
                        x.shape[0] == rows else x for x in operands), out[i:i + step])
                 for i in range(0, rows, step)]
    _parallel(f, parts)
    return out


_set_cut(get_num_threads())
