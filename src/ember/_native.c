/* ember._native: the module object (the C side of ember/_native_core.py).
 *
 * Holds the hashes the build recorded (setup.py passes them as macros), which
 * _native_core.py compares with the files on disk before it lets the extension run, and the
 * method table of the C functions, each defined in the file of the Python module it mirrors.
 */
#include "_native.h"

#ifndef EMBER_NATIVE_C_HASH
#define EMBER_NATIVE_C_HASH "unknown"
#endif
#ifndef EMBER_NATIVE_PY_HASH
#define EMBER_NATIVE_PY_HASH "unknown"
#endif
#ifndef EMBER_NATIVE_BUILT_WITH
#define EMBER_NATIVE_BUILT_WITH "built by an unknown compiler"
#endif

static PyMethodDef native_methods[] = {
    {"tensor_base_init", (PyCFunction)ember_tensor_base_init, METH_O,
     "tensor_base_init(globals): give tensor_make _tensor_base.py's module namespace."},
    {"tensor_make", (PyCFunction)(void (*)(void))ember_tensor_make,
     METH_FASTCALL | METH_KEYWORDS,
     "tensor_make(data, requires_grad=False, grad_fn=None, output_nr=0): "
     "_tensor_base.py's TensorBase._make, in C."},
    {"overrides_init", (PyCFunction)(void (*)(void))ember_overrides_init, METH_FASTCALL,
     "overrides_init(tensor_class, disabled_impl): _overrides.py's register, in C."},
    {"overrides_set_flags", (PyCFunction)ember_overrides_set_flags, METH_O,
     "overrides_set_flags(flags): the C copy of _overrides.flags."},
    {"dispatcher_set_public", (PyCFunction)(void (*)(void))ember_dispatcher_set_public,
     METH_FASTCALL, "dispatcher_set_public(d, public): _overrides.py's set_public, in C."},
    {"fisher_yates", (PyCFunction)(void (*)(void))ember_fisher_yates, METH_FASTCALL,
     "fisher_yates(offsets, out): ops/_mt19937.py's randperm loop, in C."},
    {"function_init", (PyCFunction)ember_function_init, METH_O,
     "function_init(globals): give function_apply function.py's module namespace."},
    {"function_apply", (PyCFunction)(void (*)(void))ember_function_apply,
     METH_FASTCALL | METH_KEYWORDS,
     "function_apply(cls, *args): function.py's Function.apply (_apply_python), in C."},
    {"engine_init", (PyCFunction)ember_engine_init, METH_O,
     "engine_init(globals): give the C walk autograd/engine.py's module namespace."},
    {"dependencies", (PyCFunction)ember_engine_dependencies, METH_O,
     "dependencies(roots): autograd/engine.py's _dependencies_python, in C."},
    {"run_backward", (PyCFunction)(void (*)(void))ember_engine_run_backward,
     METH_FASTCALL | METH_KEYWORDS,
     "run_backward(roots, retain_graph, create_graph, capture=None): autograd/engine.py's "
     "_run_backward_python, in C (with capture: the Python function)."},
    {"backward", (PyCFunction)(void (*)(void))ember_engine_backward,
     METH_FASTCALL | METH_KEYWORDS,
     "backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, "
     "inputs=None): autograd/engine.py's _backward_python, its common call in C."},
    {"walk_nodes", (PyCFunction)(void (*)(void))ember_engine_walk_nodes, METH_FASTCALL,
     "walk_nodes(ready, ready_leaves, buffers, deps, needed, capture, handed_out, "
     "retain_graph, create_graph): autograd/engine.py's _walk_nodes_python, in C."},
    {NULL, NULL, 0, NULL},
};

static int native_exec(PyObject *module)
{
    if (PyModule_AddStringConstant(module, "C_HASH", EMBER_NATIVE_C_HASH) < 0
        || PyModule_AddStringConstant(module, "PY_HASH", EMBER_NATIVE_PY_HASH) < 0
        || PyModule_AddStringConstant(module, "BUILT_WITH", EMBER_NATIVE_BUILT_WITH) < 0)
        return -1;
    if (ember_tensor_base_exec(module) < 0 || ember_overrides_exec(module) < 0
        || ember_function_exec(module) < 0)
        return -1;
    return ember_engine_exec(module);
}

static PyModuleDef_Slot native_slots[] = {
    {Py_mod_exec, native_exec},
    {0, NULL},
};

static struct PyModuleDef native_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "ember._native",
    .m_doc = "ember's optional C core: the hot bookkeeping of a few Python modules, which stay "
             "the reference (see ember/_native_core.py).",
    .m_size = 0,
    .m_methods = native_methods,
    .m_slots = native_slots,
};

PyMODINIT_FUNC PyInit__native(void)
{
    return PyModuleDef_Init(&native_module);
}
