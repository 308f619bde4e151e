/* SPDX-License-Identifier: Apache-2.0 */
/*
 * field.c - the table-driven JSON object parser the requests are written
 * in (field.h): a row per field, walked by forge_field_parse_table, the
 * JSON path of whatever breaks a rule kept for its error.
 */
#include "request/field.h"
#include "text/text.h"
#include "text/utf8.h"
#include "base/util.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- JSON paths ------------------------------------------------------- */

static size_t path_append(forge_field_path_t *p, const char *text)
{
    size_t old = p->len;
    size_t room = sizeof(p->buf) - p->len - 1;
    size_t n = strlen(text);

    n = n < room ? n : room;
    memcpy(p->buf + p->len, text, n);
    p->len += n;
    p->buf[p->len] = '\0';
    return old;
}

size_t forge_field_path_key(forge_field_path_t *p, const char *key)
{
    size_t old = path_append(p, ".");

    path_append(p, key);
    return old;
}

size_t forge_field_path_index(forge_field_path_t *p, size_t i)
{
    char seg[32], *at = seg + sizeof(seg) - 1;

    /* "[i]" written backwards: every element of every array pays this */
    *at = '\0';
    *--at = ']';
    do
        *--at = (char)('0' + i % 10);
    while ((i /= 10) != 0);
    *--at = '[';
    return path_append(p, at);
}

void forge_field_path_pop(forge_field_path_t *p, size_t old)
{
    p->len = old;
    p->buf[old] = '\0';
}

/* ---- character rules -------------------------------------------------- */

static bool in_class(int c, unsigned classes, const char *extra)
{
    return ((classes & FORGE_FIELD_LOWER) && c >= 'a' && c <= 'z') ||
           ((classes & FORGE_FIELD_UPPER) && c >= 'A' && c <= 'Z') ||
           ((classes & FORGE_FIELD_DIGIT) && c >= '0' && c <= '9') ||
           (c && strchr(extra, c));
}

bool forge_field_pattern_match(const forge_field_pattern_t *pat, const char *s)
{
    size_t n = strlen(s);

    if (n == 0 || n > pat->max ||
        !in_class((unsigned char)s[0], pat->first_classes, pat->first))
        return false;
    for (size_t i = 1; i < n; i++)
        if (!in_class((unsigned char)s[i], pat->classes, pat->rest))
            return false;
    return true;
}

static bool has_dotdot(const char *s)
{
    for (const char *p = s; (p = strstr(p, "..")); p += 2)
        if ((p == s || p[-1] == '/') && (p[2] == '\0' || p[2] == '/'))
            return true;
    return false;
}

static bool mount_chars_only(const char *s)
{
    for (; *s; s++)
        if (!in_class((unsigned char)*s, FORGE_FIELD_ALNUM, "._/+@=-"))
            return false;
    return true;
}

/* Why a string breaks its flags, or NULL when it does not. */
static const char *string_flag_problem(const char *s, unsigned flags)
{
    if ((flags & FORGE_FIELD_NO_CONTROL) && forge_text_has_control(s))
        return "must not contain control characters";
    if ((flags & FORGE_FIELD_ABSOLUTE) && s[0] != '/')
        return "must be an absolute path";
    if ((flags & FORGE_FIELD_NO_DOTDOT) && has_dotdot(s))
        return "must not contain a '..' component";
    if ((flags & FORGE_FIELD_MOUNT_CHARS) && !mount_chars_only(s))
        return "may hold only letters, digits and . _ / + @ = - (Pyxis, "
               "enroot and Apptainer give other characters a meaning)";
    if ((flags & FORGE_FIELD_HTTP_URL) && !forge_text_is_http_url(s, 0))
        return "must be an http:// or https:// URL without spaces";
    return NULL;
}

/* ---- field tables ----------------------------------------------------- */

forge_rc_t forge_field_fail(forge_error_t *err, forge_rc_t code,
                            const forge_field_path_t *p, const char *fmt, ...)
{
    char what[FORGE_ERROR_MESSAGE_MAX];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    return forge_error_set(err, code ? code : FORGE_ESCHEMA, p->buf, "%s %s",
                           p->buf, what);
}

