/* Function.apply in C: mirrors src/ember/autograd/function.py.
 *
 * function_apply() is function.py's Function.apply (kept as _apply_python) for its common call: a
 * built-in op (an Op: its forward sees arrays) on CPU arrays, statement for statement: unwrap the
 * tensors, grad mode, requires-grad, the node with its edges, needs_input_grad and the inputs'
 * metadata, the forward, the outputs wrapped by _make, views' shared version counters
 * (_share_version, called back) and the saved arrays' versions (_track_saved, mirrored here as
 * track_saved). Every other call goes to
 * _apply_python before anything is done: a user's Function (_tensor_io), a tensor on another
 * device, a view whose base changed in place (refresh_view), anomaly mode, compile's tracer and
 * active saved_tensors_hooks (saved_hooks).
 * (__torch_function__ dispatch happens before, at the public functions: _native_overrides.c.)
 * The Python helpers it calls (_accumulator, _share_version,
 * _broadcast_message, _make) are looked up in function.py's namespace per call.
 */
#include "../_native.h"
#include <structmember.h>

static PyObject *fn_globals = NULL;  /* function.py's namespace (strong) */
static PyTypeObject *tensor_base = NULL, *node_type = NULL;  /* TensorBase, Node (strong) */
/* byte offsets of the slots of TensorBase and Node, from their member descriptors */
static Py_ssize_t t_data, t_rg, t_grad_fn, t_output_nr;
static Py_ssize_t n_edges, n_needs, n_xp, n_saved, n_versions, n_meta, n_n_out;

static PyObject *s_tensor_io, *s_tracer, *s_anomaly, *s_saved_hooks, *s_apply_python, *s_cpu_array,
    *s_grad_mode, *s_state, *s_enabled, *s_base, *s_attr_version, *s_version, *s_node_cls,
    *s_np, *s_accum, *s_accumulator, *s_AccumulateGrad, *s_shape, *s_dtype, *s_no_edge, *s_not_input, *s_no_grads,
    *s_forward, *s_broadcast_message, *s_broadcast, *s_make, *s_is_view, *s_share_version,
    *s_non_diff, *s_out_meta, *s_saved_src, *s_user_stack, *s_trace, *s_record, *s_rg, *one,
    *zero;

int ember_function_exec(PyObject *module)
{
    (void)module;
#define INTERN(var, text) \
    if (var == NULL && (var = PyUnicode_InternFromString(text)) == NULL) return -1
    INTERN(s_tensor_io, "_tensor_io");
    INTERN(s_tracer, "tracer");
    INTERN(s_saved_hooks, "saved_hooks");
    INTERN(s_anomaly, "anomaly_enabled");
    INTERN(s_apply_python, "_apply_python");
    INTERN(s_cpu_array, "CPU_ARRAY");
    INTERN(s_grad_mode, "grad_mode");
    INTERN(s_state, "state");
    INTERN(s_enabled, "enabled");
    INTERN(s_base, "_base");
    INTERN(s_attr_version, "_attr_version");
    INTERN(s_version, "_version");
    INTERN(s_node_cls, "_node_cls");
    INTERN(s_np, "np");
    INTERN(s_accum, "_accum");
    INTERN(s_accumulator, "_accumulator");
    INTERN(s_AccumulateGrad, "AccumulateGrad");
    INTERN(s_shape, "shape");
    INTERN(s_dtype, "dtype");
    INTERN(s_no_edge, "_NO_EDGE");
    INTERN(s_not_input, "NOT_INPUT");
    INTERN(s_no_grads, "_NO_GRADS");
    INTERN(s_forward, "forward");
    INTERN(s_broadcast_message, "_broadcast_message");
    INTERN(s_broadcast, "broadcast");
    INTERN(s_make, "_make");
    INTERN(s_is_view, "is_view");
    INTERN(s_share_version, "_share_version");
    INTERN(s_non_diff, "_non_diff");
    INTERN(s_out_meta, "_out_meta");
    INTERN(s_saved_src, "_saved_src");
    INTERN(s_user_stack, "_user_stack");
    INTERN(s_trace, "_trace");
    INTERN(s_record, "record");
    INTERN(s_rg, "_rg");
#undef INTERN
    if (one == NULL && (one = PyLong_FromLong(1)) == NULL)
        return -1;
    if (zero == NULL && (zero = PyLong_FromLong(0)) == NULL)
        return -1;
    return 0;
}

