"""Run every tutorial program under ``ember run`` and under PyTorch + torchvision, and print a
Markdown table of what each reached and how long it took.

    python examples/vision/run_all.py              # writes the stand-in data to a temporary folder
    python examples/vision/run_all.py --data data  # uses (or writes) data/ instead

PyTorch runs each program through a small runner that first registers an empty
``torchvision._meta_registrations`` module: where torchvision's compiled operators cannot load
(a CPU-only torch beside a CUDA torchvision), that registration is what fails on import, and none
of these programs needs the operators. Where torch or torchvision is missing, only ember runs.
BLAS and OpenMP run one thread per process for both libraries (see docs/vision/tutorials.md).
tests/test_vision_tutorials.py runs the same list.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent

# python -c RUNNER script args...: the program runs as __main__ with sys.argv = [script, args...]
RUNNER = ("import runpy, sys, types; "
          "sys.modules.setdefault('torchvision._meta_registrations', "
          "types.ModuleType('torchvision._meta_registrations')); "
          "sys.argv = sys.argv[1:]; runpy.run_path(sys.argv[0], run_name='__main__')")


@dataclass(frozen=True)
class Program:
    script: str
    args: tuple[str, ...] = ()
    uses_data: bool = True
    accuracy: str | None = None   # a regex whose group 1 is the final accuracy in percent


FASHION_ACCURACY = r"Accuracy: ([\d.]+)%"
PROGRAMS = [
    Program("quickstart_tutorial.py", ("--lr", "0.1"), accuracy=FASHION_ACCURACY),
    Program("tensorqs_tutorial.py", uses_data=False),
    Program("data_tutorial.py"),
    Program("transforms_tutorial.py"),
    Program("buildmodel_tutorial.py", uses_data=False),
    Program("autogradqs_tutorial.py", uses_data=False),
    Program("optimization_tutorial.py", ("--lr", "0.1"), accuracy=FASHION_ACCURACY),
    Program("saveloadrun_tutorial.py", ("--arch", "squeezenet1_1"), uses_data=False),
    Program("cifar10_tutorial.py", ("--log-every", "250"),
            accuracy=r"Accuracy of the network on the \d+ test images: (\d+) %"),
]


@dataclass
class Result:
    returncode: int
    stdout: str
    stderr: str
    seconds: float


def single_threaded_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
           "MPLBACKEND": "Agg", **(extra or {})}
    return env


def command(engine: str, program: Program, data: str | Path) -> list[str]:
    script = str(HERE / program.script)
    args = list(program.args) + (["--data", str(data), "--no-download"] if program.uses_data else [])
    if engine == "ember":
        return [sys.executable, "-m", "ember", "run", script, *args]
    return [sys.executable, "-c", RUNNER, script, *args]


def start(engine: str, program: Program, data: str | Path, cwd: Path,
          env: dict[str, str] | None = None) -> tuple[subprocess.Popen, float]:
    cwd.mkdir(parents=True, exist_ok=True)
    proc = subprocess.Popen(command(engine, program, data), cwd=cwd, env=env or single_threaded_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return proc, time.perf_counter()


def finish(started: tuple[subprocess.Popen, float], timeout: float = 300) -> Result:
    proc, t0 = started
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        return Result(-9, out, err + f"\n(killed after {timeout} s)", time.perf_counter() - t0)
    return Result(proc.returncode, out, err, time.perf_counter() - t0)


def accuracy(program: Program, stdout: str) -> float | None:
    """The last accuracy the program printed, in percent."""
    if program.accuracy is None:
        return None
    found = re.findall(program.accuracy, stdout)
    return float(found[-1]) if found else None


def have_torchvision() -> bool:
    code = RUNNER.split("sys.argv")[0] + "import torch, torchvision"
    return subprocess.run([sys.executable, "-c", code], capture_output=True).returncode == 0


def make_data(out: Path) -> None:
    spec = importlib.util.spec_from_file_location("make_data", HERE / "make_data.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.main(["--out", str(out)])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", help="the stand-in data folder (written when missing)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(args.data) if args.data else Path(tmp) / "data"
        if not (data / "STAND_IN.json").exists():
            make_data(data)
        engines = ["ember", "pytorch"] if have_torchvision() else ["ember"]
        rows = []
        for program in PROGRAMS:
            cells = []
            for engine in engines:  # one at a time, so the times are not shared
                result = finish(start(engine, program, data.resolve(), Path(tmp) / engine))
                if result.returncode != 0:
                    cells.append(f"fails ({result.stderr.strip().splitlines()[-1][:60]})")
                    continue
                acc = accuracy(program, result.stdout)
                cells.append((f"{acc:g}%, " if acc is not None else "ok, ") + f"{result.seconds:.1f} s")
            label = " ".join([program.script, *program.args])
            rows.append(f"| `{label}` | " + " | ".join(cells) + " |")
        print("| program | " + " | ".join(engines) + " |")
        print("|---|" + "---|" * len(engines))
        print("\n".join(rows))


if __name__ == "__main__":
    main()
