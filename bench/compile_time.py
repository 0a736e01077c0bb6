"""torch.compile's compile time per workload, with a cold and a warm kernel cache (issue 30).

    python -m bench.compile_time [--workloads gpt,mlp,...] [--repeat R]

Each benchmark workload (``bench/workloads``) runs as ``ember run <script> --compile --quick``
in a process of its own, twice per round: first with ``EMBER_CACHE_DIR`` pointed at a new empty
folder (cold: every generated C library is built), then again with the same folder (warm: the
libraries load from the cache; Python's own code objects are per process, so each run generates
its Python again). Reported from ``ember._compile.stats`` and ``ember._compile.cc.stats`` at the
end of each process, best of ``R`` rounds:

- compile s: all the time of the traced calls (the two eager runs under the recorder, comparing
  them, generating code, building or loading the C);
- region runs s: of that, the region's own two runs under the recorder (each traced call
  computes its result eagerly, as an uncompiled call would, plus the recording);
- beyond s: compile s minus region runs s: what compiling costs on top of two calls;
- codegen s: generating the Python and the C and building or loading the libraries;
- C build s: the C compiler alone (0 when warm), and the number of libraries built.

One thread (``OMP_NUM_THREADS=1``); wall-clock seconds, so a busy machine reads slower.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[1]
WORKLOADS = ("scalar_autograd", "linear_regression", "classifier", "sine_regression", "mlp",
             "cnn", "gpt", "resnet18", "per_op")

# run in the child: the workload under ``ember run``, then ember's compile statistics as a line
_CHILD = """
import atexit, json, runpy, sys
def _report():
    from ember import _compile
    from ember._compile import cc
    print("COMPILE_TIME " + json.dumps({
        "compile_s": _compile.stats["compile_seconds"],
        "run_s": _compile.stats.get("run_seconds", 0.0),
        "codegen_s": _compile.stats.get("codegen_seconds", 0.0),
        "build_s": cc.stats.get("build_seconds", 0.0), "builds": cc.stats["builds"],
        "cache_hits": cc.stats["cache_hits"], "compiled": _compile.stats["compiled"],
        "replays": _compile.stats["replays"]}), flush=True)
atexit.register(_report)
sys.argv = ["ember", "run"] + sys.argv[1:]
runpy.run_module("ember", run_name="__main__")
"""


def run_one(workload: str, cache: str) -> dict:
    """One process of ``workload`` compiled, its kernel cache in ``cache``."""
    env = dict(os.environ, EMBER_CACHE_DIR=cache, OMP_NUM_THREADS="1")
    env.pop("EMBER_PURE_PYTHON", None)
    env.pop("EMBER_COMPILE_NATIVE", None)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), str(ROOT)]
                                        + [p for p in [os.environ.get("PYTHONPATH")] if p])
    script = ROOT / "bench" / "workloads" / f"{workload}.py"
    r = subprocess.run([sys.executable, "-c", _CHILD, str(script), "--compile", "--quick"],
                       env=env, cwd=ROOT, capture_output=True, text=True, timeout=1200)
    line = next((x for x in reversed(r.stdout.splitlines()) if x.startswith("COMPILE_TIME ")),
                None)
    if r.returncode != 0 or line is None:
        return {"error": (r.stderr.strip().splitlines() or ["no output"])[-1][:200]}
    return json.loads(line.split(" ", 1)[1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workloads", default=",".join(WORKLOADS))
    ap.add_argument("--repeat", type=int, default=1, help="rounds (best of)")
    a = ap.parse_args()
    print("| workload | kernel cache | graphs | compile s | region runs s | beyond s | codegen s "
          "| C build s (libraries) |")
    print("|---|---|---|---|---|---|---|---|")
    for w in a.workloads.split(","):
        best: dict[str, dict] = {}
        for _ in range(a.repeat):
            with tempfile.TemporaryDirectory(prefix="ember-kernels-") as cache:
                for phase in ("cold", "warm"):
                    got = run_one(w, cache)
                    if "error" in got:
                        best[phase] = got
                    elif "error" not in best.get(phase, {}) and (
                            phase not in best or got["compile_s"] < best[phase]["compile_s"]):
                        best[phase] = got
        for phase, r in best.items():
            if "error" in r:
                print(f"| {w} | {phase} | failed: {r['error']} ||||||", flush=True)
                continue
            print(f"| {w} | {phase} | {r['compiled']} | {r['compile_s']:.2f} | {r['run_s']:.2f} | "
                  f"{r['compile_s'] - r['run_s']:.2f} | {r['codegen_s']:.2f} | "
                  f"{r['build_s']:.2f} ({r['builds']}) |", flush=True)


if __name__ == "__main__":
    main()
