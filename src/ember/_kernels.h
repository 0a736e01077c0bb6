/* What the eager kernels' C files share (ember._kernels is _kernels.c, _kernels_blas.c and _kernels_gemm.c). */
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

/* _kernels_blas.c */
PyObject *py_blas_use(PyObject *mod, PyObject *const *args, Py_ssize_t nargs);
PyObject *py_blas_gemm(PyObject *mod, PyObject *const *args, Py_ssize_t nargs);

/* _kernels_gemm.c */
PyObject *py_bf16_gemm(PyObject *mod, PyObject *const *args, Py_ssize_t nargs);
PyObject *py_bf16_gemm_supported(PyObject *mod, PyObject *unused);

#endif
