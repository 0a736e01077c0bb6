"""Shared by the workload scripts: arguments, a step timer, and the JSON line the runner reads.

Imports only the standard library, so it costs nothing next to ``import torch`` and runs the same
under real PyTorch and under ``ember run`` (where ``import torch`` is ember).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time


def parse_args(description: str, steps: int, warmup: int, quick_steps: int = 5,
               quick_warmup: int = 2, argv: list[str] | None = None) -> argparse.Namespace:
    """--steps/--warmup with the workload's defaults; --quick shrinks them for smoke tests."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--steps", type=int, default=None, help=f"timed steps (default {steps})")
    p.add_argument("--warmup", type=int, default=None, help=f"untimed first steps (default {warmup})")
    p.add_argument("--quick", action="store_true", help="a few steps only (smoke test)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--compile", action="store_true",
                   help="wrap the step's forward (model and loss) in torch.compile")
    args = p.parse_args(argv)
    if args.steps is None:
        args.steps = quick_steps if args.quick else steps
    if args.warmup is None:
        args.warmup = quick_warmup if args.quick else warmup
    return args


def maybe_compile(torch_module, fn, args: argparse.Namespace):
    """``torch.compile(fn)`` under ``--compile``, else ``fn`` itself; the compile time (first
    calls) lands in the warm-up steps, which the timing leaves out."""
    return torch_module.compile(fn) if args.compile else fn


class StepTimer:
    """Records the duration of each step: ``tick()`` after every step; ``pause()`` before work
    that is not a step (evaluation between epochs), and the next ``tick()`` then starts afresh."""

    def __init__(self) -> None:
        self.durations: list[float] = []
        self._last: float | None = None

    def start(self) -> None:
        self._last = time.perf_counter()

    def pause(self) -> None:
        self._last = None

    def tick(self) -> None:
        now = time.perf_counter()
        if self._last is not None:
            self.durations.append(now - self._last)
        self._last = now


def engine_name(torch_module) -> str:
    """'ember' when ``import torch`` resolved to ember (``ember run``), else 'torch'."""
    # (under `ember run` the module is named "torch", as libraries expect: ask for ember's own version)
    return "ember" if hasattr(torch_module, "__ember_version__") else "torch"


def report(workload: str, torch_module, timer: StepTimer, warmup: int, unit: str = "step",
           ops_per_step: int | None = None, **extra) -> None:
    """Print the summary as one JSON line (the runner reads the last line of stdout)."""
    timed = timer.durations[warmup:]
    if not timed:
        raise SystemExit(f"{workload}: no timed steps (ran {len(timer.durations)}, warm-up {warmup})")
    total = sum(timed)
    out = {
        "workload": workload,
        "engine": engine_name(torch_module),
        "version": getattr(torch_module, "__version__", "?"),
        "unit": unit,
        "steps_run": len(timer.durations),
        "warmup": warmup,
        "timed_steps": len(timed),
        "timed_s": total,
        "steps_per_s": len(timed) / total,
        "step_ms_median": 1e3 * statistics.median(timed),
        "step_ms_min": 1e3 * min(timed),
        "compiled": bool(extra.pop("compiled", False)),
    }
    if ops_per_step:
        out["ops_per_step"] = ops_per_step
        out["us_per_op"] = 1e6 * statistics.median(timed) / ops_per_step
    try:
        out["num_threads"] = torch_module.get_num_threads()
    except Exception:  # ember has no get_num_threads yet
        out["num_threads"] = None
    out.update(extra)
    compiler = sys.modules.get("ember._compile")
    if out["compiled"] and compiler is not None:  # did the steps replay, or run eagerly?
        out["compile_stats"] = {k: compiler.stats.get(k) for k in (
            "traces", "compiled", "replays", "eager", "recompiles", "compile_seconds",
            "last_reason")}
    sys.stdout.flush()
    print(json.dumps(out))
