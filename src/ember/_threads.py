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
for memory-bound arithmetic, ``cut_arith`` for add, subtract, multiply and divide, which run on
the kernels' pool where it is built; all are ``sys.maxsize`` at one thread, so a caller's test
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
# arithmetic on the kernels' pool (_kernels_loader.arith): its hand-off costs a few
# microseconds, so an add of 128K float32 already gains (17 -> 10 us at 2 threads)
THRESHOLD_ARITH = 1 << 17
ALIGN = 1024  # a flat part starts at a multiple of this many elements
BLOCK = 1 << 16  # elements per block where a part is computed in blocks (where)

_count: int | None = None  # set_num_threads's value; None: the default
cut = sys.maxsize  # the smallest result that splits (sys.maxsize: never)
cut_cheap = sys.maxsize  # the same for memory-bound arithmetic
cut_arith = sys.maxsize  # the same for arithmetic that the kernels' pool can take (run, run_into)


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
    global cut, cut_cheap, cut_arith
    cut = THRESHOLD if n > 1 else sys.maxsize
    cut_cheap = THRESHOLD_CHEAP if n > 1 else sys.maxsize
    cut_arith = THRESHOLD_ARITH if n > 1 and _kernels_loader.active is not None else cut_cheap


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
    token = _in_split.set(True)  # (the parts run in copies of this context)
    _one_enter()
    try:
        _parallel(lambda a, b, out: f(a, b), [((a, b), None) for a, b in parts])
    finally:
        _one_leave()
        _in_split.reset(token)
        _split_lock.release()
    return True


_in_split: contextvars.ContextVar[bool] = contextvars.ContextVar("ember_in_split", default=False)
_one_lock = threading.Lock()
_one_users = 0  # splits and products in flight that need OpenBLAS at one thread
_one_saved: list[int] = []


def _one_enter() -> None:
    """OpenBLAS at one thread until the matching ``_one_leave``. Splits and products in flight
    on several Python threads share it: the first in saves every OpenBLAS's count and sets 1, the
    last out restores them, so none meets a count restored under it."""
    global _one_users, _one_saved
    with _one_lock:
        if _one_users == 0:
            fns = _blas_fns_cached()
            _one_saved = [getter() for _, getter in fns]
            for setter, _ in fns:
                setter(1)
        _one_users += 1


def _one_leave() -> None:
    global _one_users
    with _one_lock:
        _one_users -= 1
        if _one_users == 0:
            for (setter, _), n in zip(_blas_fns_cached(), _one_saved):
                setter(n)


