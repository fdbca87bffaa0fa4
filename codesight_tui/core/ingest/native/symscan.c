/* The names of one file, in C: the walk of a tree py-tree-sitter parsed, and the packing of its
 * uses into the rows the index stores (symbols.py's ``_scan_tree`` and ``extract_rows``, same rows).
 *
 * ``walk`` visits every node of the tree once, with tree-sitter's own cursor, and tells each name
 * leaf's kind the way symbols.py's query would (same node types, fields and anchors, from tables
 * symbols.py makes per grammar). ``pack`` then does the per-name loop of ``_scan_tree``. Both hold
 * no Python object per node: what the Python walk spent on the query engine and on a Node object
 * per name is most of what symbols cost an index run.
 *
 * The tree is read through py-tree-sitter's Tree object, whose first field is its TSTree pointer,
 * with the runtime compiled here from the sources of the same py-tree-sitter version
 * (``TREE_SITTER``); symbols.py uses this module only when the installed version is that one.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tree_sitter/api.h"
#include "tree_cursor.h"

#define TREE_SITTER "0.26.1"

/* py-tree-sitter 0.26.1's Tree (tree_sitter/binding/types.h) */
typedef struct {
    PyObject_HEAD
    TSTree *tree;
} PyTree;

/* What a node type is to the walk (one byte a symbol, from symbols.py's ``_native_tables``). */
enum { F_NAME = 1, F_TYPE_LEAF = 2, F_TYPE_PARENT = 4, F_IMPORT = 8, F_DEF = 16, F_CALL = 32, F_MEMBER = 64, F_GENERIC = 128 };

typedef struct {
    int32_t *v;
    Py_ssize_t n, cap;
} Vec;

static int vec_push(Vec *a, int32_t x) {
    if (a->n == a->cap) {
        Py_ssize_t cap = a->cap ? a->cap * 2 : 256;
        int32_t *v = PyMem_Realloc(a->v, (size_t)cap * sizeof(int32_t));
        if (!v) return -1;
        a->v = v;
        a->cap = cap;
    }
    a->v[a->n++] = x;
    return 0;
}

static int vec_push3(Vec *a, int32_t x, int32_t y, int32_t z) {
    return vec_push(a, x) || vec_push(a, y) || vec_push(a, z) ? -1 : 0;
}

static void vec_free(Vec *a) { PyMem_Free(a->v); a->v = NULL; a->n = a->cap = 0; }

static PyObject *vec_bytes(const Vec *a) {
    return PyBytes_FromStringAndSize((const char *)a->v, a->n * (Py_ssize_t)sizeof(int32_t));
}

typedef struct {
    uint16_t flags;
    uint16_t symbol;
    uint32_t named_seen; /* named children visited so far */
    int8_t callee;        /* in the callee's place of the call it is a child of */
    int8_t last;          /* the last named child of its parent (-1: not asked) */
} Frame;

/* The query engine's own view of where the cursor stands: the field, and whether a named sibling
 * follows (through hidden nodes, as a pattern's field and "." anchor see them). */
static void status(TSTreeCursor *cur, TSFieldId *field, bool *later_named) {
    bool later, can_later;
    TSSymbol supertypes[8];
    unsigned count = 8;
    ts_tree_cursor_current_status(cur, field, &later, later_named, &can_later, supertypes, &count);
}

/* walk(tree, flags, callee, compound, name_field) -> (defs, names): for each definition node eight
 * int32 (start, end, symbol, start row, end row, and its ``name_field`` child's start, end and row,
 * -1 where it has none), and int32 (start, end, kind code) for each name leaf, in the order
 * of their places. ``flags``: a byte per symbol; ``callee``: a uint16 per symbol, for a call node
 * the field that holds what is called (0: its first named child). ``compound``: names with named
 * parts are left out (Swift). */
/* py-tree-sitter's Tree type, looked up once: ``walk`` reads the object's first field as a TSTree
 * pointer, so anything else must be refused before that (a TypeError, never a crash). */
