"""Compare ember's namespaces with PyTorch 2.13's public names; write docs/api-coverage.md.

    .venv/bin/python scripts/api_coverage.py            # rewrite docs/api-coverage.md
    .venv/bin/python scripts/api_coverage.py --check    # exit 1 if the file is out of date
    .venv/bin/python scripts/api_coverage.py --stdout   # print the page instead

The list of PyTorch's names is ``ember/_torch_api.txt`` (the same list ember uses at run time to
answer a missing name with "ember does not implement torch.X yet"). PyTorch itself is not needed.

A name counts as *implemented* when ember's namespace resolves it to a real object. It counts as a
*stub* when it resolves to a function or class whose only statement raises NotImplementedError
(or to ``None``, a placeholder), and as *missing* when lookup fails. Names that PyTorch's modules
merely import for their own use (standard-library modules, typing helpers, build flags) are listed
apart and not counted.
"""

from __future__ import annotations

import argparse
import ast
import importlib
import inspect
import sys
import textwrap
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
API_FILE = ROOT / "ember" / "_torch_api.txt"
OUT_FILE = ROOT / "docs" / "api-coverage.md"

# Names in _torch_api.txt that are not PyTorch API: modules and helpers PyTorch's own files import
# (found once by inspecting torch 2.13: stdlib modules, typing/functools objects, build flags).
INCIDENTAL: dict[str, frozenset[str]] = {
    "torch": frozenset(
        "TYPE_CHECKING USE_GLOBAL_DEPS USE_RTLD_GLOBAL_WITH_LIBTORCH builtins ctypes functools glob "
        "importlib inspect math os platform sys textwrap threading torch warnings".split()
    ),
    "torch.nn.functional": frozenset(
        "Callable DType Optional TYPE_CHECKING dataclasses importlib math np torch warnings".split()
    ),
    "torch.optim.lr_scheduler": frozenset(
        "Any Counter Literal Self SupportsFloat TYPE_CHECKING TypedDict annotations bisect_right "
        "cast inf math override partial ref types warnings wraps".split()
    ),
    "torch.cuda": frozenset(
        "Any Callable Device NewType Optional TYPE_CHECKING cast importlib lru_cache os platform "
        "threading torch traceback warnings".split()
    ),
    "torch.autograd": frozenset("Mapping Sequence cast overload torch warnings".split()),
    "torch.nn.init": frozenset("Callable Literal ParamSpec TypeVar math torch warnings".split()),
    "torch.special": frozenset({"torch"}),
    "torch.fft": frozenset({"torch"}),
    "torch.distributed": frozenset(
        "RankType logging sys timedelta torch traceback typing".split()
    ),
}


def read_api(path: Path = API_FILE) -> dict[str, list[str]]:
    """``{namespace: [names]}`` from the ``[section]``-per-line format of _torch_api.txt."""
    out: dict[str, list[str]] = {}
    section = None
    for line in path.read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("["):
            section = line.strip("[]")
            out[section] = []
        elif section is not None:
            out[section].extend(line.split())
    return out


def ember_namespace(namespace: str) -> object | None:
    """ember's object for a PyTorch namespace (``torch.nn`` -> ``ember.nn``), or None if absent."""
    if namespace == "torch.Tensor":
        import ember

        return ember.Tensor
    name = "ember" + namespace[len("torch"):]
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as e:
        if e.name and name.startswith(e.name):
            return None
        raise


def _raises_not_implemented(obj: object) -> bool:
    """True for a function (or a class whose ``__init__``/``__new__``) only raises
    NotImplementedError: a stub that exists so the error can say what to use instead."""
    targets = [obj]
    if inspect.isclass(obj):
        targets = [obj.__dict__.get("__init__"), obj.__dict__.get("__new__")]
    for fn in targets:
        fn = getattr(fn, "__func__", fn)
        if not inspect.isfunction(fn):
            continue
        try:
            src = textwrap.dedent(inspect.getsource(fn))
        except (OSError, TypeError):
            continue
        body = ast.parse(src).body[0].body
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
            body = body[1:]  # docstring
        if len(body) == 1 and isinstance(body[0], ast.Raise) and body[0].exc is not None:
            exc = body[0].exc
            name = exc.func if isinstance(exc, ast.Call) else exc
            if isinstance(name, ast.Name) and name.id == "NotImplementedError":
                return True
    return False


