"""``ember launch`` / ``python -m ember.distributed.run``: torchrun's interface over MPICH's
``mpiexec``; each process runs the script under ``ember run`` with torchrun's variables set.

``python -m torch.distributed.run`` under ``ember run`` lands here too.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys

__all__ = ["add_arguments", "launch", "main", "torchrun_env"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """torchrun's flags, spelt with ``-`` or ``_``, then the script and its arguments."""
    for flag, kw in [("nproc-per-node", dict(type=int, default=1)), ("nnodes", dict(default="1")),
                     ("node-rank", dict(type=int, default=0)),
                     ("master-addr", dict(default="127.0.0.1")),
                     ("master-port", dict(type=int, default=29500)),
                     ("rdzv-id", dict(default="none")), ("standalone", dict(action="store_true"))]:
        parser.add_argument(f"--{flag}", f"--{flag.replace('-', '_')}", **kw)
    parser.add_argument("-m", "--module", dest="module", action="store_true",
                        help="run a module, like python -m")
    parser.add_argument("target", help="the script (or module with -m)")
    parser.add_argument("args", nargs=argparse.REMAINDER, help="arguments passed to the script")


def launch(args: argparse.Namespace) -> int:
    """Start ``args.nproc_per_node`` processes and return the first failing one's exit code."""
    if args.nnodes != "1":
        print("ember launch: several nodes are not supported yet; start one node with "
              "--nproc-per-node N", file=sys.stderr)
        return 2
    mpiexec = (shutil.which("mpiexec", path=os.path.dirname(sys.executable))
               or shutil.which("mpiexec"))
    if mpiexec is None:
        print("ember launch starts processes with MPI's mpiexec, which is not installed: "
              "pip install 'ember[mpi]'", file=sys.stderr)
        return 2
    env = dict(os.environ, EMBER_LAUNCH="1", MASTER_ADDR=args.master_addr,
               MASTER_PORT=str(args.master_port), TORCHELASTIC_RUN_ID=args.rdzv_id)
    cmd = [mpiexec, "-n", str(args.nproc_per_node), sys.executable, "-m", "ember", "run",
           *(["-m"] if args.module else []), args.target, *args.args]
    return subprocess.call(cmd, env=env)


def torchrun_env() -> None:
    """In a process ``launch`` started, set torchrun's variables from MPI's launcher (MPICH's
    hydra sets ``PMI_RANK``, ``PMI_SIZE``, ``MPI_LOCALRANKID``, ``MPI_LOCALNRANKS``)."""
    env = os.environ
    if env.get("EMBER_LAUNCH") != "1" or "PMI_RANK" not in env:
        return
    env["RANK"], env["WORLD_SIZE"] = env["PMI_RANK"], env.get("PMI_SIZE", "1")
    env["LOCAL_RANK"] = env.get("MPI_LOCALRANKID", env["PMI_RANK"])
    env["LOCAL_WORLD_SIZE"] = env.get("MPI_LOCALNRANKS", env["WORLD_SIZE"])
    env.setdefault("GROUP_RANK", "0")
    env.setdefault("ROLE_RANK", env["RANK"])
    env.setdefault("ROLE_WORLD_SIZE", env["WORLD_SIZE"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="ember launch", description=__doc__.split("\n\n")[0])
    add_arguments(parser)
    return launch(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
