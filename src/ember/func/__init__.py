"""``ember.func`` (``torch.func``): function transforms.

``grad``, ``grad_and_value``, ``vjp``, ``jvp``, ``jacrev``, ``jacfwd``, ``hessian`` compose
ember's reverse-mode autograd: each call builds fresh differentiable stand-ins for its inputs,
runs the function and differentiates it. They nest (``grad(grad(f))``, ``jacrev(jacrev(f))``)
because inside another transform the inner one records its backward (``create_graph=True``).
``jacfwd`` and ``jvp`` use reverse mode too (the double-vjp trick for ``jvp``): same values, a
different cost profile from PyTorch's forward mode.

``vmap`` is a loop: it calls the function once per index of the mapped dimension and stacks the
results, so it supports anything the function does (data-dependent control flow, ``.item()``),
at the speed of a Python loop. ``randomness='error'`` raises when the function draws from
ember's generator, ``'same'`` gives every batch element the same draws, ``'different'`` lets
them differ.

``functional_call`` runs a module with some of its parameters and buffers swapped for the given
tensors, and restores them afterwards, even if the call raises.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable
from typing import Any

from .._tensor import Tensor
from ._pytree import broadcast_prefix, spec_str, tree_flatten, tree_unflatten

__all__ = ["functional_call", "grad", "grad_and_value", "hessian", "jacfwd", "jacrev", "jvp",
           "linearize", "replace_all_batch_norm_modules_", "stack_module_state", "vjp", "vmap"]

_depth = [0]  # how many differentiating transforms are running (nesting => create_graph)



def _is_tensor(x: Any) -> bool:
    return isinstance(x, Tensor)


class _Level:
    """Marks a differentiating transform as running (inner transforms then keep graphs)."""

    def __enter__(self) -> None:
        _depth[0] += 1

    def __exit__(self, *exc: Any) -> None:
        _depth[0] -= 1


def _wants_graph(*trees: Any) -> bool:
    """Record the backward when nested in another transform or an input requires grad."""
    if _depth[0] > 0:
        return True
    for tree in trees:
        for leaf in tree_flatten(tree)[0]:
            if _is_tensor(leaf) and leaf.requires_grad:
                return True
    return False


def _lift(leaf: Any, fn_name: str) -> Any:
    """A differentiable stand-in for an input leaf (connected to it if it requires grad)."""
    if not _is_tensor(leaf):
        raise RuntimeError(f"{fn_name}: expected the differentiated arguments to be Tensors (or "
                           f"tuples/lists/dicts of Tensors), got {type(leaf).__name__}")
    if leaf.requires_grad:
        return leaf.view_as(leaf)
    if not (leaf.is_floating_point() or leaf.is_complex()):
        raise RuntimeError("only Tensors of floating point dtype can require gradients")
    return leaf.detach().requires_grad_(True)


def _detach_tree(tree: Any, keep: bool) -> Any:
    if keep:
        return tree
    leaves, spec = tree_flatten(tree)
    return tree_unflatten([x.detach() if _is_tensor(x) else x for x in leaves], spec)


def _norm_argnums(argnums: Any, nargs: int, fn_name: str) -> tuple[tuple, bool]:
    single = isinstance(argnums, int)
    nums = (argnums,) if single else tuple(argnums)
    if not nums:
        raise RuntimeError(f"{fn_name}: argnums must be non-empty")
    out = []
    for a in nums:
        if not isinstance(a, int):
            raise RuntimeError(f"{fn_name}: argnums must be int or Tuple[int, ...], got {type(a)}")
        if not -nargs <= a < nargs:
            raise RuntimeError(f"Got argnum={a}, but only {nargs} positional inputs")
        out.append(a % nargs)
    if len(set(out)) != len(out):
        raise RuntimeError(f"{fn_name}: argnums must be unique, got {argnums}")
    return tuple(out), single


class _Lifted:
    """The differentiated arguments of one call, lifted to fresh stand-ins."""

    def __init__(self, args: tuple, argnums: Any, fn_name: str) -> None:
        self.nums, self.single = _norm_argnums(argnums, len(args), fn_name)
        self.specs = []
        self.leaves: list = []
        self.counts = []
        new_args = list(args)
        for i in self.nums:
            leaves, spec = tree_flatten(args[i])
            lifted = [_lift(x, fn_name) for x in leaves]
            self.specs.append(spec)
            self.counts.append(len(lifted))
            self.leaves.extend(lifted)
            new_args[i] = tree_unflatten(lifted, spec)
        self.args = tuple(new_args)

    def rebuild(self, flat: list) -> Any:
        """Per-argnum structures from a flat list aligned with ``self.leaves``."""
        out, k = [], 0
        for spec, n in zip(self.specs, self.counts):
            out.append(tree_unflatten(flat[k:k + n], spec))
            k += n
        return out[0] if self.single else tuple(out)


def _grad_flat(outputs: list, inputs: list, cotangents: list, create_graph: bool) -> list:
    """Gradients of ``outputs`` (weighted by ``cotangents``) for each input; zeros if unused."""
    import ember

    from ..autograd import grad as _agrad

    pairs = [(o, c) for o, c in zip(outputs, cotangents) if o.requires_grad]
    if not pairs or not inputs:
        return [ember.zeros_like(x) for x in inputs]
    got = _agrad([o for o, _ in pairs], inputs, [c for _, c in pairs], retain_graph=True,
                 create_graph=create_graph, allow_unused=True)
    return [g if g is not None else ember.zeros_like(x) for g, x in zip(got, inputs)]


def grad_and_value(func: Callable, argnums: Any = 0, has_aux: bool = False) -> Callable:
    """A function returning ``(gradient, value)`` of a scalar-valued ``func`` with respect to the
    arguments ``argnums`` (an int, or a tuple giving a tuple of gradients). Arguments may be
    tuples/lists/dicts of tensors (e.g. a parameter dict); gradients have the same structure.
    With ``has_aux`` func returns ``(output, aux)`` and the result is ``(grad, (value, aux))``."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        from ..autograd.grad_mode import enable_grad

        keep = _wants_graph(args, kwargs)
        with enable_grad(), _Level():
            lifted = _Lifted(args, argnums, "grad_and_value(f)(*args)")
            out = func(*lifted.args, **kwargs)
            aux = None
            if has_aux:
                if not (isinstance(out, tuple) and len(out) == 2):
                    raise RuntimeError("grad_and_value(f)(*args): output of function f should be "
                                       "a tuple: (output, aux) if has_aux is True")
                out, aux = out
            if not _is_tensor(out):
                raise RuntimeError("grad_and_value(f)(*args): Expected f(*args) to return a "
                                   f"Tensor, got {type(out)}")
            if out.dim() != 0:
                raise RuntimeError(
                    "grad_and_value(f)(*args): Expected f(*args) to return a scalar Tensor, got "
                    f"tensor with {out.dim()} dims. Maybe you wanted to use the vjp or jacrev "
                    "APIs instead?"
                )
            import ember

            flat = _grad_flat([out], lifted.leaves, [ember.ones_like(out)], keep)
        grads = _detach_tree(lifted.rebuild(flat), keep)
        value = out if keep else out.detach()
        if has_aux:
            return grads, (value, _detach_tree(aux, keep))
        return grads, value

    return wrapper


