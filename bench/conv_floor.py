"""Convolution against the BLAS floor: each convolution of the ``cnn`` and ``resnet18`` workloads
timed forward and backward on ember (``F.conv2d`` with autograd, as a model runs it) next to the
GEMMs it reduces to (``bench.floor``'s im2col-sized products: forward one, backward the input's and
the weight's gradient), at the thread count of the environment. Each product is timed in both
orientations (C = A B as ``bench.floor`` writes it, and C^T = B^T A^T as ember lays it out: OpenBLAS
is up to 2x faster one way for some thin shapes) and the floor is the faster one.

``python -m bench.conv_floor [cnn] [resnet18] [--torch] [--min-time S] [--json PATH]
[--thread-time]`` prints a
table per workload (medians) and, last, a JSON line of step totals (medians, and minima as
``*_min``: the less load-sensitive figure on a busy machine). ``--torch`` also times PyTorch's ``conv2d`` in a child
process (same thread budget) for reference. Measurements are interleaved (ember forward, ember
backward, floor forward, floor backward, ...), and each figure is the median over repetitions, so
load from other processes hits all of them alike.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from dataclasses import asdict, dataclass

# isort: off
import ember  # before NumPy: OpenBLAS's idle spin as under `ember run` (src/ember/_blas_spin.py)
import numpy as np
# isort: on

from bench import floor


@dataclass(frozen=True)
class ConvSpec:
    """One convolution of a workload's training step (``count`` of this shape in the step)."""

    label: str
    n: int
    c_in: int
    hw: int  # input height = width
    c_out: int
    k: int
    stride: int = 1
    pad: int = 0
    bias: bool = False
    input_grad: bool = True
    count: int = 1

    @property
    def out(self) -> int:
        return (self.hw + 2 * self.pad - self.k) // self.stride + 1

    def gemm(self) -> floor.Gemm:
        return floor.conv2d(self.label, self.n, self.c_in, self.out, self.out, self.c_out, self.k,
                            self.input_grad)


def _resnet18(n: int = 32) -> list[ConvSpec]:
    """resnet18 on n x 3 x 32 x 32 (floor._resnet18's convolutions, alike shapes merged)."""
    return [
        ConvSpec("conv1 7x7/2", n, 3, 32, 64, 7, 2, 3, input_grad=False),
        ConvSpec("layer1 3x3 64", n, 64, 8, 64, 3, 1, 1, count=4),
        ConvSpec("layer2.0.conv1 3x3/2", n, 64, 8, 128, 3, 2, 1),
        ConvSpec("layer2 3x3 128", n, 128, 4, 128, 3, 1, 1, count=3),
        ConvSpec("layer2 downsample 1x1/2", n, 64, 8, 128, 1, 2, 0),
        ConvSpec("layer3.0.conv1 3x3/2", n, 128, 4, 256, 3, 2, 1),
        ConvSpec("layer3 3x3 256", n, 256, 2, 256, 3, 1, 1, count=3),
        ConvSpec("layer3 downsample 1x1/2", n, 128, 4, 256, 1, 2, 0),
        ConvSpec("layer4.0.conv1 3x3/2", n, 256, 2, 512, 3, 2, 1),
        ConvSpec("layer4 3x3 512", n, 512, 1, 512, 3, 1, 1, count=3),
        ConvSpec("layer4 downsample 1x1/2", n, 256, 2, 512, 1, 2, 0),
    ]


CONVS: dict[str, list[ConvSpec]] = {
    "cnn": [
        ConvSpec("conv1 5x5 1->16", 64, 1, 28, 16, 5, bias=True, input_grad=False),
        ConvSpec("conv2 5x5 16->32", 64, 16, 12, 32, 5, bias=True),
    ],
    "resnet18": _resnet18(),
}


def _floor_fns(spec: ConvSpec, transposed: bool = False) -> tuple:
    """(forward, backward) callables running the im2col-sized GEMMs into preallocated outputs;
    ``transposed``: each product as C^T = B^T A^T (ember's orientation: weight rows, im2col
    columns), which OpenBLAS runs at a different speed for some shapes."""
    prods = floor._products([spec.gemm()], np.random.default_rng(0))
    if transposed:
        prods = [(b.T, a.T, np.empty(out.T.shape, out.dtype)) for a, b, out in prods]
    fwd, bwd = prods[:1], prods[1:]
    matmul = np.matmul

    def run(ps: list) -> None:
        for a, b, out in ps:
            matmul(a, b, out=out)

    return (lambda: run(fwd)), (lambda: run(bwd))


