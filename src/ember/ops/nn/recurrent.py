"""Recurrent ops: one fused Op runs a whole RNN / LSTM / GRU layer direction over a sequence.

A layer's input projection ``x W_ih^T + b_ih`` is one GEMM over every time step (``linear``);
the fused Op then loops over time on raw arrays (one small GEMM per step), and its backward runs
the same loop in reverse (backpropagation through time). A 500-step sequence therefore records one
graph node per layer and direction, and the per-step work is a handful of array calls.

Sequences use the packed layout of ``PackedSequence.data``: rows ``offsets[t] : offsets[t] +
sizes[t]`` of a 2-D array hold time step ``t``, and ``sizes`` (the batch size at each step) never
increases, so the sequences still running at step ``t`` are rows ``0 .. sizes[t] - 1`` of the
state. A padded (T, B, *) batch is the case ``sizes = (B,) * T``.

Gate layouts are PyTorch's: LSTM (i, f, g, o), GRU (r, z, n) with
``n = tanh(W_in x + b_in + r * (W_hn h + b_hn))``.

Double backward: under ``create_graph=True`` the fused Ops recompute their forward from ember
ops (``_composite``) and differentiate that, so higher-order gradients work (slowly).
"""

from __future__ import annotations

from typing import Any

from ... import _kernels_loader as _kernels
from ..._tensor_base import TensorBase
from ...autograd.engine import grad as autograd_grad
from ...autograd.function import Op
from .. import joining as _joining
from .._autocast import cast as _amp_cast
from .._autocast import flag as _amp
from .dropout import dropout as apply_dropout  # rnn's `dropout` argument is the rate
from .linear import linear

__all__ = [
    "rnn_tanh_cell", "rnn_relu_cell", "lstm_cell", "gru_cell", "rnn_tanh", "rnn_relu", "lstm",
    "gru",
]


# ---------------------------------------------------------------------------------------------
# array helpers (used inside the Ops only)


def _offsets(sizes: tuple) -> list[int]:
    offs = []
    total = 0
    for s in sizes:
        offs.append(total)
        total += s
    return offs


def _work_dtype(xp: Any, dt: Any) -> Any:
    """float16 / bfloat16 are computed in float32 (the engine casts gradients back)."""
    return xp.dtype(xp.float32) if dt.itemsize == 2 else dt


def _cast(a: Any, wd: Any) -> Any:
    return a if a is None or a.dtype == wd else a.astype(wd)


def _state(h0: Any, wd: Any) -> Any:
    """A private, writable, C-ordered copy of a state array."""
    return h0.astype(wd, order="C", copy=True)


def _order(n: int, reverse: bool) -> range:
    return range(n - 1, -1, -1) if reverse else range(n)


def _gate_scale(xp: Any, hidden: int, wd: Any) -> Any:
    """Per-column factor s of the LSTM gates (i, f, g, o): 1/2 on sigmoid gates, 1 on tanh.

    sigmoid(x) = s * tanh(s * x) + (1 - s) with s = 1/2, and tanh(x) is the same with s = 1, so
    one tanh call over all four gates computes every activation."""
    s = xp.full((4 * hidden,), 0.5, dtype=wd)
    s[2 * hidden:3 * hidden] = 1.0
    return s


def _sigmoid_(xp: Any, a: Any) -> Any:
    """In place: a <- sigmoid(a) = (1 + tanh(a / 2)) / 2, which never overflows."""
    a *= 0.5
    xp.tanh(a, out=a)
    a *= 0.5
    a += 0.5
    return a


# ---------------------------------------------------------------------------------------------
# the fused sequence ops


