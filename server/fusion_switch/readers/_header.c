/*
 * A dump file's whole DumpData header decoded in C: fusion_switch.readers.dump's header decoder
 * (_decode_header, _make_tensor and the byte positions of _build_dump_file) in one call.
 *
 * A 5,000-op comparison reads about 9,000 dump headers; field by field in Python that was a
 * sixth of the measure stage. decode() returns exactly what the Python decoder builds for
 * well-formed bytes: the header's strings and time, its attrs, and the DumpTensor objects of
 * every input, output, buffer and space, with every field the Python code sets. For anything it
 * does not handle (malformed bytes, a field of the wrong wire type, a tensor that does not fit
 * in the file, too many fields) it returns None, and the Python decoder runs on the same bytes
 * to raise its usual error with its usual offset.
 *
 * Field numbers: formats.md 1.2 (the newest dump_task.proto); DumpData field 7 is OpAttr in new
 * files and Workspace in old ones (a field-7 entry holding a varint field 1 or 3).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

enum { VARINT = 0, I64 = 1, LEN = 2, I32 = 5 };
enum { MAX_HEADER_FIELDS = 100000, LENGTH_BYTES = 8 };

/* What one tensor entry may hold; the names are the Python decoder's dict keys. */
enum {
    F_DATA_TYPE, F_FORMAT, F_SHAPE, F_ORIGINAL_OP, F_DATA, F_SIZE, F_ORIGINAL_SHAPE,
    F_SUB_FORMAT, F_ADDRESS, F_DIM_RANGE, F_ARG_INDEX, F_OFFSET, F_INPUT_TYPE, F_TYPE, F_COUNT,
    F_NONE = -1
};
static const char *const FIELD_NAMES[F_COUNT] = {
    "data_type", "format", "shape", "original_op", "data", "size", "original_shape",
    "sub_format", "address", "dim_range", "arg_index", "offset", "input_type", "type",
};

enum { K_INPUT, K_OUTPUT, K_BUFFER, K_SPACE, K_COUNT };
static const char *const KIND_NAMES[K_COUNT] = {"input", "output", "buffer", "space"};

/* field number -> field, per message (index 0 unused; numbers above 11 are ignored) */
static const int INPUT_FIELDS[12] = {
    F_NONE, F_DATA_TYPE, F_FORMAT, F_SHAPE, F_DATA, F_SIZE, F_ORIGINAL_SHAPE, F_SUB_FORMAT,
    F_ADDRESS, F_OFFSET, F_ARG_INDEX, F_INPUT_TYPE,
};
static const int OUTPUT_FIELDS[12] = {
    F_NONE, F_DATA_TYPE, F_FORMAT, F_SHAPE, F_ORIGINAL_OP, F_DATA, F_SIZE, F_ORIGINAL_SHAPE,
    F_SUB_FORMAT, F_ADDRESS, F_DIM_RANGE, F_ARG_INDEX,
};
static const int BUFFER_FIELDS[12] = {
    F_NONE, F_TYPE, F_DATA, F_SIZE, F_NONE, F_NONE, F_NONE, F_NONE, F_NONE, F_NONE, F_NONE, F_NONE,
};
static const int SPACE_FIELDS[12] = {
    F_NONE, F_TYPE, F_DATA, F_SIZE, F_ARG_INDEX, F_NONE, F_NONE, F_NONE, F_NONE, F_NONE, F_NONE,
    F_NONE,
};
static const int *const KIND_FIELDS[K_COUNT] = {INPUT_FIELDS, OUTPUT_FIELDS, BUFFER_FIELDS,
                                                SPACE_FIELDS};

/* interned strings, made once */
static PyObject *field_names[F_COUNT], *kind_names[K_COUNT];
static PyObject *s_kind, *s_index, *s_data_offset, *s_raw_format, *s_addr_offset, *s_type_code,
    *s_recorded, *s_dict, *empty_tuple, *recorded_cache;

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

/* One field as protowire.scan() reports it: VARINT value in *a; LEN payload in [*a, *b);
 * I64/I32 value in *a. 0 when malformed (scan() would raise). */
