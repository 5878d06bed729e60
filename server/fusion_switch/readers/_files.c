/* The sizes of many files in one call that stats them without the GIL.
 *
 * readers.dumpdir prefetches the size of every op's newest fusion-on dump in a thread while the
 * comparing process imports numpy (issue 16): os.stat in a Python thread needs the GIL between
 * calls and made both slower; here the stat loop runs while the GIL is released, on the core
 * the other process leaves idle then. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <sys/stat.h>

PyDoc_STRVAR(sizes_doc,
             "sizes(paths) -> list[int]\n\n"
             "The size in bytes of each path (str, bytes or os.PathLike), as os.stat(path).st_size "
             "gives it; -1 where stat fails. The paths are encoded as os.fsencode does before "
             "the GIL is released for the stat calls.");

static PyObject *sizes(PyObject *self, PyObject *arg) {
    (void)self;
    PyObject *seq = PySequence_Fast(arg, "sizes() takes a sequence of paths");
    if (seq == NULL) return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    PyObject **items = PySequence_Fast_ITEMS(seq);
    Py_ssize_t count = n > 0 ? n : 1;
    PyObject **encoded = PyMem_Calloc((size_t)count, sizeof(PyObject *));
    const char **texts = PyMem_Calloc((size_t)count, sizeof(char *));
    long long *out = PyMem_Calloc((size_t)count, sizeof(long long));
    PyObject *result = NULL;
    Py_ssize_t done = 0;
    if (encoded == NULL || texts == NULL || out == NULL) {
        PyErr_NoMemory();
        goto end;
    }
    for (; done < n; done++) {  /* str: encoded; bytes and PathLike as os.fsencode takes them */
        if (!PyUnicode_FSConverter(items[done], &encoded[done])) goto end;
        texts[done] = PyBytes_AS_STRING(encoded[done]);
    }
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n; i++) {
        struct stat st;
        out[i] = stat(texts[i], &st) == 0 ? (long long)st.st_size : -1;
    }
    Py_END_ALLOW_THREADS
    result = PyList_New(n);
    if (result == NULL) goto end;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *value = PyLong_FromLongLong(out[i]);
        if (value == NULL) {
            Py_CLEAR(result);
            goto end;
        }
        PyList_SET_ITEM(result, i, value);
    }
end:
    if (encoded != NULL) {
        for (Py_ssize_t i = 0; i < done; i++) Py_XDECREF(encoded[i]);
    }
    PyMem_Free(encoded);
    PyMem_Free((void *)texts);
    PyMem_Free(out);
    Py_DECREF(seq);
    return result;
}

static PyMethodDef methods[] = {
    {"sizes", sizes, METH_O, sizes_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_files", "file sizes stat'ed without the GIL (see _files.c)", -1,
    methods,
};

PyMODINIT_FUNC PyInit__files(void) { return PyModule_Create(&module); }
