"""Fake CUDA (``ember.testing.fake_cuda()``, ``ember run --fake-cuda``): ``cuda`` as a device of
NumPy arrays with CUDA's rules, so device mistakes in GPU code show on a machine without a GPU."""

from __future__ import annotations

import io
import subprocess
import sys
import warnings

import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F
from ember import _backend
from ember.testing import fake_cuda

try:
    import torch
except ImportError:  # pragma: no cover - CI installs torch
    torch = None

SAME_DEVICE = "Expected all tensors to be on the same device, but found at least two devices"
REAL_CUDA = _backend.cuda_available()


def _np(t: ember.Tensor) -> np.ndarray:
    return np.array(_backend.to_numpy(t.detach()._data))


# ---------------------------------------------------------------------------------------------
# the device and its queries


def test_cuda_is_a_device_inside_the_block():
    with fake_cuda():
        assert ember.cuda.is_available() and ember.cuda.is_initialized()
        assert ember.cuda.device_count() == 1 and ember.cuda.current_device() == 0
        x = ember.randn(2, 3, device="cuda")
        assert x.is_cuda and x.device == ember.device("cuda", 0) and x.get_device() == 0
        assert "device='cuda:0'" in repr(x)
        assert x.dtype is ember.float32
        y = ember.ones(2, 3).cuda()
        assert (x + y).device == ember.device("cuda:0")
        with pytest.raises(RuntimeError, match="invalid device ordinal"):
            ember.zeros(1, device="cuda:1")


def test_transfers_copy_as_on_a_gpu():
    with fake_cuda():
        c = ember.arange(4.0)
        g = c.to("cuda", non_blocking=True)
        assert g.is_cuda and not np.shares_memory(_np(g), _np(c))
        back = g.cpu()
        assert back.device.type == "cpu" and type(back._data) is np.ndarray
        back += 1  # the CPU copy is its own memory, as after a device-to-host copy
        assert _np(g).tolist() == [0, 1, 2, 3]
        assert g.cuda() is g and g.to("cuda:0") is g
        assert c.pin_memory().cuda(non_blocking=True).is_cuda
        assert g.to(ember.float16).device == g.device
        h = ember.empty(4, device="cuda").copy_(c, non_blocking=True)
        assert h.is_cuda and _np(h).tolist() == [0, 1, 2, 3]
        with pytest.raises(TypeError, match="Tensor.cpu()"):
            g.numpy()
        assert g.tolist() == [0.0, 1.0, 2.0, 3.0] and g[1].item() == 1.0


def test_torch_cuda_queries_answer_about_one_device():
    with fake_cuda():
        ember.cuda.synchronize()
        ember.cuda.manual_seed(0)
        ember.cuda.manual_seed_all(0)
        name = ember.cuda.get_device_name(0)
        assert "fake" in name and "CPU" in name
        p = ember.cuda.get_device_properties(0)
        assert p.name == name and p.total_memory > 0 and p.multi_processor_count >= 1
        assert ember.cuda.get_device_capability() == (p.major, p.minor)
        assert ember.cuda.is_bf16_supported()
        free, total = ember.cuda.mem_get_info()
        assert 0 < free <= total
        before = ember.cuda.memory_allocated()
        big = ember.zeros(256, 1024, device="cuda")
        assert ember.cuda.memory_allocated() - before == 256 * 1024 * 4
        assert ember.cuda.max_memory_allocated() >= 256 * 1024 * 4
        del big
        assert ember.cuda.memory_allocated() == before
        s = ember.cuda.Stream()
        e1, e2 = ember.cuda.Event(enable_timing=True), ember.cuda.Event(enable_timing=True)
        e1.record()
        with ember.cuda.stream(s):
            assert ember.cuda.current_stream() == s
            (ember.ones(3, device="cuda") * 2).sum()
        e2.record()
        e2.synchronize()
        assert e1.elapsed_time(e2) >= 0 and s.query()
        ember.backends.cudnn.benchmark = True
        ember.backends.cudnn.deterministic = True
        assert ember.backends.cudnn.benchmark and ember.backends.cudnn.deterministic


# ---------------------------------------------------------------------------------------------
# device mistakes raise PyTorch's error


def _device_mistake_program() -> None:
    """A GPU script with the classic mistake: the model moved to CUDA, the batch left behind."""
    device = "cuda" if ember.cuda.is_available() else "cpu"
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2)).to(device)
    opt = ember.optim.SGD(model.parameters(), lr=0.1)
    x, y = ember.randn(16, 4), ember.randint(0, 2, (16,))
    loss = F.cross_entropy(model(x), y)  # x should have been x.to(device)
    loss.backward()
    opt.step()


def test_device_mistake_raises_pytorchs_error():
    _device_mistake_program()  # on the CPU the mistake is invisible
    with fake_cuda(), pytest.raises(RuntimeError, match=SAME_DEVICE) as e:
        _device_mistake_program()
    assert "cuda:0" in str(e.value) and "cpu" in str(e.value)


