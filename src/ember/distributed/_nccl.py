"""The ``"nccl"`` backend: collectives on CUDA tensors through CuPy's NCCL binding.

MPI still starts the processes and carries NCCL's unique id from rank 0 to the others; the
reductions themselves run on the GPUs, on the current CUDA stream. A collective returns a request
that completes when an event recorded after it on that stream has passed, so ``wait()`` and DDP's
bucket waits treat MPI and NCCL alike. Each process uses the device selected with
``torch.cuda.set_device(LOCAL_RANK)`` before ``init_process_group``, as with PyTorch.

Not run in ember's CI (no GPU there); see docs/parallel.md.
"""

from __future__ import annotations

from typing import Any

from .. import _backend

__all__ = ["all_gather", "all_reduce", "available", "broadcast", "check_available",
           "reduce_scatter"]


def available() -> bool:
    """Whether CuPy with its NCCL binding and a GPU are usable here."""
    return _backend.nccl_module() is not None


def check_available(backend: Any) -> None:
    """Raise a clear error where ``init_process_group(backend)`` (nccl) cannot run."""
    if not available():
        raise RuntimeError(
            f"init_process_group(backend={backend!r}): ember's NCCL backend runs through CuPy's "
            "NCCL binding on NVIDIA GPUs, which is not usable here (pip install 'ember[cuda]' on "
            "a machine with GPUs); for CPU tensors use backend='gloo' (over MPI)"
        )


class Request:
    """A collective in flight on a CUDA stream: ``Test()`` polls its event, ``Wait()`` blocks."""

    def __init__(self, stream: Any) -> None:
        self._event = _backend._import_cupy().cuda.Event(block=False, disable_timing=True)
        self._event.record(stream)

    def Test(self) -> bool:  # noqa: N802 - the MPI request's spelling, which callers use
        return bool(self._event.done)

    def Wait(self) -> None:  # noqa: N802
        self._event.synchronize()

    def Cancel(self) -> None:  # noqa: N802
        pass


def _comm(pg: Any) -> Any:
    """The group's NCCL communicator, made on first use (every rank gets here together)."""
    if getattr(pg, "_nccl", None) is None:
        nccl = _backend.nccl_module()
        uid = nccl.get_unique_id() if pg.rank() == 0 else None
        uid = pg._comm.bcast(uid, root=0)
        pg._nccl = nccl.NcclCommunicator(pg.size(), uid, pg.rank())
    return pg._nccl


_DTYPES = {"float16": "NCCL_FLOAT16", "float32": "NCCL_FLOAT32", "float64": "NCCL_FLOAT64",
           "int8": "NCCL_INT8", "uint8": "NCCL_UINT8", "int32": "NCCL_INT32",
           "int64": "NCCL_INT64", "bfloat16": "NCCL_BFLOAT16", "bool": "NCCL_UINT8"}
_OPS = {"SUM": "NCCL_SUM", "PRODUCT": "NCCL_PROD", "MIN": "NCCL_MIN", "MAX": "NCCL_MAX",
        "AVG": "NCCL_AVG"}


def _dtype(arr: Any) -> int:
    name = _DTYPES.get(str(arr.dtype))
    if name is None or not hasattr(_backend.nccl_module(), name):
        raise TypeError(f"NCCL cannot reduce {arr.dtype} arrays")
    return getattr(_backend.nccl_module(), name)


def _op(name: str) -> int:
    if name not in _OPS:
        raise ValueError(f"ReduceOp.{name} is not supported by NCCL")
    return getattr(_backend.nccl_module(), _OPS[name])


def _stream() -> Any:
    return _backend.cuda_current_stream_obj()


def all_reduce(pg: Any, arr: Any, op: str) -> Request:
    """Reduce the CUDA array over the group in place."""
    s = _stream()
    _comm(pg).allReduce(arr.data.ptr, arr.data.ptr, arr.size, _dtype(arr), _op(op), s.ptr)
    return Request(s)


def broadcast(pg: Any, arr: Any, root: int) -> Request:
    s = _stream()
    _comm(pg).bcast(arr.data.ptr, arr.size, _dtype(arr), root, s.ptr)
    return Request(s)


def all_gather(pg: Any, out: Any, inp: Any) -> Request:
    s = _stream()
    _comm(pg).allGather(inp.data.ptr, out.data.ptr, inp.size, _dtype(inp), s.ptr)
    return Request(s)


def reduce_scatter(pg: Any, out: Any, inp: Any, op: str) -> Request:
    s = _stream()
    _comm(pg).reduceScatter(inp.data.ptr, out.data.ptr, out.size, _dtype(out), _op(op), s.ptr)
    return Request(s)
