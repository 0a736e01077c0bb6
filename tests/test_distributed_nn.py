"""torch.distributed.nn's differentiable collectives on 2 and 3 MPI processes: each forward
against the values the collective moves, each gradient against the data flow it implies (rank
k's loss weighs its outputs by k + 1; the expected gradients are written out in NumPy)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("mpi4py")

MPIEXEC = shutil.which("mpiexec", path=str(Path(sys.executable).parent)) or shutil.which("mpiexec")
pytestmark = pytest.mark.skipif(MPIEXEC is None, reason="no mpiexec (pip install 'ember[mpi]')")

WORKER = r'''
import warnings
import numpy as np
import ember as torch
import ember.distributed as dist
from ember.distributed import nn as dist_nn

warnings.simplefilter("ignore", FutureWarning)
dist.init_process_group("gloo")
r, n = dist.get_rank(), dist.get_world_size()


def eq(t, want):
    np.testing.assert_array_equal(t.detach().numpy() if hasattr(t, "detach") else t, want)


def base(k):
    return np.arange(6, dtype=np.float32).reshape(2, 3) * (k + 1) + k


def w(k):  # rank k's loss is sum(out * w(k)): the gradient entering its outputs
    return np.full((2, 3), k + 1.0, dtype=np.float32)


def leaf(a):
    return torch.tensor(a, requires_grad=True)


every = np.stack([base(k) for k in range(n)])
W = sum(w(k) for k in range(n))

x = leaf(base(r))
y = dist_nn.all_reduce(x)
eq(y, every.sum(0))
eq(x, base(r))  # the input is not written
(y * torch.tensor(w(r))).sum().backward()
eq(x.grad, W)

x = leaf(base(r))
y = dist_nn.broadcast(x, src=n - 1)
eq(y, base(n - 1))
(y * torch.tensor(w(r))).sum().backward()
eq(x.grad, W if r == n - 1 else 0 * W)

x = leaf(base(r))
y = dist_nn.reduce(x, dst=0)
eq(y, every.sum(0) if r == 0 else base(r))
(y * torch.tensor(w(r))).sum().backward()
eq(x.grad, w(0))

x = leaf(base(r))
ys = dist_nn.all_gather(x)
assert isinstance(ys, tuple) and len(ys) == n
for k in range(n):
    eq(ys[k], base(k))
sum((ys[k] * torch.tensor(w(r) * (k + 1))).sum() for k in range(n)).backward()
eq(x.grad, W * (r + 1))

x = leaf(base(r))
ys = dist_nn.gather(x, dst=0)
for k in range(n):
    eq(ys[k], base(k) if r == 0 else 0 * base(k))
sum((ys[k] * torch.tensor(w(r) * (k + 1))).sum() for k in range(n)).backward()
eq(x.grad, w(0) * (r + 1))

xs = [leaf(base(k) * (r + 1)) for k in range(n)]
y = dist_nn.scatter(xs, src=0)
eq(y, base(r))
(y * torch.tensor(w(r))).sum().backward()
for k in range(n):
    eq(xs[k].grad, w(k) if r == 0 else 0 * w(k))

xs = [leaf(base(k) * (r + 1)) for k in range(n)]
y = dist_nn.reduce_scatter(torch.zeros(2, 3), xs)
eq(y, base(r) * sum(q + 1 for q in range(n)))
(y * torch.tensor(w(r))).sum().backward()
for k in range(n):
    eq(xs[k].grad, w(k))

ins = [leaf(base(j) + 100 * r) for j in range(n)]
outs = dist_nn.all_to_all([torch.zeros(2, 3) for _ in range(n)], ins)
for k in range(n):
    eq(outs[k], base(r) + 100 * k)
sum((outs[k] * torch.tensor(w(r) * (k + 1))).sum() for k in range(n)).backward()
for j in range(n):
    eq(ins[j].grad, w(j) * (r + 1))

t = leaf(np.arange(n * 2, dtype=np.float32).reshape(n, 2) + 100 * r)
got = dist_nn.all_to_all_single(torch.zeros(n, 2), t)
eq(got, np.stack([np.arange(2 * r, 2 * r + 2) + 100 * k for k in range(n)]))
(got * (r + 1)).sum().backward()
eq(t.grad, np.repeat(np.arange(1, n + 1, dtype=np.float32)[:, None], 2, axis=1))

with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    dist_nn.all_reduce(torch.ones(1))
assert caught and caught[0].category is FutureWarning, caught
assert "torch.distributed.nn.functional.all_reduce is deprecated" in str(caught[0].message)
print("ok", r)
dist.destroy_process_group()
'''


@pytest.mark.parametrize("nproc", [2, 3])
def test_differentiable_collectives(tmp_path: Path, nproc: int) -> None:
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    res = subprocess.run([MPIEXEC, "-n", str(nproc), sys.executable, str(script)],
                         capture_output=True, text=True, timeout=180)
    assert res.returncode == 0, res.stdout + res.stderr
    assert res.stdout.count("ok") == nproc, res.stdout


def test_module_is_importable_as_pytorchs() -> None:
    """``from torch.distributed import nn`` works (vector-quantize-pytorch imports it so) and
    the functional names are PyTorch's."""
    from ember.distributed import nn as dist_nn
    from ember.distributed.nn import functional

    for name in ("broadcast", "gather", "scatter", "reduce", "reduce_scatter", "all_gather",
                 "all_to_all", "all_to_all_single", "all_reduce"):
        assert getattr(dist_nn, name) is getattr(functional, name)