static inline int next_field(const uint8_t *buf, Py_ssize_t *pos, Py_ssize_t end,
                             uint64_t *number, int *wire_type, uint64_t *a, Py_ssize_t *b)
{
    uint64_t key, value;
    if (!read_varint(buf, pos, end, &key)) return 0;
    *number = key >> 3;
    *wire_type = (int)(key & 7);
    if (*number == 0 || *number > 0x1FFFFFFF) return 0;
    if (*wire_type == VARINT || *wire_type == LEN) {
        if (!read_varint(buf, pos, end, &value)) return 0;
        if (*wire_type == VARINT) {
            *a = value;
            return 1;
        }
        if (value > (uint64_t)(end - *pos)) return 0;
        *a = (uint64_t)*pos;
        *b = *pos + (Py_ssize_t)value;
        *pos = *b;
        return 1;
    }
    if (*wire_type == I64 || *wire_type == I32) {
        int width = *wire_type == I64 ? 8 : 4;
        if (end - *pos < width) return 0;
        uint64_t v = 0;
        for (int k = width - 1; k >= 0; k--) v = (v << 8) | buf[*pos + k];
        *a = v;
        *pos += width;
        return 1;
    }
    return 0;
}

/* Whether buf[start:end] is a well-formed message (what scan() accepts). */
static int well_formed(const uint8_t *buf, Py_ssize_t start, Py_ssize_t end)
{
    Py_ssize_t pos = start, b = 0;
    uint64_t number, a;
    int wire_type;
    while (pos < end)
        if (!next_field(buf, &pos, end, &number, &wire_type, &a, &b)) return 0;
    return 1;
}

static inline int32_t as_int32(uint64_t value) { return (int32_t)(uint32_t)value; }

static PyObject *text(const uint8_t *buf, Py_ssize_t start, Py_ssize_t end)
{
    return PyUnicode_DecodeUTF8((const char *)buf + start, end - start, "replace");
}

/* A shape message's dims (field 1, packed or not); NULL with no exception when malformed. */
static PyObject *shape(const uint8_t *buf, Py_ssize_t start, Py_ssize_t end)
{
    PyObject *dims = PyList_New(0);
    if (dims == NULL) return NULL;
    Py_ssize_t pos = start, b = 0;
    uint64_t number, a;
    int wire_type;
    while (pos < end) {
        if (!next_field(buf, &pos, end, &number, &wire_type, &a, &b)) goto malformed;
        if (number != 1) continue;
        if (wire_type == LEN) {
            for (Py_ssize_t at = (Py_ssize_t)a; at < b;) {
                uint64_t dim;
                if (!read_varint(buf, &at, b, &dim)) goto malformed;
                PyObject *item = PyLong_FromUnsignedLongLong(dim);
                if (item == NULL || PyList_Append(dims, item) < 0) {
                    Py_XDECREF(item);
                    goto failed;
                }
                Py_DECREF(item);
            }
        }
        else if (wire_type == VARINT) {
            PyObject *item = PyLong_FromUnsignedLongLong(a);
            if (item == NULL || PyList_Append(dims, item) < 0) {
                Py_XDECREF(item);
                goto failed;
            }
            Py_DECREF(item);
        }
        else
            goto malformed;
    }
    PyObject *out = PyList_AsTuple(dims);
    Py_DECREF(dims);
    return out;
malformed:
    Py_DECREF(dims);
    return NULL;
failed:
    Py_DECREF(dims);
    return NULL;
}

/* OriginalOp(name, output_index, data_type, format); NULL with no exception when malformed. */
static PyObject *original_op(const uint8_t *buf, Py_ssize_t start, Py_ssize_t end,
                             PyObject *op_class)
{
    Py_ssize_t pos = start, b = 0, name_start = 0, name_end = 0;
    uint64_t number, a, output_index = 0;
    int32_t data_type = 0, format = 0;
    int wire_type;
    while (pos < end) {
        if (!next_field(buf, &pos, end, &number, &wire_type, &a, &b)) return NULL;
        if (number == 1) {
            if (wire_type != LEN) return NULL;
            name_start = (Py_ssize_t)a;
            name_end = b;
        }
        else if (number >= 2 && number <= 4) {
            if (wire_type != VARINT) return NULL;
            if (number == 2) output_index = a & 0xFFFFFFFFu;
            else if (number == 3) data_type = as_int32(a);
            else format = as_int32(a);
        }
    }
    PyObject *name = text(buf, name_start, name_end);
    if (name == NULL) return NULL;
    PyObject *op = PyObject_CallFunction(op_class, "NKii", name, (unsigned long long)output_index,
                                         data_type, format);
    return op;
}

