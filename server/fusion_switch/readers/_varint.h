/* The protobuf varint reader shared by _wire.c and _header.c (each extension compiles its own
 * copy: this header is included, not linked). */
#ifndef FUSION_SWITCH_VARINT_H
#define FUSION_SWITCH_VARINT_H

#include <Python.h>
#include <stdint.h>

/* A varint at *pos (at most 10 bytes, the value kept to 64 bits); 0 when truncated or too long. */
static inline int read_varint(const uint8_t *buf, Py_ssize_t *pos, Py_ssize_t end, uint64_t *out)
{
    uint64_t result = 0;
    Py_ssize_t start = *pos, at = *pos;
    for (int shift = 0;; shift += 7) {
        if (at >= end || at - start >= 10) return 0;
        uint8_t byte = buf[at++];
        if (shift < 64) result |= (uint64_t)(byte & 0x7F) << shift;
        if (byte < 0x80) break;
    }
    *pos = at;
    *out = result;
    return 1;
}

#endif
