/*
 * The per-tensor-pair sums and extremes behind msaccucmp's ten metrics, in three sweeps over
 * the two vectors: pass 1 (the plain sums, extremes and float64 means), pass 2 (KL's masses,
 * the cosine and the float64 squared deviations, which need pass 1's results) and KL's terms
 * (which need pass 2's masses), each sum still in numpy's order.
 *
 * msaccucmp evaluates each metric with numpy: float32 element-wise operations, then
 * np.add.reduce, np.maximum.reduce and np.minimum.reduce. Our CSV must carry the same digits, so
 * this kernel reproduces those numpy results bit for bit rather than approximating them:
 *
 *   - element-wise steps are the same IEEE float32 (or float64) operations in the same order;
 *     nothing is contracted into fused multiply-adds (built with -ffp-contract=off);
 *   - sums follow numpy's pairwise summation: blocks of at most 128 elements summed in eight
 *     interleaved partial sums, larger ranges split in halves rounded down to a multiple of 8,
 *     the total added to the reduction's identity 0;
 *   - a float32 array summed into float64 is summed as numpy's buffered cast does it: chunk by
 *     chunk of the ufunc buffer size, each chunk pairwise, the chunks added in turn;
 *   - any NaN makes a maximum or minimum NaN, as np.maximum.reduce does.
 *
 * The logarithm of the Kullback-Leibler divergence is left to numpy (its SIMD log need not agree
 * with the C library's). fusion_switch.compare.metrics checks this kernel against its numpy path
 * when it first loads it and falls back to numpy if the two ever differ.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "../_buffers.h"

#define BLOCK 128 /* numpy's PW_BLOCKSIZE */

/* Hot loops get an AVX2 copy chosen at load time where the CPU has it (x86-64 Linux); the
 * tests build it once more with -DKERNEL_NO_CLONES to hold the portable copy to the same bits. */
#if defined(__x86_64__) && defined(__GNUC__) && defined(__linux__) && !defined(KERNEL_NO_CLONES)
#define VECTOR_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define VECTOR_CLONES
#endif

/* ------------------------------------------------------------------ numpy's pairwise sum */

/*
 * Eight lanes as one vector (GCC/Clang vector extensions): SSE, AVX or NEON as the target has.
 * The eight lanes are exactly numpy's eight interleaved partial sums.
 */
typedef float f32x8 __attribute__((vector_size(32)));
typedef int i32x8 __attribute__((vector_size(32)));

static inline f32x8 load_f32x8(const float *a)
{
    f32x8 v;
    memcpy(&v, a, sizeof v);
    return v;
}

/*
 * One leaf of numpy's pairwise summation (at most BLOCK elements): fewer than 8 are added in
 * turn; otherwise eight interleaved partial sums, combined as a balanced tree, then the rest.
 * The float32 sums use it on stored values; the float64 leaves below (wide_leaf,
 * square_deviation_leaf) make the same additions on values they do not store.
 */
#define LEAF_SUM(name, T, VT, load)                                                          \
    static inline T name(const T *a, Py_ssize_t n)                                         \
    {                                                                                      \
        T res = (T)-0.0;                                                                   \
        if (n < 8) {                                                                       \
            for (Py_ssize_t i = 0; i < n; i++) res += a[i];                                \
            return res;                                                                    \
        }                                                                                  \
        VT r = load(a);                                                                    \
        Py_ssize_t i;                                                                      \
        for (i = 8; i < n - (n % 8); i += 8) r += load(a + i);                             \
        res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));          \
        for (; i < n; i++) res += a[i];                                                    \
        return res;                                                                        \
    }

LEAF_SUM(leaf_sum_f32, float, f32x8, load_f32x8)

/*
 * A leaf computes its elements start .. start+n-1 (n <= BLOCK) of K quantities and stores each
 * quantity's leaf sum in out[k]; pairwise() splits ranges as numpy does and adds the halves.
 */
typedef void (*LeafF32)(void *job, Py_ssize_t start, Py_ssize_t n, float *out);
typedef void (*LeafF64)(void *job, Py_ssize_t start, Py_ssize_t n, double *out);

#define MAX_K 5

/* the size of the left half numpy's pairwise sum splits n > BLOCK elements into: half of them,
 * rounded down to a multiple of 8 */
static Py_ssize_t pairwise_split(Py_ssize_t n)
{
    Py_ssize_t half = n / 2;
    return half - half % 8;
}

static void pairwise_f32(void *job, LeafF32 leaf, int k_count, Py_ssize_t start, Py_ssize_t n,
                         float *out)
{
    if (n <= BLOCK) {
        leaf(job, start, n, out);
        return;
    }
    Py_ssize_t half = pairwise_split(n);
    float left[MAX_K], right[MAX_K];
    pairwise_f32(job, leaf, k_count, start, half, left);
    pairwise_f32(job, leaf, k_count, start + half, n - half, right);
    for (int k = 0; k < k_count; k++) out[k] = left[k] + right[k];
}

static void pairwise_f64(void *job, LeafF64 leaf, Py_ssize_t start, Py_ssize_t n, double *out)
{
    if (n <= BLOCK) {
        leaf(job, start, n, out);
        return;
    }
    Py_ssize_t half = pairwise_split(n);
    double left, right;
    pairwise_f64(job, leaf, start, half, &left);
    pairwise_f64(job, leaf, start + half, n - half, &right);
    *out = left + right;
}

/* ------------------------------------------------------------------ extremes */

/*
 * Largest and smallest value and whether a NaN was seen, kept in 8 lanes so that the loop
 * vectorises; np.maximum.reduce's answer is NaN when any value is NaN, else the maximum.
 */
typedef struct {
    f32x8 high, low;
    i32x8 nan;
} Extremes;

static void extremes_start(Extremes *e)
{
    for (int j = 0; j < 8; j++) {
        e->high[j] = -INFINITY;
        e->low[j] = INFINITY;
        e->nan[j] = 0;
    }
}

static inline f32x8 pick(i32x8 mask, f32x8 yes, f32x8 no)
{
    return (f32x8)(((i32x8)yes & mask) | ((i32x8)no & ~mask));
}

