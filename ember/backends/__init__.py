"""``ember.backends``: the switches PyTorch scripts probe (mps, cuda matmul tf32, cudnn)."""

from __future__ import annotations

from types import SimpleNamespace


class _Mps:
    @staticmethod
    def is_available() -> bool:
        """Always False: ember has no Apple-GPU backend."""
        return False

    @staticmethod
    def is_built() -> bool:
        return False


mps = _Mps()
cuda = SimpleNamespace(matmul=SimpleNamespace(allow_tf32=False, allow_fp16_reduced_precision_reduction=True,
                                              allow_bf16_reduced_precision_reduction=True),
                       is_built=lambda: False, enable_flash_sdp=lambda enabled: None,
                       enable_mem_efficient_sdp=lambda enabled: None,
                       enable_math_sdp=lambda enabled: None)
cudnn = SimpleNamespace(allow_tf32=True, benchmark=False, deterministic=False, enabled=True,
                        is_available=lambda: False)
mkldnn = SimpleNamespace(is_available=lambda: False)
openmp = SimpleNamespace(is_available=lambda: False)
