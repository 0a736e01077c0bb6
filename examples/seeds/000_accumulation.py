# From ../shared/seeds/000 ("PyTorch for Beginners"), Step 2: gradients accumulate by default.
import torch

w = torch.tensor(1.0, requires_grad=True)
for i in range(2):
    (w * 3).backward()
    print(w.grad)           # 3 the first time, 6 the second: accumulated
