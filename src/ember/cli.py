"""The ``ember`` command: ``ember run SCRIPT [ARGS...]`` runs a PyTorch script on ember."""

from __future__ import annotations

import argparse
import io
import os
import runpy
import sys
import traceback
import types
from typing import Any

# Frames of the launcher itself: a traceback printed for the user starts below them.
_LAUNCHER_FILES = frozenset({
    __file__,
    runpy.run_path.__code__.co_filename,  # "<frozen runpy>" on 3.11
    "<frozen importlib._bootstrap>",
    "<frozen importlib._bootstrap_external>",
})
_RUNPY_FILES = _LAUNCHER_FILES - {__file__}
_ended_by: str | None = None  # "Type: message" of the exception that ended the run, for --report
_launcher_main: Any = None  # the launcher's own __main__, kept alive after the script's replaces it


def _launcher_dirs() -> set[str]:
    """What the interpreter put first on ``sys.path`` for the launcher (the ``ember`` script's
    directory, or the current one for ``python -m ember``); call before ``sys.argv`` changes."""
    argv0 = sys.argv[0] if sys.argv and sys.argv[0] else "."
    return {"", os.getcwd(), os.path.dirname(os.path.abspath(argv0)),
            os.path.dirname(os.path.realpath(argv0))}


def _set_path0(directory: str, launcher_dirs: set[str]) -> None:
    """Put ``directory`` first on ``sys.path`` as ``python`` does, in place of the launcher's."""
    if sys.flags.safe_path:  # python -P: nothing is prepended
        return
    if sys.path and sys.path[0] in launcher_dirs:
        sys.path[0] = directory
    else:
        sys.path.insert(0, directory)


def _exit_code(code: Any) -> int:
    """What ``SystemExit(code)`` makes the interpreter do: None -> 0, int -> it, else print -> 1."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    sys.stdout.flush()
    print(code, file=sys.stderr)
    return 1


def _user_traceback(tb: types.TracebackType | None) -> types.TracebackType | None:
    """``tb`` without the launcher's frames (cli.py, runpy, importlib) above the user's code,
    and without the import hook's frames below it (a missing ``torch.x`` then reads like
    Python's own ModuleNotFoundError: the traceback ends at the user's import line)."""
    first = tb
    while first is not None and first.tb_frame.f_code.co_filename in _LAUNCHER_FILES:
        first = first.tb_next
    if first is None:
        return tb
    alias_file = _alias_file()
    frames = _frames(first)
    keep = len(frames)  # drop a tail made only of the hook's (and importlib's) frames
    while keep > 1 and frames[keep - 1].tb_frame.f_code.co_filename in (
            _LAUNCHER_FILES | {alias_file}):
        keep -= 1
    if any(t.tb_frame.f_code.co_filename == alias_file for t in frames[keep:]):
        frames[keep - 1].tb_next = None
    return first


def _alias_file() -> str:
    from . import _alias

    return _alias.TorchAlias.create_module.__code__.co_filename


def _frames(tb: types.TracebackType | None) -> list[types.TracebackType]:
    out = []
    while tb is not None:
        out.append(tb)
        tb = tb.tb_next
    return out


def _raised_by_launcher(exc: BaseException, files: frozenset[str] = _RUNPY_FILES) -> bool:
    """True when ``exc`` was raised in ``files`` (runpy: module not found...), not by user code."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    return tb is not None and tb.tb_frame.f_code.co_filename in files


def _note_missing(exc: BaseException) -> None:
    """Record in ``--report`` a missing torch name the run died on (``from torch.x import y``)."""
    if type(exc) is ImportError and exc.name and exc.args:
        module = exc.name
        if module == "ember.vision" or module.startswith("ember.vision."):
            module = "torchvision" + module[len("ember.vision"):]
        elif module == "ember" or module.startswith("ember."):
            module = "torch" + module[len("ember"):]
        msg = str(exc.args[0])
        if module.startswith("torch") and msg.startswith("cannot import name '"):
            from ._missing import record

            record(f"{module}.{msg.split(chr(39))[1]}")