def grad(func: Callable, argnums: Any = 0, has_aux: bool = False) -> Callable:
    """A function computing the gradient of scalar-valued ``func`` with respect to the arguments
    ``argnums`` (``(grad, aux)`` with ``has_aux``)."""
    gv = grad_and_value(func, argnums, has_aux)

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        g, value = gv(*args, **kwargs)
        if has_aux:
            return g, value[1]
        return g

    return wrapper


def vjp(func: Callable, *primals: Any, has_aux: bool = False) -> tuple:
    """``(func(*primals), vjp_fn)``; ``vjp_fn(cotangents)`` returns one gradient per primal (a
    tuple), each shaped like its primal. With ``has_aux`` the result is ``(out, vjp_fn, aux)``."""
    from ..autograd.grad_mode import enable_grad

    keep = _wants_graph(primals)
    with enable_grad(), _Level():
        lifted = _Lifted(primals, tuple(range(len(primals))), "vjp(f, *primals)")
        out = func(*lifted.args)
        aux = None
        if has_aux:
            if not (isinstance(out, tuple) and len(out) == 2):
                raise RuntimeError("vjp(f, *primals): output of function f should be a tuple: "
                                   "(output, aux) if has_aux is True")
            out, aux = out
    out_leaves, out_spec = tree_flatten(out)
    for o in out_leaves:
        if not _is_tensor(o):
            raise RuntimeError("vjp(f, *primals): Expected f to return a Tensor or a "
                               f"(nested) tuple/list/dict of Tensors, got {type(o)}")

    def vjp_fn(cotangents: Any, *, retain_graph: bool = True, create_graph: bool | None = None) -> tuple:
        cot_leaves, cot_spec = tree_flatten(cotangents)
        if len(cot_leaves) != len(out_leaves):
            raise RuntimeError(f"Expected pytree structure of cotangents to be the same as pytree "
                               f"structure of outputs to the function. cotangents: "
                               f"{spec_str(cot_spec)}, primal output: {spec_str(out_spec)}")
        for c, o in zip(cot_leaves, out_leaves):
            if tuple(c.shape) != tuple(o.shape):
                raise RuntimeError(f"Mismatch in shape: grad_output[0] has a shape of {c.shape} "
                                   f"and output[0] has a shape of {o.shape}.")
        graph = keep or _depth[0] > 0 if create_graph is None else create_graph
        with enable_grad():
            flat = _grad_flat(out_leaves, lifted.leaves, cot_leaves, graph)
        res = lifted.rebuild(flat)
        return _detach_tree(res, graph)

    result_out = _detach_tree(out, keep)
    if has_aux:
        return result_out, vjp_fn, _detach_tree(aux, keep)
    return result_out, vjp_fn


