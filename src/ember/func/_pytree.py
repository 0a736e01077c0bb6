"""Minimal pytrees for ``ember.func``: tuples, lists, dicts (and namedtuples) of leaves."""

from __future__ import annotations

from typing import Any

# a spec is None for a leaf, or (kind, context, [child specs])


def _is_namedtuple(x: Any) -> bool:
    return isinstance(x, tuple) and hasattr(x, "_fields")


def tree_flatten(tree: Any) -> tuple[list, Any]:
    """(leaves in order, spec) for a nested tuple/list/dict structure."""
    leaves: list = []

    def go(node: Any) -> Any:
        if _is_namedtuple(node):
            return ("namedtuple", type(node), [go(c) for c in node])
        if isinstance(node, tuple):
            return ("tuple", None, [go(c) for c in node])
        if isinstance(node, list):
            return ("list", None, [go(c) for c in node])
        if isinstance(node, dict):
            keys = list(node.keys())
            return ("dict", (type(node), keys), [go(node[k]) for k in keys])
        leaves.append(node)
        return None

    spec = go(tree)
    return leaves, spec


def tree_unflatten(leaves: list, spec: Any) -> Any:
    """Rebuild the structure described by ``spec`` from ``leaves``."""
    it = iter(leaves)

    def go(s: Any) -> Any:
        if s is None:
            return next(it)
        kind, ctx, children = s
        vals = [go(c) for c in children]
        if kind == "tuple":
            return tuple(vals)
        if kind == "list":
            return vals
        if kind == "namedtuple":
            return ctx(*vals)
        cls, keys = ctx
        d = dict(zip(keys, vals))
        return d if cls is dict else cls(d)

    return go(spec)


def spec_str(spec: Any) -> str:
    if spec is None:
        return "*"
    kind, ctx, children = spec
    inner = ", ".join(spec_str(c) for c in children)
    if kind == "dict":
        return "{" + ", ".join(f"{k!r}: {spec_str(c)}" for k, c in zip(ctx[1], children)) + "}"
    return f"{kind}({inner})"


def broadcast_prefix(prefix: Any, tree: Any, what: str = "in_dims") -> list:
    """The ``prefix`` value for every leaf of ``tree`` (a leaf of the prefix covers a subtree)."""
    out: list = []

    def go(p: Any, node: Any) -> None:
        if not isinstance(p, (tuple, list, dict)):
            n = len(tree_flatten(node)[0])
            out.extend([p] * n)
            return
        if isinstance(p, dict):
            if not isinstance(node, dict) or set(p) != set(node):
                raise ValueError(f"{what} is not compatible with the structure of the inputs")
            for k in node:
                go(p[k], node[k])
            return
        if not isinstance(node, (tuple, list)) or len(p) != len(node):
            raise ValueError(f"{what} is not compatible with the structure of the inputs")
        for a, b in zip(p, node):
            go(a, b)

    go(prefix, tree)
    return out
