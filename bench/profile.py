"""Where ember's time goes on one workload: ``python -m bench.profile NAME``.

Runs the workload under ``ember run`` with cProfile (deterministic; inflates tiny functions) and,
when installed, py-spy (sampling; honest proportions). Prints the top functions by own time
(tottime / self samples) and by cumulative time. ``--tool ops`` instead times every op's forward
and backward (``bench/op_timer.py``). Extra arguments after ``--`` go to the workload
(e.g. ``-- --steps 10``).
"""

from __future__ import annotations

import argparse
import collections
import io
import os
import pstats
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from .runner import BY_NAME, ROOT, WORKLOADS_DIR, engine_env


def _short(path: str) -> str:
    root = str(ROOT) + os.sep
    if path.startswith(root):
        return path[len(root):]
    for marker in ("site-packages" + os.sep, "lib" + os.sep + "python3"):
        if marker in path:
            return path.split(marker, 1)[1]
    return path


def cprofile(script: Path, args: list[str], env: dict, top: int) -> str:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "prof.out"
        cmd = [sys.executable, "-m", "cProfile", "-o", str(out), "-m", "ember", "run",
               str(script), *args]
        res = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
        if res.returncode != 0 or not out.exists():
            return f"cProfile run failed:\n{res.stderr[-2000:]}"
        stats = pstats.Stats(str(out))
    total = max(stats.total_tt, 1e-9)
    rows = []
    for (file, line, func), (_cc, nc, tt, ct, _) in stats.stats.items():
        rows.append((tt, ct, nc, f"{_short(file)}:{line}:{func}"))
    text = io.StringIO()
    text.write(f"cProfile: {total:.2f} s total\n\nby own time (tottime):\n")
    text.write(f"{'tottime s':>10} {'%':>5} {'cumtime s':>10} {'calls':>9}  function\n")
    for tt, ct, nc, name in sorted(rows, reverse=True)[:top]:
        text.write(f"{tt:10.3f} {100 * tt / total:5.1f} {ct:10.3f} {nc:9d}  {name}\n")
    text.write("\nby cumulative time (ember's own functions):\n")
    own = [r for r in rows if r[3].startswith("ember" + os.sep)]
    for tt, ct, nc, name in sorted(own, key=lambda r: -r[1])[:top]:
        text.write(f"{tt:10.3f} {100 * ct / total:5.1f} {ct:10.3f} {nc:9d}  {name}\n")
    return text.getvalue()


def pyspy(script: Path, args: list[str], env: dict, top: int, rate: int, native: bool,
          lines: bool = False) -> str:
    exe = shutil.which("py-spy", path=os.path.dirname(sys.executable) + os.pathsep
                       + os.environ.get("PATH", ""))
    if exe is None:
        return "py-spy is not installed (pip install py-spy)"
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "spy.txt"
        cmd = [exe, "record", "-f", "raw", "-r", str(rate), "-o", str(out)]
        if not lines:
            cmd.append("--nolineno")
        if native:
            cmd.append("--native")
        cmd += ["--", sys.executable, "-m", "ember", "run", str(script), *args]
        res = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
        if not out.exists():
            return f"py-spy failed:\n{res.stderr[-2000:]}"
        self_t: collections.Counter = collections.Counter()
        incl: collections.Counter = collections.Counter()
        total = 0
        for line in out.read_text().splitlines():
            stack, _, count = line.rpartition(" ")
            if not stack:
                continue
            n = int(count)
            total += n
            frames = [_frame(f) for f in stack.split(";")]
            self_t[frames[-1]] += n
            for f in set(frames):
                incl[f] += n
    total = max(total, 1)
    text = io.StringIO()
    text.write(f"py-spy: {total} samples at {rate}/s\n\nby own samples:\n")
    for name, n in self_t.most_common(top):
        text.write(f"{100 * n / total:6.1f}%  {name}\n")
    text.write("\nby inclusive samples (ember's own functions):\n")
    own = [(name, n) for name, n in incl.most_common() if "ember" + os.sep in name
           and "bench" not in name]
    for name, n in own[:top]:
        text.write(f"{100 * n / total:6.1f}%  {name}\n")
    return text.getvalue()


def _frame(f: str) -> str:
    name, _, where = f.partition(" (")
    where = where.rstrip(")")
    return f"{_short(where)}:{name}" if where else name


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    extra: list[str] = []
    if "--" in argv:
        i = argv.index("--")
        argv, extra = argv[:i], argv[i + 1:]
    p = argparse.ArgumentParser(prog="python -m bench.profile", description=__doc__)
    p.add_argument("name", choices=list(BY_NAME))
    p.add_argument("--tool", choices=["cprofile", "pyspy", "both", "ops"], default="both",
                   help="ops: ms per step per op class (bench/op_timer.py)")
    p.add_argument("--steps", type=int, default=20, help="steps for --tool ops (default 20)")
    p.add_argument("--top", type=int, default=25)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--rate", type=int, default=250, help="py-spy samples per second")
    p.add_argument("--native", action="store_true", help="py-spy: include C frames")
    p.add_argument("--lines", action="store_true", help="py-spy: per source line, not function")
    opts = p.parse_args(argv)
    script = WORKLOADS_DIR / f"{opts.name}.py"
    env = engine_env(opts.threads)
    if opts.tool == "ops":
        res = subprocess.run([sys.executable, "-m", "bench.op_timer", str(script), str(opts.steps),
                              *extra], cwd=ROOT, env=env, capture_output=True, text=True)
        print(res.stdout[res.stdout.find("ms per step"):] if res.returncode == 0
              else f"op timer failed:\n{res.stderr[-2000:]}")
        return res.returncode
    if opts.tool in ("cprofile", "both"):
        print(cprofile(script, extra, env, opts.top))
    if opts.tool in ("pyspy", "both"):
        print(pyspy(script, extra, env, opts.top, opts.rate, opts.native, opts.lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
