/* Float matrix products through the process's own BLAS (NumPy's OpenBLAS), split by ember over the
 * kernels' thread pool, each part one single-threaded sgemm/dgemm call.
 *
 * Why not let OpenBLAS thread the product itself: a training step alternates products with
 * ember's kernels (norms, activations, their backward), and two pools then take turns with the
 * cores. After each OpenBLAS product the kernels' worker has stopped polling and sleeps, so the
 * kernel that follows waits tens of microseconds for it to wake, or runs on one thread; OpenBLAS's
 * own threads meanwhile poll for a product that does not come (docs/benchmarks.md, "Session
 * 2026-12-06 (c)"). PyTorch runs its products and its loops on one pool. So does ember here: the
 * product's parts run on the kernels' pool, whose worker is polling for the next kernel when
 * its part returns. OpenBLAS's count is 1 while the parts run: the caller sees to it
 * (_threads.gemm, under _threads.blas_one_thread, which counts the products and splits in
 * flight across Python threads, so none meets a count restored under it).
 *
 * The split: the result's rows (or, for results wider than tall, its columns) in one contiguous
 * part per thread, so each thread packs the other operand once, as a one-thread product does.
 * Each output element is computed by the same kernel, over the same k's in the same order, as in
 * the whole product at one thread (a part only narrows the rows or columns), so the values are
 * those of one thread, bit for bit, at every thread count; tests/test_threads_gemm.py checks it.
 *
 * The BLAS functions are found by the Python side (_threads._find_gemm_blas: the OpenBLAS NumPy
 * loaded, by the names it exports) and handed over as addresses once (blas_use). */

#include "_kernels.h"

#include <stdint.h>

enum { ROW_MAJOR = 101, NO_TRANS = 111, TRANS = 112 };  /* CBLAS's enum values */
#define PART_MACS (1 << 20)  /* the least a part does (_threads.GEMM_PART_MACS) */
#define ALIGN 64             /* parts start at multiples of this (_threads.GEMM_ALIGN) */

typedef void (*sgemm64_fn)(int, int, int, int64_t, int64_t, int64_t, float, const float *, int64_t,
                           const float *, int64_t, float, float *, int64_t);
typedef void (*dgemm64_fn)(int, int, int, int64_t, int64_t, int64_t, double, const double *,
                           int64_t, const double *, int64_t, double, double *, int64_t);
typedef void (*sgemm32_fn)(int, int, int, int, int, int, float, const float *, int, const float *,
                           int, float, float *, int);
typedef void (*dgemm32_fn)(int, int, int, int, int, int, double, const double *, int,
                           const double *, int, double, double *, int);

static void *sgemm_ptr = NULL, *dgemm_ptr = NULL;
static int ilp64 = 0;  /* the functions take 64-bit integers (OpenBLAS's "64_" builds) */

typedef struct {
    const char *a, *b;
    char *out;
    int64_t M, N, K, lda, ldb;
    int ta, tb, dbl, by_rows;
} blas_ctx;

static void call_blas(int ta, int tb, int dbl, int64_t M, int64_t N, int64_t K, const void *a,
                      int64_t lda, const void *b, int64_t ldb, void *c, int64_t ldc)
{
    if (dbl) {
        if (ilp64)
            ((dgemm64_fn)dgemm_ptr)(ROW_MAJOR, ta, tb, M, N, K, 1.0, a, lda, b, ldb, 0.0, c, ldc);
        else
            ((dgemm32_fn)dgemm_ptr)(ROW_MAJOR, ta, tb, (int)M, (int)N, (int)K, 1.0, a, (int)lda, b,
                                    (int)ldb, 0.0, c, (int)ldc);
    } else {
        if (ilp64)
            ((sgemm64_fn)sgemm_ptr)(ROW_MAJOR, ta, tb, M, N, K, 1.0f, a, lda, b, ldb, 0.0f, c, ldc);
        else
            ((sgemm32_fn)sgemm_ptr)(ROW_MAJOR, ta, tb, (int)M, (int)N, (int)K, 1.0f, a, (int)lda, b,
                                    (int)ldb, 0.0f, c, (int)ldc);
    }
}

/* rows (or columns) [i0, i1) of the result */
static void blas_part(void *c, Py_ssize_t i0, Py_ssize_t i1)
{
    blas_ctx *g = (blas_ctx *)c;
    const int64_t e = g->dbl ? 8 : 4;
    if (g->by_rows) {  /* a's rows i0..i1: row i of a (no-trans) or column i (trans) */
        const char *a = g->a + (g->ta == NO_TRANS ? i0 * g->lda : i0) * e;
        call_blas(g->ta, g->tb, g->dbl, i1 - i0, g->N, g->K, a, g->lda, g->b, g->ldb,
                  g->out + i0 * g->N * e, g->N);
    } else {  /* b's columns i0..i1 */
        const char *b = g->b + (g->tb == NO_TRANS ? i0 : i0 * g->ldb) * e;
        call_blas(g->ta, g->tb, g->dbl, g->M, i1 - i0, g->K, g->a, g->lda, b, g->ldb,
                  g->out + i0 * e, g->N);
    }
}

