"""``ember.distributed``: PyTorch's ``torch.distributed`` over MPI (``pip install 'ember[mpi]'``).

Start the processes with ``ember launch --nproc-per-node 4 train.py`` (torchrun's interface over
MPICH's ``mpiexec``, or ``mpiexec -n 4 ember run train.py`` by hand); in each,
``init_process_group("gloo")`` (or ``"mpi"``) joins MPI's world, and the collectives
(``all_reduce``, ``broadcast``, ``all_gather``, ...) run on the tensors' arrays in place, through
MPI's non-blocking calls, so ``async_op=True`` returns a work object with ``wait()``. Before each
collective the ranks agree on what they run, so a mismatch or a missing rank is an error that
names the ranks (distributed_c10d.py). ``"nccl"`` runs CUDA tensors through CuPy's NCCL.

Without mpi4py, ``is_available()`` is False and ``init_process_group`` says what to install.
Everything that needs the default process group raises PyTorch's error for "no process group"
(``ValueError``) until ``init_process_group`` has run. See docs/parallel.md.
"""

from __future__ import annotations

import os

from . import _mpi
from ._names import (
    Backend,
    DistBackendError,
    DistError,
    DistNetworkError,
    DistributedNotInitializedError,  # noqa: F401 - raised by ember.nn and ember.utils.data
    DistStoreError,
    GroupMember,
    P2POp,
    ReduceOp,
    _no_group,  # noqa: F401 - used by ember.nn and ember.utils.data
    default_pg_timeout,
    group,
    reduce_op,
)
from ._object_collectives import (
    all_gather_object,
    broadcast_object_list,
    gather_object,
    recv_object_list,
    scatter_object_list,
    send_object_list,
)
from ._store import FileStore, HashStore, PrefixStore, Store, TCPStore
from .distributed_c10d import (
    ProcessGroup,
    Work,
    all_gather,
    all_gather_into_tensor,
    all_reduce,
    all_to_all,
    all_to_all_single,
    barrier,
    batch_isend_irecv,
    breakpoint,
    broadcast,
    destroy_process_group,
    gather,
    get_backend,
    get_default_backend_for_device,
    get_global_rank,
    get_group_rank,
    get_node_local_rank,
    get_pg_count,
    get_process_group_ranks,
    get_rank,
    get_world_size,
    init_process_group,
    irecv,
    is_initialized,
    isend,
    monitored_barrier,
    new_group,
    new_subgroups,
    new_subgroups_by_enumeration,
    recv,
    reduce,
    reduce_scatter,
    reduce_scatter_tensor,
    scatter,
    send,
    supports_complex,
)

__all__ = [
    "Backend", "DistBackendError", "DistError", "DistNetworkError", "DistStoreError", "FileStore",
    "GroupMember", "HashStore", "P2POp", "PrefixStore", "ProcessGroup", "ReduceOp", "Store",
    "TCPStore", "Work", "all_gather", "all_gather_into_tensor", "all_gather_object", "all_reduce",
    "all_to_all", "all_to_all_single", "barrier", "batch_isend_irecv", "broadcast",
    "broadcast_object_list", "default_pg_timeout", "destroy_process_group", "gather",
    "gather_object", "get_backend", "get_global_rank", "get_group_rank", "get_node_local_rank",
    "get_process_group_ranks", "get_rank", "get_world_size", "group", "init_process_group",
    "irecv", "is_available", "is_gloo_available", "is_initialized", "is_mpi_available",
    "is_nccl_available", "is_torchelastic_launched", "is_ucc_available", "is_xccl_available",
    "isend", "monitored_barrier", "new_group", "new_subgroups", "recv", "recv_object_list",
    "reduce", "reduce_op", "reduce_scatter", "reduce_scatter_tensor", "scatter",
    "scatter_object_list", "send", "send_object_list", "breakpoint",
    "get_default_backend_for_device", "get_pg_count", "new_subgroups_by_enumeration",
    "supports_complex",
]


# -- availability ---------------------------------------------------------------------------
def is_available() -> bool:
    """Whether ember can run collectives here: True when mpi4py is installed (``ember[mpi]``)."""
    return _mpi.available()


def is_nccl_available() -> bool:
    """Whether CuPy with its NCCL binding is installed (``init_process_group("nccl")``)."""
    from . import _nccl

    return _nccl.available()


def is_gloo_available() -> bool:
    """True when MPI is available: ``"gloo"`` runs over MPI in ember."""
    return _mpi.available()


def is_mpi_available() -> bool:
    """True when mpi4py is installed."""
    return _mpi.available()


def is_ucc_available() -> bool:
    """False: ember has no UCC backend."""
    return False


def is_xccl_available() -> bool:
    """False: ember has no XCCL backend."""
    return False


def is_backend_available(backend: str) -> bool:
    """Whether ``backend`` can be used: ``"gloo"`` and ``"mpi"`` when MPI is available,
    ``"nccl"`` when CuPy's NCCL is too."""
    name = str(backend).lower()
    if name == "nccl":
        return _mpi.available() and is_nccl_available()
    return name in ("gloo", "mpi") and _mpi.available()


def is_torchelastic_launched() -> bool:
    """Whether this process was started by torchelastic/torchrun (``TORCHELASTIC_RUN_ID`` set)."""
    return os.getenv("TORCHELASTIC_RUN_ID") is not None


def __getattr__(name: str) -> object:
    if name in ("rpc", "device_mesh"):  # torch.distributed.rpc/.device_mesh: on first use
        import importlib

        return importlib.import_module(f"{__name__}.{name}")
    if name in ("DeviceMesh", "init_device_mesh"):  # PyTorch names them here too
        from . import device_mesh

        return getattr(device_mesh, name)
    from .._missing import attribute_error

    raise attribute_error("torch.distributed", name)
