"""What a recorded node shows to tools that read the graph (torchviz's ``make_dot``, a user's walk
over ``grad_fn.next_functions``): PyTorch's ``_saved_<name>`` fields and tensor inputs, per op.

PyTorch's nodes expose what their derivative formula saved as ``_saved_self``, ``_saved_mat1``,
``_saved_dim``...; ember's op keeps its own fields. Each entry below gives an op class
``saved_fields``: PyTorch's name -> ``SavedAt(i)`` (the op's saved value ``i``, as a tensor), a
function of the node, or a constant. ``shown_inputs`` is the number of PyTorch's tensor inputs
(an op's later arguments, dims and sizes, are no inputs there). ``Node``'s ``SavedField``
descriptors and ``Node.__dir__`` (``autograd/node.py``) read both. ``linear`` is one fused op in ember, while
PyTorch records ``t`` (and views for inputs that are not 2-D) around ``addmm``/``mm``: its
``next_functions`` shows those nodes (``shown_node``), which the engine never runs.
"""

from __future__ import annotations

import math
from typing import Any

from .._tensor_base import TensorBase
from ..autograd.node import SavedAt, install_saved_fields, shown_node
from . import joining, pointwise, pointwise_piecewise, shape
from .nn import activation, attention, convolution, normalization, pooling
from .nn.linear import Linear, LinearMm, LinearSqueeze, LinearUnsafeView, LinearView
from .other_matrix import T

# ---------------------------------------------------------------------------------------------
# the tables


def install() -> None:
    """Give the op classes their fields (``ember.ops`` calls this once, when it loads)."""
    for cls, (fields, inputs) in FIELDS.items():
        cls.saved_fields = fields
        install_saved_fields(fields)
        if inputs is not None:
            cls.shown_inputs = inputs
    for cls in (Linear, LinearMm, LinearView, LinearUnsafeView,
                LinearSqueeze):
        cls.shown_edges = staticmethod(_linear_edges)


def _conv_ints(ctx: Any, pair: tuple) -> tuple:
    """A 2-D geometry field as PyTorch shows it for the op's own rank (conv1d: one value)."""
    return tuple(pair[-1:]) if ctx.nd == 3 else tuple(pair)


def _norm_stat(ctx: Any, i: int) -> Any:
    """The mean (``i=2``) or rstd (``i=3``) a norm saved, in the shape PyTorch shows as
    ``_saved_result1``/``_saved_result2``: one per channel (batch norm), or the leading dims
    with the normalized ones kept as 1 (layer norm), one per sample and group (group norm)."""
    t = ctx._saved_tensor(i)
    if t is None:
        return None
    if type(ctx)._fn is normalization.BatchNormTrain:
        return t.detach().reshape(-1)
    if type(ctx)._fn is normalization.GroupNorm:  # (samples, groups)
        return t.detach().reshape(tuple(t.shape[:2]))
    k = len(ctx.axes)
    return t.detach().reshape(tuple(ctx.shape[:len(ctx.shape) - k]) + (1,) * k)


def _attention_fields(out: int, lse: int | None) -> dict:
    """PyTorch's CPU attention node's fields, from an op that saved (q, k, v, float mask, bool
    mask, ...) with the output at ``out`` and the logsumexp at ``lse`` (None: recomputed)."""
    def lse_field(c: Any) -> Any:
        if lse is not None:
            t = c._saved_tensor(lse)
            return t.detach().reshape(tuple(t.shape[:-1]))
        q, k, _v, fm, bm = c.saved[:5]
        if c._tensor_mode:
            q, k, fm, bm = (a if a is None else a._data for a in (q, k, fm, bm))
        xp = attention.xp_of(q)
        s = attention._attn_scores(xp, q, attention._repeat_heads(xp, k, c.groups), fm, bm,
                                   c.scale)
        m = s.max(axis=-1, keepdims=True)
        with attention._quiet(xp):
            m = xp.where(xp.isfinite(m), m, 0)
            res = (m + xp.log(xp.exp(s - m).sum(axis=-1, keepdims=True)))[..., 0]
        return TensorBase._make(res.astype(q.dtype, copy=False))

    def mask(c: Any) -> Any:
        if getattr(c, "causal", False):
            return None
        m = c._saved_tensor(3)
        return m if m is not None else c._saved_tensor(4)

    def scale(c: Any) -> Any:
        e = c._saved_tensor(0).shape[-1]
        return None if math.isclose(c.scale, 1.0 / math.sqrt(e), rel_tol=1e-12) else c.scale

    return {"attn_mask": mask, "dropout_p": lambda c: c.p_drop,
            "is_causal": lambda c: bool(getattr(c, "causal", False)), "key": SavedAt(1),
            "logsumexp": lse_field, "output": SavedAt(out), "query": SavedAt(0),
            "scale": scale, "value": SavedAt(2)}





