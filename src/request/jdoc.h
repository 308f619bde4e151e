/* SPDX-License-Identifier: Apache-2.0 */
/*
 * jdoc.h - a request's JSON document as a read-only tree in one arena:
 * what field.c's tables and request.c's handlers walk.
 *
 * Why not jansson's tree: building one allocates a block per value and a
 * hash table per object, and freeing it visits them all again; for a ~2
 * KiB request that was most of forge_prepare's cost (issue 13). Here the
 * values, their child arrays and the strings go into a few large blocks,
 * freed at once.
 *
 * Two readings, one result. The fast reader takes only what it can read
 * byte for byte as jansson (JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL)
 * would: objects (at most FORGE_JDOC_FAST_MEMBERS members, no duplicate
 * key), arrays, strings of valid UTF-8 with the one-character escapes,
 * integers of at most 18 digits, true/false/null, nesting to
 * FORGE_JDOC_FAST_DEPTH, an object at the root, whitespace around. On
 * anything else (an error, \u escapes, reals, long integers, deep nesting)
 * it gives up, and jansson parses the bytes: its error is the error, and
 * its tree is copied into the same shape. test_jdoc.c holds the two to
 * agree (the same tree, member order included, wherever the fast reader
 * does not give up; and it gives up wherever jansson refuses).
 *
 * Threads: none; a document is its caller's.
 */
#ifndef FORGE_JDOC_H
#define FORGE_JDOC_H

#include "base/error.h"

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#define FORGE_JDOC_FAST_DEPTH   64
#define FORGE_JDOC_FAST_MEMBERS 64

typedef enum forge_jv_type {
    FORGE_JV_NULL,
    FORGE_JV_TRUE,
    FORGE_JV_FALSE,
    FORGE_JV_INT,
    FORGE_JV_REAL,
    FORGE_JV_STRING,
    FORGE_JV_ARRAY,
    FORGE_JV_OBJECT,
} forge_jv_type_t;

/* One value. A member of an object carries its key (NUL-terminated, and
 * key_len bytes long: a key may hold NUL). Strings are NUL-terminated
 * too and n bytes long (they may hold NUL: \u0000). */
typedef struct forge_jv {
    forge_jv_type_t type;
    size_t n; /* string: bytes; array, object: members */
    const char *key;
    size_t key_len;
    union {
        const char *s;
        long long i;
        double d;
        struct forge_jv *kids; /* array, object: n values in order */
    } u;
} forge_jv_t;

typedef struct forge_jdoc forge_jdoc_t;

/* Parses len bytes (json_loadb's rules, with JSON_REJECT_DUPLICATES and
 * JSON_ALLOW_NUL). On success *doc is new (forge_jdoc_free); on a parse
 * error FORGE_EINVALID_JSON with jansson's line, column and text. */
forge_rc_t forge_jdoc_parse(const char *buf, size_t len, forge_jdoc_t **doc,
                            forge_error_t *err) FORGE_WARN_UNUSED;

/* The fast reader alone: a new document, or NULL where it gives up. And
 * jansson's reading alone (NULL where jansson refuses). For the tests
 * that hold the two to agree. */
forge_jdoc_t *forge_jdoc_parse_fast(const char *buf, size_t len);
forge_jdoc_t *forge_jdoc_parse_jansson(const char *buf, size_t len);

const forge_jv_t *forge_jdoc_root(const forge_jdoc_t *doc);
void forge_jdoc_free(forge_jdoc_t *doc); /* NULL-safe */

/* ---- reading (each NULL-safe, as jansson's accessors are) --------------- */

static inline bool forge_jv_is(const forge_jv_t *v, forge_jv_type_t t)
{
    return v && v->type == t;
}

static inline bool forge_jv_is_bool(const forge_jv_t *v)
{
    return v && (v->type == FORGE_JV_TRUE || v->type == FORGE_JV_FALSE);
}

static inline bool forge_jv_is_string(const forge_jv_t *v)
{
    return forge_jv_is(v, FORGE_JV_STRING);
}

static inline bool forge_jv_is_object(const forge_jv_t *v)
{
    return forge_jv_is(v, FORGE_JV_OBJECT);
}

static inline bool forge_jv_is_array(const forge_jv_t *v)
{
    return forge_jv_is(v, FORGE_JV_ARRAY);
}

static inline bool forge_jv_is_integer(const forge_jv_t *v)
{
    return forge_jv_is(v, FORGE_JV_INT);
}

static inline bool forge_jv_is_real(const forge_jv_t *v)
{
    return forge_jv_is(v, FORGE_JV_REAL);
}

static inline bool forge_jv_is_true(const forge_jv_t *v)
{
    return forge_jv_is(v, FORGE_JV_TRUE);
}

/* An integer's value (0 for anything else), a real's (0.0), a string's
 * length in bytes (0). */
static inline long long forge_jv_int(const forge_jv_t *v)
{
    return forge_jv_is_integer(v) ? v->u.i : 0;
}

static inline double forge_jv_real(const forge_jv_t *v)
{
    return forge_jv_is_real(v) ? v->u.d : 0.0;
}

static inline size_t forge_jv_len(const forge_jv_t *v)
{
    return forge_jv_is_string(v) ? v->n : 0;
}

/* The string's text, or NULL when v is not a string. */
static inline const char *forge_jv_str(const forge_jv_t *v)
{
    return forge_jv_is(v, FORGE_JV_STRING) ? v->u.s : NULL;
}

/* Members of an array or object; 0 for anything else. */
static inline size_t forge_jv_size(const forge_jv_t *v)
{
    return v && (v->type == FORGE_JV_ARRAY || v->type == FORGE_JV_OBJECT) ? v->n
                                                                          : 0;
}

/* The i-th member (of an array, or of an object in document order). */
static inline const forge_jv_t *forge_jv_at(const forge_jv_t *v, size_t i)
{
    return i < forge_jv_size(v) ? &v->u.kids[i] : NULL;
}

/* The member of object o named key (all of key: strlen(key) bytes), or
 * NULL. */
const forge_jv_t *forge_jv_get(const forge_jv_t *o, const char *key);

#endif
