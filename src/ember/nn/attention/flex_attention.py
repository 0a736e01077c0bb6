"""``torch.nn.attention.flex_attention``: attention with a user's score function and mask.

``flex_attention(q, k, v, score_mod=None, block_mask=None)`` computes
``softmax(score_mod(q k^T * scale, b, h, q_idx, kv_idx) masked by block_mask) v``. PyTorch
compiles it into a block-sparse kernel; ember computes it densely with ordinary differentiable ops
(the same values and gradients, at dense cost): ``score_mod`` and ``mask_mod`` are called once on
broadcast index tensors (``b`` of shape (B, 1, 1, 1), ``h`` (1, H, 1, 1), ``q_idx`` (1, 1, L, 1),
``kv_idx`` (1, 1, 1, S)), which gives the same result as PyTorch's vmap over scalars for the
elementwise functions these are. Unlike PyTorch's CPU build, which refuses backward,
ember differentiates it. A query row that every key is masked from gives zeros (and a
log-sum-exp of -inf), as PyTorch's.

``create_block_mask`` evaluates a ``mask_mod`` and summarises it per block of ``BLOCK_SIZE``
(128) as PyTorch's ``BlockMask`` does: ``kv_num_blocks``/``kv_indices`` (the partly masked
blocks), ``full_kv_num_blocks``/``full_kv_indices`` (the unmasked ones), their ``q_`` transposes,
``to_dense()``, ``sparsity()``, ``shape``; it keeps the element mask for ``flex_attention``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, NamedTuple

import ember as torch

__all__ = ["AuxRequest", "AuxOutput", "BlockMask", "flex_attention", "create_block_mask", "create_mask", "noop_mask",
           "and_masks", "or_masks"]

_DEFAULT_SPARSE_BLOCK_SIZE = 128


class AuxRequest(NamedTuple):
    """Which extra results ``flex_attention(..., return_aux=AuxRequest(...))`` returns."""

    lse: bool = False
    max_scores: bool = False


class AuxOutput(NamedTuple):
    """The extra results: the log-sum-exp and the maximum of each query row's scores
    ((B, H, L), float32; None where not requested)."""

    lse: Any = None
    max_scores: Any = None


def noop_mask(batch: Any, head: Any, token_q: Any, token_kv: Any) -> Any:
    """The mask that keeps every score."""
    return batch.new_ones(size=(), dtype=torch.bool)


def and_masks(*mask_mods: Callable) -> Callable:
    """A mask_mod keeping a score where every one of ``mask_mods`` keeps it."""
    if not all(callable(m) for m in mask_mods):
        raise RuntimeError(f"All inputs should be callable mask_mods: {mask_mods}")

    def and_mask(b: Any, h: Any, q_idx: Any, kv_idx: Any) -> Any:
        result = b.new_ones((), dtype=torch.bool)
        for mask in mask_mods:
            result = result & mask(b, h, q_idx, kv_idx)
        return result

    return and_mask


def or_masks(*mask_mods: Callable) -> Callable:
    """A mask_mod keeping a score where any one of ``mask_mods`` keeps it."""
    if not all(callable(m) for m in mask_mods):
        raise RuntimeError(f"All inputs should be callable mask_mods: {mask_mods}")

    def or_mask(b: Any, h: Any, q_idx: Any, kv_idx: Any) -> Any:
        result = b.new_zeros((), dtype=torch.bool)
        for mask in mask_mods:
            result = result | mask(b, h, q_idx, kv_idx)
        return result

    return or_mask


def _indices(B: int, H: int, L: int, S: int, device: Any) -> tuple[Any, Any, Any, Any]:
    return (torch.arange(B, device=device).view(B, 1, 1, 1),
            torch.arange(H, device=device).view(1, H, 1, 1),
            torch.arange(L, device=device).view(1, 1, L, 1),
            torch.arange(S, device=device).view(1, 1, 1, S))


def create_mask(mod_fn: Callable, B: int | None, H: int | None, Q_LEN: int, KV_LEN: int,
                device: Any = None) -> Any:
    """The dense boolean mask (B, H, Q_LEN, KV_LEN) of a ``mask_mod`` (B or H None: 1)."""
    B, H = B or 1, H or 1
    b, h, q, kv = _indices(B, H, Q_LEN, KV_LEN, device)
    with torch.no_grad():
        mask = mod_fn(b, h, q, kv)
    if not isinstance(mask, torch.Tensor):
        mask = torch.tensor(bool(mask))
    return mask.to(torch.bool).expand(B, H, Q_LEN, KV_LEN).clone()


def _order(flags: Any) -> tuple[Any, Any]:
    """(count, indices): per row, how many blocks are flagged, and the block indices with the
    flagged ones first (each group in index order), as PyTorch's tables list them."""
    counts = flags.sum(-1).to(torch.int32)
    n = flags.shape[-1]
    key = (~flags).to(torch.int64) * n + torch.arange(n).view(*([1] * (flags.dim() - 1)), n)
    return counts, torch.argsort(key, dim=-1).to(torch.int32)


