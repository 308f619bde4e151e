/* SPDX-License-Identifier: Apache-2.0 */
/*
 * jdoc.c - a request's JSON document in one arena (jdoc.h): the fast
 * reader, jansson's reading copied into the same shape, and the arena.
 *
 * The fast reader is recursive descent (depth bounded); an array's or
 * object's members are collected on a scratch stack and copied into the
 * arena in one piece when it closes, so each value's members lie side by
 * side. Strings are copied (NUL-terminated, escapes decoded) into the
 * arena.
 */
#include "request/jdoc.h"
#include "json/document.h"
#include "text/utf8.h"
#include "base/util.h"

#include <jansson.h>
#include <stdalign.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ---- the arena ---------------------------------------------------------- */

/* A ~2 KiB request fits its first block. */
#define CHUNK_MIN (16 * 1024)

typedef struct chunk {
    struct chunk *next;
    size_t used, cap;
    alignas(max_align_t) unsigned char data[];
} chunk_t;

struct forge_jdoc {
    chunk_t *chunks;
    forge_jv_t *root;
};

static void *arena_alloc(forge_jdoc_t *d, size_t n)
{
    chunk_t *c = d->chunks;
    void *p;

    n = (n + alignof(max_align_t) - 1) & ~(alignof(max_align_t) - 1);
    if (!c || c->cap - c->used < n) {
        size_t cap = n > CHUNK_MIN ? n : CHUNK_MIN;
        c = forge_xmalloc(sizeof(*c) + cap);
        c->used = 0;
        c->cap = cap;
        c->next = d->chunks;
        d->chunks = c;
    }
    p = c->data + c->used;
    c->used += n;
    return p;
}

static char *arena_text(forge_jdoc_t *d, const char *s, size_t n)
{
    char *copy = arena_alloc(d, n + 1);

    memcpy(copy, s, n);
    copy[n] = '\0';
    return copy;
}

void forge_jdoc_free(forge_jdoc_t *doc)
{
    if (!doc)
        return;
    for (chunk_t *c = doc->chunks, *next; c; c = next) {
        next = c->next;
        free(c);
    }
    free(doc);
}

const forge_jv_t *forge_jdoc_root(const forge_jdoc_t *doc)
{
    return doc->root;
}

const forge_jv_t *forge_jv_get(const forge_jv_t *o, const char *key)
{
    size_t n;

    if (!forge_jv_is(o, FORGE_JV_OBJECT))
        return NULL;
    n = strlen(key);
    for (size_t i = 0; i < o->n; i++) {
        const forge_jv_t *m = &o->u.kids[i];
        if (m->key_len == n && !memcmp(m->key, key, n))
            return m;
    }
    return NULL;
}

/* ---- the fast reader ---------------------------------------------------- */

typedef struct reader {
    const char *p, *end;
    forge_jdoc_t *doc;
    forge_jv_t *stack; /* members of the arrays and objects still open */
    size_t top, cap;
} reader_t;

static void skip_ws(reader_t *r)
{
    while (r->p < r->end &&
           (*r->p == ' ' || *r->p == '\n' || *r->p == '\r' || *r->p == '\t'))
        r->p++;
}

static void push(reader_t *r, const forge_jv_t *v)
{
    if (r->top == r->cap) {
        r->cap = r->cap ? r->cap * 2 : 64;
        r->stack = forge_xrealloc(r->stack, r->cap * sizeof(*r->stack));
    }
    r->stack[r->top++] = *v;
}

/* The one-character escapes' meanings (0: not one of them). */
static char unescape(char c)
{
    static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
    const char *at = c ? strchr(from, c) : NULL;

    return at ? to[at - from] : 0;
}

/* A string from just after its opening quote: its text in the arena. */
static bool read_string(reader_t *r, const char **s, size_t *n)
{
    const char *start = r->p, *q = r->p;
    size_t escapes = 0;
    char *out;

    while (q < r->end && *q != '"') {
        unsigned char c = (unsigned char)*q;
        if (c < 0x20)
            return false;
        if (c == '\\') {
            if (q + 1 >= r->end || !unescape(q[1]))
                return false;
            q += 2;
            escapes++;
        } else if (c < 0x80) {
            q++;
        } else {
            size_t len =
                forge_utf8_len((const unsigned char *)q, (size_t)(r->end - q));
            if (!len)
                return false;
            q += len;
        }
    }
    if (q >= r->end)
        return false;
    r->p = q + 1;
    *n = (size_t)(q - start) - escapes;
    if (!escapes) {
        *s = arena_text(r->doc, start, *n);
        return true;
    }
    out = arena_alloc(r->doc, *n + 1);
    *s = out;
    for (const char *i = start; i < q; i++)
        *out++ = *i == '\\' ? unescape(*++i) : *i;
    *out = '\0';
    return true;
}

