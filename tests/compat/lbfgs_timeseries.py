"""time-sequence-prediction-style fit: two LSTMCells in float64 learn sine waves with LBFGS
(closure re-evaluating the loss), then predict the future; plus a strong-Wolfe line search fit.
Written for ember's compatibility corpus."""
import numpy as np
import torch
import torch.nn as nn
import torch.optim as optim


class Sequence(nn.Module):
    def __init__(self, hidden=12):
        super().__init__()
        self.hidden = hidden
        self.lstm1 = nn.LSTMCell(1, hidden)
        self.lstm2 = nn.LSTMCell(hidden, hidden)
        self.linear = nn.Linear(hidden, 1)

    def forward(self, input, future=0):
        outputs = []
        h_t = torch.zeros(input.size(0), self.hidden, dtype=torch.double)
        c_t = torch.zeros(input.size(0), self.hidden, dtype=torch.double)
        h_t2 = torch.zeros(input.size(0), self.hidden, dtype=torch.double)
        c_t2 = torch.zeros(input.size(0), self.hidden, dtype=torch.double)
        for input_t in input.split(1, dim=1):
            h_t, c_t = self.lstm1(input_t, (h_t, c_t))
            h_t2, c_t2 = self.lstm2(h_t, (h_t2, c_t2))
            output = self.linear(h_t2)
            outputs += [output]
        for i in range(future):  # noqa: B007
            h_t, c_t = self.lstm1(output, (h_t, c_t))
            h_t2, c_t2 = self.lstm2(h_t, (h_t2, c_t2))
            output = self.linear(h_t2)
            outputs += [output]
        return torch.cat(outputs, dim=1)


T, L, N = 20, 40, 6
x = np.empty((N, L), np.int64)
x[:] = np.arange(L) + (np.arange(N) * 7 % 40).reshape(N, 1)
data = np.sin(x / 1.0 / T).astype("float64")
torch.save(data, "traindata.pt")
data = torch.load("traindata.pt", weights_only=False)
input = torch.from_numpy(data[2:, :-1])
target = torch.from_numpy(data[2:, 1:])
test_input = torch.from_numpy(data[:2, :-1])
test_target = torch.from_numpy(data[:2, 1:])
print("input", tuple(input.shape), input.dtype)

torch.manual_seed(0)
seq = Sequence()
seq.double()
with torch.no_grad():
    for i, p in enumerate(seq.parameters()):
        p.copy_((torch.sin(torch.arange(p.numel(), dtype=torch.double) * 0.53 + i) * 0.2).view_as(p))
criterion = nn.MSELoss()
optimizer = optim.LBFGS(seq.parameters(), lr=0.8, max_iter=6)
for i in range(2):
    calls = []

    def closure():
        optimizer.zero_grad()
        out = seq(input)
        loss = criterion(out, target)
        calls.append(loss.item())  # noqa: B023
        loss.backward()
        return loss

    optimizer.step(closure)
    print(f"STEP {i}: {len(calls)} closure calls, first loss {calls[0]:.6f}, last loss {calls[-1]:.6f}")
    with torch.no_grad():
        future = 10
        pred = seq(test_input, future=future)
        loss = criterion(pred[:, :-future], test_target)
        print(f"test loss: {loss.item():.6f}", tuple(pred.shape), pred.dtype)
y = pred.detach().numpy()
print("prediction is a numpy array:", type(y).__name__, y.dtype, y.shape)

# least squares through LBFGS with the strong-Wolfe line search
A = torch.stack([torch.linspace(0, 1, 30, dtype=torch.double) ** k for k in range(4)], 1)
b = torch.cos(3 * torch.linspace(0, 1, 30, dtype=torch.double))
w = torch.zeros(4, dtype=torch.double, requires_grad=True)
opt = optim.LBFGS([w], lr=1, max_iter=50, line_search_fn="strong_wolfe",
                  tolerance_grad=1e-12, tolerance_change=1e-14)


def closure2():
    opt.zero_grad()
    loss = ((A @ w - b) ** 2).mean()
    loss.backward()
    return loss


opt.step(closure2)
exact = torch.linalg.lstsq(A, b.unsqueeze(1)).solution.squeeze(1)
print("strong_wolfe reaches least squares:", torch.allclose(w.detach(), exact, atol=1e-4))
print("state keys", sorted(opt.state_dict()["state"][0].keys())[:3], opt.state_dict()["state"][0]["n_iter"] > 0)
