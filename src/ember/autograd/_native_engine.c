/* The backward engine's walk in C: mirrors src/ember/autograd/engine.py.
 *
 * walk_nodes() is engine.py's _walk_nodes_python, statement for statement: the same dict of
 * dependency counts, the same ready lists (leaves' AccumulateGrad nodes first), the same gradient
 * buffers, and the same fast path for the common node (a built-in op on arrays, one output, no
 * hooks), and of a leaf's AccumulateGrad (_accumulate's common branch). Every other branch calls
 * the Python function engine.py names for it (_run_pre_hooks, _run_node, _check_grad_count,
 * sum_to_shape, Node._check_versions, Node._release), looked up in
 * engine.py's namespace at the time of the call, so there is one spelling of each rule and a test
 * or a tool that replaces one of them sees the replacement used. Iterative: the C stack does not
 * grow with the graph (a 100,000-op chain is tested).
 *
 * Grad mode is set by engine.py's run_backward around this call, as for the Python loop.
 */
#include "../_native.h"

/* Interned names (immortal for the life of the process: set once in ember_engine_exec). */
static PyObject *s_grad_fn, *s_pre_hooks, *s_retain, *s_fn, *s_tensor_io, *s_n_out, *s_post_hooks,
    *s_grads_to_cpu, *s_saved, *s_saved_src, *s_freed, *s_versions, *s_check_versions,
    *s_backward, *s_dict, *s_release, *s_edges, *s_meta, *s_shape, *s_dtype, *s_astype,
    *s_anomaly_enabled, *s_function, *s_run_pre_hooks, *s_run_node, *s_check_grad_count,
    *s_sum_to_shape, *s_sum, *s_reshape, *s_axis_keepdims, *s_AccumulateGrad, *s_FREED_MSG,
    *s_variable, *s_hooks, *s_post_acc_hooks,
    *s_grad, *s_data, *s_base, *s_owns, *s_flags, *s_writeable, *s_copy, *s_copy_grad, *s_make,
    *s_TensorBase,
    *s_CPU_ARRAY, *s_np, *s_generic, *s_asarray, *s_final_callbacks, *s_grad_mode, *s_state,
    *s_enabled, *s_pop, *s_run_backward_python, *s_dependencies, *s_walk_nodes,
    *s_backward_python, *s_run_backward, *s_ones, *s_output_nr, *s_size, *s_grad_sum,
    *s_GRAD_SUM_SPLIT_FROM;

/* engine.py's module namespace (a strong reference, set by engine_init). */
static PyObject *engine_globals = NULL;

int ember_engine_exec(PyObject *module)
{
    (void)module;
#define INTERN(var, text) \
    if (var == NULL && (var = PyUnicode_InternFromString(text)) == NULL) return -1
    INTERN(s_pre_hooks, "_pre_hooks");
    INTERN(s_retain, "_retain");
    INTERN(s_fn, "_fn");
    INTERN(s_tensor_io, "_tensor_io");
    INTERN(s_n_out, "_n_out");
    INTERN(s_post_hooks, "_post_hooks");
    INTERN(s_grads_to_cpu, "_grads_to_cpu");
    INTERN(s_saved, "_saved");
    INTERN(s_saved_src, "_saved_src");
    INTERN(s_freed, "_freed");
    INTERN(s_versions, "_versions");
    INTERN(s_check_versions, "_check_versions");
    INTERN(s_backward, "backward");
    INTERN(s_dict, "__dict__");
    INTERN(s_release, "_release");
    INTERN(s_edges, "_edges");
    INTERN(s_meta, "_meta");
    INTERN(s_shape, "shape");
    INTERN(s_dtype, "dtype");
    INTERN(s_astype, "astype");
    INTERN(s_anomaly_enabled, "anomaly_enabled");
    INTERN(s_function, "_function");
    INTERN(s_run_pre_hooks, "_run_pre_hooks");
    INTERN(s_run_node, "_run_node");
    INTERN(s_check_grad_count, "_check_grad_count");
    INTERN(s_sum_to_shape, "sum_to_shape");
    INTERN(s_sum, "sum");
    INTERN(s_reshape, "reshape");
    s_axis_keepdims = Py_BuildValue("(ss)", "axis", "keepdims");  /* kwnames of g.sum(...) */
    if (s_axis_keepdims == NULL)
        return -1;
    INTERN(s_AccumulateGrad, "AccumulateGrad");
    INTERN(s_FREED_MSG, "FREED_MSG");
    INTERN(s_variable, "variable");
    INTERN(s_hooks, "_hooks");
    INTERN(s_grad_fn, "_grad_fn");
    INTERN(s_post_acc_hooks, "_post_accumulate_hooks");
    INTERN(s_grad, "_grad");
    INTERN(s_data, "_data");
    INTERN(s_base, "base");
    INTERN(s_owns, "_owns");
    INTERN(s_flags, "flags");
    INTERN(s_writeable, "writeable");
    INTERN(s_copy, "copy");
    INTERN(s_copy_grad, "_copy_grad");
    INTERN(s_grad_sum, "_grad_sum");
    INTERN(s_GRAD_SUM_SPLIT_FROM, "GRAD_SUM_SPLIT_FROM");
    INTERN(s_make, "_make");
    INTERN(s_TensorBase, "TensorBase");
    INTERN(s_CPU_ARRAY, "CPU_ARRAY");
    INTERN(s_np, "np");
    INTERN(s_generic, "generic");
    INTERN(s_asarray, "asarray");
    INTERN(s_final_callbacks, "_final_callbacks");
    INTERN(s_grad_mode, "grad_mode");
    INTERN(s_state, "state");
    INTERN(s_enabled, "enabled");
    INTERN(s_pop, "pop");
    INTERN(s_run_backward_python, "_run_backward_python");
    INTERN(s_dependencies, "_dependencies");
    INTERN(s_walk_nodes, "_walk_nodes");
    INTERN(s_backward_python, "_backward_python");
    INTERN(s_run_backward, "run_backward");
    INTERN(s_ones, "_ones");
    INTERN(s_output_nr, "_output_nr");
    INTERN(s_size, "size");
#undef INTERN
    return 0;
}

/* engine_init(globals): engine.py hands over its namespace when it loads. */
PyObject *ember_engine_init(PyObject *self, PyObject *globals)
{
    (void)self;
    if (!PyDict_Check(globals)) {
        PyErr_SetString(PyExc_TypeError, "engine_init() expects engine.py's globals() dict");
        return NULL;
    }
    Py_INCREF(globals);
    Py_XSETREF(engine_globals, globals);
    Py_RETURN_NONE;
}

/* engine.py's global `name` (borrowed), or NULL with an error set. */
static PyObject *engine_global(PyObject *name)
{
    if (engine_globals == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "ember._native: engine_init() was not called");
        return NULL;
    }
    PyObject *v = PyDict_GetItemWithError(engine_globals, name);
    if (v == NULL && !PyErr_Occurred())
        PyErr_Format(PyExc_NameError, "name '%U' is not defined in ember.autograd.engine", name);
    return v;
}

/* Call engine.py's function `name` with `n` arguments; new reference or NULL. */
static PyObject *call_engine(PyObject *name, PyObject *const *args, size_t n)
{
    PyObject *f = engine_global(name);
    if (f == NULL)
        return NULL;
    Py_INCREF(f);  /* the call may rebind the name */
    PyObject *r = PyObject_Vectorcall(f, args, n, NULL);
    Py_DECREF(f);
    return r;
}

/* attr is None (Python's `obj.attr is None`): 1, 0, or -1 on error. */
static int attr_is_none(PyObject *obj, PyObject *name)
{
    PyObject *v = PyObject_GetAttr(obj, name);
    if (v == NULL)
        return -1;
    int r = v == Py_None;
    Py_DECREF(v);
    return r;
}

/* bool(obj.attr): 1, 0, or -1 on error. */
static int attr_truth(PyObject *obj, PyObject *name)
{
    PyObject *v = PyObject_GetAttr(obj, name);
    if (v == NULL)
        return -1;
    int r = PyObject_IsTrue(v);
    Py_DECREF(v);
    return r;
}

/* list.pop() of a non-empty list: new reference or NULL. */
static PyObject *list_pop_last(PyObject *list)
{
    Py_ssize_t n = PyList_GET_SIZE(list);
    PyObject *item = PyList_GET_ITEM(list, n - 1);
    Py_INCREF(item);
    if (PyList_SetSlice(list, n - 1, n, NULL) < 0) {
        Py_DECREF(item);
        return NULL;
    }
    return item;
}

/* dict.pop(key, None): new reference; NULL without an error when absent, with one on error. */
static PyObject *dict_pop(PyObject *d, PyObject *key)
{
    PyObject *v = PyDict_GetItemWithError(d, key);
    if (v == NULL)
        return NULL;
    Py_INCREF(v);
    if (PyDict_DelItem(d, key) < 0) {
        Py_DECREF(v);
        return NULL;
    }
    return v;
}

/* The dependency step of the walk, for one edge target `nxt` (borrowed):
 *     left = deps[nxt] - 1; deps[nxt] = left
 *     if left == 0: (ready_leaves if type(nxt) is AccumulateGrad else ready).append(nxt)
 * Returns 0, or -1 with an error set. */
