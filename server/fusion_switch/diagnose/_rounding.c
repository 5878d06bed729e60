/*
 * The replay's rounding to a dtype and the extremes behind its score, one pass each.
 *
 * fusion_switch.diagnose.noise does both with numpy: about ten array operations per rounding and
 * five per score, each a pass over the tensor plus a temporary, for tensors of a few thousand
 * values. These loops give the same bits, because they are the same IEEE operations:
 *
 *   - rounding to float32 is the C cast (round to nearest, ties to even), as numpy's astype;
 *   - rounding to fewer significant bits (fp16, bf16) is the integer arithmetic of
 *     noise._round_bits on the float64 bit patterns;
 *   - the score's extremes are maxima of |real - replay| and |replay|, float64 subtractions in
 *     any order (a maximum does not depend on it), over the whole tensor or channel by channel.
 *
 * Whatever these loops do not cover they decline (return False or None) and the caller takes the
 * numpy path for the whole tensor: a value out of float32's normal range, a zero/subnormal/
 * infinite/NaN float64 pattern for the bit rounding, a difference that is not finite for the
 * score. fusion_switch.diagnose.noise holds them to its numpy path on awkward values before it
 * uses them (and FUSION_SWITCH_REPLAY_MATH=numpy switches them off).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "../_buffers.h"

/* An AVX2 copy of the loops, chosen at load time where the CPU has it (x86-64 Linux, GCC). */
#if defined(__x86_64__) && defined(__GNUC__) && defined(__linux__) && !defined(ROUNDING_NO_CLONES)
#define VECTOR_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define VECTOR_CLONES
#endif

#define EXPONENT 0x7FF0000000000000ULL
#define MAGNITUDE 0x7FFFFFFFFFFFFFFFULL

/* A C-contiguous float64 buffer (numpy array of any shape). */
static int get_doubles(PyObject *obj, Vector *vec, int writable)
{
    return get_typed(obj, vec, 8, 'd', writable, "expected a C-contiguous float64 array");
}