def jvp(func: Callable, primals: Any, tangents: Any, *, strict: bool = False,
        has_aux: bool = False) -> tuple:
    """``(func(*primals), J @ tangents)`` (computed by the double-vjp trick in reverse mode)."""
    import ember

    from ..autograd import grad as _agrad
    from ..autograd.grad_mode import enable_grad

    if not isinstance(primals, tuple):
        raise RuntimeError("jvp(f, primals, tangents): Expected primals to be a tuple. E.g. it "
                           "should be valid to call f(*primals).")
    if not isinstance(tangents, tuple) or len(tangents) != len(primals):
        raise RuntimeError("jvp(f, primals, tangents): Expected primals and tangents to have the "
                           "same python structure. For example, if primals is a tuple of 3 "
                           "tensors, tangents also must be.")
    keep = _wants_graph(primals, tangents)
    with enable_grad(), _Level():
        lifted = _Lifted(primals, tuple(range(len(primals))), "jvp(f, primals, tangents)")
        tan_leaves = tree_flatten(tangents)[0]
        if len(tan_leaves) != len(lifted.leaves):
            raise RuntimeError("jvp(f, primals, tangents): Expected primals and tangents to have "
                               "the same python structure.")
        for p, t in zip(lifted.leaves, tan_leaves):
            if tuple(p.shape) != tuple(t.shape):
                raise RuntimeError(f"jvp(f, primals, tangents): Expected primals and tangents to "
                                   f"have the same shape, got {tuple(p.shape)} and {tuple(t.shape)}")
        out = func(*lifted.args)
        aux = None
        if has_aux:
            out, aux = out
        out_leaves, out_spec = tree_flatten(out)
        dummies = [ember.zeros_like(o).requires_grad_(True) for o in out_leaves]
        live = [(o, d) for o, d in zip(out_leaves, dummies) if o.requires_grad]
        if live and lifted.leaves:
            g = _agrad([o for o, _ in live], lifted.leaves, [d for _, d in live],
                       retain_graph=True, create_graph=True, allow_unused=True)
        else:
            g = [None] * len(lifted.leaves)
        pairs = [(gi, t) for gi, t in zip(g, tan_leaves) if gi is not None and gi.requires_grad]
        if pairs:
            jv = _agrad([p[0] for p in pairs], dummies, [p[1] for p in pairs], retain_graph=True,
                        create_graph=keep, allow_unused=True)
        else:
            jv = [None] * len(dummies)
        jv = [x if x is not None else ember.zeros_like(o) for x, o in zip(jv, out_leaves)]
    res = (_detach_tree(out, keep), _detach_tree(tree_unflatten(jv, out_spec), keep))
    if has_aux:
        return res + (_detach_tree(aux, keep),)
    return res


