"""Attention and the Transformer: ``MultiheadAttention``, ``TransformerEncoderLayer``,
``TransformerEncoder``, ``TransformerDecoderLayer``, ``TransformerDecoder``, ``Transformer``.

Parameter names, shapes, initialisation and mask conventions follow PyTorch, so state dicts
interchange. Attention is built from ember's ops: with ``need_weights=False`` (what the
Transformer layers use) it is one fused ``F.scaled_dot_product_attention``; with
``need_weights=True`` the weights are computed explicitly so they can be returned.

Masks: a *bool* mask marks with True the positions that may **not** be attended; a *float* mask
is added to the attention scores (``-inf`` blocks). ``key_padding_mask`` is (N, S), True (or
``-inf``) at padding; ``attn_mask`` is (L, S) or (N * num_heads, L, S).
"""

from __future__ import annotations

import copy
import warnings
from collections.abc import Callable
from typing import Any

from ... import _dtype
from ..._tensor import Tensor
from ...autograd import grad_mode
from ...ops import creation as _creation
from ...ops.nn import activation as _act
from ...ops.nn.attention import _canonical_mask, multi_head_attention_forward
from .. import init
from ..parameter import Parameter
from .activation import GELU, ReLU
from .container import ModuleList
from .dropout import Dropout
from .linear import Linear
from .module import Module
from .normalization import LayerNorm

__all__ = [
    "MultiheadAttention",
    "TransformerEncoderLayer",
    "TransformerEncoder",
    "TransformerDecoderLayer",
    "TransformerDecoder",
    "Transformer",
]


# ---------------------------------------------------------------------------------------------
# masks


def _generate_square_subsequent_mask(sz: int, device: Any = None, dtype: Any = None) -> Tensor:
    """(sz, sz) float mask: -inf above the diagonal (the future), 0 elsewhere."""
    full = _creation.full((sz, sz), float("-inf"), dtype=dtype, device=device)
    return full.triu(1)


def _detect_is_causal_mask(mask: Tensor | None, is_causal: bool | None = None,
                           size: int | None = None) -> bool:
    """``is_causal`` if given; otherwise whether ``mask`` is exactly the causal mask."""
    make_causal = is_causal is True
    if is_causal is None and mask is not None:
        sz = size if size is not None else mask.size(-2)
        causal = _generate_square_subsequent_mask(sz, device=mask.device, dtype=mask.dtype)
        if tuple(mask.shape) == tuple(causal.shape):
            make_causal = bool((mask == causal).all())
        else:
            make_causal = False
    return make_causal


# ---------------------------------------------------------------------------------------------
# MultiheadAttention


class NonDynamicallyQuantizableLinear(Linear):
    """``Linear`` under PyTorch's name for ``MultiheadAttention.out_proj`` (same behaviour)."""