/* Two arrays of doubles, `values` read and `out` written, of the same size. */
static int get_pair(PyObject *const *args, Vector *vec, int out_writable)
{
    if (get_doubles(args[0], &vec[0], 0) < 0 || get_doubles(args[1], &vec[1], out_writable) < 0)
        return -1;
    if (vec[0].view.len != vec[1].view.len) {
        PyErr_SetString(PyExc_ValueError, "the arrays differ in size");
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------------------ float32 */

/* 1 when every value was cast as the formula rounds it; 0 when one was not: out of float32's
 * range (an infinity or NaN too) or in its subnormals. No early exit: the loop vectorises. */
VECTOR_CLONES
static int cast_float32(const double *v, double *out, Py_ssize_t n)
{
    int ok = 1;
    for (Py_ssize_t i = 0; i < n; i++) {
        float single = (float)v[i];
        float magnitude = fabsf(single);
        ok &= (magnitude <= FLT_MAX) & ((magnitude > FLT_MIN) | (v[i] == 0.0));
        out[i] = (double)single;
    }
    return ok;
}

PyDoc_STRVAR(round_float32_doc,
             "round_float32(values, out) -> bool\n\n"
             "out = values cast to float32 and back (float64 arrays of the same size); False, "
             "with out partly written, when a value is outside float32's normal range.");

static PyObject *round_float32(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    Vector vec[2] = {{0}};
    PyObject *result = NULL;
    if (check_count(nargs, 2, "round_float32") < 0 || get_pair(args, vec, 1) < 0) goto done;
    int cast = cast_float32(vec[0].view.buf, vec[1].view.buf, vec[0].view.len / 8);
    result = PyBool_FromLong(cast);
done:
    release(vec, 2);
    return result;
}

/* ------------------------------------------------------------------ fewer bits */

/* noise._round_bits on the patterns: add half an ulp of the kept bits minus one, plus one when
 * the last kept bit is odd (ties to even), then clear the dropped bits. A magnitude below the
 * dtype's smallest normal (`smallest`, as a pattern) is rounded to the dtype's subnormal grid
 * instead: (|x| + magic) - magic, with magic 1.5 * 2^52 quanta, is |x| rounded to a multiple of
 * the quantum, ties to even; the sign is put back (a tiny negative value rounds to -0, as a
 * cast does). 0 when a pattern has a zero or all-ones exponent and is not a zero (subnormal,
 * infinity, NaN). */
VECTOR_CLONES
static int round_patterns(const uint64_t *p, uint64_t *out, Py_ssize_t n, int bits,
                          uint64_t smallest, double magic)
{
    const int drop = 53 - bits;
    const uint64_t low = (1ULL << drop) - 1;
    const uint64_t half = (1ULL << (drop - 1)) - 1;
    uint64_t special = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        uint64_t pattern = p[i];
        uint64_t exponent = pattern & EXPONENT;
        uint64_t magnitude = pattern & MAGNITUDE;
        special |= ((exponent == 0) | (exponent == EXPONENT)) & (magnitude != 0);
        uint64_t normal = (pattern + half + ((pattern >> drop) & 1)) & ~low;
        double value, grid;
        memcpy(&value, &magnitude, sizeof value);
        grid = (value + magic) - magic;
        uint64_t tiny;
        memcpy(&tiny, &grid, sizeof tiny);
        tiny |= pattern & ~MAGNITUDE;
        out[i] = magnitude < smallest ? tiny : normal;
    }
    return special == 0;
}

PyDoc_STRVAR(round_bits_doc,
             "round_bits(values, out, bits, smallest) -> bool\n\n"
             "out = values rounded to `bits` significant bits (2..52), ties to even, and a "
             "magnitude below `smallest` (the dtype's smallest normal, a power of two) to its "
             "subnormal grid; False, with out partly written, at a subnormal, infinite or NaN "
             "value.");

static PyObject *round_bits(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    Vector vec[2] = {{0}};
    PyObject *result = NULL;
    if (check_count(nargs, 4, "round_bits") < 0) goto done;
    long bits = PyLong_AsLong(args[2]);
    if (bits == -1 && PyErr_Occurred()) goto done;
    if (bits < 2 || bits > 52) {
        PyErr_SetString(PyExc_ValueError, "bits must be from 2 to 52");
        goto done;
    }
    double smallest = PyFloat_AsDouble(args[3]);
    if (smallest == -1.0 && PyErr_Occurred()) goto done;
    int exponent;
    if (!(smallest >= 0x1p-1000 && smallest <= 1.0) || frexp(smallest, &exponent) != 0.5) {
        PyErr_SetString(PyExc_ValueError, "smallest must be a power of two from 2^-1000 to 1");
        goto done;
    }
    uint64_t smallest_pattern;
    memcpy(&smallest_pattern, &smallest, sizeof smallest_pattern);
    double magic = ldexp(1.5, 52 + exponent - (int)bits); /* 1.5 * 2^52 quanta of 2 * smallest / 2^bits */
    if (get_pair(args, vec, 1) < 0) goto done;
    int rounded = round_patterns(vec[0].view.buf, vec[1].view.buf, vec[0].view.len / 8, (int)bits,
                                 smallest_pattern, magic);
    result = PyBool_FromLong(rounded);
done:
    release(vec, 2);
    return result;
}

/* ------------------------------------------------------------------ score */

/* The largest |real - replay| and |replay|; 0 when a difference is not finite.
 *
 * Compared as bit patterns: for magnitudes (sign bit clear) the order of the patterns as
 * integers is the order of the values, with infinity and NaN above every finite value, and an
 * integer maximum vectorises where a float one (NaN and signed zeros in the way) does not. */
VECTOR_CLONES
static int largest_parts(const double *real, const double *replay, Py_ssize_t n,
                         double *difference_out, double *replay_out)
{
    int64_t largest_difference = 0, largest_replay = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        double difference = fabs(real[i] - replay[i]), magnitude = fabs(replay[i]);
        int64_t d, m;
        memcpy(&d, &difference, sizeof d);
        memcpy(&m, &magnitude, sizeof m);
        largest_difference = d > largest_difference ? d : largest_difference;
        largest_replay = m > largest_replay ? m : largest_replay;
    }
    memcpy(difference_out, &largest_difference, sizeof *difference_out);
    memcpy(replay_out, &largest_replay, sizeof *replay_out);
    return *difference_out <= DBL_MAX; /* false for infinity and NaN */
}

PyDoc_STRVAR(extremes_doc,
             "extremes(real, replay) -> (max |real - replay|, max |replay|) or None\n\n"
             "Two float64 arrays of the same size, not empty; None when a difference is not "
             "finite (then some value is not, or a difference overflows).");

static PyObject *extremes(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    Vector vec[2] = {{0}};
    PyObject *result = NULL;
    if (check_count(nargs, 2, "extremes") < 0 || get_pair(args, vec, 0) < 0) goto done;
    const double *real = vec[0].view.buf, *replay = vec[1].view.buf;
    Py_ssize_t n = vec[0].view.len / 8;
    if (n == 0) {
        PyErr_SetString(PyExc_ValueError, "empty arrays");
        goto done;
    }
    double largest_difference = 0.0, largest_replay = 0.0;
    int finite = largest_parts(real, replay, n, &largest_difference, &largest_replay);
    if (!finite) {
        result = Py_None;
        Py_INCREF(result);
    }
    else {
        result = Py_BuildValue("(dd)", largest_difference, largest_replay);
    }
done:
    release(vec, 2);
    return result;
}

