/* _compile/guards.py in C: a compiled call's guards (arg_key, module_key, guards_hold).
 *
 * Each function follows its Python twin line by line and returns the same values; guards.py
 * says what they are for. Attribute reads go through the normal protocol (Module's _modules,
 * training, _parameters, _buffers; a tensor's _data and _rg), so subclasses behave as in Python.
 */
#include "../_native.h"

static PyObject *tensor_base_type;  /* _tensor_base.TensorBase (guards_init) */
static PyObject *s_data, *s_rg, *s_shape, *s_dtype, *s_modules, *s_training, *s_parameters,
    *s_buffers;

PyObject *ember_guards_init(PyObject *self, PyObject *tensor_base)
{
    (void)self;
    if (!PyType_Check(tensor_base)) {
        PyErr_SetString(PyExc_TypeError, "guards_init() takes the TensorBase class");
        return NULL;
    }
#define INTERN(var, text)                                                                      \
    if (var == NULL && (var = PyUnicode_InternFromString(text)) == NULL)                       \
        return NULL;
    INTERN(s_data, "_data")
    INTERN(s_rg, "_rg")
    INTERN(s_shape, "shape")
    INTERN(s_dtype, "dtype")
    INTERN(s_modules, "_modules")
    INTERN(s_training, "training")
    INTERN(s_parameters, "_parameters")
    INTERN(s_buffers, "_buffers")
#undef INTERN
    Py_INCREF(tensor_base);
    Py_XSETREF(tensor_base_type, tensor_base);
    Py_RETURN_NONE;
}

/* isinstance(x, TensorBase): 1, 0, or -1 on error (the subtype test first; isinstance also
 * believes a __class__ that says so) */
static int is_tensor(PyObject *x)
{
    if (PyObject_TypeCheck(x, (PyTypeObject *)tensor_base_type))
        return 1;
    return PyLong_CheckExact(x) || PyFloat_CheckExact(x) || x == Py_None || PyBool_Check(x)
        ? 0 : PyObject_IsInstance(x, tensor_base_type);
}

/* (type(d), d.shape, d.dtype, x._rg) for d = x._data; new reference */
static PyObject *tensor_part(PyObject *x)
{
    PyObject *d = PyObject_GetAttr(x, s_data);
    if (d == NULL)
        return NULL;
    PyObject *shape = PyObject_GetAttr(d, s_shape);
    PyObject *dtype = shape ? PyObject_GetAttr(d, s_dtype) : NULL;
    PyObject *rg = dtype ? PyObject_GetAttr(x, s_rg) : NULL;
    PyObject *part = rg ? PyTuple_Pack(4, (PyObject *)Py_TYPE(d), shape, dtype, rg) : NULL;
    Py_DECREF(d);
    Py_XDECREF(shape);
    Py_XDECREF(dtype);
    Py_XDECREF(rg);
    return part;
}

/* arg_key(args): guards.py's arg_key */
PyObject *ember_guards_arg_key(PyObject *self, PyObject *args)
{
    (void)self;
    if (tensor_base_type == NULL || !PyTuple_Check(args)) {
        PyErr_SetString(PyExc_TypeError, "arg_key() takes a tuple (after guards_init)");
        return NULL;
    }
    Py_ssize_t n = PyTuple_GET_SIZE(args);
    PyObject *parts = PyTuple_New(n);
    if (parts == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *x = PyTuple_GET_ITEM(args, i), *part;
        int tensor = is_tensor(x);
        if (tensor < 0) {
            Py_DECREF(parts);
            return NULL;
        }
        if (tensor) {
            part = tensor_part(x);
        } else if (Py_IS_TYPE(x, &PyTuple_Type) || Py_IS_TYPE(x, &PyList_Type)
                   || Py_IS_TYPE(x, &PyDict_Type)) {
            Py_DECREF(parts);
            Py_RETURN_NONE;
        } else {
            part = PyTuple_Pack(2, (PyObject *)Py_TYPE(x), x);
        }
        if (part == NULL) {
            Py_DECREF(parts);
            return NULL;
        }
        PyTuple_SET_ITEM(parts, i, part);
    }
    return parts;
}

/* append id(v) for each value of the dict attribute `name` of m to ids; -1 on error */
static int append_ids(PyObject *ids, PyObject *m, PyObject *name)
{
    PyObject *d = PyObject_GetAttr(m, name);
    if (d == NULL)
        return -1;
    int rc = 0;
    if (PyDict_CheckExact(d)) {
        Py_ssize_t pos = 0;
        PyObject *key, *value;
        while (rc == 0 && PyDict_Next(d, &pos, &key, &value)) {
            PyObject *id = PyLong_FromVoidPtr(value);
            rc = id == NULL ? -1 : PyList_Append(ids, id);
            Py_XDECREF(id);
        }
    } else {  /* (an unusual mapping: its values() as Python iterates them) */
        PyObject *values = PyObject_CallMethod(d, "values", NULL);
        PyObject *it = values ? PyObject_GetIter(values) : NULL;
        Py_XDECREF(values);
        if (it == NULL)
            rc = -1;
        PyObject *v;
        while (rc == 0 && (v = PyIter_Next(it)) != NULL) {
            PyObject *id = PyLong_FromVoidPtr(v);
            rc = id == NULL ? -1 : PyList_Append(ids, id);
            Py_XDECREF(id);
            Py_DECREF(v);
        }
        if (rc == 0 && PyErr_Occurred())
            rc = -1;
        Py_XDECREF(it);
    }
    Py_DECREF(d);
    return rc;
}

