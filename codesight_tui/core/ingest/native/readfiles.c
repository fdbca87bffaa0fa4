/* Many files read at once, in C: exact search reads every file of a tree for a pattern with no
 * trigram, thousands per query, and each read from Python is four system calls that each let go
 * of the interpreter's lock and take it back. Here a batch is opened, checked and read with the
 * lock let go twice in all, so the threads that read run on every core.
 *
 * ``read(paths, max_bytes, text)`` gives, for each path, its bytes or why not (as walker.py's
 * ``read_bytes`` says it): "symlink" (the last part is a link: never followed), "unreadable",
 * "special_file" (not a regular file), "too_large" (over ``max_bytes``), "binary" (``text``: a NUL
 * byte, in a file that opens with no byte-order mark), or None where the file grew while it was
 * read (read it again the slow way).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef O_CLOEXEC
#define O_CLOEXEC 0
#endif

enum { OK = 0, SYMLINK, UNREADABLE, SPECIAL, TOO_LARGE, BINARY, GREW, N_WHY };
static const char *const WHY[N_WHY] = {NULL, "symlink", "unreadable", "special_file", "too_large", "binary", NULL};

typedef struct {
    int fd;
    int why;
    Py_ssize_t size; /* what fstat said */
    Py_ssize_t got;
    PyObject *data; /* a bytes object of size + 1, filled with the lock let go */
} Slot;

static int has_mark(const char *p, Py_ssize_t n) {
    const unsigned char *u = (const unsigned char *)p;
    return (n >= 3 && u[0] == 0xEF && u[1] == 0xBB && u[2] == 0xBF) ||
           (n >= 2 && ((u[0] == 0xFF && u[1] == 0xFE) || (u[0] == 0xFE && u[1] == 0xFF)));
}

static void open_all(Slot *slots, const char *const *paths, Py_ssize_t n, Py_ssize_t max_bytes) {
    for (Py_ssize_t i = 0; i < n; i++) {
        Slot *s = &slots[i];
        s->fd = open(paths[i], O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        if (s->fd < 0) {
            s->why = (errno == ELOOP || errno == EMLINK) ? SYMLINK : UNREADABLE;
            continue;
        }
        struct stat st;
        if (fstat(s->fd, &st) != 0) s->why = UNREADABLE;
        else if (!S_ISREG(st.st_mode)) s->why = SPECIAL;
        else if ((long long)st.st_size > (long long)max_bytes) s->why = TOO_LARGE;
        else s->size = (Py_ssize_t)st.st_size;
        if (s->why != OK) {
            close(s->fd);
            s->fd = -1;
        }
    }
}

static void read_all(Slot *slots, Py_ssize_t n, int text) {
    for (Py_ssize_t i = 0; i < n; i++) {
        Slot *s = &slots[i];
        if (s->fd < 0) continue;
        char *buf = PyBytes_AS_STRING(s->data);
        Py_ssize_t want = s->size + 1; /* one byte more than fstat said: a file that grew shows it */
        while (s->got < want) {
            size_t asked = (size_t)(want - s->got);
            ssize_t r = read(s->fd, buf + s->got, asked);
            if (r < 0 && errno == EINTR) continue;
            if (r < 0) {
                s->why = UNREADABLE;
                break;
            }
            s->got += r;
            if ((size_t)r < asked) break; /* a regular file's short read is its end: no call to see it */
        }
        close(s->fd);
        s->fd = -1;
        if (s->why == OK && s->got == want) s->why = GREW;
        if (s->why == OK && text && !has_mark(buf, s->got) && memchr(buf, 0, (size_t)s->got) != NULL) s->why = BINARY;
    }
}

static PyObject *readfiles_read(PyObject *self, PyObject *args) {
    PyObject *paths, *seq = NULL, *out = NULL;
    Py_ssize_t max_bytes;
    int text;
    (void)self;
    if (!PyArg_ParseTuple(args, "Onp:read", &paths, &max_bytes, &text)) return NULL;
    seq = PySequence_Fast(paths, "read() takes a sequence of paths");
    if (!seq) return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    PyObject **encoded = PyMem_Calloc((size_t)(n ? n : 1), sizeof(PyObject *));
    const char **names = PyMem_Calloc((size_t)(n ? n : 1), sizeof(char *));
    Slot *slots = PyMem_Calloc((size_t)(n ? n : 1), sizeof(Slot));
    if (!encoded || !names || !slots) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        slots[i].fd = -1;
        if (!PyUnicode_FSConverter(PySequence_Fast_GET_ITEM(seq, i), &encoded[i])) goto done;
        names[i] = PyBytes_AS_STRING(encoded[i]);
    }
    Py_BEGIN_ALLOW_THREADS
    open_all(slots, names, n, max_bytes);
    Py_END_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n; i++) {
        if (slots[i].fd < 0) continue;
        slots[i].data = PyBytes_FromStringAndSize(NULL, slots[i].size + 1);
        if (!slots[i].data) goto done;
    }
    Py_BEGIN_ALLOW_THREADS
    read_all(slots, n, text);
    Py_END_ALLOW_THREADS
    out = PyList_New(n);
    if (!out) goto done;
    for (Py_ssize_t i = 0; i < n; i++) {
        Slot *s = &slots[i];
        PyObject *item;
        if (s->why == OK) {
            if (_PyBytes_Resize(&s->data, s->got) != 0) {
                Py_CLEAR(out);
                goto done;
            }
            item = s->data;
            s->data = NULL;
        } else if (WHY[s->why] != NULL) {
            item = PyUnicode_InternFromString(WHY[s->why]);
            if (!item) {
                Py_CLEAR(out);
                goto done;
            }
        } else {
            item = Py_NewRef(Py_None);
        }
        PyList_SET_ITEM(out, i, item);
    }
done:
    if (slots) {
        for (Py_ssize_t i = 0; i < n; i++) {
            if (slots[i].fd >= 0) close(slots[i].fd);
            Py_XDECREF(slots[i].data);
        }
    }
    if (encoded) {
        for (Py_ssize_t i = 0; i < n; i++) Py_XDECREF(encoded[i]);
    }
    PyMem_Free(slots);
    PyMem_Free(names);
    PyMem_Free(encoded);
    Py_DECREF(seq);
    return out;
}

static PyMethodDef methods[] = {
    {"read", readfiles_read, METH_VARARGS,
     "read(paths, max_bytes, text) -> list of bytes, or the reason a file was not read (None: it grew)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "readfiles", NULL, -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit_readfiles(void) { return PyModule_Create(&module); }
