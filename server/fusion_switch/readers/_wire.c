/*
 * The two hot loops of fusion_switch.readers.protowire in C: scan() and unpack_varints().
 *
 * A 5,000-op comparison decodes about 9,000 dump headers; in Python the field loop alone was a
 * quarter of it. These functions return exactly what the Python versions return for well-formed
 * input. For anything malformed they return None, and the Python version runs on the same bytes
 * to raise its WireError, so every message and offset stays the one the Python decoder gives.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

#include "_varint.h"

enum { VARINT = 0, I64 = 1, LEN = 2, I32 = 5 };

static PyObject *append_field(PyObject *list, uint64_t number, int wire_type, uint64_t a,
                              Py_ssize_t b)
{
    PyObject *item = Py_BuildValue("(KiKn)", (unsigned long long)number, wire_type,
                                   (unsigned long long)a, b);
    if (item == NULL) return NULL;
    int failed = PyList_Append(list, item);
    Py_DECREF(item);
    return failed ? NULL : list;
}

static uint64_t little_endian(const uint8_t *at, int count)
{
    uint64_t value = 0;
    for (int k = count - 1; k >= 0; k--) value = (value << 8) | at[k];
    return value;
}

/* (buf, start, end, ...) arguments: the buffer and a span; 0 with an exception set if not. */
static int get_span(PyObject *const *args, Py_ssize_t nargs, Py_ssize_t want, const char *name,
                    Py_buffer *view, Py_ssize_t *start, Py_ssize_t *end)
{
    if (nargs != want) {
        PyErr_Format(PyExc_TypeError, "%s takes %zd arguments", name, want);
        return 0;
    }
    *start = PyLong_AsSsize_t(args[1]);
    *end = PyLong_AsSsize_t(args[2]);
    if (PyErr_Occurred()) return 0;
    return PyObject_GetBuffer(args[0], view, PyBUF_SIMPLE) == 0;
}

PyDoc_STRVAR(scan_doc,
             "scan(buf, start, end, max_fields) -> list of (number, wire_type, a, b), or None "
             "when the bytes are malformed (max_fields < 0: no limit but the span's length).");

static PyObject *scan(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    Py_buffer view;
    PyObject *out = NULL;
    Py_ssize_t start, end, max_fields = -1;
    if (nargs == 4) {
        max_fields = PyLong_AsSsize_t(args[3]);
        if (max_fields == -1 && PyErr_Occurred()) return NULL;
    }
    if (!get_span(args, nargs, 4, "scan", &view, &start, &end)) return NULL;
    const uint8_t *buf = view.buf;
    if (!(0 <= start && start <= end && end <= view.len)) goto malformed;
    out = PyList_New(0);
    if (out == NULL) goto done;
    Py_ssize_t budget = max_fields >= 0 ? max_fields : end - start;
    Py_ssize_t pos = start;
    while (pos < end) {
        Py_ssize_t tag_at = pos;
        uint64_t key, value;
        if (--budget < 0) goto malformed;
        if (!read_varint(buf, &pos, end, &key)) goto malformed;
        uint64_t number = key >> 3;
        int wire_type = (int)(key & 7);
        if (number == 0 || number > 0x1FFFFFFF) goto malformed;
        if (wire_type == VARINT || wire_type == LEN) {
            if (!read_varint(buf, &pos, end, &value)) goto malformed;
            if (wire_type == VARINT) {
                if (!append_field(out, number, VARINT, value, tag_at)) goto failed;
                continue;
            }
            if (value > (uint64_t)(end - pos)) goto malformed;
            if (!append_field(out, number, LEN, (uint64_t)pos, pos + (Py_ssize_t)value))
                goto failed;
            pos += (Py_ssize_t)value;
        }
        else if (wire_type == I64 || wire_type == I32) {
            int width = wire_type == I64 ? 8 : 4;
            if (end - pos < width) goto malformed;
            if (!append_field(out, number, wire_type, little_endian(buf + pos, width), tag_at))
                goto failed;
            pos += width;
        }
        else {
            goto malformed;
        }
    }
    goto done;
malformed:
    Py_XDECREF(out);
    out = Py_NewRef(Py_None);
    goto done;
failed:
    Py_CLEAR(out);
done:
    PyBuffer_Release(&view);
    return out;
}

PyDoc_STRVAR(unpack_doc,
             "unpack_varints(buf, start, end) -> list of int, or None when malformed.");

static PyObject *unpack_varints(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    Py_buffer view;
    PyObject *out = NULL;
    Py_ssize_t start, end;
    if (!get_span(args, nargs, 3, "unpack_varints", &view, &start, &end)) return NULL;
    const uint8_t *buf = view.buf;
    if (!(0 <= start && start <= end && end <= view.len)) {
        out = Py_NewRef(Py_None);
        goto done;
    }
    out = PyList_New(0);
    for (Py_ssize_t pos = start; out != NULL && pos < end;) {
        uint64_t value;
        if (!read_varint(buf, &pos, end, &value)) {
            Py_SETREF(out, Py_NewRef(Py_None));
            break;
        }
        PyObject *item = PyLong_FromUnsignedLongLong(value);
        if (item == NULL || PyList_Append(out, item) < 0) Py_CLEAR(out);
        Py_XDECREF(item);
    }
done:
    PyBuffer_Release(&view);
    return out;
}

static PyMethodDef methods[] = {
    {"scan", (PyCFunction)(void (*)(void))scan, METH_FASTCALL, scan_doc},
    {"unpack_varints", (PyCFunction)(void (*)(void))unpack_varints, METH_FASTCALL, unpack_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_wire", "protobuf wire scanning for protowire (see _wire.c)", -1,
    methods,
};

PyMODINIT_FUNC PyInit__wire(void) { return PyModule_Create(&module); }