def _report_uncaught(exc: BaseException) -> int:
    """Print ``exc`` as the interpreter would for an uncaught exception; return the exit code."""
    global _ended_by
    _note_missing(exc)
    _ended_by = "".join(traceback.format_exception_only(exc)).strip().splitlines()[-1]
    # A script that does not compile gets no traceback, only the error (as with python).
    tb = None if isinstance(exc, SyntaxError) and _raised_by_launcher(exc, _LAUNCHER_FILES) \
        else _user_traceback(exc.__traceback__)
    exc.__traceback__ = tb
    sys.last_type, sys.last_value, sys.last_traceback = type(exc), exc, tb
    sys.stdout.flush()
    # Under ``ember launch`` the traceback goes out in one write: mpiexec forwards what it has
    # read when a rank aborts the job, and a line-by-line traceback would arrive cut.
    launched, stderr = os.environ.get("EMBER_LAUNCH") == "1", sys.stderr
    if launched:
        sys.stderr = io.StringIO()
    try:
        sys.excepthook(type(exc), exc, tb)
    except BaseException as hook_error:  # as the interpreter does: show both
        print("Error in sys.excepthook:", file=sys.stderr)
        traceback.print_exception(hook_error)
        print("\nOriginal exception was:", file=sys.stderr)
        traceback.print_exception(type(exc), exc, tb)
    finally:
        if launched:
            text, sys.stderr = sys.stderr.getvalue(), stderr
            stderr.write(text)
            stderr.flush()
    return 130 if isinstance(exc, KeyboardInterrupt) else 1


def _exec_script(path: str) -> None:
    """Run the file at ``path`` as ``__main__``, as ``python path`` does."""
    global _launcher_main
    abspath = os.path.abspath(path)
    with open(abspath, "rb") as f:  # the caller has checked that it opens
        source = f.read()
    code = compile(source, abspath, "exec", dont_inherit=True)
    import builtins
    import importlib.machinery

    main = types.ModuleType("__main__")
    main.__dict__.update(__file__=abspath, __cached__=None, __builtins__=builtins, __spec__=None,
                         __package__=None,
                         __loader__=importlib.machinery.SourceFileLoader("__main__", abspath))
    _launcher_main = sys.modules.get("__main__")
    sys.modules["__main__"] = main
    exec(code, main.__dict__)


def _exec_code(code: str) -> None:
    """Run ``code`` as ``__main__``, as ``python -c code`` does."""
    global _launcher_main
    import builtins

    compiled = compile(code, "<string>", "exec", dont_inherit=True)
    main = types.ModuleType("__main__")
    main.__dict__.update(__builtins__=builtins, __spec__=None, __package__=None,
                         __loader__=None)
    _launcher_main = sys.modules.get("__main__")
    sys.modules["__main__"] = main
    exec(compiled, main.__dict__)


def _run(args: argparse.Namespace) -> int:
    if getattr(args, "fake_cuda", False):
        from .testing import fake_cuda

        with fake_cuda():  # `cuda` is NumPy arrays with CUDA's rules (docs/cuda.md)
            code = _run_target(args)
    else:
        code = _run_target(args)
    if code and os.environ.get("EMBER_LAUNCH") == "1":
        from .distributed.run import end_job

        end_job(code)  # the other processes must not wait for this one in a collective
    return code


def _run_target(args: argparse.Namespace) -> int:
    from . import _alias

    _alias.install()
    _alias.install_for_children()
    if args.report:
        import atexit

        from ._missing import report

        atexit.register(lambda: print(report(_ended_by), file=sys.stderr))
    from .distributed.run import torchrun_env

    torchrun_env()
    launcher_dirs = _launcher_dirs()
    if args.code is not None:  # python -c: the other arguments are sys.argv[1:]
        sys.argv = ["-c", *([args.target] if args.target is not None else []), *args.args]
    else:
        sys.argv = [args.target, *args.args]
    try:
        if args.code is not None:
            _set_path0("", launcher_dirs)  # python -c puts '' (the current folder) first
            _exec_code(args.code)
        elif args.module:
            _set_path0(os.getcwd(), launcher_dirs)
            try:
                # `-m torch.x` runs ember.x (the alias gives packages, which runpy cannot run)
                name = _alias._aliased(args.target) or args.target
                runpy.run_module(name, run_name="__main__", alter_sys=True)
            except ImportError as e:
                if not _raised_by_launcher(e):
                    raise
                print(f"ember: {e}", file=sys.stderr)  # python: "No module named x"
                return 1
        elif os.path.isdir(args.target) or _is_zip(args.target):
            if sys.path and not sys.flags.safe_path:
                _set_path0(os.path.abspath(args.target), launcher_dirs)
            try:
                runpy.run_path(args.target, run_name="__main__")
            except ImportError as e:
                if not _raised_by_launcher(e):
                    raise
                print(f"ember: {e}", file=sys.stderr)  # "can't find '__main__' module in ..."
                return 1
        else:
            try:
                open(args.target, "rb").close()
            except OSError as e:
                print(f"ember: can't open file {os.path.abspath(args.target)!r}: "
                      f"[Errno {e.errno}] {e.strerror}", file=sys.stderr)
                return 2
            _set_path0(os.path.dirname(os.path.realpath(args.target)), launcher_dirs)
            _exec_script(args.target)
    except SystemExit as e:  # the script's own exit code, or its message
        return _exit_code(e.code)
    except BaseException as e:  # noqa: BLE001 - the interpreter's own top level
        return _report_uncaught(e)
    return 0