def _engine_fns(torch: object, spec: ConvSpec) -> tuple:
    """(forward, backward) for ember or PyTorch: ``F.conv2d`` with autograd; backward runs
    ``y.backward(gy)`` on a fresh forward, gradients reset to None first (as ``zero_grad``)."""
    F = torch.nn.functional
    torch.manual_seed(0)
    x = torch.randn(spec.n, spec.c_in, spec.hw, spec.hw, requires_grad=spec.input_grad)
    w = torch.randn(spec.c_out, spec.c_in, spec.k, spec.k, requires_grad=True)
    b = torch.randn(spec.c_out, requires_grad=True) if spec.bias else None
    gy = torch.randn(spec.n, spec.c_out, spec.out, spec.out)
    state: dict = {}

    def fwd() -> None:
        state["y"] = F.conv2d(x, w, b, spec.stride, spec.pad)

    def bwd() -> None:
        x.grad = w.grad = None
        if b is not None:
            b.grad = None
        state["y"].backward(gy)

    return fwd, bwd


_CLOCK = time.perf_counter


def _time(fn) -> float:
    t0 = _CLOCK()
    fn()
    return _CLOCK() - t0


def measure(specs: list[ConvSpec], torch: object | None, include_floor: bool = True,
            min_time: float = 0.3, min_reps: int = 5, max_reps: int = 200) -> list[dict]:
    """Median ms per call of each spec: engine forward/backward and (optionally) the floor's."""
    rows = []
    for spec in specs:
        fns = {}
        if torch is not None:
            fns["fwd"], fns["bwd"] = _engine_fns(torch, spec)
        if include_floor:
            fns["floor_fwd"], fns["floor_bwd"] = _floor_fns(spec)
            fns["floorT_fwd"], fns["floorT_bwd"] = _floor_fns(spec, transposed=True)
        for _ in range(2):  # warm-up: caches, first-call costs
            for fn in fns.values():
                fn()
        times: dict[str, list[float]] = {k: [] for k in fns}
        start = time.perf_counter()
        while (len(times[next(iter(times))]) < min_reps
               or time.perf_counter() - start < min_time):
            for key, fn in fns.items():
                if key == "bwd":
                    fns["fwd"]()  # a fresh graph (untimed when it is not the forward's turn)
                times[key].append(_time(fn))
            if len(times[next(iter(times))]) >= max_reps:
                break
        row = {"spec": asdict(spec), "gflop": floor.gflop([spec.gemm()]), "reps":
               len(times[next(iter(times))])}
        row.update({k: 1e3 * statistics.median(v) for k, v in times.items()})
        row.update({f"{k}_min": 1e3 * min(v) for k, v in times.items()})
        if include_floor:  # the floor: the faster orientation of the products
            for d in ("fwd", "bwd"):
                for suffix in ("", "_min"):
                    row[f"floor_{d}{suffix}"] = min(row[f"floor_{d}{suffix}"],
                                                    row[f"floorT_{d}{suffix}"])
        rows.append(row)
    return rows


def _torch_rows(names: list[str], min_time: float) -> dict[str, list[dict]] | None:
    """PyTorch's timings, measured in a child process (its thread pool apart from NumPy's)."""
    cmd = [sys.executable, "-m", "bench.conv_floor", *names, "--engine", "torch",
           "--min-time", str(min_time)] + (["--thread-time"] if _CLOCK is time.thread_time else [])
    res = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ))
    if res.returncode != 0:
        print(f"PyTorch reference failed: {res.stderr.strip().splitlines()[-1:]}", file=sys.stderr)
        return None
    return json.loads(res.stdout.strip().splitlines()[-1])["workloads"]


def _fmt(x: float | None) -> str:
    return "-" if x is None else f"{x:.3g}" if x < 100 else f"{x:,.0f}"


