"""Under ``ember run``, ember's public classes and functions report the ``__module__`` PyTorch's
own objects report (``torch.optim.SGD.__module__ == "torch.optim.sgd"``, ``torch.Tensor`` prints as
``<class 'torch.Tensor'>``), since libraries render and key on them; pickling by name keeps working;
under a plain ``import ember`` the names stay ember's."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# a sample of public names across the namespaces (dotted paths below ``torch``)
SAMPLE = """
Tensor Size dtype device Generator tensor zeros ones randn rand arange add mul matmul sum mean
cat stack where relu sigmoid tanh softmax no_grad enable_grad set_grad_enabled manual_seed save
load from_numpy einsum clamp exp log
nn.Parameter nn.Module nn.Linear nn.Conv1d nn.Conv2d nn.Conv3d nn.ConvTranspose2d nn.BatchNorm1d
nn.BatchNorm2d nn.LayerNorm nn.GroupNorm nn.Embedding nn.LSTM nn.GRU nn.RNN nn.Dropout nn.ReLU
nn.GELU nn.Sigmoid nn.Tanh nn.Softmax nn.Sequential nn.ModuleList nn.ModuleDict nn.MaxPool2d
nn.AvgPool2d nn.AdaptiveAvgPool2d nn.Flatten nn.Identity nn.MultiheadAttention
nn.TransformerEncoderLayer nn.TransformerEncoder nn.CrossEntropyLoss nn.MSELoss nn.BCELoss
nn.BCEWithLogitsLoss nn.L1Loss nn.NLLLoss nn.PixelShuffle nn.Upsample nn.LazyLinear
nn.LazyConv2d nn.LazyBatchNorm1d
nn.functional.relu nn.functional.gelu nn.functional.softmax nn.functional.log_softmax
nn.functional.conv2d nn.functional.linear nn.functional.cross_entropy nn.functional.mse_loss
nn.functional.dropout nn.functional.interpolate nn.functional.pad nn.functional.one_hot
nn.init.xavier_uniform_ nn.init.kaiming_normal_ nn.init.zeros_
nn.utils.clip_grad_norm_ nn.utils.rnn.pad_sequence nn.utils.rnn.PackedSequence
optim.SGD optim.Adam optim.AdamW optim.RMSprop optim.Adagrad optim.Optimizer
optim.lr_scheduler.StepLR optim.lr_scheduler.CosineAnnealingLR optim.lr_scheduler.LambdaLR
optim.lr_scheduler.OneCycleLR optim.lr_scheduler.ReduceLROnPlateau optim.lr_scheduler.LRScheduler
utils.data.DataLoader utils.data.Dataset utils.data.TensorDataset utils.data.random_split
utils.data.Subset utils.data.RandomSampler utils.data.SequentialSampler utils.data.BatchSampler
utils.data.default_collate
distributions.Normal distributions.Categorical distributions.Bernoulli distributions.Uniform
distributions.Distribution distributions.kl_divergence
autograd.grad autograd.Function linalg.norm linalg.inv special.erf
""".split()

NAMES = {}
for _name in SAMPLE:
    NAMES.setdefault(_name, None)

CHILD = """
import json, sys
import torch
out = {}
for name in json.loads(sys.argv[1]):
    obj = torch
    for part in name.split("."):
        obj = getattr(obj, part)
    out[name] = obj.__module__