static int release_dependency(PyObject *nxt, PyObject *deps, PyObject *ready,
                              PyObject *ready_leaves, PyObject *accum_type)
{
    PyObject *count = PyDict_GetItemWithError(deps, nxt);  /* borrowed */
    if (count == NULL) {
        if (!PyErr_Occurred())
            PyErr_SetObject(PyExc_KeyError, nxt);
        return -1;
    }
    PyObject *left;  /* new */
    int zero;
    if (PyLong_CheckExact(count)) {
        long c = PyLong_AsLong(count);
        if (c == -1 && PyErr_Occurred())
            return -1;
        left = PyLong_FromLong(c - 1);
        zero = c - 1 == 0;
    } else {
        PyObject *one = PyLong_FromLong(1);
        if (one == NULL)
            return -1;
        left = PyNumber_Subtract(count, one);
        Py_DECREF(one);
        zero = -1;
    }
    if (left == NULL)
        return -1;
    if (PyDict_SetItem(deps, nxt, left) < 0) {
        Py_DECREF(left);
        return -1;
    }
    if (zero < 0) {
        PyObject *z = PyLong_FromLong(0);
        zero = z == NULL ? -1 : PyObject_RichCompareBool(left, z, Py_EQ);
        Py_XDECREF(z);
    }
    Py_DECREF(left);
    if (zero < 0)
        return -1;
    if (zero)
        return PyList_Append((PyObject *)Py_TYPE(nxt) == accum_type ? ready_leaves : ready, nxt);
    return 0;
}

/* The version test _walk_nodes_python inlines from Node._check_versions:
 *     for counter, seen, _k in versions: if counter[0] != seen: node._check_versions()
 * Returns 0, or -1 with an error set (the error Node._check_versions raises). */
static int check_versions(PyObject *node, PyObject *versions)
{
    PyObject *it = PyObject_GetIter(versions);
    if (it == NULL)
        return -1;
    PyObject *item;
    while ((item = PyIter_Next(it)) != NULL) {
        PyObject *entry = PySequence_Tuple(item);  /* new */
        Py_DECREF(item);
        if (entry == NULL)
            goto fail;
        if (PyTuple_GET_SIZE(entry) != 3) {
            PyErr_Format(PyExc_ValueError, "expected 3 values to unpack (got %zd)",
                         PyTuple_GET_SIZE(entry));
            Py_DECREF(entry);
            goto fail;
        }
        PyObject *now = PySequence_GetItem(PyTuple_GET_ITEM(entry, 0), 0);  /* new */
        int changed = now == NULL ? -1
                      : PyObject_RichCompareBool(now, PyTuple_GET_ITEM(entry, 1), Py_NE);
        Py_XDECREF(now);
        Py_DECREF(entry);
        if (changed < 0)
            goto fail;
        if (changed) {
            PyObject *r = PyObject_CallMethodNoArgs(node, s_check_versions);
            if (r == NULL)
                goto fail;
            Py_DECREF(r);
        }
    }
    Py_DECREF(it);
    return PyErr_Occurred() ? -1 : 0;
fail:
    Py_DECREF(it);
    return -1;
}

/* The release step of the fast path:
 *     if node.__dict__: node._release()
 *     elif node._saved is not None and not _only_nones(node._saved):
 *         node._saved = None; node._saved_src = None; node._freed = True
 */
static int release_node(PyObject *node)
{
    /* bool(node.__dict__) without making the dict: reading __dict__ creates an empty one */
    PyObject **dictptr = _PyObject_GetDictPtr(node);
    int has_fields = dictptr != NULL ? *dictptr != NULL && PyDict_GET_SIZE(*dictptr) > 0
                                     : attr_truth(node, s_dict);
    if (has_fields < 0)
        return -1;
    if (has_fields) {
        PyObject *r = PyObject_CallMethodNoArgs(node, s_release);
        if (r == NULL)
            return -1;
        Py_DECREF(r);
        return 0;
    }
    PyObject *saved = PyObject_GetAttr(node, s_saved);
    if (saved == NULL)
        return -1;
    /* node.py's _only_nones(saved): a non-empty tuple of Nones frees nothing (kept as it is) */
    int only_nones = PyTuple_CheckExact(saved) && PyTuple_GET_SIZE(saved) > 0;
    for (Py_ssize_t i = 0; only_nones && i < PyTuple_GET_SIZE(saved); i++)
        only_nones = PyTuple_GET_ITEM(saved, i) == Py_None;
    if (saved != Py_None && !only_nones) {
        if (PyObject_SetAttr(node, s_saved, Py_None) < 0
            || PyObject_SetAttr(node, s_saved_src, Py_None) < 0
            || PyObject_SetAttr(node, s_freed, Py_True) < 0) {
            Py_DECREF(saved);
            return -1;
        }
    }
    Py_DECREF(saved);
    return 0;
}

/* sum_to_shape(g, shape, node): engine.py's function of that name, with its common case in C
 * when engine.py's own function is the one bound (a replacement, e.g. a test's spy, is called):
 *     lead = len(g.shape) - len(shape)
 *     axes = tuple(range(lead)) + tuple(lead + i for i, s in enumerate(shape)
 *                                       if s == 1 and g.shape[lead + i] != 1)
 *     if axes: g = g.sum(axis=axes, keepdims=True)
 *     if lead: g = g.reshape(shape)
 * for a CPU array `g` and a tuple of ints `shape` that broadcasts to g.shape; anything else
 * (the error for a shape that does not reduce, other arrays) calls the Python function.
 * Returns a new reference, or NULL with an error. */
static PyObject *sum_to_shape(PyObject *g, PyObject *shape, PyObject *node)
{
    PyObject *f = engine_global(s_sum_to_shape);  /* borrowed */
    PyObject *cpu = f ? engine_global(s_CPU_ARRAY) : NULL;
    if (cpu == NULL)
        return NULL;
    PyObject *gshape = NULL, *axes = NULL, *r = NULL;
    if (!PyFunction_Check(f) || PyFunction_GET_GLOBALS(f) != engine_globals
        || (PyObject *)Py_TYPE(g) != cpu || !PyTuple_CheckExact(shape))
        goto python;
    gshape = PyObject_GetAttr(g, s_shape);
    if (gshape == NULL)
        return NULL;
    if (!PyTuple_CheckExact(gshape))
        goto python;
    Py_ssize_t n = PyTuple_GET_SIZE(shape), lead = PyTuple_GET_SIZE(gshape) - n;
    if (lead < 0)
        goto python;
    axes = PyList_New(0);
    if (axes == NULL)
        goto done;
    for (Py_ssize_t i = 0; i < lead; i++) {
        PyObject *ax = PyLong_FromSsize_t(i);
        if (ax == NULL || PyList_Append(axes, ax) < 0) {
            Py_XDECREF(ax);
            goto done;
        }
        Py_DECREF(ax);
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *si = PyTuple_GET_ITEM(shape, i), *di = PyTuple_GET_ITEM(gshape, lead + i);
        if (!PyLong_CheckExact(si) || !PyLong_CheckExact(di))
            goto python;
        Py_ssize_t sv = PyLong_AsSsize_t(si), dv = PyLong_AsSsize_t(di);
        if ((sv == -1 || dv == -1) && PyErr_Occurred())
            goto done;
        if (sv != 1 && sv != dv)
            goto python;  /* does not reduce: the Python function raises the error */
        if (sv == 1 && dv != 1) {
            PyObject *ax = PyLong_FromSsize_t(lead + i);
            if (ax == NULL || PyList_Append(axes, ax) < 0) {
                Py_XDECREF(ax);
                goto done;
            }
            Py_DECREF(ax);
        }
    }
    Py_INCREF(g);
    r = g;
    if (PyList_GET_SIZE(axes)) {
        PyObject *t = PyList_AsTuple(axes);
        PyObject *cargs[3] = {r, t, Py_True};  /* g.sum(axis=t, keepdims=True) */
        PyObject *summed = t ? PyObject_VectorcallMethod(s_sum, cargs, 1, s_axis_keepdims)
                             : NULL;
        Py_XDECREF(t);
        Py_SETREF(r, summed);
        if (r == NULL)
            goto done;
    }
    if (lead)
        Py_SETREF(r, PyObject_CallMethodOneArg(r, s_reshape, shape));
    goto done;
python:
    {
        PyObject *args[3] = {g, shape, node};
        r = PyObject_Vectorcall(f, args, 3, NULL);
    }
done:
    Py_XDECREF(gshape);
    Py_XDECREF(axes);
    return r;
}

/* ``a, b = item`` for a 2-item sequence: a new 2-tuple, or NULL with Python's unpacking error set
 * (shared by the edges (nxt, nr) and the saved metadata (shape, dtype) of every node). */
static PyObject *unpack_pair(PyObject *item)
{
    PyObject *pair = PySequence_Tuple(item);
    if (pair != NULL && PyTuple_GET_SIZE(pair) != 2) {
        PyErr_Format(PyExc_ValueError, "expected 2 values to unpack (got %zd)",
                     PyTuple_GET_SIZE(pair));
        Py_CLEAR(pair);
    }
    return pair;
}