class RNNSequence(Op):
    """One direction of an Elman RNN layer over a whole (packed) sequence.

    a_t = xw_t + b_hh + h_{t-1} W_hh^T          h_t = act(a_t)   (act = tanh or relu)
    Outputs (out, h_n): every h_t stacked in packed order, and the final state.

    Backward (through time, t from last to first):
        dh_t = grad_out_t + (dh_{t+1} from step t+1; grad_h_n for the last step)
        da_t = dh_t * act'(a_t)     tanh' = 1 - h_t**2,  relu' = (h_t > 0)   (relu'(0) = 0)
        grad_xw_t = da_t          dh_{t-1} = da_t W_hh          grad_h0 = dh_{-1}
        grad_W_hh = sum_t da_t^T h_{t-1}          grad_b_hh = sum_t da_t
    """
    @staticmethod
    def forward(ctx: Any, xw: Any, h0: Any, w_hh: Any, b_hh: Any, sizes: tuple, reverse: bool,
                relu: bool) -> Any:
        xp = ctx.xp
        dt = w_hh.dtype  # the model dtype (linear may hand back float32 for bfloat16)
        wd = _work_dtype(xp, dt)
        need = any(ctx.needs_input_grad)
        xw_w, w, b = _cast(xw, wd), _cast(w_hh, wd), _cast(b_hh, wd)
        pre = xw_w + b if b is not None else xw_w
        wT = w.T
        h = _state(h0, wd)
        out = xp.empty((xw.shape[0], h.shape[1]), dtype=wd)
        hprev = xp.empty_like(out) if need else None
        offs = _offsets(sizes)
        for t in _order(len(sizes), reverse):
            bs, r0 = sizes[t], offs[t]
            hp = h[:bs]
            o = out[r0:r0 + bs]
            if need:
                hprev[r0:r0 + bs] = hp
            xp.matmul(hp, wT, out=o)
            o += pre[r0:r0 + bs]
            if relu:
                xp.maximum(o, 0, out=o)
            else:
                xp.tanh(o, out=o)
            if wd != dt:  # a 16-bit model's state is rounded each step, as PyTorch's steps do
                o[...] = o.astype(dt)
            h[:bs] = o
        if need:
            ctx.save_for_backward(xw, h0, w_hh, b_hh)
            ctx.cache = (out, hprev)
            ctx.static = (sizes, reverse, relu)
        if wd != dt:
            return out.astype(dt), h.astype(dt)
        return out, h

    @staticmethod
    def backward(ctx: Any, grad_out: Any, grad_hn: Any) -> Any:
        if ctx._tensor_mode:
            return _backward_by_recompute(ctx, "rnn", (grad_out, grad_hn))
        xp = ctx.xp
        need = ctx.needs_input_grad
        _, _, w_hh, b_hh = ctx.saved
        out, hprev = ctx.cache
        sizes, reverse, relu = ctx.static
        wd = out.dtype
        w = _cast(w_hh, wd)
        dh = _state(grad_hn, wd)
        g_out = _cast(grad_out, wd)
        da_all = xp.empty_like(out)
        offs = _offsets(sizes)
        for t in _order(len(sizes), not reverse):
            bs, r0 = sizes[t], offs[t]
            dht = dh[:bs] + g_out[r0:r0 + bs]
            hs = out[r0:r0 + bs]
            da = da_all[r0:r0 + bs]
            if relu:
                xp.multiply(dht, hs > 0, out=da)
            else:
                xp.multiply(hs, hs, out=da)
                xp.subtract(1.0, da, out=da)
                da *= dht
            xp.matmul(da, w, out=dh[:bs])
        g_w = da_all.T @ hprev if need[2] else None
        g_b = da_all.sum(axis=0) if need[3] and b_hh is not None else None
        return (da_all if need[0] else None, dh if need[1] else None, g_w, g_b,
                None, None, None)


