"""``ember.hub``: download checkpoints into a cache and load them, as ``torch.hub`` does.

- ``load_state_dict_from_url(url)`` downloads ``url`` once into ``get_dir()/checkpoints``
  (``$TORCH_HOME/hub``, else ``$XDG_CACHE_HOME/torch/hub``, else ``~/.cache/torch/hub``: the
  same place PyTorch uses, so both share one cache) and returns ``ember.load`` of the file.
  Downloads go to a temporary file in the target folder and are renamed into place only when
  complete (and, with ``check_hash=True``, only when the SHA-256 of the file starts with the hex
  digits in its name, ``name-<hash>.ext``); a failed or refused download leaves nothing behind.
  A tqdm progress bar is shown when tqdm is installed and ``progress=True``.
- ``load(dir, model, source="local")`` calls an entry point of the ``hubconf.py`` in a local
  folder; GitHub repositories (``source="github"``, the default) and ``list``/``help`` (GitHub
  only in PyTorch) raise ``NotImplementedError``: ember does not fetch and run code from GitHub.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import re
import sys
import tempfile
import urllib.request
from collections.abc import Callable
from types import ModuleType
from typing import Any
from urllib.parse import urlparse

__all__ = ["download_url_to_file", "get_dir", "set_dir", "load_state_dict_from_url", "load",
           "list", "help", "HASH_REGEX"]

ENV_TORCH_HOME = "TORCH_HOME"
ENV_XDG_CACHE_HOME = "XDG_CACHE_HOME"
DEFAULT_CACHE_DIR = "~/.cache"
MODULE_HUBCONF = "hubconf.py"
VAR_DEPENDENCY = "dependencies"
READ_DATA_CHUNK = 128 * 1024
# a hex SHA-256 prefix between a dash and the extension: resnet18-f37072fd.pth
HASH_REGEX = re.compile(r"-([a-f0-9]*)\.")

_hub_dir: str | None = None


def _get_torch_home() -> str:
    xdg = os.getenv(ENV_XDG_CACHE_HOME, DEFAULT_CACHE_DIR)
    return os.path.expanduser(os.getenv(ENV_TORCH_HOME, os.path.join(xdg, "torch")))


def get_dir() -> str:
    """The hub cache folder: ``set_dir``'s, else ``$TORCH_HOME/hub``, else
    ``$XDG_CACHE_HOME/torch/hub``, else ``~/.cache/torch/hub``."""
    if _hub_dir is not None:
        return _hub_dir
    return os.path.join(_get_torch_home(), "hub")


def set_dir(d: str | os.PathLike) -> None:
    """Use ``d`` as the hub cache folder from now on."""
    global _hub_dir
    _hub_dir = os.path.expanduser(os.fspath(d))


def _progress_bar(total: int | None, enabled: bool) -> Any:
    """A tqdm bar when tqdm is installed (and ``enabled``, and stderr is a terminal: a bar's
    carriage-return redraws would fill a log file), else a silent stand-in."""
    if enabled and sys.stderr.isatty():
        try:
            from tqdm import tqdm
        except ImportError:
            pass
        else:
            return tqdm(total=total, disable=False, unit="B", unit_scale=True, unit_divisor=1024)

    class _Silent:
        def update(self, n: int) -> None:
            pass

        def close(self) -> None:
            pass

    return _Silent()


def download_url_to_file(url: str, dst: str, hash_prefix: str | None = None,
                         progress: bool = True) -> None:
    """Download ``url`` to the path ``dst``, atomically.

    The bytes go to a temporary file next to ``dst``, which is renamed to ``dst`` once the
    download is complete and (with ``hash_prefix``) its SHA-256 hex digest starts with
    ``hash_prefix``. On any failure the temporary file is removed and ``dst`` is untouched.

    Args:
        url: an ``http(s)://`` or ``file://`` URL.
        dst: the file to create (its folder must exist).
        hash_prefix: expected leading hex digits of the file's SHA-256, or None.
        progress: show a tqdm progress bar (when tqdm is installed).

    Raises:
        RuntimeError: the digest does not start with ``hash_prefix``.
    """
    req = urllib.request.Request(url, headers={"User-Agent": "ember.hub"})
    dst = os.path.expanduser(dst)
    folder = os.path.dirname(os.path.abspath(dst))
    tmp = tempfile.NamedTemporaryFile(prefix=os.path.basename(dst) + ".", suffix=".partial",
                                      dir=folder, delete=False)
    try:
        with urllib.request.urlopen(req) as response:  # noqa: S310 - the caller's URL
            length = response.headers.get("Content-Length") if hasattr(response, "headers") else None
            total = int(length) if length else None
            sha = hashlib.sha256() if hash_prefix is not None else None
            bar = _progress_bar(total, progress)
            try:
                while True:
                    chunk = response.read(READ_DATA_CHUNK)
                    if not chunk:
                        break
                    tmp.write(chunk)
                    if sha is not None:
                        sha.update(chunk)
                    bar.update(len(chunk))
            finally:
                bar.close()
        tmp.close()
        if sha is not None:
            digest = sha.hexdigest()
            if digest[:len(hash_prefix)] != hash_prefix:  # type: ignore[arg-type]
                raise RuntimeError(f'invalid hash value (expected "{hash_prefix}", got '
                                   f'"{digest}")')
        os.replace(tmp.name, dst)
    finally:
        tmp.close()
        if os.path.exists(tmp.name):
            os.remove(tmp.name)


def load_state_dict_from_url(url: str, model_dir: str | None = None, map_location: Any = None,
                             progress: bool = True, check_hash: bool = False,
                             file_name: str | None = None,
                             weights_only: bool = False) -> dict[str, Any]:
    """Download a checkpoint once into the hub cache and load it with ``ember.load``.

    Args:
        url: where the checkpoint is (``torch.save``/``ember.save`` format).
        model_dir: the cache folder; default ``get_dir()/checkpoints``.
        map_location: passed to ``ember.load``.
        progress: show a progress bar while downloading.
        check_hash: refuse a download whose SHA-256 does not start with the hex digits in the
            file name (``name-<sha256 prefix>.ext``, PyTorch's convention).
        file_name: the cached file's name; default the last part of the URL's path.
        weights_only: passed to ``ember.load`` (which never runs code from a file anyway).
    """
    if model_dir is None:
        model_dir = os.path.join(get_dir(), "checkpoints")
    os.makedirs(model_dir, exist_ok=True)
    filename = file_name or os.path.basename(urlparse(url).path)
    cached_file = os.path.join(model_dir, filename)
    if not os.path.exists(cached_file):
        sys.stderr.write(f'Downloading: "{url}" to {cached_file}\n')
        hash_prefix = None
        if check_hash:
            r = HASH_REGEX.search(filename)
            hash_prefix = r.group(1) if r else None
        download_url_to_file(url, cached_file, hash_prefix, progress=progress)
    from .serialization import load as _load

    return _load(cached_file, map_location=map_location, weights_only=weights_only)


# --- hubconf entry points (local directories only) --------------------------------------------


def _no_github(what: str) -> NotImplementedError:
    return NotImplementedError(
        f"torch.hub.{what}: ember does not download and run code from GitHub repositories. "
        "Clone the repository yourself and pass its folder with source='local', or build the "
        "model in Python and load weights with torch.hub.load_state_dict_from_url(url)."
    )


def _hubconf(repo_dir: str, source: str, what: str) -> ModuleType:
    if source != "local":
        if source not in ("github", "local"):
            raise ValueError(f'Unknown source: "{source}". Allowed values: "github" | "local".')
        raise _no_github(what)
    path = os.path.join(os.path.expanduser(repo_dir), MODULE_HUBCONF)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"torch.hub.{what}: no {MODULE_HUBCONF} in {repo_dir!r}")
    sys.path.insert(0, os.path.dirname(path))
    try:
        spec = importlib.util.spec_from_file_location("hubconf", path)
        module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
        spec.loader.exec_module(module)  # type: ignore[union-attr]
    finally:
        sys.path.remove(os.path.dirname(path))
    missing = [d for d in getattr(module, VAR_DEPENDENCY, [])
               if importlib.util.find_spec(d) is None]
    if missing:
        raise RuntimeError(f"Missing dependencies: {', '.join(missing)}")
    return module


def _entry(module: ModuleType, model: str) -> Callable:
    fn = getattr(module, model, None)
    if fn is None or not callable(fn):
        raise RuntimeError(f"Cannot find callable {model} in hubconf")
    return fn


def load(repo_or_dir: str, model: str, *args: Any, source: str = "github",
         trust_repo: Any = "check", force_reload: bool = False, verbose: bool = True,
         skip_validation: bool = False, **kwargs: Any) -> Any:
    """Call entry point ``model`` of the ``hubconf.py`` in the local folder ``repo_or_dir``
    (``source="local"``); GitHub sources raise ``NotImplementedError``."""
    return _entry(_hubconf(repo_or_dir, source, "load"), model)(*args, **kwargs)


def list(github: str, force_reload: bool = False, skip_validation: bool = False,  # noqa: A001
         trust_repo: Any = "check", verbose: bool = True) -> Any:
    """Entry points of a GitHub repository's hubconf: not available in ember (raises)."""
    raise _no_github("list")


def help(github: str, model: str, force_reload: bool = False,  # noqa: A001
         skip_validation: bool = False, trust_repo: Any = "check") -> str:
    """Docstring of a GitHub repository's entry point: not available in ember (raises)."""
    raise _no_github("help")


def _load_local(hubconf_dir: str, model: str, *args: Any, **kwargs: Any) -> Any:
    """``torch.hub._load_local``: call entry point ``model`` of ``hubconf_dir/hubconf.py``."""
    return load(hubconf_dir, model, *args, source="local", **kwargs)


def _validate_not_a_forked_repo(repo_owner: str, repo_name: str, ref: str) -> None:
    """Nothing to validate: GitHub repositories are not fetched (scripts often replace this)."""
