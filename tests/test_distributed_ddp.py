"""DistributedDataParallel on 2 and 4 processes: N processes with batch B/N each train exactly as one
process with batch B (parameters after every step, float64, to 1e-6), for an MLP, a CNN and a
small GPT with tied weights, with and without gradient accumulation (``no_sync()`` and nanoGPT's
``require_backward_grad_sync``); buffers and parameters start from rank 0's; unused parameters.
Each rank computes the one-process reference itself."""

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
import contextlib, sys
import numpy as np
import ember as torch
import ember.distributed as dist
import ember.nn.functional as F
from ember import nn
from ember.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
r, n = dist.get_rank(), dist.get_world_size()
torch.set_default_dtype(torch.float64)
B, STEPS = 8, 20


class TinyGPT(nn.Module):
    def __init__(self, vocab=11, block=8, embd=16, heads=2, layers=2):
        super().__init__()
        self.tok = nn.Embedding(vocab, embd)
        self.pos = nn.Embedding(block, embd)
        self.blocks = nn.ModuleList(nn.TransformerEncoderLayer(embd, heads, 32, dropout=0.0,
                                                               batch_first=True, norm_first=True)
                                    for _ in range(layers))
        self.ln = nn.LayerNorm(embd)
        self.head = nn.Linear(embd, vocab, bias=False)
        self.head.weight = self.tok.weight  # tied, as GPT-2's
        self.mask = nn.Transformer.generate_square_subsequent_mask(block)

    def forward(self, idx, targets):
        T = idx.shape[1]
        x = self.tok(idx) + self.pos(torch.arange(T))
        for blk in self.blocks:
            x = blk(x, src_mask=self.mask[:T, :T], is_causal=True)
        logits = self.head(self.ln(x))
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))


def make(kind, seed):
    torch.manual_seed(seed)
    if kind == "mlp":
        return nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 16), nn.ReLU(),
                             nn.Linear(16, 3))
    if kind == "cnn":
        return nn.Sequential(nn.Conv2d(2, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                             nn.Conv2d(4, 6, 3), nn.ReLU(), nn.Flatten(), nn.Linear(24, 3))
    return TinyGPT()


def batch(kind, step, micro):
    g = np.random.default_rng(1000 * step + micro)
    if kind == "gpt":
        idx = torch.tensor(g.integers(0, 11, (B, 9)))
        return idx[:, :-1], idx[:, 1:]
    x = torch.tensor(g.standard_normal((B, 6) if kind == "mlp" else (B, 2, 8, 8)))
    return x, torch.tensor(g.integers(0, 3, B))


def loss_of(kind, model, x, y):
    return model(x, y) if kind == "gpt" else F.cross_entropy(model(x), y)


def optimizer(kind, params):
    if kind == "gpt":
        return torch.optim.AdamW(params, lr=1e-2, weight_decay=0.1)
    return torch.optim.SGD(params, lr=0.1, momentum=0.9)


def train(kind, accum, how):
    ref = make(kind, 100)  # what rank 0 builds: DDP copies it into every rank
    model = DDP(make(kind, 100 + r), bucket_cap_mb=0.0002)  # small buckets: several in flight
    for (name, p), q in zip(model.module.named_parameters(), ref.parameters()):
        np.testing.assert_array_equal(p.detach().numpy(), q.detach().numpy(), err_msg=name)
    assert len(model.reducer.buckets) > 2, model.reducer.buckets
    opt, opt_ref = optimizer(kind, model.parameters()), optimizer(kind, ref.parameters())
    lo, hi = r * B // n, (r + 1) * B // n
    for step in range(STEPS):
        opt.zero_grad()
        opt_ref.zero_grad()
        for m in range(accum):
            x, y = batch(kind, step, m)
            (loss_of(kind, ref, x, y) / accum).backward()
            last = m == accum - 1
            ctx = contextlib.nullcontext()
            if how == "no_sync" and not last:
                ctx = model.no_sync()
            if how == "attribute":
                model.require_backward_grad_sync = last
            with ctx:
                (loss_of(kind, model, x[lo:hi], y[lo:hi]) / accum).backward()
        opt.step()
        opt_ref.step()
        for (name, p), q in zip(model.module.named_parameters(), ref.parameters()):
            np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=0,
                                       atol=1e-6, err_msg=f"{kind} {how} step {step} {name}")
    assert all(k.startswith("module.") for k in model.state_dict())
    assert list(model.module.state_dict()) == list(ref.state_dict())
    return model


for kind in ("mlp", "cnn", "gpt"):
    train(kind, 1, "plain")
train("mlp", 3, "no_sync")
train("gpt", 2, "attribute")

# the last bucket's gradients are already averaged when backward returns
model = DDP(make("mlp", 7))
x, y = batch("mlp", 0, 0)
F.cross_entropy(model(x[r::n]), y[r::n]).backward()
grads = [p.grad.clone() for p in model.parameters()]
for g in grads:
    every = [torch.zeros_like(g) for _ in range(n)]
    dist.all_gather(every, g)
    for other in every:
        np.testing.assert_array_equal(other.numpy(), g.numpy())

