"""``ember.multiprocessing``: re-exports, spawn/start_processes, and tensors in shared memory."""

from __future__ import annotations

import inspect
import multiprocessing
import os

import numpy as np
import pytest

import ember
import ember.multiprocessing as mp
from ember import nn

FORK = "fork" in multiprocessing.get_all_start_methods()
needs_fork = pytest.mark.skipif(not FORK, reason="needs the fork start method")


# -- children (module level: spawned children import them) --------------------------------
def _add_rank(rank, tensors):
    with ember.no_grad():
        for t in tensors:
            t.add_(rank + 1)


def _sgd_step(rank, model, x):
    opt = ember.optim.SGD(model.parameters(), lr=0.5)
    opt.zero_grad()
    model(x).sum().backward()
    opt.step()


def _check_param_and_add(rank, p):
    if not isinstance(p, nn.Parameter) or not p.requires_grad or not p.is_shared():
        raise TypeError(f"got {type(p).__name__}, requires_grad={p.requires_grad}")
    with ember.no_grad():
        p.add_(10 * (rank + 1))


def _fail_on_one(rank):
    if rank == 1:
        raise KeyError("boom")


def _exit_three(rank):
    os._exit(3)


def _from_queue(q, done):
    t = q.get()
    t.add_(5)
    done.put(float(t.sum()))


# -- the module -----------------------------------------------------------------------------
def test_reexports_multiprocessing():
    for name in ("Process", "Queue", "SimpleQueue", "get_context", "set_start_method",
                 "get_start_method", "cpu_count", "Pool", "Lock", "Event", "Manager"):
        assert getattr(mp, name) is getattr(multiprocessing, name), name
        assert name in mp.__all__
    assert mp.get_sharing_strategy() == "file_descriptor"
    assert mp.get_all_sharing_strategies() == {"file_descriptor", "file_system"}


def test_spawn_signature_matches_pytorch():
    torch = pytest.importorskip("torch")
    import torch.multiprocessing as tmp

    for name in ("spawn", "start_processes"):
        ours = inspect.signature(getattr(mp, name)).parameters
        theirs = inspect.signature(getattr(tmp, name)).parameters
        assert [(p.name, p.default) for p in ours.values()] == \
            [(p.name, p.default) for p in theirs.values()]
    del torch


# -- shared memory --------------------------------------------------------------------------
def test_share_memory_in_place_keeps_values_and_numpy_views():
    t = ember.arange(6, dtype=ember.float32).reshape(2, 3)
    assert not t.is_shared()
    assert t.share_memory_() is t
    assert t.is_shared() and t.dtype == ember.float32 and t.tolist() == [[0, 1, 2], [3, 4, 5]]
    n = t.numpy()
    t.add_(1)
    assert n.tolist() == [[1, 2, 3], [4, 5, 6]]
    assert t.share_memory_() is t and t.numpy() is n  # already shared: nothing moves
    v = t[1]
    assert v.is_shared()  # a view of shared memory
    nc = ember.arange(6.0).reshape(2, 3).t().share_memory_()
    assert nc.is_shared() and nc.tolist() == [[0, 3], [1, 4], [2, 5]]
    e = ember.zeros(0).share_memory_()
    assert e.is_shared() and e.shape == (0,)


def test_module_share_memory():
    m = nn.Sequential(nn.Linear(3, 2), nn.BatchNorm1d(2))
    before = {k: v.clone() for k, v in m.state_dict().items()}
    assert m.share_memory() is m
    for k, v in m.state_dict().items():
        assert v.is_shared(), k
        assert np.array_equal(v.numpy(), before[k].numpy())
    assert all(isinstance(p, nn.Parameter) for p in m.parameters())


@needs_fork
def test_hogwild_children_update_the_parents_parameters():
    ember.manual_seed(0)
    model = nn.Linear(3, 2)
    x = ember.ones(4, 3)
    ref = nn.Linear(3, 2)
    ref.load_state_dict(model.state_dict())
    model.share_memory()
    mp.start_processes(_sgd_step, args=(model, x), nprocs=2, start_method="fork")
    # two SGD steps on the same weights: the gradient of sum(Wx+b) does not depend on W
    for _ in range(2):
        _sgd_step(0, ref, x)
    for p, r in zip(model.parameters(), ref.parameters(), strict=True):
        assert np.allclose(p.detach().numpy(), r.detach().numpy())
        assert not np.allclose(p.detach().numpy(), 0)


@needs_fork
def test_unshared_tensors_are_not_shared_with_a_forked_child():
    t = ember.zeros(3)
    s = ember.zeros(3).share_memory_()
    mp.start_processes(_add_rank, args=([t, s],), nprocs=2, start_method="fork")
    assert t.tolist() == [0, 0, 0]
    assert s.tolist() == [3, 3, 3]  # 1 + 2