# -- matrix products, split by ember -----------------------------------------------------------
# A float32 product of two matrices with rows for two parts (256) is cut by ember into one part
# of the result's rows per thread, each part a one-thread call of the BLAS function NumPy's
# ``dot`` calls (cblas_sgemm of the OpenBLAS NumPy loaded), with OpenBLAS's own count at 1
# meanwhile. With the kernels built the parts run on the kernels' pool (_kernels_blas.c), so a
# step's kernels find that pool's worker awake after each product and the two pools no longer
# take turns with the cores; without them (the reference, the same parts) on this module's pool
# through ctypes (docs/benchmarks.md, "Session 2026-12-07"). Each element is computed as in the
# whole product at one thread, so the values are one thread's at every thread count, in both
# paths (at one thread too the product takes this way, as one part).
GEMM_SPLIT_MACS = 1 << 18  # multiply-adds from which a product goes this way (OpenBLAS's own cut)
GEMM_PART_MACS = 1 << 20  # the least a part has
GEMM_PART_ROWS = 128  # the fewest rows a part has (each packs all of b: _kernels_blas.c)
GEMM_MIN_ROWS = 2 * GEMM_PART_ROWS  # the fewest rows a product that splits by rows has
GEMM_ALIGN = 64  # a part's first row is a multiple of this
# Fewer rows than that (a weight gradient's O rows, an MLP's batch of 128): at two threads or
# more the result's columns are split instead, each part all of a times a block of b's columns.
# OpenBLAS's own threads ran these, and their spinning handshake fought the kernels' pool for
# the cores (the CNN's conv2 forward and backward ran slower at two threads than at one). A
# column part's values are not the whole product's bit for bit (OpenBLAS blocks a row-major
# result's columns), so these, like OpenBLAS's threaded products before, differ from one
# thread's within rounding (docs/running.md).
GEMM_PART_COLS = 64  # the fewest columns a column part has
# the fewest multiply-adds a column split takes: ResNet-18's 32 x 256 x 512 products (4M) ran
# 10-14% slower cut by columns than on OpenBLAS's threads; an MLP's 128 x 784 x 512 (51M) and a
# CNN's 32 x 1408 x 400 weight gradient (18M) gain
GEMM_COL_MACS = 1 << 23
GEMM_COL_ALIGN = 16  # a column part's first column is a multiple of this
GEMM_MIN_SIDE = 16  # the least k and n
# k or n under this: split at two threads or more only. A CNN's thin products (n = 32 output
# channels) on OpenBLAS's threads wait for its sleeping worker after each of ember's kernels:
# split by ember, the benchmark's CNN step ran 1.3-2.8% faster at 2 threads (five in-process
# A/B runs); at one thread the path (one part) read 0.5% slower than NumPy's ``dot``
GEMM_THIN_SIDE = 64
_CBLAS = {"row": 101, "n": 111, "t": 112}  # CBLAS's enum values: row-major, no-trans, trans
_GEMM_NAMES = (("scipy_", "64_"), ("", "64_"), ("", ""))  # (prefix, suffix); "64_": 64-bit ints
_gemm_blas: Any = None  # (ctypes sgemm, 64-bit ints, its address); False: none found
_gemm_handed: set = set()  # id of each kernels module that has the addresses


def _find_gemm_blas() -> Any:
    """The OpenBLAS NumPy loaded, as (its ctypes cblas_sgemm, whether its integers are 64-bit,
    that function's address), or False where none exports every function needed (sgemm, and
    the thread count's setter and getter)."""
    global _gemm_blas
    if _gemm_blas is not None:
        return _gemm_blas
    _gemm_blas = False
    for path in sorted(_loaded_paths(), key=lambda p: "numpy" not in p):  # NumPy's own first
        base = os.path.basename(path).lower()
        if "openblas" not in base:
            continue
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for prefix, suffix in _GEMM_NAMES:
            if not suffix and "64" in base:
                continue  # (a 64-bit-integer build without suffixed names: its ints are unknown)
            names = [f"{prefix}cblas_sgemm{suffix}", f"{prefix}openblas_set_num_threads{suffix}",
                     f"{prefix}openblas_get_num_threads{suffix}"]
            if not all(hasattr(lib, n) for n in names):
                continue
            fn = getattr(lib, names[0])
            i, f = (ctypes.c_int64 if suffix else ctypes.c_int), ctypes.c_float
            fn.restype = None
            fn.argtypes = [ctypes.c_int] * 3 + [i] * 3 + [f, ctypes.c_void_p, i, ctypes.c_void_p,
                                                            i, f, ctypes.c_void_p, i]
            _gemm_blas = (fn, bool(suffix), ctypes.cast(fn, ctypes.c_void_p).value)
            return _gemm_blas
    return _gemm_blas


def _hand_over(mod: Any, blas: tuple) -> None:
    """Give the kernels module the BLAS's sgemm (once per module: ``disabled()`` swaps it)."""
    if id(mod) not in _gemm_handed:
        mod.blas_use(blas[2], 1 if blas[1] else None)
        _gemm_handed.add(id(mod))


def _cblas_form(x: np.ndarray) -> tuple[int, int] | None:
    """(trans, leading dimension) of a 2-D array for CBLAS's row-major calls: unit stride along
    its columns (as it is) or its rows (its transpose as it is); None where neither (NumPy
    copies it first)."""
    e = x.itemsize
    s0, s1 = x.strides
    r, c = x.shape
    if s1 == e and s0 % e == 0 and s0 // e >= max(c, 1):
        return _CBLAS["n"], s0 // e
    if s0 == e and s1 % e == 0 and s1 // e >= max(r, 1):
        return _CBLAS["t"], s1 // e
    return None