/* an operand's CBLAS form: (rows, cols) with unit stride along one of them; 0 where neither */
static int operand(const Py_buffer *v, int *trans, int64_t *ld)
{
    const Py_ssize_t e = v->itemsize, r = v->shape[0], c = v->shape[1];
    const Py_ssize_t s0 = v->strides[0], s1 = v->strides[1];
    if (s1 == e && s0 % e == 0 && s0 / e >= c && s0 / e >= 1) {
        *trans = NO_TRANS;
        *ld = s0 / e;
        return 1;
    }
    if (s0 == e && s1 % e == 0 && s1 / e >= r && s1 / e >= 1) {
        *trans = TRANS;
        *ld = s1 / e;
        return 1;
    }
    return 0;
}

/* blas_use(sgemm, dgemm, ilp64): the BLAS's gemm functions, as addresses (None: none), and
 * whether they take 64-bit integers */
PyObject *py_blas_use(PyObject *mod, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3)
        return PyErr_Format(PyExc_TypeError, "ember._kernels.blas_use: expected 3 arguments");
    void *p[3];
    for (int i = 0; i < 3; i++) {
        p[i] = args[i] == Py_None ? NULL : PyLong_AsVoidPtr(args[i]);
        if (p[i] == NULL && PyErr_Occurred())
            return NULL;
    }
    sgemm_ptr = p[0];
    dgemm_ptr = p[1];
    ilp64 = p[2] != NULL;
    Py_RETURN_NONE;
}

/* blas_gemm(a, b, out): out = a @ b for 2-D float32 or float64 a (M, K) and b (K, N), each with
 * unit stride along one axis, into C-contiguous out (M, N) of the same type that overlaps
 * neither; the product's parts on the kernels' pool. False (nothing done) where no BLAS
 * function was handed over for the type. */
PyObject *py_blas_gemm(PyObject *mod, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3)
        return PyErr_Format(PyExc_TypeError, "ember._kernels.blas_gemm: expected 3 arguments");
    Py_buffer a, b, out;
    if (PyObject_GetBuffer(args[0], &a, PyBUF_STRIDES | PyBUF_FORMAT) < 0)
        return NULL;
    if (PyObject_GetBuffer(args[1], &b, PyBUF_STRIDES | PyBUF_FORMAT) < 0) {
        PyBuffer_Release(&a);
        return NULL;
    }
    if (PyObject_GetBuffer(args[2], &out, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE | PyBUF_FORMAT)
        < 0) {
        PyBuffer_Release(&b);
        PyBuffer_Release(&a);
        return NULL;
    }
    const char *bad = NULL;
    blas_ctx g = {0};
    if (a.ndim != 2 || b.ndim != 2 || out.ndim != 2)
        bad = "expected 2-D a, b and out";
    else if (a.format == NULL || b.format == NULL || out.format == NULL
             || strcmp(a.format, out.format) != 0 || strcmp(b.format, out.format) != 0
             || (strcmp(out.format, "f") != 0 && strcmp(out.format, "d") != 0))
        bad = "expected float32 or float64 a, b and out of one type";
    else if (a.shape[1] != b.shape[0] || out.shape[0] != a.shape[0] || out.shape[1] != b.shape[1])
        bad = "expected a (M, K), b (K, N) and out (M, N)";
    else if (a.len > 0 && b.len > 0
             && (!operand(&a, &g.ta, &g.lda) || !operand(&b, &g.tb, &g.ldb)))
        bad = "expected a and b with unit stride along one axis";
    else {
        const char *olo = (const char *)out.buf, *ohi = olo + out.len;
        const char *alo = (const char *)a.buf, *blo = (const char *)b.buf;
        const char *ahi = alo + ((a.shape[0] - 1) * a.strides[0] + (a.shape[1] - 1) * a.strides[1]
                                 + a.itemsize);
        const char *bhi = blo + ((b.shape[0] - 1) * b.strides[0] + (b.shape[1] - 1) * b.strides[1]
                                 + b.itemsize);
        if (out.len > 0 && a.len > 0 && b.len > 0
            && ((alo < ohi && olo < ahi) || (blo < ohi && olo < bhi)))
            bad = "out must not overlap a or b";
    }
    if (bad != NULL) {
        PyBuffer_Release(&out);
        PyBuffer_Release(&b);
        PyBuffer_Release(&a);
        return PyErr_Format(PyExc_ValueError, "ember._kernels.blas_gemm: %s", bad);
    }
    g.dbl = out.format[0] == 'd';
    g.a = (const char *)a.buf;
    g.b = (const char *)b.buf;
    g.out = (char *)out.buf;
    g.M = a.shape[0];
    g.K = a.shape[1];
    g.N = b.shape[1];
    int done = (g.dbl ? dgemm_ptr : sgemm_ptr) != NULL;
    if (done && g.M > 0 && g.N > 0 && g.K > 0) {
        /* split the longer side of the result: the other operand is packed whole by each part */
        g.by_rows = g.M >= g.N;
        const int64_t units = g.by_rows ? g.M : g.N;
        const int64_t unit_work = g.K * (g.by_rows ? g.N : g.M);
        int64_t min_part = (int64_t)PART_MACS / (unit_work > 0 ? unit_work : 1);
        min_part = min_part > ALIGN ? min_part : ALIGN;
        Py_BEGIN_ALLOW_THREADS
        kernels_parallel_parts(blas_part, &g, units, ALIGN, min_part);
        Py_END_ALLOW_THREADS
    } else if (done && g.K == 0) {
        memset(out.buf, 0, (size_t)out.len);
    }
    PyBuffer_Release(&out);
    PyBuffer_Release(&b);
    PyBuffer_Release(&a);
    return PyBool_FromLong(done);
}