class MultiheadAttention(Module):
    """Multi-head attention: ``concat(head_1..head_h) W_o``,
    ``head_i = softmax(Q W_q^i (K W_k^i)^T / sqrt(d) + mask) V W_v^i``.

    Args:
        embed_dim: model width E (split into ``num_heads`` heads of E // num_heads).
        num_heads: number of heads.
        dropout: dropout on the attention weights (training only).
        bias: biases in the input and output projections.
        add_bias_kv: learn a key and a value appended to the sequence.
        add_zero_attn: append an all-zero key and value.
        kdim, vdim: key/value widths (default E; other widths use separate ``q_proj_weight``,
            ``k_proj_weight``, ``v_proj_weight`` instead of the packed ``in_proj_weight``).
        batch_first: inputs and outputs are (N, L, E) instead of (L, N, E).

    Shape: query (L, N, E), key (S, N, kdim), value (S, N, vdim) (or batch first, or unbatched
    (L, E)); returns ``(attn_output (L, N, E), attn_weights (N, L, S) or None)``.

    Example::

        >>> mha = nn.MultiheadAttention(16, 4, batch_first=True)
        >>> x = torch.randn(2, 5, 16)
        >>> out, w = mha(x, x, x)
        >>> out.shape, w.shape
        (torch.Size([2, 5, 16]), torch.Size([2, 5, 5]))
    """

    def __init__(self, embed_dim: int, num_heads: int, dropout: float = 0.0, bias: bool = True,
                 add_bias_kv: bool = False, add_zero_attn: bool = False, kdim: int | None = None,
                 vdim: int | None = None, batch_first: bool = False, device: Any = None,
                 dtype: Any = None) -> None:
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError(
                f"embed_dim and num_heads must be greater than 0, got embed_dim={embed_dim} and "
                f"num_heads={num_heads} instead"
            )
        super().__init__()
        fk = {"device": device, "dtype": dtype}
        self.embed_dim = embed_dim
        self.kdim = kdim if kdim is not None else embed_dim
        self.vdim = vdim if vdim is not None else embed_dim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.num_heads = num_heads
        self.dropout = dropout
        self.batch_first = batch_first
        self.head_dim = embed_dim // num_heads
        if self.head_dim * num_heads != embed_dim:
            raise AssertionError(
                f"embed_dim must be divisible by num_heads (got embed_dim={embed_dim}, "
                f"num_heads={num_heads})"
            )
        if not self._qkv_same_embed_dim:
            self.q_proj_weight = Parameter(_creation.empty((embed_dim, embed_dim), **fk))
            self.k_proj_weight = Parameter(_creation.empty((embed_dim, self.kdim), **fk))
            self.v_proj_weight = Parameter(_creation.empty((embed_dim, self.vdim), **fk))
            self.register_parameter("in_proj_weight", None)
        else:
            self.in_proj_weight = Parameter(_creation.empty((3 * embed_dim, embed_dim), **fk))
            self.register_parameter("q_proj_weight", None)
            self.register_parameter("k_proj_weight", None)
            self.register_parameter("v_proj_weight", None)
        if bias:
            self.in_proj_bias = Parameter(_creation.empty(3 * embed_dim, **fk))
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = NonDynamicallyQuantizableLinear(embed_dim, embed_dim, bias=bias, **fk)
        if add_bias_kv:
            self.bias_k = Parameter(_creation.empty((1, 1, embed_dim), **fk))
            self.bias_v = Parameter(_creation.empty((1, 1, embed_dim), **fk))
        else:
            self.bias_k = self.bias_v = None
        self.add_zero_attn = add_zero_attn
        self._reset_parameters()

    def _reset_parameters(self) -> None:
        """PyTorch's init: xavier-uniform projections, zero biases, xavier-normal bias_k/v."""
        if self._qkv_same_embed_dim:
            init.xavier_uniform_(self.in_proj_weight)
        else:
            init.xavier_uniform_(self.q_proj_weight)
            init.xavier_uniform_(self.k_proj_weight)
            init.xavier_uniform_(self.v_proj_weight)
        if self.in_proj_bias is not None:
            init.constant_(self.in_proj_bias, 0.0)
            init.constant_(self.out_proj.bias, 0.0)
        if self.bias_k is not None:
            init.xavier_normal_(self.bias_k)
        if self.bias_v is not None:
            init.xavier_normal_(self.bias_v)

    def forward(self, query: Tensor, key: Tensor, value: Tensor,
                key_padding_mask: Tensor | None = None, need_weights: bool = True,
                attn_mask: Tensor | None = None, average_attn_weights: bool = True,
                is_causal: bool = False) -> tuple[Tensor, Tensor | None]:
        """Attend from ``query`` to ``key``/``value``; returns ``(output, weights or None)``."""
        is_batched = query.dim() == 3
        if (key_padding_mask is not None and attn_mask is not None
                and (key_padding_mask.dtype is _dtype.bool_) != (attn_mask.dtype is _dtype.bool_)):
            warnings.warn(
                "Support for mismatched key_padding_mask and attn_mask is deprecated. Use same "
                "type for both instead.",
                stacklevel=3,
            )
        key_padding_mask = _canonical_mask(key_padding_mask, "key_padding_mask", query.dtype)
        attn_mask = _canonical_mask(attn_mask, "attn_mask", query.dtype)
        if self.batch_first and is_batched:
            # keep identities (self-attention packs the projections into one product)
            if key is value:
                if query is key:
                    query = key = value = query.transpose(1, 0)
                else:
                    query, key = query.transpose(1, 0), key.transpose(1, 0)
                    value = key
            else:
                query, key, value = (x.transpose(1, 0) for x in (query, key, value))
        common = dict(training=self.training, key_padding_mask=key_padding_mask,
                      need_weights=need_weights, attn_mask=attn_mask,
                      average_attn_weights=average_attn_weights, is_causal=is_causal)
        if not self._qkv_same_embed_dim:
            out, weights = multi_head_attention_forward(
                query, key, value, self.embed_dim, self.num_heads, self.in_proj_weight,
                self.in_proj_bias, self.bias_k, self.bias_v, self.add_zero_attn, self.dropout,
                self.out_proj.weight, self.out_proj.bias, use_separate_proj_weight=True,
                q_proj_weight=self.q_proj_weight, k_proj_weight=self.k_proj_weight,
                v_proj_weight=self.v_proj_weight, **common)
        else:
            out, weights = multi_head_attention_forward(
                query, key, value, self.embed_dim, self.num_heads, self.in_proj_weight,
                self.in_proj_bias, self.bias_k, self.bias_v, self.add_zero_attn, self.dropout,
                self.out_proj.weight, self.out_proj.bias, **common)
        if self.batch_first and is_batched:
            return out.transpose(1, 0), weights
        return out, weights


