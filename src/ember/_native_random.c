/* The loop of ops/_mt19937.py's randperm, in C: mirrors src/ember/ops/_mt19937.py.
 *
 * fisher_yates(offsets, out): for i in range(len(offsets)): j = i + offsets[i];
 * out[i], out[j] = out[j], out[i]. Both are int64 buffers (C-contiguous), out one longer than
 * offsets and holding 0..n-1; the words and their remainders are computed by NumPy before.
 * The Python loop stays the reference (and the path without the extension).
 */
#include "_native.h"
#include <stdint.h>

PyObject *ember_fisher_yates(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "fisher_yates(offsets, out)");
        return NULL;
    }
    Py_buffer z, out;
    if (PyObject_GetBuffer(args[0], &z, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0)
        return NULL;
    if (PyObject_GetBuffer(args[1], &out, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | PyBUF_WRITABLE) < 0) {
        PyBuffer_Release(&z);
        return NULL;
    }
    Py_ssize_t n = out.len / 8, m = z.len / 8;
    int ok = z.itemsize == 8 && out.itemsize == 8 && z.format && out.format
             && (z.format[0] == 'q' || z.format[0] == 'l')
             && (out.format[0] == 'q' || out.format[0] == 'l') && m + 1 == n;
    if (!ok) {
        PyErr_SetString(PyExc_TypeError,
                        "fisher_yates: int64 offsets of length n - 1 and an int64 out of length n");
    } else {
        const int64_t *off = (const int64_t *)z.buf;
        int64_t *r = (int64_t *)out.buf;
        for (Py_ssize_t i = 0; i < m; i++) {
            int64_t j = i + off[i];
            if (j < i || j >= n) {
                PyErr_SetString(PyExc_ValueError, "fisher_yates: an offset out of range");
                ok = 0;
                break;
            }
            int64_t t = r[i];
            r[i] = r[j];
            r[j] = t;
        }
    }
    PyBuffer_Release(&z);
    PyBuffer_Release(&out);
    if (!ok)
        return NULL;
    Py_RETURN_NONE;
}