class LSTMSequence(Op):
    """One direction of an LSTM layer over a whole (packed) sequence.

    (i, f, g, o) = (sig, sig, tanh, sig)(xw_t + b_hh + h_{t-1} W_hh^T)
    c_t = f * c_{t-1} + i * g          m_t = o * tanh(c_t)          h_t = m_t (or m_t W_hr^T)
    Outputs (out, h_n, c_n): every h_t in packed order, and the final states.

    Backward (through time, t from last to first):
        dh_t = grad_out_t + dh_{t+1}          dm = dh_t (or dh_t W_hr)
        dc_t = dc_{t+1} + dm * o * (1 - tanh(c_t)**2)
        d(i, f, g, o) = (dc_t g, dc_t c_{t-1}, dc_t i, dm tanh(c_t)) * activation'
        grad_xw_t = d(i, f, g, o)          dh_{t-1} = d(i, f, g, o) W_hh          dc_{t-1} = dc_t f
        grad_W_hh = sum_t d(i,f,g,o)^T h_{t-1}          grad_b_hh = sum_t d(i,f,g,o)
        grad_W_hr = sum_t dh_t^T m_t
    """
    @staticmethod
    def forward(ctx: Any, xw: Any, h0: Any, c0: Any, w_hh: Any, b_hh: Any, w_hr: Any,
                sizes: tuple, reverse: bool) -> Any:
        xp = ctx.xp
        dt = w_hh.dtype  # the model dtype (linear may hand back float32 for bfloat16)
        wd = _work_dtype(xp, dt)
        need = any(ctx.needs_input_grad)
        xw_w, w, b, wr = _cast(xw, wd), _cast(w_hh, wd), _cast(b_hh, wd), _cast(w_hr, wd)
        pre = xw_w + b if b is not None else xw_w
        wT = w.T
        wrT = wr.T if wr is not None else None
        n, hid = xw.shape[0], c0.shape[1]
        h = _state(h0, wd)
        c = _state(c0, wd)
        s = _gate_scale(xp, hid, wd)
        shift = 1.0 - s
        out = xp.empty((n, h.shape[1]), dtype=wd)
        if need:
            acts = xp.empty((n, 4 * hid), dtype=wd)
            tcs = xp.empty((n, hid), dtype=wd)
            cprev = xp.empty((n, hid), dtype=wd)
            hprev = xp.empty_like(out)
            ms = xp.empty((n, hid), dtype=wd) if wr is not None else None
        offs = _offsets(sizes)
        for t in _order(len(sizes), reverse):
            bs, r0 = sizes[t], offs[t]
            r1 = r0 + bs
            hp = h[:bs]
            cv = c[:bs]
            g = acts[r0:r1] if need else xp.empty((bs, 4 * hid), dtype=wd)
            xp.matmul(hp, wT, out=g)
            g += pre[r0:r1]
            if need:
                cprev[r0:r1] = cv
                hprev[r0:r1] = hp
            tc = tcs[r0:r1] if need else xp.empty((bs, hid), dtype=wd)
            m = out[r0:r1] if wr is None else ms[r0:r1] if need else xp.empty((bs, hid), dtype=wd)
            if not _kernels.lstm_step(g, cv, tc, m):  # (the same operations, in one pass)
                g *= s  # one tanh for all gates (see _gate_scale)
                xp.tanh(g, out=g)
                g *= s
                g += shift
                cv *= g[:, hid:2 * hid]
                cv += g[:, :hid] * g[:, 2 * hid:3 * hid]
                xp.tanh(cv, out=tc)
                xp.multiply(g[:, 3 * hid:], tc, out=m)
            o = m
            if wr is not None:
                o = out[r0:r1]
                xp.matmul(m, wrT, out=o)
            h[:bs] = o
        if need:
            ctx.save_for_backward(xw, h0, c0, w_hh, b_hh, w_hr)
            ctx.cache = (acts, tcs, cprev, hprev, ms)
            ctx.static = (sizes, reverse)
        if wd != dt:
            return out.astype(dt), h.astype(dt), c.astype(dt)
        return out, h, c

    @staticmethod
    def backward(ctx: Any, grad_out: Any, grad_hn: Any, grad_cn: Any) -> Any:
        if ctx._tensor_mode:
            return _backward_by_recompute(ctx, "lstm", (grad_out, grad_hn, grad_cn))
        xp = ctx.xp
        need = ctx.needs_input_grad
        _, _, _, w_hh, b_hh, w_hr = ctx.saved
        acts, tcs, cprev, hprev, ms = ctx.cache
        sizes, reverse = ctx.static
        wd = acts.dtype
        hid = tcs.shape[1]
        w = _cast(w_hh, wd)
        wr = _cast(w_hr, wd)
        dh = _state(grad_hn, wd)
        dc = _state(grad_cn, wd)
        g_out = _cast(grad_out, wd)
        dg_all = xp.empty_like(acts)
        dh_all = xp.empty_like(hprev) if wr is not None and need[5] else None
        offs = _offsets(sizes)
        for t in _order(len(sizes), not reverse):
            bs, r0 = sizes[t], offs[t]
            r1 = r0 + bs
            dht = dh[:bs] + g_out[r0:r1]
            if wr is not None:
                if dh_all is not None:
                    dh_all[r0:r1] = dht
                dm = dht @ wr
            else:
                dm = dht
            a = acts[r0:r1]
            tc = tcs[r0:r1]
            dcv = dc[:bs]
            da = dg_all[r0:r1]
            if _kernels.lstm_step_backward(a, tc, cprev[r0:r1], dm, dcv, da):  # (one pass)
                xp.matmul(da, w, out=dh[:bs])
                continue
            i, f, g, o = a[:, :hid], a[:, hid:2 * hid], a[:, 2 * hid:3 * hid], a[:, 3 * hid:]
            tmp = tc * tc
            xp.subtract(1.0, tmp, out=tmp)
            tmp *= o
            tmp *= dm
            dcv += tmp
            xp.multiply(dcv, g, out=da[:, :hid])
            xp.multiply(dcv, cprev[r0:r1], out=da[:, hid:2 * hid])
            xp.multiply(dcv, i, out=da[:, 2 * hid:3 * hid])
            xp.multiply(dm, tc, out=da[:, 3 * hid:])
            # activation derivatives: sigmoid' = a - a**2, tanh' = 1 - a**2
            deriv = a * a
            xp.subtract(a, deriv, out=deriv)
            deriv[:, 2 * hid:3 * hid] += 1.0 - g
            da *= deriv
            dcv *= f
            xp.matmul(da, w, out=dh[:bs])
        g_w = dg_all.T @ hprev if need[3] else None
        g_b = dg_all.sum(axis=0) if need[4] and b_hh is not None else None
        g_wr = dh_all.T @ ms if dh_all is not None else None
        return (dg_all if need[0] else None, dh if need[1] else None, dc if need[2] else None,
                g_w, g_b, g_wr, None, None)


