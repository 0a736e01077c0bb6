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


_FLAGS = [
    ("nproc-per-node", dict(type=int, default=1, metavar="N",
                            help="processes to start on this machine (default 1)")),
    ("nnodes", dict(default="1", metavar="M", help="machines in the job (default 1)")),
    ("node-rank", dict(type=int, default=0, metavar="R",
                       help="this machine's rank, 0 to M-1 (default 0)")),
    ("master-addr", dict(default="127.0.0.1", metavar="ADDR",
                         help="address of the rank-0 machine (default 127.0.0.1)")),
    ("master-port", dict(type=int, default=29500, metavar="PORT",
                         help="free port on the rank-0 machine (default 29500)")),
    ("rdzv-id", dict(default="none", metavar="ID", help="job id, as TORCHELASTIC_RUN_ID")),
    ("standalone", dict(action="store_true", help="one machine (accepted, as torchrun's)")),
    ("hostfile", dict(default=None, metavar="FILE", help="MPICH host file: one machine a line "
                      "(host or host:slots); starts every machine from here")),
]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """torchrun's flags, spelt with ``-`` or ``_`` (help shows the ``-`` one), then the script
    and its arguments."""
    for flag, kw in _FLAGS:
        parser.add_argument(f"--{flag}", **kw)
        alias = flag.replace("-", "_")
        if alias != flag:  # torchrun's other spelling: same destination, not listed twice
            hidden = {k: v for k, v in kw.items() if k in ("type", "action")}
            parser.add_argument(f"--{alias}", dest=alias, default=argparse.SUPPRESS,
                                help=argparse.SUPPRESS, **hidden)
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
    """A launched process failed: say which rank it is, then end every process of the job now
    (MPI_Abort), as torchrun stops the other workers, rather than leave them waiting in a
    collective for this one (mpiexec's own report names only a PID)."""
    env = os.environ
    parts = [f"local rank {env['LOCAL_RANK']}"] if "LOCAL_RANK" in env else []
    if "GROUP_RANK" in env:
        parts.append(f"node {env['GROUP_RANK']}")
    parts.append(f"pid {os.getpid()}")
    where = f"rank {env.get('RANK', '?')} ({', '.join(parts)})"
    print(f"ember launch: {where} failed with exit code {code}; ending the job",
          file=sys.stderr, flush=True)
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


def description() -> str:
    """The help text's description: the module docstring's first paragraph, as plain text."""
    return " ".join(__doc__.split("\n\n")[0].replace("``", "").split())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="ember launch", description=description())
    add_arguments(parser)
    return launch(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
