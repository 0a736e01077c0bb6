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


def _demo(args: argparse.Namespace) -> int:
    try:
        import sklearn  # noqa: F401
    except ImportError:
        print("ember demo needs scikit-learn (for its bundled digits dataset), tqdm and matplotlib:\n"
              "    pip install 'ember[demo]'", file=sys.stderr)
        return 2
    from . import _alias

    _alias.install()
    from .demo import digits_cnn

    argv = ["--epochs", str(args.epochs), "--device", args.device, "--seed", str(args.seed),
            "--out", args.out]
    digits_cnn.main(argv)
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
    demo = sub.add_parser(
        "demo", help="train a small CNN on real handwritten digits and save plots and a checkpoint",
        description="Train a CNN on scikit-learn's bundled handwritten digits (1,797 8x8 images), "
                    "print the test accuracy, and write a loss/accuracy plot, a grid of predicted "
                    "test digits and the model checkpoint into --out.")
    demo.add_argument("--epochs", type=int, default=12, help="training epochs (default 12)")
    demo.add_argument("--device", default="auto", help="cpu, cuda or auto (default)")
    demo.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    demo.add_argument("--out", default="runs/digits", help="output folder (default runs/digits)")
    demo.set_defaults(func=_demo)
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except SystemExit as e:  # the script's own exit code
        code = e.code
        return code if isinstance(code, int) else (0 if code is None else 1)


if __name__ == "__main__":
    sys.exit(main())