/* engine.py's _addable_in_place(a, g): 1 when a += g may write a's memory (CPU arrays, a with
 * no base, writeable, of g's shape and dtype), 0 when not, -1 with an error set. */
static int addable_in_place(PyObject *a, PyObject *g, PyObject *cpu)
{
    if ((PyObject *)Py_TYPE(a) != cpu || (PyObject *)Py_TYPE(g) != cpu)
        return 0;
    PyObject *base = PyObject_GetAttr(a, s_base);
    if (base == NULL)
        return -1;
    int ok = base == Py_None;
    Py_DECREF(base);
    PyObject *names[2] = {s_shape, s_dtype};
    for (int k = 0; ok > 0 && k < 2; k++) {
        PyObject *x = PyObject_GetAttr(a, names[k]);
        PyObject *y = x ? PyObject_GetAttr(g, names[k]) : NULL;
        ok = y ? PyObject_RichCompareBool(x, y, Py_EQ) : -1;
        Py_XDECREF(x);
        Py_XDECREF(y);
    }
    if (ok > 0) {
        PyObject *flags = PyObject_GetAttr(a, s_flags);
        ok = flags ? attr_truth(flags, s_writeable) : -1;
        Py_XDECREF(flags);
    }
    return ok;
}

/* a + g, into a's memory where `into` (the caller has checked it may): engine.py's _grad_sum
 * for a host array of GRAD_SUM_SPLIT_FROM elements or more (split over the threads there),
 * NumPy's + for anything smaller. New reference. */
static PyObject *grad_sum(PyObject *a, PyObject *g, int into, PyObject *cpu)
{
    if ((PyObject *)Py_TYPE(a) == cpu) {
        PyObject *size = PyObject_GetAttr(a, s_size);
        PyObject *from = size ? engine_global(s_GRAD_SUM_SPLIT_FROM) : NULL;
        int big = from ? PyObject_RichCompareBool(size, from, Py_GE) : -1;
        Py_XDECREF(size);
        if (big < 0)
            return NULL;
        if (big) {
            PyObject *args[3] = {a, g, into ? Py_True : Py_False};
            return call_engine(s_grad_sum, args, 3);
        }
    }
    return into ? PyNumber_InPlaceAdd(a, g) : PyNumber_Add(a, g);
}

/* engine.py's _add_into_buffer: old + g, added in place (old's memory) when old is a CPU array
 * that only the buffer list holds (refcount 2: the list's and the caller's `old`), with no base,
 * writeable, and g's shape and dtype; a new array otherwise. New reference. */
static PyObject *add_into_buffer(PyObject *old, PyObject *g)
{
    PyObject *cpu = engine_global(s_CPU_ARRAY);
    if (cpu == NULL)
        return NULL;
    if (Py_REFCNT(old) == 2 && old != g) {
        int ok = addable_in_place(old, g, cpu);
        if (ok < 0)
            return NULL;
        if (ok)
            return grad_sum(old, g, 1, cpu);  /* (ndarray.__iadd__'s result: old) */
    }
    return grad_sum(old, g, 0, cpu);
}

/* The send step of the fast path, for input `i` whose edge is (nxt, nr) and whose gradient
 * `g` (borrowed) is not None (_send's rule, as _walk_nodes_python inlines it):
 *     shape, dt = meta[i]
 *     if g.shape != shape: g = sum_to_shape(g, shape, node)
 *     if g.dtype != dt: g = g.astype(dt)
 *     nb = buffers.get(nxt)
 *     if nb is None: nb = buffers[nxt] = [None] * nxt._n_out; nb[nr] = g
 *     elif nb[nr] is None: nb[nr] = g
 *     else: nb[nr] = nb[nr] + g
 */
/* The first half of the send step: g (borrowed) summed to the input's shape and cast to its
 * dtype, meta_i = (shape, dtype); a new reference, or NULL with an error. */
static PyObject *fit_gradient(PyObject *node, PyObject *g, PyObject *meta_i)
{
    PyObject *shape = NULL, *dt = NULL, *have = NULL;
    Py_INCREF(g);  /* g: owned from here on (it may be replaced) */
    PyObject *pair = unpack_pair(meta_i);  /* new */
    if (pair == NULL)
        goto fail;
    shape = PyTuple_GET_ITEM(pair, 0);
    dt = PyTuple_GET_ITEM(pair, 1);
    Py_INCREF(shape);
    Py_INCREF(dt);
    Py_DECREF(pair);

    have = PyObject_GetAttr(g, s_shape);
    if (have == NULL)
        goto fail;
    int differ = PyObject_RichCompareBool(have, shape, Py_NE);
    Py_CLEAR(have);
    if (differ < 0)
        goto fail;
    if (differ) {
        PyObject *r = sum_to_shape(g, shape, node);
        if (r == NULL)
            goto fail;
        Py_SETREF(g, r);
    }
    have = PyObject_GetAttr(g, s_dtype);
    if (have == NULL)
        goto fail;
    differ = have == dt ? 0 : PyObject_RichCompareBool(have, dt, Py_NE);
    Py_CLEAR(have);
    if (differ < 0)
        goto fail;
    if (differ) {
        PyObject *r = PyObject_CallMethodOneArg(g, s_astype, dt);
        if (r == NULL)
            goto fail;
        Py_SETREF(g, r);
    }
    Py_DECREF(shape);
    Py_DECREF(dt);
    return g;
fail:
    Py_XDECREF(shape);
    Py_XDECREF(dt);
    Py_DECREF(g);
    return NULL;
}

static int send_gradient(PyObject *node, PyObject *g_in, PyObject *meta_i, PyObject *nxt,
                         PyObject *nr, PyObject *buffers)
{
    PyObject *nb = NULL, *old = NULL;
    int rc = -1;
    PyObject *g = fit_gradient(node, g_in, meta_i);  /* owned */
    if (g == NULL)
        return -1;

    nb = PyDict_GetItemWithError(buffers, nxt);  /* borrowed, then owned below */
    if (nb == NULL && PyErr_Occurred())
        goto done;
    if (nb == NULL || nb == Py_None) {
        PyObject *n_out = PyObject_GetAttr(nxt, s_n_out);
        if (n_out == NULL)
            goto done;
        Py_ssize_t n = PyNumber_AsSsize_t(n_out, PyExc_OverflowError);
        Py_DECREF(n_out);
        if (n == -1 && PyErr_Occurred())
            goto done;
        nb = PyList_New(n < 0 ? 0 : n);
        if (nb == NULL)
            goto done;
        for (Py_ssize_t k = 0; k < n; k++) {
            Py_INCREF(Py_None);
            PyList_SET_ITEM(nb, k, Py_None);
        }
        if (PyDict_SetItem(buffers, nxt, nb) < 0 || PyObject_SetItem(nb, nr, g) < 0)
            goto done;
        rc = 0;
        goto done;
    }
    Py_INCREF(nb);
    old = PyObject_GetItem(nb, nr);
    if (old == NULL)
        goto done;
    if (old == Py_None) {
        rc = PyObject_SetItem(nb, nr, g);
        goto done;
    }
    PyObject *sum = add_into_buffer(old, g);
    if (sum == NULL)
        goto done;
    rc = PyObject_SetItem(nb, nr, sum);
    Py_DECREF(sum);
done:
    Py_XDECREF(old);
    Py_XDECREF(nb);
    Py_DECREF(g);
    return rc;
}

/* One node on the fast path (the body of _walk_nodes_python's `if plain and fn ... :` block),
 * from the freed-graph check to the dependency step of each input. `fn`, `buf` borrowed. */