# buffers come from rank 0 at construction and before each forward
bn = nn.Sequential(nn.Linear(6, 4), nn.BatchNorm1d(4))
with torch.no_grad():
    bn[1].running_mean.fill_(float(r))
ddp = DDP(bn)
assert ddp.module[1].running_mean.tolist() == [0.0] * 4
x, y = batch("mlp", 1, 0)
ddp(x[r::n] + r).sum().backward()
ddp(x[r::n])
every = [torch.zeros(4) for _ in range(n)]
dist.all_gather(every, ddp.module[1].running_mean)
# the second forward started from rank 0's running stats, then updated them with local data
assert not np.allclose(every[0].numpy(), 0.0)


# unused parameters: rank 0 never uses head b; a third head is unused everywhere
class TwoHeads(nn.Module):
    def __init__(self):
        super().__init__()
        self.body, self.a, self.b, self.c = (nn.Linear(6, 4), nn.Linear(4, 2), nn.Linear(4, 2),
                                             nn.Linear(4, 2))

    def forward(self, x, rank):
        h = self.body(x)
        return self.a(h).sum() + (self.b(h).sum() if rank > 0 else 0)


torch.manual_seed(3)
plain = TwoHeads()
ddp = DDP(TwoHeads(), find_unused_parameters=True)
ddp.module.load_state_dict(plain.state_dict())
x, _ = batch("mlp", 2, 0)
ddp(x[r::n], r).backward()
expect = {name: torch.zeros_like(p) for name, p in plain.named_parameters()}
for k in range(n):
    plain.zero_grad()
    plain(x[k::n], k).backward()
    for name, p in plain.named_parameters():
        if p.grad is not None:
            expect[name] += p.grad / n
for name, p in ddp.module.named_parameters():
    if name.startswith("c."):
        assert p.grad is None, name  # unused on every rank: untouched
    else:
        np.testing.assert_allclose(p.grad.numpy(), expect[name].numpy(), atol=1e-12, err_msg=name)

strict = DDP(TwoHeads())
strict(x[r::n], 1).backward()
try:
    strict(x[r::n], 1)
except RuntimeError as e:
    assert "find_unused_parameters=True" in str(e) and "c.weight" in str(e), e
else:
    raise AssertionError("a parameter without gradient must be reported at the next forward")

open(f"{sys.argv[1]}/ok{r}", "w").write(str(n))
'''

MISMATCH = r'''
import sys
import ember as torch
import ember.distributed as dist
from ember import nn
from ember.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
r = dist.get_rank()
what = sys.argv[1]
try:
    if what == "shape":
        dist.all_reduce(torch.ones(3 + r))
    elif what == "model":
        DDP(nn.Linear(4, 4 + r))
    elif what == "late":
        import datetime
        dist.destroy_process_group()
        dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=2))
        if r == 0:
            dist.broadcast(torch.ones(2), src=0)
        else:
            import time
            time.sleep(6)
            sys.exit(0)
except Exception as e:
    message = str(e).replace(chr(10), " | ")
    # one write per line: print() writes the text and its newline separately, and
    # mpiexec may put the other rank's line between them
    sys.stdout.write(f"rank {r}: {type(e).__name__}: {message}\n")
    sys.stdout.flush()
    sys.exit(0)
