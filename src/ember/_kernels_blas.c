/* float32 matrix products through the process's own BLAS (NumPy's OpenBLAS), split by ember over
 * the kernels' thread pool, each part one single-threaded sgemm call.
 *
 * Why not let OpenBLAS thread the product itself: a training step alternates products with
 * ember's kernels (norms, activations, their backward), and two pools then take turns with the
 * cores. After each OpenBLAS product the kernels' worker has stopped polling and sleeps, so the
 * kernel that follows waits tens of microseconds for it to wake, or runs on one thread; OpenBLAS's
 * own threads meanwhile poll for a product that does not come (docs/benchmarks.md, "Session
 * 2026-12-06 (c)"). PyTorch runs its products and its loops on one pool. So does ember here: the
 * product's parts run on the kernels' pool, whose worker is polling for the next kernel when
 * its part returns. OpenBLAS's count is 1 while the parts run: the caller sees to it
 * (_threads.gemm, between _threads._one_enter and _one_leave, which count the products and
 * splits in flight across Python threads, so none meets a count restored under it).
 *
 * The split: the result's rows, in one contiguous part per thread of PART_ROWS rows at least.
 * Each part packs all of b, where OpenBLAS's own threads share one packing; from 128 rows a
 * part that costs less than the wait for OpenBLAS's threads, below it more (the benchmark's MLP
 * step, batch 128, ran 3-5% slower with 64-row parts), and a split by columns (row-major C's
 * columns: strided b and out) ran up to 1.9x slower than by rows (docs/benchmarks.md, "Session
 * 2026-12-07"). A product with fewer rows than two parts (a weight gradient's O rows, an MLP
 * step's batch of 128) is cut by the result's columns instead, at two threads or more only
 * (_threads.gemm): each part one call on a block of b's columns and out's (their leading
 * dimensions kept), packing all of the small a. OpenBLAS's own threads had run these, and their
 * spinning handshake (inner_thread) fought the kernels' pool for the cores: the CNN's conv2
 * weight gradient (32 x 1408 by 1408 x 400) made its forward and backward slower at two threads
 * than at one. A column part's values are not the whole product's bit for bit (OpenBLAS blocks
 * the columns of a row-major result), so these products, like OpenBLAS's own threaded ones
 * before, differ from one thread's within rounding; the row split keeps them exactly.
 * OpenBLAS's sgemm computes each output element alike whatever rows its call has around it (no
 * difference over about 320 random shapes and both layouts; tests/test_threads_gemm.py), so the
 * values are those of one thread, bit for bit, at every thread count. Its dgemm does not (edge
 * tiles differed by an ulp in about half of 230 shapes), so float64 stays with OpenBLAS's.
 *
 * The BLAS functions are found by the Python side (_threads._find_gemm_blas: the OpenBLAS NumPy
 * loaded, by the names it exports) and handed over as addresses once (blas_use). */

#include "_kernels.h"

#include <stdint.h>

enum { ROW_MAJOR = 101, NO_TRANS = 111, TRANS = 112 };  /* CBLAS's enum values */
#define PART_MACS (1 << 20)  /* the least a part does (_threads.GEMM_PART_MACS) */
#define PART_ROWS 128        /* the fewest rows a part has (_threads.GEMM_PART_ROWS) */
#define PART_COLS 64         /* the fewest columns a column part has (_threads.GEMM_PART_COLS) */
#define COL_ALIGN 16         /* column parts start at multiples of this (_threads.GEMM_COL_ALIGN) */
#define ALIGN 64             /* parts start at multiples of this (_threads.GEMM_ALIGN) */

typedef void (*sgemm64_fn)(int, int, int, int64_t, int64_t, int64_t, float, const float *, int64_t,
                           const float *, int64_t, float, float *, int64_t);
typedef void (*sgemm32_fn)(int, int, int, int, int, int, float, const float *, int, const float *,
                           int, float, float *, int);

static void *sgemm_ptr = NULL;
static int ilp64 = 0;  /* the functions take 64-bit integers (OpenBLAS's "64_" builds) */

#define MAX_BATCH_DIMS 8

typedef struct {
    const float *a, *b;
    const float *bias; /* (N,) added to each row of a 2-D product's part, or NULL */
    float *out;
    int64_t M, N, K, lda, ldb;
    int ta, tb;
    int nb;  /* batch dims (0: one product, split by rows) */
    int64_t shape[MAX_BATCH_DIMS], sa[MAX_BATCH_DIMS], sb[MAX_BATCH_DIMS];  /* strides: floats */
} blas_ctx;

static void call_sgemm(int ta, int tb, int64_t M, int64_t N, int64_t K, const float *a,
                       int64_t lda, const float *b, int64_t ldb, float *c, int64_t ldc)
{
    if (ilp64)
        ((sgemm64_fn)sgemm_ptr)(ROW_MAJOR, ta, tb, M, N, K, 1.0f, a, lda, b, ldb, 0.0f, c, ldc);
    else
        ((sgemm32_fn)sgemm_ptr)(ROW_MAJOR, ta, tb, (int)M, (int)N, (int)K, 1.0f, a, (int)lda, b,
                                (int)ldb, 0.0f, c, (int)ldc);
}

