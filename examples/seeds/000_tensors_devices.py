# From ../shared/seeds/000 ("PyTorch for Beginners"), Step 1: tensors and devices.
import torch
device = "cuda" if torch.cuda.is_available() else "cpu"
a = torch.randn(3, 4, device=device)
b = torch.randn(4, 2, device=device)
c = a @ b            # matrix multiply, shape (3, 2)
