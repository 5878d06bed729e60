/*
 * A tensor as a dump file stores it, turned into the float32 vector the metrics measure: in
 * memory (the bytes read with a small file's header) or still in its file, read a piece at a
 * time with pread() so that a real activation never has its stored bytes and its float32 copy
 * in memory at once. Decoding is exact (float32 as is, float16 widened as numpy casts it,
 * int8/uint8 converted); a device layout (NC1HWC0, FRACTAL_NZ) is undone row by row of C0
 * values as align.py's transposes and cuts do. Plain C, no Python object: it runs without the
 * GIL. Included by _kernel.c after widen_half_loop and VECTOR_CLONES.
 */
#ifndef FUSION_SWITCH_STORED_H
#define FUSION_SWITCH_STORED_H

#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

static int item_size(int kind)
{
    switch (kind) {
    case 'f': return 4;
    case 'e': return 2;
    case 'b':
    case 'B': return 1;
    default: return 0;
    }
}

/*
 * A device layout of the left tensor: (N, C1, H, W, C0, C) for NC1HWC0 data measured as NCHW
 * (N, C, H, W), or (B, C1, N1, N0, C0, R, C) for FRACTAL_NZ data measured as ND (B, R, C). In
 * both the stored data is rows of C0 values (d[4]).
 */
typedef struct {
    int nz; /* 0: NC1HWC0, 1: FRACTAL_NZ */
    Py_ssize_t d[7];
} Layout;

/* where the next stored row goes: NC1HWC0 (batch, block, position in the H*W plane), FRACTAL_NZ
 * (batch, column block, row block, row in the block) */
typedef struct {
    Py_ssize_t a, b, c, d;
} RowCursor;

/*
 * `count` stored rows of C0 floats, the next ones after `at`, into their places in `out`; the
 * padding (channels beyond C; rows beyond R, columns beyond C) is left out. NC1HWC0: value k
 * of the row at (batch, block, position) is channel block*C0 + k of that position (align's
 * transpose (0, 1, 4, 2, 3), then the slice). FRACTAL_NZ: the row at (batch, i1, j1, j0) is
 * row j1*N0 + j0, columns i1*C0 .. of the batch (align's _nz_to_nd).
 */
static void place_rows(const float *rows, Py_ssize_t count, const Layout *layout, RowCursor *at,
                       float *out)
{
    const Py_ssize_t *d = layout->d;
    Py_ssize_t c0 = d[4];
    if (layout->nz) {
        Py_ssize_t c1 = d[1], n1 = d[2], n0 = d[3], kept_rows = d[5], cols = d[6];
        for (Py_ssize_t r = 0; r < count; r++, rows += c0) {
            Py_ssize_t row = at->c * n0 + at->d, col = at->b * c0;
            if (row < kept_rows && col < cols) {
                Py_ssize_t kept = cols - col < c0 ? cols - col : c0;
                memcpy(out + (at->a * kept_rows + row) * cols + col, rows,
                       (size_t)kept * sizeof(float));
            }
            if (++at->d == n0) {
                at->d = 0;
                if (++at->c == n1) {
                    at->c = 0;
                    if (++at->b == c1) {
                        at->b = 0;
                        at->a++;
                    }
                }
            }
        }
        return;
    }
    Py_ssize_t c1 = d[1], plane = d[2] * d[3], channels = d[5];
    for (Py_ssize_t r = 0; r < count; r++, rows += c0) {
        Py_ssize_t first = at->b * c0;
        if (first < channels) {
            Py_ssize_t kept = channels - first < c0 ? channels - first : c0;
            float *to = out + (at->a * channels + first) * plane + at->c;
            for (Py_ssize_t k = 0; k < kept; k++) to[k * plane] = rows[k];
        }
        if (++at->c == plane) {
            at->c = 0;
            if (++at->b == c1) {
                at->b = 0;
                at->a++;
            }
        }
    }
}

/* `size` bytes at `offset` of the file `fd` into `into`: 0, or -1 with errno set (0 when the
 * file ended first) */