static Py_ssize_t slot_offset(PyTypeObject *type, const char *name)
{
    PyObject *descr = PyDict_GetItemString(type->tp_dict, name);  /* borrowed */
    if (descr == NULL || !Py_IS_TYPE(descr, &PyMemberDescr_Type)
        || ((PyMemberDescrObject *)descr)->d_member->type != T_OBJECT_EX) {
        PyErr_Format(PyExc_TypeError, "ember._native: %s.%s is not a slot", type->tp_name, name);
        return -1;
    }
    return ((PyMemberDescrObject *)descr)->d_member->offset;
}

/* function_init(globals): function.py hands over its namespace when it loads. */
PyObject *ember_function_init(PyObject *self, PyObject *globals)
{
    (void)self;
    if (!PyDict_Check(globals)) {
        PyErr_SetString(PyExc_TypeError, "function_init() expects function.py's globals()");
        return NULL;
    }
    PyObject *tb = PyDict_GetItemString(globals, "TensorBase");
    PyObject *node = PyDict_GetItemString(globals, "Node");
    if (tb == NULL || node == NULL || !PyType_Check(tb) || !PyType_Check(node)) {
        PyErr_SetString(PyExc_TypeError, "function_init(): no TensorBase or Node class");
        return NULL;
    }
    PyTypeObject *T = (PyTypeObject *)tb, *N = (PyTypeObject *)node;
    Py_ssize_t o[11] = {
        slot_offset(T, "_data"), slot_offset(T, "_rg"), slot_offset(T, "_grad_fn"),
        slot_offset(T, "_output_nr"), slot_offset(N, "_edges"), slot_offset(N, "needs_input_grad"),
        slot_offset(N, "xp"), slot_offset(N, "_saved"), slot_offset(N, "_versions"),
        slot_offset(N, "_meta"), slot_offset(N, "_n_out"),
    };
    for (int i = 0; i < 11; i++)
        if (o[i] < 0)
            return NULL;
    t_data = o[0], t_rg = o[1], t_grad_fn = o[2], t_output_nr = o[3];
    n_edges = o[4], n_needs = o[5], n_xp = o[6], n_saved = o[7], n_versions = o[8];
    n_meta = o[9], n_n_out = o[10];
    Py_INCREF(T);
    Py_XSETREF(tensor_base, T);
    Py_INCREF(N);
    Py_XSETREF(node_type, N);
    Py_INCREF(globals);
    Py_XSETREF(fn_globals, globals);
    Py_RETURN_NONE;
}

/* A slot of an object (borrowed; NULL when unset, as for a tensor made by __new__ alone). */
#define SLOT(obj, off) (*(PyObject **)((char *)(obj) + (off)))

/* Store `value` (borrowed) in a slot, releasing what was there. */
static inline void set_slot(PyObject *obj, Py_ssize_t off, PyObject *value)
{
    PyObject *old = SLOT(obj, off);
    Py_INCREF(value);
    SLOT(obj, off) = value;
    Py_XDECREF(old);
}

/* function.py's global `name` (borrowed), or NULL with an error set. */
static PyObject *fn_global(PyObject *name)
{
    PyObject *v = PyDict_GetItemWithError(fn_globals, name);
    if (v == NULL && !PyErr_Occurred())
        PyErr_Format(PyExc_NameError, "name '%U' is not defined in ember.autograd.function", name);
    return v;
}

static PyObject *call_global(PyObject *name, PyObject *const *args, size_t n)
{
    PyObject *f = fn_global(name);
    if (f == NULL)
        return NULL;
    Py_INCREF(f);
    PyObject *r = PyObject_Vectorcall(f, args, n, NULL);
    Py_DECREF(f);
    return r;
}

/* A slot that must be set (AttributeError otherwise, as Python reads it): borrowed. */
static PyObject *tensor_slot(PyObject *t, Py_ssize_t off, const char *name)
{
    PyObject *v = SLOT(t, off);
    if (v == NULL)
        PyErr_Format(PyExc_AttributeError, "'%s' object has no attribute '%s'",
                     Py_TYPE(t)->tp_name, name);
    return v;
}

/* The fallback: function.py's _apply_python(cls, *args). */
static PyObject *apply_python(PyObject *const *args, size_t nargsf)
{
    PyObject *py = fn_global(s_apply_python);
    if (py == NULL)
        return NULL;
    return PyObject_Vectorcall(py, args, nargsf, NULL);
}

/* (the edge of an argument that needs no gradient) _NO_EDGE for a tensor or a number that is
 * not a bool, NOT_INPUT otherwise: borrowed. */
static PyObject *no_edge(PyObject *a)
{
    int number = a != Py_True && a != Py_False
                 && (PyObject_TypeCheck(a, tensor_base) || PyFloat_Check(a) || PyLong_Check(a));
    return fn_global(number ? s_no_edge : s_not_input);
}

