/* TensorBase._make in C: mirrors src/ember/_tensor_base.py.
 *
 * tensor_make() is _tensor_base.py's TensorBase._make for its common call: a NumPy array (the
 * exact CPU_ARRAY type) wrapped in a new instance of the registered tensor class, with its four
 * slots set, while compile's tracer is not watching (_on_make is None); a NumPy scalar (what a
 * ufunc returns for 0-d arrays) becomes a 0-d array first, as there. Every other call (other array
 * types, keyword arguments, a tracer) goes to the Python function, kept as
 * _tensor_base._make_python, so the rules are spelled once and the tracer sees the frames it
 * expects.
 */
#include "_native.h"
#include <structmember.h>

static PyObject *tb_globals = NULL;       /* _tensor_base.py's namespace (strong) */
static PyTypeObject *tensor_base = NULL;  /* TensorBase (strong) */
/* byte offsets of TensorBase's slots, read from its member descriptors */
static Py_ssize_t off_data, off_rg, off_grad_fn, off_output_nr;
static PyObject *s_on_make, *s_cpu_array, *s_tensor_class, *s_make_python, *zero;
static PyObject *np_generic = NULL, *np_asarray = NULL;  /* np.generic, np.asarray (strong) */

int ember_tensor_base_exec(PyObject *module)
{
    (void)module;
#define INTERN(var, text) \
    if (var == NULL && (var = PyUnicode_InternFromString(text)) == NULL) return -1
    INTERN(s_on_make, "_on_make");
    INTERN(s_cpu_array, "CPU_ARRAY");
    INTERN(s_tensor_class, "_tensor_class");
    INTERN(s_make_python, "_make_python");
#undef INTERN
    if (zero == NULL && (zero = PyLong_FromLong(0)) == NULL)
        return -1;
    return 0;
}

/* The offset of slot `name` of `type` (a T_OBJECT_EX member descriptor), or -1 with an error. */
static Py_ssize_t slot_offset(PyTypeObject *type, const char *name)
{
    PyObject *descr = PyDict_GetItemString(type->tp_dict, name);  /* borrowed */
    if (descr == NULL || !Py_IS_TYPE(descr, &PyMemberDescr_Type)) {
        PyErr_Format(PyExc_TypeError, "ember._native: TensorBase.%s is not a slot", name);
        return -1;
    }
    PyMemberDef *m = ((PyMemberDescrObject *)descr)->d_member;
    if (m->type != T_OBJECT_EX || (m->flags & READONLY)) {
        PyErr_Format(PyExc_TypeError, "ember._native: TensorBase.%s is not a writable slot", name);
        return -1;
    }
    return m->offset;
}

/* tensor_base_init(globals): _tensor_base.py hands over its namespace when it loads. */
PyObject *ember_tensor_base_init(PyObject *self, PyObject *globals)
{
    (void)self;
    if (!PyDict_Check(globals)) {
        PyErr_SetString(PyExc_TypeError, "tensor_base_init() expects _tensor_base.py's globals()");
        return NULL;
    }
    PyObject *tb = PyDict_GetItemString(globals, "TensorBase");  /* borrowed */
    if (tb == NULL || !PyType_Check(tb)) {
        PyErr_SetString(PyExc_TypeError, "tensor_base_init(): no TensorBase class");
        return NULL;
    }
    PyTypeObject *type = (PyTypeObject *)tb;
    Py_ssize_t d = slot_offset(type, "_data"), r = slot_offset(type, "_rg");
    Py_ssize_t g = slot_offset(type, "_grad_fn"), o = slot_offset(type, "_output_nr");
    if (d < 0 || r < 0 || g < 0 || o < 0)
        return NULL;
    off_data = d, off_rg = r, off_grad_fn = g, off_output_nr = o;
    PyObject *np = PyDict_GetItemString(globals, "np");  /* borrowed */
    PyObject *generic = np ? PyObject_GetAttrString(np, "generic") : NULL;
    PyObject *asarray = generic ? PyObject_GetAttrString(np, "asarray") : NULL;
    if (asarray == NULL) {
        Py_XDECREF(generic);
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_TypeError, "tensor_base_init(): no numpy as np");
        return NULL;
    }
    Py_XSETREF(np_generic, generic);
    Py_XSETREF(np_asarray, asarray);
    Py_INCREF(type);
    Py_XSETREF(tensor_base, type);
    Py_INCREF(globals);
    Py_XSETREF(tb_globals, globals);
    Py_RETURN_NONE;
}

static inline void set_slot(PyObject *obj, Py_ssize_t offset, PyObject *value)
{
    /* a fresh object's slot is NULL: store a new reference, nothing to release */
    Py_INCREF(value);
    *(PyObject **)((char *)obj + offset) = value;
}

/* TensorBase._make(data, requires_grad=False, grad_fn=None, output_nr=0): new reference. */
PyObject *ember_tensor_make(PyObject *self, PyObject *const *args, size_t nargsf,
                            PyObject *kwnames)
{
    (void)self;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (tb_globals == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "ember._native: tensor_base_init() was not called");
        return NULL;
    }
    PyObject *on_make = PyDict_GetItemWithError(tb_globals, s_on_make);      /* borrowed */
    PyObject *cpu = on_make ? PyDict_GetItemWithError(tb_globals, s_cpu_array) : NULL;
    PyObject *cls = cpu ? PyDict_GetItemWithError(tb_globals, s_tensor_class) : NULL;
    if (cls == NULL && PyErr_Occurred())
        return NULL;
    PyObject *data = nargs >= 1 ? args[0] : NULL;
    int scalar = data != NULL && (PyObject *)Py_TYPE(data) != cpu
                 && PyObject_TypeCheck(data, (PyTypeObject *)np_generic);
    if (kwnames != NULL || nargs < 1 || nargs > 4 || cls == NULL || on_make != Py_None
        || ((PyObject *)Py_TYPE(data) != cpu && !scalar) || !PyType_Check(cls)
        || !PyType_IsSubtype((PyTypeObject *)cls, tensor_base)) {
        /* every other case: _tensor_base.py's own _make */
        PyObject *py = PyDict_GetItemWithError(tb_globals, s_make_python);
        if (py == NULL) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_RuntimeError, "ember._native: no _make_python");
            return NULL;
        }
        return PyObject_Vectorcall(py, args, nargsf, kwnames);
    }
    /* if isinstance(data, np.generic): data = np.asarray(data) */
    if (scalar) {
        data = PyObject_CallOneArg(np_asarray, data);  /* new */
        if (data == NULL)
            return NULL;
    } else {
        Py_INCREF(data);
    }
    /* t = object.__new__(_tensor_class) */
    PyTypeObject *type = (PyTypeObject *)cls;
    PyObject *t = type->tp_alloc(type, 0);  /* new */
    if (t == NULL) {
        Py_DECREF(data);
        return NULL;
    }
    set_slot(t, off_data, data);
    Py_DECREF(data);
    set_slot(t, off_rg, nargs > 1 ? args[1] : Py_False);
    set_slot(t, off_grad_fn, nargs > 2 ? args[2] : Py_None);
    set_slot(t, off_output_nr, nargs > 3 ? args[3] : zero);
    return t;
}