static int read_exactly(int fd, char *into, size_t size, Py_ssize_t offset)
{
    while (size > 0) {
        ssize_t got = pread(fd, into, size, (off_t)offset);
        if (got < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        if (got == 0) {
            errno = 0;
            return -1;
        }
        into += got;
        size -= (size_t)got;
        offset += got;
    }
    return 0;
}

/* A stored tensor: `count` values of `kind` at `offset` of `memory`, or of the file `fd` when
 * memory is NULL. */
typedef struct {
    const char *memory;
    int fd;
    Py_ssize_t offset, count;
    int kind;
} Stored;

/* the bytes of values done .. done+m-1 of `s`, at an address aligned for `align` bytes: in the
 * stored memory when they are aligned there, else copied or read into `room` (aligned); NULL
 * with errno set when the file could not be read (errno 0: it ended first) */
static const char *piece_bytes(const Stored *s, Py_ssize_t done, Py_ssize_t m, size_t align,
                               char *room)
{
    Py_ssize_t item = item_size(s->kind);
    size_t size = (size_t)(m * item);
    if (s->memory != NULL) {
        const char *bytes = s->memory + s->offset + done * item;
        if ((uintptr_t)bytes % align == 0) return bytes;
        memcpy(room, bytes, size);
        return room;
    }
    return read_exactly(s->fd, room, size, s->offset + done * item) < 0 ? NULL : room;
}

/* values done .. done+m-1 of `s` as float32, each exact: in the stored memory when they are
 * aligned float32 there, else decoded into `into` (float32 read in place, the others through
 * `raw`, room for m float32 values); NULL as piece_bytes */
static const float *piece_floats(const Stored *s, Py_ssize_t done, Py_ssize_t m, float *into,
                                 char *raw)
{
    if (s->kind == 'f') return (const float *)piece_bytes(s, done, m, sizeof(float), (char *)into);
    const char *bytes = piece_bytes(s, done, m, s->kind == 'e' ? sizeof(uint16_t) : 1, raw);
    if (bytes == NULL) return NULL;
    if (s->kind == 'e') widen_half_loop((const uint16_t *)bytes, into, m);
    else if (s->kind == 'b') {
        const int8_t *v = (const int8_t *)bytes;
        for (Py_ssize_t i = 0; i < m; i++) into[i] = (float)v[i];
    }
    else {
        const uint8_t *v = (const uint8_t *)bytes;
        for (Py_ssize_t i = 0; i < m; i++) into[i] = (float)v[i];
    }
    return into;
}

#define PIECE 65536 /* floats: a piece of a tensor decoded at a time stays in the L2 cache */

/* the floats of each of load_stored's two work areas, for a layout's rows of `row` values */
static Py_ssize_t piece_room(Py_ssize_t row) { return row > PIECE ? row : PIECE; }

/*
 * The stored values as the float32 vector measured, through `layout` when not NULL: a pointer
 * to the stored bytes themselves when they are float32 in memory, aligned, with no layout (no
 * copy); else `out`, filled a piece at a time through `piece` and `raw` (piece_room floats
 * each). NULL with errno set when the file could not be read (errno 0: it ended first).
 */
static const float *load_stored(const Stored *s, const Layout *layout, float *out, float *piece,
                                char *raw)
{
    const char *memory = s->memory == NULL ? NULL : s->memory + s->offset;
    if (memory != NULL && layout == NULL && s->kind == 'f' &&
        (uintptr_t)memory % sizeof(float) == 0)
        return (const float *)memory;
    Py_ssize_t row = layout == NULL ? 1 : layout->d[4];
    Py_ssize_t per = piece_room(row) / row * row;
    RowCursor at = {0, 0, 0, 0};
    for (Py_ssize_t done = 0; done < s->count; done += per) {
        Py_ssize_t m = s->count - done < per ? s->count - done : per;
        /* without a layout the values land in out (aligned float32 in memory returned above) */
        const float *values = piece_floats(s, done, m, layout == NULL ? out + done : piece, raw);
        if (values == NULL) return NULL;
        if (layout != NULL) place_rows(values, m / row, layout, &at, out);
    }
    return out;
}

VECTOR_CLONES
static void float_to_double(const float *from, double *to, Py_ssize_t n)
{
    for (Py_ssize_t i = 0; i < n; i++) to[i] = (double)from[i];
}

/* numpy's float16 -> float64 cast, bit for bit: finite values through float32 (both steps
 * exact), infinities and NaNs by their bits, so that a signalling NaN's payload is kept as
 * numpy keeps it (a float32 -> float64 conversion would quiet it) */
VECTOR_CLONES
static void half_to_double(const uint16_t *half, double *out, Py_ssize_t n)
{
    for (Py_ssize_t i = 0; i < n; i++) {
        uint32_t h = half[i], magnitude = (h & 0x7fffu) << 13;
        float scaled;
        memcpy(&scaled, &magnitude, sizeof scaled);
        double value = (double)(scaled * 0x1p112f);
        uint64_t bits;
        memcpy(&bits, &value, sizeof bits);
        if ((h & 0x7c00u) == 0x7c00u)
            bits = 0x7ff0000000000000u | ((uint64_t)(h & 0x03ffu) << 42);
        bits |= (uint64_t)(h & 0x8000u) << 48;
        memcpy(&out[i], &bits, sizeof bits);
    }
}

/*
 * The stored values (no layout) as float64 in `out`, every value as numpy's cast gives it
 * (float16 directly, the others through float32, exactly): the replay's evidence, decoded a
 * piece at a time through `piece` and `raw` (PIECE floats each) instead of a whole stored copy
 * and numpy's cast.
 * -1 with errno set when the file could not be read (errno 0: it ended first).
 */
static int load_wide(const Stored *s, double *out, float *piece, char *raw)
{
    for (Py_ssize_t done = 0; done < s->count; done += PIECE) {
        Py_ssize_t m = s->count - done < PIECE ? s->count - done : PIECE;
        if (s->kind == 'e') {
            const char *bytes = piece_bytes(s, done, m, sizeof(uint16_t), raw);
            if (bytes == NULL) return -1;
            half_to_double((const uint16_t *)bytes, out + done, m);
            continue;
        }
        const float *values = piece_floats(s, done, m, piece, raw);
        if (values == NULL) return -1;
        float_to_double(values, out + done, m);
    }
    return 0;
}

#endif
