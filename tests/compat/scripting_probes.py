"""How libraries probe what the compilers take: try torch.jit.script on their layers and helpers
and fall back when TorchScript refuses (by exception class), and ask torch._dynamo.explain how
many graphs and graph breaks a model has. Written for ember's compatibility corpus."""
import warnings

import torch
import torch._dynamo as dynamo
from torch import nn


def gelu_tanh(x):
    return 0.5 * x * (1.0 + torch.tanh(0.7978845608 * (x + 0.044715 * x * x * x)))


def flexible(x, **kwargs):
    return x * kwargs.get("scale", 1.0)


def guarded(x, eps: float = 1e-5):
    try:
        return x / (x.norm() + eps)
    except RuntimeError:
        return x


def untyped_dim(x, dim=1):
    return x.softmax(dim)


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        return gelu_tanh(self.fc(x))


class VarArgs(nn.Module):
    def forward(self, *xs):
        return sum(xs)


def maybe_script(fn):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            torch.jit.script(fn)
            return "scripted"
        except (torch.jit.frontend.NotSupportedError, RuntimeError, OSError) as e:
            return f"eager ({type(e).__name__})"


def step_with_break(x):
    y = x.relu()
    scale = float(y.mean().item())
    return (y * scale).sum()


def branchy(x):
    y = x.sin()
    if y.sum() > 0:
        return y.cos()
    return y


if __name__ == "__main__":
    for fn in (gelu_tanh, flexible, guarded, untyped_dim, Block(), VarArgs(), nn.Sequential(Block(), nn.ReLU())):
        print(getattr(fn, "__name__", type(fn).__name__), "->", maybe_script(fn))
    x = torch.linspace(-1, 1, 8).reshape(2, 4)
    for fn in (gelu_tanh, step_with_break, branchy, Block()):
        e = dynamo.explain(fn)(x)
        print(getattr(fn, "__name__", type(fn).__name__), "graphs", e.graph_count, "breaks", e.graph_break_count,
              [r.reason.splitlines()[0] for r in e.break_reasons])
    print("Block output", tuple(Block()(x).shape))