/* A plain integer: -?(0|[1-9][0-9]*), at most 18 digits, no fraction or
 * exponent (those are jansson's to read). */
static bool read_number(reader_t *r, forge_jv_t *v)
{
    bool minus = *r->p == '-';
    const char *q = r->p + minus, *digits = q;
    long long i = 0;

    while (q < r->end && *q >= '0' && *q <= '9')
        q++;
    if (q == digits || q - digits > 18 || (*digits == '0' && q - digits > 1))
        return false;
    for (const char *d = digits; d < q; d++)
        i = i * 10 + (*d - '0');
    if (q < r->end && (*q == '.' || *q == 'e' || *q == 'E'))
        return false;
    r->p = q;
    v->type = FORGE_JV_INT;
    v->u.i = minus ? -i : i;
    return true;
}

static bool read_word(reader_t *r, forge_jv_t *v)
{
    static const struct {
        const char *word;
        size_t n;
        forge_jv_type_t type;
    } words[] = {{"true", 4, FORGE_JV_TRUE},
                 {"false", 5, FORGE_JV_FALSE},
                 {"null", 4, FORGE_JV_NULL}};

    for (size_t k = 0; k < sizeof(words) / sizeof(words[0]); k++) {
        if ((size_t)(r->end - r->p) >= words[k].n &&
            !memcmp(r->p, words[k].word, words[k].n)) {
            r->p += words[k].n;
            v->type = words[k].type;
            return true;
        }
    }
    return false;
}

static bool read_value(reader_t *r, forge_jv_t *v, int depth);

/* The members pushed since base into the arena as v's, in order. */
static void close_members(reader_t *r, size_t base, forge_jv_t *v)
{
    v->n = r->top - base;
    v->u.kids = NULL;
    if (v->n) {
        v->u.kids = arena_alloc(r->doc, v->n * sizeof(forge_jv_t));
        memcpy(v->u.kids, r->stack + base, v->n * sizeof(forge_jv_t));
    }
    r->top = base;
}

static bool duplicate_key(const reader_t *r, size_t base, const char *key,
                          size_t n)
{
    for (size_t i = base; i < r->top; i++)
        if (r->stack[i].key_len == n && !memcmp(r->stack[i].key, key, n))
            return true;
    return false;
}

/* After '[' or '{': the members up to the closing bracket. */
static bool read_members(reader_t *r, forge_jv_t *v, bool object, int depth)
{
    char close = object ? '}' : ']';
    size_t base = r->top;

    skip_ws(r);
    if (r->p < r->end && *r->p == close) {
        r->p++;
        close_members(r, base, v);
        return true;
    }
    for (;;) {
        forge_jv_t m = {0};
        skip_ws(r);
        if (object) {
            if (r->p >= r->end || *r->p != '"')
                return false;
            r->p++;
            if (!read_string(r, &m.key, &m.key_len) ||
                r->top - base >= FORGE_JDOC_FAST_MEMBERS ||
                duplicate_key(r, base, m.key, m.key_len))
                return false;
            skip_ws(r);
            if (r->p >= r->end || *r->p++ != ':')
                return false;
        }
        if (!read_value(r, &m, depth + 1))
            return false;
        push(r, &m);
        skip_ws(r);
        if (r->p >= r->end)
            return false;
        if (*r->p == close)
            break;
        if (*r->p++ != ',')
            return false;
    }
    r->p++;
    close_members(r, base, v);
    return true;
}

/* One value, whitespace before it skipped; v's key is left as it is. */
static bool read_value(reader_t *r, forge_jv_t *v, int depth)
{
    skip_ws(r);
    if (r->p >= r->end || depth > FORGE_JDOC_FAST_DEPTH)
        return false;
    switch (*r->p) {
    case '{':
    case '[':
        v->type = *r->p == '{' ? FORGE_JV_OBJECT : FORGE_JV_ARRAY;
        r->p++;
        return read_members(r, v, v->type == FORGE_JV_OBJECT, depth);
    case '"':
        r->p++;
        v->type = FORGE_JV_STRING;
        return read_string(r, &v->u.s, &v->n);
    case '-':
    case '0':
    case '1':
    case '2':
    case '3':
    case '4':
    case '5':
    case '6':
    case '7':
    case '8':
    case '9':
        return read_number(r, v);
    default:
        return read_word(r, v);
    }
}

