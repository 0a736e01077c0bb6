"""ember's layers point only down (docs/design.md, "Layers"): a module never imports one from a
higher layer, not even inside a function. The test reads every module's imports (module level and
function-local, absolute and relative) from the source, so a new upward edge fails here with the
file, the line and the two layers named.

Also here: the src/ layout keeps a folder named ``ember`` in the current directory from
shadowing the installed package.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from layering import MODULES, PACKAGE, RANK, imports, layer_map, layer_of, upward_edges

DESIGN = Path(__file__).resolve().parent.parent / "docs" / "design.md"


def test_every_module_has_a_layer() -> None:
    assert {layer_of(m) for m in MODULES} <= set(RANK)
    assert layer_of("ember._tensor_base") == "core"
    assert layer_of("ember.ops.inplace") == "ops"
    assert layer_of("ember.nn.modules.linear") == "libraries"
    assert layer_of("ember.cli") == "command line"


def test_no_module_imports_a_higher_layer() -> None:
    bad = upward_edges()
    assert not bad, "imports that point up a layer:\n" + "\n".join(bad)


def test_the_check_finds_an_upward_import(tmp_path: Path) -> None:
    """The walker sees function-local and relative imports (a test that cannot fail is none)."""
    path = PACKAGE / "autograd" / "engine.py"
    src = "def f():\n    from .._tensor import Tensor\n    from ..nn import functional\n"
    tree_edges = []
    fake = tmp_path / "engine.py"
    fake.write_text(src)
    tree_edges = imports("ember.autograd.engine", fake)
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


def test_design_doc_shows_the_current_map() -> None:
    """docs/design.md's map of layers and rooms is the one the code draws (regenerate it with
    `python -m tests.layering --write`)."""
    doc = DESIGN.read_text()
    start, end = "<!-- BEGIN layer map -->\n", "\n<!-- END layer map -->"
    assert start in doc and end in doc, "docs/design.md lacks the layer map markers"
    shown = doc.split(start, 1)[1].split(end, 1)[0].strip()
    assert shown == layer_map().strip(), "docs/design.md's map is stale: python -m tests.layering --write"


def _order_rooms():
    import importlib.util

    path = PACKAGE.parent.parent / "scripts" / "order_rooms.py"
    spec = importlib.util.spec_from_file_location("order_rooms", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_ops_room_is_in_the_rooms_order() -> None:
    """Public functions, then their op classes, then private helpers, section by section
    (``python scripts/order_rooms.py FILE`` puts a file in order)."""
    order = _order_rooms()
    bad = {str(p.relative_to(PACKAGE)): order.out_of_order(p.read_text())
           for p in sorted((PACKAGE / "ops").rglob("*.py"))}
    assert {k: v for k, v in bad.items() if v} == {}


def test_the_order_check_finds_a_public_function_after_its_class() -> None:
    order = _order_rooms()
    src = ('"""x"""\n\n# ' + "-" * 40 + "\n# a section\n\n\nclass Op:\n    pass\n\n\n"
           "def op():\n    pass\n")
    assert order.out_of_order(src) == ["def op():"]
    assert order.out_of_order(order.reorder(src)) == []


def test_no_ops_room_is_over_about_800_lines() -> None:
    sizes = {str(p.relative_to(PACKAGE)): len(p.read_text().splitlines())
             for p in sorted((PACKAGE / "ops").rglob("*.py"))}
    assert {k: n for k, n in sizes.items() if n > 850} == {}