# ---------------------------------------------------------------------------------------------
# Transformer layers


def _get_activation_fn(activation: str) -> Callable[[Tensor], Tensor]:
    if activation == "relu":
        return _act.relu
    if activation == "gelu":
        return _act.gelu
    raise RuntimeError(f"activation should be relu/gelu, not {activation}")


def _get_clones(module: Module, n: int) -> ModuleList:
    return ModuleList([copy.deepcopy(module) for _ in range(n)])


def _get_seq_len(src: Tensor, batch_first: bool) -> int | None:
    if src.dim() == 2:  # unbatched (S, E)
        return src.size(0)
    return src.size(1 if batch_first else 0)


class TransformerEncoderLayer(Module):
    """Self-attention and a feed-forward block, each with a residual connection and LayerNorm.

    ``norm_first=False`` (post-norm): ``x = norm1(x + sa(x)); x = norm2(x + ff(x))``;
    ``norm_first=True`` (pre-norm): ``x = x + sa(norm1(x)); x = x + ff(norm2(x))``;
    ``ff(x) = linear2(dropout(activation(linear1(x))))``.

    Args:
        d_model: model width. nhead: attention heads. dim_feedforward: hidden width (2048).
        dropout: dropout after attention, inside and after the feed-forward block (0.1).
        activation: 'relu' (default), 'gelu' or a callable.
        layer_norm_eps: LayerNorm eps. batch_first: (N, S, E) inputs. norm_first: pre-norm.
        bias: biases in the linear layers and LayerNorms.

    Example::

        >>> layer = nn.TransformerEncoderLayer(d_model=16, nhead=4, batch_first=True)
        >>> layer(torch.randn(2, 5, 16)).shape
        torch.Size([2, 5, 16])
    """

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048,
                 dropout: float = 0.1, activation: str | Callable[[Tensor], Tensor] = _act.relu,
                 layer_norm_eps: float = 1e-5, batch_first: bool = False,
                 norm_first: bool = False, bias: bool = True, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__()
        fk = {"device": device, "dtype": dtype}
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias,
                                            batch_first=batch_first, **fk)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **fk)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **fk)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **fk)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **fk)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        if isinstance(activation, str):
            activation = _get_activation_fn(activation)
        if activation is _act.relu or isinstance(activation, ReLU):
            self.activation_relu_or_gelu = 1
        elif activation is _act.gelu or isinstance(activation, GELU):
            self.activation_relu_or_gelu = 2
        else:
            self.activation_relu_or_gelu = 0
        self.activation = activation

    def forward(self, src: Tensor, src_mask: Tensor | None = None,
                src_key_padding_mask: Tensor | None = None, is_causal: bool = False) -> Tensor:
        """One encoder layer on ``src`` ((S, N, E), batch first (N, S, E), or (S, E))."""
        src_key_padding_mask = _canonical_mask(src_key_padding_mask, "src_key_padding_mask",
                                               src.dtype)
        src_mask = _canonical_mask(src_mask, "src_mask", src.dtype)
        x = src
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), src_mask, src_key_padding_mask, is_causal)
            x = x + self._ff_block(self.norm2(x))
        else:
            x = self.norm1(x + self._sa_block(x, src_mask, src_key_padding_mask, is_causal))
            x = self.norm2(x + self._ff_block(x))
        return x

    def _sa_block(self, x: Tensor, attn_mask: Tensor | None, key_padding_mask: Tensor | None,
                  is_causal: bool = False) -> Tensor:
        x = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
                           need_weights=False, is_causal=is_causal)[0]
        return self.dropout1(x)

    def _ff_block(self, x: Tensor) -> Tensor:
        x = self.linear2(self.dropout(self.activation(self.linear1(x))))
        return self.dropout2(x)


