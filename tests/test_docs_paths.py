"""The docs name files that exist: every source path written in README.md or docs/*.md (a
backticked ``src/ember/...``, ``tests/...``, ``bench/...``, ``scripts/...`` or ``examples/...``
path) is a file or folder of the checkout (docs/ and its subfolders), so a reader following the docs never lands on a name
a refactoring left behind."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
# a path inside backticks, optionally followed by ":name" (a function in it) or a {a,b} set
PATH = re.compile(r"`((?:src/ember|tests|bench|scripts|examples)/[\w./{},*-]*)(?::[\w.]+)?`")


def _expand(path: str) -> list[str]:
    """``ops/{a,b}.py`` -> ``ops/a.py``, ``ops/b.py``."""
    m = re.search(r"\{([^}]*)\}", path)
    if not m:
        return [path]
    return [p for alt in m.group(1).split(",")
            for p in _expand(path[: m.start()] + alt + path[m.end():])]


def _named_paths() -> list[tuple[str, str]]:
    out = []
    for doc in DOCS:
        for m in PATH.finditer(doc.read_text()):
            for p in _expand(m.group(1).rstrip("/.,")):
                out.append((doc.name, p))
    return out


def test_docs_name_paths_that_exist():
    named = _named_paths()
    assert len(named) > 20  # the docs do point into the code
    missing = [(doc, p) for doc, p in named if "*" not in p and not (ROOT / p).exists()]
    assert not missing, f"paths named in the docs that do not exist: {missing}"


def test_docs_say_src_ember_not_ember():
    """Source files are written with their real location (``src/ember/...``), not the import
    path's ``ember/...``, which is a folder that does not exist in the checkout."""
    stale = []
    for doc in DOCS:
        for m in re.finditer(r"`(ember/[\w./{},-]+\.py)", doc.read_text()):
            stale.append((doc.name, m.group(1)))
    assert not stale, f"write these as src/ember/...: {stale}"


def test_the_checker_sees_a_wrong_path(tmp_path):
    """The pattern catches a stale path (so the first test can fail)."""
    text = "see `src/ember/ops/no_such_room.py` and `src/ember/ops/{a,b}.py`"
    found = [p for m in PATH.finditer(text) for p in _expand(m.group(1))]
    assert found == ["src/ember/ops/no_such_room.py", "src/ember/ops/a.py", "src/ember/ops/b.py"]
    assert not (ROOT / found[0]).exists()
