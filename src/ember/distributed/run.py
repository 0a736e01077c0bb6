"""``ember launch`` / ``python -m ember.distributed.run``: torchrun's interface over MPICH's
``mpiexec``; each process runs the script under ``ember run`` with torchrun's variables set.

``python -m torch.distributed.run`` under ``ember run`` lands here too. Several machines, either
way: torchrun's (the same command on each machine with ``--nnodes M --node-rank R
--master-addr A --master-port P``; the machines join at ``init_process_group``, _rendezvous.py)
or MPICH's (one command on one machine with ``--hostfile F``: one process set per host line).
In torchrun's form the launchers also watch each other (_node_watch.py), so a failure on one
machine ends the job on all of them.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time

__all__ = ["add_arguments", "end_job", "launch", "main", "torchrun_env"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """torchrun's flags, spelt with ``-`` or ``_``, then the script and its arguments."""
    for flag, kw in [("nproc-per-node", dict(type=int, default=1)), ("nnodes", dict(default="1")),
                     ("node-rank", dict(type=int, default=0)),
                     ("master-addr", dict(default="127.0.0.1")),
                     ("master-port", dict(type=int, default=29500)),
                     ("rdzv-id", dict(default="none")), ("standalone", dict(action="store_true")),
                     ("hostfile", dict(default=None, help="MPICH host file: one machine a line "
                                       "(host or host:slots); starts every machine from here"))]:
        parser.add_argument(f"--{flag}", f"--{flag.replace('-', '_')}", **kw)
    parser.add_argument("-m", "--module", dest="module", action="store_true",
                        help="run a module, like python -m")
    parser.add_argument("target", help="the script (or module with -m)")
    parser.add_argument("args", nargs=argparse.REMAINDER, help="arguments passed to the script")


def launch(args: argparse.Namespace) -> int:
    """Start the processes and return the first failing one's exit code."""
    mpiexec = (shutil.which("mpiexec", path=os.path.dirname(sys.executable))
               or shutil.which("mpiexec"))
    if mpiexec is None:
        print("ember launch starts processes with MPI's mpiexec, which is not installed: "
              "pip install 'ember[mpi]'", file=sys.stderr)
        return 2
    if not str(args.nnodes).isdigit():
        print(f"ember launch: --nnodes {args.nnodes}: elastic ranges (MIN:MAX) are not supported; "
              "give the number of machines", file=sys.stderr)
        return 2
    nnodes, per_node = int(args.nnodes), args.nproc_per_node
    env = dict(os.environ, EMBER_LAUNCH="1", MASTER_ADDR=args.master_addr,
               MASTER_PORT=str(args.master_port), TORCHELASTIC_RUN_ID=args.rdzv_id)
    where = ["-n", str(per_node)]
    if args.hostfile:
        hosts = _hosts(args.hostfile)
        nnodes = len(hosts) if nnodes == 1 else nnodes
        where = ["-f", args.hostfile, "-ppn", str(per_node), "-n", str(per_node * nnodes)]
    elif nnodes > 1:
        if not 0 <= args.node_rank < nnodes:
            print(f"ember launch: --node-rank {args.node_rank} must be in [0, {nnodes})",
                  file=sys.stderr)
            return 2
        env.update(EMBER_NNODES=str(nnodes), EMBER_NODE_RANK=str(args.node_rank))
    cmd = [mpiexec, *where, sys.executable, "-m", "ember", "run",
           *(["-m"] if args.module else []), args.target, *args.args]
    if "EMBER_NNODES" not in env:
        return subprocess.call(cmd, env=env)  # one mpiexec: it ends the whole job itself
    from ._node_watch import NodeWatch

    watch = NodeWatch(args.master_addr, args.master_port + 1, args.node_rank, nnodes)
    return watch.run(subprocess.Popen(cmd, env=env))


def _hosts(path: str) -> list[str]:
    with open(path) as f:
        return [ln.split("#")[0].strip() for ln in f if ln.split("#")[0].strip()]


def torchrun_env() -> None:
    """In a process ``launch`` started, set torchrun's variables from MPI's launcher (MPICH's
    hydra sets ``PMI_RANK``, ``PMI_SIZE``, ``MPI_LOCALRANKID``, ``MPI_LOCALNRANKS``)."""
    env = os.environ
    if env.get("EMBER_LAUNCH") != "1" or "PMI_RANK" not in env:
        return
    rank, size = int(env["PMI_RANK"]), int(env.get("PMI_SIZE", "1"))
    local = int(env.get("MPI_LOCALRANKID", rank))
    per_node = int(env.get("MPI_LOCALNRANKS", size))
    node = rank // per_node  # host-file launches: one MPI world over every machine
    if "EMBER_NNODES" in env:  # torchrun-style: one MPI world per machine, joined later
        node = int(env["EMBER_NODE_RANK"])
        rank, size = node * per_node + local, int(env["EMBER_NNODES"]) * per_node
    env["RANK"], env["WORLD_SIZE"] = str(rank), str(size)
    env["LOCAL_RANK"], env["LOCAL_WORLD_SIZE"] = str(local), str(per_node)
    env["GROUP_RANK"] = str(node)
    env.setdefault("ROLE_RANK", env["RANK"])
    env.setdefault("ROLE_WORLD_SIZE", env["WORLD_SIZE"])


def end_job(code: int) -> None:
    """A launched process failed: end every process of the job now (MPI_Abort), as torchrun
    stops the other workers, rather than leave them waiting in a collective for this one."""
    mpi = sys.modules.get("mpi4py.MPI")
    if mpi is None or not mpi.Is_initialized() or mpi.Is_finalized():
        return  # MPI never started here: mpiexec sees the exit code itself
    from .distributed_c10d import _WORLD

    sys.stdout.flush()
    sys.stderr.flush()
    # mpiexec forwards output and the abort on different channels; give it a moment to pass
    # on this process's traceback before it kills the job, or the user sees half of it
    time.sleep(0.5)
    comm = _WORLD["group"]._comm if _WORLD else mpi.COMM_WORLD  # several nodes: the joined one
    comm.Abort(code)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="ember launch", description=__doc__.split("\n\n")[0])
    add_arguments(parser)
    return launch(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