static int run_fast_node(PyObject *node, PyObject *fn, PyObject *buf, PyObject *buffers,
                         PyObject *deps, PyObject *ready, PyObject *ready_leaves,
                         PyObject *accum_type, int retain_graph, PyObject **sink)
{
    PyObject *grads = NULL, *edges = NULL, *meta = NULL, *g0 = NULL;
    int rc = -1;

    /* if node._saved is None and node._freed: raise RuntimeError(FREED_MSG) */
    int none = attr_is_none(node, s_saved);
    if (none < 0)
        return -1;
    if (none) {
        int freed = attr_truth(node, s_freed);
        if (freed < 0)
            return -1;
        if (freed) {
            PyObject *msg = engine_global(s_FREED_MSG);
            if (msg != NULL)
                PyErr_SetObject(PyExc_RuntimeError, msg);
            return -1;
        }
    }
    PyObject *versions = PyObject_GetAttr(node, s_versions);
    if (versions == NULL)
        return -1;
    int bad = versions != Py_None ? check_versions(node, versions) : 0;
    Py_DECREF(versions);
    if (bad < 0)
        return -1;

    /* grads = fn.backward(node, buf[0]); a single gradient becomes (grads,) */
    g0 = PySequence_GetItem(buf, 0);
    if (g0 == NULL)
        return -1;
    PyObject *backward = PyObject_GetAttr(fn, s_backward);
    if (backward == NULL)
        goto done;
    PyObject *args[2] = {node, g0};
    grads = PyObject_Vectorcall(backward, args, 2, NULL);
    Py_DECREF(backward);
    if (grads == NULL)
        goto done;
    if (!PyTuple_CheckExact(grads)) {
        PyObject *t = PyTuple_Pack(1, grads);
        if (t == NULL)
            goto done;
        Py_SETREF(grads, t);
    }
    if (!retain_graph && release_node(node) < 0)
        goto done;

    edges = PyObject_GetAttr(node, s_edges);
    if (edges == NULL)
        goto done;
    Py_ssize_t n_edges = PyObject_Length(edges);
    if (n_edges < 0)
        goto done;
    if (PyTuple_GET_SIZE(grads) < n_edges) {
        PyObject *cargs[2] = {node, grads};
        PyObject *r = call_engine(s_check_grad_count, cargs, 2);
        if (r == NULL)
            goto done;
        Py_DECREF(r);
    }
    meta = PyObject_GetAttr(node, s_meta);
    if (meta == NULL)
        goto done;
    PyObject *edge_seq = PySequence_Fast(edges, "a node's _edges must be a sequence");
    if (edge_seq == NULL)
        goto done;
    for (Py_ssize_t i = 0; i < n_edges && i < PySequence_Fast_GET_SIZE(edge_seq); i++) {
        PyObject *edge = PySequence_Fast_GET_ITEM(edge_seq, i);  /* borrowed */
        PyObject *pair = unpack_pair(edge);  /* new: (nxt, nr) */
        if (pair == NULL) {
            Py_DECREF(edge_seq);
            goto done;
        }
        PyObject *nxt = PyTuple_GET_ITEM(pair, 0), *nr = PyTuple_GET_ITEM(pair, 1);
        if (nxt == Py_None) {
            Py_DECREF(pair);
            continue;
        }
        if (i >= PyTuple_GET_SIZE(grads)) {
            PyErr_SetString(PyExc_IndexError, "tuple index out of range");
            Py_DECREF(pair);
            Py_DECREF(edge_seq);
            goto done;
        }
        PyObject *g = PyTuple_GET_ITEM(grads, i);  /* borrowed (grads holds it) */
        int err = 0;
        if (sink != NULL) {  /* run_shallow: edge i's gradient, fitted, kept for its leaf */
            if (g != Py_None) {
                PyObject *meta_i = PySequence_GetItem(meta, i);
                sink[i] = meta_i == NULL ? NULL : fit_gradient(node, g, meta_i);
                err = sink[i] == NULL ? -1 : 0;
                Py_XDECREF(meta_i);
            }
        } else if (g != Py_None) {
            PyObject *meta_i = PySequence_GetItem(meta, i);
            err = meta_i == NULL ? -1 : send_gradient(node, g, meta_i, nxt, nr, buffers);
            Py_XDECREF(meta_i);
        }
        if (err == 0 && sink == NULL)
            err = release_dependency(nxt, deps, ready, ready_leaves, accum_type);
        Py_DECREF(pair);
        if (err < 0) {
            Py_DECREF(edge_seq);
            goto done;
        }
    }
    Py_DECREF(edge_seq);
    rc = 0;
done:
    Py_XDECREF(g0);
    Py_XDECREF(grads);
    Py_XDECREF(edges);
    Py_XDECREF(meta);
    return rc;
}

/* shape_of(a) != shape_of(b) for two objects with .shape: 1, 0, or -1 with an error. */
static int shapes_differ(PyObject *a, PyObject *b)
{
    PyObject *sa = PyObject_GetAttr(a, s_shape);
    PyObject *sb = sa ? PyObject_GetAttr(b, s_shape) : NULL;
    int r = sb ? PyObject_RichCompareBool(sa, sb, Py_NE) : -1;
    Py_XDECREF(sa);
    Py_XDECREF(sb);
    return r;
}

/* The common case of a leaf's AccumulateGrad node, as _run_node and _accumulate run it without
 * capture, create_graph, hooks or an in-place reshape of the leaf:
 *     leaf = node.variable; g = buf[0]; cur = leaf._grad
 *     if cur is None:
 *         owns = g.flags.writeable if type(g) is CPU_ARRAY and g.base is None else _owns(g)
 *         if not owns or id(g) in handed_out: g = _copy_grad(g)
 *         handed_out.add(id(g)); leaf._grad = TensorBase._make(g)
 *     else:  (in place when nothing else holds cur and its array: see _accumulate)
 *         new = cur._data + g
 *         cur._data = np.asarray(new) if isinstance(new, np.generic) else new
 *         handed_out.add(id(cur._data))
 * Returns 1 when done, 0 when the node is not that case (nothing was changed: the caller runs
 * _run_node), -1 with an error set. */
static int accumulate_leaf(PyObject *node, PyObject *buf, PyObject *handed_out)
{
    PyObject *g = NULL, *leaf = NULL, *v = NULL, *cur = NULL, *shape = NULL, *held = NULL;
    int rc = -1;
    PyObject *cpu = engine_global(s_CPU_ARRAY), *tb = cpu ? engine_global(s_TensorBase) : NULL;
    PyObject *np = tb ? engine_global(s_np) : NULL;
    if (np == NULL || !PyList_CheckExact(buf) || PyList_GET_SIZE(buf) < 1)
        return np == NULL ? -1 : 0;
    g = PyList_GET_ITEM(buf, 0);
    Py_INCREF(g);
    if (g == Py_None || PyObject_TypeCheck(g, (PyTypeObject *)tb)) {
        rc = 0;
        goto done;
    }
    /* buf[0].shape != node.shape: _to_recorded_leaf_shape (Python) */
    int differ = shapes_differ(g, node);
    if (differ != 0) {
        rc = differ < 0 ? -1 : 0;
        goto done;
    }
    leaf = PyObject_GetAttr(node, s_variable);
    if (leaf == NULL)
        goto done;
    /* a leaf that got a grad_fn since (moved into the graph interior): _accumulate raises */
    int hooked = attr_is_none(leaf, s_grad_fn);
    hooked = hooked < 0 ? -1 : !hooked;
    if (hooked == 0)
        hooked = attr_truth(leaf, s_hooks);
    if (hooked == 0)
        hooked = attr_truth(leaf, s_post_acc_hooks);
    if (hooked != 0) {
        rc = hooked < 0 ? -1 : 0;
        goto done;
    }
    cur = PyObject_GetAttr(leaf, s_grad);
    if (cur == NULL)
        goto done;
    if (cur == Py_None) {
        /* leaf._grad is None and g.shape != leaf._data.shape: _fit_to_reshaped_leaf (Python) */
        PyObject *data = PyObject_GetAttr(leaf, s_data);
        differ = data ? shapes_differ(g, data) : -1;
        Py_XDECREF(data);
        if (differ != 0) {
            rc = differ < 0 ? -1 : 0;
            goto done;
        }
        int owns;
        v = PyObject_GetAttr(g, s_base);
        if (v == NULL) {
            if ((PyObject *)Py_TYPE(g) == cpu || !PyErr_ExceptionMatches(PyExc_AttributeError))
                goto done;
            PyErr_Clear();  /* getattr(a, "base", None) */
            v = Py_NewRef(Py_None);
        }
        owns = v == Py_None;
        Py_CLEAR(v);
        if (owns && (PyObject *)Py_TYPE(g) == cpu) {
            PyObject *flags = PyObject_GetAttr(g, s_flags);
            owns = flags ? attr_truth(flags, s_writeable) : -1;
            Py_XDECREF(flags);
            if (owns < 0)
                goto done;
        } else if (!owns && (PyObject *)Py_TYPE(g) == cpu) {
            /* a view: engine.py's _owns decides (a view of a temporary nothing else holds) */
            PyObject *r = call_engine(s_owns, &g, 1);
            owns = r ? PyObject_IsTrue(r) : -1;
            Py_XDECREF(r);
            if (owns < 0)
                goto done;
        }
        PyObject *id = PyLong_FromVoidPtr(g);
        int given = id ? PySet_Contains(handed_out, id) : -1;
        Py_XDECREF(id);
        if (given < 0)
            goto done;
        if (!owns || given) {
            PyObject *c = call_engine(s_copy_grad, &g, 1);  /* (engine.py's _copy_grad) */
            if (c == NULL)
                goto done;
            Py_SETREF(g, c);
        }
        id = PyLong_FromVoidPtr(g);
        if (id == NULL || PySet_Add(handed_out, id) < 0) {
            Py_XDECREF(id);
            goto done;
        }
        Py_DECREF(id);
        PyObject *make = PyObject_GetAttr(tb, s_make);
        PyObject *t = make ? PyObject_CallOneArg(make, g) : NULL;
        Py_XDECREF(make);
        if (t == NULL)
            goto done;
        int err = PyObject_SetAttr(leaf, s_grad, t);
        Py_DECREF(t);
        rc = err < 0 ? -1 : 1;
        goto done;
    }
    /* an existing .grad of another shape: _check_adds_in_place (Python) */
    held = PyObject_GetAttr(cur, s_data);
    if (held == NULL)
        goto done;
    differ = shapes_differ(g, held);
    if (differ != 0) {
        rc = differ < 0 ? -1 : 0;
        goto done;
    }
    /* in place when only cur holds held (refcount 2: cur._data's and ours), a CPU array with
     * no base, g's dtype, writeable, not handed out this backward (_accumulate's rule) */
    if (Py_REFCNT(held) == 2) {
        int ok = addable_in_place(held, g, cpu);
        if (ok > 0) {
            PyObject *id = PyLong_FromVoidPtr(held);
            int given = id ? PySet_Contains(handed_out, id) : -1;
            Py_XDECREF(id);
            ok = given < 0 ? -1 : !given;
        }
        if (ok < 0)
            goto done;
        if (ok) {
            PyObject *r = grad_sum(held, g, 1, cpu);  /* (ndarray.__iadd__'s) */
            if (r == NULL)
                goto done;
            Py_DECREF(r);
            rc = 1;
            goto done;
        }
    }
    PyObject *sum = grad_sum(held, g, 0, cpu);  /* a new array: never += into a shared buffer */
    if (sum == NULL)
        goto done;
    PyObject *generic = PyObject_GetAttr(np, s_generic);
    int is_scalar = generic ? PyObject_IsInstance(sum, generic) : -1;
    Py_XDECREF(generic);
    if (is_scalar > 0) {
        PyObject *asarray = PyObject_GetAttr(np, s_asarray);
        PyObject *arr = asarray ? PyObject_CallOneArg(asarray, sum) : NULL;
        Py_XDECREF(asarray);
        Py_SETREF(sum, arr);
    }
    if (is_scalar < 0 || sum == NULL || PyObject_SetAttr(cur, s_data, sum) < 0) {
        Py_XDECREF(sum);
        goto done;
    }
    Py_DECREF(sum);
    v = PyObject_GetAttr(cur, s_data);  /* handed_out.add(id(cur._data)) */
    PyObject *id = v ? PyLong_FromVoidPtr(v) : NULL;
    int err = id ? PySet_Add(handed_out, id) : -1;
    Py_XDECREF(id);
    rc = err < 0 ? -1 : 1;
done:
    Py_XDECREF(g);
    Py_XDECREF(leaf);
    Py_XDECREF(v);
    Py_XDECREF(cur);
    Py_XDECREF(shape);
    Py_XDECREF(held);
    return rc;
}

