"""``ember._dynamo.config``: PyTorch's dynamo settings, kept so that scripts can set and read them.

ember compiles nothing (``torch.compile`` runs eagerly, see ``ember/_compile.py``), so no setting
changes what runs. The names and defaults are PyTorch 2.13's; setting or reading a name PyTorch
does not have raises ``AttributeError``, as PyTorch does, so a typo is still caught::

    import torch._dynamo
    torch._dynamo.config.suppress_errors = True
    torch._dynamo.config.cache_size_limit = 64
    with torch._dynamo.config.patch(verbose=True):
        ...
"""

from __future__ import annotations

import contextlib
import copy
import pickle
import sys
import types
from typing import Any

_DEFAULTS: dict[str, Any] = {
    'accumulated_cache_size_limit': 256,
    'accumulated_recompile_limit': 256,
    'allow_empty_graphs': False,
    'allow_ignore_mark_dynamic': False,
    'allow_rnn': False,
    'allow_unspec_int_on_nn_module': False,
    'assume_dunder_attributes_remain_unchanged': True,
    'assume_static_by_default': True,
    'automatic_dynamic_exclusion_guard': False,
    'automatic_dynamic_local_pgo': True,
    'automatic_dynamic_remote_pgo': None,
    'automatic_dynamic_shapes': True,
    'automatic_dynamic_shapes_mark_as': 'dynamic',
    'cache_size_limit': 8,
    'caching_precompile': False,
    'capture_autograd_function': True,
    'capture_dynamic_output_shape_ops': False,
    'capture_func_transforms': True,
    'capture_profiler_record_function': False,
    'capture_scalar_outputs': False,
    'capture_sparse_compute': True,
    'compiled_autograd': False,
    'compiled_autograd_kwargs_override': {},
    'constant_fold_autograd_profiler_enabled': False,
    'cprofile': False,
    'cudagraph_backend_keep_input_mutation': False,
    'cudagraph_backend_support_input_mutation': False,
    'dead_code_elimination': None,
    'debug_backend_override': '',
    'debug_disable_compile_counter': False,
    'debug_dynamo_config_override': '',
    'debug_force_graph_break_on_leaf_return': False,
    'debug_force_nested_calls': False,
    'debug_inductor_config_override': '',
    'disable': False,
    'do_not_emit_runtime_asserts': False,
    'dont_skip_tracing': False,
    'dynamic_shapes': True,
    'dynamo_profiler': False,
    'enable_aot_compile': True,
    'enable_compiler_collectives': False,
    'enable_cpp_framelocals_guard_eval': True,
    'enable_cpp_guard_manager': True,
    'enable_cpp_symbolic_shape_guards': False,
    'enable_dynamo_decompositions': True,
    'enable_faithful_generator_behavior': True,
    'enable_invoke_subgraph_regional_compile': False,
    'enable_p2p_compilation': False,
    'enable_trace_contextlib': True,
    'enable_trace_load_build_class': False,
    'enable_trace_unittest': False,
    'error_on_dynamo_callback_in_fullgraph_compiled_code': False,
    'error_on_nested_fx_trace': True,
    'error_on_nested_jit_trace': True,
    'error_on_recompile': False,
    'fail_on_cache_limit_hit': False,
    'fail_on_recompile_limit_hit': False,
    'fake_tensor_cache_crosscheck_enabled': False,
    'fake_tensor_cache_enabled': True,
    'fake_tensor_disable_inference_mode': True,
    'force_compile_during_fx_trace': False,
    'force_nn_module_property_static_shapes': True,
    'force_parameter_static_shapes': True,
    'force_unspec_int_unbacked_size_like_on_torchrec_kjt': False,
    'generate_pycode': False,
    'graph_break_on_nn_param_ctor': True,
    'graph_deduplication_lint': False,
    'guard_nn_modules': True,
    'guard_nn_modules_using_dict_tags': True,
    'ignore_logger_methods': set(),
    'ignore_logging_functions': set(),
    'inject_BUILD_SET_unimplemented_TESTING_ONLY': False,
    'inline_inbuilt_nn_modules': True,
    'inline_invoke_subgraph': False,
    'inline_single_use_invoke_subgraph': True,
    'inline_torch_dispatch_torch_compile': True,
    'install_free_tensors': False,
    'install_free_tensors_for_export': True,
    'invalidate_compile_context_weakrefs': None,
    'issue_3_13_0_warning': True,
    'leaf_function_check_escaped_gradients': False,
    'leaf_function_validate_outputs': False,
    'log_compilation_metrics': True,
    'log_file_name': None,
    'log_graph_in_out_metadata': False,
    'max_saved_pointers_for_recursive_dict_tags_check': 256,
    'minimum_call_count': 1,
    'nested_graph_breaks': False,
    'nontraceable_tensor_subclasses': set(),
    'numpy_default_complex': 'complex128',
    'numpy_default_float': 'float64',
    'numpy_default_int': 'int64',
    'only_allow_pt2_compliant_ops': False,
    'optimize_ddp': True,
    'optimize_ddp_lazy_compile': False,
    'prefer_deferred_runtime_asserts_over_guards': False,
    'prepare_freezing': False,
    'pt2_compile_id_prefix': None,
    'raise_on_ctx_manager_usage': True,
    'raise_on_unsafe_aot_autograd': False,
    'recompile_limit': 8,
    'record_compile_time_instruction_count': False,
    'record_runtime_overhead': True,
    'reorderable_logging_functions': set(),
    'replay_record_enabled': False,
    'replay_side_effects': True,
    'report_guard_failures': True,
    'repro_after': None,
    'repro_forward_only': False,
    'repro_ignore_non_fp': False,
    'repro_level': 2,
    'repro_tolerance': 0.001,
    'rewrite_assert_with_torch_assert': True,
    'run_gc_after_compile': True,
    'same_two_models_use_fp64': True,
    'side_effect_replay_policy': 'info',
    'skip_code_recursive_on_cache_limit_hit': True,
    'skip_code_recursive_on_recompile_limit_hit': True,
    'skip_fsdp_guards': True,
    'skip_fwd_side_effects_in_bwd_under_checkpoint': False,
    'skip_guards_on_constant_func_defaults': False,
    'skip_nnmodule_hook_guards': True,
    'skip_no_tensor_aliasing_guards_on_parameters': True,
    'skip_tensor_guards_with_matching_dict_tags': True,
    'skip_torchrec': True,
    'skipfiles_inline_module_allowlist': {},
    'specialize_float': False,
    'specialize_int': False,
    'strict_precompile': False,
    'suppress_errors': False,
    'trace_autograd_ops': False,
    'trace_numpy': True,
    'traceable_tensor_subclasses': set(),
    'track_nodes_for_deduplication': False,
    'use_graph_deduplication': False,
    'use_lamba_guard_for_object_aliasing': True,
    'use_lazy_graph_module': True,
    'use_numpy_random_stream': False,
    'use_recursive_dict_tags_for_guards': False,
    'verbose': False,
    'verify_correctness': False,
    'wrap_top_frame': False,    'allowed_functions_module_string_ignorelist': set(),
    'base_dir': '',
    'debug_dir_root': '',
}