def _why_not_nested(layer: Module) -> str:
    """Why PyTorch's encoder would not take its nested-tensor path for this layer ('' if it
    would)."""
    prefix = "encoder_layer"
    if not isinstance(layer, TransformerEncoderLayer):
        return f"{prefix} was not TransformerEncoderLayer"
    if layer.norm_first:
        return f"{prefix}.norm_first was True"
    if not layer.self_attn.batch_first:
        return (f"{prefix}.self_attn.batch_first was not True (use batch_first for better "
                "inference performance)")
    if not layer.self_attn._qkv_same_embed_dim:
        return f"{prefix}.self_attn._qkv_same_embed_dim was not True"
    if layer.self_attn.in_proj_bias is None:
        return f"{prefix}.self_attn was passed bias=False"
    if not layer.activation_relu_or_gelu:
        return f"{prefix}.activation_relu_or_gelu was not True"
    if layer.norm1.eps != layer.norm2.eps:
        return f"{prefix}.norm1.eps was not equal to {prefix}.norm2.eps"
    if layer.self_attn.num_heads % 2 == 1:
        return f"{prefix}.self_attn.num_heads is odd"
    return ""


class TransformerEncoder(Module):
    """A stack of ``num_layers`` copies of ``encoder_layer`` (deep copies), then ``norm``.

    Args:
        encoder_layer: the layer to copy. num_layers: how many. norm: optional final norm.
        enable_nested_tensor: PyTorch's padding fast path. It changes one visible thing, which
            ember reproduces: in eval mode without autograd, with a right-padded
            ``src_key_padding_mask``, batch-first post-norm layers and no ``mask``, the outputs at
            padded positions are 0 (before ``norm``).
        mask_check: check that the padding mask is right-padded before taking that path.

    Example::

        >>> layer = nn.TransformerEncoderLayer(d_model=16, nhead=4)
        >>> enc = nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)
        >>> enc(torch.randn(5, 2, 16)).shape
        torch.Size([5, 2, 16])
    """

    def __init__(self, encoder_layer: Module, num_layers: int, norm: Module | None = None,
                 enable_nested_tensor: bool = True, mask_check: bool = True) -> None:
        super().__init__()
        self.layers = _get_clones(encoder_layer, num_layers)
        self.num_layers = num_layers
        self.norm = norm
        self.enable_nested_tensor = enable_nested_tensor
        self.use_nested_tensor = enable_nested_tensor
        self.mask_check = mask_check
        why_not = _why_not_nested(encoder_layer)
        if enable_nested_tensor and why_not:
            warnings.warn(
                f"enable_nested_tensor is True, but self.use_nested_tensor is False because "
                f"{why_not}",
                stacklevel=2,
            )
            self.use_nested_tensor = False

    def _pads_to_zero(self, src: Tensor, mask: Tensor | None, kpm: Tensor | None) -> Tensor | None:
        """The (N, S) keep-mask when PyTorch would run its nested-tensor path, else None."""
        if (not self.use_nested_tensor or self.training or kpm is None or mask is not None
                or src.dim() != 3):
            return None
        from ...amp import autocast_mode

        if autocast_mode.state.active:
            return None
        if grad_mode.is_grad_enabled() and (src.requires_grad or any(
                p.requires_grad for p in self.parameters())):
            return None
        keep = kpm.logical_not() if kpm.dtype is _dtype.bool_ else kpm == 0
        if self.mask_check:
            # right-padded: along each row, keep is True...True False...False
            k = keep.to(_dtype.int64)
            if bool((k[:, 1:] > k[:, :-1]).any()):
                return None
        return keep

    def forward(self, src: Tensor, mask: Tensor | None = None,
                src_key_padding_mask: Tensor | None = None,
                is_causal: bool | None = None) -> Tensor:
        """Run the layers in turn (masks as in ``TransformerEncoderLayer``), then ``norm``."""
        src_key_padding_mask = _canonical_mask(src_key_padding_mask, "src_key_padding_mask",
                                               src.dtype)
        mask = _canonical_mask(mask, "mask", src.dtype)
        keep = self._pads_to_zero(src, mask, src_key_padding_mask)
        first = self.layers[0] if len(self.layers) else None
        batch_first = bool(first is not None and getattr(
            getattr(first, "self_attn", None), "batch_first", False))
        seq_len = _get_seq_len(src, batch_first)
        is_causal = _detect_is_causal_mask(mask, is_causal, seq_len)
        output = src
        for mod in self.layers:
            output = mod(output, src_mask=mask, is_causal=is_causal,
                         src_key_padding_mask=src_key_padding_mask)
        if keep is not None:
            output = output * keep.unsqueeze(-1).to(output.dtype)
        if self.norm is not None:
            output = self.norm(output)
        return output