/* A JSON string without NUL, as a new C string; NULL on a type error. */
forge_rc_t forge_field_take_string(const forge_jv_t *v, const forge_field_t *f,
                                   char **out, forge_field_path_t *p,
                                   forge_error_t *err)
{
    const char *s = forge_jv_str(v);
    size_t n = forge_jv_len(v), count;
    const char *problem;

    if (!forge_jv_is_string(v))
        return forge_field_fail(err, f->code, p, "must be a string");
    if (strlen(s) != n)
        return forge_field_fail(err, f->code, p, "must not contain NUL");
    count = forge_utf8_count(s, n); /* jdoc: valid UTF-8 */
    if (f->pattern && !forge_field_pattern_match(f->pattern, s))
        return forge_field_fail(err, f->code, p, "must match %s",
                                f->pattern->regex);
    if (count < (size_t)f->min || (f->max && count > (size_t)f->max))
        return forge_field_fail(err, f->code, p,
                                "must be %ld..%ld characters long", f->min,
                                f->max);
    if ((problem = string_flag_problem(s, f->flags)))
        return forge_field_fail(err, f->code, p, "%s", problem);
    *out = forge_xstrndup(s, n);
    return FORGE_OK;
}

/* An integer in [min, max]; 2.0 counts as an integer, as in JSON Schema. */
static forge_rc_t take_integer(const forge_jv_t *v, const forge_field_t *f,
                               long *out, forge_field_path_t *p,
                               forge_error_t *err)
{
    double d;

    if (forge_jv_is_integer(v)) {
        long long i = forge_jv_int(v);
        if (i >= f->min && i <= f->max)
            return (*out = (long)i), FORGE_OK;
    } else if (forge_jv_is_real(v)) {
        d = forge_jv_real(v);
        if (d == floor(d) && d >= (double)f->min && d <= (double)f->max)
            return (*out = (long)d), FORGE_OK;
    }
    return forge_field_fail(err, f->code, p, "must be an integer in %ld..%ld",
                            f->min, f->max);
}

static forge_rc_t parse_field(const forge_jv_t *v, const forge_field_t *f,
                              void *target, forge_field_path_t *p,
                              forge_error_t *err)
{
    void *slot = (char *)target + f->offset;
    long n = 0;
    forge_rc_t rc;

    switch (f->type) {
    case FORGE_FIELD_STR:
        return forge_field_take_string(v, f, (char **)slot, p, err);
    case FORGE_FIELD_INT:
    case FORGE_FIELD_LONG:
        if ((rc = take_integer(v, f, &n, p, err)))
            return rc;
        if (f->type == FORGE_FIELD_INT)
            *(int *)slot = (int)n;
        else
            *(long *)slot = n;
        return FORGE_OK;
    case FORGE_FIELD_BOOL:
        if (!forge_jv_is_bool(v))
            return forge_field_fail(err, f->code, p, "must be true or false");
        *(bool *)slot = forge_jv_is_true(v);
        return FORGE_OK;
    case FORGE_FIELD_CUSTOM:
        return f->custom(v, target, p, err);
    }
    return FORGE_EINVAL;
}

forge_rc_t forge_field_parse_table(const forge_jv_t *obj,
                                   const forge_field_t *fields, size_t n,
                                   void *target, forge_field_path_t *p,
                                   forge_error_t *err)
{
    forge_rc_t rc = FORGE_OK;

    if (!forge_jv_is_object(obj))
        return forge_field_fail(err, FORGE_ESCHEMA, p, "must be an object");
    for (size_t i = 0; i < n && !rc; i++) {
        const forge_field_t *f = &fields[i];
        const forge_jv_t *v = forge_jv_get(obj, f->key);
        size_t old = forge_field_path_key(p, f->key);
        if (v)
            rc = parse_field(v, f, target, p, err);
        else if (f->required)
            rc = forge_field_fail(err, FORGE_ESCHEMA, p, "is required");
        else if (f->type == FORGE_FIELD_INT)
            *(int *)((char *)target + f->offset) = (int)f->dflt;
        forge_field_path_pop(p, old);
    }
    return rc;
}
