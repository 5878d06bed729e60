/*
 * The buffer glue the C extensions share (compare/_kernel.c, diagnose/_rounding.c): a numpy
 * array taken as a C-contiguous Py_buffer of one item type, its release, and the argument
 * count check of a METH_FASTCALL function. Include after <Python.h>.
 */
#ifndef FUSION_SWITCH_BUFFERS_H
#define FUSION_SWITCH_BUFFERS_H

typedef struct {
    Py_buffer view;
    int held;
} Vector;

/* `obj` as a C-contiguous buffer of native `itemsize`-byte items of struct format `code`;
 * TypeError `expected` otherwise. Release `vec` either way. */
static int get_typed(PyObject *obj, Vector *vec, Py_ssize_t itemsize, char code, int writable,
                     const char *expected)
{
    int flags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0);
    if (PyObject_GetBuffer(obj, &vec->view, flags) < 0) return -1;
    vec->held = 1;
    const char *format = vec->view.format;
    if (format[0] == '<' || format[0] == '=' || format[0] == '@') format++;
    if (vec->view.itemsize != itemsize || format[0] != code || format[1] != '\0') {
        PyErr_SetString(PyExc_TypeError, expected);
        return -1;
    }
    return 0;
}

static void release(Vector *vec, int count)
{
    for (int k = 0; k < count; k++)
        if (vec[k].held) PyBuffer_Release(&vec[k].view);
}

static int check_count(Py_ssize_t nargs, Py_ssize_t want, const char *name)
{
    if (nargs == want) return 0;
    PyErr_Format(PyExc_TypeError, "%s takes %zd arguments (%zd given)", name, want, nargs);
    return -1;
}

#endif
