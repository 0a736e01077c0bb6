"""``torch.distributed.device_mesh``: ranks laid out in an n-dimensional grid, with one process
group per line of the grid along each dimension (data parallel x tensor parallel...).

Where distributed runs (``torch.distributed.is_available()``: MPI present), ``DeviceMesh`` is
real: building one initialises the default process group when needed (``env://``) and makes
the subgroups with ``new_group``, so every rank must build the same meshes in the same order, as
in PyTorch. Where it cannot, PyTorch's module holds two stubs (an empty ``DeviceMesh`` class and
an ``init_device_mesh`` that does nothing), which libraries name in type annotations; ember
answers the same way.
"""

from __future__ import annotations

import itertools
from typing import Any

import ember as torch

from . import _mpi

__all__ = ["DeviceMesh", "init_device_mesh"]


class DeviceMesh:
    """``DeviceMesh(device_type, mesh, mesh_dim_names=...)``: ``mesh`` holds the global ranks in
    their grid positions. ``size(dim)``, ``get_group(dim)`` (a dimension's index or name),
    ``get_local_rank(dim)``, ``get_coordinate()``, ``mesh["tp"]`` (the sub-mesh through this
    rank along the named dimensions)."""

    def __init__(self, device_type: str, mesh: Any = None, *,
                 mesh_dim_names: tuple[str, ...] | None = None, backend_override: Any = None,
                 _init_backend: bool = True, _groups: list | None = None, **_: Any) -> None:
        from . import distributed_c10d as c10d

        if mesh is None:
            raise ValueError("DeviceMesh: pass the mesh of ranks (or use init_device_mesh)")
        self.device_type = device_type
        self.mesh = (mesh.detach().to("cpu", torch.int32) if isinstance(mesh, torch.Tensor)
                     else torch.tensor(mesh, dtype=torch.int32))
        if mesh_dim_names is not None and len(mesh_dim_names) != self.mesh.dim():
            raise RuntimeError(f"mesh_dim_names {mesh_dim_names} must have one name per mesh "
                               f"dimension ({self.mesh.dim()})")
        self.mesh_dim_names = tuple(mesh_dim_names) if mesh_dim_names is not None else None
        if _init_backend and not c10d.is_initialized():
            c10d.init_process_group()
        rank = c10d.get_rank()
        where = (self.mesh == rank).nonzero()
        self._coordinate = tuple(int(i) for i in where[0].tolist()) if len(where) else None
        if _groups is not None:
            self._groups = _groups
            return
        self._groups = []
        shape = list(self.mesh.shape)
        for dim in range(self.mesh.dim()):  # one group per line along dim (every rank, in order)
            mine = None
            others = [range(n) if d != dim else [slice(None)] for d, n in enumerate(shape)]
            for idx in itertools.product(*others):
                ranks = [int(r) for r in self.mesh[tuple(idx)].tolist()]
                group = c10d.new_group(ranks)
                if rank in ranks:
                    mine = group
            self._groups.append(mine)

    def _dim(self, mesh_dim: int | str | None) -> int:
        if mesh_dim is None:
            if self.mesh.dim() != 1:
                raise RuntimeError(f"Found the DeviceMesh have {self.mesh.dim()} dimensions. "
                                   "Optional kwarg `mesh_dim` needs to be specified when "
                                   "device_mesh.ndim > 1.")
            return 0
        if isinstance(mesh_dim, str):
            if self.mesh_dim_names is None or mesh_dim not in self.mesh_dim_names:
                raise KeyError(f"Mesh dimension '{mesh_dim}' does not exist. Available mesh "
                               f"dimensions are: mesh_dim_names={self.mesh_dim_names}")
            return self.mesh_dim_names.index(mesh_dim)
        return mesh_dim

    @property
    def ndim(self) -> int:
        return self.mesh.dim()

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.mesh.shape)

    def size(self, mesh_dim: int | str | None = None) -> int:
        return self.mesh.numel() if mesh_dim is None else self.mesh.size(self._dim(mesh_dim))

    def get_group(self, mesh_dim: int | str | None = None) -> Any:
        return self._groups[self._dim(mesh_dim)]

    def get_all_groups(self) -> list:
        return list(self._groups)

    def get_rank(self) -> int:
        from . import distributed_c10d as c10d

        return c10d.get_rank()

    def get_local_rank(self, mesh_dim: int | str | None = None) -> int:
        if self._coordinate is None:
            raise RuntimeError("this rank is not part of the DeviceMesh")
        return self._coordinate[self._dim(mesh_dim)]

    def get_coordinate(self) -> tuple[int, ...] | None:
        """This rank's position in the mesh (None when it is not in it)."""
        return self._coordinate

    def __getitem__(self, names: str | tuple[str, ...]) -> DeviceMesh:
        names = (names,) if isinstance(names, str) else tuple(names)
        dims = [self._dim(n) for n in names]
        if self._coordinate is None:
            raise RuntimeError("this rank is not part of the DeviceMesh")
        index = [slice(None) if d in dims else self._coordinate[d] for d in range(self.ndim)]
        sub = self.mesh[tuple(index)]
        order = sorted(dims)
        if order != dims:  # the requested order of dimensions
            sub = sub.permute(*[order.index(d) for d in dims])
        return DeviceMesh(self.device_type, sub, mesh_dim_names=names, _init_backend=False,
                          _groups=[self._groups[d] for d in dims])

    @classmethod
    def from_group(cls, group: Any, device_type: str, mesh: Any = None, *,
                   mesh_dim_names: tuple[str, ...] | None = None) -> DeviceMesh:
        """A 1-D mesh over an existing process group's ranks."""
        from . import distributed_c10d as c10d

        ranks = c10d.get_process_group_ranks(group) if mesh is None else mesh
        return cls(device_type, ranks, mesh_dim_names=mesh_dim_names, _init_backend=False,
                   _groups=[group])

    def __repr__(self) -> str:
        dims = ", ".join(f"{n}={s}" for n, s in zip(self.mesh_dim_names or
                                                    [str(i) for i in range(self.ndim)],
                                                    self.shape))
        return f"DeviceMesh(({dims}), '{self.device_type}')"

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, DeviceMesh) and self.device_type == other.device_type
                and self.mesh.tolist() == other.mesh.tolist()
                and self.mesh_dim_names == other.mesh_dim_names)

    def __hash__(self) -> int:
        return hash((self.device_type, str(self.mesh.tolist()), self.mesh_dim_names))


