"""``ember.cuda`` without a GPU answers as CPU-only PyTorch does (parity checks)."""

import warnings

import pytest

import ember

torch = pytest.importorskip("torch")
no_gpu_only = pytest.mark.skipif(ember.cuda.is_available(), reason="checks the no-GPU answers")
gpu_only = pytest.mark.skipif(not ember.cuda.is_available(), reason="needs CuPy and a GPU")


def _outcome(mod, expr):
    """('ok', value) or ('raise', exception types that matter) for ``mod.cuda.<expr>``."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return "ok", eval(f"mod.cuda.{expr}", {"mod": mod})  # noqa: S307
        except AssertionError:
            return "raise", AssertionError
        except TypeError:
            return "raise", TypeError
        except RuntimeError:
            return "raise", RuntimeError


VALUES = ["memory_allocated()", "max_memory_allocated()", "memory_reserved()",
          "max_memory_reserved()", "memory_cached()", "max_memory_cached()", "empty_cache()",
          "manual_seed(1)", "manual_seed_all(1)", "seed()", "seed_all()", "device_count()",
          "is_available()", "is_initialized()", "get_rng_state_all()", "get_arch_list()",
          "set_stream(None)", "is_bf16_supported()", "memory_stats()", "_is_compiled()",
          "list_gpu_processes()", "memory_stats_as_nested_dict()", "host_memory_stats()",
          "host_memory_stats_as_nested_dict()", "has_half", "has_magma", "default_generators",
          "get_gencode_flags()"]
RAISES = ["get_device_properties(0)", "get_device_properties()", "get_device_capability()",
          "get_device_name()", "current_device()", "current_stream()", "default_stream()",
          "synchronize()", "ipc_collect()", "mem_get_info()", "init()", "initial_seed()",
          "get_rng_state()", "Stream()", "Event()", "CUDAGraph()", "FloatTensor(2)",
          "HalfTensor([1.0])", "LongTensor(2)", "profiler.start()",
          "set_per_process_memory_fraction(0.5)", "nvtx.range_push('a')", "nvtx.range_pop()",
          "nvtx.mark('a')", "get_sync_debug_mode()", "set_sync_debug_mode(0)",
          "can_device_access_peer(0, 1)"]


@no_gpu_only
@pytest.mark.parametrize("expr", VALUES)
def test_values_match_cpu_only_pytorch(expr):
    ours, theirs = _outcome(ember, expr), _outcome(torch, expr)
    assert ours[0] == theirs[0] == "ok"
    assert ours[1] == theirs[1]


@no_gpu_only
@pytest.mark.parametrize("expr", RAISES)
def test_errors_match_cpu_only_pytorch(expr):
    ours, theirs = _outcome(ember, expr), _outcome(torch, expr)
    assert theirs[0] == "raise"
    assert ours[0] == "raise" and issubclass(ours[1], theirs[1]) or ours[1] is theirs[1]


@no_gpu_only
def test_no_cuda_error_is_assertion_and_runtime_error():
    with pytest.raises(AssertionError, match="not compiled with CUDA"):
        ember.cuda.current_device()
    with pytest.raises(RuntimeError, match="is_available"):
        ember.cuda.get_device_capability()


@no_gpu_only
def test_context_managers_are_noops_for_cpu_and_none():
    x = ember.zeros(2)
    with ember.cuda.device(-1), ember.cuda.device(None), ember.cuda.device_of(x):
        with ember.cuda.stream(None) as s:
            assert s is None
    assert ember.cuda.device(1).idx == torch.cuda.device(1).idx == 1
    assert ember.cuda.device("cuda:2").idx == 2
    with pytest.raises(RuntimeError), ember.cuda.device(0):
        pass


@no_gpu_only
def test_legacy_cuda_types_isinstance():
    assert not isinstance(ember.zeros(1), ember.cuda.FloatTensor)
    assert ember.cuda.FloatTensor.__name__ == "FloatTensor"


@no_gpu_only
def test_deprecated_resets_warn():
    with pytest.warns(FutureWarning, match="reset_peak_memory_stats"):
        ember.cuda.reset_max_memory_allocated()
    with pytest.warns(FutureWarning):
        ember.cuda.reset_max_memory_cached()
    ember.cuda.reset_peak_memory_stats()
    assert ember.cuda.max_memory_allocated() == 0


@no_gpu_only
def test_submodules_resolve():
    import ember.cuda.amp
    import ember.cuda.memory
    import ember.cuda.random

    assert ember.cuda.memory.memory_allocated() == 0
    assert ember.cuda.random.get_rng_state_all() == []
    assert ember.cuda.amp.autocast is not None
    assert ember.cuda.OutOfMemoryError is ember.OutOfMemoryError
    assert "no CUDA device" in ember.cuda.memory_summary()
    with pytest.raises(AssertionError):
        with ember.cuda.profiler.profile():
            pass


def test_stream_and_graph_names_exist():
    for n in ("Stream", "Event", "stream", "StreamContext", "current_stream", "graph",
              "CUDAGraph", "ExternalStream", "device_of"):
        assert hasattr(ember.cuda, n) and hasattr(torch.cuda, n), n
    assert ember.cuda.streams.Stream is ember.cuda.Stream
    assert ember.cuda.graphs.CUDAGraph is ember.cuda.CUDAGraph
    assert issubclass(ember.cuda.CudaError, RuntimeError)


@no_gpu_only
@pytest.mark.parametrize("fn", ["utilization", "memory_usage", "temperature", "power_draw",
                                "clock_rate", "device_memory_used"])
def test_nvml_queries_raise_module_not_found_like_torch(fn):
    with pytest.raises(ModuleNotFoundError):
        getattr(torch.cuda, fn)()
    with pytest.raises(ModuleNotFoundError, match="nvidia-ml-py"):
        getattr(ember.cuda, fn)()


@gpu_only
def test_gpu_queries_answer_about_the_device():
    props = ember.cuda.get_device_properties(0)
    assert props.total_memory > 0 and props.major >= 3 and props.name
    assert ember.cuda.get_device_capability(0) == (props.major, props.minor)
    assert ember.cuda.get_device_name() == props.name
    assert ember.cuda.current_device() == 0
    free, total = ember.cuda.mem_get_info()
    assert 0 < free <= total


@gpu_only
def test_gpu_memory_counters_follow_allocations():
    ember.cuda.empty_cache()
    before = ember.cuda.memory_allocated()
    x = ember.ones(1024, 1024, device="cuda")
    assert ember.cuda.memory_allocated() >= before + x.nbytes
    assert ember.cuda.max_memory_allocated() >= ember.cuda.memory_allocated()
    assert ember.cuda.memory_reserved() >= ember.cuda.memory_allocated()
    assert ember.cuda.memory_stats()["allocated_bytes.all.current"] > 0
    del x


@gpu_only
def test_gpu_streams_and_events():
    s = ember.cuda.Stream()
    start, end = ember.cuda.Event(enable_timing=True), ember.cuda.Event(enable_timing=True)
    with ember.cuda.stream(s):
        start.record()
        y = ember.ones(256, 256, device="cuda") @ ember.ones(256, 256, device="cuda")
        end.record()
    end.synchronize()
    assert end.query() and start.elapsed_time(end) >= 0
    ember.cuda.current_stream().wait_stream(s)
    ember.cuda.synchronize()
    assert float(y[0, 0]) == 256.0
    assert isinstance(y, ember.cuda.FloatTensor)
    assert ember.cuda.LongTensor([1, 2]).is_cuda
    with ember.cuda.device(0), ember.cuda.device_of(y):
        pass