static inline void extremes_add(Extremes *e, const float *a, Py_ssize_t n)
{
    f32x8 high = e->high, low = e->low;
    i32x8 nan = e->nan;
    Py_ssize_t i = 0;
    for (; i + 8 <= n; i += 8) {
        f32x8 v = load_f32x8(a + i);
        high = pick(v > high, v, high);
        low = pick(v < low, v, low);
        nan |= v != v;
    }
    for (; i < n; i++) {
        float v = a[i];
        high[0] = v > high[0] ? v : high[0];
        low[0] = v < low[0] ? v : low[0];
        nan[0] |= v != v;
    }
    e->high = high;
    e->low = low;
    e->nan = nan;
}

static float extremes_high(const Extremes *e)
{
    float best = -INFINITY;
    for (int j = 0; j < 8; j++) {
        if (e->nan[j]) return NAN;
        best = e->high[j] > best ? e->high[j] : best;
    }
    return best;
}

static float extremes_low(const Extremes *e)
{
    float best = INFINITY;
    for (int j = 0; j < 8; j++) {
        if (e->nan[j]) return NAN;
        best = e->low[j] < best ? e->low[j] : best;
    }
    return best;
}

/* ------------------------------------------------------------------ pass 1 */

typedef struct {
    const float *x, *y;
    Extremes abs_error, relative, x_range, y_range;
} Pass1;

/*
 * 0 |x - y|              MeanAbsoluteError, MaxAbsoluteError
 * 1 |x - y| * |x - y|    RootMeanSquareError, RelativeEuclideanDistance
 * 2 y * y                RelativeEuclideanDistance, |y| of the cosine
 * 3 x * x                |x| of the cosine
 * 4 |x / y - 1| where |y| > float64 eps (2^-52, exact in float32), else 0: relative errors
 */
VECTOR_CLONES
static void pass1_leaf(void *job, Py_ssize_t start, Py_ssize_t n, float *out)
{
    Pass1 *p = job;
    const float *x = p->x + start, *y = p->y + start;
    float e[5][BLOCK];
    for (Py_ssize_t i = 0; i < n; i++) {
        float diff = fabsf(x[i] - y[i]);
        float rel = fabsf(x[i] / y[i] - 1.0f);
        e[0][i] = diff;
        e[1][i] = diff * diff;
        e[2][i] = y[i] * y[i];
        e[3][i] = x[i] * x[i];
        e[4][i] = fabsf(y[i]) > 0x1p-52f ? rel : 0.0f;
    }
    for (int k = 0; k < 5; k++) out[k] = leaf_sum_f32(e[k], n);
    extremes_add(&p->abs_error, e[0], n);
    extremes_add(&p->relative, e[4], n);
    extremes_add(&p->x_range, x, n);
    extremes_add(&p->y_range, y, n);
}

/* ------------------------------------------------------------------ cosine */

typedef struct {
    const float *x, *y;
    float x_norm, y_norm;
} Cosine;

/* ------------------------------------------------------------------ Kullback-Leibler */

/* msaccucmp's floor: (v - min) / (max - min) (v itself when max == min), at least float32 eps */
static inline float kl_floor(float value, float low, float span)
{
    float scaled = span != 0.0f ? (value - low) / span : value;
    return (scaled >= FLT_EPSILON || scaled != scaled) ? scaled : FLT_EPSILON;
}

typedef struct {
    const float *x, *y;
    float x_low, x_span, y_low, y_span, p_total, q_total;
} Divergence;

/* The two KL masses and, when the cosine is computed, its sum: one sweep after pass 1 */
typedef struct {
    Divergence *kl;
    const Cosine *cosine; /* NULL: the cosine exits early */
} Pass2;

VECTOR_CLONES
static void pass2_leaf(void *job, Py_ssize_t start, Py_ssize_t n, float *out)
{
    Pass2 *p = job;
    const Divergence *d = p->kl;
    const float *x = d->x + start, *y = d->y + start;
    float e[3][BLOCK];
    for (Py_ssize_t i = 0; i < n; i++) {
        e[0][i] = kl_floor(x[i], d->x_low, d->x_span);
        e[1][i] = kl_floor(y[i], d->y_low, d->y_span);
    }
    out[0] = leaf_sum_f32(e[0], n);
    out[1] = leaf_sum_f32(e[1], n);
    if (p->cosine != NULL) {
        const float x_norm = p->cosine->x_norm, y_norm = p->cosine->y_norm;
        for (Py_ssize_t i = 0; i < n; i++) e[2][i] = (x[i] / x_norm) * (y[i] / y_norm);
        out[2] = leaf_sum_f32(e[2], n);
    }
}

/*
 * The KL terms p * log(p / q) are summed a segment at a time: p and the ratio p / q of at most
 * KL_SEGMENT elements go into the scratch (which stays in the cache), numpy's log is applied to
 * the ratio there, and the segment's terms are summed. A segment is a node of numpy's pairwise
 * tree, so the sum is the one over the whole vector; each p is divided out once, not twice.
 */
#define KL_SEGMENT 16384

/* the values of one segment for vectors of n: the scratch holds two segments (ratios, p) */
static Py_ssize_t kl_room(Py_ssize_t n) { return n < KL_SEGMENT ? n : KL_SEGMENT; }

VECTOR_CLONES
static void kl_fill(const Divergence *d, Py_ssize_t start, Py_ssize_t n, float *p, float *ratio)
{
    const float *x = d->x + start, *y = d->y + start;
    for (Py_ssize_t i = 0; i < n; i++) {
        float mass = kl_floor(x[i], d->x_low, d->x_span) / d->p_total;
        float q = kl_floor(y[i], d->y_low, d->y_span) / d->q_total;
        p[i] = mass;
        ratio[i] = mass / q;
    }
}

typedef struct {
    const float *p, *log_ratio;
} Terms;

VECTOR_CLONES
static void kl_terms_leaf(void *job, Py_ssize_t start, Py_ssize_t n, float *out)
{
    const Terms *t = job;
    const float *p = t->p + start, *log_ratio = t->log_ratio + start;
    float e[BLOCK];
    for (Py_ssize_t i = 0; i < n; i++) e[i] = p[i] * log_ratio[i];
    out[0] = leaf_sum_f32(e, n);
}

typedef struct {
    const Divergence *d;
    PyObject *log, *scratch_obj; /* numpy.log; the array whose buffer is scratch */
    float *scratch;              /* 2 * room floats: the ratios, then the p */
    Py_ssize_t room;             /* kl_room(n) */
} KlSweep;

