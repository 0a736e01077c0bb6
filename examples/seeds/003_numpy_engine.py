# From ../shared/seeds/003 ("Autograd and your first PyTorch training loop"), Going deeper:
# a tiny autograd engine in plain NumPy with the same loop (no torch, no ember: it shows what
# ember does for real).
import numpy as np

class Tensor:
    """A tiny tensor that records operations so .backward() can apply the chain rule."""
    def __init__(self, data, requires_grad=False, parents=(), backward=None):
        self.data, self.grad = np.asarray(data, float), None
        self.requires_grad, self._parents, self._backward = requires_grad, parents, backward
    def __matmul__(self, o): return op(self.data @ o.data, (self, o), lambda g: (g @ o.data.T, self.data.T @ g))
    def __add__(self, o):    return op(self.data + o.data, (self, o), lambda g: (g, g.sum(0)))  # o: bias row
    def __sub__(self, o):    return op(self.data - o.data, (self, o), lambda g: (g, -g))
    def relu(self):          return op(np.maximum(0, self.data), (self,), lambda g: (g * (self.data > 0),))
    def square_mean(self):   return op((self.data ** 2).mean(), (self,), lambda g: (g * 2 * self.data / self.data.size,))
    def backward(self):
        order, seen = [], set()
        def visit(t):  # topological order: every node after the nodes it depends on
            if id(t) not in seen:
                seen.add(id(t)); [visit(p) for p in t._parents]; order.append(t)
        visit(self)
        self.grad = np.ones_like(self.data)
        for t in reversed(order):  # walk the graph backwards, passing gradients to parents
            if t._backward:
                for p, g in zip(t._parents, t._backward(t.grad)):
                    if p.requires_grad or p._parents:
                        p.grad = g if p.grad is None else p.grad + g  # sum over all uses

def op(data, parents, backward):
    return Tensor(data, parents=parents, backward=backward)

class SGD:
    def __init__(self, params, lr): self.params, self.lr = params, lr
    def zero_grad(self): [setattr(p, "grad", None) for p in self.params]
    def step(self):
        for p in self.params: p.data -= self.lr * p.grad

# Data: y = sin(2x) + noise, served in shuffled mini-batches like a DataLoader
rng = np.random.default_rng(0)
X = rng.uniform(-2, 2, (256, 1)); Y = np.sin(2 * X) + rng.normal(0, 0.1, X.shape)
def loader(bs=32):
    idx = rng.permutation(len(X))
    for i in range(0, len(X), bs):
        yield Tensor(X[idx[i:i + bs]]), Tensor(Y[idx[i:i + bs]])

# Model: 1 -> 32 -> 1 with ReLU; parameters are leaf tensors with requires_grad=True
W1, b1 = Tensor(rng.normal(0, 1, (1, 32)), True), Tensor(np.zeros(32), True)
W2, b2 = Tensor(rng.normal(0, 0.2, (32, 1)), True), Tensor(np.zeros(1), True)
model = lambda x: ((x @ W1 + b1).relu() @ W2) + b2
opt = SGD([W1, b1, W2, b2], lr=0.02)

for epoch in range(1, 301):
    for xb, yb in loader():
        loss = (model(xb) - yb).square_mean()  # forward pass and loss
        opt.zero_grad()                         # clear old gradients
        loss.backward()                         # backpropagation fills .grad
        opt.step()                              # gradient descent update
    if epoch in (1, 10, 50, 100, 300):
        full = (model(Tensor(X)) - Tensor(Y)).square_mean().data
        print(f"epoch {epoch:>3}: training MSE {full:.4f}")
print("noise floor (variance of the added noise): 0.0100")
