"""Thread scaling of single ops, ember against PyTorch: ``python -m bench.threads [--threads 1,2]
[--repeat N] [--only a,b] [--sweep]``.

Each (engine, thread count) runs in its own process (``set_num_threads(n)`` there: PyTorch's
pool; ember's kernels' pool, NumPy's BLAS and the pool that splits large NumPy calls). Rows:
4M-element float32 vectors (add, ``x * y + x``, exp, tanh, GELU, masked_fill with a random mask)
and 1024 x 4096 rows (softmax(-1), layer_norm over 4096, sum), uniform [0, 1) inputs (GELU: normal),
and in-place ops on the vectors (forward: on x itself; forward+backward: on ``x * 1``, recorded),
forward under ``no_grad`` and forward+backward, best of ``--repeat`` (and of as many as fit in 0.1 s), wall ms. The load average
is printed before and after: on a shared machine the 2-thread column means little unless the
load stays well under one per core.

``--sweep``: ember alone, add/mul/exp/tanh at sizes from 32K to 4M elements, one thread against
two with the split forced at every size (``_threads.THRESHOLD`` 0): where the split starts to pay
(``ember._threads.THRESHOLD``).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from typing import Any

import numpy as np

N = 4 << 20


def _cases(m: Any) -> dict[str, tuple[Any, str]]:
    F = m.nn.functional
    w, b = m.ones(4096), m.zeros(4096)
    mask = m.tensor(np.random.default_rng(2).random(N) < 0.5)
    return {
        "add": (lambda x, y: x + y, "v"),
        "x * y + x": (lambda x, y: x * y + x, "v"),
        "exp": (lambda x, y: x.exp(), "v"),
        "tanh": (lambda x, y: x.tanh(), "v"),
        "gelu": (lambda x, y: F.gelu(x), "n"),
        "masked_fill": (lambda x, y: x.masked_fill(mask, 0.0), "v"),
        "softmax(-1)": (lambda x, y: m.softmax(x, -1), "r"),
        "layer_norm": (lambda x, y: F.layer_norm(x, (4096,), w, b), "r"),
        "sum": (lambda x, y: x.sum(), "r"),
        # in place: forward on x itself under no_grad; forward+backward on x * 1 (recorded)
        "x += y": (lambda x, y: x.__iadd__(y), "v+"),
        "add_(y, alpha)": (lambda x, y: x.add_(y, alpha=-0.01), "v+"),
        "relu_": (lambda x, y: x.relu_(), "n+"),
        "copy_": (lambda x, y: x.copy_(y), "v+"),
        "zero_": (lambda x, y: x.zero_(), "v+"),
        "addcmul_": (lambda x, y: x.addcmul_(y, y, value=-0.01), "v+"),
    }


def _best(fn: Any, repeat: int, least: float = 0.1) -> float:
    """Best of ``repeat`` calls, and of as many more as fit in ``least`` seconds (a 0.2 ms op's
    best of 7 varied by 20% between runs)."""
    fn()
    best = float("inf")
    start = time.perf_counter()
    done = 0
    while done < repeat or time.perf_counter() - start < least:
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
        done += 1
    return best * 1e3


def child(engine: str, threads: int, repeat: int, only: list[str]) -> dict[str, list[float]]:
    if engine == "torch":
        import torch as m
    else:
        import ember as m
    m.set_num_threads(threads)
    rng = np.random.default_rng(0)
    arrays = {"v": rng.random(N, dtype=np.float32), "n": rng.standard_normal(N).astype(np.float32),
              "r": rng.random((1024, 4096), dtype=np.float32)}
    y_all = {k: m.tensor(rng.random(a.shape, dtype=np.float32)) for k, a in arrays.items()}
    out = {}
    for name, (fn, kind) in _cases(m).items():
        if only and name not in only:
            continue
        inplace = kind.endswith("+")
        kind = kind.rstrip("+")
        x, y = m.tensor(arrays[kind]), y_all[kind]
        xg = m.tensor(arrays[kind], requires_grad=True)
        g = m.tensor(rng.random(arrays[kind].shape, dtype=np.float32))

        def fwd(fn: Any = fn, x: Any = x, y: Any = y) -> None:
            with m.no_grad():
                fn(x, y)

        def fb(fn: Any = fn, xg: Any = xg, y: Any = y, g: Any = g, inplace: bool = inplace
               ) -> None:
            r = fn(xg * 1 if inplace else xg, y)
            r.backward(g if r.ndim else None)
            xg.grad = None

        out[name] = [_best(fwd, repeat), _best(fb, repeat)]
    return out


def sweep(repeat: int) -> None:
    import ember
    from ember import _threads

    _threads.THRESHOLD = 0
    rng = np.random.default_rng(0)
    print(f"{'op':8s} {'elements':>9s} {'1 thread':>9s} {'2 threads':>9s}  (ms, best of "
          f"{repeat})")
    for name, f in (("add", np.add), ("mul", np.multiply), ("exp", np.exp), ("tanh", np.tanh)):
        for size in (1 << 15, 1 << 16, 1 << 17, 1 << 18, 1 << 19, 1 << 20, 1 << 22):
            a = rng.random(size, dtype=np.float32)
            ops = (a,) if f.nin == 1 else (a, a)
            ember.set_num_threads(1)
            one = _best(lambda f=f, ops=ops: f(*ops), repeat)
            ember.set_num_threads(2)
            two = _best(lambda f=f, ops=ops: _threads.run(f, *ops), repeat)
            print(f"{name:8s} {size:9d} {one:9.3f} {two:9.3f}  {one / two:5.2f}x")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", default="1,2", help="comma-separated thread counts")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--only", default="", help="comma-separated row names (default: all)")
    ap.add_argument("--engines", default="torch,ember")
    ap.add_argument("--sweep", action="store_true", help="ember's split against one thread")
    ap.add_argument("--child", nargs=2, metavar=("ENGINE", "THREADS"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    only = [s.strip() for s in args.only.split(",") if s.strip()]
    if args.child:
        print(json.dumps(child(args.child[0], int(args.child[1]), args.repeat, only)))
        return
    print(f"load average before: {os.getloadavg()[0]:.2f}")
    if args.sweep:
        sweep(args.repeat)
        print(f"load average after: {os.getloadavg()[0]:.2f}")
        return
    counts = [int(c) for c in args.threads.split(",")]
    engines = args.engines.split(",")
    res: dict[tuple[str, int], dict[str, list[float]]] = {}
    for n in counts:
        for e in engines:
            cmd = [sys.executable, "-m", "bench.threads", "--child", e, str(n),
                   "--repeat", str(args.repeat), "--only", args.only]
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
            if p.returncode != 0:
                print(f"{e} at {n} thread(s) failed:\n{p.stderr[-2000:]}")
                continue
            res[(e, n)] = json.loads(p.stdout.strip().splitlines()[-1])
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    head = " | ".join(f"{e} {n}t fwd | f+b" for n in counts for e in engines)
    print(f"| op | {head} |")
    print("|---|" + "---:|---:|" * (len(counts) * len(engines)))
    names = next(iter(res.values()), {}).keys()
    for name in names:
        cells = []
        for n in counts:
            for e in engines:
                f, b = res.get((e, n), {}).get(name, [float("nan")] * 2)
                cells += [f"{f:.2f}", f"{b:.2f}"]
        print(f"| {name} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