/* Whether `node` (borrowed) takes the fast path; `*fn_out` gets a new reference to node._fn.
 *     plain and fn is not None and not fn._tensor_io and node._n_out == 1
 *     and node._post_hooks is None and node._grads_to_cpu is None
 *     and not _function.anomaly_enabled
 * Returns 1, 0, or -1 with an error set. */
static int takes_fast_path(PyObject *node, int plain, PyObject *function_dict,
                           PyObject **fn_out)
{
    PyObject *fn = PyObject_GetAttr(node, s_fn);
    if (fn == NULL)
        return -1;
    *fn_out = fn;
    if (!plain || fn == Py_None)
        return 0;
    int t = attr_truth(fn, s_tensor_io);
    if (t != 0)
        return t < 0 ? -1 : 0;
    PyObject *n_out = PyObject_GetAttr(node, s_n_out);
    if (n_out == NULL)
        return -1;
    int one;
    if (PyLong_CheckExact(n_out)) {
        int overflow;
        one = PyLong_AsLongAndOverflow(n_out, &overflow) == 1 && !overflow;
    } else {
        PyObject *c = PyLong_FromLong(1);
        one = c == NULL ? -1 : PyObject_RichCompareBool(n_out, c, Py_EQ);
        Py_XDECREF(c);
    }
    Py_DECREF(n_out);
    if (one != 1)
        return one;
    int none = attr_is_none(node, s_post_hooks);
    if (none != 1)
        return none;
    none = attr_is_none(node, s_grads_to_cpu);
    if (none != 1)
        return none;
    PyObject *anomaly = PyDict_GetItemWithError(function_dict, s_anomaly_enabled);
    if (anomaly == NULL) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_AttributeError,
                            "module 'ember.autograd.function' has no attribute 'anomaly_enabled'");
        return -1;
    }
    int on = PyObject_IsTrue(anomaly);
    return on < 0 ? -1 : !on;
}

/* dependencies(roots): engine.py's _dependencies_python. For every node reachable from the
 * roots, how many edges point at it (an iterative depth-first search):
 *     deps = {}; seen = set(roots); stack = list(seen)
 *     while stack:
 *         node = stack.pop()
 *         for nxt, _ in node._edges:
 *             if nxt is not None:
 *                 deps[nxt] = deps.get(nxt, 0) + 1
 *                 if nxt not in seen: seen.add(nxt); stack.append(nxt)
 *     return deps
 */
PyObject *ember_engine_dependencies(PyObject *self, PyObject *roots)
{
    (void)self;
    PyObject *deps = PyDict_New(), *seen = PySet_New(roots), *stack = NULL, *node = NULL;
    if (deps == NULL || seen == NULL || (stack = PySequence_List(seen)) == NULL)
        goto error;
    while (PyList_GET_SIZE(stack)) {
        node = list_pop_last(stack);
        if (node == NULL)
            goto error;
        PyObject *edges = PyObject_GetAttr(node, s_edges);
        PyObject *seq = edges ? PySequence_Fast(edges, "a node's _edges must be a sequence") : NULL;
        Py_XDECREF(edges);
        if (seq == NULL)
            goto error;
        for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq); i++) {
            PyObject *pair = unpack_pair(PySequence_Fast_GET_ITEM(seq, i));
            if (pair == NULL) {
                Py_DECREF(seq);
                goto error;
            }
            PyObject *nxt = PyTuple_GET_ITEM(pair, 0);
            int err = 0;
            if (nxt != Py_None) {
                PyObject *count = PyDict_GetItemWithError(deps, nxt);  /* borrowed */
                long c = 0;
                if (count == NULL && PyErr_Occurred())
                    err = -1;
                else if (count != NULL && (c = PyLong_AsLong(count)) == -1 && PyErr_Occurred())
                    err = -1;
                PyObject *next_count = err ? NULL : PyLong_FromLong(c + 1);
                if (next_count == NULL || PyDict_SetItem(deps, nxt, next_count) < 0)
                    err = -1;
                Py_XDECREF(next_count);
                if (!err) {
                    int known = PySet_Contains(seen, nxt);
                    if (known < 0)
                        err = -1;
                    else if (!known && (PySet_Add(seen, nxt) < 0 || PyList_Append(stack, nxt) < 0))
                        err = -1;
                }
            }
            Py_DECREF(pair);
            if (err) {
                Py_DECREF(seq);
                goto error;
            }
        }
        Py_DECREF(seq);
        Py_CLEAR(node);
    }
    Py_DECREF(seen);
    Py_DECREF(stack);
    return deps;
error:
    Py_XDECREF(node);
    Py_XDECREF(deps);
    Py_XDECREF(seen);
    Py_XDECREF(stack);
    return NULL;
}

/* walk_nodes(ready, ready_leaves, buffers, deps, needed, capture, handed_out, retain_graph,
 *            create_graph): engine.py's _walk_nodes_python. */