/* The edge and metadata of a tensor that requires grad (the `if record:` loop's first branch):
 * sets *edge and *meta to new references; 0, or -1 with an error. */
static int tensor_edge(PyObject *a, PyObject **edge, PyObject **meta)
{
    *edge = *meta = NULL;
    PyObject *fn = tensor_slot(a, t_grad_fn, "_grad_fn");
    if (fn == NULL)
        return -1;
    if (fn != Py_None) {
        PyObject *nr = tensor_slot(a, t_output_nr, "_output_nr");
        if (nr == NULL)
            return -1;
        *edge = PyTuple_Pack(2, fn, nr);
    } else {
        /* ref = a._accum; acc = ref() if ref is not None else None */
        PyObject *ref = PyObject_GetAttr(a, s_accum);
        if (ref == NULL)
            return -1;
        PyObject *acc = NULL;
        if (ref != Py_None) {
            acc = PyObject_CallNoArgs(ref);
            if (acc == NULL) {
                Py_DECREF(ref);
                return -1;
            }
            if (acc == Py_None)
                Py_CLEAR(acc);
        }
        Py_DECREF(ref);
        if (acc == NULL) {  /* _accumulator(a) */
            acc = call_global(s_accumulator, &a, 1);
            if (acc == NULL)
                return -1;
        }
        *edge = PyTuple_Pack(2, acc, zero);
        Py_DECREF(acc);
    }
    if (*edge == NULL)
        return -1;
    PyObject *d = tensor_slot(a, t_data, "_data");
    PyObject *shape = d ? PyObject_GetAttr(d, s_shape) : NULL;
    PyObject *dtype = shape ? PyObject_GetAttr(d, s_dtype) : NULL;
    if (dtype != NULL)
        *meta = PyTuple_Pack(2, shape, dtype);
    Py_XDECREF(shape);
    Py_XDECREF(dtype);
    if (*meta == NULL) {
        Py_CLEAR(*edge);
        return -1;
    }
    return 0;
}

/* cls.forward(ctx, *raw), with the broadcast error made readable as function.py does:
 *     except ValueError as e:
 *         if "broadcast" in str(e): raise RuntimeError(_broadcast_message(cls, raw)) from None
 */
static PyObject *run_forward(PyObject *cls, PyObject *ctx, PyObject *raw)
{
    PyObject *forward = PyObject_GetAttr(cls, s_forward);
    if (forward == NULL)
        return NULL;
    Py_ssize_t n = PyList_GET_SIZE(raw);
    PyObject *small[9];
    PyObject **argv = n < 8 ? small : PyMem_Malloc((n + 1) * sizeof(PyObject *));
    if (argv == NULL) {
        Py_DECREF(forward);
        return PyErr_NoMemory();
    }
    argv[0] = ctx;
    for (Py_ssize_t i = 0; i < n; i++)
        argv[i + 1] = PyList_GET_ITEM(raw, i);
    PyObject *out = PyObject_Vectorcall(forward, argv, n + 1, NULL);
    if (argv != small)
        PyMem_Free(argv);
    Py_DECREF(forward);
    if (out != NULL || !PyErr_ExceptionMatches(PyExc_ValueError))
        return out;
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyErr_NormalizeException(&type, &value, &tb);
    PyObject *text = value ? PyObject_Str(value) : NULL;
    int has = text ? PyUnicode_Contains(text, s_broadcast) : -1;
    Py_XDECREF(text);
    if (has != 1) {
        if (has < 0)
            PyErr_Clear();
        PyErr_Restore(type, value, tb);
        return NULL;
    }
    PyObject *margs[2] = {cls, raw};
    PyObject *msg = call_global(s_broadcast_message, margs, 2);
    if (msg != NULL) {
        PyErr_SetObject(PyExc_RuntimeError, msg);
        Py_DECREF(msg);
        PyObject *t2, *v2, *tb2;
        PyErr_Fetch(&t2, &v2, &tb2);
        PyErr_NormalizeException(&t2, &v2, &tb2);
        if (v2 != NULL) {
            PyException_SetContext(v2, value);  /* steals: the ValueError, as `except` sets */
            value = NULL;
            PyException_SetCause(v2, NULL);  /* `from None`: also sets __suppress_context__ */
        }
        PyErr_Restore(t2, v2, tb2);
    }
    Py_XDECREF(type);
    Py_XDECREF(value);
    Py_XDECREF(tb);
    return NULL;
}

/* counter = t._version; if counter is None: counter = t._version = [0]
 * versions.append((counter, counter[0], k)). Returns 0, or -1 with an error. */