@pytest.mark.parametrize("case", [
    "add", "cat", "matmul", "target_on_cpu", "conv", "embedding_index_on_cuda",
    "embedding_weight_on_cuda", "gather", "index_select", "masked_fill", "scatter_",
    "index_add_", "take",
])
def test_mixed_devices_raise(case):
    with fake_cuda():
        a = ember.randn(3, 4, device="cuda", requires_grad=True)
        b = ember.randn(3, 4)
        idx = ember.tensor([0, 2])
        fn = {
            "add": lambda: a + b,
            "cat": lambda: ember.cat([a, b]),
            "matmul": lambda: a @ b.T,
            "target_on_cpu": lambda: F.cross_entropy(a, ember.tensor([0, 1, 2])),
            "conv": lambda: nn.Conv2d(1, 2, 3).cuda()(ember.randn(1, 1, 5, 5)),
            "embedding_index_on_cuda": lambda: nn.Embedding(5, 2)(idx.cuda()),
            "embedding_weight_on_cuda": lambda: nn.Embedding(5, 2).cuda()(idx),
            "gather": lambda: a.gather(1, ember.tensor([[0], [1], [2]])),
            "index_select": lambda: a.index_select(0, idx),
            "masked_fill": lambda: a.masked_fill(b > 0, 0.0),
            "scatter_": lambda: a.detach().scatter_(0, ember.tensor([[0, 1, 2, 0]]), 1.0),
            "index_add_": lambda: a.detach().index_add_(0, idx, ember.ones(2, 4, device="cuda")),
            "take": lambda: a.take(idx),
        }[case]
        with pytest.raises(RuntimeError, match=SAME_DEVICE):
            fn()


def test_what_pytorch_allows_across_devices():
    """CPU indices in ``x[idx]``, 0-d CPU tensors as scalars, copy_ between devices."""
    with fake_cuda():
        a = ember.randn(3, 4, device="cuda")
        assert a[ember.tensor([0, 2])].is_cuda
        assert (a * ember.tensor(2.0)).is_cuda
        a[ember.tensor([1])] = ember.zeros(1, 4, device="cuda")
        assert ember.empty(3, 4, device="cuda").copy_(ember.ones(3, 4)).is_cuda
        assert ember.ones(3, 4).copy_(a).device.type == "cpu"


# ---------------------------------------------------------------------------------------------
# a training loop on fake CUDA gives the CPU's numbers


class _CNN(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(1, 4, 3, padding=1, bias=False)  # (BatchNorm follows)
        self.bn = nn.BatchNorm2d(4)
        self.fc = nn.Linear(4 * 4 * 4, 3)
        self.drop = nn.Dropout(0.25)

    def forward(self, x: ember.Tensor) -> ember.Tensor:
        x = F.max_pool2d(F.relu(self.bn(self.conv(x))), 2)
        return self.fc(self.drop(x.flatten(1)))


def _train(device: str, kind: str) -> tuple[list[float], dict]:
    ember.manual_seed(0)
    if kind == "mlp":
        model = nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Dropout(0.2), nn.Linear(16, 3))
        data = [(ember.randn(8, 6), ember.randint(0, 3, (8,))) for _ in range(4)]
        opt = ember.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    else:
        model = _CNN()
        data = [(ember.randn(4, 1, 8, 8), ember.randint(0, 3, (4,))) for _ in range(3)]
        opt = ember.optim.Adam(model.parameters(), lr=1e-2)
    model.to(device)
    losses = []
    for x, y in data:
        x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    for p in model.parameters():
        assert p.device.type == device and p.grad.device.type == device
    return losses, {k: _np(v) for k, v in model.state_dict().items()}


@pytest.mark.parametrize("kind", ["mlp", "cnn"])
def test_training_loop_on_fake_cuda_matches_the_cpu(kind):
    cpu_losses, cpu_state = _train("cpu", kind)
    with fake_cuda():
        losses, state = _train("cuda", kind)
    np.testing.assert_allclose(losses, cpu_losses, rtol=1e-6)
    assert state.keys() == cpu_state.keys()
    for k in state:
        assert state[k].dtype == cpu_state[k].dtype, k
        np.testing.assert_allclose(state[k], cpu_state[k], rtol=1e-5, atol=1e-6, err_msg=k)


def test_autocast_uses_cudas_lists():
    lin = nn.Linear(8, 8)
    x = ember.randn(4, 8)
    with ember.autocast("cpu"):  # the CPU's list: bfloat16, softmax not on it
        h = lin(x)
        assert h.dtype is ember.bfloat16 and ember.softmax(h, -1).dtype is ember.bfloat16
    with fake_cuda():
        lin.cuda()
        with ember.autocast("cuda"):  # CUDA's: float16, softmax in float32
            h = lin(x.cuda())
            assert h.dtype is ember.float16 and h.is_cuda
            assert ember.softmax(h, -1).dtype is ember.float32
        assert ember.get_autocast_dtype("cuda") is ember.float16
        scaler = ember.amp.GradScaler("cuda")
        opt = ember.optim.SGD(lin.parameters(), lr=0.1)
        with ember.autocast("cuda"):
            loss = lin(x.cuda()).float().pow(2).mean()
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        assert scaler.get_scale() == 2.0**16 and lin.weight.grad.dtype is ember.float32