PyObject *ember_engine_walk_nodes(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    if (nargs != 9) {
        PyErr_Format(PyExc_TypeError, "walk_nodes() takes 9 arguments (%zd given)", nargs);
        return NULL;
    }
    PyObject *ready = args[0], *ready_leaves = args[1], *buffers = args[2], *deps = args[3];
    PyObject *needed = args[4], *capture = args[5], *handed_out = args[6];
    if (!PyList_CheckExact(ready) || !PyList_CheckExact(ready_leaves)
        || !PyDict_CheckExact(buffers) || !PyDict_CheckExact(deps)) {
        PyErr_SetString(PyExc_TypeError, "walk_nodes(): ready lists and buffers/deps dicts");
        return NULL;
    }
    int retain_graph = PyObject_IsTrue(args[7]);
    int create_graph = PyObject_IsTrue(args[8]);
    if (retain_graph < 0 || create_graph < 0)
        return NULL;
    int plain = capture == Py_None && !create_graph;

    /* looked up once per walk, as the Python loop reads them from the same namespaces */
    PyObject *accum_type = engine_global(s_AccumulateGrad);
    PyObject *function_mod = accum_type ? engine_global(s_function) : NULL;
    if (function_mod == NULL)
        return NULL;
    PyObject *function_dict = PyModule_GetDict(function_mod);  /* borrowed */
    if (function_dict == NULL)
        return NULL;
    Py_INCREF(accum_type);
    Py_INCREF(function_mod);  /* keeps function_dict alive */

    PyObject *node = NULL, *buf = NULL, *fn = NULL, *edges = NULL;
    while (PyList_GET_SIZE(ready) || PyList_GET_SIZE(ready_leaves)) {
        node = list_pop_last(PyList_GET_SIZE(ready_leaves) ? ready_leaves : ready);
        if (node == NULL)
            goto error;
        buf = dict_pop(buffers, node);
        if (buf == NULL && PyErr_Occurred())
            goto error;
        int run = buf != NULL;
        if (run && needed != Py_None) {
            run = PySet_Contains(needed, node);
            if (run < 0)
                goto error;
        }
        if (run) {
            int no_pre = attr_is_none(node, s_pre_hooks);
            int no_retain = no_pre < 0 ? -1 : attr_is_none(node, s_retain);
            if (no_retain < 0)
                goto error;
            if (!no_pre || !no_retain) {
                PyObject *hargs[2] = {node, buf};
                PyObject *r = call_engine(s_run_pre_hooks, hargs, 2);
                if (r == NULL)
                    goto error;
                Py_DECREF(r);
            }
            int fast = takes_fast_path(node, plain, function_dict, &fn);
            if (fast < 0)
                goto error;
            if (fast) {
                if (run_fast_node(node, fn, buf, buffers, deps, ready, ready_leaves, accum_type,
                                  retain_graph, NULL) < 0)
                    goto error;
                Py_CLEAR(fn);
                Py_CLEAR(buf);
                Py_CLEAR(node);
                continue;
            }
            Py_CLEAR(fn);
            int done = 0;  /* a leaf's AccumulateGrad: its common case here, else _run_node */
            if (plain && (PyObject *)Py_TYPE(node) == accum_type && PySet_Check(handed_out)) {
                done = accumulate_leaf(node, buf, handed_out);
                if (done < 0)
                    goto error;
            }
            if (!done) {
                PyObject *rargs[7] = {node, buf, buffers, capture, handed_out, args[7], args[8]};
                PyObject *r = call_engine(s_run_node, rargs, 7);
                if (r == NULL)
                    goto error;
                Py_DECREF(r);
            }
        }
        Py_CLEAR(buf);
        /* for nxt, _ in node._edges: if nxt is not None: (the dependency step) */
        edges = PyObject_GetAttr(node, s_edges);
        if (edges == NULL)
            goto error;
        PyObject *seq = PySequence_Fast(edges, "a node's _edges must be a sequence");
        if (seq == NULL)
            goto error;
        for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq); i++) {
            PyObject *pair = unpack_pair(PySequence_Fast_GET_ITEM(seq, i));
            if (pair == NULL) {
                Py_DECREF(seq);
                goto error;
            }
            PyObject *nxt = PyTuple_GET_ITEM(pair, 0);
            int err = nxt == Py_None ? 0
                      : release_dependency(nxt, deps, ready, ready_leaves, accum_type);
            Py_DECREF(pair);
            if (err < 0) {
                Py_DECREF(seq);
                goto error;
            }
        }
        Py_DECREF(seq);
        Py_CLEAR(edges);
        Py_CLEAR(node);
    }
    Py_DECREF(accum_type);
    Py_DECREF(function_mod);
    Py_RETURN_NONE;
error:
    Py_XDECREF(node);
    Py_XDECREF(buf);
    Py_XDECREF(fn);
    Py_XDECREF(edges);
    Py_DECREF(accum_type);
    Py_DECREF(function_mod);
    return NULL;
}

/* A chain (engine.py's _shallow): its nodes, each with its _fn and _edges (new references). */
#define SHALLOW_MAX 64
typedef struct {
    Py_ssize_t n;
    PyObject *nodes[SHALLOW_MAX], *fns[SHALLOW_MAX], *edges[SHALLOW_MAX];
} chain_t;

static void chain_clear(chain_t *c)
{
    for (Py_ssize_t i = 0; i < c->n; i++) {
        Py_DECREF(c->nodes[i]);
        Py_DECREF(c->fns[i]);
        Py_DECREF(c->edges[i]);
    }
    c->n = 0;
}

/* engine.py's _shallow(node, nr), for the native walk: whether the graph under the root is a
 * chain (each node takes the fast path and has no pre-hooks or retained grad; its edges lead to
 * leaves' AccumulateGrad nodes with nr 0, or to None, and to at most one further node; no leaf
 * reached twice; at most SHALLOW_MAX nodes, leaves, and edges per node). 1 with `c` filled, 0
 * when not (an edge table that is not a tuple of 2-tuples too: the walk handles it), -1 with an
 * error set. */
static int is_shallow(PyObject *node, PyObject *nr, PyObject *accum_type,
                      PyObject *function_dict, chain_t *c)
{
    PyObject *leaves[SHALLOW_MAX];
    Py_ssize_t n_leaves = 0;
    int overflow;
    c->n = 0;
    while (node != NULL) {
        if (!PyLong_CheckExact(nr) || PyLong_AsLongAndOverflow(nr, &overflow) != 0 || overflow)
            goto no;
        if (c->n >= SHALLOW_MAX)
            goto no;
        PyObject *fn = NULL;
        int ok = takes_fast_path(node, 1, function_dict, &fn);
        if (ok == 1)
            ok = attr_is_none(node, s_pre_hooks);
        if (ok == 1)
            ok = attr_is_none(node, s_retain);
        PyObject *edges = ok == 1 ? PyObject_GetAttr(node, s_edges) : NULL;
        if (ok == 1 && edges == NULL)
            ok = -1;
        if (ok == 1 && (!PyTuple_CheckExact(edges) || PyTuple_GET_SIZE(edges) > SHALLOW_MAX))
            ok = 0;
        if (ok != 1) {
            Py_XDECREF(fn);
            Py_XDECREF(edges);
            if (ok < 0)
                goto error;
            goto no;
        }
        c->nodes[c->n] = Py_NewRef(node);
        c->fns[c->n] = fn;
        c->edges[c->n] = edges;
        c->n++;
        node = NULL;
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(edges); i++) {
            PyObject *e = PyTuple_GET_ITEM(edges, i);
            if (!PyTuple_CheckExact(e) || PyTuple_GET_SIZE(e) != 2)
                goto no;
            PyObject *nxt = PyTuple_GET_ITEM(e, 0), *k = PyTuple_GET_ITEM(e, 1);
            if (nxt == Py_None)
                continue;
            if ((PyObject *)Py_TYPE(nxt) == accum_type) {
                if (!PyLong_CheckExact(k) || PyLong_AsLongAndOverflow(k, &overflow) != 0
                    || overflow || n_leaves >= SHALLOW_MAX)
                    goto no;
                for (Py_ssize_t j = 0; j < n_leaves; j++)
                    if (leaves[j] == nxt)
                        goto no;
                leaves[n_leaves++] = nxt;  /* (borrowed: the edge tuples hold them) */
            } else if (node == NULL) {
                node = nxt;
                nr = k;
            } else {
                goto no;  /* two inner nodes, or one reached twice: the walk's counts */
            }
        }
    }
    return 1;
no:
    if (PyErr_Occurred())
        goto error;
    chain_clear(c);
    return 0;
error:
    chain_clear(c);
    return -1;
}

/* engine.py's _run_shallow_python(chain, g, handed_out, retain_graph): the walk's steps for a
 * chain (is_shallow): each node's fast path (run_fast_node, its gradients kept per edge instead
 * of in buffer dicts), then the leaves it sent a gradient to, the last edge's first (the walk's
 * ready_leaves, which run before the next node): pre-hooks, accumulate_leaf's common case,
 * else _run_node. Returns 0, or -1 with an error set. */
static int run_shallow(chain_t *c, PyObject *g, PyObject *handed_out, PyObject *retain,
                       PyObject *accum_type)
{
    PyObject *sink[SHALLOW_MAX];
    Py_ssize_t n = 0;
    int retain_graph = PyObject_IsTrue(retain);
    if (retain_graph < 0)
        return -1;
    int rc = -1;
    PyObject *buf = NULL, *buffers = NULL;
    Py_INCREF(g);  /* the gradient of the node about to run (owned) */
    for (Py_ssize_t k = 0; k < c->n; k++) {
        if (g == NULL) {  /* the node got no gradient: nothing under it runs */
            rc = 0;
            goto done;
        }
        PyObject *node = c->nodes[k], *edges = c->edges[k];
        n = PyTuple_GET_SIZE(edges);
        for (Py_ssize_t i = 0; i < n; i++)
            sink[i] = NULL;
        buf = PyList_New(1);
        if (buf == NULL)
            goto done;
        PyList_SET_ITEM(buf, 0, g);  /* (stolen) */
        g = NULL;
        if (run_fast_node(node, c->fns[k], buf, NULL, NULL, NULL, NULL, accum_type,
                          retain_graph, sink) < 0)
            goto done;
        Py_CLEAR(buf);
        for (Py_ssize_t i = 0; i < n; i++) {  /* the next node's gradient */
            PyObject *nxt = PyTuple_GET_ITEM(PyTuple_GET_ITEM(edges, i), 0);
            if (nxt != Py_None && (PyObject *)Py_TYPE(nxt) != accum_type) {
                g = sink[i];
                sink[i] = NULL;
            }
        }
        for (Py_ssize_t i = n - 1; i >= 0; i--) {
            if (sink[i] == NULL)
                continue;
            PyObject *nxt = PyTuple_GET_ITEM(PyTuple_GET_ITEM(edges, i), 0);
            buf = PyList_New(1);
            if (buf == NULL)
                goto done;
            PyList_SET_ITEM(buf, 0, sink[i]);  /* (stolen) */
            sink[i] = NULL;
            int no_pre = attr_is_none(nxt, s_pre_hooks);
            int no_retain = no_pre < 0 ? -1 : attr_is_none(nxt, s_retain);
            if (no_retain < 0)
                goto done;
            if (!no_pre || !no_retain) {
                PyObject *hargs[2] = {nxt, buf};
                PyObject *r = call_engine(s_run_pre_hooks, hargs, 2);
                if (r == NULL)
                    goto done;
                Py_DECREF(r);
            }
            int ok = accumulate_leaf(nxt, buf, handed_out);
            if (ok < 0)
                goto done;
            if (!ok) {
                if (buffers == NULL && (buffers = PyDict_New()) == NULL)
                    goto done;
                PyObject *rargs[7] = {nxt, buf, buffers, Py_None, handed_out, retain, Py_False};
                PyObject *r = call_engine(s_run_node, rargs, 7);
                if (r == NULL)
                    goto done;
                Py_DECREF(r);
            }
            Py_CLEAR(buf);
        }
        n = 0;
    }
    rc = 0;
done:
    for (Py_ssize_t i = 0; i < n; i++)
        Py_XDECREF(sink[i]);
    Py_XDECREF(g);
    Py_XDECREF(buf);
    Py_XDECREF(buffers);
    return rc;
}

