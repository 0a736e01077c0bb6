"""Versions: the PyTorch API version ember implements, and ember's own.

Under the ``torch`` name, ember reports the PyTorch version whose API it follows, so programs
that gate features on ``torch.__version__`` (``if torch.__version__ >= "2.0":``) take the branch
that matches what ember provides. The string is ``"2.13.0+ember"``: the local tag ``+ember``
(PEP 440, like PyTorch's own ``"2.13.0+cpu"``) says which build this is and compares as
2.13.0 does. ember's own release is ``ember.__ember_version__`` (``ember --version``).

``TorchVersion`` is a ``str`` (printing, ``split``, ``startswith`` all work) whose comparisons
follow PEP 440 version order rather than string order, against strings (``"2.0"``,
``"1.13.1"``) and tuples (``(2, 0)``), as PyTorch's ``torch.torch_version.TorchVersion`` does.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["TorchVersion", "InvalidVersion", "__version__", "__ember_version__", "cuda", "hip",
           "rocm", "xpu", "debug", "git_version"]

#: ember's own release (the package version in pyproject.toml).
__ember_version__ = "0.1.0"

#: The PyTorch release whose API ember implements.
TORCH_API_VERSION = "2.13.0"


class InvalidVersion(ValueError):
    """A string that is not a PEP 440 version (the same exception type as ``packaging``'s)."""


_VERSION_RE = re.compile(
    r"""^\s*v?
    (?:(?P<epoch>\d+)!)?
    (?P<release>\d+(?:\.\d+)*)
    (?:[-_.]?(?P<pre_l>alpha|beta|preview|pre|rc|a|b|c)[-_.]?(?P<pre_n>\d*))?
    (?:(?:[-_.]?(?P<post_l>post|rev|r)[-_.]?(?P<post_n>\d*))|(?:-(?P<post_implicit>\d+)))?
    (?:[-_.]?(?P<dev_l>dev)[-_.]?(?P<dev_n>\d*))?
    (?:\+(?P<local>[a-z0-9]+(?:[-_.][a-z0-9]+)*))?
    \s*$""",
    re.VERBOSE | re.IGNORECASE,
)

_PRE_ORDER = {"a": 0, "alpha": 0, "b": 1, "beta": 1, "c": 2, "rc": 2, "pre": 2, "preview": 2}
_INF = float("inf")


def _version_key(text: str) -> tuple:
    """A sort key giving PEP 440's order (the order ``packaging.version.Version`` uses)."""
    m = _VERSION_RE.match(text)
    if m is None:
        raise InvalidVersion(f"Invalid version: {text!r}")
    release = [int(p) for p in m.group("release").split(".")]
    while len(release) > 1 and release[-1] == 0:  # 2.0 == 2.0.0
        release.pop()
    pre_l, post_l, dev_l = m.group("pre_l"), m.group("post_l"), m.group("dev_l")
    post_implicit = m.group("post_implicit")
    has_post = post_l is not None or post_implicit is not None
    if pre_l is not None:
        pre: tuple = (_PRE_ORDER[pre_l.lower()], int(m.group("pre_n") or 0))
    elif dev_l is not None and not has_post:
        pre = (-_INF,)  # 2.0.dev1 sorts before 2.0a1
    else:
        pre = (_INF,)
    if has_post:
        post: tuple = (int(post_implicit if post_implicit is not None else (m.group("post_n") or 0)),)
    else:
        post = (-_INF,)
    dev: tuple = (int(m.group("dev_n") or 0),) if dev_l is not None else (_INF,)
    local: tuple = ()
    if m.group("local"):
        local = tuple(
            (1, int(part), "") if part.isdigit() else (0, 0, part.lower())
            for part in re.split(r"[-_.]", m.group("local"))
        )
    return (int(m.group("epoch") or 0), tuple(release), pre, post, dev, local)


def _other_key(other: Any) -> tuple:
    if isinstance(other, (tuple, list)):
        other = ".".join(str(int(p)) for p in other)
    elif not isinstance(other, str):
        if type(other).__name__ == "Version" and hasattr(other, "release"):  # packaging's
            other = str(other)
        else:
            raise TypeError(
                f"can't compare a version with {type(other).__name__} {other!r}: compare with a "
                "string such as '2.0' or a tuple such as (2, 0)"
            )
    return _version_key(other)


class TorchVersion(str):
    """A version string that compares as a version: ``TorchVersion("2.13.0+ember") >= "2.0"``,
    ``>= (2, 0)``, ``< "3"``; equality with a string compares versions too (``"2.13"`` equals
    ``"2.13.0"``), as PyTorch's ``TorchVersion`` does."""

    __slots__ = ()

    def _cmp_key(self) -> tuple:
        return _version_key(str(self))

    def __lt__(self, other: Any) -> bool:
        return self._cmp_key() < _other_key(other)

    def __le__(self, other: Any) -> bool:
        return self._cmp_key() <= _other_key(other)

    def __gt__(self, other: Any) -> bool:
        return self._cmp_key() > _other_key(other)

    def __ge__(self, other: Any) -> bool:
        return self._cmp_key() >= _other_key(other)

    def __eq__(self, other: object) -> bool:
        try:
            return self._cmp_key() == _other_key(other)
        except (InvalidVersion, TypeError, ValueError):
            return str.__eq__(self, other)

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    __hash__ = str.__hash__


#: ``torch.__version__`` under ember.
__version__ = TorchVersion(f"{TORCH_API_VERSION}+ember")

# ``torch.version``'s build facts: ember is no CUDA/ROCm/XPU build of PyTorch (its CUDA path is
# CuPy, see ``torch.cuda.is_available()``), so these are None, as in a CPU build of PyTorch.
cuda: str | None = None
hip: str | None = None
rocm: str | None = None
xpu: str | None = None
debug = False
git_version = f"ember-{__ember_version__}"
