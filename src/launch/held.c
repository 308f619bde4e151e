/* SPDX-License-Identifier: Apache-2.0 */
/*
 * held.c - a request's labels and secrets in one allocation (held.h):
 * the struct, then the labels' array, then the secrets' pointers, then
 * every string, each NUL-terminated. Built in two passes over the same
 * list of strings: one to size the block, one to fill it.
 */
#include "launch/held.h"
#include "core/util.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

/* The strings to keep, borrowed: labels as key/value pairs, secrets. */
typedef struct wanted {
    const forge_kv_t *labels;
    size_t label_count;
    const char **secrets;
    size_t secret_count;
} wanted_t;

static size_t text_size(const char *s)
{
    return s ? strlen(s) + 1 : 1;
}

static char *put_text(char **at, const char *s)
{
    size_t n = text_size(s);
    char *out = *at;

    memcpy(out, s ? s : "", n);
    *at += n;
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
    for (size_t i = 0; i < w->label_count; i++)
        size += text_size(w->labels[i].key) + text_size(w->labels[i].value);
    for (size_t i = 0; i < w->secret_count; i++)
        size += text_size(w->secrets[i]);
    h = forge_xmalloc(size);
    labels = (forge_kv_t *)(h + 1);
    secrets = (const char **)(labels + w->label_count);
    at = (char *)(secrets + w->secret_count);
    for (size_t i = 0; i < w->label_count; i++) {
        labels[i].key = put_text(&at, w->labels[i].key);
        labels[i].value = put_text(&at, w->labels[i].value);
    }
    for (size_t i = 0; i < w->secret_count; i++)
        secrets[i] = put_text(&at, w->secrets[i]);
    *h = (forge_held_t){labels, w->label_count, secrets, w->secret_count};
    return h;
}

static void collect_secret(void *ctx, const char *secret)
{
    wanted_t *w = ctx;

    w->secrets[w->secret_count++] = secret;
}

forge_held_t *forge_held_of_request(const forge_request_t *req)
{
    wanted_t w = {0};
    forge_held_t *h;

    if (!req || req->kind != FORGE_REQUEST_LAUNCH)
        return NULL;
    w.labels = req->launch.labels;
    w.label_count = req->launch.label_count;
    w.secrets = forge_xcalloc(req->launch.secret_env_count + 2, sizeof(char *));
    forge_request_each_secret(req, collect_secret, &w);
    h = build(&w);
    free(w.secrets);
    return h;
}

/* String values of object o, as pairs (labels) or values (secrets). */
static size_t string_values(json_t *o, forge_kv_t *pairs, const char **values)
{
    const char *key;
    json_t *v;
    size_t n = 0;

    json_object_foreach(o, key, v)
    {
        if (!json_is_string(v))
            continue;
        if (pairs)
            pairs[n] = (forge_kv_t){(char *)key, (char *)json_string_value(v)};
        else
            values[n] = json_string_value(v);
        n++;
    }
    return n;
}

forge_held_t *forge_held_of_trusted(const char *buf, size_t len)
{
    json_t *root = json_loadb(buf, len, JSON_ALLOW_NUL, NULL), *body, *labels,
           *secret_env, *token;
    wanted_t w = {0};
    forge_held_t *h = NULL;
    forge_kv_t *pairs;

    if (!json_is_object(root)) {
        json_decref(root);
        return NULL;
    }
    body = json_object_get(root, "specversion") ? json_object_get(root, "data")
                                                : root;
    labels = json_object_get(body, "labels");
    secret_env = json_object_get(body, "secret_env");
    token = json_object_get(json_object_get(body, "ingest"), "token");
    pairs = forge_xcalloc(json_object_size(labels) + 1, sizeof(*pairs));
    w.secrets = forge_xcalloc(json_object_size(secret_env) + 2, sizeof(char *));
    w.labels = pairs;
    if (json_is_object(labels))
        w.label_count = string_values(labels, pairs, NULL);
    if (json_is_string(token))
        w.secrets[w.secret_count++] = json_string_value(token);
    if (json_is_object(secret_env))
        w.secret_count +=
            string_values(secret_env, NULL, w.secrets + w.secret_count);
    h = build(&w);
    free(pairs);
    free(w.secrets);
    json_decref(root);
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
