"""ResNet-18 training step on 32x32 images: ``torchvision.models.resnet18(num_classes=10)``
(BatchNorm in training mode), batch 32, SGD with momentum, cross-entropy.

Under ``ember run`` ``import torchvision`` is ember.vision. Under PyTorch the real torchvision is
imported with its compiled-operator registrations stubbed out (they cannot load beside a CPU torch
here; the models need none of them)."""

import sys
import types

import torch
from _common import StepTimer, maybe_compile, parse_args, report
from torch import nn

if not hasattr(torch, "__ember_version__"):  # real PyTorch (under ember run torch is ember)
    sys.modules.setdefault("torchvision._meta_registrations",
                           types.ModuleType("torchvision._meta_registrations"))
import torchvision  # noqa: E402

args = parse_args(__doc__, steps=10, warmup=2, quick_steps=1, quick_warmup=1)
torch.manual_seed(args.seed)
BATCH = 32
model = torchvision.models.resnet18(num_classes=10)
model.train()
opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
loss_fn = nn.CrossEntropyLoss()
x = torch.randn(BATCH, 3, 32, 32)
y = torch.randint(0, 10, (BATCH,))

forward = maybe_compile(torch, lambda x, y: loss_fn(model(x), y), args)
timer = StepTimer()
timer.start()
for _ in range(args.warmup + args.steps):
    loss = forward(x, y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    timer.tick()
report("resnet18", torch, timer, args.warmup, loss=loss.item(), compiled=args.compile, batch=BATCH)