/* What one entry holds, before it becomes a DumpTensor's fields. */
typedef struct {
    unsigned recorded;       /* bit per F_* seen */
    uint64_t scalar[F_COUNT];
    PyObject *shape, *original_shape, *original_op, *dim_range; /* owned or NULL */
    Py_ssize_t data_start, data_length;
} Entry;

static void entry_clear(Entry *entry)
{
    Py_CLEAR(entry->shape);
    Py_CLEAR(entry->original_shape);
    Py_CLEAR(entry->original_op);
    Py_CLEAR(entry->dim_range);
}

/* 1: decoded; 0: malformed (no exception); -1: Python error. */
static int decode_entry(const uint8_t *buf, Py_ssize_t start, Py_ssize_t end, int kind,
                        PyObject *op_class, Entry *entry)
{
    const int *names = KIND_FIELDS[kind];
    Py_ssize_t pos = start, b = 0;
    uint64_t number, a;
    int wire_type;
    memset(entry, 0, sizeof(*entry));
    while (pos < end) {
        if (!next_field(buf, &pos, end, &number, &wire_type, &a, &b)) return 0;
        int name = number < 12 ? names[number] : F_NONE;
        if (name == F_NONE) continue;
        entry->recorded |= 1u << name;
        switch (name) {
        case F_SHAPE:
        case F_ORIGINAL_SHAPE: {
            if (wire_type != LEN) return 0;
            PyObject *dims = shape(buf, (Py_ssize_t)a, b);
            if (dims == NULL) return PyErr_Occurred() ? -1 : 0;
            if (name == F_SHAPE) Py_XSETREF(entry->shape, dims);
            else Py_XSETREF(entry->original_shape, dims);
            break;
        }
        case F_ORIGINAL_OP: {
            if (wire_type != LEN) return 0;
            PyObject *op = original_op(buf, (Py_ssize_t)a, b, op_class);
            if (op == NULL) return PyErr_Occurred() ? -1 : 0;
            Py_XSETREF(entry->original_op, op);
            break;
        }
        case F_DATA:
            if (wire_type != LEN) return 0;
            entry->data_start = (Py_ssize_t)a;
            entry->data_length = b - (Py_ssize_t)a;
            break;
        case F_DIM_RANGE: {
            if (wire_type != LEN) return 0;
            uint64_t bounds[2] = {0, 0}, sub_number, value;
            Py_ssize_t at = (Py_ssize_t)a, sub_b = 0;
            int sub_type;
            while (at < b) {
                if (!next_field(buf, &at, b, &sub_number, &sub_type, &value, &sub_b)) return 0;
                if (sub_number == 1 || sub_number == 2) {
                    if (sub_type != VARINT) return 0;
                    bounds[sub_number - 1] = value;
                }
            }
            if (entry->dim_range == NULL && (entry->dim_range = PyList_New(0)) == NULL) return -1;
            PyObject *pair = Py_BuildValue("(KK)", (unsigned long long)bounds[0],
                                           (unsigned long long)bounds[1]);
            if (pair == NULL || PyList_Append(entry->dim_range, pair) < 0) {
                Py_XDECREF(pair);
                return -1;
            }
            Py_DECREF(pair);
            break;
        }
        default:
            if (wire_type != VARINT) return 0;
            entry->scalar[name] = a;
        }
    }
    return 1;
}

/* frozenset of the recorded field names, one per distinct set (a handful per file kind). */
static PyObject *recorded_names(unsigned recorded)
{
    PyObject *key = PyLong_FromUnsignedLong(recorded);
    if (key == NULL) return NULL;
    PyObject *names = PyDict_GetItemWithError(recorded_cache, key);
    if (names != NULL) {
        Py_DECREF(key);
        return Py_NewRef(names);
    }
    if (PyErr_Occurred()) goto failed;
    PyObject *list = PyList_New(0);
    if (list == NULL) goto failed;
    for (int f = 0; f < F_COUNT; f++) {
        if ((recorded >> f & 1u) && PyList_Append(list, field_names[f]) < 0) {
            Py_DECREF(list);
            goto failed;
        }
    }
    names = PyFrozenSet_New(list);
    Py_DECREF(list);
    if (names == NULL || PyDict_SetItem(recorded_cache, key, names) < 0) {
        Py_XDECREF(names);
        goto failed;
    }
    Py_DECREF(key);
    return names;
failed:
    Py_DECREF(key);
    return NULL;
}