/* Per channel of a (outer, channels, inner) array: the largest |real - replay| and |replay|,
 * as bit patterns (see largest_parts). Each channel's maxima start at 0 in `spread`/`top`. */
VECTOR_CLONES
static void channel_parts(const double *real, const double *replay, Py_ssize_t outer,
                          Py_ssize_t channels, Py_ssize_t inner, int64_t *spread, int64_t *top)
{
    for (Py_ssize_t o = 0; o < outer; o++) {
        const double *r = real + o * channels * inner, *p = replay + o * channels * inner;
        if (inner == 1) { /* channels last: one value per channel, the loop runs across them */
            for (Py_ssize_t c = 0; c < channels; c++) {
                double difference = fabs(r[c] - p[c]), magnitude = fabs(p[c]);
                int64_t d, m;
                memcpy(&d, &difference, sizeof d);
                memcpy(&m, &magnitude, sizeof m);
                spread[c] = d > spread[c] ? d : spread[c];
                top[c] = m > top[c] ? m : top[c];
            }
            continue;
        }
        for (Py_ssize_t c = 0; c < channels; c++) { /* a run of `inner` values: the score's loop */
            double difference, magnitude;
            largest_parts(r + c * inner, p + c * inner, inner, &difference, &magnitude);
            int64_t d, m;
            memcpy(&d, &difference, sizeof d);
            memcpy(&m, &magnitude, sizeof m);
            spread[c] = d > spread[c] ? d : spread[c];
            top[c] = m > top[c] ? m : top[c];
        }
    }
}

PyDoc_STRVAR(channel_extremes_doc,
             "channel_extremes(real, replay, outer, channels, inner, spread, top) -> bool\n\n"
             "real and replay: float64 arrays of outer * channels * inner values, read as "
             "(outer, channels, inner); writes each channel's max |real - replay| into spread "
             "and max |replay| into top (float64 arrays of `channels` values). False, with "
             "spread and top unspecified, when a difference or a value is not finite.");

static PyObject *channel_extremes(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    Vector vec[4] = {{0}};
    PyObject *result = NULL;
    Py_ssize_t outer, channels, inner;
    if (check_count(nargs, 7, "channel_extremes") < 0 || get_pair(args, vec, 0) < 0) goto done;
    if ((outer = PyLong_AsSsize_t(args[2])) < 0 || (channels = PyLong_AsSsize_t(args[3])) < 0 ||
        (inner = PyLong_AsSsize_t(args[4])) < 0) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "negative extent");
        goto done;
    }
    if (get_doubles(args[5], &vec[2], 1) < 0 || get_doubles(args[6], &vec[3], 1) < 0) goto done;
    Py_ssize_t n = vec[0].view.len / 8;
    if (channels == 0 || vec[2].view.len / 8 != channels || vec[3].view.len / 8 != channels ||
        inner == 0 || outer == 0 || n / channels / inner != outer || n % (channels * inner)) {
        PyErr_SetString(PyExc_ValueError, "the extents do not match the arrays");
        goto done;
    }
    int64_t *spread = vec[2].view.buf, *top = vec[3].view.buf;
    memset(spread, 0, channels * sizeof *spread);
    memset(top, 0, channels * sizeof *top);
    channel_parts(vec[0].view.buf, vec[1].view.buf, outer, channels, inner, spread, top);
    int finite = 1;
    for (Py_ssize_t c = 0; c < channels; c++) {
        double d, m;
        memcpy(&d, &spread[c], sizeof d);
        memcpy(&m, &top[c], sizeof m);
        finite &= d <= DBL_MAX && m <= DBL_MAX;
    }
    result = PyBool_FromLong(finite);
done:
    release(vec, 4);
    return result;
}

static PyMethodDef methods[] = {
    {"round_float32", (PyCFunction)(void (*)(void))round_float32, METH_FASTCALL,
     round_float32_doc},
    {"round_bits", (PyCFunction)(void (*)(void))round_bits, METH_FASTCALL, round_bits_doc},
    {"extremes", (PyCFunction)(void (*)(void))extremes, METH_FASTCALL, extremes_doc},
    {"channel_extremes", (PyCFunction)(void (*)(void))channel_extremes, METH_FASTCALL,
     channel_extremes_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_rounding",
    "the replay's rounding and score extremes, bit for bit as noise.py (see _rounding.c)", -1,
    methods,
};

PyMODINIT_FUNC PyInit__rounding(void) { return PyModule_Create(&module); }