class BlockMask:
    """A mask summarised per block (see the module docstring); made by ``create_block_mask``."""

    def __init__(self, dense: Any, mask_mod: Callable, block_size: tuple[int, int]) -> None:
        self._dense = dense  # (B, H, Q_LEN, KV_LEN) bool: the element mask
        self.mask_mod = mask_mod
        self.BLOCK_SIZE = block_size
        B, H, L, S = dense.shape
        self.seq_lengths = (L, S)
        bq, bkv = block_size
        nq, nkv = -(-L // bq), -(-S // bkv)
        padded = torch.zeros(B, H, nq * bq, nkv * bkv, dtype=torch.bool)
        padded[:, :, :L, :S] = dense
        blocks = padded.view(B, H, nq, bq, nkv, bkv).permute(0, 1, 2, 4, 3, 5)
        any_kept = blocks.reshape(B, H, nq, nkv, bq * bkv).any(-1)
        valid = torch.zeros(B, H, nq * bq, nkv * bkv, dtype=torch.bool)
        valid[:, :, :L, :S] = True
        valid_blocks = valid.view(B, H, nq, bq, nkv, bkv).permute(0, 1, 2, 4, 3, 5)
        all_kept = (blocks | ~valid_blocks).reshape(B, H, nq, nkv, bq * bkv).all(-1) & any_kept
        partial = any_kept & ~all_kept
        self.kv_num_blocks, self.kv_indices = _order(partial)
        self.full_kv_num_blocks, self.full_kv_indices = _order(all_kept)
        self.q_num_blocks, self.q_indices = _order(partial.transpose(-1, -2))
        self.full_q_num_blocks, self.full_q_indices = _order(all_kept.transpose(-1, -2))
        self._block_dense = any_kept

    @property
    def shape(self) -> tuple[int, int, int, int]:
        B, H = self.kv_num_blocks.shape[:2]
        return (int(B), int(H), *self.seq_lengths)

    def numel(self) -> int:
        return math.prod(self.shape)

    def to_dense(self) -> Any:
        """Which blocks are computed (partly or wholly unmasked): (B, H, q blocks, kv blocks),
        int32."""
        return self._block_dense.to(torch.int32)

    def sparsity(self) -> float:
        """100 * (1 - the area of the computed blocks / the area of the scores), as PyTorch
        computes it (negative when padding blocks make the computed area the larger)."""
        computed = self._block_dense.sum().item() * self.BLOCK_SIZE[0] * self.BLOCK_SIZE[1]
        return 100 * (1 - computed / self.numel())

    def as_tuple(self) -> tuple:
        return (*self.seq_lengths, self.kv_num_blocks, self.kv_indices, self.full_kv_num_blocks,
                self.full_kv_indices, self.q_num_blocks, self.q_indices, self.full_q_num_blocks,
                self.full_q_indices, *self.BLOCK_SIZE, self.mask_mod)

    def to(self, device: Any) -> BlockMask:
        """The same mask (ember's tables live with the element mask, on the CPU)."""
        return self

    def __repr__(self) -> str:
        return (f"BlockMask(shape={self.shape}, sparsity={self.sparsity():.2f}%, "
                f"BLOCK_SIZE={self.BLOCK_SIZE}, mask_mod={getattr(self.mask_mod, '__name__', '?')})")


def create_block_mask(mask_mod: Callable, B: int | None, H: int | None, Q_LEN: int, KV_LEN: int,
                      device: Any = None, BLOCK_SIZE: int | tuple[int, int] = 128,
                      _compile: bool = False, separate_full_blocks: bool = True,
                      compute_dq_write_order: bool = False, dq_kv_order: bool = True
                      ) -> BlockMask:
    """Evaluate ``mask_mod(b, h, q_idx, kv_idx) -> bool`` over the whole (B, H, Q_LEN, KV_LEN)
    grid and summarise it per block (B or H None: one mask broadcast over that dim)."""
    size = BLOCK_SIZE if isinstance(BLOCK_SIZE, tuple) else (BLOCK_SIZE, BLOCK_SIZE)
    return BlockMask(create_mask(mask_mod, B, H, Q_LEN, KV_LEN, device), mask_mod, size)


def flex_attention(query: Any, key: Any, value: Any, score_mod: Callable | None = None,
                   block_mask: BlockMask | None = None, scale: float | None = None,
                   enable_gqa: bool = False, return_lse: bool = False,
                   kernel_options: Any = None, *, return_aux: Any = None) -> Any:
    """Attention of (B, Hq, L, E) queries over (B, Hkv, S, E) keys and (B, Hkv, S, Ev) values,
    with ``score_mod`` applied to each scaled score and ``block_mask``'s masked scores dropped;
    returns (B, Hq, L, Ev) (and the log-sum-exp (B, Hq, L) of the scores with ``return_lse``)."""
    if query.dim() != 4 or key.dim() != 4 or value.dim() != 4:
        raise NotImplementedError(f"NYI: query, key, and value must be 4D tensors, got "
                                  f"{query.dim()}D, {key.dim()}D and {value.dim()}D")
    B, Hq, L, E = query.shape
    Hkv, S = key.shape[1], key.shape[2]
    if Hq != Hkv:
        if not enable_gqa:
            raise ValueError(f"Expect query and key/value to have the same number of heads but "
                             f"got Hq={Hq} and Hkv={Hkv}. Try setting enable_gqa=True for GQA.")
        if Hq % Hkv:
            raise ValueError(f"Expect number of query heads to be a multiple of kv heads for "
                             f"GQA but got Hq={Hq} and Hkv={Hkv}.")
        key = key.repeat_interleave(Hq // Hkv, dim=1)
        value = value.repeat_interleave(Hq // Hkv, dim=1)
    scale = 1.0 / math.sqrt(E) if scale is None else scale
    scores = (query @ key.transpose(-2, -1)).float() * scale
    b, h, q, kv = _indices(B, Hq, L, S, query.device)
    if score_mod is not None:
        scores = score_mod(scores, b, h, q, kv).expand(B, Hq, L, S)
    if block_mask is not None:
        if block_mask.seq_lengths != (L, S):
            raise ValueError(f"block_mask was created for block_mask.shape="
                             f"{block_mask.shape} but got q_len={L} and kv_len={S}. Create a new "
                             f"block mask with the right lengths.")
        scores = scores.masked_fill(~block_mask._dense.expand(B, Hq, L, S), float("-inf"))
    lse = torch.logsumexp(scores, dim=-1)
    safe = torch.where(torch.isinf(lse), torch.zeros_like(lse), lse)
    weights = torch.exp(scores - safe.unsqueeze(-1))  # masked rows: all zeros
    out = (weights.to(value.dtype) @ value).to(query.dtype)
    if return_aux is not None:
        return out, AuxOutput(lse if return_aux.lse else None,
                              scores.amax(dim=-1) if return_aux.max_scores else None)
    if return_lse:
        return out, lse
    return out
