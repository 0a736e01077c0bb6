"""makemore-style InfiniteDataLoader: a RandomSampler with replacement=True and
num_samples=int(1e10) behind a DataLoader with workers, from which training takes batches as it
needs them. Written for ember's compatibility corpus."""
import torch
from torch.utils.data import DataLoader, Dataset


class CharDataset(Dataset):
    def __init__(self, words, max_len):
        self.words, self.max_len = words, max_len
        self.stoi = {ch: i + 1 for i, ch in enumerate(sorted(set("".join(words))))}

    def __len__(self):
        return len(self.words)

    def get_output_length(self):
        return self.max_len + 1

    def __getitem__(self, idx):
        ix = torch.tensor([self.stoi[w] for w in self.words[idx]], dtype=torch.long)
        x = torch.zeros(self.max_len + 1, dtype=torch.long)
        y = torch.zeros(self.max_len + 1, dtype=torch.long)
        x[1:1 + len(ix)] = ix
        y[:len(ix)] = ix
        y[len(ix) + 1:] = -1  # index -1 masks the loss at the inactive locations
        return x, y


class InfiniteDataLoader:
    def __init__(self, dataset, **kwargs):
        train_sampler = torch.utils.data.RandomSampler(dataset, replacement=True, num_samples=int(1e10))
        self.train_loader = DataLoader(dataset, sampler=train_sampler, **kwargs)
        self.data_iter = iter(self.train_loader)

    def next(self):
        try:
            batch = next(self.data_iter)
        except StopIteration:
            self.data_iter = iter(self.train_loader)
            batch = next(self.data_iter)
        return batch


if __name__ == "__main__":
    words = ["anna", "bob", "carla", "dmitri", "eve", "farah", "gus", "hana", "ivo", "jun"]
    ds = CharDataset(words, max_len=max(len(w) for w in words))
    torch.manual_seed(3407)
    loader = InfiniteDataLoader(ds, batch_size=4, pin_memory=False, num_workers=2)
    print("sampler length", len(loader.train_loader.sampler), "loader length", len(loader.train_loader))
    seen = set()
    for step in range(10):  # noqa: B007
        X, Y = loader.next()
        assert X.shape == (4, 7) and Y.shape == (4, 7) and X.dtype == torch.long
        assert int((Y == -1).sum()) >= 0 and int(X.max()) <= len(ds.stoi)
        seen.update(tuple(r) for r in X.tolist())
    print("took 10 batches of", tuple(X.shape), X.dtype, "distinct rows > 1:", len(seen) > 1)
    emb = torch.nn.Embedding(len(ds.stoi) + 1, 3)
    logits = torch.nn.Linear(3, len(ds.stoi) + 1)(emb(X))
    loss = torch.nn.functional.cross_entropy(logits.view(-1, logits.size(-1)), Y.view(-1), ignore_index=-1)
    print("loss is finite:", bool(torch.isfinite(loss)), loss.shape)
