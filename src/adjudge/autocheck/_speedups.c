/*
 * The two questions the auto check asks of every text, answered in one pass each.
 *
 * table is 16 bits of character classes per code point (an array('H') of 0x110000 entries).
 *
 * classes(table, text) -> int
 *     The OR of table[ord(c)] over the BMP characters of text, and above it (shifted left by 16)
 *     the OR over its astral characters: which character classes occur, and whether in the
 *     astral planes (curly apostrophes, invisibles, marks, ...). ``re`` scans once per class.
 *
 * tokens(table, text, numbers) -> list[str]
 *     The words of text, exactly as ``re.findall`` finds them with
 *         NUM+(?:[.,]NUM+)+(?![^\W_])|CJK|[^\W_]+(?:['-][^\W_]+)*     (numbers true)
 *         CJK|[^\W_]+(?:['-][^\W_]+)*                                  (numbers false)
 *     where NUM and CJK are table bits and [^\W_] (a letter or digit, \p{L} or \p{N}) is an
 *     ASCII letter or digit or the table's ALNUM bit: Unicode 17.0, whatever the interpreter's.
 *
 * flatten(text) -> str
 *     text.replace(" \n", "\n"), then every run of "\n" and " " that starts with "\n" made one
 *     space, then spaces stripped from both ends: the deliverable on one line.
 *
 * has_ascii_ci(text, needles) -> bool
 *     Whether one of the lowercase ASCII needles occurs in text, ASCII letters matched in
 *     either case (and no other character folded).
 *
 * adjudge.autocheck.chars holds the same functions in ``re``, used where this module was not
 * built; tests/autocheck/test_chars.py proves the two equal.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>

#define NUMBER_BIT 0x40
#define CJK_BIT 0x80
#define ALNUM_BIT 0x100

typedef struct {
    int kind;
    const void *data;
    Py_ssize_t n;
    const uint16_t *table;
    Py_ssize_t table_len;
} Text;

static inline Py_UCS4 at(const Text *t, Py_ssize_t i) { return PyUnicode_READ(t->kind, t->data, i); }

static inline unsigned int bits(const Text *t, Py_UCS4 c)
{
    return (Py_ssize_t)c < t->table_len ? t->table[c] : 0;
}

/* A letter or digit: ASCII answered without a lookup, the rest by the table's ALNUM bit. */
static inline int is_alnum(const Text *t, Py_UCS4 c)
{
    if (c < 128)
        return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z');
    return (bits(t, c) & ALNUM_BIT) != 0;
}

static inline int alnum(const Text *t, Py_ssize_t i) { return i < t->n && is_alnum(t, at(t, i)); }

static inline int number(const Text *t, Py_ssize_t i)
{
    return i < t->n && (bits(t, at(t, i)) & NUMBER_BIT);
}

static Py_ssize_t number_run(const Text *t, Py_ssize_t i)
{
    while (number(t, i))
        i++;
    return i;
}

/* End of NUM+(?:[.,]NUM+)+(?![^\W_]) from i (a NUM), or -1. Every NUM is alnum (a test checks
 * it), so a run cut short is followed by an alnum and fails: only whole runs can end a match,
 * and backtracking settles on the most groups whose end is not followed by an alnum. */
static Py_ssize_t number_end(const Text *t, Py_ssize_t i)
{
    Py_ssize_t j = number_run(t, i), best = -1;
    while (j + 1 < t->n) {
        Py_UCS4 c = at(t, j);
        if ((c != '.' && c != ',') || !number(t, j + 1))
            break;
        j = number_run(t, j + 1);
        if (!alnum(t, j))
            best = j;
    }
    return best;
}

/* End of [^\W_]+(?:['-][^\W_]+)* from i (an alnum). */
static Py_ssize_t word_end(const Text *t, Py_ssize_t i)
{
    Py_ssize_t j = i;
    for (;;) {
        while (alnum(t, j))
            j++;
        if (j + 1 < t->n && (at(t, j) == '\'' || at(t, j) == '-') && alnum(t, j + 1))
            j++;
        else
            return j;
    }
}

static int open_text(Text *t, PyObject *text, Py_buffer *table)
{
    if (table->len % 2) {
        PyErr_SetString(PyExc_TypeError, "table must hold 16-bit entries (an array('H'))");
        PyBuffer_Release(table);
        return -1;
    }
    t->kind = PyUnicode_KIND(text);
    t->data = PyUnicode_DATA(text);
    t->n = PyUnicode_GET_LENGTH(text);
    t->table = table->buf;
    t->table_len = table->len / 2;
    return 0;
}

static PyObject *classes(PyObject *self, PyObject *args)
{
    PyObject *text;
    Py_buffer table;
    if (!PyArg_ParseTuple(args, "y*U:classes", &table, &text))
        return NULL;
    Text t;
    if (open_text(&t, text, &table) < 0)
        return NULL;
    unsigned long acc = 0;
    Py_ssize_t i;
    switch (t.kind) { /* one loop per width: the hot loop has no branch on the kind */
    case PyUnicode_1BYTE_KIND: {
        const Py_UCS1 *p = t.data;
        for (i = 0; i < t.n; i++)
            acc |= bits(&t, p[i]);
        break;
    }
    case PyUnicode_2BYTE_KIND: {
        const Py_UCS2 *p = t.data;
        for (i = 0; i < t.n; i++)
            acc |= bits(&t, p[i]);
        break;
    }
    default: {
        const Py_UCS4 *p = t.data;
        unsigned long astral = 0;
        for (i = 0; i < t.n; i++) {
            if (p[i] > 0xFFFF)
                astral |= bits(&t, p[i]);
            else
                acc |= bits(&t, p[i]);
        }
        acc |= astral << 16;
    }
    }
    PyBuffer_Release(&table);
    return PyLong_FromUnsignedLong(acc);
}

