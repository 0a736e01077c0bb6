"""Threads (ember._threads): one setting for the kernels' pool, NumPy's BLAS and the pool that
splits large elementwise NumPy calls; split results equal one call's bit for bit at every thread
count; set_num_threads/get_num_threads as PyTorch's."""

from __future__ import annotations

import os
import subprocess
import sys
import threading

import numpy as np
import pytest

import ember
from ember import _kernels_loader as L
from ember import _threads
from helpers import HAVE_TORCH, peak_bytes, rerun_on_pure_python

F32, F64 = np.float32, np.float64


@pytest.fixture
def threads():
    """Restore the thread count (and ``cut``) after the test."""
    saved = ember.get_num_threads()
    saved_cut = _threads.cut, _threads.cut_cheap, _threads.cut_arith
    yield
    ember.set_num_threads(saved)
    _threads.cut, _threads.cut_cheap, _threads.cut_arith = saved_cut


@pytest.fixture
def low_cut(threads, monkeypatch):
    """Split from 4K elements (small, fast arrays); count the parallel calls (on the Python
    pool: its part count; arithmetic on the kernels' pool: "kernels")."""
    calls = []
    real = _threads._parallel
    arith = L.arith

    def counting(f, parts):
        calls.append(len(parts))
        return real(f, parts)

    def counting_arith(*args):
        done = arith(*args)
        if done:
            calls.append("kernels")
        return done

    monkeypatch.setattr(_threads, "_parallel", counting)
    monkeypatch.setattr(L, "arith", counting_arith)
    for name in ("THRESHOLD", "THRESHOLD_CHEAP", "THRESHOLD_ARITH"):
        monkeypatch.setattr(_threads, name, 4096)
    return calls


def _set(n: int) -> None:
    ember.set_num_threads(n)


def _arr(shape, dtype=F32, seed=0, lo=-3.0, hi=3.0):
    return np.random.default_rng(seed).uniform(lo, hi, shape).astype(dtype)


CASES = [
    (np.add, lambda d: (_arr(10_001, d), _arr(10_001, d, 1))),
    (np.subtract, lambda d: (_arr((37, 301), d), _arr((37, 301), d, 1))),
    (np.multiply, lambda d: (_arr(50_000, d), 0.37)),
    (np.divide, lambda d: (_arr((64, 200), d), _arr(200, d, 1))),  # broadcast: row parts
    (np.add, lambda d: (_arr((300, 40), d), _arr((300, 1), d, 1))),
    (np.multiply, lambda d: (_arr((2, 3, 2000), d), np.asarray(1.5, d))),
    (np.exp, lambda d: (_arr(70_003, d),)),
    (np.tanh, lambda d: (_arr((129, 257), d),)),
]


@pytest.mark.parametrize("n", [2, 3, 7])
@pytest.mark.parametrize("dtype", [F32, F64])
@pytest.mark.parametrize("case", range(len(CASES)))
def test_split_ufunc_equals_one_call_bit_for_bit(low_cut, n, dtype, case):
    _set(n)
    f, make = CASES[case]
    ops = make(dtype)
    got = _threads.run(f, *ops)
    want = f(*ops)
    assert got is not None and low_cut, "the call did not split"
    assert got.dtype == want.dtype == dtype
    assert got.shape == want.shape and got.strides == want.strides
    assert np.array_equal(got.view(np.uint8), want.view(np.uint8))


@pytest.mark.parametrize("n", [2, 3])
@pytest.mark.parametrize("shapes", [((20_000,), (20_000,), ()), ((40, 300), (300,), (40, 300)),
                                    ((300,), (40, 300), (40, 1))])
def test_split_where_equals_one_call(low_cut, monkeypatch, n, shapes):
    monkeypatch.setattr(_threads, "BLOCK", 1000)  # several blocks per part
    _set(n)
    c = _arr(shapes[0], seed=3) > 0
    a, b = _arr(shapes[1], seed=4), _arr(shapes[2], seed=5)
    for args in ((c, a, b), (c, 0, a), (c, a, 2.5)):
        got, want = _threads.where(*args), np.where(*args)
        assert got.dtype == want.dtype and got.strides == want.strides
        assert np.array_equal(got.view(np.uint8), want.view(np.uint8))
    assert len(low_cut) == 3
    assert _threads.where(c.astype(F32), a, b) is None  # not a bool condition
    assert _threads.where(c, a, b.astype(F64)) is None