_values: dict[str, Any] = copy.deepcopy(_DEFAULTS)


class _Patch(contextlib.ContextDecorator):
    """``config.patch(...)``: set values inside a ``with`` block or a decorated call."""

    def __init__(self, module: _ConfigModule, changes: dict[str, Any]) -> None:
        for name in changes:
            module._check(name)
        self._module = module
        self._changes = changes
        self._saved: list[dict[str, Any]] = []

    def __enter__(self) -> _Patch:
        self._saved.append({k: _values[k] for k in self._changes})
        _values.update(self._changes)
        return self

    def __exit__(self, *exc: object) -> None:
        _values.update(self._saved.pop())


class _ConfigModule(types.ModuleType):
    """The module type of ``ember._dynamo.config``: attribute reads and writes go to the table."""

    def _check(self, name: str) -> None:
        if name not in _values:
            raise AttributeError(f"torch._dynamo.config.{name} does not exist")

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        self._check(name)
        return _values[name]

    def __setattr__(self, name: str, value: Any) -> None:
        if name.startswith("__") or name in self.__dict__:
            super().__setattr__(name, value)
            return
        self._check(name)
        _values[name] = value

    def __delattr__(self, name: str) -> None:
        self._check(name)
        _values[name] = copy.deepcopy(_DEFAULTS[name])

    def __dir__(self) -> list[str]:
        return sorted(set(super().__dir__()) | set(_values))

    def patch(self, arg1: str | dict[str, Any] | None = None, arg2: Any = None,
              **kwargs: Any) -> _Patch:
        """Set values for a ``with`` block or a decorated function: ``patch(name, value)``,
        ``patch({name: value})`` or ``patch(name=value)``."""
        if isinstance(arg1, str):
            changes = {arg1: arg2}
        elif isinstance(arg1, dict):
            changes = dict(arg1)
        elif arg1 is None:
            changes = {}
        else:
            raise TypeError(f"config.patch: expected a name, a dict or keyword arguments, got "
                            f"{type(arg1).__name__}")
        changes.update(kwargs)
        return _Patch(self, changes)

    def get_config_copy(self) -> dict[str, Any]:
        """A copy of every setting, by name."""
        return copy.deepcopy(_values)

    def save_config(self) -> bytes:
        """The settings, pickled (for ``load_config``)."""
        return pickle.dumps(_values)

    def load_config(self, maybe_pickled_config: bytes | dict[str, Any]) -> None:
        """Restore settings saved by ``save_config`` (or given as a dict)."""
        cfg = maybe_pickled_config
        if not isinstance(cfg, dict):
            cfg = pickle.loads(cfg)
        for name, value in cfg.items():
            if name in _values:
                _values[name] = value

    def to_dict(self) -> dict[str, Any]:
        return self.get_config_copy()

    def _reset(self) -> None:
        """Back to PyTorch's defaults (tests use it)."""
        _values.clear()
        _values.update(copy.deepcopy(_DEFAULTS))



sys.modules[__name__].__class__ = _ConfigModule