static int set_item(PyObject *dict, PyObject *name, PyObject *value)
{
    if (value == NULL) return -1;
    int failed = PyDict_SetItem(dict, name, value);
    Py_DECREF(value);
    return failed;
}

/* The DumpTensor of one entry (dump._make_tensor), built as the dataclass's instance dict. */
static PyObject *make_tensor(PyObject *tensor_class, int kind, Py_ssize_t index, Entry *entry,
                             Py_ssize_t data_offset, uint64_t size)
{
    uint64_t *v = entry->scalar;
    uint32_t raw_format = (uint32_t)as_int32(v[F_FORMAT]);
    int32_t sub_format = as_int32(v[F_SUB_FORMAT]);
    if (!sub_format && raw_format > 0xFF) sub_format = (int32_t)((raw_format >> 8) & 0xFFFF);
    PyObject *dim_range = entry->dim_range ? PyList_AsTuple(entry->dim_range)
                                           : Py_NewRef(empty_tuple);
    PyObject *fields = PyDict_New();
    if (fields == NULL || dim_range == NULL) goto failed;
    if (PyDict_SetItem(fields, s_kind, kind_names[kind]) < 0 ||
        set_item(fields, s_index, PyLong_FromSsize_t(index)) < 0 ||
        set_item(fields, field_names[F_DATA_TYPE], PyLong_FromLong(as_int32(v[F_DATA_TYPE]))) < 0 ||
        set_item(fields, field_names[F_FORMAT], PyLong_FromLong((long)(raw_format & 0xFF))) < 0 ||
        PyDict_SetItem(fields, field_names[F_SHAPE], entry->shape ? entry->shape : empty_tuple) <
            0 ||
        PyDict_SetItem(fields, field_names[F_ORIGINAL_SHAPE],
                       entry->original_shape ? entry->original_shape : empty_tuple) < 0 ||
        set_item(fields, field_names[F_SIZE], PyLong_FromUnsignedLongLong(size)) < 0 ||
        set_item(fields, s_data_offset, PyLong_FromSsize_t(data_offset)) < 0 ||
        PyDict_SetItem(fields, field_names[F_ORIGINAL_OP],
                       entry->original_op ? entry->original_op : Py_None) < 0 ||
        set_item(fields, field_names[F_SUB_FORMAT], PyLong_FromLong(sub_format)) < 0 ||
        set_item(fields, field_names[F_ADDRESS], PyLong_FromUnsignedLongLong(v[F_ADDRESS])) < 0 ||
        set_item(fields, s_raw_format, PyLong_FromUnsignedLong(raw_format)) < 0 ||
        set_item(fields, s_addr_offset, PyLong_FromUnsignedLongLong(v[F_OFFSET])) < 0 ||
        set_item(fields, field_names[F_ARG_INDEX],
                 PyLong_FromUnsignedLongLong(v[F_ARG_INDEX] & 0xFFFFFFFFu)) < 0 ||
        set_item(fields, field_names[F_INPUT_TYPE],
                 PyLong_FromUnsignedLongLong(v[F_INPUT_TYPE] & 0xFFFFFFFFu)) < 0 ||
        set_item(fields, s_type_code, PyLong_FromLong(as_int32(v[F_TYPE]))) < 0 ||
        PyDict_SetItem(fields, field_names[F_DIM_RANGE], dim_range) < 0 ||
        set_item(fields, s_recorded, recorded_names(entry->recorded)) < 0)
        goto failed;
    Py_CLEAR(dim_range);
    /* object.__new__(DumpTensor), then its __dict__ set past the frozen class's __setattr__ */
    PyObject *tensor = PyBaseObject_Type.tp_new((PyTypeObject *)tensor_class, empty_tuple, NULL);
    if (tensor == NULL) goto failed;
    if (PyObject_GenericSetAttr(tensor, s_dict, fields) < 0) {
        Py_DECREF(tensor);
        goto failed;
    }
    Py_DECREF(fields);
    return tensor;
failed:
    Py_XDECREF(dim_range);
    Py_XDECREF(fields);
    return NULL;
}