def test_split_where_builds_one_full_size_array(low_cut):
    """Each part runs np.where in 64K blocks: the peak is the result, not result + temporaries."""
    _set(2)
    c, a = _arr(1 << 20) > 0, _arr(1 << 20, seed=1)
    assert peak_bytes(lambda: _threads.where(c, a, 0.0)) < 1.25 * a.nbytes
    assert low_cut == [2]


def test_run_declines_what_it_cannot_split_as_numpy_would(low_cut):
    _set(2)
    a = _arr(20_000)
    assert _threads.run(np.add, a, a.astype(F64)) is None  # mixed dtypes: NumPy promotes
    assert _threads.run(np.add, a, np.float64(2.0)) is None  # a NumPy scalar is strong (NEP 50)
    assert _threads.run(np.add, a.reshape(100, 200).T, 1.0) is None  # strided: NumPy's layout
    assert _threads.run(np.add, a.astype(np.int32), 1) is None  # integers
    assert _threads.run(np.add, a, 1j) is None
    assert _threads.run(np.add, a[:1000], 1.0) is None  # below the cut
    assert not low_cut
    _set(1)
    assert _threads.cut == sys.maxsize and _threads.run(np.add, a, 1.0) is None


def test_workers_raise_in_the_caller_with_its_errstate(low_cut):
    """A worker runs in a copy of the caller's context: NumPy's errstate reaches it, and what it
    raises comes back to the caller."""
    _set(2)
    x = np.zeros(40_000, F32)
    x[-1] = 1000.0  # overflows exp, in the last part: a worker's
    with np.errstate(over="raise"), pytest.raises(FloatingPointError):
        _threads.run(np.exp, x)
    with np.errstate(over="ignore"):
        assert np.isinf(_threads.run(np.exp, x)[-1])
    assert low_cut == [2, 2]


def test_idle_workers_keep_no_arrays_alive(low_cut):
    """A worker drops its part's views when done (it kept the operand and the result alive until
    its next task: one full-size array too many in tests/test_memory_chains.py)."""
    import gc
    import weakref

    _set(3)
    a = _arr(50_000)
    out = _threads.run(np.exp, a)
    refs = [weakref.ref(a), weakref.ref(out)]
    del a, out
    gc.collect()
    assert [r() for r in refs] == [None, None]
    assert low_cut == [3]