class TransformerDecoderLayer(Module):
    """Self-attention, cross-attention to ``memory`` and a feed-forward block, each with a
    residual connection and LayerNorm (pre-norm with ``norm_first=True``).

    Arguments as ``TransformerEncoderLayer``.

    Example::

        >>> layer = nn.TransformerDecoderLayer(d_model=16, nhead=4, batch_first=True)
        >>> layer(torch.randn(2, 5, 16), torch.randn(2, 7, 16)).shape
        torch.Size([2, 5, 16])
    """

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048,
                 dropout: float = 0.1, activation: str | Callable[[Tensor], Tensor] = _act.relu,
                 layer_norm_eps: float = 1e-5, batch_first: bool = False,
                 norm_first: bool = False, bias: bool = True, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__()
        fk = {"device": device, "dtype": dtype}
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias,
                                            batch_first=batch_first, **fk)
        self.multihead_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias,
                                                 batch_first=batch_first, **fk)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **fk)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **fk)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **fk)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **fk)
        self.norm3 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **fk)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.dropout3 = Dropout(dropout)
        if isinstance(activation, str):
            activation = _get_activation_fn(activation)
        self.activation = activation

    def forward(self, tgt: Tensor, memory: Tensor, tgt_mask: Tensor | None = None,
                memory_mask: Tensor | None = None, tgt_key_padding_mask: Tensor | None = None,
                memory_key_padding_mask: Tensor | None = None, tgt_is_causal: bool = False,
                memory_is_causal: bool = False) -> Tensor:
        """One decoder layer: ``tgt`` attends to itself, then to ``memory``."""
        x = tgt
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), tgt_mask, tgt_key_padding_mask, tgt_is_causal)
            x = x + self._mha_block(self.norm2(x), memory, memory_mask,
                                    memory_key_padding_mask, memory_is_causal)
            x = x + self._ff_block(self.norm3(x))
        else:
            x = self.norm1(x + self._sa_block(x, tgt_mask, tgt_key_padding_mask, tgt_is_causal))
            x = self.norm2(x + self._mha_block(x, memory, memory_mask, memory_key_padding_mask,
                                               memory_is_causal))
            x = self.norm3(x + self._ff_block(x))
        return x

    def _sa_block(self, x: Tensor, attn_mask: Tensor | None, key_padding_mask: Tensor | None,
                  is_causal: bool = False) -> Tensor:
        x = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
                           is_causal=is_causal, need_weights=False)[0]
        return self.dropout1(x)

    def _mha_block(self, x: Tensor, mem: Tensor, attn_mask: Tensor | None,
                   key_padding_mask: Tensor | None, is_causal: bool = False) -> Tensor:
        x = self.multihead_attn(x, mem, mem, attn_mask=attn_mask,
                                key_padding_mask=key_padding_mask, is_causal=is_causal,
                                need_weights=False)[0]
        return self.dropout2(x)

    def _ff_block(self, x: Tensor) -> Tensor:
        x = self.linear2(self.dropout(self.activation(self.linear1(x))))
        return self.dropout3(x)


