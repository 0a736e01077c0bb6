# From ../shared/seeds/002 ("PyTorch in 5 minutes"): tensors are arrays with a backstory.
import torch

x = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
print(x.shape)        # torch.Size([2, 2])
print(x.dtype)        # torch.float32
print(x.device)       # cpu
