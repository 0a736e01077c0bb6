"""``parameters_to_vector`` / ``vector_to_parameters``."""

from __future__ import annotations

from collections.abc import Iterable

from ..._tensor import Tensor

__all__ = ["parameters_to_vector", "vector_to_parameters"]


def _check_same_device(param: Tensor, old: object) -> object:
    dev = param.device
    if old is not None and dev != old:
        raise TypeError(
            "Found two parameters on different devices, this is currently not supported. "
            f"({old} and {dev}; move the model to one device first)"
        )
    return dev


def parameters_to_vector(parameters: Iterable[Tensor]) -> Tensor:
    """All parameters flattened and concatenated into one 1-D tensor (differentiable)."""
    from ...ops import joining as _joining

    dev = None
    flat = []
    for p in parameters:
        dev = _check_same_device(p, dev)
        flat.append(p.reshape(-1))
    return _joining.cat(flat)


def vector_to_parameters(vec: Tensor, parameters: Iterable[Tensor]) -> None:
    """Overwrite each parameter's data with consecutive slices of the 1-D ``vec``."""
    if not isinstance(vec, Tensor):
        raise TypeError(f"expected torch.Tensor, but got: {type(vec).__name__}")
    dev = None
    pointer = 0
    data = vec._data.reshape(-1)
    for p in parameters:
        dev = _check_same_device(p, dev)
        n = p.numel()
        if pointer + n > data.shape[0]:
            raise RuntimeError(
                f"vector_to_parameters: vec has {data.shape[0]} elements, fewer than the "
                f"parameters need ({pointer + n} so far)"
            )
        p._data = data[pointer:pointer + n].reshape(tuple(p.shape))
        pointer += n
