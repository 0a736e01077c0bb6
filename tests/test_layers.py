"""ember's layers point only down (docs/design.md, "Layers"): a module never imports one from a
higher layer, not even inside a function. The test reads every module's imports (module level and
function-local, absolute and relative) from the source, so a new upward edge fails here with the
file, the line and the two layers named.

Also here: the src/ layout keeps a folder named ``ember`` in the current directory from
shadowing the installed package.
"""

from __future__ import annotations

import ast
import fnmatch
import json
import subprocess
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src"
PACKAGE = SRC / "ember"

# Lowest first: (layer, module patterns). A module belongs to the first layer, in MATCH_ORDER,
# with a matching pattern (the command line is matched before the libraries' catch-all).
LAYERS: list[tuple[str, list[str]]] = [
    ("backend", ["ember._backend", "ember._dtype", "ember._size", "ember._special",
                 "ember._special.*", "ember._version", "ember._missing", "ember._shared_memory"]),
    ("core", ["ember._tensor_base", "ember.autograd", "ember.autograd.grad_mode",
              "ember.autograd.node", "ember.autograd.function", "ember.autograd.anomaly_mode",
              "ember.autograd.engine"]),
    ("ops", ["ember.ops", "ember.ops.*"]),
    ("tensor", ["ember._tensor", "ember._tensor_methods", "ember._tensor_str",
                "ember._tensor_sharing"]),
    # the package's public names (src/ember/__init__.py): re-exports of the layers above, and
    # its own subpackages (nn, optim...), which as a package's table of contents it may name
    ("namespace", ["ember"]),
    ("libraries", ["ember.*"]),  # nn, optim, utils, autograd.functional, amp, cuda, ...
    ("command line", ["ember.cli", "ember.__main__", "ember._alias", "ember.demo", "ember.demo.*"]),
]
MATCH_ORDER = ["backend", "core", "ops", "tensor", "command line", "namespace", "libraries"]
RANK = {name: i for i, (name, _) in enumerate(LAYERS)}


def layer_of(module: str) -> str:
    patterns = dict(LAYERS)
    for name in MATCH_ORDER:
        if any(fnmatch.fnmatchcase(module, p) for p in patterns[name]):
            return name
    raise AssertionError(f"{module} is in no layer")


def _modules() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


MODULES = _modules()


def _imports(module: str, path: Path) -> list[tuple[int, str]]:
    """(line, imported ember module) for every import in the file."""
    is_package = path.name == "__init__.py"
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names if a.name.split(".")[0] == "ember"]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".") if is_package else module.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] != "ember":
                continue
            for alias in node.names:  # `from ember.x import y`: y may be a module itself
                sub = f"{target}.{alias.name}"
                found.append((node.lineno, sub if sub in MODULES else target))
    return found


def _upward_edges() -> list[str]:
    bad = []
    for module, path in sorted(MODULES.items()):
        mine = layer_of(module)
        for line, target in _imports(module, path):
            if target not in MODULES:
                continue
            if target.startswith(module + ".") and path.name == "__init__.py":
                continue  # a package may load its own submodules (its table of contents)
            theirs = layer_of(target)
            if RANK[theirs] > RANK[mine]:
                rel = path.relative_to(SRC.parent)
                bad.append(f"{rel}:{line}: {module} ({mine}) imports {target} ({theirs})")
    return bad


def test_every_module_has_a_layer() -> None:
    assert {layer_of(m) for m in MODULES} <= set(RANK)
    assert layer_of("ember._tensor_base") == "core"
    assert layer_of("ember.ops.inplace") == "ops"
    assert layer_of("ember.nn.modules.linear") == "libraries"
    assert layer_of("ember.cli") == "command line"


def test_no_module_imports_a_higher_layer() -> None:
    bad = _upward_edges()
    assert not bad, "imports that point up a layer:\n" + "\n".join(bad)


def test_the_check_finds_an_upward_import(tmp_path: Path) -> None:
    """The walker sees function-local and relative imports (a test that cannot fail is none)."""
    path = PACKAGE / "autograd" / "engine.py"
    src = "def f():\n    from .._tensor import Tensor\n    from ..nn import functional\n"
    tree_edges = []
    fake = tmp_path / "engine.py"
    fake.write_text(src)
    tree_edges = _imports("ember.autograd.engine", fake)
    assert (2, "ember._tensor") in tree_edges and (3, "ember.nn.functional") in tree_edges
    assert path.exists()
    for _, target in tree_edges:
        assert RANK[layer_of(target)] > RANK[layer_of("ember.autograd.engine")]


def test_a_folder_named_ember_does_not_shadow_the_package(tmp_path: Path) -> None:
    """A script beside a clone (or any folder) called ``ember`` still imports the package."""
    (tmp_path / "ember" / "src").mkdir(parents=True)  # a clone's folder: no __init__.py
    script = tmp_path / "train.py"
    script.write_text("import ember\nprint(ember.tensor([1.0, 2.0]).sum().item())\n")
    out = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "3.0"


_TRACK_IMPORTS = """
import importlib.abc, json, sys
stack, edges = [], []

class Tracker(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] != "ember":
            return None
        for finder in sys.meta_path:
            if finder is not self and hasattr(finder, "find_spec"):
                spec = finder.find_spec(name, path, target)
                if spec is not None:
                    break
        else:
            return None
        run = spec.loader.exec_module

        def exec_module(module, run=run, name=name):
            edges.append([stack[-1] if stack else None, name])
            stack.append(name)
            try:
                run(module)
            finally:
                stack.pop()

        spec.loader.exec_module = exec_module
        return spec

sys.meta_path.insert(0, Tracker())
import ember, ember.nn, ember.optim, ember.utils.data, ember.autograd.functional
print(json.dumps(edges))
"""


def test_importing_ember_never_runs_a_higher_layer_from_a_lower_one() -> None:
    """At run time too: while a module of one layer is being executed, the imports it triggers
    (its own, and those of the modules they load) never start a module of a higher layer."""
    out = subprocess.run([sys.executable, "-c", _TRACK_IMPORTS], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    edges = json.loads(out.stdout.strip().splitlines()[-1])
    assert len(edges) > 100  # the tracker saw the package load
    bad = [f"{parent} ({layer_of(parent)}) loaded {child} ({layer_of(child)})"
           for parent, child in edges
           if parent is not None and child in MODULES and parent in MODULES
           and not child.startswith(parent + ".")  # a package loading its own submodule
           and RANK[layer_of(child)] > RANK[layer_of(parent)]]
    assert not bad, "\n".join(bad)