class GRUSequence(Op):
    """One direction of a GRU layer over a whole (packed) sequence.

    gh = h_{t-1} W_hh^T + b_hh          (r, z) = sig(xw_t[r, z] + gh[r, z])
    n = tanh(xw_t[n] + r * gh[n])          h_t = (1 - z) * n + z * h_{t-1}
    Outputs (out, h_n): every h_t in packed order, and the final state.

    Backward (through time, t from last to first):
        dh_t = grad_out_t + dh_{t+1}          dn = dh_t (1 - z) (1 - n**2)
        dr = dn * gh[n] * r (1 - r)          dz = dh_t (h_{t-1} - n) z (1 - z)
        grad_xw_t = (dr, dz, dn)          dgh = (dr, dz, dn * r)
        dh_{t-1} = dh_t z + dgh W_hh          grad_W_hh = sum_t dgh^T h_{t-1}
        grad_b_hh = sum_t dgh
    """
    @staticmethod
    def forward(ctx: Any, xw: Any, h0: Any, w_hh: Any, b_hh: Any, sizes: tuple,
                reverse: bool) -> Any:
        xp = ctx.xp
        dt = w_hh.dtype  # the model dtype (linear may hand back float32 for bfloat16)
        wd = _work_dtype(xp, dt)
        need = any(ctx.needs_input_grad)
        xw_w, w, b = _cast(xw, wd), _cast(w_hh, wd), _cast(b_hh, wd)
        wT = w.T
        n, hid = xw.shape[0], h0.shape[1]
        h = _state(h0, wd)
        out = xp.empty((n, hid), dtype=wd)
        if need:
            rz_all = xp.empty((n, 2 * hid), dtype=wd)
            n_all = xp.empty((n, hid), dtype=wd)
            ghn_all = xp.empty((n, hid), dtype=wd)
            hprev = xp.empty_like(out)
        offs = _offsets(sizes)
        for t in _order(len(sizes), reverse):
            bs, r0 = sizes[t], offs[t]
            r1 = r0 + bs
            hp = h[:bs]
            gi = xw_w[r0:r1]
            gh = hp @ wT
            if b is not None:
                gh += b
            rz = rz_all[r0:r1] if need else xp.empty((bs, 2 * hid), dtype=wd)
            nn = n_all[r0:r1] if need else xp.empty((bs, hid), dtype=wd)
            ghn = gh[:, 2 * hid:]
            o = out[r0:r1]
            if not _kernels.gru_step(gi, gh, hp, rz, nn, o):  # (the same operations, one pass)
                xp.add(gi[:, :2 * hid], gh[:, :2 * hid], out=rz)
                _sigmoid_(xp, rz)
                xp.multiply(rz[:, :hid], ghn, out=nn)
                nn += gi[:, 2 * hid:]
                xp.tanh(nn, out=nn)
                xp.subtract(hp, nn, out=o)
                o *= rz[:, hid:]
                o += nn
            if need:
                ghn_all[r0:r1] = ghn
                hprev[r0:r1] = hp
            h[:bs] = o
        if need:
            ctx.save_for_backward(xw, h0, w_hh, b_hh)
            ctx.cache = (rz_all, n_all, ghn_all, hprev)
            ctx.static = (sizes, reverse)
        if wd != dt:
            return out.astype(dt), h.astype(dt)
        return out, h

    @staticmethod
    def backward(ctx: Any, grad_out: Any, grad_hn: Any) -> Any:
        if ctx._tensor_mode:
            return _backward_by_recompute(ctx, "gru", (grad_out, grad_hn))
        xp = ctx.xp
        need = ctx.needs_input_grad
        _, _, w_hh, b_hh = ctx.saved
        rz_all, n_all, ghn_all, hprev = ctx.cache
        sizes, reverse = ctx.static
        wd = n_all.dtype
        hid = n_all.shape[1]
        w = _cast(w_hh, wd)
        dh = _state(grad_hn, wd)
        g_out = _cast(grad_out, wd)
        dgi_all = xp.empty((n_all.shape[0], 3 * hid), dtype=wd)
        dgh_all = xp.empty_like(dgi_all)
        offs = _offsets(sizes)
        for t in _order(len(sizes), not reverse):
            bs, r0 = sizes[t], offs[t]
            r1 = r0 + bs
            dht = dh[:bs] + g_out[r0:r1]
            r, z = rz_all[r0:r1, :hid], rz_all[r0:r1, hid:]
            nn = n_all[r0:r1]
            hp = hprev[r0:r1]
            dgi = dgi_all[r0:r1]
            dgh = dgh_all[r0:r1]
            if _kernels.gru_step_backward(rz_all[r0:r1], nn, ghn_all[r0:r1], hp, dht, dgi, dgh):
                dhp = dgh @ w
                dhp += dht * z
                dh[:bs] = dhp
                continue
            dan = dgi[:, 2 * hid:]
            xp.multiply(nn, nn, out=dan)  # dn * (1 - n**2) with dn = dh (1 - z)
            xp.subtract(1.0, dan, out=dan)
            dan *= 1.0 - z
            dan *= dht
            dz = dgi[:, hid:2 * hid]
            xp.subtract(hp, nn, out=dz)
            dz *= dht
            dz *= z - z * z
            dr = dgi[:, :hid]
            xp.multiply(dan, ghn_all[r0:r1], out=dr)
            dr *= r - r * r
            dgh[:, :2 * hid] = dgi[:, :2 * hid]
            xp.multiply(dan, r, out=dgh[:, 2 * hid:])
            dhp = dgh @ w
            dhp += dht * z
            dh[:bs] = dhp
        g_w = dgh_all.T @ hprev if need[2] else None
        g_b = dgh_all.sum(axis=0) if need[3] and b_hh is not None else None
        return dgi_all if need[0] else None, dh if need[1] else None, g_w, g_b, None, None


