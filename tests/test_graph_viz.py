"""Issue 31, "a graph they can see": what graph tools read from a recorded graph is PyTorch's.

torchviz's ``make_dot`` walks ``grad_fn.next_functions``, names nodes ``type(fn).__name__``,
reads ``variable`` on ``AccumulateGrad``, ``_saved_*`` fields (through ``dir``), probes
``saved_tensors`` with ``hasattr`` and asks ``Tensor._is_view()``; torchinfo uses module hooks.
The walk below reads the same things on ember and on PyTorch for an MLP, a CNN and a
nanoGPT-style transformer block with the same weights and compares them; when torchviz and
torchinfo are installed, their outputs are compared directly (run under the ``torch`` alias).
"""

from __future__ import annotations

import re
import sys
from typing import Any

import numpy as np
import pytest

import ember

try:
    import torch
except ImportError:  # pragma: no cover - CI installs torch
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed")


def _models(m: Any) -> dict:
    nn, F = m.nn, m.nn.functional

    class MLP(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc1, self.fc2 = nn.Linear(8, 16), nn.Linear(16, 4)

        def forward(self, x: Any) -> Any:
            return self.fc2(F.relu(self.fc1(x)))

    class CNN(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv1 = nn.Conv2d(1, 4, 3, padding=1)
            self.bn = nn.BatchNorm2d(4)
            self.conv2 = nn.Conv2d(4, 8, 3)
            self.pool = nn.MaxPool2d(2)
            self.fc = nn.Linear(32, 10)

        def forward(self, x: Any) -> Any:
            x = self.pool(F.relu(self.bn(self.conv1(x))))
            return self.fc(m.flatten(F.relu(self.conv2(x)), 1))

    class Block(nn.Module):
        def __init__(self, d: int = 16, heads: int = 2) -> None:
            super().__init__()
            self.heads = heads
            self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
            self.fc, self.out = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

        def forward(self, x: Any) -> Any:
            b, t, d = x.shape
            q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
            q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2)
                       for z in (q, k, v))
            a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.proj(a.transpose(1, 2).contiguous().view(b, t, d))
            return x + self.out(F.gelu(self.fc(self.ln2(x))))

    return {"mlp": (MLP, (2, 8)), "cnn": (CNN, (2, 1, 8, 8)), "block": (Block, (2, 5, 16))}


def _pair(name: str) -> tuple:
    """(ember output, its model, torch output, its model): same weights, same input."""
    ember.manual_seed(0)
    cls, shape = _models(ember)[name]
    em = cls()
    x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    tcls, _ = _models(torch)[name]
    tm = tcls()
    tm.load_state_dict({k: torch.tensor(v.numpy()) for k, v in em.state_dict().items()})
    return em(ember.tensor(x)), em, tm(torch.tensor(x)), tm


def _shown(v: Any, is_tensor: Any) -> Any:
    if is_tensor(v):
        return ("tensor", tuple(v.shape), str(v.dtype).rsplit(".", 1)[-1])
    if isinstance(v, tuple) and any(is_tensor(t) for t in v):
        return tuple(_shown(t, is_tensor) for t in v)
    return v if v is None or isinstance(v, (bool, int, float, str, tuple)) else repr(v)


def _walk(y: Any, is_tensor: Any) -> list:
    """Every node breadth-first (no recursion) as (name, edges as node numbers, what
    ``variable`` is, the ``_saved_*`` fields and their values, hasattr saved_tensors)."""
    ids: dict = {}
    out = []
    todo = [y.grad_fn]
    while todo:
        fn = todo.pop(0)
        if fn is None or id(fn) in ids:
            continue
        ids[id(fn)] = len(ids)
        out.append(fn)
        todo.extend(u for u, _ in fn.next_functions)
    rows = []
    for fn in out:
        edges = [(None if u is None else ids[id(u)], i) for u, i in fn.next_functions]
        var = tuple(fn.variable.shape) if hasattr(fn, "variable") else None
        saved = {a: _shown(getattr(fn, a), is_tensor) for a in dir(fn)
                 if a.startswith("_saved_")}
        rows.append((type(fn).__name__, edges, var, saved, hasattr(fn, "saved_tensors")))
    return rows


@needs_torch
@pytest.mark.parametrize("name", ["mlp", "cnn", "block"])
def test_graph_walk_matches_torch(name):
    ye, _, yt, _ = _pair(name)
    got, want = _walk(ye, ember.is_tensor), _walk(yt, torch.is_tensor)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g == w


