"""Download, verify and unpack dataset files: torchvision.datasets.utils' functions.

Downloads use urllib from the standard library. A file is written to a temporary name beside
its destination, checked (length against Content-Length, then md5) and only then renamed into
place with ``os.replace``, so a dataset folder never holds a half-written or corrupted file.
"""

from __future__ import annotations

import bz2
import gzip
import hashlib
import http.client
import lzma
import os
import pathlib
import socket
import sys
import tarfile
import tempfile
import urllib.error
import urllib.request
import zipfile
from collections.abc import Callable, Iterable, Sequence
from typing import IO, TypeVar

__all__ = [
    "USER_AGENT", "calculate_md5", "check_md5", "check_integrity", "download_url",
    "download_and_extract_archive", "extract_archive", "list_dir", "list_files",
    "iterable_to_str", "verify_str_arg",
]

USER_AGENT = "pytorch/vision"  # torchvision's; some mirrors refuse urllib's default agent
_TIMEOUT_S = 60.0  # per socket operation: an unreachable mirror fails instead of hanging
_CHUNK = 1024 * 1024

PathLike = str | pathlib.Path


def calculate_md5(fpath: PathLike, chunk_size: int = 1024 * 1024) -> str:
    """The md5 hex digest of a file's bytes (a checksum, not a security measure)."""
    md5 = hashlib.md5(usedforsecurity=False)
    with open(fpath, "rb") as f:
        while chunk := f.read(chunk_size):
            md5.update(chunk)
    return md5.hexdigest()


def check_md5(fpath: PathLike, md5: str, **kwargs: int) -> bool:
    """Whether the file's md5 is ``md5``."""
    return md5 == calculate_md5(fpath, **kwargs)


def check_integrity(fpath: PathLike, md5: str | None = None) -> bool:
    """Whether ``fpath`` is a file and, when ``md5`` is given, has that md5."""
    if not os.path.isfile(fpath):
        return False
    if md5 is None:
        return True
    return check_md5(fpath, md5)


class _IntegrityError(RuntimeError):
    """A download arrived but is not the expected file (cut off or wrong md5)."""


def _describe(err: BaseException) -> str:
    """One line on why a URL failed, in words a user can act on."""
    if isinstance(err, urllib.error.HTTPError):
        if 300 <= err.code < 400:  # urllib gives up on a redirect past its hop limit
            return (f"stopped after too many redirects (HTTP {err.code}); pass a larger "
                    "max_redirect_hops if this source really redirects that often")
        return f"HTTP error {err.code} {err.reason}"
    reason = err.reason if isinstance(err, urllib.error.URLError) else err
    if isinstance(reason, socket.gaierror):
        return f"could not resolve the host name ({reason}); is this machine offline?"
    if isinstance(reason, ConnectionRefusedError):
        return f"connection refused ({reason})"
    if isinstance(reason, (TimeoutError, socket.timeout)):
        return f"timed out after {_TIMEOUT_S:g} s ({reason})"
    return f"{type(reason).__name__}: {reason}"


def _opener(max_redirect_hops: int) -> urllib.request.OpenerDirector:
    redirects = urllib.request.HTTPRedirectHandler()
    redirects.max_redirections = max_redirect_hops  # urllib's own limit is 10
    return urllib.request.build_opener(redirects)


def _retrieve(url: str, fpath: str, md5: str | None, max_redirect_hops: int) -> None:
    """Download ``url`` to ``fpath`` through a temporary file, verified before it is renamed."""
    folder, name = os.path.split(fpath)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{name}.", suffix=".part")
    try:
        digest = hashlib.md5(usedforsecurity=False)
        received = 0
        request = urllib.request.Request(url, headers={"User-Agent": USER_AGENT})
        with os.fdopen(fd, "wb") as fh, _opener(max_redirect_hops).open(
                request, timeout=_TIMEOUT_S) as response:
            announced = response.headers.get("Content-Length")
            while chunk := response.read(_CHUNK):
                fh.write(chunk)
                digest.update(chunk)
                received += len(chunk)
        actual = digest.hexdigest()
        # urllib returns a short body without complaint when the connection drops
        if announced is not None and announced.isdigit() and received != int(announced):
            raise _IntegrityError(
                f"the download of {name} from {url} was cut off: {received} of {announced} bytes "
                f"arrived (md5 of what arrived: {actual}"
                + (f", expected {md5})" if md5 else ")"))
        if md5 is not None and actual != md5:
            raise _IntegrityError(
                f"{name} downloaded from {url} is corrupted: its md5 is {actual}, expected {md5} "
                f"({received} bytes arrived)")
        os.replace(tmp, fpath)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def _with_http_fallback(url: str) -> list[str]:
    # torchvision retries an https URL over http when the https request fails (old SSL setups)
    return [url, "http:" + url[len("https:"):]] if url.startswith("https:") else [url]