# ---------------------------------------------------------------------------------------------
# double backward: recompute the forward from ember ops and differentiate it


def _composite(kind: str, xw: TensorBase, h0: TensorBase, c0: TensorBase | None, w_hh: TensorBase,
               b_hh: TensorBase | None, w_hr: TensorBase | None, sizes: tuple, reverse: bool,
               relu: bool) -> tuple:
    """The fused Ops' forward written with ember ops (records an ordinary graph)."""
    offs = _offsets(sizes)
    batch = h0.shape[0]
    h, c = h0, c0
    outs: list[Any] = [None] * len(sizes)
    w_t = w_hh.t()
    for t in _order(len(sizes), reverse):
        bs, r0 = sizes[t], offs[t]
        x = xw[r0:r0 + bs]
        hp = h[:bs]
        gh = hp @ w_t
        if b_hh is not None:
            gh = gh + b_hh
        if kind == "rnn":
            hn = (x + gh).relu() if relu else (x + gh).tanh()
        elif kind == "lstm":
            i, f, g, o = (x + gh).chunk(4, 1)
            cn = f.sigmoid() * c[:bs] + i.sigmoid() * g.tanh()
            hn = o.sigmoid() * cn.tanh()
            if w_hr is not None:
                hn = hn @ w_hr.t()
            c = _joining.cat([cn, c[bs:]], 0) if bs < batch else cn
        else:
            xr, xz, xn = x.chunk(3, 1)
            hr, hz, hn_ = gh.chunk(3, 1)
            r = (xr + hr).sigmoid()
            z = (xz + hz).sigmoid()
            n = (xn + r * hn_).tanh()
            hn = n + z * (hp - n)
        h = _joining.cat([hn, h[bs:]], 0) if bs < batch else hn
        outs[t] = hn
    out = _joining.cat(outs, 0)
    return (out, h, c) if kind == "lstm" else (out, h)