def init_device_mesh(device_type: str, mesh_shape: tuple[int, ...], *,
                     mesh_dim_names: tuple[str, ...] | None = None,
                     backend_override: Any = None) -> DeviceMesh:
    """A mesh of every rank of the default group, in ``mesh_shape`` (row-major)."""
    from . import distributed_c10d as c10d

    if mesh_dim_names is not None and len(mesh_dim_names) != len(mesh_shape):
        raise RuntimeError("mesh_shape and mesh_dim_names should have same length! Found "
                           f"len(mesh_dim_names): {len(mesh_dim_names)} and len(mesh_shape):"
                           f"{len(mesh_shape)}.")
    if not c10d.is_initialized():
        c10d.init_process_group()
    mesh = torch.arange(int(torch.tensor(mesh_shape).prod().item()),
                        dtype=torch.int32).view(*mesh_shape)
    if mesh.numel() != c10d.get_world_size():
        raise RuntimeError(f"mesh_shape {tuple(mesh_shape)} holds {mesh.numel()} ranks but the "
                           f"world has {c10d.get_world_size()}")
    return DeviceMesh(device_type, mesh, mesh_dim_names=mesh_dim_names)


if not _mpi.available():  # PyTorch's stubs where distributed cannot run
    class _DeviceMeshStub:
        pass

    def _init_device_mesh_stub() -> None:
        pass

    DeviceMesh = _DeviceMeshStub  # type: ignore[misc,assignment]  # noqa: F811
    init_device_mesh = _init_device_mesh_stub  # type: ignore[assignment]  # noqa: F811
