"""L-BFGS: limited-memory BFGS with an optional strong-Wolfe line search (after minFunc)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from .._tensor import Tensor
from ..autograd import grad_mode
from .optimizer import Optimizer, ParamsT, _check_lr, _value, _xp

__all__ = ["LBFGS"]


class LBFGS(Optimizer):
    r"""L-BFGS, PyTorch's algorithm. Each ``step(closure)`` runs up to ``max_iter`` iterations:

    1. direction ``d = -H g`` from the two-loop recursion over the last ``history_size`` pairs
       ``(s, y)`` (a pair is kept only when its curvature ``y.s > 1e-10``), ``H0 = y.s / y.y``;
       the very first direction is ``-g``;
    2. step size ``t = min(1, 1 / |g|_1) * lr`` on the first iteration, ``lr`` afterwards, or
       the strong-Wolfe line search's (``c1 = 1e-4, c2 = 0.9``, cubic interpolation, at most 25
       evaluations, and no more than ``max_eval`` allows) with
       ``line_search_fn='strong_wolfe'``;
    3. stop when ``max|g| <= tolerance_grad``, the directional derivative is above
       ``-tolerance_change``, the step or the loss change falls under ``tolerance_change``, or
       ``max_iter`` / ``max_eval`` are reached.

    All parameters form one flat vector: LBFGS supports one parameter group only. The state
    (history, direction, step) lives in ``state[first parameter]``, so ``state_dict`` works.

    Args:
        params: the parameters (one group).
        lr: learning rate. Default 1.
        max_iter: iterations per ``step``. Default 20.
        max_eval: function evaluations per ``step``. Default ``max_iter * 5 // 4``.
        tolerance_grad: first-order optimality tolerance. Default 1e-7.
        tolerance_change: tolerance on function value / parameter changes. Default 1e-9.
        history_size: number of (s, y) pairs kept. Default 100.
        line_search_fn: ``None`` or ``'strong_wolfe'``.

    Example::

        opt = ember.optim.LBFGS(model.parameters(), line_search_fn="strong_wolfe")
        def closure():
            opt.zero_grad(); loss = loss_fn(model(x), y); loss.backward(); return loss
        opt.step(closure)
    """

    def __init__(
        self,
        params: ParamsT,
        lr: float | Tensor = 1,
        max_iter: int = 20,
        max_eval: int | None = None,
        tolerance_grad: float = 1e-7,
        tolerance_change: float = 1e-9,
        history_size: int = 100,
        line_search_fn: str | None = None,
    ) -> None:
        _check_lr(lr)
        if max_eval is None:
            max_eval = max_iter * 5 // 4
        defaults = dict(
            lr=lr, max_iter=max_iter, max_eval=max_eval, tolerance_grad=tolerance_grad,
            tolerance_change=tolerance_change, history_size=history_size,
            line_search_fn=line_search_fn,
        )
        super().__init__(params, defaults)
        if len(self.param_groups) != 1:
            raise ValueError("LBFGS doesn't support per-parameter options (parameter groups)")

    # -- the parameters as one flat vector -------------------------------------------------------
    @property
    def _params(self) -> list[Tensor]:
        return self.param_groups[0]["params"]

    def _gather_flat_grad(self) -> Any:
        ps = self._params
        xp = _xp(ps[0]._data)
        parts = [
            xp.zeros(p._data.size, p._data.dtype) if p.grad is None else p.grad._data.reshape(-1)
            for p in ps
        ]
        return xp.concatenate(parts)

    def _add_grad(self, t: float, d: Any) -> None:
        """Parameters += t * d (d flat)."""
        offset = 0
        for p in self._params:
            a = p._data
            n = a.size
            a += t * d[offset:offset + n].reshape(a.shape)
            offset += n
            v = p._version
            if v is not None:
                v[0] += 1

    def _set_params(self, flat: list[Any]) -> None:
        for p, x in zip(self._params, flat):
            p._data[...] = x
            v = p._version
            if v is not None:
                v[0] += 1

    def _directional_evaluate(
        self, closure: Callable, x: list[Any], t: float, d: Any
    ) -> tuple[float, Any]:
        """Loss and flat gradient at ``x + t d``; the parameters are restored to ``x``."""
        self._add_grad(t, d)
        with grad_mode.enable_grad():
            loss = float(closure())
        flat_grad = self._gather_flat_grad()
        self._set_params(x)
        return loss, flat_grad

    # -- the step --------------------------------------------------------------------------------
    def _step(self, closure: Callable[[], Any] | None) -> Any:
        if closure is None:
            raise RuntimeError(
                "LBFGS needs a closure that re-evaluates the model and returns the loss: "
                "optimizer.step(closure)"
            )
        group = self.param_groups[0]
        lr = _value(group["lr"])
        max_iter = group["max_iter"]
        max_eval = group["max_eval"]
        tolerance_grad = group["tolerance_grad"]
        tolerance_change = group["tolerance_change"]
        line_search_fn = group["line_search_fn"]
        history_size = group["history_size"]

        state = self.state[self._params[0]]
        state.setdefault("func_evals", 0)
        state.setdefault("n_iter", 0)

        with grad_mode.enable_grad():
            orig_loss = closure()
        loss = float(orig_loss)
        current_evals = 1
        state["func_evals"] += 1

        flat_grad = self._gather_flat_grad()
        xp = _xp(flat_grad)
        if float(xp.abs(flat_grad).max()) <= tolerance_grad:
            return orig_loss

        d = _arr(state.get("d"))
        t = state.get("t")
        old_dirs = [_arr(x) for x in state.get("old_dirs", [])]
        old_stps = [_arr(x) for x in state.get("old_stps", [])]
        ro = [_num(x) for x in state.get("ro", [])]
        h_diag = _num(state.get("H_diag"))
        prev_flat_grad = _arr(state.get("prev_flat_grad"))
        prev_loss = state.get("prev_loss")
        al: list[Any] = [None] * history_size

        n_iter = 0
        while n_iter < max_iter:
            n_iter += 1
            state["n_iter"] += 1

            # 1. the search direction
            if state["n_iter"] == 1:
                d = -flat_grad
                old_dirs, old_stps, ro = [], [], []
                h_diag = 1.0
            else:
                y = flat_grad - prev_flat_grad
                s = d * t
                ys = float(y.dot(s))
                if ys > 1e-10:
                    if len(old_dirs) == history_size:
                        old_dirs.pop(0)
                        old_stps.pop(0)
                        ro.pop(0)
                    old_dirs.append(y)
                    old_stps.append(s)
                    ro.append(1.0 / ys)
                    h_diag = ys / float(y.dot(y))
                q = -flat_grad
                for i in range(len(old_dirs) - 1, -1, -1):
                    al[i] = float(old_stps[i].dot(q)) * ro[i]
                    q -= al[i] * old_dirs[i]
                d = r = q * h_diag
                for i in range(len(old_dirs)):
                    be_i = float(old_dirs[i].dot(r)) * ro[i]
                    r += (al[i] - be_i) * old_stps[i]

            prev_flat_grad = flat_grad.copy()
            prev_loss = loss

            # 2. the step size
            if state["n_iter"] == 1:
                t = min(1.0, 1.0 / float(xp.abs(flat_grad).sum())) * lr
            else:
                t = lr
            gtd = float(flat_grad.dot(d))
            if gtd > -tolerance_change:
                break

            ls_func_evals = 0
            if line_search_fn is not None:
                if line_search_fn != "strong_wolfe":
                    raise RuntimeError("only 'strong_wolfe' is supported")
                x_init = [p._data.copy() for p in self._params]

                def obj_func(t_: float, x: list[Any] = x_init, d_: Any = d) -> tuple[float, Any]:
                    return self._directional_evaluate(closure, x, t_, d_)

                loss, flat_grad, t, ls_func_evals = _strong_wolfe(
                    obj_func, t, d, loss, flat_grad, gtd, max_ls=max_eval - current_evals
                )
                self._add_grad(t, d)
                opt_cond = float(xp.abs(flat_grad).max()) <= tolerance_grad
            else:
                self._add_grad(t, d)
                opt_cond = False
                if n_iter != max_iter:
                    # re-evaluate unless this was the last iteration (then the caller does)
                    with grad_mode.enable_grad():
                        loss = float(closure())
                    flat_grad = self._gather_flat_grad()
                    opt_cond = float(xp.abs(flat_grad).max()) <= tolerance_grad
                    ls_func_evals = 1
            current_evals += ls_func_evals
            state["func_evals"] += ls_func_evals

            # 3. stopping conditions
            if n_iter == max_iter:
                break
            if current_evals >= max_eval:
                break
            if opt_cond:
                break
            if float(xp.abs(d).max()) * abs(t) <= tolerance_change:
                break
            if abs(loss - prev_loss) < tolerance_change:
                break

        state["al"] = al
        state["d"] = Tensor._make(d)
        state["t"] = t
        state["old_dirs"] = [Tensor._make(x) for x in old_dirs]
        state["old_stps"] = [Tensor._make(x) for x in old_stps]
        state["ro"] = ro
        state["H_diag"] = h_diag
        state["prev_flat_grad"] = Tensor._make(prev_flat_grad)
        state["prev_loss"] = prev_loss
        return orig_loss


def _arr(x: Any) -> Any:
    return x._data if isinstance(x, Tensor) else x


def _num(x: Any) -> Any:
    return float(x) if isinstance(x, Tensor) else x


def _cubic_interpolate(
    x1: float, f1: float, g1: float, x2: float, f2: float, g2: float,
    bounds: tuple[float, float] | None = None,
) -> float:
    """The minimiser of the cubic through (x1, f1, g1) and (x2, f2, g2), clipped to
    ``bounds`` (default: the interval between x1 and x2); the midpoint if the cubic has none."""
    if bounds is not None:
        lo, hi = bounds
    else:
        lo, hi = (x1, x2) if x1 <= x2 else (x2, x1)
    d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
    d2_square = d1 * d1 - g1 * g2
    if d2_square >= 0:
        d2 = math.sqrt(d2_square)
        if x1 <= x2:
            pos = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
        else:
            pos = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2))
        return min(max(pos, lo), hi)
    return (lo + hi) / 2.0


def _strong_wolfe(
    obj_func: Callable[[float], tuple[float, Any]],
    t: float,
    d: Any,
    f: float,
    g: Any,
    gtd: float,
    c1: float = 1e-4,
    c2: float = 0.9,
    tolerance_change: float = 1e-9,
    max_ls: int = 25,
) -> tuple[float, Any, float, int]:
    """Line search for a step t meeting the strong Wolfe conditions along d:
    ``f(t) <= f + c1 t gtd`` and ``|f'(t)| <= -c2 gtd``. Returns (f, g, t, evaluations)."""
    xp = _xp(d)
    d_norm = float(xp.abs(d).max())
    g = g.copy()
    f_new, g_new = obj_func(t)
    evals = 1
    gtd_new = float(g_new.dot(d))

    t_prev, f_prev, g_prev, gtd_prev = 0.0, f, g, gtd
    done = False
    ls_iter = 0
    # bracketing phase: find an interval that contains a point meeting the conditions
    while ls_iter < max_ls:
        if f_new > f + c1 * t * gtd or (ls_iter > 1 and f_new >= f_prev):
            bracket = [t_prev, t]
            bracket_f = [f_prev, f_new]
            bracket_g = [g_prev, g_new.copy()]
            bracket_gtd = [gtd_prev, gtd_new]
            break
        if abs(gtd_new) <= -c2 * gtd:
            bracket, bracket_f, bracket_g = [t], [f_new], [g_new]
            done = True
            break
        if gtd_new >= 0:
            bracket = [t_prev, t]
            bracket_f = [f_prev, f_new]
            bracket_g = [g_prev, g_new.copy()]
            bracket_gtd = [gtd_prev, gtd_new]
            break
        # extrapolate
        min_step = t + 0.01 * (t - t_prev)
        max_step = t * 10
        tmp = t
        t = _cubic_interpolate(t_prev, f_prev, gtd_prev, t, f_new, gtd_new, (min_step, max_step))
        t_prev, f_prev, g_prev, gtd_prev = tmp, f_new, g_new.copy(), gtd_new
        f_new, g_new = obj_func(t)
        evals += 1
        gtd_new = float(g_new.dot(d))
        ls_iter += 1

    if ls_iter == max_ls:
        bracket, bracket_f, bracket_g = [0.0, t], [f, f_new], [g, g_new]

    # zoom phase: shrink the bracket until a point meets the conditions
    insuf_progress = False
    low, high = (0, 1) if bracket_f[0] <= bracket_f[-1] else (1, 0)
    while not done and ls_iter < max_ls:
        if abs(bracket[1] - bracket[0]) * d_norm < tolerance_change:
            break
        t = _cubic_interpolate(
            bracket[0], bracket_f[0], bracket_gtd[0], bracket[1], bracket_f[1], bracket_gtd[1]
        )
        # keep away from the bracket's ends unless progress was poor last time
        b_max, b_min = max(bracket), min(bracket)
        eps = 0.1 * (b_max - b_min)
        if min(b_max - t, t - b_min) < eps:
            if insuf_progress or t >= b_max or t <= b_min:
                t = b_max - eps if abs(t - b_max) < abs(t - b_min) else b_min + eps
                insuf_progress = False
            else:
                insuf_progress = True
        else:
            insuf_progress = False

        f_new, g_new = obj_func(t)
        evals += 1
        gtd_new = float(g_new.dot(d))
        ls_iter += 1

        if f_new > f + c1 * t * gtd or f_new >= bracket_f[low]:
            bracket[high], bracket_f[high] = t, f_new
            bracket_g[high], bracket_gtd[high] = g_new.copy(), gtd_new
            low, high = (0, 1) if bracket_f[0] <= bracket_f[1] else (1, 0)
        else:
            if abs(gtd_new) <= -c2 * gtd:
                done = True
            elif gtd_new * (bracket[high] - bracket[low]) >= 0:
                bracket[high], bracket_f[high] = bracket[low], bracket_f[low]
                bracket_g[high], bracket_gtd[high] = bracket_g[low], bracket_gtd[low]
            bracket[low], bracket_f[low] = t, f_new
            bracket_g[low], bracket_gtd[low] = g_new.copy(), gtd_new

    t = bracket[low]
    return bracket_f[low], bracket_g[low], t, evals
