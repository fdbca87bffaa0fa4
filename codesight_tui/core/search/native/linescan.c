/* The matching lines of one file, in C: grep.py's ``line_hits`` without context lines, the loop a
 * pattern such as ``\w+\(\)`` runs a hundred thousand times over a tree. Each line is still found
 * by RE2, through the same call the Python loop makes (``match(anchor, data, pos, end)``, RE2's
 * own binding); what is done here is the rest: the line's bounds and number, its text, its matches
 * as character spans, and its hit, made by calling ``make`` (``SearchResult``) as Python would.
 *
 * ``scan(match, anchor, group, data, limit, every_span, first, make, path, language)`` returns the
 * hits, in order, at most ``limit`` (-1: all). ``group``: the span a match is (1 inside word
 * boundaries); ``first``: the first match, found already, or None. Same hits as ``line_hits``.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

/* RE2's answer, a sequence of (start, end) per group, (-1, -1) for none: group ``group``'s span. */
static int span_of(PyObject *spans, Py_ssize_t group, Py_ssize_t *s, Py_ssize_t *e, int *found) {
    PyObject *whole = PySequence_GetItem(spans, 0);
    if (!whole) return -1;
    Py_ssize_t s0 = PyLong_AsSsize_t(PyTuple_Check(whole) ? PyTuple_GET_ITEM(whole, 0) : Py_None);
    Py_DECREF(whole);
    if (s0 == -1 && PyErr_Occurred()) return -1;
    if (s0 < 0) {
        *found = 0;
        return 0;
    }
    PyObject *wanted = PySequence_GetItem(spans, group);
    if (!wanted) return -1;
    if (!PyTuple_Check(wanted) || PyTuple_GET_SIZE(wanted) != 2) {
        Py_DECREF(wanted);
        PyErr_SetString(PyExc_TypeError, "a match's span is a pair");
        return -1;
    }
    *s = PyLong_AsSsize_t(PyTuple_GET_ITEM(wanted, 0));
    *e = PyLong_AsSsize_t(PyTuple_GET_ITEM(wanted, 1));
    Py_DECREF(wanted);
    if (PyErr_Occurred()) return -1;
    *found = 1;
    return 0;
}

/* The first match in data[pos:end] (with the text around it as context), as grep's ``find``. */
static int find(PyObject *match, PyObject *anchor, PyObject *data, Py_ssize_t pos, Py_ssize_t end,
                Py_ssize_t group, Py_ssize_t *s, Py_ssize_t *e, int *found) {
    PyObject *p = PyLong_FromSsize_t(pos), *q = PyLong_FromSsize_t(end);
    if (!p || !q) {
        Py_XDECREF(p);
        Py_XDECREF(q);
        return -1;
    }
    PyObject *args[4] = {anchor, data, p, q};
    PyObject *spans = PyObject_Vectorcall(match, args, 4, NULL);
    Py_DECREF(p);
    Py_DECREF(q);
    if (!spans) return -1;
    int rc = span_of(spans, group, s, e, found);
    Py_DECREF(spans);
    return rc;
}

static int is_ascii(const char *p, Py_ssize_t n) {
    for (Py_ssize_t i = 0; i < n; i++)
        if ((unsigned char)p[i] & 0x80) return 0;
    return 1;
}

/* Characters before byte ``at`` of a line (UTF-8, each bad byte one, as Python's "replace"). */
static Py_ssize_t chars_before(const char *line, Py_ssize_t at) {
    PyObject *head = PyUnicode_DecodeUTF8(line, at, "replace");
    if (!head) return -1;
    Py_ssize_t n = PyUnicode_GET_LENGTH(head);
    Py_DECREF(head);
    return n;
}

typedef struct {
    Py_ssize_t *v;
    Py_ssize_t n, cap;
} Spans;

static int spans_push(Spans *a, Py_ssize_t s, Py_ssize_t e) {
    if (a->n + 2 > a->cap) {
        Py_ssize_t cap = a->cap ? a->cap * 2 : 16;
        Py_ssize_t *v = PyMem_Realloc(a->v, (size_t)cap * sizeof(Py_ssize_t));
        if (!v) {
            PyErr_NoMemory();
            return -1;
        }
        a->v = v;
        a->cap = cap;
    }
    a->v[a->n++] = s;
    a->v[a->n++] = e;
    return 0;
}

/* The line's matches as character spans of its text. */
static PyObject *char_spans(const Spans *sp, const char *line, Py_ssize_t start, Py_ssize_t end, int ascii) {
    PyObject *out = PyTuple_New(sp->n / 2);
    if (!out) return NULL;
    for (Py_ssize_t k = 0; k < sp->n / 2; k++) {
        Py_ssize_t a = sp->v[2 * k] - start, b = (sp->v[2 * k + 1] < end ? sp->v[2 * k + 1] : end) - start;
        if (!ascii) {
            a = chars_before(line, a);
            b = a < 0 ? -1 : chars_before(line, b);
            if (a < 0 || b < 0) {
                Py_DECREF(out);
                return NULL;
            }
        }
        PyObject *pair = Py_BuildValue("(nn)", a, b);
        if (!pair) {
            Py_DECREF(out);
            return NULL;
        }
        PyObject_GC_UnTrack(pair); /* two ints: in no cycle, as the collector itself would find */
        PyTuple_SET_ITEM(out, k, pair);
    }
    PyObject_GC_UnTrack(out);
    return out;
}