/* Where an entry's field lies, to be decoded once every entry is known (kind order). */
typedef struct {
    int kind;
    Py_ssize_t start, end;
} Span;

PyDoc_STRVAR(decode_doc,
             "decode(header, file_size, DumpTensor, OriginalOp) -> (version, dump_time, op_name, "
             "dfx_message, attrs, inputs, outputs, buffers, spaces), or None when the Python "
             "decoder must run (malformed header, a tensor beyond the end of the file).");

static PyObject *decode(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "decode takes 4 arguments");
        return NULL;
    }
    Py_ssize_t file_size = PyLong_AsSsize_t(args[1]);
    if (file_size == -1 && PyErr_Occurred()) return NULL;
    PyObject *tensor_class = args[2], *op_class = args[3];
    if (!PyType_Check(tensor_class)) {
        PyErr_SetString(PyExc_TypeError, "decode: DumpTensor must be a class");
        return NULL;
    }
    Py_buffer view;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0) return NULL;
    const uint8_t *buf = view.buf;
    Py_ssize_t end = view.len, pos = 0, b = 0;
    PyObject *out = NULL, *strings[3] = {NULL, NULL, NULL}; /* version, op_name, dfx_message */
    PyObject *attrs = NULL, *lists[K_COUNT] = {NULL, NULL, NULL, NULL};
    Span *spans = NULL;
    Py_ssize_t span_count = 0, span_capacity = 0;
    uint64_t dump_time = 0, number, a;
    int wire_type;
    Entry entry;
    memset(&entry, 0, sizeof(entry));
    Py_ssize_t string_spans[3][2] = {{0, 0}, {0, 0}, {0, 0}};
    if ((attrs = PyList_New(0)) == NULL) goto failed;
    for (int k = 0; k < K_COUNT; k++)
        if ((lists[k] = PyList_New(0)) == NULL) goto failed;
    for (Py_ssize_t fields = 0; pos < end; fields++) {
        if (fields >= MAX_HEADER_FIELDS) goto malformed;
        if (!next_field(buf, &pos, end, &number, &wire_type, &a, &b)) goto malformed;
        int kind = -1;
        switch (number) {
        case 1: case 6: case 9: {
            if (wire_type != LEN) goto malformed;
            int slot = number == 1 ? 0 : number == 6 ? 1 : 2;
            string_spans[slot][0] = (Py_ssize_t)a;
            string_spans[slot][1] = b;
            continue;
        }
        case 2:
            if (wire_type != VARINT) goto malformed;
            dump_time = a;
            continue;
        case 3: kind = K_OUTPUT; break;
        case 4: kind = K_INPUT; break;
        case 5: kind = K_BUFFER; break;
        case 8: kind = K_SPACE; break;
        case 7: {
            if (wire_type != LEN) goto malformed;
            Py_ssize_t at = (Py_ssize_t)a, sub_b = 0;
            Py_ssize_t name_span[2] = {0, 0}, value_span[2] = {0, 0};
            uint64_t sub_number, value;
            int sub_type, workspace = 0;
            if (!well_formed(buf, (Py_ssize_t)a, b)) goto malformed;
            while (at < b) {
                next_field(buf, &at, b, &sub_number, &sub_type, &value, &sub_b);
                if (sub_type == VARINT && (sub_number == 1 || sub_number == 3)) workspace = 1;
            }
            if (workspace) {
                kind = K_SPACE;
                break;
            }
            at = (Py_ssize_t)a;
            while (at < b) {
                next_field(buf, &at, b, &sub_number, &sub_type, &value, &sub_b);
                if (sub_number != 1 && sub_number != 2) continue;
                if (sub_type != LEN) goto malformed;
                Py_ssize_t *span = sub_number == 1 ? name_span : value_span;
                span[0] = (Py_ssize_t)value;
                span[1] = sub_b;
            }
            PyObject *name = text(buf, name_span[0], name_span[1]);
            PyObject *attr_value = name ? text(buf, value_span[0], value_span[1]) : NULL;
            PyObject *pair = attr_value ? PyTuple_Pack(2, name, attr_value) : NULL;
            Py_XDECREF(name);
            Py_XDECREF(attr_value);
            if (pair == NULL || PyList_Append(attrs, pair) < 0) {
                Py_XDECREF(pair);
                goto failed;
            }
            Py_DECREF(pair);
            continue;
        }
        default:
            continue;
        }
        if (wire_type != LEN) goto malformed;
        if (span_count == span_capacity) {
            span_capacity = span_capacity ? 2 * span_capacity : 16;
            Span *grown = PyMem_Realloc(spans, (size_t)span_capacity * sizeof(Span));
            if (grown == NULL) {
                PyErr_NoMemory();
                goto failed;
            }
            spans = grown;
        }
        spans[span_count++] = (Span){kind, (Py_ssize_t)a, b};
    }
    for (int s = 0; s < 3; s++) {
        strings[s] = text(buf, string_spans[s][0], string_spans[s][1]);
        if (strings[s] == NULL) goto failed;
    }
    /* tensors in file order: every input, then outputs, buffers, spaces */
    Py_ssize_t position = LENGTH_BYTES + end;
    for (int kind = 0; kind < K_COUNT; kind++) {
        Py_ssize_t index = 0;
        for (Py_ssize_t s = 0; s < span_count; s++) {
            if (spans[s].kind != kind) continue;
            int status = decode_entry(buf, spans[s].start, spans[s].end, kind, op_class, &entry);
            if (status < 0) goto failed;
            if (status == 0) goto malformed;
            uint64_t size = entry.scalar[F_SIZE];
            Py_ssize_t offset;
            if ((entry.recorded >> F_DATA & 1u) && !size) {  /* old style: bytes in the header */
                offset = LENGTH_BYTES + entry.data_start;
                size = (uint64_t)entry.data_length;
            }
            else {
                if (position > file_size || size > (uint64_t)(file_size - position))
                    goto malformed;
                offset = position;
                position += (Py_ssize_t)size;
            }
            PyObject *tensor = make_tensor(tensor_class, kind, index++, &entry, offset, size);
            entry_clear(&entry);
            if (tensor == NULL || PyList_Append(lists[kind], tensor) < 0) {
                Py_XDECREF(tensor);
                goto failed;
            }
            Py_DECREF(tensor);
        }
    }
    out = Py_BuildValue("(OKOOOOOOO)", strings[0], (unsigned long long)dump_time, strings[1],
                        strings[2], attrs, lists[K_INPUT], lists[K_OUTPUT], lists[K_BUFFER],
                        lists[K_SPACE]);
    goto done;
