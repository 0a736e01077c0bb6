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
