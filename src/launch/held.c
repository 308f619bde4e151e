/* SPDX-License-Identifier: Apache-2.0 */
/*
 * held.c - a request's labels and secrets in one allocation (held.h):
 * the struct, then the labels' array, then the secrets' pointers, then
 * every string, each NUL-terminated. Built in two passes over the same
 * list of strings: one to size the block, one to fill it. From a stored
 * request's bytes, a scan finds them (held_scan) and jansson reads what
 * the scan gives up on.
 */
#include "launch/held.h"
#include "core/util.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

/* A string to keep, borrowed: len bytes at p (not NUL-terminated). */
typedef struct text {
    const char *p;
    size_t n;
} text_t;

/* The strings to keep: labels as key/value pairs, then secrets. */
typedef struct wanted {
    text_t *labels; /* 2 * label_count */
    size_t label_count;
    text_t *secrets;
    size_t secret_count;
} wanted_t;

static text_t text_of(const char *s)
{
    return (text_t){s ? s : "", s ? strlen(s) : 0};
}

static char *put_text(char **at, text_t t)
{
    char *out = *at;

    memcpy(out, t.p, t.n);
    out[t.n] = '\0';
    *at += t.n + 1;
    return out;
}

static forge_held_t *build(const wanted_t *w)
{
    size_t size = sizeof(forge_held_t) + w->label_count * sizeof(forge_kv_t) +
                  w->secret_count * sizeof(char *);
    forge_held_t *h;
    forge_kv_t *labels;
    const char **secrets;
    char *at;

    if (!w->label_count && !w->secret_count)
        return NULL;
    for (size_t i = 0; i < 2 * w->label_count; i++)
        size += w->labels[i].n + 1;
    for (size_t i = 0; i < w->secret_count; i++)
        size += w->secrets[i].n + 1;
    h = forge_xmalloc(size);
    labels = (forge_kv_t *)(h + 1);
    secrets = (const char **)(labels + w->label_count);
    at = (char *)(secrets + w->secret_count);
    for (size_t i = 0; i < w->label_count; i++) {
        labels[i].key = put_text(&at, w->labels[2 * i]);
        labels[i].value = put_text(&at, w->labels[2 * i + 1]);
    }
    for (size_t i = 0; i < w->secret_count; i++)
        secrets[i] = put_text(&at, w->secrets[i]);
    *h = (forge_held_t){labels, w->label_count, secrets, w->secret_count};
    return h;
}

static void collect_secret(void *ctx, const char *secret)
{
    wanted_t *w = ctx;

    w->secrets[w->secret_count++] = text_of(secret);
}

forge_held_t *forge_held_of_request(const forge_request_t *req)
{
    wanted_t w = {0};
    forge_held_t *h;

    if (!req || req->kind != FORGE_REQUEST_LAUNCH)
        return NULL;
    w.label_count = req->launch.label_count;
    w.labels = forge_xcalloc(2 * w.label_count + 1, sizeof(text_t));
    for (size_t i = 0; i < w.label_count; i++) {
        w.labels[2 * i] = text_of(req->launch.labels[i].key);
        w.labels[2 * i + 1] = text_of(req->launch.labels[i].value);
    }
    w.secrets = forge_xcalloc(req->launch.secret_env_count + 2, sizeof(text_t));
    forge_request_each_secret(req, collect_secret, &w);
    h = build(&w);
    free(w.labels);
    free(w.secrets);
    return h;
}

/* ---- read from the bytes: a scan, or jansson --------------------------- */

/* Grows list (n used, *size allocated) by one; the new slot. */
static text_t *more(text_t **list, size_t n, size_t *size)
{
    if (n == *size) {
        *size = *size ? 2 * *size : 8;
        *list = forge_xrealloc(*list, *size * sizeof(**list));
    }
    return &(*list)[n];
}

/* String values of object o: pairs (labels) or values (secrets). */
static void json_strings(json_t *o, bool pairs, text_t **list, size_t *n,
                         size_t *size)
{
    const char *key;
    json_t *v;

    json_object_foreach(o, key, v)
    {
        if (!json_is_string(v))
            continue;
        if (pairs)
            *more(list, 2 * *n, size) = text_of(key);
        *more(list, 2 * *n * pairs + !pairs * *n + pairs, size) =
            (text_t){json_string_value(v), json_string_length(v)};
        (*n)++;
    }
}