def classify(namespace: str, names: list[str]) -> dict[str, list[str]]:
    """Split ``names`` into implemented / stub / missing / incidental for one namespace."""
    ns = ember_namespace(namespace)
    skip = INCIDENTAL.get(namespace, frozenset())
    groups: dict[str, list[str]] = {"implemented": [], "stub": [], "missing": [], "incidental": []}
    for name in names:
        if name in skip:
            groups["incidental"].append(name)
            continue
        if ns is None:
            groups["missing"].append(name)
            continue
        try:
            if inspect.isclass(ns):  # torch.Tensor: look on the class, no instance needed
                obj = inspect.getattr_static(ns, name)
            else:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    obj = getattr(ns, name)
        except (AttributeError, NotImplementedError):
            groups["missing"].append(name)
            continue
        # a None module attribute is a placeholder (torch.cfloat); on the Tensor class it is the
        # class-level default of an instance field (Tensor.grad)
        if (obj is None and not inspect.isclass(ns)) or _raises_not_implemented(obj):
            groups["stub"].append(name)
        else:
            groups["implemented"].append(name)
    return groups


def _names(names: list[str]) -> str:
    return ", ".join(f"`{n}`" for n in names) if names else "(none)"


def render(api: dict[str, list[str]]) -> str:
    """The Markdown page."""
    results = {ns: classify(ns, names) for ns, names in api.items()}
    lines = [
        "# PyTorch API coverage",
        "",
        "Generated by `scripts/api_coverage.py` from `ember/_torch_api.txt` (the public names of "
        "PyTorch 2.13's main namespaces); do not edit by hand. Regenerate with "
        "`.venv/bin/python scripts/api_coverage.py`.",
        "",
        "- **implemented**: ember's namespace has the name.",
        "- **stub**: the name exists but only raises `NotImplementedError` with a hint, or is a "
        "`None` placeholder (e.g. `torch.cfloat`: ember has no complex dtypes).",
        "- **missing**: looking the name up raises `NotImplementedError` at the point of use: "
        "`ember does not implement torch.X yet`. The error is also an `AttributeError`, so "
        "`hasattr(torch, 'X')` is `False`, as feature probes expect; a name PyTorch does not "
        "have at all is an ordinary `AttributeError` (a typo stays a typo). `ember run --report "
        "script.py` lists the missing names a script reached for.",
        "- **not counted**: names PyTorch's module files import for their own use (`os`, "
        "`warnings`, `Optional`, ...).",
        "",
        "Coverage counts names, not behaviour: an implemented function may still lack some of "
        "PyTorch's options (the other pages in `docs/` say which).",
        "",
        "| namespace | PyTorch names | implemented | stub | missing | coverage |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    tot = {"names": 0, "implemented": 0, "stub": 0, "missing": 0}
    for ns, g in results.items():
        counted = len(g["implemented"]) + len(g["stub"]) + len(g["missing"])
        pct = 100.0 * len(g["implemented"]) / counted if counted else 100.0
        lines.append(
            f"| [`{ns}`](#{ns.replace('.', '').lower()}) | {counted} | {len(g['implemented'])} | "
            f"{len(g['stub'])} | {len(g['missing'])} | {pct:.0f}% |"
        )
        tot["names"] += counted
        for k in ("implemented", "stub", "missing"):
            tot[k] += len(g[k])
    pct = 100.0 * tot["implemented"] / tot["names"] if tot["names"] else 100.0
    lines.append(
        f"| **all** | {tot['names']} | {tot['implemented']} | {tot['stub']} | {tot['missing']} "
        f"| {pct:.0f}% |"
    )
    for ns, g in results.items():
        lines += ["", f"## {ns}", ""]
        if ember_namespace(ns) is None:
            lines += [f"ember has no `{ns}` module yet: `import {ns}` fails with "
                      f"\"ember does not implement {ns} yet\" under `ember run`.", ""]
        lines += [f"**Implemented ({len(g['implemented'])}):** {_names(g['implemented'])}", ""]
        if g["stub"]:
            lines += [f"**Stub ({len(g['stub'])}):** {_names(g['stub'])}", ""]
        lines += [f"**Missing ({len(g['missing'])}):** {_names(g['missing'])}", ""]
        if g["incidental"]:
            lines += [f"Not counted ({len(g['incidental'])}): {_names(g['incidental'])}", ""]
    return "\n".join(lines).rstrip() + "\n"


def main(argv: list[str] | None = None) -> int:
    """Command-line entry: write, check or print the coverage page."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--check", action="store_true", help="fail if docs/api-coverage.md is stale")
    p.add_argument("--stdout", action="store_true", help="print instead of writing the file")
    args = p.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    page = render(read_api())
    if args.stdout:
        sys.stdout.write(page)
        return 0
    if args.check:
        current = OUT_FILE.read_text() if OUT_FILE.exists() else ""
        if current != page:
            print(f"{OUT_FILE.relative_to(ROOT)} is out of date: run scripts/api_coverage.py",
                  file=sys.stderr)
            return 1
        return 0
    OUT_FILE.write_text(page)
    print(f"wrote {OUT_FILE.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
