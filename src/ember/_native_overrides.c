/* The __torch_function__ dispatcher in C: mirrors src/ember/_overrides.py.
 *
 * A `dispatcher` wraps one public function (torch.add, Tensor.add, F.relu). Called, it looks at
 * its arguments' types: when none asks for dispatch (no Tensor subclass, no class with its own
 * __torch_function__) and no mode or DisableTorchFunction* block is active, it calls the wrapped
 * function straight through with the same vector of arguments; that is every call of a program
 * on plain tensors, and the check is a type comparison per argument. Otherwise it calls
 * _overrides.py's dispatch(public, impl, args, kwargs), the one spelling of PyTorch's rules.
 *
 * Like a Python function it binds as a method (tp_descr_get) and has Py_TPFLAGS_METHOD_DESCRIPTOR,
 * so `t.add(u)` and `t + u` call it with self first and no bound method is made. Its __name__,
 * __doc__, __wrapped__... live in an instance __dict__ (functools.update_wrapper fills it).
 */
#include "_native.h"
#include <structmember.h>

typedef struct {
    PyObject_HEAD
    PyObject *impl;      /* the wrapped function (strong) */
    PyObject *slow;      /* _overrides.dispatch (strong) */
    PyObject *pub;       /* what __torch_function__ receives as func (strong; may be self) */
    PyObject *dict;      /* __name__, __doc__, __wrapped__, ... */
    vectorcallfunc vectorcall;
} Dispatcher;

static int flags = 0;                       /* _overrides.flags */
static PyTypeObject *tensor_type = NULL;    /* Tensor (strong) */
static PyObject *disabled_impl = NULL;      /* _overrides.disabled_torch_function_impl (strong) */
static PyObject *s_torch_function = NULL;
enum { MODES = 1, SUBCLASS_DISABLED = 2, ALL_DISABLED = 4 };

int ember_overrides_exec(PyObject *module);

/* _overrides.asks(t) without the cache: whether arguments of type t take part in dispatch. */
static inline int type_asks(PyTypeObject *t)
{
    if (t == tensor_type || t == &PyFloat_Type || t == &PyLong_Type || t == &PyBool_Type
        || t == Py_TYPE(Py_None) || t == &PyUnicode_Type)
        return 0;
    PyObject *tf = _PyType_Lookup(t, s_torch_function);  /* borrowed; CPython's type cache */
    return tf != NULL && tf != disabled_impl;
}

/* _overrides._arg_asks(a): a list/tuple argument is looked into one level, as PyTorch's
 * TensorList arguments are. */
static int arg_asks(PyObject *a)
{
    PyTypeObject *t = Py_TYPE(a);
    if (t == tensor_type || t == &PyFloat_Type || t == &PyLong_Type || t == Py_TYPE(Py_None))
        return 0;
    if (PyTuple_Check(a) || PyList_Check(a)) {
        Py_ssize_t n = PySequence_Fast_GET_SIZE(a);
        PyObject **items = PySequence_Fast_ITEMS(a);
        for (Py_ssize_t i = 0; i < n; i++)
            if (type_asks(Py_TYPE(items[i])))
                return 1;
        return 0;
    }
    return type_asks(t);
}

/* The slow path: dispatch(public, impl, args_tuple, kwargs_dict), new reference. */
static PyObject *call_slow(Dispatcher *d, PyObject *const *args, Py_ssize_t nargs,
                           PyObject *kwnames)
{
    PyObject *tuple = PyTuple_New(nargs);
    if (tuple == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < nargs; i++) {
        Py_INCREF(args[i]);
        PyTuple_SET_ITEM(tuple, i, args[i]);
    }
    PyObject *kwargs = PyDict_New();
    if (kwargs == NULL) {
        Py_DECREF(tuple);
        return NULL;
    }
    Py_ssize_t nk = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    for (Py_ssize_t i = 0; i < nk; i++) {
        if (PyDict_SetItem(kwargs, PyTuple_GET_ITEM(kwnames, i), args[nargs + i]) < 0) {
            Py_DECREF(tuple);
            Py_DECREF(kwargs);
            return NULL;
        }
    }
    PyObject *pub = d->pub ? d->pub : (PyObject *)d;
    PyObject *call[4] = {pub, d->impl, tuple, kwargs};
    PyObject *ret = PyObject_Vectorcall(d->slow, call, 4, NULL);
    Py_DECREF(tuple);
    Py_DECREF(kwargs);
    return ret;
}