class TransformerDecoder(Module):
    """A stack of ``num_layers`` copies of ``decoder_layer``, then ``norm``.

    Example::

        >>> layer = nn.TransformerDecoderLayer(d_model=16, nhead=4)
        >>> dec = nn.TransformerDecoder(layer, num_layers=2)
        >>> dec(torch.randn(5, 2, 16), torch.randn(7, 2, 16)).shape
        torch.Size([5, 2, 16])
    """

    def __init__(self, decoder_layer: Module, num_layers: int, norm: Module | None = None) -> None:
        super().__init__()
        self.layers = _get_clones(decoder_layer, num_layers)
        self.num_layers = num_layers
        self.norm = norm

    def forward(self, tgt: Tensor, memory: Tensor, tgt_mask: Tensor | None = None,
                memory_mask: Tensor | None = None, tgt_key_padding_mask: Tensor | None = None,
                memory_key_padding_mask: Tensor | None = None,
                tgt_is_causal: bool | None = None, memory_is_causal: bool = False) -> Tensor:
        """Run the layers in turn, then ``norm``."""
        first = self.layers[0] if len(self.layers) else None
        batch_first = bool(first is not None and getattr(
            getattr(first, "self_attn", None), "batch_first", False))
        seq_len = _get_seq_len(tgt, batch_first)
        tgt_is_causal = _detect_is_causal_mask(tgt_mask, tgt_is_causal, seq_len)
        output = tgt
        for mod in self.layers:
            output = mod(output, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                         tgt_key_padding_mask=tgt_key_padding_mask,
                         memory_key_padding_mask=memory_key_padding_mask,
                         tgt_is_causal=tgt_is_causal, memory_is_causal=memory_is_causal)
        if self.norm is not None:
            output = self.norm(output)
        return output


