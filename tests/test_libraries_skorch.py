"""What skorch 1.4's own tests read of torch beyond the public API, compared with the installed
PyTorch (issue 33, docs/libraries/skorch.md): a parameter pickles through
``torch.storage._load_from_bytes`` (skorch's unpickler intercepts it to call ``torch.load`` with
its own arguments), and a compiled module has ``dynamo_ctx``."""

from __future__ import annotations

import io
import pickle
import subprocess
import sys

import pytest

import ember

torch = pytest.importorskip("torch")

# skorch's _TorchLoadUnpickler, as a script that runs on either engine
_INTERCEPT = """
import io, pickle, sys
import torch
calls = []
class Unpickler(pickle.Unpickler):
    def find_class(self, module, name):
        if (module, name) == ("torch.storage", "_load_from_bytes"):
            def load(b):
                calls.append(1)
                return torch.load(io.BytesIO(b), map_location="cpu", weights_only=True)
            return load
        return super().find_class(module, name)
torch.manual_seed(0)
net = torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.Linear(2, 1))
net[1].weight.requires_grad_(False)
back = Unpickler(io.BytesIO(pickle.dumps(net))).load()
print(len(calls), [type(p).__name__ for p in back.parameters()],
      [p.requires_grad for p in back.parameters()],
      all(torch.equal(a, b) for a, b in zip(net.parameters(), back.parameters())),
      back[0].weight.dtype)
"""


def _run(*argv: str) -> str:
    out = subprocess.run([sys.executable, *argv, "-c", _INTERCEPT], capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout.strip()


def test_parameters_pickle_through_load_from_bytes_as_pytorch():
    """Under ``ember run`` the stream names torch.storage._load_from_bytes once per parameter,
    as PyTorch's does, so skorch's unpickler loads them with its torch.load arguments."""
    assert _run("-m", "ember", "run") == _run() == (
        "4 ['Parameter', 'Parameter', 'Parameter', 'Parameter'] [True, True, False, True] "
        "True torch.float32")


def test_parameter_pickle_round_trip_and_old_pickles():
    p = ember.nn.Parameter(ember.arange(6, dtype=ember.float64).reshape(2, 3),
                           requires_grad=False)
    back = pickle.loads(pickle.dumps(p))
    assert type(back) is ember.nn.Parameter and back.dtype == ember.float64
    assert not back.requires_grad and ember.equal(back, p)
    b = pickle.dumps(ember.nn.Parameter(ember.ones(2)))
    assert b"_load_from_bytes" in b  # ember.storage's, outside `ember run`
    # a pickle written before (the array itself) still loads
    from ember.nn.parameter import _rebuild_parameter

    old = _rebuild_parameter(ember.ones(2).numpy(), True)
    assert type(old) is ember.nn.Parameter and old.requires_grad and old.dtype == ember.float32


def test_load_from_bytes_reads_torch_save_bytes_both_ways():
    """Its argument is torch.save's bytes, as PyTorch's own (which reads ember's too)."""
    buf = io.BytesIO()
    torch.save(torch.arange(3.0), buf)
    t = ember.storage._load_from_bytes(buf.getvalue())
    assert t.tolist() == [0.0, 1.0, 2.0] and t.dtype == ember.float32
    buf = io.BytesIO()
    ember.save(ember.arange(3.0), buf)
    assert torch.storage._load_from_bytes(buf.getvalue()).tolist() == [0.0, 1.0, 2.0]


@pytest.mark.parametrize("fullgraph", [False, True])
def test_compiled_module_has_dynamo_ctx(fullgraph):
    """skorch tells a compiled module by ``hasattr(module, 'dynamo_ctx')``; like PyTorch's, it
    is a decorator with the compile call's settings and refuses to be a context manager."""
    for m in (ember, torch):
        for mod in (m.nn.Linear(2, 2), m.nn.MSELoss()):
            c = m.compile(mod, fullgraph=fullgraph)
            assert hasattr(c, "dynamo_ctx") and "dynamo_ctx" in c.__dict__
            assert not hasattr(mod, "dynamo_ctx")
        ctx = c.dynamo_ctx
        assert ctx.fullgraph is fullgraph
        assert ctx(lambda x: x * 2)(m.ones(2)).tolist() == [2.0, 2.0]
        with pytest.raises(RuntimeError, match="context manager"), ctx:
            pass
    assert not hasattr(ember.compile(lambda x: x), "dynamo_ctx")