static forge_held_t *held_of_json(const char *buf, size_t len)
{
    json_t *root = json_loadb(buf, len, JSON_ALLOW_NUL, NULL), *body, *token;
    wanted_t w = {0};
    size_t label_size = 0, secret_size = 0;
    forge_held_t *h;

    if (!json_is_object(root)) {
        json_decref(root);
        return NULL;
    }
    body = json_object_get(root, "specversion") ? json_object_get(root, "data")
                                                : root;
    json_strings(json_object_get(body, "labels"), true, &w.labels,
                 &w.label_count, &label_size);
    token = json_object_get(json_object_get(body, "ingest"), "token");
    if (json_is_string(token))
        *more(&w.secrets, w.secret_count++, &secret_size) =
            (text_t){json_string_value(token), json_string_length(token)};
    json_strings(json_object_get(body, "secret_env"), false, &w.secrets,
                 &w.secret_count, &secret_size);
    h = build(&w);
    free(w.labels);
    free(w.secrets);
    json_decref(root);
    return h;
}

/*
 * The scan: reads the request's JSON only as far as to find the few
 * values held, borrowing them from the buffer, and skips the rest (the
 * bytes authenticated: they are what the worker validated and sealed).
 * It gives up (false) on what would need more than a scan to read the
 * same as jansson: an escape in a key or a value it keeps, a key it looks
 * for given twice (jansson keeps the last), nesting deeper than 64. Then
 * held_of_json decides.
 */
typedef struct scan {
    const char *p, *end;
} scan_t;

static void ws(scan_t *s)
{
    while (s->p < s->end &&
           (*s->p == ' ' || *s->p == '\n' || *s->p == '\t' || *s->p == '\r'))
        s->p++;
}

static bool eat(scan_t *s, char c)
{
    ws(s);
    if (s->p < s->end && *s->p == c) {
        s->p++;
        return true;
    }
    return false;
}

/* A string; *escaped when it holds an escape (*t is then its raw text). */
static bool string(scan_t *s, text_t *t, bool *escaped)
{
    if (!eat(s, '"'))
        return false;
    t->p = s->p;
    *escaped = false;
    while (s->p < s->end && *s->p != '"') {
        if (*s->p == '\\') {
            *escaped = true;
            s->p++;
        }
        s->p++;
    }
    if (s->p >= s->end)
        return false;
    t->n = (size_t)(s->p++ - t->p);
    return true;
}

static bool skip_value(scan_t *s, int depth);

/* An object's members in turn: fn(ctx, key, s) reads or skips each value. */
static bool members(scan_t *s, int depth,
                    bool (*fn)(void *ctx, text_t key, bool escaped, scan_t *s,
                               int depth),
                    void *ctx)
{
    text_t key;
    bool escaped;

    if (!eat(s, '{'))
        return false;
    if (eat(s, '}'))
        return true;
    do {
        if (!string(s, &key, &escaped) || !eat(s, ':') ||
            !fn(ctx, key, escaped, s, depth + 1))
            return false;
    } while (eat(s, ','));
    return eat(s, '}');
}

static bool skip_member(void *ctx, text_t key, bool escaped, scan_t *s,
                        int depth)
{
    (void)ctx;
    (void)key;
    (void)escaped;
    return skip_value(s, depth);
}

static bool skip_value(scan_t *s, int depth)
{
    text_t t;
    bool escaped;

    ws(s);
    if (depth > 64 || s->p >= s->end)
        return false;
    if (*s->p == '"')
        return string(s, &t, &escaped);
    if (*s->p == '{')
        return members(s, depth, skip_member, NULL);
    if (*s->p == '[') {
        s->p++;
        if (eat(s, ']'))
            return true;
        do {
            if (!skip_value(s, depth + 1))
                return false;
        } while (eat(s, ','));
        return eat(s, ']');
    }
    t.p = s->p; /* a number, true, false or null */
    while (s->p < s->end && strchr("-+.0123456789eEtrufalsn", *s->p) && *s->p)
        s->p++;
    return s->p > t.p;
}

static bool is(text_t key, const char *name)
{
    return key.n == strlen(name) && !memcmp(key.p, name, key.n);
}

/* The values of one object (labels, secret_env): strings kept, the rest
 * skipped; a key twice gives up. */