static PyObject *tokens(PyObject *self, PyObject *args)
{
    PyObject *text;
    Py_buffer table;
    int numbers;
    if (!PyArg_ParseTuple(args, "y*Up:tokens", &table, &text, &numbers))
        return NULL;
    Text t;
    if (open_text(&t, text, &table) < 0)
        return NULL;
    PyObject *out = PyList_New(0);
    Py_ssize_t i = 0;
    while (out != NULL && i < t.n) {
        Py_UCS4 c = at(&t, i);
        unsigned int b = bits(&t, c);
        Py_ssize_t end = -1;
        if (numbers && (b & NUMBER_BIT))
            end = number_end(&t, i);
        if (end < 0 && (b & CJK_BIT))
            end = i + 1;
        if (end < 0 && is_alnum(&t, c))
            end = word_end(&t, i);
        if (end < 0) {
            i++;
            continue;
        }
        PyObject *word = PyUnicode_Substring(text, i, end);
        if (word == NULL || PyList_Append(out, word) < 0)
            Py_CLEAR(out);
        Py_XDECREF(word);
        i = end;
    }
    PyBuffer_Release(&table);
    return out;
}

static PyObject *flatten(PyObject *self, PyObject *text)
{
    if (!PyUnicode_Check(text)) {
        PyErr_SetString(PyExc_TypeError, "flatten() takes a str");
        return NULL;
    }
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    Py_ssize_t n = PyUnicode_GET_LENGTH(text), i = 0, m = 0;
    void *out = PyMem_Malloc(n ? n * kind : 1);
    if (out == NULL)
        return PyErr_NoMemory();
    while (i < n) {
        Py_UCS4 c = PyUnicode_READ(kind, data, i);
        if (c == '\n') {
            while (i < n && (PyUnicode_READ(kind, data, i) == '\n' || PyUnicode_READ(kind, data, i) == ' '))
                i++;
            PyUnicode_WRITE(kind, out, m++, ' ');
            continue;
        }
        if (!(c == ' ' && i + 1 < n && PyUnicode_READ(kind, data, i + 1) == '\n'))
            PyUnicode_WRITE(kind, out, m++, c);
        i++;
    }
    Py_ssize_t start = 0;
    while (start < m && PyUnicode_READ(kind, out, start) == ' ')
        start++;
    while (m > start && PyUnicode_READ(kind, out, m - 1) == ' ')
        m--;
    /* FromKindAndData finds the narrowest kind again (only spaces and line breaks are gone). */
    PyObject *result = PyUnicode_FromKindAndData(
        kind, (const char *)out + start * kind, m - start);
    PyMem_Free(out);
    return result;
}

static inline Py_UCS4 ascii_lower(Py_UCS4 c) { return (c >= 'A' && c <= 'Z') ? c + 32 : c; }

/* Whether the lowercase ASCII needle w (len >= 1) occurs in p[0:n], ASCII letters in any case:
 * a tight loop for its first character, then the rest compared. */
#define FIND_CI(TYPE)                                                                      \
    {                                                                                      \
        const TYPE *p = data;                                                              \
        Py_UCS4 first = w[0], upper = first >= 'a' && first <= 'z' ? first - 32 : first;   \
        for (Py_ssize_t i = 0; i + len <= n; i++) {                                        \
            if (p[i] != first && p[i] != upper)                                            \
                continue;                                                                  \
            Py_ssize_t j = 1;                                                              \
            while (j < len && ascii_lower(p[i + j]) == w[j])                               \
                j++;                                                                       \
            if (j == len)                                                                  \
                return 1;                                                                  \
        }                                                                                  \
        return 0;                                                                          \
    }

static int find_ci(int kind, const void *data, Py_ssize_t n, const Py_UCS1 *w, Py_ssize_t len)
{
    switch (kind) {
    case PyUnicode_1BYTE_KIND:
        FIND_CI(Py_UCS1)
    case PyUnicode_2BYTE_KIND:
        FIND_CI(Py_UCS2)
    default:
        FIND_CI(Py_UCS4)
    }
}

static PyObject *has_ascii_ci(PyObject *self, PyObject *args)
{
    PyObject *text, *needles;
    if (!PyArg_ParseTuple(args, "UO!:has_ascii_ci", &text, &PyTuple_Type, &needles))
        return NULL;
    for (Py_ssize_t k = 0; k < PyTuple_GET_SIZE(needles); k++) {
        PyObject *needle = PyTuple_GET_ITEM(needles, k);
        if (!PyUnicode_Check(needle) || !PyUnicode_IS_ASCII(needle)) {
            PyErr_SetString(PyExc_ValueError, "needles must be ASCII str");
            return NULL;
        }
        Py_ssize_t len = PyUnicode_GET_LENGTH(needle);
        if (len == 0 || find_ci(PyUnicode_KIND(text), PyUnicode_DATA(text),
                                PyUnicode_GET_LENGTH(text), PyUnicode_1BYTE_DATA(needle), len))
            Py_RETURN_TRUE;
    }
    Py_RETURN_FALSE;
}

static PyMethodDef methods[] = {
    {"classes", classes, METH_VARARGS, "classes(table, text): the class bits of text (BMP | astral << 16)."},
    {"tokens", tokens, METH_VARARGS, "tokens(table, text, numbers): the words of text."},
    {"flatten", flatten, METH_O, "flatten(text): the text on one line (see the module comment)."},
    {"has_ascii_ci", has_ascii_ci, METH_VARARGS, "has_ascii_ci(text, needles): a needle, any case."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_speedups", "One-pass character classes and words.", -1, methods,
};

PyMODINIT_FUNC PyInit__speedups(void) { return PyModule_Create(&module); }
