"""Runs each workload under PyTorch and under ``ember run``, alternating, in fresh processes.

Per workload and thread budget: one warm-up run of each engine (discarded), then ``--runs`` rounds
of A B (PyTorch, ember). Each run is a new process; the runner reads the workload's JSON line
(steady-state steps/s after its own warm-up steps), the whole-process wall time, and the process's
peak RSS (``os.wait4``). The runner itself imports neither NumPy nor torch.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WORKLOADS_DIR = Path(__file__).resolve().parent / "workloads"
DOC = ROOT / "docs" / "benchmarks.md"
RAW_DIR = ROOT / ".bench"
BEGIN, END = "<!-- BEGIN bench results (written by python -m bench --write-doc) -->", \
    "<!-- END bench results -->"
THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
# Set on some machines to dodge bugs of old OpenBLAS builds; they select an older, slower kernel.
OPENBLAS_OVERRIDES = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")


@dataclass
class Workload:
    name: str
    title: str
    kind: str  # seed | model | overhead | process
    target: float | None = None  # throughput ratio ember/PyTorch to reach (>=)
    floor: str | None = None  # key in bench.floor.STEPS
    needs: tuple[str, ...] = ()  # extra modules the script imports (skipped without them)
    quick_args: tuple[str, ...] = ("--quick",)
    compiled_target: float | None = None  # compiled ember over eager PyTorch to reach (>=)
    compilable: bool = True  # the script takes --compile (torch.compile around its forward)


WORKLOADS = [
    Workload("scalar_autograd", "seed: scalar autograd (y = w*x**2+1, backward)", "seed", 2.0,
             compiled_target=4.0),
    Workload("linear_regression", "seed: linear regression (500 SGD steps)", "seed", 2.0,
             compiled_target=4.0),
    Workload("classifier", "seed: classifier (DataLoader, Adam, Dropout, 5 epochs)", "seed", 2.0,
             compiled_target=4.0),
    Workload("sine_regression", "seed: sine regression (300 epochs, batch 32)", "seed", 2.0,
             compiled_target=4.0),
    Workload("mlp", "MLP 784-512-512-10, batch 128, AdamW", "model", 1.1, floor="mlp",
             compiled_target=1.2),
    Workload("cnn", "CNN (2 conv, 2 linear), 64x1x28x28, SGD momentum", "model", 1.0, floor="cnn"),
    Workload("gpt", "GPT 4 layers, 4 heads, 128 wide, block 64, batch 16", "model", 1.0,
             floor="gpt", compiled_target=1.5),
    Workload("gpt_manual", "the GPT, its attention written out (q @ k^T, masked_fill, softmax)",
             "model", 1.0, floor="gpt"),
    Workload("resnet18", "torchvision resnet18(num_classes=10), 32x3x32x32, SGD momentum",
             "model", None, floor="resnet18"),
    Workload("per_op", "per-op overhead: 20 ops on (8, 8) + backward", "overhead", 1.25),
    Workload("demo", "`ember demo` (digits CNN) as a whole process", "process", None,
             needs=("sklearn",), compilable=False),
]
BY_NAME = {w.name: w for w in WORKLOADS}
ENGINES = ("torch", "ember", "compiled")  # "compiled": ember with the script's --compile
LABEL = {"torch": "PyTorch", "ember": "ember", "compiled": "ember compiled"}


# -- running one process ---------------------------------------------------------------------

def engine_env(threads: int) -> dict[str, str]:
    """The environment of every benchmark process: equal thread budgets for PyTorch's intra-op
    pool and NumPy's BLAS; OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE removed."""
    env = dict(os.environ)
    for var in THREAD_VARS:
        env[var] = str(threads)
    for var in OPENBLAS_OVERRIDES:
        env.pop(var, None)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), str(ROOT)] + [p for p in
                                                         [os.environ.get("PYTHONPATH")] if p])
    env.pop("PYTHONSTARTUP", None)
    # Byte-code caching on, as in any installed package (PyTorch's wheel ships its .pyc files; a
    # shell with PYTHONDONTWRITEBYTECODE=1 would make ember recompile its sources every start).
    # The cache lives under .bench/, so the source tree stays clean; the warm-up run fills it.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(RAW_DIR / "pycache")
    return env


