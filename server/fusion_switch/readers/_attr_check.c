/* graph_model._converts_safely in C: whether every AttrDef of a raw attribute map converts
 * without failing, so that the map can be converted on first use (readers.graph_json).
 *
 * Reading a 5,000-op graph checks ~10,000 maps and ~52,000 AttrDefs: 15-23 ms in Python on
 * the comparing process's path to its first comparison (issue 16). The member sets are passed
 * by the caller (the frozensets of graph_model), so that both readings test the same members. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

PyDoc_STRVAR(converts_safely_doc,
             "converts_safely(raw, simple, risky_list, risky) -> bool\n\n"
             "graph_model._converts_safely(raw) for a dict ``raw``, with its member sets "
             "_SIMPLE_MEMBERS, _RISKY_LIST_MEMBERS and _RISKY_MEMBERS given.");

/* the members of an AttrDef's "list": 1 safe, 0 not, -1 an error (set) */
static int check_list(PyObject *listed, PyObject *simple, PyObject *risky_list) {
    Py_ssize_t pos = 0;
    PyObject *member, *items;
    while (PyDict_Next(listed, &pos, &member, &items)) {
        /* references held: a member's __eq__ could change the dict (never a JSON key's) */
        Py_INCREF(member);
        Py_INCREF(items);
        int answer = 2; /* 2: go on */
        int is_simple = PySet_Contains(simple, member);
        if (is_simple < 0) {
            answer = -1;
        } else if (is_simple) {
            if (items != Py_None && !PyList_CheckExact(items)) answer = 0;
        } else {
            int is_risky = PySet_Contains(risky_list, member);
            if (is_risky != 0) answer = is_risky < 0 ? -1 : 0;
        }
        Py_DECREF(member);
        Py_DECREF(items);
        if (answer != 2) return answer;
    }
    return 1;
}

/* one AttrDef: 1 converts safely, 0 not, -1 an error (set) */
static int check_value(PyObject *value, PyObject *list_key, PyObject *simple,
                       PyObject *risky_list, PyObject *risky) {
    if (value == Py_None) return 1;
    if (!PyDict_CheckExact(value)) return 0;
    int has_list = PyDict_Contains(value, list_key);
    if (has_list < 0) return -1;
    if (has_list) {
        PyObject *listed = PyDict_GetItemWithError(value, list_key); /* borrowed */
        if (listed == NULL) return PyErr_Occurred() ? -1 : 1;
        if (listed == Py_None) return 1;
        if (!PyDict_CheckExact(listed)) return 0;
        Py_INCREF(listed);
        int answer = check_list(listed, simple, risky_list);
        Py_DECREF(listed);
        return answer;
    }
    Py_ssize_t pos = 0;
    PyObject *key, *ignored;
    while (PyDict_Next(value, &pos, &key, &ignored)) { /* risky.isdisjoint(value) */
        Py_INCREF(key);
        int is_risky = PySet_Contains(risky, key);
        Py_DECREF(key);
        if (is_risky != 0) return is_risky < 0 ? -1 : 0;
    }
    return 1;
}

static PyObject *list_key = NULL; /* "list", interned */

/* a whole raw map: 1 converts safely, 0 not, -1 an error (set) */
static int check_map(PyObject *raw, PyObject *simple, PyObject *risky_list, PyObject *risky) {
    Py_ssize_t pos = 0;
    PyObject *key, *value;
    while (PyDict_Next(raw, &pos, &key, &value)) {
        /* a reference: a key's __eq__ could change the dict while it is looked at */
        Py_INCREF(value);
        int safe = check_value(value, list_key, simple, risky_list, risky);
        Py_DECREF(value);
        if (safe <= 0) return safe;
    }
    return 1;
}

static int sets_given(PyObject *const *args, Py_ssize_t nargs, const char *name) {
    if (nargs != 4 || !PyAnySet_Check(args[1]) || !PyAnySet_Check(args[2]) ||
        !PyAnySet_Check(args[3])) {
        PyErr_Format(PyExc_TypeError, "%s() takes 4 arguments, the last three sets", name);
        return 0;
    }
    if (list_key == NULL) list_key = PyUnicode_InternFromString("list");
    return list_key != NULL;
}

static PyObject *converts_safely(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (!sets_given(args, nargs, "converts_safely")) return NULL;
    if (!PyDict_CheckExact(args[0])) {
        PyErr_SetString(PyExc_TypeError, "converts_safely() takes a dict");
        return NULL;
    }
    int safe = check_map(args[0], args[1], args[2], args[3]);
    if (safe < 0) return NULL;
    return PyBool_FromLong(safe);
}

PyDoc_STRVAR(unsafe_positions_doc,
             "unsafe_positions(raws, simple, risky_list, risky) -> list[int]\n\n"
             "The positions in the list ``raws`` of the non-empty dicts that do not convert "
             "safely (see converts_safely), and of every item that is not a dict (for the "
             "caller to look at).");

static PyObject *unsafe_positions(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (!sets_given(args, nargs, "unsafe_positions")) return NULL;
    if (!PyList_CheckExact(args[0])) {
        PyErr_SetString(PyExc_TypeError, "unsafe_positions() takes a list");
        return NULL;
    }
    PyObject *raws = args[0];
    PyObject *found = PyList_New(0);
    if (found == NULL) return NULL;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(raws); i++) {
        PyObject *raw = PyList_GET_ITEM(raws, i);
        int safe = 0;
        if (PyDict_CheckExact(raw)) {
            if (PyDict_GET_SIZE(raw) == 0) continue;
            Py_INCREF(raw);
            safe = check_map(raw, args[1], args[2], args[3]);
            Py_DECREF(raw);
            if (safe < 0) {
                Py_DECREF(found);
                return NULL;
            }
        }
        if (!safe) {
            PyObject *position = PyLong_FromSsize_t(i);
            if (position == NULL || PyList_Append(found, position) < 0) {
                Py_XDECREF(position);
                Py_DECREF(found);
                return NULL;
            }
            Py_DECREF(position);
        }
    }
    return found;
}

static PyMethodDef methods[] = {
    {"converts_safely", (PyCFunction)(void (*)(void))converts_safely, METH_FASTCALL,
     converts_safely_doc},
    {"unsafe_positions", (PyCFunction)(void (*)(void))unsafe_positions, METH_FASTCALL,
     unsafe_positions_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_attr_check",
    "whether a raw attribute map converts safely (see _attr_check.c)", -1, methods,
};

PyMODINIT_FUNC PyInit__attr_check(void) { return PyModule_Create(&module); }