/* The dispatcher's call (_overrides.dispatcher's inner function d). */
static PyObject *dispatcher_vectorcall(PyObject *self, PyObject *const *args, size_t nargsf,
                                       PyObject *kwnames)
{
    Dispatcher *d = (Dispatcher *)self;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (flags == 0) {
        Py_ssize_t total = nargs + (kwnames ? PyTuple_GET_SIZE(kwnames) : 0);
        for (Py_ssize_t i = 0; i < total; i++) {
            if (arg_asks(args[i]))
                return call_slow(d, args, nargs, kwnames);
        }
    } else if (flags != SUBCLASS_DISABLED) {
        return call_slow(d, args, nargs, kwnames);
    }
    return PyObject_Vectorcall(d->impl, args, nargsf, kwnames);
}

static PyObject *dispatcher_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    PyObject *impl, *slow;
    if (kwargs != NULL && PyDict_GET_SIZE(kwargs)) {
        PyErr_SetString(PyExc_TypeError, "dispatcher() takes no keyword arguments");
        return NULL;
    }
    if (!PyArg_UnpackTuple(args, "dispatcher", 2, 2, &impl, &slow))
        return NULL;
    if (!PyCallable_Check(impl) || !PyCallable_Check(slow)) {
        PyErr_SetString(PyExc_TypeError, "dispatcher(impl, dispatch): both must be callable");
        return NULL;
    }
    Dispatcher *d = (Dispatcher *)type->tp_alloc(type, 0);
    if (d == NULL)
        return NULL;
    Py_INCREF(impl);
    d->impl = impl;
    Py_INCREF(slow);
    d->slow = slow;
    d->pub = NULL;  /* self until set_public */
    d->vectorcall = dispatcher_vectorcall;
    return (PyObject *)d;
}

static int dispatcher_traverse(Dispatcher *d, visitproc visit, void *arg)
{
    Py_VISIT(d->impl);
    Py_VISIT(d->slow);
    Py_VISIT(d->pub);
    Py_VISIT(d->dict);
    return 0;
}

static int dispatcher_clear(Dispatcher *d)
{
    Py_CLEAR(d->impl);
    Py_CLEAR(d->slow);
    Py_CLEAR(d->pub);
    Py_CLEAR(d->dict);
    return 0;
}

static void dispatcher_dealloc(Dispatcher *d)
{
    PyObject_GC_UnTrack(d);
    dispatcher_clear(d);
    Py_TYPE(d)->tp_free((PyObject *)d);
}

/* Binds as a Python function does: Tensor.add is the dispatcher, t.add a bound method. */
static PyObject *dispatcher_get(PyObject *self, PyObject *obj, PyObject *type)
{
    (void)type;
    if (obj == NULL || obj == Py_None) {
        Py_INCREF(self);
        return self;
    }
    return PyMethod_New(self, obj);
}

static PyObject *dispatcher_repr(Dispatcher *d)
{
    return PyObject_Repr(d->impl);
}

/* __torch_function_public__: the func handed to __torch_function__ */
static PyObject *dispatcher_get_public(Dispatcher *d, void *closure)
{
    (void)closure;
    PyObject *pub = d->pub ? d->pub : (PyObject *)d;
    Py_INCREF(pub);
    return pub;
}

