/* What the eager kernels' C files share (ember._kernels is _kernels.c, _kernels_blas.c and
 * _kernels_gemm.c). */
#ifndef EMBER_KERNELS_H
#define EMBER_KERNELS_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* a loop's body over units [i0, i1) of a range, with its arrays in ctx */
typedef void (*range_fn)(void *ctx, Py_ssize_t i0, Py_ssize_t i1);

/* fn over [0, total) on the kernels' thread pool (_kernels.c's parallel: chunks of at least
 * min_part units, boundaries multiples of align); call without the GIL */
void kernels_parallel(range_fn fn, void *ctx, Py_ssize_t total, Py_ssize_t align,
                      Py_ssize_t min_part);

/* the same with one contiguous part per thread (no smaller chunks): for work whose parts each
 * pack shared data (a BLAS product's operand), so splitting finer would repeat that */
void kernels_parallel_parts(range_fn fn, void *ctx, Py_ssize_t total, Py_ssize_t align,
                            Py_ssize_t min_part);

/* the lowest and one past the highest byte a strided buffer spans (an empty one: none) */
static inline void buffer_extent(const Py_buffer *v, const char **lo, const char **hi)
{
    const char *l = (const char *)v->buf, *h = l;
    for (int d = 0; d < v->ndim; d++) {
        if (v->shape[d] == 0) {
            *lo = *hi = l;
            return;
        }
        const Py_ssize_t s = (v->shape[d] - 1) * v->strides[d];
        if (s < 0)
            l += s;
        else
            h += s;
    }
    *lo = l;
    *hi = h + v->itemsize;
}

/* whether out (C-contiguous) shares a byte with a or b (strided) */
static inline int out_overlaps(const Py_buffer *out, const Py_buffer *a, const Py_buffer *b)
{
    const char *olo = (const char *)out->buf, *ohi = olo + out->len, *alo, *ahi, *blo, *bhi;
    buffer_extent(a, &alo, &ahi);
    buffer_extent(b, &blo, &bhi);
    return out->len > 0 && ((alo < ohi && olo < ahi) || (blo < ohi && olo < bhi));
}

/* _kernels_blas.c */
PyObject *py_blas_use(PyObject *mod, PyObject *const *args, Py_ssize_t nargs);
PyObject *py_blas_gemm(PyObject *mod, PyObject *const *args, Py_ssize_t nargs);

/* _kernels_gemm.c */
PyObject *py_bf16_gemm(PyObject *mod, PyObject *const *args, Py_ssize_t nargs);
PyObject *py_bf16_gemm_supported(PyObject *mod, PyObject *unused);

#endif
