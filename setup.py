"""Builds the optional C core ``ember._native`` and the optional eager kernels ``ember._kernels``
(the rest of the metadata is in pyproject.toml).

``pip install .`` / ``pip install -e .`` compile it when a C compiler and Python's headers are
present; otherwise they install the pure-Python package and say so in one line (shown by
``pip install -v``, and afterwards by ``ember --version``). A missing compiler never fails the
install. The build records a hash of the C sources and of the Python modules they mirror (the
lists are in src/ember/_native_core.py), so an editable install notices a stale extension and
runs the Python core until it is rebuilt (``ember._kernels`` records the hash of its C file the same
way; without it, or stale, the ops run their NumPy formulas). ``EMBER_NO_NATIVE=1`` skips the build;
``EMBER_REQUIRE_NATIVE=1`` makes a failed build fail the install (CI, and C work: shows the
compiler's errors).
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import sys
import sysconfig
from pathlib import Path
from typing import Any

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent
PACKAGE = ROOT / "src" / "ember"


def _native_core():  # src/ember/_native_core.py, loaded alone (it imports only the stdlib)
    spec = importlib.util.spec_from_file_location("_ember_native_core", PACKAGE / "_native_core.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


core = _native_core()


class OptionalBuildExt(build_ext):
    """build_ext that installs the pure-Python package when the extension cannot be built."""

    def run(self) -> None:
        try:
            self._status("")  # a build that succeeds leaves no note behind
        except OSError:
            pass
        if os.environ.get("EMBER_NO_NATIVE", "") not in ("", "0"):
            self._skip("EMBER_NO_NATIVE was set at install")
            return
        try:
            super().run()
        except Exception as e:  # noqa: BLE001 - no compiler, no headers, a failed compile
            self._skip(_why(e))

    def build_extension(self, ext: Extension) -> None:
        try:
            super().build_extension(ext)
        except Exception as e:  # noqa: BLE001
            if ext.name == KERNELS:  # the kernels are optional on their own: the core still runs
                self._skip_kernels(_why(e))
            else:
                self._skip(_why(e))

    def copy_file(self, infile: str, outfile: str, *args: Any, **kwargs: Any) -> Any:
        """An in-place build replaces the extension by a rename, never by writing into it: a
        process that has the old one loaded keeps its mapping (writing would crash it)."""
        if not str(outfile).endswith((".so", ".pyd")) or self.dry_run:
            return super().copy_file(infile, outfile, *args, **kwargs)
        tmp = f"{outfile}.{os.getpid()}.tmp"
        shutil.copyfile(infile, tmp)
        shutil.copymode(infile, tmp)
        os.replace(tmp, outfile)
        return outfile, 1

    def get_outputs(self) -> list[str]:  # only what exists (an editable install copies these)
        return [p for p in super().get_outputs() if os.path.exists(p)]

    def _skip(self, why: str) -> None:
        if os.environ.get("EMBER_REQUIRE_NATIVE", "") not in ("", "0"):
            raise SystemExit(f"ember._native was not built: {why} (EMBER_REQUIRE_NATIVE is set)")
        line = f"ember._native was not built: {why}; installed the pure-Python core"
        print(f"ember: {line}", file=sys.stderr)
        try:
            self._status(line)
        except OSError:  # a read-only tree: the line above is all there is
            pass

    def _skip_kernels(self, why: str) -> None:
        if os.environ.get("EMBER_REQUIRE_NATIVE", "") not in ("", "0"):
            raise SystemExit(f"{KERNELS} was not built: {why} (EMBER_REQUIRE_NATIVE is set)")
        print(f"ember: {KERNELS} was not built: {why}; the ops use their NumPy formulas",
              file=sys.stderr)

    def _status(self, text: str) -> None:
        """The note _native_core.py reads when the extension is absent: beside the package in
        the source tree for an in-place or editable build, in the build directory otherwise."""
        in_tree = self.inplace or getattr(self, "editable_mode", False) or not self.build_lib
        base = PACKAGE if in_tree else Path(self.build_lib) / "ember"
        note = base / core.BUILD_INFO
        if text:
            base.mkdir(parents=True, exist_ok=True)
            note.write_text(text + "\n")
        elif note.exists():
            note.unlink()


def _why(e: BaseException) -> str:
    try:
        detail = _one_line(e)
    except Exception:  # noqa: BLE001 - never let the explanation fail the install
        detail = type(e).__name__
    return f"no working C compiler or Python headers at install ({detail})"


def _one_line(e: BaseException) -> str:
    text = " ".join(str(e).split())
    cmd = re.search(r"Command '\['([^']+)'.*(exit status \d+)", text)  # a compiler that failed
    if cmd:
        text = f"{cmd.group(1)} ended with {cmd.group(2)}"
    return f"{type(e).__name__}: {text[:160]}"


def _native_extension() -> Extension:
    cc = sysconfig.get_config_var("CC") or "cc"
    built_with = f"built with {os.environ.get('CC', cc).split()[0]} for Python {sys.version.split()[0]}"
    return Extension(
        "ember._native",
        sources=[f"src/ember/{name}" for name in core.C_SOURCES if name.endswith(".c")],
        # the hashes below change with the mirrored modules too: they rebuild it as a header does
        depends=[f"src/ember/{name}" for name in core.C_SOURCES + core.MIRRORED
                 if not name.endswith(".c")],
        define_macros=[
            ("EMBER_NATIVE_C_HASH", f'"{core.source_hash(core.C_SOURCES, PACKAGE)}"'),
            ("EMBER_NATIVE_PY_HASH", f'"{core.source_hash(core.MIRRORED, PACKAGE)}"'),
            ("EMBER_NATIVE_BUILT_WITH", f'"{built_with}"'),
        ],
        # C99, warnings on; never -ffast-math (gradients must match the Python core bit for bit)
        extra_compile_args=["-std=c11", "-Wall", "-Wno-unused-function"]
        if sys.platform != "win32" else [],
        optional=True,
    )


KERNELS = "ember._kernels"
# the same list as src/ember/_kernels_loader.py's C_SOURCES
KERNELS_C_SOURCES = ("_kernels.h", "_kernels.c", "_kernels_blas.c", "_kernels_gemm.c")


def _kernels_extension() -> Extension:
    cc = sysconfig.get_config_var("CC") or "cc"
    built_with = f"built with {os.environ.get('CC', cc).split()[0]} for Python {sys.version.split()[0]}"
    return Extension(
        KERNELS,
        sources=[f"src/ember/{name}" for name in KERNELS_C_SOURCES if name.endswith(".c")],
        define_macros=[
            ("EMBER_KERNELS_C_HASH", f'"{core.source_hash(KERNELS_C_SOURCES, PACKAGE)}"'),
            ("EMBER_KERNELS_BUILT_WITH", f'"{built_with}"'),
        ],
        # -O3 vectorises the loops; -ffp-contract=off: no FMA contraction, so every instruction
        # set rounds alike; -fno-trapping-math lets the selects vectorise and -fno-math-errno the
        # square roots (no value changes);
        # never -ffast-math
        extra_compile_args=["-std=c11", "-O3", "-ffp-contract=off", "-fno-trapping-math",
                            "-fno-math-errno",
                            "-Wall", "-Wno-unused-function"]
        if sys.platform != "win32" else ["/O2", "/fp:precise"],
        optional=True,
    )


setup(ext_modules=[_native_extension(), _kernels_extension()],
      cmdclass={"build_ext": OptionalBuildExt})