/* The roots' gradients into the buffers (run_backward's first loop):
 *     for node, nr, g in roots:
 *         buf = buffers.get(node)
 *         if buf is None: buf = buffers[node] = [None] * node._n_out
 *         buf[nr] = g if buf[nr] is None else buf[nr] + g
 *         handed_out.add(id(g))
 * `root_nodes` gets each root's node. Returns 0, or -1 with an error. */
static int seed_roots(PyObject *roots, PyObject *root_nodes, PyObject *buffers,
                      PyObject *handed_out)
{
    PyObject *seq = PySequence_Fast(roots, "run_backward(): roots must be a sequence");
    if (seq == NULL)
        return -1;
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq); i++) {
        PyObject *root = PySequence_Tuple(PySequence_Fast_GET_ITEM(seq, i));
        if (root == NULL || PyTuple_GET_SIZE(root) != 3) {
            if (root != NULL) {
                PyErr_Format(PyExc_ValueError, "expected 3 values to unpack (got %zd)",
                             PyTuple_GET_SIZE(root));
                Py_DECREF(root);
            }
            Py_DECREF(seq);
            return -1;
        }
        PyObject *node = PyTuple_GET_ITEM(root, 0), *nr = PyTuple_GET_ITEM(root, 1);
        PyObject *g = PyTuple_GET_ITEM(root, 2), *buf, *old = NULL, *id = NULL;
        int err = PyList_Append(root_nodes, node);
        buf = err ? NULL : PyDict_GetItemWithError(buffers, node);
        if (buf == NULL && !PyErr_Occurred()) {
            PyObject *n_out = PyObject_GetAttr(node, s_n_out);
            Py_ssize_t n = n_out ? PyNumber_AsSsize_t(n_out, PyExc_OverflowError) : -1;
            Py_XDECREF(n_out);
            buf = n < 0 && PyErr_Occurred() ? NULL : PyList_New(n < 0 ? 0 : n);
            for (Py_ssize_t k = 0; buf != NULL && k < n; k++)
                PyList_SET_ITEM(buf, k, Py_NewRef(Py_None));
            if (buf != NULL && PyDict_SetItem(buffers, node, buf) < 0)
                Py_CLEAR(buf);
        } else {
            Py_XINCREF(buf);
        }
        err = buf == NULL ? -1 : 0;
        old = err ? NULL : PyObject_GetItem(buf, nr);
        if (old == NULL) {
            err = -1;
        } else if (old == Py_None) {
            err = PyObject_SetItem(buf, nr, g);
        } else {
            PyObject *sum = PyNumber_Add(old, g);
            err = sum ? PyObject_SetItem(buf, nr, sum) : -1;
            Py_XDECREF(sum);
        }
        if (!err) {
            id = PyLong_FromVoidPtr(g);
            err = id ? PySet_Add(handed_out, id) : -1;
        }
        Py_XDECREF(id);
        Py_XDECREF(old);
        Py_XDECREF(buf);
        Py_DECREF(root);
        if (err) {
            Py_DECREF(seq);
            return -1;
        }
    }
    Py_DECREF(seq);
    return 0;
}

/* The nodes that can run first: a single root unless an edge points at it; else each root
 * once, in order, that no edge points at. New reference. */
static PyObject *first_ready(PyObject *root_nodes, PyObject *deps)
{
    Py_ssize_t n = PyList_GET_SIZE(root_nodes);
    if (n == 1) {  /* ready = root_nodes if root_nodes[0] not in deps else [] */
        int in = PyDict_Contains(deps, PyList_GET_ITEM(root_nodes, 0));
        if (in < 0)
            return NULL;
        return in ? PyList_New(0) : Py_NewRef(root_nodes);
    }
    /* [n for n in dict.fromkeys(root_nodes) if deps.get(n, 0) == 0] */
    PyObject *ready = PyList_New(0), *seen = PySet_New(NULL);
    if (ready == NULL || seen == NULL)
        goto error;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *node = PyList_GET_ITEM(root_nodes, i);
        int dup = PySet_Contains(seen, node);
        if (dup < 0 || (!dup && PySet_Add(seen, node) < 0))
            goto error;
        if (dup)
            continue;
        PyObject *count = PyDict_GetItemWithError(deps, node);
        if (count == NULL && PyErr_Occurred())
            goto error;
        int zero_deps = 1;
        if (count != NULL) {
            long c = PyLong_AsLong(count);
            if (c == -1 && PyErr_Occurred())
                goto error;
            zero_deps = c == 0;
        }
        if (zero_deps && PyList_Append(ready, node) < 0)
            goto error;
    }
    Py_DECREF(seen);
    return ready;
error:
    Py_XDECREF(ready);
    Py_XDECREF(seen);
    return NULL;
}

/* run_backward(roots, retain_graph, create_graph, capture=None): engine.py's
 * _run_backward_python, for a backward without capture (autograd.grad's runs go to Python). */
