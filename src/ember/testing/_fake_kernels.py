"""Fake CUDA's ``ElementwiseKernel``: CuPy's user-defined elementwise kernel, run on the host.

``torch.compile`` emits a CUDA program's fused groups as CuPy ``ElementwiseKernel`` source
(``ember._compile.cudagen``). Under fake CUDA (``_fake_cuda.py``) this class stands in for
CuPy's: it takes the same arguments, applies CuPy's rules for calling one (typed parameters
whose arrays must have that dtype, inputs broadcast to the outputs' shape, outputs made when not
given) and compiles the same operation text as C with the system compiler, one loop over the
elements, so the tests check the emitted kernels' values without a GPU. The preamble's
``__device__`` functions become static C functions; the CUDA intrinsics the emitted code uses
(``__int_as_float``) are defined here. NVRTC's options are recorded, not applied: C is built
with ``-ffp-contract=off`` (cc.py), which is what ``--fmad=false`` asks of NVRTC.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import _backend

_CTYPE = {"float32": "float", "float64": "double", "bool": "bool"}

_HEADER = """\
#include <math.h>
#include <stdint.h>
#include <string.h>
#include <stdbool.h>
#define __device__ static
static inline float __int_as_float(int32_t i) { float f; memcpy(&f, &i, 4); return f; }
"""


def _params(spec: str) -> list[tuple[np.dtype, str]]:
    out = []
    for part in filter(None, (p.strip() for p in spec.split(","))):
        words = part.split()
        if len(words) != 2 or words[0] not in _CTYPE:
            raise TypeError(f"fake CUDA's ElementwiseKernel: unsupported parameter {part!r} "
                            f"(it takes '<{'|'.join(_CTYPE)}> <name>')")
        out.append((np.dtype(words[0]), words[1]))
    return out


class ElementwiseKernel:
    """``cupy.ElementwiseKernel(in_params, out_params, operation, name, preamble=, options=)``
    for fake CUDA (see the module's docstring)."""

    def __init__(self, in_params: str, out_params: str, operation: str, name: str = "kernel",
                 reduce_dims: bool = True, preamble: str = "", no_return: bool = False,
                 return_tuple: bool = False, options: tuple = (), **kwargs: Any) -> None:
        self.ins, self.outs = _params(in_params), _params(out_params)
        self.operation, self.name, self.preamble = operation, name, preamble
        self.options = tuple(options)
        self.no_return, self.return_tuple = no_return, return_tuple
        self._fn: Any = None

    def source(self) -> str:
        """The C this kernel runs as."""
        params = ["int64_t n"]
        params += [f"const {_CTYPE[dt.name]} *p_{nm}" for dt, nm in self.ins]
        params += [f"{_CTYPE[dt.name]} *p_{nm}" for dt, nm in self.outs]
        loads = "".join(f"        const {_CTYPE[dt.name]} {nm} = p_{nm}[i];\n"
                        for dt, nm in self.ins)
        decls = "".join(f"        {_CTYPE[dt.name]} {nm};\n" for dt, nm in self.outs)
        stores = "".join(f"        p_{nm}[i] = {nm};\n" for _dt, nm in self.outs)
        body = "\n".join("        " + line for line in self.operation.splitlines())
        return (f"{_HEADER}{self.preamble}\nvoid {self.name}({', '.join(params)})\n{{\n"
                f"    for (int64_t i = 0; i < n; i++) {{\n{loads}{decls}        {{\n{body}\n"
                f"        }}\n{stores}    }}\n}}\n")

    def _compiled(self) -> Any:
        if self._fn is None:
            import ctypes

            from .._compile import cc

            lib = cc.build(self.source())
            if lib is None:
                raise RuntimeError("fake CUDA's ElementwiseKernel needs a C compiler")
            fn = getattr(lib, self.name)
            fn.argtypes = [ctypes.c_int64] + [ctypes.c_void_p] * (len(self.ins) + len(self.outs))
            fn.restype = None
            self._fn = fn
        return self._fn

    def __call__(self, *args: Any) -> Any:
        n_in = len(self.ins)
        if len(args) not in (n_in, n_in + len(self.outs)):
            raise TypeError(f"{self.name} takes {n_in} or {n_in + len(self.outs)} arguments "
                            f"({len(args)} given)")
        arrays = list(args)
        for a, (dt, nm) in zip(arrays, self.ins + self.outs):
            if not isinstance(a, _backend.FakeCudaArray):
                raise TypeError(f"{self.name}: argument {nm} is not a CUDA array ({type(a)})")
            if a.dtype != dt:
                raise TypeError(f"{self.name}: argument {nm} is {a.dtype}, the kernel takes {dt}")
        shape = np.broadcast_shapes(*(a.shape for a in arrays))
        outs = arrays[n_in:]
        if not outs:
            outs = [np.empty(shape, dt).view(_backend.FakeCudaArray) for dt, _ in self.outs]
        for o in outs:
            if o.shape != shape:
                raise ValueError(f"{self.name}: output of shape {o.shape}, the broadcast shape "
                                 f"is {shape}")
        ins = [np.ascontiguousarray(np.broadcast_to(np.asarray(a), shape)) for a in arrays[:n_in]]
        tmp = [o if o.flags.c_contiguous else np.empty(shape, o.dtype) for o in outs]
        self._compiled()(int(np.prod(shape)), *(a.ctypes.data for a in ins + tmp))
        for o, t in zip(outs, tmp):
            if t is not o:
                o[...] = t
        if self.no_return:
            return None
        if len(outs) == 1 and not self.return_tuple:
            return outs[0]
        return tuple(outs)
