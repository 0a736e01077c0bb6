"""word-language-model-style LSTM: a Dictionary/Corpus, batchify, bptt batches, hidden state
repackaging, manual SGD with clipping, evaluation, saving the whole model and loading it back
with torch.serialization.add_safe_globals. Written for ember's compatibility corpus."""
import math

import torch
import torch.nn as nn

TEXT = """the river runs past the mill and the mill turns the stone
the stone grinds the grain and the grain feeds the town
the town sends its boats down the river to the sea
the sea brings rain back to the hills above the mill"""


class Dictionary:
    def __init__(self):
        self.word2idx, self.idx2word = {}, []

    def add_word(self, word):
        if word not in self.word2idx:
            self.idx2word.append(word)
            self.word2idx[word] = len(self.idx2word) - 1
        return self.word2idx[word]

    def __len__(self):
        return len(self.idx2word)


class Corpus:
    def __init__(self, text):
        self.dictionary = Dictionary()
        ids = []
        for line in text.splitlines():
            for word in line.split() + ["<eos>"]:
                ids.append(self.dictionary.add_word(word))
        ids = torch.tensor(ids).type(torch.int64)
        self.train, self.valid = ids[:-16], ids[-16:]


class RNNModel(nn.Module):
    def __init__(self, rnn_type, ntoken, ninp, nhid, nlayers, dropout=0.5, tie_weights=False):
        super().__init__()
        self.ntoken = ntoken
        self.drop = nn.Dropout(dropout)
        self.encoder = nn.Embedding(ntoken, ninp)
        self.rnn = getattr(nn, rnn_type)(ninp, nhid, nlayers, dropout=dropout)
        self.decoder = nn.Linear(nhid, ntoken)
        if tie_weights:
            self.decoder.weight = self.encoder.weight
        self.init_weights()
        self.rnn_type, self.nhid, self.nlayers = rnn_type, nhid, nlayers

    def init_weights(self):
        initrange = 0.1
        nn.init.uniform_(self.encoder.weight, -initrange, initrange)
        nn.init.zeros_(self.decoder.bias)
        nn.init.uniform_(self.decoder.weight, -initrange, initrange)

    def forward(self, input, hidden):
        emb = self.drop(self.encoder(input))
        output, hidden = self.rnn(emb, hidden)
        output = self.drop(output)
        decoded = self.decoder(output).view(-1, self.ntoken)
        return nn.functional.log_softmax(decoded, dim=1), hidden

    def init_hidden(self, bsz):
        weight = next(self.parameters())
        return (weight.new_zeros(self.nlayers, bsz, self.nhid),
                weight.new_zeros(self.nlayers, bsz, self.nhid))


def batchify(data, bsz):
    nbatch = data.size(0) // bsz
    data = data.narrow(0, 0, nbatch * bsz)
    return data.view(bsz, -1).t().contiguous()


def repackage_hidden(h):
    if isinstance(h, torch.Tensor):
        return h.detach()
    return tuple(repackage_hidden(v) for v in h)


def get_batch(source, i, bptt=5):
    seq_len = min(bptt, len(source) - 1 - i)
    return source[i:i + seq_len], source[i + 1:i + 1 + seq_len].view(-1)


torch.manual_seed(1111)
corpus = Corpus(TEXT)
ntokens = len(corpus.dictionary)
train_data, val_data = batchify(corpus.train, 4), batchify(corpus.valid, 2)
print("tokens", ntokens, "train", tuple(train_data.shape), "val", tuple(val_data.shape))
model = RNNModel("LSTM", ntokens, 12, 16, 2, dropout=0.0)
with torch.no_grad():
    for i, p in enumerate(model.parameters()):
        p.copy_((torch.cos(torch.arange(p.numel(), dtype=torch.float32) * 0.29 + i) * 0.15).view_as(p))
criterion = nn.NLLLoss()


def evaluate(data_source):
    model.eval()
    total_loss, hidden = 0.0, model.init_hidden(2)
    with torch.no_grad():
        for i in range(0, data_source.size(0) - 1, 5):
            data, targets = get_batch(data_source, i)
            output, hidden = model(data, hidden)
            hidden = repackage_hidden(hidden)
            total_loss += len(data) * criterion(output, targets).item()
    return total_loss / (len(data_source) - 1)


lr, clip = 2.0, 0.25
for epoch in range(1, 4):
    model.train()
    hidden, total = model.init_hidden(4), 0.0
    for batch, i in enumerate(range(0, train_data.size(0) - 1, 5)):  # noqa: B007
        data, targets = get_batch(train_data, i)
        model.zero_grad()
        hidden = repackage_hidden(hidden)
        output, hidden = model(data, hidden)
        loss = criterion(output, targets)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
        for p in model.parameters():
            p.data.add_(p.grad, alpha=-lr)
        total += loss.item()
    val_loss = evaluate(val_data)
    print(f"| epoch {epoch:3d} | train loss {total / (batch + 1):5.3f} | valid loss {val_loss:5.3f} | "
          f"valid ppl {math.exp(val_loss):8.3f}")

with open("model.pt", "wb") as f:
    torch.save(model, f)
torch.serialization.add_safe_globals([RNNModel, torch.nn.modules.dropout.Dropout,
                                      torch.nn.modules.linear.Linear, torch.nn.modules.rnn.LSTM,
                                      torch.nn.modules.sparse.Embedding])
with open("model.pt", "rb") as f:
    loaded = torch.load(f)
loaded.rnn.flatten_parameters()
print("loaded", type(loaded).__name__, type(loaded.rnn).__name__, loaded.rnn.num_layers)
data, _ = get_batch(val_data, 0)
with torch.no_grad():
    a, _ = model(data, model.init_hidden(2))
    b, _ = loaded(data, loaded.init_hidden(2))
print("same output after reload:", torch.equal(a, b))