static int note_version(PyObject *t, PyObject *k, PyObject *versions)
{
    PyObject *counter = PyObject_GetAttr(t, s_version);
    if (counter == NULL)
        return -1;
    if (counter == Py_None) {
        Py_DECREF(counter);
        counter = PyList_New(1);
        if (counter == NULL)
            return -1;
        Py_INCREF(zero);
        PyList_SET_ITEM(counter, 0, zero);
        if (PyObject_SetAttr(t, s_version, counter) < 0) {
            Py_DECREF(counter);
            return -1;
        }
    }
    PyObject *now = PySequence_GetItem(counter, 0);
    PyObject *entry = now ? PyTuple_Pack(3, counter, now, k) : NULL;
    Py_XDECREF(now);
    Py_DECREF(counter);
    int rc = entry ? PyList_Append(versions, entry) : -1;
    Py_XDECREF(entry);
    return rc;
}

/* function.py's _track_saved(ctx, args, raw, outs_raw, outputs): where each saved array came
 * from (an input tensor, an output's index, or None), and the versions to check in backward.
 * `argv`/`n` are the op's arguments, `raw` their arrays (a list), `outs` the forward's outputs
 * (a tuple), `outputs` the tensors made of them (a list). Returns 0, or -1 with an error. */
static int track_saved(PyObject *ctx, PyObject *const *argv, Py_ssize_t n, PyObject *raw,
                       PyObject *outs, PyObject *outputs)
{
    PyObject *saved = PySequence_Fast(SLOT(ctx, n_saved), "ctx._saved must be iterable");
    if (saved == NULL)
        return -1;
    Py_ssize_t m = PySequence_Fast_GET_SIZE(saved);
    PyObject *src = PyList_New(m), *versions = PyList_New(0), *scalars = NULL;
    if (src == NULL || versions == NULL)
        goto error;
    for (Py_ssize_t k = 0; k < m; k++) {
        PyObject *s = PySequence_Fast_GET_ITEM(saved, k), *found = Py_None;
        PyObject *k_obj = PyLong_FromSsize_t(k);
        if (k_obj == NULL)
            goto error;
        Py_INCREF(found);
        if (s != Py_None) {
            /* an op saves its arguments in order, so the k-th argument is tried first */
            Py_ssize_t i;
            if (k < n && PyList_GET_ITEM(raw, k) == s && PyObject_TypeCheck(argv[k], tensor_base)) {
                i = k;
            } else {
                for (i = 0; i < n; i++)
                    if (PyList_GET_ITEM(raw, i) == s && PyObject_TypeCheck(argv[i], tensor_base))
                        break;
            }
            int err = 0;
            if (i < n) {
                Py_SETREF(found, Py_NewRef(argv[i]));
                err = note_version(argv[i], k_obj, versions);
            } else {
                for (Py_ssize_t j = 0; j < PyTuple_GET_SIZE(outs); j++) {
                    if (PyTuple_GET_ITEM(outs, j) != s)
                        continue;
                    PyObject *jj = PyLong_FromSsize_t(j);
                    if (jj == NULL) {
                        err = -1;
                        break;
                    }
                    Py_SETREF(found, jj);
                    PyObject *t = PyList_GET_ITEM(outputs, j);
                    if (t != Py_None)
                        err = note_version(t, k_obj, versions);
                    /* a NumPy scalar the output holds as a 0-d array: save that array */
                    PyObject *td = t != Py_None ? SLOT(t, t_data) : NULL;
                    if (err == 0 && td != NULL && td != s) {
                        if (scalars == NULL && (scalars = PySequence_List(saved)) == NULL)
                            err = -1;
                        else
                            err = PyList_SetItem(scalars, k, Py_NewRef(td));
                    }
                    break;
                }
            }
            if (err < 0) {
                Py_DECREF(found);
                Py_DECREF(k_obj);
                goto error;
            }
        }
        Py_DECREF(k_obj);
        PyList_SET_ITEM(src, k, found);  /* steals */
    }
    if (scalars != NULL) {  /* ctx._saved = tuple(saved, with those arrays) */
        PyObject *tup = PyList_AsTuple(scalars);
        if (tup == NULL)
            goto error;
        set_slot(ctx, n_saved, tup);
        Py_DECREF(tup);
    }
    /* ctx._saved_src = src; ctx._versions = versions or None */
    if (PyObject_SetAttr(ctx, s_saved_src, src) < 0)
        goto error;
    set_slot(ctx, n_versions, PyList_GET_SIZE(versions) ? versions : Py_None);
    Py_DECREF(saved);
    Py_DECREF(src);
    Py_DECREF(versions);
    Py_XDECREF(scalars);
    return 0;
error:
    Py_DECREF(saved);
    Py_XDECREF(src);
    Py_XDECREF(versions);
    Py_XDECREF(scalars);
    return -1;
}