sys.stdout.write(f"rank {r}: no error\n")
'''


def _mpirun(tmp_path: Path, code: str, nproc: int, *args: str, timeout: float = 240):
    script = tmp_path / "worker.py"
    script.write_text(code)
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    return subprocess.run([MPIEXEC, "-n", str(nproc), sys.executable, str(script), *args],
                          capture_output=True, text=True, timeout=timeout, env=env)


@pytest.mark.parametrize("nproc", [2, 4])
def test_ddp_on_n_processes_equals_one_process_with_the_whole_batch(tmp_path: Path,
                                                                      nproc: int) -> None:
    res = _mpirun(tmp_path, WORKER, nproc, str(tmp_path))
    assert res.returncode == 0, res.stdout + res.stderr
    assert sorted(p.name for p in tmp_path.glob("ok*")) == [f"ok{r}" for r in range(nproc)]


def test_mismatched_collective_names_every_ranks_call(tmp_path: Path) -> None:
    res = _mpirun(tmp_path, MISMATCH, 2, "shape", timeout=60)
    assert res.returncode == 0, res.stderr
    for r in (0, 1):
        line = next(x for x in res.stdout.splitlines() if x.startswith(f"rank {r}:"))
        assert "disagree" in line and "rank 0: all_reduce(float32[3], SUM)" in line, line
        assert "rank 1: all_reduce(float32[4], SUM)" in line, line


def test_ddp_refuses_different_models_on_different_ranks(tmp_path: Path) -> None:
    res = _mpirun(tmp_path, MISMATCH, 2, "model", timeout=60)
    assert res.returncode == 0, res.stderr
    assert res.stdout.count("the ranks' models differ") == 2, res.stdout
    assert "rank 0 has weight: float32[4, 4], rank 1 has weight: float32[5, 4]" in res.stdout


def test_a_rank_that_never_arrives_is_named_within_the_timeout(tmp_path: Path) -> None:
    res = _mpirun(tmp_path, MISMATCH, 2, "late", timeout=60)
    assert res.returncode == 0, res.stderr
    line = next(x for x in res.stdout.splitlines() if x.startswith("rank 0:"))
    assert "timed out after 0:00:02" in line and "rank(s) [1]" in line, line
    assert "broadcast(float32[2], src=0)" in line, line


EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "ddp_digits.py"


def _accuracies(out: str) -> list[float]:
    return [float(line.rsplit(" ", 1)[1]) for line in out.splitlines()
            if "test accuracy" in line]


def test_the_ddp_example_trains_under_ember_launch_and_resumes_a_torchrun_checkpoint(
        tmp_path: Path) -> None:
    """examples/ddp_digits.py (env://, gloo, DistributedSampler, rank-0 checkpoints) on two
    processes with `ember launch`; where PyTorch is installed, the same file under real torchrun,
    and each resumes the other's checkpoint."""
    pytest.importorskip("sklearn")
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    ours = tmp_path / "ember.pt"
    res = subprocess.run([sys.executable, "-m", "ember", "launch", "--nproc-per-node", "2",
                          str(EXAMPLE), "--epochs", "4", "--out", str(ours)],
                         capture_output=True, text=True, timeout=180, env=env)
    assert res.returncode == 0, res.stdout + res.stderr
    acc = _accuracies(res.stdout)
    assert len(acc) == 4 and acc[-1] > 0.85, res.stdout  # one line per epoch: rank 0 prints
    torchrun = shutil.which("torchrun", path=str(Path(sys.executable).parent))
    if torchrun is None:
        pytest.skip("PyTorch's torchrun is not installed here")
    pytest.importorskip("torch")
    theirs = tmp_path / "torch.pt"
    res = subprocess.run([torchrun, "--nproc-per-node", "2", str(EXAMPLE), "--epochs", "4",
                          "--out", str(theirs)], capture_output=True, text=True, timeout=180,
                         env=env)
    assert res.returncode == 0, res.stdout + res.stderr
    assert _accuracies(res.stdout)[-1] > 0.85, res.stdout
    res = subprocess.run([sys.executable, "-m", "ember", "launch", "--nproc-per-node", "2",
                          str(EXAMPLE), "--epochs", "5", "--out", str(theirs)],
                         capture_output=True, text=True, timeout=180, env=env)
    assert res.returncode == 0 and "resumed from" in res.stdout, res.stdout + res.stderr
    assert _accuracies(res.stdout)[-1] > 0.85
    res = subprocess.run([torchrun, "--nproc-per-node", "2", str(EXAMPLE), "--epochs", "5",
                          "--out", str(ours)], capture_output=True, text=True, timeout=180,
                         env=env)
    assert res.returncode == 0 and "resumed from" in res.stdout, res.stdout + res.stderr
    assert _accuracies(res.stdout)[-1] > 0.85


BENCH = Path(__file__).resolve().parent.parent / "bench" / "distributed"


def test_the_distributed_benchmark_scripts_run_under_ember_launch() -> None:
    """Smoke test of bench/distributed (the measurements themselves are in docs/parallel.md)."""
    import json

    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    res = subprocess.run([sys.executable, "-m", "ember", "launch", "--nproc-per-node", "2",
                          str(BENCH / "ddp_gpt.py"), "--steps", "1", "--warmup", "0"],
                         capture_output=True, text=True, timeout=180, env=env)
    assert res.returncode == 0, res.stdout + res.stderr
    (row,) = [json.loads(x) for x in res.stdout.splitlines() if x.startswith("{")]
    assert row["engine"] == "ember" and row["world"] == 2 and row["samples_per_s"] > 0


def test_a_connection_that_reaches_itself_is_refused_and_retried(monkeypatch):
    """While node 0 is not listening yet, Linux may join a connecting socket to itself when the
    master port lies in the ephemeral range (a TCP simultaneous open); that socket would then
    hold the port node 0 must listen on (seen once in CI as 'Address already in use'). The
    launchers' and init_process_group's connect refuses such a socket (closing it) so the
    caller's retry loop goes on."""
    import socket

    from ember.distributed import _rendezvous

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.connect(("127.0.0.1", port))  # connected to itself
    assert s.getsockname() == s.getpeername()
    monkeypatch.setattr(_rendezvous.socket, "create_connection", lambda *a, **k: s)
    with pytest.raises(ConnectionRefusedError, match="reached itself"):
        _rendezvous.connect_tcp("127.0.0.1", port, 5)
    assert s.fileno() == -1  # closed: the port is free again
