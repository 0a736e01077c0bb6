"""The eager kernels of one instruction set, timed: ``python -m bench.isa_variant --march M
[eager_kernels' options]`` builds ember._kernels again without its target clones for ``-march=M``
(``x86-64``: the baseline, ``x86-64-v3``: AVX2 with FMA, ``x86-64-v4``: AVX-512) and runs
``bench.eager_kernels --engine ember`` with that build loaded in place of the installed one.

The installed extension picks its variant by the CPU it runs on, so a machine shows only its own
variant's speed; this shows another's where the CPU can run it (an AVX-512 machine runs all
three). A kernel written for one register width can be slow in another: the attention kernel's
16-float vectors, spilled to the stack in the AVX2 variant, ran 20-50x slower there
(docs/benchmarks.md, "Session 2026-12-07 (g)"). The bits are the same in every variant
(tests/test_kernels*.py build these variants and compare).
"""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "src" / "ember"

# the build loaded as ember._kernels before ember imports it (the loader checks C_HASH as usual)
_PRELOAD = """
import importlib.util, runpy, sys
spec = importlib.util.spec_from_file_location("ember._kernels", sys.argv[1])
mod = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mod)
sys.modules["ember._kernels"] = mod
sys.argv = ["bench.eager_kernels"] + sys.argv[2:]
runpy.run_module("bench.eager_kernels", run_name="__main__")
"""


def build(march: str, dest: Path) -> Path:
    """src/ember's kernel sources compiled without target clones for ``-march=march`` into
    ``dest``, stamped with the sources' hash (so ember's loader takes it): the extension's path."""
    from ember._kernels_loader import C_SOURCES
    from ember._native_core import source_hash

    so = dest / ("_kernels" + sysconfig.get_config_var("EXT_SUFFIX"))
    cmd = ["cc", "-shared", "-fPIC", "-std=c11", "-O3", "-ffp-contract=off", "-fno-trapping-math",
           "-fno-math-errno", f"-march={march}", "-DEMBER_KERNELS_NO_CLONES",
           f'-DEMBER_KERNELS_C_HASH="{source_hash(C_SOURCES)}"',
           f'-DEMBER_KERNELS_BUILT_WITH="built with cc -march={march} by bench.isa_variant"',
           f"-I{sysconfig.get_paths()['include']}",
           *[str(PACKAGE / name) for name in C_SOURCES if name.endswith(".c")],
           "-o", str(so), "-lm"]
    subprocess.run(cmd, check=True, capture_output=True, timeout=600)
    return so


def main() -> None:
    args = sys.argv[1:]
    if not args or args[0] in ("-h", "--help") or "--march" not in args:
        print(__doc__)
        return
    i = args.index("--march")
    march, rest = args[i + 1], args[:i] + args[i + 2:]
    with tempfile.TemporaryDirectory() as tmp:
        so = build(march, Path(tmp))
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(
            p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p))
        cmd = [sys.executable, "-c", _PRELOAD, str(so), "--engine", "ember", *rest]
        raise SystemExit(subprocess.run(cmd, env=env).returncode)


if __name__ == "__main__":
    main()