def _rows(ctx: Any) -> int:
    return math.prod(ctx.x_shape[:-1])


def _mat1(ctx: Any) -> Any:
    """A linear's input as the product's 2-D left operand, when it was kept."""
    x = ctx._saved_tensor(0)
    return None if x is None else x.detach().reshape(_rows(ctx), ctx.x_shape[-1])


def _mat2(ctx: Any) -> Any:
    """A linear's transposed weight (``mat2``), when it was kept."""
    w = ctx._saved_tensor(1)
    return None if w is None else w.detach().T


def _product_fields(left: str) -> dict:
    """addmm's (``left="mat1"``) or mm's (``"self"``) fields in a linear: each operand is kept
    for the other's gradient, its strides only when it needs a gradient itself."""
    return {
        left: _mat1,
        f"{left}_sym_sizes": lambda c: (_rows(c), c.x_shape[-1]),
        f"{left}_sym_strides": lambda c: (c.x_shape[-1], 1) if c.needs_input_grad[0] else (),
        "mat2": _mat2,
        "mat2_sym_sizes": lambda c: (c.w_shape[1], c.w_shape[0]),
        "mat2_sym_strides": lambda c: (1, c.w_shape[1]) if c.needs_input_grad[1] else (),
    }


_ADDMM = {"alpha": 1, "beta": 1, **_product_fields("mat1")}
_MM = _product_fields("self")