def _download(urls: Sequence[str], root: PathLike, filename: str, md5: str | None = None,
              max_redirect_hops: int = 3, by_hand: str = "") -> None:
    """Fetch ``filename`` into ``root`` from the first of ``urls`` that delivers it intact.

    Each URL is tried in order (an https one also over http, as torchvision does); a failure
    names every URL tried, why each failed, and where to place the file by hand.
    """
    root = os.path.expanduser(os.fspath(root))
    fpath = os.path.join(root, filename)
    if check_integrity(fpath, md5):
        return
    os.makedirs(root, exist_ok=True)
    failures: list[str] = []
    for url in urls:
        for attempt in _with_http_fallback(url):
            print(f"Downloading {attempt} to {fpath}", file=sys.stderr)
            try:
                _retrieve(attempt, fpath, md5, max_redirect_hops)
                return
            except _IntegrityError as e:
                failures.append(f"  {attempt}: {e}")
                break  # the same file over http would be just as wrong; try the next mirror
            except (urllib.error.URLError, OSError, http.client.HTTPException) as e:
                failures.append(f"  {attempt}: {_describe(e)}")
    checksum = f" (md5 {md5})" if md5 else ""
    raise RuntimeError(
        f"Error downloading {filename}: no source delivered it intact. Tried:\n"
        + "\n".join(failures)
        + f"\nNothing was saved. Without network access, fetch {filename}{checksum} from one of "
        f"these URLs elsewhere and place it at {fpath}{by_hand}; it is then used without "
        "downloading.")


def download_url(url: str, root: PathLike, filename: PathLike | None = None,
                 md5: str | None = None, max_redirect_hops: int = 3) -> None:
    """Download ``url`` into ``root`` (as ``filename``, else the URL's base name), unless a file
    with that name and md5 is already there. Raises RuntimeError naming what failed."""
    name = os.fspath(filename) if filename else os.path.basename(url)
    _download([url], root, name, md5, max_redirect_hops)


def list_dir(root: PathLike, prefix: bool = False) -> list[str]:
    """The folders in ``root`` (with ``root`` prepended when ``prefix``)."""
    root = os.path.expanduser(os.fspath(root))
    names = [p for p in os.listdir(root) if os.path.isdir(os.path.join(root, p))]
    return [os.path.join(root, d) for d in names] if prefix else names


def list_files(root: PathLike, suffix: str | tuple[str, ...], prefix: bool = False) -> list[str]:
    """The files in ``root`` whose names end with ``suffix`` (a string or tuple of strings)."""
    root = os.path.expanduser(os.fspath(root))
    names = [p for p in os.listdir(root)
             if os.path.isfile(os.path.join(root, p)) and p.endswith(suffix)]
    return [os.path.join(root, d) for d in names] if prefix else names


def _extract_tar(from_path: PathLike, to_path: PathLike, compression: str | None) -> None:
    with tarfile.open(from_path, f"r:{compression[1:]}" if compression else "r") as tar:
        # the "data" filter refuses absolute paths, "..", links out of to_path and device files
        tar.extractall(to_path, filter="data")


_ZIP_COMPRESSION = {".bz2": zipfile.ZIP_BZIP2, ".xz": zipfile.ZIP_LZMA}


def _extract_zip(from_path: PathLike, to_path: PathLike, compression: str | None) -> None:
    # ZipFile.extractall drops absolute paths and ".." from member names by itself
    with zipfile.ZipFile(from_path, "r",
                         compression=_ZIP_COMPRESSION.get(compression or "", zipfile.ZIP_STORED)) as z:
        z.extractall(to_path)


_ARCHIVE_EXTRACTORS: dict[str, Callable[[PathLike, PathLike, str | None], None]] = {
    ".tar": _extract_tar,
    ".zip": _extract_zip,
}
_COMPRESSED_FILE_OPENERS: dict[str, Callable[..., IO[bytes]]] = {
    ".bz2": bz2.open,
    ".gz": gzip.open,
    ".xz": lzma.open,
}
_FILE_TYPE_ALIASES: dict[str, tuple[str | None, str | None]] = {
    ".tbz": (".tar", ".bz2"),
    ".tbz2": (".tar", ".bz2"),
    ".tgz": (".tar", ".gz"),
}