print(json.dumps(out))
"""


def _ember_run(tmp_path: Path, code: str, *args: str) -> str:
    script = tmp_path / "script.py"
    script.write_text(textwrap.dedent(code))
    out = subprocess.run([sys.executable, "-m", "ember", "run", str(script), *args],
                         capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout


def test_ember_run_reports_pytorchs_module_names(tmp_path):
    torch = pytest.importorskip("torch")
    want = {}
    for name in NAMES:
        obj = torch
        for part in name.split("."):
            obj = getattr(obj, part)
        want[name] = obj.__module__
    assert want["optim.SGD"] == "torch.optim.sgd" and want["Tensor"] == "torch"
    got = json.loads(_ember_run(tmp_path, CHILD, json.dumps(list(NAMES))))
    # PyTorch's C functions report its private extension modules (torch._C._nn): ember keeps
    # its own names there, as a pickle by name must find the object again
    checked = [n for n in NAMES if not want[n].startswith("torch._C")]
    assert len(checked) > 100
    wrong = [f"torch.{n}: {got[n]} (PyTorch {want[n]})" for n in checked if got[n] != want[n]]
    assert not wrong, "\n".join(wrong)


def test_ember_run_prints_types_as_pytorch(tmp_path):
    out = _ember_run(tmp_path, """
        import inspect, typing
        import torch
        print(repr(torch.Tensor))
        print(type(torch.nn.Linear(2, 3)))
        print(inspect.getmodule(torch.nn.Linear).__name__)
        print(typing.get_type_hints(torch.nn.Linear.forward)["input"])
        print(inspect.signature(torch.nn.functional.relu))
        print(torch.__spec__.name)
    """).splitlines()
    assert out[0] == "<class 'torch.Tensor'>"
    assert out[1] == "<class 'torch.nn.modules.linear.Linear'>"
    assert out[2] == "ember.nn.modules.linear"  # the module that defines it is still found
    assert out[3] == "<class 'torch.Tensor'>"
    assert out[4].startswith("(input: 'Tensor'") or out[4].startswith("(input")
    assert out[5] == "ember"


def test_pickling_under_ember_run_round_trips(tmp_path):
    out = _ember_run(tmp_path, """
        import dataclasses, io, pickle
        import torch

        class Net(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = torch.nn.Linear(3, 2)
                self.act = torch.nn.GELU()

            def forward(self, x):
                return self.act(self.fc(x))

        @dataclasses.dataclass
        class Cfg:
            layer: type = torch.nn.Linear
            width: int = 4

        torch.manual_seed(0)
        net = Net()
        x = torch.randn(4, 3)
        for obj in (net, torch.nn.Linear, torch.add, torch.nn.functional.relu, Cfg()):
            back = pickle.loads(pickle.dumps(obj))
            assert type(back) is type(obj) or back is obj, obj
        back = pickle.loads(pickle.dumps(net))
        assert torch.equal(back(x), net(x))
        opt = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
        net(x).sum().backward()
        opt.step()
        opt2 = pickle.loads(pickle.dumps(opt))
        assert type(opt2) is torch.optim.SGD and opt2.param_groups[0]["momentum"] == 0.9
        sched = torch.optim.lr_scheduler.StepLR(opt, 2)
        assert type(pickle.loads(pickle.dumps(sched))) is torch.optim.lr_scheduler.StepLR
        d = pickle.loads(pickle.dumps(torch.distributions.Normal(torch.zeros(2), torch.ones(2))))
        assert type(d) is torch.distributions.Normal
        buf = io.BytesIO()
        torch.save(net, buf)
        buf.seek(0)
        back = torch.load(buf, weights_only=False)
        assert type(back) is Net and torch.equal(back(x), net(x))
        buf = io.BytesIO()
        torch.save({"model": net.state_dict(), "opt": opt.state_dict()}, buf)
        buf.seek(0)
        state = torch.load(buf)
        assert type(state["model"]["fc.weight"]) is torch.Tensor
        opt.load_state_dict(state["opt"])
        print(pickle.dumps(torch.nn.Linear, protocol=2)[:40])
        print("ok")
    """).splitlines()
    assert out[-1] == "ok"
    assert b"torch.nn.modules.linear" in eval(out[-2])


def test_pickles_from_ember_run_load_in_pytorch(tmp_path):
    torch = pytest.importorskip("torch")
    f = tmp_path / "m.pt"
    _ember_run(tmp_path, """
        import sys
        import torch
        torch.manual_seed(0)
        m = torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.ReLU())
        torch.save(m, sys.argv[1])
    """, str(f))
    m = torch.load(f, weights_only=False)
    assert type(m[0]) is torch.nn.Linear and type(m[1]) is torch.nn.ReLU


def test_plain_import_keeps_embers_names():
    import ember

    assert ember.optim.SGD.__module__ == "ember.optim.sgd"
    assert ember.Tensor.__module__.startswith("ember")
    assert ember.nn.Linear.__module__ == "ember.nn.modules.linear"
    assert ember.nn.functional.relu.__module__.startswith("ember")


def test_uninstall_restores_embers_names():
    code = """
import ember
from ember import _alias
_alias.install()
import torch, torch.nn, torch.optim
a = (torch.optim.SGD.__module__, torch.Tensor.__module__, torch.nn.LazyLinear.__module__)
_alias.uninstall()
import ember.nn.modules.linear as lin
from ember._missing import ember_module
print(a, ember.optim.SGD.__module__, ember.Tensor.__module__, lin.LazyLinear.__module__,
      len(ember_module))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == ("('torch.optim.sgd', 'torch', 'torch.nn.modules.linear') "
                                  "ember.optim.sgd ember._tensor ember.nn.modules.linear 0")


def test_the_list_is_current():
    """Every listed name is where the list says, and names the module PyTorch's object has."""
    torch = pytest.importorskip("torch")
    import importlib

    listed = (ROOT / "src" / "ember" / "_torch_modules.txt").read_text().splitlines()
    rows = [line.split() for line in listed if line and not line.startswith("#")]
    assert len(rows) > 900
    torch_mods = {m for _, _, m in rows}
    assert all(m == "torch" or m.startswith("torch.") for m in torch_mods)
    for name in ("optim.SGD", "nn.Linear", "Tensor", "nn.functional.relu"):
        eo = importlib.import_module("ember")
        to = torch
        for part in name.split("."):
            eo, to = getattr(eo, part), getattr(to, part)
        assert [eo.__module__, eo.__qualname__, to.__module__] in rows, name
