"""VisionDataset, the base class of every ember.vision dataset, and StandardTransform."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ...utils.data import Dataset

__all__ = ["VisionDataset", "StandardTransform"]


class VisionDataset(Dataset):
    """Base class of the vision datasets: keeps ``root`` and the transforms, and prints like
    torchvision's. Subclasses implement ``__getitem__`` and ``__len__``.

    ``transforms`` (a callable of ``(input, target)``) and ``transform``/``target_transform``
    exclude each other.
    """

    _repr_indent = 4

    def __init__(
        self,
        root: str | Path | None = None,
        transforms: Callable | None = None,
        transform: Callable | None = None,
        target_transform: Callable | None = None,
    ) -> None:
        if isinstance(root, str):
            root = os.path.expanduser(root)
        self.root = root

        has_transforms = transforms is not None
        has_separate = transform is not None or target_transform is not None
        if has_transforms and has_separate:
            raise ValueError("Only transforms or transform/target_transform can be passed as argument")
        self.transform = transform
        self.target_transform = target_transform
        if has_separate:
            transforms = StandardTransform(transform, target_transform)
        self.transforms = transforms

    def __getitem__(self, index: int) -> Any:
        raise NotImplementedError

    def __len__(self) -> int:
        raise NotImplementedError

    def __repr__(self) -> str:
        body = [f"Number of datapoints: {self.__len__()}"]
        if self.root is not None:
            body.append(f"Root location: {self.root}")
        body += self.extra_repr().splitlines()
        if getattr(self, "transforms", None) is not None:
            body += [repr(self.transforms)]
        lines = ["Dataset " + self.__class__.__name__]
        lines += [" " * self._repr_indent + line for line in body]
        return "\n".join(lines)

    def _format_transform_repr(self, transform: Callable, head: str) -> list[str]:
        return _format_transform_repr(transform, head)

    def extra_repr(self) -> str:
        """Extra lines for ``repr`` (the split, for instance); empty by default."""
        return ""


class StandardTransform:
    """Applies ``transform`` to the input and ``target_transform`` to the target."""

    def __init__(self, transform: Callable | None = None,
                 target_transform: Callable | None = None) -> None:
        self.transform = transform
        self.target_transform = target_transform

    def __call__(self, input: Any, target: Any) -> tuple[Any, Any]:  # noqa: A002 - torchvision's name
        if self.transform is not None:
            input = self.transform(input)  # noqa: A001
        if self.target_transform is not None:
            target = self.target_transform(target)
        return input, target

    def _format_transform_repr(self, transform: Callable, head: str) -> list[str]:
        return _format_transform_repr(transform, head)

    def __repr__(self) -> str:
        body = [self.__class__.__name__]
        if self.transform is not None:
            body += _format_transform_repr(self.transform, "Transform: ")
        if self.target_transform is not None:
            body += _format_transform_repr(self.target_transform, "Target transform: ")
        return "\n".join(body)


def _format_transform_repr(transform: Callable, head: str) -> list[str]:
    # continuation lines line up under the first line's text, after the head
    lines = repr(transform).splitlines()
    return [f"{head}{lines[0]}"] + [" " * len(head) + line for line in lines[1:]]