def _detect_file_type(file: PathLike) -> tuple[str, str | None, str | None]:
    """(suffix, archive type, compression) from the file name, e.g. ('.tar.gz', '.tar', '.gz')."""
    suffixes = pathlib.Path(file).suffixes
    if not suffixes:
        raise RuntimeError(
            f"File '{file}' has no suffixes that could be used to detect the archive type and "
            "compression.")
    suffix = suffixes[-1]
    if suffix in _FILE_TYPE_ALIASES:
        return (suffix, *_FILE_TYPE_ALIASES[suffix])
    if suffix in _ARCHIVE_EXTRACTORS:
        return suffix, suffix, None
    if suffix in _COMPRESSED_FILE_OPENERS:
        if len(suffixes) > 1 and suffixes[-2] in _ARCHIVE_EXTRACTORS:
            return suffixes[-2] + suffix, suffixes[-2], suffix
        return suffix, None, suffix
    known = sorted(set(_FILE_TYPE_ALIASES) | set(_ARCHIVE_EXTRACTORS) | set(_COMPRESSED_FILE_OPENERS))
    raise RuntimeError(f"Unknown compression or archive type: '{suffix}'.\nKnown suffixes are: '{known}'.")


def _decompress(from_path: PathLike, to_path: PathLike, remove_finished: bool = False) -> pathlib.Path:
    """Decompress a single compressed file (not an archive) through a temporary file."""
    _, _, compression = _detect_file_type(from_path)
    if not compression:
        raise RuntimeError(f"Couldn't detect a compression from the name {from_path}.")
    folder = os.path.dirname(os.fspath(to_path)) or "."
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{os.path.basename(to_path)}.", suffix=".part")
    try:
        with _COMPRESSED_FILE_OPENERS[compression](from_path, "rb") as src, os.fdopen(fd, "wb") as dst:
            while chunk := src.read(_CHUNK):
                dst.write(chunk)
        os.replace(tmp, to_path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
    if remove_finished:
        os.remove(from_path)
    return pathlib.Path(to_path)


def extract_archive(from_path: PathLike, to_path: PathLike | None = None,
                    remove_finished: bool = False) -> PathLike:
    """Unpack a .tar/.zip archive (optionally .gz/.bz2/.xz compressed) into ``to_path`` (default:
    the archive's folder), or decompress a lone .gz/.bz2/.xz file there. Returns where it went."""
    def same_kind(p: pathlib.Path) -> PathLike:
        return os.fspath(p) if isinstance(from_path, str) else p

    if to_path is None:
        to_path = os.path.dirname(from_path)
    suffix, archive_type, compression = _detect_file_type(from_path)
    if not archive_type:
        target = os.path.join(to_path, os.path.basename(from_path).replace(suffix, ""))
        return same_kind(_decompress(from_path, target, remove_finished=remove_finished))
    _ARCHIVE_EXTRACTORS[archive_type](from_path, to_path, compression)
    if remove_finished:
        os.remove(from_path)
    return same_kind(pathlib.Path(to_path))


def download_and_extract_archive(url: str, download_root: PathLike,
                                 extract_root: PathLike | None = None,
                                 filename: PathLike | None = None, md5: str | None = None,
                                 remove_finished: bool = False) -> None:
    """``download_url`` into ``download_root``, then ``extract_archive`` into ``extract_root``
    (default: ``download_root``)."""
    download_root = os.path.expanduser(os.fspath(download_root))
    if extract_root is None:
        extract_root = download_root
    name = os.fspath(filename) if filename else os.path.basename(url)
    download_url(url, download_root, name, md5)
    extract_archive(os.path.join(download_root, name), extract_root, remove_finished)


def iterable_to_str(iterable: Iterable) -> str:
    """``'a', 'b', 'c'`` for error messages."""
    return "'" + "', '".join(str(item) for item in iterable) + "'"


T = TypeVar("T", str, bytes)


def verify_str_arg(value: T, arg: str | None = None, valid_values: Iterable[T] | None = None,
                   custom_msg: str | None = None) -> T:
    """``value`` if it is a string among ``valid_values``; otherwise ValueError naming the
    argument and the valid values."""
    if not isinstance(value, str):
        where = f" for argument {arg}" if arg is not None else ""
        raise ValueError(f"Expected type str{where}, but got type {type(value)}.")
    if valid_values is None:
        return value
    valid = list(valid_values)
    if value not in valid:
        raise ValueError(custom_msg if custom_msg is not None else
                         f"Unknown value '{value}' for argument {arg}. "
                         f"Valid values are {{{iterable_to_str(valid)}}}.")
    return value