def jacrev(func: Callable, argnums: Any = 0, *, has_aux: bool = False,
           chunk_size: int | None = None, _preallocate_and_copy: bool = False) -> Callable:
    """A function computing the Jacobian of ``func`` with respect to ``argnums`` by reverse
    mode: for each output leaf a structure like the differentiated argument(s), holding tensors
    of shape ``out.shape + in.shape``."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        import ember

        from ..autograd.grad_mode import enable_grad

        keep = _wants_graph(args, kwargs)
        with enable_grad(), _Level():
            lifted = _Lifted(args, argnums, "jacrev(f, argnums)")
            out = func(*lifted.args, **kwargs)
            aux = None
            if has_aux:
                if not (isinstance(out, tuple) and len(out) == 2):
                    raise RuntimeError("jacrev(f, ...)(*args): output of function f should be a "
                                       "tuple: (output, aux) if has_aux is True")
                out, aux = out
            out_leaves, out_spec = tree_flatten(out)
            per_output = []
            for o in out_leaves:
                if not _is_tensor(o):
                    raise RuntimeError("jacrev(f, ...)(*args): Expected f to return a Tensor or "
                                       f"(nested) tuples/dicts of Tensors, got {type(o)}")
                n = o.numel()
                eye = ember.eye(n, dtype=o.dtype, device=o.device) if n else None
                rows: list[list] = [[] for _ in lifted.leaves]
                for k in range(n):
                    cot = eye[k].reshape(o.shape)
                    gs = _grad_flat([o], lifted.leaves, [cot], keep)
                    for j, gj in enumerate(gs):
                        rows[j].append(gj)
                blocks = []
                for j, x in enumerate(lifted.leaves):
                    if n:
                        b = ember.stack(rows[j], 0)
                    else:
                        b = ember.zeros((0,) + tuple(x.shape), dtype=x.dtype, device=x.device)
                    blocks.append(b.reshape(tuple(o.shape) + tuple(x.shape)))
                per_output.append(_detach_tree(lifted.rebuild(blocks), keep))
        result = tree_unflatten(per_output, out_spec)
        if has_aux:
            return result, _detach_tree(aux, keep)
        return result

    return wrapper


def jacfwd(func: Callable, argnums: Any = 0, has_aux: bool = False, *,
           randomness: str = "error") -> Callable:
    """The Jacobian of ``func`` (same result and structure as PyTorch's forward-mode ``jacfwd``;
    ember computes it in reverse mode, like ``jacrev``)."""
    return jacrev(func, argnums, has_aux=has_aux)


def hessian(func: Callable, argnums: Any = 0) -> Callable:
    """The Hessian of a scalar ``func``: ``jacfwd(jacrev(func, argnums), argnums)``."""
    return jacfwd(jacrev(func, argnums), argnums)


# ---------------------------------------------------------------------------------------------
# vmap


def _fn_name(func: Any) -> str:
    return getattr(func, "__name__", repr(func))


def vmap(func: Callable, in_dims: Any = 0, out_dims: Any = 0, randomness: str = "error", *,
         chunk_size: int | None = None) -> Callable:
    """Map ``func`` over a dimension of its inputs (``in_dims``: an int, None for "not mapped",
    or a tuple with one entry per argument, possibly nested like the argument) and stack the
    results along ``out_dims``. Implemented as a loop over the mapped dimension."""
    if randomness not in ("error", "different", "same"):
        raise RuntimeError("Only allowed values for randomness are 'error', 'different', or "
                           f"'same'. Got {randomness}")
    if chunk_size is not None and (not isinstance(chunk_size, int) or chunk_size <= 0):
        raise ValueError(f"vmap: chunk_size should be None or greater than 0. (got {chunk_size})")

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        import ember

        from ..ops.random import default_generator

        name = _fn_name(func)
        if not args:
            raise ValueError(f"vmap({name})(<inputs>): got no inputs. Maybe you forgot to add "
                             "inputs, or you are trying to vmap over a function with no inputs. "
                             "The latter is unsupported.")
        if isinstance(in_dims, int) or in_dims is None:
            dims_per_arg = (in_dims,) * len(args)
        elif isinstance(in_dims, tuple):
            if len(in_dims) != len(args):
                raise ValueError(
                    f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): in_dims is not compatible "
                    f"with the structure of `inputs`. in_dims has {len(in_dims)} entries but "
                    f"inputs has {len(args)}."
                )
            dims_per_arg = in_dims
        else:
            raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): expected `in_dims` "
                             f"to be int or a (potentially nested) tuple matching the structure "
                             f"of inputs, got: {type(in_dims)}.")
        flat_args, args_spec = tree_flatten(list(args))
        try:
            flat_dims = broadcast_prefix(list(dims_per_arg), list(args))
        except ValueError:
            raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): in_dims is not "
                             "compatible with the structure of `inputs`.") from None
        size = None
        sizes = []
        norm_dims = []
        for x, d in zip(flat_args, flat_dims):
            if d is None:
                norm_dims.append(None)
                continue
            if not isinstance(d, int):
                raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): in_dims must "
                                 f"be int or None, got {type(d)}")
            if not _is_tensor(x):
                raise ValueError(
                    f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={d} for an input "
                    f"but the input is of type {type(x)}. We cannot vmap over non-Tensor "
                    "arguments, please use None as the respective in_dim"
                )
            nd = x.dim()
            if not -nd <= d < nd:
                raise ValueError(
                    f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got in_dim={d} for some "
                    f"input, but that input is a Tensor of dimensionality {nd} so expected in_dim "
                    f"to satisfy -{nd} <= in_dim < {nd}."
                )
            d %= nd
            norm_dims.append(d)
            sizes.append(x.shape[d])
        if not sizes:
            raise ValueError(f"vmap({name}, in_dims={in_dims}, ...)(<inputs>): Got all in_dims=None"
                             ", but at least one input must be mapped over (a Tensor with an int "
                             "in_dim)")
        size = sizes[0]
        if any(s != size for s in sizes):
            raise ValueError("vmap: Expected all tensors to have the same size in the mapped "
                             f"dimension, got sizes {sizes} for the mapped dimension")
        state = default_generator.get_state() if randomness != "different" else None
        results = []
        for i in range(size):
            if randomness == "same":
                default_generator.set_state(state)
            leaves = [x if d is None else x.select(d, i) for x, d in zip(flat_args, norm_dims)]
            call_args = tree_unflatten(leaves, args_spec)
            out = func(*call_args, **kwargs)
            if randomness == "error":
                now = default_generator.get_state()
                if not bool((now == state).all()):
                    default_generator.set_state(state)
                    raise RuntimeError(
                        "vmap: called random operation while in randomness error mode. Please "
                        "either use the 'same' or 'different' randomness flags on vmap or perform "
                        "the randomness operation out of vmap"
                    )
            results.append(out)
        if size == 0:
            raise ValueError("vmap: the mapped dimension has size 0; ember's loop vmap cannot "
                             "infer the output structure")
        out_leaves0, out_spec = tree_flatten(results[0])
        if isinstance(out_dims, (int, type(None))):
            flat_out_dims = [out_dims] * len(out_leaves0)
        else:
            try:
                flat_out_dims = broadcast_prefix(out_dims, results[0], "out_dims")
            except ValueError:
                raise ValueError(
                    f"vmap({name}, ..., out_dims={out_dims})(<inputs>): out_dims is not compatible "
                    f"with the structure of `outputs`. out_dims has structure {out_dims} but "
                    f"outputs has structure {spec_str(out_spec)}."
                ) from None
        per_leaf = [tree_flatten(r)[0] for r in results]
        stacked = []
        for k, d in enumerate(flat_out_dims):
            vals = [p[k] for p in per_leaf]
            if d is None:
                stacked.append(vals[0])
                continue
            if not _is_tensor(vals[0]):
                raise ValueError(f"vmap({name}, ...): `{name}` must only return Tensors, got "
                                 f"type {type(vals[0])}. Did you mean to set out_dims= to None "
                                 "for output?")
            nd = vals[0].dim() + 1
            if not -nd <= d < nd:
                raise ValueError(f"vmap({name}, ..., out_dims={out_dims}): out_dims={d} is out of "
                                 f"range for an output with {nd - 1} dims")
            stacked.append(ember.stack(vals, d % nd))
        return tree_unflatten(stacked, out_spec)

    return wrapper


def functional_call(module: Any, parameter_and_buffer_dicts: Any, args: Any = None,
                    kwargs: dict | None = None, *, tie_weights: bool = True,
                    strict: bool = False) -> Any:
    """Call ``module(*args, **kwargs)`` with its parameters/buffers named in the dict(s) (dotted
    names, as ``named_parameters`` gives them) replaced by the given tensors; everything is
    restored afterwards, even if the call raises."""
    if isinstance(parameter_and_buffer_dicts, dict):
        mapping = parameter_and_buffer_dicts
    elif isinstance(parameter_and_buffer_dicts, (list, tuple)):
        mapping = {}
        seen: set = set()
        dup = []
        for d in parameter_and_buffer_dicts:
            for k in d:
                if k in seen:
                    dup.append(k)
                seen.add(k)
            mapping.update(d)
        if dup:
            raise ValueError(f"{dup} appeared in multiple dictionaries; behavior of functional "
                             "call is ambiguous")
    else:
        raise ValueError(f"Expected parameter_and_buffer_dicts to be a dict, or a list/tuple of "
                         f"dicts, but got {type(parameter_and_buffer_dicts)}")
    if args is None:
        args = ()
    elif not isinstance(args, tuple):
        args = (args,)
    kwargs = {} if kwargs is None else kwargs
    with _reparametrize_module(module, mapping, tie_weights=tie_weights, strict=strict):
        return module(*args, **kwargs)


@contextlib.contextmanager
def _reparametrize_module(module: Any, parameters_and_buffers: dict, tie_weights: bool = False,
                         strict: bool = False, stack_weights: bool = False) -> Any:
    """Within the block, ``module``'s parameters, buffers (dotted names) and other attributes
    named in the dict are the given tensors (PyTorch's private
    ``nn.utils.stateless._reparametrize_module``, which libraries call). On exit the originals
    come back, last swapped first, and the dict receives what the module held at the end (a
    module that replaced an entry in place keeps that change visible to the caller)."""
    mapping = dict(parameters_and_buffers)
    if tie_weights:
        groups: dict = {}
        for n, p in module.named_parameters(remove_duplicate=False):
            groups.setdefault(id(p), []).append(n)
        for n, b in module.named_buffers(remove_duplicate=False):
            groups.setdefault(id(b), []).append(n)
        for names in groups.values():
            given = [n for n in names if n in mapping]
            if given and len(names) > 1:
                for n in names:
                    if n not in mapping:
                        mapping[n] = mapping[given[0]]
    if strict:
        expected = {n for n, _ in module.named_parameters(remove_duplicate=False)}
        expected |= {n for n, _ in module.named_buffers(remove_duplicate=False)}
        missing = sorted(expected - set(mapping))
        unexpected = sorted(set(mapping) - expected)
        if missing or unexpected:
            msg = []
            if unexpected:
                msg.append("Unexpected key(s): " + ", ".join(repr(k) for k in unexpected) + ".")
            if missing:
                msg.append("Missing key(s): " + ", ".join(repr(k) for k in missing) + ".")
            raise RuntimeError(f"Error(s) in reparametrizing for {type(module).__name__}:\n\t"
                               + "\n\t".join(msg))
    saved = []  # (the dict holding it, its key, the original, whether there was one, name)
    try:
        for name, value in mapping.items():
            *path, leaf = name.split(".")
            mod = module
            for part in path:
                mod = getattr(mod, part)
            d = mod.__dict__
            if leaf in d.get("_parameters", {}):
                store = d["_parameters"]
            elif leaf in d.get("_buffers", {}):
                store = d["_buffers"]
            else:
                store = d
            had = leaf in store
            saved.append((store, leaf, store.get(leaf), had, name))
            store[leaf] = value
        yield
    finally:
        for store, leaf, old, had, name in reversed(saved):
            if name in parameters_and_buffers and leaf in store:
                parameters_and_buffers[name] = store[leaf]
            if had:
                store[leaf] = old
            else:
                store.pop(leaf, None)


def linearize(func: Callable, *primals: Any) -> tuple:
    """``(func(*primals), jvp_fn)`` where ``jvp_fn(*tangents)`` is the Jacobian-vector product at
    ``primals`` (each call re-runs ``jvp``; PyTorch traces the linearised function once)."""
    out = _detach_tree(func(*primals), False)

    def jvp_fn(*tangents: Any) -> Any:
        return jvp(func, primals, tangents)[1]

    return out, jvp_fn


def stack_module_state(models: Any) -> tuple[dict, dict]:
    """Stack the parameters and buffers of same-class modules along a new leading dimension:
    ``(params, buffers)`` dicts for ``vmap(functional_call...)`` model ensembles. Stacked
    parameters are new leaves that require grad when the originals do."""
    import ember

    models = list(models)
    if not models:
        raise RuntimeError("stack_module_state: Expected at least one model, got 0.")
    if not (all(m.training for m in models) or all(not m.training for m in models)):
        raise RuntimeError("stack_module_state: Expected all models to have the same training/eval "
                           "mode.")
    if any(type(m) is not type(models[0]) for m in models):
        raise RuntimeError("stack_module_state: Expected all models to be of the same class.")
    params = {}
    for name, p in models[0].named_parameters():
        stacked = ember.stack([dict(m.named_parameters())[name].detach() for m in models])
        params[name] = stacked.requires_grad_(p.requires_grad)
    buffers = {name: ember.stack([dict(m.named_buffers())[name] for m in models])
               for name, _ in models[0].named_buffers()}
    return params, buffers


def replace_all_batch_norm_modules_(root: Any) -> Any:
    """Make every batch-norm layer under ``root`` stop tracking running statistics (in place), so
    it can run under ``vmap``; returns ``root``."""
    from ..nn.modules.batchnorm import _BatchNorm

    for module in root.modules():
        if isinstance(module, _BatchNorm):
            module.running_mean = None
            module.running_var = None
            module.num_batches_tracked = None
            module.track_running_stats = False
    return root
