"""``python -m bench.distributed``: data-parallel scaling, ember against PyTorch.

Runs, in fresh processes and interleaved rounds (ember, then PyTorch, for every setting):
- ``allreduce.py`` on 2 processes: all-reduce bus bandwidth by message size, ember's
  ``dist.all_reduce`` next to MPI's own ``Allreduce`` (and PyTorch's gloo);
- ``ddp_gpt.py`` at 1, 2 and 4 processes, with and without overlap (one bucket, reduced after
  backward): samples/s, scaling efficiency (throughput at N over N x throughput at 1) and the
  overlap ratio (step time with overlap over step time without).
Each process gets one thread. ``--write-doc`` puts the tables in docs/parallel.md.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
DOC = HERE.parent.parent / "docs" / "parallel.md"
BEGIN = "<!-- BEGIN distributed bench (python -m bench.distributed --write-doc) -->"
END = "<!-- END distributed bench -->"
ONE_THREAD = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def _launcher(engine: str, nproc: int) -> list[str]:
    if engine == "ember":
        return [sys.executable, "-m", "ember", "launch", "--nproc-per-node", str(nproc)]
    torchrun = shutil.which("torchrun", path=os.path.dirname(sys.executable))
    if torchrun is None:
        raise SystemExit("PyTorch's torchrun is not installed here: pip install torch==2.13.0")
    return [torchrun, "--nproc-per-node", str(nproc)]


def _run(engine: str, nproc: int, script: str, *args: str) -> list[dict]:
    env = dict(os.environ, **ONE_THREAD)
    res = subprocess.run([*_launcher(engine, nproc), str(HERE / script), *args],
                         capture_output=True, text=True, env=env, timeout=900)
    if res.returncode != 0:
        raise SystemExit(f"{engine} {script} on {nproc} failed:\n{res.stdout}\n{res.stderr}")
    return [json.loads(line) for line in res.stdout.splitlines() if line.startswith("{")]


def bandwidth(rounds: int) -> str:
    rows: dict[int, dict[str, list[float]]] = {}
    for _ in range(rounds):
        for engine in ("ember", "torch"):
            for r in _run(engine, 2, "allreduce.py"):
                got = rows.setdefault(r["bytes"], {})
                got.setdefault(engine, []).append(r["s"])
                if "mpi_s" in r:
                    got.setdefault("mpi", []).append(r["mpi_s"])
    lines = ["| message | ember all_reduce | MPI Allreduce (mpi4py) | ember / MPI | PyTorch gloo |",
             "|---|---|---|---|---|"]
    for size, got in sorted(rows.items()):
        e, m, t = (statistics.median(got[k]) for k in ("ember", "mpi", "torch"))
        lines.append(f"| {_size(size)} | {e * 1e6:.0f} us ({_bus(size, e):.2f} GB/s) | "
                     f"{m * 1e6:.0f} us ({_bus(size, m):.2f} GB/s) | {e / m:.2f}x | "
                     f"{t * 1e6:.0f} us ({_bus(size, t):.2f} GB/s) |")
    return "\n".join(lines)


def _bus(nbytes: int, seconds: float, world: int = 2) -> float:
    """Bus bandwidth in GB/s: 2 (n - 1) / n x bytes / time."""
    return 2 * (world - 1) / world * nbytes / seconds / 1e9


def _size(n: int) -> str:
    return f"{n >> 20} MiB" if n >= 1 << 20 else f"{n >> 10} KiB"


def scaling(rounds: int, procs: list[int], steps: int) -> str:
    runs: dict[tuple[str, int, bool], list[float]] = {}
    for _ in range(rounds):
        for n in procs:
            for overlap in (True, False):
                for engine in ("ember", "torch"):
                    args = ["--steps", str(steps)] + ([] if overlap else ["--no-overlap"])
                    (r,) = _run(engine, n, "ddp_gpt.py", *args)
                    runs.setdefault((engine, n, overlap), []).append(r["step_ms_median"])
    med = {k: statistics.median(v) for k, v in runs.items()}
    lines = ["| processes | engine | step (ms) | samples/s | scaling efficiency | "
             "overlap ratio (with / without) | ember / PyTorch samples/s |", "|---|---|---|---|---|---|---|"]
    for n in procs:
        for engine in ("ember", "torch"):
            ms = med[(engine, n, True)]
            rate = n * 16 / ms * 1e3
            base = 16 / med[(engine, procs[0], True)] * 1e3 * (n / procs[0])
            ratio = med[("torch", n, True)] / med[("ember", n, True)]
            lines.append(f"| {n} | {'ember' if engine == 'ember' else 'PyTorch'} | {ms:.0f} | "
                         f"{rate:.0f} | {rate / base:.0%} | "
                         f"{ms / med[(engine, n, False)]:.2f} | "
                         f"{f'{ratio:.2f}x' if engine == 'ember' else ''} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--procs", type=int, nargs="+", default=[1, 2, 4])
    p.add_argument("--steps", type=int, default=8)
    p.add_argument("--write-doc", action="store_true")
    args = p.parse_args(argv)
    text = (f"All-reduce, 2 processes (median of {args.rounds} runs):\n\n{bandwidth(args.rounds)}"
            f"\n\nDDP, the benchmark's GPT (batch 16 per process, AdamW; median step of "
            f"{args.steps} after 2 warm-up, median of {args.rounds} runs):\n\n"
            f"{scaling(args.rounds, args.procs, args.steps)}\n")
    print(text)
    if args.write_doc:
        doc = DOC.read_text()
        head, rest = doc.split(BEGIN, 1)
        _, tail = rest.split(END, 1)
        DOC.write_text(f"{head}{BEGIN}\n{text}{END}{tail}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