/* rows [i0, i1) of the result += bias: the bits of ``out += bias`` after the product */
static void blas_part_bias(const blas_ctx *g, Py_ssize_t i0, Py_ssize_t i1)
{
    const float *restrict bias = g->bias;
    for (Py_ssize_t i = i0; i < i1; i++) {
        float *restrict c = g->out + i * g->N;
        for (int64_t j = 0; j < g->N; j++)
            c[j] += bias[j];
    }
}

/* rows [i0, i1) of the result: a's rows i0..i1 (its columns, stored transposed) times all of b */
static void blas_part(void *c, Py_ssize_t i0, Py_ssize_t i1)
{
    blas_ctx *g = (blas_ctx *)c;
    const float *a = g->a + (g->ta == NO_TRANS ? i0 * g->lda : i0);
    call_sgemm(g->ta, g->tb, i1 - i0, g->N, g->K, a, g->lda, g->b, g->ldb, g->out + i0 * g->N,
               g->N);
    /* the bias, on the rows this thread just wrote (still in its cache) */
    if (g->bias != NULL)
        blas_part_bias(g, i0, i1);
}

/* columns [j0, j1) of the result: all of a times b's columns j0..j1 (its rows, stored
 * transposed), into out's columns j0..j1 (leading dimension N), then the bias on them */
static void blas_part_cols(void *c, Py_ssize_t j0, Py_ssize_t j1)
{
    blas_ctx *g = (blas_ctx *)c;
    const float *b = g->b + (g->tb == NO_TRANS ? j0 : j0 * g->ldb);
    call_sgemm(g->ta, g->tb, g->M, j1 - j0, g->K, g->a, g->lda, b, g->ldb, g->out + j0, g->N);
    if (g->bias != NULL)
        for (int64_t i = 0; i < g->M; i++) {
            float *restrict o = g->out + i * g->N;
            for (Py_ssize_t j = j0; j < j1; j++)
                o[j] += g->bias[j];
        }
}

/* products [e0, e1) of a stack, each whole: entry e's offsets from its batch index */
static void blas_entries(void *c, Py_ssize_t e0, Py_ssize_t e1)
{
    blas_ctx *g = (blas_ctx *)c;
    for (Py_ssize_t e = e0; e < e1; e++) {
        int64_t rest = e, oa = 0, ob = 0;
        for (int d = g->nb - 1; d >= 0; d--) {
            const int64_t i = rest % g->shape[d];
            rest /= g->shape[d];
            oa += i * g->sa[d];
            ob += i * g->sb[d];
        }
        call_sgemm(g->ta, g->tb, g->M, g->N, g->K, g->a + oa, g->lda, g->b + ob, g->ldb,
                   g->out + e * g->M * g->N, g->N);
    }
}

/* an operand's CBLAS form, from its last two dims: (rows, cols) with unit stride along one of
 * them; 0 where neither */
static int operand(const Py_buffer *v, int *trans, int64_t *ld)
{
    const int n = v->ndim;
    const Py_ssize_t e = v->itemsize, r = v->shape[n - 2], c = v->shape[n - 1];
    const Py_ssize_t s0 = v->strides[n - 2], s1 = v->strides[n - 1];
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

/* blas_use(sgemm, ilp64): the BLAS's cblas_sgemm, as an address (None: none), and whether it
 * takes 64-bit integers */
PyObject *py_blas_use(PyObject *mod, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2)
        return PyErr_Format(PyExc_TypeError, "ember._kernels.blas_use: expected 2 arguments");
    void *p[2];
    for (int i = 0; i < 2; i++) {
        p[i] = args[i] == Py_None ? NULL : PyLong_AsVoidPtr(args[i]);
        if (p[i] == NULL && PyErr_Occurred())
            return NULL;
    }
    sgemm_ptr = p[0];
    ilp64 = p[1] != NULL;
    Py_RETURN_NONE;
}

/* blas_gemm(a, b, out[, bias]): out = a @ b for float32 a (..., M, K) and b (..., K, N) of one
 * batch shape (strides of whole floats, 0 where broadcast), each matrix with unit stride along
 * one axis, into C-contiguous float32 out (..., M, N) that overlaps neither. One product (2-D):
 * its row parts on the kernels' pool (its column parts where M is under two parts' rows), each
 * part then adding ``bias`` (a C-contiguous float32
 * (N,), or None) to its rows, the bits of ``out += bias`` after the product; a stack: its
 * products, each whole, over the pool (no bias). False (nothing done) where no sgemm was
 * handed over. */