PyObject *ember_engine_run_backward(PyObject *self, PyObject *const *args, size_t nargsf,
                                    PyObject *kwnames)
{
    (void)self;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (kwnames != NULL || nargs < 3 || nargs > 4 || (nargs == 4 && args[3] != Py_None)) {
        PyObject *py = engine_global(s_run_backward_python);
        return py ? PyObject_Vectorcall(py, args, nargsf, kwnames) : NULL;
    }
    PyObject *root_nodes = NULL, *buffers = NULL, *handed_out = PySet_New(NULL);
    PyObject *deps = NULL, *ready = NULL, *ready_leaves = NULL, *callbacks = NULL;
    PyObject *final = NULL, *state = NULL, *was = NULL, *result = NULL;
    PyObject *shallow_root = NULL, *accum_type = NULL;
    chain_t chain;
    chain.n = 0;
    if (handed_out == NULL)
        goto done;
    /* shallow = (not create_graph and len(roots) == 1 and _walk_nodes is the C walk
     *            and _shallow(node, nr)): run_shallow instead of the dependency counts and walk */
    int create = PyObject_IsTrue(args[2]);
    if (create < 0)
        goto done;
    PyObject *walk_fn = engine_global(s_walk_nodes);
    if (walk_fn == NULL)
        goto done;
    if (!create && PyList_CheckExact(args[0]) && PyList_GET_SIZE(args[0]) == 1
        && PyTuple_CheckExact(PyList_GET_ITEM(args[0], 0))
        && PyTuple_GET_SIZE(PyList_GET_ITEM(args[0], 0)) == 3
        && PyCFunction_Check(walk_fn)
        && PyCFunction_GET_FUNCTION(walk_fn) == (PyCFunction)(void (*)(void))ember_engine_walk_nodes) {
        PyObject *root = PyList_GET_ITEM(args[0], 0);
        accum_type = engine_global(s_AccumulateGrad);
        PyObject *function_mod = accum_type ? engine_global(s_function) : NULL;
        PyObject *fdict = function_mod ? PyModule_GetDict(function_mod) : NULL;  /* borrowed */
        if (fdict == NULL)
            goto done;
        Py_INCREF(accum_type);
        int sh = is_shallow(PyTuple_GET_ITEM(root, 0), PyTuple_GET_ITEM(root, 1), accum_type,
                            fdict, &chain);
        if (sh < 0)
            goto done;
        if (sh) {  /* handed_out.add(id(g)) */
            shallow_root = Py_NewRef(root);
            PyObject *id = PyLong_FromVoidPtr(PyTuple_GET_ITEM(root, 2));
            int err = id ? PySet_Add(handed_out, id) : -1;
            Py_XDECREF(id);
            if (err < 0)
                goto done;
        }
    }
    if (shallow_root == NULL) {
        root_nodes = PyList_New(0);
        buffers = root_nodes ? PyDict_New() : NULL;
        if (buffers == NULL)
            goto done;
        if (seed_roots(args[0], root_nodes, buffers, handed_out) < 0)
            goto done;
        /* deps = _dependencies(root_nodes) (the namespace's: C or Python) */
        PyObject *dargs[1] = {root_nodes};
        deps = call_engine(s_dependencies, dargs, 1);
        if (deps == NULL)
            goto done;
        if (!PyDict_CheckExact(deps)) {
            PyErr_SetString(PyExc_TypeError, "_dependencies() must return a dict");
            goto done;
        }
        ready = first_ready(root_nodes, deps);
        ready_leaves = ready ? PyList_New(0) : NULL;
        if (ready_leaves == NULL)
            goto done;
    }
    callbacks = PyList_New(0);
    final = callbacks ? engine_global(s_final_callbacks) : NULL;
    if (final == NULL)
        goto done;
    Py_INCREF(final);
    if (PyList_Append(final, callbacks) < 0)
        goto done_final_unpushed;
    /* try: mode.enabled = create_graph; try: walk finally: mode.enabled = was_enabled */
    PyObject *gm = engine_global(s_grad_mode);
    state = gm ? PyObject_GetAttr(gm, s_state) : NULL;
    was = state ? PyObject_GetAttr(state, s_enabled) : NULL;
    if (was != NULL && PyObject_SetAttr(state, s_enabled, args[2]) == 0) {
        PyObject *r;
        if (shallow_root != NULL) {
            r = run_shallow(&chain, PyTuple_GET_ITEM(shallow_root, 2), handed_out, args[1],
                            accum_type) < 0 ? NULL : Py_NewRef(Py_None);
        } else {
            PyObject *wargs[9] = {ready, ready_leaves, buffers, deps, Py_None, Py_None,
                                  handed_out, args[1], args[2]};
            PyObject *walk = engine_global(s_walk_nodes);
            r = walk ? PyObject_Vectorcall(walk, wargs, 9, NULL) : NULL;
        }
        PyObject *et, *ev, *etb;
        PyErr_Fetch(&et, &ev, &etb);
        if (PyObject_SetAttr(state, s_enabled, was) < 0) {  /* (finally: restored) */
            Py_XDECREF(r);
            r = NULL;
            Py_XDECREF(et);
            Py_XDECREF(ev);
            Py_XDECREF(etb);
        } else {
            PyErr_Restore(et, ev, etb);
        }
        /* i = 0; while i < len(callbacks): callbacks[i](); i += 1 (a callback may queue one) */
        for (Py_ssize_t i = 0; r != NULL && i < PyList_GET_SIZE(callbacks); i++) {
            PyObject *cb = Py_NewRef(PyList_GET_ITEM(callbacks, i));
            PyObject *cr = PyObject_CallNoArgs(cb);
            Py_DECREF(cb);
            Py_DECREF(r);
            r = cr;
        }
        if (r != NULL) {
            Py_DECREF(r);
            result = Py_NewRef(Py_None);
        }
    }
    /* finally: _final_callbacks.pop() */
    PyObject *et, *ev, *etb;
    PyErr_Fetch(&et, &ev, &etb);
    PyObject *popped = PyObject_CallMethodNoArgs(final, s_pop);
    if (popped == NULL) {
        Py_CLEAR(result);
        Py_XDECREF(et);
        Py_XDECREF(ev);
        Py_XDECREF(etb);
    } else {
        Py_DECREF(popped);
        PyErr_Restore(et, ev, etb);
    }
done_final_unpushed:
    Py_DECREF(final);
done:
    Py_XDECREF(root_nodes);
    Py_XDECREF(buffers);
    Py_XDECREF(handed_out);
    Py_XDECREF(deps);
    Py_XDECREF(ready);
    Py_XDECREF(ready_leaves);
    Py_XDECREF(callbacks);
    Py_XDECREF(state);
    Py_XDECREF(was);
    chain_clear(&chain);
    Py_XDECREF(shallow_root);
    Py_XDECREF(accum_type);
    return result;
}

/* _ones(d) for a one-element CPU array `d`: for a 0-d one, a copy of the array _ones made for
 * its dtype the first time (kept per dtype, never handed out: np.array(1, dtype) costs about
 * 0.15 us and the Python call as much again, a copy 0.1 us); else _ones itself. New ref. */
static PyObject *ones_0d = NULL;  /* dtype -> _ones(d) of a 0-d d */
static PyObject *implicit_ones(PyObject *d)
{
    PyObject *ndim = PyObject_GetAttrString(d, "ndim");
    if (ndim == NULL)
        return NULL;
    int zero = PyLong_CheckExact(ndim) && PyLong_AsLong(ndim) == 0;
    Py_DECREF(ndim);
    if (!zero)
        return call_engine(s_ones, &d, 1);
    if (ones_0d == NULL && (ones_0d = PyDict_New()) == NULL)
        return NULL;
    PyObject *dt = PyObject_GetAttr(d, s_dtype);
    if (dt == NULL)
        return NULL;
    PyObject *one = PyDict_GetItemWithError(ones_0d, dt);  /* borrowed */
    if (one == NULL) {
        one = PyErr_Occurred() ? NULL : call_engine(s_ones, &d, 1);
        if (one == NULL || PyDict_SetItem(ones_0d, dt, one) < 0) {
            Py_XDECREF(one);
            Py_DECREF(dt);
            return NULL;
        }
        Py_DECREF(one);  /* (the dict holds it) */
    }
    Py_DECREF(dt);
    return PyObject_CallMethodNoArgs(one, s_copy);
}

/* backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, inputs=None):
 * engine.py's backward, its common call in C (loss.backward(): one tensor with a graph whose
 * data is a one-element CPU array; no gradient, inputs or create_graph):
 *     run_backward([(fn, tensors._output_nr, _ones(d))], bool(retain_graph), False)
 * with engine.py's run_backward as bound at the call (the tracer replaces it); every other call
 * goes to engine.py's _backward_python. */
PyObject *ember_engine_backward(PyObject *self, PyObject *const *args, size_t nargsf,
                                PyObject *kwnames)
{
    (void)self;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    PyObject *v[5] = {NULL, Py_None, Py_None, Py_False, Py_None};
    PyObject *fn = NULL, *d = NULL, *size = NULL, *g = NULL, *nr = NULL, *roots = NULL;
    PyObject *result = NULL;
    if (nargs < 1 || nargs > 5)
        goto python;
    for (Py_ssize_t i = 0; i < nargs; i++)
        v[i] = args[i];
    if (kwnames != NULL) {
        for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(kwnames); k++) {
            if (nargs >= 5
                || PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(kwnames, k), "inputs") != 0)
                goto python;
            v[4] = args[nargs + k];
        }
    }
    if (v[1] != Py_None || v[4] != Py_None)
        goto python;
    int create = v[3] == Py_False ? 0 : PyObject_IsTrue(v[3]);
    if (create != 0) {
        if (create < 0)
            return NULL;
        goto python;
    }
    PyObject *tb = engine_global(s_TensorBase), *cpu = tb ? engine_global(s_CPU_ARRAY) : NULL;
    if (cpu == NULL)
        return NULL;
    if (!PyObject_TypeCheck(v[0], (PyTypeObject *)tb))
        goto python;
    fn = PyObject_GetAttr(v[0], s_grad_fn);
    if (fn == NULL)
        return NULL;
    if (fn == Py_None)
        goto python_clear;
    d = PyObject_GetAttr(v[0], s_data);
    if (d == NULL)
        goto done;
    if ((PyObject *)Py_TYPE(d) != cpu)
        goto python_clear;
    size = PyObject_GetAttr(d, s_size);
    if (size == NULL)
        goto done;
    int overflow;
    if (!PyLong_CheckExact(size) || PyLong_AsLongAndOverflow(size, &overflow) != 1 || overflow) {
        if (PyErr_Occurred())
            goto done;
        goto python_clear;
    }
    int retain = PyObject_IsTrue(v[2]);
    if (retain < 0)
        goto done;
    g = implicit_ones(d);
    nr = g ? PyObject_GetAttr(v[0], s_output_nr) : NULL;
    PyObject *root = nr ? PyTuple_Pack(3, fn, nr, g) : NULL;
    roots = root ? PyList_New(1) : NULL;
    if (roots == NULL) {
        Py_XDECREF(root);
        goto done;
    }
    PyList_SET_ITEM(roots, 0, root);
    PyObject *rargs[3] = {roots, retain ? Py_True : Py_False, Py_False};
    PyObject *rb = engine_global(s_run_backward);
    if (rb == NULL)
        goto done;
    PyObject *r;
    if (PyCFunction_Check(rb)
        && PyCFunction_GET_FUNCTION(rb) == (PyCFunction)(void (*)(void))ember_engine_run_backward)
        r = ember_engine_run_backward(NULL, rargs, 3, NULL);
    else {
        Py_INCREF(rb);  /* the call may rebind the name */
        r = PyObject_Vectorcall(rb, rargs, 3, NULL);
        Py_DECREF(rb);
    }
    if (r == NULL)
        goto done;
    Py_DECREF(r);
    result = Py_NewRef(Py_None);
done:
    Py_XDECREF(fn);
    Py_XDECREF(d);
    Py_XDECREF(size);
    Py_XDECREF(g);
    Py_XDECREF(nr);
    Py_XDECREF(roots);
    return result;
python_clear:
    Py_XDECREF(fn);
    Py_XDECREF(d);
    Py_XDECREF(size);
python:;
    PyObject *py = engine_global(s_backward_python);
    return py ? PyObject_Vectorcall(py, args, nargsf, kwnames) : NULL;
}