def test_concurrent_callers_get_their_own_results(low_cut):
    _set(3)
    arrays = [_arr(30_000, seed=s) for s in range(6)]
    got: dict[int, np.ndarray] = {}

    def work(i):
        for _ in range(20):
            got[i] = _threads.run(np.exp, arrays[i])

    ts = [threading.Thread(target=work, args=(i,)) for i in range(6)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    for i, a in enumerate(arrays):
        assert np.array_equal(got[i], np.exp(a))


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork")
def test_a_forked_child_starts_its_own_workers(low_cut):
    _set(2)
    a = _arr(50_000)
    _threads.run(np.exp, a)  # workers running in the parent
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        ok = np.array_equal(_threads.run(np.exp, a), np.exp(a))
        os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    assert os.WEXITSTATUS(status) == 0


# -- the ops -------------------------------------------------------------------------------------

def _ops_results(n: int):
    """Forward and gradients of add/sub/mul/div/exp/tanh at n threads."""
    _set(n)
    x = ember.tensor(_arr((64, 300)), requires_grad=True)
    y = ember.tensor(_arr((64, 300), seed=1, lo=0.5, hi=2.0), requires_grad=True)
    b = ember.tensor(_arr(300, seed=2), requires_grad=True)
    v = ember.tensor(0.25, requires_grad=True)
    m = ember.tensor(_arr((64, 300), seed=3) > 0)
    outs = [x + y, x - y, x * y, x / y, x.exp(), x.tanh(), x * b, x + b,
            ember.where(m, x, y), x.masked_fill(m, v), x.masked_fill(m[0], 2.0), x.relu(),
            x / 0.0]
    g = ember.tensor(_arr((64, 300), seed=4))  # (contiguous, as most upstream gradients)
    ember.autograd.backward(outs[:-1], [g] * (len(outs) - 1))
    return [o.detach().numpy() for o in outs] + [t.grad.numpy() for t in (x, y, b, v)]


def test_ops_split_and_equal_one_thread_bit_for_bit(low_cut):
    one = _ops_results(1)
    assert not low_cut
    two = _ops_results(2)
    # each forward and the large backward products split (where built, the forwards of exp,
    # tanh and relu and where's and masked_fill's forward and gradients, 10 calls, run the eager
    # kernels on their own pool instead of this one)
    assert len(low_cut) >= (12 if L.active is not None else 23), low_cut
    three = _ops_results(3)
    for a, b, c in zip(one, two, three):
        assert a.dtype == b.dtype == c.dtype == F32
        assert np.array_equal(a.view(np.uint32), b.view(np.uint32))
        assert np.array_equal(a.view(np.uint32), c.view(np.uint32))


def test_reductions_do_not_change_with_the_thread_count(threads):
    """ember's sums are the same number at any setting (PyTorch's can differ: docs/running.md)."""
    x = ember.tensor(np.random.default_rng(0).random(1 << 20, dtype=F32) * 1000)
    r = ember.tensor(np.random.default_rng(1).random((256, 4096), dtype=F32))
    seen = set()
    for n in (1, 2, 3):
        ember.set_num_threads(n)
        seen.add((x.sum().item(), x.mean().item(), r.sum(0).numpy().tobytes(),
                  r.var(-1).numpy().tobytes(), r.softmax(-1).sum().item()))
    assert len(seen) == 1


@pytest.mark.skipif(not HAVE_TORCH, reason="needs torch")
def test_split_ops_match_torch(low_cut):
    import torch

    _set(2)
    a, b = _arr((100, 400)), _arr((100, 400), seed=1, lo=0.5, hi=2.0)
    for fn in (lambda x, y: x + y, lambda x, y: x * y - y, lambda x, y: x / y,
               lambda x, y: x.exp() * y, lambda x, y: x.tanh() + y / 0.0,
               lambda x, y: x.masked_fill(y > 1, -1.0), lambda x, y: x.where(y > 1, y)):
        with np.errstate(all="raise"):  # no warning from a worker, as none from PyTorch
            ours = fn(ember.tensor(a), ember.tensor(b))
        theirs = fn(torch.tensor(a), torch.tensor(b))
        assert ours.dtype == ember.float32 and ours.stride() == theirs.stride()
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=2e-6, atol=1e-6)
    assert low_cut


# -- the setting ---------------------------------------------------------------------------------

def test_set_num_threads_reaches_blas_and_restores(threads):
    before = ember.get_num_threads()
    ember.set_num_threads(1)
    assert ember.get_num_threads() == 1 and _threads.cut == sys.maxsize
    counts = _threads.blas_threads()
    if counts:  # (a BLAS that cannot be queried reports nothing)
        assert set(counts) == {1}
    ember.set_num_threads(2)
    assert _threads.cut == _threads.THRESHOLD and _threads.cut_cheap == _threads.THRESHOLD_CHEAP
    if counts:
        assert set(_threads.blas_threads()) == {2}
    ember.set_num_threads(1)
    info = ember.__config__.parallel_info()
    assert "get_num_threads() : 1" in info
    assert "BLAS threads : " + ("1" if counts else "unknown") in info
    ember.set_num_threads(before)
    assert ember.get_num_threads() == before


def test_the_openblas_lookup_without_threadpoolctl(threads):
    """The ctypes path (no threadpoolctl): NumPy's bundled OpenBLAS found by its exported names."""
    libs = _threads.openblas_libraries()
    if not libs:
        pytest.skip("no OpenBLAS loaded (NumPy built against another BLAS)")
    for n in (1, 3, 1):
        _threads.set_blas_threads(n, use_threadpoolctl=False)
        assert set(_threads.blas_threads(use_threadpoolctl=False)) == {n}
        if _threads._threadpoolctl() is not None:
            assert set(_threads.blas_threads()) == {n}  # threadpoolctl reads the same


