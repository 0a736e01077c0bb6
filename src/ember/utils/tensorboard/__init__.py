"""``ember.utils.tensorboard``: ``SummaryWriter`` writing TensorBoard event files.

The files are written by the ``tensorboardX`` package (``pip install 'ember[tensorboard]'``);
ember tensors are turned into NumPy arrays on the way in, so ``writer.add_scalar("loss", loss,
step)``, ``add_histogram``, ``add_image``... take ember tensors as PyTorch's writer takes torch
tensors. ``tensorboard --logdir runs`` shows them.
"""

from __future__ import annotations

import functools
import sys
from typing import Any

__all__ = ["SummaryWriter"]


def _import_tensorboardx() -> Any:
    # tensorboardX tries `import torch` at import time; keep it from loading a real PyTorch
    # (ember's core never pulls PyTorch in). It then works on NumPy arrays, which we hand it.
    block = "torch" not in sys.modules
    if block:
        sys.modules["torch"] = None  # type: ignore[assignment]
    try:
        import tensorboardX
    except ImportError:
        raise ImportError(
            "TensorBoard logging requires TensorBoard event-file support, which ember gets from "
            "the tensorboardX package: pip install 'ember[tensorboard]' (or pip install "
            "tensorboardX)."
        ) from None
    finally:
        if block and sys.modules.get("torch", 0) is None:
            del sys.modules["torch"]
    return tensorboardX


_tbx = _import_tensorboardx()


def _to_numpy(obj: Any) -> Any:
    """ember tensors (also inside lists, tuples and dicts) as NumPy arrays; the rest unchanged."""
    from ..._tensor import Tensor

    if isinstance(obj, Tensor):
        return obj.detach().cpu().numpy()
    if isinstance(obj, dict):
        return {k: _to_numpy(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)) and any(isinstance(o, Tensor) for o in obj):
        return type(obj)(_to_numpy(o) for o in obj)
    return obj


def _scalar(obj: Any) -> Any:
    """A one-element tensor as a Python number (hparams and scalars dicts want numbers)."""
    from ..._tensor import Tensor

    if isinstance(obj, Tensor) and obj.numel() == 1:
        return obj.item()
    return _to_numpy(obj)


def _converting(method: Any) -> Any:
    @functools.wraps(method)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        return method(self, *(_to_numpy(a) for a in args),
                      **{k: _to_numpy(v) for k, v in kwargs.items()})

    return wrapper


class SummaryWriter(_tbx.SummaryWriter):
    """PyTorch's ``SummaryWriter``: event files under ``log_dir`` (default
    ``runs/<date>_<host><comment>``) that TensorBoard reads.

    Args:
        log_dir: the directory to write to.
        comment: appended to the default directory name.
        purge_step: drop events at or after this step left by a crashed run.
        max_queue: events buffered before a write.
        flush_secs: seconds between flushes to disk.
        filename_suffix: appended to event file names.
    """

    def __init__(self, log_dir: str | None = None, comment: str = "", purge_step: int | None = None,
                 max_queue: int = 10, flush_secs: int = 120, filename_suffix: str = "") -> None:
        super().__init__(logdir=log_dir, comment=comment, purge_step=purge_step,
                         max_queue=max_queue, flush_secs=flush_secs,
                         filename_suffix=filename_suffix)

    @property
    def log_dir(self) -> str:
        """The directory the event files go to."""
        return self.logdir

    def get_logdir(self) -> str:
        """The directory the event files go to."""
        return self.logdir

    add_scalar = _converting(_tbx.SummaryWriter.add_scalar)
    add_histogram = _converting(_tbx.SummaryWriter.add_histogram)
    add_histogram_raw = _converting(_tbx.SummaryWriter.add_histogram_raw)
    add_images = _converting(_tbx.SummaryWriter.add_images)
    add_image_with_boxes = _converting(_tbx.SummaryWriter.add_image_with_boxes)
    add_video = _converting(_tbx.SummaryWriter.add_video)
    add_audio = _converting(_tbx.SummaryWriter.add_audio)
    add_embedding = _converting(_tbx.SummaryWriter.add_embedding)
    add_pr_curve = _converting(_tbx.SummaryWriter.add_pr_curve)
    add_pr_curve_raw = _converting(_tbx.SummaryWriter.add_pr_curve_raw)
    add_mesh = _converting(_tbx.SummaryWriter.add_mesh)

    def add_image(self, tag: str, img_tensor: Any, global_step: int | None = None,
                  walltime: float | None = None, dataformats: str = "CHW") -> None:
        """One image (``CHW`` by default; ``HWC``, ``HW`` with ``dataformats``)."""
        import numpy as np

        img = _to_numpy(img_tensor)
        if isinstance(img, (list, tuple)):  # tensorboardX's list form: stack here, without torch
            self.add_images(tag, np.stack(img, 0), global_step, walltime, "N" + dataformats)
            return
        super().add_image(tag, img, global_step, walltime, dataformats)

    def add_scalars(self, main_tag: str, tag_scalar_dict: dict, global_step: int | None = None,
                    walltime: float | None = None) -> None:
        """Several scalars on one chart: ``{"train": loss, "val": val_loss}``."""
        super().add_scalars(main_tag, {k: _scalar(v) for k, v in tag_scalar_dict.items()},
                            global_step, walltime)

    def add_hparams(self, hparam_dict: dict, metric_dict: dict, hparam_domain_discrete: Any = None,
                    run_name: str | None = None, global_step: int | None = None) -> None:
        """Hyper-parameters and the metrics they gave."""
        super().add_hparams({k: _scalar(v) for k, v in hparam_dict.items()},
                            {k: _scalar(v) for k, v in metric_dict.items()},
                            name=run_name, global_step=global_step)

    def add_graph(self, model: Any, input_to_model: Any = None, verbose: bool = False,
                  use_strict_trace: bool = True) -> None:
        """The model's graph, for TensorBoard's Graphs tab.

        The model runs once on ``input_to_model`` (a tensor, or a tuple of the forward's
        arguments) in eval mode without gradients, as PyTorch traces it; each op it runs
        becomes a node (``aten::addmm``, ``aten::convolution``...) inside boxes named after
        the modules (``Net/Linear[fc1]``), with its parameters (``prim::GetAttr``), the edges
        between them and the shapes of every output. Training modes are restored afterwards.

        Args:
            model: the ``nn.Module`` to draw.
            input_to_model: example input(s) to run it on.
            verbose: also print the graph, one node a line.
            use_strict_trace: accepted for PyTorch's signature (nothing to relax).
        """
        from ._graph import describe, graph_def, trace_graph

        nodes = trace_graph(model, input_to_model)
        if verbose:
            print(describe(nodes))
        from tensorboardX.proto import event_pb2

        event = event_pb2.Event(graph_def=graph_def(nodes).SerializeToString())
        self._get_file_writer().add_event(event)