forge_jdoc_t *forge_jdoc_parse_fast(const char *buf, size_t len)
{
    reader_t r = {buf,  buf + len, forge_xcalloc(1, sizeof(forge_jdoc_t)),
                  NULL, 0,         0};
    forge_jv_t *root = arena_alloc(r.doc, sizeof(*root));
    bool ok;

    memset(root, 0, sizeof(*root));
    skip_ws(&r);
    ok = r.p < r.end && *r.p == '{' && read_value(&r, root, 1);
    skip_ws(&r);
    free(r.stack);
    if (!ok || r.p != r.end) {
        forge_jdoc_free(r.doc);
        return NULL;
    }
    r.doc->root = root;
    return r.doc;
}

/* ---- jansson's reading, in the same shape ------------------------------- */

static void copy_json(forge_jdoc_t *d, const json_t *j, forge_jv_t *v);

static void copy_members(forge_jdoc_t *d, const json_t *j, forge_jv_t *v)
{
    size_t i = 0;

    v->n = json_is_array(j) ? json_array_size(j) : json_object_size(j);
    v->u.kids = v->n ? arena_alloc(d, v->n * sizeof(forge_jv_t)) : NULL;
    if (json_is_array(j)) {
        for (i = 0; i < v->n; i++) {
            memset(&v->u.kids[i], 0, sizeof(forge_jv_t));
            copy_json(d, json_array_get(j, i), &v->u.kids[i]);
        }
        return;
    }
    for (void *it = json_object_iter((json_t *)j); it;
         it = json_object_iter_next((json_t *)j, it), i++) {
        forge_jv_t *m = &v->u.kids[i];
        memset(m, 0, sizeof(*m));
        m->key_len = json_object_iter_key_len(it);
        m->key = arena_text(d, json_object_iter_key(it), m->key_len);
        copy_json(d, json_object_iter_value(it), m);
    }
}

static void copy_json(forge_jdoc_t *d, const json_t *j, forge_jv_t *v)
{
    switch (json_typeof(j)) {
    case JSON_OBJECT:
    case JSON_ARRAY:
        v->type = json_is_object(j) ? FORGE_JV_OBJECT : FORGE_JV_ARRAY;
        copy_members(d, j, v);
        break;
    case JSON_STRING:
        v->type = FORGE_JV_STRING;
        v->n = json_string_length(j);
        v->u.s = arena_text(d, json_string_value(j), v->n);
        break;
    case JSON_INTEGER:
        v->type = FORGE_JV_INT;
        v->u.i = json_integer_value(j);
        break;
    case JSON_REAL:
        v->type = FORGE_JV_REAL;
        v->u.d = json_real_value(j);
        break;
    case JSON_TRUE:
        v->type = FORGE_JV_TRUE;
        break;
    case JSON_FALSE:
        v->type = FORGE_JV_FALSE;
        break;
    case JSON_NULL:
        v->type = FORGE_JV_NULL;
        break;
    }
}

static forge_jdoc_t *from_json(const json_t *root)
{
    forge_jdoc_t *d = forge_xcalloc(1, sizeof(*d));

    d->root = arena_alloc(d, sizeof(*d->root));
    memset(d->root, 0, sizeof(*d->root));
    copy_json(d, root, d->root);
    return d;
}

forge_jdoc_t *forge_jdoc_parse_jansson(const char *buf, size_t len)
{
    json_t *root = NULL;
    forge_jdoc_t *d;

    if (forge_document_parse(buf, len, JSON_ALLOW_NUL, &root, NULL))
        return NULL;
    d = from_json(root);
    json_decref(root);
    return d;
}

forge_rc_t forge_jdoc_parse(const char *buf, size_t len, forge_jdoc_t **doc,
                            forge_error_t *err)
{
    json_t *root = NULL;
    forge_rc_t rc;

    if ((*doc = forge_jdoc_parse_fast(buf, len)))
        return FORGE_OK;
    if ((rc = forge_document_parse(buf, len, JSON_ALLOW_NUL, &root, err)))
        return rc;
    *doc = from_json(root);
    json_decref(root);
    return FORGE_OK;
}
