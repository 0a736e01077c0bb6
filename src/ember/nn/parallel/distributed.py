"""``DistributedDataParallel``: one model per process, gradients averaged over the processes.

How it works (PyTorch's design, in a few dozen lines of Python):

- At construction every rank checks that all ranks hold the same parameter shapes, then copies
  rank 0's parameters and buffers into every rank (one broadcast per dtype), so all replicas start
  equal.
- Parameters that need gradients are packed into *buckets* of about ``bucket_cap_mb`` (25 MB; with
  that default the first bucket is 1 MB, so communication starts early), in reverse order of
  ``parameters()``: roughly the order in which backward produces their gradients. (PyTorch
  rebuilds the buckets after the first step in the order the gradients really arrived; ember
  keeps the first assignment.)
- A hook on each parameter fires when its gradient has been accumulated during ``backward()``.
  When every gradient of a bucket is in, the bucket's gradients (divided by the world size) are
  copied into one flat array and all-reduced with MPI's non-blocking ``Iallreduce`` while
  backward goes on computing earlier layers' gradients. Buckets start in index order on every
  rank (MPI needs collectives in the same order everywhere).
- At the end of backward (a callback the engine runs before ``backward()`` returns) the
  remaining buckets are started, all are waited for, and each parameter's ``.grad`` receives the
  average of every rank's gradient.

``no_sync()`` (or ``require_backward_grad_sync = False`` before the forward, as nanoGPT does)
skips the averaging, so gradients accumulate locally until a synchronised backward averages the
sum.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import numpy as np

from ... import _backend
from ..modules.module import Module

__all__ = ["DistributedDataParallel"]

_FIRST_BUCKET_BYTES = 1024 * 1024  # PyTorch's dist._DEFAULT_FIRST_BUCKET_BYTES


class DistributedDataParallel(Module):
    """PyTorch's ``nn.parallel.DistributedDataParallel`` over ember's process group.

    Args:
        module: the model (its parameters on the CPU for the gloo/mpi backend).
        device_ids: for CPU modules None (PyTorch's rule); a single device for CUDA ones.
        broadcast_buffers: copy rank 0's buffers (BatchNorm's running stats) into every rank
            at the start of each forward.
        process_group: the group to average over (default: the world).
        bucket_cap_mb: the size of a gradient bucket (25).
        find_unused_parameters: allow parameters that get no gradient in some backward (their
            contribution is zero; a parameter unused on every rank keeps its ``.grad``).
    """

    def __init__(self, module: Module, device_ids: Any = None, output_device: Any = None,
                 dim: int = 0, broadcast_buffers: bool = True, init_sync: bool = True,
                 process_group: Any = None, bucket_cap_mb: float | None = None,
                 find_unused_parameters: bool = False, check_reduction: bool = False,
                 gradient_as_bucket_view: bool = False, static_graph: bool = False,
                 **kwargs: Any) -> None:
        super().__init__()
        from ... import distributed as dist
        from ...distributed import distributed_c10d as c10d

        if not dist.is_initialized():
            raise dist._no_group("DistributedDataParallel")
        pg = c10d._group("DistributedDataParallel", process_group)
        params = _unique_params(module)
        if not any(p.requires_grad for _, p in params):
            raise RuntimeError("DistributedDataParallel is not needed when a module doesn't have "
                               "any parameter that requires a gradient.")
        devices = {str(p.device) for _, p in params}
        if len(devices) > 1:
            raise ValueError(f"DistributedDataParallel: the module's parameters are on several "
                             f"devices {sorted(devices)}; move the module to one device first")
        if device_ids is not None and "cpu" in devices:
            raise ValueError(
                "DistributedDataParallel device_ids and output_device arguments only work with "
                f"single-device/multiple-device GPU modules or CPU modules, but got device_ids "
                f"{device_ids}, output_device {output_device}, and module parameters {devices}."
            )
        if "cpu" in devices and pg._backend == "nccl":
            raise RuntimeError("DistributedDataParallel: the module is on the CPU but the process "
                               "group's backend is 'nccl', which moves CUDA tensors: move the "
                               "module with .cuda() or use init_process_group('gloo')")
        if "cpu" not in devices and pg._backend != "nccl":
            raise RuntimeError(f"DistributedDataParallel: the module is on {devices.pop()} but "
                               f"the process group's backend is {pg._backend!r}, which moves CPU "
                               "tensors; init_process_group('nccl') for CUDA modules")
        self.module = module
        self.process_group = pg
        self.device_ids = device_ids
        self.output_device = output_device
        self.dim = dim
        self.broadcast_buffers = broadcast_buffers
        self.find_unused_parameters = find_unused_parameters
        self.gradient_as_bucket_view = gradient_as_bucket_view
        self.static_graph = static_graph
        self.require_backward_grad_sync = True
        self.require_forward_param_sync = True
        self.bucket_bytes_cap = int((25 if bucket_cap_mb is None else bucket_cap_mb) * 1024 * 1024)
        _check_same_shapes(pg, params)
        if init_sync:
            _broadcast_from_rank0(pg, [p for _, p in params] + [b for _, b in
                                                              module.named_buffers()])
        trainable = [(n, p) for n, p in params if p.requires_grad]
        # a smaller first bucket starts communication early, with the default cap only (PyTorch)
        first = _FIRST_BUCKET_BYTES if bucket_cap_mb is None else self.bucket_bytes_cap
        self.reducer = _Reducer(pg, trainable, first, self.bucket_bytes_cap,
                                find_unused_parameters)

    def forward(self, *inputs: Any, **kwargs: Any) -> Any:
        from ...autograd import grad_mode

        self.reducer.prepare(grad_mode.is_grad_enabled() and self.require_backward_grad_sync)
        if self.broadcast_buffers and self.require_forward_param_sync:
            buffers = [b for _, b in self.module.named_buffers()]
            if buffers:
                _broadcast_from_rank0(self.process_group, buffers)
        return self.module(*inputs, **kwargs)

    @contextlib.contextmanager
    def no_sync(self) -> Iterator[None]:
        """Inside, backward passes accumulate gradients locally without averaging; the first
        synchronised backward after it averages the accumulated sum."""
        before = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = before

    def _get_ddp_logging_data(self) -> dict[str, Any]:
        return {"world_size": self.process_group.size(), "bucket_sizes": [
            sum(p.numel() * p.element_size() for _, p in b) for b in self.reducer.buckets]}


def _unique_params(module: Module) -> list[tuple[str, Any]]:
    return list(module.named_parameters())  # named_parameters skips shared (tied) duplicates


def _check_same_shapes(pg: Any, params: list[tuple[str, Any]]) -> None:
    """Every rank must wrap the same model: compare the parameter shapes (as PyTorch does), and
    name the first parameter where a rank's model differs from rank 0's."""
    from ...distributed import _object_collectives
    from ...distributed import distributed_c10d as c10d

    mine = [f"{n}: {c10d.describe(p)}" for n, p in params]
    try:
        c10d.agree(pg, f"DistributedDataParallel(parameters {'; '.join(mine)})")
    except RuntimeError:
        every: list[Any] = [None] * pg.size()  # every rank is here: each saw a difference
        _object_collectives.all_gather_object(every, mine, group=pg)
        lines = []
        for r, theirs in enumerate(every[1:], start=1):
            if theirs != every[0]:
                k = next((i for i, (a, b) in enumerate(zip(every[0], theirs)) if a != b),
                         min(len(theirs), len(every[0])))
                lines.append(f"  parameter {k}: rank 0 has {_nth(every[0], k)}, rank "
                             f"{pg._ranks[r]} has {_nth(theirs, k)} ({len(every[0])} vs "
                             f"{len(theirs)} parameters)")
        raise RuntimeError(
            "DistributedDataParallel: the ranks' models differ (every rank must build the same "
            "model before wrapping it):\n" + "\n".join(lines)
        ) from None


def _nth(described: list[str], k: int) -> str:
    return described[k] if k < len(described) else "(no parameter)"


def _broadcast_from_rank0(pg: Any, tensors: list[Any]) -> None:
    """Copy rank 0's values of ``tensors`` into every rank's, one broadcast per dtype."""
    by_dtype: dict[Any, list[Any]] = {}
    for t in tensors:
        by_dtype.setdefault(t._data.dtype, []).append(t)
    from ...distributed import _mpi
    from ...distributed.distributed_c10d import wait_all

    for group in by_dtype.values():
        xp = _backend.xp_of(group[0]._data)
        flat = xp.concatenate([t._data.ravel() for t in group])
        if type(flat) is np.ndarray:
            req = pg._comm.Ibcast(_mpi.as_buffer(flat), root=0)
        else:
            from ...distributed import _nccl

            req = _nccl.broadcast(pg, flat, 0)
        if wait_all(pg, [req]):
            raise RuntimeError("DistributedDataParallel: rank 0's parameters did not arrive "
                               f"within {pg._timeout}")
        start = 0
        for t in group:
            n = t._data.size
            t._data[...] = flat[start:start + n].reshape(t._data.shape)
            start += n


def _buckets(params: list[tuple[str, Any]], first: int, cap: int) -> list[list[int]]:
    """Indices into ``params`` grouped into buckets: reverse order, one dtype per bucket, the
    first bucket capped at ``first`` bytes and the rest at ``cap``."""
    buckets: list[list[int]] = []
    open_by_dtype: dict[Any, tuple[list[int], int]] = {}
    for i in reversed(range(len(params))):
        p = params[i][1]
        size = p.numel() * p.element_size()
        current, filled = open_by_dtype.get(p.dtype, ([], 0))
        if not current:
            buckets.append(current)
        current.append(i)
        filled += size
        limit = first if len(buckets) == 1 else cap
        if filled >= limit:
            open_by_dtype[p.dtype] = ([], 0)
        else:
            open_by_dtype[p.dtype] = (current, filled)
    return buckets


class _Reducer:
    """The bucketed gradient averaging that backward drives (see the module's docstring)."""

    def __init__(self, pg: Any, params: list[tuple[str, Any]], first: int, cap: int,
                 find_unused: bool) -> None:
        self.pg = pg
        self.params = params
        self.find_unused = find_unused
        index_buckets = _buckets(params, first, cap)
        self.buckets = [[params[i] for i in b] for b in index_buckets]
        self.bucket_of = {i: k for k, b in enumerate(index_buckets) for i in b}
        self.index_buckets = index_buckets
        self.expect = False  # averaging on for the backward of the last forward
        self.unfinished: list[str] = []  # parameters that got no gradient last time
        for i, (_, p) in enumerate(params):
            p.register_post_accumulate_grad_hook(self._hook_for(i))

    def prepare(self, sync: bool) -> None:
        """At each forward: check the last backward finished, arm the next one."""
        if self.unfinished:
            names = self.unfinished
            self.unfinished = []
            raise RuntimeError(
                "Expected to have finished reduction in the prior iteration before starting a "
                "new one. This error indicates that your module has parameters that were not "
                "used in producing loss. You can enable unused parameter detection by passing "
                "the keyword argument `find_unused_parameters=True` to "
                "`torch.nn.parallel.DistributedDataParallel`, and by making sure all `forward` "
                "function outputs participate in calculating loss. Parameters which did not "
                f"receive grad for rank {self.pg.rank()}: {', '.join(names)}"
            )
        self.expect = sync
        self.queued = False
        self.pending = [len(b) for b in self.buckets]
        self.seen: set[int] = set()
        self.next_bucket = 0
        self.flights: dict[int, tuple[Any, np.ndarray]] = {}

    def _hook_for(self, i: int) -> Any:
        def hook(param: Any) -> None:
            if not self.expect or i in self.seen:
                return
            if not self.queued:
                from ...autograd import engine

                engine.queue_callback(self._finish)
                self.queued = True
            self.seen.add(i)
            k = self.bucket_of[i]
            self.pending[k] -= 1
            self._start_ready()
            for req, _ in self.flights.values():
                req.Test()  # let MPI move the buckets in flight along (it progresses in calls)
        return hook

    def _start_ready(self) -> None:
        while self.next_bucket < len(self.buckets) and self.pending[self.next_bucket] == 0:
            self._start(self.next_bucket)
            self.next_bucket += 1

    def _start(self, k: int) -> None:
        from ...distributed import _mpi

        n = self.pg.size()
        xp = _backend.xp_of(self.buckets[k][0][1]._data)
        parts = []
        for _, p in self.buckets[k]:
            g = p._grad
            parts.append(xp.zeros(p._data.size, p._data.dtype) if g is None else
                         g._data.ravel())
        flat = xp.concatenate(parts)
        flat /= n  # PyTorch divides before summing
        if type(flat) is np.ndarray:
            req = self.pg._comm.Iallreduce(_mpi.module().IN_PLACE, _mpi.as_buffer(flat),
                                           op=_mpi.module().SUM)
        else:  # CUDA parameters, NCCL group
            from ...distributed import _nccl

            req = _nccl.all_reduce(self.pg, flat, "SUM")
        self.flights[k] = (req, flat)

    def _finish(self) -> None:
        """End of backward: start what is left, wait for every bucket, write the averages."""
        from ...distributed import _mpi
        from ...distributed.distributed_c10d import wait_all

        self.expect = False
        missing = [i for i in range(len(self.params)) if i not in self.seen]
        used = None
        if missing:
            if not self.find_unused:
                self.unfinished = [self.params[i][0] for i in missing]
                self._wait_and_write(wait_all)
                return
            for i in missing:
                self.pending[self.bucket_of[i]] -= 1
            used = np.zeros(len(self.params), np.int32)
            used[list(self.seen)] = 1
        self._start_ready()
        used_req = None
        if used is not None:
            used_req = self.pg._comm.Iallreduce(_mpi.module().IN_PLACE, used,
                                                op=_mpi.module().MAX)
            if wait_all(self.pg, [used_req]):
                raise RuntimeError("DistributedDataParallel: the other ranks' backward did not "
                                   f"finish within {self.pg._timeout}")
        self._wait_and_write(wait_all, used)

    def _wait_and_write(self, wait_all: Any, used: np.ndarray | None = None) -> None:
        from ..._tensor_base import TensorBase

        late = wait_all(self.pg, [req for req, _ in self.flights.values()])
        if late:
            raise RuntimeError(
                f"DistributedDataParallel: gradient all-reduce of {len(late)} bucket(s) did not "
                f"complete within {self.pg._timeout} on rank {self.pg.rank()}: another rank is "
                "not running the same backward (a different model, batch count or branch)"
            )
        for k, (_, flat) in self.flights.items():
            start = 0
            for i in self.index_buckets[k]:
                p = self.params[i][1]
                n = p._data.size
                avg = flat[start:start + n].reshape(p._data.shape)
                start += n
                if used is not None and not used[i]:
                    continue  # unused on every rank: .grad stays as it was
                g = p._grad
                if g is None or not g._data.flags.writeable or g._data.shape != avg.shape:
                    p._grad = TensorBase._make(avg.copy())
                else:
                    g._data[...] = avg  # in place, as PyTorch copies the bucket into .grad
                    g._bump_version()
        self.flights = {}