def _is_zip(path: str) -> bool:
    import zipfile

    try:
        return zipfile.is_zipfile(path)
    except OSError:
        return False


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


class _Version(argparse.Action):
    """``--version``: the text as written (argparse's own action rewraps it)."""

    def __call__(self, parser: Any, namespace: Any, values: Any, option: Any = None) -> None:
        print(self.default)
        parser.exit()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="ember", description="ember: PyTorch's API on NumPy.")
    from ._native_core import describe as _core
    from ._version import TORCH_API_VERSION, __ember_version__

    parser.add_argument("--version", action=_Version, nargs=0,
                        help="show ember's version and which core (native or pure Python) runs",
                        default=f"ember {__ember_version__} (PyTorch {TORCH_API_VERSION} API)\n"
                                f"{_core()}")
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser(
        "run", help="run an unmodified PyTorch script on ember (import torch -> ember)",
        description="Run a PyTorch script, module (-m) or code string (-c) unchanged on ember: "
                    "`import torch` (and torchvision) give ember for the whole run, as if it were "
                    "PyTorch; arguments after the script go to it, as with python.")
    run.add_argument("--report", action="store_true",
                     help="at exit, list each torch API the run touched that ember lacks")
    run.add_argument("-m", dest="module", action="store_true", help="run a module, like python -m")
    run.add_argument("-c", dest="code", metavar="CODE",
                     help="run CODE, like python -c (arguments after it go to sys.argv[1:])")
    run.add_argument("--fake-cuda", action="store_true",
                     help="make 'cuda' a device backed by NumPy arrays with CUDA's rules, to find "
                          "device mistakes without a GPU (numerics and speed are the CPU's)")
    run.add_argument("target", nargs="?", help="the script (or module with -m)")
    run.add_argument("args", nargs=argparse.REMAINDER, help="arguments passed to the script")
    run.set_defaults(func=_run)
    from .distributed import run as _dist_run

    launch = sub.add_parser(
        "launch", help="start N processes of a script, as torchrun does (over MPI's mpiexec)",
        description=_dist_run.description())
    _dist_run.add_arguments(launch)
    launch.set_defaults(func=_dist_run.launch)
    demo = sub.add_parser(
        "demo", help="train a small CNN on real handwritten digits and save plots and a checkpoint",
        description="Train a CNN on scikit-learn's bundled handwritten digits (1,797 8x8 images), "
                    "print the test accuracy, and write a loss/accuracy plot, a grid of predicted "
                    "test digits and the model checkpoint into --out.")
    demo.add_argument("--epochs", type=int, default=12, help="training epochs (default 12)")
    demo.add_argument("--device", default="auto", choices=("auto", "cpu", "cuda"),
                      help="cpu, cuda or auto (default: cuda when available)")
    demo.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    demo.add_argument("--out", default="runs/digits", help="output folder (default runs/digits)")
    demo.set_defaults(func=_demo)
    args = parser.parse_args(argv)
    if args.command == "run":
        if args.code is not None and args.module:
            run.error("-c and -m cannot be used together")
        if args.code is None and args.target is None:
            run.error("the following arguments are required: target (or -c CODE)")
    try:
        return args.func(args)
    except SystemExit as e:  # a subcommand's own exit
        return _exit_code(e.code)


if __name__ == "__main__":
    sys.exit(main())
