/* ember._kernels: single-pass eager kernels for the ops where NumPy needs many passes.
 *
 * Array functions on the buffers of C-contiguous float32/float64 NumPy arrays (the CPython
 * buffer protocol: no NumPy headers): the caller (ember/_kernels_loader.py) allocates every
 * output and checks shapes; each function here checks dtypes, contiguity and sizes again and
 * raises TypeError/ValueError rather than reading out of bounds. The NumPy formulas in the ops
 * stay the reference and the fallback (docs/design.md, "Eager kernels").
 *
 * Vectorised by the compiler: -O3 -ffp-contract=off, never -ffast-math, so every loop does the
 * operations it spells, in that order, and a vector lane rounds exactly as the scalar code. The
 * loops have no calls (exp and erf are the polynomials below, inlined) and their reductions run
 * in LANES independent accumulators combined in a fixed order, so results do not depend on the
 * instruction set: on x86-64 with GCC or Clang each kernel is compiled for the baseline, AVX2
 * and AVX-512F, one chosen at load by the CPU (target_clones).
 *
 * Accuracy (tests/test_kernels.py checks it against float64 and mpmath ground truth):
 * - float32 erf, erfc, their derivatives, gelu and gelu's backward (exact and tanh forms)
 *   compute in float64 and round once: within 1 ulp of the true value (correctly rounded but
 *   for ~0.02 ulp, exact gelu's central path 0.2; the backward of gelu within 1e-9 absolute near
 *   the zero of its derivative). For |x| < 3 (exact gelu: 3.5), erf, erfc, exact gelu and its
 *   backward are each one polynomial in x^2 (fits weighted by their cost to the float32 result,
 *   the cancellation of erfc = 1 - x P(x^2) and Phi = 1/2 + x G(x^2) included: at most 0.02
 *   ulp; exact gelu's forward degree 12 at 0.197 ulp and backward degree 13 at 0.135, a degree
 *   fewer each for speed); elsewhere, and for the tanh form, exp times polynomials fitted to
 *   1.2e-9 relative (scripts/fit_kernels.py). Largest errors over a dense sweep (every 128th
 *   float32 in [-120, 120]): 0.506 ulp erf, 0.518 erfc, 0.693 gelu, 0.567 gelu's backward;
 * - float32 sigmoid, silu, silu's backward and the gradients of softplus and logsigmoid compute
 *   in float64 from a float64 exp(-|x|) and round once: 0.501 ulp; elu/selu/celu, softplus and
 *   logsigmoid in float32 (double-float where a rounding would cost the budget; "Float32-
 *   arithmetic kernels" below): within 1 ulp (0.73, and 0.76 where the result is subnormal);
 *   each the same bits in every variant (tests/test_kernels_f32.py);
 * - float32 erfinv computes in float64 from two polynomials in w = -log(1 - x^2) fitted to 5e-10
 *   relative (scripts/fit_erfinv.py) and rounds once: within 1 ulp (0.507); its backward from
 *   the output, in float64, rounded once (tests/test_kernels_fma.py);
 * - float64 gelu (tanh form) and its backward: a few ulp, as the NumPy formula;
 * - the float32 exp of softmax, log_softmax and cross_entropy's softmax_lse: within 1 ulp, its
 *   reduction and polynomial by fmaf (CLONES_FMA: the same bits in every variant,
 *   tests/test_kernels_fma.py); row sums in float64 accumulators; softmax (and softmax_lse's p)
 *   multiplies by the reciprocal of the sum, computed in float64 and rounded once: within 2.7 ulp
 *   of the float64 softmax of the float32 x - max (measured: 2.62 at worst over 1M-element sweeps
 *   of rows of 7 to 32768, as the division it replaced, 2.61; tests/test_kernels_softmax.py).
 */
#include "_kernels.h"

#include <math.h>
#include <stdint.h>
#include <string.h>
#include <stdlib.h>
#include <time.h>

#ifndef EMBER_KERNELS_C_HASH
#define EMBER_KERNELS_C_HASH "unknown"
#endif
#ifndef EMBER_KERNELS_BUILT_WITH
#define EMBER_KERNELS_BUILT_WITH "built by an unknown compiler"
#endif

#if defined(_MSC_VER)
#define KI static __forceinline
#define RESTRICT __restrict
#else
#define KI static inline __attribute__((always_inline))
#define RESTRICT __restrict__
#endif

/* before a loop whose iterations are independent though its output may be one of its inputs
 * (element i read, then written): the compiler vectorizes it without an overlap check */
#if defined(__clang__)
#define IVDEP _Pragma("clang loop vectorize(assume_safety)")
#elif defined(__GNUC__)
#define IVDEP _Pragma("GCC ivdep")
#else
#define IVDEP
#endif

#ifndef __has_attribute
#define __has_attribute(x) 0
#endif
#if defined(__x86_64__) && defined(__ELF__) && __has_attribute(target_clones) \
    && !defined(EMBER_KERNELS_NO_CLONES)
#define CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#define HAVE_CLONES 1
#else
#define CLONES
#define HAVE_CLONES 0
#endif

#define LANES 16  /* independent accumulators of a row reduction */
#if defined(__GNUC__) || defined(__clang__)
#define PREFETCH(p) __builtin_prefetch(p)
#define PREFETCH_W(p) __builtin_prefetch(p, 1)
#else
#define PREFETCH(p) ((void)0)
#define PREFETCH_W(p) ((void)0)
#endif
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define CPU_RELAX() _mm_pause()
#else
#define CPU_RELAX() ((void)0)
#endif

/* ---------------------------------------------------------------------------------------------
 * Coefficients: scripts/fit_kernels.py (relative least squares at Chebyshev points, mpmath). */

/* erfcx(z) (1 + z/K) = P(t), t = (z - K)/(z + K), z in [0, 10.5]: max relative error 1.22e-09 */
#define ERFCX_K 4.0
#define ERFCX_ZMAX 10.5
static const double ERFCX32[11] = {
    0.27399891519943764, -0.24413718744023125, 0.1933021845085728, -0.13521319564262063,
    0.08271282305060626, -0.04350648057252987, 0.01909301768554987, -0.006572623075255094,
    0.0015557039029500121, -9.724782007147687e-05, -0.00018937845107501613};
/* The central polynomials, |x| < GELU_X or ERF_X (no exp, no division): fitted in float64 by
 * weighted least squares (each weighted by what its error costs the float32 result, so
 * 1/2 + x G at x = -3.5, where Phi = 2.3e-4, and 1 - x P at x = 3, erfc = 2.2e-5, keep it); the
 * bound beside each is that cost, in float32 ulps, for the float64 coefficients below */
#define GELU_X 3.5f
#define GELU_X_BITS 0x40600000u
#define ERF_X 3.0f
#define ERF_X_BITS 0x40400000u
/* -2 (Phi(x) - 1/2)/x = -2 G(x^2), x^2 <= 12.25: 0.197 ulp (fit_kernels.py's G times -2) */
static const double GELU_N2PHI32[13] = {
    -0.7978845099143387, 0.13298048104615487, -0.01994658851840152, 0.002374151929655214,
    -0.0002305777624103378, 1.8778387176464594e-05, -1.302667629035869e-06, 7.691792785226733e-08,
    -3.78173251142452e-09, 1.4771009499386628e-10, -4.240289405843722e-12, 7.83898669021734e-14,
    -6.918002312518116e-16};
/* (Phi(x) + x phi(x) - 1/2)/x = R(x^2), x^2 <= 12.25: 0.135 ulp */
static const double GELU_DPHI32[14] = {
    0.7978845467579185, -0.26596142054880795, 0.059841071195812515, -0.009498248419080264,
    0.0011540366446105084, -0.0001131716035200873, 9.26426763780063e-06, -6.444690806955168e-07,
    3.811197105972461e-08, -1.8758465100077712e-09, 7.337002328063244e-11, -2.110924901159518e-12,
    3.915512411805717e-14, -3.4710063778608873e-16};
/* erf(x)/x = P(x^2), for erf, x^2 <= 9: 0.006 ulp */
static const double ERF_P32[15] = {
    1.1283791666726883, -0.37612636961813634, 0.1128377650374395, -0.026865693774606927,
    0.005223179435043936, -0.0008540158132268727, 0.000119999181844326, -1.4663407342917843e-05,
    1.5566539087008187e-06, -1.4107381632038283e-07, 1.0532329785661288e-08, -6.135486427015667e-10,
    2.577734146223043e-11, -6.863562876219536e-13, 8.619201526566887e-15};
/* erf(x)/x = P(x^2), for erfc = 1 - x P, x^2 <= 9: 0.019 ulp */
static const double ERFC_P32[17] = {
    1.1283791660990414, -0.3761263613233927, 0.11283777580210612, -0.02686584534694079,
    0.00522354037959447, -0.0008544474326146591, 0.00012031502479250888, -1.481757609459715e-05,
    1.6092143107075294e-06, -1.5390514658760788e-07, 1.279927157869186e-08, -9.029294973296328e-10,
    5.2077970802672156e-11, -2.334094144033118e-12, 7.55341565863229e-14, -1.5582448751207673e-15,
    1.530024695401181e-17};
/* (exp(r) - 1 - r)/r^2 = Q(r), |r| <= ln(2)/2: 2.74e-09 (EXP_Q32D), 8.88e-16 (EXP_Q64) and,
 * in float32 coefficients, 1.27e-07 (EXP_Q32F) */
static const double EXP_Q32D[6] = {
    0.5000000013350251, 0.16666666495213509, 0.04166646572328431, 0.00833337312759006,
    0.0013933581278392222, 0.00019849518491816574};
static const double EXP_Q64[11] = {
    0.49999999999999967, 0.16666666666666638, 0.04166666666666544, 0.008333333333349499,
    0.0013888888890227016, 0.00019841269801381832, 2.4801583282084797e-05,
    2.7557344370259455e-06, 2.7561859844341987e-07, 2.5069218341785822e-08,
    1.916952387119216e-09};
static const float EXP_Q32F[5] = {
    0.5f, 0.16666577756404877f, 0.041666943579912186f, 0.00836312584578991f,
    0.0013893831055611372f};

#define INV_SQRT2 0.70710678118654752440
#define TWO_OVER_SQRT_PI 1.12837916709551257390
#define INV_SQRT_2PI 0.39894228040143267794
#define SQRT_2_OVER_PI 0.79788456080286535588
#define GELU_K 0.044715

/* Polynomials by Estrin's scheme (pairs, then powers of x^2): the same operations as Horner's
 * rule in number, a third of its dependency chain (float64 only, where the rounding of either
 * is far below what the float32 results keep). */
KI double estrin5(double x, const double *c)  /* degree 5 */
{
    double x2 = x * x;
    return (c[0] + c[1] * x) + x2 * ((c[2] + c[3] * x) + x2 * (c[4] + c[5] * x));
}

KI double estrin10(double x, const double *c)  /* degree 10 */
{
    double x2 = x * x, x4 = x2 * x2;
    double a = (c[0] + c[1] * x) + x2 * (c[2] + c[3] * x);
    double b = (c[4] + c[5] * x) + x2 * (c[6] + c[7] * x);
    double d = (c[8] + c[9] * x) + x2 * c[10];
    return a + x4 * (b + x4 * d);
}

/* ---------------------------------------------------------------------------------------------
 * exp: Cody-Waite reduction x = n ln2 + r, |r| <= ln2/2, exp(r) = 1 + r + r^2 Q(r), then two
 * exact scalings by powers of two (so results in the subnormal range round once). NaN in, NaN
 * out; -inf gives +0, overflow +inf. */

KI float k_expf(float x)
{
    float a = x > -110.0f ? x : -110.0f;   /* NaN -> -110 here, restored at the end */
    a = a < 89.0f ? a : 89.0f;
    float kd = a * 1.44269504088896341f + 12582912.0f;  /* 1.5 * 2^23: rounds to an integer */
    float kf = kd - 12582912.0f;
    uint32_t kb;
    memcpy(&kb, &kd, 4);
    int32_t n = (int32_t)(kb - 0x4B400000u);
    float r = a - kf * 0.693359375f;          /* exact: 9-bit constant, Sterbenz */
    r = r - kf * -2.12194440e-4f;
    float q = (((EXP_Q32F[4] * r + EXP_Q32F[3]) * r + EXP_Q32F[2]) * r + EXP_Q32F[1]) * r
              + EXP_Q32F[0];
    float p = 1.0f + (r + (r * r) * q);
    int32_t n1 = n >> 1, n2 = n - n1;
    uint32_t b1 = (uint32_t)(n1 + 127) << 23, b2 = (uint32_t)(n2 + 127) << 23;
    float s1, s2;
    memcpy(&s1, &b1, 4);
    memcpy(&s2, &b2, 4);
    float y = (p * s1) * s2;
    return x != x ? x : y;
}

/* k_expf with its reduction and polynomial by fmaf (for CLONES_FMA kernels: correctly rounded in
 * every variant, so the same bits in each; fewer instructions than k_expf, a different
 * rounding of r and q, also within 1 ulp) */
KI float k_expf_fma(float x)
{
    float a = x > -110.0f ? x : -110.0f;
    a = a < 89.0f ? a : 89.0f;
    float kd = fmaf(a, 1.44269504088896341f, 12582912.0f);
    float kf = kd - 12582912.0f;
    uint32_t kb;
    memcpy(&kb, &kd, 4);
    int32_t n = (int32_t)(kb - 0x4B400000u);
    float r = fmaf(kf, -0.693359375f, a);
    r = fmaf(kf, 2.12194440e-4f, r);
    float q = fmaf(fmaf(fmaf(fmaf(EXP_Q32F[4], r, EXP_Q32F[3]), r, EXP_Q32F[2]), r,
                        EXP_Q32F[1]), r, EXP_Q32F[0]);
    float p = 1.0f + fmaf(r * r, q, r);
    int32_t n1 = n >> 1, n2 = n - n1;
    uint32_t b1 = (uint32_t)(n1 + 127) << 23, b2 = (uint32_t)(n2 + 127) << 23;
    float s1, s2;
    memcpy(&s1, &b1, 4);
    memcpy(&s2, &b2, 4);
    float y = (p * s1) * s2;
    return x != x ? x : y;
}

/* k_expf_fma for x <= 0, -inf and NaN only (softmax's x - max, a log-probability): one clamp,
 * and the scaling as one exact product p 2^(n + 64) (n >= -159: a normal power of two) and one
 * rounding multiply by 2^-64, which rounds as k_expf_fma's two: the same bits, about 18 vector
 * operations instead of 30. x > 43 would overflow the exponent field: callers never pass it. */
KI float k_expf_neg(float x)
{
    float a = x > -110.0f ? x : -110.0f;
    float kd = fmaf(a, 1.44269504088896341f, 12582912.0f);
    float kf = kd - 12582912.0f;
    uint32_t kb;
    memcpy(&kb, &kd, 4);
    float r = fmaf(kf, -0.693359375f, a);
    r = fmaf(kf, 2.12194440e-4f, r);
    float q = fmaf(fmaf(fmaf(fmaf(EXP_Q32F[4], r, EXP_Q32F[3]), r, EXP_Q32F[2]), r,
                        EXP_Q32F[1]), r, EXP_Q32F[0]);
    float p = 1.0f + fmaf(r * r, q, r);
    uint32_t b = (kb - 0x4B400000u + 127u + 64u) << 23;
    float sc;
    memcpy(&sc, &b, 4);
    float y = (p * sc) * 5.42101086242752217e-20f;  /* 2^-64 */
    return x != x ? x : y;
}

#define SHIFT_D 6755399441055744.0   /* 1.5 * 2^52 */
#define SHIFT_D_BITS 0x4338000000000000ULL

KI double exp_scale(double p, double kd, double kf)
{
    double hd = kf * 0.5 + SHIFT_D;  /* n1 = round(n / 2), n2 = n - n1: both in range */
    uint64_t kb, hb;
    memcpy(&kb, &kd, 8);
    memcpy(&hb, &hd, 8);
    int64_t n = (int64_t)(kb - SHIFT_D_BITS), n1 = (int64_t)(hb - SHIFT_D_BITS), n2 = n - n1;
    uint64_t b1 = (uint64_t)(n1 + 1023) << 52, b2 = (uint64_t)(n2 + 1023) << 52;
    double s1, s2;
    memcpy(&s1, &b1, 8);
    memcpy(&s2, &b2, 8);
    return (p * s1) * s2;
}

/* exp(x) in float64 to ~2e-10 relative, for x <= 0 and results rounded to float32 (which has
 * nothing below 1e-45, so one scaling suffices): x < -708 (-inf too) gives +0; NaN gives an
 * unspecified number (the callers carry x's NaN to their result themselves). */
KI double k_exp32(double x)
{
    double a = x > -708.0 ? x : -708.0;
    double kd = a * 1.4426950408889634 + SHIFT_D;
    double kf = kd - SHIFT_D;
    double r = a - kf * 6.93147180369123816490e-01;
    r = r - kf * 1.90821492927058770002e-10;
    uint64_t kb;
    memcpy(&kb, &kd, 8);
    uint64_t sb = (kb - SHIFT_D_BITS + 1023) << 52;
    double scale;
    memcpy(&scale, &sb, 8);
    double y = (1.0 + (r + (r * r) * estrin5(r, EXP_Q32D))) * scale;
    return x < -708.0 ? 0.0 : y;
}

/* exp(x) in float64 to about 1 ulp */
KI double k_exp(double x)
{
    double a = x > -746.0 ? x : -746.0;
    a = a < 710.0 ? a : 710.0;
    double kd = a * 1.4426950408889634 + SHIFT_D;
    double kf = kd - SHIFT_D;
    double r = a - kf * 6.93147180369123816490e-01;
    r = r - kf * 1.90821492927058770002e-10;
    double y = exp_scale(1.0 + (r + (r * r) * estrin10(r, EXP_Q64)), kd, kf);
    return x != x ? x : y;
}

/* ---------------------------------------------------------------------------------------------
 * erf family in float64 arithmetic, for float32 results */

/* erfcx(z) = exp(z^2) erfc(z) for z >= 0 (NaN and z > ZMAX read the value at ZMAX: every caller
 * multiplies by an exp(-z^2) that is below float32's range there, or carries the NaN itself) */
KI double erfcx32(double z)
{
    double zc = z < ERFCX_ZMAX ? z : ERFCX_ZMAX;
    double r = 1.0 / (zc + ERFCX_K);
    double t = (zc - ERFCX_K) * r;
    return estrin10(t, ERFCX32) * (ERFCX_K * r);
}

/* The central polynomials by Horner's rule with explicit fused multiply-adds (n of them: fewer
 * operations than Estrin's scheme, and the loops run many independent lanes, so the dependency
 * chain is hidden): one instruction in the AVX-512F and x86-64-v3 clones, the C library's
 * correctly rounded fma in the baseline one (slower, the same bits) */
KI double horner_fma(double s, const double *c, const int n)
{
    double p = c[n];
    for (int k = n - 1; k >= 0; k--)
        p = fma(p, s, c[k]);
    return p;
}

/* Each function of the erf family has a central path for |x| < ERF_X (gelu: GELU_X), a
 * polynomial in x^2 (no exp, no division), and the general exp * erfcx one outside it; a lane's
 * path depends on its x alone. The CENTRAL kernels (below) run the central path alone over
 * blocks whose every x is central: the same operations, so the same bits, whatever the
 * neighbours. */
KI float erf_central32(float xf)
{
    double x = xf;
    return (float)(x * horner_fma(x * x, ERF_P32, 14));
}

KI float erfc_central32(float xf)
{
    double x = xf;
    return (float)fma(-x, horner_fma(x * x, ERFC_P32, 16), 1.0);
}

KI float k_erf32(float xf)
{
    double x = xf, s = x * x;
    double c = k_exp32(-s) * erfcx32(fabs(x));   /* erfc(|x|); NaN for NaN */
    double big = copysign(1.0 - c, x);
    return fabsf(xf) < ERF_X ? erf_central32(xf) : (float)(x != x ? x : big);
}

KI float k_erfc32(float xf)
{
    double x = xf, s = x * x;
    double c = k_exp32(-s) * erfcx32(fabs(x));
    double big = x > 0 ? c : 2.0 - c;
    return fabsf(xf) < ERF_X ? erfc_central32(xf) : (float)(x != x ? x : big);
}

/* erf's derivative times grad: grad 2/sqrt(pi) exp(-x^2) (x^2 exact in float64); erfc's is its
 * negative */
KI float k_erf_backward32(float xf, float gf)
{
    double x = xf;
    double d = (double)gf * (TWO_OVER_SQRT_PI * k_exp32(-(x * x)));
    return (float)(x != x ? x : d);
}

KI float k_erfc_backward32(float xf, float gf)
{
    return -k_erf_backward32(xf, gf);
}

/* Phi(-|x|) = erfc(|x|/sqrt2)/2 and phi(x) = exp(-x^2/2)/sqrt(2pi); x^2/2 is exact for a float32 x */
KI double half_erfc32(double x, double *e)
{
    double s = 0.5 * (x * x);
    *e = k_exp32(-s);
    return 0.5 * (*e * erfcx32(fabs(x) * INV_SQRT2));
}

/* x Phi(x) = (x + x^2 2G(x^2))/2 centrally, as -fma(x^2, -2G, -x)/2: x^2 is exact in float64, so
 * one fma, one rounding to float32 and an exact halving there (16 lanes a vector, not 8). The
 * negations keep zeros' signs: at x = +-0 the product x^2 (-2G) is -0, so the fma gives -0 for +0
 * and +0 for -0. Only where the result is subnormal
 * (|x| < 2^-125) could halving after rounding differ from rounding the half, and there the fma
 * gives -x exactly, so both round x/2 once. */
KI float gelu_central32(float xf)
{
    double x = xf;
    return -0.5f * (float)fma(x * x, horner_fma(x * x, GELU_N2PHI32, 12), -x);
}

KI float k_gelu32(float xf)  /* x Phi(x) */
{
    double x = xf, e;
    double h = half_erfc32(x, &e);
    return fabsf(xf) < GELU_X ? gelu_central32(xf) : (float)(x * (x > 0 ? 1.0 - h : h));
}

/* grad (Phi(x) + x phi(x)) = grad (1/2 + x R(x^2)) centrally */
KI float gelu_backward_central32(float xf, float gf)
{
    double x = xf;
    return (float)((double)gf * fma(x, horner_fma(x * x, GELU_DPHI32, 13), 0.5));
}

KI float k_gelu_backward32(float xf, float gf)  /* grad (Phi(x) + x phi(x)) */
{
    double x = xf, e;
    double h = half_erfc32(x, &e);
    double d = (x > 0 ? 1.0 - h : h) + x * (e * INV_SQRT_2PI);
    return fabsf(xf) < GELU_X ? gelu_backward_central32(xf, gf) : (float)((double)gf * d);
}

/* gelu's tanh form from e = exp(-2|u|): 1 + tanh(u) = 2 sel / (1 + e) with sel = 1 for u >= 0,
 * e below, and 1 - tanh(u)^2 = 4 e / (1 + e)^2: both with full relative accuracy. */
#define GELU_TANH_U(x) ((((x) * (x) * GELU_K + 1.0) * (x)) * SQRT_2_OVER_PI)

KI float k_gelu_tanh32(float xf)
{
    double x = xf, u = GELU_TANH_U(x);
    double e = k_exp32(-2.0 * fabs(u));
    return (float)(x * (u >= 0 ? 1.0 : e) / (1.0 + e));
}

KI float k_gelu_tanh_backward32(float xf, float gf)
{
    double x = xf, u = GELU_TANH_U(x);
    double e = k_exp32(-2.0 * fabs(u)), den = 1.0 + e;
    double du = SQRT_2_OVER_PI * (1.0 + (3.0 * GELU_K) * (x * x));
    double d = (u >= 0 ? 1.0 : e) / den + 2.0 * x * e * du / (den * den);
    return (float)((double)gf * d);
}

KI double k_gelu_tanh64(double x)
{
    double u = GELU_TANH_U(x);
    double e = k_exp(-2.0 * fabs(u));
    return x * (u >= 0 ? 1.0 : e) / (1.0 + e);
}

KI double k_gelu_tanh_backward64(double x, double g)
{
    double u = GELU_TANH_U(x);
    double e = k_exp(-2.0 * fabs(u)), den = 1.0 + e;
    double du = SQRT_2_OVER_PI * (1.0 + (3.0 * GELU_K) * (x * x));
    double d = (u >= 0 ? 1.0 : e) / den + 2.0 * x * e * du / (den * den);
    return g * d;
}

/* ---------------------------------------------------------------------------------------------
 * Mish: float32 results from float64 arithmetic, rounded once (within 1 ulp of the float64
 * formula; the backward within ~1e-9 absolute next to the zero of its derivative). */

KI double exp_d(double x)  /* exp to ~2e-10 relative for x <= 700 (float32 results) */
{
    return k_exp32(x < 700.0 ? x : 700.0);
}

/* Mish: tanh(softplus(x)) = n / (n + 2), n = e (e + 2), e = exp(x); 1 - t^2 = 4 (n + 1) / (n + 2)^2 */
KI float k_mish32(float xf)
{
    double x = xf, e = exp_d(x < 40.0 ? x : 40.0), n = e * (e + 2.0);
    return (float)(x != x ? x : x * (n / (n + 2.0)));
}

KI float k_mish_backward32(float xf, float gf)  /* grad (t + x sigmoid(x) (1 - t^2)) */
{
    double x = xf, xc = x < 40.0 ? x : 40.0;  /* past 40 the second term is below 1e-32 */
    double e = exp_d(xc), n = e * (e + 2.0), m = n + 2.0;
    double d = n / m + xc * (e / (1.0 + e)) * (4.0 * (n + 1.0) / (m * m));
    d = x == INFINITY ? NAN : d;  /* inf * 0 in the formula: NaN, as PyTorch's */
    return (float)(x != x ? x : (double)gf * d);
}

/* ---------------------------------------------------------------------------------------------
 * erfinv in float64 arithmetic, for float32 results: erfinv(x) = x P(w), w = -log(1 - x^2)
 * (1 - x^2 is exact in float64 for a float32 x), one polynomial for w <= 5 and one in sqrt(w)
 * for the tail (float32's largest x below 1 gives w = 15.94); scripts/fit_erfinv.py fitted them
 * (max relative errors below). Polynomials by fma (correctly rounded in every variant: the
 * CLONES_FMA kernels), one rounding to float32 at the end: within 1 ulp (0.5 + 0.01). */
/* max relative error 4.28e-10 */
static const double ERFINV_C[12] = {1.5014093517052813, 0.6166006892092034, -0.02610827961502916, -0.0195735088983879, 0.00852592532661195, -0.0004881858605163536, -0.0008364430702307, 0.00029284176156220014, 2.5128110797658792e-05, -4.2105503519300626e-05, 4.161303952784653e-06, 3.1872607317399967e-06};
/* max relative error 5.16e-10 */
static const double ERFINV_T[12] = {2.951328577069128, 0.885158491348395, 0.005569426913014489, -0.0037102934409776697, 0.002348471343729434, -0.0013719802617001052, 0.0006055293724386566, -0.00013739335304307457, -4.507937675361294e-05, 4.993202173935842e-05, -8.647497852603637e-06, -3.238285028756752e-06};
#define ERFINV_W0 5.0
#define ERFINV_XC 0.99662511f  /* float32 x below it has w < 5 */
#define ERFINV_S0 2.23606797749979  /* sqrt(W0) */
#define ERFINV_S1 4.0               /* sqrt(16): the tail's end */

/* log(y) for y in [2^-24, 1] to ~1e-12 relative: y = 2^e m, m in [sqrt(1/2), sqrt(2)),
 * log(m) = 2 atanh(s), s = (m - 1)/(m + 1), |s| <= 0.172, as s (2 + z R(z)), z = s^2 */
KI double log_unit(double y)
{
    uint64_t b;
    memcpy(&b, &y, 8);
    /* the biased exponent as a double without an int64 -> double conversion (AVX-512F has
     * none for vectors): 2^52 + e' has e' in its low bits */
    uint64_t eb = (b >> 52) | 0x4330000000000000ULL;
    uint64_t mb = (b & 0x000FFFFFFFFFFFFFULL) | 0x3FF0000000000000ULL;
    double m, ef;
    memcpy(&m, &mb, 8);
    memcpy(&ef, &eb, 8);
    ef = ef - (4503599627370496.0 + 1023.0);
    ef = m > 1.4142135623730951 ? ef + 1.0 : ef;
    m = m > 1.4142135623730951 ? 0.5 * m : m;
    double f = m - 1.0;  /* exact */
    double s = f / (2.0 + f), z = s * s;
    double r = fma(z, fma(z, fma(z, fma(z, fma(z, 2.0 / 15, 2.0 / 13), 2.0 / 11), 2.0 / 9),
                          2.0 / 7), 2.0 / 5);
    r = fma(z, r, 2.0 / 3);
    return fma(ef, 0.6931471805599453, s * fma(z, r, 2.0));
}

KI double erfinv_w(double x)  /* w = -log(1 - x^2) for |x| < 1 (0.5's elsewhere) */
{
    return -log_unit(fabs(x) < 1.0 ? 1.0 - x * x : 0.5);
}

KI double erfinv_central(double w)
{
    return horner_fma(w * (2.0 / ERFINV_W0) - 1.0, ERFINV_C, 11);  /* (degree 11) */
}

KI float erfinv_finish(double x, double r)  /* +-inf at +-1, NaN beyond and for NaN */
{
    r = fabs(x) == 1.0 ? x * INFINITY : r;
    return (float)(fabs(x) <= 1.0 ? r : NAN);
}

KI float k_erfinv32(float xf)
{
    double x = xf, w = erfinv_w(x);
    double pc = erfinv_central(w);
    double pt = horner_fma((sqrt(w) - ERFINV_S0) * (2.0 / (ERFINV_S1 - ERFINV_S0)) - 1.0,
                           ERFINV_T, 11);
    return erfinv_finish(x, x * (w <= ERFINV_W0 ? pc : pt));
}

KI float k_erfinv_central32(float xf)  /* k_erfinv32 where |x| < ERFINV_XC (w < 5) */
{
    double x = xf;
    return (float)(x * erfinv_central(erfinv_w(x)));
}

/* erfinv's derivative times grad, from its output y: grad sqrt(pi)/2 exp(y^2) (y^2 exact) */
KI float k_erfinv_backward32(float yf, float gf)
{
    double y = yf;
    double e = k_exp(y * y < 710.0 ? y * y : 710.0);  /* (y = +-inf: 710, still inf below) */
    double d = (double)gf * (0.88622692545275801365 * e);
    return (float)(y != y ? y : y * y > 710.0 ? (double)gf * INFINITY : d);
}


/* ---------------------------------------------------------------------------------------------
 * Float32-arithmetic kernels (the ELU family, softplus, logsigmoid, backward too): 16 lanes under
 * AVX-512, 8 under AVX2, twice the float64 kernels'. A float32 rounding costs up to 2^-24
 * relative, and a 1-ulp result allows about 2^-25 before its final rounding, so the steps that
 * would lose more carry a double-float (df: hi + lo, the rounding error of hi kept in lo) by
 * error-free transformations: two_sum, fast_two_sum (|a| >= |b|) and two_prod, whose error term
 * is one fmaf. These loops are
 * cloned for AVX-512F, x86-64-v3 (AVX2 with FMA) and the baseline: fmaf is one instruction in the
 * first two and the C library's correctly rounded fmaf in the baseline (slower, the same bits),
 * so every variant rounds alike (-ffp-contract=off: no other fma is formed). */
#if HAVE_CLONES && defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 12
#define CLONES_FMA __attribute__((target_clones("avx512f", "arch=x86-64-v3", "default")))
#else
#define CLONES_FMA CLONES
#endif

typedef struct {
    float hi, lo;
} df;

KI df two_sum(float a, float b)
{
    float s = a + b, bb = s - a;
    df r = {s, (a - (s - bb)) + (b - bb)};
    return r;
}

KI df fast_two_sum(float a, float b)  /* |a| >= |b| (or a == 0) */
{
    float s = a + b;
    df r = {s, b - (s - a)};
    return r;
}

KI df two_prod(float a, float b)
{
    float p = a * b;
    df r = {p, fmaf(a, b, -p)};
    return r;
}

/* exp(z + zl) = (hi + lo) s1 s2 (|zl| <= ulp(z)), hi + lo within 2^-27 relative, for z in
 * [-150, 88.5] (the caller
 * clamps, and scales where the result can no longer be subnormal, so that it rounds once):
 * z = n ln2 + rh + rl with
 * rh = z - n LN2_HI exact (by fmaf: z and n LN2_HI are multiples of 2^-24, or of 2^-25 for
 * |n| <= 1, and |rh| <= ln2/2) and rl = n (LN2_HI - ln2); exp(rh) = 1 + p, p = rh + rh^2 Q(rh),
 * Q Taylor's to rh^8 (remainder below 2^-31), p as ph + pl (rh - ph is exact: Sterbenz) and
 * 1 + ph summed exactly; exp(rl) = 1 + rl; s1 s2 = 2^n (each a normal float32). */
/* exp_df's and expm1_df's shared steps: n, the reduced argument's rl, p = ph + pl, and
 * exp(rh) exp(rl) = a.hi + lo */
typedef struct { df a; float lo, ph, pl, rl; int32_t n; } exp_parts;

KI exp_parts exp_reduce(float z, float zl)
{
    float kd = z * 1.44269504088896341f + 12582912.0f;  /* 1.5 * 2^23: rounds to an integer */
    float kf = kd - 12582912.0f;
    uint32_t kb;
    memcpy(&kb, &kd, 4);
    int32_t n = (int32_t)(kb - 0x4B400000u);
    float rh = fmaf(-kf, 0.693147182464599609375f, z);
    float rl = fmaf(kf, 1.904654299957768e-09f, zl);
    float q = fmaf(fmaf(fmaf(fmaf(fmaf(fmaf(2.48015873e-05f, rh, 1.98412698e-04f), rh,
                                       1.38888889e-03f), rh, 8.33333333e-03f), rh,
                             4.16666667e-02f), rh, 1.66666667e-01f), rh, 0.5f);
    float r2 = rh * rh;
    float ph = fmaf(r2, q, rh);
    float pl = fmaf(r2, q, rh - ph);
    df a = fast_two_sum(1.0f, ph);
    float lo = fmaf(rl, a.hi, a.lo + pl);
    exp_parts e = {a, lo, ph, pl, rl, n};
    return e;
}

KI df exp_df(float z, float zl, float *s1, float *s2)
{
    exp_parts e0 = exp_reduce(z, zl);
    df a = e0.a;
    float lo = e0.lo;
    int32_t n = e0.n;
    int32_t n1 = n >> 1, n2 = n - n1;
    uint32_t b1 = (uint32_t)(n1 + 127) << 23, b2 = (uint32_t)(n2 + 127) << 23;
    memcpy(s1, &b1, 4);
    memcpy(s2, &b2, 4);
    df e = {a.hi, lo};
    return e;
}

/* sigmoid and its kin compute in float64 lanes from e = exp(-|x|) (exp_neg_d: a degree-7
 * polynomial, 9.4e-11 relative), one division and products: each result is within 2^-33 of
 * the true value before its one rounding to float32 (0.501 ulp over the dense sweep; in the
 * subnormal range the conversion rounds once). Half the lanes of the double-float form this
 * replaced (0.73 ulp), but a quarter fewer operations: 1.21-1.36x faster with AVX2. Not
 * k_exp32 (the same job for other kernels): its unfused Estrin polynomial, two-constant
 * reduction and select ran (float)k_exp32(-|x|) over 4M values in 6.2-7.1 ms against
 * 3.4-4.3 for this form in a C harness. */
static const double EXP_P7D[7] = {  /* (exp(r) - 1)/r, |r| <= ln2/2 (scripts/fit_kernels.py) */
    1.0000000000356013, 0.5000000046541844, 0.166666661829813, 0.04166635481815538,
    0.008333417764607779, 0.0013940980347353393, 0.00019832976461637815};

/* exp(-|x|) in float64, |x| read as at most 700 (beyond, every result below is 1, 0 or x:
 * even 3.4e38 e^-700 is below float32's range); NaN gives NaN. The scaling 2^n adds n to the
 * exponent field: n >= -1010 keeps it normal. */
KI double exp_neg_d(float x)
{
    double z = -fabs((double)x);
    z = -700.0 > z ? -700.0 : z;
    double kd = fma(z, 1.4426950408889634, SHIFT_D);  /* n in the low bits */
    double kf = kd - SHIFT_D;
    double r = fma(kf, -0.6931471805599453, z);  /* |n ln2| <= 700: the constant's error 3e-14 */
    const double *c = EXP_P7D;
    double p = fma(fma(fma(fma(fma(fma(fma(c[6], r, c[5]), r, c[4]), r, c[3]), r, c[2]), r,
                                c[1]), r, c[0]), r, 1.0);
    uint64_t kb, pb;
    memcpy(&kb, &kd, 8);
    memcpy(&pb, &p, 8);
    pb += kb << 52;
    memcpy(&p, &pb, 8);
    return p;
}

/* exp(x) for torch.exp: exp_df's hi + lo (within 2^-27 relative) rounded once to float32, then
 * scaled exactly by 2^n (two normal factors; where the result is subnormal the second multiply
 * rounds it once more, far below its ulp): within 0.56 ulp over a dense sweep, 0.75 where
 * subnormal (k_expf_fma, one float32 polynomial, reaches 1.07; k_exp32 in float64 is as accurate
 * and 1.7x slower in 4-lane AVX2 vectors). -inf gives +0, NaN NaN, x > 88.73 +inf. */
KI float k_exp_f32(float x)
{
    float a = x > -150.0f ? x : -150.0f;  /* (NaN: -150, the NaN returned below) */
    a = a < 89.0f ? a : 89.0f;
    float s1, s2;
    df e = exp_df(a, 0.0f, &s1, &s2);
    float y = ((e.hi + e.lo) * s1) * s2;
    return x != x ? x : y;
}

KI float k_sigmoid32(float x)  /* 1/(1 + e) or e/(1 + e) */
{
    double e = exp_neg_d(x);
    float y = (float)((x < 0.0f ? e : 1.0) / (1.0 + e));
    return x != x ? x : y;
}

KI float k_silu32(float x)  /* x sigmoid(x); -inf gives NaN (-inf * 0), as PyTorch's */
{
    double e = exp_neg_d(x), xd = x;
    float y = (float)((x < 0.0f ? xd * e : xd) / (1.0 + e));
    return x == -INFINITY ? NAN : x != x ? x : y;
}

KI float k_silu_backward32(float x, float g)  /* grad s (1 + x (1 - s)); +-inf give NaN */
{
    double e = exp_neg_d(x), inv = 1.0 / (1.0 + e), ei = e * inv;
    double s = x < 0.0f ? ei : inv, sc = x < 0.0f ? inv : ei;
    float y = (float)((double)g * (s * fma((double)x, sc, 1.0)));
    return fabsf(x) == INFINITY ? NAN : x != x ? x : y;
}

/* The ELU family (elu, selu, celu); p: alpha, scale, input_scale (float64, as the NumPy formula's
 * scalars). x > 0: scale x (a float32 product, as PyTorch's); else alpha scale expm1(x input_scale)
 * and its derivative alpha scale input_scale exp(x input_scale), with x input_scale, the
 * constant and the products as dfs, rounded once. */
KI df df_of(double v)
{
    float h = (float)v;
    df r = {h, (float)(v - h)};
    return r;
}

KI df scaled_x(float x, double v)  /* x v as a df */
{
    df c = df_of(v), z = two_prod(x, c.hi);
    z.lo = fmaf(x, c.lo, z.lo);
    return z;
}

/* expm1(z + zl) as a df within 2^-27 relative, z in [-30, 88]: exp_df's steps, and then for
 * n = 0 (|z| <= ln2/2) ph + pl + rl (1 + ph) with no cancellation, else 2^n (1 + p) - 1 */
KI df expm1_df(float z, float zl)
{
    exp_parts e0 = exp_reduce(z, zl);
    df a = e0.a;
    float lo = e0.lo, ph = e0.ph, pl = e0.pl, rl = e0.rl;
    int32_t n = e0.n;
    uint32_t b = (uint32_t)(n + 127) << 23;
    float sc;
    memcpy(&sc, &b, 4);
    df v = two_sum(a.hi * sc, -1.0f);
    v.lo += lo * sc;
    df small = {ph, fmaf(rl, ph, pl + rl)};
    return n == 0 ? small : v;
}

/* tanh(x) = -v / (2 + v) for |x|, v = expm1(-2|x|) as a double-float (no cancellation near
 * 0), the quotient's hi + lo by one division and its residual (exact by fmaf), rounded once;
 * x's sign copied. |x| < 2^-12 gives x (tanh(x) = x (1 - x^2/3 ...): a third of an ulp at
 * most; the double-float steps would meet subnormals). NaN: NaN; +-inf: +-1. */
KI float k_tanh32(float x)
{
    float z = -2.0f * fabsf(x);
    z = z > -20.0f ? z : -20.0f;  /* below, tanh rounds to 1 (NaN: -20, the NaN returned below) */
    df v = expm1_df(z, 0.0f);
    df d = fast_two_sum(2.0f, v.hi);
    float dl = d.lo + v.lo;
    float yh = -v.hi / d.hi;
    float yl = (fmaf(-yh, d.hi, -v.hi) - fmaf(yh, dl, v.lo)) / d.hi;
    float y = copysignf(yh + yl, x);
    return fabsf(x) < 2.44140625e-4f ? x : x != x ? x : y;
}

KI float k_elu32(float x, const double *p)
{
    df c = df_of(p[0] * p[1]), z = scaled_x(x, p[2]);
    int in = z.hi > -30.0f;  /* below, expm1 rounds to -1 */
    float zh = in ? z.hi : -30.0f, zl = in ? z.lo : 0.0f;
    int big = !(zh < 88.0f);  /* (a negative input_scale) */
    zh = big ? 88.0f : zh;
    df v = expm1_df(zh, zl);
    df m = two_prod(c.hi, v.hi);
    float neg = m.hi + fmaf(c.hi, v.lo, fmaf(c.lo, v.hi, m.lo));
    neg = big ? c.hi * INFINITY : neg;
    /* |z| < 2^-28: alpha scale input_scale x, from x (z may be subnormal, and inexact), at
     * 2^24 times its size, so that the low parts stay above the subnormal range */
    float xs = x * 16777216.0f;
    df cs = df_of(p[0] * p[1] * p[2]), t = two_prod(xs, cs.hi);
    float tiny = (t.hi + fmaf(xs, cs.lo, t.lo)) * 5.9604645e-08f;
    neg = fabsf(zh) < 3.7252903e-09f ? tiny : neg;
    return x > 0 ? x * (float)p[1] : x != x ? x : neg;
}

KI float k_elu_backward32(float x, float g, const double *p)
{
    df c = df_of(p[0] * p[1] * p[2]), z = scaled_x(x, p[2]);
    int in = z.hi > -150.0f;  /* below, exp is taken as 0 */
    float zh = in ? z.hi : -150.0f, zl = in ? z.lo : 0.0f;
    zh = zh < 88.0f ? zh : 88.0f;
    float s1, s2;
    df e = exp_df(zh, zl, &s1, &s2);
    s1 = in ? s1 : 0.0f;
    float eh = e.hi * s1, el = e.lo * s1;  /* exact: s1 >= 2^-109 */
    df t = two_prod(g, c.hi);
    float tl = fmaf(g, c.lo, t.lo);
    df u = two_prod(t.hi, eh);
    float neg = (u.hi + fmaf(t.hi, el, fmaf(tl, eh, u.lo))) * s2;
    return x <= 0 ? neg : g * (float)p[1];  /* nan x: grad * scale, as PyTorch */
}

/* log1p(exp(-|z|)) = (hi + lo) k1 k2: with u = exp(-|z|) and s = u/(2 + u) <= 1/3,
 * log1p(u) = 2 atanh(s) = u (2/(2 + u)) (1 + t), t = s^2/3 + s^4/5 + ... (to s^14: the rest below
 * 2^-31), 2/(2 + u) a df by one division; u's scaling 2^n left to the caller (a result that is
 * subnormal then rounds once). */
KI df log1p_exp_df(float z, float *k1, float *k2)
{
    float a = -fabsf(z);
    int in = a > -150.0f;  /* below, the result is taken as 0 (NaN too: the callers return it) */
    a = in ? a : -150.0f;
    float s1, s2;
    df e = exp_df(a, 0.0f, &s1, &s2);
    s1 = in ? s1 : 0.0f;
    float uh = (e.hi * s1) * s2, ul = (e.lo * s1) * s2;
    df d = fast_two_sum(2.0f, uh);
    float dl = d.lo + ul;
    float yh = 2.0f / d.hi;
    float yl = (fmaf(-yh, d.hi, 2.0f) - yh * dl) * (0.5f * yh);
    float sv = uh * (0.5f * yh), ss = sv * sv;
    float t = ss * fmaf(fmaf(fmaf(fmaf(fmaf(fmaf(6.66666667e-02f, ss, 7.69230769e-02f), ss,
                                            9.09090909e-02f), ss, 1.11111111e-01f), ss,
                                  1.42857143e-01f), ss, 2.0e-01f), ss, 3.33333333e-01f);
    df m = two_prod(e.hi, yh);
    float ml = fmaf(e.hi, yl, fmaf(e.lo, yh, m.lo));
    df r = {m.hi, fmaf(m.hi, t, ml)};
    *k1 = s1;
    *k2 = s2;
    return r;
}

/* softplus; p: beta, threshold (as float32, PyTorch's scalars for a float32 op), p[2] = 1 /
 * float32(beta) (set by the caller): (max(bx, 0) + log1p(exp(-|bx|))) / beta, bx = x beta in
 * float32 (as PyTorch's), the sum and the division as dfs */
KI float k_softplus32(float x, const double *p)
{
    float bx = x * (float)p[0], k1, k2;
    df l = log1p_exp_df(bx, &k1, &k2);
    float lh = l.hi * k1, ll = l.lo * k1;  /* exact: k1 = 0 or k1 >= 2^-109 */
    df v = two_sum(bx, lh * k2);
    int pos = bx > 0;
    float vh = pos ? v.hi : lh, vl = pos ? v.lo + ll * k2 : ll, k = pos ? 1.0f : k2;
    df ib = df_of(p[2]), w = two_prod(vh, ib.hi);
    float y = (w.hi + fmaf(vh, ib.lo, fmaf(vl, ib.hi, w.lo))) * k;
    return bx > (float)p[1] ? x : bx != bx ? bx : y;
}

KI float k_softplus_backward32(float x, float g, const double *p)  /* grad sigmoid(bx) */
{
    float bx = x * (float)p[0];
    double e = exp_neg_d(bx);
    float y = (float)((double)g * ((bx < 0.0f ? e : 1.0) / (1.0 + e)));
    return bx > (float)p[1] ? g : bx != bx ? bx : y;
}

KI float k_logsigmoid32(float x)  /* min(x, 0) - log1p(exp(-|x|)) */
{
    float k1, k2;
    df l = log1p_exp_df(x, &k1, &k2);
    float lh = l.hi * k1, ll = l.lo * k1;
    df v = two_sum(x, -(lh * k2));
    float neg = v.hi + (v.lo - ll * k2);
    float y = x < 0 ? neg : -((lh + ll) * k2);
    return x == -INFINITY ? x : x != x ? x : y;
}

KI float k_logsigmoid_backward32(float x, float g)  /* grad sigmoid(-x) */
{
    double e = exp_neg_d(x);
    float y = (float)((double)g * ((x < 0.0f ? 1.0 : e) / (1.0 + e)));
    return x != x ? x : y;
}

/* sigmoid and silu in float64 from the 1-ulp exp: a few ulp */
KI double k_sigmoid64(double x)
{
    double e = k_exp(-fabs(x));
    return x != x ? x : (x >= 0 ? 1.0 : e) / (1.0 + e);
}

KI double k_silu64(double x)
{
    return x * k_sigmoid64(x);
}

KI double k_silu_backward64(double x, double g)
{
    double e = k_exp(-fabs(x)), den = 1.0 + e;
    double s = (x >= 0 ? 1.0 : e) / den, sc = (x >= 0 ? e : 1.0) / den;
    return x != x ? x : g * (s * (1.0 + x * sc));
}

/* From the saved result y, in the NumPy formula's operations and order (bit for bit):
 * tanh: grad (1 - y y);  sigmoid: (grad y) (1 - y) */
#define TANH_BACKWARD(y, g) ((g) * (1 - (y) * (y)))
#define SIGMOID_BACKWARD(y, g) (((g) * (y)) * (1 - (y)))

/* ---------------------------------------------------------------------------------------------
 * Elementwise loops: [i0, i1) of the flat arrays */

typedef void (*unary_fn)(const void *x, void *y, Py_ssize_t i0, Py_ssize_t i1);
typedef void (*binary_fn)(const void *x, const void *g, void *y, Py_ssize_t i0, Py_ssize_t i1);

#define UNARY(NAME, T, EXPR)                                                                   \
    CLONES static void NAME(const void *xv, void *yv, Py_ssize_t i0, Py_ssize_t i1)           \
    {                                                                                          \
        const T *RESTRICT x = (const T *)xv;                                                   \
        T *RESTRICT y = (T *)yv;                                                               \
        for (Py_ssize_t i = i0; i < i1; i++)                                                   \
            y[i] = EXPR(x[i]);                                                                 \
    }
#define BINARY(NAME, T, EXPR)                                                                  \
    CLONES static void NAME(const void *xv, const void *gv, void *yv, Py_ssize_t i0,          \
                            Py_ssize_t i1)                                                     \
    {                                                                                          \
        const T *RESTRICT x = (const T *)xv;                                                   \
        const T *RESTRICT g = (const T *)gv;                                                   \
        T *RESTRICT y = (T *)yv;                                                               \
        for (Py_ssize_t i = i0; i < i1; i++)                                                   \
            y[i] = EXPR(x[i], g[i]);                                                           \
    }

#define UNARYF(NAME, EXPR)                                                                     \
    CLONES_FMA static void NAME(const void *xv, void *yv, Py_ssize_t i0, Py_ssize_t i1)       \
    {                                                                                          \
        const float *RESTRICT x = (const float *)xv;                                           \
        float *RESTRICT y = (float *)yv;                                                       \
        for (Py_ssize_t i = i0; i < i1; i++)                                                   \
            y[i] = EXPR(x[i]);                                                                 \
    }
#define BINARYF(NAME, EXPR)                                                                    \
    CLONES_FMA static void NAME(const void *xv, const void *gv, void *yv, Py_ssize_t i0,      \
                                Py_ssize_t i1)                                                 \
    {                                                                                          \
        const float *RESTRICT x = (const float *)xv;                                           \
        const float *RESTRICT g = (const float *)gv;                                           \
        float *RESTRICT y = (float *)yv;                                                       \
        for (Py_ssize_t i = i0; i < i1; i++)                                                   \
            y[i] = EXPR(x[i], g[i]);                                                           \
    }

typedef void (*unaryp_fn)(const void *x, void *y, Py_ssize_t i0, Py_ssize_t i1, const double *p);
typedef void (*binaryp_fn)(const void *x, const void *g, void *y, Py_ssize_t i0, Py_ssize_t i1,
                           const double *p);

/* with parameters p (the op's scalars) */
#define UNARYP(NAME, T, EXPR)                                                                  \
    CLONES static void NAME(const void *xv, void *yv, Py_ssize_t i0, Py_ssize_t i1,           \
                            const double *p)                                                   \
    {                                                                                          \
        const T *RESTRICT x = (const T *)xv;                                                   \
        T *RESTRICT y = (T *)yv;                                                               \
        double q[4] = {p[0], p[1], p[2], p[3]};                                                \
        for (Py_ssize_t i = i0; i < i1; i++)                                                   \
            y[i] = EXPR(x[i], q);                                                              \
    }
#define BINARYP(NAME, T, EXPR)                                                                 \
    CLONES static void NAME(const void *xv, const void *gv, void *yv, Py_ssize_t i0,          \
                            Py_ssize_t i1, const double *p)                                    \
    {                                                                                          \
        const T *RESTRICT x = (const T *)xv;                                                   \
        const T *RESTRICT g = (const T *)gv;                                                   \
        T *RESTRICT y = (T *)yv;                                                               \
        double q[4] = {p[0], p[1], p[2], p[3]};                                                \
        for (Py_ssize_t i = i0; i < i1; i++)                                                   \
            y[i] = EXPR(x[i], g[i], q);                                                        \
    }

#define UNARYPF(NAME, EXPR)                                                                    \
    CLONES_FMA static void NAME(const void *xv, void *yv, Py_ssize_t i0, Py_ssize_t i1,       \
                                const double *p)                                               \
    {                                                                                          \
        const float *RESTRICT x = (const float *)xv;                                           \
        float *RESTRICT y = (float *)yv;                                                       \
        double q[4] = {p[0], p[1], p[2], p[3]};                                                \
        for (Py_ssize_t i = i0; i < i1; i++)                                                   \
            y[i] = EXPR(x[i], q);                                                              \
    }
#define BINARYPF(NAME, EXPR)                                                                   \
    CLONES_FMA static void NAME(const void *xv, const void *gv, void *yv, Py_ssize_t i0,      \
                                Py_ssize_t i1, const double *p)                                \
    {                                                                                          \
        const float *RESTRICT x = (const float *)xv;                                           \
        const float *RESTRICT g = (const float *)gv;                                           \
        float *RESTRICT y = (float *)yv;                                                       \
        double q[4] = {p[0], p[1], p[2], p[3]};                                                \
        for (Py_ssize_t i = i0; i < i1; i++)                                                   \
            y[i] = EXPR(x[i], g[i], q);                                                        \
    }

/* The CENTRAL kernels: blocks of 8 CBLOCK elements whose every x is central run the central
 * path alone; the others are taken as four blocks of 2 CBLOCK, and those that are not all
 * central as two blocks of CBLOCK, each central alone or elementwise (the central path where x
 * is central, else the general one): the same bits either way. The test of 128 elements at once
 * (one horizontal maximum where there were four) and the longer central loop, its constants
 * kept in registers: exact gelu forward 2.97 -> 2.55 ms per 4M normal floats, erf on uniform
 * [0, 1) 3.0 -> 2.73 (docs/benchmarks.md, 2026-12-06). */
#define CBLOCK 16
/* whether every x of x[0..n) is central: the largest |x| as bits (NaN's above inf's), a
 * reduction the compiler vectorises; the same test as fabsf(x) < ERF_X (or GELU_X) */
KI int all_central32(const float *x, const int n, const uint32_t limit)
{
    uint32_t m = 0;
    for (int j = 0; j < n; j++) {
        uint32_t b;
        memcpy(&b, x + j, 4);
        b &= 0x7fffffffu;
        m = b > m ? b : m;
    }
    return m < limit;  /* the bits of ERF_X or GELU_X */
}
#define ARGS_X(k) (x[k])
#define ARGS_XG(k) (x[k], g[k])
#define CENTRAL_BLOCK(EXPR, CENTRAL, ARGS, LIMIT, h)                                           \
    {                                                                                          \
        if (all_central32(x + (h), CBLOCK, LIMIT))                                             \
            for (int j = 0; j < CBLOCK; j++)                                                   \
                y[(h) + j] = CENTRAL ARGS((h) + j);                                            \
        else                                                                                   \
            for (int j = 0; j < CBLOCK; j++)                                                   \
                y[(h) + j] = EXPR ARGS((h) + j);                                               \
    }
#define CENTRAL_PAIR(EXPR, CENTRAL, ARGS, LIMIT, b)                                            \
    {                                                                                          \
        if (all_central32(x + (b), 2 * CBLOCK, LIMIT)) {                                       \
            for (int j = 0; j < 2 * CBLOCK; j++)                                               \
                y[(b) + j] = CENTRAL ARGS((b) + j);                                            \
        } else {                                                                               \
            for (Py_ssize_t hb = (b); hb < (b) + 2 * CBLOCK; hb += CBLOCK)                     \
                CENTRAL_BLOCK(EXPR, CENTRAL, ARGS, LIMIT, hb)                                  \
        }                                                                                      \
    }
#define CENTRAL_LOOP(EXPR, CENTRAL, ARGS, LIMIT)                                               \
    Py_ssize_t i = i0;                                                                         \
    for (; i + 8 * CBLOCK <= i1; i += 8 * CBLOCK) {                                            \
        if (all_central32(x + i, 8 * CBLOCK, LIMIT)) {                                         \
            for (int j = 0; j < 8 * CBLOCK; j++)                                               \
                y[i + j] = CENTRAL ARGS(i + j);                                                \
            continue;                                                                          \
        }                                                                                      \
        for (Py_ssize_t h = i; h < i + 8 * CBLOCK; h += 2 * CBLOCK)                            \
            CENTRAL_PAIR(EXPR, CENTRAL, ARGS, LIMIT, h)                                        \
    }                                                                                          \
    for (; i + 2 * CBLOCK <= i1; i += 2 * CBLOCK)                                              \
        CENTRAL_PAIR(EXPR, CENTRAL, ARGS, LIMIT, i)                                            \
    for (; i + CBLOCK <= i1; i += CBLOCK)                                                      \
        CENTRAL_BLOCK(EXPR, CENTRAL, ARGS, LIMIT, i)                                           \
    for (; i < i1; i++)                                                                        \
        y[i] = EXPR ARGS(i);
#define UNARY_CENTRAL(NAME, EXPR, CENTRAL, LIMIT)                                              \
    CLONES_FMA static void NAME(const void *xv, void *yv, Py_ssize_t i0, Py_ssize_t i1)        \
    {                                                                                          \
        const float *RESTRICT x = (const float *)xv;                                           \
        float *RESTRICT y = (float *)yv;                                                       \
        CENTRAL_LOOP(EXPR, CENTRAL, ARGS_X, LIMIT)                                             \
    }
#define BINARY_CENTRAL(NAME, EXPR, CENTRAL, LIMIT)                                             \
    CLONES_FMA static void NAME(const void *xv, const void *gv, void *yv, Py_ssize_t i0,       \
                                Py_ssize_t i1)                                                 \
    {                                                                                          \
        const float *RESTRICT x = (const float *)xv;                                           \
        const float *RESTRICT g = (const float *)gv;                                           \
        float *RESTRICT y = (float *)yv;                                                       \
        CENTRAL_LOOP(EXPR, CENTRAL, ARGS_XG, LIMIT)                                            \
    }

UNARY_CENTRAL(erf_f32, k_erf32, erf_central32, ERF_X_BITS)
UNARY_CENTRAL(erfc_f32, k_erfc32, erfc_central32, ERF_X_BITS)
BINARY(erf_backward_f32, float, k_erf_backward32)
BINARY(erfc_backward_f32, float, k_erfc_backward32)
UNARY_CENTRAL(gelu_f32, k_gelu32, gelu_central32, GELU_X_BITS)
BINARY_CENTRAL(gelu_backward_f32, k_gelu_backward32, gelu_backward_central32,
               GELU_X_BITS)
UNARY(gelu_tanh_f32, float, k_gelu_tanh32)
BINARY(gelu_tanh_backward_f32, float, k_gelu_tanh_backward32)
UNARY(gelu_tanh_f64, double, k_gelu_tanh64)
BINARY(gelu_tanh_backward_f64, double, k_gelu_tanh_backward64)
UNARYF(exp_f32, k_exp_f32)
UNARYF(tanh_f32, k_tanh32)
UNARYF(sigmoid_f32, k_sigmoid32)
UNARY(sigmoid_f64, double, k_sigmoid64)
UNARYF(silu_f32, k_silu32)
UNARY(silu_f64, double, k_silu64)
BINARYF(silu_backward_f32, k_silu_backward32)
BINARY(silu_backward_f64, double, k_silu_backward64)
UNARY(mish_f32, float, k_mish32)
BINARY(mish_backward_f32, float, k_mish_backward32)
UNARYF(logsigmoid_f32, k_logsigmoid32)
BINARYF(logsigmoid_backward_f32, k_logsigmoid_backward32)
UNARYPF(softplus_f32, k_softplus32)
BINARYPF(softplus_backward_f32, k_softplus_backward32)
/* elu: blocks of 64 with no x <= 0 (nor NaN) take scale x alone (the same bits: k_elu32's
 * positive branch), as PyTorch's loop does for the positive half of an activation */
#define ELU_BLOCKS(BODY)                                                                       \
    for (Py_ssize_t b_ = i0; b_ < i1; b_ += 64) {                                              \
        Py_ssize_t e_ = i1 - b_ < 64 ? i1 : b_ + 64;                                           \
        int neg_ = 0;                                                                          \
        for (Py_ssize_t i = b_; i < e_; i++)                                                   \
            neg_ |= !(x[i] > 0);                                                               \
        if (neg_)                                                                              \
            for (Py_ssize_t i = b_; i < e_; i++)                                               \
                BODY;                                                                          \
        else                                                                                   \
            for (Py_ssize_t i = b_; i < e_; i++)                                               \
                y[i] = POS;                                                                    \
    }
CLONES_FMA static void elu_f32(const void *xv, void *yv, Py_ssize_t i0, Py_ssize_t i1,
                               const double *p)
{
    const float *RESTRICT x = (const float *)xv;
    float *RESTRICT y = (float *)yv;
    double q[4] = {p[0], p[1], p[2], p[3]};
    float scale = (float)q[1];
#define POS (x[i] * scale)
    ELU_BLOCKS(y[i] = k_elu32(x[i], q))
#undef POS
}
CLONES_FMA static void elu_backward_f32(const void *xv, const void *gv, void *yv, Py_ssize_t i0,
                                        Py_ssize_t i1, const double *p)
{
    const float *RESTRICT x = (const float *)xv;
    const float *RESTRICT g = (const float *)gv;
    float *RESTRICT y = (float *)yv;
    double q[4] = {p[0], p[1], p[2], p[3]};
    float scale = (float)q[1];
#define POS (g[i] * scale)
    ELU_BLOCKS(y[i] = k_elu_backward32(x[i], g[i], q))
#undef POS
}
BINARY(tanh_backward_f32, float, TANH_BACKWARD)
BINARY(tanh_backward_f64, double, TANH_BACKWARD)
BINARY(sigmoid_backward_f32, float, SIGMOID_BACKWARD)
BINARY(sigmoid_backward_f64, double, SIGMOID_BACKWARD)
/* erfinv: blocks of 64 inside |x| < ERFINV_XC (uniform inputs: nearly all) skip the tail's
 * polynomial and square root; the central lanes' value is the same in both loops */
CLONES_FMA static void erfinv_f32(const void *xv, void *yv, Py_ssize_t i0, Py_ssize_t i1)
{
    const float *RESTRICT x = (const float *)xv;
    float *RESTRICT y = (float *)yv;
    for (Py_ssize_t b = i0; b < i1; b += 64) {
        Py_ssize_t e = i1 - b < 64 ? i1 : b + 64;
        int out = 0;
        for (Py_ssize_t i = b; i < e; i++)
            out |= !(fabsf(x[i]) < ERFINV_XC);
        if (out)
            for (Py_ssize_t i = b; i < e; i++)
                y[i] = k_erfinv32(x[i]);
        else
            for (Py_ssize_t i = b; i < e; i++)
                y[i] = k_erfinv_central32(x[i]);
    }
}
BINARYF(erfinv_backward_f32, k_erfinv_backward32)

/* ---------------------------------------------------------------------------------------------
 * Row kernels: rows [r0, r1) of an (rows, n) C-ordered matrix, n >= 1. Reductions run in LANES
 * float64 accumulators (lane j takes the elements j, j + LANES, ...) combined pairwise. */

KI double lanes_total(double *acc)
{
    for (int w = LANES / 2; w > 0; w /= 2)
        for (int j = 0; j < w; j++)
            acc[j] += acc[j + w];
    return acc[0];
}

/* lanes_total of a row of n <= LANES non-negative (or NaN) terms in acc[0..n): the lanes past n
 * would hold +0.0, which adds nothing to such terms, so only the filled pairs are added, in
 * lanes_total's order */
KI double short_total(double *acc, Py_ssize_t n)
{
    Py_ssize_t k = n;  /* lanes holding terms */
    for (int w = LANES / 2; w > 0; w /= 2) {
        for (Py_ssize_t j = 0; j + w < k; j++)
            acc[j] += acc[j + w];
        if (k > w)
            k = w;
    }
    return acc[0];
}

/* Run BODY for i = 0 .. n-1 with j = i % LANES, as blocks of LANES (vectorised) and a tail */
#define LANE_LOOP(n, i, j, BODY)                                                               \
    do {                                                                                       \
        Py_ssize_t t_ = (n) - (n) % LANES;                                                     \
        for (Py_ssize_t b_ = 0; b_ < t_; b_ += LANES)                                          \
            for (int j = 0; j < LANES; j++) {                                                  \
                Py_ssize_t i = b_ + j;                                                         \
                BODY;                                                                          \
            }                                                                                  \
        for (int j = 0; t_ + j < (n); j++) {                                                   \
            Py_ssize_t i = t_ + j;                                                             \
            BODY;                                                                              \
        }                                                                                      \
    } while (0)

/* LANE_LOOP, prefetching pf[b] for each block b: the next row's elements (a loop that
 * computes while the next row comes from memory, rather than a pass that waits for it) */
#define LANE_LOOP_PF(n, i, j, pf, pw, BODY)                                                    \
    do {                                                                                       \
        Py_ssize_t t_ = (n) - (n) % LANES;                                                     \
        for (Py_ssize_t b_ = 0; b_ < t_; b_ += LANES) {                                        \
            PREFETCH((pf) + b_);                                                               \
            PREFETCH_W((pw) + b_);                                                             \
            for (int j = 0; j < LANES; j++) {                                                  \
                Py_ssize_t i = b_ + j;                                                         \
                BODY;                                                                          \
            }                                                                                  \
        }                                                                                      \
        for (int j = 0; t_ + j < (n); j++) {                                                   \
            Py_ssize_t i = t_ + j;                                                             \
            BODY;                                                                              \
        }                                                                                      \
    } while (0)

#define ZERO_LANES(acc)                                                                        \
    double acc[LANES];                                                                         \
    for (int j_ = 0; j_ < LANES; j_++)                                                         \
        acc[j_] = 0.0

/* LANE_SUM, LANE_LOOP_PF's prefetch of pf[b] for each block b: a pass over a row in cache that
 * fetches the next row meanwhile (its lines are the thread's own: the write intent costs
 * nothing) */
#define LANE_SUM_PF(OUT, n, i, pf, F)                                                          \
    do {                                                                                       \
        ZERO_LANES(acc_);                                                                      \
        LANE_LOOP_PF(n, i, j_, pf, pf, acc_[j_] += (double)(F));                               \
        OUT = lanes_total(acc_);                                                               \
    } while (0)

/* OUT = the sum over the row of F (an expression of i) in float64 lanes */
#define LANE_SUM(OUT, n, i, F)                                                                 \
    do {                                                                                       \
        ZERO_LANES(acc_);                                                                      \
        LANE_LOOP(n, i, j_, acc_[j_] += (double)(F));                                          \
        OUT = lanes_total(acc_);                                                               \
    } while (0)

/* Non-temporal stores for a large result (layer_norm's y and grad_x): a call whose output is at
 * least NT_MIN_BYTES writes it with SSE2's 16-byte streaming stores (then a store fence), as
 * glibc's memcpy does for copies of that size: the output's lines are neither read for ownership
 * nor kept, so the inputs stay cached; the same values as plain stores. At 1024 x 4096 float32
 * (16 MiB out) the forward went from 2.6 to 1.6 ms and, followed by a pass that reads y, from 3.0
 * to 2.4 ms; at 8 MiB the plain stores won that pair (1.0 against 1.15 ms), hence 12 MiB
 * (docs/benchmarks.md, session 2026-12-06). ROW_OUT(T, yr, n, nt, i, F, FV): yr[i] = F for i in
 * [0, n), FV being the same operations on the NT_W_##T elements from i (vld_##T loads them). */
#ifndef NT_MIN_BYTES
#define NT_MIN_BYTES ((Py_ssize_t)12 << 20)
#endif
#if (defined(__GNUC__) || defined(__clang__)) && defined(__x86_64__)
#define HAVE_NT 1
#define NT_W_float 4
#define NT_W_double 2
typedef float v4f_nt __attribute__((vector_size(16)));
typedef double v2d_nt __attribute__((vector_size(16)));
KI v4f_nt vld_float(const float *p)
{
    v4f_nt v;
    memcpy(&v, p, sizeof v);
    return v;
}
KI v2d_nt vld_double(const double *p)
{
    v2d_nt v;
    memcpy(&v, p, sizeof v);
    return v;
}
#define nt_store_float(p, v) __builtin_ia32_movntps((p), (v))
#define nt_store_double(p, v) __builtin_ia32_movntpd((p), (v))
#define NT_FENCE(nt)                                                                           \
    do {                                                                                       \
        if (nt)                                                                                \
            __builtin_ia32_sfence();                                                           \
    } while (0)
#define ROW_OUT(T, yr, n, nt, i, F, FV)                                                        \
    do {                                                                                       \
        if (nt) {                                                                              \
            Py_ssize_t i = 0;                                                                  \
            for (; i < (n) && ((uintptr_t)((yr) + i) & 15); i++)                              \
                (yr)[i] = (F);                                                                 \
            for (; i + NT_W_##T <= (n); i += NT_W_##T)                                         \
                nt_store_##T((yr) + i, (FV));                                                  \
            for (; i < (n); i++)                                                               \
                (yr)[i] = (F);                                                                 \
        }                                                                                      \
        else                                                                                   \
            for (Py_ssize_t i = 0; i < (n); i++)                                               \
                (yr)[i] = (F);                                                                 \
    } while (0)
#else
#define HAVE_NT 0
#define NT_FENCE(nt) ((void)(nt))
#define ROW_OUT(T, yr, n, nt, i, F, FV)                                                        \
    do {                                                                                       \
        (void)(nt);                                                                            \
        for (Py_ssize_t i = 0; i < (n); i++)                                                   \
            (yr)[i] = (F);                                                                     \
    } while (0)
#endif

#define ROW_MAX(T)                                                                             \
    KI T row_max_##T(const T *RESTRICT x, Py_ssize_t n)                                        \
    {                                                                                          \
        T m[LANES];                                                                            \
        for (int j = 0; j < LANES; j++)                                                        \
            m[j] = -INFINITY;                                                                  \
        LANE_LOOP(n, i, j, m[j] = x[i] > m[j] ? x[i] : m[j]);                                  \
        for (int j = 1; j < LANES; j++)                                                        \
            m[0] = m[j] > m[0] ? m[j] : m[0];                                                  \
        return m[0]; /* NaN ignored here: the NaN reaches the sum and every output */          \
    }
ROW_MAX(double)

/* the float32 row max by integer keys (the float's bits with the sign's magnitude bits flipped:
 * ordered as the floats, -0.0 below +0.0), so that the compiler vectorises it as an integer max
 * (a float compare-and-select reduction it leaves scalar). A NaN with its sign bit clear sorts
 * above +inf and gives a NaN max; either way the NaN reaches the sum and every output. */
KI int32_t f32_key(float v)
{
    int32_t k;
    memcpy(&k, &v, 4);
    return k ^ (int32_t)((uint32_t)(k >> 31) >> 1);
}

KI float row_max_float(const float *RESTRICT x, Py_ssize_t n)
{
    int32_t m[LANES];
    for (int j = 0; j < LANES; j++)
        m[j] = INT32_MIN;
    LANE_LOOP(n, i, j, {
        int32_t k = f32_key(x[i]);
        m[j] = k > m[j] ? k : m[j];
    });
    for (int j = 1; j < LANES; j++)
        m[0] = m[j] > m[0] ? m[j] : m[0];
    int32_t k = m[0] ^ (int32_t)((uint32_t)(m[0] >> 31) >> 1);
    float v;
    memcpy(&v, &k, 4);
    return v;
}

/* softmax: y = exp(x - max) / sum;  log_softmax: y = (x - max) - log(sum) */
#define SOFTMAX(T, EXP)                                                                            \
CLONES_FMA static void softmax_##T(const T *RESTRICT x, T *RESTRICT y, Py_ssize_t r0, Py_ssize_t r1,   \
                               Py_ssize_t n)                                                       \
{                                                                                                  \
    for (Py_ssize_t r = r0; r < r1; r++) {                                                         \
        const T *RESTRICT xr = x + r * n;                                                          \
        T *RESTRICT yr = y + r * n;                                                                \
        T m = row_max_##T(xr, n);                                                                  \
        double s;                                                                                  \
        for (Py_ssize_t i = 0; i < n; i++)                                                         \
            yr[i] = EXP(xr[i] - m);                                                                \
        LANE_SUM(s, n, i, yr[i]);                                                                  \
        T st = (T)s;                                                                               \
        for (Py_ssize_t i = 0; i < n; i++)                                                         \
            yr[i] = yr[i] / st;                                                                    \
    }                                                                                              \
}                                                                                                  \
CLONES_FMA static void log_softmax_##T(const T *RESTRICT x, T *RESTRICT y, Py_ssize_t r0,          \
                                   Py_ssize_t r1, Py_ssize_t n)                                    \
{                                                                                                  \
    for (Py_ssize_t r = r0; r < r1; r++) {                                                         \
        const T *RESTRICT xr = x + r * n;                                                          \
        T *RESTRICT yr = y + r * n;                                                                \
        T m = row_max_##T(xr, n);                                                                  \
        double s;                                                                                  \
        LANE_SUM(s, n, i, EXP(xr[i] - m));                                                         \
        T ls = (T)log(s);                                                                          \
        for (Py_ssize_t i = 0; i < n; i++)                                                         \
            yr[i] = (xr[i] - m) - ls;                                                              \
    }                                                                                              \
}                                                                                                  \
/* softmax: gx = y (g - sum(g y));  log_softmax: gx = g - exp(y) sum(g) */                         \
CLONES static void softmax_backward_##T(const T *RESTRICT y, const T *RESTRICT g,                  \
                                        T *RESTRICT gx, Py_ssize_t r0, Py_ssize_t r1,              \
                                        Py_ssize_t n)                                              \
{                                                                                                  \
    for (Py_ssize_t r = r0; r < r1; r++) {                                                         \
        const T *RESTRICT yr = y + r * n, *RESTRICT gr = g + r * n;                                \
        T *RESTRICT o = gx + r * n;                                                                \
        double s;                                                                                  \
        LANE_SUM(s, n, i, (double)gr[i] * (double)yr[i]);                                          \
        T st = (T)s;                                                                               \
        for (Py_ssize_t i = 0; i < n; i++)                                                         \
            o[i] = yr[i] * (gr[i] - st);                                                           \
    }                                                                                              \
}                                                                                                  \
CLONES_FMA static void log_softmax_backward_##T(const T *RESTRICT y, const T *RESTRICT g,          \
                                            T *RESTRICT gx, Py_ssize_t r0, Py_ssize_t r1,          \
                                            Py_ssize_t n)                                          \
{                                                                                                  \
    for (Py_ssize_t r = r0; r < r1; r++) {                                                         \
        const T *RESTRICT yr = y + r * n, *RESTRICT gr = g + r * n;                                \
        T *RESTRICT o = gx + r * n;                                                                \
        double s;                                                                                  \
        LANE_SUM(s, n, i, gr[i]);                                                                  \
        T st = (T)s;                                                                               \
        for (Py_ssize_t i = 0; i < n; i++)                                                         \
            o[i] = gr[i] - EXP(yr[i]) * st;                                                        \
    }                                                                                              \
}
SOFTMAX(double, k_exp)

/* The float32 softmax family: one pass for the max (integer keys), one for exp (k_expf_neg:
 * x - max <= 0) with its sum in float64 lanes (softmax: writing exp to y in the same loop), one
 * for the output; softmax scales by the reciprocal of the sum, computed in float64 and rounded
 * once (a multiply, not a divide: within 2.7 ulp of the float64 value, as the division was).
 * The lanes' order depends only on n: the same bits in every variant and at every thread count. */
CLONES_FMA static void softmax_float(const float *RESTRICT x, float *RESTRICT y, Py_ssize_t r0,
                                     Py_ssize_t r1, Py_ssize_t n)
{
    for (Py_ssize_t r = r0; r < r1; r++) {
        const float *RESTRICT xr = x + r * n;
        float *RESTRICT yr = y + r * n;
        float m = row_max_float(xr, n);
        const float *nx = r + 1 < r1 ? xr + n : xr;
        float *ny = r + 1 < r1 ? yr + n : yr;
        ZERO_LANES(acc);
        LANE_LOOP_PF(n, i, j, nx, ny, {
            float e = k_expf_neg(xr[i] - m);
            yr[i] = e;
            acc[j] += (double)e;
        });
        float inv = (float)(1.0 / lanes_total(acc));
        for (Py_ssize_t i = 0; i < n; i++)
            yr[i] = yr[i] * inv;
    }
}

CLONES_FMA static void log_softmax_float(const float *RESTRICT x, float *RESTRICT y, Py_ssize_t r0,
                                         Py_ssize_t r1, Py_ssize_t n)
{
    for (Py_ssize_t r = r0; r < r1; r++) {
        const float *RESTRICT xr = x + r * n;
        float *RESTRICT yr = y + r * n;
        float m = row_max_float(xr, n);
        const float *nx = r + 1 < r1 ? xr + n : xr;
        float *ny = r + 1 < r1 ? yr + n : yr;
        ZERO_LANES(acc);
        LANE_LOOP_PF(n, i, j, nx, ny, acc[j] += (double)k_expf_neg(xr[i] - m));
        float ls = (float)log(lanes_total(acc));
        for (Py_ssize_t i = 0; i < n; i++)
            yr[i] = (xr[i] - m) - ls;
    }
}

/* softmax: gx = y (g - sum(g y)), the products in float32 and their sum in float64 lanes */
CLONES_FMA static void softmax_backward_float(const float *RESTRICT y, const float *RESTRICT g,
                                              float *RESTRICT gx, Py_ssize_t r0, Py_ssize_t r1,
                                              Py_ssize_t n)
{
    for (Py_ssize_t r = r0; r < r1; r++) {
        const float *RESTRICT yr = y + r * n, *RESTRICT gr = g + r * n;
        float *RESTRICT o = gx + r * n;
        double s;
        LANE_SUM(s, n, i, gr[i] * yr[i]);
        float st = (float)s;
        for (Py_ssize_t i = 0; i < n; i++)
            o[i] = yr[i] * (gr[i] - st);
    }
}

/* log_softmax: gx = g - exp(y) sum(g); y is a log-probability (<= 0, or NaN): a row with a
 * y > 0 (not log_softmax's output) takes k_expf_fma, the same values where both apply */
CLONES_FMA static void log_softmax_backward_float(const float *RESTRICT y, const float *RESTRICT g,
                                                  float *RESTRICT gx, Py_ssize_t r0,
                                                  Py_ssize_t r1, Py_ssize_t n)
{
    for (Py_ssize_t r = r0; r < r1; r++) {
        const float *RESTRICT yr = y + r * n, *RESTRICT gr = g + r * n;
        float *RESTRICT o = gx + r * n;
        ZERO_LANES(acc);
        int32_t top[LANES];  /* the largest y's key: > 0 where some y > 0 (or NaN, sign clear) */
        for (int j = 0; j < LANES; j++)
            top[j] = INT32_MIN;
        LANE_LOOP(n, i, j, {
            acc[j] += (double)gr[i];
            int32_t k = f32_key(yr[i]);
            top[j] = k > top[j] ? k : top[j];
        });
        for (int j = 1; j < LANES; j++)
            top[0] = top[j] > top[0] ? top[j] : top[0];
        float st = (float)lanes_total(acc);
        if (top[0] > 0)
            for (Py_ssize_t i = 0; i < n; i++)
                o[i] = gr[i] - k_expf_fma(yr[i]) * st;
        else
            for (Py_ssize_t i = 0; i < n; i++)
                o[i] = gr[i] - k_expf_neg(yr[i]) * st;
    }
}

/* ---------------------------------------------------------------------------------------------
 * Small attention, float32: out = softmax(scale q k^T, causal: keys j <= i only) v and its
 * gradients, one (batch, head) slice at a time with the slice's operands in zero-padded scratch
 * (a few tens of KiB: L1/L2). The five products are one register-blocked loop (at_block: 4 rows
 * x 32 columns of accumulators, a product and a sum per term in the contraction index's order,
 * so the same bits in every variant); causal rows skip the keys above the diagonal (half the
 * products' terms at L = S). The softmax is softmax_float's (k_expf_neg, float64 lanes, the
 * reciprocal of the sum) over a row's first jn keys, the scores scaled in float32 first as the
 * NumPy path's s *= scale; its backward softmax_backward_float's. The products' sums run in
 * another order than BLAS's: results within float32 rounding of the NumPy path, not its bits;
 * slices are independent, so the same bits at every thread count. */
#define AT_NR 32

KI Py_ssize_t at_up(Py_ssize_t n, Py_ssize_t m) { return (n + m - 1) / m * m; }

/* A block is 8 rows x 32 columns of C, its accumulators in registers: GCC's vector types of
 * the register width the running variant has (at_lanes, set at import), a product and a sum per
 * term (two roundings; -ffp-contract=off: no fma is formed), so every variant gives the same
 * bits. AVX-512 holds the whole block in 16 registers; AVX2 and SSE2 have 16 registers of 8 and
 * 4 floats, so they run it as tiles of 4 rows x 16 (8) columns, 8 accumulators each. (A 16-float
 * vector type in an AVX2 variant lives on the stack: the block ran 20-50x slower there.) */
typedef float at_v16 __attribute__((vector_size(64)));
typedef float at_v16u __attribute__((vector_size(64), aligned(4)));
typedef float at_v8 __attribute__((vector_size(32)));
typedef float at_v8u __attribute__((vector_size(32), aligned(4)));
typedef float at_v4 __attribute__((vector_size(16)));
typedef float at_v4u __attribute__((vector_size(16), aligned(4)));

#define AT_MR 8  /* rows of a block */

/* floats per vector register of the variant that runs: 16 (AVX-512F), 8 (AVX2) or 4 */
static int at_lanes = 4;

static void at_lanes_init(void)
{
#if defined(__AVX512F__)
    at_lanes = 16;
#elif defined(__AVX2__)
    at_lanes = 8;
#elif HAVE_CLONES
    __builtin_cpu_init();
    at_lanes = __builtin_cpu_supports("avx512f") ? 16 : __builtin_cpu_supports("avx2") ? 8 : 4;
#endif
}

/* C[r][0:2W] = sum over kk in [k0, k1) of a_r B[kk ldb + 0:2W], r < ROWS, W the vector's
 * floats, with a_r = A[r lda + kk] (AT_ROW) or A[kk lda + r] (AT_COL: A read transposed) */
#define AT_ACC(r) V c##r = z, d##r = z
#define AT_FMA(r, a)                                                                           \
    do {                                                                                       \
        float a_ = (a);                                                                        \
        c##r += a_ * b0;                                                                       \
        d##r += a_ * b1;                                                                       \
    } while (0)
#define AT_STORE(r)                                                                            \
    do {                                                                                       \
        *(VU *)(C + (r) * ldc) = c##r;                                                         \
        *(VU *)(C + (r) * ldc + W) = d##r;                                                     \
    } while (0)
#define AT_TILE_HEAD(NAME)                                                                     \
    KI void NAME(const float *RESTRICT A, Py_ssize_t lda, const float *RESTRICT B,             \
                 Py_ssize_t ldb, Py_ssize_t k0, Py_ssize_t k1, float *RESTRICT C,              \
                 Py_ssize_t ldc)
#define AT_TILE8(NAME, A_AT)                                                                   \
    AT_TILE_HEAD(NAME)                                                                         \
    {                                                                                          \
        typedef at_v16 V;                                                                      \
        typedef at_v16u VU;                                                                    \
        enum { W = 16 };                                                                       \
        V z = {0.0f};                                                                          \
        AT_ACC(0); AT_ACC(1); AT_ACC(2); AT_ACC(3); AT_ACC(4); AT_ACC(5); AT_ACC(6); AT_ACC(7); \
        for (Py_ssize_t kk = k0; kk < k1; kk++) {                                              \
            const float *RESTRICT b = B + kk * ldb;                                            \
            V b0 = *(const VU *)b, b1 = *(const VU *)(b + W);                                  \
            AT_FMA(0, A_AT(0)); AT_FMA(1, A_AT(1)); AT_FMA(2, A_AT(2)); AT_FMA(3, A_AT(3));    \
            AT_FMA(4, A_AT(4)); AT_FMA(5, A_AT(5)); AT_FMA(6, A_AT(6)); AT_FMA(7, A_AT(7));    \
        }                                                                                      \
        AT_STORE(0); AT_STORE(1); AT_STORE(2); AT_STORE(3);                                    \
        AT_STORE(4); AT_STORE(5); AT_STORE(6); AT_STORE(7);                                    \
    }
#define AT_TILE4(NAME, A_AT, VT, VUT, WIDTH)                                                   \
    AT_TILE_HEAD(NAME)                                                                         \
    {                                                                                          \
        typedef VT V;                                                                          \
        typedef VUT VU;                                                                        \
        enum { W = WIDTH };                                                                    \
        V z = {0.0f};                                                                          \
        AT_ACC(0); AT_ACC(1); AT_ACC(2); AT_ACC(3);                                            \
        for (Py_ssize_t kk = k0; kk < k1; kk++) {                                              \
            const float *RESTRICT b = B + kk * ldb;                                            \
            V b0 = *(const VU *)b, b1 = *(const VU *)(b + W);                                  \
            AT_FMA(0, A_AT(0)); AT_FMA(1, A_AT(1)); AT_FMA(2, A_AT(2)); AT_FMA(3, A_AT(3));    \
        }                                                                                      \
        AT_STORE(0); AT_STORE(1); AT_STORE(2); AT_STORE(3);                                    \
    }
/* the 8 x 32 block in the variant's tiles; ROW_STEP: how far A moves for 4 rows down C */
#define AT_BLOCK(NAME, A_AT, ROW_STEP)                                                         \
    AT_TILE8(NAME##_16, A_AT)                                                                  \
    AT_TILE4(NAME##_8, A_AT, at_v8, at_v8u, 8)                                                 \
    AT_TILE4(NAME##_4, A_AT, at_v4, at_v4u, 4)                                                 \
    AT_TILE_HEAD(NAME)                                                                         \
    {                                                                                          \
        if (at_lanes == 16) {                                                                  \
            NAME##_16(A, lda, B, ldb, k0, k1, C, ldc);                                         \
            return;                                                                            \
        }                                                                                      \
        for (int r = 0; r < AT_MR; r += 4)                                                     \
            for (int j = 0; j < AT_NR; j += 2 * at_lanes) {                                    \
                const float *a = A + r * (ROW_STEP);                                           \
                if (at_lanes == 8)                                                             \
                    NAME##_8(a, lda, B + j, ldb, k0, k1, C + r * ldc + j, ldc);                \
                else                                                                           \
                    NAME##_4(a, lda, B + j, ldb, k0, k1, C + r * ldc + j, ldc);                \
            }                                                                                  \
    }
#define AT_ROW(r) A[(r) * lda + kk]
#define AT_COL(r) A[kk * lda + (r)]
AT_BLOCK(at_block, AT_ROW, lda)
AT_BLOCK(at_block_t, AT_COL, 1)

/* q, k, v, out and g may be strided views: slice n's (rows, cols) matrix starts at element
 * off[n] of the buffer, its rows ld elements apart, its columns adjacent */
typedef struct {
    const float *q, *k, *v, *p, *g;
    float *out, *pout, *gq, *gk, *gv;
    const Py_ssize_t *qo, *ko, *vo, *oo, *go, *gqo, *gko, *gvo;  /* the slices' offsets */
    Py_ssize_t qld, kld, vld, old, gld, gqld, gkld, gvld;  /* and row strides */
    Py_ssize_t L, S, D, Ev;
    float scale;
    int causal, failed;
} at_ctx;

/* a rows x cols block of src (row stride ld_s) into dst (row stride ld_d), zero to the padded
 * rows x cols' (rows_p, cols_p) */
KI void at_pad(float *RESTRICT dst, Py_ssize_t ld_d, Py_ssize_t rows_p, Py_ssize_t cols_p,
               const float *RESTRICT src, Py_ssize_t ld_s, Py_ssize_t rows, Py_ssize_t cols)
{
    for (Py_ssize_t r = 0; r < rows_p; r++) {
        float *RESTRICT d = dst + r * ld_d;
        Py_ssize_t c = r < rows ? cols : 0;
        if (c)
            memcpy(d, src + r * ld_s, sizeof(float) * (size_t)c);
        if (cols_p > c)
            memset(d + c, 0, sizeof(float) * (size_t)(cols_p - c));
    }
}

/* Prefetch (into L2) a (rows, cols) matrix of row stride ld, a line at a time: the next
 * slice's operands are fetched while this one computes (in a training step they come from
 * memory: the forward's inputs, the saved probabilities; cold, both kernels took twice as
 * long) */
#ifndef AT_AHEAD
#define AT_AHEAD 1  /* slices ahead (2 and 3 measured no better) */
#endif
KI void at_prefetch(const float *a, Py_ssize_t rows, Py_ssize_t ld, Py_ssize_t cols, int write)
{
    for (Py_ssize_t r = 0; r < rows; r++)
        for (Py_ssize_t c = 0; c < cols; c += 16) {
            if (write)
                __builtin_prefetch(a + r * ld + c, 1, 2);
            else
                __builtin_prefetch(a + r * ld + c, 0, 2);
        }
}

/* dst (cols_p x ld_d, zero-padded to rows_p) = the transpose of src (rows x cols) */
KI void at_transpose(float *RESTRICT dst, Py_ssize_t ld_d, Py_ssize_t cols_p, Py_ssize_t rows_p,
                     const float *RESTRICT src, Py_ssize_t ld_s, Py_ssize_t rows, Py_ssize_t cols)
{
    for (Py_ssize_t c = 0; c < cols_p; c++)
        for (Py_ssize_t r = c < cols ? rows : 0; r < rows_p; r++)
            dst[c * ld_d + r] = 0.0f;
    for (Py_ssize_t r = 0; r < rows; r++)
        for (Py_ssize_t c = 0; c < cols; c++)
            dst[c * ld_d + r] = src[r * ld_s + c];
}

/* The softmax over keys of 16 queries at once, columns c0..c0+15 of the transposed scores st
 * (rows: keys, row stride ld): lane l is query i = c0 + l, its keys j < jn(i) (causal: j <= i;
 * queries past L: none); the scores scaled in float32 first (as the NumPy path's s *= scale),
 * exp by k_expf_neg after the max, the sum in float64 and the reciprocal rounded once, as
 * softmax_float (its sum in another order: within the same bound); rows jmax..rows zeroed. */
KI void at_softmax_cols(float *RESTRICT st, Py_ssize_t ld, Py_ssize_t c0, Py_ssize_t L,
                        Py_ssize_t S, Py_ssize_t rows, int causal, float scale)
{
    Py_ssize_t jmax = causal ? (c0 + 16 < S ? c0 + 16 : S) : S;
    float m[16];
    double acc[16];
    for (int l = 0; l < 16; l++) {
        m[l] = -INFINITY;
        acc[l] = 0.0;
    }
    for (Py_ssize_t j = 0; j < jmax; j++) {
        float *RESTRICT r = st + j * ld + c0;
        for (int l = 0; l < 16; l++) {
            int in = c0 + l < L && (!causal || j <= c0 + l);
            float x = in ? r[l] * scale : -INFINITY;
            r[l] = x;
            m[l] = x > m[l] ? x : m[l];
        }
    }
    for (int l = 0; l < 16; l++)
        m[l] = m[l] == -INFINITY ? 0.0f : m[l];
    for (Py_ssize_t j = 0; j < jmax; j++) {
        float *RESTRICT r = st + j * ld + c0;
        for (int l = 0; l < 16; l++) {
            float e = k_expf_neg(r[l] - m[l]);
            r[l] = e;
            acc[l] += (double)e;
        }
    }
    float inv[16];
    for (int l = 0; l < 16; l++)
        inv[l] = acc[l] > 0.0 ? (float)(1.0 / acc[l]) : 0.0f;
    for (Py_ssize_t j = 0; j < jmax; j++) {
        float *RESTRICT r = st + j * ld + c0;
        for (int l = 0; l < 16; l++)
            r[l] = r[l] * inv[l];
    }
    for (Py_ssize_t j = jmax; j < rows; j++)
        for (int l = 0; l < 16; l++)
            st[j * ld + c0 + l] = 0.0f;
}

/* Forward, per slice, transposed: st = k q^T (keys x queries; causal: the 32-query blocks at or
 * right of the diagonal only), the softmax down its columns (at_softmax_cols), then
 * out = P v with P read by columns (at_block_t). p is written as P^T, (S, L) per slice. */
CLONES_FMA static void attention_slices(at_ctx *c, Py_ssize_t n0, Py_ssize_t n1)
{
    Py_ssize_t L = c->L, S = c->S, D = c->D, Ev = c->Ev;
    Py_ssize_t Lp = at_up(L, AT_MR), Lq = at_up(L, AT_NR), S4 = at_up(S, AT_MR), Evp = at_up(Ev, AT_NR);
    float *buf = (float *)PyMem_RawMalloc(sizeof(float) * (size_t)(D * Lq + S4 * D + S4 * Lq
                                                                   + S * Evp + Lp * Evp));
    if (!buf) {
        c->failed = 1;
        return;
    }
    float *qt = buf, *ks = qt + D * Lq, *sb = ks + S4 * D, *vs = sb + S4 * Lq, *ob = vs + S * Evp;
    /* operands whose sizes need no padding are read (and results written) in place */
    int rows_k = S % AT_MR == 0, cols_v = Ev % AT_NR == 0, in_p = L % AT_NR == 0 && rows_k;
    int in_out = cols_v && L % AT_MR == 0;
    Py_ssize_t lk = rows_k ? c->kld : D, lv = cols_v ? c->vld : Evp, ls = in_p ? L : Lq;
    Py_ssize_t lo_ = in_out ? c->old : Evp;
    for (Py_ssize_t n = n0; n < n1; n++) {
        const float *q = c->q + c->qo[n], *k = c->k + c->ko[n], *v = c->v + c->vo[n];
        float *out = c->out + c->oo[n], *pt = c->pout + n * S * L;
        float *st = in_p ? pt : sb, *o = in_out ? out : ob;
        for (Py_ssize_t m = n == n0 ? n + 1 : n + AT_AHEAD; m <= n + AT_AHEAD && m < n1; m++) {
            at_prefetch(c->q + c->qo[m], L, c->qld, D, 0);
            at_prefetch(c->k + c->ko[m], S, c->kld, D, 0);
            at_prefetch(c->v + c->vo[m], S, c->vld, Ev, 0);
            at_prefetch(c->pout + m * S * L, 1, 0, S * L, 1);
            at_prefetch(c->out + c->oo[m], L, c->old, Ev, 1);
        }
        at_transpose(qt, Lq, D, Lq, q, c->qld, L, D);
        if (!rows_k)
            at_pad(ks, D, S4, D, k, c->kld, S, D);
        if (!cols_v)
            at_pad(vs, Evp, S, Evp, v, c->vld, S, Ev);
        const float *ka = rows_k ? k : ks, *vb = cols_v ? v : vs;
        for (Py_ssize_t j0 = 0; j0 < S4; j0 += AT_MR) {
            Py_ssize_t lo = c->causal ? j0 / AT_NR * AT_NR : 0;
            for (Py_ssize_t i0 = lo; i0 < Lq; i0 += AT_NR)
                at_block(ka + j0 * lk, lk, qt + i0, Lq, 0, D, st + j0 * ls + i0, ls);
        }
        for (Py_ssize_t c0 = 0; c0 < Lp; c0 += 16)
            at_softmax_cols(st, ls, c0, L, S, S4, c->causal, c->scale);
        if (!in_p)
            for (Py_ssize_t j = 0; j < S; j++)
                memcpy(pt + j * L, st + j * Lq, sizeof(float) * (size_t)L);
        for (Py_ssize_t i0 = 0; i0 < Lp; i0 += AT_MR) {
            Py_ssize_t hi = c->causal ? (i0 + AT_MR < S ? i0 + AT_MR : S) : S;
            for (Py_ssize_t e0 = 0; e0 < Evp; e0 += AT_NR)
                at_block_t(st + i0, ls, vb + e0, lv, 0, hi, o + i0 * lo_ + e0, lo_);
        }
        if (!in_out)
            for (Py_ssize_t i = 0; i < L; i++)
                memcpy(out + i * c->old, ob + i * Evp, sizeof(float) * (size_t)Ev);
    }
    PyMem_RawFree(buf);
}

/* Backward, per slice, transposed as the forward (p is P^T, (S, L)):
 * dP^T = v g^T;  dS^T = P^T (dP^T - colsum(dP^T P^T));  gq = (dS k) scale (dS^T by columns);
 * gk = (dS^T q) scale;  gv = P^T g */
CLONES_FMA static void attention_backward_slices(at_ctx *c, Py_ssize_t n0, Py_ssize_t n1)
{
    Py_ssize_t L = c->L, S = c->S, D = c->D, Ev = c->Ev;
    Py_ssize_t Lp = at_up(L, AT_MR), Lq = at_up(L, AT_NR), S4 = at_up(S, AT_MR), Dp = at_up(D, AT_NR);
    Py_ssize_t Evp = at_up(Ev, AT_NR), Wp = Dp > Evp ? Dp : Evp;
    float *buf = (float *)PyMem_RawMalloc(sizeof(float) * (size_t)(
        S4 * Ev + Ev * Lq + 2 * S4 * Lq + S * Dp + Lp * Dp + Lp * Evp + (Lp > S4 ? Lp : S4) * Wp));
    if (!buf) {
        c->failed = 1;
        return;
    }
    float *vs = buf, *gt = vs + S4 * Ev, *ds = gt + Ev * Lq, *ps = ds + S4 * Lq;
    float *ks = ps + S4 * Lq, *qs = ks + S * Dp, *gs = qs + Lp * Dp, *ob = gs + Lp * Evp;
    /* operands whose sizes need no padding are read (and gv written) in place */
    int rows_s = S % AT_MR == 0, cols_v = Ev % AT_NR == 0, cols_d = D % AT_NR == 0;
    int in_p = L % AT_NR == 0 && rows_s;
    Py_ssize_t lv = rows_s ? c->vld : Ev, lp = in_p ? L : Lq, lg = cols_v ? c->gld : Evp;
    Py_ssize_t lk = cols_d ? c->kld : Dp, lq = cols_d ? c->qld : Dp;
    for (Py_ssize_t n = n0; n < n1; n++) {
        const float *q = c->q + c->qo[n], *k = c->k + c->ko[n], *v = c->v + c->vo[n];
        const float *p = c->p + n * S * L, *g = c->g + c->go[n];
        for (Py_ssize_t m = n == n0 ? n + 1 : n + AT_AHEAD; m <= n + AT_AHEAD && m < n1; m++) {
            at_prefetch(c->q + c->qo[m], L, c->qld, D, 0);
            at_prefetch(c->k + c->ko[m], S, c->kld, D, 0);
            at_prefetch(c->v + c->vo[m], S, c->vld, Ev, 0);
            at_prefetch(c->g + c->go[m], L, c->gld, Ev, 0);
            at_prefetch(c->p + m * S * L, 1, 0, S * L, 0);
            if (c->gq)
                at_prefetch(c->gq + c->gqo[m], L, c->gqld, D, 1);
            if (c->gk)
                at_prefetch(c->gk + c->gko[m], S, c->gkld, D, 1);
            if (c->gv)
                at_prefetch(c->gv + c->gvo[m], S, c->gvld, Ev, 1);
        }
        if (!rows_s)
            at_pad(vs, Ev, S4, Ev, v, c->vld, S, Ev);
        at_transpose(gt, Lq, Ev, Lq, g, c->gld, L, Ev);
        if (!in_p)
            at_pad(ps, Lq, S4, Lq, p, L, S, L);
        if (!cols_v)
            at_pad(gs, Evp, Lp, Evp, g, c->gld, L, Ev);
        const float *va = rows_s ? v : vs, *pa = in_p ? p : ps, *gb = cols_v ? g : gs;
        for (Py_ssize_t j0 = 0; j0 < S4; j0 += AT_MR) {
            Py_ssize_t lo = c->causal ? j0 / AT_NR * AT_NR : 0;
            for (Py_ssize_t i0 = lo; i0 < Lq; i0 += AT_NR)
                at_block(va + j0 * lv, lv, gt + i0, Lq, 0, Ev, ds + j0 * Lq + i0, Lq);
        }
        for (Py_ssize_t c0 = 0; c0 < Lp; c0 += 16) {
            Py_ssize_t jmax = c->causal ? (c0 + 16 < S ? c0 + 16 : S) : S;
            double acc[16];
            for (int l = 0; l < 16; l++)
                acc[l] = 0.0;
            for (Py_ssize_t j = 0; j < jmax; j++) {
                const float *RESTRICT d = ds + j * Lq + c0, *RESTRICT pr = pa + j * lp + c0;
                for (int l = 0; l < 16; l++)
                    acc[l] += (double)(d[l] * pr[l]);
            }
            float s[16];
            for (int l = 0; l < 16; l++)
                s[l] = (float)acc[l];
            for (Py_ssize_t j = 0; j < jmax; j++) {
                float *RESTRICT d = ds + j * Lq + c0;
                const float *RESTRICT pr = pa + j * lp + c0;
                for (int l = 0; l < 16; l++)
                    d[l] = pr[l] * (d[l] - s[l]);
            }
            for (Py_ssize_t j = jmax; j < S4; j++)
                for (int l = 0; l < 16; l++)
                    ds[j * Lq + c0 + l] = 0.0f;
        }
        if (c->gq) {
            if (!cols_d)
                at_pad(ks, Dp, S, Dp, k, c->kld, S, D);
            const float *kb = cols_d ? k : ks;
            for (Py_ssize_t i0 = 0; i0 < Lp; i0 += AT_MR) {
                Py_ssize_t hi = c->causal ? (i0 + AT_MR < S ? i0 + AT_MR : S) : S;
                for (Py_ssize_t d0 = 0; d0 < Dp; d0 += AT_NR)
                    at_block_t(ds + i0, Lq, kb + d0, lk, 0, hi, ob + i0 * Dp + d0, Dp);
            }
            float *gq = c->gq + c->gqo[n];
            for (Py_ssize_t i = 0; i < L; i++)
                for (Py_ssize_t d = 0; d < D; d++)
                    gq[i * c->gqld + d] = ob[i * Dp + d] * c->scale;
        }
        if (c->gk) {
            if (!cols_d)
                at_pad(qs, Dp, Lp, Dp, q, c->qld, L, D);
            const float *qb = cols_d ? q : qs;
            for (Py_ssize_t j0 = 0; j0 < S4; j0 += AT_MR) {
                Py_ssize_t lo = c->causal ? (j0 < L ? j0 : L) : 0;
                for (Py_ssize_t d0 = 0; d0 < Dp; d0 += AT_NR)
                    at_block(ds + j0 * Lq, Lq, qb + d0, lq, lo, L, ob + j0 * Dp + d0, Dp);
            }
            float *gk = c->gk + c->gko[n];
            for (Py_ssize_t j = 0; j < S; j++)
                for (Py_ssize_t d = 0; d < D; d++)
                    gk[j * c->gkld + d] = ob[j * Dp + d] * c->scale;
        }
        if (c->gv) {
            float *gv = c->gv + c->gvo[n];
            int in_gv = cols_v && rows_s;
            float *o = in_gv ? gv : ob;
            Py_ssize_t lo_ = in_gv ? c->gvld : Evp;
            for (Py_ssize_t j0 = 0; j0 < S4; j0 += AT_MR) {
                Py_ssize_t lo = c->causal ? (j0 < L ? j0 : L) : 0;
                for (Py_ssize_t e0 = 0; e0 < Evp; e0 += AT_NR)
                    at_block(pa + j0 * lp, lp, gb + e0, lg, lo, L, o + j0 * lo_ + e0, lo_);
            }
            if (!in_gv)
                for (Py_ssize_t j = 0; j < S; j++)
                    memcpy(gv + j * c->gvld, ob + j * Evp, sizeof(float) * (size_t)Ev);
        }
    }
    PyMem_RawFree(buf);
}

/* softmax and logsumexp together (cross_entropy's forward): m = the row max, 0 where it is not
 * finite (the formula's rule), s = sum exp(x - m) in float64, lse = log(s) + m rounded once,
 * p = exp(x - m) / s (skipped where p is NULL) */
/* short rows (n <= LANES: a classifier's few classes): the same values, no unused lanes; RECIP:
 * p by the reciprocal of the sum, as the float32 lane path */
#define SOFTMAX_LSE_SHORT(T, EXP, RECIP)                                                           \
KI void softmax_lse_short_##T(const T *RESTRICT x, T *RESTRICT p, T *RESTRICT lse,                \
                              Py_ssize_t r0, Py_ssize_t r1, Py_ssize_t n)                          \
{                                                                                                  \
    for (Py_ssize_t r = r0; r < r1; r++) {                                                         \
        const T *RESTRICT xr = x + r * n;                                                          \
        T m = -INFINITY;                                                                           \
        for (Py_ssize_t i = 0; i < n; i++)                                                         \
            m = xr[i] > m ? xr[i] : m;                                                             \
        m = m - m == 0 ? m : 0;                                                                    \
        double acc[LANES];                                                                         \
        double s;                                                                                  \
        if (p) {                                                                                   \
            T *RESTRICT pr = p + r * n;                                                            \
            for (Py_ssize_t i = 0; i < n; i++) {                                                   \
                pr[i] = EXP(xr[i] - m);                                                            \
                acc[i] = (double)pr[i];                                                            \
            }                                                                                      \
            s = short_total(acc, n);                                                               \
            T st = (T)s, inv = (T)(1.0 / s);                                                       \
            for (Py_ssize_t i = 0; i < n; i++)                                                     \
                pr[i] = RECIP ? pr[i] * inv : pr[i] / st;                                          \
        } else {                                                                                   \
            for (Py_ssize_t i = 0; i < n; i++)                                                     \
                acc[i] = (double)EXP(xr[i] - m);                                                   \
            s = short_total(acc, n);                                                               \
        }                                                                                          \
        lse[r] = (T)(log(s) + (double)m);                                                          \
    }                                                                                              \
}
SOFTMAX_LSE_SHORT(float, k_expf_fma, 1)
SOFTMAX_LSE_SHORT(double, k_exp, 0)

#define SOFTMAX_LSE(T, EXP)                                                                        \
CLONES_FMA static void softmax_lse_##T(const T *RESTRICT x, T *RESTRICT p, T *RESTRICT lse,        \
                                   Py_ssize_t r0, Py_ssize_t r1, Py_ssize_t n)                     \
{                                                                                                  \
    if (n <= LANES) {                                                                              \
        softmax_lse_short_##T(x, p, lse, r0, r1, n);                                               \
        return;                                                                                    \
    }                                                                                              \
    for (Py_ssize_t r = r0; r < r1; r++) {                                                         \
        const T *RESTRICT xr = x + r * n;                                                          \
        T m = row_max_##T(xr, n);                                                                  \
        m = m - m == 0 ? m : 0;                                                                    \
        double s;                                                                                  \
        if (p) {                                                                                   \
            T *RESTRICT pr = p + r * n;                                                            \
            for (Py_ssize_t i = 0; i < n; i++)                                                     \
                pr[i] = EXP(xr[i] - m);                                                            \
            LANE_SUM(s, n, i, pr[i]);                                                              \
            T st = (T)s;                                                                           \
            for (Py_ssize_t i = 0; i < n; i++)                                                     \
                pr[i] = pr[i] / st;                                                                \
        }                                                                                          \
        else                                                                                       \
            LANE_SUM(s, n, i, EXP(xr[i] - m));                                                     \
        lse[r] = (T)(log(s) + (double)m);                                                          \
    }                                                                                              \
}
SOFTMAX_LSE(double, k_exp)

/* float32: rows of n <= LANES as SOFTMAX_LSE's; longer rows as softmax_float (p by the
 * reciprocal of the sum, short rows too); a row whose max is not finite (m taken as 0, so
 * x - m may be > 0) takes k_expf_fma */
CLONES_FMA static void softmax_lse_float(const float *RESTRICT x, float *RESTRICT p,
                                         float *RESTRICT lse, Py_ssize_t r0, Py_ssize_t r1,
                                         Py_ssize_t n)
{
    if (n <= LANES) {
        softmax_lse_short_float(x, p, lse, r0, r1, n);
        return;
    }
    for (Py_ssize_t r = r0; r < r1; r++) {
        const float *RESTRICT xr = x + r * n;
        float m = row_max_float(xr, n);
        const float *nx = r + 1 < r1 ? xr + n : xr;
        double s;
        if (m - m != 0) {
            m = 0;
            if (p) {
                float *RESTRICT pr = p + r * n;
                for (Py_ssize_t i = 0; i < n; i++)
                    pr[i] = k_expf_fma(xr[i]);
                LANE_SUM(s, n, i, pr[i]);
                float inv = (float)(1.0 / s);
                for (Py_ssize_t i = 0; i < n; i++)
                    pr[i] = pr[i] * inv;
            }
            else
                LANE_SUM(s, n, i, k_expf_fma(xr[i]));
        }
        else if (p) {
            float *RESTRICT pr = p + r * n;
            ZERO_LANES(acc);
            LANE_LOOP_PF(n, i, j, nx, pr + (r + 1 < r1 ? n : 0), {
                float e = k_expf_neg(xr[i] - m);
                pr[i] = e;
                acc[j] += (double)e;
            });
            s = lanes_total(acc);
            float inv = (float)(1.0 / s);
            for (Py_ssize_t i = 0; i < n; i++)
                pr[i] = pr[i] * inv;
        }
        else {
            ZERO_LANES(acc);
            LANE_LOOP_PF(n, i, j, nx, nx, acc[j] += (double)k_expf_neg(xr[i] - m));
            s = lanes_total(acc);
        }
        lse[r] = (float)(log(s) + (double)m);
    }
}

/* The float32 softmax family over the middle axis of x laid out (outer, C, inner), inner > 1 (a
 * softmax over dim 1 of an (N, C, H, W) image: the NumPy formulas there take five passes and
 * as many arrays): softmax_mid(op, x, g, out, lse, outer, C, inner). op 0 softmax, 1
 * log_softmax, 2 softmax's gradient (x: its output y; g: the incoming gradient), 3
 * log_softmax's, 4 cross_entropy's statistics (p into out where given, logsumexp into lse, laid
 * out (outer, inner)). Each element takes the row kernels' operations (softmax_float,
 * log_softmax_float, their backward, softmax_lse_float): the max by integer keys, k_expf_neg
 * after it (k_expf_fma where a max is not finite, op 4, or a y > 0, op 3), float64 sums each
 * rounded once. The sums run over C in order for MID_TILE neighbouring positions at once
 * (vectors across inner), where the row kernels' lanes add in another order: within their
 * bounds, not their bits. A unit of work is one outer index's tile of positions: the same
 * operations at any thread count. */
#define MID_TILE 256
typedef struct {
    int op;
    const float *x, *g;
    float *out, *lse;
    Py_ssize_t C, inner, tiles;
} mid_job;

CLONES_FMA static void softmax_mid_units(const mid_job *j, Py_ssize_t u0, Py_ssize_t u1)
{
    const Py_ssize_t C = j->C, inner = j->inner;
    for (Py_ssize_t u = u0; u < u1; u++) {
        Py_ssize_t o = u / j->tiles, i0 = (u % j->tiles) * MID_TILE;
        Py_ssize_t w = inner - i0 < MID_TILE ? inner - i0 : MID_TILE;
        const float *RESTRICT x = j->x + o * C * inner + i0;
        const float *RESTRICT g = j->g ? j->g + o * C * inner + i0 : NULL;
        float *RESTRICT y = j->out ? j->out + o * C * inner + i0 : NULL;
        double acc[MID_TILE];
        float m[MID_TILE], f[MID_TILE];
        int32_t mk[MID_TILE];
        for (Py_ssize_t t = 0; t < w; t++) {
            acc[t] = 0.0;
            mk[t] = INT32_MIN;
        }
        if (j->op == 2) {  /* y (g - sum(g y)) */
            for (Py_ssize_t c = 0; c < C; c++)
                for (Py_ssize_t t = 0; t < w; t++)
                    acc[t] += (double)(g[c * inner + t] * x[c * inner + t]);
            for (Py_ssize_t t = 0; t < w; t++)
                f[t] = (float)acc[t];
            for (Py_ssize_t c = 0; c < C; c++)
                for (Py_ssize_t t = 0; t < w; t++)
                    y[c * inner + t] = x[c * inner + t] * (g[c * inner + t] - f[t]);
            continue;
        }
        if (j->op == 3) {  /* g - exp(y) sum(g) */
            for (Py_ssize_t c = 0; c < C; c++)
                for (Py_ssize_t t = 0; t < w; t++) {
                    acc[t] += (double)g[c * inner + t];
                    int32_t k = f32_key(x[c * inner + t]);
                    mk[t] = k > mk[t] ? k : mk[t];
                }
            int32_t top = INT32_MIN;
            for (Py_ssize_t t = 0; t < w; t++) {
                f[t] = (float)acc[t];
                top = mk[t] > top ? mk[t] : top;
            }
            if (top > 0)
                for (Py_ssize_t c = 0; c < C; c++)
                    for (Py_ssize_t t = 0; t < w; t++)
                        y[c * inner + t] = g[c * inner + t] - k_expf_fma(x[c * inner + t]) * f[t];
            else
                for (Py_ssize_t c = 0; c < C; c++)
                    for (Py_ssize_t t = 0; t < w; t++)
                        y[c * inner + t] = g[c * inner + t] - k_expf_neg(x[c * inner + t]) * f[t];
            continue;
        }
        for (Py_ssize_t c = 0; c < C; c++)
            for (Py_ssize_t t = 0; t < w; t++) {
                int32_t k = f32_key(x[c * inner + t]);
                mk[t] = k > mk[t] ? k : mk[t];
            }
        int finite = 1;
        char zeroed[MID_TILE];
        for (Py_ssize_t t = 0; t < w; t++) {
            int32_t k = mk[t] ^ (int32_t)((uint32_t)(mk[t] >> 31) >> 1);
            memcpy(&m[t], &k, 4);
            zeroed[t] = j->op == 4 && m[t] - m[t] != 0;  /* cross_entropy's max: 0 where not finite */
            if (zeroed[t]) {
                m[t] = 0;
                finite = 0;
            }
        }
        if (j->op == 1) {  /* (x - m) - log(sum) */
            for (Py_ssize_t c = 0; c < C; c++)
                for (Py_ssize_t t = 0; t < w; t++)
                    acc[t] += (double)k_expf_neg(x[c * inner + t] - m[t]);
            for (Py_ssize_t t = 0; t < w; t++)
                f[t] = (float)log(acc[t]);
            for (Py_ssize_t c = 0; c < C; c++)
                for (Py_ssize_t t = 0; t < w; t++)
                    y[c * inner + t] = (x[c * inner + t] - m[t]) - f[t];
            continue;
        }
        /* op 0, 4: e = exp(x - m), their sum; p = e times the sum's reciprocal */
        if (y && finite)
            for (Py_ssize_t c = 0; c < C; c++)
                for (Py_ssize_t t = 0; t < w; t++) {
                    float e = k_expf_neg(x[c * inner + t] - m[t]);
                    y[c * inner + t] = e;
                    acc[t] += (double)e;
                }
        else if (finite)
            for (Py_ssize_t c = 0; c < C; c++)
                for (Py_ssize_t t = 0; t < w; t++)
                    acc[t] += (double)k_expf_neg(x[c * inner + t] - m[t]);
        else  /* (op 4: a column whose max is not finite takes k_expf_fma of x - 0, as the rows) */
            for (Py_ssize_t c = 0; c < C; c++)
                for (Py_ssize_t t = 0; t < w; t++) {
                    float v = x[c * inner + t];
                    float e = zeroed[t] ? k_expf_fma(v) : k_expf_neg(v - m[t]);
                    if (y)
                        y[c * inner + t] = e;
                    acc[t] += (double)e;
                }
        if (y) {
            for (Py_ssize_t t = 0; t < w; t++)
                f[t] = (float)(1.0 / acc[t]);
            for (Py_ssize_t c = 0; c < C; c++)
                for (Py_ssize_t t = 0; t < w; t++)
                    y[c * inner + t] = y[c * inner + t] * f[t];
        }
        if (j->op == 4)
            for (Py_ssize_t t = 0; t < w; t++)
                j->lse[o * inner + i0 + t] = (float)(log(acc[t]) + (double)m[t]);
    }
}

static void call_softmax_mid(void *v, Py_ssize_t u0, Py_ssize_t u1)
{
    softmax_mid_units((const mid_job *)v, u0, u1);
}

/* layer_norm over rows: mean and rstd = 1/sqrt(var + eps) in float64, rounded to T;
 * y = (x - mean) * rstd [* w] [+ b] in T, the NumPy formula's operations and order; nt: y by
 * non-temporal stores (ROW_OUT). */
#define COLSUM_CHUNK 512  /* columns a layer_norm_colsums pass sums (its sums: 8 KB of stack) */
/* layer_norm_backward's blocks of rows for its column sums in grad_x's pass: one block per
 * LN_BLOCK elements, at most LN_MAX_BLOCKS (the threads' parts are whole blocks, so a small
 * input still splits; the blocks' sums, 16 bytes a column each, stay under 256 bytes a column),
 * for rows of up to LN_FUSED_MAX_N elements */
#define LN_BLOCK ((Py_ssize_t)1 << 13)
#define LN_MAX_BLOCKS 16
#define LN_FUSED_MAX_N ((Py_ssize_t)1 << 14)
#define LAYER_NORM(T)                                                                              \
CLONES static void layer_norm_##T(const T *RESTRICT x, const T *RESTRICT w, const T *RESTRICT b,   \
                                  T *RESTRICT y, T *RESTRICT mean, T *RESTRICT rstd,               \
                                  Py_ssize_t r0, Py_ssize_t r1, Py_ssize_t n, double eps, int nt)  \
{                                                                                                  \
    for (Py_ssize_t r = r0; r < r1; r++) {                                                         \
        const T *RESTRICT xr = x + r * n;                                                          \
        T *RESTRICT yr = y + r * n;                                                                \
        double s, v;                                                                               \
        LANE_SUM(s, n, i, xr[i]);                                                                  \
        T mu = (T)(s / (double)n);                                                                 \
        /* (the next row's lines fetched while this one's are summed from cache) */                \
        LANE_SUM_PF(v, n, i, r + 1 < r1 ? xr + n : xr,                                             \
                    (double)(xr[i] - mu) * (double)(xr[i] - mu));                                  \
        T rs = (T)(1.0 / sqrt(v / (double)n + eps));                                               \
        mean[r] = mu;                                                                              \
        rstd[r] = rs;                                                                              \
        if (w && b)                                                                                \
            ROW_OUT(T, yr, n, nt, i, ((xr[i] - mu) * rs) * w[i] + b[i],                            \
                    ((vld_##T(xr + i) - mu) * rs) * vld_##T(w + i) + vld_##T(b + i));              \
        else if (w)                                                                                \
            ROW_OUT(T, yr, n, nt, i, ((xr[i] - mu) * rs) * w[i],                                   \
                    ((vld_##T(xr + i) - mu) * rs) * vld_##T(w + i));                               \
        else if (b)                                                                                \
            ROW_OUT(T, yr, n, nt, i, ((xr[i] - mu) * rs) + b[i],                                   \
                    ((vld_##T(xr + i) - mu) * rs) + vld_##T(b + i));                               \
        else                                                                                       \
            ROW_OUT(T, yr, n, nt, i, (xr[i] - mu) * rs, (vld_##T(xr + i) - mu) * rs);              \
    }                                                                                              \
    NT_FENCE(nt);                                                                                  \
}                                                                                                  \
/* gw[c] = sum over rows of g x_hat, gb[c] = sum of g, for columns [c0, c1), in float64, rows in   \
 * order (so a split by columns over threads gives the same sums), added into gw and gb (zeros).   \
 * The running sums live in this call's own arrays, COLSUM_CHUNK columns at a time: in gw and gb   \
 * two threads' columns shared cache lines, written every row (at 1024 x 128 the split ran 2x     \
 * slower than one thread). */                                                                     \
CLONES static void layer_norm_colsums_##T(const T *RESTRICT x, const T *RESTRICT mean,             \
                                          const T *RESTRICT rstd, const T *RESTRICT g,             \
                                          double *RESTRICT gw, double *RESTRICT gb,                \
                                          Py_ssize_t rows, Py_ssize_t n, Py_ssize_t c0,            \
                                          Py_ssize_t c1)                                           \
{                                                                                                  \
    double sw[COLSUM_CHUNK], sb[COLSUM_CHUNK];                                                     \
    for (Py_ssize_t k0 = c0; k0 < c1; k0 += COLSUM_CHUNK) {                                        \
        Py_ssize_t m = c1 - k0 < COLSUM_CHUNK ? c1 - k0 : COLSUM_CHUNK;                            \
        for (Py_ssize_t i = 0; i < m; i++)                                                         \
            sw[i] = sb[i] = 0.0;                                                                   \
        for (Py_ssize_t r = 0; r < rows; r++) {                                                    \
            const T *RESTRICT xr = x + r * n + k0, *RESTRICT gr = g + r * n + k0;                  \
            T mu = mean[r], rs = rstd[r];                                                          \
            if (gw && gb)                                                                          \
                for (Py_ssize_t i = 0; i < m; i++) {                                               \
                    sw[i] += (double)gr[i] * (double)((xr[i] - mu) * rs);                          \
                    sb[i] += (double)gr[i];                                                        \
                }                                                                                  \
            else if (gw)                                                                           \
                for (Py_ssize_t i = 0; i < m; i++)                                                 \
                    sw[i] += (double)gr[i] * (double)((xr[i] - mu) * rs);                          \
            else                                                                                   \
                for (Py_ssize_t i = 0; i < m; i++)                                                 \
                    sb[i] += (double)gr[i];                                                        \
        }                                                                                          \
        for (Py_ssize_t i = 0; i < m; i++) {                                                       \
            if (gw)                                                                                \
                gw[k0 + i] += sw[i];                                                               \
            if (gb)                                                                                \
                gb[k0 + i] += sb[i];                                                               \
        }                                                                                          \
    }                                                                                              \
}
LAYER_NORM(float)
LAYER_NORM(double)

/* layer_norm's grad_x: gx = (gh - (x_hat mean(gh x_hat) + mean(gh))) rstd, gh = g w,
 * x_hat = (x - mean) rstd, in T, the formula's order; the two row sums in float64 lanes
 * (LANE_SUM's lanes and order); nt: gx by non-temporal stores (ROW_OUT).
 * float (GCC, clang): both sums in one pass over the row, in 4-wide float64 vectors, four per
 * LANES block (vector k holds LANE_SUM's lanes 4k .. 4k + 3: the same sums bit for bit), then the
 * output pass. At 1024 x 4096 the compiler left that fused loop scalar written as LANE_LOOP (4.9
 * ms against 4.3 for the two LANE_SUM passes); so written 2.8 ms in the AVX-512 and the AVX2
 * builds (8-wide vectors kept the AVX2 build's sums on the stack, 5.0 ms). double: two LANE_SUM
 * passes. */
#if defined(__GNUC__) || defined(__clang__)
typedef double v4d_ln __attribute__((vector_size(32)));
typedef float v4f_ln __attribute__((vector_size(16), aligned(4), may_alias));  /* unaligned */
#define LD4F_LN(p) (*(const v4f_ln *)(p))
/* (element by element: GCC 12 lowered __builtin_convertvector here to two 2-wide conversions
 * through the stack; this is one 4-wide vcvtps2pd) */
#define CVT4_LN(v)                                                                             \
    __extension__({                                                                            \
        v4f_ln h_ = (v);                                                                       \
        (v4d_ln){(double)h_[0], (double)h_[1], (double)h_[2], (double)h_[3]};                  \
    })
_Static_assert(LANES == 16, "layer_norm_backward_float keeps LANE_SUM's 16 lanes in 4 x 4");

/* The column sums of grad_w and grad_b in the same pass (cw, cb: NULL where not wanted): row r
 * adds g x_hat and g (float64 products of the float32 values, as layer_norm_colsums) into its
 * block's partial sums, cw + (r / rb) n and cb + (r / rb) n (zeros at first); the caller adds
 * the blocks up in order. The blocks are fixed by the shape (rb rows each), never by the thread
 * count, and the pool's parts start at multiples of rb, so the sums are the same at any count. */
CLONES static void layer_norm_backward_float(const float *RESTRICT x, const float *RESTRICT w,
                                             const float *RESTRICT mean,
                                             const float *RESTRICT rstd, const float *RESTRICT g,
                                             float *RESTRICT gx, Py_ssize_t r0, Py_ssize_t r1,
                                             Py_ssize_t n, int nt, double *RESTRICT cw,
                                             double *RESTRICT cb, Py_ssize_t rb)
{
    Py_ssize_t t = n - n % LANES;
    for (Py_ssize_t r = r0; r < r1; r++) {
        const float *RESTRICT xr = x + r * n, *RESTRICT gr = g + r * n;
        float mu = mean[r], rs = rstd[r];
        float *RESTRICT o = gx + r * n;
        double *RESTRICT sw = cw ? cw + (r / rb) * n : NULL;
        double *RESTRICT sb = cb ? cb + (r / rb) * n : NULL;
        v4d_ln s[4] = {{0}}, q[4] = {{0}};  /* s[k], q[k]: lanes 4k .. 4k + 3 */
        double sg_[LANES], sgx_[LANES];
#define LN_SUMS_STEP(H)                                                                        \
    for (Py_ssize_t i = 0; i < t; i += LANES)                                                  \
        for (int k = 0; k < 4; k++) {                                                          \
            v4d_ln d = CVT4_LN(H);                                                             \
            s[k] += d;                                                                         \
            q[k] += d * CVT4_LN((LD4F_LN(xr + i + 4 * k) - mu) * rs);                          \
        }
        if (w)
            LN_SUMS_STEP(LD4F_LN(gr + i + 4 * k) * LD4F_LN(w + i + 4 * k))
        else
            LN_SUMS_STEP(LD4F_LN(gr + i + 4 * k))
#undef LN_SUMS_STEP
        /* the column sums from the row just read (in cache), a loop of their own (the compiler
         * vectorises it alone; inside the loop above it kept the sums' vectors in memory) */
        if (sw && sb)
            for (Py_ssize_t i = 0; i < t; i++) {
                double gd = (double)gr[i];
                sw[i] += gd * (double)((xr[i] - mu) * rs);
                sb[i] += gd;
            }
        else if (sw)
            for (Py_ssize_t i = 0; i < t; i++)
                sw[i] += (double)gr[i] * (double)((xr[i] - mu) * rs);
        else if (sb)
            for (Py_ssize_t i = 0; i < t; i++)
                sb[i] += (double)gr[i];
        memcpy(sg_, s, sizeof s);
        memcpy(sgx_, q, sizeof q);
        for (Py_ssize_t i = t; i < n; i++) {
            float h = w ? gr[i] * w[i] : gr[i];
            float xh = (xr[i] - mu) * rs;
            sg_[i - t] += (double)h;
            sgx_[i - t] += (double)h * (double)xh;
            if (sw)
                sw[i] += (double)gr[i] * (double)xh;
            if (sb)
                sb[i] += (double)gr[i];
        }
        float mg = (float)(lanes_total(sg_) / (double)n);
        float mgx = (float)(lanes_total(sgx_) / (double)n);
        if (w)
            ROW_OUT(float, o, n, nt, i, (gr[i] * w[i] - (((xr[i] - mu) * rs) * mgx + mg)) * rs,
                    (vld_float(gr + i) * vld_float(w + i)
                     - (((vld_float(xr + i) - mu) * rs) * mgx + mg)) * rs);
        else
            ROW_OUT(float, o, n, nt, i, (gr[i] - (((xr[i] - mu) * rs) * mgx + mg)) * rs,
                    (vld_float(gr + i) - (((vld_float(xr + i) - mu) * rs) * mgx + mg)) * rs);
    }
    NT_FENCE(nt);
}
#define HAVE_LN_FUSED 1
#endif

#define LAYER_NORM_BACKWARD(T)                                                                     \
CLONES static void layer_norm_backward_##T(const T *RESTRICT x, const T *RESTRICT w,               \
                                           const T *RESTRICT mean, const T *RESTRICT rstd,         \
                                           const T *RESTRICT g, T *RESTRICT gx, Py_ssize_t r0,     \
                                           Py_ssize_t r1, Py_ssize_t n, int nt)                    \
{                                                                                                  \
    for (Py_ssize_t r = r0; r < r1; r++) {                                                         \
        const T *RESTRICT xr = x + r * n, *RESTRICT gr = g + r * n;                                \
        T mu = mean[r], rs = rstd[r];                                                              \
        T *RESTRICT o = gx + r * n;                                                                \
        double sg, sgx;                                                                            \
        if (w) {                                                                                   \
            LANE_SUM(sg, n, i, gr[i] * w[i]);                                                      \
            LANE_SUM(sgx, n, i, (double)(gr[i] * w[i]) * (double)((xr[i] - mu) * rs));             \
            T mg = (T)(sg / (double)n), mgx = (T)(sgx / (double)n);                                \
            ROW_OUT(T, o, n, nt, i, (gr[i] * w[i] - (((xr[i] - mu) * rs) * mgx + mg)) * rs,        \
                    (vld_##T(gr + i) * vld_##T(w + i)                                              \
                     - (((vld_##T(xr + i) - mu) * rs) * mgx + mg)) * rs);                          \
        }                                                                                          \
        else {                                                                                     \
            LANE_SUM(sg, n, i, gr[i]);                                                             \
            LANE_SUM(sgx, n, i, (double)gr[i] * (double)((xr[i] - mu) * rs));                      \
            T mg = (T)(sg / (double)n), mgx = (T)(sgx / (double)n);                                \
            ROW_OUT(T, o, n, nt, i, (gr[i] - (((xr[i] - mu) * rs) * mgx + mg)) * rs,               \
                    (vld_##T(gr + i) - (((vld_##T(xr + i) - mu) * rs) * mgx + mg)) * rs);          \
        }                                                                                          \
    }                                                                                              \
    NT_FENCE(nt);                                                                                  \
}
LAYER_NORM_BACKWARD(double)
#if !(defined(__GNUC__) || defined(__clang__))
LAYER_NORM_BACKWARD(float)
#define HAVE_LN_FUSED 0
#endif

/* rms_norm over rows: rstd = 1/sqrt(mean(x^2) + eps) in float64, rounded to T; y = (x rstd) [* w];
 * backward: gx = rstd (gh - x_hat mean(gh x_hat)), gh = g [w], x_hat = x rstd (in T, the
 * formula's order); gw = the column sums of g x_hat in float64, rows in order */
#define RMS_NORM(T)                                                                                \
CLONES static void rms_norm_##T(const T *RESTRICT x, const T *RESTRICT w, T *RESTRICT y,           \
                                T *RESTRICT rstd, Py_ssize_t r0, Py_ssize_t r1, Py_ssize_t n,      \
                                double eps)                                                        \
{                                                                                                  \
    for (Py_ssize_t r = r0; r < r1; r++) {                                                         \
        const T *RESTRICT xr = x + r * n;                                                          \
        T *RESTRICT yr = y + r * n;                                                                \
        double s;                                                                                  \
        LANE_SUM(s, n, i, (double)xr[i] * (double)xr[i]);                                          \
        T rs = (T)(1.0 / sqrt(s / (double)n + eps));                                               \
        rstd[r] = rs;                                                                              \
        if (w)                                                                                     \
            for (Py_ssize_t i = 0; i < n; i++)                                                     \
                yr[i] = (xr[i] * rs) * w[i];                                                       \
        else                                                                                       \
            for (Py_ssize_t i = 0; i < n; i++)                                                     \
                yr[i] = xr[i] * rs;                                                                \
    }                                                                                              \
}                                                                                                  \
CLONES static void rms_norm_backward_##T(const T *RESTRICT x, const T *RESTRICT w,                 \
                                         const T *RESTRICT rstd, const T *RESTRICT g,              \
                                         T *RESTRICT gx, Py_ssize_t r0, Py_ssize_t r1,             \
                                         Py_ssize_t n)                                             \
{                                                                                                  \
    for (Py_ssize_t r = r0; r < r1; r++) {                                                         \
        const T *RESTRICT xr = x + r * n, *RESTRICT gr = g + r * n;                                \
        T rs = rstd[r];                                                                            \
        T *RESTRICT o = gx + r * n;                                                                \
        double s;                                                                                  \
        if (w) {                                                                                   \
            LANE_SUM(s, n, i, (double)(gr[i] * w[i]) * (double)(xr[i] * rs));                     \
            T m = (T)(s / (double)n);                                                              \
            for (Py_ssize_t i = 0; i < n; i++)                                                     \
                o[i] = rs * (gr[i] * w[i] - (xr[i] * rs) * m);                                     \
        }                                                                                          \
        else {                                                                                     \
            LANE_SUM(s, n, i, (double)gr[i] * (double)(xr[i] * rs));                               \
            T m = (T)(s / (double)n);                                                              \
            for (Py_ssize_t i = 0; i < n; i++)                                                     \
                o[i] = rs * (gr[i] - (xr[i] * rs) * m);                                            \
        }                                                                                          \
    }                                                                                              \
}                                                                                                  \
CLONES static void rms_norm_colsums_##T(const T *RESTRICT x, const T *RESTRICT rstd,               \
                                        const T *RESTRICT g, double *RESTRICT gw,                  \
                                        Py_ssize_t rows, Py_ssize_t n, Py_ssize_t c0,              \
                                        Py_ssize_t c1)                                             \
{                                                                                                  \
    for (Py_ssize_t r = 0; r < rows; r++) {                                                        \
        const T *RESTRICT xr = x + r * n, *RESTRICT gr = g + r * n;                                \
        T rs = rstd[r];                                                                            \
        for (Py_ssize_t i = c0; i < c1; i++)                                                       \
            gw[i] += (double)gr[i] * (double)(xr[i] * rs);                                         \
    }                                                                                              \
}
RMS_NORM(float)
RMS_NORM(double)

/* Channel norms over x viewed as (N, C, hw), C-ordered: channel c of sample n is the block of
 * hw elements at (n C + c) hw.
 * batch_norm: channel c's statistics over its N blocks: mean, then the biased variance of
 * (x - mean) (the mean rounded to T first, as the NumPy formula's x - mu), in float64 lanes that
 * run on across the blocks in order (lane j takes each block's elements i with i % LANES == j);
 * rstd = 1/sqrt(var + eps) rounded to T; y = ((x - mean) rstd) [* w] [+ b] in T, the NumPy
 * formula's operations and order. Backward: sg = sum g and sgx = sum g x_hat (float64, one
 * pass), gx = (g [w] - (x_hat mgx + mg)) rstd with mg = (T)(sg [w] / cnt), mgx likewise. */
#define CH_LANES(N, C, hw, c, BODY)                                                                \
    for (Py_ssize_t n_ = 0; n_ < (N); n_++) {                                                      \
        Py_ssize_t o_ = (n_ * (C) + (c)) * (hw);                                                   \
        LANE_LOOP(hw, k_, j, Py_ssize_t i = o_ + k_; BODY);                                        \
    }
#define CH_AFFINE(T, yb, xb, hw, EXPR_W_B, EXPR_W, EXPR_B, EXPR)                                   \
    if (w && b)                                                                                    \
        for (Py_ssize_t i = 0; i < (hw); i++)                                                      \
            yb[i] = EXPR_W_B;                                                                      \
    else if (w)                                                                                    \
        for (Py_ssize_t i = 0; i < (hw); i++)                                                      \
            yb[i] = EXPR_W;                                                                        \
    else if (b)                                                                                    \
        for (Py_ssize_t i = 0; i < (hw); i++)                                                      \
            yb[i] = EXPR_B;                                                                        \
    else                                                                                           \
        for (Py_ssize_t i = 0; i < (hw); i++)                                                      \
            yb[i] = EXPR;
#define CHANNEL_NORMS(T)                                                                           \
CLONES static void batch_norm_##T(const T *RESTRICT x, const T *RESTRICT w, const T *RESTRICT b,   \
                                  T *RESTRICT y, T *RESTRICT mean, T *RESTRICT var,                \
                                  T *RESTRICT rstd, Py_ssize_t N, Py_ssize_t C, Py_ssize_t hw,     \
                                  Py_ssize_t c0, Py_ssize_t c1, double eps)                        \
{                                                                                                  \
    double cnt = (double)N * (double)hw;                                                           \
    for (Py_ssize_t c = c0; c < c1; c++) {                                                         \
        ZERO_LANES(a);                                                                             \
        CH_LANES(N, C, hw, c, a[j] += (double)x[i]);                                               \
        T mu = (T)(lanes_total(a) / cnt);                                                          \
        ZERO_LANES(v);                                                                             \
        CH_LANES(N, C, hw, c, v[j] += (double)(x[i] - mu) * (double)(x[i] - mu));                  \
        double vb = lanes_total(v) / cnt;                                                          \
        T rs = (T)(1.0 / sqrt(vb + eps));                                                          \
        mean[c] = mu;                                                                              \
        var[c] = (T)vb;                                                                            \
        rstd[c] = rs;                                                                              \
        T wc = w ? w[c] : 1, bc = b ? b[c] : 0;                                                    \
        for (Py_ssize_t n = 0; n < N; n++) {                                                       \
            const T *RESTRICT xb = x + (n * C + c) * hw;                                           \
            T *RESTRICT yb = y + (n * C + c) * hw;                                                 \
            CH_AFFINE(T, yb, xb, hw, ((xb[i] - mu) * rs) * wc + bc, ((xb[i] - mu) * rs) * wc,      \
                      ((xb[i] - mu) * rs) + bc, (xb[i] - mu) * rs)                                 \
        }                                                                                          \
    }                                                                                              \
}                                                                                                  \
CLONES static void batch_norm_backward_##T(const T *RESTRICT x, const T *RESTRICT w,               \
                                           const T *RESTRICT mean, const T *RESTRICT rstd,         \
                                           const T *RESTRICT g, T *RESTRICT gx,                    \
                                           double *RESTRICT sg_out, double *RESTRICT sgx_out,      \
                                           Py_ssize_t N, Py_ssize_t C, Py_ssize_t hw,              \
                                           Py_ssize_t c0, Py_ssize_t c1)                           \
{                                                                                                  \
    double cnt = (double)N * (double)hw;                                                           \
    for (Py_ssize_t c = c0; c < c1; c++) {                                                         \
        T mu = mean[c], rs = rstd[c];                                                              \
        ZERO_LANES(a);                                                                             \
        ZERO_LANES(s);                                                                             \
        CH_LANES(N, C, hw, c, a[j] += (double)g[i];                                                \
                 s[j] += (double)g[i] * (double)((x[i] - mu) * rs));                               \
        double sg = lanes_total(a), sgx = lanes_total(s);                                          \
        sg_out[c] = sg;                                                                            \
        sgx_out[c] = sgx;                                                                          \
        if (!gx)                                                                                   \
            continue;                                                                              \
        double wd = w ? (double)w[c] : 1.0;                                                        \
        T wc = w ? w[c] : 1, mg = (T)(sg * wd / cnt), mgx = (T)(sgx * wd / cnt);                   \
        for (Py_ssize_t n = 0; n < N; n++) {                                                       \
            Py_ssize_t o = (n * C + c) * hw;                                                       \
            const T *RESTRICT xb = x + o, *RESTRICT gb = g + o;                                    \
            T *RESTRICT ob = gx + o;                                                               \
            if (w)                                                                                 \
                for (Py_ssize_t i = 0; i < hw; i++)                                                \
                    ob[i] = (gb[i] * wc - (((xb[i] - mu) * rs) * mgx + mg)) * rs;                  \
            else                                                                                   \
                for (Py_ssize_t i = 0; i < hw; i++)                                                \
                    ob[i] = (gb[i] - (((xb[i] - mu) * rs) * mgx + mg)) * rs;                       \
        }                                                                                          \
    }                                                                                              \
}                                                                                                  \
/* y = x s[c] [+ t[c]] over blocks [r0, r1) of hw elements, block r in channel r % C (batch_norm  \
 * in evaluation: the NumPy formula's x * scale + shift, bit for bit; its backward's g * scale) */ \
CLONES static void channel_affine_##T(const T *RESTRICT x, const T *RESTRICT s,                    \
                                      const T *RESTRICT t, T *RESTRICT y, Py_ssize_t C,            \
                                      Py_ssize_t hw, Py_ssize_t r0, Py_ssize_t r1)                 \
{                                                                                                  \
    for (Py_ssize_t r = r0; r < r1; r++) {                                                         \
        const T *RESTRICT xb = x + r * hw;                                                         \
        T *RESTRICT yb = y + r * hw;                                                               \
        T sc = s[r % C];                                                                           \
        if (t) {                                                                                   \
            T tc = t[r % C];                                                                       \
            for (Py_ssize_t i = 0; i < hw; i++)                                                    \
                yb[i] = xb[i] * sc + tc;                                                           \
        }                                                                                          \
        else                                                                                       \
            for (Py_ssize_t i = 0; i < hw; i++)                                                    \
                yb[i] = xb[i] * sc;                                                                \
    }                                                                                              \
}                                                                                                  \
/* group_norm: rows [r0, r1) of (N G, m), m = (C / G) hw, row r = (n, group r % G): mean and rstd \
 * as layer_norm's (float64 lanes, rounded to T); y = ((x - mean) rstd) [* w[c]] [+ b[c]].        \
 * Backward: per channel of the row, sums of g and g x_hat over its hw elements (float64 lanes,   \
 * kept in db and dsx for grad_w and grad_b), the row's sg = sum_c [w_c] db, sgx likewise; then   \
 * gx = (g [w_c] - (x_hat mgx + mg)) rstd, mg = (T)(sg / m), mgx = (T)(sgx / m). */                \
CLONES static void group_norm_##T(const T *RESTRICT x, const T *RESTRICT w, const T *RESTRICT b,   \
                                  T *RESTRICT y, T *RESTRICT mean, T *RESTRICT rstd,               \
                                  Py_ssize_t C, Py_ssize_t hw, Py_ssize_t G, Py_ssize_t r0,        \
                                  Py_ssize_t r1, double eps)                                       \
{                                                                                                  \
    Py_ssize_t cpg = C / G, m = cpg * hw;                                                          \
    for (Py_ssize_t r = r0; r < r1; r++) {                                                         \
        const T *RESTRICT xr = x + r * m;                                                          \
        T *RESTRICT yr = y + r * m;                                                                \
        double s, v;                                                                               \
        LANE_SUM_PF(s, m, i, yr, xr[i]);  /* (the output's lines fetched for writing) */           \
        T mu = (T)(s / (double)m);                                                                 \
        /* (the next row's lines fetched while this one's are summed from cache) */                \
        LANE_SUM_PF(v, m, i, r + 1 < r1 ? xr + m : xr,                                             \
                    (double)(xr[i] - mu) * (double)(xr[i] - mu));                                  \
        T rs = (T)(1.0 / sqrt(v / (double)m + eps));                                               \
        mean[r] = mu;                                                                              \
        rstd[r] = rs;                                                                              \
        for (Py_ssize_t k = 0; k < cpg; k++) {                                                     \
            Py_ssize_t c = (r % G) * cpg + k;                                                      \
            const T *RESTRICT xb = xr + k * hw;                                                    \
            T *RESTRICT yb = yr + k * hw;                                                          \
            T wc = w ? w[c] : 1, bc = b ? b[c] : 0;                                                \
            CH_AFFINE(T, yb, xb, hw, ((xb[i] - mu) * rs) * wc + bc, ((xb[i] - mu) * rs) * wc,      \
                      ((xb[i] - mu) * rs) + bc, (xb[i] - mu) * rs)                                 \
        }                                                                                          \
    }                                                                                              \
}                                                                                                  \
CLONES static void group_norm_backward_##T(const T *RESTRICT x, const T *RESTRICT w,               \
                                           const T *RESTRICT mean, const T *RESTRICT rstd,         \
                                           const T *RESTRICT g, T *RESTRICT gx,                    \
                                           double *RESTRICT db, double *RESTRICT dsx,              \
                                           Py_ssize_t C, Py_ssize_t hw, Py_ssize_t G,              \
                                           Py_ssize_t r0, Py_ssize_t r1)                           \
{                                                                                                  \
    Py_ssize_t cpg = C / G, m = cpg * hw;                                                          \
    for (Py_ssize_t r = r0; r < r1; r++) {                                                         \
        Py_ssize_t c0 = (r % G) * cpg, nc = (r / G) * C + c0; /* (n, c0) */                        \
        const T *RESTRICT xr = x + r * m, *RESTRICT gr = g + r * m;                                \
        T mu = mean[r], rs = rstd[r];                                                              \
        double sg = 0.0, sgx = 0.0;                                                                \
        for (Py_ssize_t k = 0; k < cpg; k++) {                                                     \
            const T *RESTRICT xb = xr + k * hw, *RESTRICT gb = gr + k * hw;                        \
            double dbk = 0.0, dsk = 0.0;                                                           \
            if (hw < LANES) /* (a few elements: in order, no lanes) */                             \
                for (Py_ssize_t i = 0; i < hw; i++) {                                              \
                    dbk += (double)gb[i];                                                          \
                    dsk += (double)gb[i] * (double)((xb[i] - mu) * rs);                            \
                }                                                                                  \
            else {                                                                                 \
                ZERO_LANES(a);                                                                     \
                ZERO_LANES(s);                                                                     \
                /* (grad_x's lines fetched for writing: the output of the pass below) */          \
                const T *ob = gx ? gx + r * m + k * hw : xb;                                       \
                LANE_LOOP_PF(hw, i, j, ob, ob, a[j] += (double)gb[i];                              \
                             s[j] += (double)gb[i] * (double)((xb[i] - mu) * rs));                 \
                dbk = lanes_total(a);                                                              \
                dsk = lanes_total(s);                                                              \
            }                                                                                      \
            db[nc + k] = dbk;                                                                      \
            dsx[nc + k] = dsk;                                                                     \
            double wd = w ? (double)w[c0 + k] : 1.0;                                               \
            sg += wd * dbk;                                                                        \
            sgx += wd * dsk;                                                                       \
        }                                                                                          \
        if (!gx)                                                                                   \
            continue;                                                                              \
        T mg = (T)(sg / (double)m), mgx = (T)(sgx / (double)m);                                    \
        for (Py_ssize_t k = 0; k < cpg; k++) {                                                     \
            const T *RESTRICT xb = xr + k * hw, *RESTRICT gb = gr + k * hw;                        \
            T *RESTRICT ob = gx + r * m + k * hw;                                                  \
            if (w) {                                                                               \
                T wc = w[c0 + k];                                                                  \
                for (Py_ssize_t i = 0; i < hw; i++)                                                \
                    ob[i] = (gb[i] * wc - (((xb[i] - mu) * rs) * mgx + mg)) * rs;                  \
            }                                                                                      \
            else                                                                                   \
                for (Py_ssize_t i = 0; i < hw; i++)                                                \
                    ob[i] = (gb[i] - (((xb[i] - mu) * rs) * mgx + mg)) * rs;                       \
        }                                                                                          \
    }                                                                                              \
}
CHANNEL_NORMS(float)
CHANNEL_NORMS(double)

/* batch_norm with short blocks, hw <= LANES (BatchNorm1d's (N, C), a ResNet's 4 x 4 and 2 x 2
 * maps): x as an (N, C hw) matrix, the rows in order, each row's stretch of columns [c0 hw,
 * c1 hw) a vector.
 * Column c hw + k's float64 sum over the rows is lane k of channel c's sum in batch_norm_T (whose
 * lanes run on across the blocks: lane k takes element k of each block, k < hw), so the channel's
 * lanes_total over them, zero lanes past hw, is the same number; the outputs are batch_norm_T's
 * elementwise operations from the same statistics: the same bits. There, a channel's N blocks lie
 * C hw elements apart (4 KB for 256 channels of 2 x 2: one cache set, re-read every pass) and
 * each costs a loop of its own; here each pass reads x once, in order. Scratch: sa, sb (C hw
 * float64 sums), and per column the channel's mean, rstd, weight and bias, or in the backward
 * its mean, rstd, two gradient means and weight (pc: 5 C hw T's). */
/* lanes_total of a channel's hw <= LANES column sums s[0..hw), the lanes past hw zero; one lane
 * is its own total (a sum that starts at +0.0 is never -0.0, so adding zeros changes nothing) */
static double bn_lanes(const double *s, Py_ssize_t hw)
{
    if (hw == 1)
        return s[0];
    double a[LANES];
    for (int j = 0; j < LANES; j++)
        a[j] = j < hw ? s[j] : 0.0;
    return lanes_total(a);
}

#define BN_SHORT(T)                                                                                \
CLONES static void batch_norm_short_##T(const T *RESTRICT x, const T *RESTRICT w,                  \
                                        const T *RESTRICT b, T *RESTRICT y, T *RESTRICT mean,      \
                                        T *RESTRICT var, T *RESTRICT rstd, double *RESTRICT sa,    \
                                        double *RESTRICT sb, T *RESTRICT pc, Py_ssize_t N,         \
                                        Py_ssize_t C, Py_ssize_t hw, Py_ssize_t c0, Py_ssize_t c1, \
                                        double eps)                                                \
{                                                                                                  \
    const Py_ssize_t W = C * hw, j0 = c0 * hw, j1 = c1 * hw;                                       \
    const double cnt = (double)N * (double)hw;                                                     \
    T *RESTRICT mc = pc, *RESTRICT rc = pc + W, *RESTRICT wc = pc + 2 * W, *RESTRICT bc = pc + 3 * W; \
    for (Py_ssize_t j = j0; j < j1; j++)                                                           \
        sa[j] = sb[j] = 0.0;                                                                       \
    for (Py_ssize_t n = 0; n < N; n++) {                                                           \
        const T *RESTRICT xr = x + n * W;                                                          \
        for (Py_ssize_t j = j0; j < j1; j++)                                                       \
            sa[j] += (double)xr[j];                                                                \
    }                                                                                              \
    for (Py_ssize_t c = c0; c < c1; c++) {                                                         \
        T mu = (T)(bn_lanes(sa + c * hw, hw) / cnt);                                               \
        mean[c] = mu;                                                                              \
        for (Py_ssize_t k = 0; k < hw; k++)                                                        \
            mc[c * hw + k] = mu;                                                                   \
    }                                                                                              \
    for (Py_ssize_t n = 0; n < N; n++) {                                                           \
        const T *RESTRICT xr = x + n * W;                                                          \
        for (Py_ssize_t j = j0; j < j1; j++)                                                       \
            sb[j] += (double)(xr[j] - mc[j]) * (double)(xr[j] - mc[j]);                           \
    }                                                                                              \
    for (Py_ssize_t c = c0; c < c1; c++) {                                                         \
        double vb = bn_lanes(sb + c * hw, hw) / cnt;                                               \
        T rs = (T)(1.0 / sqrt(vb + eps));                                                          \
        var[c] = (T)vb;                                                                            \
        rstd[c] = rs;                                                                              \
        for (Py_ssize_t k = 0; k < hw; k++) {                                                      \
            rc[c * hw + k] = rs;                                                                   \
            wc[c * hw + k] = w ? w[c] : 1;                                                         \
            bc[c * hw + k] = b ? b[c] : 0;                                                         \
        }                                                                                          \
    }                                                                                              \
    for (Py_ssize_t n = 0; n < N; n++) {                                                           \
        const T *RESTRICT xr = x + n * W;                                                          \
        T *RESTRICT yr = y + n * W;                                                                \
        if (w && b)                                                                                \
            for (Py_ssize_t j = j0; j < j1; j++)                                                   \
                yr[j] = ((xr[j] - mc[j]) * rc[j]) * wc[j] + bc[j];                                 \
        else if (w)                                                                                \
            for (Py_ssize_t j = j0; j < j1; j++)                                                   \
                yr[j] = ((xr[j] - mc[j]) * rc[j]) * wc[j];                                         \
        else if (b)                                                                                \
            for (Py_ssize_t j = j0; j < j1; j++)                                                   \
                yr[j] = ((xr[j] - mc[j]) * rc[j]) + bc[j];                                         \
        else                                                                                       \
            for (Py_ssize_t j = j0; j < j1; j++)                                                   \
                yr[j] = (xr[j] - mc[j]) * rc[j];                                                   \
    }                                                                                              \
}                                                                                                  \
CLONES static void batch_norm_short_backward_##T(const T *RESTRICT x, const T *RESTRICT w,         \
                                                 const T *RESTRICT mean, const T *RESTRICT rstd,   \
                                                 const T *RESTRICT g, T *RESTRICT gx,              \
                                                 double *RESTRICT sg_out, double *RESTRICT sgx_out, \
                                                 double *RESTRICT sa, double *RESTRICT sb,         \
                                                 T *RESTRICT pc, Py_ssize_t N, Py_ssize_t C,       \
                                                 Py_ssize_t hw, Py_ssize_t c0, Py_ssize_t c1)      \
{                                                                                                  \
    const Py_ssize_t W = C * hw, j0 = c0 * hw, j1 = c1 * hw;                                       \
    const double cnt = (double)N * (double)hw;                                                     \
    T *RESTRICT mc = pc, *RESTRICT rc = pc + W, *RESTRICT gc = pc + 2 * W, *RESTRICT hc = pc + 3 * W; \
    T *RESTRICT wc = pc + 4 * W;                                                                   \
    for (Py_ssize_t c = c0; c < c1; c++)                                                           \
        for (Py_ssize_t k = 0; k < hw; k++) {                                                      \
            mc[c * hw + k] = mean[c];                                                              \
            rc[c * hw + k] = rstd[c];                                                              \
            wc[c * hw + k] = w ? w[c] : 1;                                                         \
        }                                                                                          \
    for (Py_ssize_t j = j0; j < j1; j++)                                                           \
        sa[j] = sb[j] = 0.0;                                                                       \
    for (Py_ssize_t n = 0; n < N; n++) {                                                           \
        const T *RESTRICT xr = x + n * W, *RESTRICT gr = g + n * W;                                \
        for (Py_ssize_t j = j0; j < j1; j++) {                                                     \
            sa[j] += (double)gr[j];                                                                \
            sb[j] += (double)gr[j] * (double)((xr[j] - mc[j]) * rc[j]);                            \
        }                                                                                          \
    }                                                                                              \
    for (Py_ssize_t c = c0; c < c1; c++) {                                                         \
        double sg = bn_lanes(sa + c * hw, hw), sgx = bn_lanes(sb + c * hw, hw);                    \
        sg_out[c] = sg;                                                                            \
        sgx_out[c] = sgx;                                                                          \
        double wd = w ? (double)w[c] : 1.0;                                                        \
        T mg = (T)(sg * wd / cnt), mgx = (T)(sgx * wd / cnt);                                      \
        for (Py_ssize_t k = 0; k < hw; k++) {                                                      \
            gc[c * hw + k] = mg;                                                                   \
            hc[c * hw + k] = mgx;                                                                  \
        }                                                                                          \
    }                                                                                              \
    if (!gx)                                                                                       \
        return;                                                                                    \
    for (Py_ssize_t n = 0; n < N; n++) {                                                           \
        const T *RESTRICT xr = x + n * W, *RESTRICT gr = g + n * W;                                \
        T *RESTRICT o = gx + n * W;                                                                \
        if (w)                                                                                     \
            for (Py_ssize_t j = j0; j < j1; j++)                                                   \
                o[j] = (gr[j] * wc[j] - (((xr[j] - mc[j]) * rc[j]) * hc[j] + gc[j])) * rc[j];    \
        else                                                                                       \
            for (Py_ssize_t j = j0; j < j1; j++)                                                   \
                o[j] = (gr[j] - (((xr[j] - mc[j]) * rc[j]) * hc[j] + gc[j])) * rc[j];              \
    }                                                                                              \
}
BN_SHORT(float)
BN_SHORT(double)

/* Embedding's backward: out[idx[i], j] += src[i, j] [* scale[i]] for rows i = 0 .. n-1 in order
 * (row take[i] of src where take is given), columns [j0, j1): NumPy's add.at over the rows in
 * index order, bit for bit (the product rounded to T first, as grad * scale) */
#define SCATTER_ROWS(T)                                                                            \
CLONES static void scatter_rows_##T(const int64_t *RESTRICT idx, const int64_t *RESTRICT take,     \
                                    const T *RESTRICT src, const T *RESTRICT scale,                \
                                    T *RESTRICT out, Py_ssize_t n, Py_ssize_t d, Py_ssize_t j0,    \
                                    Py_ssize_t j1)                                                 \
{                                                                                                  \
    for (Py_ssize_t i = 0; i < n; i++) {                                                           \
        T *RESTRICT o = out + idx[i] * d;                                                          \
        const T *RESTRICT g = src + (take ? take[i] : i) * d;                                      \
        if (scale) {                                                                               \
            T s = scale[i];                                                                        \
            for (Py_ssize_t j = j0; j < j1; j++)                                                   \
                o[j] = o[j] + g[j] * s;                                                            \
        }                                                                                          \
        else                                                                                       \
            for (Py_ssize_t j = j0; j < j1; j++)                                                   \
                o[j] = o[j] + g[j];                                                                \
    }                                                                                              \
}
SCATTER_ROWS(float)
SCATTER_ROWS(double)

/* Convolution's im2col and col2im between an (N, C, H, W) image and its columns, whose layout
 * the caller states by strides (elements): tap (c, i, j) of image n starts at
 * n sn + ((c kh + i) kw + j) st and window (oh, ow) sits oh rs + ow cs after it. ``wide``
 * (stride 1, cs 1): each tap's run is the flat slice of the padded image starting at
 * (i dh) Wp + j dw, L = rs OH values long (rows wrapping into the next, as ops/nn/_kernels.py's
 * wide layout reads them), with Wp = W + pl + pr = rs. Parts: planes (n, c) [p0, p1).
 *
 * col2im: each plane zeroed, then every tap (i, j) in order added where it read (o = o + v):
 * the NumPy path's order (zeros, then one add per tap), bit for bit; the wide layout's
 * throw-away columns are skipped (the NumPy path adds them as +0 onto other pixels). */
KI Py_ssize_t k_lo(Py_ssize_t off, Py_ssize_t s)  /* least o >= 0 with o s + off >= 0 */
{
    return off >= 0 ? 0 : (-off + s - 1) / s;
}

KI Py_ssize_t k_hi(Py_ssize_t off, Py_ssize_t s, Py_ssize_t n, Py_ssize_t lim)
{   /* least o >= 0 with o s + off >= n, at most lim */
    if (n - off <= 0)
        return 0;
    Py_ssize_t o = (n - off + s - 1) / s;
    return o < lim ? o : lim;
}

typedef struct {
    Py_ssize_t N, C, H, W, kh, kw, sh, sw, pt, pl, dh, dw, OH, OW, sn, st, rs, cs, wide, Wp;
    int acc;  /* col2im: add onto the image rather than zeroing it first */
} conv_geom;

#define IM2COL(T)                                                                                  \
CLONES static void im2col_##T(const T *RESTRICT x, T *RESTRICT cols, const conv_geom *g,           \
                              Py_ssize_t p0, Py_ssize_t p1)                                        \
{                                                                                                  \
    const Py_ssize_t H = g->H, W = g->W, OH = g->OH, OW = g->OW;                                   \
    for (Py_ssize_t p = p0; p < p1; p++) {                                                         \
        Py_ssize_t n = p / g->C, c = p % g->C;                                                     \
        const T *RESTRICT xp = x + p * H * W;                                                      \
        for (Py_ssize_t i = 0; i < g->kh; i++)                                                     \
            for (Py_ssize_t j = 0; j < g->kw; j++) {                                               \
                T *RESTRICT d = cols + n * g->sn + ((c * g->kh + i) * g->kw + j) * g->st;          \
                if (g->wide) {  /* one flat run of the padded image, row by padded row */          \
                    Py_ssize_t q = i * g->dh * g->Wp + j * g->dw, left = g->rs * OH;               \
                    while (left > 0) {                                                             \
                        Py_ssize_t r = q / g->Wp, col = q % g->Wp;                                 \
                        Py_ssize_t k = g->Wp - col < left ? g->Wp - col : left;                    \
                        Py_ssize_t h = r - g->pt, a = g->pl - col, z = g->pl + W - col;            \
                        if (h < 0 || h >= H)                                                       \
                            a = z = k;                                                             \
                        a = a < 0 ? 0 : a > k ? k : a;                                             \
                        z = z < a ? a : z > k ? k : z;                                             \
                        const T *RESTRICT xr = xp + h * W + col - g->pl;                           \
                        for (Py_ssize_t t = 0; t < a; t++)                                         \
                            d[t] = (T)0;                                                           \
                        for (Py_ssize_t t = a; t < z; t++)                                         \
                            d[t] = xr[t];                                                          \
                        for (Py_ssize_t t = z; t < k; t++)                                         \
                            d[t] = (T)0;                                                           \
                        d += k;                                                                    \
                        q += k;                                                                    \
                        left -= k;                                                                 \
                    }                                                                              \
                    continue;                                                                      \
                }                                                                                  \
                Py_ssize_t ho = i * g->dh - g->pt, wo = j * g->dw - g->pl;                         \
                Py_ssize_t w0 = k_lo(wo, g->sw), w1 = k_hi(wo, g->sw, W, OW);                      \
                w0 = w0 < OW ? w0 : OW;                                                            \
                if (w1 < w0)                                                                       \
                    w1 = w0;                                                                       \
                for (Py_ssize_t oh = 0; oh < OH; oh++) {                                           \
                    T *RESTRICT dr = d + oh * g->rs;                                               \
                    Py_ssize_t h = oh * g->sh + ho;                                                \
                    if (h < 0 || h >= H) {                                                         \
                        for (Py_ssize_t ow = 0; ow < OW; ow++)                                     \
                            dr[ow * g->cs] = (T)0;                                                 \
                        continue;                                                                  \
                    }                                                                              \
                    const T *RESTRICT xr = xp + h * W + wo;                                        \
                    if (g->cs == 1) {                                                              \
                        for (Py_ssize_t ow = 0; ow < w0; ow++)                                     \
                            dr[ow] = (T)0;                                                         \
                        if (g->sw == 1)                                                            \
                            for (Py_ssize_t ow = w0; ow < w1; ow++)                                \
                                dr[ow] = xr[ow];                                                   \
                        else if (g->sw == 2)  /* (a constant stride: vector loads and shuffles) */ \
                            for (Py_ssize_t ow = w0; ow < w1; ow++)                                \
                                dr[ow] = xr[2 * ow];                                               \
                        else                                                                       \
                            for (Py_ssize_t ow = w0; ow < w1; ow++)                                \
                                dr[ow] = xr[ow * g->sw];                                           \
                        for (Py_ssize_t ow = w1; ow < OW; ow++)                                    \
                            dr[ow] = (T)0;                                                         \
                    }                                                                              \
                    else {                                                                         \
                        for (Py_ssize_t ow = 0; ow < w0; ow++)                                     \
                            dr[ow * g->cs] = (T)0;                                                 \
                        for (Py_ssize_t ow = w0; ow < w1; ow++)                                    \
                            dr[ow * g->cs] = xr[ow * g->sw];                                       \
                        for (Py_ssize_t ow = w1; ow < OW; ow++)                                    \
                            dr[ow * g->cs] = (T)0;                                                 \
                    }                                                                              \
                }                                                                                  \
            }                                                                                      \
    }                                                                                              \
}                                                                                                  \
                                                                                                   \
CLONES static void col2im_##T(const T *RESTRICT cols, T *RESTRICT x, const conv_geom *g,           \
                              Py_ssize_t p0, Py_ssize_t p1)                                        \
{                                                                                                  \
    const Py_ssize_t H = g->H, W = g->W, OH = g->OH, OW = g->OW;                                   \
    for (Py_ssize_t p = p0; p < p1; p++) {                                                         \
        Py_ssize_t n = p / g->C, c = p % g->C;                                                     \
        T *RESTRICT xp = x + p * H * W;                                                            \
        if (!g->acc)                                                                               \
            for (Py_ssize_t e = 0; e < H * W; e++)                                                 \
                xp[e] = (T)0;                                                                      \
        for (Py_ssize_t i = 0; i < g->kh; i++) {                                                   \
            Py_ssize_t ho = i * g->dh - g->pt;                                                     \
            Py_ssize_t h0 = k_lo(ho, g->sh), h1 = k_hi(ho, g->sh, H, OH);                          \
            for (Py_ssize_t j = 0; j < g->kw; j++) {                                               \
                const T *RESTRICT s = cols + n * g->sn + ((c * g->kh + i) * g->kw + j) * g->st;   \
                Py_ssize_t wo = j * g->dw - g->pl;                                                 \
                Py_ssize_t w0 = k_lo(wo, g->sw), w1 = k_hi(wo, g->sw, W, OW);                      \
                for (Py_ssize_t oh = h0; oh < h1; oh++) {                                          \
                    const T *RESTRICT sr = s + oh * g->rs;                                         \
                    T *RESTRICT xr = xp + (oh * g->sh + ho) * W + wo;                              \
                    if (g->sw == 1 && g->cs == 1)                                                  \
                        for (Py_ssize_t ow = w0; ow < w1; ow++)                                    \
                            xr[ow] = xr[ow] + sr[ow];                                              \
                    else                                                                           \
                        for (Py_ssize_t ow = w0; ow < w1; ow++)                                    \
                            xr[ow * g->sw] = xr[ow * g->sw] + sr[ow * g->cs];                      \
                }                                                                                  \
            }                                                                                      \
        }                                                                                          \
    }                                                                                              \
}
IM2COL(float)
IM2COL(double)

/* The batch-inner layout's transposes and col2im (ops/nn/_kernels.py's module doc): an
 * (N, C, H, W) image and a (C, Hp, Wp, N) buffer whose window at (pt, pl) holds it.
 * to_batch_inner: the buffer from the image, its border zeroed; from_batch_inner: the image
 * from the buffer's window (copies: the values, bit for bit). col2im_batch_inner: the image
 * that sums batch-inner columns (C, kh, kw, OH, OW, N) back where they were read, each pixel's
 * taps added in (i, j) order from zero (the NumPy path's zeros and one add per tap, taps in
 * the padding dropped), summed in a (H, W, N) tile per channel, then transposed into place;
 * im2col_batch_inner: those columns from the image (the padding read as zeros), the values of
 * the NumPy path's strided copy of the padded buffer. Parts: channels [c0, c1). */
#define BATCH_INNER(T)                                                                             \
CLONES static void to_batch_inner_##T(const T *RESTRICT x, T *RESTRICT buf, const conv_geom *g,    \
                                      Py_ssize_t c0, Py_ssize_t c1)                                \
{                                                                                                  \
    const Py_ssize_t N = g->N, C = g->C, H = g->H, W = g->W, Hp = g->OH, Wp = g->OW;               \
    for (Py_ssize_t c = c0; c < c1; c++) {                                                         \
        T *RESTRICT b = buf + c * Hp * Wp * N;                                                     \
        for (Py_ssize_t hp = 0; hp < Hp; hp++) {                                                   \
            T *RESTRICT br = b + hp * Wp * N;                                                      \
            if (hp < g->pt || hp >= g->pt + H) {                                                   \
                for (Py_ssize_t e = 0; e < Wp * N; e++)                                            \
                    br[e] = (T)0;                                                                  \
                continue;                                                                          \
            }                                                                                      \
            for (Py_ssize_t e = 0; e < g->pl * N; e++)                                             \
                br[e] = (T)0;                                                                      \
            for (Py_ssize_t e = (g->pl + W) * N; e < Wp * N; e++)                                  \
                br[e] = (T)0;                                                                      \
        }                                                                                          \
        for (Py_ssize_t h = 0; h < H; h++) {                                                       \
            T *RESTRICT d = b + ((h + g->pt) * Wp + g->pl) * N;                                    \
            const T *RESTRICT xr = x + (c * H + h) * W;                                            \
            for (Py_ssize_t n0 = 0; n0 < N; n0 += 8) {  /* blocks of 8 images: 8-value runs */  \
                Py_ssize_t nb = N - n0 < 8 ? N - n0 : 8;                                           \
                const T *RESTRICT xs = xr + n0 * C * H * W;                                        \
                for (Py_ssize_t w = 0; w < W; w++)                                                 \
                    for (Py_ssize_t t = 0; t < nb; t++)                                            \
                        d[w * N + n0 + t] = xs[t * C * H * W + w];                                 \
            }                                                                                      \
        }                                                                                          \
    }                                                                                              \
}                                                                                                  \
                                                                                                   \
CLONES static void from_batch_inner_##T(const T *RESTRICT buf, T *RESTRICT x, const conv_geom *g,  \
                                        Py_ssize_t c0, Py_ssize_t c1)                              \
{   /* (each image's plane written in one run, read N apart from the channel's buffer) */         \
    const Py_ssize_t N = g->N, C = g->C, H = g->H, W = g->W, Hp = g->OH, Wp = g->OW;               \
    for (Py_ssize_t c = c0; c < c1; c++) {                                                         \
        const T *RESTRICT s = buf + (c * Hp * Wp + g->pt * Wp + g->pl) * N;                        \
        for (Py_ssize_t n = 0; n < N; n++) {                                                       \
            T *RESTRICT xd = x + (n * C + c) * H * W;                                              \
            for (Py_ssize_t h = 0; h < H; h++)                                                     \
                for (Py_ssize_t w = 0; w < W; w++)                                                 \
                    xd[h * W + w] = s[(h * Wp + w) * N + n];                                       \
        }                                                                                          \
    }                                                                                              \
}                                                                                                  \
                                                                                                   \
CLONES static void im2col_batch_inner_##T(const T *RESTRICT x, T *RESTRICT cols, T *RESTRICT tile, \
                                          const conv_geom *g, Py_ssize_t c0, Py_ssize_t c1)        \
{   /* each channel's windows' span as a zero-bordered (Ht, Wt, N) tile in cache, then each tap's \
     * windows copied out as runs of N (OW N at stride 1) */                                     \
    const Py_ssize_t N = g->N, C = g->C, H = g->H, W = g->W, OH = g->OH, OW = g->OW;               \
    const Py_ssize_t Ht = (OH - 1) * g->sh + (g->kh - 1) * g->dh + 1;                              \
    const Py_ssize_t Wt = (OW - 1) * g->sw + (g->kw - 1) * g->dw + 1;                              \
    for (Py_ssize_t c = c0; c < c1; c++) {                                                         \
        for (Py_ssize_t ht = 0; ht < Ht; ht++) {                                                   \
            T *RESTRICT tr = tile + ht * Wt * N;                                                   \
            Py_ssize_t h = ht - g->pt;                                                             \
            Py_ssize_t a = g->pl < Wt ? g->pl : Wt, z = g->pl + W < Wt ? g->pl + W : Wt;           \
            if (h < 0 || h >= H)                                                                   \
                a = z = Wt;                                                                        \
            for (Py_ssize_t e = 0; e < a * N; e++)                                                 \
                tr[e] = (T)0;                                                                      \
            for (Py_ssize_t e = z * N; e < Wt * N; e++)                                            \
                tr[e] = (T)0;                                                                      \
            if (a >= z)                                                                            \
                continue;                                                                          \
            const T *RESTRICT xr = x + (c * H + h) * W + (a - g->pl);                              \
            for (Py_ssize_t n0 = 0; n0 < N; n0 += 8) {                                             \
                Py_ssize_t nb = N - n0 < 8 ? N - n0 : 8;                                           \
                const T *RESTRICT xs = xr + n0 * C * H * W;                                        \
                for (Py_ssize_t w = 0; w < z - a; w++)                                             \
                    for (Py_ssize_t t = 0; t < nb; t++)                                            \
                        tr[(a + w) * N + n0 + t] = xs[t * C * H * W + w];                          \
            }                                                                                      \
        }                                                                                          \
        for (Py_ssize_t i = 0; i < g->kh; i++)                                                     \
            for (Py_ssize_t j = 0; j < g->kw; j++) {                                               \
                T *RESTRICT d = cols + ((c * g->kh + i) * g->kw + j) * OH * OW * N;                \
                for (Py_ssize_t oh = 0; oh < OH; oh++) {                                           \
                    const T *RESTRICT src = tile + ((oh * g->sh + i * g->dh) * Wt + j * g->dw) * N;\
                    T *RESTRICT dr = d + oh * OW * N;                                              \
                    if (g->sw == 1)                                                                \
                        memcpy(dr, src, (size_t)(OW * N) * sizeof(T));                             \
                    else                                                                           \
                        for (Py_ssize_t ow = 0; ow < OW; ow++)                                     \
                            memcpy(dr + ow * N, src + ow * g->sw * N, (size_t)N * sizeof(T));      \
                }                                                                                  \
            }                                                                                      \
    }                                                                                              \
}                                                                                                  \
                                                                                                   \
CLONES static void col2im_batch_inner_##T(const T *RESTRICT cols, T *RESTRICT x, T *RESTRICT tile, \
                                          const conv_geom *g, Py_ssize_t c0, Py_ssize_t c1)        \
{                                                                                                  \
    const Py_ssize_t N = g->N, C = g->C, H = g->H, W = g->W, OH = g->OH, OW = g->OW;               \
    for (Py_ssize_t c = c0; c < c1; c++) {                                                         \
        for (Py_ssize_t e = 0; e < H * W * N; e++)                                                 \
            tile[e] = (T)0;                                                                        \
        for (Py_ssize_t i = 0; i < g->kh; i++) {                                                   \
            Py_ssize_t ho = i * g->dh - g->pt;                                                     \
            Py_ssize_t h0 = k_lo(ho, g->sh), h1 = k_hi(ho, g->sh, H, OH);                          \
            for (Py_ssize_t j = 0; j < g->kw; j++) {                                               \
                const T *RESTRICT s = cols + ((c * g->kh + i) * g->kw + j) * OH * OW * N;          \
                Py_ssize_t wo = j * g->dw - g->pl;                                                 \
                Py_ssize_t w0 = k_lo(wo, g->sw), w1 = k_hi(wo, g->sw, W, OW);                      \
                for (Py_ssize_t oh = h0; oh < h1; oh++)                                            \
                    for (Py_ssize_t ow = w0; ow < w1; ow++) {                                      \
                        const T *RESTRICT sv = s + (oh * OW + ow) * N;                             \
                        T *RESTRICT tv = tile + ((oh * g->sh + ho) * W + ow * g->sw + wo) * N;     \
                        for (Py_ssize_t n = 0; n < N; n++)                                         \
                            tv[n] = tv[n] + sv[n];                                                 \
                    }                                                                              \
            }                                                                                      \
        }                                                                                          \
        for (Py_ssize_t n = 0; n < N; n++) {                                                       \
            T *RESTRICT xd = x + (n * C + c) * H * W;                                              \
            for (Py_ssize_t e = 0; e < H * W; e++)                                                 \
                xd[e] = tile[e * N + n];                                                           \
        }                                                                                          \
    }                                                                                              \
}
BATCH_INNER(float)
BATCH_INNER(double)

/* conv_direct: a convolution with few taps per output (K = C kh kw, one group, column stride 1)
 * without columns: y[n, o, oh, ow] = b[o] + sum over taps t = (c, i, j) in order of
 * w[o, t] x[n, c, oh sh + i dh - pt, ow + j dw - pl] (the padding zeros), each sum one fma per
 * tap from the bias (fmaf / fma: the same bits in every variant). Each image is first copied
 * into a zero-bordered scratch plane set (C, Hq, Wq), Wq rounded so a tile's vector rows never
 * leave it; a tile is CD_OB output channels x NV vectors of CD_VB pixels of one output row, its
 * accumulators in registers across the K taps (wt: the weight packed (O / CD_OB blocks, K, CD_OB)
 * and zero-padded, bp the bias zero-padded). Cloned for x86-64-v3 and the baseline only
 * (CLONES_FMA256): GCC 12's AVX-512F code for these register tiles vectorises the tap loop with
 * gathers instead and ran 2-4x slower on AMD EPYC family 25 (whose AVX-512 is 256 bits wide
 * inside). Parts: images [n0, n1). */
#if HAVE_CLONES && defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 12
#define CLONES_FMA256 __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define CLONES_FMA256 CLONES_FMA
#endif
#define CD_OB 3
#define CD_VB 8

#define CONV_DIRECT_TILE(T, FMA, NV)                                                               \
KI void cd_tile_##T##NV(const T *RESTRICT xr, const Py_ssize_t *RESTRICT off,                      \
                        const T *RESTRICT wt, Py_ssize_t K, const T *RESTRICT bo,                  \
                        T *RESTRICT out, Py_ssize_t ostride, Py_ssize_t nvalid, Py_ssize_t nout)   \
{                                                                                                  \
    T a[CD_OB][NV * CD_VB];                                                                        \
    _Pragma("GCC unroll 8") for (int o = 0; o < CD_OB; o++)                                        \
        _Pragma("GCC unroll 32") for (int v = 0; v < NV * CD_VB; v++)                              \
            a[o][v] = bo[o];                                                                       \
    for (Py_ssize_t t = 0; t < K; t++) {                                                           \
        const T *RESTRICT xs = xr + off[t];                                                        \
        const T *RESTRICT wk = wt + t * CD_OB;                                                     \
        T xv[NV * CD_VB];                                                                          \
        _Pragma("GCC unroll 32") for (int v = 0; v < NV * CD_VB; v++)                              \
            xv[v] = xs[v];                                                                         \
        _Pragma("GCC unroll 8") for (int o = 0; o < CD_OB; o++) {                                  \
            T wv = wk[o];                                                                          \
            _Pragma("GCC unroll 32") for (int v = 0; v < NV * CD_VB; v++)                          \
                a[o][v] = FMA(wv, xv[v], a[o][v]);                                                 \
        }                                                                                          \
    }                                                                                              \
    for (Py_ssize_t o = 0; o < nout; o++)                                                          \
        for (Py_ssize_t v = 0; v < nvalid; v++)                                                    \
            out[o * ostride + v] = a[o][v];                                                        \
}

#define CONV_DIRECT(T, FMA)                                                                        \
CONV_DIRECT_TILE(T, FMA, 1)                                                                        \
CONV_DIRECT_TILE(T, FMA, 3)                                                                        \
CLONES_FMA256 static void conv_direct_##T(const T *RESTRICT x, const T *RESTRICT wt,               \
                                          const T *RESTRICT bp, T *RESTRICT y, T *RESTRICT pad,    \
                                          const Py_ssize_t *RESTRICT off, const conv_geom *g,      \
                                          Py_ssize_t O, Py_ssize_t Hq, Py_ssize_t Wq,              \
                                          Py_ssize_t n0, Py_ssize_t n1)                            \
{                                                                                                  \
    const Py_ssize_t C = g->C, H = g->H, W = g->W, OH = g->OH, OW = g->OW;                         \
    const Py_ssize_t K = C * g->kh * g->kw, Ob = (O + CD_OB - 1) / CD_OB;                          \
    memset(pad, 0, sizeof(T) * (size_t)(C * Hq * Wq));                                             \
    for (Py_ssize_t n = n0; n < n1; n++) {                                                         \
        for (Py_ssize_t c = 0; c < C; c++)                                                         \
            for (Py_ssize_t r = 0; r < Hq; r++) {                                                  \
                Py_ssize_t h = r - g->pt;                                                          \
                if (h < 0 || h >= H)                                                               \
                    continue;  /* (a border row: zero from the memset, never written) */           \
                T *RESTRICT d = pad + (c * Hq + r) * Wq;                                           \
                const T *RESTRICT s = x + ((n * C + c) * H + h) * W;                               \
                Py_ssize_t a = g->pl < Wq ? g->pl : Wq, z = g->pl + W < Wq ? g->pl + W : Wq;       \
                for (Py_ssize_t q = 0; q < a; q++)                                                 \
                    d[q] = (T)0;                                                                   \
                for (Py_ssize_t q = a; q < z; q++)                                                 \
                    d[q] = s[q - g->pl];                                                           \
                for (Py_ssize_t q = z; q < Wq; q++)                                                \
                    d[q] = (T)0;                                                                   \
            }                                                                                      \
        T *RESTRICT yn = y + n * O * OH * OW;                                                      \
        for (Py_ssize_t oh = 0; oh < OH; oh++) {                                                   \
            const T *RESTRICT xr = pad + oh * g->sh * Wq;                                          \
            for (Py_ssize_t ob = 0; ob < Ob; ob++) {                                               \
                Py_ssize_t no = O - ob * CD_OB < CD_OB ? O - ob * CD_OB : CD_OB;                   \
                T *RESTRICT yo = yn + (ob * CD_OB * OH + oh) * OW;                                 \
                const T *RESTRICT wb = wt + ob * K * CD_OB, *RESTRICT bo = bp + ob * CD_OB;        \
                Py_ssize_t ow = 0;                                                                 \
                for (; ow + 3 * CD_VB <= OW; ow += 3 * CD_VB)                                      \
                    cd_tile_##T##3(xr + ow, off, wb, K, bo, yo + ow, OH * OW, 3 * CD_VB, no);      \
                for (; ow < OW; ow += CD_VB)                                                       \
                    cd_tile_##T##1(xr + ow, off, wb, K, bo, yo + ow, OH * OW,                      \
                                   OW - ow < CD_VB ? OW - ow : CD_VB, no);                         \
            }                                                                                      \
        }                                                                                          \
    }                                                                                              \
}
CONV_DIRECT(float, fmaf)
CONV_DIRECT(double, fma)

/* Max pooling over planes (n, c) of an (N, C, H, W) image: each window's maximum and the flat
 * index h W + w of the element it came from, PyTorch's CPU rule: a tap (i, j), in order, wins
 * when greater than the running maximum or NaN (ties keep the first; NaN propagates and reports
 * the last NaN); the running maximum starts at -inf and the index at the window's first element
 * inside the image, which a window of only -inf (or padding) reports. Taps in the padding are
 * skipped (the NumPy path reads them as -inf, which never wins). Parts: planes [p0, p1).
 * max_pool_backward: each plane's gradient from its outputs', in output order: assigned where no
 * two windows overlap (``unique``), else summed in float64 and rounded once (NumPy's bincount
 * and astype, bit for bit). */
typedef struct {
    Py_ssize_t H, W, kh, kw, sh, sw, pt, pl, dh, dw, OH, OW;
    int unique;
} pool_geom;

KI Py_ssize_t k_first_valid(Py_ssize_t start, Py_ssize_t d, Py_ssize_t n)
{   /* the first position start + k d inside [0, n), clipped into it (as the NumPy path's) */
    Py_ssize_t f = start < 0 ? start + ((-start + d - 1) / d) * d : start;
    return f > n - 1 ? n - 1 : f < 0 ? 0 : f;
}

/* Pooling's loops run over output rows, often shorter than an AVX-512 vector (12 windows of a
 * 24-pixel row): their clones stop at AVX2, whose 8 lanes fit such rows (AVX-512's clone ran
 * the CNN's pool 5x slower, its whole rows left to the scalar remainder). */
#if HAVE_CLONES
#define CLONES_POOL __attribute__((target_clones("avx2", "default")))
#else
#define CLONES_POOL
#endif

/* a plane of 2 x 2 windows at stride 2, every tap inside (the common MaxPool2d(2)): the rule
 * below on the four taps in order, in one pass, the selects on the bits (branch-free, as the
 * scalar remainder runs too); code (OH OW): the winning tap (0 for none: the corner) */
#define MAX_POOL_PAIR(T, U)                                                                        \
KI U bits_##T(T v)                                                                                 \
{                                                                                                  \
    U u;                                                                                           \
    memcpy(&u, &v, sizeof u);                                                                      \
    return u;                                                                                      \
}                                                                                                  \
                                                                                                   \
KI T of_bits_##T(U u)                                                                              \
{                                                                                                  \
    T v;                                                                                           \
    memcpy(&v, &u, sizeof v);                                                                      \
    return v;                                                                                      \
}                                                                                                  \
                                                                                                   \
KI void max_pool_pair_##T(const T *RESTRICT x, T *RESTRICT y, int32_t *RESTRICT code,              \
                          Py_ssize_t W, Py_ssize_t OH, Py_ssize_t OW)                              \
{                                                                                                  \
    for (Py_ssize_t oh = 0; oh < OH; oh++) {                                                       \
        const T *RESTRICT x0 = x + 2 * oh * W, *RESTRICT x1 = x0 + W;                              \
        T *RESTRICT yr = y + oh * OW;                                                              \
        int32_t *RESTRICT cr = code + oh * OW;                                                     \
        for (Py_ssize_t ow = 0; ow < OW; ow++) {                                                   \
            T a = x0[2 * ow], b = x0[2 * ow + 1], c = x1[2 * ow], d = x1[2 * ow + 1];              \
            U m = bits_##T(a), k = 0, w;                                                           \
            w = -(U)((b > of_bits_##T(m)) | (b != b));                                             \
            m = (bits_##T(b) & w) | (m & ~w);                                                      \
            k = ((U)1 & w) | (k & ~w);                                                             \
            w = -(U)((c > of_bits_##T(m)) | (c != c));                                             \
            m = (bits_##T(c) & w) | (m & ~w);                                                      \
            k = ((U)2 & w) | (k & ~w);                                                             \
            w = -(U)((d > of_bits_##T(m)) | (d != d));                                             \
            m = (bits_##T(d) & w) | (m & ~w);                                                      \
            k = ((U)3 & w) | (k & ~w);                                                             \
            yr[ow] = of_bits_##T(m);                                                               \
            cr[ow] = (int32_t)k;                                                                   \
        }                                                                                          \
    }                                                                                              \
}
MAX_POOL_PAIR(float, uint32_t)
MAX_POOL_PAIR(double, uint64_t)

#define MAX_POOL(T, U)                                                                             \
CLONES_POOL static void max_pool_##T(const T *RESTRICT x, T *RESTRICT y,                         \
                                     int64_t *RESTRICT idx, int32_t *RESTRICT code,                \
                                     int64_t *RESTRICT offs,                                       \
                                     const pool_geom *g, Py_ssize_t p0, Py_ssize_t p1)             \
{   /* code[ow]: the winning tap's number i kw + j of the row's windows, -1 for none yet; offs[k]: \
     * tap k's offset from the window's corner, i dh W + j dw */                                   \
    const Py_ssize_t H = g->H, W = g->W, OH = g->OH, OW = g->OW, sw = g->sw;                       \
    for (Py_ssize_t i = 0; i < g->kh; i++)                                                         \
        for (Py_ssize_t j = 0; j < g->kw; j++)                                                     \
            offs[i * g->kw + j] = (int64_t)(i * g->dh * W + j * g->dw);                            \
    const int pair = g->kh == 2 && g->kw == 2 && g->sh == 2 && sw == 2 && g->dh == 1             \
                     && g->dw == 1 && g->pt == 0 && g->pl == 0 && 2 * OH <= H && 2 * OW <= W;      \
    for (Py_ssize_t p = p0; p < p1; p++) {                                                         \
        const T *RESTRICT xp = x + p * H * W;                                                      \
        if (pair) {  /* code: the plane's (OH OW) */                                               \
            max_pool_pair_##T(xp, y + p * OH * OW, code, W, OH, OW);                               \
            if (idx) {                                                                             \
                int64_t *RESTRICT ip = idx + p * OH * OW;                                          \
                for (Py_ssize_t oh = 0; oh < OH; oh++)                                             \
                    for (Py_ssize_t ow = 0; ow < OW; ow++) {                                       \
                        int64_t k = code[oh * OW + ow];                                            \
                        ip[oh * OW + ow] = (2 * oh + (k >> 1)) * W + 2 * ow + (k & 1);             \
                    }                                                                              \
            }                                                                                      \
            continue;                                                                              \
        }                                                                                          \
        for (Py_ssize_t oh = 0; oh < OH; oh++) {                                                   \
            T *RESTRICT yr = y + (p * OH + oh) * OW;                                               \
            Py_ssize_t hs = oh * g->sh - g->pt;                                                    \
            Py_ssize_t i0 = k_lo(hs, g->dh), i1 = k_hi(hs, g->dh, H, g->kh);                       \
            for (Py_ssize_t ow = 0; ow < OW; ow++)                                                 \
                yr[ow] = (T)-INFINITY;                                                             \
            for (Py_ssize_t ow = 0; ow < OW; ow++)                                                 \
                code[ow] = -1;                                                                     \
            for (Py_ssize_t i = i0; i < i1; i++) {                                                 \
                const T *RESTRICT xh = xp + (hs + i * g->dh) * W;                                  \
                for (Py_ssize_t j = 0; j < g->kw; j++) {                                           \
                    Py_ssize_t wo = j * g->dw - g->pl;                                             \
                    Py_ssize_t w0 = k_lo(wo, sw), w1 = k_hi(wo, sw, W, OW);                        \
                    const T *RESTRICT xr = xh + wo;                                                \
                    int32_t k = (int32_t)(i * g->kw + j);                                          \
                    for (Py_ssize_t ow = w0; ow < w1; ow++) {  /* (selects on the bits) */        \
                        T v = xr[ow * sw], c = yr[ow];                                             \
                        int win = (v > c) | (v != v);                                              \
                        U m = -(U)win;                                                             \
                        int32_t m32 = -(int32_t)win;                                               \
                        yr[ow] = of_bits_##T((bits_##T(v) & m) | (bits_##T(c) & ~m));             \
                        code[ow] = (k & m32) | (code[ow] & ~m32);                                  \
                    }                                                                              \
                }                                                                                  \
            }                                                                                      \
            if (!idx)                                                                              \
                continue;                                                                          \
            int64_t *RESTRICT ir = idx + (p * OH + oh) * OW;                                       \
            int64_t first = (int64_t)k_first_valid(hs, g->dh, H) * W, at = hs * W - g->pl;         \
            for (Py_ssize_t ow = 0; ow < OW; ow++) {                                               \
                int32_t k = code[ow];                                                              \
                ir[ow] = k < 0 ? first + k_first_valid(ow * sw - g->pl, g->dw, W)                  \
                               : at + ow * sw + offs[k];                                           \
            }                                                                                      \
        }                                                                                          \
    }                                                                                              \
}                                                                                                  \
                                                                                                   \
CLONES static void max_pool_backward_##T(const T *RESTRICT gy, const int64_t *RESTRICT idx,        \
                                         T *RESTRICT gx, double *RESTRICT acc, Py_ssize_t n,       \
                                         Py_ssize_t m, int unique, Py_ssize_t p0, Py_ssize_t p1)   \
{                                                                                                  \
    for (Py_ssize_t p = p0; p < p1; p++) {                                                         \
        const T *RESTRICT gr = gy + p * m;                                                         \
        const int64_t *RESTRICT ir = idx + p * m;                                                  \
        T *RESTRICT o = gx + p * n;                                                                \
        if (unique) {                                                                              \
            for (Py_ssize_t e = 0; e < n; e++)                                                     \
                o[e] = (T)0;                                                                       \
            for (Py_ssize_t k = 0; k < m; k++)                                                     \
                o[ir[k]] = gr[k];                                                                  \
            continue;                                                                              \
        }                                                                                          \
        for (Py_ssize_t e = 0; e < n; e++)                                                         \
            acc[e] = 0.0;                                                                          \
        for (Py_ssize_t k = 0; k < m; k++)                                                         \
            acc[ir[k]] = acc[ir[k]] + (double)gr[k];                                               \
        for (Py_ssize_t e = 0; e < n; e++)                                                         \
            o[e] = (T)acc[e];                                                                      \
    }                                                                                              \
}
MAX_POOL(float, uint32_t)
MAX_POOL(double, uint64_t)

/* col2im from row-major columns: rows (N, OH, OW, kh, kw, C) (a row per window, its taps (i, j,
 * c), as ops/nn/_kernels.py's ``_rows`` builds them) summed back into the (N, C, H, W) image:
 * each pixel from zero, its taps added in (i, j) order (the NumPy path's one add per tap onto
 * an NHWC image), a row of the image at a time in ``acc`` (W C values). Parts: image rows
 * (n, h) [r0, r1). */
#define COL2IM_ROWS(T)                                                                             \
CLONES static void col2im_rows_##T(const T *RESTRICT rows, T *RESTRICT x, T *RESTRICT acc,         \
                                   const conv_geom *g, Py_ssize_t r0, Py_ssize_t r1)               \
{                                                                                                  \
    const Py_ssize_t C = g->C, H = g->H, W = g->W, OH = g->OH, OW = g->OW, sw = g->sw;             \
    const Py_ssize_t K = g->kh * g->kw * C;                                                        \
    for (Py_ssize_t r = r0; r < r1; r++) {                                                         \
        Py_ssize_t n = r / H, h = r % H;                                                           \
        for (Py_ssize_t e = 0; e < W * C; e++)                                                     \
            acc[e] = (T)0;                                                                         \
        for (Py_ssize_t i = 0; i < g->kh; i++) {                                                   \
            Py_ssize_t t = h + g->pt - i * g->dh;                                                  \
            if (t < 0 || t % g->sh)                                                                \
                continue;                                                                          \
            Py_ssize_t oh = t / g->sh;                                                             \
            if (oh >= OH)                                                                          \
                continue;                                                                          \
            const T *RESTRICT src0 = rows + (n * OH + oh) * OW * K;                                \
            for (Py_ssize_t j = 0; j < g->kw; j++) {                                               \
                /* pixels w = ow sw + j dw - pl, ow in [0, OW), inside [0, W) */                   \
                Py_ssize_t wo = j * g->dw - g->pl;                                                 \
                Py_ssize_t o0 = k_lo(wo, sw), o1 = k_hi(wo, sw, W, OW);                            \
                const T *RESTRICT src = src0 + (i * g->kw + j) * C;                                \
                for (Py_ssize_t ow = o0; ow < o1; ow++) {                                          \
                    T *RESTRICT a = acc + (ow * sw + wo) * C;                                      \
                    const T *RESTRICT s = src + ow * K;                                            \
                    for (Py_ssize_t c = 0; c < C; c++)                                             \
                        a[c] = a[c] + s[c];                                                        \
                }                                                                                  \
            }                                                                                      \
        }                                                                                          \
        T *RESTRICT xr = x + n * C * H * W + h * W;                                                \
        for (Py_ssize_t c = 0; c < C; c++)                                                         \
            for (Py_ssize_t w = 0; w < W; w++)                                                     \
                xr[c * H * W + w] = acc[w * C + c];                                                \
    }                                                                                              \
}
COL2IM_ROWS(float)
COL2IM_ROWS(double)

/* im2row: an (N, C, H, W) image's windows as rows (N, OH, OW, kh, kw, C) (taps (i, j, c), the
 * padding as zeros: ops/nn/_kernels.py's ``_rows``), an image at a time through ``tile``, the
 * image transposed to (H, W, C) in cache, so each tap row copies kw C (dw 1) or C values. Parts:
 * images [n0, n1). */
#define IM2ROW(T)                                                                                  \
CLONES static void im2row_##T(const T *RESTRICT x, T *RESTRICT rows, T *RESTRICT tile,             \
                              const conv_geom *g, Py_ssize_t n0, Py_ssize_t n1)                    \
{                                                                                                  \
    const Py_ssize_t C = g->C, H = g->H, W = g->W, OH = g->OH, OW = g->OW, kw = g->kw;             \
    const Py_ssize_t K = g->kh * kw * C;                                                           \
    for (Py_ssize_t n = n0; n < n1; n++) {                                                         \
        const T *RESTRICT xn = x + n * C * H * W;                                                  \
        for (Py_ssize_t h = 0; h < H; h++)                                                         \
            for (Py_ssize_t w = 0; w < W; w++)                                                     \
                for (Py_ssize_t c = 0; c < C; c++)                                                 \
                    tile[(h * W + w) * C + c] = xn[(c * H + h) * W + w];                           \
        for (Py_ssize_t oh = 0; oh < OH; oh++)                                                     \
            for (Py_ssize_t ow = 0; ow < OW; ow++) {                                               \
                T *RESTRICT d = rows + ((n * OH + oh) * OW + ow) * K;                              \
                Py_ssize_t ws = ow * g->sw - g->pl;                                                \
                int inside = g->dw == 1 && ws >= 0 && ws + kw <= W;                                \
                for (Py_ssize_t i = 0; i < g->kh; i++, d += kw * C) {                              \
                    Py_ssize_t h = oh * g->sh - g->pt + i * g->dh;                                 \
                    if (h < 0 || h >= H) {                                                         \
                        for (Py_ssize_t e = 0; e < kw * C; e++)                                    \
                            d[e] = (T)0;                                                           \
                        continue;                                                                  \
                    }                                                                              \
                    const T *RESTRICT s = tile + h * W * C;                                        \
                    if (inside) {  /* one run of kw C values */                                    \
                        memcpy(d, s + ws * C, (size_t)(kw * C) * sizeof(T));                       \
                        continue;                                                                  \
                    }                                                                              \
                    for (Py_ssize_t j = 0; j < kw; j++) {                                          \
                        Py_ssize_t w = ws + j * g->dw;                                             \
                        if (w < 0 || w >= W)                                                       \
                            for (Py_ssize_t c = 0; c < C; c++)                                     \
                                d[j * C + c] = (T)0;                                               \
                        else                                                                       \
                            memcpy(d + j * C, s + w * C, (size_t)C * sizeof(T));                   \
                    }                                                                              \
                }                                                                                  \
            }                                                                                      \
    }                                                                                              \
}
IM2ROW(float)
IM2ROW(double)

/* ---------------------------------------------------------------------------------------------
 * Half-precision casts, as integer operations on the bits (branch-free selects, so they
 * vectorise), each equal bit for bit to what NumPy/ml_dtypes give:
 * float32 -> bfloat16: round to nearest even; NaN -> the quiet NaN 0x7fc0 with x's sign
 *   (ml_dtypes');
 * float32 -> float16: round to nearest even, overflow to inf, subnormals rounded once; NaN ->
 *   0x7c00 + the top 10 bits of its payload (at least 1), with x's sign (NumPy's);
 * bfloat16/float16 -> float32: exact (NaN payloads kept). */

KI uint16_t k_to_bf16(uint32_t u)
{
    uint32_t a = u & 0x7fffffffu;
    uint32_t r = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
    uint32_t nan = ((u >> 16) & 0x8000u) | 0x7fc0u;
    return (uint16_t)(a > 0x7f800000u ? nan : r);
}

KI uint16_t k_to_f16(uint32_t u)
{
    uint32_t sign = (u >> 16) & 0x8000u, a = u & 0x7fffffffu;
    /* normal results: rebias, round to nearest even on the 13 dropped bits */
    uint32_t n = (a + ((uint32_t)(15 - 127) << 23) + 0xfffu + ((a >> 13) & 1u)) >> 13;
    /* subnormal results (|x| < 2^-14): the float addition to 0.5 rounds the bits into place */
    float f, half = 0.5f;
    memcpy(&f, &a, 4);
    f = f + half;
    uint32_t fb;
    memcpy(&fb, &f, 4);
    uint32_t sub = fb - 0x3f000000u;
    uint32_t big = a > 0x7f800000u ? 0x7c00u + ((a & 0x7fffffu) >> 13) + ((a & 0x7fe000u) == 0)
                                   : 0x7c00u;  /* NaN (payload, at least 1) or inf */
    uint32_t o = a >= 0x477ff000u ? big : (a < 0x38800000u ? sub : n);
    return (uint16_t)(o | sign);
}

KI uint32_t k_from_f16(uint16_t h)
{
    uint32_t o = (uint32_t)(h & 0x7fffu) << 13, e = o & 0x0f800000u;
    uint32_t norm = o + ((uint32_t)(127 - 15) << 23);
    uint32_t inf = norm + ((uint32_t)(128 - 16) << 23);
    float f, magic;
    uint32_t mb = 113u << 23, t = norm + (1u << 23);
    memcpy(&f, &t, 4);
    memcpy(&magic, &mb, 4);
    f = f - magic;  /* zero and subnormals: exact */
    uint32_t sub;
    memcpy(&sub, &f, 4);
    uint32_t r = e == 0x0f800000u ? inf : (e == 0 ? sub : norm);
    return r | ((uint32_t)(h & 0x8000u) << 16);
}

CLONES static void cast_to_bf16(const void *xv, void *yv, Py_ssize_t i0, Py_ssize_t i1)
{
    const uint32_t *RESTRICT x = (const uint32_t *)xv;
    uint16_t *RESTRICT y = (uint16_t *)yv;
    for (Py_ssize_t i = i0; i < i1; i++)
        y[i] = k_to_bf16(x[i]);
}

CLONES static void cast_from_bf16(const void *xv, void *yv, Py_ssize_t i0, Py_ssize_t i1)
{
    const uint16_t *RESTRICT x = (const uint16_t *)xv;
    uint32_t *RESTRICT y = (uint32_t *)yv;
    for (Py_ssize_t i = i0; i < i1; i++)
        y[i] = (uint32_t)x[i] << 16;
}

CLONES static void cast_to_f16(const void *xv, void *yv, Py_ssize_t i0, Py_ssize_t i1)
{
    const uint32_t *RESTRICT x = (const uint32_t *)xv;
    uint16_t *RESTRICT y = (uint16_t *)yv;
    for (Py_ssize_t i = i0; i < i1; i++)
        y[i] = k_to_f16(x[i]);
}

/* float32 -> half and back in one pass: y the half bits (k_to_bf16/k_to_f16's), w their float32
 * values (the two-pass cast's, bit for bit); w may be x itself (the values rounded in place) */
CLONES static void cast_round_bf16(const void *xv, void *wv, void *yv, Py_ssize_t i0,
                                   Py_ssize_t i1)
{
    uint16_t *RESTRICT y = (uint16_t *)yv;
    if (wv == xv) {
        uint32_t *RESTRICT w = (uint32_t *)wv;
        for (Py_ssize_t i = i0; i < i1; i++) {
            uint16_t h = k_to_bf16(w[i]);
            y[i] = h;
            w[i] = (uint32_t)h << 16;
        }
        return;
    }
    const uint32_t *RESTRICT x = (const uint32_t *)xv;
    uint32_t *RESTRICT w = (uint32_t *)wv;
    for (Py_ssize_t i = i0; i < i1; i++) {
        uint16_t h = k_to_bf16(x[i]);
        y[i] = h;
        w[i] = (uint32_t)h << 16;
    }
}

CLONES static void cast_round_f16(const void *xv, void *wv, void *yv, Py_ssize_t i0,
                                  Py_ssize_t i1)
{
    uint16_t *RESTRICT y = (uint16_t *)yv;
    if (wv == xv) {
        uint32_t *RESTRICT w = (uint32_t *)wv;
        for (Py_ssize_t i = i0; i < i1; i++) {
            uint16_t h = k_to_f16(w[i]);
            y[i] = h;
            w[i] = k_from_f16(h);
        }
        return;
    }
    const uint32_t *RESTRICT x = (const uint32_t *)xv;
    uint32_t *RESTRICT w = (uint32_t *)wv;
    for (Py_ssize_t i = i0; i < i1; i++) {
        uint16_t h = k_to_f16(x[i]);
        y[i] = h;
        w[i] = k_from_f16(h);
    }
}

#if HAVE_CLONES
#include <immintrin.h>
/* cast_round_bf16 with AVX-512BW, the half bits stored past the caches (non-temporal: nothing
 * reads a rounded weight's or weight gradient's bfloat16 copy soon, and its lines need not be
 * read first); the same integer operations as k_to_bf16, 32 at a time */
__attribute__((target("avx512f,avx512bw"))) static void cast_round_bf16_nt(const void *xv,
        void *wv, void *yv, Py_ssize_t i0, Py_ssize_t i1)
{
    const uint32_t *x = (const uint32_t *)xv;
    uint32_t *w = (uint32_t *)wv;
    uint16_t *y = (uint16_t *)yv;
    Py_ssize_t i = i0;
    for (; i < i1 && ((uintptr_t)(y + i) & 63); i++) {
        uint16_t h = k_to_bf16(x[i]);
        y[i] = h;
        w[i] = (uint32_t)h << 16;
    }
    const __m512i one = _mm512_set1_epi32(1), bias = _mm512_set1_epi32(0x7fff);
    const __m512i abs = _mm512_set1_epi32(0x7fffffff), inf = _mm512_set1_epi32(0x7f800000);
    const __m512i sgn = _mm512_set1_epi32(0x8000), qnan = _mm512_set1_epi32(0x7fc0);
    for (; i + 32 <= i1; i += 32) {
        __m512i r2[2];
        for (int k = 0; k < 2; k++) {
            __m512i u = _mm512_loadu_si512((const void *)(x + i + 16 * k));
            __m512i hi = _mm512_srli_epi32(u, 16);
            __m512i r = _mm512_srli_epi32(
                _mm512_add_epi32(_mm512_add_epi32(u, bias), _mm512_and_si512(hi, one)), 16);
            __m512i nan = _mm512_or_si512(_mm512_and_si512(hi, sgn), qnan);
            __mmask16 m = _mm512_cmpgt_epu32_mask(_mm512_and_si512(u, abs), inf);
            r = _mm512_mask_blend_epi32(m, r, nan);
            _mm512_storeu_si512((void *)(w + i + 16 * k), _mm512_slli_epi32(r, 16));
            r2[k] = r;
        }
        __m512i packed = _mm512_inserti64x4(_mm512_castsi256_si512(_mm512_cvtepi32_epi16(r2[0])),
                                            _mm512_cvtepi32_epi16(r2[1]), 1);
        _mm512_stream_si512((void *)(y + i), packed);
    }
    _mm_sfence();
    for (; i < i1; i++) {
        uint16_t h = k_to_bf16(x[i]);
        y[i] = h;
        w[i] = (uint32_t)h << 16;
    }
}

/* float32 -> float16 by F16C's vcvtps2ph (round to nearest even, overflow to inf, subnormals
 * rounded once: k_to_f16's values), 8 at a time; a block with a NaN redone by k_to_f16, whose
 * NaNs keep NumPy's payload rule (vcvtps2ph quiets them). Chosen where the CPU has F16C. */
__attribute__((target("avx2,f16c"))) static void cast_to_f16_f16c(const void *xv, void *yv,
                                                                  Py_ssize_t i0, Py_ssize_t i1)
{
    const uint32_t *RESTRICT x = (const uint32_t *)xv;
    uint16_t *RESTRICT y = (uint16_t *)yv;
    Py_ssize_t i = i0;
    for (; i + 8 <= i1; i += 8) {
        __m256 v = _mm256_loadu_ps((const float *)(x + i));
        _mm_storeu_si128((__m128i *)(y + i), _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
        if (_mm256_movemask_ps(_mm256_cmp_ps(v, v, _CMP_UNORD_Q)))
            for (Py_ssize_t j = i; j < i + 8; j++)
                y[j] = k_to_f16(x[j]);
    }
    for (; i < i1; i++)
        y[i] = k_to_f16(x[i]);
}
#endif

CLONES static void cast_from_f16(const void *xv, void *yv, Py_ssize_t i0, Py_ssize_t i1)
{
    const uint16_t *RESTRICT x = (const uint16_t *)xv;
    uint32_t *RESTRICT y = (uint32_t *)yv;
    for (Py_ssize_t i = i0; i < i1; i++)
        y[i] = k_from_f16(x[i]);
}


/* ---------------------------------------------------------------------------------------------
 * Optimizer steps: the operations of ember/optim's NumPy paths in their order, each rounded to
 * T as NumPy rounds them (its Python-float scalars become T first), so the results are bit for
 * bit the NumPy path's. */

typedef struct {
    char kind;
    void *d, *m, *v, *w;  /* parameter, exp_avg, exp_avg_sq, max_exp_avg_sq | NULL */
    const void *g;
    double decay, b1, c1, c2, b2, bc2, eps, step;
    int nesterov, damp;    /* sgd */
} opt_ctx;

/* Adam/AdamW (optim/adam.py, _blocked_step): d *= decay; m = m b1 + g c1; v = v b2 + (g g) c2;
 * [w = max(w, v), v' = w]; d -= m / (sqrt(v') / bc2 + eps) * step */
#define ADAM_BODY(T, MAX)                                                                          \
    for (Py_ssize_t i = i0; i < i1; i++) {                                                         \
        T di = d[i] * decay;  /* (times 1 is exact: no test needed) */                            \
        T mi = m[i] * b1 + g[i] * c1;                                                              \
        T vi = v[i] * b2 + (g[i] * g[i]) * c2;                                                     \
        m[i] = mi;                                                                                 \
        v[i] = vi;                                                                                 \
        MAX;                                                                                       \
        T s = SQRT_##T(vi) / bc2 + eps;                                                            \
        d[i] = di - (mi / s) * step;                                                               \
    }
#define ADAM(T)                                                                                    \
CLONES static void adam_##T(opt_ctx *c, Py_ssize_t i0, Py_ssize_t i1)                              \
{                                                                                                  \
    T *RESTRICT d = (T *)c->d, *RESTRICT m = (T *)c->m, *RESTRICT v = (T *)c->v;                   \
    T *RESTRICT w = (T *)c->w;                                                                     \
    const T *RESTRICT g = (const T *)c->g;                                                         \
    const T decay = (T)c->decay, b1 = (T)c->b1, c1 = (T)c->c1, c2 = (T)c->c2, b2 = (T)c->b2;       \
    const T bc2 = (T)c->bc2, eps = (T)c->eps, step = (T)c->step;                                   \
    if (w) /* amsgrad: v' = np.maximum(w, v) (NaN wins) */                                         \
        ADAM_BODY(T, T wi = w[i]; vi = (wi > vi || wi != wi) ? wi : vi; w[i] = vi)                 \
    else                                                                                           \
        ADAM_BODY(T, (void)0)                                                                      \
}
#define SQRT_float sqrtf
#define SQRT_double sqrt
ADAM(float)
ADAM(double)

/* SGD with momentum (optim/sgd.py): b = b mom + g [* (1 - dampening)]; u = g + mom b (nesterov)
 * or b; d -= u lr */
#define SGD(T)                                                                                     \
CLONES static void sgd_##T(opt_ctx *c, Py_ssize_t i0, Py_ssize_t i1)                               \
{                                                                                                  \
    T *RESTRICT d = (T *)c->d, *RESTRICT b = (T *)c->m;                                            \
    const T *RESTRICT g = (const T *)c->g;                                                         \
    const T mom = (T)c->b1, damp = (T)c->c1, lr = (T)c->step;                                      \
    int damped = c->damp, nesterov = c->nesterov;                                                  \
    for (Py_ssize_t i = i0; i < i1; i++) {                                                         \
        T bi = b[i] * mom + (damped ? g[i] * damp : g[i]);                                         \
        b[i] = bi;                                                                                 \
        T u = nesterov ? g[i] + bi * mom : bi;                                                     \
        d[i] = d[i] - u * lr;                                                                      \
    }                                                                                              \
}
SGD(float)
SGD(double)

/* plain SGD (optim/sgd.py without momentum): d -= g lr, lr rounded to T as NumPy's weak scalar */
#define SGD_PLAIN(T)                                                                               \
CLONES static void sgd_plain_##T(opt_ctx *c, Py_ssize_t i0, Py_ssize_t i1)                         \
{                                                                                                  \
    T *RESTRICT d = (T *)c->d;                                                                     \
    const T *RESTRICT g = (const T *)c->g;                                                         \
    const T lr = (T)c->step;                                                                       \
    for (Py_ssize_t i = i0; i < i1; i++)                                                           \
        d[i] = d[i] - g[i] * lr;                                                                   \
}
SGD_PLAIN(float)
SGD_PLAIN(double)

/* RMSprop (optim/rmsprop.py): v = v alpha + (g g) c; centered: a = a alpha + g c,
 * r = sqrt(v - a a), else r = sqrt(v); r = g / (r + eps); with momentum b = b mom + r,
 * d -= b lr, else d -= r lr (c = 1 - alpha) */
#define RMSPROP(T)                                                                                 \
CLONES static void rmsprop_##T(opt_ctx *c, Py_ssize_t i0, Py_ssize_t i1)                           \
{                                                                                                  \
    T *RESTRICT d = (T *)c->d, *RESTRICT b = (T *)c->m, *RESTRICT v = (T *)c->v;                   \
    T *RESTRICT a = (T *)c->w;                                                                     \
    const T *RESTRICT g = (const T *)c->g;                                                         \
    const T alpha = (T)c->b1, ca = (T)c->c1, mom = (T)c->b2, eps = (T)c->eps, lr = (T)c->step;     \
    for (Py_ssize_t i = i0; i < i1; i++) {                                                         \
        T gi = g[i];                                                                               \
        T vi = v[i] * alpha + (gi * gi) * ca;                                                      \
        v[i] = vi;                                                                                 \
        T r;                                                                                       \
        if (a) {                                                                                   \
            T ai = a[i] * alpha + gi * ca;                                                         \
            a[i] = ai;                                                                             \
            r = SQRT_##T(vi - ai * ai);                                                            \
        }                                                                                          \
        else                                                                                       \
            r = SQRT_##T(vi);                                                                      \
        r = gi / (r + eps);                                                                        \
        if (b) {                                                                                   \
            T bi = b[i] * mom + r;                                                                 \
            b[i] = bi;                                                                             \
            d[i] = d[i] - bi * lr;                                                                 \
        }                                                                                          \
        else                                                                                       \
            d[i] = d[i] - r * lr;                                                                  \
    }                                                                                              \
}
RMSPROP(float)
RMSPROP(double)

/* ---------------------------------------------------------------------------------------------
 * Threads: a small pool (pthreads) that splits a loop's range into contiguous parts, one per
 * thread, the caller running the first. Every kernel's elements (or rows, or columns of a column
 * sum) are computed independently of the others, so results do not depend on the number of
 * threads. set_num_threads() sets the count (ember.set_num_threads calls it; the loader starts it
 * at ember.get_num_threads()); below MIN_PART elements per part, fewer threads run. One parallel
 * call at a time: a second Python thread that finds the pool busy runs its loop alone. A forked
 * child starts with no workers (they do not survive fork). */

#define MIN_PART 32768   /* elements a thread's part should at least have */
#define MAX_THREADS 256

static int want_threads = 1;

#if !defined(_WIN32) && !defined(EMBER_KERNELS_NO_THREADS)
#include <pthread.h>
#include <sched.h>
#define HAVE_THREADS 1

static pthread_mutex_t pool_busy = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t pool_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t pool_go = PTHREAD_COND_INITIALIZER;
static pthread_cond_t pool_done = PTHREAD_COND_INITIALIZER;
static int pool_workers = 0;         /* started, each waiting for the next generation */
static unsigned long pool_generation = 0;
static int pool_running = 0;         /* workers that joined the current job and are in it */
#define CHUNKS_PER_THREAD 4
static char pool_claimed[CHUNKS_PER_THREAD * (MAX_THREADS + 1)];  /* the job's chunks taken (atomic) */
static struct {
    range_fn fn;
    void *ctx;
    Py_ssize_t total, align;
    int parts, chunks, per;  /* threads, chunks, chunks per thread */
    int open;  /* workers may still join (until the caller has run out of chunks) */
} pool_job;

/* part `part` of `parts` of [0, total), boundaries on multiples of `align` */
static void part_range(int part, int parts, Py_ssize_t total, Py_ssize_t align, Py_ssize_t *i0,
                       Py_ssize_t *i1)
{
    Py_ssize_t units = (total + align - 1) / align;
    Py_ssize_t a = units * part / parts * align, b = units * (part + 1) / parts * align;
    *i0 = a < total ? a : total;
    *i1 = b < total ? b : total;
}

typedef struct {
    int id;
    unsigned long seen;
} worker_arg;

static worker_arg pool_args[MAX_THREADS];

/* thread `id`'s run of a job of `chunks` chunks, `per` to each of the job's threads: its own
 * chunks in order (the part it would have had alone: the same rows as at the previous call, so
 * the same caches), then, last first, any other thread's chunk not yet taken, so that a worker
 * that gets no CPU in time leaves its share to the others */
static void run_chunk(int c, range_fn fn, void *ctx, Py_ssize_t total, Py_ssize_t align,
                      int chunks)
{
    if (__atomic_exchange_n(&pool_claimed[c], 1, __ATOMIC_RELAXED))
        return;  /* another thread's */
    Py_ssize_t i0, i1;
    part_range(c, chunks, total, align, &i0, &i1);
    if (i0 < i1)
        fn(ctx, i0, i1);
}

static void run_chunks(int id, range_fn fn, void *ctx, Py_ssize_t total, Py_ssize_t align,
                       int chunks, int per)
{
    for (int c = id * per; c < (id + 1) * per; c++)
        run_chunk(c, fn, ctx, total, align, chunks);
    for (int c = chunks - 1; c >= 0; c--)
        if (c / per != id)
            run_chunk(c, fn, ctx, total, align, chunks);
}

/* how long a worker polls for the next job before it sleeps (microseconds; EMBER_POOL_SPIN_US):
 * a sleeping thread takes tens of microseconds to wake on a virtual machine, as long as a 4M
 * sum's share, while the next op of a training step comes some microseconds after the last */
static long pool_spin_ns = 50000;
/* how long the caller polls for the workers still in its job before it sleeps */
#define POOL_JOIN_POLL_NS 20000

static double monotonic_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}

/* poll (without the lock) until a new generation or spin_ns pass */
static void pool_poll(unsigned long seen)
{
    if (pool_spin_ns <= 0)
        return;
    double end = monotonic_ns() + (double)pool_spin_ns;
    for (;;) {
        for (int i = 0; i < 16; i++) {
            if (__atomic_load_n(&pool_generation, __ATOMIC_ACQUIRE) != seen)
                return;
            CPU_RELAX();
        }
        sched_yield();
        if (monotonic_ns() > end)
            return;
    }
}

static void *pool_worker(void *argp)
{
    worker_arg *arg = (worker_arg *)argp;
    pthread_mutex_lock(&pool_mu);
    for (;;) {
        if (pool_generation == arg->seen) {
            pthread_mutex_unlock(&pool_mu);
            pool_poll(arg->seen);
            pthread_mutex_lock(&pool_mu);
        }
        while (pool_generation == arg->seen)
            pthread_cond_wait(&pool_go, &pool_mu);
        arg->seen = pool_generation;
        if (pool_job.open && arg->id < pool_job.parts) {
            range_fn fn = pool_job.fn;
            void *ctx = pool_job.ctx;
            Py_ssize_t total = pool_job.total, align = pool_job.align;
            int chunks = pool_job.chunks, per = pool_job.per;
            __atomic_add_fetch(&pool_running, 1, __ATOMIC_RELAXED);
            pthread_mutex_unlock(&pool_mu);
            run_chunks(arg->id, fn, ctx, total, align, chunks, per);
            pthread_mutex_lock(&pool_mu);
            /* (release: the caller, polling pool_running, then reads what the chunks wrote) */
            if (__atomic_sub_fetch(&pool_running, 1, __ATOMIC_RELEASE) == 0)
                pthread_cond_signal(&pool_done);
        }
    }
    return NULL;
}

static void pool_after_fork_in_child(void)
{
    pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
    pthread_cond_t c = PTHREAD_COND_INITIALIZER;
    pool_busy = m;
    pool_mu = m;
    pool_go = c;
    pool_done = c;
    pool_workers = 0;
    pool_running = 0;
    pool_job.open = 0;
}

/* fn over [0, total) on up to want_threads threads, in chunks of at least min_part units (up to
 * CHUNKS_PER_THREAD per thread; run_chunks: each thread its own, then any left); align: chunk
 * boundaries' multiple. Each unit's result does not depend on its chunk (nor on which thread runs
 * it). The caller waits only for workers that joined: on a busy machine a worker that is not
 * scheduled before the caller has run out of chunks is left out (its chunks run on the caller,
 * where a fixed part for the worker waited for it). */
static void parallel_per(range_fn fn, void *ctx, Py_ssize_t total, Py_ssize_t align,
                         Py_ssize_t min_part, int max_per)
{
    Py_ssize_t most = min_part > 0 ? total / min_part : total;
    int parts = want_threads < most ? want_threads : (int)(most > 1 ? most : 1);
    if (parts <= 1 || pthread_mutex_trylock(&pool_busy) != 0) {
        if (total > 0)
            fn(ctx, 0, total);
        return;
    }
    pthread_mutex_lock(&pool_mu);
    while (pool_workers < parts - 1 && pool_workers < MAX_THREADS) {
        pthread_t t;
        pthread_attr_t attr;
        worker_arg *arg = &pool_args[pool_workers];
        arg->id = pool_workers + 1;
        arg->seen = pool_generation;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        int failed = pthread_create(&t, &attr, pool_worker, arg);
        pthread_attr_destroy(&attr);
        if (failed)
            break;
        pool_workers++;
    }
    if (parts > pool_workers + 1)
        parts = pool_workers + 1;
    pool_job.fn = fn;
    pool_job.ctx = ctx;
    pool_job.total = total;
    pool_job.align = align;
    pool_job.parts = parts;
    int per = most / parts < max_per ? (int)(most / parts) : max_per;
    pool_job.per = per;
    pool_job.chunks = per * parts;
    memset(pool_claimed, 0, (size_t)pool_job.chunks);
    pool_job.open = 1;
    __atomic_store_n(&pool_generation, pool_generation + 1, __ATOMIC_RELEASE);
    pthread_cond_broadcast(&pool_go);
    pthread_mutex_unlock(&pool_mu);
    run_chunks(0, fn, ctx, total, align, pool_job.chunks, per);
    pthread_mutex_lock(&pool_mu);
    pool_job.open = 0;
    int running = pool_running;
    pthread_mutex_unlock(&pool_mu);
    /* the workers still in the job are running their last chunks: poll for them a short while
     * (a chunk is microseconds; sleeping on the condition costs a futex wake of about as much
     * on a virtual machine), then sleep */
    if (running > 0) {
        const double end = monotonic_ns() + (double)POOL_JOIN_POLL_NS;
        for (int i = 0; __atomic_load_n(&pool_running, __ATOMIC_ACQUIRE) > 0; i++) {
            CPU_RELAX();
            if ((i & 63) == 63 && monotonic_ns() > end)
                break;
        }
        pthread_mutex_lock(&pool_mu);
        while (pool_running > 0)
            pthread_cond_wait(&pool_done, &pool_mu);
        pthread_mutex_unlock(&pool_mu);
    }
    pthread_mutex_unlock(&pool_busy);
}
#else
#define HAVE_THREADS 0
static void parallel_per(range_fn fn, void *ctx, Py_ssize_t total, Py_ssize_t align,
                         Py_ssize_t min_part, int max_per)
{
    if (total > 0)
        fn(ctx, 0, total);
}
#endif

static void parallel(range_fn fn, void *ctx, Py_ssize_t total, Py_ssize_t align,
                     Py_ssize_t min_part)
{
    parallel_per(fn, ctx, total, align, min_part, CHUNKS_PER_THREAD);
}

void kernels_parallel(range_fn fn, void *ctx, Py_ssize_t total, Py_ssize_t align,
                      Py_ssize_t min_part)
{
    parallel(fn, ctx, total, align, min_part);
}

void kernels_parallel_parts(range_fn fn, void *ctx, Py_ssize_t total, Py_ssize_t align,
                            Py_ssize_t min_part)
{
    parallel_per(fn, ctx, total, align, min_part, 1);
}

/* the parts' bodies: the kernel with its arrays (ctx) over a range */
typedef struct {
    void *f;
    const void *a, *b;
    void *out;
    Py_ssize_t n;  /* row length, for the row kernels */
    const double *p;  /* parameters, for UNARYP/BINARYP */
} call_ctx;

static void call_unaryp(void *c, Py_ssize_t i0, Py_ssize_t i1)
{
    call_ctx *k = (call_ctx *)c;
    ((unaryp_fn)k->f)(k->a, k->out, i0, i1, k->p);
}

static void call_binaryp(void *c, Py_ssize_t i0, Py_ssize_t i1)
{
    call_ctx *k = (call_ctx *)c;
    ((binaryp_fn)k->f)(k->a, k->b, k->out, i0, i1, k->p);
}

static void call_unary(void *c, Py_ssize_t i0, Py_ssize_t i1)
{
    call_ctx *k = (call_ctx *)c;
    ((unary_fn)k->f)(k->a, k->out, i0, i1);
}

static void call_binary(void *c, Py_ssize_t i0, Py_ssize_t i1)
{
    call_ctx *k = (call_ctx *)c;
    ((binary_fn)k->f)(k->a, k->b, k->out, i0, i1);
}

/* ---------------------------------------------------------------------------------------------
 * The Python functions: buffers in, checked, loops run without the GIL */

/* A C-contiguous float32 ('f') or float64 ('d') buffer; its kind in *kind. */
static int get_buffer(PyObject *obj, Py_buffer *view, int writable, char *kind, const char *what)
{
    int flags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0);
    if (PyObject_GetBuffer(obj, view, flags) < 0) {
        PyErr_Format(PyExc_TypeError,
                     "ember._kernels: %s must be a C-contiguous%s float32/float64 array",
                     what, writable ? ", writable" : "");
        return -1;
    }
    const char *f = view->format ? view->format : "B";
    if (*f == '@' || *f == '=' || *f == '<')
        f++;
    char k = (f[0] == 'f' || f[0] == 'd') && f[1] == '\0' ? f[0] : 0;
    if (!k || view->itemsize != (k == 'f' ? 4 : 8)) {
        PyBuffer_Release(view);
        PyErr_Format(PyExc_TypeError, "ember._kernels: %s must be float32 or float64, got "
                     "format '%s'", what, view->format ? view->format : "B");
        return -1;
    }
    *kind = k;
    return 0;
}

#define MAXBUF 9

typedef struct {
    Py_buffer v[MAXBUF];
    void *p[MAXBUF];  /* NULL for a None argument */
    Py_ssize_t len[MAXBUF];  /* elements */
    int n;
    char kind;
} Bufs;

static void release(Bufs *b)
{
    for (int i = 0; i < b->n; i++)
        if (b->p[i])
            PyBuffer_Release(&b->v[i]);
    b->n = 0;
}

/* Take args[0..count) as buffers; spec: one character per argument, 'i' input, 'o' output,
 * lowercase required, uppercase may be None. All must share one kind. */
static int take(Bufs *b, PyObject *const *args, Py_ssize_t nargs, const char *spec)
{
    Py_ssize_t count = (Py_ssize_t)strlen(spec);
    b->n = 0;
    b->kind = 0;
    if (nargs < count) {
        PyErr_Format(PyExc_TypeError, "ember._kernels: expected %zd array arguments", count);
        return -1;
    }
    for (Py_ssize_t i = 0; i < count; i++) {
        char c = spec[i];
        if ((c == 'I' || c == 'O') && args[i] == Py_None) {
            b->p[i] = NULL;
            b->len[i] = 0;
            b->n = (int)i + 1;
            continue;
        }
        char kind, name[32];
        PyOS_snprintf(name, sizeof name, "argument %zd", i + 1);
        if (get_buffer(args[i], &b->v[i], c == 'o' || c == 'O', &kind, name) < 0) {
            b->p[i] = NULL;
            b->n = (int)i;
            release(b);
            return -1;
        }
        b->p[i] = b->v[i].buf;
        b->len[i] = b->v[i].len / b->v[i].itemsize;
        b->n = (int)i + 1;
        if (b->kind && kind != b->kind) {
            release(b);
            PyErr_SetString(PyExc_TypeError, "ember._kernels: arrays of mixed dtypes");
            return -1;
        }
        b->kind = kind;
    }
    return 0;
}

static int same_lengths(Bufs *b, Py_ssize_t want, int first, int last)
{
    for (int i = first; i < last; i++)
        if (b->p[i] && b->len[i] != want) {
            PyErr_Format(PyExc_ValueError, "ember._kernels: argument %d has %zd elements, "
                         "expected %zd", i + 1, b->len[i], want);
            return -1;
        }
    return 0;
}

static PyObject *run_unary(PyObject *const *args, Py_ssize_t nargs, unary_fn f32, unary_fn f64)
{
    Bufs b;
    if (take(&b, args, nargs, "io") < 0)
        return NULL;
    unary_fn f = b.kind == 'f' ? f32 : f64;
    if (!f) {
        release(&b);
        return PyErr_Format(PyExc_TypeError, "ember._kernels: no %s kernel",
                            b.kind == 'f' ? "float32" : "float64");
    }
    if (same_lengths(&b, b.len[0], 1, 2) < 0) {
        release(&b);
        return NULL;
    }
    call_ctx c = {(void *)f, b.p[0], NULL, b.p[1], 0};
    Py_BEGIN_ALLOW_THREADS
    parallel(call_unary, &c, b.len[0], 64, MIN_PART);
    Py_END_ALLOW_THREADS
    release(&b);
    Py_RETURN_NONE;
}

static PyObject *run_binary(PyObject *const *args, Py_ssize_t nargs, binary_fn f32,
                            binary_fn f64)
{
    Bufs b;
    if (take(&b, args, nargs, "iio") < 0)
        return NULL;
    binary_fn f = b.kind == 'f' ? f32 : f64;
    if (!f) {
        release(&b);
        return PyErr_Format(PyExc_TypeError, "ember._kernels: no %s kernel",
                            b.kind == 'f' ? "float32" : "float64");
    }
    if (same_lengths(&b, b.len[0], 1, 3) < 0) {
        release(&b);
        return NULL;
    }
    call_ctx c = {(void *)f, b.p[0], b.p[1], b.p[2], 0};
    Py_BEGIN_ALLOW_THREADS
    parallel(call_binary, &c, b.len[0], 64, MIN_PART);
    Py_END_ALLOW_THREADS
    release(&b);
    Py_RETURN_NONE;
}

/* f(x, out, p0, ...) or f(x, grad, out, p0, ...): up to 4 float parameters */
static PyObject *run_params(PyObject *const *args, Py_ssize_t nargs, int binary, int nparams,
                            void *f32)
{
    Py_ssize_t na = binary ? 3 : 2;
    if (nargs != na + nparams)
        return PyErr_Format(PyExc_TypeError, "ember._kernels: expected %zd arguments",
                            na + nparams);
    double p[4] = {0.0, 0.0, 0.0, 0.0};
    for (int i = 0; i < nparams; i++) {
        p[i] = PyFloat_AsDouble(args[na + i]);
        if (p[i] == -1.0 && PyErr_Occurred())
            return NULL;
    }
    if (nparams == 2)  /* softplus: 1 / beta, beta as float32 */
        p[2] = 1.0 / (double)(float)p[0];
    Bufs b;
    if (take(&b, args, na, binary ? "iio" : "io") < 0)
        return NULL;
    if (b.kind != 'f') {
        release(&b);
        return PyErr_Format(PyExc_TypeError, "ember._kernels: no float64 kernel");
    }
    if (same_lengths(&b, b.len[0], 1, (int)na) < 0) {
        release(&b);
        return NULL;
    }
    call_ctx c = {f32, b.p[0], binary ? b.p[1] : NULL, b.p[na - 1], 0, p};
    Py_BEGIN_ALLOW_THREADS
    parallel(binary ? call_binaryp : call_unaryp, &c, b.len[0], 64, MIN_PART);
    Py_END_ALLOW_THREADS
    release(&b);
    Py_RETURN_NONE;
}

static PyObject *py_softplus(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    return run_params(args, nargs, 0, 2, (void *)softplus_f32);  /* (p[2]: run_params) */
}

static PyObject *py_softplus_backward(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    return run_params(args, nargs, 1, 2, (void *)softplus_backward_f32);
}

static PyObject *py_elu(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    return run_params(args, nargs, 0, 3, (void *)elu_f32);
}

static PyObject *py_elu_backward(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    return run_params(args, nargs, 1, 3, (void *)elu_backward_f32);
}

#define UNARY_PY(NAME, F32, F64)                                                               \
    static PyObject *py_##NAME(PyObject *m, PyObject *const *args, Py_ssize_t nargs)           \
    {                                                                                          \
        return run_unary(args, nargs, F32, F64);                                               \
    }
#define BINARY_PY(NAME, F32, F64)                                                              \
    static PyObject *py_##NAME(PyObject *m, PyObject *const *args, Py_ssize_t nargs)           \
    {                                                                                          \
        return run_binary(args, nargs, F32, F64);                                              \
    }
UNARY_PY(erf, erf_f32, NULL)
UNARY_PY(erfc, erfc_f32, NULL)
BINARY_PY(erf_backward, erf_backward_f32, NULL)
BINARY_PY(erfc_backward, erfc_backward_f32, NULL)
UNARY_PY(gelu, gelu_f32, NULL)
BINARY_PY(gelu_backward, gelu_backward_f32, NULL)
UNARY_PY(gelu_tanh, gelu_tanh_f32, gelu_tanh_f64)
BINARY_PY(gelu_tanh_backward, gelu_tanh_backward_f32, gelu_tanh_backward_f64)
UNARY_PY(exp, exp_f32, NULL)
UNARY_PY(tanh, tanh_f32, NULL)
UNARY_PY(sigmoid, sigmoid_f32, sigmoid_f64)
UNARY_PY(silu, silu_f32, silu_f64)
BINARY_PY(silu_backward, silu_backward_f32, silu_backward_f64)
UNARY_PY(mish, mish_f32, NULL)
BINARY_PY(mish_backward, mish_backward_f32, NULL)
UNARY_PY(logsigmoid, logsigmoid_f32, NULL)
BINARY_PY(logsigmoid_backward, logsigmoid_backward_f32, NULL)
BINARY_PY(tanh_backward, tanh_backward_f32, tanh_backward_f64)
BINARY_PY(sigmoid_backward, sigmoid_backward_f32, sigmoid_backward_f64)
UNARY_PY(erfinv, erfinv_f32, NULL)
BINARY_PY(erfinv_backward, erfinv_backward_f32, NULL)

/* ---------------------------------------------------------------------------------------------
 * An LSTM time step's pointwise work (ops/nn/recurrent.py LSTMSequence), in the NumPy path's
 * operations and order, with k_tanh32 where the path calls NumPy's tanh: within the two tanh's
 * ulps of that path, and bit for bit a NumPy emulation that takes this tanh
 * (tests/test_kernels_recurrent.py). Per row of the batch, forward: each gate's pre-activation v (the
 * step's product plus the input projection, in g) becomes tanh(v s) s + (1 - s), s = 1/2 on
 * i, f, o (sigmoid) and 1 on g (tanh); then c = c f + i g, tc = tanh(c), h = o tc. Backward, from
 * dm (the gradient of o tc) and dc: dc += ((1 - tc^2) o) dm; d(i, f, g, o) = (dc g, dc c_prev,
 * dc i, dm tc) times a - a^2 (the g gate's (g - g^2) + (1 - g)); dc *= f. One pass where the
 * path makes about ten NumPy calls a step on small arrays. */
typedef struct {
    float *g, *c, *tc, *h;              /* forward */
    const float *a, *tcs, *cprev, *dm;  /* backward */
    float *dc, *da;
    Py_ssize_t hid;
} lstm_ctx;

/* y = x s + t (t = -0: x s exactly), the cell c = c f + i g (i, f, g at their offsets in a row
 * of gates), and h = o tanh(c) */
CLONES static void lstm_affine(const float *RESTRICT x, float *RESTRICT y, Py_ssize_t n, float s,
                               float t)
{
    for (Py_ssize_t j = 0; j < n; j++)
        y[j] = x[j] * s + t;
}

CLONES static void lstm_cell(const float *RESTRICT g, float *RESTRICT c, Py_ssize_t H)
{
    for (Py_ssize_t j = 0; j < H; j++)
        c[j] = c[j] * g[H + j] + g[j] * g[2 * H + j];
}

CLONES static void lstm_out(const float *RESTRICT o, const float *RESTRICT tc, float *RESTRICT h,
                            Py_ssize_t H)
{
    for (Py_ssize_t j = 0; j < H; j++)
        h[j] = o[j] * tc[j];
}

/* a row at a time, in short passes over it (in L1): each loop a plain vector loop (one loop
 * with the tanh inlined twice and the gates' offsets stayed scalar in the AVX2 variant) */
static void lstm_forward_rows(void *v, Py_ssize_t r0, Py_ssize_t r1)
{
    const lstm_ctx *k = (const lstm_ctx *)v;
    const Py_ssize_t H = k->hid;
    float scaled[4096], act[4096];
    for (Py_ssize_t r = r0; r < r1; r++) {
        float *g = k->g + r * 4 * H, *c = k->c + r * H, *tc = k->tc + r * H;
        for (Py_ssize_t b = 0; b < 4 * H; b += 4096) {  /* gates: tanh(v s) s + (1 - s) */
            const Py_ssize_t n = 4 * H - b < 4096 ? 4 * H - b : 4096;
            for (Py_ssize_t q0 = b; q0 < b + n;) {  /* the runs of one gate's s */
                const Py_ssize_t q = q0 / H, q1 = (q + 1) * H < b + n ? (q + 1) * H : b + n;
                lstm_affine(g + q0, scaled + (q0 - b), q1 - q0, q == 2 ? 1.0f : 0.5f, -0.0f);
                q0 = q1;
            }
            tanh_f32(scaled, act, 0, n);
            for (Py_ssize_t q0 = b; q0 < b + n;) {
                const Py_ssize_t q = q0 / H, q1 = (q + 1) * H < b + n ? (q + 1) * H : b + n;
                const float s = q == 2 ? 1.0f : 0.5f;
                lstm_affine(act + (q0 - b), g + q0, q1 - q0, s, 1.0f - s);
                q0 = q1;
            }
        }
        lstm_cell(g, c, H);
        tanh_f32(c, tc, 0, H);
        lstm_out(g + 3 * H, tc, k->h + r * H, H);
    }
}

CLONES_FMA static void lstm_backward_rows(void *v, Py_ssize_t r0, Py_ssize_t r1)
{
    const lstm_ctx *k = (const lstm_ctx *)v;
    const Py_ssize_t H = k->hid;
    for (Py_ssize_t r = r0; r < r1; r++) {
        const float *RESTRICT a = k->a + r * 4 * H;
        const float *RESTRICT tc = k->tcs + r * H;
        const float *RESTRICT cp = k->cprev + r * H;
        const float *RESTRICT dm = k->dm + r * H;
        float *RESTRICT dc = k->dc + r * H;
        float *RESTRICT da = k->da + r * 4 * H;
        for (Py_ssize_t j = 0; j < H; j++) {
            const float i = a[j], f = a[H + j], g = a[2 * H + j], o = a[3 * H + j], t = tc[j];
            const float d = dc[j] + ((1.0f - t * t) * o) * dm[j];
            da[j] = (d * g) * (i - i * i);
            da[H + j] = (d * cp[j]) * (f - f * f);
            da[2 * H + j] = (d * i) * ((g - g * g) + (1.0f - g));
            da[3 * H + j] = (dm[j] * t) * (o - o * o);
            dc[j] = d * f;
        }
    }
}

/* A GRU time step's pointwise work (ops/nn/recurrent.py GRUSequence), as the LSTM's: the NumPy
 * path's operations and order with k_tanh32. Forward, from the input projection gi and the
 * step's product gh (rows x 3 hid, gates r, z, n) and h_prev: (r, z) = tanh((gi + gh) / 2) / 2
 * + 1/2, n = tanh(r gh_n + gi_n), h = (h_prev - n) z + n. Backward, from dh: dn = ((1 - n^2)
 * (1 - z)) dh, dz = ((h_prev - n) dh) (z - z^2), dr = (dn gh_n) (r - r^2); d(gi) = (dr, dz, dn),
 * d(gh) = (dr, dz, dn r). */
typedef struct {
    const float *gi, *gh, *hp, *rz, *n, *ghn, *dh;
    float *rz_out, *n_out, *h_out, *dgi, *dgh;
    Py_ssize_t hid;
} gru_ctx;

CLONES static void gru_gates_pre(const float *RESTRICT gi, const float *RESTRICT gh,
                                 float *RESTRICT y, Py_ssize_t n)
{
    for (Py_ssize_t j = 0; j < n; j++)
        y[j] = (gi[j] + gh[j]) * 0.5f;
}

CLONES static void gru_n_pre(const float *RESTRICT r, const float *RESTRICT ghn,
                             const float *RESTRICT gin, float *RESTRICT y, Py_ssize_t n)
{
    for (Py_ssize_t j = 0; j < n; j++)
        y[j] = r[j] * ghn[j] + gin[j];
}

CLONES static void gru_out(const float *RESTRICT hp, const float *RESTRICT nn,
                           const float *RESTRICT z, float *RESTRICT h, Py_ssize_t n)
{
    for (Py_ssize_t j = 0; j < n; j++)
        h[j] = (hp[j] - nn[j]) * z[j] + nn[j];
}

static void gru_forward_rows(void *v, Py_ssize_t r0, Py_ssize_t r1)
{
    const gru_ctx *k = (const gru_ctx *)v;
    const Py_ssize_t H = k->hid;
    float scaled[2048], act[2048];
    for (Py_ssize_t r = r0; r < r1; r++) {
        const float *gi = k->gi + r * 3 * H, *gh = k->gh + r * 3 * H, *hp = k->hp + r * H;
        float *rz = k->rz_out + r * 2 * H, *nn = k->n_out + r * H;
        for (Py_ssize_t b = 0; b < 2 * H; b += 2048) {
            const Py_ssize_t n = 2 * H - b < 2048 ? 2 * H - b : 2048;
            gru_gates_pre(gi + b, gh + b, scaled, n);
            tanh_f32(scaled, act, 0, n);
            lstm_affine(act, rz + b, n, 0.5f, 0.5f);
        }
        for (Py_ssize_t b = 0; b < H; b += 2048) {
            const Py_ssize_t n = H - b < 2048 ? H - b : 2048;
            gru_n_pre(rz + b, gh + 2 * H + b, gi + 2 * H + b, scaled, n);
            tanh_f32(scaled, nn + b, 0, n);
        }
        gru_out(hp, nn, rz + H, k->h_out + r * H, H);
    }
}

CLONES static void gru_backward_rows(void *v, Py_ssize_t r0, Py_ssize_t r1)
{
    const gru_ctx *k = (const gru_ctx *)v;
    const Py_ssize_t H = k->hid;
    for (Py_ssize_t r = r0; r < r1; r++) {
        const float *RESTRICT rz = k->rz + r * 2 * H;
        const float *RESTRICT nn = k->n + r * H;
        const float *RESTRICT ghn = k->ghn + r * H;
        const float *RESTRICT hp = k->hp + r * H;
        const float *RESTRICT dh = k->dh + r * H;
        float *RESTRICT dgi = k->dgi + r * 3 * H;
        float *RESTRICT dgh = k->dgh + r * 3 * H;
        for (Py_ssize_t j = 0; j < H; j++) {
            const float rr = rz[j], z = rz[H + j], n = nn[j], d = dh[j];
            const float dn = ((1.0f - n * n) * (1.0f - z)) * d;
            const float dz = ((hp[j] - n) * d) * (z - z * z);
            const float dr = (dn * ghn[j]) * (rr - rr * rr);
            dgi[j] = dr;
            dgi[H + j] = dz;
            dgi[2 * H + j] = dn;
            dgh[j] = dr;
            dgh[H + j] = dz;
            dgh[2 * H + j] = dn * rr;
        }
    }
}

/* gru_step(gi, gh, hp, rz, n, h, hid): one step's gates r, z into rz, n and the output h */
static PyObject *py_gru_step(PyObject *mod, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 7)
        return PyErr_Format(PyExc_TypeError, "ember._kernels.gru_step: expected 7 arguments");
    Bufs b;
    if (take(&b, args, 6, "iiiooo") < 0)
        return NULL;
    const Py_ssize_t hid = PyLong_AsSsize_t(args[6]);
    const Py_ssize_t n = b.len[2];
    if (hid <= 0 || b.kind != 'f' || n % hid != 0 || b.len[0] != 3 * n || b.len[1] != 3 * n
        || b.len[3] != 2 * n || b.len[4] != n || b.len[5] != n) {
        release(&b);
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_ValueError, "ember._kernels.gru_step: expected float32 gi, gh "
                            "of rows x 3 hid, rz of rows x 2 hid, hp, n, h of rows x hid");
        return NULL;
    }
    gru_ctx k = {(const float *)b.p[0], (const float *)b.p[1], (const float *)b.p[2], NULL,
                 NULL, NULL, NULL, (float *)b.p[3], (float *)b.p[4], (float *)b.p[5], NULL, NULL,
                 hid};
    const Py_ssize_t least = MIN_PART / (3 * hid);
    Py_BEGIN_ALLOW_THREADS
    parallel(gru_forward_rows, &k, n / hid, 1, least > 0 ? least : 1);
    Py_END_ALLOW_THREADS
    release(&b);
    Py_RETURN_NONE;
}

/* gru_step_backward(rz, n, ghn, hp, dh, dgi, dgh, hid): the step's gate gradients */
static PyObject *py_gru_step_backward(PyObject *mod, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 8)
        return PyErr_Format(PyExc_TypeError, "ember._kernels.gru_step_backward: expected 8 "
                            "arguments");
    Bufs b;
    if (take(&b, args, 7, "iiiiioo") < 0)
        return NULL;
    const Py_ssize_t hid = PyLong_AsSsize_t(args[7]);
    const Py_ssize_t n = b.len[1];
    if (hid <= 0 || b.kind != 'f' || n % hid != 0 || b.len[0] != 2 * n || b.len[2] != n
        || b.len[3] != n || b.len[4] != n || b.len[5] != 3 * n || b.len[6] != 3 * n) {
        release(&b);
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_ValueError, "ember._kernels.gru_step_backward: expected "
                            "float32 rz of rows x 2 hid, n, ghn, hp, dh of rows x hid, dgi, dgh "
                            "of rows x 3 hid");
        return NULL;
    }
    gru_ctx k = {NULL, NULL, (const float *)b.p[3], (const float *)b.p[0],
                 (const float *)b.p[1], (const float *)b.p[2], (const float *)b.p[4], NULL,
                 NULL, NULL, (float *)b.p[5], (float *)b.p[6], hid};
    const Py_ssize_t least = MIN_PART / (3 * hid);
    Py_BEGIN_ALLOW_THREADS
    parallel(gru_backward_rows, &k, n / hid, 1, least > 0 ? least : 1);
    Py_END_ALLOW_THREADS
    release(&b);
    Py_RETURN_NONE;
}

/* the hidden size, last argument: rows = len(c) / hid, len(g) = 4 len(c) */
static int lstm_shapes(Bufs *b, PyObject *arg, int four, int last, Py_ssize_t *hid)
{
    *hid = PyLong_AsSsize_t(arg);
    if (*hid == -1 && PyErr_Occurred())
        return -1;
    const Py_ssize_t n = b->len[1];
    if (b->kind != 'f' || *hid <= 0 || n % *hid != 0 || b->len[four] != 4 * n) {
        PyErr_SetString(PyExc_ValueError, "ember._kernels.lstm_step: expected float32 gates of "
                        "rows x 4 hid and states of rows x hid");
        return -1;
    }
    for (int i = 1; i < last; i++)
        if (i != four && b->len[i] != n) {
            PyErr_Format(PyExc_ValueError, "ember._kernels.lstm_step: argument %d has %zd "
                         "elements, expected %zd", i + 1, b->len[i], n);
            return -1;
        }
    return 0;
}

/* lstm_step(g, c, tc, h, hid): one step's activations into g, the cell state c updated, tanh(c)
 * into tc and the output into h (float32, C-contiguous, not overlapping) */
static PyObject *py_lstm_step(PyObject *mod, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 5)
        return PyErr_Format(PyExc_TypeError, "ember._kernels.lstm_step: expected 5 arguments");
    Bufs b;
    Py_ssize_t hid;
    if (take(&b, args, 4, "oooo") < 0)
        return NULL;
    if (lstm_shapes(&b, args[4], 0, 4, &hid) < 0) {
        release(&b);
        return NULL;
    }
    lstm_ctx k = {(float *)b.p[0], (float *)b.p[1], (float *)b.p[2], (float *)b.p[3],
                  NULL, NULL, NULL, NULL, NULL, NULL, hid};
    const Py_ssize_t least = MIN_PART / (4 * hid);
    Py_BEGIN_ALLOW_THREADS
    parallel(lstm_forward_rows, &k, b.len[1] / hid, 1, least > 0 ? least : 1);
    Py_END_ALLOW_THREADS
    release(&b);
    Py_RETURN_NONE;
}

/* lstm_step_backward(a, tc, cprev, dm, dc, da, hid): the step's gate gradients into da and dc
 * carried to the step before (dc in place) */
static PyObject *py_lstm_step_backward(PyObject *mod, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 7)
        return PyErr_Format(PyExc_TypeError, "ember._kernels.lstm_step_backward: expected 7 "
                            "arguments");
    Bufs b;
    Py_ssize_t hid;
    if (take(&b, args, 6, "iiiioo") < 0)
        return NULL;
    if (lstm_shapes(&b, args[6], 0, 5, &hid) < 0 || b.len[5] != b.len[0]) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_ValueError, "ember._kernels.lstm_step_backward: da must have "
                            "the gates' size");
        release(&b);
        return NULL;
    }
    lstm_ctx k = {NULL, NULL, NULL, NULL, (const float *)b.p[0], (const float *)b.p[1],
                  (const float *)b.p[2], (const float *)b.p[3], (float *)b.p[4],
                  (float *)b.p[5], hid};
    const Py_ssize_t least = MIN_PART / (4 * hid);
    Py_BEGIN_ALLOW_THREADS
    parallel(lstm_backward_rows, &k, b.len[1] / hid, 1, least > 0 ? least : 1);
    Py_END_ALLOW_THREADS
    release(&b);
    Py_RETURN_NONE;
}

/* the row length, last argument; the arrays' sizes a multiple of it */
static int row_length(PyObject *const *args, Py_ssize_t nargs, Py_ssize_t at, Py_ssize_t *n)
{
    if (nargs != at + 1) {
        PyErr_Format(PyExc_TypeError, "ember._kernels: expected %zd arguments", at + 1);
        return -1;
    }
    *n = PyLong_AsSsize_t(args[at]);
    if (*n == -1 && PyErr_Occurred())
        return -1;
    if (*n < 1) {
        PyErr_SetString(PyExc_ValueError, "ember._kernels: rows must have at least 1 element");
        return -1;
    }
    return 0;
}

typedef void (*rows1_fn)(const void *, void *, Py_ssize_t, Py_ssize_t, Py_ssize_t);
typedef void (*rows2_fn)(const void *, const void *, void *, Py_ssize_t, Py_ssize_t, Py_ssize_t);

static void call_rows1(void *c, Py_ssize_t r0, Py_ssize_t r1)
{
    call_ctx *k = (call_ctx *)c;
    ((rows1_fn)k->f)(k->a, k->out, r0, r1, k->n);
}

static void call_rows2(void *c, Py_ssize_t r0, Py_ssize_t r1)
{
    call_ctx *k = (call_ctx *)c;
    ((rows2_fn)k->f)(k->a, k->b, k->out, r0, r1, k->n);
}

static PyObject *run_rows(PyObject *const *args, Py_ssize_t nargs, int binary, void *f32,
                          void *f64)
{
    Py_ssize_t n;
    if (row_length(args, nargs, binary ? 3 : 2, &n) < 0)
        return NULL;
    Bufs b;
    if (take(&b, args, nargs, binary ? "iio" : "io") < 0)
        return NULL;
    Py_ssize_t total = b.len[0];
    if (total % n || same_lengths(&b, total, 1, binary ? 3 : 2) < 0) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_ValueError, "ember._kernels: size is not a multiple of the row");
        release(&b);
        return NULL;
    }
    call_ctx c = {b.kind == 'f' ? f32 : f64, b.p[0], binary ? b.p[1] : NULL,
                  b.p[binary ? 2 : 1], n};
    Py_ssize_t min_rows = MIN_PART / n > 1 ? MIN_PART / n : 1;
    Py_BEGIN_ALLOW_THREADS
    parallel(binary ? call_rows2 : call_rows1, &c, total / n, 1, min_rows);
    Py_END_ALLOW_THREADS
    release(&b);
    Py_RETURN_NONE;
}

#define ROWS_PY(NAME, BIN)                                                                     \
    static PyObject *py_##NAME(PyObject *m, PyObject *const *args, Py_ssize_t nargs)           \
    {                                                                                          \
        return run_rows(args, nargs, BIN, (void *)NAME##_float, (void *)NAME##_double);        \
    }
ROWS_PY(softmax, 0)
ROWS_PY(log_softmax, 0)
ROWS_PY(softmax_backward, 1)
ROWS_PY(log_softmax_backward, 1)

typedef struct {
    char kind;
    const void *x, *w, *b, *mean_in, *rstd_in, *g;
    void *y, *mean, *rstd;
    double *gw, *gb;
    Py_ssize_t rows, n;
    double eps;
    int nt;  /* the row output by non-temporal stores (NT_MIN_BYTES) */
    double *cw, *cb;  /* the backward's per-block column sums (layer_norm_backward_float) */
    Py_ssize_t rb;    /* rows a block */
} ln_ctx;

static void call_layer_norm(void *cv, Py_ssize_t r0, Py_ssize_t r1)
{
    ln_ctx *c = (ln_ctx *)cv;
    if (c->kind == 'f')
        layer_norm_float(c->x, c->w, c->b, c->y, c->mean, c->rstd, r0, r1, c->n, c->eps,
                         c->nt);
    else
        layer_norm_double(c->x, c->w, c->b, c->y, c->mean, c->rstd, r0, r1, c->n, c->eps,
                          c->nt);
}

static void call_layer_norm_backward(void *cv, Py_ssize_t r0, Py_ssize_t r1)
{
    ln_ctx *c = (ln_ctx *)cv;
    if (c->kind == 'f')
#if HAVE_LN_FUSED
        layer_norm_backward_float(c->x, c->w, c->mean_in, c->rstd_in, c->g, c->y, r0, r1, c->n,
                                  c->nt, c->cw, c->cb, c->rb);
#else
        layer_norm_backward_float(c->x, c->w, c->mean_in, c->rstd_in, c->g, c->y, r0, r1, c->n,
                                  c->nt);
#endif
    else
        layer_norm_backward_double(c->x, c->w, c->mean_in, c->rstd_in, c->g, c->y, r0, r1, c->n,
                                   c->nt);
}

static void call_layer_norm_colsums(void *cv, Py_ssize_t c0, Py_ssize_t c1)
{
    ln_ctx *c = (ln_ctx *)cv;
    if (c->kind == 'f')
        layer_norm_colsums_float(c->x, c->mean_in, c->rstd_in, c->g, c->gw, c->gb, c->rows, c->n,
                                 c0, c1);
    else
        layer_norm_colsums_double(c->x, c->mean_in, c->rstd_in, c->g, c->gw, c->gb, c->rows, c->n,
                                  c0, c1);
}

/* layer_norm(x, w | None, b | None, y, mean, rstd, n, eps) */
static PyObject *py_layer_norm(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 8)
        return PyErr_Format(PyExc_TypeError, "ember._kernels.layer_norm: expected 8 arguments");
    double eps = PyFloat_AsDouble(args[7]);
    if (eps == -1.0 && PyErr_Occurred())
        return NULL;
    Py_ssize_t n;
    if (row_length(args, 7, 6, &n) < 0)
        return NULL;
    Bufs b;
    if (take(&b, args, nargs, "iIIooo") < 0)
        return NULL;
    Py_ssize_t total = b.len[0], rows = n ? total / n : 0;
    if (!b.p[0] || !b.p[3] || total % n || same_lengths(&b, n, 1, 3) < 0
        || same_lengths(&b, total, 3, 4) < 0 || same_lengths(&b, rows, 4, 6) < 0) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_ValueError, "ember._kernels.layer_norm: bad arguments");
        release(&b);
        return NULL;
    }
    ln_ctx c = {b.kind, b.p[0], b.p[1], b.p[2], NULL, NULL, NULL, b.p[3], b.p[4], b.p[5],
                NULL, NULL, rows, n, eps,
                HAVE_NT && total * (b.kind == 'f' ? 4 : 8) >= NT_MIN_BYTES};
    Py_BEGIN_ALLOW_THREADS
    parallel(call_layer_norm, &c, rows, 1, MIN_PART / n > 1 ? MIN_PART / n : 1);
    Py_END_ALLOW_THREADS
    release(&b);
    Py_RETURN_NONE;
}

/* layer_norm_backward(x, w | None, mean, rstd, g, gx | None, gw | None, gb | None, n) */
static PyObject *py_layer_norm_backward(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    Py_ssize_t n;
    if (row_length(args, nargs, 8, &n) < 0)
        return NULL;
    Bufs b;
    if (take(&b, args, nargs, "iIiiiOOO") < 0)
        return NULL;
    Py_ssize_t total = b.len[0], rows = total / n;
    if (!b.p[0] || !b.p[2] || !b.p[3] || !b.p[4] || total % n || same_lengths(&b, n, 1, 2) < 0
        || same_lengths(&b, rows, 2, 4) < 0 || same_lengths(&b, total, 4, 6) < 0
        || same_lengths(&b, n, 6, 8) < 0) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_ValueError, "ember._kernels.layer_norm_backward: bad arguments");
        release(&b);
        return NULL;
    }
    int nacc = (b.p[6] != NULL) + (b.p[7] != NULL);
    /* float32 with grad_x: the column sums in grad_x's pass, per block of rb rows (nb blocks,
     * by the size alone; rows of over LN_FUSED_MAX_N elements keep the separate pass) */
    int fused = HAVE_LN_FUSED && nacc && b.p[5] && b.kind == 'f' && n <= LN_FUSED_MAX_N;
    Py_ssize_t nb = total / LN_BLOCK < 1 ? 1 : total / LN_BLOCK > LN_MAX_BLOCKS ? LN_MAX_BLOCKS
                                                                              : total / LN_BLOCK;
    Py_ssize_t rb = fused ? (rows + nb - 1) / nb : rows;
    Py_ssize_t blocks = fused ? (rows + rb - 1) / rb : 0;
    double *acc = NULL;
    if (nacc) {
        acc = (double *)PyMem_RawCalloc((size_t)(nacc * n * (1 + blocks)), sizeof(double));
        if (!acc) {
            release(&b);
            return PyErr_NoMemory();
        }
    }
    double *gw = b.p[6] ? acc : NULL, *gb = b.p[7] ? acc + (b.p[6] ? n : 0) : NULL;
    double *part = acc + nacc * n;  /* blocks x n sums of each, after gw and gb */
    ln_ctx c = {b.kind, b.p[0], b.p[1], NULL, b.p[2], b.p[3], b.p[4], b.p[5], NULL, NULL,
                gw, gb, rows, n, 0.0, HAVE_NT && total * (b.kind == 'f' ? 4 : 8) >= NT_MIN_BYTES,
                fused && gw ? part : NULL, fused && gb ? part + (gw ? blocks * n : 0) : NULL, rb};
    Py_BEGIN_ALLOW_THREADS
    if ((gw || gb) && !fused)  /* by columns: each column's sum runs over the rows in order */
        parallel(call_layer_norm_colsums, &c, n, 64, rows > 0 ? MIN_PART / rows + 1 : n);
    if (b.p[5])  /* (fused: parts of whole blocks) */
        parallel(call_layer_norm_backward, &c, rows, fused ? rb : 1,
                 MIN_PART / n > 1 ? MIN_PART / n : 1);
    for (Py_ssize_t k = 0; k < blocks; k++)  /* the blocks' sums, in order */
        for (Py_ssize_t i = 0; i < n; i++) {
            if (c.cw)
                gw[i] += c.cw[k * n + i];
            if (c.cb)
                gb[i] += c.cb[k * n + i];
        }
    for (Py_ssize_t i = 0; i < n; i++) {
        if (b.kind == 'f') {
            if (gw)
                ((float *)b.p[6])[i] = (float)gw[i];
            if (gb)
                ((float *)b.p[7])[i] = (float)gb[i];
        }
        else {
            if (gw)
                ((double *)b.p[6])[i] = gw[i];
            if (gb)
                ((double *)b.p[7])[i] = gb[i];
        }
    }
    Py_END_ALLOW_THREADS
    PyMem_RawFree(acc);
    release(&b);
    Py_RETURN_NONE;
}

/* the sizes N, L, S, D, Ev, the scale and the causal flag after the arrays */
static int at_sizes(PyObject *const *args, Py_ssize_t at, Py_ssize_t *sz, double *scale,
                    int *causal)
{
    for (int i = 0; i < 5; i++) {
        sz[i] = PyLong_AsSsize_t(args[at + i]);
        if (sz[i] == -1 && PyErr_Occurred())
            return -1;
        if (sz[i] < 1) {
            PyErr_SetString(PyExc_ValueError, "ember._kernels.attention: sizes must be >= 1");
            return -1;
        }
    }
    *scale = PyFloat_AsDouble(args[at + 5]);
    if (*scale == -1.0 && PyErr_Occurred())
        return -1;
    *causal = PyObject_IsTrue(args[at + 6]);
    return *causal < 0 ? -1 : 0;
}

/* A float32 array of N (rows, cols) matrices in any layout whose columns are adjacent: its
 * buffer (strided), the N matrices' offsets in off (C order of the leading dims) and the row
 * stride in *ld, both in elements */
static int at_strided(PyObject *obj, Py_buffer *view, int writable, Py_ssize_t N,
                      Py_ssize_t rows, Py_ssize_t cols, Py_ssize_t *off, Py_ssize_t *ld)
{
    int flags = PyBUF_STRIDES | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0);
    if (PyObject_GetBuffer(obj, view, flags) < 0)
        return -1;
    const char *f = view->format ? view->format : "B";
    if (*f == '@' || *f == '=' || *f == '<')
        f++;
    int nd = view->ndim, ok = f[0] == 'f' && f[1] == '\0' && view->itemsize == 4 && nd >= 2
                              && view->shape[nd - 2] == rows && view->shape[nd - 1] == cols
                              && (cols == 1 || view->strides[nd - 1] == 4);
    Py_ssize_t count = 1;
    for (int d = 0; ok && d < nd; d++) {
        ok = view->strides[d] % 4 == 0;
        if (d < nd - 2)
            count *= view->shape[d];
    }
    if (!ok || count != N) {
        PyBuffer_Release(view);
        PyErr_SetString(PyExc_ValueError, "ember._kernels.attention: a float32 array of N "
                        "(rows, cols) matrices with adjacent columns expected");
        return -1;
    }
    *ld = view->strides[nd - 2] / 4;
    for (Py_ssize_t n = 0; n < N; n++) {
        Py_ssize_t rest = n, o = 0;
        for (int d = nd - 3; d >= 0; d--) {
            o += rest % view->shape[d] * (view->strides[d] / 4);
            rest /= view->shape[d];
        }
        off[n] = o;
    }
    return 0;
}

static void call_attention(void *cv, Py_ssize_t n0, Py_ssize_t n1)
{
    attention_slices((at_ctx *)cv, n0, n1);
}

static void call_attention_backward(void *cv, Py_ssize_t n0, Py_ssize_t n1)
{
    attention_backward_slices((at_ctx *)cv, n0, n1);
}

/* the strided operands of an attention call: up to 5 views, their offsets in one block */
typedef struct {
    Py_buffer v[7];
    void *p[7];  /* NULL for None */
    int n;
    Py_ssize_t *off;
} at_views;

static void at_release(at_views *a)
{
    for (int i = 0; i < a->n; i++)
        if (a->p[i])
            PyBuffer_Release(&a->v[i]);
    PyMem_Free(a->off);
}

/* take args[i] (i < count) as views of N (dims[2i], dims[2i + 1]) matrices, the last `wr`
 * writable (and None allowed for them) */
static int at_take(at_views *a, PyObject *const *args, int count, int wr, Py_ssize_t N,
                   const Py_ssize_t *dims, Py_ssize_t *ld)
{
    a->n = 0;
    a->off = (Py_ssize_t *)PyMem_Malloc(sizeof(Py_ssize_t) * (size_t)(N * count));
    if (!a->off) {
        PyErr_NoMemory();
        return -1;
    }
    for (int i = 0; i < count; i++) {
        int out = i >= count - wr;
        a->p[i] = NULL;
        ld[i] = 0;
        if (!(out && args[i] == Py_None)) {
            if (at_strided(args[i], &a->v[i], out, N, dims[2 * i], dims[2 * i + 1],
                           a->off + i * N, &ld[i]) < 0) {
                at_release(a);
                return -1;
            }
            a->p[i] = a->v[i].buf;
        }
        a->n = i + 1;
    }
    return 0;
}

/* attention(q, k, v, out, p, N, L, S, D, Ev, scale, causal): float32 (..., L, D), (..., S, D),
 * (..., S, Ev) in (N matrices each, any layout with adjacent columns), out (..., L, Ev) (also
 * strided) and the probabilities, transposed, p (N, S, L) C-ordered, written */
static PyObject *py_attention(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    Py_ssize_t sz[5];
    double scale;
    int causal;
    if (nargs != 12)
        return PyErr_Format(PyExc_TypeError, "ember._kernels.attention: expected 12 arguments");
    if (at_sizes(args, 5, sz, &scale, &causal) < 0)
        return NULL;
    Py_ssize_t N = sz[0], L = sz[1], S = sz[2], D = sz[3], Ev = sz[4];
    Py_ssize_t dims[8] = {L, D, S, D, S, Ev, L, Ev}, ld[4];
    at_views a;
    if (at_take(&a, args, 4, 1, N, dims, ld) < 0)
        return NULL;
    if (!a.p[3]) {
        at_release(&a);
        return PyErr_Format(PyExc_TypeError, "ember._kernels.attention: out must be an array");
    }
    Bufs b;
    if (take(&b, args + 4, 1, "o") < 0) {
        at_release(&a);
        return NULL;
    }
    if (b.kind != 'f' || same_lengths(&b, N * L * S, 0, 1) < 0) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_TypeError, "ember._kernels.attention: float32 arrays only");
        release(&b);
        at_release(&a);
        return NULL;
    }
    at_ctx c = {a.p[0], a.p[1], a.p[2], NULL, NULL, a.p[3], b.p[0], NULL, NULL, NULL,
                a.off, a.off + N, a.off + 2 * N, a.off + 3 * N, NULL, NULL, NULL, NULL,
                ld[0], ld[1], ld[2], ld[3], 0, 0, 0, 0, L, S, D, Ev, (float)scale, causal, 0};
    Py_ssize_t per = MIN_PART / (L * S);
    Py_BEGIN_ALLOW_THREADS
    parallel(call_attention, &c, N, 1, per > 1 ? per : 1);
    Py_END_ALLOW_THREADS
    release(&b);
    at_release(&a);
    if (c.failed)
        return PyErr_NoMemory();
    Py_RETURN_NONE;
}

/* attention_backward(q, k, v, g, p, gq | None, gk | None, gv | None, N, L, S, D, Ev, scale,
 * causal): the gradients of attention's output (g, (..., L, Ev)) from its transposed
 * probabilities p (N, S, L) C-ordered; q, k, v, g, gq, gk, gv strided as attention's */
static PyObject *py_attention_backward(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    Py_ssize_t sz[5];
    double scale;
    int causal;
    if (nargs != 15)
        return PyErr_Format(PyExc_TypeError,
                            "ember._kernels.attention_backward: expected 15 arguments");
    if (at_sizes(args, 8, sz, &scale, &causal) < 0)
        return NULL;
    Py_ssize_t N = sz[0], L = sz[1], S = sz[2], D = sz[3], Ev = sz[4];
    Py_ssize_t dims[14] = {L, D, S, D, S, Ev, L, Ev, L, D, S, D, S, Ev}, ld[7];
    PyObject *const views[7] = {args[0], args[1], args[2], args[3], args[5], args[6], args[7]};
    at_views a;
    if (at_take(&a, views, 7, 3, N, dims, ld) < 0)
        return NULL;
    Bufs b;
    if (take(&b, args + 4, 1, "i") < 0) {
        at_release(&a);
        return NULL;
    }
    if (b.kind != 'f' || same_lengths(&b, N * L * S, 0, 1) < 0) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_TypeError,
                            "ember._kernels.attention_backward: float32 arrays only");
        release(&b);
        at_release(&a);
        return NULL;
    }
    at_ctx c = {a.p[0], a.p[1], a.p[2], b.p[0], a.p[3], NULL, NULL, a.p[4], a.p[5], a.p[6],
                a.off, a.off + N, a.off + 2 * N, NULL, a.off + 3 * N, a.off + 4 * N,
                a.off + 5 * N, a.off + 6 * N, ld[0], ld[1], ld[2], 0, ld[3], ld[4], ld[5], ld[6],
                L, S, D, Ev, (float)scale, causal, 0};
    Py_ssize_t per = MIN_PART / (L * S);
    Py_BEGIN_ALLOW_THREADS
    parallel(call_attention_backward, &c, N, 1, per > 1 ? per : 1);
    Py_END_ALLOW_THREADS
    release(&b);
    at_release(&a);
    if (c.failed)
        return PyErr_NoMemory();
    Py_RETURN_NONE;
}

static void call_softmax_lse(void *cv, Py_ssize_t r0, Py_ssize_t r1)
{
    ln_ctx *c = (ln_ctx *)cv;
    if (c->kind == 'f')
        softmax_lse_float(c->x, c->y, c->rstd, r0, r1, c->n);
    else
        softmax_lse_double(c->x, c->y, c->rstd, r0, r1, c->n);
}

/* softmax_lse(x, p | None, lse, n) */
static PyObject *py_softmax_lse(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    Py_ssize_t n;
    if (row_length(args, nargs, 3, &n) < 0)
        return NULL;
    Bufs b;
    if (take(&b, args, 3, "iOo") < 0)
        return NULL;
    Py_ssize_t total = b.len[0], rows = total / n;
    if (total % n || same_lengths(&b, total, 1, 2) < 0 || same_lengths(&b, rows, 2, 3) < 0) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_ValueError, "ember._kernels.softmax_lse: bad arguments");
        release(&b);
        return NULL;
    }
    ln_ctx c = {b.kind, b.p[0], NULL, NULL, NULL, NULL, NULL, b.p[1], NULL, b.p[2],
                NULL, NULL, rows, n, 0.0};
    Py_BEGIN_ALLOW_THREADS
    parallel(call_softmax_lse, &c, rows, 1, MIN_PART / n > 1 ? MIN_PART / n : 1);
    Py_END_ALLOW_THREADS
    release(&b);
    Py_RETURN_NONE;
}

/* softmax_mid(op, x, g | None, out | None, lse | None, outer, C, inner): float32 arrays of
 * outer * C * inner elements (lse: outer * inner), see softmax_mid_units */
static PyObject *py_softmax_mid(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 8)
        return PyErr_Format(PyExc_TypeError, "ember._kernels.softmax_mid: expected 8 arguments");
    long op = PyLong_AsLong(args[0]);
    Py_ssize_t sz[3];
    for (int i = 0; i < 3; i++) {
        sz[i] = PyLong_AsSsize_t(args[5 + i]);
        if (sz[i] == -1 && PyErr_Occurred())
            return NULL;
    }
    if (op == -1 && PyErr_Occurred())
        return NULL;
    Py_ssize_t outer = sz[0], C = sz[1], inner = sz[2];
    if (op < 0 || op > 4 || outer < 1 || C < 1 || inner < 2)
        return PyErr_Format(PyExc_ValueError, "ember._kernels.softmax_mid: op %ld, sizes %zd, "
                            "%zd, %zd", op, outer, C, inner);
    Bufs b;
    if (take(&b, args + 1, 4, "iIOO") < 0)
        return NULL;
    Py_ssize_t total = outer * C * inner;
    int need_g = op == 2 || op == 3, need_out = op != 4, need_lse = op == 4;
    if (b.kind != 'f' || b.len[0] != total || (!b.p[1]) == need_g || (need_out && !b.p[2])
        || (b.p[1] && b.len[1] != total) || (b.p[2] && b.len[2] != total)
        || (!b.p[3]) == need_lse || (b.p[3] && b.len[3] != outer * inner)) {
        release(&b);
        return PyErr_Format(PyExc_ValueError, "ember._kernels.softmax_mid: bad arguments");
    }
    Py_ssize_t tiles = (inner + MID_TILE - 1) / MID_TILE;
    mid_job j = {(int)op, b.p[0], b.p[1], b.p[2], b.p[3], C, inner, tiles};
    Py_ssize_t per = MIN_PART / (C * MID_TILE);
    Py_BEGIN_ALLOW_THREADS
    parallel(call_softmax_mid, &j, outer * tiles, 1, per > 1 ? per : 1);
    Py_END_ALLOW_THREADS
    release(&b);
    Py_RETURN_NONE;
}

static void call_rms_norm(void *cv, Py_ssize_t r0, Py_ssize_t r1)
{
    ln_ctx *c = (ln_ctx *)cv;
    if (c->kind == 'f')
        rms_norm_float(c->x, c->w, c->y, c->rstd, r0, r1, c->n, c->eps);
    else
        rms_norm_double(c->x, c->w, c->y, c->rstd, r0, r1, c->n, c->eps);
}

static void call_rms_norm_backward(void *cv, Py_ssize_t r0, Py_ssize_t r1)
{
    ln_ctx *c = (ln_ctx *)cv;
    if (c->kind == 'f')
        rms_norm_backward_float(c->x, c->w, c->rstd_in, c->g, c->y, r0, r1, c->n);
    else
        rms_norm_backward_double(c->x, c->w, c->rstd_in, c->g, c->y, r0, r1, c->n);
}

static void call_rms_norm_colsums(void *cv, Py_ssize_t c0, Py_ssize_t c1)
{
    ln_ctx *c = (ln_ctx *)cv;
    if (c->kind == 'f')
        rms_norm_colsums_float(c->x, c->rstd_in, c->g, c->gw, c->rows, c->n, c0, c1);
    else
        rms_norm_colsums_double(c->x, c->rstd_in, c->g, c->gw, c->rows, c->n, c0, c1);
}

/* rms_norm(x, w | None, out, rstd, n, eps) */
static PyObject *py_rms_norm(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 6)
        return PyErr_Format(PyExc_TypeError, "ember._kernels.rms_norm: expected 6 arguments");
    double eps = PyFloat_AsDouble(args[5]);
    if (eps == -1.0 && PyErr_Occurred())
        return NULL;
    Py_ssize_t n;
    if (row_length(args, 5, 4, &n) < 0)
        return NULL;
    Bufs b;
    if (take(&b, args, 4, "iIoo") < 0)
        return NULL;
    Py_ssize_t total = b.len[0], rows = total / n;
    if (total % n || same_lengths(&b, n, 1, 2) < 0 || same_lengths(&b, total, 2, 3) < 0
        || same_lengths(&b, rows, 3, 4) < 0) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_ValueError, "ember._kernels.rms_norm: bad arguments");
        release(&b);
        return NULL;
    }
    ln_ctx c = {b.kind, b.p[0], b.p[1], NULL, NULL, NULL, NULL, b.p[2], NULL, b.p[3],
                NULL, NULL, rows, n, eps};
    Py_BEGIN_ALLOW_THREADS
    parallel(call_rms_norm, &c, rows, 1, MIN_PART / n > 1 ? MIN_PART / n : 1);
    Py_END_ALLOW_THREADS
    release(&b);
    Py_RETURN_NONE;
}

/* rms_norm_backward(x, w | None, rstd, g, gx | None, gw | None, n) */
static PyObject *py_rms_norm_backward(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    Py_ssize_t n;
    if (row_length(args, nargs, 6, &n) < 0)
        return NULL;
    Bufs b;
    if (take(&b, args, nargs, "iIiiOO") < 0)
        return NULL;
    Py_ssize_t total = b.len[0], rows = total / n;
    if (total % n || same_lengths(&b, n, 1, 2) < 0 || same_lengths(&b, rows, 2, 3) < 0
        || same_lengths(&b, total, 3, 5) < 0 || same_lengths(&b, n, 5, 6) < 0) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_ValueError, "ember._kernels.rms_norm_backward: bad arguments");
        release(&b);
        return NULL;
    }
    double *acc = NULL;
    if (b.p[5]) {
        acc = (double *)PyMem_RawCalloc((size_t)n, sizeof(double));
        if (!acc) {
            release(&b);
            return PyErr_NoMemory();
        }
    }
    ln_ctx c = {b.kind, b.p[0], b.p[1], NULL, NULL, b.p[2], b.p[3], b.p[4], NULL, NULL,
                acc, NULL, rows, n, 0.0};
    Py_BEGIN_ALLOW_THREADS
    if (acc)  /* by columns: each column's sum runs over the rows in order */
        parallel(call_rms_norm_colsums, &c, n, 64, rows > 0 ? MIN_PART / rows + 1 : n);
    if (b.p[4])
        parallel(call_rms_norm_backward, &c, rows, 1, MIN_PART / n > 1 ? MIN_PART / n : 1);
    for (Py_ssize_t i = 0; acc && i < n; i++) {
        if (b.kind == 'f')
            ((float *)b.p[5])[i] = (float)acc[i];
        else
            ((double *)b.p[5])[i] = acc[i];
    }
    Py_END_ALLOW_THREADS
    PyMem_RawFree(acc);
    release(&b);
    Py_RETURN_NONE;
}

/* batch_norm, channel_affine and group_norm: x as (N, C, hw) */
typedef struct {
    char kind;
    const void *x, *w, *b, *mean_in, *rstd_in, *g;
    void *y, *mean, *var, *rstd;
    double *s1, *s2;  /* backward's float64 sums: per channel (batch_norm), per (n, c) (group) */
    Py_ssize_t N, C, hw, G;
    double eps;
    double *sa, *sb;  /* batch_norm_short's column sums (C hw each) */
    void *pc;         /* ... and its per-column parameters (5 C hw of the kind) */
} cn_ctx;

static void call_batch_norm(void *cv, Py_ssize_t c0, Py_ssize_t c1)
{
    cn_ctx *c = (cn_ctx *)cv;
    if (c->pc && c->kind == 'f')
        batch_norm_short_float(c->x, c->w, c->b, c->y, c->mean, c->var, c->rstd, c->sa, c->sb,
                               c->pc, c->N, c->C, c->hw, c0, c1, c->eps);
    else if (c->pc)
        batch_norm_short_double(c->x, c->w, c->b, c->y, c->mean, c->var, c->rstd, c->sa, c->sb,
                                c->pc, c->N, c->C, c->hw, c0, c1, c->eps);
    else if (c->kind == 'f')
        batch_norm_float(c->x, c->w, c->b, c->y, c->mean, c->var, c->rstd, c->N, c->C, c->hw, c0,
                         c1, c->eps);
    else
        batch_norm_double(c->x, c->w, c->b, c->y, c->mean, c->var, c->rstd, c->N, c->C, c->hw,
                          c0, c1, c->eps);
}

static void call_batch_norm_backward(void *cv, Py_ssize_t c0, Py_ssize_t c1)
{
    cn_ctx *c = (cn_ctx *)cv;
    if (c->pc && c->kind == 'f')
        batch_norm_short_backward_float(c->x, c->w, c->mean_in, c->rstd_in, c->g, c->y, c->s1,
                                        c->s2, c->sa, c->sb, c->pc, c->N, c->C, c->hw, c0, c1);
    else if (c->pc)
        batch_norm_short_backward_double(c->x, c->w, c->mean_in, c->rstd_in, c->g, c->y, c->s1,
                                         c->s2, c->sa, c->sb, c->pc, c->N, c->C, c->hw, c0, c1);
    else if (c->kind == 'f')
        batch_norm_backward_float(c->x, c->w, c->mean_in, c->rstd_in, c->g, c->y, c->s1, c->s2,
                                  c->N, c->C, c->hw, c0, c1);
    else
        batch_norm_backward_double(c->x, c->w, c->mean_in, c->rstd_in, c->g, c->y, c->s1, c->s2,
                                   c->N, c->C, c->hw, c0, c1);
}

static void call_channel_affine(void *cv, Py_ssize_t r0, Py_ssize_t r1)
{
    cn_ctx *c = (cn_ctx *)cv;
    if (c->kind == 'f')
        channel_affine_float(c->x, c->w, c->b, c->y, c->C, c->hw, r0, r1);
    else
        channel_affine_double(c->x, c->w, c->b, c->y, c->C, c->hw, r0, r1);
}

static void call_group_norm(void *cv, Py_ssize_t r0, Py_ssize_t r1)
{
    cn_ctx *c = (cn_ctx *)cv;
    if (c->kind == 'f')
        group_norm_float(c->x, c->w, c->b, c->y, c->mean, c->rstd, c->C, c->hw, c->G, r0, r1,
                         c->eps);
    else
        group_norm_double(c->x, c->w, c->b, c->y, c->mean, c->rstd, c->C, c->hw, c->G, r0, r1,
                          c->eps);
}

static void call_group_norm_backward(void *cv, Py_ssize_t r0, Py_ssize_t r1)
{
    cn_ctx *c = (cn_ctx *)cv;
    if (c->kind == 'f')
        group_norm_backward_float(c->x, c->w, c->mean_in, c->rstd_in, c->g, c->y, c->s1, c->s2,
                                  c->C, c->hw, c->G, r0, r1);
    else
        group_norm_backward_double(c->x, c->w, c->mean_in, c->rstd_in, c->g, c->y, c->s1, c->s2,
                                   c->C, c->hw, c->G, r0, r1);
}

/* the trailing integer arguments args[at ..], each >= 1 */
static int sizes(PyObject *const *args, Py_ssize_t count, Py_ssize_t *out, const char *fn)
{
    for (Py_ssize_t i = 0; i < count; i++) {
        out[i] = PyLong_AsSsize_t(args[i]);
        if (out[i] == -1 && PyErr_Occurred())
            return -1;
        if (out[i] < 1) {
            PyErr_Format(PyExc_ValueError, "ember._kernels.%s: sizes must be >= 1", fn);
            return -1;
        }
    }
    return 0;
}

static PyObject *bad_args(Bufs *b, const char *fn)
{
    if (!PyErr_Occurred())
        PyErr_Format(PyExc_ValueError, "ember._kernels.%s: bad arguments", fn);
    release(b);
    return NULL;
}

/* store float64 sums into a T output (NULL: skipped) */
static void store_sums(char kind, void *out, const double *s, Py_ssize_t n)
{
    if (!out)
        return;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (kind == 'f')
            ((float *)out)[i] = (float)s[i];
        else
            ((double *)out)[i] = s[i];
    }
}

/* batch_norm_short's scratch for W = C hw columns: 2 W float64 sums and 5 W parameters of the
 * kind; 0 (nothing held) where memory ran out */
static int bn_short_scratch(Py_ssize_t W, char kind, double **cols, void **pc)
{
    *cols = (double *)PyMem_RawMalloc((size_t)(2 * W) * sizeof(double));
    *pc = PyMem_RawMalloc((size_t)(5 * W) * (kind == 'f' ? sizeof(float) : sizeof(double)));
    if (*cols && *pc)
        return 1;
    PyMem_RawFree(*cols);
    PyMem_RawFree(*pc);
    *cols = NULL;
    *pc = NULL;
    return 0;
}

/* batch_norm(x, w | None, b | None, y, mean, var, rstd, C, hw, eps): var is the biased one */
static PyObject *py_batch_norm(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    Py_ssize_t sz[2];
    if (nargs != 10)
        return PyErr_Format(PyExc_TypeError, "ember._kernels.batch_norm: expected 10 arguments");
    double eps = PyFloat_AsDouble(args[9]);
    if ((eps == -1.0 && PyErr_Occurred()) || sizes(args + 7, 2, sz, "batch_norm") < 0)
        return NULL;
    Bufs b;
    if (take(&b, args, 7, "iIIoooo") < 0)
        return NULL;
    Py_ssize_t C = sz[0], hw = sz[1], total = b.len[0], N = total / (C * hw);
    if (total % (C * hw) || same_lengths(&b, C, 1, 3) < 0 || same_lengths(&b, total, 3, 4) < 0
        || same_lengths(&b, C, 4, 7) < 0)
        return bad_args(&b, "batch_norm");
    double *cols = NULL;
    void *pc = NULL;
    if (hw <= LANES && !(bn_short_scratch(C * hw, b.kind, &cols, &pc))) {
        release(&b);
        return PyErr_NoMemory();
    }
    cn_ctx c = {b.kind, b.p[0], b.p[1], b.p[2], NULL, NULL, NULL, b.p[3], b.p[4], b.p[5], b.p[6],
                NULL, NULL, N, C, hw, 1, eps, cols, cols ? cols + C * hw : NULL, pc};
    Py_BEGIN_ALLOW_THREADS  /* (by columns: parts of whole cache lines of channels) */
    parallel(call_batch_norm, &c, C, pc ? 16 : 1, MIN_PART / (N * hw) + 1);
    Py_END_ALLOW_THREADS
    PyMem_RawFree(cols);
    PyMem_RawFree(pc);
    release(&b);
    Py_RETURN_NONE;
}

/* batch_norm_backward(x, w | None, mean, rstd, g, gx | None, gw | None, gb | None, C, hw) */
static PyObject *py_batch_norm_backward(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    Py_ssize_t sz[2];
    if (nargs != 10)
        return PyErr_Format(PyExc_TypeError,
                            "ember._kernels.batch_norm_backward: expected 10 arguments");
    if (sizes(args + 8, 2, sz, "batch_norm_backward") < 0)
        return NULL;
    Bufs b;
    if (take(&b, args, 8, "iIiiiOOO") < 0)
        return NULL;
    Py_ssize_t C = sz[0], hw = sz[1], total = b.len[0], N = total / (C * hw);
    if (total % (C * hw) || same_lengths(&b, C, 1, 4) < 0 || same_lengths(&b, total, 4, 6) < 0
        || same_lengths(&b, C, 6, 8) < 0)
        return bad_args(&b, "batch_norm_backward");
    double *acc = (double *)PyMem_RawMalloc((size_t)(2 * C) * sizeof(double));
    if (!acc) {
        release(&b);
        return PyErr_NoMemory();
    }
    double *cols = NULL;
    void *pc = NULL;
    if (hw <= LANES && !(bn_short_scratch(C * hw, b.kind, &cols, &pc))) {
        PyMem_RawFree(acc);
        release(&b);
        return PyErr_NoMemory();
    }
    cn_ctx c = {b.kind, b.p[0], b.p[1], NULL, b.p[2], b.p[3], b.p[4], b.p[5], NULL, NULL, NULL,
                acc, acc + C, N, C, hw, 1, 0.0, cols, cols ? cols + C * hw : NULL, pc};
    Py_BEGIN_ALLOW_THREADS
    parallel(call_batch_norm_backward, &c, C, pc ? 16 : 1, MIN_PART / (N * hw) + 1);
    store_sums(b.kind, b.p[6], acc + C, C);
    store_sums(b.kind, b.p[7], acc, C);
    Py_END_ALLOW_THREADS
    PyMem_RawFree(acc);
    PyMem_RawFree(cols);
    PyMem_RawFree(pc);
    release(&b);
    Py_RETURN_NONE;
}

/* channel_affine(x, scale, shift | None, y, C, hw) */
static PyObject *py_channel_affine(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    Py_ssize_t sz[2];
    if (nargs != 6)
        return PyErr_Format(PyExc_TypeError, "ember._kernels.channel_affine: expected 6 arguments");
    if (sizes(args + 4, 2, sz, "channel_affine") < 0)
        return NULL;
    Bufs b;
    if (take(&b, args, 4, "iiIo") < 0)
        return NULL;
    Py_ssize_t C = sz[0], hw = sz[1], total = b.len[0];
    if (total % (C * hw) || same_lengths(&b, C, 1, 3) < 0 || same_lengths(&b, total, 3, 4) < 0)
        return bad_args(&b, "channel_affine");
    cn_ctx c = {b.kind, b.p[0], b.p[1], b.p[2], NULL, NULL, NULL, b.p[3], NULL, NULL, NULL,
                NULL, NULL, total / (C * hw), C, hw, 1, 0.0};
    Py_BEGIN_ALLOW_THREADS
    parallel(call_channel_affine, &c, total / hw, 1, MIN_PART / hw + 1);
    Py_END_ALLOW_THREADS
    release(&b);
    Py_RETURN_NONE;
}

/* group_norm(x, w | None, b | None, y, mean, rstd, C, hw, G, eps) */
static PyObject *py_group_norm(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    Py_ssize_t sz[3];
    if (nargs != 10)
        return PyErr_Format(PyExc_TypeError, "ember._kernels.group_norm: expected 10 arguments");
    double eps = PyFloat_AsDouble(args[9]);
    if ((eps == -1.0 && PyErr_Occurred()) || sizes(args + 6, 3, sz, "group_norm") < 0)
        return NULL;
    Bufs b;
    if (take(&b, args, 6, "iIIooo") < 0)
        return NULL;
    Py_ssize_t C = sz[0], hw = sz[1], G = sz[2], total = b.len[0], rows = total / (C * hw) * G;
    if (total % (C * hw) || C % G || same_lengths(&b, C, 1, 3) < 0
        || same_lengths(&b, total, 3, 4) < 0 || same_lengths(&b, rows, 4, 6) < 0)
        return bad_args(&b, "group_norm");
    Py_ssize_t m_ = C / G * hw;
    cn_ctx c = {b.kind, b.p[0], b.p[1], b.p[2], NULL, NULL, NULL, b.p[3], b.p[4], NULL, b.p[5],
                NULL, NULL, total / (C * hw), C, hw, G, eps};
    Py_BEGIN_ALLOW_THREADS
    parallel(call_group_norm, &c, rows, 1, MIN_PART / m_ + 1);
    Py_END_ALLOW_THREADS
    release(&b);
    Py_RETURN_NONE;
}

/* group_norm_backward(x, w | None, mean, rstd, g, gx | None, gw | None, gb | None, C, hw, G) */
static PyObject *py_group_norm_backward(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    Py_ssize_t sz[3];
    if (nargs != 11)
        return PyErr_Format(PyExc_TypeError,
                            "ember._kernels.group_norm_backward: expected 11 arguments");
    if (sizes(args + 8, 3, sz, "group_norm_backward") < 0)
        return NULL;
    Bufs b;
    if (take(&b, args, 8, "iIiiiOOO") < 0)
        return NULL;
    Py_ssize_t C = sz[0], hw = sz[1], G = sz[2], total = b.len[0], N = total / (C * hw);
    Py_ssize_t rows = N * G;
    if (total % (C * hw) || C % G || same_lengths(&b, C, 1, 2) < 0
        || same_lengths(&b, rows, 2, 4) < 0 || same_lengths(&b, total, 4, 6) < 0
        || same_lengths(&b, C, 6, 8) < 0)
        return bad_args(&b, "group_norm_backward");
    double *acc = (double *)PyMem_RawMalloc((size_t)(2 * N * C) * sizeof(double));
    if (!acc) {
        release(&b);
        return PyErr_NoMemory();
    }
    double *db = acc, *dsx = acc + N * C;
    cn_ctx c = {b.kind, b.p[0], b.p[1], NULL, b.p[2], b.p[3], b.p[4], b.p[5], NULL, NULL, NULL,
                db, dsx, N, C, hw, G, 0.0};
    Py_BEGIN_ALLOW_THREADS
    parallel(call_group_norm_backward, &c, rows, 1, MIN_PART / (C / G * hw) + 1);
    /* grad_w, grad_b: the (n, c) sums over n in order, in the first row's slots */
    for (Py_ssize_t n = 1; n < N; n++)
        for (Py_ssize_t k = 0; k < C; k++) {
            db[k] += db[n * C + k];
            dsx[k] += dsx[n * C + k];
        }
    store_sums(b.kind, b.p[6], dsx, C);
    store_sums(b.kind, b.p[7], db, C);
    Py_END_ALLOW_THREADS
    PyMem_RawFree(acc);
    release(&b);
    Py_RETURN_NONE;
}

typedef struct {
    char kind;
    const int64_t *idx, *take;
    const void *src, *scale;
    void *out;
    Py_ssize_t n, d;
} scatter_ctx;

static void call_scatter_rows(void *cv, Py_ssize_t j0, Py_ssize_t j1)
{
    scatter_ctx *c = (scatter_ctx *)cv;
    if (c->kind == 'f')
        scatter_rows_float(c->idx, c->take, c->src, c->scale, c->out, c->n, c->d, j0, j1);
    else
        scatter_rows_double(c->idx, c->take, c->src, c->scale, c->out, c->n, c->d, j0, j1);
}

/* whether every p[i] is in [0, bound): one unsigned comparison each (a negative index is a
 * huge unsigned one), vectorised in the cloned variants; a scalar loop with two signed
 * comparisons took longer than max pooling's backward scatter it guarded (27% of the call
 * against 16%, 147K indices) */
CLONES static int indices_within(const int64_t *RESTRICT p, Py_ssize_t n, Py_ssize_t bound)
{
    const uint64_t ub = (uint64_t)bound;
    uint64_t bad = 0;
    for (Py_ssize_t i = 0; i < n; i++)
        bad |= (uint64_t)p[i] >= ub;
    return bad == 0;
}

/* a C-contiguous int64 buffer (None: NULL) whose values lie in [0, bound) */
static int index_buffer(PyObject *obj, Py_buffer *view, Py_ssize_t bound, const char *what)
{
    view->buf = NULL;
    if (obj == Py_None)
        return 0;
    if (PyObject_GetBuffer(obj, view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0)
        return -1;
    const char *f = view->format ? view->format : "B";
    if (*f == '@' || *f == '=' || *f == '<')
        f++;
    if (view->itemsize != 8 || !(f[0] == 'q' || f[0] == 'l') || f[1] != '\0') {
        PyBuffer_Release(view);
        view->buf = NULL;
        PyErr_Format(PyExc_TypeError, "ember._kernels: %s must be an int64 array", what);
        return -1;
    }
    if (!indices_within((const int64_t *)view->buf, view->len / 8, bound)) {
        PyBuffer_Release(view);
        view->buf = NULL;
        PyErr_Format(PyExc_ValueError, "ember._kernels: %s out of range [0, %zd)", what, bound);
        return -1;
    }
    return 0;
}

/* scatter_rows(idx, take | None, src, scale | None, out): out[idx[i]] += src[take[i] or i]
 * [* scale[i]]; src (m, d), out (V, d) as flat buffers with d = out's row length (last arg) */
static PyObject *py_scatter_rows(PyObject *mod, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 6)
        return PyErr_Format(PyExc_TypeError, "ember._kernels.scatter_rows: expected 6 arguments");
    Py_ssize_t d;
    if (sizes(args + 5, 1, &d, "scatter_rows") < 0)
        return NULL;
    PyObject *bufargs[3] = {args[2], args[3], args[4]};
    Bufs b;
    if (take(&b, bufargs, 3, "iIo") < 0)
        return NULL;
    Py_ssize_t rows_out = b.len[2] / d, rows_src = b.len[0] / d;
    if (b.len[2] % d || b.len[0] % d) {
        release(&b);
        return PyErr_Format(PyExc_ValueError, "ember._kernels.scatter_rows: bad sizes");
    }
    Py_buffer iv, tv;
    if (index_buffer(args[0], &iv, rows_out, "idx") < 0) {
        release(&b);
        return NULL;
    }
    Py_ssize_t n = iv.len / 8;
    if (index_buffer(args[1], &tv, rows_src, "take") < 0) {
        PyBuffer_Release(&iv);
        release(&b);
        return NULL;
    }
    int have_t = args[1] != Py_None;  /* (an empty buffer's pointer may be NULL) */
    if ((have_t ? tv.len / 8 != n : rows_src != n) || (b.p[1] && b.len[1] != n)) {
        if (have_t)
            PyBuffer_Release(&tv);
        PyBuffer_Release(&iv);
        release(&b);
        return PyErr_Format(PyExc_ValueError, "ember._kernels.scatter_rows: bad sizes");
    }
    scatter_ctx c = {b.kind, (const int64_t *)iv.buf, have_t ? (const int64_t *)tv.buf : NULL,
                     b.p[0], b.p[1], b.p[2], n, d};
    Py_BEGIN_ALLOW_THREADS  /* by columns: each element's sum runs over the rows in order */
    parallel(call_scatter_rows, &c, d, 16, n > 0 ? MIN_PART / n + 1 : d);
    Py_END_ALLOW_THREADS
    if (have_t)
        PyBuffer_Release(&tv);
    PyBuffer_Release(&iv);
    release(&b);
    Py_RETURN_NONE;
}

typedef struct {
    char kind;
    const void *src;
    void *dst;
    conv_geom g;
} conv_ctx;

static void call_im2col(void *cv, Py_ssize_t p0, Py_ssize_t p1)
{
    conv_ctx *c = (conv_ctx *)cv;
    if (c->kind == 'f')
        im2col_float(c->src, c->dst, &c->g, p0, p1);
    else
        im2col_double(c->src, c->dst, &c->g, p0, p1);
}

static void call_col2im(void *cv, Py_ssize_t p0, Py_ssize_t p1)
{
    conv_ctx *c = (conv_ctx *)cv;
    if (c->kind == 'f')
        col2im_float(c->src, c->dst, &c->g, p0, p1);
    else
        col2im_double(c->src, c->dst, &c->g, p0, p1);
}

/* A layout kernel's geometry: the n ints of tuple t into v, each in [0, hi] (or [-hi, hi] for
 * the indices whose bit is set in neg). 0; -1 with an error set ("<fn>: bad geometry"). */
static int geometry(PyObject *t, Py_ssize_t *v, Py_ssize_t n, Py_ssize_t hi, unsigned neg,
                    const char *fn)
{
    for (Py_ssize_t i = 0; i < n; i++) {
        v[i] = PyLong_AsSsize_t(PyTuple_GET_ITEM(t, i));
        if (v[i] == -1 && PyErr_Occurred())
            return -1;
        if (v[i] < (((neg >> i) & 1) ? -hi : 0) || v[i] > hi) {
            PyErr_Format(PyExc_ValueError, "ember._kernels.%s: bad geometry", fn);
            return -1;
        }
    }
    return 0;
}

/* im2col(x, cols, geom) / col2im(cols, x, geom[, accumulate]): geom a tuple of 19 ints (N, C, H,
 * W, kh, kw, sh, sw, pt, pl, dh, dw, OH, OW, sn, st, rs, cs, wide); x (N, C, H, W) and the
 * columns as flat C-contiguous buffers of one dtype, every index the strides reach checked to
 * lie inside. col2im with ``accumulate`` true adds onto x rather than zeroing it first. */
static PyObject *conv_cols(PyObject *const *args, Py_ssize_t nargs, int to_cols)
{
    const char *fn = to_cols ? "im2col" : "col2im";
    if (nargs != 3 + !to_cols || !PyTuple_Check(args[2]) || PyTuple_GET_SIZE(args[2]) != 19)
        return PyErr_Format(PyExc_TypeError, "ember._kernels.%s: expected (src, dst, a tuple "
                            "of 19 ints)", fn);
    Py_ssize_t v[19];
    /* (pt and pl may be negative: the window rows and columns of a chunk of the output) */
    if (geometry(args[2], v, 19, (Py_ssize_t)1 << 40, (1u << 8) | (1u << 9), fn) < 0)
        return NULL;
    int acc = to_cols ? 0 : PyObject_IsTrue(args[3]);
    if (acc < 0)
        return NULL;
    conv_geom g = {v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], v[9], v[10], v[11],
                   v[12], v[13], v[14], v[15], v[16], v[17], v[18], 0, acc};
    if (g.kh < 1 || g.kw < 1 || g.sh < 1 || g.sw < 1 || g.dh < 1 || g.dw < 1 || g.N < 1
        || g.C < 1 || g.H < 1 || g.W < 1 || g.OH < 1 || g.OW < 1 || g.cs < 1
        || (g.wide && (g.sh != 1 || g.sw != 1 || g.cs != 1 || g.rs < g.OW)))
        return PyErr_Format(PyExc_ValueError, "ember._kernels.%s: bad geometry", fn);
    g.Wp = g.rs;
    Bufs b;
    PyObject *bufargs[2] = {args[0], args[1]};
    if (take(&b, bufargs, 2, "io") < 0)
        return NULL;
    Py_ssize_t xlen = b.len[to_cols ? 0 : 1], clen = b.len[to_cols ? 1 : 0];
    /* the last element any tap or window reaches */
    Py_ssize_t last = (g.N - 1) * g.sn + (g.C * g.kh * g.kw - 1) * g.st
                      + (g.wide ? g.rs * g.OH - 1 : (g.OH - 1) * g.rs + (g.OW - 1) * g.cs);
    if (xlen != g.N * g.C * g.H * g.W || last >= clen) {
        release(&b);
        return PyErr_Format(PyExc_ValueError, "ember._kernels.%s: bad sizes", fn);
    }
    conv_ctx c = {b.kind, b.p[0], b.p[1], g};
    Py_ssize_t per = g.kh * g.kw * g.OH * (g.wide ? g.rs : g.OW);
    Py_BEGIN_ALLOW_THREADS  /* by planes (n, c): each writes its own */
    parallel(to_cols ? call_im2col : call_col2im, &c, g.N * g.C, 1, MIN_PART / per + 1);
    Py_END_ALLOW_THREADS
    release(&b);
    Py_RETURN_NONE;
}

static PyObject *py_im2col(PyObject *mod, PyObject *const *args, Py_ssize_t nargs)
{
    return conv_cols(args, nargs, 1);
}

static PyObject *py_col2im(PyObject *mod, PyObject *const *args, Py_ssize_t nargs)
{
    return conv_cols(args, nargs, 0);
}

/* An int64 C-contiguous buffer (writable where asked), no range check. */
static int int64_buffer(PyObject *obj, Py_buffer *view, int writable, const char *what)
{
    int flags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0);
    if (PyObject_GetBuffer(obj, view, flags) < 0)
        return -1;
    const char *f = view->format ? view->format : "B";
    if (*f == '@' || *f == '=' || *f == '<')
        f++;
    if (view->itemsize != 8 || !(f[0] == 'q' || f[0] == 'l') || f[1] != '\0') {
        PyBuffer_Release(view);
        PyErr_Format(PyExc_TypeError, "ember._kernels: %s must be a C-contiguous%s int64 array",
                     what, writable ? ", writable" : "");
        return -1;
    }
    return 0;
}

typedef struct {
    char kind;
    const void *x;
    void *y;
    int64_t *idx;
    pool_geom g;
    Py_ssize_t n, m;
    int failed;
} pool_ctx;

static void call_max_pool(void *cv, Py_ssize_t p0, Py_ssize_t p1)
{
    pool_ctx *c = (pool_ctx *)cv;
    int32_t *code = (int32_t *)malloc((size_t)(c->g.OH * c->g.OW) * sizeof(int32_t));
    int64_t *offs = (int64_t *)malloc((size_t)(c->g.kh * c->g.kw) * sizeof(int64_t));
    if (!code || !offs) {
        free(code);
        free(offs);
        c->failed = 1;
        return;
    }
    if (c->kind == 'f')
        max_pool_float(c->x, c->y, c->idx, code, offs, &c->g, p0, p1);
    else
        max_pool_double(c->x, c->y, c->idx, code, offs, &c->g, p0, p1);
    free(code);
    free(offs);
}

static void call_max_pool_backward(void *cv, Py_ssize_t p0, Py_ssize_t p1)
{
    pool_ctx *c = (pool_ctx *)cv;
    double *acc = NULL;
    if (!c->g.unique && !(acc = (double *)malloc((size_t)c->n * sizeof(double)))) {
        c->failed = 1;  /* (each part writes only this flag's one value) */
        return;
    }
    if (c->kind == 'f')
        max_pool_backward_float(c->x, c->idx, c->y, acc, c->n, c->m, c->g.unique, p0, p1);
    else
        max_pool_backward_double(c->x, c->idx, c->y, acc, c->n, c->m, c->g.unique, p0, p1);
    free(acc);
}

/* max_pool(x, y, idx | None, geom): geom a tuple of 12 ints (H, W, kh, kw, sh, sw, pt, pl, dh,
 * dw, OH, OW); x (planes, H, W), y and idx (planes, OH, OW) as flat C-contiguous buffers. */
static PyObject *py_max_pool(PyObject *mod, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 4 || !PyTuple_Check(args[3]) || PyTuple_GET_SIZE(args[3]) != 12)
        return PyErr_Format(PyExc_TypeError, "ember._kernels.max_pool: expected (x, y, idx, a "
                            "tuple of 12 ints)");
    Py_ssize_t v[12];
    if (geometry(args[3], v, 12, (Py_ssize_t)1 << 40, 0, "max_pool") < 0)
        return NULL;
    pool_geom g = {v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], v[9], v[10], v[11], 1};
    if (g.H < 1 || g.W < 1 || g.kh < 1 || g.kw < 1 || g.sh < 1 || g.sw < 1 || g.dh < 1
        || g.dw < 1 || g.OH < 1 || g.OW < 1)
        return PyErr_Format(PyExc_ValueError, "ember._kernels.max_pool: bad geometry");
    Bufs b;
    PyObject *bufargs[2] = {args[0], args[1]};
    if (take(&b, bufargs, 2, "io") < 0)
        return NULL;
    Py_ssize_t P = b.len[0] / (g.H * g.W), m = g.OH * g.OW;
    if (b.len[0] != P * g.H * g.W || b.len[1] != P * m) {
        release(&b);
        return PyErr_Format(PyExc_ValueError, "ember._kernels.max_pool: bad sizes");
    }
    Py_buffer iv;
    int have_idx = args[2] != Py_None;
    if (have_idx) {
        if (int64_buffer(args[2], &iv, 1, "idx") < 0) {
            release(&b);
            return NULL;
        }
        if (iv.len / 8 != P * m) {
            PyBuffer_Release(&iv);
            release(&b);
            return PyErr_Format(PyExc_ValueError, "ember._kernels.max_pool: bad sizes");
        }
    }
    pool_ctx c = {b.kind, b.p[0], b.p[1], have_idx ? (int64_t *)iv.buf : NULL, g, 0, m, 0};
    Py_ssize_t per = g.kh * g.kw * m;
    Py_BEGIN_ALLOW_THREADS  /* by planes: each writes its own */
    parallel(call_max_pool, &c, P, 1, MIN_PART / per + 1);
    Py_END_ALLOW_THREADS
    if (have_idx)
        PyBuffer_Release(&iv);
    release(&b);
    if (c.failed)
        return PyErr_NoMemory();
    Py_RETURN_NONE;
}


typedef struct {
    char kind;
    const void *src;
    void *dst;
    conv_geom g;
    int failed;
} rows_ctx;

static void call_im2row(void *cv, Py_ssize_t n0, Py_ssize_t n1)
{
    rows_ctx *c = (rows_ctx *)cv;
    void *tile = malloc((size_t)(c->g.H * c->g.W * c->g.C) * (c->kind == 'f' ? 4 : 8));
    if (!tile) {
        c->failed = 1;
        return;
    }
    if (c->kind == 'f')
        im2row_float(c->src, c->dst, tile, &c->g, n0, n1);
    else
        im2row_double(c->src, c->dst, tile, &c->g, n0, n1);
    free(tile);
}

static void call_col2im_rows(void *cv, Py_ssize_t r0, Py_ssize_t r1)
{
    rows_ctx *c = (rows_ctx *)cv;
    void *acc = malloc((size_t)(c->g.W * c->g.C) * (c->kind == 'f' ? 4 : 8));
    if (!acc) {
        c->failed = 1;
        return;
    }
    if (c->kind == 'f')
        col2im_rows_float(c->src, c->dst, acc, &c->g, r0, r1);
    else
        col2im_rows_double(c->src, c->dst, acc, &c->g, r0, r1);
    free(acc);
}

/* col2im_rows(rows, x, geom) / im2row(x, rows, geom): geom a tuple of 14 ints (N, C, H, W, kh,
 * kw, sh, sw, pt, pl, dh, dw, OH, OW); rows (N, OH, OW, kh, kw, C) and x (N, C, H, W) as flat
 * C-contiguous buffers. */
static PyObject *rows_cols(PyObject *const *args, Py_ssize_t nargs, int to_rows)
{
    const char *fn = to_rows ? "im2row" : "col2im_rows";
    if (nargs != 3 || !PyTuple_Check(args[2]) || PyTuple_GET_SIZE(args[2]) != 14)
        return PyErr_Format(PyExc_TypeError, "ember._kernels.%s: expected (src, dst, a tuple of "
                            "14 ints)", fn);
    Py_ssize_t v[14];
    if (geometry(args[2], v, 14, (Py_ssize_t)1 << 40, 0, fn) < 0)
        return NULL;
    conv_geom g = {v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], v[9], v[10], v[11],
                   v[12], v[13], 0, 0, 0, 1, 0, 0, 0};
    if (g.N < 1 || g.C < 1 || g.H < 1 || g.W < 1 || g.kh < 1 || g.kw < 1 || g.sh < 1
        || g.sw < 1 || g.dh < 1 || g.dw < 1 || g.OH < 1 || g.OW < 1)
        return PyErr_Format(PyExc_ValueError, "ember._kernels.%s: bad geometry", fn);
    Bufs b;
    PyObject *bufargs[2] = {args[0], args[1]};
    if (take(&b, bufargs, 2, "io") < 0)
        return NULL;
    Py_ssize_t rlen = b.len[to_rows ? 1 : 0], xlen = b.len[to_rows ? 0 : 1];
    if (rlen != g.N * g.OH * g.OW * g.kh * g.kw * g.C || xlen != g.N * g.C * g.H * g.W) {
        release(&b);
        return PyErr_Format(PyExc_ValueError, "ember._kernels.%s: bad sizes", fn);
    }
    rows_ctx c = {b.kind, b.p[0], b.p[1], g, 0};
    Py_ssize_t per = g.W * g.C * g.kh * g.kw;
    Py_BEGIN_ALLOW_THREADS  /* by images or image rows (n, h): each writes its own */
    if (to_rows)
        parallel(call_im2row, &c, g.N, 1, MIN_PART / (per * g.OH) + 1);
    else
        parallel(call_col2im_rows, &c, g.N * g.H, 1, MIN_PART / per + 1);
    Py_END_ALLOW_THREADS
    release(&b);
    if (c.failed)
        return PyErr_NoMemory();
    Py_RETURN_NONE;
}
static PyObject *py_col2im_rows(PyObject *mod, PyObject *const *args, Py_ssize_t nargs)
{
    return rows_cols(args, nargs, 0);
}

static PyObject *py_im2row(PyObject *mod, PyObject *const *args, Py_ssize_t nargs)
{
    return rows_cols(args, nargs, 1);
}

typedef struct {
    char kind;
    int what;  /* 0 to_batch_inner, 1 from_batch_inner, 2 col2im_batch_inner */
    const void *src;
    void *dst;
    conv_geom g;
    int failed;
} bi_ctx;

static void call_batch_inner(void *cv, Py_ssize_t c0, Py_ssize_t c1)
{
    bi_ctx *c = (bi_ctx *)cv;
    int f = c->kind == 'f';
    if (c->what == 0) {
        if (f)
            to_batch_inner_float(c->src, c->dst, &c->g, c0, c1);
        else
            to_batch_inner_double(c->src, c->dst, &c->g, c0, c1);
        return;
    }
    if (c->what == 1) {
        if (f)
            from_batch_inner_float(c->src, c->dst, &c->g, c0, c1);
        else
            from_batch_inner_double(c->src, c->dst, &c->g, c0, c1);
        return;
    }
    Py_ssize_t elems = c->g.H * c->g.W * c->g.N;
    if (c->what == 3)  /* (the windows' span) */
        elems = ((c->g.OH - 1) * c->g.sh + (c->g.kh - 1) * c->g.dh + 1)
                * ((c->g.OW - 1) * c->g.sw + (c->g.kw - 1) * c->g.dw + 1) * c->g.N;
    void *tile = malloc((size_t)elems * (f ? 4 : 8));
    if (!tile) {
        c->failed = 1;
        return;
    }
    if (c->what == 3) {
        if (f)
            im2col_batch_inner_float(c->src, c->dst, tile, &c->g, c0, c1);
        else
            im2col_batch_inner_double(c->src, c->dst, tile, &c->g, c0, c1);
    }
    else if (f)
        col2im_batch_inner_float(c->src, c->dst, tile, &c->g, c0, c1);
    else
        col2im_batch_inner_double(c->src, c->dst, tile, &c->g, c0, c1);
    free(tile);
}

/* to_batch_inner(x, buf, geom) / from_batch_inner(buf, x, geom): geom a tuple of 8 ints (N, C,
 * H, W, Hp, Wp, pt, pl), x (N, C, H, W) and buf (C, Hp, Wp, N) flat C-contiguous buffers of one
 * dtype, the window inside the buffer; col2im_batch_inner(cols, x, geom): geom 14 ints as
 * col2im_rows', cols (C, kh, kw, OH, OW, N); im2col_batch_inner(x, cols, geom): the same. */
static PyObject *batch_inner(PyObject *const *args, Py_ssize_t nargs, int what)
{
    static const char *names[4] = {"to_batch_inner", "from_batch_inner", "col2im_batch_inner",
                                   "im2col_batch_inner"};
    const char *fn = names[what];
    Py_ssize_t want = what >= 2 ? 14 : 8;
    if (nargs != 3 || !PyTuple_Check(args[2]) || PyTuple_GET_SIZE(args[2]) != want)
        return PyErr_Format(PyExc_TypeError, "ember._kernels.%s: expected (src, dst, a tuple of "
                            "%zd ints)", fn, want);
    Py_ssize_t v[14];
    if (geometry(args[2], v, want, (Py_ssize_t)1 << 40, 0, fn) < 0)
        return NULL;
    conv_geom g = {0};
    Py_ssize_t xlen, other;
    if (what >= 2) {
        g = (conv_geom){v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], v[9], v[10], v[11],
                        v[12], v[13], 0, 0, 0, 1, 0, 0, 0};
        if (g.kh < 1 || g.kw < 1 || g.sh < 1 || g.sw < 1 || g.dh < 1 || g.dw < 1 || g.OH < 1
            || g.OW < 1)
            return PyErr_Format(PyExc_ValueError, "ember._kernels.%s: bad geometry", fn);
        other = g.C * g.kh * g.kw * g.OH * g.OW * g.N;
    }
    else {  /* (Hp, Wp in OH, OW) */
        g.N = v[0], g.C = v[1], g.H = v[2], g.W = v[3], g.OH = v[4], g.OW = v[5], g.pt = v[6];
        g.pl = v[7];
        if (g.pt + g.H > g.OH || g.pl + g.W > g.OW)
            return PyErr_Format(PyExc_ValueError, "ember._kernels.%s: bad geometry", fn);
        other = g.C * g.OH * g.OW * g.N;
    }
    if (g.N < 1 || g.C < 1 || g.H < 1 || g.W < 1)
        return PyErr_Format(PyExc_ValueError, "ember._kernels.%s: bad geometry", fn);
    xlen = g.N * g.C * g.H * g.W;
    Bufs b;
    PyObject *bufargs[2] = {args[0], args[1]};
    if (take(&b, bufargs, 2, "io") < 0)
        return NULL;
    int x_first = what == 0 || what == 3;  /* (the image is the source) */
    if (b.len[x_first ? 0 : 1] != xlen || b.len[x_first ? 1 : 0] != other) {
        release(&b);
        return PyErr_Format(PyExc_ValueError, "ember._kernels.%s: bad sizes", fn);
    }
    bi_ctx c = {b.kind, what, b.p[0], b.p[1], g, 0};
    Py_ssize_t per = other / g.C;
    Py_BEGIN_ALLOW_THREADS  /* by channels: each writes its own */
    parallel(call_batch_inner, &c, g.C, 1, MIN_PART / per + 1);
    Py_END_ALLOW_THREADS
    release(&b);
    if (c.failed)
        return PyErr_NoMemory();
    Py_RETURN_NONE;
}

static PyObject *py_to_batch_inner(PyObject *mod, PyObject *const *args, Py_ssize_t nargs)
{
    return batch_inner(args, nargs, 0);
}

static PyObject *py_from_batch_inner(PyObject *mod, PyObject *const *args, Py_ssize_t nargs)
{
    return batch_inner(args, nargs, 1);
}

static PyObject *py_col2im_batch_inner(PyObject *mod, PyObject *const *args, Py_ssize_t nargs)
{
    return batch_inner(args, nargs, 2);
}

static PyObject *py_im2col_batch_inner(PyObject *mod, PyObject *const *args, Py_ssize_t nargs)
{
    return batch_inner(args, nargs, 3);
}

typedef struct {
    char kind;
    const void *x, *wt, *bp;
    void *y;
    const Py_ssize_t *off;
    conv_geom g;
    Py_ssize_t O, Hq, Wq;
    int failed;
} cd_ctx;

static void call_conv_direct(void *cv, Py_ssize_t n0, Py_ssize_t n1)
{
    cd_ctx *c = (cd_ctx *)cv;
    int f = c->kind == 'f';
    void *pad = malloc((size_t)(c->g.C * c->Hq * c->Wq) * (f ? 4 : 8));
    if (!pad) {
        c->failed = 1;
        return;
    }
    if (f)
        conv_direct_float(c->x, c->wt, c->bp, c->y, pad, c->off, &c->g, c->O, c->Hq, c->Wq, n0, n1);
    else
        conv_direct_double(c->x, c->wt, c->bp, c->y, pad, c->off, &c->g, c->O, c->Hq, c->Wq, n0,
                           n1);
    free(pad);
}

/* conv_direct(x, wt, bp, y, geom): geom a tuple of 15 ints (N, C, H, W, kh, kw, sh, sw, pt, pl,
 * dh, dw, OH, OW, O), sw 1; x (N, C, H, W), wt (ceil(O / 3), C kh kw, 3) (the weight packed
 * and zero-padded), bp (ceil(O / 3) 3) (the bias, zero-padded), y (N, O, OH, OW): flat
 * C-contiguous buffers of one dtype. */
static PyObject *py_conv_direct(PyObject *mod, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 5 || !PyTuple_Check(args[4]) || PyTuple_GET_SIZE(args[4]) != 15)
        return PyErr_Format(PyExc_TypeError, "ember._kernels.conv_direct: expected (x, wt, bp, "
                            "y, a tuple of 15 ints)");
    Py_ssize_t v[15];
    if (geometry(args[4], v, 15, (Py_ssize_t)1 << 30, 0, "conv_direct") < 0)
        return NULL;
    conv_geom g = {v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], v[9], v[10], v[11],
                   v[12], v[13], 0, 0, 0, 1, 0, 0, 0};
    Py_ssize_t O = v[14];
    if (g.N < 1 || g.C < 1 || g.H < 1 || g.W < 1 || g.kh < 1 || g.kw < 1 || g.sh < 1
        || g.sw != 1 || g.dh < 1 || g.dw < 1 || g.OH < 1 || g.OW < 1 || O < 1)
        return PyErr_Format(PyExc_ValueError, "ember._kernels.conv_direct: bad geometry");
    /* the scratch planes: every row and column a window reaches, rows of whole tiles */
    Py_ssize_t Hq = (g.OH - 1) * g.sh + (g.kh - 1) * g.dh + 1;
    Py_ssize_t Wq = (g.OW + CD_VB - 1) / CD_VB * CD_VB + (g.kw - 1) * g.dw;
    Py_ssize_t K = g.C * g.kh * g.kw, Ob = (O + CD_OB - 1) / CD_OB;
    Bufs b;
    if (take(&b, args, 4, "iiio") < 0)
        return NULL;
    if (b.len[0] != g.N * g.C * g.H * g.W || b.len[1] != Ob * K * CD_OB
        || b.len[2] != Ob * CD_OB || b.len[3] != g.N * O * g.OH * g.OW) {
        release(&b);
        return PyErr_Format(PyExc_ValueError, "ember._kernels.conv_direct: bad sizes");
    }
    Py_ssize_t *off = malloc(sizeof(Py_ssize_t) * (size_t)K);
    if (!off) {
        release(&b);
        return PyErr_NoMemory();
    }
    for (Py_ssize_t c = 0; c < g.C; c++)  /* each tap's offset in the scratch planes */
        for (Py_ssize_t i = 0; i < g.kh; i++)
            for (Py_ssize_t j = 0; j < g.kw; j++)
                off[(c * g.kh + i) * g.kw + j] = (c * Hq + i * g.dh) * Wq + j * g.dw;
    cd_ctx c = {b.kind, b.p[0], b.p[1], b.p[2], b.p[3], off, g, O, Hq, Wq, 0};
    Py_ssize_t per = O * g.OH * g.OW * K;
    Py_BEGIN_ALLOW_THREADS  /* by images: each writes its own */
    parallel(call_conv_direct, &c, g.N, 1, MIN_PART / per + 1);
    Py_END_ALLOW_THREADS
    free(off);
    release(&b);
    if (c.failed)
        return PyErr_NoMemory();
    Py_RETURN_NONE;
}

/* max_pool_backward(gy, idx, gx, unique): gy and idx (planes, m), gx (planes, n) with n its
 * last argument's plane size; idx in [0, n) (checked). */
static PyObject *py_max_pool_backward(PyObject *mod, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 5)
        return PyErr_Format(PyExc_TypeError,
                            "ember._kernels.max_pool_backward: expected 5 arguments");
    Py_ssize_t n;
    if (sizes(args + 4, 1, &n, "max_pool_backward") < 0)
        return NULL;
    int unique = PyObject_IsTrue(args[3]);
    if (unique < 0)
        return NULL;
    Bufs b;
    PyObject *bufargs[2] = {args[0], args[2]};
    if (take(&b, bufargs, 2, "io") < 0)
        return NULL;
    Py_ssize_t P = b.len[1] / n, m = P > 0 ? b.len[0] / P : 0;
    if (P < 1 || b.len[1] != P * n || b.len[0] != P * m || m < 1) {
        release(&b);
        return PyErr_Format(PyExc_ValueError, "ember._kernels.max_pool_backward: bad sizes");
    }
    Py_buffer iv;
    if (index_buffer(args[1], &iv, n, "idx") < 0) {
        release(&b);
        return NULL;
    }
    if (iv.len / 8 != P * m) {
        PyBuffer_Release(&iv);
        release(&b);
        return PyErr_Format(PyExc_ValueError, "ember._kernels.max_pool_backward: bad sizes");
    }
    pool_ctx c = {b.kind, b.p[0], b.p[1], (int64_t *)iv.buf, {0}, n, m, 0};
    c.g.unique = unique;
    Py_BEGIN_ALLOW_THREADS  /* by planes: each writes its own */
    parallel(call_max_pool_backward, &c, P, 1, MIN_PART / (n + m) + 1);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&iv);
    release(&b);
    if (c.failed)
        return PyErr_NoMemory();
    Py_RETURN_NONE;
}

/* half_cast(src, dst, mode): mode 0 float32 -> bfloat16, 1 bfloat16 -> float32, 2 float32 ->
 * float16, 3 float16 -> float32; the half side as a uint16 buffer, the float side float32 (or
 * uint32), both C-contiguous with the same number of elements */
static PyObject *py_half_cast(PyObject *mod, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3)
        return PyErr_Format(PyExc_TypeError, "ember._kernels.half_cast: expected 3 arguments");
    long mode = PyLong_AsLong(args[2]);
    if (mode == -1 && PyErr_Occurred())
        return NULL;
    if (mode < 0 || mode > 3)
        return PyErr_Format(PyExc_ValueError, "ember._kernels.half_cast: mode 0 to 3");
    Py_ssize_t from = mode % 2 ? 2 : 4, to = mode % 2 ? 4 : 2;
    Py_buffer src, dst;
    if (PyObject_GetBuffer(args[0], &src, PyBUF_C_CONTIGUOUS) < 0)
        return NULL;
    if (PyObject_GetBuffer(args[1], &dst, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) < 0) {
        PyBuffer_Release(&src);
        return NULL;
    }
    if (src.itemsize != from || dst.itemsize != to || src.len / from != dst.len / to) {
        PyBuffer_Release(&dst);
        PyBuffer_Release(&src);
        return PyErr_Format(PyExc_ValueError, "ember._kernels.half_cast: expected %zd-byte "
                            "items in and %zd-byte items out, as many", from, to);
    }
    static unary_fn fns[4] = {cast_to_bf16, cast_from_bf16, cast_to_f16, cast_from_f16};
#if HAVE_CLONES
    __builtin_cpu_init();
    if (mode == 2 && __builtin_cpu_supports("f16c") && __builtin_cpu_supports("avx2"))
        fns[2] = cast_to_f16_f16c;  /* (the same bits: see cast_to_f16_f16c) */
#endif
    call_ctx c = {(void *)fns[mode], src.buf, NULL, dst.buf, 0, NULL};
    Py_BEGIN_ALLOW_THREADS
    parallel(call_unary, &c, src.len / from, 64, MIN_PART);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&dst);
    PyBuffer_Release(&src);
    Py_RETURN_NONE;
}

typedef void (*round_fn)(const void *x, void *w, void *y, Py_ssize_t i0, Py_ssize_t i1);

static void call_half_round(void *c, Py_ssize_t i0, Py_ssize_t i1)
{
    call_ctx *k = (call_ctx *)c;
    ((round_fn)k->f)(k->a, (void *)k->b, k->out, i0, i1);
}

/* half_round(src, half, wide, mode): src (float32) rounded to bfloat16 (mode 0) or float16 (2)
 * into half (a uint16 buffer), and the rounded values widened back into wide (float32; src itself
 * rounds in place), in one pass: half_cast(src, half, mode) then half_cast(half, wide, mode + 1),
 * bit for bit; all C-contiguous with the same number of elements. Mode 4: mode 0 by the portable
 * loop even where the AVX-512 one runs (for the tests). */
static PyObject *py_half_round(PyObject *mod, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 4)
        return PyErr_Format(PyExc_TypeError, "ember._kernels.half_round: expected 4 arguments");
    long mode = PyLong_AsLong(args[3]);
    if (mode == -1 && PyErr_Occurred())
        return NULL;
    if (mode != 0 && mode != 2 && mode != 4)
        return PyErr_Format(PyExc_ValueError, "ember._kernels.half_round: mode 0, 2 or 4");
    Py_buffer src, half, wide;
    if (PyObject_GetBuffer(args[0], &src, PyBUF_C_CONTIGUOUS) < 0)
        return NULL;
    if (PyObject_GetBuffer(args[1], &half, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) < 0) {
        PyBuffer_Release(&src);
        return NULL;
    }
    if (PyObject_GetBuffer(args[2], &wide, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) < 0) {
        PyBuffer_Release(&half);
        PyBuffer_Release(&src);
        return NULL;
    }
    Py_ssize_t n = src.len / 4;
    const char *bad = NULL;
    if (src.itemsize != 4 || half.itemsize != 2 || wide.itemsize != 4 || half.len / 2 != n
            || wide.len / 4 != n)
        bad = "expected 4-byte items in, 2-byte and 4-byte items out, as many";
    else if (wide.buf != src.buf && (char *)wide.buf < (char *)src.buf + src.len
             && (char *)src.buf < (char *)wide.buf + wide.len)
        bad = "wide must be src itself or not overlap it";
    else if (((char *)half.buf < (char *)src.buf + src.len
              && (char *)src.buf < (char *)half.buf + half.len)
             || ((char *)half.buf < (char *)wide.buf + wide.len
                 && (char *)wide.buf < (char *)half.buf + half.len))
        bad = "half must not overlap src or wide";
    if (bad != NULL) {
        PyBuffer_Release(&wide);
        PyBuffer_Release(&half);
        PyBuffer_Release(&src);
        return PyErr_Format(PyExc_ValueError, "ember._kernels.half_round: %s", bad);
    }
    void *fn = mode == 2 ? (void *)cast_round_f16 : (void *)cast_round_bf16;
#if HAVE_CLONES
    __builtin_cpu_init();
    if (mode == 0 && __builtin_cpu_supports("avx512bw"))
        fn = (void *)cast_round_bf16_nt;  /* (the same bits: see cast_round_bf16_nt) */
#endif
    call_ctx c = {fn, src.buf, wide.buf, half.buf, 0, NULL};
    Py_BEGIN_ALLOW_THREADS
    parallel(call_half_round, &c, n, 64, MIN_PART);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&wide);
    PyBuffer_Release(&half);
    PyBuffer_Release(&src);
    Py_RETURN_NONE;
}

static void call_adam(void *cv, Py_ssize_t i0, Py_ssize_t i1)
{
    opt_ctx *c = (opt_ctx *)cv;
    if (c->kind == 'f')
        adam_float(c, i0, i1);
    else
        adam_double(c, i0, i1);
}

static void call_sgd(void *cv, Py_ssize_t i0, Py_ssize_t i1)
{
    opt_ctx *c = (opt_ctx *)cv;
    if (c->kind == 'f')
        sgd_float(c, i0, i1);
    else
        sgd_double(c, i0, i1);
}

static void call_sgd_plain(void *cv, Py_ssize_t i0, Py_ssize_t i1)
{
    opt_ctx *c = (opt_ctx *)cv;
    if (c->kind == 'f')
        sgd_plain_float(c, i0, i1);
    else
        sgd_plain_double(c, i0, i1);
}

static void call_rmsprop(void *cv, Py_ssize_t i0, Py_ssize_t i1)
{
    opt_ctx *c = (opt_ctx *)cv;
    if (c->kind == 'f')
        rmsprop_float(c, i0, i1);
    else
        rmsprop_double(c, i0, i1);
}

static int doubles(PyObject *const *args, Py_ssize_t n, double *out)
{
    for (Py_ssize_t i = 0; i < n; i++) {
        out[i] = PyFloat_AsDouble(args[i]);
        if (out[i] == -1.0 && PyErr_Occurred())
            return -1;
    }
    return 0;
}

/* adam(d, g, m, v, w | None, decay, b1, c1, c2, b2, bc2, eps, step) */
static PyObject *py_adam(PyObject *mod, PyObject *const *args, Py_ssize_t nargs)
{
    double p[8];
    if (nargs != 13)
        return PyErr_Format(PyExc_TypeError, "ember._kernels.adam: expected 13 arguments");
    if (doubles(args + 5, 8, p) < 0)
        return NULL;
    Bufs b;
    if (take(&b, args, 5, "oiooO") < 0)
        return NULL;
    if (same_lengths(&b, b.len[0], 1, 5) < 0) {
        release(&b);
        return NULL;
    }
    opt_ctx c = {b.kind, b.p[0], b.p[2], b.p[3], b.p[4], b.p[1],
                 p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7], 0, 0};
    Py_BEGIN_ALLOW_THREADS
    parallel(call_adam, &c, b.len[0], 64, MIN_PART);
    Py_END_ALLOW_THREADS
    release(&b);
    Py_RETURN_NONE;
}

/* The *_many steps: a parameter group's optimizer steps in one call (optim's _group_step), where
 * the Python loop costs about 5 us a parameter. All or nothing: each parameter's arrays are
 * lists[j][i] for the lists of spec (take()'s letters; the first is the parameter, written, the
 * second its gradient, of the parameter's shape; an uppercase letter's list may be None) and,
 * with steps, its 0-d float step (written). group_take returns them taken, or NULL: with an
 * exception for a malformed call, without one where an array is not exactly of type cls (NumPy's
 * ndarray), C-contiguous, of one float dtype and size per parameter; then nothing has changed and
 * the caller answers False (the Python loop steps the group parameter by parameter). */
typedef struct {
    Bufs b;
    Py_buffer sv;  /* the step (with steps) */
    int has_step;
    char skind;
} group_item;

static void group_release(group_item *items, Py_ssize_t n)
{
    for (Py_ssize_t i = 0; i < n; i++) {
        if (items[i].has_step)
            PyBuffer_Release(&items[i].sv);
        release(&items[i].b);
    }
    PyMem_Free(items);
}

static group_item *group_take(const char *name, PyObject *cls, PyObject *const *lists,
                              const char *spec, PyObject *steps, Py_ssize_t *count)
{
    int m = (int)strlen(spec);
    Py_ssize_t n = PyList_CheckExact(lists[0]) ? PyList_GET_SIZE(lists[0]) : -1;
    for (int j = 0; j <= m; j++) {
        PyObject *l = j < m ? lists[j] : steps;
        if (l == NULL || (l == Py_None && j < m && spec[j] >= 'A' && spec[j] <= 'Z'))
            continue;
        if (!PyList_CheckExact(l) || PyList_GET_SIZE(l) != n) {
            PyErr_Format(PyExc_TypeError, "ember._kernels.%s: lists of one length expected", name);
            return NULL;
        }
    }
    group_item *items = PyMem_Calloc(n ? (size_t)n : 1, sizeof(group_item));
    if (!items) {
        PyErr_NoMemory();
        return NULL;
    }
    Py_ssize_t taken = 0;
    int fits = 1;
    for (Py_ssize_t i = 0; i < n && fits; i++) {
        PyObject *a[MAXBUF];
        for (int j = 0; j < m; j++) {
            a[j] = lists[j] == Py_None ? Py_None : PyList_GET_ITEM(lists[j], i);
            if (a[j] != Py_None && (PyObject *)Py_TYPE(a[j]) != cls)
                fits = 0;
        }
        group_item *it = &items[i];
        if (!fits || take(&it->b, a, m, spec) < 0) {
            fits = 0;
            break;
        }
        Py_buffer *vd = &it->b.v[0], *vg = &it->b.v[1];
        int same = vd->ndim == vg->ndim;
        for (int k = 0; same && k < vd->ndim; k++)
            same = vd->shape[k] == vg->shape[k];
        if (!same || same_lengths(&it->b, it->b.len[0], 1, m) < 0) {
            release(&it->b);
            fits = 0;
            break;
        }
        if (steps != NULL) {
            if (get_buffer(PyList_GET_ITEM(steps, i), &it->sv, 1, &it->skind, "step") < 0) {
                release(&it->b);
                fits = 0;
                break;
            }
            if (it->sv.len != it->sv.itemsize) {  /* (not 0-d) */
                PyBuffer_Release(&it->sv);
                release(&it->b);
                fits = 0;
                break;
            }
            it->has_step = 1;
        }
        taken = i + 1;
    }
    if (!fits) {
        PyErr_Clear();
        group_release(items, taken);
        return NULL;
    }
    *count = n;
    return items;
}

/* step += 1 in the step's dtype (PyTorch's float step), returned as a double */
static double group_step_bump(group_item *it)
{
    if (it->skind == 'f') {
        float s = *(float *)it->sv.buf + 1.0f;
        *(float *)it->sv.buf = s;
        return (double)s;
    }
    double s = *(double *)it->sv.buf + 1.0;
    *(double *)it->sv.buf = s;
    return s;
}

#define GROUP_TAKE(NAME, LISTS, SPEC, STEPS)                                                       \
    Py_ssize_t n;                                                                                  \
    group_item *items = group_take(NAME, args[0], LISTS, SPEC, STEPS, &n);                         \
    if (items == NULL) {                                                                           \
        if (PyErr_Occurred())                                                                      \
            return NULL;                                                                           \
        Py_RETURN_FALSE;                                                                           \
    }

/* adam_many(cls, ds, gs, ms, vs, steps, decay, b1, b2, eps, lr): per parameter, as _update and
 * _kernel_step do: step += 1, t = step, bc2 = sqrt(1 - b2 ** t), stepsize = lr / (1 - b1 ** t)
 * (C's pow, which Python's float ** calls), then adam()'s pass */
static PyObject *py_adam_many(PyObject *mod, PyObject *const *args, Py_ssize_t nargs)
{
    double h[5];
    if (nargs != 11)
        return PyErr_Format(PyExc_TypeError, "ember._kernels.adam_many: expected 11 arguments");
    if (doubles(args + 6, 5, h) < 0)
        return NULL;
    /* (d, g, m, v: take()'s order for adam(): d, m, v written, g read) */
    GROUP_TAKE("adam_many", args + 1, "oioo", args[5])
    for (Py_ssize_t i = 0; i < n; i++) {
        group_item *it = &items[i];
        double t = group_step_bump(it);
        double bc2 = sqrt(1.0 - pow(h[2], t));
        double stepsize = h[4] / (1.0 - pow(h[1], t));
        opt_ctx c = {it->b.kind, it->b.p[0], it->b.p[2], it->b.p[3], NULL, it->b.p[1],
                     h[0], h[1], 1.0 - h[1], 1.0 - h[2], h[2], bc2, h[3], stepsize, 0, 0};
        Py_BEGIN_ALLOW_THREADS
        parallel(call_adam, &c, it->b.len[0], 64, MIN_PART);
        Py_END_ALLOW_THREADS
    }
    group_release(items, n);
    Py_RETURN_TRUE;
}

/* sgd_many(cls, ds, gs, bufs | None, momentum, 1 - dampening | None, lr, nesterov): without
 * bufs d -= g lr, with them sgd_momentum()'s pass per parameter */
static PyObject *py_sgd_many(PyObject *mod, PyObject *const *args, Py_ssize_t nargs)
{
    double mom = 0.0, damp = 1.0, lr;
    if (nargs != 8)
        return PyErr_Format(PyExc_TypeError, "ember._kernels.sgd_many: expected 8 arguments");
    int with_bufs = args[3] != Py_None;
    int damped = args[5] != Py_None;
    if (doubles(args + 4, 1, &mom) < 0 || (damped && doubles(args + 5, 1, &damp) < 0)
        || doubles(args + 6, 1, &lr) < 0)
        return NULL;
    int nesterov = PyObject_IsTrue(args[7]);
    if (nesterov < 0)
        return NULL;
    GROUP_TAKE("sgd_many", args + 1, "oiO", NULL)
    for (Py_ssize_t i = 0; i < n; i++) {
        Bufs *b = &items[i].b;
        opt_ctx c = {b->kind, b->p[0], b->p[2], NULL, NULL, b->p[1],
                     0.0, mom, damp, 0.0, 0.0, 0.0, 0.0, lr, nesterov, damped};
        Py_BEGIN_ALLOW_THREADS
        parallel(with_bufs ? call_sgd : call_sgd_plain, &c, b->len[0], 64, MIN_PART);
        Py_END_ALLOW_THREADS
    }
    group_release(items, n);
    Py_RETURN_TRUE;
}

/* rmsprop_many(cls, ds, gs, vs, avgs | None, bufs | None, steps, alpha, eps, momentum, lr): per
 * parameter step += 1, then rmsprop()'s pass */
static PyObject *py_rmsprop_many(PyObject *mod, PyObject *const *args, Py_ssize_t nargs)
{
    double h[4];
    if (nargs != 11)
        return PyErr_Format(PyExc_TypeError, "ember._kernels.rmsprop_many: expected 11 arguments");
    if (doubles(args + 7, 4, h) < 0)
        return NULL;
    /* (d, g, v, grad_avg, momentum_buffer: rmsprop()'s order) */
    GROUP_TAKE("rmsprop_many", args + 1, "oioOO", args[6])
    for (Py_ssize_t i = 0; i < n; i++) {
        group_step_bump(&items[i]);
        Bufs *b = &items[i].b;
        opt_ctx c = {b->kind, b->p[0], b->p[4], b->p[2], b->p[3], b->p[1],
                     0.0, h[0], 1.0 - h[0], 0.0, h[2], 0.0, h[1], h[3], 0, 0};
        Py_BEGIN_ALLOW_THREADS
        parallel(call_rmsprop, &c, b->len[0], 64, MIN_PART);
        Py_END_ALLOW_THREADS
    }
    group_release(items, n);
    Py_RETURN_TRUE;
}

/* rmsprop(d, g, v, grad_avg | None, momentum_buffer | None, alpha, 1 - alpha, eps, momentum,
 * lr) */
static PyObject *py_rmsprop(PyObject *mod, PyObject *const *args, Py_ssize_t nargs)
{
    double p[5];
    if (nargs != 10)
        return PyErr_Format(PyExc_TypeError, "ember._kernels.rmsprop: expected 10 arguments");
    if (doubles(args + 5, 5, p) < 0)
        return NULL;
    Bufs b;
    if (take(&b, args, 5, "oioOO") < 0)
        return NULL;
    if (same_lengths(&b, b.len[0], 1, 5) < 0) {
        release(&b);
        return NULL;
    }
    opt_ctx c = {b.kind, b.p[0], b.p[4], b.p[2], b.p[3], b.p[1],
                 0.0, p[0], p[1], 0.0, p[3], 0.0, p[2], p[4], 0, 0};
    Py_BEGIN_ALLOW_THREADS
    parallel(call_rmsprop, &c, b.len[0], 64, MIN_PART);
    Py_END_ALLOW_THREADS
    release(&b);
    Py_RETURN_NONE;
}

/* sgd_momentum(d, g, buf, momentum, 1 - dampening | None, lr, nesterov) */
static PyObject *py_sgd_momentum(PyObject *mod, PyObject *const *args, Py_ssize_t nargs)
{
    double p[3] = {0.0, 1.0, 0.0};
    if (nargs != 7)
        return PyErr_Format(PyExc_TypeError, "ember._kernels.sgd_momentum: expected 7 arguments");
    int damp = args[4] != Py_None;
    if (doubles(args + 3, 1, p) < 0 || (damp && doubles(args + 4, 1, p + 1) < 0)
        || doubles(args + 5, 1, p + 2) < 0)
        return NULL;
    int nesterov = PyObject_IsTrue(args[6]);
    if (nesterov < 0)
        return NULL;
    Bufs b;
    if (take(&b, args, 3, "oio") < 0)
        return NULL;
    if (same_lengths(&b, b.len[0], 1, 3) < 0) {
        release(&b);
        return NULL;
    }
    opt_ctx c = {b.kind, b.p[0], b.p[2], NULL, NULL, b.p[1],
                 0.0, p[0], p[1], 0.0, 0.0, 0.0, 0.0, p[2], nesterov, damp};
    Py_BEGIN_ALLOW_THREADS
    parallel(call_sgd, &c, b.len[0], 64, MIN_PART);
    Py_END_ALLOW_THREADS
    release(&b);
    Py_RETURN_NONE;
}

/* NumPy's bit generator interface (numpy/random/bitgen.h, a stable ABI that Cython and numba
 * extensions use): the function pointers behind the "BitGenerator" capsule of `bg.capsule`. */
typedef struct {
    void *state;
    uint64_t (*next_uint64)(void *st);
    uint32_t (*next_uint32)(void *st);
    double (*next_double)(void *st);
    uint64_t (*next_raw)(void *st);
} np_bitgen;

/* NumPy's MT19937 state (numpy/random/src/mt19937/mt19937.h): the key and the next position.
 * Its layout is not an API, so the loader checks once per process that drawing here gives
 * random_raw's words (`bernoulli53(..., direct=True)` against the bit generator's own calls)
 * and passes direct=False otherwise. */
typedef struct {
    uint32_t key[624];
    int pos;
} np_mt19937_state;

/* mt19937's twist of the whole key (the reference genrand's recurrence), in three runs whose
 * far operand is never written in the same run ([0, 227) reads the old key 397 ahead, the
 * others the new key 227 behind), so each run vectorises: 0.52 -> 0.19 ns a word with tempering */
#define MT_STEP(i, far)                                                                            \
    do {                                                                                           \
        uint32_t y_ = (mt[i] & 0x80000000U) | (mt[(i) + 1] & 0x7fffffffU);                         \
        mt[i] = (far) ^ (y_ >> 1) ^ ((0U - (y_ & 1U)) & 0x9908b0dfU);                              \
    } while (0)
CLONES static void mt_twist(uint32_t *mt)
{
    for (int i = 0; i < 227; i++)
        MT_STEP(i, mt[i + 397]);
    for (int i = 227; i < 454; i++)
        MT_STEP(i, mt[i - 227]);
    for (int i = 454; i < 623; i++)
        MT_STEP(i, mt[i - 227]);
    uint32_t y = (mt[623] & 0x80000000U) | (mt[0] & 0x7fffffffU);
    mt[623] = mt[396] ^ (y >> 1) ^ ((0U - (y & 1U)) & 0x9908b0dfU);
}

/* the next count words of the stream, tempered, into dst (the key's runs between twists are
 * tempered in one vectorisable loop) */
CLONES static void mt_fill(np_mt19937_state *st, uint32_t *RESTRICT dst, Py_ssize_t count)
{
    while (count > 0) {
        if (st->pos >= 624) {
            mt_twist(st->key);
            st->pos = 0;
        }
        Py_ssize_t k = 624 - st->pos;
        if (k > count)
            k = count;
        const uint32_t *RESTRICT src = st->key + st->pos;
        for (Py_ssize_t j = 0; j < k; j++) {
            uint32_t y = src[j];
            y ^= y >> 11;  /* tempering */
            y ^= (y << 7) & 0x9d2c5680U;
            y ^= (y << 15) & 0xefc60000U;
            y ^= y >> 18;
            dst[j] = y;
        }
        st->pos += (int)k;
        dst += k;
        count -= k;
    }
}

/* out[i] = scale where the 64-bit draw (words[2i] high, words[2i + 1] low) has its low 53 bits
 * below limit, else 0 */
#define KEEP53(T)                                                                                  \
CLONES static void keep53_##T(const uint32_t *RESTRICT words, T *RESTRICT out, Py_ssize_t n,       \
                              uint64_t limit, T scale)                                             \
{                                                                                                  \
    const uint64_t low53 = (UINT64_C(1) << 53) - 1;                                                \
    for (Py_ssize_t i = 0; i < n; i++) {                                                           \
        uint64_t w = ((uint64_t)words[2 * i] << 32) | words[2 * i + 1];                            \
        out[i] = (w & low53) < limit ? scale : (T)0;                                               \
    }                                                                                              \
}
KEEP53(float)
KEEP53(double)

/* ---------------------------------------------------------------------------------------------
 * A strided array copied into C order where its fastest-moving source axis is not the last
 * (x.t().contiguous(), NCHW <-> NHWC permutes): NumPy walks the destination in order and reads
 * the source a stride apart, one cache line per element; here the plane of the source's fastest
 * axis k and the last axis is copied in tiles (read along k, written along the last),
 * the other axes looped over (not vectorised: gathers and scatters were slower). Bits are
 * copied: any 1, 2, 4 or 8-byte item. */

/* tiles of TC_TI along k by TC_TJ along the last axis: 8 rows keep a power-of-two stride's
 * lines within one L1 set's ways (32 x 32 tiles ran 4x slower on 1024 x 1024) */
#ifndef TC_TI
#define TC_TI 128
#endif
#ifndef TC_TJ
#define TC_TJ 8
#endif
#define TC_MAXDIM 16

typedef struct {
    const char *src;
    char *dst;
    int nd, k, item;
    Py_ssize_t shape[TC_MAXDIM], sstr[TC_MAXDIM], dstr[TC_MAXDIM];  /* bytes */
    Py_ssize_t tiles_k;  /* tiles along axis k */
} tc_ctx;

#define TC_TILE_COPY(T)                                                                        \
    for (Py_ssize_t j0 = 0; j0 < nj; j0 += TC_TJ) {                                            \
        Py_ssize_t j1 = j0 + TC_TJ < nj ? j0 + TC_TJ : nj;                                     \
        for (Py_ssize_t i = i0; i < i1; i++)                                                   \
            for (Py_ssize_t j = j0; j < j1; j++)                                               \
                *(T *)(d + i * dk + j * dj) = *(const T *)(s + i * sk + j * sj);               \
    }

/* units [u0, u1): unit = (index over the axes other than k and the last) * tiles_k + tile */
__attribute__((optimize("no-tree-vectorize")))
static void transpose_copy_range(void *cv, Py_ssize_t u0, Py_ssize_t u1)
{
    tc_ctx *c = (tc_ctx *)cv;
    int nd = c->nd, k = c->k, last = nd - 1;
    Py_ssize_t nk = c->shape[k], nj = c->shape[last];
    Py_ssize_t sk = c->sstr[k], sj = c->sstr[last], dk = c->dstr[k], dj = c->dstr[last];
    for (Py_ssize_t u = u0; u < u1; u++) {
        Py_ssize_t outer = u / c->tiles_k, tile = u % c->tiles_k;
        const char *s = c->src;
        char *d = c->dst;
        for (int a = last - 1; a >= 0; a--) {  /* the outer index, last axis fastest */
            if (a == k)
                continue;
            Py_ssize_t n = c->shape[a], ia = outer % n;
            outer /= n;
            s += ia * c->sstr[a];
            d += ia * c->dstr[a];
        }
        Py_ssize_t i0 = tile * TC_TI, i1 = i0 + TC_TI < nk ? i0 + TC_TI : nk;
        if (c->item == 4 && sk == 4 && dj == 4) {  /* the common case: plain indexing */
            Py_ssize_t dk4 = dk / 4, sj4 = sj / 4;
            for (Py_ssize_t j0 = 0; j0 < nj; j0 += TC_TJ) {
                Py_ssize_t j1 = j0 + TC_TJ < nj ? j0 + TC_TJ : nj;
                for (Py_ssize_t i = i0; i < i1; i++) {
                    const uint32_t *RESTRICT sr = (const uint32_t *)s + i;
                    uint32_t *RESTRICT dr = (uint32_t *)d + i * dk4;
                    for (Py_ssize_t j = j0; j < j1; j++)
                        dr[j] = sr[j * sj4];
                }
            }
            continue;
        }
        switch (c->item) {
        case 1: TC_TILE_COPY(uint8_t) break;
        case 2: TC_TILE_COPY(uint16_t) break;
        case 4: TC_TILE_COPY(uint32_t) break;
        default: TC_TILE_COPY(uint64_t) break;
        }
    }
}

/* transpose_copy(src, dst): dst (C-contiguous, writable, src's size and item size) = src in C
 * order; False (nothing written) where the tiled copy does not apply (src's last axis already
 * the fastest, 0-d or over 16 dims, items not 1/2/4/8 bytes) */
/* a view whose last axis runs backwards (x.flip(-1)): each row copied reversed into C order
 * (NumPy's copy reads it one element at a time, a third of a plain copy's speed); rows u0..u1 */
#define TC_REVERSE(T)                                                                          \
    for (Py_ssize_t j = 0; j < n; j++)                                                         \
        ((T *)d)[j] = ((const T *)s)[-j];
static void reverse_rows_range(void *cv, Py_ssize_t u0, Py_ssize_t u1)
{
    const tc_ctx *c = (const tc_ctx *)cv;
    int nd = c->nd, item = c->item;
    Py_ssize_t n = c->shape[nd - 1];
    for (Py_ssize_t u = u0; u < u1; u++) {
        Py_ssize_t rest = u, off = 0;
        for (int a = nd - 2; a >= 0; a--) {
            off += (rest % c->shape[a]) * c->sstr[a];
            rest /= c->shape[a];
        }
        const char *s = c->src + off;
        char *d = c->dst + u * n * item;
        switch (item) {
        case 1: TC_REVERSE(uint8_t) break;
        case 2: TC_REVERSE(uint16_t) break;
        case 4: TC_REVERSE(uint32_t) break;
        default: TC_REVERSE(uint64_t) break;
        }
    }
}

static PyObject *py_transpose_copy(PyObject *mod, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2)
        return PyErr_Format(PyExc_TypeError, "ember._kernels.transpose_copy: expected 2 arguments");
    Py_buffer sv, dv;
    if (PyObject_GetBuffer(args[0], &sv, PyBUF_STRIDES) < 0)
        return NULL;
    if (PyObject_GetBuffer(args[1], &dv, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS) < 0) {
        PyBuffer_Release(&sv);
        return NULL;
    }
    PyObject *res = Py_False;
    int nd = sv.ndim, item = (int)sv.itemsize;
    if (dv.len != sv.len || dv.itemsize != sv.itemsize) {
        PyBuffer_Release(&sv);
        PyBuffer_Release(&dv);
        return PyErr_Format(PyExc_ValueError, "ember._kernels.transpose_copy: sizes differ");
    }
    tc_ctx c;
    if (nd >= 2 && nd <= TC_MAXDIM && (item == 1 || item == 2 || item == 4 || item == 8)
            && sv.len > 0) {
        int k = -1;
        Py_ssize_t best = 0;
        for (int a = 0; a < nd; a++) {
            Py_ssize_t st = sv.strides[a] < 0 ? -sv.strides[a] : sv.strides[a];
            /* (a broadcast axis, stride 0, is no reading direction: an expand()ed row copies
             * fastest as NumPy copies it, row after row: 1024 x 1024 0.28 -> 0.08 ms) */
            if (sv.shape[a] > 1 && st != 0 && (k < 0 || st < best)) {
                k = a;
                best = st;
            }
        }
        if (k == nd - 1 && sv.strides[nd - 1] == -item && sv.shape[nd - 1] > 1) {
            c.src = (const char *)sv.buf;
            c.dst = (char *)dv.buf;
            c.nd = nd;
            c.item = item;
            for (int a = 0; a < nd; a++) {
                c.shape[a] = sv.shape[a];
                c.sstr[a] = sv.strides[a];
            }
            Py_ssize_t rows = sv.len / item / sv.shape[nd - 1];
            Py_ssize_t per = sv.shape[nd - 1] * item;
            Py_BEGIN_ALLOW_THREADS
            parallel(reverse_rows_range, &c, rows, 1, MIN_PART / per > 1 ? MIN_PART / per : 1);
            Py_END_ALLOW_THREADS
            res = Py_True;
        } else if (k >= 0 && k != nd - 1 && sv.shape[nd - 1] > 1) {
            c.src = (const char *)sv.buf;
            c.dst = (char *)dv.buf;
            c.nd = nd;
            c.k = k;
            c.item = item;
            Py_ssize_t d = item;
            for (int a = nd - 1; a >= 0; a--) {
                c.shape[a] = sv.shape[a];
                c.sstr[a] = sv.strides[a];
                c.dstr[a] = d;
                d *= sv.shape[a];
            }
            c.tiles_k = (c.shape[k] + TC_TI - 1) / TC_TI;
            Py_ssize_t outer = 1;
            for (int a = 0; a < nd - 1; a++)
                if (a != k)
                    outer *= c.shape[a];
            Py_ssize_t units = outer * c.tiles_k;
            Py_ssize_t per_unit = TC_TI * c.shape[nd - 1];
            Py_ssize_t min_units = MIN_PART / per_unit > 1 ? MIN_PART / per_unit : 1;
            Py_BEGIN_ALLOW_THREADS
            parallel(transpose_copy_range, &c, units, 1, min_units);
            Py_END_ALLOW_THREADS
            res = Py_True;
        }
    }
    PyBuffer_Release(&sv);
    PyBuffer_Release(&dv);
    return Py_NewRef(res);
}

/* ---------------------------------------------------------------------------------------------
 * clamp (and relu: lo 0, hi +inf): t = x < lo ? lo : x; y = t > hi ? hi : t. The same values as
 * NumPy's minimum(hi, maximum(lo, x)) with the bound first (a tie keeps x: -0.0 stays -0.0, as
 * PyTorch's; a NaN x stays NaN) for bounds that are not NaN (the caller checks); one pass where
 * NumPy's maximum with a scalar runs a slow loop. p = {lo, hi}. y may be x itself (relu_ and
 * clamp_ write in place): element i is read once, before its own write, so no iteration depends
 * on another's (what IVDEP tells the compiler; x and y are not restrict). */
CLONES static void clamp_f32(const void *xv, void *yv, Py_ssize_t i0, Py_ssize_t i1,
                             const double *p)
{
    const float *x = (const float *)xv;
    float *y = (float *)yv;
    float lo = (float)p[0], hi = (float)p[1];
    IVDEP
    for (Py_ssize_t i = i0; i < i1; i++) {
        float t = x[i] < lo ? lo : x[i];
        y[i] = t > hi ? hi : t;
    }
}

CLONES static void clamp_f64(const void *xv, void *yv, Py_ssize_t i0, Py_ssize_t i1,
                             const double *p)
{
    const double *x = (const double *)xv;
    double *y = (double *)yv;
    double lo = p[0], hi = p[1];
    IVDEP
    for (Py_ssize_t i = i0; i < i1; i++) {
        double t = x[i] < lo ? lo : x[i];
        y[i] = t > hi ? hi : t;
    }
}

/* A unary kernel with number parameters over float32 or float64 arrays: (x, out, p0, ...,
 * p{nparams-1}), x and out of one size (a multiple of block), split over threads in parts of
 * at least min_part elements */
static PyObject *run_unary_fd(PyObject *const *args, Py_ssize_t nargs, const char *name,
                              int nparams, unaryp_fn f32, unaryp_fn f64, Py_ssize_t block,
                              Py_ssize_t min_part)
{
    if (nargs != 2 + nparams)
        return PyErr_Format(PyExc_TypeError, "ember._kernels.%s: expected %d arguments", name,
                            2 + nparams);
    double p[4] = {0.0, 0.0, 0.0, 0.0};
    for (int i = 0; i < nparams; i++)
        p[i] = PyFloat_AsDouble(args[2 + i]);
    if (PyErr_Occurred())
        return NULL;
    Bufs b;
    if (take(&b, args, 2, "io") < 0)
        return NULL;
    if (same_lengths(&b, b.len[0], 1, 2) < 0) {
        release(&b);
        return NULL;
    }
    if (b.len[0] % block != 0) {
        release(&b);
        return PyErr_Format(PyExc_ValueError, "ember._kernels.%s: %zd elements, not blocks of %zd",
                            name, b.len[0], block);
    }
    call_ctx c = {b.kind == 'f' ? (void *)f32 : (void *)f64, b.p[0], NULL, b.p[1], 0, p};
    Py_BEGIN_ALLOW_THREADS
    parallel(call_unaryp, &c, b.len[0], 64, min_part);
    Py_END_ALLOW_THREADS
    release(&b);
    Py_RETURN_NONE;
}

/* clamp(x, out, lo, hi): float32 or float64 arrays of one size; lo, hi numbers (not NaN) */
static PyObject *py_clamp(PyObject *mod, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs == 4) {
        double lo = PyFloat_AsDouble(args[2]), hi = PyFloat_AsDouble(args[3]);
        if (PyErr_Occurred())
            return NULL;
        if (lo != lo || hi != hi)
            return PyErr_Format(PyExc_ValueError, "ember._kernels.clamp: a NaN bound");
    }
    return run_unary_fd(args, nargs, "clamp", 2, clamp_f32, clamp_f64, 1, MIN_PART);
}

/* relu's backward from its output: res = out <= 0 ? +0 : grad (a NaN output passes the
 * gradient, as PyTorch's threshold_backward; NumPy's path ANDs grad's bits with a mask built in
 * blocks: the same bits, three passes) */
CLONES static void relu_backward_f32(const void *ov, const void *gv, void *rv, Py_ssize_t i0,
                                     Py_ssize_t i1)
{
    const float *RESTRICT o = (const float *)ov, *RESTRICT g = (const float *)gv;
    float *RESTRICT r = (float *)rv;
    for (Py_ssize_t i = i0; i < i1; i++)
        r[i] = o[i] <= 0.0f ? 0.0f : g[i];
}

CLONES static void relu_backward_f64(const void *ov, const void *gv, void *rv, Py_ssize_t i0,
                                     Py_ssize_t i1)
{
    const double *RESTRICT o = (const double *)ov, *RESTRICT g = (const double *)gv;
    double *RESTRICT r = (double *)rv;
    for (Py_ssize_t i = i0; i < i1; i++)
        r[i] = o[i] <= 0.0 ? 0.0 : g[i];
}

/* call_NAME(job, i0, i1): a parallel range function that runs NAME's float or double loop by the
 * job's kind ('f' or 'd'), for the elementwise kernels below with a job struct of their own */
#define BY_KIND(NAME, JOB)                                                                     \
    static void call_##NAME(void *v, Py_ssize_t i0, Py_ssize_t i1)                             \
    {                                                                                          \
        JOB *j = (JOB *)v;                                                                     \
        if (j->kind == 'f')                                                                    \
            NAME##_float(j, i0, i1);                                                           \
        else                                                                                   \
            NAME##_double(j, i0, i1);                                                          \
    }

/* ---------------------------------------------------------------------------------------------
 * arith(op, a, b, out[, scale]): out = a op b elementwise (op 0 add, 1 subtract, 2 multiply,
 * 3 divide; 5 a + b * scale, 6 a - b * scale, the product rounded first, as NumPy's two calls
 * and add(alpha=)'s formula), or out = b (op 4: copy, a None), for float32/float64 arrays of one
 * dtype: a of out's length; b an array of out's length, a row that repeats along out (its length
 * divides out's: a bias added to every row), or a number (a number, scale too, rounded to the
 * dtype first, as NumPy takes a Python number). out may be a or b itself (an in-place op:
 * element i is read, then written, so the loops carry no dependence: IVDEP). IEEE arithmetic
 * rounds exactly (and the build contracts nothing into an FMA), so the values are NumPy's
 * ufunc's bit for bit; what this adds is the kernels' pool, whose hand-off costs a few
 * microseconds where the Python pool's costs tens. */
typedef struct {
    int op;
    const void *a, *b;
    void *out;
    Py_ssize_t nb;  /* b's length where it repeats (a row); 0: b has out's length */
    double s;  /* the number, where b is NULL */
    double scale;  /* ops 5 and 6: b's factor */
} arith_ctx;

#define ARITH_LOOPS(T, EXPR)                                                                   \
    do {                                                                                       \
        const T *a = (const T *)c->a, *b = (const T *)c->b;                                    \
        T *o = (T *)c->out;                                                                    \
        (void)a;  /* (copy reads b only) */                                                    \
        if (!b) {                                                                              \
            const T bv = (T)c->s;                                                              \
            IVDEP                                                                              \
            for (Py_ssize_t i = i0; i < i1; i++)                                               \
                o[i] = (EXPR);                                                                 \
        }                                                                                      \
        else if (!c->nb) {                                                                     \
            IVDEP                                                                              \
            for (Py_ssize_t i = i0; i < i1; i++) {                                             \
                const T bv = b[i];                                                             \
                o[i] = (EXPR);                                                                 \
            }                                                                                  \
        }                                                                                      \
        else                                                                                   \
            for (Py_ssize_t r = i0; r < i1;) {                                                 \
                Py_ssize_t j0 = r % c->nb, e = r + (c->nb - j0) < i1 ? r + (c->nb - j0) : i1;  \
                const T *br = b + j0;                                                          \
                IVDEP                                                                          \
                for (Py_ssize_t i = r; i < e; i++) {                                           \
                    const T bv = br[i - r];                                                    \
                    o[i] = (EXPR);                                                             \
                }                                                                              \
                r = e;                                                                         \
            }                                                                                  \
    } while (0)

#define ARITH_FN(T)                                                                            \
    CLONES static void arith_##T(const arith_ctx *c, Py_ssize_t i0, Py_ssize_t i1)             \
    {                                                                                          \
        switch (c->op) {                                                                       \
        case 0: ARITH_LOOPS(T, a[i] + bv); break;                                              \
        case 1: ARITH_LOOPS(T, a[i] - bv); break;                                              \
        case 2: ARITH_LOOPS(T, a[i] * bv); break;                                              \
        case 3: ARITH_LOOPS(T, a[i] / bv); break;                                              \
        case 5: { const T k = (T)c->scale; ARITH_LOOPS(T, a[i] + bv * k); break; }             \
        case 6: { const T k = (T)c->scale; ARITH_LOOPS(T, a[i] - bv * k); break; }             \
        default: ARITH_LOOPS(T, bv); break;                                                    \
        }                                                                                      \
    }
ARITH_FN(float)
ARITH_FN(double)

typedef struct {
    arith_ctx c;
    char kind;
} arith_job;

static void call_arith(void *v, Py_ssize_t i0, Py_ssize_t i1)
{
    arith_job *j = (arith_job *)v;
    if (j->kind == 'f')
        arith_float(&j->c, i0, i1);
    else
        arith_double(&j->c, i0, i1);
}

static PyObject *py_arith(PyObject *mod, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 4 && nargs != 5)
        return PyErr_Format(PyExc_TypeError, "ember._kernels.arith: expected 4 or 5 arguments");
    long op = PyLong_AsLong(args[0]);
    if (op == -1 && PyErr_Occurred())
        return NULL;
    double scale = nargs == 5 ? PyFloat_AsDouble(args[4]) : 1.0;
    if (scale == -1.0 && PyErr_Occurred())
        return NULL;
    if (op < 0 || op > 6 || (op >= 5) != (nargs == 5) || (op == 4) != (args[1] == Py_None))
        return PyErr_Format(PyExc_ValueError, "ember._kernels.arith: op %ld with a%s", op,
                            args[1] == Py_None ? " None" : "n array");
    int number = PyFloat_Check(args[2]) || PyLong_Check(args[2]);
    double s = number ? PyFloat_AsDouble(args[2]) : 0.0;
    if (s == -1.0 && PyErr_Occurred())
        return NULL;
    Bufs b;
    PyObject *arrays[3] = {args[1], number ? Py_None : args[2], args[3]};
    if (take(&b, arrays, 3, "IIo") < 0)
        return NULL;
    Py_ssize_t total = b.len[2], nb = b.len[1];
    if ((op != 4 && !b.p[0]) || (!number && !b.p[1]) || (b.p[0] && b.len[0] != total)
        || (b.p[1] && (nb == 0 || total % nb))) {
        release(&b);
        return PyErr_Format(PyExc_ValueError, "ember._kernels.arith: lengths do not agree");
    }
    arith_job j = {{(int)op, b.p[0], b.p[1], b.p[2], b.p[1] && nb != total ? nb : 0, s, scale},
                   b.kind};
    Py_BEGIN_ALLOW_THREADS
    parallel(call_arith, &j, total, 64, MIN_PART);
    Py_END_ALLOW_THREADS
    release(&b);
    Py_RETURN_NONE;
}

/* piecewise(op, x, g, out, a, b): the piecewise-linear activations and their gradients (g
 * None: forward), float32/float64, a and b rounded to the dtype first; each the operations and
 * order of its NumPy formula in ops/nn/activation.py and ops/_blockwise.py (NaN, -0.0 and the
 * kinks as there), one pass where NumPy's where()/maximum() chains cost several:
 * 0 hardtanh [a, b] (NumPy's maximum/minimum with the bound first: a tie keeps x, NaN kept),
 * gradient where a < x < b; 1 hardsigmoid min(max(x + 3, 0), 6) / 6, gradient (g * [-3 < x <
 * 3]) / 6; 2 hardswish (min(max(x + 3, 0), 6) * x) / 6, gradient 0 at x <= -3, g at x >= 3 or
 * NaN, else (x / 3 + 0.5) g; 3 threshold x > a ? x : b, gradient where x > a; 4 hardshrink
 * |x| > a ? x : x * 0; 5 softshrink x - a, x + a or x * 0; both gradients g * [|x| > a];
 * 6 sign: -1, +0 or 1, +0 at NaN and -0.0 (PyTorch's; NumPy's sign under a where), given g
 * g times that (abs's gradient, grad * sign(x)); 7 leaky_relu x > 0 ? x : x * a, gradient x > 0 ? g : g * a (NaN takes the slope
 * branch, -0.0 stays -0.0; NumPy's where() over a random sign mask took 3.9 ms for 1M floats). */
typedef struct {
    int op;
    const void *x, *g;
    void *out;
    double a, b;
    char kind;
} pw_job;

#define PW_FN(T)                                                                               \
    CLONES static void pw_##T(const pw_job *j, Py_ssize_t i0, Py_ssize_t i1)                   \
    {                                                                                          \
        const T *x = (const T *)j->x, *g = (const T *)j->g;                                    \
        T *o = (T *)j->out;                                                                    \
        const T a = (T)j->a, b = (T)j->b, z = 0, one = 1, three = 3, six = 6;                  \
        const T half = (T)0.5;                                                                 \
        switch (j->op * 2 + (g != NULL)) {                                                     \
        case 0: IVDEP for (Py_ssize_t i = i0; i < i1; i++) {                                   \
                    T t = x[i] < a ? a : x[i];                                                 \
                    o[i] = t > b ? b : t;                                                      \
                } break;                                                                       \
        case 1: IVDEP for (Py_ssize_t i = i0; i < i1; i++)                                     \
                    o[i] = x[i] > a && x[i] < b ? g[i] : z;                                    \
                break;                                                                         \
        case 2: IVDEP for (Py_ssize_t i = i0; i < i1; i++) {                                   \
                    T t = x[i] + three;                                                        \
                    t = t < z ? z : t;                                                         \
                    t = t > six ? six : t;                                                     \
                    o[i] = t / six;                                                            \
                } break;                                                                       \
        case 3: IVDEP for (Py_ssize_t i = i0; i < i1; i++)                                     \
                    o[i] = (g[i] * (x[i] > -three && x[i] < three ? one : z)) / six;           \
                break;                                                                         \
        case 4: IVDEP for (Py_ssize_t i = i0; i < i1; i++) {                                   \
                    T t = x[i] + three;                                                        \
                    t = t < z ? z : t;                                                         \
                    t = t > six ? six : t;                                                     \
                    o[i] = (t * x[i]) / six;                                                   \
                } break;                                                                       \
        case 5: IVDEP for (Py_ssize_t i = i0; i < i1; i++)                                     \
                    o[i] = x[i] <= -three ? z : !(x[i] < three) ? g[i]                         \
                                                 : (x[i] / three + half) * g[i];               \
                break;                                                                         \
        case 6: IVDEP for (Py_ssize_t i = i0; i < i1; i++)                                     \
                    o[i] = x[i] > a ? x[i] : b;                                                \
                break;                                                                         \
        case 7: IVDEP for (Py_ssize_t i = i0; i < i1; i++)                                     \
                    o[i] = x[i] > a ? g[i] : z;                                                \
                break;                                                                         \
        case 8: IVDEP for (Py_ssize_t i = i0; i < i1; i++)                                     \
                    o[i] = x[i] > a || x[i] < -a ? x[i] : x[i] * z;                            \
                break;                                                                         \
        case 10: IVDEP for (Py_ssize_t i = i0; i < i1; i++)                                    \
                    o[i] = x[i] > a ? x[i] - a : x[i] < -a ? x[i] + a : x[i] * z;              \
                break;                                                                         \
        case 14: IVDEP for (Py_ssize_t i = i0; i < i1; i++)                                    \
                    o[i] = x[i] > 0 ? x[i] : x[i] * a;                                         \
                break;                                                                         \
        case 15: IVDEP for (Py_ssize_t i = i0; i < i1; i++)                                    \
                    o[i] = x[i] > 0 ? g[i] : g[i] * a;                                         \
                break;                                                                         \
        case 12: IVDEP for (Py_ssize_t i = i0; i < i1; i++)  /* sign, 0 at NaN */          \
                    o[i] = x[i] > 0 ? one : x[i] < 0 ? -one : z;                               \
                break;                                                                         \
        case 13: IVDEP for (Py_ssize_t i = i0; i < i1; i++)  /* g sign(x): abs's gradient */  \
                    o[i] = g[i] * (x[i] > 0 ? one : x[i] < 0 ? -one : z);                      \
                break;                                                                         \
        default: IVDEP for (Py_ssize_t i = i0; i < i1; i++)  /* 9, 11: the shrinks' gradient */ \
                    o[i] = g[i] * (x[i] > a || x[i] < -a ? one : z);                           \
                break;                                                                         \
        }                                                                                      \
    }
PW_FN(float)
PW_FN(double)

BY_KIND(pw, pw_job)

static PyObject *py_piecewise(PyObject *mod, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 6)
        return PyErr_Format(PyExc_TypeError, "ember._kernels.piecewise: expected 6 arguments");
    long op = PyLong_AsLong(args[0]);
    if (op == -1 && PyErr_Occurred())
        return NULL;
    if (op < 0 || op > 7)
        return PyErr_Format(PyExc_ValueError, "ember._kernels.piecewise: op %ld", op);
    double a = PyFloat_AsDouble(args[4]), b = PyFloat_AsDouble(args[5]);
    if ((a == -1.0 || b == -1.0) && PyErr_Occurred())
        return NULL;
    Bufs bf;
    if (take(&bf, args + 1, 3, "iIo") < 0)
        return NULL;
    if (same_lengths(&bf, bf.len[2], 0, 2) < 0) {
        release(&bf);
        return NULL;
    }
    pw_job j = {(int)op, bf.p[0], bf.p[1], bf.p[2], a, b, bf.kind};
    Py_BEGIN_ALLOW_THREADS
    parallel(call_pw, &j, bf.len[2], 64, MIN_PART);
    Py_END_ALLOW_THREADS
    release(&bf);
    Py_RETURN_NONE;
}

/* select(cond, a | None, b | None, out, av, bv): out = cond ? a : b elementwise, np.where's
 * values bit for bit (NaN payloads and signed zeros carried), for float32/float64 a, b and out
 * and a bool cond, all C-contiguous of one length; a None a or b stands for the number av or bv
 * (rounded to the dtype first, as NumPy takes Python numbers). Both operands are read at every
 * element and blended, no branch: NumPy's where branches per element, 3.7 ms for 1M floats
 * under a random mask (the mispredictions), where this loop is a copy's speed. */
typedef struct {
    const uint8_t *c;
    const void *a, *b;
    void *out;
    double av, bv;
    char kind;
} sel_job;

#define SEL_FN(T)                                                                              \
    CLONES static void sel_##T(const sel_job *j, Py_ssize_t i0, Py_ssize_t i1)                 \
    {                                                                                          \
        const uint8_t *RESTRICT c = j->c;                                                      \
        const T *RESTRICT a = (const T *)j->a, *RESTRICT b = (const T *)j->b;                  \
        T *RESTRICT o = (T *)j->out;                                                           \
        const T av = (T)j->av, bv = (T)j->bv;                                                  \
        if (a && b)                                                                            \
            for (Py_ssize_t i = i0; i < i1; i++) {                                             \
                T x = a[i], y = b[i];                                                          \
                o[i] = c[i] ? x : y;                                                           \
            }                                                                                  \
        else if (a)                                                                            \
            for (Py_ssize_t i = i0; i < i1; i++) {                                             \
                T x = a[i];                                                                    \
                o[i] = c[i] ? x : bv;                                                          \
            }                                                                                  \
        else if (b)                                                                            \
            for (Py_ssize_t i = i0; i < i1; i++) {                                             \
                T y = b[i];                                                                    \
                o[i] = c[i] ? av : y;                                                          \
            }                                                                                  \
        else                                                                                   \
            for (Py_ssize_t i = i0; i < i1; i++)                                               \
                o[i] = c[i] ? av : bv;                                                         \
    }
SEL_FN(float)
SEL_FN(double)

BY_KIND(sel, sel_job)

static PyObject *py_select(PyObject *mod, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 6)
        return PyErr_Format(PyExc_TypeError, "ember._kernels.select: expected 6 arguments");
    double av = PyFloat_AsDouble(args[4]), bv = PyFloat_AsDouble(args[5]);
    if ((av == -1.0 || bv == -1.0) && PyErr_Occurred())
        return NULL;
    Py_buffer cv;
    if (PyObject_GetBuffer(args[0], &cv, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0)
        return NULL;
    if (cv.itemsize != 1 || !cv.format || strcmp(cv.format, "?") != 0) {
        PyBuffer_Release(&cv);
        return PyErr_Format(PyExc_TypeError, "ember._kernels.select: cond must be a bool array");
    }
    Bufs bf;
    if (take(&bf, args + 1, 3, "IIo") < 0) {
        PyBuffer_Release(&cv);
        return NULL;
    }
    if (same_lengths(&bf, bf.len[2], 0, 2) < 0 || cv.len != bf.len[2]) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_ValueError, "ember._kernels.select: cond's length differs");
        release(&bf);
        PyBuffer_Release(&cv);
        return NULL;
    }
    sel_job j = {(const uint8_t *)cv.buf, bf.p[0], bf.p[1], bf.p[2], av, bv, bf.kind};
    Py_BEGIN_ALLOW_THREADS
    parallel(call_sel, &j, bf.len[2], 64, MIN_PART);
    Py_END_ALLOW_THREADS
    release(&bf);
    PyBuffer_Release(&cv);
    Py_RETURN_NONE;
}

/* prelu(mode, x, w, g, out, inner): PReLU over x laid out (planes, inner) with plane p's weight
 * w[p % len(w)] (channel dim 1: planes (n, c)), float32/float64: mode 0 out = x > 0 ? x : w x;
 * 1 (g given) out = x > 0 ? g : w g; 2 the weight's gradient terms x > 0 ? g 0 : g x (summed
 * by the caller as NumPy sums them). Prelu's NumPy formulas' values, one pass. */
typedef struct {
    int mode;
    const void *x, *w, *g;
    void *out;
    Py_ssize_t inner, nw;
    char kind;
} prelu_job;

#define PRELU_FN(T)                                                                            \
    CLONES static void prelu_##T(const prelu_job *j, Py_ssize_t p0, Py_ssize_t p1)             \
    {                                                                                          \
        const T *x = (const T *)j->x, *w = (const T *)j->w, *g = (const T *)j->g;              \
        T *o = (T *)j->out;                                                                    \
        const Py_ssize_t n = j->inner;                                                         \
        const T z = 0;                                                                         \
        for (Py_ssize_t p = p0; p < p1; p++) {                                                 \
            const T wc = w[p % j->nw];                                                         \
            const T *xr = x + p * n, *gr = g ? g + p * n : NULL;                               \
            T *orow = o + p * n;                                                               \
            if (j->mode == 0) {                                                                \
                IVDEP for (Py_ssize_t i = 0; i < n; i++)                                       \
                    orow[i] = xr[i] > z ? xr[i] : wc * xr[i];                                  \
            }                                                                                  \
            else if (j->mode == 1) {                                                           \
                IVDEP for (Py_ssize_t i = 0; i < n; i++)                                       \
                    orow[i] = xr[i] > z ? gr[i] : wc * gr[i];                                  \
            }                                                                                  \
            else {                                                                             \
                IVDEP for (Py_ssize_t i = 0; i < n; i++)                                       \
                    orow[i] = xr[i] > z ? gr[i] * z : gr[i] * xr[i];                           \
            }                                                                                  \
        }                                                                                      \
    }
PRELU_FN(float)
PRELU_FN(double)

BY_KIND(prelu, prelu_job)

static PyObject *py_prelu(PyObject *mod, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 6)
        return PyErr_Format(PyExc_TypeError, "ember._kernels.prelu: expected 6 arguments");
    long mode = PyLong_AsLong(args[0]);
    Py_ssize_t inner = PyLong_AsSsize_t(args[5]);
    if ((mode == -1 || inner == -1) && PyErr_Occurred())
        return NULL;
    Bufs b;
    if (take(&b, args + 1, 4, "iiIo") < 0)
        return NULL;
    Py_ssize_t total = b.len[3];
    if (mode < 0 || mode > 2 || (mode == 0) != (b.p[2] == NULL) || inner <= 0
        || total % inner || b.len[0] != total || b.len[1] == 0
        || (b.p[2] && b.len[2] != total)) {
        release(&b);
        return PyErr_Format(PyExc_ValueError, "ember._kernels.prelu: shapes do not agree");
    }
    prelu_job j = {(int)mode, b.p[0], b.p[1], b.p[2], b.p[3], inner, b.len[1], b.kind};
    Py_BEGIN_ALLOW_THREADS
    parallel(call_prelu, &j, total / inner, 1, MIN_PART / inner + 1);
    Py_END_ALLOW_THREADS
    release(&b);
    Py_RETURN_NONE;
}

/* lerp(start, end, out, w): start + w (end - start) for a number w, Lerp's formulas: float32
 * diff = end - start, then from start for |w| < 0.5 (start + diff w) and from end otherwise
 * (end - diff (1 - w)), the product and sum in float64 and rounded once to float32 (as the
 * NumPy path, which gives a fused multiply-add's value); float64 in float64, two roundings.
 * out may be start or end (lerp_, an EMA's update: element i read, then written). */
typedef struct {
    const void *a, *b;
    void *out;
    double w;
    char kind;
} lerp_job;

CLONES static void lerp_float(const lerp_job *j, Py_ssize_t i0, Py_ssize_t i1)
{
    const float *a = (const float *)j->a, *b = (const float *)j->b;
    float *o = (float *)j->out;
    const float w = (float)j->w;
    if (fabsf(w) < 0.5f) {
        const double wd = (double)w;
        IVDEP for (Py_ssize_t i = i0; i < i1; i++) {
            const float d = b[i] - a[i];
            o[i] = (float)((double)a[i] + (double)d * wd);
        }
    }
    else {
        const double vd = (double)(1.0f - w);
        IVDEP for (Py_ssize_t i = i0; i < i1; i++) {
            const float d = b[i] - a[i];
            o[i] = (float)((double)b[i] + -((double)d * vd));
        }
    }
}

CLONES static void lerp_double(const lerp_job *j, Py_ssize_t i0, Py_ssize_t i1)
{
    const double *a = (const double *)j->a, *b = (const double *)j->b;
    double *o = (double *)j->out;
    const double w = j->w;
    if (fabs(w) < 0.5) {
        IVDEP for (Py_ssize_t i = i0; i < i1; i++)
            o[i] = a[i] + w * (b[i] - a[i]);
    }
    else {
        IVDEP for (Py_ssize_t i = i0; i < i1; i++)
            o[i] = b[i] - (b[i] - a[i]) * (1.0 - w);
    }
}

BY_KIND(lerp, lerp_job)

static PyObject *py_lerp(PyObject *mod, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 4)
        return PyErr_Format(PyExc_TypeError, "ember._kernels.lerp: expected 4 arguments");
    double w = PyFloat_AsDouble(args[3]);
    if (w == -1.0 && PyErr_Occurred())
        return NULL;
    Bufs b;
    if (take(&b, args, 3, "iio") < 0)
        return NULL;
    if (same_lengths(&b, b.len[2], 0, 2) < 0) {
        release(&b);
        return NULL;
    }
    lerp_job j = {b.p[0], b.p[1], b.p[2], w, b.kind};
    Py_BEGIN_ALLOW_THREADS
    parallel(call_lerp, &j, b.len[2], 64, MIN_PART);
    Py_END_ALLOW_THREADS
    release(&b);
    Py_RETURN_NONE;
}

/* smooth_l1(mode, x, t, g, out, beta, gs): SmoothL1Loss's elementwise terms and gradient in
 * one pass, its NumPy path's operations and order (d = x - t; beta's derived constants rounded
 * to the dtype as NumPy takes Python numbers): mode 0 smooth L1 |d| < beta ? (d d) (0.5 / beta)
 * : |d| - 0.5 beta; 1 Huber |d| < beta ? (d d) 0.5 : (|d| - 0.5 beta) beta; 2 smooth L1's
 * gradient |d| < beta ? (d (g (0.5 / beta))) 2 : sign(d) g; 3 Huber's clip(d, -beta, beta) g;
 * g an array of out's length, or (None) the number gs. */
typedef struct {
    int mode;
    const void *x, *t, *g;
    void *out;
    double beta, gs;
    char kind;
} sl1_job;

#define SL1_FN(T, ABS)                                                                         \
    CLONES static void sl1_##T(const sl1_job *j, Py_ssize_t i0, Py_ssize_t i1)                 \
    {                                                                                          \
        const T *x = (const T *)j->x, *t = (const T *)j->t, *gp = (const T *)j->g;             \
        T *o = (T *)j->out;                                                                    \
        const T b = (T)j->beta, h = (T)(0.5 * j->beta), c = (T)(0.5 / j->beta);                \
        const T half = (T)0.5, two = 2, one = 1, gsv = (T)j->gs;                               \
        switch (j->mode) {                                                                     \
        case 0: IVDEP for (Py_ssize_t i = i0; i < i1; i++) {                                   \
                    const T d = x[i] - t[i], ad = ABS(d);                                      \
                    o[i] = ad < b ? (d * d) * c : ad - h;                                      \
                } break;                                                                       \
        case 1: IVDEP for (Py_ssize_t i = i0; i < i1; i++) {                                   \
                    const T d = x[i] - t[i], ad = ABS(d);                                      \
                    o[i] = ad < b ? (d * d) * half : (ad - h) * b;                             \
                } break;                                                                       \
        case 2: IVDEP for (Py_ssize_t i = i0; i < i1; i++) {                                   \
                    const T d = x[i] - t[i], g = gp ? gp[i] : gsv;                             \
                    const T sg = d > 0 ? one : d < 0 ? -one : d;                               \
                    o[i] = ABS(d) < b ? (d * (g * c)) * two : sg * g;                          \
                } break;                                                                       \
        default: IVDEP for (Py_ssize_t i = i0; i < i1; i++) {                                  \
                    const T d = x[i] - t[i], g = gp ? gp[i] : gsv;                             \
                    const T k = d < -b ? -b : d > b ? b : d;                                   \
                    o[i] = k * g;                                                              \
                } break;                                                                       \
        }                                                                                      \
    }
SL1_FN(float, fabsf)
SL1_FN(double, fabs)

BY_KIND(sl1, sl1_job)

static PyObject *py_smooth_l1(PyObject *mod, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 7)
        return PyErr_Format(PyExc_TypeError, "ember._kernels.smooth_l1: expected 7 arguments");
    long mode = PyLong_AsLong(args[0]);
    double beta = PyFloat_AsDouble(args[5]), gs = PyFloat_AsDouble(args[6]);
    if ((mode == -1 || beta == -1.0 || gs == -1.0) && PyErr_Occurred())
        return NULL;
    if (mode < 0 || mode > 3 || !(beta > 0))
        return PyErr_Format(PyExc_ValueError, "ember._kernels.smooth_l1: mode %ld, beta %g",
                            mode, beta);
    Bufs b;
    if (take(&b, args + 1, 4, "iiIo") < 0)
        return NULL;
    if (same_lengths(&b, b.len[3], 0, 3) < 0) {
        release(&b);
        return NULL;
    }
    sl1_job j = {(int)mode, b.p[0], b.p[1], b.p[2], b.p[3], beta, gs, b.kind};
    Py_BEGIN_ALLOW_THREADS
    parallel(call_sl1, &j, b.len[3], 64, MIN_PART);
    Py_END_ALLOW_THREADS
    release(&b);
    Py_RETURN_NONE;
}

/* addc(div, x, t1, t2, out, value): out = x + (t1 * t2) * value (addcmul), or with div
 * x + (t1 / t2) * value (addcdiv), float32/float64 arrays of one dtype and length, value rounded
 * to it first: the order and roundings of NumPy's three calls (the product or quotient, its
 * scaling, the sum), one pass instead of three, on the kernels' pool. out may be x, t1 or t2
 * itself (an in-place addcmul_: element i is read, then written). */
typedef struct {
    int div;
    const void *x, *a, *b;
    void *out;
    double value;
    char kind;
} addc_job;

#define ADDC_FN(T)                                                                             \
    CLONES static void addc_##T(const addc_job *j, Py_ssize_t i0, Py_ssize_t i1)               \
    {                                                                                          \
        const T *x = (const T *)j->x, *a = (const T *)j->a, *b = (const T *)j->b;              \
        T *o = (T *)j->out;                                                                    \
        const T v = (T)j->value;                                                               \
        if (j->div) {                                                                          \
            IVDEP                                                                              \
            for (Py_ssize_t i = i0; i < i1; i++)                                               \
                o[i] = x[i] + (a[i] / b[i]) * v;                                               \
        }                                                                                      \
        else {                                                                                 \
            IVDEP                                                                              \
            for (Py_ssize_t i = i0; i < i1; i++)                                               \
                o[i] = x[i] + (a[i] * b[i]) * v;                                               \
        }                                                                                      \
    }
ADDC_FN(float)
ADDC_FN(double)

BY_KIND(addc, addc_job)

static PyObject *py_addc(PyObject *mod, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 6)
        return PyErr_Format(PyExc_TypeError, "ember._kernels.addc: expected 6 arguments");
    int div = PyObject_IsTrue(args[0]);
    if (div < 0)
        return NULL;
    double value = PyFloat_AsDouble(args[5]);
    if (value == -1.0 && PyErr_Occurred())
        return NULL;
    Bufs b;
    if (take(&b, args + 1, 4, "IIIo") < 0)
        return NULL;
    Py_ssize_t total = b.len[3];
    if (!b.p[0] || !b.p[1] || !b.p[2] || same_lengths(&b, total, 0, 3) < 0) {
        release(&b);
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_ValueError, "ember._kernels.addc: x, t1 and t2 are arrays");
        return NULL;
    }
    addc_job j = {div, b.p[0], b.p[1], b.p[2], b.p[3], value, b.kind};
    Py_BEGIN_ALLOW_THREADS
    parallel(call_addc, &j, total, 64, MIN_PART);
    Py_END_ALLOW_THREADS
    release(&b);
    Py_RETURN_NONE;
}

static PyObject *py_relu_backward(PyObject *mod, PyObject *const *args, Py_ssize_t nargs)
{
    return run_binary(args, nargs, relu_backward_f32, relu_backward_f64);
}

/* ---------------------------------------------------------------------------------------------
 * nan_to_num: y = x != x ? nan : x == +inf ? posinf : x == -inf ? neginf : x, the replacements
 * rounded to the array's dtype once (as NumPy's copyto): np.nan_to_num's values in one pass where
 * NumPy takes six (a copy, isnan, isposinf, isneginf and three masked copies). p = {nan, posinf,
 * neginf}; a NaN's payload is replaced, not kept (NumPy's and PyTorch's). */
CLONES static void nan_to_num_f32(const void *xv, void *yv, Py_ssize_t i0, Py_ssize_t i1,
                                  const double *p)
{
    const float *RESTRICT x = (const float *)xv;
    float *RESTRICT y = (float *)yv;
    float nan = (float)p[0], hi = (float)p[1], lo = (float)p[2];
    for (Py_ssize_t i = i0; i < i1; i++) {
        float v = x[i];
        v = v == INFINITY ? hi : v;
        v = v == -INFINITY ? lo : v;
        y[i] = x[i] != x[i] ? nan : v;
    }
}

CLONES static void nan_to_num_f64(const void *xv, void *yv, Py_ssize_t i0, Py_ssize_t i1,
                                  const double *p)
{
    const double *RESTRICT x = (const double *)xv;
    double *RESTRICT y = (double *)yv;
    double nan = p[0], hi = p[1], lo = p[2];
    for (Py_ssize_t i = i0; i < i1; i++) {
        double v = x[i];
        v = v == INFINITY ? hi : v;
        v = v == -INFINITY ? lo : v;
        y[i] = x[i] != x[i] ? nan : v;
    }
}

/* nan_to_num(x, out, nan, posinf, neginf): float32 or float64 arrays of one size; numbers */
static PyObject *py_nan_to_num(PyObject *mod, PyObject *const *args, Py_ssize_t nargs)
{
    return run_unary_fd(args, nargs, "nan_to_num", 3, nan_to_num_f32, nan_to_num_f64, 1,
                        MIN_PART);
}

/* ---------------------------------------------------------------------------------------------
 * outer: y[i, j] = a[i] * b[j] (rows r0..r1 of an (m, n) result), one rounded multiply per
 * element as NumPy's broadcast a[:, None] * b[None, :] and PyTorch's, in one vector pass per row
 * where NumPy's broadcast multiply runs a loop several times slower. */
typedef void (*outer_fn)(const void *, const void *, void *, Py_ssize_t, Py_ssize_t, Py_ssize_t);

CLONES static void outer_f32(const void *av, const void *bv, void *yv, Py_ssize_t n,
                             Py_ssize_t r0, Py_ssize_t r1)
{
    const float *RESTRICT a = (const float *)av;
    const float *RESTRICT b = (const float *)bv;
    for (Py_ssize_t i = r0; i < r1; i++) {
        float *RESTRICT y = (float *)yv + i * n;
        float s = a[i];
        for (Py_ssize_t j = 0; j < n; j++)
            y[j] = s * b[j];
    }
}

CLONES static void outer_f64(const void *av, const void *bv, void *yv, Py_ssize_t n,
                             Py_ssize_t r0, Py_ssize_t r1)
{
    const double *RESTRICT a = (const double *)av;
    const double *RESTRICT b = (const double *)bv;
    for (Py_ssize_t i = r0; i < r1; i++) {
        double *RESTRICT y = (double *)yv + i * n;
        double s = a[i];
        for (Py_ssize_t j = 0; j < n; j++)
            y[j] = s * b[j];
    }
}

static void call_outer(void *c, Py_ssize_t r0, Py_ssize_t r1)
{
    call_ctx *k = (call_ctx *)c;
    ((outer_fn)k->f)(k->a, k->b, k->out, k->n, r0, r1);
}

/* outer(a, b, out): float32 or float64; a m elements, b n, out m * n */
static PyObject *py_outer(PyObject *mod, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3)
        return PyErr_Format(PyExc_TypeError, "ember._kernels.outer: expected 3 arguments");
    Bufs b;
    if (take(&b, args, 3, "iio") < 0)
        return NULL;
    Py_ssize_t m = b.len[0], n = b.len[1];
    if (b.len[2] != m * n) {
        release(&b);
        return PyErr_Format(PyExc_ValueError, "ember._kernels.outer: out has %zd elements, "
                            "expected %zd", b.len[2], m * n);
    }
    if (m > 0 && n > 0) {
        call_ctx c = {b.kind == 'f' ? (void *)outer_f32 : (void *)outer_f64, b.p[0], b.p[1],
                      b.p[2], n, NULL};
        Py_ssize_t rows = MIN_PART / n > 0 ? MIN_PART / n : 1;
        Py_BEGIN_ALLOW_THREADS
        parallel(call_outer, &c, m, 1, rows);
        Py_END_ALLOW_THREADS
    }
    release(&b);
    Py_RETURN_NONE;
}

/* ---------------------------------------------------------------------------------------------
 * row_sum: each row's sum by NumPy's pairwise summation (its add.reduce along a contiguous axis):
 * under 8 elements in order; up to 128 (a leaf) in 8 running sums (lane j takes elements j,
 * j + 8, ...) combined ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7)), then the tail in order;
 * longer rows split at n / 2 rounded down to a multiple of 8, each half summed so and the halves
 * added. The same bits as NumPy's. Where a node's leaves are eight, four or two of one length (a
 * node of 64 k elements with 512 < n <= 1024, of 32 k with 256 < n <= 512, of 16 k up to 256:
 * every node of a power-of-two row) they are summed as one unit, leaf after leaf in address order
 * (each a chain of dependent vector additions that the CPU overlaps with the next leaf's), and
 * their eight lane sums combined at once (pw_hsum8). Interleaving the leaves' chains instead
 * read eight streams a page apart: as fast from cache, 1.7x slower where x came from memory (4M
 * floats after a 16 MiB write, as a backward leaves them: 0.73 against 0.44 ms). A long single row (a full sum) splits its tree's top
 * PW_TOP_DEPTH levels over the threads: the same subtrees at any thread count, so the same bits.
 * Each row's sum starts from NumPy's identity, +0.0, so a row of -0.0s sums to +0.0 (NumPy's and
 * PyTorch's answer). */
#define PW_TOP_DEPTH 4
#define PW_SPLIT (1 << 18)  /* a single row this long splits over the threads */
typedef struct {
    Py_ssize_t off, n;
} pw_node;

/* where NumPy's tree splits n elements (n > 128): the first half, rounded down to a multiple
 * of 8 */
KI Py_ssize_t pw_half(Py_ssize_t n)
{
    return n / 2 - (n / 2) % 8;
}

/* the subtrees of the tree over n elements from off at depth levels down (or its leaves, where
 * they come first), in order, appended at out[k]; the new count */
static int pw_list(Py_ssize_t off, Py_ssize_t n, pw_node *out, int k, int depth)
{
    if (n <= 128 || depth == 0) {
        out[k].off = off;
        out[k].n = n;
        return k + 1;
    }
    Py_ssize_t n2 = pw_half(n);
    k = pw_list(off, n2, out, k, depth - 1);
    return pw_list(off + n2, n - n2, out, k, depth - 1);
}

/* the tree's top depth levels added up from its subtrees' sums, in order */
#define PW_COMBINE(T)                                                                           \
static T pw_combine_##T(const T *sums, int *k, Py_ssize_t n, int depth)                         \
{                                                                                               \
    if (n <= 128 || depth == 0)                                                                 \
        return sums[(*k)++];                                                                    \
    Py_ssize_t n2 = pw_half(n);                                                                 \
    T left = pw_combine_##T(sums, k, n2, depth - 1);                                            \
    return left + pw_combine_##T(sums, k, n - n2, depth - 1);                                   \
}
PW_COMBINE(float)
PW_COMBINE(double)

#define PW_LANES(r) (((r)[0] + (r)[1]) + ((r)[2] + (r)[3])) + (((r)[4] + (r)[5]) + ((r)[6] + (r)[7]))

/* 8 running sums as one vector (GCC's vector types: the compiler does not pack several leaves'
 * arrays into vectors itself) */
#if defined(__GNUC__) || defined(__clang__)
typedef float pw_vec_float __attribute__((vector_size(32)));
typedef double pw_vec_double __attribute__((vector_size(64)));
#define PW_VEC(T) pw_vec_##T
typedef int pw_mask_float __attribute__((vector_size(32)));
typedef long long pw_mask_double __attribute__((vector_size(64)));
#if defined(__clang__)
#define PW_SHUF(T, a, b, ...) __builtin_shufflevector(a, b, __VA_ARGS__)
#else
#define PW_SHUF(T, a, b, ...) __builtin_shuffle(a, b, (pw_mask_##T){__VA_ARGS__})
#endif
/* the 8 leaves' PW_LANES at once: each level of its tree for all leaves in one vector addition
 * (lanes regrouped by shuffles; the same additions of the same pairs, so the same bits) */
#define PW_HSUM8(T)                                                                             \
KI void pw_hsum8_##T(const PW_VEC(T) *r, T *out)                                                \
{                                                                                               \
    PW_VEC(T) x[4], y[2], z;                                                                    \
    for (int t = 0; t < 4; t++) /* lanes: leaf 2t, 2t+1 alternating; pairs 01, 23, 45, 67 */    \
        x[t] = PW_SHUF(T, r[2 * t], r[2 * t + 1], 0, 8, 2, 10, 4, 12, 6, 14)                    \
               + PW_SHUF(T, r[2 * t], r[2 * t + 1], 1, 9, 3, 11, 5, 13, 7, 15);                 \
    for (int t = 0; t < 2; t++) /* four leaves' (01 + 23), then their (45 + 67) */              \
        y[t] = PW_SHUF(T, x[2 * t], x[2 * t + 1], 0, 1, 8, 9, 4, 5, 12, 13)                     \
               + PW_SHUF(T, x[2 * t], x[2 * t + 1], 2, 3, 10, 11, 6, 7, 14, 15);                \
    z = PW_SHUF(T, y[0], y[1], 0, 1, 2, 3, 8, 9, 10, 11)                                        \
        + PW_SHUF(T, y[0], y[1], 4, 5, 6, 7, 12, 13, 14, 15);                                   \
    memcpy(out, &z, sizeof z);                                                                  \
}
PW_HSUM8(float)
PW_HSUM8(double)
/* q leaves of m elements each (m a multiple of 8, 8 <= m <= 128) from a, chains interleaved */
#define PW_LEAVES(T, SQ, V)                                                                     \
KI void pw_leaves##SQ##_##T(const T *RESTRICT a, Py_ssize_t m, int q, T *out)                   \
{                                                                                               \
    PW_VEC(T) r[8], w;                                                                          \
    for (int t = 0; t < q; t++) {                                                               \
        memcpy(&w, a + t * m, sizeof w);                                                        \
        PW_VEC(T) acc = V(w);                                                                   \
        for (Py_ssize_t i = 8; i < m; i += 8) {                                                 \
            memcpy(&w, a + t * m + i, sizeof w);                                                \
            acc += V(w);                                                                        \
        }                                                                                       \
        r[t] = acc;                                                                             \
    }                                                                                           \
    if (q == 8) {                                                                               \
        pw_hsum8_##T(r, out);                                                                   \
        return;                                                                                 \
    }                                                                                           \
    for (int t = 0; t < q; t++) {                                                               \
        T lanes[8];                                                                             \
        memcpy(lanes, &r[t], sizeof lanes);                                                     \
        out[t] = PW_LANES(lanes);                                                               \
    }                                                                                           \
}
#else  /* the same additions leaf by leaf */
#define PW_LEAVES(T, SQ, V)                                                                     \
KI void pw_leaves##SQ##_##T(const T *RESTRICT a, Py_ssize_t m, int q, T *out)                   \
{                                                                                               \
    for (int t = 0; t < q; t++) {                                                               \
        T r[8];                                                                                 \
        for (int j = 0; j < 8; j++)                                                             \
            r[j] = V(a[t * m + j]);                                                             \
        for (Py_ssize_t i = 8; i < m; i += 8)                                                   \
            for (int j = 0; j < 8; j++)                                                         \
                r[j] += V(a[t * m + i + j]);                                                    \
        out[t] = PW_LANES(r);                                                                   \
    }                                                                                           \
}
#endif

#define PW_ROWSUM(T, SQ, V)                                                                     \
PW_LEAVES(T, SQ, V)                                                                             \
CLONES static T pairwise##SQ##_##T(const T *RESTRICT a, Py_ssize_t n)                           \
{                                                                                               \
    if (n < 8) {                                                                                \
        T res = -(T)0.0;                                                                        \
        for (Py_ssize_t i = 0; i < n; i++)                                                      \
            res += V(a[i]);                                                                     \
        return res;                                                                             \
    }                                                                                           \
    if (n <= 128) {                                                                             \
        T r[8];                                                                                 \
        for (int j = 0; j < 8; j++)                                                             \
            r[j] = V(a[j]);                                                                     \
        Py_ssize_t i;                                                                           \
        for (i = 8; i < n - (n % 8); i += 8)                                                    \
            for (int j = 0; j < 8; j++)                                                         \
                r[j] += V(a[i + j]);                                                            \
        T res = PW_LANES(r);                                                                    \
        for (; i < n; i++)                                                                      \
            res += V(a[i]);                                                                     \
        return res;                                                                             \
    }                                                                                           \
    if (n % 64 == 0 && n > 512 && n <= 1024) { /* eighths of n / 8: leaves */                   \
        T s[8];                                                                                 \
        pw_leaves##SQ##_##T(a, n / 8, 8, s);                                                    \
        return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));               \
    }                                                                                           \
    if (n % 32 == 0 && n > 256 && n <= 512) { /* halves of n / 2, quarters of n / 4: leaves */  \
        T s[4];                                                                                 \
        pw_leaves##SQ##_##T(a, n / 4, 4, s);                                                    \
        return (s[0] + s[1]) + (s[2] + s[3]);                                                   \
    }                                                                                           \
    if (n % 16 == 0 && n <= 256) { /* two leaves of n / 2 */                                    \
        T s[4];                                                                                 \
        pw_leaves##SQ##_##T(a, n / 2, 2, s);                                                    \
        return s[0] + s[1];                                                                     \
    }                                                                                           \
    Py_ssize_t n2 = pw_half(n);                                                                 \
    return pairwise##SQ##_##T(a, n2) + pairwise##SQ##_##T(a + n2, n - n2);                      \
}                                                                                               \
                                                                                                \
static void row_sum##SQ##_##T(void *c, Py_ssize_t r0, Py_ssize_t r1)                            \
{                                                                                               \
    call_ctx *k = (call_ctx *)c;                                                                \
    const T *x = (const T *)k->a;                                                               \
    T *y = (T *)k->out;                                                                         \
    for (Py_ssize_t r = r0; r < r1; r++)                                                        \
        y[r] = (T)0.0 + pairwise##SQ##_##T(x + r * k->n, k->n);                                \
}                                                                                               \
                                                                                                \
/* the subtrees [i0, i1) of one long row's top levels (listed in k->p as pw_node) */            \
static void top_sum##SQ##_##T(void *c, Py_ssize_t i0, Py_ssize_t i1)                            \
{                                                                                               \
    call_ctx *k = (call_ctx *)c;                                                                \
    const pw_node *L = (const pw_node *)k->p;                                                   \
    for (Py_ssize_t i = i0; i < i1; i++)                                                        \
        ((T *)k->out)[i] = pairwise##SQ##_##T((const T *)k->a + L[i].off, L[i].n);              \
}
#define PW_SAME(v) (v)
#define PW_SQUARE(v) ((v) * (v))
PW_ROWSUM(float, , PW_SAME)
PW_ROWSUM(double, , PW_SAME)
PW_ROWSUM(float, _sq, PW_SQUARE)
PW_ROWSUM(double, _sq, PW_SQUARE)

/* row_sum(x, out, n[, square]): out[r] = the pairwise sum of x's row r (n elements), of their
 * squares (each rounded, as NumPy's (x * x).sum()) where square is true; float32 or float64 */
static PyObject *py_row_sum(PyObject *mod, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3 && nargs != 4)
        return PyErr_Format(PyExc_TypeError, "ember._kernels.row_sum: expected 3 or 4 arguments");
    Py_ssize_t n = PyLong_AsSsize_t(args[2]);
    if (n == -1 && PyErr_Occurred())
        return NULL;
    int square = nargs == 4 ? PyObject_IsTrue(args[3]) : 0;
    if (square < 0)
        return NULL;
    Bufs b;
    if (take(&b, args, 2, "io") < 0)
        return NULL;
    if (n <= 0 || b.len[0] != b.len[1] * n) {
        release(&b);
        return PyErr_Format(PyExc_ValueError, "ember._kernels.row_sum: %zd elements are not %zd "
                            "rows of %zd", b.len[0], b.len[1], n);
    }
    call_ctx c = {NULL, b.p[0], NULL, b.p[1], n, NULL};
    Py_ssize_t rows = MIN_PART / n > 0 ? MIN_PART / n : 1;
    if (b.len[1] == 1 && n >= PW_SPLIT && want_threads > 1) {
        /* one long row: its top subtrees over the threads, then the tree's top additions */
        pw_node L[1 << PW_TOP_DEPTH];
        double part[1 << PW_TOP_DEPTH];  /* (float or double sums) */
        int count = pw_list(0, n, L, 0, PW_TOP_DEPTH), k = 0;
        c.p = (const double *)L;
        c.out = part;
        Py_BEGIN_ALLOW_THREADS
        if (b.kind == 'f') {
            parallel(square ? top_sum_sq_float : top_sum_float, &c, count, 1, 1);
            *(float *)b.p[1] = 0.0f + pw_combine_float((const float *)part, &k, n, PW_TOP_DEPTH);
        } else {
            parallel(square ? top_sum_sq_double : top_sum_double, &c, count, 1, 1);
            *(double *)b.p[1] = 0.0 + pw_combine_double(part, &k, n, PW_TOP_DEPTH);
        }
        Py_END_ALLOW_THREADS
        release(&b);
        Py_RETURN_NONE;
    }
    Py_BEGIN_ALLOW_THREADS
    parallel(b.kind == 'f' ? (square ? row_sum_sq_float : row_sum_float)
                           : (square ? row_sum_sq_double : row_sum_double), &c, b.len[1], 1, rows);
    Py_END_ALLOW_THREADS
    release(&b);
    Py_RETURN_NONE;
}

/* ---------------------------------------------------------------------------------------------
 * cumsum: running sums along the middle axis of an (outer, n, inner) array, accumulated in double
 * and each output rounded once (PyTorch's CPU cumsum; ember's NumPy path cumsum(dtype=float64)
 * then a cast), from the end where reverse (cumsum's backward). The sum starts at -0.0, as
 * NumPy's starts at the first element. Units: an outer index with a block of CUM_IB inner
 * columns (one unit per outer index where inner is 1), their sums side by side in a vector. */
#define CUM_IB 256
typedef struct {
    const void *x;
    void *y;
    Py_ssize_t n, inner, blocks;
    int reverse;
} cum_ctx;

#define CUMSUM(T)                                                                               \
CLONES static void cumsum_##T(void *c, Py_ssize_t u0, Py_ssize_t u1)                            \
{                                                                                               \
    cum_ctx *k = (cum_ctx *)c;                                                                  \
    Py_ssize_t n = k->n, inner = k->inner;                                                      \
    for (Py_ssize_t u = u0; u < u1; u++) {                                                      \
        Py_ssize_t o = u / k->blocks, j0 = (u % k->blocks) * CUM_IB;                            \
        Py_ssize_t w = inner - j0 < CUM_IB ? inner - j0 : CUM_IB;                               \
        const T *RESTRICT x = (const T *)k->x + o * n * inner + j0;                             \
        T *RESTRICT y = (T *)k->y + o * n * inner + j0;                                         \
        if (inner == 1) {                                                                       \
            double s = -0.0;                                                                    \
            if (k->reverse)                                                                     \
                for (Py_ssize_t i = n - 1; i >= 0; i--) {                                       \
                    s += (double)x[i];                                                          \
                    y[i] = (T)s;                                                                \
                }                                                                               \
            else                                                                                \
                for (Py_ssize_t i = 0; i < n; i++) {                                            \
                    s += (double)x[i];                                                          \
                    y[i] = (T)s;                                                                \
                }                                                                               \
            continue;                                                                           \
        }                                                                                       \
        double acc[CUM_IB];                                                                     \
        for (Py_ssize_t j = 0; j < w; j++)                                                      \
            acc[j] = -0.0;                                                                      \
        for (Py_ssize_t t = 0; t < n; t++) {                                                    \
            Py_ssize_t row = (k->reverse ? n - 1 - t : t) * inner;                              \
            for (Py_ssize_t j = 0; j < w; j++) {                                                \
                acc[j] += (double)x[row + j];                                                   \
                y[row + j] = (T)acc[j];                                                         \
            }                                                                                   \
        }                                                                                       \
    }                                                                                           \
}
CUMSUM(float)
CUMSUM(double)

/* cumsum(x, out, outer, n, inner, reverse): float32 or float64 arrays of outer * n * inner */
static PyObject *py_cumsum(PyObject *mod, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 6)
        return PyErr_Format(PyExc_TypeError, "ember._kernels.cumsum: expected 6 arguments");
    Py_ssize_t outer = PyLong_AsSsize_t(args[2]), n = PyLong_AsSsize_t(args[3]),
               inner = PyLong_AsSsize_t(args[4]);
    int reverse = PyObject_IsTrue(args[5]);
    if (PyErr_Occurred())
        return NULL;
    Bufs b;
    if (take(&b, args, 2, "io") < 0)
        return NULL;
    if (outer < 0 || n < 0 || inner <= 0 || b.len[0] != outer * n * inner
        || same_lengths(&b, b.len[0], 1, 2) < 0) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_ValueError, "ember._kernels.cumsum: sizes differ");
        release(&b);
        return NULL;
    }
    cum_ctx c = {b.p[0], b.p[1], n, inner, (inner + CUM_IB - 1) / CUM_IB, reverse};
    Py_ssize_t per = n * (inner < CUM_IB ? inner : CUM_IB);
    Py_ssize_t min_units = per > 0 && MIN_PART / per > 0 ? MIN_PART / per : 1;
    if (n > 0) {
        Py_BEGIN_ALLOW_THREADS
        parallel(b.kind == 'f' ? cumsum_float : cumsum_double, &c, outer * c.blocks, 1, min_units);
        Py_END_ALLOW_THREADS
    }
    release(&b);
    Py_RETURN_NONE;
}

/* ---------------------------------------------------------------------------------------------
 * topk_rows: the indices of each row's k largest (or smallest) values, best first, by one scan
 * with a sorted buffer of k (most elements cost one comparison with the buffer's last), where
 * NumPy's path partitions each whole row. Only where the answer is unique: a row with a NaN,
 * two equal values among its k best, or its k-th value twice gets idx[row, 0] = -1 (the caller
 * takes the NumPy path, whose choice among ties it keeps). k <= TOPK_MAX. */
#define TOPK_MAX 64
typedef struct {
    const void *x;
    int64_t *idx;
    Py_ssize_t n, k;
    int largest;
} topk_ctx;

#define TOPK(T)                                                                                 \
static void topk_##T(void *c, Py_ssize_t r0, Py_ssize_t r1)                                     \
{                                                                                               \
    topk_ctx *t = (topk_ctx *)c;                                                                \
    Py_ssize_t n = t->n, k = t->k;                                                              \
    T sign = t->largest ? (T)1 : (T)-1;                                                         \
    T bv[TOPK_MAX];                                                                             \
    int64_t bi[TOPK_MAX];                                                                       \
    for (Py_ssize_t r = r0; r < r1; r++) {                                                      \
        const T *x = (const T *)t->x + r * n;                                                   \
        int64_t *out = t->idx + r * k;                                                          \
        Py_ssize_t m = 0;                                                                       \
        int nan = 0;                                                                            \
        for (Py_ssize_t i = 0; i < n; i++) {                                                    \
            T v = sign * x[i];  /* (the negation is exact: smallest as largest) */              \
            nan |= v != v;                                                                      \
            if (m == k && !(v > bv[k - 1]))                                                     \
                continue;                                                                       \
            Py_ssize_t j = m < k ? m++ : k - 1;                                                 \
            while (j > 0 && v > bv[j - 1]) {                                                    \
                bv[j] = bv[j - 1];                                                              \
                bi[j] = bi[j - 1];                                                              \
                j--;                                                                            \
            }                                                                                   \
            bv[j] = v;                                                                          \
            bi[j] = (int64_t)i;                                                                 \
        }                                                                                       \
        int unique = !nan;                                                                      \
        for (Py_ssize_t j = 1; j < k && unique; j++)                                            \
            unique = bv[j - 1] > bv[j];                                                         \
        if (unique) {                                                                           \
            Py_ssize_t same = 0;                                                                \
            T last = bv[k - 1];                                                                 \
            for (Py_ssize_t i = 0; i < n; i++)                                                  \
                same += sign * x[i] == last;                                                    \
            unique = same == 1;                                                                 \
        }                                                                                       \
        for (Py_ssize_t j = 0; j < k; j++)                                                      \
            out[j] = bi[j];                                                                     \
        if (!unique)                                                                            \
            out[0] = -1;                                                                        \
    }                                                                                           \
}
TOPK(float)
TOPK(double)

/* topk_rows(x, idx, n, k, largest): x float32/float64 rows of n, idx int64 rows of k
 * (1 <= k <= min(n, TOPK_MAX)) */
static PyObject *py_topk_rows(PyObject *mod, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 5)
        return PyErr_Format(PyExc_TypeError, "ember._kernels.topk_rows: expected 5 arguments");
    Py_ssize_t n = PyLong_AsSsize_t(args[2]), k = PyLong_AsSsize_t(args[3]);
    int largest = PyObject_IsTrue(args[4]);
    if (PyErr_Occurred())
        return NULL;
    if (k < 1 || k > TOPK_MAX || k > n)
        return PyErr_Format(PyExc_ValueError, "ember._kernels.topk_rows: k %zd out of [1, %d] "
                            "or above n %zd", k, TOPK_MAX, n);
    Bufs b;
    if (take(&b, args, 1, "i") < 0)
        return NULL;
    Py_buffer iv;
    if (PyObject_GetBuffer(args[1], &iv, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | PyBUF_WRITABLE) < 0) {
        release(&b);
        return NULL;
    }
    const char *f = iv.format ? iv.format : "B";
    if (*f == '@' || *f == '=' || *f == '<')
        f++;
    Py_ssize_t rows = b.len[0] / n;
    if (iv.itemsize != 8 || !(f[0] == 'q' || f[0] == 'l') || f[1] != '\0'
        || b.len[0] != rows * n || iv.len / 8 != rows * k) {
        PyBuffer_Release(&iv);
        release(&b);
        return PyErr_Format(PyExc_ValueError, "ember._kernels.topk_rows: idx must be an int64 "
                            "array of rows * k elements");
    }
    topk_ctx c = {b.p[0], (int64_t *)iv.buf, n, k, largest};
    Py_BEGIN_ALLOW_THREADS
    parallel(b.kind == 'f' ? topk_float : topk_double, &c, rows, 1,
             MIN_PART / n > 0 ? MIN_PART / n : 1);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&iv);
    release(&b);
    Py_RETURN_NONE;
}

/* ---------------------------------------------------------------------------------------------
 * tri_copy: tril/triu of each (n, m) matrix of a C-contiguous array of any plain dtype, as bytes:
 * row i keeps columns j with j - i <= k (lower) or j - i >= k (upper), the rest zero bytes (the
 * value 0 of every numeric dtype); one copy and one clear per row where NumPy's where() reads a
 * full-size mask. Units: matrix rows. */
typedef struct {
    const char *x;
    char *y;
    Py_ssize_t n, m, item, k;
    int lower;
} tri_ctx;

static void tri_copy_range(void *c, Py_ssize_t u0, Py_ssize_t u1)
{
    tri_ctx *t = (tri_ctx *)c;
    Py_ssize_t m = t->m, row = m * t->item;
    for (Py_ssize_t u = u0; u < u1; u++) {
        Py_ssize_t i = u % t->n;
        /* columns [lo, hi) are kept */
        Py_ssize_t lo = t->lower ? 0 : i + t->k, hi = t->lower ? i + t->k + 1 : m;
        lo = lo < 0 ? 0 : (lo > m ? m : lo);
        hi = hi < lo ? lo : (hi > m ? m : hi);
        const char *x = t->x + u * row;
        char *y = t->y + u * row;
        memset(y, 0, (size_t)(lo * t->item));
        memcpy(y + lo * t->item, x + lo * t->item, (size_t)((hi - lo) * t->item));
        memset(y + hi * t->item, 0, (size_t)((m - hi) * t->item));
    }
}

/* tri_copy(src, dst, n, m, itemsize, k, lower): src and dst bytes of matrices (n, m) */
static PyObject *py_tri_copy(PyObject *mod, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 7)
        return PyErr_Format(PyExc_TypeError, "ember._kernels.tri_copy: expected 7 arguments");
    Py_ssize_t n = PyLong_AsSsize_t(args[2]), m = PyLong_AsSsize_t(args[3]),
               item = PyLong_AsSsize_t(args[4]), k = PyLong_AsSsize_t(args[5]);
    int lower = PyObject_IsTrue(args[6]);
    if (PyErr_Occurred())
        return NULL;
    Py_buffer sv, dv;
    if (PyObject_GetBuffer(args[0], &sv, PyBUF_C_CONTIGUOUS) < 0)
        return NULL;
    if (PyObject_GetBuffer(args[1], &dv, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) < 0) {
        PyBuffer_Release(&sv);
        return NULL;
    }
    Py_ssize_t mat = n * m * item;
    if (n <= 0 || m <= 0 || item <= 0 || sv.len != dv.len || sv.len % mat) {
        PyBuffer_Release(&sv);
        PyBuffer_Release(&dv);
        return PyErr_Format(PyExc_ValueError, "ember._kernels.tri_copy: sizes differ");
    }
    tri_ctx c = {(const char *)sv.buf, (char *)dv.buf, n, m, item, k, lower};
    Py_ssize_t rows = sv.len / (m * item), per = MIN_PART * 4 / (m * item);
    Py_BEGIN_ALLOW_THREADS
    parallel(tri_copy_range, &c, rows, 1, per > 0 ? per : 1);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&sv);
    PyBuffer_Release(&dv);
    Py_RETURN_NONE;
}

/* ---------------------------------------------------------------------------------------------
 * normal_'s Box-Muller in 16-element blocks (ops/_mt19937.py `box_muller16_f32`, PyTorch's AVX2
 * `normal_fill_16`): element j of a block pairs with j + 8; r = sqrt(-2 log(1 - u_j)),
 * theta = 2 pi u_(j+8); r cos(theta) goes to j, r sin(theta) to j + 8; then std y + mean by one
 * fma. log, sin and cos are the Cephes float32 polynomials, each fused step an fmaf as the AVX2
 * kernel's: bit for bit PyTorch's normals (and the NumPy path's operations, which round their
 * fmas through float64). Constants are float32 roundings of the doubles, as the NumPy path's. */

KI float bm_log(float x)
{
    x = x > 1.17549435e-38f ? x : 1.17549435e-38f;
    int32_t i;
    memcpy(&i, &x, 4);
    float e = (float)((i >> 23) - 0x7F) + 1.0f;
    int32_t mi = (i & ~0x7F800000) | 0x3F000000;
    float m;
    memcpy(&m, &mi, 4);
    int small = m < (float)0.707106781186547524;
    x = m - 1.0f;
    e = small ? e - 1.0f : e;
    x = small ? x + m : x;  /* (x + 0 where not small: the same value) */
    float z = x * x;
    float y = (float)7.0376836292e-2;
    y = fmaf(y, x, (float)-1.1514610310e-1);
    y = fmaf(y, x, (float)1.1676998740e-1);
    y = fmaf(y, x, (float)-1.2420140846e-1);
    y = fmaf(y, x, (float)1.4249322787e-1);
    y = fmaf(y, x, (float)-1.6668057665e-1);
    y = fmaf(y, x, (float)2.0000714765e-1);
    y = fmaf(y, x, (float)-2.4999993993e-1);
    y = fmaf(y, x, (float)3.3333331174e-1);
    y = y * x;
    y = fmaf(y, z, e * (float)-2.12194440e-4);
    y = fmaf(z, -0.5f, y);
    x = x + y;
    return fmaf(e, 0.693359375f, x);
}

KI void bm_sincos(float x, float *s, float *c)  /* x >= 0 */
{
    int32_t j = (int32_t)(x * (float)1.27323954473516);
    j = (j + 1) & ~1;
    float y = (float)j;
    x = fmaf(y, -0.78515625f, x);
    x = fmaf(y, (float)-2.4187564849853515625e-4, x);
    x = fmaf(y, (float)-3.77489497744594108e-8, x);
    float z = x * x;
    float yc = fmaf((float)2.443315711809948e-5, z, (float)-1.388731625493765e-3);
    yc = fmaf(yc, z, (float)4.166664568298827e-2);
    yc = yc * z;
    yc = fmaf(yc, z, -(z * 0.5f));
    yc = yc + 1.0f;
    float ys = fmaf((float)-1.9515295891e-4, z, (float)8.3321608736e-3);
    ys = fmaf(ys, z, (float)-1.6666654611e-1);
    ys = ys * z;
    ys = fmaf(ys, x, x);
    int poly = (j & 2) == 0;
    float sv = poly ? ys : yc, cv = poly ? yc : ys;
    *s = (j & 4) != 0 ? -sv : sv;
    *c = ((j - 2) & 4) == 0 ? -cv : cv;
}

/* blocks [i0, i1) of u (multiples of 16) into y; p = {mean, std, affine} */
CLONES_FMA static void box_muller16_f32(const void *uv, void *yv, Py_ssize_t i0, Py_ssize_t i1,
                                        const double *p)
{
    const float *RESTRICT u = (const float *)uv;
    float *RESTRICT y = (float *)yv;
    float mean = (float)p[0], std = (float)p[1];
    int affine = p[2] != 0.0;
    /* up to 64 blocks at a time: their halves gathered into contiguous rows so the arithmetic
     * runs as one long loop (an 8-iteration loop per block does not fill 16 lanes) */
    float lo[512], hi[512], ya[512], yb[512];
    for (Py_ssize_t c0 = i0; c0 < i1; c0 += 1024) {
        Py_ssize_t nb = (i1 - c0 < 1024 ? i1 - c0 : 1024) / 16;
        for (Py_ssize_t k = 0; k < nb; k++)
            for (int j = 0; j < 8; j++) {
                lo[k * 8 + j] = u[c0 + k * 16 + j];
                hi[k * 8 + j] = u[c0 + k * 16 + 8 + j];
            }
        for (Py_ssize_t q = 0; q < nb * 8; q++) {
            float r = sqrtf(-2.0f * bm_log(1.0f - lo[q]));
            float sn, cs;
            bm_sincos((float)(2 * 3.14159265358979323846) * hi[q], &sn, &cs);
            float a = r * cs, c = r * sn;
            ya[q] = affine ? fmaf(a, std, mean) : a;
            yb[q] = affine ? fmaf(c, std, mean) : c;
        }
        for (Py_ssize_t k = 0; k < nb; k++)
            for (int j = 0; j < 8; j++) {
                y[c0 + k * 16 + j] = ya[k * 8 + j];
                y[c0 + k * 16 + 8 + j] = yb[k * 8 + j];
            }
    }
}

/* float64: PyTorch's scalar normal_fill_16, the C library's log, cos and sin (PyTorch calls the
 * same functions: bit for bit where both run on one C library), mean/std by one fma */
static void box_muller16_f64(const void *uv, void *yv, Py_ssize_t i0, Py_ssize_t i1,
                             const double *p)
{
    const double *RESTRICT u = (const double *)uv;
    double *RESTRICT y = (double *)yv;
    int affine = p[2] != 0.0;
    for (Py_ssize_t b = i0; b < i1; b += 16)
        for (int j = 0; j < 8; j++) {
            double r = sqrt(-2.0 * log(1.0 - u[b + j]));
            double theta = (2.0 * 3.14159265358979323846) * u[b + 8 + j];
            double a = r * cos(theta), c = r * sin(theta);
            y[b + j] = affine ? fma(a, p[1], p[0]) : a;
            y[b + 8 + j] = affine ? fma(c, p[1], p[0]) : c;
        }
}

/* box_muller16(u, out, mean, std, affine): float32 or float64, u and out of one size, a multiple
 * of 16 (checked: the loops read whole blocks) */
static PyObject *py_box_muller16(PyObject *mod, PyObject *const *args, Py_ssize_t nargs)
{
    /* (parts of 2048 values: each costs a log, a sin and a cos) */
    return run_unary_fd(args, nargs, "box_muller16", 3, box_muller16_f32, box_muller16_f64, 16,
                        MIN_PART / 16);
}

/* bernoulli53(capsule, limit, out, scale, direct): dropout's noise (ops/nn/dropout.py `_noise`),
 * each element from one 64-bit draw, two 32-bit words high half first (ops/_mt19937.py
 * `words64`): scale where its low 53 bits are below limit, else 0. The words are the stream
 * random_raw gives, in the same order, drawn through the bit generator's function pointers or,
 * with direct, from its MT19937 state here (tempered a run at a time: 4096 draws in 8.7 us
 * against 22.7). The caller holds the bit generator's lock; sequential (one stream), and the
 * GIL stays held. */
static PyObject *py_bernoulli53(PyObject *mod, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 5)
        return PyErr_Format(PyExc_TypeError, "ember._kernels.bernoulli53: expected 5 arguments");
    np_bitgen *bg = (np_bitgen *)PyCapsule_GetPointer(args[0], "BitGenerator");
    if (bg == NULL)
        return NULL;
    uint64_t limit = PyLong_AsUnsignedLongLong(args[1]);
    if (limit == (uint64_t)-1 && PyErr_Occurred())
        return NULL;
    double scale;
    if (doubles(args + 3, 1, &scale) < 0)
        return NULL;
    int direct = PyObject_IsTrue(args[4]);
    if (direct < 0)
        return NULL;
    Bufs b;
    if (take(&b, args + 2, 1, "o") < 0)
        return NULL;
    Py_ssize_t n = b.len[0];
    np_mt19937_state *st = (np_mt19937_state *)bg->state;
    uint32_t words[2048];  /* a chunk of 1024 draws */
    for (Py_ssize_t i0 = 0; i0 < n; i0 += 1024) {
        Py_ssize_t m = n - i0 < 1024 ? n - i0 : 1024;
        if (direct)
            mt_fill(st, words, 2 * m);
        else
            for (Py_ssize_t j = 0; j < 2 * m; j++)
                words[j] = bg->next_uint32(bg->state);
        if (b.kind == 'f')
            keep53_float(words, (float *)b.p[0] + i0, m, limit, (float)scale);
        else
            keep53_double(words, (double *)b.p[0] + i0, m, limit, scale);
    }
    release(&b);
    Py_RETURN_NONE;
}

/* mt_uniform(capsule, out, direct): uniforms on [0, 1) from the bit generator's stream, as
 * ops/_mt19937.py's unit24 (float32 out: a word's low 24 bits / 2^24) and unit53 (float64 out:
 * a 64-bit draw, high word first, its low 53 bits / 2^53) make them: the same words in the same
 * order (direct: from NumPy's MT19937 state here, as bernoulli53), the same exact values. */
CLONES static void unit24_from(const uint32_t *RESTRICT w, float *RESTRICT out, Py_ssize_t n)
{
    for (Py_ssize_t i = 0; i < n; i++)
        out[i] = (float)(w[i] & 0xFFFFFFU) * 0x1p-24f;
}

CLONES static void unit53_from(const uint32_t *RESTRICT w, double *RESTRICT out, Py_ssize_t n)
{
    const uint64_t low53 = (UINT64_C(1) << 53) - 1;
    for (Py_ssize_t i = 0; i < n; i++)
        out[i] = (double)((((uint64_t)w[2 * i] << 32) | w[2 * i + 1]) & low53) * 0x1p-53;
}

static PyObject *py_mt_uniform(PyObject *mod, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3)
        return PyErr_Format(PyExc_TypeError, "ember._kernels.mt_uniform: expected 3 arguments");
    np_bitgen *bg = (np_bitgen *)PyCapsule_GetPointer(args[0], "BitGenerator");
    if (bg == NULL)
        return NULL;
    int direct = PyObject_IsTrue(args[2]);
    if (direct < 0)
        return NULL;
    Bufs b;
    if (take(&b, args + 1, 1, "o") < 0)
        return NULL;
    Py_ssize_t n = b.len[0];
    int per = b.kind == 'f' ? 1 : 2;  /* words a value */
    np_mt19937_state *st = (np_mt19937_state *)bg->state;
    uint32_t words[2048];
    for (Py_ssize_t i0 = 0; i0 < n; i0 += 2048 / per) {
        Py_ssize_t m = n - i0 < 2048 / per ? n - i0 : 2048 / per;
        if (direct)
            mt_fill(st, words, per * m);
        else
            for (Py_ssize_t j = 0; j < per * m; j++)
                words[j] = bg->next_uint32(bg->state);
        if (per == 1)
            unit24_from(words, (float *)b.p[0] + i0, m);
        else
            unit53_from(words, (double *)b.p[0] + i0, m);
    }
    release(&b);
    Py_RETURN_NONE;
}

/* ---------------------------------------------------------------------------------------------
 * gather and scatter_add along a dim (ops/indexing_scatter.py's Gather and ScatterAdd): index an
 * int64 C-contiguous array of the operand's ndim; position of index element (i_0, ..., i_nd-1)
 * in the other array: index[i] along dim, i_d along every other d. gather copies items (any
 * dtype of 1, 2, 4 or 8 bytes, from a strided x); scatter_add adds float32/float64 values into a
 * C-contiguous out one after the other in the index's C order, as NumPy's add.at over the flat
 * positions does (the same bits). An index outside [0, size) returns False (the caller's NumPy
 * path raises its error). Sequential: scatter_add's order is its result. */
#define GS_MAXDIM 16

typedef struct {
    int nd, dim;
    Py_ssize_t ishape[GS_MAXDIM], astride[GS_MAXDIM], bstride[GS_MAXDIM], limit;
} gs_geom;

/* the geometry of index iv against array av (strides in bytes); -1 with no error set when the
 * shapes do not fit */
static int gs_setup(gs_geom *g, Py_buffer *av, Py_buffer *iv, Py_buffer *bv, long dim)
{
    int nd = iv->ndim;
    if (nd < 1 || nd > GS_MAXDIM || av->ndim != nd || bv->ndim != nd || dim < 0 || dim >= nd)
        return -1;
    for (int d = 0; d < nd; d++) {
        if (d != dim && iv->shape[d] > av->shape[d])
            return -1;
        if (bv->shape[d] != iv->shape[d])
            return -1;
        g->ishape[d] = iv->shape[d];
        g->astride[d] = av->strides[d];
        g->bstride[d] = bv->strides[d];
    }
    g->nd = nd;
    g->dim = (int)dim;
    g->limit = av->shape[dim];
    return 0;
}

/* visit every index element in C order: a at the element's position in the indexed array
 * (given its index value k), b at the same coordinates in the array shaped like the index */
#define GS_LOOP(BODY)                                                                              \
    do {                                                                                           \
        Py_ssize_t cnt[GS_MAXDIM] = {0}, last = g.ishape[g.nd - 1];                               \
        Py_ssize_t rows = last ? total / last : 0;                                                 \
        const int64_t *ix = (const int64_t *)iv.buf;                                               \
        Py_ssize_t as_last = g.astride[g.nd - 1], bs_last = g.bstride[g.nd - 1];                   \
        Py_ssize_t as_dim = g.astride[g.dim];                                                      \
        for (Py_ssize_t r = 0; r < rows && ok; r++) {                                              \
            Py_ssize_t abase = 0, bbase = 0;                                                       \
            for (int d = 0; d < g.nd - 1; d++) {                                                   \
                if (d != g.dim)                                                                    \
                    abase += cnt[d] * g.astride[d];                                                \
                bbase += cnt[d] * g.bstride[d];                                                    \
            }                                                                                      \
            for (Py_ssize_t j = 0; j < last; j++) {                                                \
                int64_t k = ix[r * last + j];                                                      \
                if (k < 0 || k >= g.limit) {                                                       \
                    ok = 0;                                                                        \
                    break;                                                                         \
                }                                                                                  \
                Py_ssize_t apos = abase + (g.dim == g.nd - 1 ? k * as_last                         \
                                                             : k * as_dim + j * as_last);          \
                Py_ssize_t bpos = bbase + j * bs_last;                                             \
                BODY;                                                                              \
            }                                                                                      \
            for (int d = g.nd - 2; d >= 0; d--) {                                                  \
                if (++cnt[d] < g.ishape[d])                                                        \
                    break;                                                                         \
                cnt[d] = 0;                                                                        \
            }                                                                                      \
        }                                                                                          \
    } while (0)

static int gs_index(PyObject *obj, Py_buffer *iv)
{
    if (PyObject_GetBuffer(obj, iv, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0)
        return -1;
    const char *f = iv->format ? iv->format : "B";
    if (*f == '@' || *f == '=' || *f == '<')
        f++;
    if (iv->itemsize != 8 || (f[0] != 'q' && f[0] != 'l') || f[1] != '\0') {
        PyBuffer_Release(iv);
        PyErr_SetString(PyExc_TypeError, "ember._kernels: the index must be int64");
        return -1;
    }
    return 0;
}

/* gather_dim(x, index, out, dim): out (C-contiguous, index's shape, x's item size) = x gathered */
static PyObject *py_gather_dim(PyObject *mod, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 4)
        return PyErr_Format(PyExc_TypeError, "ember._kernels.gather_dim: expected 4 arguments");
    long dim = PyLong_AsLong(args[3]);
    if (dim == -1 && PyErr_Occurred())
        return NULL;
    Py_buffer xv, iv, ov;
    if (PyObject_GetBuffer(args[0], &xv, PyBUF_STRIDES) < 0)
        return NULL;
    if (gs_index(args[1], &iv) < 0) {
        PyBuffer_Release(&xv);
        return NULL;
    }
    if (PyObject_GetBuffer(args[2], &ov, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) < 0) {
        PyBuffer_Release(&iv);
        PyBuffer_Release(&xv);
        return NULL;
    }
    gs_geom g;
    int ok = xv.itemsize == ov.itemsize && gs_setup(&g, &xv, &iv, &ov, dim) == 0
             && (xv.itemsize == 1 || xv.itemsize == 2 || xv.itemsize == 4 || xv.itemsize == 8);
    Py_ssize_t total = iv.len / 8;
    if (ok) {
        const char *a = (const char *)xv.buf;
        char *b = (char *)ov.buf;
        switch (xv.itemsize) {
        case 1: GS_LOOP(memcpy(b + bpos, a + apos, 1)); break;
        case 2: GS_LOOP(memcpy(b + bpos, a + apos, 2)); break;
        case 4: GS_LOOP(memcpy(b + bpos, a + apos, 4)); break;
        default: GS_LOOP(memcpy(b + bpos, a + apos, 8)); break;
        }
    }
    PyBuffer_Release(&ov);
    PyBuffer_Release(&iv);
    PyBuffer_Release(&xv);
    return PyBool_FromLong(ok);
}

/* scatter_add_dim(out, index, src, dim): out (C-contiguous float32/float64) += src scattered */
static PyObject *py_scatter_add_dim(PyObject *mod, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 4)
        return PyErr_Format(PyExc_TypeError, "ember._kernels.scatter_add_dim: expected 4 arguments");
    long dim = PyLong_AsLong(args[3]);
    if (dim == -1 && PyErr_Occurred())
        return NULL;
    Py_buffer ov, iv, sv;
    char ok_kind, skind;
    if (get_buffer(args[0], &ov, 1, &ok_kind, "out") < 0)
        return NULL;
    if (gs_index(args[1], &iv) < 0) {
        PyBuffer_Release(&ov);
        return NULL;
    }
    if (PyObject_GetBuffer(args[2], &sv, PyBUF_STRIDES | PyBUF_FORMAT) < 0) {
        PyBuffer_Release(&iv);
        PyBuffer_Release(&ov);
        return NULL;
    }
    const char *f = sv.format ? sv.format : "B";
    if (*f == '@' || *f == '=' || *f == '<')
        f++;
    skind = (f[0] == 'f' || f[0] == 'd') && f[1] == '\0' ? f[0] : 0;
    gs_geom g;
    int ok = skind == ok_kind && sv.itemsize == ov.itemsize
             && gs_setup(&g, &ov, &iv, &sv, dim) == 0;
    Py_ssize_t total = iv.len / 8;
    if (ok) {
        char *a = (char *)ov.buf;
        const char *b = (const char *)sv.buf;
        if (skind == 'f')
            GS_LOOP(*(float *)(a + apos) = *(float *)(a + apos) + *(const float *)(b + bpos));
        else
            GS_LOOP(*(double *)(a + apos) = *(double *)(a + apos) + *(const double *)(b + bpos));
    }
    PyBuffer_Release(&sv);
    PyBuffer_Release(&iv);
    PyBuffer_Release(&ov);
    return PyBool_FromLong(ok);
}

/* cross_entropy_rows(x, target, p | None, lse, loss, total, C): cross_entropy's common call
 * (ops/nn/loss.py's CrossEntropy: (N, C) logits, one class index per row, no weight, no
 * smoothing) in one call: softmax_lse's softmax and logsumexp, loss[i] = lse[i] - x[i, t[i]],
 * and total = loss summed in NumPy's pairwise order (np.add.reduce's bits). False, with p, lse
 * and loss partly written, where a target is outside [0, C) (the caller's general path then
 * handles ignore_index and raises for the others). */
static PyObject *py_cross_entropy_rows(PyObject *mod, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 7)
        return PyErr_Format(PyExc_TypeError,
                            "ember._kernels.cross_entropy_rows: expected 7 arguments");
    Py_ssize_t C = PyLong_AsSsize_t(args[6]);
    if (C == -1 && PyErr_Occurred())
        return NULL;
    Bufs b;
    PyObject *arrays[5] = {args[0], args[2], args[3], args[4], args[5]};
    if (take(&b, arrays, 5, "iOooo") < 0)
        return NULL;
    Py_buffer tv;
    if (gs_index(args[1], &tv) < 0) {
        release(&b);
        return NULL;
    }
    Py_ssize_t rows = tv.len / 8;
    if (C < 1 || rows < 1 || b.len[0] != rows * C || same_lengths(&b, rows * C, 1, 2) < 0
        || same_lengths(&b, rows, 2, 4) < 0 || b.len[4] != 1) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_ValueError, "ember._kernels.cross_entropy_rows: bad sizes");
        PyBuffer_Release(&tv);
        release(&b);
        return NULL;
    }
    ln_ctx c = {b.kind, b.p[0], NULL, NULL, NULL, NULL, NULL, b.p[1], NULL, b.p[2],
                NULL, NULL, rows, C, 0.0};
    const int64_t *t = (const int64_t *)tv.buf;
    int ok = 1;
    Py_BEGIN_ALLOW_THREADS
    parallel(call_softmax_lse, &c, rows, 1, MIN_PART / C > 1 ? MIN_PART / C : 1);
    if (b.kind == 'f') {
        const float *x = (const float *)b.p[0], *lse = (const float *)b.p[2];
        float *loss = (float *)b.p[3];
        for (Py_ssize_t i = 0; i < rows && ok; i++) {
            if (t[i] < 0 || t[i] >= C)
                ok = 0;
            else
                loss[i] = lse[i] - x[i * C + t[i]];
        }
        if (ok)
            *(float *)b.p[4] = -0.0f + pairwise_float(loss, rows);
    } else {
        const double *x = (const double *)b.p[0], *lse = (const double *)b.p[2];
        double *loss = (double *)b.p[3];
        for (Py_ssize_t i = 0; i < rows && ok; i++) {
            if (t[i] < 0 || t[i] >= C)
                ok = 0;
            else
                loss[i] = lse[i] - x[i * C + t[i]];
        }
        if (ok)
            *(double *)b.p[4] = -0.0 + pairwise_double(loss, rows);
    }
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&tv);
    release(&b);
    return PyBool_FromLong(ok);
}

/* cross_entropy_rows_backward(p, target, s, out, C): the gradient of cross_entropy_rows's
 * logits, s[i] (N values, or one for every row) times p, and at the target s[i] (p - 1): the
 * plain backward's products in T (p * s, s * (p - 1)), in one pass */
static PyObject *py_cross_entropy_rows_backward(PyObject *mod, PyObject *const *args,
                                                Py_ssize_t nargs)
{
    if (nargs != 5)
        return PyErr_Format(PyExc_TypeError,
                            "ember._kernels.cross_entropy_rows_backward: expected 5 arguments");
    Py_ssize_t C = PyLong_AsSsize_t(args[4]);
    if (C == -1 && PyErr_Occurred())
        return NULL;
    Bufs b;
    PyObject *arrays[3] = {args[0], args[2], args[3]};
    if (take(&b, arrays, 3, "iio") < 0)
        return NULL;
    Py_buffer tv;
    if (gs_index(args[1], &tv) < 0) {
        release(&b);
        return NULL;
    }
    Py_ssize_t rows = tv.len / 8;
    if (C < 1 || b.len[0] != rows * C || b.len[2] != rows * C
        || (b.len[1] != rows && b.len[1] != 1)) {
        PyBuffer_Release(&tv);
        release(&b);
        return PyErr_Format(PyExc_ValueError,
                            "ember._kernels.cross_entropy_rows_backward: bad sizes");
    }
    const int64_t *t = (const int64_t *)tv.buf;
    int each = b.len[1] == rows && rows > 1;
    int ok = 1;
    for (Py_ssize_t i = 0; i < rows; i++)
        if (t[i] < 0 || t[i] >= C)
            ok = 0;
    if (ok && b.kind == 'f') {
        const float *pp = (const float *)b.p[0], *sv = (const float *)b.p[1];
        float *o = (float *)b.p[2];
        for (Py_ssize_t i = 0; i < rows; i++) {
            const float si = sv[each ? i : 0];
            for (Py_ssize_t j = 0; j < C; j++)
                o[i * C + j] = pp[i * C + j] * si;
            o[i * C + t[i]] = si * (pp[i * C + t[i]] - 1.0f);
        }
    } else if (ok) {
        const double *pp = (const double *)b.p[0], *sv = (const double *)b.p[1];
        double *o = (double *)b.p[2];
        for (Py_ssize_t i = 0; i < rows; i++) {
            const double si = sv[each ? i : 0];
            for (Py_ssize_t j = 0; j < C; j++)
                o[i * C + j] = pp[i * C + j] * si;
            o[i * C + t[i]] = si * (pp[i * C + t[i]] - 1.0);
        }
    }
    PyBuffer_Release(&tv);
    release(&b);
    return PyBool_FromLong(ok);
}

static PyObject *py_set_num_threads(PyObject *m, PyObject *arg)
{
    long n = PyLong_AsLong(arg);
    if (n == -1 && PyErr_Occurred())
        return NULL;
    if (n < 1) {
        PyErr_SetString(PyExc_ValueError, "ember._kernels.set_num_threads: expected n >= 1");
        return NULL;
    }
    want_threads = n > MAX_THREADS ? MAX_THREADS : (int)n;
    Py_RETURN_NONE;
}

static PyObject *py_get_num_threads(PyObject *m, PyObject *unused)
{
    return PyLong_FromLong(HAVE_THREADS ? want_threads : 1);
}

static PyObject *py_isa(PyObject *m, PyObject *unused)
{
#if HAVE_CLONES
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f"))
        return PyUnicode_FromString("avx512f");
    if (__builtin_cpu_supports("avx2"))
        return PyUnicode_FromString("avx2");
    return PyUnicode_FromString("x86-64 baseline");
#else
    return PyUnicode_FromString("portable");
#endif
}

/* whether the CLONES_FMA loops that run here have the fma instruction: false in the baseline
 * variant of an x86-64 CPU without FMA, where each fmaf is a call into the C library (correctly
 * rounded, the same bits) and the loops stay scalar */
static PyObject *py_fma_in_hardware(PyObject *m, PyObject *unused)
{
#if HAVE_CLONES && defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 12
    __builtin_cpu_init();  /* CLONES_FMA's resolver: AVX-512F, then x86-64-v3, then the baseline */
    return PyBool_FromLong(__builtin_cpu_supports("avx512f")
                           || __builtin_cpu_supports("x86-64-v3"));
#elif HAVE_CLONES
    Py_RETURN_FALSE;  /* CLONES_FMA is CLONES here: its AVX2 variant has no fma either */
#elif defined(__FMA__) || defined(__aarch64__) || defined(__ARM_FEATURE_FMA)
    Py_RETURN_TRUE;
#else
    Py_RETURN_FALSE;
#endif
}

#define FAST(NAME, DOC) {#NAME, (PyCFunction)(void (*)(void))py_##NAME, METH_FASTCALL, DOC}
static PyMethodDef kernels_methods[] = {
    FAST(erf, "erf(x, out): float32 erf, within 1 ulp."),
    FAST(erfc, "erfc(x, out): float32 erfc, within 1 ulp."),
    FAST(erf_backward, "erf_backward(x, grad, out): float32 grad 2/sqrt(pi) exp(-x^2)."),
    FAST(erfc_backward, "erfc_backward(x, grad, out): float32 -grad 2/sqrt(pi) exp(-x^2)."),
    FAST(gelu, "gelu(x, out): float32 x Phi(x), within 1 ulp."),
    FAST(gelu_backward, "gelu_backward(x, grad, out): float32 grad (Phi(x) + x phi(x))."),
    FAST(gelu_tanh, "gelu_tanh(x, out): gelu's tanh form, float32 or float64."),
    FAST(gelu_tanh_backward, "gelu_tanh_backward(x, grad, out): its derivative times grad."),
    FAST(exp, "exp(x, out): float32 exp, within 1 ulp."),
    FAST(tanh, "tanh(x, out): float32 tanh, within 1 ulp."),
    FAST(gru_step, "gru_step(gi, gh, hp, rz, n, h, hid): a GRU step's gates and output, float32."),
    FAST(gru_step_backward, "gru_step_backward(rz, n, ghn, hp, dh, dgi, dgh, hid): a GRU step's gate gradients, float32."),
    FAST(lstm_step, "lstm_step(g, c, tc, h, hid): an LSTM step's gates, cell and output, float32."),
    FAST(lstm_step_backward, "lstm_step_backward(a, tc, cprev, dm, dc, da, hid): an LSTM step's gate gradients and dc, float32."),
    FAST(sigmoid, "sigmoid(x, out): float32 (1 ulp) or float64."),
    FAST(silu, "silu(x, out): x sigmoid(x), float32 (1 ulp) or float64."),
    FAST(silu_backward, "silu_backward(x, grad, out): grad s (1 + x (1 - s))."),
    FAST(mish, "mish(x, out): float32 x tanh(softplus(x)), 1 ulp."),
    FAST(mish_backward, "mish_backward(x, grad, out): float32 mish's derivative times grad."),
    FAST(logsigmoid, "logsigmoid(x, out): float32 log(sigmoid(x)), 1 ulp."),
    FAST(logsigmoid_backward, "logsigmoid_backward(x, grad, out): float32 grad sigmoid(-x)."),
    FAST(softplus, "softplus(x, out, beta, threshold): float32, 1 ulp."),
    FAST(softplus_backward, "softplus_backward(x, grad, out, beta, threshold): float32."),
    FAST(elu, "elu(x, out, alpha, scale, input_scale): float32, 1 ulp."),
    FAST(elu_backward, "elu_backward(x, grad, out, alpha, scale, input_scale): float32."),
    FAST(tanh_backward, "tanh_backward(y, grad, out): grad (1 - y y), bit for bit NumPy's."),
    FAST(sigmoid_backward, "sigmoid_backward(y, grad, out): (grad y) (1 - y), bit for bit."),
    FAST(softmax, "softmax(x, out, n): softmax over rows of n elements."),
    FAST(log_softmax, "log_softmax(x, out, n): log_softmax over rows of n elements."),
    FAST(softmax_backward, "softmax_backward(y, grad, out, n): y (grad - sum(grad y))."),
    FAST(log_softmax_backward, "log_softmax_backward(y, grad, out, n): grad - exp(y) sum(grad)."),
    FAST(layer_norm, "layer_norm(x, w, b, out, mean, rstd, n, eps): over rows of n elements."),
    FAST(layer_norm_backward,
         "layer_norm_backward(x, w, mean, rstd, grad, gx, gw, gb, n): gx, gw, gb (None: skip)."),
    FAST(softmax_lse, "softmax_lse(x, p, lse, n): softmax (p None: skipped) and logsumexp."),
    FAST(select, "select(cond, a | None, b | None, out, av, bv): out = cond ? a : b (np.where's values, one pass; float32/float64)."),
    FAST(softmax_mid, "softmax_mid(op, x, g, out, lse, outer, C, inner): the softmax family over the middle axis (float32)."),
    FAST(rms_norm, "rms_norm(x, w, out, rstd, n, eps): over rows of n elements."),
    FAST(attention, "attention(q, k, v, out, pt, N, L, S, D, Ev, scale, causal): float32 "
         "softmax(scale q k^T) v per slice (q, k, v, out strided), pt the probabilities^T."),
    FAST(attention_backward, "attention_backward(q, k, v, g, pt, gq, gk, gv, N, L, S, D, Ev, "
         "scale, causal): its gradients (None: skip)."),
    FAST(rms_norm_backward, "rms_norm_backward(x, w, rstd, grad, gx, gw, n): gx, gw (None: skip)."),
    FAST(batch_norm, "batch_norm(x, w, b, y, mean, var, rstd, C, hw, eps): x as (N, C, hw)."),
    FAST(batch_norm_backward,
         "batch_norm_backward(x, w, mean, rstd, grad, gx, gw, gb, C, hw): None: skip."),
    FAST(channel_affine, "channel_affine(x, scale, shift, y, C, hw): y = x scale[c] + shift[c]."),
    FAST(group_norm, "group_norm(x, w, b, y, mean, rstd, C, hw, G, eps): x as (N, C, hw)."),
    FAST(group_norm_backward,
         "group_norm_backward(x, w, mean, rstd, grad, gx, gw, gb, C, hw, G): None: skip."),
    FAST(adam, "adam(d, g, m, v, vmax, decay, b1, c1, c2, b2, bc2, eps, step): one Adam step."),
    FAST(sgd_many, "sgd_many(cls, ds, gs, bufs | None, momentum, 1 - dampening | None, lr, "
                   "nesterov): a group's SGD steps; False (nothing changed) where one does not fit."),
    FAST(rmsprop_many, "rmsprop_many(cls, ds, gs, vs, avgs, bufs, steps, alpha, eps, momentum, lr): "
                       "a group's RMSprop steps; False (nothing changed) where one does not fit."),
    FAST(adam_many, "adam_many(cls, ds, gs, ms, vs, steps, decay, b1, b2, eps, lr): a group's "
                    "Adam steps; False (nothing changed) where an array does not fit."),
    FAST(rmsprop, "rmsprop(d, g, v, grad_avg, buf, alpha, 1 - alpha, eps, momentum, lr)."),
    FAST(scatter_rows, "scatter_rows(idx, take, src, scale, out, d): out[idx] += src scale."),
    FAST(im2col, "im2col(x, cols, geom): convolution columns of an (N, C, H, W) image."),
    FAST(col2im, "col2im(cols, x, geom, accumulate): the columns summed into the image in tap order."),
    FAST(im2row, "im2row(x, rows, geom): an image's windows as row-major columns."),
    FAST(col2im_rows, "col2im_rows(rows, x, geom): row-major columns summed into the image."),
    FAST(to_batch_inner, "to_batch_inner(x, buf, geom): an image as a zero-bordered (C, Hp, Wp, N) buffer."),
    FAST(from_batch_inner, "from_batch_inner(buf, x, geom): the image in a (C, Hp, Wp, N) buffer's window."),
    FAST(im2col_batch_inner, "im2col_batch_inner(x, cols, geom): an image's batch-inner columns."),
    FAST(conv_direct, "conv_direct(x, wt, bp, y, geom): a convolution of few taps, no columns."),
    FAST(col2im_batch_inner, "col2im_batch_inner(cols, x, geom): batch-inner columns summed into the image."),
    FAST(max_pool, "max_pool(x, y, idx, geom): max pooling's maxima and (idx not None) their indices."),
    FAST(max_pool_backward, "max_pool_backward(gy, idx, gx, unique, n): max pooling's scatter."),
    FAST(half_cast, "half_cast(src, dst, mode): float32 <-> bfloat16 (0, 1) or float16 (2, 3)."),
    FAST(half_round, "half_round(src, half, wide, mode): float32 to bfloat16 (0; 4 portable) or float16 (2) and back, one pass."),
    FAST(sgd_momentum, "sgd_momentum(d, g, buf, momentum, 1 - dampening, lr, nesterov)."),
    FAST(mt_uniform, "mt_uniform(capsule, out, direct): unit24 (float32) or unit53 (float64) uniforms."),
    FAST(gather_dim, "gather_dim(x, index, out, dim): out = x gathered along dim; False on a bad index."),
    FAST(scatter_add_dim, "scatter_add_dim(out, index, src, dim): out += src scattered along dim, in order."),
    FAST(cross_entropy_rows, "cross_entropy_rows(x, target, p, lse, loss, total, C): cross_entropy's common call."),
    FAST(cross_entropy_rows_backward, "cross_entropy_rows_backward(p, target, s, out, C): its logits' gradient."),
    FAST(bernoulli53, "bernoulli53(capsule, limit, out, scale, direct): dropout's noise from a bit generator."),
    FAST(transpose_copy, "transpose_copy(src, dst): a strided array into C order by tiles; False where it does not apply."),
    FAST(relu_backward, "relu_backward(out, grad, res): grad where out > 0 (or NaN), else +0."),
    FAST(clamp, "clamp(x, out, lo, hi): min(max(x, lo), hi), NaN kept, -0.0 kept at a tie."),
    FAST(piecewise, "piecewise(op, x, g | None, out, a, b): hardtanh, hardsigmoid, hardswish, threshold, hard/softshrink (op 0-5) or their gradients; sign (6; with g: abs's gradient); leaky_relu (7)."),
    FAST(prelu, "prelu(mode, x, w, g | None, out, inner): PReLU (mode 0), its input's gradient (1), its weight's gradient terms (2)."),
    FAST(lerp, "lerp(start, end, out, w): start + w (end - start) for a number w, Lerp's roundings; out may be start or end."),
    FAST(smooth_l1, "smooth_l1(mode, x, t, g | None, out, beta, gs): smooth L1 / Huber terms (mode 0, 1) or gradients (2, 3)."),
    FAST(addc, "addc(div, x, t1, t2, out, value): x + (t1 * t2) * value, or (t1 / t2) with div: addcmul, addcdiv."),
    FAST(arith, "arith(op, a | None, b | number, out[, scale]): a + - * / b (op 0-3), b (op 4), "
                "a +/- b * scale (op 5, 6), elementwise; b may be a row that repeats; out may "
                "be a or b."),
    FAST(box_muller16, "box_muller16(u, out, mean, std, affine): normal_'s float32 Box-Muller blocks."),
    FAST(erfinv, "erfinv(x, out): float32 erfinv, within 1 ulp."),
    FAST(erfinv_backward, "erfinv_backward(y, grad, out): grad sqrt(pi)/2 exp(y^2), float32."),
    FAST(nan_to_num, "nan_to_num(x, out, nan, posinf, neginf): NaN and infinities replaced."),
    FAST(outer, "outer(a, b, out): out[i, j] = a[i] * b[j], float32 or float64."),
    FAST(row_sum, "row_sum(x, out, n[, square]): each n-element row's sum (of squares), NumPy's pairwise order."),
    FAST(cumsum, "cumsum(x, out, outer, n, inner, reverse): running sums in double, rounded once."),
    FAST(topk_rows, "topk_rows(x, idx, n, k, largest): each row's k best indices; -1 first: ties."),
    FAST(tri_copy, "tri_copy(src, dst, n, m, itemsize, k, lower): tril/triu as bytes."),
    FAST(blas_use, "blas_use(sgemm, ilp64): the BLAS's cblas_sgemm blas_gemm calls, as an address."),
    FAST(blas_gemm, "blas_gemm(a, b, out): out = a @ b, float32 (..., M, K) @ (..., K, N) through the BLAS, on the pool; False where none was handed over."),
    FAST(bf16_gemm, "bf16_gemm(a, b, out): out = a @ b, (B, M, K) @ (B, K, N) bfloat16 bits, float32 sums (AVX512-BF16)."),
    {"bf16_gemm_supported", (PyCFunction)py_bf16_gemm_supported, METH_NOARGS,
     "bf16_gemm_supported(): whether this build and CPU run bf16_gemm."},
    {"isa", (PyCFunction)py_isa, METH_NOARGS, "isa(): the instruction set the kernels run on."},
    {"fma_in_hardware", (PyCFunction)py_fma_in_hardware, METH_NOARGS,
     "fma_in_hardware(): whether the fmaf-based loops run the fma instruction here."},
    {"set_num_threads", (PyCFunction)py_set_num_threads, METH_O,
     "set_num_threads(n): threads a large kernel splits over (1: the calling thread alone)."},
    {"get_num_threads", (PyCFunction)py_get_num_threads, METH_NOARGS,
     "get_num_threads(): the thread count in use (1 where the build has no threads)."},
    {NULL, NULL, 0, NULL},
};

static int kernels_exec(PyObject *module)
{
    if (PyModule_AddStringConstant(module, "C_HASH", EMBER_KERNELS_C_HASH) < 0
        || PyModule_AddStringConstant(module, "BUILT_WITH", EMBER_KERNELS_BUILT_WITH) < 0)
        return -1;
    at_lanes_init();
#if HAVE_THREADS
    static int registered = 0;
    if (!registered && pthread_atfork(NULL, NULL, pool_after_fork_in_child) == 0)
        registered = 1;
    const char *spin = getenv("EMBER_POOL_SPIN_US");
    if (spin != NULL && *spin != '\0')
        pool_spin_ns = strtol(spin, NULL, 10) * 1000;
#endif
    return 0;
}

static PyModuleDef_Slot kernels_slots[] = {
    {Py_mod_exec, kernels_exec},
    {0, NULL},
};

static struct PyModuleDef kernels_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "ember._kernels",
    .m_doc = "ember's optional eager kernels: single-pass loops over float32/float64 arrays "
             "(see ember/_kernels_loader.py).",
    .m_size = 0,
    .m_methods = kernels_methods,
    .m_slots = kernels_slots,
};

PyMODINIT_FUNC PyInit__kernels(void)
{
    return PyModuleDef_Init(&kernels_module);
}
