"""``torch.autograd.anomaly_mode`` at PyTorch's module path."""

from . import detect_anomaly, set_detect_anomaly

__all__ = ["detect_anomaly", "set_detect_anomaly"]
