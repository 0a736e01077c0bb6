"""torchmetrics inside a training loop, checked against scikit-learn.

A small classifier and a small regressor train for a few epochs on synthetic data; a
MetricCollection of classification metrics and one of regression metrics accumulate over the
batches of each epoch; at the end each metric's value is compared with scikit-learn's on the
same predictions. Runs on PyTorch and on ember (`ember run`) unchanged. Prints one line per
metric: name, torchmetrics' value, scikit-learn's value.
"""

import numpy as np
import torch
import torchmetrics
from sklearn import metrics as skm
from torchmetrics import MetricCollection
from torchmetrics.classification import (
    MulticlassAccuracy,
    MulticlassAUROC,
    MulticlassCohenKappa,
    MulticlassConfusionMatrix,
    MulticlassF1Score,
    MulticlassMatthewsCorrCoef,
    MulticlassPrecision,
    MulticlassRecall,
)
from torchmetrics.regression import (
    ExplainedVariance,
    MeanAbsoluteError,
    MeanSquaredError,
    PearsonCorrCoef,
    R2Score,
)

torch.manual_seed(0)
C, D, N, B = 4, 8, 512, 64
centers = torch.randn(C, D) * 1.5
labels = torch.randint(0, C, (N,))
x = centers[labels] + torch.randn(N, D)
w_true = torch.randn(D)
y_reg = x @ w_true + 0.3 * torch.randn(N)

clf = torch.nn.Sequential(torch.nn.Linear(D, 16), torch.nn.ReLU(), torch.nn.Linear(16, C))
reg = torch.nn.Linear(D, 1)
opt = torch.optim.AdamW(list(clf.parameters()) + list(reg.parameters()), lr=0.02)

cls_metrics = MetricCollection(
    {
        "acc": MulticlassAccuracy(num_classes=C, average="micro"),
        "f1_macro": MulticlassF1Score(num_classes=C, average="macro"),
        "precision_macro": MulticlassPrecision(num_classes=C, average="macro"),
        "recall_weighted": MulticlassRecall(num_classes=C, average="weighted"),
        "kappa": MulticlassCohenKappa(num_classes=C),
        "mcc": MulticlassMatthewsCorrCoef(num_classes=C),
        "auroc": MulticlassAUROC(num_classes=C, average="macro"),
        "confmat": MulticlassConfusionMatrix(num_classes=C),
    },
    prefix="train/",
)
reg_metrics = MetricCollection(
    [MeanSquaredError(), MeanAbsoluteError(), R2Score(), ExplainedVariance(), PearsonCorrCoef()]
)

for epoch in range(3):
    cls_metrics.reset()
    reg_metrics.reset()
    all_p, all_t, all_r, all_y = [], [], [], []
    perm = torch.randperm(N)
    for i in range(0, N, B):
        idx = perm[i : i + B]
        xb, yb, rb = x[idx], labels[idx], y_reg[idx]
        logits = clf(xb)
        pred_r = reg(xb).squeeze(-1)
        loss = torch.nn.functional.cross_entropy(logits, yb) + torch.nn.functional.mse_loss(
            pred_r, rb
        )
        opt.zero_grad()
        loss.backward()
        opt.step()
        probs = logits.detach().softmax(-1)
        batch_vals = cls_metrics(probs, yb)  # forward: this batch's values, and accumulate
        reg_metrics.update(pred_r.detach(), rb)
        all_p.append(probs)
        all_t.append(yb)
        all_r.append(pred_r.detach())
        all_y.append(rb)
    res = cls_metrics.compute()
    rres = reg_metrics.compute()
    print(f"epoch {epoch}: loss {loss.item():.4f} acc {res['train/acc'].item():.4f} "
          f"mse {rres['MeanSquaredError'].item():.4f} last-batch acc "
          f"{batch_vals['train/acc'].item():.4f}")

p = torch.cat(all_p).numpy()
t = torch.cat(all_t).numpy()
r = torch.cat(all_r).numpy()
yy = torch.cat(all_y).numpy()
hard = p.argmax(1)
reference = {
    "train/acc": skm.accuracy_score(t, hard),
    "train/f1_macro": skm.f1_score(t, hard, average="macro"),
    "train/precision_macro": skm.precision_score(t, hard, average="macro", zero_division=0),
    "train/recall_weighted": skm.recall_score(t, hard, average="weighted"),
    "train/kappa": skm.cohen_kappa_score(t, hard),
    "train/mcc": skm.matthews_corrcoef(t, hard),
    "train/auroc": skm.roc_auc_score(t, p, multi_class="ovr", average="macro"),
    "MeanSquaredError": skm.mean_squared_error(yy, r),
    "MeanAbsoluteError": skm.mean_absolute_error(yy, r),
    "R2Score": skm.r2_score(yy, r),
    "ExplainedVariance": skm.explained_variance_score(yy, r),
    "PearsonCorrCoef": float(np.corrcoef(yy, r)[0, 1]),
}
values = {**res, **rres}
worst = 0.0
for name, ref in reference.items():
    got = values[name].item()
    worst = max(worst, abs(got - ref))
    print(f"{name:24s} torchmetrics {got:.6f}  sklearn {ref:.6f}")
cm = values["train/confmat"].numpy()
assert (cm == skm.confusion_matrix(t, hard)).all(), "confusion matrix differs"
print("confusion matrix equal:", True, "dtype", values["train/confmat"].dtype)
print(f"torchmetrics {torchmetrics.__version__}: {len(reference) + 1} metrics, "
      f"largest difference from scikit-learn {worst:.2e}")
assert worst < 1e-4, worst
