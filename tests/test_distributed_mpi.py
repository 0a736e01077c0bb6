"""ember.distributed over MPI: every collective on 2 and 4 processes (oversubscribed on small
machines) against a NumPy reference computed in each process. Runs only where mpi4py and
MPICH's mpiexec are installed (``ember[mpi]``; the test extras include them)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("mpi4py")

MPIEXEC = shutil.which("mpiexec", path=str(Path(sys.executable).parent)) or shutil.which("mpiexec")
pytestmark = pytest.mark.skipif(MPIEXEC is None, reason="no mpiexec (pip install 'ember[mpi]')")

WORKER = r'''
import numpy as np
import ember as torch
import ember.distributed as dist

assert dist.is_available() and not dist.is_initialized()
dist.init_process_group("gloo")
r, n = dist.get_rank(), dist.get_world_size()
assert dist.is_initialized() and dist.get_backend() == "gloo"
assert dist.group.WORLD.rank() == r and dist.group.WORLD.size() == n

def base(k):  # what rank k contributes: distinct per rank, float32
    return np.arange(6, dtype=np.float32).reshape(2, 3) * (k + 1) + k

every = np.stack([base(k) for k in range(n)])

t = torch.tensor(base(r))
v = t._version_counter()[0]
dist.all_reduce(t)
np.testing.assert_allclose(t.numpy(), every.sum(0))
assert t._version_counter()[0] > v, "a collective bumps the version counter, as in-place ops do"
for op, ref in [(dist.ReduceOp.MAX, every.max(0)), (dist.ReduceOp.MIN, every.min(0)),
                (dist.ReduceOp.PRODUCT, every.prod(0)), (dist.ReduceOp.AVG, every.mean(0))]:
    t = torch.tensor(base(r))
    dist.all_reduce(t, op=op)
    np.testing.assert_allclose(t.numpy(), ref, rtol=1e-6)
    assert t.dtype == torch.float32

t = torch.tensor(base(r))
work = dist.all_reduce(t, async_op=True)
work.wait()
np.testing.assert_allclose(t.numpy(), every.sum(0))
ints = torch.tensor([r, 2 * r], dtype=torch.int64)
dist.all_reduce(ints)
assert ints.tolist() == [sum(range(n)), 2 * sum(range(n))] and ints.dtype == torch.int64

t = torch.tensor(base(r))
dist.broadcast(t, src=n - 1)
np.testing.assert_array_equal(t.numpy(), base(n - 1))

t = torch.tensor(base(r))
dist.reduce(t, dst=1)
np.testing.assert_allclose(t.numpy(), every.sum(0) if r == 1 else base(r))

outs = [torch.zeros(2, 3) for _ in range(n)]
dist.all_gather(outs, torch.tensor(base(r)))
for k in range(n):
    np.testing.assert_array_equal(outs[k].numpy(), base(k))

big = torch.zeros(2 * n, 3)
dist.all_gather_into_tensor(big, torch.tensor(base(r)))
np.testing.assert_array_equal(big.numpy(), every.reshape(2 * n, 3))

gl = [torch.zeros(2, 3) for _ in range(n)] if r == 0 else None
dist.gather(torch.tensor(base(r)), gl, dst=0)
if r == 0:
    for k in range(n):
        np.testing.assert_array_equal(gl[k].numpy(), base(k))

mine = torch.zeros(2, 3)
dist.scatter(mine, [torch.tensor(base(k)) for k in range(n)] if r == 0 else None, src=0)
np.testing.assert_array_equal(mine.numpy(), base(r))

block = torch.zeros(1, 3)
full = torch.tensor(np.arange(3 * n, dtype=np.float32).reshape(n, 3) * (r + 1))
dist.reduce_scatter_tensor(block, full)
ref = np.arange(3 * n, dtype=np.float32).reshape(n, 3) * sum(k + 1 for k in range(n))
np.testing.assert_allclose(block.numpy(), ref[r:r + 1])

if n > 1:  # a ring: send to the next rank, receive from the previous
    got = torch.zeros(2, 3)
    req = dist.irecv(got, src=(r - 1) % n)
    dist.send(torch.tensor(base(r)), dst=(r + 1) % n)
    req.wait()
    np.testing.assert_array_equal(got.numpy(), base((r - 1) % n))

objs = [None] * n
dist.all_gather_object(objs, {"rank": r, "name": f"r{r}", "t": torch.full((2,), float(r))})
assert [o["rank"] for o in objs] == list(range(n)) and objs[n - 1]["name"] == f"r{n - 1}"
assert objs[n - 1]["t"].tolist() == [n - 1.0, n - 1.0]
sent = [{"lr": 0.1, "steps": [1, 2]}, "text", torch.arange(3)] if r == 0 else [None, None, None]
dist.broadcast_object_list(sent, src=0)
assert sent[0] == {"lr": 0.1, "steps": [1, 2]} and sent[1] == "text"
assert sent[2].tolist() == [0, 1, 2]
got = [None] * n if r == n - 1 else None
dist.gather_object(("r", r), got, dst=n - 1)
if r == n - 1:
    assert got == [("r", k) for k in range(n)]

# reduce_scatter with a list: rank r gets the sum over ranks of input_list[r]
out = torch.zeros(2, 3)
dist.reduce_scatter(out, [torch.tensor(base(k) * (r + 1)) for k in range(n)])
np.testing.assert_allclose(out.numpy(), base(r) * sum(k + 1 for k in range(n)))

# all_to_all_single, even then uneven splits: rank r sends r + j + 1 rows to rank j
t = torch.tensor(np.arange(n * 2, dtype=np.float32).reshape(n, 2) + 100 * r)
got = torch.zeros(n, 2)
dist.all_to_all_single(got, t)
np.testing.assert_array_equal(got.numpy(), np.stack([np.arange(2 * r, 2 * r + 2) + 100 * k
                                                     for k in range(n)]))
send_rows = [r + j + 1 for j in range(n)]
recv_rows = [k + r + 1 for k in range(n)]
src = torch.tensor(np.concatenate([np.full((c, 3), 10 * r + j) for j, c in enumerate(send_rows)]))
dst = torch.zeros(sum(recv_rows), 3, dtype=src.dtype)
dist.all_to_all_single(dst, src, recv_rows, send_rows)
expect = np.concatenate([np.full((c, 3), 10 * k + r) for k, c in enumerate(recv_rows)])
np.testing.assert_array_equal(dst.numpy(), expect)

outs = [torch.zeros(k + 1, dtype=torch.int64) for k in range(n)]
dist.all_to_all(outs, [torch.full((r + 1,), 10 * r + j) for j in range(n)])
for k in range(n):
    assert outs[k].tolist() == [10 * k + r] * (k + 1)

objs = [None]
dist.scatter_object_list(objs, [{"for": k} for k in range(n)] if r == 0 else None, src=0)
assert objs == [{"for": r}]
if n > 1 and r < 2:
    if r == 0:
        dist.send_object_list(["hello", {"x": 1}], dst=1)
    else:
        box = [None, None]
        assert dist.recv_object_list(box, src=0) == 0 and box == ["hello", {"x": 1}]

# sub-groups: the even ranks sum among themselves; the odd ones are outside the group
evens = dist.new_group(list(range(0, n, 2)))
t = torch.tensor([float(r)])
if r % 2 == 0:
    assert dist.get_world_size(evens) == len(range(0, n, 2)) and dist.get_rank(evens) == r // 2
    assert dist.get_process_group_ranks(evens) == list(range(0, n, 2))
    dist.all_reduce(t, group=evens)
    assert t.item() == sum(range(0, n, 2))
    dist.broadcast(t2 := torch.tensor([float(r)]), src=n - 2 if n > 2 else 0, group=evens)
    assert t2.item() == (n - 2 if n > 2 else 0)
else:
    assert evens == dist.GroupMember.NON_GROUP_MEMBER and dist.get_rank(evens) == -1
    assert dist.all_reduce(t, group=evens) is None and t.item() == r
mine_group, every_group = dist.new_subgroups(group_size=2)
assert len(every_group) == n // 2 and dist.get_process_group_ranks(mine_group) == [r - r % 2,
                                                                                  r - r % 2 + 1]
mine_group, every_group = dist.new_subgroups_by_enumeration([[k] for k in range(n)])
assert len(every_group) == n and dist.get_process_group_ranks(mine_group) == [r]
assert dist.get_pg_count() == 1 + (1 if r % 2 == 0 else 0) + 1 + 1  # world, evens, pairs, single

if n > 1:  # batch_isend_irecv: a ring again
    got = torch.zeros(2, 3)
    works = dist.batch_isend_irecv([dist.P2POp(dist.isend, torch.tensor(base(r)), (r + 1) % n),
                                    dist.P2POp(dist.irecv, got, (r - 1) % n)])
    for w in works:
        w.wait()
    np.testing.assert_array_equal(got.numpy(), base((r - 1) % n))
dist.monitored_barrier()

dist.barrier()
try:
    dist.all_reduce(torch.ones(4, 4).t())
except ValueError as e:
    assert "contiguous" in str(e)
else:
    raise AssertionError("a non-contiguous tensor must be refused")
dist.destroy_process_group()
assert not dist.is_initialized()
import sys
open(f"{sys.argv[1]}/ok{r}", "w").write(str(n))
'''


@pytest.mark.parametrize("nproc", [2, 4])
def test_collectives_match_numpy(tmp_path: Path, nproc: int) -> None:
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    res = subprocess.run([MPIEXEC, "-n", str(nproc), sys.executable, str(script), str(tmp_path)],
                         capture_output=True, text=True, timeout=120, env=env)
    assert res.returncode == 0, res.stdout + res.stderr
    # each rank that got through every check leaves a file (stdout lines may interleave)
    assert sorted(p.name for p in tmp_path.glob("ok*")) == [f"ok{r}" for r in range(nproc)]
    assert {p.read_text() for p in tmp_path.glob("ok*")} == {str(nproc)}


def test_init_process_group_explains_a_missing_launcher() -> None:
    """One process with WORLD_SIZE=2 in the environment: MPI's world has one process, so
    init_process_group says to start the processes with mpiexec."""
    code = ("import ember.distributed as dist\n"
            "try:\n    dist.init_process_group('gloo')\n"
            "except RuntimeError as e:\n    print(e)\n")
    env = dict(os.environ, WORLD_SIZE="2", RANK="0")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60, env=env)
    assert "mpiexec -n 2" in res.stdout, res.stdout + res.stderr


def test_collectives_without_init_raise_pytorchs_error() -> None:
    import ember
    import ember.distributed as dist

    with pytest.raises(ValueError, match="Default process group has not been initialized"):
        dist.all_reduce(ember.ones(2))
    with pytest.raises(ValueError, match="Default process group has not been initialized"):
        dist.get_rank()


LAUNCHED = r'''
import os, sys
import torch
import torch.distributed as dist

dist.init_process_group(backend="gloo", init_method="env://")
r = dist.get_rank()
assert r == int(os.environ["RANK"]) and dist.get_world_size() == int(os.environ["WORLD_SIZE"])
assert os.environ["LOCAL_RANK"] == str(r) and os.environ["MASTER_PORT"] == "29511"
t = torch.ones(2) * (r + 1)
dist.all_reduce(t)
assert t.tolist() == [3.0, 3.0]
open(os.path.join(sys.argv[1], f"ok{r}"), "w").write("ok")
dist.barrier()  # both files are written before rank 1 fails (its failure ends rank 0 at once)
if sys.argv[2:] == ["fail"] and r == 1:
    sys.exit(3)
dist.destroy_process_group()
'''


LAUNCHERS = {
    "ember launch": ["-m", "ember", "launch"],
    "ember run -m torch.distributed.run": ["-m", "ember", "run", "-m", "torch.distributed.run"],
}


@pytest.mark.parametrize("fail", [False, True])
@pytest.mark.parametrize("how", list(LAUNCHERS))
def test_launch_sets_torchruns_environment(tmp_path: Path, fail: bool, how: str) -> None:
    """`ember launch --nproc_per_node 2` (torchrun's flags, `_` or `-`), or torchrun's module
    under `ember run`: an env:// program runs unchanged on 2 processes; a rank's exit code is
    the job's."""
    script = tmp_path / "train.py"
    script.write_text(LAUNCHED)
    cmd = [sys.executable, *LAUNCHERS[how], "--nproc_per_node", "2", "--master-port",
           "29511", str(script), str(tmp_path)] + (["fail"] if fail else [])
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert res.returncode == (3 if fail else 0), res.stdout + res.stderr
    assert sorted(p.name for p in tmp_path.glob("ok*")) == ["ok0", "ok1"]


NODES = r'''
import os, sys
import torch
import torch.distributed as dist

dist.init_process_group("gloo")
r, n = dist.get_rank(), dist.get_world_size()
assert (r, n) == (int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])) == (r, 4)
local, node = int(os.environ["LOCAL_RANK"]), int(os.environ["GROUP_RANK"])
assert os.environ["LOCAL_WORLD_SIZE"] == "2" and r == 2 * node + local, (r, node, local)
t = torch.tensor([float(r)])
dist.all_reduce(t)
assert t.item() == 6.0
open(os.path.join(sys.argv[1], f"ok{r}"), "w").write(f"{node}:{local}")
'''


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _ranks_seen(tmp_path: Path) -> dict[str, str]:
    return {p.name: p.read_text() for p in sorted(tmp_path.glob("ok*"))}


def test_several_machines_by_mpich_host_file(tmp_path: Path) -> None:
    """MPICH's form: one `ember launch --hostfile F` starts every host's processes; here the two
    "hosts" are this machine's loopback under two names."""
    (tmp_path / "hosts").write_text("localhost:2\n127.0.0.1:2\n")
    script = tmp_path / "train.py"
    script.write_text(NODES)
    res = subprocess.run([sys.executable, "-m", "ember", "launch", "--hostfile",
                          str(tmp_path / "hosts"), "--nproc-per-node", "2", str(script),
                          str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr
    assert _ranks_seen(tmp_path) == {"ok0": "0:0", "ok1": "0:1", "ok2": "1:0", "ok3": "1:1"}


def test_several_machines_torchrun_style(tmp_path: Path) -> None:
    """torchrun's form: the same command on each machine with --nnodes/--node-rank/--master-addr;
    the machines' MPI worlds join at init_process_group (node 1 may start first)."""
    script = tmp_path / "train.py"
    script.write_text(NODES)
    port = str(_free_port())
    procs = [subprocess.Popen([sys.executable, "-m", "ember", "launch", "--nnodes", "2",
                               "--node_rank", str(node), "--nproc-per-node", "2", "--master-addr",
                               "127.0.0.1", "--master-port", port, str(script), str(tmp_path)],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
             for node in (1, 0)]
    outs = [p.communicate(timeout=120)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    assert _ranks_seen(tmp_path) == {"ok0": "0:0", "ok1": "0:1", "ok2": "1:0", "ok3": "1:1"}


DIES = r'''
import os, signal, sys
import torch
import torch.distributed as dist

dist.init_process_group("gloo")
if dist.get_rank() == 1:
    import time
    open(sys.argv[2], "w").write(repr(time.time()))  # when it fails: the clock of the 10 s
    if sys.argv[1] == "raise":
        raise RuntimeError("rank 1 fails")
    os.kill(os.getpid(), signal.SIGKILL)
dist.barrier()  # the others wait here for rank 1, which never comes
dist.all_reduce(torch.ones(2))
'''


@pytest.mark.parametrize("how", ["raise", "sigkill"])
def test_a_rank_that_dies_ends_every_rank_within_seconds(tmp_path: Path, how: str) -> None:
    import time

    script = tmp_path / "train.py"
    script.write_text(DIES)
    failed_at = tmp_path / "failed_at"
    res = subprocess.run([sys.executable, "-m", "ember", "launch", "--nproc-per-node", "3",
                          str(script), how, str(failed_at)], capture_output=True, text=True,
                         timeout=60)
    took = time.time() - float(failed_at.read_text())
    assert res.returncode != 0, res.stdout + res.stderr
    assert took < 10, f"the job ended {took:.1f} s after rank 1 failed"
    if how == "raise":
        assert "rank 1 fails" in res.stderr


def test_a_failure_on_one_machine_ends_the_job_on_every_machine(tmp_path: Path) -> None:
    """torchrun's form: rank 3 (node 1) raises; both machines' launchers end non-zero within
    seconds, node 0's processes too (they were waiting for rank 3 in a barrier)."""
    import time

    script = tmp_path / "train.py"
    script.write_text(DIES.replace("get_rank() == 1", "get_rank() == 3"))
    port = str(_free_port())
    failed_at = tmp_path / "failed_at"
    procs = [subprocess.Popen([sys.executable, "-m", "ember", "launch", "--nnodes", "2",
                               "--node-rank", str(node), "--nproc-per-node", "2",
                               "--master-port", port, str(script), "raise", str(failed_at)],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
             for node in (0, 1)]
    outs = [p.communicate(timeout=60)[0] for p in procs]
    took = time.time() - float(failed_at.read_text())
    assert all(p.returncode != 0 for p in procs), outs
    assert took < 10, f"the job ended {took:.1f} s after rank 3 failed"
    assert "rank 1 fails" in outs[1]


def test_backend_defaults_and_complex_support_as_pytorchs() -> None:
    import ember.distributed as dist

    assert dist.get_default_backend_for_device("cpu") == "gloo"
    assert dist.get_default_backend_for_device("cuda:1") == "nccl"
    with pytest.raises(ValueError, match="Default backend not registered"):
        dist.get_default_backend_for_device("xla")
    torch = pytest.importorskip("torch")
    import torch.distributed as tdist

    for name in ("SUM", "AVG", "PRODUCT", "MIN", "MAX", "BAND", "BOR", "BXOR"):
        assert dist.supports_complex(getattr(dist.ReduceOp, name)) == tdist.supports_complex(
            getattr(tdist.ReduceOp, name)), name
    assert tdist.get_default_backend_for_device(torch.device("cpu")) == "gloo"