malformed:
    out = Py_NewRef(Py_None);
    goto done;
failed:
    out = NULL;
done:
    entry_clear(&entry);
    for (int s = 0; s < 3; s++) Py_XDECREF(strings[s]);
    Py_XDECREF(attrs);
    for (int k = 0; k < K_COUNT; k++) Py_XDECREF(lists[k]);
    PyMem_Free(spans);
    PyBuffer_Release(&view);
    return out;
}

static PyMethodDef methods[] = {
    {"decode", (PyCFunction)(void (*)(void))decode, METH_FASTCALL, decode_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_header", "dump header decoding for readers.dump (see _header.c)", -1,
    methods,
};

PyMODINIT_FUNC PyInit__header(void)
{
    for (int f = 0; f < F_COUNT; f++)
        if ((field_names[f] = PyUnicode_InternFromString(FIELD_NAMES[f])) == NULL) return NULL;
    for (int k = 0; k < K_COUNT; k++)
        if ((kind_names[k] = PyUnicode_InternFromString(KIND_NAMES[k])) == NULL) return NULL;
    if ((s_kind = PyUnicode_InternFromString("kind")) == NULL ||
        (s_index = PyUnicode_InternFromString("index")) == NULL ||
        (s_data_offset = PyUnicode_InternFromString("data_offset")) == NULL ||
        (s_raw_format = PyUnicode_InternFromString("raw_format")) == NULL ||
        (s_addr_offset = PyUnicode_InternFromString("addr_offset")) == NULL ||
        (s_type_code = PyUnicode_InternFromString("type_code")) == NULL ||
        (s_recorded = PyUnicode_InternFromString("recorded")) == NULL ||
        (s_dict = PyUnicode_InternFromString("__dict__")) == NULL ||
        (empty_tuple = PyTuple_New(0)) == NULL ||
        (recorded_cache = PyDict_New()) == NULL)
        return NULL;
    return PyModule_Create(&module);
}
