"""``init_process_group(store=..., rank=, world_size=)`` with ember's TCPStore, FileStore and
HashStore, as PyTorch accepts it (issue 33: skorch and Lightning hand a store over), compared
with the installed PyTorch: the argument conditions, a one-process world with each store, and
two processes under the launcher (``ember launch`` / PyTorch's ``torchrun``) sharing a TCPStore."""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("mpi4py")

ONE = r'''
import sys, tempfile, os
import torch, torch.distributed as dist
for kw in [dict(init_method="tcp://127.0.0.1:1", rank=0, world_size=1), dict(rank=0),
           dict(world_size=1), dict(rank=-1, world_size=1), dict(rank=0, world_size=0)]:
    try:
        dist.init_process_group("gloo", store=dist.HashStore(), **kw)
        print("accepted", kw)
    except AssertionError as e:
        print("AssertionError:", e)
    if dist.is_initialized():
        dist.destroy_process_group()
d = tempfile.mkdtemp()
for kind in ("HashStore", "FileStore", "TCPStore"):
    st = {"HashStore": lambda: dist.HashStore(),
          "FileStore": lambda: dist.FileStore(os.path.join(d, "fs"), 1),
          "TCPStore": lambda: dist.TCPStore("127.0.0.1", 0, 1, True)}[kind]()
    st.set("mine", "x")
    dist.init_process_group("gloo", store=st, rank=0, world_size=1)
    t = torch.arange(3.0)
    dist.all_reduce(t)
    print(kind, dist.get_rank(), dist.get_world_size(), dist.get_backend(), t.tolist(),
          t.dtype, st.get("mine"))
    dist.barrier()
    dist.destroy_process_group()
try:  # a rank outside the world: RuntimeError on both (gloo's enforce; ember names the launcher)
    dist.init_process_group("gloo", store=dist.HashStore(), rank=1, world_size=1)
except RuntimeError:
    print("RuntimeError for rank 1 of 1")
'''

TWO = r'''
import datetime, os
import torch, torch.distributed as dist
rank, n = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
store = dist.TCPStore("127.0.0.1", int(os.environ["STORE_PORT"]), n, rank == 0,
                      timeout=datetime.timedelta(seconds=60))
store.set(f"hello{rank}", str(rank * 10))
dist.init_process_group("gloo", store=store, rank=rank, world_size=n)
t = torch.full((2,), float(rank + 1))
dist.all_reduce(t)
store.wait([f"hello{1 - rank}"])
print(f"rank {dist.get_rank()}/{dist.get_world_size()}: {t.tolist()} "
      f"{store.get(f'hello{1 - rank}').decode()}", flush=True)
dist.barrier()
dist.destroy_process_group()
'''


def _run(cmd: list[str], script: Path, **env: str) -> str:
    out = subprocess.run(cmd + [str(script)], capture_output=True, text=True, timeout=240,
                         env=dict(os.environ, OMP_NUM_THREADS="1", **env))
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    return "\n".join(line for line in out.stdout.splitlines() if line.strip())


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_one_process_world_with_each_store_as_pytorch(tmp_path):
    script = tmp_path / "one.py"
    script.write_text(ONE)
    ours = _run([sys.executable, "-m", "ember", "run"], script)
    assert "TCPStore 0 1 gloo [0.0, 1.0, 2.0] torch.float32 b'x'" in ours, ours
    assert ours.count("AssertionError") == 5, ours
    pytest.importorskip("torch")
    assert ours == _run([sys.executable], script)


def test_two_processes_share_a_tcpstore_under_the_launcher(tmp_path):
    script = tmp_path / "two.py"
    script.write_text(TWO)
    launch = [sys.executable, "-m", "ember", "launch", "--nproc-per-node", "2"]
    ours = _ranks(_run(launch, script, STORE_PORT=str(_free_port())))
    assert ours == ["rank 0/2: [3.0, 3.0] 10", "rank 1/2: [3.0, 3.0] 0"], ours
    torchrun = shutil.which("torchrun", path=str(Path(sys.executable).parent))
    if torchrun is None:
        pytest.skip("PyTorch's torchrun is not installed here")
    theirs = _run([torchrun, "--nproc-per-node", "2"], script, STORE_PORT=str(_free_port()))
    assert _ranks(theirs) == ours


def _ranks(out: str) -> list[str]:
    """The ranks' lines, sorted: found by pattern, since two processes writing to one pipe can
    run one's line into the other's (seen once in CI: '... 0rank 0/2: ...')."""
    return sorted(re.findall(r"rank \d+/\d+: \[[^\]]*\] \d+", out))


BACKENDS = r'''
import torch.distributed as dist
for backend in (None, "gloo", "cpu:gloo"):
    dist.init_process_group(backend, store=dist.HashStore(), rank=0, world_size=1)
    print(backend, repr(dist.get_backend()), repr(dist.group.WORLD.name()),
          repr(dist.get_backend(dist.new_group([0]))),
          repr(dist.get_backend(dist.new_group([0], backend="gloo"))))
    dist.destroy_process_group()
'''


def test_get_backend_of_a_group_made_with_backend_none_as_pytorch(tmp_path):
    """backend=None: get_backend answers "undefined" (and so do new_group's groups that inherit
    it), as PyTorch 2.13 does; name() is the backend that runs the collectives."""
    script = tmp_path / "backends.py"
    script.write_text(BACKENDS)
    ours = _run([sys.executable, "-m", "ember", "run"], script)
    assert ours.splitlines()[0] == "None 'undefined' 'gloo' 'undefined' 'gloo'", ours
    assert ours.splitlines()[2] == "cpu:gloo 'cpu:gloo' 'gloo' 'cpu:gloo' 'gloo'", ours
    pytest.importorskip("torch")
    assert ours == _run([sys.executable], script)
