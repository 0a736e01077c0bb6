"""``ember.utils._pytree``: flatten nested containers to a list of leaves and rebuild them.

A *pytree* is a nest of registered containers (``list``, ``tuple``, ``dict``, ``OrderedDict``,
``defaultdict``, ``deque``, namedtuples, and anything passed to :func:`register_pytree_node`);
everything else, ``None`` and tensors included, is a leaf. Leaves come out depth first, left to
right; dict entries in insertion order, as PyTorch's ``torch.utils._pytree`` orders them::

    >>> leaves, spec = tree_flatten({"b": [1, (2, 3)], "a": None})
    >>> leaves
    [1, 2, 3, None]
    >>> tree_unflatten([10, 20, 30, 40], spec)
    {'b': [10, (20, 30)], 'a': 40}

Flattening walks the tree with an explicit stack, so deep nests do not hit Python's recursion
limit.
"""

from __future__ import annotations

import collections
import dataclasses
import warnings
from collections.abc import Callable, Iterable
from typing import Any, NamedTuple

__all__ = [
    "PyTree", "TreeSpec", "LeafSpec", "register_pytree_node", "tree_flatten", "tree_unflatten",
    "tree_leaves", "tree_structure", "tree_map", "tree_map_", "tree_map_only", "tree_iter",
    "tree_is_leaf", "tree_all", "tree_any", "treespec_leaf", "SUPPORTED_NODES",
]

PyTree = Any
FlattenFunc = Callable[[Any], tuple[list, Any]]
UnflattenFunc = Callable[[Iterable, Any], Any]


class NodeDef(NamedTuple):
    """How one container type is taken apart (``flatten_fn``) and rebuilt (``unflatten_fn``)."""

    type: type
    flatten_fn: FlattenFunc
    unflatten_fn: UnflattenFunc


SUPPORTED_NODES: dict[type, NodeDef] = {}


def register_pytree_node(cls: type, flatten_fn: FlattenFunc, unflatten_fn: UnflattenFunc, *,
                         serialized_type_name: str | None = None,
                         to_dumpable_context: Callable | None = None,
                         from_dumpable_context: Callable | None = None,
                         flatten_with_keys_fn: Callable | None = None) -> None:
    """Make ``cls`` a container: ``flatten_fn(obj) -> (children, context)`` and
    ``unflatten_fn(children, context) -> obj``.

    The keyword arguments PyTorch uses for serialisation are accepted and ignored.
    """
    if cls in SUPPORTED_NODES:
        raise ValueError(f"{cls} is already registered as pytree node.")
    SUPPORTED_NODES[cls] = NodeDef(cls, flatten_fn, unflatten_fn)


def _is_namedtuple(obj: Any) -> bool:
    t = type(obj)
    return issubclass(t, tuple) and isinstance(getattr(t, "_fields", None), tuple)


def _node_type(obj: Any) -> type | None:
    """The registered node type ``obj`` flattens as, or None for a leaf."""
    t = type(obj)
    if t in SUPPORTED_NODES:
        return t
    if _is_namedtuple(obj):
        return _NamedTupleNode
    return None


class _NamedTupleNode:
    """Stands for every namedtuple class (the class itself travels as the context)."""


def _get_node_type(obj: Any) -> Any:
    """The key ``obj`` has in ``SUPPORTED_NODES`` when it is a container (namedtuples share one
    key), else its type: ``_get_node_type(x) in SUPPORTED_NODES`` says whether it flattens."""
    return _NamedTupleNode if _is_namedtuple(obj) else type(obj)


@dataclasses.dataclass(frozen=True)
class MappingKey:
    """The path step to a mapping's value: ``str()`` is ``[key!r]``, ``get(d)`` is ``d[key]``."""

    key: Any

    def __str__(self) -> str:
        return f"[{self.key!r}]"

    def get(self, mapping: Any) -> Any:
        return mapping[self.key]


def _dict_flatten_with_keys(d: dict) -> tuple[list, Any]:
    """``flatten_with_keys_fn`` of dicts: ([(MappingKey(k), v)...], keys)."""
    values, keys = _dict_flatten(d)
    return [(MappingKey(k), v) for k, v in zip(keys, values)], keys


def _dict_flatten(d: dict) -> tuple[list, Any]:
    return list(d.values()), list(d.keys())


def _dict_unflatten(values: Iterable, keys: Any) -> dict:
    return dict(zip(keys, values))


def _odict_unflatten(values: Iterable, keys: Any) -> collections.OrderedDict:
    return collections.OrderedDict(zip(keys, values))


def _ddict_flatten(d: collections.defaultdict) -> tuple[list, Any]:
    return list(d.values()), [d.default_factory, list(d.keys())]


def _ddict_unflatten(values: Iterable, ctx: Any) -> collections.defaultdict:
    return collections.defaultdict(ctx[0], zip(ctx[1], values))


def _deque_flatten(d: collections.deque) -> tuple[list, Any]:
    return list(d), d.maxlen