@needs_torch
def test_accumulate_grad_variable_is_the_parameter():
    ye, em, yt, tm = _pair("mlp")
    acc = ye.grad_fn.next_functions[0][0]
    assert type(acc).__name__ == "AccumulateGrad" and acc.variable is em.fc2.bias
    assert tm.fc2.bias is yt.grad_fn.next_functions[0][0].variable
    t_node = ye.grad_fn.next_functions[2][0]  # linear's weight goes through TBackward0 as there
    assert type(t_node).__name__ == "TBackward0"
    assert t_node.next_functions[0][0].variable is em.fc2.weight
    assert ye.grad_fn.next_functions[2][0] is t_node  # the same node on every read


@needs_torch
def test_saved_fields_are_freed_by_backward_as_in_torch():
    for m in (ember, torch):
        x = m.ones(3, requires_grad=True)
        y = m.relu(x * 2)
        assert "_saved_result" in dir(y.grad_fn) and "saved_tensors" not in dir(y.grad_fn)
        assert tuple(y.grad_fn._saved_result.shape) == (3,)
        assert not hasattr(y.grad_fn, "saved_tensors")
        y.sum().backward()
        with pytest.raises(RuntimeError, match="backward through the graph a second time"):
            y.grad_fn._saved_result  # noqa: B018


def test_custom_function_keeps_saved_tensors():
    class Exp(ember.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            y = x.exp()
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, g):
            (y,) = ctx.saved_tensors
            return g * y

    y = Exp.apply(ember.ones(2, requires_grad=True))
    assert hasattr(y.grad_fn, "saved_tensors") and len(y.grad_fn.saved_tensors) == 1


def test_ember_bookkeeping_is_not_shown_as_a_saved_field():
    y = ember.ones(2, requires_grad=True).exp()
    assert "_saved_src" not in dir(y.grad_fn)
    assert all(not a.startswith("_saved_") for a in dir(y.grad_fn.next_functions[0][0]))


@needs_torch
def test_is_view_as_torch():
    for m in (ember, torch):
        x = m.ones(2, 3)
        assert not x._is_view() and x.t()._is_view() and x.view(6)._is_view()
        assert not (x + 1)._is_view()


@needs_torch
def test_attention_output_follows_the_querys_layout_as_torch():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((2, 5, 48)).astype(np.float32)
    strides = []
    for m in (ember, torch):
        q, k, v = m.tensor(a, requires_grad=True).split(16, dim=2)
        q, k, v = (z.view(2, 5, 2, 8).transpose(1, 2) for z in (q, k, v))
        o = m.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        strides.append(o.stride())
        assert o.transpose(1, 2).is_contiguous()
    assert strides[0] == strides[1]


# ---------------------------------------------------------------------------------------------
# the tools themselves, when installed: run under the ``torch`` alias and compared with torch

_PROGRAM = """
import re, sys
import torch
{models}
from torchviz import make_dot
import torchinfo
name = sys.argv[1]
cls, shape = MODELS[name]
torch.manual_seed(0)
model = cls()
y = model(torch.randn(*shape))
ids = {{}}
norm = lambda s: re.sub(r"\\b\\d{{6,}}\\b", lambda m: ids.setdefault(m.group(0), f"n{{len(ids)}}"), s)
print(norm(make_dot(y, params=dict(model.named_parameters())).source))
print(norm(make_dot(y, params=dict(model.named_parameters()), show_attrs=True,
                    show_saved=True).source))
print(torchinfo.summary(model, input_size=shape, verbose=0))
"""


def _tools_installed() -> bool:
    try:
        import torchinfo  # noqa: F401
        import torchviz  # noqa: F401
    except Exception:  # noqa: BLE001 - torchviz's import needs torch (and distutils)
        return False
    return True


@needs_torch
@pytest.mark.skipif(not _tools_installed(), reason="torchviz and torchinfo are not installed")
@pytest.mark.parametrize("name", ["mlp", "cnn", "block"])
def test_make_dot_and_summary_print_the_same(tmp_path, name):
    import inspect
    import subprocess

    src = inspect.getsource(_models).replace("def _models(m: Any) -> dict:", "def _models(m):")
    models = ("from typing import Any\nimport torch as _m\n" + src + "\nMODELS = _models(_m)\n")
    prog = tmp_path / "viz.py"
    prog.write_text(_PROGRAM.format(models=models))
    outs = []
    for cmd in ([sys.executable, str(prog), name],
                [sys.executable, "-m", "ember", "run", str(prog), name]):
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr[-3000:]
        outs.append(r.stdout)
    assert outs[0] == outs[1]
    assert re.search(r"AddmmBackward0", outs[0])