/* module_key(mods, children, extra): guards.py's module_key */
PyObject *ember_guards_module_key(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    if (nargs != 3 || !PyList_Check(args[0]) || !PyList_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "module_key() takes (mods, children, extra) lists");
        return NULL;
    }
    PyObject *mods = args[0], *children = args[1];
    Py_ssize_t n = PyList_GET_SIZE(mods);
    if (PyList_GET_SIZE(children) < n)
        n = PyList_GET_SIZE(children);  /* (zip's length) */
    PyObject *flags = PyTuple_New(n), *ids = PyList_New(0);
    if (flags == NULL || ids == NULL)
        goto fail;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *m = PyList_GET_ITEM(mods, i);
        PyObject *kids = PyObject_GetAttr(m, s_modules);
        if (kids == NULL)
            goto fail;
        int changed = PyObject_RichCompareBool(kids, PyList_GET_ITEM(children, i), Py_NE);
        Py_DECREF(kids);
        if (changed < 0)
            goto fail;
        if (changed) {
            Py_DECREF(flags);
            Py_DECREF(ids);
            Py_RETURN_NONE;
        }
        PyObject *training = PyObject_GetAttr(m, s_training);
        if (training == NULL)
            goto fail;
        PyTuple_SET_ITEM(flags, i, training);
        if (append_ids(ids, m, s_parameters) < 0 || append_ids(ids, m, s_buffers) < 0)
            goto fail;
    }
    PyObject *it = PyObject_GetIter(args[2]), *v;
    if (it == NULL)
        goto fail;
    while ((v = PyIter_Next(it)) != NULL) {
        PyObject *id = PyLong_FromVoidPtr(v);
        Py_DECREF(v);
        if (id == NULL || PyList_Append(ids, id) < 0) {
            Py_XDECREF(id);
            Py_DECREF(it);
            goto fail;
        }
        Py_DECREF(id);
    }
    Py_DECREF(it);
    if (PyErr_Occurred())
        goto fail;
    PyObject *id_tuple = PyList_AsTuple(ids);
    Py_DECREF(ids);
    if (id_tuple == NULL) {
        Py_DECREF(flags);
        return NULL;
    }
    PyObject *key = PyTuple_Pack(2, flags, id_tuple);
    Py_DECREF(flags);
    Py_DECREF(id_tuple);
    return key;
fail:
    Py_XDECREF(flags);
    Py_XDECREF(ids);
    return NULL;
}

/* 1 when a != b by Python's rule (identity first, as `!=` on the same object of these types) */
static int differs(PyObject *a, PyObject *b)
{
    return a == b ? 0 : PyObject_RichCompareBool(a, b, Py_NE);
}

/* guards_hold(free): guards.py's guards_hold */
PyObject *ember_guards_hold(PyObject *self, PyObject *free)
{
    (void)self;
    PyObject *seq = PySequence_Fast(free, "guards_hold() takes a sequence");
    if (seq == NULL)
        return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    PyObject *result = Py_True;
    for (Py_ssize_t i = 0; i < n && result == Py_True; i++) {
        PyObject *item = PySequence_Fast_GET_ITEM(seq, i);
        if (!PyTuple_Check(item) || PyTuple_GET_SIZE(item) != 6) {
            PyErr_SetString(PyExc_TypeError, "guards_hold(): each entry is "
                            "(tensor, slot, shape, dtype, type, requires_grad)");
            result = NULL;
            break;
        }
        PyObject *t = PyTuple_GET_ITEM(item, 0);
        PyObject *d = PyObject_GetAttr(t, s_data);
        if (d == NULL) {
            result = NULL;
            break;
        }
        int bad = (PyObject *)Py_TYPE(d) != PyTuple_GET_ITEM(item, 4);
        PyObject *v = NULL;
        if (!bad) {
            v = PyObject_GetAttr(d, s_shape);
            bad = v == NULL ? -1 : differs(v, PyTuple_GET_ITEM(item, 2));
            Py_XDECREF(v);
        }
        if (!bad) {
            v = PyObject_GetAttr(d, s_dtype);
            bad = v == NULL ? -1 : differs(v, PyTuple_GET_ITEM(item, 3));
            Py_XDECREF(v);
        }
        Py_DECREF(d);
        if (!bad) {
            v = PyObject_GetAttr(t, s_rg);
            bad = v == NULL ? -1 : differs(v, PyTuple_GET_ITEM(item, 5));
            Py_XDECREF(v);
        }
        if (bad < 0)
            result = NULL;
        else if (bad)
            result = Py_False;
    }
    Py_DECREF(seq);
    if (result == NULL)
        return NULL;
    return Py_NewRef(result);
}