/* the sum of the terms of elements start .. start+n-1, split as pairwise_f32 splits; -1 with
 * the error set when numpy's log raised */
static int kl_terms_sum(const KlSweep *k, Py_ssize_t start, Py_ssize_t n, float *out)
{
    if (n > KL_SEGMENT) {
        Py_ssize_t half = pairwise_split(n);
        float left, right;
        if (kl_terms_sum(k, start, half, &left) < 0) return -1;
        if (kl_terms_sum(k, start + half, n - half, &right) < 0) return -1;
        *out = left + right;
        return 0;
    }
    float *ratio = k->scratch, *p = k->scratch + k->room;
    kl_fill(k->d, start, n, p, ratio);
    PyObject *view = PySequence_GetSlice(k->scratch_obj, 0, n);
    if (view == NULL) return -1;
    PyObject *logged = PyObject_CallFunctionObjArgs(k->log, view, view, NULL);
    Py_DECREF(view);
    if (logged == NULL) return -1;
    Py_DECREF(logged);
    Terms t = {p, ratio};
    pairwise_f32(&t, kl_terms_leaf, 1, 0, n, out);
    return 0;
}

/* ------------------------------------------------------------------ float64 mean and std */

typedef struct {
    const float *v;
    double mean;
} Spread;

/*
 * The two float64 leaves make LEAF_SUM's additions in LEAF_SUM's order without storing their
 * values first: stored and read back, they took as long as the whole first pass (a third of
 * the kernel's time, issue 16). The eight partial sums are two vectors of four (lanes 0-3 and
 * 4-7): GCC spilled one vector of eight doubles to memory at every step.
 */
typedef double f64x4 __attribute__((vector_size(32)));

/* Four floats widened (vcvtps2pd where the target has it). Macros, not functions: clang
 * rejects a 256-bit vector passed to or returned from a function compiled without AVX, which the
 * AVX2 clones below would call. An initialiser, not __builtin_convertvector, which GCC has only
 * from version 9 (Ascend servers' openEuler and EulerOS ship GCC 7). */
#define WIDE4(v) ((f64x4){(double)(v)[0], (double)(v)[1], (double)(v)[2], (double)(v)[3]})
#define TREE8(lo, hi)                                                                        \
    ((((lo)[0] + (lo)[1]) + ((lo)[2] + (lo)[3])) + (((hi)[0] + (hi)[1]) + ((hi)[2] + (hi)[3])))

VECTOR_CLONES
static void wide_leaf(void *job, Py_ssize_t start, Py_ssize_t n, double *out)
{
    const float *v = ((Spread *)job)->v + start;
    double res = -0.0;
    Py_ssize_t i = 0;
    if (n >= 8) {
        f64x4 lo = WIDE4(v), hi = WIDE4(v + 4);
        for (i = 8; i < n - (n % 8); i += 8) {
            lo += WIDE4(v + i);
            hi += WIDE4(v + i + 4);
        }
        res = TREE8(lo, hi);
    }
    for (; i < n; i++) res += (double)v[i];
    *out = res;
}

VECTOR_CLONES
static void square_deviation_leaf(void *job, Py_ssize_t start, Py_ssize_t n, double *out)
{
    Spread *s = job;
    const float *v = s->v + start;
    const double mean = s->mean;
    double res = -0.0;
    Py_ssize_t i = 0;
    if (n >= 8) {
        f64x4 d_lo = WIDE4(v) - mean, d_hi = WIDE4(v + 4) - mean;
        f64x4 lo = d_lo * d_lo, hi = d_hi * d_hi;
        for (i = 8; i < n - (n % 8); i += 8) {
            d_lo = WIDE4(v + i) - mean;
            d_hi = WIDE4(v + i + 4) - mean;
            lo += d_lo * d_lo;
            hi += d_hi * d_hi;
        }
        res = TREE8(lo, hi);
    }
    for (; i < n; i++) {
        double deviation = (double)v[i] - mean;
        res += deviation * deviation;
    }
    *out = res;
}

/* ------------------------------------------------------------------ cells_of's sweeps */

/*
 * Pass 1 with the float64 sums of x and y (their means) carried along. numpy makes those chunk
 * by chunk of its cast buffer, each chunk pairwise and the chunks in turn: a tree other than
 * pass 1's. Pass 1 visits its leaves in order, so a chunk is summed as soon as pass 1 has gone
 * past its end, while its values are still in the cache, instead of in two more sweeps.
 */
typedef struct {
    Pass1 *pass1;
    Spread x, y;
    Py_ssize_t n, chunk, done; /* done: elements of the chunks summed */
    double x_total, y_total;
} Pass1Wide;

static void wide_catch_up(Pass1Wide *w, Py_ssize_t reached)
{
    while (w->done < w->n) {
        Py_ssize_t size = w->n - w->done < w->chunk ? w->n - w->done : w->chunk;
        if (w->done + size > reached) return;
        double part;
        pairwise_f64(&w->x, wide_leaf, w->done, size, &part);
        w->x_total += part;
        pairwise_f64(&w->y, wide_leaf, w->done, size, &part);
        w->y_total += part;
        w->done += size;
    }
}

/* pairwise_f32 with pass1_leaf, the wide chunks summed on the way */
static void pass1_node(Pass1Wide *w, Py_ssize_t start, Py_ssize_t n, float *out)
{
    if (n <= BLOCK) {
        pass1_leaf(w->pass1, start, n, out);
        wide_catch_up(w, start + n);
        return;
    }
    Py_ssize_t half = pairwise_split(n);
    float left[5], right[5];
    pass1_node(w, start, half, left);
    pass1_node(w, start + half, n - half, right);
    for (int k = 0; k < 5; k++) out[k] = left[k] + right[k];
}

/*
 * Pass 2 with the float64 squared deviations of x and y from their means: numpy sums those
 * pairwise over the whole vector, the tree of the float32 sums, so each leaf adds all of them.
 */
typedef struct {
    Pass2 *pass2;
    int k_count; /* float32 sums of pass2_leaf: 2, or 3 with the cosine */
    Spread x, y;
} Pass2Spread;

