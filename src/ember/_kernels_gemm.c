/* bfloat16 matrix products with float32 accumulation, for autocast's products on the CPU.
 *
 * out = a @ b for a (B, M, K) and b (B, K, N) bfloat16 arrays of any strides (a transposed or
 * broadcast operand is read where it lies) into a C-contiguous float32 out (B, M, N). NumPy's
 * BLAS has no bfloat16 product, so without this kernel both operands are widened to float32 and
 * multiplied by sgemm; the AVX512-BF16 instruction VDPBF16PS multiplies 32 bfloat16 pairs per
 * instruction (twice sgemm's 16 float32 products) and, with half the bytes to read, runs the
 * products of issue 29's MLP 1.4-1.9x faster than sgemm at one thread.
 *
 * The arithmetic: each product of two bfloat16 numbers is exact in float32 (8-bit significands),
 * and VDPBF16PS adds the products of a pair of k's into the float32 accumulator one after the
 * other, rounding to nearest even. Panels of KC k's are summed so and added to out in k order.
 * Each output element's order of operations depends only on K, never on how the work is split
 * over threads, so a result is the same at any thread count. Against the float32 GEMM of the
 * widened operands (the fallback) the order differs, so results differ within float32 rounding
 * of the accumulation (before autocast rounds them to bfloat16). Like every VDPBF16PS user (and
 * PyTorch's oneDNN on these CPUs), subnormal inputs count as zero and subnormal sums flush to
 * zero: bfloat16 subnormals are below 1.2e-38.
 *
 * The blocking is the classic one (Goto's; BLIS's loop nest): B is packed by panels of KC k's
 * times NC columns into NR-column slivers of k pairs, A by MC rows times KC into MR-row slivers;
 * an MR x NR micro-kernel keeps its 12 x 32 sums in 24 zmm registers. Only CPUs with AVX512-BF16
 * run it (bf16_gemm_supported(); the loader checks), on the kernels' thread pool. */

#include "_kernels.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) && defined(__ELF__) \
    && ((defined(__clang__) && __clang_major__ >= 9) \
        || (defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 10))
#define HAVE_BF16 1
#include <immintrin.h>
#else
#define HAVE_BF16 0
#endif

#if HAVE_BF16

#define MR 12    /* rows of the micro-kernel's block */
#define NR 32    /* its columns: two zmm registers of float32 */
#define KC 256   /* k's per packed panel (a B sliver of NR columns: 16 KiB, in L1) */
#define MC 192   /* rows of a packed A block (96 KiB, in L2) */
#define NC 2048  /* columns of a packed B panel (1 MiB) */
#define TARGET __attribute__((target("avx512f,avx512bw,avx512bf16")))

typedef struct {
    const uint16_t *a, *b;
    float *out;
    Py_ssize_t M, N, K;
    Py_ssize_t sab, sam, sak, sbb, sbk, sbn;  /* strides, in elements */
    int by_rows;  /* the pool's units: the rows of each product (else its columns) */
    volatile int failed;  /* a thread found no memory for its packing buffers */
} gemm_ctx;

/* each thread's packing buffers, kept between calls (pool threads live as long as the process) */
static _Thread_local uint16_t *packed_b = NULL;
static _Thread_local uint32_t *packed_a = NULL;

static int ensure_buffers(void)
{
    if (packed_b == NULL)
        packed_b = aligned_alloc(64, (size_t)KC * NC * sizeof(uint16_t));
    if (packed_a == NULL)
        packed_a = aligned_alloc(64, (size_t)(KC / 2) * (MC + MR) * sizeof(uint32_t));
    return packed_b != NULL && packed_a != NULL;
}