/* _make(o, *rest): new reference. */
static PyObject *make(PyObject *make_fn, PyObject *o, PyObject *rg, PyObject *fn, PyObject *k)
{
    PyObject *argv[4] = {o, rg, fn, k};
    return PyObject_Vectorcall(make_fn, argv, rg == NULL ? 1 : 4, NULL);
}

/* Function.apply(cls, *args) (a classmethod: args[0] is cls): new reference. */
PyObject *ember_function_apply(PyObject *self, PyObject *const *args, size_t nargsf,
                               PyObject *kwnames)
{
    (void)self;
    Py_ssize_t nall = PyVectorcall_NARGS(nargsf);
    if (fn_globals == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "ember._native: function_init() was not called");
        return NULL;
    }
    if (kwnames != NULL || nall < 1) {  /* (apply takes no keywords: Python's error) */
        PyObject *py = fn_global(s_apply_python);
        return py ? PyObject_Vectorcall(py, args, nargsf, kwnames) : NULL;
    }
    PyObject *cls = args[0];
    PyObject *const *argv = args + 1;
    Py_ssize_t n = nall - 1;

    /* every rare branch goes to the Python implementation, decided before anything is done */
    PyObject *v;
    int rare = 0;
    v = fn_global(s_tracer);
    if (v == NULL)
        return NULL;
    rare |= v != Py_None;
    v = fn_global(s_anomaly);
    if (v == NULL)
        return NULL;
    int on = PyObject_IsTrue(v);
    if (on < 0)
        return NULL;
    rare |= on;
    v = fn_global(s_saved_hooks);  /* saved_tensors_hooks active: the Python path packs */
    if (v == NULL)
        return NULL;
    rare |= !PyList_Check(v) || PyList_GET_SIZE(v) > 0;
    if (!rare) {
        int t = 0;
        v = PyObject_GetAttr(cls, s_tensor_io);
        if (v == NULL)
            return NULL;
        t = PyObject_IsTrue(v);
        Py_DECREF(v);
        if (t < 0)
            return NULL;
        rare |= t;
    }
    if (rare)
        return apply_python(args, nargsf);

    PyObject *cpu = fn_global(s_cpu_array);
    PyObject *gm = cpu ? fn_global(s_grad_mode) : NULL;
    if (gm == NULL)
        return NULL;
    PyObject *state = PyObject_GetAttr(gm, s_state);
    PyObject *en = state ? PyObject_GetAttr(state, s_enabled) : NULL;
    Py_XDECREF(state);
    if (en == NULL)
        return NULL;
    int enabled = PyObject_IsTrue(en);
    Py_DECREF(en);
    if (enabled < 0)
        return NULL;

    PyObject *raw = PyList_New(n), *ctx = NULL, *edges = NULL, *meta = NULL, *flags = NULL;
    PyObject *out = NULL, *outputs = NULL, *result = NULL, *argtuple = NULL;
    if (raw == NULL)
        return NULL;
    int requires = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *a = argv[i];
        if (!PyObject_TypeCheck(a, tensor_base)) {
            Py_INCREF(a);
            PyList_SET_ITEM(raw, i, a);
            continue;
        }
        PyObject *d = tensor_slot(a, t_data, "_data");
        PyObject *rg = d ? tensor_slot(a, t_rg, "_rg") : NULL;
        if (rg == NULL)
            goto error;
        if ((PyObject *)Py_TYPE(d) != cpu)  /* another device: _check_devices and its rules */
            goto python;
        if (enabled) {
            PyObject *base = PyObject_GetAttr(a, s_base);
            if (base == NULL)
                goto error;
            if (base != Py_None) {
                /* if a._attr_version != a._version[0]: refresh_view(a) -> the Python path */
                PyObject *seen = PyObject_GetAttr(a, s_attr_version);
                PyObject *counter = seen ? PyObject_GetAttr(a, s_version) : NULL;
                PyObject *now = counter ? PySequence_GetItem(counter, 0) : NULL;
                int stale = now ? PyObject_RichCompareBool(seen, now, Py_NE) : -1;
                Py_XDECREF(seen);
                Py_XDECREF(counter);
                Py_XDECREF(now);
                int base_rg = -1;
                if (stale == 0) {  /* if base._rg and not a._rg: requires = True */
                    PyObject *brg = PyObject_GetAttr(base, s_rg);
                    base_rg = brg ? PyObject_IsTrue(brg) : -1;
                    Py_XDECREF(brg);
                }
                Py_DECREF(base);
                if (stale < 0 || (stale == 0 && base_rg < 0))
                    goto error;
                if (stale)
                    goto python;
                if (base_rg) {
                    int mine = PyObject_IsTrue(rg);
                    if (mine < 0)
                        goto error;
                    if (!mine)
                        requires = 1;
                }
            } else {
                Py_DECREF(base);
            }
        }
        int r = PyObject_IsTrue(rg);
        if (r < 0)
            goto error;
        requires |= r;
        Py_INCREF(d);
        PyList_SET_ITEM(raw, i, d);
    }
    int record = requires && enabled;

    /* ctx = object.__new__(cls._node_cls), with Node.__init__'s fields */
    PyObject *node_cls = PyObject_GetAttr(cls, s_node_cls);
    if (node_cls == NULL)
        goto error;
    if (!PyType_Check(node_cls) || !PyType_IsSubtype((PyTypeObject *)node_cls, node_type)) {
        Py_DECREF(node_cls);
        goto python;
    }
    ctx = ((PyTypeObject *)node_cls)->tp_alloc((PyTypeObject *)node_cls, 0);
    Py_DECREF(node_cls);
    if (ctx == NULL)
        goto error;
    PyObject *np_mod = fn_global(s_np);
    if (np_mod == NULL)
        goto error;
    set_slot(ctx, n_saved, Py_None);
    set_slot(ctx, n_versions, Py_None);
    set_slot(ctx, n_n_out, one);
    set_slot(ctx, n_xp, np_mod);
    if (record) {
        flags = PyTuple_New(n);
        edges = PyTuple_New(n);
        meta = PyList_New(n);
        if (flags == NULL || edges == NULL || meta == NULL)
            goto error;
        for (Py_ssize_t i = 0; i < n; i++) {
            PyObject *a = argv[i], *edge, *m;
            int needs = 0;
            if (PyObject_TypeCheck(a, tensor_base)) {
                PyObject *rg = tensor_slot(a, t_rg, "_rg");
                needs = rg ? PyObject_IsTrue(rg) : -1;
                if (needs < 0)
                    goto error;
            }
            if (needs) {
                if (tensor_edge(a, &edge, &m) < 0)
                    goto error;
            } else {
                edge = no_edge(a);
                if (edge == NULL)
                    goto error;
                Py_INCREF(edge);
                m = Py_None;
                Py_INCREF(m);
            }
            PyObject *flag = needs ? Py_True : Py_False;
            Py_INCREF(flag);
            PyTuple_SET_ITEM(flags, i, flag);
            PyTuple_SET_ITEM(edges, i, edge);
            PyList_SET_ITEM(meta, i, m);
        }
        set_slot(ctx, n_needs, flags);
    } else {
        PyObject *empty = PyTuple_New(0);
        if (empty == NULL)
            goto error;
        set_slot(ctx, n_edges, empty);
        Py_DECREF(empty);
        PyObject *none_needed = NULL;  /* _NO_GRADS[n] if n < 8 else (False,) * n */
        if (n < 8) {
            PyObject *table = fn_global(s_no_grads);
            none_needed = table ? PySequence_GetItem(table, n) : NULL;
        } else {
            none_needed = PyTuple_New(n);
            for (Py_ssize_t i = 0; none_needed != NULL && i < n; i++) {
                Py_INCREF(Py_False);
                PyTuple_SET_ITEM(none_needed, i, Py_False);
            }
        }
        if (none_needed == NULL)
            goto error;
        set_slot(ctx, n_needs, none_needed);
        Py_DECREF(none_needed);
    }

    out = run_forward(cls, ctx, raw);
    if (out == NULL)
        goto error;
    int is_tuple = PyTuple_CheckExact(out);
    Py_ssize_t n_outs = is_tuple ? PyTuple_GET_SIZE(out) : 1;
    PyObject *make_fn = fn_global(s_make);
    if (make_fn == NULL)
        goto error;
    Py_INCREF(make_fn);
    outputs = PyList_New(n_outs);
    if (outputs == NULL) {
        Py_DECREF(make_fn);
        goto error;
    }
    PyObject *non_diff = NULL;
    if (record) {
        set_slot(ctx, n_edges, edges);
        set_slot(ctx, n_meta, meta);
        non_diff = PyObject_GetAttr(ctx, s_non_diff);
        if (non_diff == NULL) {
            Py_DECREF(make_fn);
            goto error;
        }
    }
    for (Py_ssize_t k = 0; k < n_outs; k++) {
        PyObject *o = is_tuple ? PyTuple_GET_ITEM(out, k) : out, *t;
        /* (None stays None in a tuple, and in the recording loop that checks _non_diff) */
        if (o == Py_None && (is_tuple || (record && non_diff != Py_None))) {
            Py_INCREF(Py_None);
            PyList_SET_ITEM(outputs, k, Py_None);
            continue;
        }
        if (!record) {
            t = make(make_fn, o, NULL, NULL, NULL);
        } else {
            /* differentiable = non_diff is None or id(o) not in non_diff */
            int diff = 1;
            if (non_diff != Py_None) {
                PyObject *id = PyLong_FromVoidPtr(o);
                int in = id ? PySequence_Contains(non_diff, id) : -1;
                Py_XDECREF(id);
                if (in < 0) {
                    t = NULL;
                    goto made;
                }
                diff = !in;
            }
            PyObject *k_obj = PyLong_FromSsize_t(k);
            t = k_obj ? make(make_fn, o, diff ? Py_True : Py_False, diff ? ctx : Py_None, k_obj)
                      : NULL;
            Py_XDECREF(k_obj);
        }
    made:
        if (t == NULL) {
            Py_DECREF(make_fn);
            Py_XDECREF(non_diff);
            goto error;
        }
        PyList_SET_ITEM(outputs, k, t);
    }
    Py_DECREF(make_fn);
    Py_XDECREF(non_diff);
    if (record && is_tuple) {
        /* ctx._n_out = len(outs_raw); ctx._out_meta = ((o.shape, o.dtype) or None, ...) */
        PyObject *count = PyLong_FromSsize_t(n_outs);
        PyObject *om = count ? PyTuple_New(n_outs) : NULL;
        if (om == NULL) {
            Py_XDECREF(count);
            goto error;
        }
        set_slot(ctx, n_n_out, count);
        Py_DECREF(count);
        for (Py_ssize_t k = 0; k < n_outs; k++) {
            PyObject *o = PyTuple_GET_ITEM(out, k), *m;
            if (o == Py_None) {
                m = Py_None;
                Py_INCREF(m);
            } else {
                PyObject *shape = PyObject_GetAttr(o, s_shape);
                PyObject *dtype = shape ? PyObject_GetAttr(o, s_dtype) : NULL;
                m = dtype ? PyTuple_Pack(2, shape, dtype) : NULL;
                Py_XDECREF(shape);
                Py_XDECREF(dtype);
                if (m == NULL) {
                    Py_DECREF(om);
                    goto error;
                }
            }
            PyTuple_SET_ITEM(om, k, m);
        }
        int err = PyObject_SetAttr(ctx, s_out_meta, om);
        Py_DECREF(om);
        if (err < 0)
            goto error;
    }

    /* if cls.is_view: _share_version(args[0], outputs, is_tuple) */
    v = PyObject_GetAttr(cls, s_is_view);
    int is_view = v ? PyObject_IsTrue(v) : -1;
    Py_XDECREF(v);
    if (is_view < 0)
        goto error;
    if (is_view) {
        if (n < 1) {
            PyErr_SetString(PyExc_IndexError, "tuple index out of range");
            goto error;
        }
        PyObject *sargs[3] = {argv[0], outputs, is_tuple ? Py_True : Py_False};
        PyObject *r = call_global(s_share_version, sargs, 3);
        if (r == NULL)
            goto error;
        Py_DECREF(r);
    }
    if (record) {
        /* if ctx._saved: _track_saved(ctx, args, raw, outs_raw, outputs), in C (track_saved) */
        PyObject *saved = SLOT(ctx, n_saved);
        int any = saved ? PyObject_IsTrue(saved) : 0;
        if (any < 0)
            goto error;
        if (any) {
            PyObject *outs_raw = is_tuple ? Py_NewRef(out) : PyTuple_Pack(1, out);
            if (outs_raw == NULL)
                goto error;
            int err = track_saved(ctx, argv, n, raw, outs_raw, outputs);
            Py_DECREF(outs_raw);
            if (err < 0)
                goto error;
        }
    }
    /* anomaly mode or a tracer switched on by the forward itself (checked again, as Python
     * reads them only here): their hooks, as function.py runs them */
    v = fn_global(s_anomaly);
    on = v ? PyObject_IsTrue(v) : -1;
    if (on < 0)
        goto error;
    if (on && record) {
        PyObject *stack = call_global(s_user_stack, NULL, 0);
        if (stack == NULL || PyObject_SetAttr(ctx, s_trace, stack) < 0) {
            Py_XDECREF(stack);
            goto error;
        }
        Py_DECREF(stack);
    }
    v = fn_global(s_tracer);
    if (v == NULL)
        goto error;
    if (v != Py_None) {
        if (argtuple == NULL) {
            argtuple = PyTuple_New(n);
            if (argtuple == NULL)
                goto error;
            for (Py_ssize_t i = 0; i < n; i++) {
                Py_INCREF(argv[i]);
                PyTuple_SET_ITEM(argtuple, i, argv[i]);
            }
        }
        Py_INCREF(v);
        PyObject *rargs[6] = {v, cls, ctx, argtuple, raw, outputs};
        PyObject *r = PyObject_VectorcallMethod(s_record, rargs, 6, NULL);  /* tracer.record */
        Py_DECREF(v);
        if (r == NULL)
            goto error;
        Py_DECREF(r);
    }
    if (is_tuple) {
        result = PyList_AsTuple(outputs);
    } else {
        result = PyList_GET_ITEM(outputs, 0);
        Py_INCREF(result);
    }
    goto done;