def command(engine: str, script: Path, args: list[str]) -> list[str]:
    if engine == "torch":
        return [sys.executable, str(script), *args]
    if engine == "compiled":
        args = [*args, "--compile"]
    return [sys.executable, "-m", "ember", "run", str(script), *args]


def run_process(cmd: list[str], env: dict[str, str], timeout: float) -> dict:
    """Run ``cmd``; return rc, stdout, stderr, wall seconds and peak RSS (MiB) of the process."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, cwd=ROOT, env=env)
        killer = threading.Timer(timeout, proc.kill)  # the runner blocks in wait4, no polling
        killer.start()
        try:
            _, status, rusage = os.wait4(proc.pid, 0)
        finally:
            killer.cancel()
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
        out.seek(0)
        err.seek(0)
        stdout = out.read().decode(errors="replace")
        stderr = err.read().decode(errors="replace")
    timed_out = wall > timeout
    return {"rc": proc.returncode, "stdout": stdout, "stderr": stderr, "wall_s": wall,
            "rss_mib": rusage.ru_maxrss / 1024.0, "timed_out": timed_out}


def last_json(text: str) -> dict | None:
    for line in reversed(text.strip().splitlines()):
        line = line.strip()
        if line.startswith("{") and line.endswith("}"):
            try:
                return json.loads(line)
            except json.JSONDecodeError:
                return None
    return None


def run_workload(engine: str, w: Workload, threads: int, quick: bool, timeout: float) -> dict:
    args = list(w.quick_args) if quick else []
    res = run_process(command(engine, WORKLOADS_DIR / f"{w.name}.py", args),
                      engine_env(threads), timeout)
    data = last_json(res["stdout"]) if res["rc"] == 0 else None
    rec = {"engine": engine, "wall_s": res["wall_s"], "rss_mib": res["rss_mib"], "rc": res["rc"]}
    if data is None:
        tail = (res["stderr"].strip() or res["stdout"].strip()).splitlines()[-3:]
        rec["error"] = ("timed out; " if res["timed_out"] else "") + " | ".join(tail)
    else:
        rec.update(data)
    return rec


# -- what the machine is -----------------------------------------------------------------------

def _read(path: str) -> str:
    try:
        return Path(path).read_text()
    except OSError:
        return ""


def _cpuinfo(field: str) -> str | None:
    return next((line.split(":", 1)[1].strip() for line in _read("/proc/cpuinfo").splitlines()
                 if line.split(":", 1)[0].strip() == field), None)


def machine_info() -> dict:
    cpu = _cpuinfo("model name") or platform.processor() or "unknown"
    family, model = _cpuinfo("cpu family"), _cpuinfo("model")
    if family and model:
        cpu += f" (family {family}, model {model})"
    mem = next((line.split()[1] for line in _read("/proc/meminfo").splitlines()
                if line.startswith("MemTotal")), None)
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:
        usable = os.cpu_count()
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT,
                            capture_output=True, text=True).stdout.strip() or None
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT,
                           capture_output=True, text=True).stdout.strip()
    return {
        "cpu": cpu, "logical_cpus": os.cpu_count(), "usable_cpus": usable,
        "mem_gib": round(int(mem) / 2**20, 1) if mem else None,
        "os": platform.platform(), "python": platform.python_version(),
        "ember_commit": (commit + ("+changes" if dirty else "")) if commit else None,
        "openblas_overrides_in_shell": {v: os.environ.get(v) for v in OPENBLAS_OVERRIDES},
    }


def load_average() -> str:
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "?"


def probe(engine: str, threads: int) -> dict:
    res = run_process([sys.executable, "-m", "bench.probe", engine], engine_env(threads), 120)
    return last_json(res["stdout"]) or {"error": res["stderr"].strip().splitlines()[-1:]}


def floors(names: list[str], threads: int) -> dict:
    if not names:
        return {}
    res = run_process([sys.executable, "-m", "bench.floor", *names], engine_env(threads), 600)
    return last_json(res["stdout"]) or {}


def torch_available() -> bool:
    res = subprocess.run([sys.executable, "-c", "import importlib.util as u, sys; "
                          "sys.exit(0 if u.find_spec('torch') else 1)"], cwd="/")
    return res.returncode == 0


def module_available(name: str) -> bool:
    res = subprocess.run([sys.executable, "-c", f"import {name}"], cwd="/",
                         capture_output=True)
    return res.returncode == 0


# -- the benchmark ---------------------------------------------------------------------------

@dataclass
class Cell:
    """All runs of one (workload, threads, engine)."""

    runs: list[dict] = field(default_factory=list)

    @property
    def ok(self) -> list[dict]:
        return [r for r in self.runs if "error" not in r]

    def values(self, key: str) -> list[float]:
        return [r[key] for r in self.ok if r.get(key) is not None]

    def median(self, key: str) -> float | None:
        v = self.values(key)
        return statistics.median(v) if v else None

    def error(self) -> str | None:
        bad = [r for r in self.runs if "error" in r]
        return bad[0]["error"] if bad else None


def benchmark(opts: argparse.Namespace) -> dict:
    engines = opts.engines
    results: dict = {
        "date": _dt.datetime.now().astimezone().isoformat(timespec="seconds"),
        "machine": machine_info(), "quick": opts.quick, "runs": opts.runs,
        "engines": engines, "load_before": load_average(), "by_threads": {}, "loads": [],
    }
    print(f"machine: {results['machine']['cpu']}, {results['machine']['usable_cpus']} usable "
          f"CPUs, load average {results['load_before']}", flush=True)
    shell = {k: v for k, v in results["machine"]["openblas_overrides_in_shell"].items() if v}
    print("OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE: unset in every benchmark process"
          + (f" (this shell sets {shell})" if shell else " (also unset in this shell)"), flush=True)
    for threads in opts.thread_counts:
        section: dict = {"probe": {e: probe(e, threads) for e in engines}}
        print(f"\n== {threads} thread(s) ==", flush=True)
        for e in engines:
            print(f"   {e}: {describe_probe(section['probe'][e])}", flush=True)
        section["workloads"] = {}
        section["floor_runs"] = {}
        for w in opts.workloads:
            missing = [m for m in w.needs if not module_available(m)]
            if missing:
                print(f"-- {w.name}: skipped (needs {', '.join(missing)})", flush=True)
                section["workloads"][w.name] = {"skipped": f"needs {', '.join(missing)}"}
                continue
            results["loads"].append(load_average())
            w_engines = [e for e in engines if e != "compiled" or w.compilable]
            cells = {e: Cell() for e in w_engines}
            if not opts.quick:  # warm-up round: file caches, imports, CPU frequency
                for e in w_engines:
                    run_workload(e, w, threads, opts.quick, opts.timeout)
            floor_runs = []
            for r in range(opts.runs):
                for e in w_engines:
                    rec = run_workload(e, w, threads, opts.quick, opts.timeout)
                    rec["round"] = r
                    cells[e].runs.append(rec)
                if w.floor and not opts.no_floor:  # in every round: the load changes
                    floor_runs.append(floors([w.floor], threads).get(w.floor))
            section["workloads"][w.name] = {e: c.runs for e, c in cells.items()}
            floor_runs = [f for f in floor_runs if f]
            if floor_runs:
                section["floor_runs"][w.floor] = floor_runs
                med = statistics.median(f["ms"] for f in floor_runs)
                section.setdefault("floor", {})[w.floor] = {
                    "ms": med, "ms_all": [f["ms"] for f in floor_runs],
                    "gflop": floor_runs[0]["gflop"]}
            print(summary_line(w, cells), flush=True)
        results["by_threads"][str(threads)] = section
    results["load_after"] = load_average()
    return results


def describe_probe(p: dict) -> str:
    if "error" in p:
        return f"probe failed: {p['error']}"
    parts = [f"{p.get('engine')} {p.get('version')}, numpy {p.get('numpy')}"]
    if p.get("num_threads") is not None:
        parts.append(f"intra-op threads {p['num_threads']}")
    if p.get("blas"):
        parts.append(f"torch BLAS {p['blas']}")
    pools = p.get("threadpools")
    if pools is None:
        parts.append("threadpoolctl not installed (pip install threadpoolctl)")
    else:
        for pool in pools:
            if pool["user_api"] == "blas":
                parts.append(f"NumPy BLAS {pool['internal_api']} {pool['version']} kernel "
                             f"{pool['architecture']} x{pool['num_threads']} threads")
            else:
                parts.append(f"{pool['internal_api']} x{pool['num_threads']}")
    return ", ".join(parts)


def summary_line(w: Workload, cells: dict[str, Cell]) -> str:
    parts = [f"-- {w.name}:"]
    for e, c in cells.items():
        if not c.ok:
            parts.append(f"{e} FAILED ({c.error()})")
            continue
        parts.append(f"{e} {c.median('steps_per_s'):.4g} {c.ok[0].get('unit', 'step')}/s, "
                     f"wall {c.median('wall_s'):.2f} s, RSS {c.median('rss_mib'):.0f} MiB")
    for e in ("ember", "compiled"):
        if e in cells and "torch" in cells and cells[e].ok and cells["torch"].ok:
            ratio = cells[e].median("steps_per_s") / cells["torch"].median("steps_per_s")
            parts.append(f"{LABEL[e]}/PyTorch {ratio:.2f}x")
    return " | ".join(parts)


# -- the report --------------------------------------------------------------------------------

def _fmt(x: float | None, digits: int = 3) -> str:
    if x is None:
        return "-"
    if x >= 100:
        return f"{x:,.0f}"
    return f"{x:.{digits}g}"


def _spread(values: list[float]) -> str:
    if not values:
        return "failed"
    med = statistics.median(values)
    if len(values) == 1:
        return _fmt(med)
    return f"{_fmt(med)} ({_fmt(min(values))}-{_fmt(max(values))})"


def _cells(section: dict, name: str) -> dict[str, Cell] | None:
    entry = section["workloads"].get(name)
    if entry is None or "skipped" in entry:
        return None
    return {e: Cell(runs) for e, runs in entry.items()}


def render(results: dict) -> str:
    m = results["machine"]
    engines = results["engines"]
    lines = [
        f"Generated by `python -m bench{' --quick' if results['quick'] else ''}` on "
        f"{results['date']}; {results['runs']} run(s) per engine after a warm-up run"
        f"{' (none in --quick)' if results['quick'] else ''}, alternating the engines ("
        + ", ".join(LABEL[e] for e in engines) + "), each in a fresh process"
        + ("; *ember compiled* runs the same script with `--compile`: `torch.compile` around "
           "its forward and loss (the optimizer and `backward()` stay outside, as users write "
           "it); its ratio is over eager PyTorch" if "compiled" in engines else "") + ".",
        "",
        f"- Machine: {m['cpu']}, {m['usable_cpus']} usable CPUs ({m['logical_cpus']} logical), "
        f"{m['mem_gib']} GiB RAM; {m['os']}; Python {m['python']}; ember commit "
        f"{m['ember_commit']}.",
        f"- Load average (1, 5, 15 min): {results['load_before']} before, "
        f"{results['load_after']} after"
        + ("; 1-min load at the start of each workload: "
           + ", ".join(x.split()[0] for x in results["loads"]) if results.get("loads") else "")
        + (" - the machine was busy, so the numbers are noisy." if _busy(results, m) else "."),
        "- `OPENBLAS_CORETYPE` and `OPENBLAS_L2_SIZE` are unset in every benchmark process "
        "(this shell: " + (", ".join(f"{k}={v}" for k, v in
                                      m["openblas_overrides_in_shell"].items() if v) or "unset")
        + "); tests and CI leave them alone. Byte-code caching is on in every process "
        "(`PYTHONDONTWRITEBYTECODE` unset, cache in `.bench/pycache`), as in an installed package.",
    ]
    for threads, section in results["by_threads"].items():
        for e in engines:
            lines.append(f"- {threads} thread(s), {e} process: "
                         f"{describe_probe(section['probe'][e])}.")
    lines.append(
        f"- Thread budget: {', '.join(THREAD_VARS)} set alike in each process's environment "
        "(PyTorch's intra-op pool and NumPy's BLAS threads).")
    for threads, section in results["by_threads"].items():
        lines += ["", f"### {threads} thread(s)", "", _table(section, engines)]
        floor_table = _floor_table(section, engines)
        if floor_table:
            lines += ["", "BLAS floor: NumPy's BLAS alone doing one step's matrix products "
                      "(forward and backward, float32, outputs preallocated; convolutions "
                      "lowered to one GEMM each), measured in its own process after each round "
                      "(median).", "", floor_table]
        lines += ["", _targets(section, engines)]
    return "\n".join(lines) + "\n"


def _busy(results: dict, m: dict) -> bool:
    """Any 1-min load average seen during the run above half the usable CPUs."""
    loads = [results["load_before"], results["load_after"], *results.get("loads", [])]
    try:
        peak = max(float(x.split()[0]) for x in loads)
    except (ValueError, IndexError):
        return False
    return peak > 0.5 * (m["usable_cpus"] or 1)


def _table(section: dict, engines: list[str]) -> str:
    versus = [e for e in engines if e != "torch"] if "torch" in engines else []
    head = ["workload", "unit"]
    head += [f"{LABEL[e]} per s, median (min-max)" for e in engines]
    head += [f"ratio {LABEL[e]}/PyTorch" for e in versus]
    head += [f"{LABEL[e]} wall s" for e in engines]
    head += [f"wall ratio {LABEL[e]}/PyTorch" for e in versus if e == "ember"]
    head += [f"{LABEL[e]} peak RSS MiB" for e in engines]
    rows = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    notes = []
    for w in WORKLOADS:
        cells = _cells(section, w.name)
        if cells is None:
            if w.name in section["workloads"]:
                rows.append(f"| {w.name} | {section['workloads'][w.name]['skipped']} |")
            continue
        unit = next((r.get("unit") for c in cells.values() for r in c.ok), "step")
        row = [w.name, unit]
        for e in engines:
            c = cells.get(e)
            row.append("-" if c is None else _spread(c.values("steps_per_s")) if c.ok
                       else f"failed: {c.error()}")
        row += [_ratio(cells, e, "steps_per_s") for e in versus]
        row += [_fmt(cells[e].median("wall_s")) if e in cells else "-" for e in engines]
        row += [_ratio(cells, e, "wall_s") for e in versus if e == "ember"]
        row += [_fmt(cells[e].median("rss_mib")) if e in cells else "-" for e in engines]
        rows.append("| " + " | ".join(row) + " |")
        note = _compile_note(cells.get("compiled"))
        if note:
            notes.append(f"{w.name}: {note}")
    per_op = _cells(section, "per_op")
    text = "\n".join(rows)
    if per_op:
        us = {e: c.median("us_per_op") for e, c in per_op.items()}
        text += "\n\nper_op: " + ", ".join(
            f"{LABEL[e]} {_fmt(v)} us per op (forward + backward)"
            for e, v in us.items() if v is not None)
    if notes:
        text += "\n\nCompiled runs: " + "; ".join(notes) + "."
    return text


def _compile_note(cell: Cell | None) -> str:
    """What ``torch.compile`` did in a compiled run: replayed, or fell back to eager (why)."""
    if cell is None or not cell.ok:
        return ""
    st = cell.ok[0].get("compile_stats")
    if not st:
        return ""
    if not st.get("replays"):
        return f"ran eagerly ({st.get('last_reason')})"
    return (f"{st['compiled']} graph(s) compiled in {1e3 * (st.get('compile_seconds') or 0):.0f} "
            f"ms, {st['replays']} replays")


def _ratio(cells: dict[str, Cell], engine: str, key: str) -> str:
    if engine not in cells or "torch" not in cells:
        return "-"
    a, b = cells[engine].median(key), cells["torch"].median(key)
    if a is None or b is None or b == 0:
        return "-"
    return f"{a / b:.2f}x"


def _floor_table(section: dict, engines: list[str]) -> str:
    fl = section.get("floor") or {}
    rows = []
    for w in WORKLOADS:
        if not w.floor or w.floor not in fl:
            continue
        cells = _cells(section, w.name)
        if cells is None:
            continue
        f = fl[w.floor]
        row = [w.name, f"{f['gflop']:.2f}", _fmt(f["ms"])]
        for e in engines:
            sps = cells[e].median("steps_per_s") if e in cells else None
            ms = 1e3 / sps if sps else None
            row += [_fmt(ms), f"{ms / f['ms']:.2f}x" if ms else "-"]
        rows.append("| " + " | ".join(row) + " |")
    if not rows:
        return ""
    head = ["workload", "GFLOP per step", "floor ms/step"]
    for e in engines:
        head += [f"{LABEL[e]} ms/step", f"{LABEL[e]} / floor"]
    return "\n".join(["| " + " | ".join(head) + " |", "|" + "---|" * len(head)] + rows)


def _targets(section: dict, engines: list[str]) -> str:
    """The issue's targets: eager ember over PyTorch, compiled ember over eager PyTorch."""
    if "torch" not in engines or "ember" not in engines:
        return "Targets need PyTorch and ember (one of them was not run)."
    rows = ["| target | measured | met |", "|---|---|---|"]

    def add(what: str, value: float | None, ok: bool | None, fmt: str = "{:.2f}x") -> None:
        shown = "-" if value is None else fmt.format(value)
        rows.append(f"| {what} | {shown} | {'-' if ok is None else ('yes' if ok else 'no')} |")

    def speed(cells: dict[str, Cell], e: str) -> float | None:
        if e not in cells or not cells[e].ok or not cells["torch"].ok:
            return None
        return cells[e].median("steps_per_s") / cells["torch"].median("steps_per_s")

    fl = section.get("floor") or {}
    rss_fail = []
    for w in WORKLOADS:
        if w.name not in section["workloads"]:
            continue
        cells = _cells(section, w.name)
        if cells is None or not cells["ember"].ok or not cells["torch"].ok:
            if w.target is not None:
                add(f"{w.name}: throughput >= {w.target}x (run failed or skipped)", None, None)
            continue
        r = speed(cells, "ember")
        if w.name == "per_op":
            us_e, us_t = cells["ember"].median("us_per_op"), cells["torch"].median("us_per_op")
            add(f"per_op: ember's us per op <= 0.8 of PyTorch's ({_fmt(us_e)} vs {_fmt(us_t)} "
                f"us; shown: PyTorch's us / ember's, target >= 1.25x)", us_t / us_e,
                us_t / us_e >= 1.25)
        elif w.target is not None:
            add(f"{w.name}: throughput >= {w.target}x", r, r >= w.target)
        if w.kind == "seed":
            wr = cells["ember"].median("wall_s") / cells["torch"].median("wall_s")
            add(f"{w.name}: whole-process wall <= 0.3x", wr, wr <= 0.3)
            mr = cells["ember"].median("rss_mib") / cells["torch"].median("rss_mib")
            add(f"{w.name}: peak RSS <= 0.5x", mr, mr <= 0.5)
        if w.floor in fl and w.kind == "model":
            over = (1e3 / cells["ember"].median("steps_per_s")) / fl[w.floor]["ms"]
            add(f"{w.name}: step within 1.3x of the BLAS floor", over, over <= 1.3)
        if w.compiled_target is not None and "compiled" in engines:
            rc = speed(cells, "compiled")
            add(f"{w.name}: compiled >= {w.compiled_target}x eager PyTorch", rc,
                None if rc is None else rc >= w.compiled_target)
        if w.name == "gpt" and "compiled" in cells and cells["compiled"].ok:
            st = cells["compiled"].ok[0].get("compile_stats") or {}
            secs = st.get("compile_seconds")
            add("gpt: compile time < 2 s", secs, None if secs is None else secs < 2,
                "{:.2f} s")
        if cells["ember"].median("rss_mib") >= cells["torch"].median("rss_mib"):
            rss_fail.append(w.name)
    rows.append(f"| peak RSS below PyTorch's (every workload) | "
                f"{'above in: ' + ', '.join(rss_fail) if rss_fail else 'below in all'} | "
                f"{'no' if rss_fail else 'yes'} |")
    return "\n".join(rows)


