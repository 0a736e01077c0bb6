"""ember.vision.datasets: downloads from a loopback HTTP server serving files in each dataset's
real format (idx + gzip, CIFAR's tar.gz of Python-2 protocol-2 pickles, zips of PNGs), checked
against the generated values and, where installed, against real torchvision on the same files."""

from __future__ import annotations

import gzip
import hashlib
import http.server
import io
import os
import pickle
import socket
import struct
import tarfile
import threading
import zipfile
from pathlib import Path

import numpy as np
import pytest

PIL = pytest.importorskip("PIL")
from PIL import Image  # noqa: E402
from vision_reference import real_torchvision  # noqa: E402

import ember  # noqa: E402
from ember.vision import datasets as ds  # noqa: E402
from ember.vision.datasets import utils as dsutils  # noqa: E402
from ember.vision.datasets._pickled_arrays import UnsafePickleError, load_arrays_pickle  # noqa: E402

TV = real_torchvision()
needs_tv = pytest.mark.skipif(TV is None, reason="real torchvision is not installed")


def md5(b: bytes) -> str:
    return hashlib.md5(b).hexdigest()


# ---------------------------------------------------------------- a loopback file server

class _Server:
    def __init__(self) -> None:
        self.files: dict[str, bytes] = {}
        self.truncate: set[str] = set()
        self.requests: list[str] = []
        self.redirects: dict[str, str] = {}
        owner = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                owner.requests.append(self.path)
                if self.path.lstrip("/") in owner.redirects:
                    self.send_response(302)
                    self.send_header("Location", owner.redirects[self.path.lstrip("/")])
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                body = owner.files.get(self.path.lstrip("/"))
                if body is None:
                    self.send_error(404)
                    return
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if self.path.lstrip("/") in owner.truncate:
                    body = body[: len(body) // 2]  # then the connection closes: a cut-off download
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server(monkeypatch):
    for var in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(var, raising=False)  # loopback requests must not go to a proxy
    s = _Server()
    yield s
    s.close()


def closed_port_url() -> str:
    """A URL nobody listens on: connection refused, as when offline."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    return f"http://127.0.0.1:{port}/"


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.rglob("*") if p.is_file())


# ---------------------------------------------------------------- MNIST family (idx + gzip)

def idx_bytes(a: np.ndarray) -> bytes:
    header = bytes([0, 0, 0x08, a.ndim]) + struct.pack(f">{a.ndim}I", *a.shape)
    return header + a.astype(np.uint8).tobytes()


def mnist_arrays(seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {
        "train-images-idx3-ubyte": rng.integers(0, 256, (12, 28, 28), dtype=np.uint8),
        "train-labels-idx1-ubyte": rng.integers(0, 10, 12, dtype=np.uint8),
        "t10k-images-idx3-ubyte": rng.integers(0, 256, (5, 28, 28), dtype=np.uint8),
        "t10k-labels-idx1-ubyte": rng.integers(0, 10, 5, dtype=np.uint8),
    }


def serve_mnist(server: _Server, monkeypatch, cls: type, mirrors: list[str] | None = None) -> dict:
    arrays = mnist_arrays()
    resources = []
    for name, a in arrays.items():
        gz = gzip.compress(idx_bytes(a))
        server.files[f"{cls.__name__}/{name}.gz"] = gz
        resources.append((f"{name}.gz", md5(gz)))
    monkeypatch.setattr(cls, "resources", resources)
    monkeypatch.setattr(cls, "mirrors", mirrors or [server.url + cls.__name__ + "/"])
    return arrays


@pytest.mark.parametrize("cls", [ds.MNIST, ds.FashionMNIST, ds.KMNIST])
def test_mnist_family_downloads_verifies_and_parses(tmp_path, server, monkeypatch, cls):
    # the first mirror is down: the second one serves
    arrays = serve_mnist(server, monkeypatch, cls)
    monkeypatch.setattr(cls, "mirrors", [closed_port_url(), *cls.mirrors])
    train = cls(tmp_path, train=True, download=True)
    raw = tmp_path / cls.__name__ / "raw"
    assert leftovers(raw) == sorted([*arrays, *(n + ".gz" for n in arrays)])  # no .part file
    assert len(server.requests) == 4

    assert len(train) == 12
    assert train.data.dtype == ember.uint8 and tuple(train.data.shape) == (12, 28, 28)
    assert train.targets.dtype == ember.int64
    np.testing.assert_array_equal(train.data.numpy(), arrays["train-images-idx3-ubyte"])
    np.testing.assert_array_equal(train.targets.numpy(), arrays["train-labels-idx1-ubyte"])
    img, target = train[3]
    assert isinstance(img, Image.Image) and img.mode == "L" and img.size == (28, 28)
    assert type(target) is int and target == arrays["train-labels-idx1-ubyte"][3]
    np.testing.assert_array_equal(np.asarray(img), arrays["train-images-idx3-ubyte"][3])
    assert train.class_to_idx == {c: i for i, c in enumerate(cls.classes)} and len(train.classes) == 10

    # files present: no second download
    test = cls(str(tmp_path), train=False, download=True)
    assert len(server.requests) == 4
    assert len(test) == 5
    np.testing.assert_array_equal(test.data.numpy(), arrays["t10k-images-idx3-ubyte"])
    assert repr(test) == (f"Dataset {cls.__name__}\n    Number of datapoints: 5\n"
                          f"    Root location: {tmp_path}\n    Split: Test")


@needs_tv
def test_mnist_matches_torchvision_on_the_same_files(tmp_path, server, monkeypatch):
    serve_mnist(server, monkeypatch, ds.MNIST)

    def as_text(t):
        return str(t)

    ours = ds.MNIST(str(tmp_path), download=True, transform=np.asarray, target_transform=as_text)
    theirs = TV.datasets.MNIST(str(tmp_path), transform=np.asarray, target_transform=as_text)
    np.testing.assert_array_equal(ours.data.numpy(), theirs.data.numpy())
    np.testing.assert_array_equal(ours.targets.numpy(), theirs.targets.numpy())
    assert ours.classes == theirs.classes and ours.class_to_idx == theirs.class_to_idx
    for i in (0, 7, 11):
        (a, ta), (b, tb) = ours[i], theirs[i]
        np.testing.assert_array_equal(a, b)
        assert ta == tb
    assert repr(ours) == repr(theirs)
    # and torchvision's plain items: same PIL mode and pixels
    img, t = TV.datasets.MNIST(str(tmp_path), train=False)[2]
    mine, t2 = ds.MNIST(str(tmp_path), train=False)[2]
    assert (img.mode, t) == (mine.mode, t2)
    np.testing.assert_array_equal(np.asarray(img), np.asarray(mine))


def test_mnist_missing_without_download(tmp_path):
    with pytest.raises(RuntimeError, match="Dataset not found. You can use download=True to download it"):
        ds.MNIST(tmp_path)


def test_mnist_reads_legacy_processed_files(tmp_path):
    processed = tmp_path / "MNIST" / "processed"
    processed.mkdir(parents=True)
    data = ember.from_numpy(np.arange(2 * 28 * 28, dtype=np.uint8).reshape(2, 28, 28))
    ember.save((data, ember.tensor([4, 2])), processed / "training.pt")
    ember.save((data[:1], ember.tensor([7])), processed / "test.pt")
    m = ds.MNIST(tmp_path, train=False)
    assert len(m) == 1 and m[0][1] == 7
    np.testing.assert_array_equal(np.asarray(m[0][0]), data[0].numpy())


def test_corrupted_download_is_refused_and_leaves_nothing(tmp_path, server, monkeypatch):
    serve_mnist(server, monkeypatch, ds.MNIST)
    name = "train-images-idx3-ubyte.gz"
    expected = dict(ds.MNIST.resources)[name]
    bad = b"\x1f\x8bnot the file" * 10
    server.files["MNIST/" + name] = bad
    with pytest.raises(RuntimeError) as e:
        ds.MNIST(tmp_path, download=True)
    msg = str(e.value)
    assert name in msg and expected in msg and md5(bad) in msg and "corrupted" in msg
    assert leftovers(tmp_path) == []


def test_truncated_download_is_refused_and_leaves_nothing(tmp_path, server, monkeypatch):
    serve_mnist(server, monkeypatch, ds.MNIST)
    name = "train-labels-idx1-ubyte.gz"
    server.truncate.add("MNIST/" + name)
    with pytest.raises(RuntimeError) as e:
        ds.MNIST(tmp_path, download=True)
    msg = str(e.value)
    full = server.files["MNIST/" + name]
    assert name in msg and "cut off" in msg and f"{len(full) // 2} of {len(full)} bytes" in msg
    assert dict(ds.MNIST.resources)[name] in msg and md5(full[: len(full) // 2]) in msg
    # the file before it in the list arrived whole and stays; nothing of the cut-off one does
    assert name not in "".join(leftovers(tmp_path)) and ".part" not in "".join(leftovers(tmp_path))
    assert "train-images-idx3-ubyte" in leftovers(tmp_path)


def test_offline_names_every_url_and_how_to_place_files(tmp_path, monkeypatch):
    dead = [closed_port_url() + "a/", closed_port_url() + "b/"]
    monkeypatch.setattr(ds.MNIST, "mirrors", dead)
    with pytest.raises(RuntimeError) as e:
        ds.MNIST(tmp_path, download=True)
    msg = str(e.value)
    assert msg.startswith("Error downloading train-images-idx3-ubyte.gz")
    for mirror in dead:
        assert mirror + "train-images-idx3-ubyte.gz" in msg
    assert msg.count("connection refused") == 2
    assert str(tmp_path / "MNIST" / "raw" / "train-images-idx3-ubyte.gz") in msg
    assert "f68b3c2dcbeaaa9fbdd348bbdeb94873" in msg  # the md5 a hand-placed file must have
    assert leftovers(tmp_path) == []


def test_dns_failure_is_described(tmp_path):
    with pytest.raises(RuntimeError, match="could not resolve the host name"):
        dsutils.download_url("http://no-such-host.invalid/x.bin", tmp_path)
    assert leftovers(tmp_path) == []


def test_https_falls_back_to_http_like_torchvision(tmp_path, server):
    assert dsutils._with_http_fallback("https://a/b") == ["https://a/b", "http://a/b"]
    assert dsutils._with_http_fallback("http://a/b") == ["http://a/b"]


def test_download_url_checks_md5_and_skips_present_files(tmp_path, server):
    server.files["f.bin"] = b"hello" * 100
    dsutils.download_url(server.url + "f.bin", tmp_path, md5=md5(b"hello" * 100))
    assert (tmp_path / "f.bin").read_bytes() == b"hello" * 100
    dsutils.download_url(server.url + "f.bin", tmp_path, md5=md5(b"hello" * 100))
    assert len(server.requests) == 1
    assert dsutils.check_integrity(tmp_path / "f.bin", md5(b"hello" * 100))
    assert not dsutils.check_integrity(tmp_path / "f.bin", "0" * 32)
    assert not dsutils.check_integrity(tmp_path / "missing")
    with pytest.raises(RuntimeError, match="HTTP error 404"):
        dsutils.download_url(server.url + "nope.bin", tmp_path)


def test_redirects_are_followed_up_to_the_hop_limit(tmp_path, server):
    server.files["real.bin"] = b"data"
    server.redirects.update({"r1": "/real.bin", "r2": "/r1", "r3": "/r2"})
    dsutils.download_url(server.url + "r2", tmp_path, "two.bin", md5=md5(b"data"), max_redirect_hops=2)
    assert (tmp_path / "two.bin").read_bytes() == b"data"
    with pytest.raises(RuntimeError, match="too many redirects"):
        dsutils.download_url(server.url + "r3", tmp_path, "three.bin", max_redirect_hops=2)
    assert not (tmp_path / "three.bin").exists()


def test_unknown_dataset_names_say_what_exists():
    with pytest.raises(AttributeError, match="SVHN.*MNIST"):
        ds.SVHN  # noqa: B018


def test_emnist_downloads_zip_of_gz_files(tmp_path, server, monkeypatch):
    rng = np.random.default_rng(3)
    imgs = rng.integers(0, 256, (6, 28, 28), dtype=np.uint8)
    labels = rng.integers(1, 27, 6, dtype=np.uint8)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for part in ("train", "test"):
            z.writestr(f"gzip/emnist-letters-{part}-images-idx3-ubyte.gz", gzip.compress(idx_bytes(imgs)))
            z.writestr(f"gzip/emnist-letters-{part}-labels-idx1-ubyte.gz", gzip.compress(idx_bytes(labels)))
    server.files["gzip.zip"] = buf.getvalue()
    monkeypatch.setattr(ds.EMNIST, "url", server.url + "gzip.zip")
    monkeypatch.setattr(ds.EMNIST, "md5", md5(buf.getvalue()))
    e = ds.EMNIST(tmp_path, split="letters", download=True)
    assert not (tmp_path / "EMNIST" / "raw" / "gzip").exists()
    assert len(e) == 6 and e.classes[0] == "N/A" and len(e.classes) == 27
    assert e[2][1] == labels[2] and e.class_to_idx["a"] == 1
    np.testing.assert_array_equal(np.asarray(e[2][0]), imgs[2])
    with pytest.raises(ValueError, match="Unknown value 'bogus' for argument split"):
        ds.EMNIST(tmp_path, split="bogus")
    if TV is not None:
        t = TV.datasets.EMNIST(str(tmp_path), split="letters", train=False)
        assert t.classes == ds.EMNIST(tmp_path, split="letters", train=False).classes


def test_idx_reader_names_bad_files(tmp_path):
    from ember.vision.datasets.mnist import read_image_file, read_sn3_pascalvincent_tensor

    good = idx_bytes(np.zeros((3, 4, 5), np.uint8))
    (tmp_path / "cut").write_bytes(good[:-7])
    with pytest.raises(ValueError, match=r"cut holds 53 values but its header says shape \(3, 4, 5\)"):
        read_image_file(tmp_path / "cut")
    (tmp_path / "junk").write_bytes(b"PK\x03\x04junk")
    with pytest.raises(ValueError, match="junk is not an idx file"):
        read_image_file(tmp_path / "junk")
    # gzip read directly, and multi-byte big-endian types come out native
    a = np.array([[1, -2], [300, 7]], dtype=">i4")
    (tmp_path / "i4.gz").write_bytes(gzip.compress(bytes([0, 0, 0x0C, 2, 0, 0, 0, 2, 0, 0, 0, 2]) + a.tobytes()))
    t = read_sn3_pascalvincent_tensor(tmp_path / "i4.gz")
    assert t.dtype == ember.int32
    np.testing.assert_array_equal(t.numpy(), a.astype(np.int32))


# ---------------------------------------------------------------- CIFAR (tar.gz of pickles)

def py2_pickle(obj: object) -> bytes:
    """``obj`` pickled as Python 2's cPickle writes protocol 2: str as (SHORT_)BINSTRING,
    arrays as numpy.core.multiarray._reconstruct + BUILD, memo slots on every object."""
    out = bytearray(b"\x80\x02")
    slot = [0]

    def put() -> None:
        slot[0] += 1
        out.extend(b"q" + bytes([slot[0]]) if slot[0] < 256 else b"r" + struct.pack("<I", slot[0]))

    def string(b: bytes) -> None:
        out.extend(b"U" + bytes([len(b)]) + b if len(b) < 256 else b"T" + struct.pack("<i", len(b)) + b)
        put()

    def integer(n: int) -> None:
        if 0 <= n < 256:
            out.extend(b"K" + bytes([n]))
        elif 0 <= n < 65536:
            out.extend(b"M" + struct.pack("<H", n))
        else:
            out.extend(b"J" + struct.pack("<i", n))

    def emit(o: object) -> None:
        if isinstance(o, dict):
            out.extend(b"}")
            put()
            out.extend(b"(")
            for k, v in o.items():
                emit(k)
                emit(v)
            out.extend(b"u")
        elif isinstance(o, list):
            out.extend(b"]")
            put()
            out.extend(b"(")
            for v in o:
                emit(v)
            out.extend(b"e")
        elif isinstance(o, str):
            string(o.encode("latin-1"))
        elif isinstance(o, int):
            integer(o)
        elif isinstance(o, np.ndarray):
            assert o.dtype == np.uint8 and o.ndim == 2
            out.extend(b"cnumpy.core.multiarray\n_reconstruct\n")
            put()
            out.extend(b"cnumpy\nndarray\n")
            put()
            out.extend(b"K\x00\x85")
            put()
            string(b"b")
            out.extend(b"\x87R")
            put()
            out.extend(b"(")
            integer(1)
            integer(o.shape[0])
            integer(o.shape[1])
            out.extend(b"\x86")
            put()
            out.extend(b"cnumpy\ndtype\n")
            put()
            string(b"u1")
            out.extend(b"K\x00K\x01\x87R")
            put()
            out.extend(b"(K\x03")
            string(b"|")
            out.extend(b"NNNJ\xff\xff\xff\xffJ\xff\xff\xff\xffK\x00tb\x89")
            string(np.ascontiguousarray(o).tobytes())
            out.extend(b"tb")
        else:
            raise TypeError(type(o))

    emit(obj)
    out.extend(b".")
    return bytes(out)


def cifar_tree(cls: type, n: int = 4) -> tuple[dict[str, bytes], dict]:
    """The files of a small CIFAR10/100 in its real format, and what they hold."""
    rng = np.random.default_rng(7)
    files, truth = {}, {"train": [], "test": []}
    hundred = cls.__name__ == "CIFAR100"
    ncls = 100 if hundred else 10
    for split, names in (("train", cls.train_list), ("test", cls.test_list)):
        for name, _ in names:
            data = rng.integers(0, 256, (n, 3072), dtype=np.uint8)
            labels = [int(x) for x in rng.integers(0, ncls, n)]
            batch = {"batch_label": f"batch {name}", "data": data,
                     "filenames": [f"img_{i}.png" for i in range(n)]}
            if hundred:
                batch.update(fine_labels=labels, coarse_labels=[x // 5 for x in labels])
            else:
                batch["labels"] = labels
            files[name] = py2_pickle(batch)
            truth[split].append((data, labels))
    names = [f"class_{i}" for i in range(ncls)]
    meta = {"fine_label_names": names, "coarse_label_names": [f"super_{i}" for i in range(20)]} \
        if hundred else {"label_names": names, "num_cases_per_batch": n, "num_vis": 3072}
    files[cls.meta["filename"]] = pickle.dumps(meta, protocol=2)  # a Python 3 pickle, also read
    truth["classes"] = names
    return files, truth


def serve_cifar(server: _Server, monkeypatch, cls: type) -> dict:
    files, truth = cifar_tree(cls)
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, body in files.items():
            info = tarfile.TarInfo(f"{cls.base_folder}/{name}")
            info.size = len(body)
            tar.addfile(info, io.BytesIO(body))
    server.files[cls.filename] = buf.getvalue()
    monkeypatch.setattr(cls, "url", server.url + cls.filename)
    monkeypatch.setattr(cls, "tgz_md5", md5(buf.getvalue()))
    monkeypatch.setattr(cls, "train_list", [[n, md5(files[n])] for n, _ in cls.train_list])
    monkeypatch.setattr(cls, "test_list", [[n, md5(files[n])] for n, _ in cls.test_list])
    monkeypatch.setattr(cls, "meta", {**cls.meta, "md5": md5(files[cls.meta["filename"]])})
    return truth


@pytest.mark.parametrize("cls", [ds.CIFAR10, ds.CIFAR100])
def test_cifar_downloads_verifies_and_parses(tmp_path, server, monkeypatch, cls):
    truth = serve_cifar(server, monkeypatch, cls)
    train = cls(tmp_path, train=True, download=True)
    assert (tmp_path / cls.filename).is_file() and (tmp_path / cls.base_folder).is_dir()
    want = np.vstack([d for d, _ in truth["train"]]).reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1)
    assert isinstance(train.data, np.ndarray) and train.data.dtype == np.uint8
    assert train.data.shape == (len(want), 32, 32, 3)
    np.testing.assert_array_equal(train.data, want)
    assert train.targets == [t for _, ts in truth["train"] for t in ts]
    assert all(type(t) is int for t in train.targets)
    assert train.classes == truth["classes"] and train.class_to_idx["class_3"] == 3
    k = len(train) - 2
    img, target = train[k]
    assert isinstance(img, Image.Image) and img.mode == "RGB" and img.size == (32, 32)
    np.testing.assert_array_equal(np.asarray(img), want[k])
    assert type(target) is int and target == train.targets[k]

    test = cls(tmp_path, train=False, download=True)
    assert len(server.requests) == 1  # present and intact: not downloaded again
    assert len(test) == 4 and test.targets == truth["test"][0][1]
    assert repr(test).endswith("Split: Test")

    if TV is not None:  # torchvision unpickles the same files: same data, targets, classes
        theirs = getattr(TV.datasets, cls.__name__)
        monkeypatch.setattr(theirs, "train_list", cls.train_list)
        monkeypatch.setattr(theirs, "test_list", cls.test_list)
        monkeypatch.setattr(theirs, "meta", cls.meta)
        t = theirs(str(tmp_path), train=True)
        np.testing.assert_array_equal(t.data, train.data)
        assert t.targets == train.targets and t.classes == train.classes
        assert t.class_to_idx == train.class_to_idx
        np.testing.assert_array_equal(np.asarray(t[k][0]), np.asarray(img))


def test_cifar_missing_or_corrupted(tmp_path, server, monkeypatch):
    with pytest.raises(RuntimeError, match="Dataset not found or corrupted. You can use download=True"):
        ds.CIFAR10(tmp_path)
    serve_cifar(server, monkeypatch, ds.CIFAR10)
    ds.CIFAR10(tmp_path, download=True)
    batch = tmp_path / "cifar-10-batches-py" / "data_batch_2"
    batch.write_bytes(batch.read_bytes()[:-1])
    with pytest.raises(RuntimeError, match="wrong md5.*data_batch_2"):
        ds.CIFAR10(tmp_path)


def test_cifar_corrupted_archive_is_refused(tmp_path, server, monkeypatch):
    serve_cifar(server, monkeypatch, ds.CIFAR10)
    good = server.files[ds.CIFAR10.filename]
    server.files[ds.CIFAR10.filename] = good[:100] + b"x" + good[101:]
    with pytest.raises(RuntimeError) as e:
        ds.CIFAR10(tmp_path, download=True)
    assert ds.CIFAR10.tgz_md5 in str(e.value) and "cifar-10-python.tar.gz" in str(e.value)
    assert leftovers(tmp_path) == []


class _Boom:
    def __reduce__(self):
        return (os.system, ("echo pwned > pwned.txt",))


def test_pickle_reader_runs_no_code(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    evil = pickle.dumps({"data": _Boom()}, protocol=2)
    with pytest.raises(UnsafePickleError, match=r"refused global (posix|nt)\.system"):
        load_arrays_pickle(evil, "evil")
    assert not (tmp_path / "pwned.txt").exists()
    # a CIFAR batch swapped for it (with a matching md5) is refused, not run
    with pytest.raises(UnsafePickleError):
        load_arrays_pickle(pickle.dumps(np.array(["a"], dtype=object), protocol=2))
    with pytest.raises(UnsafePickleError, match="protocol"):
        load_arrays_pickle(pickle.dumps({"a": 1}, protocol=4))
    with pytest.raises(UnsafePickleError, match="damaged|truncated"):
        load_arrays_pickle(py2_pickle({"x": [1, 2, 3]})[:-5])


def test_pickle_reader_reads_both_pythons_arrays():
    a = np.arange(24, dtype=np.uint8).reshape(4, 6)
    for blob in (py2_pickle({"data": a, "labels": [1, 300, 70000]}),
                 pickle.dumps({"data": a, "labels": [1, 300, 70000]}, protocol=2)):
        got = load_arrays_pickle(blob)
        assert got["labels"] == [1, 300, 70000]
        assert got["data"].dtype == np.uint8 and got["data"].flags.writeable
        np.testing.assert_array_equal(got["data"], a)
        assert pickle.loads(blob, encoding="latin1")["labels"] == got["labels"]  # the emitter is sound
    f = np.asfortranarray(np.arange(6, dtype=">f4").reshape(2, 3))
    got = load_arrays_pickle(pickle.dumps([f], protocol=2))
    assert got[0].dtype == np.dtype(">f4")
    np.testing.assert_array_equal(got[0], f)


# ---------------------------------------------------------------- image folders

def write_png(path: Path, arr: np.ndarray) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(arr).save(path)


def image_tree(root: Path) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(1)
    pixels = {}
    for rel in ("cat/a.png", "cat/sub/deeper/b.png", "dog/c.PNG", "dog/d.png", "eel/e.png"):
        arr = rng.integers(0, 256, (6, 5, 3), dtype=np.uint8)
        write_png(root / rel, arr)
        pixels[rel] = arr
    write_png(root / "eel" / "grey.png", np.full((4, 4), 9, np.uint8))  # mode L: loaded as RGB
    pixels["eel/grey.png"] = np.full((4, 4, 3), 9, np.uint8)
    (root / "dog" / "notes.txt").write_text("not an image")
    return pixels


def test_image_folder_downloaded_as_zip(tmp_path, server):
    src = tmp_path / "src"
    pixels = image_tree(src / "pets")
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for p in sorted(src.rglob("*")):
            if p.is_file():
                z.write(p, p.relative_to(src).as_posix())
    server.files["pets.zip"] = buf.getvalue()
    dl = tmp_path / "dl"
    dsutils.download_and_extract_archive(server.url + "pets.zip", dl, md5=md5(buf.getvalue()))
    f = ds.ImageFolder(dl / "pets")
    assert f.classes == ["cat", "dog", "eel"]
    assert f.class_to_idx == {"cat": 0, "dog": 1, "eel": 2}
    rel = [Path(p).relative_to(dl / "pets").as_posix() for p, _ in f.samples]
    assert rel == ["cat/a.png", "cat/sub/deeper/b.png", "dog/c.PNG", "dog/d.png", "eel/e.png", "eel/grey.png"]
    assert f.targets == [0, 0, 1, 1, 2, 2] and f.imgs is f.samples
    for i, r in enumerate(rel):
        img, t = f[i]
        assert isinstance(img, Image.Image) and img.mode == "RGB" and t == f.targets[i]
        np.testing.assert_array_equal(np.asarray(img), pixels[r])


@needs_tv
def test_image_folder_matches_torchvision(tmp_path):
    image_tree(tmp_path)
    only_png = lambda p: p.endswith(".png")  # noqa: E731 - case-sensitive, unlike extensions
    for kwargs in ({}, {"is_valid_file": only_png}, {"allow_empty": True}):
        ours, theirs = ds.ImageFolder(str(tmp_path), **kwargs), TV.datasets.ImageFolder(str(tmp_path), **kwargs)
        assert ours.samples == theirs.samples and ours.classes == theirs.classes
        assert ours.class_to_idx == theirs.class_to_idx and ours.targets == theirs.targets
        for i in range(len(ours)):
            np.testing.assert_array_equal(np.asarray(ours[i][0]), np.asarray(theirs[i][0]))
    assert repr(ds.ImageFolder(str(tmp_path))) == repr(TV.datasets.ImageFolder(str(tmp_path)))
    assert ds.folder.make_dataset(str(tmp_path), extensions=".png") == \
        TV.datasets.folder.make_dataset(str(tmp_path), extensions=".png")


def test_image_folder_selection_rules(tmp_path):
    image_tree(tmp_path)
    f = ds.ImageFolder(tmp_path, is_valid_file=lambda p: p.endswith(".png") and "deeper" not in p)
    assert [Path(p).name for p, _ in f.samples] == ["a.png", "d.png", "e.png", "grey.png"]
    (tmp_path / "fish").mkdir()
    with pytest.raises(FileNotFoundError, match="Found no valid file for the classes fish. Supported extensions"):
        ds.ImageFolder(tmp_path)
    f = ds.ImageFolder(tmp_path, allow_empty=True)
    assert f.classes[-1] == "fish" and 3 not in f.targets
    with pytest.raises(ValueError, match="Both extensions and is_valid_file"):
        ds.folder.make_dataset(tmp_path, extensions=".png", is_valid_file=bool)
    with pytest.raises(FileNotFoundError, match="Couldn't find any class folder"):
        ds.ImageFolder(tmp_path / "cat" / "sub" / "deeper")
    assert ds.folder.has_file_allowed_extension("x.JPG", (".jpg",)) and ds.folder.is_image_file("a.webp")
    assert not ds.folder.is_image_file("a.txt")


def test_dataset_folder_custom_loader_and_find_classes(tmp_path):
    for cls, n in (("x", 2), ("y", 1)):
        (tmp_path / cls).mkdir()
        for i in range(n):
            (tmp_path / cls / f"{i}.txt").write_text(f"{cls}{i}")
    (tmp_path / "y" / "skip.bin").write_bytes(b"\0")
    d = ds.DatasetFolder(tmp_path, loader=lambda p: Path(p).read_text(), extensions=(".txt",),
                         target_transform=lambda t: t * 10)
    assert [d[i] for i in range(len(d))] == [("x0", 0), ("x1", 0), ("y0", 10)]
    assert d.extensions == (".txt",) and d.targets == [0, 0, 1]

    class OnlyY(ds.DatasetFolder):
        def find_classes(self, directory):
            return ["y"], {"y": 5}

    o = OnlyY(tmp_path, loader=str, extensions=(".txt",))
    assert o.classes == ["y"] and o.targets == [5]
    with pytest.raises(ValueError, match="class_to_idx parameter cannot be None"):
        ds.DatasetFolder.make_dataset(tmp_path, None, extensions=(".txt",))


def test_default_and_pil_loader(tmp_path):
    write_png(tmp_path / "g.png", np.full((2, 3), 200, np.uint8))
    for loader in (ds.folder.default_loader, ds.folder.pil_loader):
        img = loader(tmp_path / "g.png")
        assert img.mode == "RGB" and img.size == (3, 2)
        assert np.asarray(img).dtype == np.uint8 and np.asarray(img).max() == 200


# ---------------------------------------------------------------- FakeData, transforms, loading

def test_fake_data_is_deterministic_and_typed():
    f = ds.FakeData(size=5, image_size=(3, 7, 9), num_classes=4)
    before = ember.get_rng_state().numpy().copy()
    img, target = f[2]
    np.testing.assert_array_equal(ember.get_rng_state().numpy(), before)  # global RNG untouched
    assert isinstance(img, Image.Image) and img.mode == "RGB" and img.size == (9, 7)
    assert type(target) is int and 0 <= target < 4
    again, t2 = ds.FakeData(size=5, image_size=(3, 7, 9), num_classes=4)[2]
    np.testing.assert_array_equal(np.asarray(img), np.asarray(again))
    assert t2 == target
    other = ds.FakeData(size=5, image_size=(3, 7, 9), num_classes=4, random_offset=1)
    np.testing.assert_array_equal(np.asarray(other[1][0]), np.asarray(img))  # seed 1 + 1 = 2
    assert not np.array_equal(np.asarray(f[3][0]), np.asarray(img))
    assert len({f[i][1] for i in range(5)} | {ds.FakeData(50, (1, 2, 2), 4)[i][1] for i in range(50)}) == 4
    assert ds.FakeData(2, (1, 4, 4))[0][0].mode == "L"
    with pytest.raises(IndexError, match="FakeData index out of range"):
        f[5]
    with pytest.raises(ValueError, match=r"C in 1, 3 or 4"):
        ds.FakeData(image_size=(2, 4, 4))
    if TV is not None:  # the same items' repr shape as torchvision's
        assert repr(f).splitlines()[:2] == repr(TV.datasets.FakeData(size=5)).splitlines()[:2]


def test_transforms_and_repr(tmp_path, server, monkeypatch):
    serve_mnist(server, monkeypatch, ds.MNIST)

    def to_array(img):
        return np.asarray(img, dtype=np.float32) / np.float32(255)

    m = ds.MNIST(tmp_path, download=True, transform=to_array, target_transform=lambda t: -t)
    x, t = m[1]
    assert x.dtype == np.float32 and x.shape == (28, 28)
    assert t == -int(m.targets[1])
    assert f"Transform: {to_array!r}" in repr(m) and "StandardTransform" in repr(m)
    with pytest.raises(ValueError, match="Only transforms or transform/target_transform"):
        ds.VisionDataset(tmp_path, transforms=lambda a, b: (a, b), transform=to_array)
    f = ds.FakeData(3, (3, 4, 4), transform=lambda im: im.size, target_transform=str)
    assert f[0][0] == (4, 4) and isinstance(f[0][1], str)


def test_dataloader_over_mnist(tmp_path, server, monkeypatch):
    serve_mnist(server, monkeypatch, ds.MNIST)

    def to_tensor(img):
        return ember.from_numpy(np.asarray(img, dtype=np.float32)[None] / np.float32(255))

    m = ds.MNIST(tmp_path, download=True, transform=to_tensor)
    batches = list(ember.utils.data.DataLoader(m, batch_size=5))
    assert [tuple(x.shape) for x, _ in batches] == [(5, 1, 28, 28), (5, 1, 28, 28), (2, 1, 28, 28)]
    assert all(x.dtype == ember.float32 and y.dtype == ember.int64 for x, y in batches)
    np.testing.assert_allclose(batches[1][0][2, 0].numpy() * 255, m.data[7].numpy().astype(np.float32),
                               rtol=0, atol=1e-3)
    np.testing.assert_array_equal(batches[2][1].numpy(), m.targets[10:].numpy())


def test_to_tensor_transform_when_available(tmp_path, server, monkeypatch):
    transforms = pytest.importorskip("ember.vision.transforms")
    if not hasattr(transforms, "ToTensor"):
        pytest.skip("ember.vision.transforms.ToTensor is not written yet")
    serve_mnist(server, monkeypatch, ds.MNIST)
    m = ds.MNIST(tmp_path, download=True, transform=transforms.ToTensor())
    x, _ = m[0]
    assert x.dtype == ember.float32 and tuple(x.shape) == (1, 28, 28)
    np.testing.assert_allclose(x.numpy()[0] * 255, m.data[0].numpy(), atol=1e-3)


def test_tar_extraction_refuses_paths_outside(tmp_path):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        info = tarfile.TarInfo("../escaped.txt")
        info.size = 3
        tar.addfile(info, io.BytesIO(b"bad"))
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "x.tar.gz").write_bytes(buf.getvalue())
    with pytest.raises(tarfile.TarError):
        dsutils.extract_archive(str(tmp_path / "a" / "x.tar.gz"))
    assert not (tmp_path / "escaped.txt").exists()


def test_utils_helpers(tmp_path):
    (tmp_path / "d").mkdir()
    (tmp_path / "f.txt").write_text("x")
    assert dsutils.list_dir(tmp_path) == ["d"]
    assert dsutils.list_files(tmp_path, ".txt", prefix=True) == [os.path.join(tmp_path, "f.txt")]
    assert dsutils.calculate_md5(tmp_path / "f.txt") == md5(b"x")
    assert dsutils.verify_str_arg("a", "s", ("a", "b")) == "a"
    with pytest.raises(ValueError, match="Expected type str for argument s"):
        dsutils.verify_str_arg(3, "s")
    with gzip.open(tmp_path / "g.bin.gz", "wb") as g:
        g.write(b"payload")
    out = dsutils.extract_archive(str(tmp_path / "g.bin.gz"), remove_finished=True)
    assert out == str(tmp_path / "g.bin") and (tmp_path / "g.bin").read_bytes() == b"payload"
    assert not (tmp_path / "g.bin.gz").exists()
    with pytest.raises(RuntimeError, match="Unknown compression or archive type"):
        dsutils.extract_archive(tmp_path / "f.txt")
