/*
 * The questions the auto check asks of every text, answered in one pass each.
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
 * distinct_tokens(table, text, numbers) -> list[str]
 *     The different words of text, in the order of their first appearance: what
 *     list(dict.fromkeys(tokens(table, text, numbers))) returns, without making a string of
 *     each repeat.
 *
 * to_units(text) -> str
 *     The text as JavaScript indexes it: each astral character as its surrogate pair.
 *
 * flatten(text) -> str
 *     text.replace(" \n", "\n"), then every run of "\n" and " " that starts with "\n" made one
 *     space, then spaces stripped from both ends: the deliverable on one line.
 *
 * has_ascii_ci(text, needles) -> bool
 *     Whether one of the lowercase ASCII needles occurs in text, ASCII letters matched in
 *     either case (and no other character folded).
 *
 * lower(table, mapping, text) -> str
 *     JavaScript's toLowerCase() at the table's Unicode version: ASCII letters lowered in
 *     place, a character with the table's LOWERS bit replaced by mapping[ord(c)] (its full
 *     lowercase mapping, a str), the capital sigma by its final form where Unicode's
 *     Final_Sigma holds (a cased letter before it and none after it, case-ignorable
 *     characters skipped), every other character kept.
 *
 * find_all(text, needles) -> int
 *     Which of the (at most 64, non-empty ASCII) needles occur in text, exactly: bit k set
 *     when needles[k] in text. One pass over the text for all of them.
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
#define CASED_BIT 0x800
#define CASE_IGNORABLE_BIT 0x1000
#define LOWERS_BIT 0x2000
#define CAPITAL_SIGMA 0x3A3

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

/* The end of the word at i, or -1 when no word starts there (the loop of tokens()). */
static Py_ssize_t token_end(const Text *t, Py_ssize_t i, int numbers)
{
    Py_UCS4 c = at(t, i);
    unsigned int b = bits(t, c);
    Py_ssize_t end = -1;
    if (numbers && (b & NUMBER_BIT))
        end = number_end(t, i);
    if (end < 0 && (b & CJK_BIT))
        end = i + 1;
    if (end < 0 && is_alnum(t, c))
        end = word_end(t, i);
    return end;
}

typedef struct {
    Py_ssize_t start, len;
    Py_uhash_t hash;
} Seen;

static int same(const Text *t, const Seen *a, Py_ssize_t start, Py_ssize_t len)
{
    if (a->len != len)
        return 0;
    for (Py_ssize_t k = 0; k < len; k++)
        if (at(t, a->start + k) != at(t, start + k))
            return 0;
    return 1;
}

static PyObject *distinct_tokens(PyObject *self, PyObject *args)
{
    PyObject *text;
    Py_buffer table;
    int numbers;
    if (!PyArg_ParseTuple(args, "y*Up:distinct_tokens", &table, &text, &numbers))
        return NULL;
    Text t;
    if (open_text(&t, text, &table) < 0)
        return NULL;
    /* An open-addressing set of the words seen (where each first occurs), at most half full. */
    Py_ssize_t cap = 64, used = 0;
    Seen *seen = PyMem_Calloc(cap, sizeof(Seen));
    PyObject *out = seen == NULL ? NULL : PyList_New(0);
    Py_ssize_t i = 0;
    while (out != NULL && i < t.n) {
        Py_ssize_t end = token_end(&t, i, numbers);
        if (end < 0) {
            i++;
            continue;
        }
        Py_uhash_t h = 14695981039346656037ULL; /* FNV-1a over the code points */
        for (Py_ssize_t k = i; k < end; k++)
            h = (h ^ at(&t, k)) * 1099511628211ULL;
        Py_ssize_t slot = h & (cap - 1);
        while (seen[slot].len && !(seen[slot].hash == h && same(&t, &seen[slot], i, end - i)))
            slot = (slot + 1) & (cap - 1);
        if (!seen[slot].len) {
            PyObject *word = PyUnicode_Substring(text, i, end);
            if (word == NULL || PyList_Append(out, word) < 0)
                Py_CLEAR(out);
            Py_XDECREF(word);
            seen[slot] = (Seen){i, end - i, h};
            if (++used * 2 > cap) {
                Py_ssize_t bigger = cap * 4;
                Seen *grown = PyMem_Calloc(bigger, sizeof(Seen));
                if (grown == NULL) {
                    PyErr_NoMemory();
                    Py_CLEAR(out);
                } else {
                    for (Py_ssize_t k = 0; k < cap; k++) {
                        if (!seen[k].len)
                            continue;
                        Py_ssize_t to = seen[k].hash & (bigger - 1);
                        while (grown[to].len)
                            to = (to + 1) & (bigger - 1);
                        grown[to] = seen[k];
                    }
                    PyMem_Free(seen);
                    seen = grown;
                    cap = bigger;
                }
            }
        }
        i = end;
    }
    if (seen == NULL)
        PyErr_NoMemory();
    PyMem_Free(seen);
    PyBuffer_Release(&table);
    return out;
}

