"""Lightning: fit, validate, test and predict a small classifier, with logging, a checkpoint
callback, resuming from the checkpoint, and the model summary (with FLOPs).

Runs on PyTorch and on ember (`ember run`) unchanged; writes into a temporary folder. Prints the
model summary, the logged metrics of each stage, and the resumed run's numbers.
"""

import csv
import glob
import os
import tempfile

import lightning as L
import torch
import torch.nn.functional as F
from lightning.pytorch.callbacks import ModelCheckpoint
from lightning.pytorch.loggers import CSVLogger
from lightning.pytorch.utilities.model_summary import ModelSummary
from torch.utils.data import DataLoader, TensorDataset


class Classifier(L.LightningModule):
    def __init__(self, d_in: int = 10, hidden: int = 32, classes: int = 3, lr: float = 0.05):
        super().__init__()
        self.save_hyperparameters()
        self.net = torch.nn.Sequential(
            torch.nn.Linear(d_in, hidden), torch.nn.ReLU(), torch.nn.Linear(hidden, classes)
        )
        self.example_input_array = torch.zeros(4, d_in)

    def forward(self, x):
        return self.net(x)

    def _step(self, batch, stage):
        x, y = batch
        logits = self(x)
        loss = F.cross_entropy(logits, y)
        acc = (logits.argmax(-1) == y).float().mean()
        self.log(f"{stage}_loss", loss, prog_bar=False, on_epoch=True, on_step=False)
        self.log(f"{stage}_acc", acc, on_epoch=True, on_step=False)
        return loss

    def training_step(self, batch, batch_idx):
        return self._step(batch, "train")

    def validation_step(self, batch, batch_idx):
        self._step(batch, "val")

    def test_step(self, batch, batch_idx):
        self._step(batch, "test")

    def predict_step(self, batch, batch_idx):
        return self(batch[0]).argmax(-1)

    def configure_optimizers(self):
        opt = torch.optim.SGD(self.parameters(), lr=self.hparams.lr, momentum=0.9)
        sched = torch.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
        return [opt], [sched]


def data(n, seed):
    g = torch.Generator().manual_seed(seed)
    centers = torch.tensor([[0.5] * 5 + [0.0] * 5, [0.0] * 5 + [0.5] * 5, [-0.5] * 10])
    y = torch.randint(0, 3, (n,), generator=g)
    x = centers[y] + 1.5 * torch.randn(n, 10, generator=g)
    return TensorDataset(x, y)


def main():
    L.seed_everything(0, verbose=False)
    train = DataLoader(data(384, 1), batch_size=32, shuffle=True)
    val = DataLoader(data(128, 2), batch_size=64)
    test = DataLoader(data(128, 3), batch_size=64)
    root = tempfile.mkdtemp(prefix="lightning_ember_")
    common = dict(accelerator="cpu", devices=1, enable_progress_bar=False, log_every_n_steps=4,
                  default_root_dir=root, enable_model_summary=False)

    model = Classifier()
    print(ModelSummary(model, max_depth=2))

    ckpt = ModelCheckpoint(dirpath=os.path.join(root, "ckpt"), monitor="val_loss", save_last=True,
                           filename="{epoch}-{val_loss:.4f}")
    trainer = L.Trainer(max_epochs=3, callbacks=[ckpt], logger=CSVLogger(root, name="run"),
                        **common)
    trainer.fit(model, train, val)
    print("fit: epochs", trainer.current_epoch, "steps", trainer.global_step,
          "best", os.path.basename(ckpt.best_model_path))
    print("fit metrics:", {k: round(float(v), 4) for k, v in sorted(trainer.callback_metrics.items())})
    print("validate:", [{k: round(v, 4) for k, v in sorted(d.items())}
                        for d in trainer.validate(model, val, verbose=False)])
    print("test:", [{k: round(v, 4) for k, v in sorted(d.items())}
                    for d in trainer.test(model, test, verbose=False)])
    preds = torch.cat(trainer.predict(model, test))
    print("predict:", preds.shape, preds.dtype, "accuracy",
          round((preds == test.dataset.tensors[1]).float().mean().item(), 4))

    rows = list(csv.DictReader(open(glob.glob(os.path.join(root, "run", "*", "metrics.csv"))[0])))
    print("csv log:", len(rows), "rows; columns",
          sorted(k for k in rows[0] if k not in ("epoch", "step")))

    # resume from the last checkpoint for two more epochs
    resumed = Classifier.load_from_checkpoint(ckpt.last_model_path)
    print("hparams restored:", dict(resumed.hparams))
    trainer2 = L.Trainer(max_epochs=5, logger=False, enable_checkpointing=False, **common)
    trainer2.fit(resumed, train, val, ckpt_path=ckpt.last_model_path)
    print("resumed: epochs", trainer2.current_epoch, "steps", trainer2.global_step, "lr",
          trainer2.optimizers[0].param_groups[0]["lr"])
    print("resumed val:", [{k: round(v, 4) for k, v in sorted(d.items())}
                           for d in trainer2.validate(resumed, val, verbose=False)])
    state = torch.load(ckpt.last_model_path, weights_only=False)
    print("checkpoint keys:", sorted(state)[:6], "epoch", state["epoch"])


if __name__ == "__main__":
    main()
