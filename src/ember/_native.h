/* ember._native: the optional C core (docs/design.md, "The native core").
 *
 * One .c file per Python module it mirrors; this header declares what the module's init
 * (_native.c) needs from them. Every C function names the Python function it implements, and
 * that Python function stays the reference: the C code calls back into it for every rare branch.
 *
 * Reference ownership, as in CPython: "new" = the caller owns the returned reference and must
 * Py_DECREF it; "borrowed" = it does not.
 */
#ifndef EMBER_NATIVE_H
#define EMBER_NATIVE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* _native_tensor_base.c (mirrors _tensor_base.py) */
int ember_tensor_base_exec(PyObject *module);
PyObject *ember_tensor_base_init(PyObject *self, PyObject *globals);
PyObject *ember_tensor_make(PyObject *self, PyObject *const *args, size_t nargsf,
                            PyObject *kwnames);

/* _native_overrides.c (mirrors _overrides.py) */
int ember_overrides_exec(PyObject *module);
PyObject *ember_overrides_init(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *ember_overrides_set_flags(PyObject *self, PyObject *arg);
PyObject *ember_dispatcher_set_public(PyObject *self, PyObject *const *args, Py_ssize_t nargs);

/* _native_random.c (mirrors ops/_mt19937.py) */
PyObject *ember_fisher_yates(PyObject *self, PyObject *const *args, Py_ssize_t nargs);

/* autograd/_native_function.c (mirrors autograd/function.py) */
int ember_function_exec(PyObject *module);
PyObject *ember_function_init(PyObject *self, PyObject *globals);
PyObject *ember_function_apply(PyObject *self, PyObject *const *args, size_t nargsf,
                               PyObject *kwnames);

/* autograd/_native_engine.c (mirrors autograd/engine.py) */
int ember_engine_exec(PyObject *module);
PyObject *ember_engine_init(PyObject *self, PyObject *globals);
PyObject *ember_engine_dependencies(PyObject *self, PyObject *roots);
PyObject *ember_engine_run_backward(PyObject *self, PyObject *const *args, size_t nargsf,
                                    PyObject *kwnames);
PyObject *ember_engine_walk_nodes(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *ember_function_accumulator(PyObject *self, PyObject *leaf);
PyObject *ember_engine_backward(PyObject *self, PyObject *const *args, size_t nargsf,
                                PyObject *kwnames);

/* _compile/_native_guards.c (mirrors _compile/guards.py) */
PyObject *ember_guards_init(PyObject *self, PyObject *tensor_base);
PyObject *ember_guards_arg_key(PyObject *self, PyObject *args);
PyObject *ember_guards_module_key(PyObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *ember_guards_hold(PyObject *self, PyObject *free);

#endif
