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

/* call_kernel(address, lo, hi, *arrays): a kernel ember.compile generated (its `<name>_arrays`
 * entry, _compile/codegen.py), called as ctypes calls it with argtypes (int64, int64,
 * py_object, ...): each array passed as its object pointer, from which the kernel reads the data
 * pointer. Without ctypes' per-call argument conversions (about 0.8 us a call, for the small
 * tensors of a seed's step as long as the kernel's loop); the GIL stays held (a call split over
 * threads goes through ctypes, which releases it). Up to CALL_KERNEL_MAX arrays. */
#define CALL_KERNEL_MAX 12
typedef void (*kernel_fn)(void);
#define KARGS1 void *
#define KARGS2 KARGS1, void *
#define KARGS3 KARGS2, void *
#define KARGS4 KARGS3, void *
#define KARGS5 KARGS4, void *
#define KARGS6 KARGS5, void *
#define KARGS7 KARGS6, void *
#define KARGS8 KARGS7, void *
#define KARGS9 KARGS8, void *
#define KARGS10 KARGS9, void *
#define KARGS11 KARGS10, void *
#define KARGS12 KARGS11, void *
#define KCALL(n, ...) ((void (*)(int64_t, int64_t, KARGS##n))f)(lo, hi, __VA_ARGS__)

static PyObject *ember_call_kernel(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    if (nargs < 3 || nargs > 3 + CALL_KERNEL_MAX) {
        PyErr_Format(PyExc_TypeError, "call_kernel() takes an address, lo, hi and up to %d "
                     "arrays (%zd arguments given)", CALL_KERNEL_MAX, nargs);
        return NULL;
    }
    kernel_fn f = (kernel_fn)PyLong_AsVoidPtr(args[0]);
    int64_t lo = PyLong_AsLongLong(args[1]), hi = PyLong_AsLongLong(args[2]);
    if (PyErr_Occurred())
        return NULL;
    if (f == NULL) {
        PyErr_SetString(PyExc_ValueError, "call_kernel(): a NULL kernel address");
        return NULL;
    }
    PyObject *const *a = args + 3;
    switch (nargs - 3) {
    case 0: ((void (*)(int64_t, int64_t))f)(lo, hi); break;
    case 1: KCALL(1, a[0]); break;
    case 2: KCALL(2, a[0], a[1]); break;
    case 3: KCALL(3, a[0], a[1], a[2]); break;
    case 4: KCALL(4, a[0], a[1], a[2], a[3]); break;
    case 5: KCALL(5, a[0], a[1], a[2], a[3], a[4]); break;
    case 6: KCALL(6, a[0], a[1], a[2], a[3], a[4], a[5]); break;
    case 7: KCALL(7, a[0], a[1], a[2], a[3], a[4], a[5], a[6]); break;
    case 8: KCALL(8, a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7]); break;
    case 9: KCALL(9, a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8]); break;
    case 10: KCALL(10, a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9]); break;
    case 11: KCALL(11, a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10]);
        break;
    default: KCALL(12, a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10],
                   a[11]);
        break;
    }
    Py_RETURN_NONE;
}

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
    {"accumulator", (PyCFunction)ember_function_accumulator, METH_O,
     "accumulator(leaf): autograd/function.py's _accumulator_python, in C."},
    {"engine_init", (PyCFunction)ember_engine_init, METH_O,
     "engine_init(globals): give the C walk autograd/engine.py's module namespace."},
    {"dependencies", (PyCFunction)ember_engine_dependencies, METH_O,
     "dependencies(roots): autograd/engine.py's _dependencies_python, in C."},
    {"run_backward", (PyCFunction)(void (*)(void))ember_engine_run_backward,
     METH_FASTCALL | METH_KEYWORDS,
     "run_backward(roots, retain_graph, create_graph, capture=None): autograd/engine.py's "
     "_run_backward_python, in C (with capture: the Python function)."},
    {"call_kernel", (PyCFunction)(void (*)(void))ember_call_kernel, METH_FASTCALL,
     "call_kernel(address, lo, hi, *arrays): a kernel ember.compile generated, called as "
     "ctypes calls it, without ctypes' per-call conversions."},
    {"backward", (PyCFunction)(void (*)(void))ember_engine_backward,
     METH_FASTCALL | METH_KEYWORDS,
     "backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, "
     "inputs=None): autograd/engine.py's _backward_python, its common call in C."},
    {"walk_nodes", (PyCFunction)(void (*)(void))ember_engine_walk_nodes, METH_FASTCALL,
     "walk_nodes(ready, ready_leaves, buffers, deps, needed, capture, handed_out, "
     "retain_graph, create_graph): autograd/engine.py's _walk_nodes_python, in C."},
    {"guards_init", (PyCFunction)ember_guards_init, METH_O,
     "guards_init(TensorBase): give the guards _tensor_base.py's tensor class."},
    {"arg_key", (PyCFunction)ember_guards_arg_key, METH_O,
     "arg_key(args): _compile/guards.py's arg_key, in C."},
    {"module_key", (PyCFunction)(void (*)(void))ember_guards_module_key, METH_FASTCALL,
     "module_key(mods, children, extra): _compile/guards.py's module_key, in C."},
    {"guards_hold", (PyCFunction)ember_guards_hold, METH_O,
     "guards_hold(free): _compile/guards.py's guards_hold, in C."},
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
