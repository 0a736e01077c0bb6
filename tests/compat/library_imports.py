"""What a graph or probabilistic library does while it imports, before any model code runs:
module-level fx.wrap, jit annotations, typed samplers, _C probes, foreach grouping, aten
operator tables, futures, hook handles, a custom tensor repr. Written for ember's compatibility
corpus."""
from typing import List  # noqa: UP035 - the spelling libraries use

import torch
import torch.fx
import torch.utils._foreach_utils as foreach_utils
from torch.jit.annotations import BroadcastingList2, Optional, Tuple
from torch.utils.data import DataLoader, Dataset, Sampler
from torch.utils.data.dataloader import _BaseDataLoaderIter, _SingleProcessDataLoaderIter
from torch.utils.hooks import RemovableHandle

assert torch.__name__ == "torch" and torch.torch is torch
print("probes", hasattr(torch, "not_a_torch_name"), torch._C._get_default_device(),
      torch._C._get_tracing_state(), torch._C._log_api_usage_once("library.import"))


@torch.fx.wrap
def degree(index: torch.Tensor, num_nodes: Optional[int] = None) -> torch.Tensor:
    n = int(index.max()) + 1 if num_nodes is None else num_nodes
    return torch.zeros(n).index_add_(0, index, torch.ones(index.numel()))


def pool(x: torch.Tensor, size: BroadcastingList2[int]) -> Tuple[int, int]:
    return tuple(x.shape[-2:])


aten = torch.ops.aten
HANDLED = {aten.add.Tensor: "add", aten.cat.default: "cat", aten.slice.Tensor: "slice"}
print("aten", [op.name() for op in HANDLED], hasattr(aten, "not_an_aten_op"))
print("wrap", degree.__name__, degree(torch.tensor([0, 1, 1, 3])).tolist(),
      BroadcastingList2[int])


class Param(torch.Tensor):
    __torch_function__ = torch._C._disabled_torch_function_impl


print("disabled", Param.__torch_function__(torch.add, (Param,), (torch.ones(2), 1), {}).tolist())


class Graphs(Dataset):
    def __len__(self):
        return 5

    def __getitem__(self, i):
        return torch.full((2,), float(i))


class Buckets(Sampler[List[int]]):  # noqa: UP006
    def __iter__(self):
        return iter([[0, 4], [1, 2, 3]])

    def __len__(self):
        return 2


loader = DataLoader(Graphs(), batch_sampler=Buckets())
it = iter(loader)
print("loader", type(it).__name__, isinstance(it, _BaseDataLoaderIter),
      isinstance(it, _SingleProcessDataLoaderIter), len(it), [b.sum().item() for b in it])

params = [torch.ones(2), torch.ones(3, dtype=torch.float64), torch.zeros(1)]
grads = [torch.full((2,), 2.0), None, torch.ones(1)]
groups = foreach_utils._group_tensors_by_device_and_dtype([params, grads], with_indices=True)
for (device, dtype), ((ps, gs), idx) in sorted(groups.items(), key=lambda kv: str(kv[0][1])):
    print("group", device, dtype, [p.shape[0] for p in ps], [g is None for g in gs], idx)

fut = torch.futures.Future()
doubled = fut.then(lambda f: f.wait() * 2)
fut.set_result(21)
print("future", doubled.wait(), torch.futures.wait_all([fut, doubled]))

model = torch.nn.Linear(2, 2)
seen = []
handle = model.register_forward_hook(lambda m, i, o: seen.append(o.shape))
model(torch.ones(1, 2))
handle.remove()
model(torch.ones(1, 2))
print("hooks", isinstance(handle, RemovableHandle), seen)


x = torch.arange(6.0).reshape(2, 3)
print("repr", torch._tensor_str._tensor_str(x, len("Index(")))  # a subclass's own repr
print("config", isinstance(torch.__config__.show(), str), pool(x, [2, 2]))
