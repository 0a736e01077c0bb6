"""The ``ember`` command: ``ember run SCRIPT [ARGS...]`` runs a PyTorch script on ember."""

from __future__ import annotations

import argparse
import runpy
import sys


def _run(args: argparse.Namespace) -> int:
    from . import _alias

    _alias.install()
    if args.report:
        import atexit

        from ._missing import report

        atexit.register(lambda: print(report(), file=sys.stderr))
    if args.module:
        sys.argv = [args.target, *args.args]
        runpy.run_module(args.target, run_name="__main__", alter_sys=True)
    else:
        sys.argv = [args.target, *args.args]
        import os

        sys.path.insert(0, os.path.dirname(os.path.abspath(args.target)))
        runpy.run_path(args.target, run_name="__main__")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="ember", description="ember: PyTorch's API on NumPy.")
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run an unmodified PyTorch script on ember (import torch -> ember)")
    run.add_argument("--report", action="store_true",
                     help="at exit, list each torch API the run touched that ember lacks")
    run.add_argument("-m", dest="module", action="store_true", help="run a module, like python -m")
    run.add_argument("target", help="the script (or module with -m)")
    run.add_argument("args", nargs=argparse.REMAINDER, help="arguments passed to the script")
    run.set_defaults(func=_run)
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except SystemExit as e:  # the script's own exit code
        code = e.code
        return code if isinstance(code, int) else (0 if code is None else 1)


if __name__ == "__main__":
    sys.exit(main())
