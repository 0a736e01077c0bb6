"""torch.compile's generated C against its NumPy replay, on elementwise regions (issue 30).

    python -m bench.compile_native [REGION ...]

Three compiled regions, each with the generated C on and off (``ember._compile.config.native``)
in one process, interleaved, best of 5, CPU time of this thread per call (the machine may be
shared): an elementwise chain (mul, add, relu, div, sub, clamp, mul: one kernel), ReLU then
dropout (one kernel after the mask's draw), a tanh GELU written out (two kernels around
NumPy's tanh), and two chains that end in a reduction inside their kernel: a mean squared
error as users write it (``((x - t) ** 2).mean()``) and a row-wise dot product
(``(x * w).sum(-1)``); "train" runs forward and backward (``y.backward(ones)``, outside the
region), with the backward rules' elementwise runs fused too.
"""

from __future__ import annotations

import os
import sys
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")

import ember  # noqa: E402
from ember import nn  # noqa: E402
from ember._compile import config  # noqa: E402


def gelu(x: ember.Tensor) -> ember.Tensor:
    return 0.5 * x * (1.0 + (0.7978845608 * (x + 0.044715 * x * x * x)).tanh())


def chain(x: ember.Tensor) -> ember.Tensor:
    return ((x * 0.5 + 1.0).relu() - x / 3).clamp(-1, 1) * x


def _make(native: bool, which: str, shape: tuple, rg: bool) -> tuple:
    config.native = native
    ember.manual_seed(0)
    t, w = ember.randn(*shape), ember.randn(shape[-1])
    fn = {"relu+dropout": nn.Sequential(nn.ReLU(), nn.Dropout(0.1)), "gelu-tanh": gelu,
          "chain": chain, "mse": lambda x: ((x - t) ** 2).mean(),
          "row dot": lambda x: (x * w).sum(-1)}[which]
    f = ember.compile(fn)
    x = ember.randn(*shape, requires_grad=rg)
    for _ in range(3):
        f(x)
    comp = getattr(f, "_ember_compiled", None) or f._compiled
    assert bool(next(iter(comp.cache.values())).prog.c_source) == native
    x.grad = None
    return f, x


def _time(f: object, x: ember.Tensor, n: int) -> float:
    g = ember.ones(f(x).shape) if x.requires_grad else None
    t0 = time.thread_time()
    for _ in range(n):
        y = f(x)
        if g is not None:
            y.backward(g)
    return (time.thread_time() - t0) / n * 1e6


def main() -> None:
    print("| region | mode | shape | NumPy replay us | generated C us | speed-up |")
    print("|---|---|---|---|---|---|")
    regions = ("chain", "relu+dropout", "gelu-tanh", "mse", "row dot")
    for which in [r for r in regions if r in sys.argv[1:]] or regions:
        for rg in (False, True):
            for shape, n in (((64, 64), 3000), ((256, 1024), 200), ((2048, 2048), 10)):
                a, b = _make(False, which, shape, rg), _make(True, which, shape, rg)
                ra, rb = [], []
                for _ in range(5):
                    ra.append(_time(*a, n))
                    rb.append(_time(*b, n))
                print(f"| {which} | {'train' if rg else 'no grad'} | {shape[0]}x{shape[1]} | "
                      f"{min(ra):.1f} | {min(rb):.1f} | {min(ra) / min(rb):.2f}x |", flush=True)


if __name__ == "__main__":
    main()
