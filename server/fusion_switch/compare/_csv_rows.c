/* Result rows as the lines of msaccucmp's CSV, in one call per chunk of rows.
 *
 * compare.result_csv renders each chunk's rows (about 800 rows of 23 cells at 5,000 ops) with
 * the csv module, from a list of cells per row: ~9 us a row, 5-6 ms a chunk, on both comparing
 * processes (issue 16). This is the same rendering without a Python object per cell: the cells
 * of result_csv.cells(), each neutralised as result_csv.neutralised() would (the rare cell that
 * may need it is handed to that very function), then joined as csv.writer's Excel dialect
 * writes them (QUOTE_MINIMAL: a cell holding a comma, a double quote, CR or LF is quoted, its
 * quotes doubled; CRLF line ends). Anything of another type than the rows of this package hold
 * raises TypeError, and result_csv renders those rows the csv module's way instead; the tests
 * hold both renderings to the same text. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdio.h>
#include <string.h>

enum { ROW_INDEX, OP_TYPE, NPU_DUMP, LEFT_DTYPE, LEFT_ADDRESS, GROUND_TRUTH, RIGHT_DTYPE,
       RIGHT_ADDRESS, TENSOR_INDEX, SHAPE, METRIC_TEXT, FAIL_REASON, FIELDS };

static const char *const FIELD_NAMES[FIELDS] = {
    "index",        "op_type",     "npu_dump",      "left_dtype",  "left_address",
    "ground_truth", "right_dtype", "right_address", "tensor_index", "shape",
    "metric_text",  "fail_reason",
};

typedef struct {
    PyObject *names[FIELDS]; /* interned attribute names */
    PyObject *comma, *nan;
} State;

static State state;

/* The text being written, as UTF-8 (the cells' own UTF-8, which CPython keeps for ASCII). */
typedef struct {
    char *data;
    Py_ssize_t size, capacity;
} Buffer;

static int reserve(Buffer *out, Py_ssize_t more)
{
    if (out->size + more <= out->capacity) return 0;
    Py_ssize_t capacity = out->capacity ? out->capacity : 1 << 16;
    while (capacity < out->size + more) capacity *= 2;
    char *data = PyMem_Realloc(out->data, (size_t)capacity);
    if (data == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    out->data = data;
    out->capacity = capacity;
    return 0;
}

static int put(Buffer *out, const char *text, Py_ssize_t n)
{
    if (reserve(out, n)) return -1;
    memcpy(out->data + out->size, text, (size_t)n);
    out->size += n;
    return 0;
}

static int type_error(const char *what)
{
    PyErr_Format(PyExc_TypeError, "render: %s", what);
    return -1;
}

/* The cell's UTF-8 text (CPython keeps it for ASCII strings). In UTF-8 the bytes of , " ; CR
 * and LF stand for those characters only: a multi-byte sequence has none of them. */
static const char *utf8_of(PyObject *cell, Py_ssize_t *n)
{
    const char *text = PyUnicode_AsUTF8AndSize(cell, n);
    if (text == NULL) { /* a lone surrogate: the csv module's way decides */
        PyErr_Clear();
        type_error("a cell that is not valid UTF-8");
    }
    return text;
}

enum { QUOTE = 1, SEMICOLON = 2 };

/* QUOTE when csv.writer quotes the text (it holds , " CR or LF), SEMICOLON when it holds a ;;
 * ``quotes``: how many double quotes it holds. */
static int scan(const char *text, Py_ssize_t n, Py_ssize_t *quotes)
{
    int found = 0;
    *quotes = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        switch (text[i]) {
        case ',': case '\r': case '\n': found |= QUOTE; break;
        case '"': found |= QUOTE; (*quotes)++; break;
        case ';': found |= SEMICOLON; break;
        default: break;
        }
    }
    return found;
}

/* The text as csv.writer writes a cell: quoted, its quotes doubled, when ``found`` says so. */
static int put_text(Buffer *out, const char *text, Py_ssize_t n, int found, Py_ssize_t quotes)
{
    if (!(found & QUOTE)) return put(out, text, n);
    if (reserve(out, n + quotes + 2)) return -1;
    char *at = out->data + out->size;
    *at++ = '"';
    for (Py_ssize_t i = 0; i < n; i++) {
        if (text[i] == '"') *at++ = '"';
        *at++ = text[i];
    }
    *at++ = '"';
    out->size = at - out->data;
    return 0;
}

/* The characters that may start a formula (result_csv._FORMULA_LEAD_TEXT): ASCII ones in a
 * table, the rest looked up in the text. */
typedef struct {
    PyObject *text;
    char ascii[128];
} Leads;