static PyObject *to_units(PyObject *self, PyObject *text)
{
    if (!PyUnicode_Check(text)) {
        PyErr_SetString(PyExc_TypeError, "to_units() takes a str");
        return NULL;
    }
    if (PyUnicode_KIND(text) != PyUnicode_4BYTE_KIND) /* nothing beyond the BMP */
        return Py_NewRef(text);
    const Py_UCS4 *p = PyUnicode_4BYTE_DATA(text);
    Py_ssize_t n = PyUnicode_GET_LENGTH(text), astral = 0;
    for (Py_ssize_t i = 0; i < n; i++)
        astral += p[i] > 0xFFFF;
    if (!astral) /* a wide string holding no astral character (a lone surrogate is not one) */
        return Py_NewRef(text);
    /* Every character of the result is in the BMP and the surrogates are above Latin-1: the
     * result's kind is two bytes. */
    PyObject *out = PyUnicode_New(n + astral, 0xFFFF);
    if (out == NULL)
        return NULL;
    Py_UCS2 *q = PyUnicode_2BYTE_DATA(out);
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_UCS4 c = p[i];
        if (c > 0xFFFF) {
            c -= 0x10000;
            *q++ = (Py_UCS2)(0xD800 + (c >> 10));
            *q++ = (Py_UCS2)(0xDC00 + (c & 0x3FF));
        } else {
            *q++ = (Py_UCS2)c;
        }
    }
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

/* Unicode's Final_Sigma for the capital sigma at i: a cased character before it and none after
 * it, case-ignorable characters skipped on both sides. */
static int final_sigma(const Text *t, Py_ssize_t i)
{
    Py_ssize_t j = i - 1;
    while (j >= 0 && (bits(t, at(t, j)) & CASE_IGNORABLE_BIT))
        j--;
    if (j < 0 || !(bits(t, at(t, j)) & CASED_BIT))
        return 0;
    Py_ssize_t k = i + 1;
    while (k < t->n && (bits(t, at(t, k)) & CASE_IGNORABLE_BIT))
        k++;
    return k == t->n || !(bits(t, at(t, k)) & CASED_BIT);
}

/* The output of lower(): the input's kind (no mapping widens a character past it; a test
 * checks the data), grown when a mapping is longer than one character. */
typedef struct {
    int kind;
    Py_UCS4 max;
    void *buf;
    Py_ssize_t m, cap;
} Out;