def test_dataloader_pin_memory_does_not_warn():
    ds = ember.utils.data.TensorDataset(ember.randn(4, 3))
    with fake_cuda(), warnings.catch_warnings():
        warnings.simplefilter("error")
        batches = [b.cuda(non_blocking=True) for (b,) in
                   ember.utils.data.DataLoader(ds, batch_size=2, pin_memory=True)]
    assert all(b.is_cuda for b in batches)


# ---------------------------------------------------------------------------------------------
# the context manager puts everything back


@pytest.mark.skipif(REAL_CUDA, reason="a real GPU is usable here")
def test_context_manager_restores_state():
    assert not ember.cuda.is_available()
    cudnn, matmul = ember.backends.cudnn, ember.backends.cuda.matmul
    flags = (cudnn.benchmark, cudnn.deterministic, matmul.allow_tf32)
    with pytest.raises(ValueError, match="boom"), fake_cuda():
        ember.set_default_device("cuda")
        assert ember.zeros(2).is_cuda
        cudnn.benchmark, cudnn.deterministic = not flags[0], not flags[1]
        matmul.allow_tf32 = not flags[2]
        with fake_cuda():  # nested: the inner exit keeps the outer block's fake CUDA
            pass
        assert ember.cuda.is_available()
        raise ValueError("boom")
    assert not ember.cuda.is_available() and not ember.cuda.is_initialized()
    assert ember.cuda.device_count() == 0 and ember.cuda.memory_allocated() == 0
    assert ember.zeros(2).device.type == "cpu"
    assert (cudnn.benchmark, cudnn.deterministic, matmul.allow_tf32) == flags
    assert _backend.fake_cuda_track is None
    with pytest.raises(AssertionError, match="Torch not compiled with CUDA enabled"):
        ember.cuda.get_device_name()
    with pytest.raises(RuntimeError):
        ember.randn(2, device="cuda")


# ---------------------------------------------------------------------------------------------
# checkpoints


def test_checkpoint_from_fake_cuda_loads_on_the_cpu():
    ember.manual_seed(0)
    buf = io.BytesIO()
    with fake_cuda():
        model = nn.Linear(3, 2).cuda()
        ember.save({"model": model.state_dict(), "step": 3}, buf)
        raw = buf.getvalue()
        again = ember.load(io.BytesIO(raw))  # where CUDA is: back on cuda:0
        assert again["model"]["weight"].is_cuda
    ckpt = ember.load(io.BytesIO(raw), map_location="cpu")
    assert ckpt["step"] == 3
    for k, v in model.state_dict().items():
        assert ckpt["model"][k].device.type == "cpu"
        assert np.array_equal(_np(ckpt["model"][k]), _np(v))
    fresh = nn.Linear(3, 2)
    fresh.load_state_dict(ckpt["model"])
    if not REAL_CUDA:
        with pytest.raises(RuntimeError, match="map_location"):
            ember.load(io.BytesIO(raw))
    if torch is not None:  # PyTorch reads it as a CUDA checkpoint too
        ref = torch.load(io.BytesIO(raw), map_location="cpu")
        np.testing.assert_array_equal(ref["model"]["weight"].numpy(),
                                      _np(model.state_dict()["weight"]))


# ---------------------------------------------------------------------------------------------
# ember run --fake-cuda


SCRIPT = """\
import torch
import torch.nn as nn

print(torch.cuda.is_available(), torch.cuda.device_count())
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = nn.Linear(4, 2).to(device)
x = torch.randn(3, 4, device=device)
print(model(x).device, torch.cuda.get_device_name(0))
try:
    model(torch.randn(3, 4))
except RuntimeError as e:
    print("mistake:", str(e).split("!")[0])
"""


def test_ember_run_fake_cuda(tmp_path):
    script = tmp_path / "gpu_script.py"
    script.write_text(SCRIPT)
    out = subprocess.run([sys.executable, "-m", "ember", "run", "--fake-cuda", str(script)],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == "True 1"
    assert lines[1].startswith("cuda:0 ember fake CUDA")
    assert lines[2] == ("mistake: Expected all tensors to be on the same device, but found at "
                        "least two devices, cuda:0 and cpu")
    if not REAL_CUDA:  # without the flag: PyTorch's CPU-only answers
        plain = subprocess.run([sys.executable, "-m", "ember", "run", str(script)],
                               capture_output=True, text=True, timeout=120)
        assert plain.stdout.splitlines()[0] == "False 0"
