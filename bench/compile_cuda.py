"""torch.compile on CUDA: the fused groups as CuPy kernels against eager ember and PyTorch.

    python -m bench.compile_cuda [--fake] [--quick] [--repeat R]

On a machine with CuPy and an NVIDIA GPU (``scripts/gpu_check.sh`` runs it there). Per
workload, ms per call (CUDA events around ``--iters`` calls after warm-up, best of
``--repeat``): ember eager, ember compiled (kernels on: ``ember._compile.config.native``),
ember compiled with the kernels off (the op-by-op replay), and where PyTorch with CUDA is
importable, PyTorch eager on the same GPU. The workloads are written as public programs write
them: an elementwise chain (a scaled ReLU residual, squared: seven ops), the tanh GELU written
out (``0.5 * x * (1 + tanh(...))``, two kernels around CuPy's tanh), both forward and
backward on 16M floats, and an MLP training step (1024-4096-4096-10, batch 512, AdamW).

``--fake`` runs the same code on fake CUDA (NumPy on the host: a smoke test of the script;
its numbers are the CPU's). Each line is JSON.
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

import ember
from ember._compile import config


def chain(x: ember.Tensor, w: ember.Tensor) -> ember.Tensor:
    y = (x * w + 1.0).relu() * 2 - x
    return y * y / 3


def gelu_tanh(x: ember.Tensor, w: ember.Tensor) -> ember.Tensor:
    return 0.5 * x * (1.0 + (0.7978845608 * (x + 0.044715 * x * x * x)).tanh())


class _Timer:
    """CUDA events on a GPU; the host clock after a synchronize otherwise (fake CUDA)."""

    def __init__(self) -> None:
        self.sync = ember.cuda.synchronize

    def __call__(self, fn: Any, iters: int, repeat: int) -> float:
        best = float("inf")
        for _ in range(repeat):
            self.sync()
            t0 = time.perf_counter()
            for _ in range(iters):
                fn()
            self.sync()
            best = min(best, (time.perf_counter() - t0) / iters)
        return best * 1e3


def _elementwise(fn: Any, n: int, mode: str, timer: _Timer, a: argparse.Namespace,
                 torch: Any = None) -> float:
    if mode == "torch":
        x = torch.randn(n, device="cuda", requires_grad=True)
        w = torch.randn(n, device="cuda")
        g = torch.ones(n, device="cuda")
        f = fn
    else:
        config.native = mode != "replay"
        ember._dynamo.reset()
        x = ember.randn(n, device="cuda", requires_grad=True)
        w = ember.randn(n, device="cuda")
        g = ember.ones(n, device="cuda")
        f = fn if mode == "eager" else ember.compile(fn)

    def step() -> None:
        x.grad = None
        f(x, w).backward(g)

    for _ in range(3):
        step()
    return timer(step, a.iters, a.repeat)


def _mlp(mode: str, timer: _Timer, a: argparse.Namespace, torch: Any = None) -> float:
    lib = torch if mode == "torch" else ember
    if mode != "torch":
        config.native = mode != "replay"
        ember._dynamo.reset()
    d, h, batch = (256, 512, 64) if a.quick else (1024, 4096, 512)
    lib.manual_seed(0)
    model = lib.nn.Sequential(lib.nn.Linear(d, h), lib.nn.ReLU(), lib.nn.Linear(h, h),
                              lib.nn.ReLU(), lib.nn.Linear(h, 10)).cuda()
    opt = lib.optim.AdamW(model.parameters(), lr=1e-3)
    x = lib.randn(batch, d, device="cuda")
    y = lib.randint(0, 10, (batch,), device="cuda")

    def loss_fn(x: Any, y: Any) -> Any:
        return lib.nn.functional.cross_entropy(model(x), y)

    f = ember.compile(loss_fn) if mode in ("compiled", "replay") else loss_fn

    def step() -> None:
        opt.zero_grad()
        f(x, y).backward()
        opt.step()

    for _ in range(3):
        step()
    return timer(step, a.iters, a.repeat)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--fake", action="store_true", help="fake CUDA (a smoke test: CPU numbers)")
    p.add_argument("--quick", action="store_true", help="small sizes, few calls")
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--iters", type=int, default=20)
    a = p.parse_args(argv)
    if a.quick:
        a.repeat, a.iters = 1, 2
    torch = None
    if a.fake:
        from ember.testing._fake_cuda import enable

        enable()
    else:
        if not ember.cuda.is_available():
            raise SystemExit("no CUDA GPU (CuPy) here: run with --fake for a smoke test")
        try:
            import torch as _torch

            torch = _torch if _torch.cuda.is_available() else None
        except ImportError:
            torch = None
    native = config.native
    device = ember.cuda.get_device_name()
    timer = _Timer()
    n = 1 << (12 if a.quick else 24)
    modes = ["eager", "compiled", "replay"] + (["torch"] if torch is not None else [])
    for name, fn in (("chain", chain), ("gelu_tanh", gelu_tanh)):
        row = {"workload": f"{name} f+b, {n} floats", "device": device}
        for mode in modes:
            row[f"{mode}_ms"] = round(_elementwise(fn, n, mode, timer, a, torch), 4)
        print(json.dumps(row), flush=True)
    row = {"workload": "mlp step", "device": device}
    for mode in modes:
        row[f"{mode}_ms"] = round(_mlp(mode, timer, a, torch), 4)
    print(json.dumps(row), flush=True)
    config.native = native


if __name__ == "__main__":
    main()
