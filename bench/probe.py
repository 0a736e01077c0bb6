"""What an engine's process runs on: versions, intra-op threads, and the BLAS libraries loaded
(threadpoolctl). ``python -m bench.probe torch|ember`` prints one JSON line."""

from __future__ import annotations

import json
import os
import sys


def main(argv: list[str] | None = None) -> int:
    engine = (argv if argv is not None else sys.argv[1:] or ["ember"])[0]
    info: dict = {"engine": engine}
    if engine == "torch":
        import torch

        info["version"] = torch.__version__
        info["num_threads"] = torch.get_num_threads()
        info["interop_threads"] = torch.get_num_interop_threads()
        cfg = torch.__config__.show()
        info["blas"] = next((part.split("=", 1)[1] for part in cfg.replace(",", "\n").split()
                             if part.startswith("BLAS_INFO=")), None)
    else:
        import ember

        info["version"] = ember.__version__
    import numpy

    info["numpy"] = numpy.__version__
    # a product big enough that OpenBLAS starts its thread pool
    a = numpy.ones((256, 256), numpy.float32)
    a @ a
    try:
        import threadpoolctl
    except ImportError:
        info["threadpools"] = None
    else:
        info["threadpools"] = [
            {k: p.get(k) for k in ("user_api", "internal_api", "prefix", "version",
                                   "num_threads", "architecture", "threading_layer")}
            for p in threadpoolctl.threadpool_info()
        ]
    info["env"] = {k: os.environ.get(k) for k in (
        "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_CORETYPE",
        "OPENBLAS_L2_SIZE")}
    print(json.dumps(info))
    return 0


if __name__ == "__main__":
    sys.exit(main())