static void pass2_node(Pass2Spread *s, Py_ssize_t start, Py_ssize_t n, float *out,
                       double *squares)
{
    if (n <= BLOCK) {
        pass2_leaf(s->pass2, start, n, out);
        square_deviation_leaf(&s->x, start, n, &squares[0]);
        square_deviation_leaf(&s->y, start, n, &squares[1]);
        return;
    }
    Py_ssize_t half = pairwise_split(n);
    float left[3], right[3];
    double left_squares[2], right_squares[2];
    pass2_node(s, start, half, left, left_squares);
    pass2_node(s, start + half, n - half, right, right_squares);
    for (int k = 0; k < s->k_count; k++) out[k] = left[k] + right[k];
    for (int k = 0; k < 2; k++) squares[k] = left_squares[k] + right_squares[k];
}

/* ------------------------------------------------------------------ Python glue */

/* A C-contiguous float32 buffer (numpy array) of `n` elements (any length when n < 0). */
static int get_vector(PyObject *obj, Vector *vec, Py_ssize_t n, int writable)
{
    if (get_typed(obj, vec, 4, 'f', writable, "expected a C-contiguous float32 vector") < 0)
        return -1;
    if (n >= 0 && vec->view.len / 4 != n) {
        PyErr_SetString(PyExc_ValueError, "the vectors differ in length");
        return -1;
    }
    return 0;
}

/* x and y, two non-empty float32 vectors of one length, into vec[0], vec[1]: that length, or
 * -1 with the error set (release vec either way) */
static Py_ssize_t get_pair(PyObject *x, PyObject *y, Vector *vec)
{
    if (get_vector(x, &vec[0], -1, 0) < 0) return -1;
    Py_ssize_t n = vec[0].view.len / 4;
    if (n == 0) {
        PyErr_SetString(PyExc_ValueError, "empty vectors");
        return -1;
    }
    if (get_vector(y, &vec[1], n, 0) < 0) return -1;
    return n;
}

/* the writable float32 scratch of metrics() and metrics_raw() for vectors of n elements: at
 * least 2 * min(n, KL_SEGMENT) floats (-1 with the error set when not) */
static int get_scratch(PyObject *obj, Vector *vec, Py_ssize_t n)
{
    if (get_vector(obj, vec, -1, 1) < 0) return -1;
    if (vec->view.len / 4 < 2 * kl_room(n)) {
        PyErr_SetString(PyExc_ValueError, "the scratch holds fewer than 2 * min(n, KL_SEGMENT) floats");
        return -1;
    }
    return 0;
}

/* numpy's ufunc buffer size argument: positive, or -1 with the error set */
static Py_ssize_t get_chunk(PyObject *obj)
{
    Py_ssize_t chunk = PyLong_AsSsize_t(obj);
    if (chunk == -1 && PyErr_Occurred()) return -1;
    if (chunk < 1) {
        PyErr_SetString(PyExc_ValueError, "buffer_size must be positive");
        return -1;
    }
    return chunk;
}

PyDoc_STRVAR(pass1_doc,
             "pass1(x, y) -> (sum|x-y|, sum(x-y)^2, sum y^2, sum x^2, sum relative, max|x-y|, "
             "max relative, max x, min x, max y, min y), float32 values as floats.");

static PyObject *pass1(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    Vector vec[2] = {{.held = 0}, {.held = 0}};
    PyObject *result = NULL;
    if (check_count(nargs, 2, "pass1") < 0) return NULL;
    Py_ssize_t n = get_pair(args[0], args[1], vec);
    if (n < 0) goto done;
    Pass1 p = {vec[0].view.buf, vec[1].view.buf};
    extremes_start(&p.abs_error);
    extremes_start(&p.relative);
    extremes_start(&p.x_range);
    extremes_start(&p.y_range);
    float sums[5];
    Py_BEGIN_ALLOW_THREADS
    pairwise_f32(&p, pass1_leaf, 5, 0, n, sums);
    Py_END_ALLOW_THREADS
    result = Py_BuildValue(
        "(ddddddddddd)", (double)(0.0f + sums[0]), (double)(0.0f + sums[1]),
        (double)(0.0f + sums[2]), (double)(0.0f + sums[3]), (double)(0.0f + sums[4]),
        (double)extremes_high(&p.abs_error), (double)extremes_high(&p.relative),
        (double)extremes_high(&p.x_range), (double)extremes_low(&p.x_range),
        (double)extremes_high(&p.y_range), (double)extremes_low(&p.y_range));
done:
    release(vec, 2);
    return result;
}

/* mean_std()'s two numbers for v (NaN for n == 0, as the numpy path) */
static void spread(const float *v, Py_ssize_t n, Py_ssize_t chunk, double *mean, double *std)
{
    Spread s = {v, 0.0};
    double total = 0.0, part, squares;
    for (Py_ssize_t start = 0; start < n; start += chunk) {
        pairwise_f64(&s, wide_leaf, start, n - start < chunk ? n - start : chunk, &part);
        total += part;
    }
    s.mean = total / (double)n;
    pairwise_f64(&s, square_deviation_leaf, 0, n, &squares);
    squares = 0.0 + squares;
    *mean = s.mean;
    *std = sqrt(squares / (double)n);
}

PyDoc_STRVAR(mean_std_doc,
             "mean_std(v, buffer_size) -> (mean, std) accumulated in float64, as "
             "np.mean(v, dtype=float64) and np.std(v, dtype=float64) compute them.");

static PyObject *mean_std(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    Vector vec[1] = {{.held = 0}};
    PyObject *result = NULL;
    if (check_count(nargs, 2, "mean_std") < 0) return NULL;
    Py_ssize_t chunk = get_chunk(args[1]);
    if (chunk < 0) return NULL;
    if (get_vector(args[0], &vec[0], -1, 0) < 0) goto done;
    Py_ssize_t n = vec[0].view.len / 4;
    double mean, std;
    Py_BEGIN_ALLOW_THREADS
    spread(vec[0].view.buf, n, chunk, &mean, &std);
    Py_END_ALLOW_THREADS
    result = Py_BuildValue("(dd)", mean, std);
done:
    release(vec, 1);
    return result;
}

/* ------------------------------------------------------------------ float16 to float32 */

/*
 * numpy's float16 -> float32 cast (npy_halfbits_to_floatbits) gives every value exactly, NaN
 * payloads kept as they are (not quieted). Here branch-free so that it vectorises: the low 15
 * bits moved into float32 position and scaled by 2^112 give every finite value, zeros and
 * subnormals included (a power-of-two scaling is exact); infinities and NaNs get the all-ones
 * exponent with the mantissa copied; the sign is put back last.
 */
