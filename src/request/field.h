/* SPDX-License-Identifier: Apache-2.0 */
/*
 * field.h - the table-driven JSON object parser every request shape is
 * written in (request.c holds the tables): one row per field says its key,
 * type, where it lands in the target struct, whether it is required, its
 * bounds, character pattern and string rules, and the error code of a
 * violation; forge_field_parse_table walks a row table over one JSON
 * object. Fields with rules of their own (arrays, maps, nested objects)
 * have a custom handler. Errors name the JSON path of what broke the rule
 * ("$.pools[0].name must match ..."), kept in a forge_field_path_t as the
 * walk goes down and back up.
 */
#ifndef FORGE_FIELD_H
#define FORGE_FIELD_H

#include "base/error.h"

#include "request/jdoc.h"
#include <stdbool.h>
#include <stddef.h>

/* ---- JSON paths ------------------------------------------------------- */

/* "$", then ".key" and "[i]" segments (cut at FORGE_ERROR_FIELD_MAX). */
typedef struct forge_field_path {
    char buf[FORGE_ERROR_FIELD_MAX];
    size_t len;
} forge_field_path_t;

/* Appends a segment; each returns the length before it, for _pop. */
size_t forge_field_path_key(forge_field_path_t *p, const char *key);
size_t forge_field_path_index(forge_field_path_t *p, size_t i);
void forge_field_path_pop(forge_field_path_t *p, size_t old);

/* ---- character rules -------------------------------------------------- */

/* ^[first][rest]{0,max-1}$ over ASCII. */
typedef struct forge_field_pattern {
    const char *first; /* allowed first characters, "" + flags below */
    const char *rest;
    unsigned classes; /* FORGE_FIELD_ALNUM etc. for first and rest alike */
    unsigned first_classes;
    size_t max;
    const char *regex; /* for messages */
} forge_field_pattern_t;

enum { FORGE_FIELD_LOWER = 1, FORGE_FIELD_UPPER = 2, FORGE_FIELD_DIGIT = 4 };
#define FORGE_FIELD_ALNUM                                                      \
    (FORGE_FIELD_LOWER | FORGE_FIELD_UPPER | FORGE_FIELD_DIGIT)

bool forge_field_pattern_match(const forge_field_pattern_t *pat, const char *s);

/* String flags. */
enum {
    FORGE_FIELD_NO_CONTROL = 1 << 0, /* no U+0000..U+001F, U+007F */
    FORGE_FIELD_ABSOLUTE = 1 << 1,   /* starts with '/' */
    FORGE_FIELD_NO_DOTDOT = 1 << 2,  /* no ".." path component */
    /* [A-Za-z0-9._/+@=-] only: no separator or character a mount spec
     * gives a meaning */
    FORGE_FIELD_MOUNT_CHARS = 1 << 3,
    FORGE_FIELD_HTTP_URL = 1 << 4, /* ^https?://[^\s]+$ */
};

/* ---- field tables ----------------------------------------------------- */

typedef forge_rc_t (*forge_field_custom_fn)(const forge_jv_t *v, void *target,
                                            forge_field_path_t *p,
                                            forge_error_t *err);

typedef enum forge_field_type {
    FORGE_FIELD_STR,
    FORGE_FIELD_INT,
    FORGE_FIELD_LONG,
    FORGE_FIELD_BOOL,
    FORGE_FIELD_CUSTOM
} forge_field_type_t;

typedef struct forge_field {
    const char *key;
    forge_field_type_t type;
    size_t offset; /* into the target struct */
    bool required;
    /* STR: the pattern (NULL for free text) and FORGE_FIELD_* flags */
    const forge_field_pattern_t *pattern;
    unsigned flags;
    long min, max;   /* STR: length in code points; INT, LONG: value */
    long dflt;       /* INT (optional, absent): the value taken */
    forge_rc_t code; /* of a violation; 0 means FORGE_ESCHEMA */
    forge_field_custom_fn custom; /* CUSTOM */
} forge_field_t;

/* Records "<path> <what>" as the error; returns its code (0: schema). */
forge_rc_t forge_field_fail(forge_error_t *err, forge_rc_t code,
                            const forge_field_path_t *p, const char *fmt, ...)
    FORGE_PRINTF(4, 5);

/* v as the string row f describes (type, NUL, pattern, length in code
 * points, flags), a new C string in *out. */
forge_rc_t forge_field_take_string(const forge_jv_t *v, const forge_field_t *f,
                                   char **out, forge_field_path_t *p,
                                   forge_error_t *err);

/* The n rows of fields over the JSON object obj, into target, in row
 * order: the first violation stops the walk. An absent optional INT takes
 * its dflt. */
forge_rc_t forge_field_parse_table(const forge_jv_t *obj,
                                   const forge_field_t *fields, size_t n,
                                   void *target, forge_field_path_t *p,
                                   forge_error_t *err);

#endif