class Transformer(Module):
    """The encoder-decoder Transformer ("Attention Is All You Need").

    Args:
        d_model (512), nhead (8), num_encoder_layers (6), num_decoder_layers (6),
        dim_feedforward (2048), dropout (0.1), activation ('relu'), custom_encoder,
        custom_decoder, layer_norm_eps (1e-5), batch_first (False), norm_first (False),
        bias (True).

    Shape: src (S, N, E), tgt (T, N, E) (batch first: (N, S, E), (N, T, E)) -> (T, N, E).

    Example::

        >>> model = nn.Transformer(d_model=16, nhead=4, num_encoder_layers=1,
        ...                        num_decoder_layers=1, dim_feedforward=32)
        >>> model(torch.randn(7, 2, 16), torch.randn(5, 2, 16)).shape
        torch.Size([5, 2, 16])
    """

    def __init__(self, d_model: int = 512, nhead: int = 8, num_encoder_layers: int = 6,
                 num_decoder_layers: int = 6, dim_feedforward: int = 2048, dropout: float = 0.1,
                 activation: str | Callable[[Tensor], Tensor] = _act.relu,
                 custom_encoder: Any = None, custom_decoder: Any = None,
                 layer_norm_eps: float = 1e-5, batch_first: bool = False,
                 norm_first: bool = False, bias: bool = True, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__()
        fk = {"device": device, "dtype": dtype}
        if custom_encoder is not None:
            self.encoder = custom_encoder
        else:
            enc_layer = TransformerEncoderLayer(d_model, nhead, dim_feedforward, dropout,
                                                activation, layer_norm_eps, batch_first,
                                                norm_first, bias, **fk)
            enc_norm = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **fk)
            self.encoder = TransformerEncoder(enc_layer, num_encoder_layers, enc_norm)
        if custom_decoder is not None:
            self.decoder = custom_decoder
        else:
            dec_layer = TransformerDecoderLayer(d_model, nhead, dim_feedforward, dropout,
                                                activation, layer_norm_eps, batch_first,
                                                norm_first, bias, **fk)
            dec_norm = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **fk)
            self.decoder = TransformerDecoder(dec_layer, num_decoder_layers, dec_norm)
        self._reset_parameters()
        self.d_model = d_model
        self.nhead = nhead
        self.batch_first = batch_first

    def forward(self, src: Tensor, tgt: Tensor, src_mask: Tensor | None = None,
                tgt_mask: Tensor | None = None, memory_mask: Tensor | None = None,
                src_key_padding_mask: Tensor | None = None,
                tgt_key_padding_mask: Tensor | None = None,
                memory_key_padding_mask: Tensor | None = None,
                src_is_causal: bool | None = None, tgt_is_causal: bool | None = None,
                memory_is_causal: bool = False) -> Tensor:
        """Encode ``src``, then decode ``tgt`` attending to the encoding."""
        is_batched = src.dim() == 3
        if is_batched and src.size(0 if self.batch_first else 1) != tgt.size(
                0 if self.batch_first else 1):
            raise RuntimeError(
                f"the batch number of src and tgt must be equal (src {tuple(src.shape)}, tgt "
                f"{tuple(tgt.shape)}, batch_first={self.batch_first})"
            )
        if src.size(-1) != self.d_model or tgt.size(-1) != self.d_model:
            raise RuntimeError(
                f"the feature number of src and tgt must be equal to d_model ({self.d_model}); "
                f"got src {tuple(src.shape)} and tgt {tuple(tgt.shape)}"
            )
        memory = self.encoder(src, mask=src_mask, src_key_padding_mask=src_key_padding_mask,
                              is_causal=src_is_causal)
        return self.decoder(tgt, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                            tgt_key_padding_mask=tgt_key_padding_mask,
                            memory_key_padding_mask=memory_key_padding_mask,
                            tgt_is_causal=tgt_is_causal, memory_is_causal=memory_is_causal)

    @staticmethod
    def generate_square_subsequent_mask(sz: int, device: Any = None, dtype: Any = None) -> Tensor:
        """(sz, sz) float mask with -inf above the diagonal: position i sees positions <= i."""
        return _generate_square_subsequent_mask(sz, device=device, dtype=dtype)

    def _reset_parameters(self) -> None:
        for p in self.parameters():
            if p.dim() > 1:
                init.xavier_uniform_(p)