def _backward_by_recompute(ctx: Any, kind: str, grads: tuple) -> tuple:
    """Gradients as differentiable tensors (create_graph=True): rebuild the forward from ember
    ops on fresh aliases of the saved inputs and differentiate it with create_graph."""
    saved = ctx.saved
    need = ctx.needs_input_grad
    ins = []
    wanted = []
    for k, s in enumerate(saved):
        if s is not None and need[k]:
            a = s.clone()  # a fresh node, so the recomputed graph stops here
            wanted.append((k, a))
            ins.append(a)
        else:
            ins.append(s.detach() if s is not None else None)
    if kind == "lstm":
        xw, h0, c0, w_hh, b_hh, w_hr = ins
        sizes, reverse = ctx.static
        outs = _composite(kind, xw, h0, c0, w_hh, b_hh, w_hr, sizes, reverse, False)
    else:
        xw, h0, w_hh, b_hh = ins
        sizes, reverse = ctx.static[:2]
        relu = ctx.static[2] if kind == "rnn" else False
        outs = _composite(kind, xw, h0, None, w_hh, b_hh, None, sizes, reverse, relu)
    pairs = [(o, g) for o, g in zip(outs, grads) if o.requires_grad and g is not None]
    got = autograd_grad([o for o, _ in pairs], [a for _, a in wanted], [g for _, g in pairs],
                        create_graph=True, allow_unused=True)
    result: list[Any] = [None] * len(need)
    for (k, _), g in zip(wanted, got):
        result[k] = g
    return tuple(result)


# ---------------------------------------------------------------------------------------------
# cells


def rnn_tanh_cell(input: TensorBase, hx: TensorBase, w_ih: TensorBase, w_hh: TensorBase,
                  b_ih: TensorBase | None = None, b_hh: TensorBase | None = None) -> TensorBase:
    """One Elman step: tanh(x W_ih^T + b_ih + h W_hh^T + b_hh) for 2-D x and h."""
    return _rnn_cell("rnn_tanh_cell", False, input, hx, w_ih, w_hh, b_ih, b_hh)


def rnn_relu_cell(input: TensorBase, hx: TensorBase, w_ih: TensorBase, w_hh: TensorBase,
                  b_ih: TensorBase | None = None, b_hh: TensorBase | None = None) -> TensorBase:
    """One Elman step: relu(x W_ih^T + b_ih + h W_hh^T + b_hh) for 2-D x and h."""
    return _rnn_cell("rnn_relu_cell", True, input, hx, w_ih, w_hh, b_ih, b_hh)


def lstm_cell(input: TensorBase, hx: Any, w_ih: TensorBase, w_hh: TensorBase, b_ih: TensorBase | None = None,
              b_hh: TensorBase | None = None) -> tuple[TensorBase, TensorBase]:
    """One LSTM step for 2-D x and hx = (h, c); returns (h', c')."""
    if _amp.active:
        input, hx, w_ih, w_hh, b_ih, b_hh = _amp_cast(  # noqa: A001
            "lstm_cell", input, tuple(hx), w_ih, w_hh, b_ih, b_hh)
    h0, c0 = hx
    _check_cell("lstm_cell", input, [h0, c0], w_ih, w_hh)
    xw = linear(input, w_ih, b_ih)
    _, h, c = LSTMSequence.apply(xw, h0, c0, w_hh, b_hh, None, (input.shape[0],), False)
    return h, c


def gru_cell(input: TensorBase, hx: TensorBase, w_ih: TensorBase, w_hh: TensorBase, b_ih: TensorBase | None = None,
             b_hh: TensorBase | None = None) -> TensorBase:
    """One GRU step for 2-D x and h; returns h'."""
    if _amp.active:
        input, hx, w_ih, w_hh, b_ih, b_hh = _amp_cast(  # noqa: A001
            "gru_cell", input, hx, w_ih, w_hh, b_ih, b_hh)
    _check_cell("gru_cell", input, [hx], w_ih, w_hh)
    xw = linear(input, w_ih, b_ih)
    return GRUSequence.apply(xw, hx, w_hh, b_hh, (input.shape[0],), False)[1]