static inline uint32_t load_pair(const uint16_t *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

/* n lines (stride sl) of kc k's (stride sk) from s -> words d[p w + l]: line l's k pair p (its
 * first k in the low half); lines n .. w - 1 zeros, and the k past an odd kc paired with a zero.
 * Both operands' slivers (w lines each: b's columns, a's rows) are packed so. */
TARGET static void pack_pairs(const uint16_t *s, Py_ssize_t sl, Py_ssize_t sk, Py_ssize_t n,
                              Py_ssize_t kc, Py_ssize_t w, uint32_t *d)
{
    const Py_ssize_t full = kc / 2;
    if (sk == 1)  /* the k's contiguous (a's rows, b = w.T's columns): a pair is one word */
        for (Py_ssize_t l = 0; l < n; l++)
            for (Py_ssize_t p = 0; p < full; p++)
                d[p * w + l] = load_pair(s + l * sl + 2 * p);
    else
        for (Py_ssize_t p = 0; p < full; p++)
            for (Py_ssize_t l = 0; l < n; l++)
                d[p * w + l] = (uint32_t)s[2 * p * sk + l * sl]
                               | (uint32_t)s[(2 * p + 1) * sk + l * sl] << 16;
    for (Py_ssize_t l = n; l < w; l++)
        for (Py_ssize_t p = 0; p < full; p++)
            d[p * w + l] = 0;
    if (kc % 2)
        for (Py_ssize_t l = 0; l < w; l++)
            d[full * w + l] = l < n ? s[l * sl + 2 * full * sk] : 0;
}

/* b (at k0, n0; strides sk, sn) for kc k's and nc columns -> slivers of NR columns, each
 * [k pair][column][2] (pack_pairs' layout) */
TARGET static void pack_b(const uint16_t *b, Py_ssize_t sk, Py_ssize_t sn, Py_ssize_t kc,
                          Py_ssize_t nc, uint16_t *dst)
{
    const Py_ssize_t kp = (kc + 1) / 2, full = kc / 2;
    for (Py_ssize_t j = 0; j < nc; j += NR) {
        const Py_ssize_t nn = nc - j < NR ? nc - j : NR;
        const uint16_t *bj = b + j * sn;
        uint16_t *d = dst + (j / NR) * kp * NR * 2;
        if (!(sn == 1 && nn == NR)) {
            pack_pairs(bj, sn, sk, nn, kc, NR, (uint32_t *)d);
            continue;
        }
        /* rows of b contiguous: interleave two rows by vector */
        const __m512i lo_idx = _mm512_set_epi64(11, 10, 3, 2, 9, 8, 1, 0);
        const __m512i hi_idx = _mm512_set_epi64(15, 14, 7, 6, 13, 12, 5, 4);
        for (Py_ssize_t p = 0; p < full; p++) {
            const uint16_t *r0 = bj + 2 * p * sk;
            __m512i x0 = _mm512_loadu_si512(r0), x1 = _mm512_loadu_si512(r0 + sk);
            /* (unpack interleaves within 128-bit lanes: the permutes put columns in order) */
            __m512i lo = _mm512_unpacklo_epi16(x0, x1), hi = _mm512_unpackhi_epi16(x0, x1);
            _mm512_storeu_si512(d + p * 64, _mm512_permutex2var_epi64(lo, lo_idx, hi));
            _mm512_storeu_si512(d + p * 64 + 32, _mm512_permutex2var_epi64(lo, hi_idx, hi));
        }
        if (kp > full)  /* an odd kc: the last k paired with a zero */
            for (Py_ssize_t c = 0; c < NR; c++)
                ((uint32_t *)d)[full * NR + c] = bj[2 * full * sk + c];
    }
}

/* a (at m0, k0; strides sm, sk) for mc rows and kc k's -> slivers of MR rows, each
 * [k pair][row] as 32-bit words (pack_pairs' layout) */
TARGET static void pack_a(const uint16_t *a, Py_ssize_t sm, Py_ssize_t sk, Py_ssize_t mc,
                          Py_ssize_t kc, uint32_t *dst)
{
    const Py_ssize_t kp = (kc + 1) / 2;
    for (Py_ssize_t i = 0; i < mc; i += MR) {
        const Py_ssize_t mm = mc - i < MR ? mc - i : MR;
        pack_pairs(a + i * sm, sm, sk, mm, kc, MR, dst + (i / MR) * kp * MR);
    }
}

/* c[:mm, :nn] (= or +=) the kp pairs' products of an A sliver and a B sliver */
TARGET static void micro(Py_ssize_t kp, const uint32_t *a, const uint16_t *b, float *c,
                         Py_ssize_t ldc, int first, Py_ssize_t mm, Py_ssize_t nn)
{
    __m512 acc[MR][2];
#pragma GCC unroll 12
    for (int i = 0; i < MR; i++)
        acc[i][0] = acc[i][1] = _mm512_setzero_ps();
    for (Py_ssize_t p = 0; p < kp; p++) {
        const __m512bh b0 = (__m512bh)_mm512_load_si512(b);
        const __m512bh b1 = (__m512bh)_mm512_load_si512(b + 32);
#pragma GCC unroll 12
        for (int i = 0; i < MR; i++) {
            const __m512bh ai = (__m512bh)_mm512_set1_epi32((int)a[i]);
            acc[i][0] = _mm512_dpbf16_ps(acc[i][0], ai, b0);
            acc[i][1] = _mm512_dpbf16_ps(acc[i][1], ai, b1);
        }
        a += MR;
        b += 2 * NR;
    }
    if (mm == MR && nn == NR) {
#pragma GCC unroll 12
        for (int i = 0; i < MR; i++) {
            float *o = c + i * ldc;
            if (!first) {
                acc[i][0] = _mm512_add_ps(_mm512_loadu_ps(o), acc[i][0]);
                acc[i][1] = _mm512_add_ps(_mm512_loadu_ps(o + 16), acc[i][1]);
            }
            _mm512_storeu_ps(o, acc[i][0]);
            _mm512_storeu_ps(o + 16, acc[i][1]);
        }
        return;
    }
    float t[MR * NR];  /* an edge block: the same sums, stored through a buffer */
    for (int i = 0; i < MR; i++) {
        _mm512_storeu_ps(t + i * NR, acc[i][0]);
        _mm512_storeu_ps(t + i * NR + 16, acc[i][1]);
    }
    for (Py_ssize_t i = 0; i < mm; i++)
        for (Py_ssize_t j = 0; j < nn; j++)
            c[i * ldc + j] = first ? t[i * NR + j] : c[i * ldc + j] + t[i * NR + j];
}

/* out[bi][m0:m1, n0:n1] */
TARGET static void gemm_block(const gemm_ctx *g, Py_ssize_t bi, Py_ssize_t m0, Py_ssize_t m1,
                              Py_ssize_t n0, Py_ssize_t n1)
{
    const uint16_t *a = g->a + bi * g->sab, *b = g->b + bi * g->sbb;
    float *c = g->out + bi * g->M * g->N;
    const Py_ssize_t N = g->N, K = g->K;
    if (K == 0) {
        for (Py_ssize_t i = m0; i < m1; i++)
            memset(c + i * N + n0, 0, (size_t)(n1 - n0) * sizeof(float));
        return;
    }
    for (Py_ssize_t jc = n0; jc < n1; jc += NC) {
        const Py_ssize_t nc = n1 - jc < NC ? n1 - jc : NC;
        for (Py_ssize_t pc = 0; pc < K; pc += KC) {
            const Py_ssize_t kc = K - pc < KC ? K - pc : KC, kp = (kc + 1) / 2;
            pack_b(b + pc * g->sbk + jc * g->sbn, g->sbk, g->sbn, kc, nc, packed_b);
            for (Py_ssize_t ic = m0; ic < m1; ic += MC) {
                const Py_ssize_t mc = m1 - ic < MC ? m1 - ic : MC;
                pack_a(a + ic * g->sam + pc * g->sak, g->sam, g->sak, mc, kc, packed_a);
                for (Py_ssize_t jr = 0; jr < nc; jr += NR)
                    for (Py_ssize_t ir = 0; ir < mc; ir += MR)
                        micro(kp, packed_a + (ir / MR) * kp * MR, packed_b + (jr / NR) * kp * NR * 2,
                              c + (ic + ir) * N + jc + jr, N, pc == 0,
                              mc - ir < MR ? mc - ir : MR, nc - jr < NR ? nc - jr : NR);
            }
        }
    }
}

/* the pool's part: units i0..i1 of the rows (or columns) of all B products in turn */
static void call_gemm(void *ctx, Py_ssize_t i0, Py_ssize_t i1)
{
    gemm_ctx *g = (gemm_ctx *)ctx;
    if (!ensure_buffers()) {  /* (a worker's first call: its buffers are its own) */
        g->failed = 1;
        return;
    }
    const Py_ssize_t per = g->by_rows ? g->M : g->N;
    for (Py_ssize_t bi = i0 / per; bi * per < i1; bi++) {
        Py_ssize_t lo = i0 - bi * per, hi = i1 - bi * per;
        lo = lo > 0 ? lo : 0;
        hi = hi < per ? hi : per;
        if (g->by_rows)
            gemm_block(g, bi, lo, hi, 0, g->N);
        else
            gemm_block(g, bi, 0, g->M, lo, hi);
    }
}

static int cpu_has_bf16(void)
{
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw")
           && __builtin_cpu_supports("avx512bf16");
}

/* bf16_gemm(a, b, out): a (B, M, K) and b (B, K, N) 2-byte buffers of bfloat16 bits, any
 * strides (even in bytes), out (B, M, N) C-contiguous float32, not overlapping them */
PyObject *py_bf16_gemm(PyObject *mod, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3)
        return PyErr_Format(PyExc_TypeError, "ember._kernels.bf16_gemm: expected 3 arguments");
    if (!cpu_has_bf16())
        return PyErr_Format(PyExc_RuntimeError,
                            "ember._kernels.bf16_gemm: this CPU has no AVX512-BF16");
    Py_buffer a, b, out;
    if (PyObject_GetBuffer(args[0], &a, PyBUF_STRIDES) < 0)
        return NULL;
    if (PyObject_GetBuffer(args[1], &b, PyBUF_STRIDES) < 0) {
        PyBuffer_Release(&a);
        return NULL;
    }
    if (PyObject_GetBuffer(args[2], &out, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) < 0) {
        PyBuffer_Release(&b);
        PyBuffer_Release(&a);
        return NULL;
    }
    const char *bad = NULL;
    if (a.ndim != 3 || b.ndim != 3 || out.ndim != 3)
        bad = "expected 3-D a, b and out";
    else if (a.itemsize != 2 || b.itemsize != 2 || out.itemsize != 4)
        bad = "expected 2-byte a and b, 4-byte out";
    else if (a.shape[0] != b.shape[0] || out.shape[0] != a.shape[0] || a.shape[2] != b.shape[1]
             || out.shape[1] != a.shape[1] || out.shape[2] != b.shape[2])
        bad = "expected a (B, M, K), b (B, K, N) and out (B, M, N)";
    else {
        for (int d = 0; d < 3; d++)
            if (a.strides[d] % 2 != 0 || b.strides[d] % 2 != 0)
                bad = "expected strides of whole elements";
        if (out_overlaps(&out, &a, &b))
            bad = "out must not overlap a or b";
    }
    if (bad != NULL) {
        PyBuffer_Release(&out);
        PyBuffer_Release(&b);
        PyBuffer_Release(&a);
        return PyErr_Format(PyExc_ValueError, "ember._kernels.bf16_gemm: %s", bad);
    }
    gemm_ctx g = {(const uint16_t *)a.buf, (const uint16_t *)b.buf, (float *)out.buf,
                  a.shape[1], b.shape[2], a.shape[2],
                  a.strides[0] / 2, a.strides[1] / 2, a.strides[2] / 2,
                  b.strides[0] / 2, b.strides[1] / 2, b.strides[2] / 2, 0, 0};
    /* few columns and more rows: split the rows over the threads */
    g.by_rows = g.N < 4 * NR && g.M > g.N;
    const Py_ssize_t per = g.by_rows ? g.M : g.N, align = g.by_rows ? MR : NR;
    const Py_ssize_t unit_work = 2 * g.K * (g.by_rows ? g.N : g.M) + 1;
    Py_ssize_t min_part = (Py_ssize_t)(4000000 / unit_work);  /* ~4 MFLOP a part at least */
    min_part = min_part > align ? min_part : align;
    int ok = ensure_buffers();
    if (ok && out.len > 0) {
        Py_BEGIN_ALLOW_THREADS
        kernels_parallel(call_gemm, &g, a.shape[0] * per, align, min_part);
        Py_END_ALLOW_THREADS
        ok = !g.failed;
    }
    PyBuffer_Release(&out);
    PyBuffer_Release(&b);
    PyBuffer_Release(&a);
    if (!ok)
        return PyErr_NoMemory();
    Py_RETURN_NONE;
}

PyObject *py_bf16_gemm_supported(PyObject *mod, PyObject *unused)
{
    return PyBool_FromLong(cpu_has_bf16());
}

#else /* no AVX512-BF16 target in this compiler: the loader widens to float32 instead */

PyObject *py_bf16_gemm(PyObject *mod, PyObject *const *args, Py_ssize_t nargs)
{
    return PyErr_Format(PyExc_RuntimeError,
                        "ember._kernels.bf16_gemm: built without AVX512-BF16 support");
}

PyObject *py_bf16_gemm_supported(PyObject *mod, PyObject *unused)
{
    Py_RETURN_FALSE;
}

#endif