register_pytree_node(tuple, lambda t: (list(t), None), lambda v, c: tuple(v))
register_pytree_node(list, lambda t: (list(t), None), lambda v, c: list(v))
register_pytree_node(dict, _dict_flatten, _dict_unflatten)
register_pytree_node(collections.OrderedDict, _dict_flatten, _odict_unflatten)
register_pytree_node(collections.defaultdict, _ddict_flatten, _ddict_unflatten)
register_pytree_node(collections.deque, _deque_flatten,
                     lambda v, c: collections.deque(v, maxlen=c))
SUPPORTED_NODES[_NamedTupleNode] = NodeDef(
    _NamedTupleNode, lambda t: (list(t), type(t)), lambda v, c: c(*v)
)


class TreeSpec:
    """The shape of a pytree without its leaves: node type, context, and one spec per child."""

    def __init__(self, type: Any, context: Any, children_specs: list[TreeSpec]) -> None:  # noqa: A002
        self.type = type
        self.context = context
        self.children_specs = list(children_specs)
        self.num_leaves: int = sum(c.num_leaves for c in self.children_specs)
        self.num_nodes: int = 1 + sum(c.num_nodes for c in self.children_specs)
        self.num_children: int = len(self.children_specs)

    def is_leaf(self) -> bool:
        return False

    def _type_name(self) -> str:
        return "namedtuple" if self.type is _NamedTupleNode else self.type.__name__

    def _repr(self, indent: int) -> str:
        parts = []
        for i, child in enumerate(self.children_specs):
            text = child._repr(indent + 2)
            parts.append(text if i == 0 else "\n" + " " * (indent + 2) + text)
        return f"TreeSpec({self._type_name()}, {self.context!r}, [{','.join(parts)}])"

    def __repr__(self) -> str:
        return self._repr(0)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, TreeSpec) or other.is_leaf() != self.is_leaf():
            return NotImplemented if not isinstance(other, TreeSpec) else False
        return (self.type is other.type and self.context == other.context
                and self.children_specs == other.children_specs)

    __hash__ = None  # type: ignore[assignment]  # mutable-style equality, as PyTorch's

    def unflatten(self, leaves: Iterable) -> PyTree:
        """Rebuild the tree from ``leaves`` (as many as ``num_leaves``)."""
        leaves = list(leaves)
        if len(leaves) != self.num_leaves:
            raise ValueError(
                f"treespec.unflatten(leaves): `leaves` has length {len(leaves)} but the spec "
                f"refers to a pytree that holds {self.num_leaves} items ({self!r})."
            )
        return _build(self, iter(leaves))

    def flatten_up_to(self, tree: PyTree) -> list:
        """The subtrees of ``tree`` that sit where this spec has leaves (tree may be deeper)."""
        out: list = []
        stack = [(self, tree)]
        while stack:
            spec, sub = stack.pop()
            if spec.is_leaf():
                out.append(sub)
                continue
            node = _node_type(sub)
            if node is not spec.type:
                want = spec._type_name()
                raise ValueError(f"Node type mismatch; expected {want}, but got {type(sub)!r}.")
            children, ctx = SUPPORTED_NODES[node].flatten_fn(sub)
            if len(children) != spec.num_children:
                raise ValueError(f"Node arity mismatch; expected {spec.num_children}, but got "
                                 f"{len(children)}.")
            if ctx != spec.context:
                raise ValueError(f"Node context mismatch for {spec._type_name()}: expected "
                                 f"{spec.context!r}, got {ctx!r}.")
            stack.extend(reversed(list(zip(spec.children_specs, children))))
        return out


class LeafSpec(TreeSpec):
    """The spec of a single leaf; prints as ``*``."""

    def __init__(self) -> None:
        super().__init__(None, None, [])
        self.num_leaves = 1
        self.num_nodes = 1

    def is_leaf(self) -> bool:
        return True

    def _repr(self, indent: int) -> str:
        return "*"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, LeafSpec)

    __hash__ = None  # type: ignore[assignment]


def treespec_leaf() -> LeafSpec:
    """A spec for one leaf."""
    return LeafSpec()


def _build(spec: TreeSpec, it: Any) -> PyTree:
    """Assign leaves in pre-order and assemble containers once their children are done."""
    if spec.is_leaf():
        return next(it)
    # frames: [spec, built_children]
    root: list = [spec, []]
    frames = [root]
    while frames:
        top = frames[-1]
        s, built = top
        if len(built) == s.num_children:
            frames.pop()
            obj = SUPPORTED_NODES[s.type].unflatten_fn(built, s.context)
            if not frames:
                return obj
            frames[-1][1].append(obj)
            continue
        child = s.children_specs[len(built)]
        if child.is_leaf():
            built.append(next(it))
        else:
            frames.append([child, []])
    raise AssertionError("unreachable")  # pragma: no cover