typedef struct strings {
    text_t **list;
    size_t *n, *size;
    bool pairs;
} strings_t;

static bool string_member(void *ctx, text_t key, bool escaped, scan_t *s,
                          int depth)
{
    strings_t *st = ctx;
    text_t value;
    bool value_escaped;
    size_t stride = st->pairs ? 2 : 1;

    ws(s);
    if (s->p < s->end && *s->p != '"')
        return skip_value(s, depth);
    if (escaped || !string(s, &value, &value_escaped) || value_escaped)
        return false;
    for (size_t i = 0; st->pairs && i < *st->n; i++)
        if ((*st->list)[2 * i].n == key.n &&
            !memcmp((*st->list)[2 * i].p, key.p, key.n))
            return false;
    if (st->pairs)
        *more(st->list, stride * *st->n, st->size) = key;
    *more(st->list, stride * *st->n + stride - 1, st->size) = value;
    (*st->n)++;
    return true;
}

/* Where the body's members are, as found at one level. */
typedef struct found {
    const char *labels, *secret_env, *ingest, *data;
    bool specversion;
} found_t;

static bool find_member(void *ctx, text_t key, bool escaped, scan_t *s,
                        int depth)
{
    found_t *f = ctx;
    const char **at = is(key, "labels")       ? &f->labels
                      : is(key, "secret_env") ? &f->secret_env
                      : is(key, "ingest")     ? &f->ingest
                      : is(key, "data")       ? &f->data
                                              : NULL;

    if (escaped)
        return false;
    if (is(key, "specversion")) {
        if (f->specversion)
            return false;
        f->specversion = true;
    }
    ws(s);
    if (at) {
        if (*at)
            return false;
        *at = s->p;
    }
    return skip_value(s, depth);
}

static bool token_member(void *ctx, text_t key, bool escaped, scan_t *s,
                         int depth)
{
    text_t *token = ctx;
    bool value_escaped;

    ws(s);
    if (!is(key, "token") || (s->p < s->end && *s->p != '"'))
        return !escaped && skip_value(s, depth);
    if (escaped || token->p || !string(s, token, &value_escaped) ||
        value_escaped)
        return false;
    return true;
}

/* Scans the object at `at` (NULL: absent; not an object: nothing). */
static bool scan_object(const char *at, const char *end,
                        bool (*fn)(void *, text_t, bool, scan_t *, int),
                        void *ctx)
{
    scan_t s = {at, end};

    if (!at || at >= end || *at != '{')
        return true;
    return members(&s, 1, fn, ctx);
}

static bool held_scan(const char *buf, size_t len, wanted_t *w,
                      size_t *label_size, size_t *secret_size)
{
    const char *end = buf + len;
    scan_t s = {buf, end};
    found_t root = {0}, data = {0}, *body = &root;
    text_t token = {0};
    strings_t labels = {&w->labels, &w->label_count, label_size, true};
    strings_t secrets = {&w->secrets, &w->secret_count, secret_size, false};

    if (!members(&s, 0, find_member, &root) || (ws(&s), s.p != end))
        return false;
    if (root.specversion) {
        body = &data;
        if (!scan_object(root.data, end, find_member, &data))
            return false;
    }
    if (!scan_object(body->labels, end, string_member, &labels) ||
        !scan_object(body->ingest, end, token_member, &token))
        return false;
    if (token.p)
        *more(&w->secrets, w->secret_count++, secret_size) = token;
    return scan_object(body->secret_env, end, string_member, &secrets);
}

forge_held_t *forge_held_of_trusted(const char *buf, size_t len)
{
    wanted_t w = {0};
    size_t label_size = 0, secret_size = 0;
    forge_held_t *h = NULL;

    if (held_scan(buf, len, &w, &label_size, &secret_size))
        h = build(&w);
    else
        h = held_of_json(buf, len);
    free(w.labels);
    free(w.secrets);
    return h;
}

void forge_held_each_secret(const forge_held_t *h,
                            void (*fn)(void *ctx, const char *secret),
                            void *ctx)
{
    for (size_t i = 0; h && i < h->secret_count; i++)
        fn(ctx, h->secrets[i]);
}

void forge_held_free(forge_held_t *h)
{
    for (size_t i = 0; h && i < h->secret_count; i++)
        explicit_bzero((char *)h->secrets[i], strlen(h->secrets[i]));
    free(h);
}