# op class -> (saved_fields, shown_inputs)
FIELDS: dict[type, tuple[dict, int | None]] = {
    pointwise.Add: ({"alpha": 1}, None),
    pointwise.Sub: ({"alpha": 1}, None),
    pointwise.Mul: ({"other": SavedAt(1), "self": SavedAt(0)}, None),
    pointwise.Div: ({"other": SavedAt(1), "self": SavedAt(0)}, None),
    pointwise_piecewise.Relu: ({"result": SavedAt(0)}, None),
    activation.Gelu: ({"approximate": lambda c: c.approximate, "self": SavedAt(0)}, 1),
    shape.Reshape: ({"self_sym_sizes": lambda c: c.shape}, 1),
    shape.Permute: ({"dims": lambda c: tuple(c.dims)}, 1),
    shape.Transpose: ({"dim0": lambda c: c.d[0], "dim1": lambda c: c.d[1]}, 1),
    joining.Split: ({"dim": lambda c: c.dim, "self_sym_sizes": lambda c: c.shape,
                     "split_sizes": lambda c: tuple(b - a for a, b in c.bounds)}, 1),
    joining.SplitEqual: ({"dim": lambda c: c.dim, "self_sym_sizes": lambda c: c.shape,
                          "split_size": lambda c: c.bounds[0][1] - c.bounds[0][0]}, 1),
    convolution.Conv: ({
        "bias_sym_sizes_opt": lambda c: (c.out_channels,) if c.bias else None,
        "dilation": lambda c: _conv_ints(c, c.args[2]),
        "groups": lambda c: c.args[3],
        "input": SavedAt(0),
        "output_padding": lambda c: (0,) * (c.nd - 2),
        "padding": lambda c: _conv_ints(c, tuple(p[0] for p in c.args[1])),
        "stride": lambda c: _conv_ints(c, c.args[0]),
        "transposed": False,
        "weight": SavedAt(1),
    }, 3),
    normalization.LayerNorm: ({
        "bias": lambda c: c.__dict__.get("bias"), "input": SavedAt(0),
        "normalized_shape": lambda c: c.shape[len(c.shape) - len(c.axes):],
        "result1": lambda c: _norm_stat(c, 2), "result2": lambda c: _norm_stat(c, 3),
        "weight": SavedAt(1),
    }, 3),
    normalization.BatchNormTrain: ({
        "eps": lambda c: c.eps, "input": SavedAt(0),
        "result1": lambda c: _norm_stat(c, 2), "result2": lambda c: _norm_stat(c, 3),
        "running_mean": lambda c: c.running[0], "running_var": lambda c: c.running[1],
        "training": True, "weight": SavedAt(1),
    }, 3),
    normalization.GroupNorm: ({
        "C": lambda c: c.shape[1], "HxW": lambda c: math.prod(c.shape[2:]),
        "N": lambda c: c.shape[0], "eps": lambda c: c.eps, "group": lambda c: c.groups,
        "input": SavedAt(0), "result1": lambda c: _norm_stat(c, 2),
        "result2": lambda c: _norm_stat(c, 3), "weight": SavedAt(1),
    }, 3),
    pooling.MaxPool: ({
        "ceil_mode": lambda c: c.pool[4], "dilation": lambda c: c.pool[3],
        "kernel_size": lambda c: c.pool[0], "padding": lambda c: c.pool[2],
        "result1": lambda c: TensorBase._make(c.idx),  # (flat offsets per image)
        "self": SavedAt(0), "stride": lambda c: c.pool[1],
    }, 1),
    attention.ScaledDotProductAttention: (_attention_fields(7, None), 3),
    attention.ScaledDotProductFlashAttention: (_attention_fields(5, 6), 3),
    Linear: (_ADDMM, None),
    LinearMm: (_MM, None),
    LinearView: ({"self_sym_sizes": lambda c: (_rows(c), c.w_shape[0])}, None),
    LinearUnsafeView: ({"self_sym_sizes": lambda c: (_rows(c), c.w_shape[0])}, None),
    LinearSqueeze: ({"dim": 0, "self_sym_sizes": lambda c: (1, c.w_shape[0])}, None),
}


def _linear_edges(node: Any) -> tuple:
    """``next_functions`` of a linear's node as PyTorch records linear: the weight through
    ``TBackward0``, an input that is not 2-D through a view to 2-D, the product under the
    outer view. Made once per node."""
    d = node.__dict__
    if "_shown" in d:
        return d["_shown"]
    ein, ew, eb = (tuple(e) for e in node._edges[:3])
    wt = (shown_node(T._node_cls, (ew,)), 0) if ew[0] is not None else (None, 0)
    cls = type(node)._fn
    if cls is Linear:
        edges: tuple = (eb, ein, wt)
    elif cls is LinearMm:
        edges = (ein, wt)
    else:
        if ein[0] is not None:
            squeeze = cls is LinearSqueeze
            view = shape.Unsqueeze if squeeze else shape.Reshape
            fields = {"dim": 0} if squeeze else {"self_sym_sizes": node.x_shape}
            ein = (shown_node(view._node_cls, (ein,), fields), 0)
        if cls is LinearView:
            inner = shown_node(Linear._node_cls, (eb, ein, wt), _bound(_ADDMM, node))
        else:
            inner = shown_node(LinearMm._node_cls, (ein, wt), _bound(_MM, node))
        edges = ((inner, 0),)
    d["_shown"] = edges
    return edges


def _bound(fields: dict, node: Any) -> dict:
    """``fields`` read from the linear's own ``node`` by a node ``shown_node`` made."""
    return {k: (lambda c, f=f: f(node)) if callable(f) else f for k, f in fields.items()}