static int put(Out *o, Py_UCS4 c)
{
    if (c > o->max) {
        PyErr_SetString(PyExc_ValueError, "a lowercase mapping is wider than the text");
        return -1;
    }
    if (o->m == o->cap) {
        Py_ssize_t cap = 2 * o->cap + 16;
        void *buf = PyMem_Realloc(o->buf, cap * o->kind);
        if (buf == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        o->buf = buf;
        o->cap = cap;
    }
    PyUnicode_WRITE(o->kind, o->buf, o->m++, c);
    return 0;
}

/* The character at i lowercased through the mapping or the final sigma rule (its LOWERS bit is
 * set). */
static int put_mapped(Out *o, const Text *t, PyObject *mapping, Py_UCS4 c, Py_ssize_t i)
{
    if (c == CAPITAL_SIGMA)
        return put(o, final_sigma(t, i) ? 0x3C2 : 0x3C3);
    PyObject *key = PyLong_FromUnsignedLong(c);
    if (key == NULL)
        return -1;
    PyObject *to = PyDict_GetItemWithError(mapping, key); /* borrowed */
    Py_DECREF(key);
    if (to == NULL)
        return PyErr_Occurred() ? -1 : put(o, c);
    if (!PyUnicode_Check(to)) {
        PyErr_SetString(PyExc_TypeError, "mapping values must be str");
        return -1;
    }
    for (Py_ssize_t k = 0; k < PyUnicode_GET_LENGTH(to); k++)
        if (put(o, PyUnicode_READ_CHAR(to, k)) < 0)
            return -1;
    return 0;
}

#define LOWER_LOOP(TYPE)                                                                   \
    {                                                                                      \
        const TYPE *p = t.data;                                                            \
        TYPE *q = o.buf;                                                                   \
        for (i = 0; i < t.n; i++) {                                                        \
            Py_UCS4 c = p[i];                                                              \
            if (c < 128) {                                                                 \
                if (o.m == o.cap)                                                          \
                    break;                                                                 \
                q[o.m++] = (TYPE)((c >= 'A' && c <= 'Z') ? c + 32 : c);                    \
            } else if (!(bits(&t, c) & LOWERS_BIT)) {                                      \
                if (o.m == o.cap)                                                          \
                    break;                                                                 \
                q[o.m++] = p[i];                                                           \
            } else {                                                                       \
                if (put_mapped(&o, &t, mapping, c, i) < 0)                                 \
                    goto fail;                                                             \
                q = o.buf;                                                                 \
            }                                                                              \
        }                                                                                  \
        break;                                                                             \
    }

static PyObject *lower(PyObject *self, PyObject *args)
{
    PyObject *text, *mapping;
    Py_buffer table;
    if (!PyArg_ParseTuple(args, "y*O!U:lower", &table, &PyDict_Type, &mapping, &text))
        return NULL;
    Text t;
    if (open_text(&t, text, &table) < 0)
        return NULL;
    Out o = {t.kind, t.kind == PyUnicode_1BYTE_KIND   ? 0xFF
                     : t.kind == PyUnicode_2BYTE_KIND ? 0xFFFF
                                                      : 0x10FFFF,
             NULL, 0, t.n + 16};
    o.buf = PyMem_Malloc(o.cap * o.kind);
    if (o.buf == NULL) {
        PyBuffer_Release(&table);
        return PyErr_NoMemory();
    }
    Py_ssize_t i = 0;
    /* A loop per width, with room for one character per character; a longer mapping grows
     * the buffer in put(), and a full buffer ends the loop for the general one below. */
    switch (t.kind) {
    case PyUnicode_1BYTE_KIND:
        LOWER_LOOP(Py_UCS1)
    case PyUnicode_2BYTE_KIND:
        LOWER_LOOP(Py_UCS2)
    default:
        LOWER_LOOP(Py_UCS4)
    }
    for (; i < t.n; i++) {
        Py_UCS4 c = at(&t, i);
        int failed = c < 128 ? put(&o, (c >= 'A' && c <= 'Z') ? c + 32 : c)
                     : (bits(&t, c) & LOWERS_BIT) ? put_mapped(&o, &t, mapping, c, i)
                                                  : put(&o, c);
        if (failed < 0)
            goto fail;
    }
    PyBuffer_Release(&table);
    /* FromKindAndData finds the narrowest kind again (a Kelvin sign lowers to ASCII "k"). */
    PyObject *result = PyUnicode_FromKindAndData(o.kind, o.buf, o.m);
    PyMem_Free(o.buf);
    return result;
fail:
    PyBuffer_Release(&table);
    PyMem_Free(o.buf);
    return NULL;
}

/* One pass: at each ASCII character that starts a needle, the one-character needles are found,
 * and where the next character may continue one, the longer needles starting there compared. */
#define FIND_ALL_LOOP(TYPE)                                                                \
    {                                                                                      \
        const TYPE *p = data;                                                              \
        for (Py_ssize_t i = 0; i < n && found != all; i++) {                               \
            Py_UCS4 a = p[i];                                                              \
            if (a >= 128 || !first[a])                                                     \
                continue;                                                                  \
            found |= single[a];                                                            \
            if (i + 1 == n)                                                                \
                break;                                                                     \
            Py_UCS4 b = p[i + 1];                                                          \
            if (b >= 128 || !(second[a][b >> 6] >> (b & 63) & 1))                         \
                continue;                                                                  \
            for (uint64_t c = first[a] & ~single[a] & ~found; c; c &= c - 1) {            \
                int k = __builtin_ctzll(c);                                                \
                Py_ssize_t len = lens[k], j = 1;                                           \
                if (i + len > n)                                                           \
                    continue;                                                              \
                while (j < len && p[i + j] == words[k][j])                                 \
                    j++;                                                                   \
                if (j == len)                                                              \
                    found |= (uint64_t)1 << k;                                             \
            }                                                                              \
        }                                                                                  \
        break;                                                                             \
    }

static PyObject *find_all(PyObject *self, PyObject *args)
{
    PyObject *text, *needles;
    if (!PyArg_ParseTuple(args, "UO!:find_all", &text, &PyTuple_Type, &needles))
        return NULL;
    Py_ssize_t count = PyTuple_GET_SIZE(needles);
    if (count > 64) {
        PyErr_SetString(PyExc_ValueError, "at most 64 needles");
        return NULL;
    }
    /* first[a]: the needles that start with a; single[a]: those that are a alone; second[a]:
     * the characters that follow a in the longer ones (a bit set of ASCII). */
    uint64_t first[128] = {0}, second[128][2] = {{0}}, single[128] = {0}, all = 0, found = 0;
    const Py_UCS1 *words[64];
    Py_ssize_t lens[64];
    for (Py_ssize_t k = 0; k < count; k++) {
        PyObject *needle = PyTuple_GET_ITEM(needles, k);
        if (!PyUnicode_Check(needle) || !PyUnicode_IS_ASCII(needle) ||
            PyUnicode_GET_LENGTH(needle) == 0) {
            PyErr_SetString(PyExc_ValueError, "needles must be non-empty ASCII str");
            return NULL;
        }
        words[k] = PyUnicode_1BYTE_DATA(needle);
        lens[k] = PyUnicode_GET_LENGTH(needle);
        uint64_t bit = (uint64_t)1 << k;
        Py_UCS1 a = words[k][0];
        first[a] |= bit;
        all |= bit;
        if (lens[k] == 1) {
            single[a] |= bit;
        } else {
            Py_UCS1 b = words[k][1];
            second[a][b >> 6] |= (uint64_t)1 << (b & 63);
        }
    }
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    switch (kind) {
    case PyUnicode_1BYTE_KIND:
        FIND_ALL_LOOP(Py_UCS1)
    case PyUnicode_2BYTE_KIND:
        FIND_ALL_LOOP(Py_UCS2)
    default:
        FIND_ALL_LOOP(Py_UCS4)
    }
    return PyLong_FromUnsignedLongLong(found);
}

static PyMethodDef methods[] = {
    {"classes", classes, METH_VARARGS, "classes(table, text): the class bits of text (BMP | astral << 16)."},
    {"tokens", tokens, METH_VARARGS, "tokens(table, text, numbers): the words of text."},
    {"distinct_tokens", distinct_tokens, METH_VARARGS, "distinct_tokens(table, text, numbers): the different words, first first."},
    {"to_units", to_units, METH_O, "to_units(text): astral characters as surrogate pairs."},
    {"flatten", flatten, METH_O, "flatten(text): the text on one line (see the module comment)."},
    {"has_ascii_ci", has_ascii_ci, METH_VARARGS, "has_ascii_ci(text, needles): a needle, any case."},
    {"lower", lower, METH_VARARGS, "lower(table, mapping, text): toLowerCase() (see the module comment)."},
    {"find_all", find_all, METH_VARARGS, "find_all(text, needles): bit k set where needles[k] occurs."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_speedups", "One-pass character classes, words, lowercasing and literal search.", -1, methods,
};

PyMODINIT_FUNC PyInit__speedups(void) { return PyModule_Create(&module); }