def gemm_parts(rows: int, row_macs: int, threads: int, fewest: int = GEMM_PART_ROWS,
               align: int = GEMM_ALIGN) -> list[tuple[int, int]]:
    """The parts [i0, i1) of a product's ``rows`` (``row_macs`` multiply-adds each; or its
    columns, with ``fewest`` GEMM_PART_COLS and ``align`` GEMM_COL_ALIGN) over ``threads``: as
    many as threads, but each of ``fewest`` rows and ``GEMM_PART_MACS`` at least, boundaries on
    multiples of ``align`` (_kernels_blas.c cuts the same way)."""
    least = max(GEMM_PART_MACS // max(row_macs, 1), fewest)
    parts = max(1, min(threads, rows // least))
    blocks = -(-rows // align)
    return [(min(blocks * p // parts * align, rows),
             min(blocks * (p + 1) // parts * align, rows)) for p in range(parts)]


def gemm_applies(m: int, n: int) -> bool:
    """Whether a product of ``m`` rows and ``n`` columns may take ``gemm`` (a cheap first test
    for its callers): rows for two row parts, or at two threads or more columns for two."""
    return m >= GEMM_MIN_ROWS or (n >= 2 * GEMM_PART_COLS and m >= GEMM_MIN_SIDE
                                  and get_num_threads() > 1)


def gemm(a: Any, b: Any, out: Any = None, bias: Any = None) -> Any:
    """``a @ b`` of 2-D host float32 matrices, split by ember (into ``out``, a C-contiguous float32
    array of the result's shape, where given), or None where that does not apply (then NumPy's
    ``dot`` with OpenBLAS's own threads): another dtype (OpenBLAS's dgemm computes its edge
    tiles differently in a part than in the whole product, so float64 would not keep one
    thread's values), under ``GEMM_SPLIT_MACS`` multiply-adds, fewer rows than two parts have
    (each part packs all of ``b``: OpenBLAS's own threads share that work) unless two threads
    or more can split its columns (``gemm_applies``; not one thread's bits), ``k`` or ``n`` under
    ``GEMM_MIN_SIDE`` (or ``GEMM_THIN_SIDE`` at one thread), no OpenBLAS found, an operand
    without unit stride along an axis, inside ``split``'s parts (each of those runs its products
    on one thread). ``bias``: a C-contiguous float32 vector of the result's width that each part
    adds to its rows after its product (the bits of ``out += bias``, on rows still in that
    thread's cache), or None."""
    m, k = a.shape
    kb, n = b.shape
    dt = a.dtype
    if m * k * n < GEMM_SPLIT_MACS or not gemm_applies(m, n) or min(k, n) < GEMM_MIN_SIDE \
            or (m < GEMM_MIN_ROWS and m * k * n < GEMM_COL_MACS) \
            or kb != k or b.dtype != dt or dt != np.float32 or _in_split.get() \
            or (min(k, n) < GEMM_THIN_SIDE and get_num_threads() == 1):
        return None
    if bias is not None and (type(bias) is not np.ndarray or bias.dtype != dt
                             or bias.shape != (n,) or not bias.flags.c_contiguous):
        return None
    blas = _find_gemm_blas()
    fa, fb = _cblas_form(a), _cblas_form(b)
    if not blas or fa is None or fb is None:
        return None
    if out is None:
        out = np.empty((m, n), dt)
    elif (type(out) is not np.ndarray or out.dtype != dt or out.shape != (m, n)
            or not out.flags.c_contiguous or not out.flags.writeable
            or np.may_share_memory(out, a) or np.may_share_memory(out, b)
            or (bias is not None and np.may_share_memory(out, bias))):
        return None
    mod = _kernels_loader.active
    if mod is not None:
        _hand_over(mod, blas)
    one = get_num_threads() > 1  # (at one thread ember has set OpenBLAS's count to 1 already)
    if one:
        _one_enter()
    try:
        if mod is not None:
            mod.blas_gemm(a, b, out, bias)
        else:
            _gemm_python(blas[0], a, b, out, fa, fb, bias)
    finally:
        if one:
            _one_leave()
    return out


def _gemm_python(fn: Any, a: Any, b: Any, out: Any, fa: tuple, fb: tuple,
                 bias: Any = None) -> None:
    """_kernels_blas.c's product in Python: the same parts (rows, or columns where the rows are
    too few), each a ctypes call of the BLAS function (which releases the GIL) on this module's
    pool, then the bias added to its rows (columns)."""
    (m, k), n, e = a.shape, b.shape[1], a.itemsize
    (ta, lda), (tb, ldb) = fa, fb
    pa, pb, pc = a.ctypes.data, b.ctypes.data, out.ctypes.data
    row, no = _CBLAS["row"], _CBLAS["n"]

    def part(i0: int, i1: int) -> None:  # rows i0..i1: a's rows (its columns, stored transposed)
        fn(row, ta, tb, i1 - i0, n, k, 1.0, pa + (i0 * lda if ta == no else i0) * e, lda,
           pb, ldb, 0.0, pc + i0 * n * e, n)
        if bias is not None:
            out[i0:i1] += bias

    def part_cols(j0: int, j1: int) -> None:  # columns j0..j1: b's columns (rows, transposed)
        fn(row, ta, tb, m, j1 - j0, k, 1.0, pa, lda, pb + (j0 if tb == no else j0 * ldb) * e,
           ldb, 0.0, pc + j0 * e, n)
        if bias is not None:
            out[:, j0:j1] += bias[j0:j1]

    if m < GEMM_MIN_ROWS:
        parts = gemm_parts(n, m * k, get_num_threads(), GEMM_PART_COLS, GEMM_COL_ALIGN)
        if len(parts) < 2 or not split(part_cols, parts):
            part_cols(0, n)
        return
    parts = gemm_parts(m, k * n, get_num_threads())
    if len(parts) < 2 or not split(part, parts):  # (or another thread is in a split: all here)
        part(0, m)


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
    if get_num_threads() > 1 and size > 1 and (out := _stack_on_pool(a, b, batch)) is not None:
        return out
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


def _stack_on_pool(a: Any, b: Any, batch: tuple) -> Any:
    """A stacked float32 product on the kernels' pool (_kernels_blas.c: its products, each whole
    and one BLAS call as NumPy's matmul makes it, spread over the threads without the Python
    pool's hand-offs), or None where that does not apply (the kernels off, another dtype, a
    matrix side of one, no OpenBLAS found, a matrix without unit stride along an axis)."""
    mod = _kernels_loader.active
    n, m = a.shape[-2], b.shape[-1]
    if mod is None or a.dtype != np.float32 or n < 2 or m < 2 or not (blas := _find_gemm_blas()):
        return None
    _hand_over(mod, blas)
    a = np.broadcast_to(a, batch + a.shape[-2:])  # (stride 0 where broadcast: not copied)
    b = np.broadcast_to(b, batch + b.shape[-2:])
    if _cblas_form(a[(0,) * len(batch)]) is None or _cblas_form(b[(0,) * len(batch)]) is None:
        return None
    out = np.empty(batch + (n, m), np.float32)
    _one_enter()
    try:
        mod.blas_gemm(a, b, out)
    finally:
        _one_leave()
    return out


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
    global _tasks, _workers, _lock, _split_lock, _one_lock, _one_users
    _tasks, _workers, _lock, _split_lock = None, 0, threading.Lock(), threading.Lock()
    _one_lock, _one_users = threading.Lock(), 0  # (the parent's products are not the child's)


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
    if len(operands) == 2 and f in _kernels_loader._ARITH_OPS and get_num_threads() > 1:
        a = operands[0]
        b = operands[1]
        if type(a) is np.ndarray and a.size >= cut_arith and (
                type(b) is not np.ndarray or b.ndim <= a.ndim):
            out = np.empty(a.shape, dtype)
            if _kernels_loader.arith(f, a, b, out):  # (on the kernels' pool)
                return out
            if a.size < cut_cheap:  # (the caller went by cut_arith: too small for this pool)
                return None
    return _split(f, operands, dtype)


def run_into(f: Any, out: Any, *operands: Any) -> None:
    """``f(*operands, out=out)`` (a ufunc, or a function of that form), split over the threads
    as ``run`` splits where its rules apply and ``out``, a host array of the result's shape and
    the operands' dtype, is C-ordered; else one call. An operand may be ``out`` itself (an
    in-place op's ``x += y``): each part reads and writes its own elements."""
    if (out.size >= cut_arith and type(out) is np.ndarray and out.flags.c_contiguous
            and all(x.dtype == out.dtype if type(x) is np.ndarray
                    else type(x) is float or type(x) is int for x in operands)
            and (_arith_into(f, out, operands) or (
                out.size >= cut_cheap and _split(f, operands, out.dtype, out) is not None))):
        return
    f(*operands, out=out)


def _arith_into(f: Any, out: Any, operands: tuple) -> bool:
    """``run_into``'s arithmetic, copies and fills on the kernels' pool (``_kernels_loader.arith``:
    the same values), where it applies."""
    if f is copy_into or f is fill_into:
        return _kernels_loader.arith(None, None, operands[0], out)
    return (len(operands) == 2 and f in _kernels_loader._ARITH_OPS
            and _kernels_loader.arith(f, operands[0], operands[1], out))


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
    _parallel(copy_into, [((a[i:i + step],), out[i:i + step]) for i in range(0, rows, step)])
    return out


TAKE_ROWS_MIN_BYTES = 1 << 22  # a lookup's result from which its rows are gathered in parts


def take_rows(table: Any, idx: Any) -> Any:
    """``table[idx]`` of a 2-D host ``table`` and integer indices already checked to lie in
    ``[0, len(table))`` (an embedding's lookup): at two threads or more and from
    ``TAKE_ROWS_MIN_BYTES`` of result, the rows gathered in one part of the indices per thread
    (``np.take``, which releases the GIL; the fresh result's pages are first written in parallel
    too): the same values. A 16K-token lookup into a 10000 x 512 table: 7.8 -> 4.3 ms at 2."""
    n = get_num_threads()
    if (n < 2 or type(table) is not np.ndarray or type(idx) is not np.ndarray or table.ndim != 2
            or idx.dtype.kind not in "iu" or idx.size * table.shape[1] * table.itemsize
            < TAKE_ROWS_MIN_BYTES):
        return table[idx]
    flat = idx.reshape(-1)
    out = np.empty((flat.size, table.shape[1]), table.dtype)
    step = -(-flat.size // n)

    def part(i: int, out: Any = None) -> None:  # (clip: the indices are in range already)
        np.take(table, flat[i:i + step], axis=0, out=out, mode="clip")

    _parallel(part, [((i,), out[i:i + step]) for i in range(0, flat.size, step)])
    return out.reshape(idx.shape + (table.shape[1],))


def copy_into(a: Any, out: Any) -> None:
    """``out[...] = a`` as a function of ``run_into``'s form."""
    np.copyto(out, a)


def fill_into(value: Any, out: Any) -> None:
    """``out[...] = value`` (a number) as a function of ``run_into``'s form."""
    out.fill(value)


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


def _split(f: Any, operands: tuple[Any, ...], dtype: Any, out: Any = None) -> Any:
    """The split of ``run`` and ``run_into`` (``out``: given, C-ordered): the result, or None
    where it does not apply (nothing run)."""
    n = get_num_threads()
    if n < 2:
        return None
    arrays = [x for x in operands if type(x) is np.ndarray]
    try:
        shape = np.broadcast_shapes(*(a.shape for a in arrays),
                                    *(() if out is None else (out.shape,)))
    except ValueError:
        return None
    if out is not None and shape != out.shape:
        return None
    size = 1
    for d in shape:
        size *= d
    if size < cut or size < 2 * ALIGN:
        return None
    full = [a for a in arrays if a.shape == shape]
    if not all(a.flags.c_contiguous for a in full) or (out is None and not full):
        return None  # (NumPy would choose the layout of a strided operand)
    if out is None:
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