@needs_fork
def test_shared_tensor_through_a_queue_stays_shared():
    ctx = mp.get_context("fork")
    q, done = ctx.Queue(), ctx.Queue()
    p = ctx.Process(target=_from_queue, args=(q, done))
    p.start()
    t = ember.ones(4).share_memory_()  # made after the fork: only the queue can carry it
    q.put(t)
    assert done.get(timeout=30) == 24.0
    p.join(30)
    assert t.tolist() == [6, 6, 6, 6]
    p = ctx.Process(target=_from_queue, args=(q, done))
    p.start()
    u = ember.ones(4)
    assert not u.is_shared()
    q.put(u)  # not shared yet: put moves it to shared memory first, as PyTorch's reductions do
    assert done.get(timeout=30) == 24.0
    assert u.is_shared()
    p.join(30)
    assert u.tolist() == [6, 6, 6, 6]


def _report_and_add(q, done):
    t = q.get()
    done.put((type(t).__name__, t.is_shared(), t.requires_grad, str(t.dtype).split(".")[-1]))
    t.data.add_(5)
    done.put(t.tolist())


def _one(lib):
    t = lib.ones(3)
    return [t], t


def _int64(lib):
    t = lib.arange(3)
    return [t], t


def _view(lib):
    b = lib.zeros(6)
    return [b], b[2:4]


def _transposed_view(lib):
    b = lib.zeros(2, 3)
    return [b], b.t()


def _parameter(lib):
    p = lib.nn.Parameter(lib.ones(2))
    return [p], p


def _through_a_queue(lib, make):
    """Put ``make(lib)``'s tensor on a plain multiprocessing Queue to a forked child that adds 5
    to it: what the child saw, and the sender's tensors (values, shared) after."""
    ctx = multiprocessing.get_context("fork")
    q, done = ctx.Queue(), ctx.Queue()
    p = ctx.Process(target=_report_and_add, args=(q, done))
    p.start()
    keep, sent = make(lib)
    q.put(sent)
    seen, values = done.get(timeout=60), done.get(timeout=60)
    p.join(60)
    return seen, values, [t.tolist() for t in keep], [t.is_shared() for t in keep]


@needs_fork
@pytest.mark.parametrize("make", [_one, _int64, _view, _transposed_view, _parameter])
def test_a_queue_moves_a_tensor_to_shared_memory_as_pytorch(make):
    torch = pytest.importorskip("torch")
    assert _through_a_queue(ember, make) == _through_a_queue(torch, make)


def test_a_queue_pickles_empty_tensors_by_value_and_refuses_non_leaves():
    from multiprocessing.reduction import ForkingPickler

    e = ember.zeros(0)
    ForkingPickler.dumps(e)
    assert not e.is_shared()  # as PyTorch's
    x = ember.ones(2, requires_grad=True) * 2
    with pytest.raises(RuntimeError, match="Cowardly refusing to serialize non-leaf tensor"):
        ForkingPickler.dumps(x)
    ForkingPickler.dumps(x.detach())


def test_share_memory_of_a_view_moves_its_base_too():
    base = ember.zeros(6)
    v = base[2:4]
    v.share_memory_()
    assert v.is_shared() and base.is_shared()  # PyTorch moves the whole storage
    v.add_(1)
    assert base.tolist() == [0, 0, 1, 1, 0, 0]
    e = ember.zeros(4).expand(2, 4)
    e.share_memory_()
    assert e.is_shared() and e.shape == (2, 4) and e.stride() == (0, 1)


def test_spawn_shares_parameters_with_spawned_children():
    p = nn.Parameter(ember.zeros(2))
    p.share_memory_()
    assert mp.spawn(_check_param_and_add, args=(p,), nprocs=2) is None
    assert p.tolist() == [30, 30]


@needs_fork
def test_start_processes_reports_a_childs_exception():
    with pytest.raises(mp.ProcessRaisedException) as info:
        mp.start_processes(_fail_on_one, nprocs=2, start_method="fork")
    msg = str(info.value)
    assert "-- Process 1 terminated with the following error:" in msg
    assert "KeyError: 'boom'" in msg and "Traceback (most recent call last)" in msg
    assert info.value.error_index == 1


@needs_fork
def test_start_processes_reports_an_exit_code_and_join_false():
    with pytest.raises(mp.ProcessExitedException, match="process 0 terminated with exit code 3") as info:
        mp.start_processes(_exit_three, nprocs=1, start_method="fork")
    assert info.value.exit_code == 3
    ctx = mp.start_processes(_add_rank, args=([],), nprocs=2, join=False, start_method="fork")
    assert isinstance(ctx, mp.ProcessContext) and len(ctx.pids()) == 2
    while not ctx.join():
        pass
    assert all(p.exitcode == 0 for p in ctx.processes)


# -- DataLoader workers: errors and Ctrl-C --------------------------------------------------
class _MissingKey(ember.utils.data.Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, i):
        return {"a": 1}["missing"]


@needs_fork
def test_worker_keyerror_is_readable():
    from ember.utils.data import DataLoader

    with pytest.raises(KeyError) as info:
        for _ in DataLoader(_MissingKey(), batch_size=2, num_workers=2):
            pass
    msg = str(info.value)
    assert msg.startswith("Caught KeyError in DataLoader worker process ")
    assert "\nOriginal Traceback (most recent call last):\n" in msg  # real newlines, not "\\n"
    assert "\\n" not in msg
    assert msg.rstrip().endswith("KeyError: 'missing'")
    assert 'return {"a": 1}["missing"]' in msg


