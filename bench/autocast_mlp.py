"""CPU autocast against float32 on issue 29's MLP step: ``python -m bench.autocast_mlp [--repeat N]
[--threads N] [--torch] [--profile] [--cpu]``.

The step: 1024-2048-1024-10 (ReLU between), batch 256, ``cross_entropy``, AdamW; float32, and the
forward under ``autocast("cpu", dtype=bfloat16)``. The two configurations run interleaved in one
process (one round: each once), best of ``--repeat`` rounds, ms of wall time (``--cpu``: this
thread's CPU time), so a load that changes during the run hits both alike; the load average is
printed before and after. ``--torch`` times PyTorch the same way afterwards (same process);
``--profile`` prints cProfile's top entries of ten ember autocast steps instead. Also printed:
the casts' passes per step (``count_casts``; with the eager kernels on).
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import time
from collections.abc import Callable
from typing import Any

import ember
import ember._kernels_loader as L

CLOCK: Callable[[], float] = time.perf_counter


def make_step(m: Any) -> Callable[[bool], None]:
    """The issue's MLP step on the framework ``m`` (ember or torch): ``step(amp)``."""
    m.manual_seed(0)
    nn = m.nn
    net = nn.Sequential(nn.Linear(1024, 2048), nn.ReLU(), nn.Linear(2048, 1024), nn.ReLU(),
                        nn.Linear(1024, 10))
    opt = m.optim.AdamW(net.parameters(), lr=1e-3)
    x, y = m.randn(256, 1024), m.randint(0, 10, (256,))

    def step(amp: bool) -> None:
        opt.zero_grad()
        if amp:
            with m.autocast("cpu", dtype=m.bfloat16):
                loss = nn.functional.cross_entropy(net(x), y)
        else:
            loss = nn.functional.cross_entropy(net(x), y)
        loss.backward()
        opt.step()

    return step


def interleaved(step: Callable[[bool], None], repeat: int) -> dict[str, float]:
    """Best of ``repeat`` rounds of (float32, autocast), ms."""
    cases = {"float32": False, "bf16 autocast": True}
    best = {k: float("inf") for k in cases}
    for amp in cases.values():  # warm-up
        step(amp)
    for _ in range(repeat):
        for k, amp in cases.items():
            t0 = CLOCK()
            step(amp)
            best[k] = min(best[k], (CLOCK() - t0) * 1e3)
    return best


def count_casts(step: Callable[[bool], None]) -> int:
    """The casts' passes over a tensor in one autocast step: ``half_cast`` calls (less those
    that return the float32 values a ``half_round`` kept) and ``half_round`` calls."""
    orig, orig_round, n = L.half_cast, L.half_round, [0]

    def counting(a: Any, dtype: Any) -> Any:
        kept = L._ROUNDED.get(id(a))
        n[0] += kept is None or kept[0] is not a
        return orig(a, dtype)

    def counting_round(a: Any, dtype: Any) -> Any:
        n[0] += 1
        return orig_round(a, dtype)

    L.half_cast, L.half_round = counting, counting_round
    try:
        step(True)
    finally:
        L.half_cast, L.half_round = orig, orig_round
    return n[0]


def main() -> None:
    global CLOCK
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--torch", action="store_true", help="time PyTorch too")
    ap.add_argument("--profile", action="store_true", help="cProfile ten ember autocast steps")
    ap.add_argument("--cpu", action="store_true", help="this thread's CPU time, not wall time")
    args = ap.parse_args()
    if args.cpu:
        CLOCK = time.thread_time
    ember.set_num_threads(args.threads)
    print(L.describe(), f"| threads {args.threads} | load before {os.getloadavg()[0]:.2f}")
    step = make_step(ember)
    if args.profile:
        step(True)
        pr = cProfile.Profile()
        pr.enable()
        for _ in range(10):
            step(True)
        pr.disable()
        pstats.Stats(pr).sort_stats("tottime").print_stats(20)
        return
    if L.active is not None:
        print("casts per autocast step:", count_casts(step))
    best = interleaved(step, args.repeat)
    print("ember  ", "  ".join(f"{k} {v:.1f}" for k, v in best.items()),
          f"(autocast / float32 {best['bf16 autocast'] / best['float32']:.3f})")
    if args.torch:
        import torch

        torch.set_num_threads(args.threads)
        best = interleaved(make_step(torch), args.repeat)
        print("PyTorch", "  ".join(f"{k} {v:.1f}" for k, v in best.items()))
    print(f"load after {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