static PyObject *tree_type = NULL;

static int is_tree(PyObject *obj) {
    if (!tree_type) {
        PyObject *mod = PyImport_ImportModule("tree_sitter");
        if (!mod) return -1;
        tree_type = PyObject_GetAttrString(mod, "Tree");
        Py_DECREF(mod);
        if (!tree_type) return -1;
    }
    return PyObject_IsInstance(obj, tree_type);
}

static PyObject *walk(PyObject *self, PyObject *args) {
    PyObject *tree_obj;
    Py_buffer flags_buf, callee_buf;
    int compound, name_field_arg;
    if (!PyArg_ParseTuple(args, "Oy*y*pi", &tree_obj, &flags_buf, &callee_buf, &compound, &name_field_arg))
        return NULL;
    int tree_ok = is_tree(tree_obj);
    if (tree_ok <= 0 || callee_buf.len < 2 * flags_buf.len || name_field_arg < 0 || name_field_arg > UINT16_MAX) {
        if (tree_ok == 0)
            PyErr_SetString(PyExc_TypeError, "walk() takes a tree_sitter.Tree");
        else if (tree_ok > 0)
            PyErr_SetString(PyExc_ValueError, "walk(): callee needs a uint16 per symbol of flags, name_field a field id");
        PyBuffer_Release(&flags_buf);
        PyBuffer_Release(&callee_buf);
        return NULL;
    }
    TSFieldId name_field = (TSFieldId)name_field_arg;
    const uint8_t *flags = flags_buf.buf;
    const uint16_t *callee_field = callee_buf.buf;
    Py_ssize_t nsym = flags_buf.len;
    TSTree *tree = ((PyTree *)tree_obj)->tree;
    PyObject *result = NULL;
    Vec defs = {0}, names = {0}, kinds = {0}, imports = {0};
    Frame *stack = NULL;
    Py_ssize_t depth = 0, cap = 64;
    TSTreeCursor cur = ts_tree_cursor_new(ts_tree_root_node(tree));
    if (!(stack = PyMem_Malloc((size_t)cap * sizeof(Frame)))) { PyErr_NoMemory(); goto done; }
    int err = 0;
    for (;;) {
        TSNode node = ts_tree_cursor_current_node(&cur);
        TSSymbol sym = ts_node_symbol(node);
        uint16_t f = sym < nsym ? flags[sym] : 0;
        if (depth == cap) {
            Frame *s = PyMem_Realloc(stack, (size_t)cap * 2 * sizeof(Frame));
            if (!s) { PyErr_NoMemory(); goto done; }
            stack = s;
            cap *= 2;
        }
        Frame *parent = depth ? &stack[depth - 1] : NULL, *grand = depth >= 2 ? &stack[depth - 2] : NULL;
        Frame *fr = &stack[depth];
        fr->flags = f;
        fr->symbol = sym;
        fr->named_seen = 0;
        fr->callee = 0;
        fr->last = -1;
        /* Only the children of a call, and names and members inside members, need more than
         * their type: most nodes cost the cursor's step and their symbol. */
        if (parent && (parent->flags & F_CALL) && ts_node_is_named(node)) {
            bool first_named = parent->named_seen++ == 0;
            if (f & (F_NAME | F_MEMBER | F_GENERIC)) {
                uint16_t want = callee_field[parent->symbol];
                if (want) {
                    TSFieldId field = 0;
                    bool later_named;
                    status(&cur, &field, &later_named);
                    fr->callee = field == want;
                } else {
                    fr->callee = first_named;
                }
            }
        } else if (parent && (parent->flags & F_GENERIC) && parent->callee && ts_node_is_named(node)) {
            /* f[T](): the instantiation's first named child is what is called */
            bool first_named = parent->named_seen++ == 0;
            fr->callee = first_named && (f & (F_NAME | F_MEMBER));
        }
        /* last named child: asked where a pattern's "." anchor decides (obj.f(), a.b.f()) */
        if (parent && (parent->flags & F_MEMBER) && !fr->callee &&
            (parent->callee || (grand && (grand->flags & F_MEMBER) && grand->callee)) &&
            (f & (F_NAME | F_MEMBER))) {
            TSFieldId field = 0;
            bool later_named;
            status(&cur, &field, &later_named);
            fr->last = !later_named;
        }
        if (f & (F_DEF | F_IMPORT | F_NAME)) {
            uint32_t start = ts_node_start_byte(node), end = ts_node_end_byte(node);
            if (f & F_DEF) {
                /* its place and lines, and its "name" child's (-1: none), which is most definitions' name */
                TSNode name = name_field ? ts_node_child_by_field_id(node, name_field) : (TSNode){0};
                bool has_name = !ts_node_is_null(name);
                err |= vec_push3(&defs, (int32_t)start, (int32_t)end, sym) ||
                       vec_push3(&defs, (int32_t)ts_node_start_point(node).row, (int32_t)ts_node_end_point(node).row,
                                 has_name ? (int32_t)ts_node_start_byte(name) : -1) ||
                       vec_push(&defs, has_name ? (int32_t)ts_node_end_byte(name) : -1) ||
                       vec_push(&defs, has_name ? (int32_t)ts_node_start_point(name).row : -1);
            }
            if (f & F_IMPORT) err |= vec_push(&imports, (int32_t)start) || vec_push(&imports, (int32_t)end);
            if (f & F_NAME) {
                uint32_t parts = ts_node_named_child_count(node);
                if (!(compound && parts) && end > start) err |= vec_push3(&names, (int32_t)start, (int32_t)end, 0);
                if (!parts) {
                    int32_t code = 0;
                    if ((f & F_TYPE_LEAF) || (parent && (parent->flags & F_TYPE_PARENT))) code = 2;
                    if (fr->callee) {
                        code = 1;
                    } else if (parent && (parent->flags & F_MEMBER) && fr->last == 1) {
                        if (parent->callee || (grand && (grand->flags & F_MEMBER) && grand->callee && parent->last == 1))
                            code = 1;
                    }
                    if (code) err |= vec_push(&kinds, (int32_t)start) || vec_push(&kinds, code);
                }
            }
        }
        if (err) { PyErr_NoMemory(); goto done; }
        if (ts_node_child_count(node) && ts_tree_cursor_goto_first_child(&cur)) {  /* a leaf has none: not asked */
            depth++;
            continue;
        }
        while (!ts_tree_cursor_goto_next_sibling(&cur)) {
            if (!ts_tree_cursor_goto_parent(&cur)) goto walked;
            depth--;
        }
    }
walked:;
    /* A walk in order visits places in order; where a broken tree did not, the Python walk answers. */
    for (Py_ssize_t i = 3; i < names.n; i += 3)
        if (names.v[i] < names.v[i - 3]) { result = Py_NewRef(Py_None); goto done; }
    for (Py_ssize_t i = 2; i < kinds.n; i += 2)
        if (kinds.v[i] < kinds.v[i - 2]) { result = Py_NewRef(Py_None); goto done; }
    for (Py_ssize_t i = 2; i < imports.n; i += 2)
        if (imports.v[i] < imports.v[i - 2]) { result = Py_NewRef(Py_None); goto done; }
    /* Each name's kind: a call's at its start byte first, else a type's (as symbols.py's dict by
     * start byte), else an import's where it is inside an import. */
    Py_ssize_t nk = kinds.n / 2, k = 0, ni = imports.n / 2, ii = 0;
    int32_t imp_end = -1;
    for (Py_ssize_t i = 0; i < names.n; i += 3) {
        int32_t at = names.v[i];
        while (k < nk && kinds.v[2 * k] < at) k++;
        int32_t code = 0;
        for (Py_ssize_t j = k; j < nk && kinds.v[2 * j] == at; j++) {
            if (kinds.v[2 * j + 1] == 1) { code = 1; break; }
            code = 2;
        }
        while (ii < ni && imports.v[2 * ii] <= at) {
            if (imports.v[2 * ii + 1] > imp_end) imp_end = imports.v[2 * ii + 1];
            ii++;
        }
        if (!code && imp_end > at) code = 3;
        names.v[i + 2] = code;
    }
    {
        PyObject *d = vec_bytes(&defs), *n = vec_bytes(&names);
        if (d && n) result = PyTuple_Pack(2, d, n);
        Py_XDECREF(d);
        Py_XDECREF(n);
    }
done:
    ts_tree_cursor_delete(&cur);
    PyMem_Free(stack);
    vec_free(&defs);
    vec_free(&names);
    vec_free(&kinds);
    vec_free(&imports);
    PyBuffer_Release(&flags_buf);
    PyBuffer_Release(&callee_buf);
    return result;
}