static int dispatcher_set_public_attr(Dispatcher *d, PyObject *value, void *closure)
{
    (void)closure;
    if (value == NULL) {
        PyErr_SetString(PyExc_AttributeError, "cannot delete __torch_function_public__");
        return -1;
    }
    if (value == (PyObject *)d) {  /* itself: no reference cycle to keep */
        Py_CLEAR(d->pub);
        return 0;
    }
    Py_INCREF(value);
    Py_XSETREF(d->pub, value);
    return 0;
}

static PyObject *dispatcher_reduce(Dispatcher *d, PyObject *unused)
{
    /* pickles by name, as a function does: module.qualname */
    (void)unused;
    return PyObject_GetAttrString((PyObject *)d, "__qualname__");
}

static PyMethodDef dispatcher_methods[] = {
    {"__reduce__", (PyCFunction)dispatcher_reduce, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef dispatcher_getset[] = {
    {"__dict__", PyObject_GenericGetDict, PyObject_GenericSetDict, NULL, NULL},
    {"__torch_function_public__", (getter)dispatcher_get_public,
     (setter)dispatcher_set_public_attr, NULL, NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject DispatcherType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "ember._native.dispatcher",
    .tp_doc = "dispatcher(impl, dispatch): _overrides.py's dispatcher(impl), in C.",
    .tp_basicsize = sizeof(Dispatcher),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL
                | Py_TPFLAGS_METHOD_DESCRIPTOR,
    .tp_new = dispatcher_new,
    .tp_dealloc = (destructor)dispatcher_dealloc,
    .tp_traverse = (traverseproc)dispatcher_traverse,
    .tp_clear = (inquiry)dispatcher_clear,
    .tp_call = PyVectorcall_Call,
    .tp_vectorcall_offset = offsetof(Dispatcher, vectorcall),
    .tp_descr_get = dispatcher_get,
    .tp_repr = (reprfunc)dispatcher_repr,
    .tp_dictoffset = offsetof(Dispatcher, dict),
    .tp_getset = dispatcher_getset,
    .tp_methods = dispatcher_methods,
};

/* overrides_init(tensor_class, disabled_impl): _overrides.register hands over Tensor. */
PyObject *ember_overrides_init(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    if (nargs != 2 || !PyType_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError, "overrides_init(tensor_class, disabled_impl)");
        return NULL;
    }
    Py_INCREF(args[0]);
    Py_XSETREF(tensor_type, (PyTypeObject *)args[0]);
    Py_INCREF(args[1]);
    Py_XSETREF(disabled_impl, args[1]);
    Py_RETURN_NONE;
}

/* overrides_set_flags(flags): _overrides._update_flags keeps this copy of its flags. */
PyObject *ember_overrides_set_flags(PyObject *self, PyObject *arg)
{
    (void)self;
    long v = PyLong_AsLong(arg);
    if (v == -1 && PyErr_Occurred())
        return NULL;
    flags = (int)v;
    Py_RETURN_NONE;
}

/* dispatcher_set_public(d, public) */
PyObject *ember_dispatcher_set_public(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    if (nargs != 2 || !Py_IS_TYPE(args[0], &DispatcherType)) {
        PyErr_SetString(PyExc_TypeError, "dispatcher_set_public(dispatcher, public)");
        return NULL;
    }
    if (dispatcher_set_public_attr((Dispatcher *)args[0], args[1], NULL) < 0)
        return NULL;
    Py_RETURN_NONE;
}

int ember_overrides_exec(PyObject *module)
{
    if (s_torch_function == NULL
        && (s_torch_function = PyUnicode_InternFromString("__torch_function__")) == NULL)
        return -1;
    if (PyType_Ready(&DispatcherType) < 0)
        return -1;
    Py_INCREF(&DispatcherType);
    if (PyModule_AddObject(module, "dispatcher", (PyObject *)&DispatcherType) < 0) {
        Py_DECREF(&DispatcherType);
        return -1;
    }
    return 0;
}