static PyObject *kwnames;  /* ("line", "spans") */
static PyObject *empty, *zero, *zero_float;

static PyObject *hit(PyObject *make, PyObject *path, PyObject *language, PyObject *text, Py_ssize_t line_no,
                     PyObject *spans) {
    PyObject *number = PyLong_FromSsize_t(line_no);
    if (!number) return NULL;
    PyObject *args[12] = {path, number, number, empty, language, zero_float, Py_None, Py_None, text, zero,
                          number, spans};
    PyObject *made = PyObject_Vectorcall(make, args, 10, kwnames);
    Py_DECREF(number);
    return made;
}

static PyObject *linescan_scan(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 10) {
        PyErr_SetString(PyExc_TypeError, "scan() takes 10 arguments");
        return NULL;
    }
    PyObject *match = args[0], *anchor = args[1], *data = args[3], *first = args[6];
    PyObject *make = args[7], *path = args[8], *language = args[9];
    Py_ssize_t group = PyLong_AsSsize_t(args[2]), limit = PyLong_AsSsize_t(args[4]);
    int every_span = PyObject_IsTrue(args[5]);
    if (PyErr_Occurred() || every_span < 0) return NULL;
    if (!PyBytes_Check(data)) {
        PyErr_SetString(PyExc_TypeError, "scan() searches bytes");
        return NULL;
    }
    const char *buf = PyBytes_AS_STRING(data);
    Py_ssize_t size = PyBytes_GET_SIZE(data);
    int no_last = size == 0 || buf[size - 1] == '\n'; /* the empty "line" after the last newline is none */
    PyObject *hits = PyList_New(0);
    if (!hits) return NULL;
    Spans sp = {NULL, 0, 0};
    Py_ssize_t line_no = 1, counted_to = 0, pos = 0;
    while (pos <= size && (limit < 0 || PyList_GET_SIZE(hits) < limit)) {
        Py_ssize_t s = 0, e = 0;
        int found = 0;
        if (first != Py_None) {
            if (!PyArg_ParseTuple(first, "nn", &s, &e)) goto fail;
            found = 1;
            first = Py_None;
        } else if (find(match, anchor, data, pos, size, group, &s, &e, &found) < 0) {
            goto fail;
        }
        if (!found || (s == size && no_last)) break;
        const char *nl = s > 0 ? memrchr(buf, '\n', (size_t)s) : NULL;
        Py_ssize_t start = nl ? nl - buf + 1 : 0;
        const char *after = memchr(buf + s, '\n', (size_t)(size - s));
        Py_ssize_t end = after ? after - buf : size;
        for (const char *p = buf + counted_to; (p = memchr(p, '\n', (size_t)(buf + start - p))) != NULL; p++)
            line_no++;
        counted_to = start;
        sp.n = 0;
        if (spans_push(&sp, s, e) < 0) goto fail;
        Py_ssize_t at = e > s ? e : e + 1;
        while (every_span && at <= end) {
            Py_ssize_t ms = 0, me = 0;
            if (find(match, anchor, data, at, end, group, &ms, &me, &found) < 0) goto fail;
            if (!found) break;
            if (spans_push(&sp, ms, me) < 0) goto fail;
            at = me > ms ? me : me + 1;
        }
        int ascii = is_ascii(buf + start, end - start);
        PyObject *text = ascii ? PyUnicode_DecodeASCII(buf + start, end - start, NULL)
                               : PyUnicode_DecodeUTF8(buf + start, end - start, "replace");
        if (!text) goto fail;
        PyObject *spans = char_spans(&sp, buf + start, start, end, ascii);
        if (!spans) {
            Py_DECREF(text);
            goto fail;
        }
        PyObject *made = hit(make, path, language, text, line_no, spans);
        Py_DECREF(text);
        Py_DECREF(spans);
        if (!made) goto fail;
        /* A hit holds strings, numbers and its spans: it is in no reference cycle, so the cyclic
         * collector need not go through it. Untracked, a hundred thousand hits cost no collection
         * (they cost a grep of \w+\(\) a fifth of its time in a warm service). */
        if (PyObject_GC_IsTracked(made)) PyObject_GC_UnTrack(made);
        int appended = PyList_Append(hits, made);
        Py_DECREF(made);
        if (appended < 0) goto fail;
        pos = end + 1;
    }
    PyMem_Free(sp.v);
    return hits;
fail:
    PyMem_Free(sp.v);
    Py_DECREF(hits);
    return NULL;
}

static PyMethodDef methods[] = {
    {"scan", (PyCFunction)(void (*)(void))linescan_scan, METH_FASTCALL,
     "scan(match, anchor, group, data, limit, every_span, first, make, path, language) -> list of hits"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "linescan", NULL, -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit_linescan(void) {
    kwnames = Py_BuildValue("(ss)", "line", "spans");
    empty = PyUnicode_FromString("");
    zero = PyLong_FromLong(0);
    zero_float = PyFloat_FromDouble(0.0);
    if (!kwnames || !empty || !zero || !zero_float) return NULL;
    return PyModule_Create(&module);
}