python:
    result = apply_python(args, nargsf);
    goto done;
error:
    result = NULL;
done:
    Py_XDECREF(raw);
    Py_XDECREF(ctx);
    Py_XDECREF(edges);
    Py_XDECREF(meta);
    Py_XDECREF(flags);
    Py_XDECREF(out);
    Py_XDECREF(outputs);
    Py_XDECREF(argtuple);
    return result;
}

/* accumulator(leaf): function.py's _accumulator_python, in C: the leaf's AccumulateGrad node
 * (alive while a graph holds it; made again, with AccumulateGrad.__init__'s fields as the Python
 * function writes them, once the last graph is gone, which for a training step's parameters is
 * every step). */
PyObject *ember_function_accumulator(PyObject *self, PyObject *leaf)
{
    (void)self;
    static PyObject *s_edges, *s_saved, *s_versions, *s_n_out, *s_variable, *s_shape, *s_data,
        *one;
    if (one == NULL) {
        if ((s_edges = PyUnicode_InternFromString("_edges")) == NULL
            || (s_saved = PyUnicode_InternFromString("_saved")) == NULL
            || (s_versions = PyUnicode_InternFromString("_versions")) == NULL
            || (s_n_out = PyUnicode_InternFromString("_n_out")) == NULL
            || (s_variable = PyUnicode_InternFromString("variable")) == NULL
            || (s_shape = PyUnicode_InternFromString("shape")) == NULL
            || (s_data = PyUnicode_InternFromString("_data")) == NULL
            || (one = PyLong_FromLong(1)) == NULL)
            return NULL;
    }
    /* ref = leaf._accum; acc = ref() if ref is not None else None */
    PyObject *ref = PyObject_GetAttr(leaf, s_accum);
    if (ref == NULL)
        return NULL;
    if (ref != Py_None) {
        PyObject *acc = PyObject_CallNoArgs(ref);
        Py_DECREF(ref);
        if (acc == NULL || acc != Py_None)
            return acc;
        Py_DECREF(acc);
    } else {
        Py_DECREF(ref);
    }
    PyObject *type = fn_global(s_AccumulateGrad);  /* borrowed */
    if (type == NULL)
        return NULL;
    if (!PyType_Check(type)) {
        PyErr_SetString(PyExc_TypeError, "function.py's AccumulateGrad must be a class");
        return NULL;
    }
    /* acc = _new_node(AccumulateGrad) (object.__new__) */
    PyObject *acc = ((PyTypeObject *)type)->tp_alloc((PyTypeObject *)type, 0);
    if (acc == NULL)
        return NULL;
    PyObject *data = PyObject_GetAttr(leaf, s_data);
    PyObject *shape = data ? PyObject_GetAttr(data, s_shape) : NULL;
    Py_XDECREF(data);
    PyObject *empty = PyTuple_New(0);
    PyObject *wr = NULL;
    if (shape == NULL || empty == NULL
        || PyObject_SetAttr(acc, s_edges, empty) < 0
        || PyObject_SetAttr(acc, s_saved, Py_None) < 0
        || PyObject_SetAttr(acc, s_versions, Py_None) < 0
        || PyObject_SetAttr(acc, s_n_out, one) < 0
        || PyObject_SetAttr(acc, s_variable, leaf) < 0
        || PyObject_SetAttr(acc, s_shape, shape) < 0
        || (wr = PyWeakref_NewRef(acc, NULL)) == NULL
        || PyObject_SetAttr(leaf, s_accum, wr) < 0)
        Py_CLEAR(acc);
    Py_XDECREF(shape);
    Py_XDECREF(empty);
    Py_XDECREF(wr);
    return acc;
}