def test_set_num_threads_refuses_as_pytorch(threads):
    for bad in (2.0, True, "2"):
        with pytest.raises(RuntimeError, match="expects an int"):
            ember.set_num_threads(bad)
    with pytest.raises(RuntimeError, match="positive"):
        ember.set_num_threads(0)
    ember.set_num_threads(np.int64(1))
    assert ember.get_num_threads() == 1
    if HAVE_TORCH:
        import torch

        for bad in (2.0, True):
            with pytest.raises(RuntimeError, match="expects an int"):
                torch.set_num_threads(bad)


def test_a_fresh_process_follows_omp_num_threads():
    """OMP_NUM_THREADS=1: nothing splits and BLAS reports one thread (the default otherwise is
    the usable CPUs, as PyTorch's: tests/test_tensor.py compares with it)."""
    code = ("import ember, sys; from ember import _threads as t; "
            "print(ember.get_num_threads(), t.cut == sys.maxsize, t.blas_threads())")
    env = dict(os.environ, OMP_NUM_THREADS="1")
    env.pop("OPENBLAS_NUM_THREADS", None)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    n, never, blas = out.stdout.split(maxsplit=2)
    assert n == "1" and never == "True" and set(eval(blas)) <= {1}


class _Threads:
    """A dataset whose items are the worker's thread count and BLAS threads (picklable)."""

    def __init__(self, m):
        self.m = m

    def __len__(self):
        return 2

    def __getitem__(self, i):
        counts = _threads.blas_threads() if self.m is ember else []
        return [self.m.get_num_threads(), *counts]


def test_dataloader_workers_run_on_one_thread_as_pytorch(threads):
    """PyTorch's workers call set_num_threads(1): N workers must not each take every core."""
    ember.set_num_threads(2)
    mods = [ember] + ([__import__("torch")] if HAVE_TORCH else [])
    for m in mods:
        loader = m.utils.data.DataLoader(_Threads(m), batch_size=None, num_workers=2)
        got = [[int(v) for v in item] for item in loader]
        assert all(set(item) == {1} for item in got), (m.__name__, got)
    assert ember.get_num_threads() == 2  # the main process keeps its setting


@pytest.mark.skipif(os.environ.get("EMBER_PURE_PYTHON") == "1", reason="already the Python core")
def test_this_file_passes_on_the_pure_python_core():
    rerun_on_pure_python(__file__)


# -- OpenBLAS's idle spin (_blas_spin) -------------------------------------------------------------

def _spin_state(code: str, **env: str) -> list[str]:
    """Run ``code`` then print what _blas_spin chose and the variable's value in a fresh process."""
    full = {k: v for k, v in os.environ.items()
            if k not in ("OPENBLAS_THREAD_TIMEOUT", "EMBER_BLAS_SPIN")}
    full.update(env)
    out = subprocess.run(
        [sys.executable, "-c", code + "\nimport os, ember\nprint(ember._blas_spin.chosen, "
         "os.environ.get('OPENBLAS_THREAD_TIMEOUT'))"],
        capture_output=True, text=True, env=full, check=True)
    return out.stdout.split()


def test_import_ember_first_loads_openblas_with_sleeping_idle_threads():
    # set for NumPy's load of OpenBLAS (which reads it then), and gone from the environment after
    assert _spin_state("") == [str(ember._blas_spin.SPIN_EXPONENT), "None"]


@pytest.mark.parametrize("code,env,want", [
    ("import numpy", {}, ["None", "None"]),  # NumPy first: OpenBLAS already loaded, not touched
    ("", {"OPENBLAS_THREAD_TIMEOUT": "12"}, ["None", "12"]),  # the user's own value
    ("", {"EMBER_BLAS_SPIN": "default"}, ["None", "None"]),  # OpenBLAS's default kept
])
def test_blas_spin_leaves_other_choices_alone(code, env, want):
    assert _spin_state(code, **env) == want