def _check_cell(name: str, input: TensorBase, hx: list, w_ih: TensorBase, w_hh: TensorBase) -> None:
    if input.ndim != 2:
        raise RuntimeError(
            f"{name}: input must be 2-D (batch, input_size), got shape {tuple(input.shape)}; "
            "unsqueeze(0) a single sample"
        )
    if input.dtype != w_ih.dtype:
        legacy = {"float64": "Double", "float32": "Float", "float16": "Half",
                  "bfloat16": "BFloat16"}
        a, b = (legacy.get(d.name, d.name) for d in (input.dtype, w_ih.dtype))
        raise RuntimeError(
            f"mat1 and mat2 must have the same dtype, but got {a} and {b} ({name}: input "
            f"{input.dtype}, weights {w_ih.dtype}); convert the input, e.g. x.to({w_ih.dtype}), "
            "or the module, e.g. cell.to(x.dtype)"
        )
    if input.shape[1] != w_ih.shape[1]:
        raise RuntimeError(
            f"input has inconsistent input_size: got {input.shape[1]} expected {w_ih.shape[1]} "
            f"({name}: input {tuple(input.shape)}, weight_ih {tuple(w_ih.shape)})"
        )
    for k, h in enumerate(hx):
        if h.ndim != 2:
            raise RuntimeError(
                f"{name}: hidden{k} must be 2-D (batch, hidden_size), got shape {tuple(h.shape)}"
            )
        if h.shape[0] != input.shape[0]:
            raise RuntimeError(
                f"Input batch size {input.shape[0]} doesn't match hidden{k} batch size "
                f"{h.shape[0]} ({name}: input {tuple(input.shape)}, hidden{k} "
                f"{tuple(h.shape)}; pass one state row per input row)"
            )
        if h.dtype != w_hh.dtype:
            raise RuntimeError(
                f"{name}: hidden{k} has dtype {h.dtype} but the weights have {w_hh.dtype}; "
                f"convert the state, e.g. h.to({w_hh.dtype})"
            )
        if h.shape[1] != w_hh.shape[1]:
            raise RuntimeError(
                f"hidden{k} has inconsistent hidden_size: got {h.shape[1]}, expected "
                f"{w_hh.shape[1]} ({name}: hidden{k} {tuple(h.shape)}, weight_hh "
                f"{tuple(w_hh.shape)})"
            )


def _rnn_cell(name: str, relu: bool, input: TensorBase, hx: TensorBase, w_ih: TensorBase, w_hh: TensorBase,
              b_ih: TensorBase | None, b_hh: TensorBase | None) -> TensorBase:
    if _amp.active:
        input, hx, w_ih, w_hh, b_ih, b_hh = _amp_cast(  # noqa: A001
            name, input, hx, w_ih, w_hh, b_ih, b_hh)
    _check_cell(name, input, [hx], w_ih, w_hh)
    xw = linear(input, w_ih, b_ih)
    return RNNSequence.apply(xw, hx, w_hh, b_hh, (input.shape[0],), False, relu)[1]


# ---------------------------------------------------------------------------------------------
# multi-layer, optionally bidirectional networks (torch.lstm / torch.gru / torch.rnn_tanh ...)


def rnn_tanh(input: TensorBase, *args: Any) -> tuple[TensorBase, TensorBase]:
    """Stacked tanh RNN: ``rnn_tanh(input, hx, params, has_biases, num_layers, dropout, train,
    bidirectional, batch_first)`` or ``rnn_tanh(data, batch_sizes, hx, params, ...)``."""
    return _rnn_fn("rnn", False, "rnn_tanh", input, args)


def rnn_relu(input: TensorBase, *args: Any) -> tuple[TensorBase, TensorBase]:
    """Stacked ReLU RNN, with ``rnn_tanh``'s arguments."""
    return _rnn_fn("rnn", True, "rnn_relu", input, args)


def lstm(input: TensorBase, *args: Any) -> tuple[TensorBase, TensorBase, TensorBase]:
    """Stacked LSTM: ``lstm(input, (h0, c0), params, has_biases, num_layers, dropout, train,
    bidirectional, batch_first)`` or ``lstm(data, batch_sizes, (h0, c0), params, ...)``."""
    return _rnn_fn("lstm", False, "lstm", input, args)


def gru(input: TensorBase, *args: Any) -> tuple[TensorBase, TensorBase]:
    """Stacked GRU, with ``rnn_tanh``'s arguments."""
    return _rnn_fn("gru", False, "gru", input, args)


