"""The v2 base class: one call takes any structure (image, (image, label), dicts, lists) and
applies the transform, with one draw of its random parameters, to every image in it.

Images are PIL images and the first plain tensor of the sample (ember has no ``tv_tensors``, so
the rule torchvision uses for plain tensors is the only one): other leaves pass through.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import ember
from ember import nn

from ..functional import _is_pil

Leaf = Any


def flatten(sample: Any) -> tuple[list[Leaf], Callable[[list[Leaf]], Any]]:
    """The leaves of nested tuples, lists and dicts, and a function that rebuilds the structure."""
    if isinstance(sample, (tuple, list)):
        parts = [flatten(x) for x in sample]
        sizes = [len(p[0]) for p in parts]

        def rebuild_seq(leaves: list[Leaf]) -> Any:
            out, at = [], 0
            for (_, rebuild), n in zip(parts, sizes, strict=True):
                out.append(rebuild(leaves[at:at + n]))
                at += n
            return type(sample)(out) if not hasattr(sample, "_fields") else type(sample)(*out)

        return [leaf for p in parts for leaf in p[0]], rebuild_seq
    if isinstance(sample, dict):
        keys = list(sample)
        inner, rebuild_values = flatten([sample[k] for k in keys])
        return inner, lambda leaves: type(sample)(zip(keys, rebuild_values(leaves), strict=True))
    return [sample], lambda leaves: leaves[0]


class Transform(nn.Module):
    """Base of the v2 transforms: override ``make_params`` and ``transform``."""

    # the leaf types a transform touches; plain tensors beyond the first never are
    _transformed_types: tuple[type, ...] = (ember.Tensor,)

    def make_params(self, flat_inputs: list[Any]) -> dict[str, Any]:
        """Random parameters for this call, drawn once from the images to transform."""
        first = flat_inputs[0] if flat_inputs else None
        return self._params(first) if hasattr(self, "_params") else {}

    def transform(self, inpt: Any, params: dict[str, Any]) -> Any:
        """``inpt`` transformed with ``params`` (defaults to the v1 class's ``_apply``)."""
        return self._apply(inpt, params)

    _transforms_pil = True  # PIL images are images; False for tensor-only transforms

    def _needs_transform(self, leaves: list[Leaf]) -> list[bool]:
        first_tensor = True
        needs = []
        for leaf in leaves:
            ok = isinstance(leaf, self._transformed_types) or (_is_pil(leaf) and self._transforms_pil)
            if ok and isinstance(leaf, ember.Tensor):  # only the first plain tensor is an image
                ok, first_tensor = first_tensor, False
            needs.append(ok)
        return needs

    def forward(self, *inputs: Any) -> Any:
        sample = inputs if len(inputs) > 1 else inputs[0]
        leaves, rebuild = flatten(sample)
        needs = self._needs_transform(leaves)
        params = self.make_params([leaf for leaf, n in zip(leaves, needs, strict=True) if n])
        out = [self.transform(leaf, params) if n else leaf for leaf, n in zip(leaves, needs, strict=True)]
        return rebuild(out)

    def _repr_fields(self) -> dict[str, Any]:
        return {}

    def __repr__(self) -> str:
        fields = ", ".join(f"{k}={v}" for k, v in self._repr_fields().items() if v is not None)
        return f"{type(self).__name__}({fields})"