def write_doc(report: str) -> None:
    block = f"{BEGIN}\n{report}{END}\n"
    if DOC.exists():
        text = DOC.read_text()
    else:
        text = ("# Benchmarks\n\nHow to run: `python -m bench` (or `make bench`); "
                "`python -m bench --help` for the options.\n\n## Results\n\n")
    if BEGIN in text and END in text:
        head, rest = text.split(BEGIN, 1)
        tail = rest.split(END, 1)[1].lstrip("\n")
        text = head + block + ("\n" + tail if tail else "")
    else:
        marker = "## GPT on Shakespeare"
        if marker in text:
            head, tail = text.split(marker, 1)
            text = head.rstrip("\n") + "\n\n" + block + "\n" + marker + tail
        else:
            text = text.rstrip("\n") + "\n\n" + block
    DOC.parent.mkdir(parents=True, exist_ok=True)
    DOC.write_text(text)


# -- command line ----------------------------------------------------------------------------

def parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m bench",
        description="Run ember's workloads under PyTorch and under `ember run`, side by side.")
    p.add_argument("--quick", action="store_true",
                   help="a few steps, one run per engine, no warm-up run (a smoke run)")
    p.add_argument("--only", action="append", default=[], metavar="NAME",
                   help="run only this workload (repeatable or comma-separated): "
                        + ", ".join(BY_NAME))
    p.add_argument("--threads", choices=["1", "all", "both"], default="both",
                   help="thread budget: 1, all cores, or both (default)")
    p.add_argument("--runs", type=int, default=None, help="runs per engine (default 3, quick 1)")
    p.add_argument("--engines", default=None,
                   help="comma-separated: torch,ember,compiled (default: all three when torch is "
                        "importable; compiled = ember running the script with --compile)")
    p.add_argument("--no-floor", action="store_true", help="skip the BLAS floor measurement")
    p.add_argument("--timeout", type=float, default=900, help="seconds per process (default 900)")
    p.add_argument("--raw-dir", default=str(RAW_DIR),
                   help="where the raw JSON and the Markdown report go (default .bench/)")
    p.add_argument("--write-doc", action="store_true",
                   help="write the results into docs/benchmarks.md (between its markers)")
    opts = p.parse_args(argv)
    names = [n for item in opts.only for n in item.split(",") if n]
    unknown = [n for n in names if n not in BY_NAME]
    if unknown:
        p.error(f"unknown workload(s) {', '.join(unknown)}; choose from {', '.join(BY_NAME)}")
    opts.workloads = [BY_NAME[n] for n in names] if names else list(WORKLOADS)
    if opts.runs is None:
        opts.runs = 1 if opts.quick else 3
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    opts.thread_counts = {"1": [1], "all": [cores], "both": [1] if cores == 1 else [1, cores]}[
        opts.threads]
    if opts.engines is None:
        opts.engines = ["torch", "ember", "compiled"] if torch_available() else [
            "ember", "compiled"]
        if "torch" not in opts.engines:
            print("PyTorch is not importable: reporting ember alone", flush=True)
    else:
        opts.engines = [e for e in ENGINES if e in opts.engines.split(",")]
        if not opts.engines:
            p.error("--engines takes torch, ember, compiled (comma-separated)")
    return opts


def main(argv: list[str] | None = None) -> int:
    opts = parse(argv)
    results = benchmark(opts)
    report = render(results)
    raw = Path(opts.raw_dir)
    raw.mkdir(parents=True, exist_ok=True)
    stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    for path in (raw / f"results-{stamp}.json", raw / "latest.json"):
        path.write_text(json.dumps(results, indent=1))
    (raw / "latest.md").write_text(report)
    print("\n" + report)
    print(f"raw results: {raw / 'latest.json'}; report: {raw / 'latest.md'}")
    if opts.write_doc:
        write_doc(report)
        print(f"wrote {DOC.relative_to(ROOT)}")
    failed = [name for sec in results["by_threads"].values()
              for name, entry in sec["workloads"].items() if "skipped" not in entry
              for runs in entry.values() for r in runs if "error" in r]
    return 1 if failed else 0