static int starts_formula(PyObject *cell, const char *utf8, const Leads *leads)
{
    unsigned char first = (unsigned char)utf8[0];
    if (first < 128) return leads->ascii[first];
    Py_UCS4 lead = PyUnicode_READ_CHAR(cell, 0);
    Py_ssize_t found =
        PyUnicode_FindChar(leads->text, lead, 0, PyUnicode_GET_LENGTH(leads->text), 1);
    return found == -2 ? -1 : found >= 0;
}

/* result_csv.cells()'s test, then its neutralised() where the cell may need it. */
static int put_cell(Buffer *out, PyObject *cell, const Leads *leads, PyObject *neutralise,
                    int first)
{
    if (!PyUnicode_Check(cell)) return type_error("a cell that is not a str");
    if (!first && put(out, ",", 1)) return -1;
    Py_ssize_t n, quotes;
    const char *text = utf8_of(cell, &n);
    if (text == NULL) return -1;
    int found = scan(text, n, &quotes);
    int formula = n > 0 ? starts_formula(cell, text, leads) : 0;
    if (formula < 0) return -1;
    if (!formula && !(found & SEMICOLON)) return put_text(out, text, n, found, quotes);
    PyObject *safe = PyObject_CallOneArg(neutralise, cell);
    if (safe == NULL) return -1;
    int failed;
    if (!PyUnicode_Check(safe)) {
        failed = type_error("neutralised() gave no str");
    } else if ((text = utf8_of(safe, &n)) == NULL) {
        failed = -1;
    } else {
        found = scan(text, n, &quotes);
        failed = put_text(out, text, n, found, quotes);
    }
    Py_DECREF(safe);
    return failed;
}

/* "[" + ",".join(map(str, shape)) + "]", through Python's str() of each dim. */
static PyObject *shape_text_by_str(PyObject *shape)
{
    PyObject *texts = PySequence_List(shape);
    if (texts == NULL) return NULL;
    for (Py_ssize_t j = 0; j < PyList_GET_SIZE(texts); j++) {
        PyObject *item = PyObject_Str(PyList_GET_ITEM(texts, j));
        if (item == NULL) {
            Py_DECREF(texts);
            return NULL;
        }
        PyList_SetItem(texts, j, item);
    }
    PyObject *joined = PyUnicode_Join(state.comma, texts);
    Py_DECREF(texts);
    if (joined == NULL) return NULL;
    PyObject *result = PyUnicode_FromFormat("[%U]", joined);
    Py_DECREF(joined);
    return result;
}

#define MAX_FAST_DIMS 32 /* dims written here; a longer shape (none is) goes through str() */

/* "[1,16,8,8]" as "[" + ",".join(map(str, shape)) + "]" gives it: int dims that fit in a
 * long long are written here, anything else by shape_text_by_str. */
static PyObject *shape_text(PyObject *shape)
{
    if (!PyTuple_Check(shape)) {
        type_error("a shape that is not a tuple");
        return NULL;
    }
    Py_ssize_t n = PyTuple_GET_SIZE(shape);
    if (n > MAX_FAST_DIMS) return shape_text_by_str(shape);
    char text[MAX_FAST_DIMS * 24 + 2]; /* each dim: 20 digits and a sign at most, a comma */
    Py_ssize_t size = 0;
    text[size++] = '[';
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *dim = PyTuple_GET_ITEM(shape, i);
        if (!PyLong_CheckExact(dim)) return shape_text_by_str(shape);
        int overflow = 0;
        long long value = PyLong_AsLongLongAndOverflow(dim, &overflow);
        if (overflow) return shape_text_by_str(shape);
        if (value == -1 && PyErr_Occurred()) return NULL;
        if (i) text[size++] = ',';
        size += snprintf(text + size, 24, "%lld", value);
    }
    text[size++] = ']';
    return PyUnicode_FromStringAndSize(text, size);
}