VECTOR_CLONES
static void widen_half_loop(const uint16_t *half, float *out, Py_ssize_t n)
{
    for (Py_ssize_t i = 0; i < n; i++) {
        uint32_t h = half[i], magnitude = (h & 0x7fffu) << 13, bits;
        float scaled;
        memcpy(&scaled, &magnitude, sizeof scaled);
        scaled *= 0x1p112f;
        memcpy(&bits, &scaled, sizeof bits);
        if ((h & 0x7c00u) == 0x7c00u) bits = 0x7f800000u | ((h & 0x03ffu) << 13);
        bits |= (h & 0x8000u) << 16;
        memcpy(&out[i], &bits, sizeof bits);
    }
}

PyDoc_STRVAR(widen_half_doc,
             "widen_half(half, out): out[:] = half as float32, as numpy casts it (half: a "
             "C-contiguous float16 vector, out: a float32 vector of the same length).");

static PyObject *widen_half(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    Py_buffer half;
    Vector vec[1] = {{.held = 0}};
    PyObject *result = NULL;
    if (check_count(nargs, 2, "widen_half") < 0) return NULL;
    if (PyObject_GetBuffer(args[0], &half, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) return NULL;
    const char *format = half.format;
    if (format[0] == '<' || format[0] == '=' || format[0] == '@') format++;
    if (half.itemsize != 2 || format[0] != 'e' || format[1] != '\0') {
        PyErr_SetString(PyExc_TypeError, "expected a C-contiguous float16 vector");
        goto done;
    }
    if (get_vector(args[1], &vec[0], half.len / 2, 1) < 0) goto done;
    widen_half_loop(half.buf, vec[0].view.buf, half.len / 2);
    result = Py_NewRef(Py_None);
done:
    release(vec, 1);
    PyBuffer_Release(&half);
    return result;
}

/* ------------------------------------------------------------------ every cell in one call */

/*
 * metrics() is metrics._kernel_metrics' arithmetic after the sums: the float32 means, square
 * roots and powers numpy's scalars compute (a float32 ** 0.5 is powf, not sqrtf), the early exits
 * of the cosine, the KL floor and the six-decimal cells, formatted by the function Python's
 * '{:.6f}' uses. One call per tensor pair instead of some sixty Python operations.
 */

enum { COS_NONE, COS_SCALAR, COS_ZERO_LEFT, COS_ZERO_RIGHT };

static PyObject *cell(double value, int decimals)
{
    char *text = PyOS_double_to_string(value, 'f', decimals, 0, NULL);
    if (text == NULL) return NULL;
    PyObject *out = PyUnicode_FromString(text);
    PyMem_Free(text);
    return out;
}

/* numpy's float32 square root of a float32 value held in a double (NaN below zero) */
static double sqrt32(double value) { return value >= 0 ? (double)(float)sqrt(value) : NAN; }

static double std_floor(double value) { return fabs(value) < 0.001 ? 0.0 : value; }


/* metrics()' work on two float32 vectors of n elements; scratch (2 * min(n, KL_SEGMENT) floats)
 * is the buffer of scratch_obj, the array numpy's log is called on (a slice of it) */
static PyObject *cells_of(const float *x, const float *y, Py_ssize_t n, PyObject *scratch_obj,
                          float *scratch, int scalar, Py_ssize_t chunk, PyObject *log)
{
    PyObject *result = NULL, *values = NULL, *cells = NULL;
    Pass1 p = {x, y};
    extremes_start(&p.abs_error);
    extremes_start(&p.relative);
    extremes_start(&p.x_range);
    extremes_start(&p.y_range);
    Pass1Wide first = {&p, {x, 0.0}, {y, 0.0}, n, chunk, 0, 0.0, 0.0};
    float sums[5];
    pass1_node(&first, 0, n, sums);
    wide_catch_up(&first, n);
    double left_mean = first.x_total / (double)n, right_mean = first.y_total / (double)n;
    double abs_sum = 0.0f + sums[0], square_sum = 0.0f + sums[1], y_square = 0.0f + sums[2];
    double x_square = 0.0f + sums[3], relative_sum = 0.0f + sums[4];
    float x_high = extremes_high(&p.x_range), x_low = extremes_low(&p.x_range);
    float y_high = extremes_high(&p.y_range), y_low = extremes_low(&p.y_range);

    /* the cosine's early exits (metrics._cosine_from_norms), decided on pass 1's sums */
    double cosine = NAN;
    int cosine_note = COS_NONE, cosine_computed = 1, cosine_summed = 0;
    const char *cosine_text = NULL;
    double x_norm = sqrt32(x_square), y_norm = sqrt32(y_square);
    if (scalar) {
        cosine = 1.0;
        cosine_note = COS_SCALAR;
    }
    else if (x_norm <= DBL_EPSILON && y_norm < DBL_EPSILON) {
        cosine = 1.0;
        cosine_text = "1.0";
    }
    else if (sqrt32(x_norm) <= DBL_EPSILON) {
        cosine_computed = 0;
        cosine_note = COS_ZERO_LEFT;
    }
    else if (sqrt32(y_norm) <= DBL_EPSILON) {
        cosine_computed = 0;
        cosine_note = COS_ZERO_RIGHT;
    }
    else cosine_summed = 1;

    /* KL's masses and the cosine's sum in one sweep, then KL's terms a segment at a time */
    Divergence d = {x, y};
    Cosine c = {x, y, (float)x_norm, (float)y_norm};
    Pass2 two = {&d, cosine_summed ? &c : NULL};
    float second[3], kl_sum;
    d.x_low = x_low;
    d.x_span = x_high - x_low;
    d.y_low = y_low;
    d.y_span = y_high - y_low;
    Pass2Spread second_sweep = {&two, cosine_summed ? 3 : 2, {x, left_mean}, {y, right_mean}};
    double squares[2];
    pass2_node(&second_sweep, 0, n, second, squares);
    double left_std = sqrt((0.0 + squares[0]) / (double)n);
    double right_std = sqrt((0.0 + squares[1]) / (double)n);
    d.p_total = 0.0f + second[0];
    d.q_total = 0.0f + second[1];
    if (cosine_summed) {
        cosine = 0.0f + second[2];
        if (1.0 < cosine) cosine = 1.0; /* Python's min(total, 1.0): NaN stays NaN */
    }
    KlSweep sweep = {&d, log, scratch_obj, scratch, kl_room(n)};
    if (kl_terms_sum(&sweep, 0, n, &kl_sum) < 0) goto done;
    double kl = 0.0f + kl_sum;
    if (fabs(kl) < DBL_EPSILON) kl = 0.0;

    /* RelativeEuclideanDistance: float32 ratio, float32 ** 0.5 (powf) */
    float y_sq = (float)y_square;
    double red = 0.0;
    if (!((double)powf(y_sq, 0.5f) <= DBL_EPSILON)) red = powf((float)square_sum / y_sq, 0.5f);


    double numbers[10] = {
        cosine,
        (double)extremes_high(&p.abs_error),
        relative_sum,
        red,
        kl,
        NAN, /* StandardDeviation has no single number */
        (double)(float)(abs_sum / (double)n),
        (double)sqrtf((float)(square_sum / (double)n)),
        (double)extremes_high(&p.relative),
        (double)(float)(relative_sum / (double)n),
    };
    values = PyTuple_New(10);
    cells = PyTuple_New(10);
    if (values == NULL || cells == NULL) goto done;
    for (int k = 0; k < 10; k++) {
        PyObject *value, *text;
        if ((k == 0 && !cosine_computed) || k == 5) {
            value = Py_NewRef(Py_None);
            if (k == 0) text = PyUnicode_FromString("NaN");
            else {
                double four[4] = {left_mean, left_std, right_mean, right_std};
                PyObject *parts[4] = {NULL, NULL, NULL, NULL};
                text = NULL;
                int j = 0;
                while (j < 4 && (parts[j] = cell(std_floor(four[j]), 3)) != NULL) j++;
                if (j == 4)
                    text = PyUnicode_FromFormat("(%U;%U),(%U;%U)", parts[0], parts[1], parts[2],
                                                parts[3]);
                for (j = 0; j < 4; j++) Py_XDECREF(parts[j]);
            }
        }
        else {
            value = PyFloat_FromDouble(numbers[k]);
            text = (k == 0 && cosine_text) ? PyUnicode_FromString(cosine_text)
                                           : cell(numbers[k], 6);
        }
        if (value == NULL || text == NULL) {
            Py_XDECREF(value);
            Py_XDECREF(text);
            goto done;
        }
        PyTuple_SET_ITEM(values, k, value);
        PyTuple_SET_ITEM(cells, k, text);
    }
    result = Py_BuildValue("(OOiN((dd)(dd)))", values, cells, cosine_note,
                           PyBool_FromLong(kl == INFINITY), left_mean, left_std, right_mean,
                           right_std);
done:
    Py_XDECREF(values);
    Py_XDECREF(cells);
    return result;
}

PyDoc_STRVAR(metrics_doc,
             "metrics(x, y, scratch, scalar, buffer_size, log) -> (values, cells, cosine_note, "
             "kl_inf, std): the ten metrics in msaccucmp's index order (None where not "
             "computed), their CSV cells, why the cosine exited early (0 none, 1 scalar, 2 left "
             "all zero, 3 right all zero), whether KL is +inf, and ((mean, std) of x, of y). "
             "scratch: a float32 vector of at least 2 * min(len(x), KL_SEGMENT) elements; log: "
             "numpy.log, called as log(part, part) on slices of scratch.");

static PyObject *metrics(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    Vector vec[3] = {{.held = 0}, {.held = 0}, {.held = 0}};
    PyObject *result = NULL;
    if (check_count(nargs, 6, "metrics") < 0) return NULL;
    int scalar = PyObject_IsTrue(args[3]);
    if (scalar < 0) return NULL;
    Py_ssize_t chunk = get_chunk(args[4]);
    if (chunk < 0) return NULL;
    Py_ssize_t n = get_pair(args[0], args[1], vec);
    if (n < 0) goto done;
    if (get_scratch(args[2], &vec[2], n) < 0) goto done;
    result = cells_of(vec[0].view.buf, vec[1].view.buf, n, args[2], vec[2].view.buf, scalar,
                      chunk, args[5]);
done:
    release(vec, 3);
    return result;
}

/* ------------------------------------------------------------------ straight from the file */

/*
 * metrics_raw() is metrics() on two tensors as their dump files store them, for the common case
 * the workers hand it (plain ND tensors of the same element count, or a device layout on the
 * left): decoding, the layout, the sums and the cells in one call instead of a dozen numpy and
 * Python steps per tensor pair. A tensor is given as bytes in memory or as an open file.
 */
#include "_stored.h"

#define KEEP_DECODED (16 * 1024 * 1024) /* elements; a bigger buffer is freed after its call */
static float *decoded = NULL;
static Py_ssize_t decoded_size = 0;
static int decoded_lent = 0; /* the kept buffer is in use by a call (the GIL is let go in it) */

/* room for `floats` floats: the kept buffer, or one of this call's own (*own = 1) when another
 * thread's call holds the kept one; NULL with MemoryError */
static float *borrow_decoded(Py_ssize_t floats, int *own)
{
    *own = decoded_lent;
    if (*own) {
        float *mine = PyMem_RawMalloc((size_t)floats * sizeof(float));
        if (mine == NULL) PyErr_NoMemory();
        return mine;
    }
    if (floats > decoded_size) {
        PyMem_RawFree(decoded);
        decoded = PyMem_RawMalloc((size_t)floats * sizeof(float));
        decoded_size = decoded == NULL ? 0 : floats;
        if (decoded == NULL) {
            PyErr_NoMemory();
            return NULL;
        }
    }
    decoded_lent = 1;
    return decoded;
}

static void return_decoded(float *buffer, int own)
{
    if (own) {
        PyMem_RawFree(buffer);
        return;
    }
    decoded_lent = 0;
    if (decoded_size > 3 * (Py_ssize_t)KEEP_DECODED) {
        PyMem_RawFree(decoded);
        decoded = NULL;
        decoded_size = 0;
    }
}

/* the kind code of a numpy dtype character ('f', 'e', 'b' or 'B'), 0 for anything else */
static int kind_of(PyObject *obj)
{
    if (!PyUnicode_Check(obj) || PyUnicode_GET_LENGTH(obj) != 1) return 0;
    Py_UCS4 c = PyUnicode_READ_CHAR(obj, 0);
    return item_size((int)c) ? (int)c : 0;
}

PyDoc_STRVAR(metrics_raw_doc,
             "metrics_raw(left, left_offset, left_char, right, right_offset, right_char, n, "
             "scratch, scalar, buffer_size, log) -> metrics()' result for the n elements at "
             "each offset of two stored tensors; left and right: a bytes-like object, or an "
             "int, a file descriptor read with pread() a piece at a time (OSError when it "
             "fails, ValueError when the file ends before the tensor); *_char: the stored "
             "numpy dtype's character, 'f' (float32), 'e' (float16), 'b' (int8) or 'B' (uint8), "
             "little-endian. ValueError when a tensor lies outside its bytes or the kind is not "
             "one of these. "
             "With a 12th argument (N, C1, H, W, C0, C) the left tensor is NC1HWC0 data of "
             "N*C1*H*W*C0 elements, measured as its NCHW transpose (N, C1*C0, H, W) cut to C "
             "channels (align's NC1HWC0 to NCHW conversion and slice); n must be N*C*H*W. "
             "With (B, C1, N1, N0, C0, R, C) it is FRACTAL_NZ data of B*C1*N1*N0*C0 elements, "
             "measured as ND (B, N1*N0, C1*C0) cut to (B, R, C) (align's _nz_to_nd); n must be "
             "B*R*C.");

/*
 * metrics_raw's 12th argument into a Layout: six numbers (N, C1, H, W, C0, C) or seven (B, C1,
 * N1, N0, C0, R, C). All positive, the kept sizes within the padded ones; *device: the element
 * count stored; *measured: the count compared. -1 with ValueError when not that.
 */
static int read_blocks(PyObject *obj, Layout *layout, Py_ssize_t *device, Py_ssize_t *measured)
{
    if (!PyTuple_Check(obj) || (PyTuple_GET_SIZE(obj) != 6 && PyTuple_GET_SIZE(obj) != 7))
        goto bad;
    int count_dims = (int)PyTuple_GET_SIZE(obj);
    Py_ssize_t *d = layout->d;
    layout->nz = count_dims == 7;
    Py_ssize_t count = 1;
    for (int i = 0; i < count_dims; i++) {
        d[i] = PyLong_AsSsize_t(PyTuple_GET_ITEM(obj, i));
        if (d[i] == -1 && PyErr_Occurred()) return -1;
        if (d[i] < 1 || d[i] > PY_SSIZE_T_MAX / 64) goto bad;
        if (i < 5) {
            if (count > (PY_SSIZE_T_MAX / 16) / d[i]) goto bad;
            count *= d[i];
        }
    }
    if (layout->nz) { /* B, C1, N1, N0, C0, R, C: R <= N1*N0, C <= C1*C0 */
        if (d[5] > d[2] * d[3] || d[6] > d[1] * d[4]) goto bad;
        *measured = d[0] * d[5] * d[6];
    }
    else { /* N, C1, H, W, C0, C: C <= C1*C0 */
        if (d[5] > d[1] * d[4]) goto bad;
        *measured = d[0] * d[5] * d[2] * d[3];
    }
    *device = count;
    return 0;
bad:
    PyErr_SetString(PyExc_ValueError, "metrics_raw: blocks must be (N, C1, H, W, C0, C) or "
                                      "(B, C1, N1, N0, C0, R, C), positive, within the padding");
    return -1;
}

/* the error of a stored tensor that could not be loaded: OSError from `saved_errno`, or
 * ValueError when it is 0 (the file ended before the tensor); NULL */
static PyObject *load_error(int saved_errno, const char *name)
{
    if (saved_errno) {
        errno = saved_errno;
        return PyErr_SetFromErrno(PyExc_OSError);
    }
    PyErr_Format(PyExc_ValueError, "%s: the file ends before the tensor", name);
    return NULL;
}

/* metrics_raw's tensor argument `obj` (bytes-like, or a file descriptor) into *s, its buffer
 * (if any) held in *view; -1 with the error set (ValueError when the bytes are too few) */
static int get_stored(PyObject *obj, Py_buffer *view, Stored *s)
{
    if (PyLong_Check(obj)) {
        long fd = PyLong_AsLong(obj);
        if (fd == -1 && PyErr_Occurred()) return -1;
        if (fd < 0 || fd > INT32_MAX) {
            PyErr_SetString(PyExc_ValueError, "metrics_raw: not a file descriptor");
            return -1;
        }
        s->memory = NULL;
        s->fd = (int)fd;
        return 0;
    }
    if (PyObject_GetBuffer(obj, view, PyBUF_SIMPLE) < 0) return -1;
    s->memory = view->buf;
    s->fd = -1;
    if (s->offset > view->len || s->count * item_size(s->kind) > view->len - s->offset) {
        PyErr_SetString(PyExc_ValueError, "metrics_raw: a tensor lies beyond its bytes");
        return -1;
    }
    return 0;
}

static PyObject *metrics_raw(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    Py_buffer left_view = {0}, right_view = {0};
    Vector vec[1] = {{.held = 0}};
    PyObject *result = NULL;
    float *buffer = NULL;
    int own = 0;
    if (nargs != 12 && check_count(nargs, 11, "metrics_raw") < 0) return NULL;
    Layout layout = {0};
    Py_ssize_t device = 0, measured = 0;
    if (nargs == 12 && read_blocks(args[11], &layout, &device, &measured) < 0) return NULL;
    Py_ssize_t left_offset = PyLong_AsSsize_t(args[1]);
    Py_ssize_t right_offset = PyLong_AsSsize_t(args[4]);
    Py_ssize_t n = PyLong_AsSsize_t(args[6]);
    int scalar = PyObject_IsTrue(args[8]);
    Py_ssize_t chunk = PyLong_AsSsize_t(args[9]);
    if (PyErr_Occurred() || scalar < 0) return NULL;
    int left_kind = kind_of(args[2]), right_kind = kind_of(args[5]);
    if (!left_kind || !right_kind || n < 1 || chunk < 1 || left_offset < 0 || right_offset < 0 ||
        (nargs == 12 && n != measured)) {
        PyErr_SetString(PyExc_ValueError, "metrics_raw: unsupported kind or bad numbers");
        return NULL;
    }
    Py_ssize_t left_n = nargs == 12 ? device : n; /* elements stored on the left */
    if (n > (PY_SSIZE_T_MAX / 4) / 4 || left_n > (PY_SSIZE_T_MAX / 4) / 4) {
        PyErr_SetString(PyExc_ValueError, "metrics_raw: a tensor lies beyond its bytes");
        return NULL;
    }
    Stored left = {NULL, -1, left_offset, left_n, left_kind};
    Stored right = {NULL, -1, right_offset, n, right_kind};
    if (get_stored(args[0], &left_view, &left) < 0) goto done;
    if (get_stored(args[3], &right_view, &right) < 0) goto done;
    if (get_scratch(args[7], &vec[0], n) < 0) goto done;
    /* x (n), y (n), then a piece of the stored values decoded and its raw bytes */
    Py_ssize_t room = piece_room(nargs == 12 ? layout.d[4] : 1);
    buffer = borrow_decoded(2 * n + 2 * room, &own);
    if (buffer == NULL) goto done;
    const float *x, *y = NULL;
    int failed_errno = 0;
    float *piece = buffer + 2 * n;
    char *raw = (char *)(piece + room);
    /* the GIL is let go for reading files only: decoding bytes in memory takes microseconds,
     * and taking the GIL back can wait for another thread's switch interval */
    int reading = left.memory == NULL || right.memory == NULL;
    PyThreadState *state = reading ? PyEval_SaveThread() : NULL;
    x = load_stored(&left, nargs == 12 ? &layout : NULL, buffer, piece, raw);
    if (x != NULL) y = load_stored(&right, NULL, buffer + n, piece, raw);
    if (x == NULL || y == NULL) failed_errno = errno;
    if (state != NULL) PyEval_RestoreThread(state);
    if (x == NULL || y == NULL) {
        load_error(failed_errno, "metrics_raw");
        goto done;
    }
    result = cells_of(x, y, n, args[7], vec[0].view.buf, scalar, chunk, args[10]);
done:
    if (buffer != NULL) return_decoded(buffer, own);
    release(vec, 1);
    if (left_view.obj != NULL) PyBuffer_Release(&left_view);
    if (right_view.obj != NULL) PyBuffer_Release(&right_view);
    return result;
}

PyDoc_STRVAR(decode_doc,
             "decode(source, offset, char, out): the len(out) values stored at offset of source "
             "(bytes-like, or a file descriptor read with pread() a piece at a time without the "
             "GIL), numpy dtype character 'f', 'e', 'b' or 'B' (little-endian), into the "
             "C-contiguous float64 vector out, each exactly (as numpy casts it). ValueError "
             "when they lie beyond the bytes or the file ends first, OSError when it cannot be "
             "read.");

static PyObject *decode(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    Py_buffer view = {0};
    Vector vec[1] = {{.held = 0}};
    PyObject *result = NULL;
    float *buffer = NULL;
    int own = 0;
    if (check_count(nargs, 4, "decode") < 0) return NULL;
    Py_ssize_t offset = PyLong_AsSsize_t(args[1]);
    if (offset == -1 && PyErr_Occurred()) return NULL;
    int kind = kind_of(args[2]);
    if (!kind || offset < 0) {
        PyErr_SetString(PyExc_ValueError, "decode: unsupported kind or bad offset");
        return NULL;
    }
    if (get_typed(args[3], &vec[0], 8, 'd', 1, "expected a C-contiguous float64 vector") < 0)
        goto done;
    Stored stored = {NULL, -1, offset, vec[0].view.len / 8, kind};
    if (get_stored(args[0], &view, &stored) < 0) goto done;
    buffer = borrow_decoded(2 * PIECE, &own);
    if (buffer == NULL) goto done;
    int failed = 0, failed_errno = 0;
    PyThreadState *state = stored.memory == NULL ? PyEval_SaveThread() : NULL;
    if (load_wide(&stored, vec[0].view.buf, buffer, (char *)(buffer + PIECE)) < 0) {
        failed = 1;
        failed_errno = errno;
    }
    if (state != NULL) PyEval_RestoreThread(state);
    if (failed) {
        load_error(failed_errno, "decode");
        goto done;
    }
    result = Py_NewRef(Py_None);
done:
    if (buffer != NULL) return_decoded(buffer, own);
    release(vec, 1);
    if (view.obj != NULL) PyBuffer_Release(&view);
    return result;
}

PyDoc_STRVAR(release_doc,
             "release(): free the buffer metrics_raw keeps for decoding (two float32 vectors as "
             "long as the largest tensor pair it read, 51 MB at 6.4M elements) once a process "
             "has compared its tensors; the next call makes a new one.");

static PyObject *release_buffer(PyObject *self, PyObject *unused)
{
    if (!decoded_lent) {
        PyMem_RawFree(decoded);
        decoded = NULL;
        decoded_size = 0;
    }
    Py_RETURN_NONE;
}

PyDoc_STRVAR(held_doc, "held() -> bytes of the decoding buffer metrics_raw keeps now.");

static PyObject *held(PyObject *self, PyObject *unused)
{
    return PyLong_FromSsize_t(decoded_size * (Py_ssize_t)sizeof(float));
}

static PyMethodDef methods[] = {
    {"decode", (PyCFunction)(void (*)(void))decode, METH_FASTCALL, decode_doc},
    {"release", release_buffer, METH_NOARGS, release_doc},
    {"held", held, METH_NOARGS, held_doc},
    {"pass1", (PyCFunction)(void (*)(void))pass1, METH_FASTCALL, pass1_doc},
    {"mean_std", (PyCFunction)(void (*)(void))mean_std, METH_FASTCALL, mean_std_doc},
    {"metrics", (PyCFunction)(void (*)(void))metrics, METH_FASTCALL, metrics_doc},
    {"metrics_raw", (PyCFunction)(void (*)(void))metrics_raw, METH_FASTCALL, metrics_raw_doc},
    {"widen_half", (PyCFunction)(void (*)(void))widen_half, METH_FASTCALL, widen_half_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_kernel",
    "numpy-exact sums behind msaccucmp's metrics (see _kernel.c)", -1, methods,
};

PyMODINIT_FUNC PyInit__kernel(void)
{
    PyObject *m = PyModule_Create(&module);
    if (m != NULL && PyModule_AddIntConstant(m, "KL_SEGMENT", KL_SEGMENT) < 0) Py_CLEAR(m);
    return m;
}