def tree_flatten(tree: PyTree, is_leaf: Callable[[PyTree], bool] | None = None) -> tuple[list, TreeSpec]:
    """Leaves of ``tree`` (depth first, left to right) and the spec to rebuild it.

    Args:
        tree: a nest of registered containers.
        is_leaf: optional predicate; a subtree for which it returns True is kept whole as a leaf.
    """
    leaves: list = []

    def visit(sub: PyTree) -> TreeSpec | tuple:
        if is_leaf is not None and is_leaf(sub):
            leaves.append(sub)
            return LeafSpec()
        node = _node_type(sub)
        if node is None:
            leaves.append(sub)
            return LeafSpec()
        children, ctx = SUPPORTED_NODES[node].flatten_fn(sub)
        return (node, ctx, list(children))

    # explicit stack of frames [node, ctx, children, specs]
    first = visit(tree)
    if isinstance(first, TreeSpec):
        return leaves, first
    frames = [[*first, []]]
    while True:
        node, ctx, children, specs = frames[-1]
        if len(specs) == len(children):
            frames.pop()
            spec = TreeSpec(node, ctx, specs)
            if not frames:
                return leaves, spec
            frames[-1][3].append(spec)
            continue
        got = visit(children[len(specs)])
        if isinstance(got, TreeSpec):
            specs.append(got)
        else:
            frames.append([*got, []])


def tree_unflatten(leaves: Iterable, treespec: TreeSpec) -> PyTree:
    """Rebuild a pytree from ``leaves`` and the ``treespec`` ``tree_flatten`` returned."""
    if not isinstance(treespec, TreeSpec):
        raise TypeError(f"tree_unflatten(leaves, treespec): Expected `treespec` to be instance of "
                        f"TreeSpec but got item of type {type(treespec)}.")
    return treespec.unflatten(leaves)


def tree_leaves(tree: PyTree, is_leaf: Callable[[PyTree], bool] | None = None) -> list:
    """The leaves of ``tree``, in ``tree_flatten`` order."""
    return tree_flatten(tree, is_leaf)[0]


def tree_iter(tree: PyTree, is_leaf: Callable[[PyTree], bool] | None = None) -> Iterable:
    """Iterate over the leaves of ``tree``."""
    return iter(tree_leaves(tree, is_leaf))


def tree_structure(tree: PyTree, is_leaf: Callable[[PyTree], bool] | None = None) -> TreeSpec:
    """The ``TreeSpec`` of ``tree``."""
    return tree_flatten(tree, is_leaf)[1]


def tree_is_leaf(tree: PyTree, is_leaf: Callable[[PyTree], bool] | None = None) -> bool:
    """True when ``tree`` is a leaf (not a registered container)."""
    if is_leaf is not None and is_leaf(tree):
        return True
    return _node_type(tree) is None


def _is_leaf(tree: PyTree, is_leaf: Callable[[PyTree], bool] | None = None) -> bool:
    """``tree_is_leaf`` under its older private name (PyTorch warns that it is deprecated)."""
    warnings.warn("torch.utils._pytree._is_leaf is private and will be removed in a future "
                  "release. Please use torch.utils._pytree.tree_is_leaf instead.", FutureWarning,
                  stacklevel=2)
    return tree_is_leaf(tree, is_leaf)


def tree_map(func: Callable[..., Any], tree: PyTree, *rests: PyTree,
             is_leaf: Callable[[PyTree], bool] | None = None) -> PyTree:
    """A tree of the same structure with ``func(leaf, *matching_leaves_of_rests)`` at each leaf.

    Each of ``rests`` must have ``tree``'s structure (it may nest deeper below the leaves).
    """
    leaves, spec = tree_flatten(tree, is_leaf)
    columns = [leaves] + [spec.flatten_up_to(r) for r in rests]
    return spec.unflatten(func(*xs) for xs in zip(*columns))


def tree_map_(func: Callable[..., Any], tree: PyTree, *rests: PyTree,
              is_leaf: Callable[[PyTree], bool] | None = None) -> PyTree:
    """Call ``func`` on each leaf for its side effect; return ``tree`` itself."""
    leaves, spec = tree_flatten(tree, is_leaf)
    columns = [leaves] + [spec.flatten_up_to(r) for r in rests]
    for xs in zip(*columns):
        func(*xs)
    return tree


def tree_map_only(type_or_types: type | tuple[type, ...], func: Callable[[Any], Any],
                  tree: PyTree, is_leaf: Callable[[PyTree], bool] | None = None) -> PyTree:
    """``tree_map`` applying ``func`` only to leaves that are instances of ``type_or_types``."""
    return tree_map(lambda x: func(x) if isinstance(x, type_or_types) else x, tree,
                    is_leaf=is_leaf)


def tree_all(pred: Callable[[Any], bool], tree: PyTree,
             is_leaf: Callable[[PyTree], bool] | None = None) -> bool:
    """True when ``pred`` holds for every leaf."""
    return all(map(pred, tree_leaves(tree, is_leaf)))


def tree_any(pred: Callable[[Any], bool], tree: PyTree,
             is_leaf: Callable[[PyTree], bool] | None = None) -> bool:
    """True when ``pred`` holds for some leaf."""
    return any(map(pred, tree_leaves(tree, is_leaf)))