static int put_row(Buffer *out, PyObject *row, PyObject *algorithms, int left_address,
                   int right_address, const Leads *leads, PyObject *neutralise)
{
    PyObject *field[FIELDS] = {NULL};
    int failed = -1;
    for (int i = 0; i < FIELDS; i++) {
        if ((i == LEFT_ADDRESS && !left_address) || (i == RIGHT_ADDRESS && !right_address))
            continue;
        field[i] = PyObject_GetAttr(row, state.names[i]);
        if (field[i] == NULL) goto end;
    }
    PyObject *index = PyObject_Str(field[ROW_INDEX]); /* str(row.index) */
    if (index == NULL) goto end;
    int bad = put_cell(out, index, leads, neutralise, 1);
    Py_DECREF(index);
    if (bad) goto end;
    static const int plain[] = {OP_TYPE,      NPU_DUMP,    LEFT_DTYPE,   LEFT_ADDRESS,
                                GROUND_TRUTH, RIGHT_DTYPE, RIGHT_ADDRESS};
    for (size_t i = 0; i < sizeof plain / sizeof plain[0]; i++) {
        if (field[plain[i]] != NULL && put_cell(out, field[plain[i]], leads, neutralise, 0))
            goto end;
    }
    PyObject *tensor = field[TENSOR_INDEX] == Py_None ? state.nan : field[TENSOR_INDEX];
    if (put_cell(out, tensor, leads, neutralise, 0)) goto end;
    if (field[SHAPE] == Py_None) {
        if (put_cell(out, state.nan, leads, neutralise, 0)) goto end;
    } else {
        PyObject *shape = shape_text(field[SHAPE]);
        if (shape == NULL) goto end;
        bad = put_cell(out, shape, leads, neutralise, 0);
        Py_DECREF(shape);
        if (bad) goto end;
    }
    if (!PyDict_CheckExact(field[METRIC_TEXT])) {
        type_error("metric texts that are not a dict");
        goto end;
    }
    Py_ssize_t count = PyTuple_GET_SIZE(algorithms);
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *text =
            PyDict_GetItemWithError(field[METRIC_TEXT], PyTuple_GET_ITEM(algorithms, i));
        if (text == NULL && PyErr_Occurred()) goto end;
        text = text != NULL ? text : state.nan;
        Py_INCREF(text); /* borrowed from a dict that neutralise() could change */
        bad = put_cell(out, text, leads, neutralise, 0);
        Py_DECREF(text);
        if (bad) goto end;
    }
    PyObject *reason = PyUnicode_Join(state.comma, field[FAIL_REASON]); /* ",".join(...) */
    if (reason == NULL) goto end;
    bad = put_cell(out, reason, leads, neutralise, 0);
    Py_DECREF(reason);
    if (bad || put(out, "\r\n", 2)) goto end;
    failed = 0;
end:
    for (int i = 0; i < FIELDS; i++) Py_XDECREF(field[i]);
    return failed;
}

PyDoc_STRVAR(render_doc,
             "render(rows, algorithms, left_address, right_address, leads, neutralise) -> str\n\n"
             "The CSV lines of ``rows`` (a list of compare.result.ResultRow) as csv.writer writes "
             "result_csv.cells() of each: ``algorithms`` a tuple of metric names, ``leads`` the "
             "characters that may start a formula, ``neutralise`` result_csv.neutralised. "
             "TypeError when a row holds a value the csv module would write differently "
             "(not a str where a str is expected, text that is not valid UTF-8).");

static PyObject *render(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    if (nargs != 6) {
        PyErr_SetString(PyExc_TypeError, "render() takes six arguments");
        return NULL;
    }
    PyObject *rows = args[0], *algorithms = args[1], *leads = args[4], *neutralise = args[5];
    int left_address = PyObject_IsTrue(args[2]), right_address = PyObject_IsTrue(args[3]);
    if (left_address < 0 || right_address < 0) return NULL;
    if (!PyList_Check(rows) || !PyTuple_Check(algorithms) || !PyUnicode_Check(leads)) {
        PyErr_SetString(PyExc_TypeError, "render(list, tuple, bool, bool, str, callable)");
        return NULL;
    }
    Leads table = {leads, {0}};
    for (Py_ssize_t i = 0; i < PyUnicode_GET_LENGTH(leads); i++) {
        Py_UCS4 c = PyUnicode_READ_CHAR(leads, i);
        if (c < 128) table.ascii[c] = 1;
    }
    Buffer out = {NULL, 0, 0};
    PyObject *result = NULL;
    /* a copy: neutralise() is Python code, which could change the caller's list */
    PyObject *held = PyList_GetSlice(rows, 0, PyList_GET_SIZE(rows));
    if (held == NULL) return NULL;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(held); i++) {
        if (put_row(&out, PyList_GET_ITEM(held, i), algorithms, left_address, right_address,
                    &table, neutralise))
            goto end;
    }
    result = PyUnicode_DecodeUTF8(out.data != NULL ? out.data : "", out.size, "strict");
end:
    Py_DECREF(held);
    PyMem_Free(out.data);
    return result;
}

static PyMethodDef methods[] = {
    {"render", (PyCFunction)(void (*)(void))render, METH_FASTCALL, render_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_csv_rows", "result rows as msaccucmp's CSV lines (see _csv_rows.c)",
    -1, methods,
};

PyMODINIT_FUNC PyInit__csv_rows(void)
{
    for (int i = 0; i < FIELDS; i++) {
        state.names[i] = PyUnicode_InternFromString(FIELD_NAMES[i]);
        if (state.names[i] == NULL) return NULL;
    }
    state.comma = PyUnicode_InternFromString(",");
    state.nan = PyUnicode_InternFromString("NaN");
    if (state.comma == NULL || state.nan == NULL) return NULL;
    return PyModule_Create(&module);
}