_SLOW_DATASET = """
import time
import ember
from ember.utils.data import DataLoader, Dataset

class Slow(Dataset):
    def __len__(self):
        return 10**6

    def __getitem__(self, i):
        time.sleep(0.01)
        return ember.tensor(i)
"""

_CTRL_C_SCRIPT = """
import faulthandler, signal
faulthandler.register(signal.SIGUSR1, all_threads=True)  # (the test's diagnosis on a hang)
# as a terminal's shell starts a program: SIGINT at Python's handler and unblocked. An ignored
# disposition and a signal mask pass through fork and exec, and a shell without job control
# starts its background commands with SIGINT ignored (`nohup bash -c '... pytest' &`): Python
# then keeps it ignored and this Ctrl-C never arrived (the test hung for 60 s)
signal.signal(signal.SIGINT, signal.default_int_handler)
signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
""" + _SLOW_DATASET + """
for i, b in enumerate(DataLoader(Slow(), batch_size=2, num_workers=2)):
    if i == 2:
        print("running", flush=True)
"""


_CTRL_C_IN_PUT_SCRIPT = _SLOW_DATASET + """
loader = DataLoader(Slow(), batch_size=2, num_workers=2, persistent_workers=True)
for i, b in enumerate(loader):
    if i == 2:
        q = loader._pool[1][0]
        real_put = q.put

        def put(obj, *args, **kwargs):  # Ctrl-C strikes inside Queue.put, its lock taken
            q.put = real_put
            q._notempty.acquire()
            raise KeyboardInterrupt

        q.put = put
"""


@needs_fork
def test_ctrl_c_inside_a_queue_put_still_stops(tmp_path):
    """An interrupt can leave a queue's lock held in the main process: stopping the workers
    must not put to that queue again (it would wait forever, and no traceback would print)."""
    import subprocess
    import sys

    script = tmp_path / "ctrl_c_put.py"
    script.write_text(_CTRL_C_IN_PUT_SCRIPT)
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode != 0
    assert proc.stderr.count("Traceback (most recent call last)") == 1, proc.stderr
    assert proc.stderr.rstrip().endswith("KeyboardInterrupt"), proc.stderr


@needs_fork
def test_ctrl_c_with_workers_prints_one_traceback(tmp_path):
    import signal
    import subprocess
    import sys
    import time

    script = tmp_path / "ctrl_c.py"
    script.write_text(_CTRL_C_SCRIPT)
    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        for line in proc.stdout:
            if "running" in line:
                break
        os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C does: the whole process group
        try:
            _, err = proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:  # every process of the group prints its stacks
            masks = _signal_masks(proc.pid)
            os.killpg(proc.pid, signal.SIGUSR1)
            time.sleep(2)
            os.killpg(proc.pid, signal.SIGKILL)
            _, err = proc.communicate()
            pytest.fail(f"no exit 60 s after Ctrl-C; the signal masks:\n{masks}\n"
                        f"the processes' stacks:\n{err}")
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode != 0
    assert err.count("Traceback (most recent call last)") == 1, err
    assert err.rstrip().endswith("KeyboardInterrupt"), err


def _signal_masks(pgid: int) -> str:
    """Each thread's pending, blocked, ignored and caught signals (hex masks from /proc) in the
    process group ``pgid``: a hang's diagnosis (Linux's /proc; elsewhere none)."""
    if not os.path.isdir("/proc"):
        return "(no /proc here)"
    lines = []
    for pid in sorted(os.listdir("/proc")):
        if not pid.isdigit():
            continue
        try:
            if os.getpgid(int(pid)) != pgid:
                continue
            for tid in sorted(os.listdir(f"/proc/{pid}/task")):
                with open(f"/proc/{pid}/task/{tid}/status") as f:
                    fields = dict(line.split(":", 1) for line in f if ":" in line)
                lines.append(f"pid {pid} tid {tid} {fields.get('Name', '').strip()}: " + " ".join(
                    f"{k}={fields.get(k, '').strip()}"
                    for k in ("SigPnd", "ShdPnd", "SigBlk", "SigIgn", "SigCgt")))
        except OSError:
            continue
    return "\n".join(lines)


@pytest.mark.skipif(not hasattr(__import__("select"), "epoll"), reason="Linux's epoll adopts the fd")
def test_shared_memory_closes_its_fd_without_a_python_finalizer():
    """A DataLoader with workers receives shared tensors at every batch: a Python finalizer per
    mapping would run all the time, and a Ctrl-C arriving inside one is lost (the program goes
    on running). The fd is closed in C when the mapping goes."""
    import gc
    import weakref

    before = len(weakref.finalize._registry)
    t = ember.ones(3).share_memory_()
    assert len(weakref.finalize._registry) == before
    fds = len(os.listdir("/proc/self/fd"))
    del t
    gc.collect()
    assert len(os.listdir("/proc/self/fd")) < fds  # closed with the mapping
