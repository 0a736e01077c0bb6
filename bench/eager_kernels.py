"""Per-op times of the eager kernels (ember._kernels) against the NumPy formulas they replace
and against PyTorch: ``python -m bench.eager_kernels [--repeat N] [--threads N] [--only a,b]
[--uniform] [--engine ember|torch]`` (uniform [0, 1) inputs; one engine per process).

``--threads`` threads (default 1; ``set_num_threads`` for both: PyTorch's pool, NumPy's BLAS and
the kernels' pool), 4M-element vectors and 1024 x 4096 rows of normal inputs (cross_entropy:
1024 x 4096 logits, random class indices; the optimizers (AdamW, SGD momentum, RMSprop plain
and with momentum and centered): one step over 8M float32 parameters, two in the f+b column;
batch_norm: BatchNorm2d(64) on 32 x 64 x 56 x 56, training and evaluation; group_norm:
GroupNorm(32, 256) on 16 x 256 x 32 x 32; embedding: a 10000 x 512 table looked up at 32 x 512
token indices; conv2d: 64 -> 64 3x3, padding 1, on 32 x 64 x 56 x 56, and "conv2d 16" on 16
images, both gradients; attention: causal ``scaled_dot_product_attention`` of one (16, 4, 64,
32) tensor as query, key and value, the benchmark GPT's shape), forward under ``no_grad`` and forward+backward, best of ``--repeat`` runs in ms. The kernels are switched off and on in this process (``_kernels_loader.disabled()``),
so both columns see the same machine state. ``--cpu`` times this thread's CPU time instead of the
wall clock (steadier on a shared, busy machine), ``--process`` the process's (every thread's).
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import numpy as np

import ember
from ember import _kernels_loader as L

ONLY: list[str] = []
TARGET = np.random.default_rng(1).integers(0, 4096, 1024)
EMB_IDX = ember.tensor(np.random.default_rng(2).integers(0, 10000, (32, 512)))  # 16K tokens


def torch_idx(m: Any) -> Any:
    return m.tensor(EMB_IDX.numpy())


def _opt_step(m: Any, name: str, **kw: Any) -> Any:
    """An optimizer step over the parameter the first call gets (8M float32); "forward" is
    the step, "forward+backward" two steps."""
    state: dict[str, Any] = {}

    def step(t: Any) -> Any:
        if "opt" not in state:
            p = m.nn.Parameter(t.detach().clone())
            p.grad = m.ones_like(p) * 1e-3
            state["opt"] = getattr(m.optim, name)([p], **kw)
            state["opt"].step()
        state["opt"].step()
        return _Done(state["opt"])
    return step


class _Done:
    def __init__(self, opt: Any) -> None:
        self.opt = opt

    def backward(self, g: Any) -> None:
        self.opt.step()


def _cases(m: Any) -> dict[str, tuple[Any, str]]:
    cases = _all_cases(m)
    return {k: v for k, v in cases.items() if not ONLY or k in ONLY}


def _all_cases(m: Any) -> dict[str, tuple[Any, str]]:
    F = m.nn.functional
    w, b = m.ones(4096), m.zeros(4096)
    cw, cb, rm, rv = m.ones(64), m.zeros(64), m.zeros(64), m.ones(64)  # BatchNorm2d(64)
    gw, gb = m.ones(256), m.zeros(256)  # GroupNorm(32, 256)
    m.manual_seed(0)
    cw3 = m.randn(64, 64, 3, 3, requires_grad=True)  # conv2d 64 -> 64 3x3 (its grad accumulates)
    return {
        "exp": (m.exp, "v"), "erf": (m.erf, "v"), "erfc": (m.erfc, "v"),
        "gelu": (F.gelu, "v"), "gelu tanh": (lambda t: F.gelu(t, approximate="tanh"), "v"),
        "sigmoid": (m.sigmoid, "v"), "tanh": (m.tanh, "v"), "silu": (F.silu, "v"),
        "mish": (F.mish, "v"), "softplus": (F.softplus, "v"), "elu": (F.elu, "v"),
        "selu": (F.selu, "v"), "logsigmoid": (F.logsigmoid, "v"),
        "softmax(-1)": (lambda t: m.softmax(t, -1), "r"),
        "log_softmax(-1)": (lambda t: m.log_softmax(t, -1), "r"),
        "layer_norm": (lambda t: F.layer_norm(t, (4096,), w, b), "r"),
        "rms_norm": (lambda t: F.rms_norm(t, (4096,), w, 1e-6), "r"),
        "cross_entropy": (lambda t: F.cross_entropy(t, m.tensor(TARGET)), "r"),
        "batch_norm train": (lambda t: F.batch_norm(t, rm, rv, cw, cb, training=True), "bn"),
        "batch_norm eval": (lambda t: F.batch_norm(t, rm, rv, cw, cb), "bn"),
        "group_norm": (lambda t: F.group_norm(t, 32, gw, gb), "gn"),
        "conv2d": (lambda t: F.conv2d(t, cw3, None, 1, 1), "bn"),
        "conv2d 16": (lambda t: F.conv2d(t, cw3, None, 1, 1), "cv"),
        "embedding": (lambda t: F.embedding(EMB_IDX if m is ember else torch_idx(m), t), "emb"),
        "AdamW.step": (_opt_step(m, "AdamW", lr=1e-3, weight_decay=0.01), "p"),
        "SGD momentum.step": (_opt_step(m, "SGD", lr=0.1, momentum=0.9), "p"),
        "RMSprop.step": (_opt_step(m, "RMSprop", lr=1e-3), "p"),
        "RMSprop mom+ctr": (_opt_step(m, "RMSprop", lr=1e-3, momentum=0.9, centered=True), "p"),
        "erfinv": (m.erfinv, "u"),  # (uniform in (-0.999, 0.999), its domain, either way)
        "attention": (lambda t: F.scaled_dot_product_attention(t, t, t, is_causal=True), "at"),
    }


CLOCK = time.perf_counter


def _time(fn: Any, repeat: int) -> float:
    fn()
    best = float("inf")
    for _ in range(repeat):
        t0 = CLOCK()
        fn()
        best = min(best, CLOCK() - t0)
    return best * 1e3


def measure(m: Any, arrays: dict[str, np.ndarray], repeat: int) -> dict[str, tuple[float, float]]:
    out = {}
    for name, (fn, kind) in _cases(m).items():
        x = m.tensor(arrays[kind])
        xg = m.tensor(arrays[kind], requires_grad=kind != "p")
        g = m.ones_like(x) if kind != "emb" else m.ones(32, 512, 512)  # (the output's shape)

        def fwd(fn=fn, x=x) -> None:
            with m.no_grad():
                fn(x)

        def fb(fn=fn, xg=xg, g=g, kind=kind) -> None:
            y = fn(xg)
            y.backward(g if kind != "r" or y.ndim else None)
            xg.grad = None

        out[name] = (_time(fwd, repeat), _time(fb, repeat))
    return out


def amp_mlp(m: Any, repeat: int) -> dict[str, float]:
    """The issue's MLP step (1024-2048-1024-10, batch 256, AdamW) in float32 and under
    ``autocast("cpu", dtype=bfloat16)`` (ember: with the kernels off and on), best of
    ``repeat`` interleaved rounds, ms."""
    from bench.autocast_mlp import make_step

    step = make_step(m)

    def off() -> None:
        with L.disabled():
            step(True)
    cases = {"float32": lambda: step(False), "bf16 autocast": lambda: step(True)}
    if m is ember:
        cases["bf16, kernels off"] = off
    best = {k: float("inf") for k in cases}
    for f in cases.values():
        f()
    for _ in range(repeat):
        for k, f in cases.items():
            t0 = CLOCK()
            f()
            best[k] = min(best[k], (CLOCK() - t0) * 1e3)
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--cpu", action="store_true", help="time this thread's CPU time")
    ap.add_argument("--process", action="store_true",
                    help="time the process's CPU time (every thread's: the kernels' pool too)")
    ap.add_argument("--threads", type=int, default=1, help="threads (ember's and PyTorch's)")
    ap.add_argument("--only", default="", help="comma-separated op names (default: all)")
    ap.add_argument("--uniform", action="store_true",
                    help="uniform [0, 1) inputs instead of normal ones (the issue's first table)")
    ap.add_argument("--engine", choices=("both", "ember", "torch"), default="both",
                    help="time only ember (both columns) or only PyTorch: run each in its own "
                         "process, as docs/benchmarks.md's tables do")
    ap.add_argument("--amp-mlp", action="store_true",
                    help="time the MLP step in float32 and under bfloat16 autocast instead")
    args = ap.parse_args()
    global CLOCK
    ONLY[:] = [n.strip() for n in args.only.split(",") if n.strip()]
    if args.cpu:
        CLOCK = time.thread_time
    if args.process:
        CLOCK = time.process_time
    ember.set_num_threads(args.threads)
    if args.amp_mlp:
        print(L.describe())
        print("ember  ", "  ".join(f"{k} {v:.1f}" for k, v in amp_mlp(ember, args.repeat).items()))
        try:
            import torch
        except ImportError:
            return
        torch.set_num_threads(args.threads)
        print("PyTorch", "  ".join(f"{k} {v:.1f}" for k, v in amp_mlp(torch, args.repeat).items()))
        return
    rng = np.random.default_rng(0)
    draw = rng.random if args.uniform else rng.standard_normal
    arrays = {"v": draw(4 << 20).astype(np.float32),
              "r": rng.standard_normal((1024, 4096)).astype(np.float32),
              "p": rng.standard_normal(8 << 20).astype(np.float32),
              "bn": rng.standard_normal((32, 64, 56, 56)).astype(np.float32),
              "gn": rng.standard_normal((16, 256, 32, 32)).astype(np.float32),
              "cv": rng.standard_normal((16, 64, 56, 56)).astype(np.float32),
              "emb": rng.standard_normal((10000, 512)).astype(np.float32),
              "u": ((rng.random(4 << 20) * 2 - 1) * 0.999).astype(np.float32),
              "at": rng.standard_normal((16, 4, 64, 32)).astype(np.float32)}
    print(L.describe())
    before, after, ref = {}, {}, {}
    if args.engine != "torch":
        with L.disabled():
            before = measure(ember, arrays, args.repeat)
        after = measure(ember, arrays, args.repeat)
    try:
        if args.engine != "ember":
            import torch

            torch.set_num_threads(args.threads)
            ref = measure(torch, arrays, args.repeat)
    except ImportError:
        pass
    print(f"{'op':16s} {'fwd: numpy':>11s} {'kernel':>7s} {'torch':>7s}   "
          f"{'f+b: numpy':>11s} {'kernel':>7s} {'torch':>7s}  (ms)")
    nan2 = (float("nan"),) * 2
    for name in before or ref:
        (f0, b0), (f1, b1) = before.get(name, nan2), after.get(name, nan2)
        ft, bt = ref.get(name, nan2)
        print(f"{name:16s} {f0:11.2f} {f1:7.2f} {ft:7.2f}   {b0:11.2f} {b1:7.2f} {bt:7.2f}")


if __name__ == "__main__":
    main()