PyObject *py_blas_gemm(PyObject *mod, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3 && nargs != 4)
        return PyErr_Format(PyExc_TypeError, "ember._kernels.blas_gemm: expected 3 or 4 arguments");
    Py_buffer a, b, out, bias = {0};
    const int has_bias = nargs == 4 && args[3] != Py_None;
    if (has_bias && PyObject_GetBuffer(args[3], &bias, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0)
        return NULL;
    if (PyObject_GetBuffer(args[0], &a, PyBUF_STRIDES | PyBUF_FORMAT) < 0) {
        if (has_bias)
            PyBuffer_Release(&bias);
        return NULL;
    }
    if (PyObject_GetBuffer(args[1], &b, PyBUF_STRIDES | PyBUF_FORMAT) < 0) {
        PyBuffer_Release(&a);
        if (has_bias)
            PyBuffer_Release(&bias);
        return NULL;
    }
    if (PyObject_GetBuffer(args[2], &out, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE | PyBUF_FORMAT)
        < 0) {
        PyBuffer_Release(&b);
        PyBuffer_Release(&a);
        if (has_bias)
            PyBuffer_Release(&bias);
        return NULL;
    }
    const char *bad = NULL;
    blas_ctx g = {0};
    const int nd = a.ndim;
    if (nd < 2 || b.ndim != nd || out.ndim != nd || nd - 2 > MAX_BATCH_DIMS)
        bad = "expected a, b and out of one rank, 2 to 10";
    else if (a.format == NULL || b.format == NULL || out.format == NULL
             || strcmp(a.format, out.format) != 0 || strcmp(b.format, out.format) != 0
             || strcmp(out.format, "f") != 0)
        bad = "expected float32 a, b and out";
    else if (a.shape[nd - 1] != b.shape[nd - 2] || out.shape[nd - 2] != a.shape[nd - 2]
             || out.shape[nd - 1] != b.shape[nd - 1])
        bad = "expected a (..., M, K), b (..., K, N) and out (..., M, N)";
    else if (a.len > 0 && b.len > 0
             && (!operand(&a, &g.ta, &g.lda) || !operand(&b, &g.tb, &g.ldb)))
        bad = "expected a and b with unit stride along one axis";
    else {
        for (int d = 0; d < nd - 2; d++)
            if (a.shape[d] != out.shape[d] || b.shape[d] != out.shape[d]
                || a.strides[d] % 4 != 0 || b.strides[d] % 4 != 0)
                bad = "expected a and b of out's batch shape (broadcast: stride 0)";
        if (out_overlaps(&out, &a, &b))
            bad = "out must not overlap a or b";
        else if (has_bias
                 && (nd != 2 || bias.ndim != 1 || bias.format == NULL
                     || strcmp(bias.format, "f") != 0 || bias.shape[0] != out.shape[1]))
            bad = "expected a 2-D product and a float32 bias (N,)";
        else if (has_bias && out_overlaps(&out, &bias, &bias))
            bad = "out must not overlap bias";
    }
    if (bad != NULL) {
        PyBuffer_Release(&out);
        PyBuffer_Release(&b);
        PyBuffer_Release(&a);
        if (has_bias)
            PyBuffer_Release(&bias);
        return PyErr_Format(PyExc_ValueError, "ember._kernels.blas_gemm: %s", bad);
    }
    g.a = (const float *)a.buf;
    g.b = (const float *)b.buf;
    g.out = (float *)out.buf;
    g.bias = has_bias ? (const float *)bias.buf : NULL;
    g.M = a.shape[nd - 2];
    g.K = a.shape[nd - 1];
    g.N = b.shape[nd - 1];
    g.nb = nd - 2;
    Py_ssize_t entries = 1;
    for (int d = 0; d < g.nb; d++) {
        g.shape[d] = out.shape[d];
        g.sa[d] = a.strides[d] / 4;
        g.sb[d] = b.strides[d] / 4;
        entries *= out.shape[d];
    }
    int done = sgemm_ptr != NULL;
    if (done && out.len > 0 && g.K == 0) {
        memset(out.buf, 0, (size_t)out.len);
        if (g.bias != NULL)
            blas_part_bias(&g, 0, g.M);
    } else if (done && out.len > 0) {
        const int64_t row_work = g.K * g.N;  /* a row's multiply-adds */
        Py_BEGIN_ALLOW_THREADS
        if (g.nb == 0 && g.M >= 2 * PART_ROWS) {
            int64_t min_part = (int64_t)PART_MACS / (row_work > 0 ? row_work : 1);
            min_part = min_part > PART_ROWS ? min_part : PART_ROWS;
            kernels_parallel_parts(blas_part, &g, g.M, ALIGN, min_part);
        } else if (g.nb == 0) {  /* too few rows for two parts: the columns */
            const int64_t col_work = g.M * g.K;  /* a column's multiply-adds */
            int64_t min_part = (int64_t)PART_MACS / (col_work > 0 ? col_work : 1);
            min_part = min_part > PART_COLS ? min_part : PART_COLS;
            kernels_parallel_parts(blas_part_cols, &g, g.N, COL_ALIGN, min_part);
        } else {
            const int64_t work = g.M * row_work;  /* a product's */
            int64_t min_part = (int64_t)PART_MACS / (work > 0 ? work : 1);
            kernels_parallel(blas_entries, &g, entries, 1, min_part > 1 ? min_part : 1);
        }
        Py_END_ALLOW_THREADS
    }
    PyBuffer_Release(&out);
    PyBuffer_Release(&b);
    PyBuffer_Release(&a);
    if (has_bias)
        PyBuffer_Release(&bias);
    return PyBool_FromLong(done);
}
