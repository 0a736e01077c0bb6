"""``torch.torch_version``: ``TorchVersion``, a version string that compares as a version."""

from ._version import InvalidVersion, TorchVersion, __version__

Version = TorchVersion

__all__ = ["TorchVersion", "Version", "InvalidVersion", "__version__"]