def _run(kind: str, relu: bool, input: TensorBase, batch_sizes: Any, hx: tuple, params: list,
         has_biases: bool, num_layers: int, dropout: float, train: bool, bidirectional: bool,
         batch_first: bool) -> tuple:
    """Run a stacked RNN. ``hx``: (h0,) or (h0, c0), each (num_layers * D, B, *)."""
    if _amp.active:
        name = kind if kind != "rnn" else ("rnn_relu" if relu else "rnn_tanh")
        input, hx, params = _amp_cast(name, input, tuple(hx), list(params))  # noqa: A001
    dirs = 2 if bidirectional else 1
    params = list(params)
    units = num_layers * dirs
    if units == 0 or len(params) % units:
        raise RuntimeError(
            f"{kind}: got {len(params)} parameter tensors for num_layers={num_layers} and "
            f"{dirs} direction(s); expected a multiple of {max(units, 1)}"
        )
    stride = len(params) // units
    base = 4 if has_biases else 2
    proj = kind == "lstm" and stride == base + 1
    if stride != base and not proj:
        raise RuntimeError(
            f"{kind}: got {len(params)} parameter tensors for num_layers={num_layers}, "
            f"{dirs} direction(s) and has_biases={has_biases}; expected {base * units} "
            f"(w_ih, w_hh{', b_ih, b_hh' if has_biases else ''} per layer and direction)"
        )
    if batch_sizes is None:
        if input.ndim != 3:
            raise RuntimeError(
                f"{kind}: input must be 3-D (seq_len, batch, input_size) (batch first when "
                f"batch_first=True), got shape {tuple(input.shape)}"
            )
        x = input.transpose(0, 1) if batch_first else input
        steps, batch = x.shape[0], x.shape[1]
        if steps == 0:
            raise RuntimeError(
                "Expected sequence length to be larger than 0 in RNN (input of shape "
                f"{tuple(input.shape)})"
            )
        sizes = (batch,) * steps
        layer_in = x.reshape(steps * batch, x.shape[2])
    else:
        sizes = tuple(int(s) for s in batch_sizes.tolist())
        layer_in = input
    states = [h.unbind(0) for h in hx]
    h_n: list[TensorBase] = []
    c_n: list[TensorBase] = []
    for layer in range(num_layers):
        outs = []
        for d in range(dirs):
            k = layer * dirs + d
            p = params[k * stride:(k + 1) * stride]
            w_ih, w_hh = p[0], p[1]
            b_ih, b_hh = (p[2], p[3]) if has_biases else (None, None)
            xw = linear(layer_in, w_ih, b_ih)  # every time step in one GEMM
            if kind == "lstm":
                w_hr = p[-1] if proj else None
                out, h, c = LSTMSequence.apply(xw, states[0][k], states[1][k], w_hh, b_hh, w_hr,
                                               sizes, d == 1)
                c_n.append(c)
            elif kind == "gru":
                out, h = GRUSequence.apply(xw, states[0][k], w_hh, b_hh, sizes, d == 1)
            else:
                out, h = RNNSequence.apply(xw, states[0][k], w_hh, b_hh, sizes, d == 1, relu)
            outs.append(out)
            h_n.append(h)
        layer_in = outs[0] if dirs == 1 else _joining.cat(outs, -1)
        if dropout and train and layer < num_layers - 1:
            layer_in = apply_dropout(layer_in, dropout, True)
    output = layer_in
    if batch_sizes is None:
        output = output.reshape(steps, batch, output.shape[-1])
        if batch_first:
            output = output.transpose(0, 1)
    result = (output, _joining.stack(h_n, 0))
    if kind == "lstm":
        result += (_joining.stack(c_n, 0),)
    return result


def _split_args(args: tuple, packed: bool, name: str) -> tuple:
    """(batch_sizes, hx, params, has_biases, num_layers, dropout, train, bidirectional,
    batch_first) from either of PyTorch's two overloads."""
    if packed:
        if len(args) != 8:
            raise TypeError(f"{name}(data, batch_sizes, hx, params, has_biases, num_layers, "
                            f"dropout, train, bidirectional): expected 9 arguments")
        return (*args, False)
    if len(args) != 8:
        raise TypeError(f"{name}(input, hx, params, has_biases, num_layers, dropout, train, "
                        "bidirectional, batch_first): expected 9 arguments")
    return (None, *args)


def _rnn_fn(kind: str, relu: bool, name: str, input: TensorBase, args: tuple) -> tuple:
    # the packed overload has batch_sizes (a Tensor) where the other has hx / params
    packed = isinstance(args[0] if kind == "lstm" else args[1], TensorBase)
    bsz, hx, params, has_b, layers, p, train, bidir, bf = _split_args(args, packed, name)
    hx = tuple(hx) if kind == "lstm" else (hx,)
    return _run(kind, relu, input, bsz, hx, params, has_b, layers, p, train, bidir, bf)