def table(name: str, rows: list[dict], torch_rows: list[dict] | None) -> str:
    head = ["convolution (N, C_in, HxW -> C_out, k/stride)", "count", "floor fwd ms",
            "ember fwd ms", "ember fwd / floor", "floor bwd ms", "ember bwd ms",
            "ember bwd / floor"]
    if torch_rows:
        head += ["PyTorch fwd / floor", "PyTorch bwd / floor"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    tot = dict.fromkeys(("floor_fwd", "fwd", "floor_bwd", "bwd", "t_fwd", "t_bwd"), 0.0)
    for i, r in enumerate(rows):
        s = r["spec"]
        desc = (f"{s['label']}: {s['n']}, {s['c_in']}, {s['hw']}x{s['hw']} -> {s['c_out']}, "
                f"{s['k']}/{s['stride']}")
        c = s["count"]
        cells = [desc, str(c), _fmt(r["floor_fwd"]), _fmt(r["fwd"]),
                 f"{r['fwd'] / r['floor_fwd']:.2f}x", _fmt(r["floor_bwd"]), _fmt(r["bwd"]),
                 f"{r['bwd'] / r['floor_bwd']:.2f}x"]
        for k in ("floor_fwd", "fwd", "floor_bwd", "bwd"):
            tot[k] += c * r[k]
        if torch_rows:
            t = torch_rows[i]
            cells += [f"{t['fwd'] / r['floor_fwd']:.2f}x", f"{t['bwd'] / r['floor_bwd']:.2f}x"]
            tot["t_fwd"] += c * t["fwd"]
            tot["t_bwd"] += c * t["bwd"]
        lines.append("| " + " | ".join(cells) + " |")
    cells = [f"**{name}: all convolutions of a step**", "", _fmt(tot["floor_fwd"]),
             _fmt(tot["fwd"]), f"**{tot['fwd'] / tot['floor_fwd']:.2f}x**",
             _fmt(tot["floor_bwd"]), _fmt(tot["bwd"]), f"**{tot['bwd'] / tot['floor_bwd']:.2f}x**"]
    if torch_rows:
        cells += [f"{tot['t_fwd'] / tot['floor_fwd']:.2f}x", f"{tot['t_bwd'] / tot['floor_bwd']:.2f}x"]
    lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def totals(rows: list[dict]) -> dict:
    """Step totals (count-weighted) of the medians and of the minima, and their ratios."""
    out = {}
    for suffix in ("", "_min"):
        for k in ("floor_fwd", "fwd", "floor_bwd", "bwd"):
            out[k + suffix] = sum(r["spec"]["count"] * r[k + suffix] for r in rows)
        for k in ("fwd", "bwd"):
            out[f"{k}_over_floor{suffix}"] = out[k + suffix] / out[f"floor_{k}{suffix}"]
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.conv_floor", description=__doc__.split(
        "\n\n")[0])
    p.add_argument("names", nargs="*", help="workloads (default: all): " + ", ".join(CONVS))
    p.add_argument("--engine", choices=["ember", "torch"], default="ember")
    p.add_argument("--torch", action="store_true", help="also time PyTorch (child process)")
    p.add_argument("--min-time", type=float, default=0.3, help="seconds per convolution shape")
    p.add_argument("--json", default=None, help="write the results here too")
    p.add_argument("--thread-time", action="store_true",
                   help="time with the calling thread's CPU time rather than the wall clock "
                        "(steadier on a loaded machine; meaningful at one thread only)")
    opts = p.parse_args(argv)
    global _CLOCK
    _CLOCK = time.thread_time if opts.thread_time else time.perf_counter
    names = opts.names or list(CONVS)
    unknown = [n for n in names if n not in CONVS]
    if unknown:
        p.error(f"unknown workload(s) {', '.join(unknown)}; choose from {', '.join(CONVS)}")
    if opts.engine == "torch":
        import torch

        res = {n: measure(CONVS[n], torch, include_floor=False, min_time=opts.min_time)
               for n in names}
        print(json.dumps({"engine": "torch", "workloads": res}))
        return 0

    threads = os.environ.get("OPENBLAS_NUM_THREADS") or os.environ.get("OMP_NUM_THREADS")
    res = {n: measure(CONVS[n], ember, min_time=opts.min_time) for n in names}
    ref = _torch_rows(names, opts.min_time) if opts.torch else None
    print(f"threads (OPENBLAS_NUM_THREADS / OMP_NUM_THREADS): {threads or 'unset'}; load "
          f"average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    for n in names:
        print(f"\n{n}\n\n{table(n, res[n], ref[n] if ref else None)}")
    out = {"threads": threads, "workloads": res, "torch": ref,
           "totals": {n: totals(res[n]) for n in names}}
    if opts.json:
        with open(opts.json, "w") as f:
            json.dump(out, f, indent=1)
    print(json.dumps({n: {k: round(v, 3) for k, v in t.items()}
                      for n, t in out["totals"].items()}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