typedef struct {
    int32_t start, len, count, last_line, mask;
} Name;

static uint64_t hash_bytes(const char *s, int32_t n) {
    uint64_t h = 1469598103934665603ULL;
    for (int32_t i = 0; i < n; i++) h = (h ^ (uint8_t)s[i]) * 1099511628211ULL;
    return h;
}

static int32_t bisect_right(const int32_t *a, Py_ssize_t n, int32_t x) {
    Py_ssize_t lo = 0, hi = n;
    while (lo < hi) {
        Py_ssize_t mid = (lo + hi) / 2;
        if (x < a[mid]) hi = mid; else lo = mid + 1;
    }
    return (int32_t)lo;
}

static int cmp_int(const void *a, const void *b) {
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

/* pack(data, names, starts, ends, parents, def_lines, names_at) -> (names, ends, uses, calls,
 * imports): ``extract_rows``'s last five fields. ``names``: ``walk``'s; ``starts`` to
 * ``def_lines``: int32 per definition (its start byte, the byte its references end at, its
 * enclosing definition, the line of its name); ``names_at``: the set of (name, 0-based line) of
 * the definitions' own names, which are no uses (each taken out of the set when met). */
static PyObject *pack(PyObject *self, PyObject *args) {
    Py_buffer data_buf, names_buf, starts_buf, ends_buf, parents_buf, lines_buf;
    PyObject *names_at;
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*y*O!", &data_buf, &names_buf, &starts_buf, &ends_buf, &parents_buf,
                          &lines_buf, &PySet_Type, &names_at))
        return NULL;
    const char *data = data_buf.buf;
    const int32_t *nm = names_buf.buf, *starts = starts_buf.buf, *ends = ends_buf.buf, *parents = parents_buf.buf,
                  *def_lines = lines_buf.buf;
    Py_ssize_t count = names_buf.len / 12, ndefs = starts_buf.len / 4;
    PyObject *result = NULL;
    Name *table = NULL;
    int32_t *slots = NULL, *records = NULL, *name_lines = NULL;
    Vec calls = {0}, imported = {0};
    Py_ssize_t ntable = 0, nrec = 0, nlines = 0, cap_lines = 0;
    /* The arguments are checked before anything is read through them: every name inside the data,
     * one of each per definition, and each definition's enclosing one before it (the loop that
     * climbs them ends). */
    const char *bad = NULL;
    if (names_buf.len % 12 || starts_buf.len % 4 || ends_buf.len != starts_buf.len ||
        parents_buf.len != starts_buf.len || lines_buf.len != starts_buf.len || data_buf.len > INT32_MAX)
        bad = "pack(): names must be int32 triples, and starts, ends, parents and def_lines one int32 per definition";
    for (Py_ssize_t i = 0; !bad && i < count; i++)
        if (nm[3 * i] < 0 || nm[3 * i + 1] < nm[3 * i] || nm[3 * i + 1] > data_buf.len || nm[3 * i + 2] < 0 ||
            nm[3 * i + 2] > 30)
            bad = "pack(): a name's place is outside the data, or its kind is not one";
    for (Py_ssize_t i = 0; !bad && i < ndefs; i++)
        if (parents[i] < -1 || parents[i] >= i)
            bad = "pack(): a definition's enclosing one must come before it";
    if (bad) {
        PyErr_SetString(PyExc_ValueError, bad);
        goto done;
    }
    /* the lines that hold a definition's own name */
    {
        PyObject *it = PyObject_GetIter(names_at), *key;
        cap_lines = PySet_GET_SIZE(names_at) + 1;
        if (!it) goto done;
        if (!(name_lines = PyMem_Malloc((size_t)cap_lines * sizeof(int32_t)))) {
            Py_DECREF(it);
            PyErr_NoMemory();
            goto done;
        }
        while ((key = PyIter_Next(it)) != NULL) {
            if (PyTuple_Check(key) && PyTuple_GET_SIZE(key) == 2 && nlines < cap_lines)
                name_lines[nlines++] = (int32_t)PyLong_AsLong(PyTuple_GET_ITEM(key, 1));
            Py_DECREF(key);
        }
        Py_DECREF(it);
        if (PyErr_Occurred()) goto done;
        qsort(name_lines, (size_t)nlines, sizeof(int32_t), cmp_int);
    }
    Py_ssize_t nslots = 64;
    while (nslots < 2 * count + 2) nslots *= 2;
    slots = PyMem_Malloc((size_t)nslots * sizeof(int32_t));
    table = PyMem_Malloc((size_t)(count + 1) * sizeof(Name));
    records = PyMem_Malloc((size_t)(count + 1) * 4 * sizeof(int32_t)); /* name, line, code, within */
    if (!slots || !table || !records) { PyErr_NoMemory(); goto done; }
    memset(slots, -1, (size_t)nslots * sizeof(int32_t));
    const char *p = data;
    int32_t line = 0, scanned = 0;
    for (Py_ssize_t i = 0; i < count; i++) {
        int32_t at = nm[3 * i], end = nm[3 * i + 1], code = nm[3 * i + 2], len = end - at;
        /* 0-based: the newlines before it */
        while (scanned < at) {
            const char *nl = memchr(p + scanned, '\n', (size_t)(at - scanned));
            if (!nl) { scanned = at; break; }
            line++;
            scanned = (int32_t)(nl - p) + 1;
        }
        int32_t l0 = line;
        if (nlines) {
            int32_t k = bisect_right(name_lines, nlines, l0) - 1;
            if (k >= 0 && name_lines[k] == l0) {
                PyObject *s = PyUnicode_DecodeUTF8(p + at, len, "strict");
                PyObject *ln = s ? PyLong_FromLong(l0) : NULL;
                PyObject *key = ln ? PyTuple_Pack(2, s, ln) : NULL;
                int found = key ? PySet_Discard(names_at, key) : -1;
                Py_XDECREF(s);
                Py_XDECREF(ln);
                Py_XDECREF(key);
                if (found < 0) goto done;
                if (found) continue; /* the defining occurrence, once */
            }
        }
        /* the innermost definition around it: the last to start before it, or the nearest of that
         * one's enclosing definitions that has not ended */
        int32_t w = bisect_right(starts, ndefs, at) - 1;
        while (w >= 0 && ends[w] <= at) w = parents[w];
        int32_t ln1 = l0 + 1, within = w >= 0 ? def_lines[w] : 0;
        uint64_t h = hash_bytes(p + at, len);
        Py_ssize_t s = (Py_ssize_t)(h & (uint64_t)(nslots - 1));
        int32_t idx;
        for (;;) {
            idx = slots[s];
            if (idx < 0) {
                idx = (int32_t)ntable++;
                slots[s] = idx;
                table[idx] = (Name){at, len, 0, -1, 0};
                break;
            }
            if (table[idx].len == len && !memcmp(p + table[idx].start, p + at, (size_t)len)) break;
            s = (s + 1) & (nslots - 1);
        }
        Name *e = &table[idx];
        if (e->last_line == ln1) { /* once per (line, kind) */
            if (e->mask & (1 << code)) continue;
        } else {
            e->last_line = ln1;
            e->mask = 0;
        }
        e->mask |= 1 << code;
        e->count++;
        records[4 * nrec] = idx;
        records[4 * nrec + 1] = ln1;
        records[4 * nrec + 2] = code;
        records[4 * nrec + 3] = within;
        nrec++;
        if (code == 1) {
            if (vec_push3(&calls, idx, ln1, within)) { PyErr_NoMemory(); goto done; }
        } else if (code == 3) {
            if (vec_push(&imported, idx)) { PyErr_NoMemory(); goto done; }
        }
    }
    {
        /* names in the order of first use, joined by newlines; uses flat, name after name */
        Py_ssize_t total = 0;
        for (Py_ssize_t i = 0; i < ntable; i++) total += table[i].len + 1;
        PyObject *joined = PyBytes_FromStringAndSize(NULL, total ? total - 1 : 0);
        PyObject *ends_b = PyBytes_FromStringAndSize(NULL, ntable * 4);
        PyObject *uses_b = PyBytes_FromStringAndSize(NULL, nrec * 12);
        if (!joined || !ends_b || !uses_b) {
            Py_XDECREF(joined);
            Py_XDECREF(ends_b);
            Py_XDECREF(uses_b);
            goto done;
        }
        char *j = PyBytes_AS_STRING(joined);
        int32_t *eo = (int32_t *)PyBytes_AS_STRING(ends_b), *uo = (int32_t *)PyBytes_AS_STRING(uses_b);
        int32_t acc = 0;
        for (Py_ssize_t i = 0; i < ntable; i++) {
            if (i) *j++ = '\n';
            memcpy(j, p + table[i].start, (size_t)table[i].len);
            j += table[i].len;
            int32_t c = table[i].count;
            table[i].count = acc; /* now where its uses go */
            acc += 3 * c;
            eo[i] = acc;
        }
        for (Py_ssize_t r = 0; r < nrec; r++) {
            int32_t *at = uo + table[records[4 * r]].count;
            at[0] = records[4 * r + 1];
            at[1] = records[4 * r + 2];
            at[2] = records[4 * r + 3];
            table[records[4 * r]].count += 3;
        }
        qsort(imported.v, (size_t)imported.n, sizeof(int32_t), cmp_int);
        Py_ssize_t u = 0;
        for (Py_ssize_t i = 0; i < imported.n; i++)
            if (!u || imported.v[u - 1] != imported.v[i]) imported.v[u++] = imported.v[i];
        imported.n = u;
        PyObject *text = PyUnicode_DecodeUTF8(PyBytes_AS_STRING(joined), PyBytes_GET_SIZE(joined), "strict");
        PyObject *calls_b = vec_bytes(&calls), *imp_b = vec_bytes(&imported);
        if (text && calls_b && imp_b) result = PyTuple_Pack(5, text, ends_b, uses_b, calls_b, imp_b);
        Py_DECREF(joined);
        Py_DECREF(ends_b);
        Py_DECREF(uses_b);
        Py_XDECREF(text);
        Py_XDECREF(calls_b);
        Py_XDECREF(imp_b);
    }
done:
    PyMem_Free(name_lines);
    PyMem_Free(slots);
    PyMem_Free(table);
    PyMem_Free(records);
    vec_free(&calls);
    vec_free(&imported);
    PyBuffer_Release(&data_buf);
    PyBuffer_Release(&names_buf);
    PyBuffer_Release(&starts_buf);
    PyBuffer_Release(&ends_buf);
    PyBuffer_Release(&parents_buf);
    PyBuffer_Release(&lines_buf);
    return result;
}

static PyMethodDef methods[] = {
    {"walk", walk, METH_VARARGS, "A tree's definition nodes and name leaves, with each name's kind."},
    {"pack", pack, METH_VARARGS, "A file's uses, packed as the index stores them."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "symscan", NULL, -1, methods};

PyMODINIT_FUNC PyInit_symscan(void) {
    PyObject *m = PyModule_Create(&module);
    if (m && PyModule_AddStringConstant(m, "TREE_SITTER", TREE_SITTER) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
