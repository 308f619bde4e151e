/* SPDX-License-Identifier: Apache-2.0 */
/*
 * held.c - a request's labels, credentials (ingest token, env, secret_env),
 * pools' names, tenant and logs.live in one allocation (held.h): the struct,
 * then the
 * labels', env's and secret_env's arrays, then the secrets' and the pools'
 * pointers, then every string, each NUL-terminated. Built in two passes over
 * the same list of strings: one to size the block, one to fill it. From a
 * stored request's bytes, a scan finds them (held_scan, on json/jscan.h) and
 * jansson reads what the scan gives up on.
 */
#include "record/held.h"
#include "config/config.h"
#include "json/jscan.h"
#include "base/util.h"
#include "render/render.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef forge_jscan_text_t text_t;

/* A list of borrowed strings: the first few in place (a request's labels,
 * secrets and pools are few: no allocation for them per record read). */
#define TEXTS_IN_PLACE 8
typedef struct texts {
    text_t *items; /* in_place, or allocated once they outgrow it */
    size_t n, size;
    text_t in_place[TEXTS_IN_PLACE];
} texts_t;

/* The strings to keep: labels, env and secret_env as key/value pairs, the
 * ingest token, pools' names, the tenant (p NULL: none); and logs.live. */
typedef struct wanted {
    texts_t labels;     /* 2 per label */
    texts_t env;        /* 2 per variable */
    texts_t secret_env; /* 2 per variable */
    text_t token;
    texts_t pools;
    text_t tenant;
    int live_logs; /* FORGE_LIVE_LOGS_* */
} wanted_t;

/* Nothing wanted yet: logs.live unset, not false. */
#define WANTED_INIT ((wanted_t){.live_logs = FORGE_LIVE_LOGS_UNSET})

static text_t text_of(const char *s)
{
    return (text_t){s ? s : "", s ? strlen(s) : 0};
}

static void add(texts_t *l, text_t t)
{
    if (!l->size) {
        l->items = l->in_place;
        l->size = TEXTS_IN_PLACE;
    } else if (l->n == l->size) {
        text_t *more = forge_xmalloc(2 * l->size * sizeof(*more));
        memcpy(more, l->items, l->n * sizeof(*more));
        if (l->items != l->in_place)
            free(l->items);
        l->items = more;
        l->size *= 2;
    }
    l->items[l->n++] = t;
}

static void texts_clear(texts_t *l)
{
    if (l->items != l->in_place)
        free(l->items);
    l->items = NULL;
    l->n = l->size = 0;
}

static void wanted_clear(wanted_t *w)
{
    texts_clear(&w->labels);
    texts_clear(&w->env);
    texts_clear(&w->secret_env);
    texts_clear(&w->pools);
}

static char *put_text(char **at, text_t t)
{
    char *out = *at;

    memcpy(out, t.p, t.n);
    out[t.n] = '\0';
    *at += t.n + 1;
    return out;
}

static size_t texts_size(const texts_t *l)
{
    size_t size = 0;

    for (size_t i = 0; i < l->n; i++)
        size += l->items[i].n + 1;
    return size;
}

static void put_list(char **at, const texts_t *l, const char **out)
{
    for (size_t i = 0; i < l->n; i++)
        out[i] = put_text(at, l->items[i]);
}

static void put_pairs(char **at, const texts_t *l, forge_kv_t *out)
{
    for (size_t i = 0; i < l->n / 2; i++) {
        out[i].key = put_text(at, l->items[2 * i]);
        out[i].value = put_text(at, l->items[2 * i + 1]);
    }
}

static forge_held_t *build(const wanted_t *w)
{
    size_t nlabels = w->labels.n / 2, nenv = w->env.n / 2,
           nsecret = w->secret_env.n / 2;
    size_t nsecrets = nsecret + (w->token.p ? 1 : 0);
    size_t size =
        sizeof(forge_held_t) + (nlabels + nenv + nsecret) * sizeof(forge_kv_t) +
        (nsecrets + w->pools.n) * sizeof(char *) + texts_size(&w->labels) +
        texts_size(&w->env) + texts_size(&w->secret_env) +
        texts_size(&w->pools) + (w->token.p ? w->token.n + 1 : 0) +
        (w->tenant.p ? w->tenant.n + 1 : 0);
    forge_held_t *h = forge_xmalloc(size);
    forge_kv_t *labels = (forge_kv_t *)(h + 1);
    forge_kv_t *env = labels + nlabels, *secret_env = env + nenv;
    const char **secrets = (const char **)(secret_env + nsecret);
    const char **pools = secrets + nsecrets;
    char *at = (char *)(pools + w->pools.n);

    memset(h, 0, sizeof(*h));
    put_pairs(&at, &w->labels, labels);
    put_pairs(&at, &w->env, env);
    put_pairs(&at, &w->secret_env, secret_env);
    put_list(&at, &w->pools, pools);
    /* the secrets: the token, then secret_env's values (no copies) */
    if (w->token.p)
        h->token = secrets[0] = put_text(&at, w->token);
    for (size_t i = 0; i < nsecret; i++)
        secrets[(w->token.p ? 1 : 0) + i] = secret_env[i].value;
    h->labels = labels;
    h->label_count = nlabels;
    h->env = env;
    h->env_count = nenv;
    h->secret_env = secret_env;
    h->secret_env_count = nsecret;
    h->secrets = secrets;
    h->secret_count = nsecrets;
    h->pools = pools;
    h->pool_count = w->pools.n;
    h->tenant = w->tenant.p ? put_text(&at, w->tenant) : NULL;
    h->live_logs = w->live_logs;
    return h;
}

static void add_pairs(texts_t *l, const forge_kv_t *kv, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        add(l, text_of(kv[i].key));
        add(l, text_of(kv[i].value));
    }
}

/* What h (or the request) holds, borrowed, into w. */
static void want(wanted_t *w, const forge_kv_t *labels, size_t nlabels,
                 const forge_kv_t *env, size_t nenv,
                 const forge_kv_t *secret_env, size_t nsecret,
                 const char *token)
{
    add_pairs(&w->labels, labels, nlabels);
    add_pairs(&w->env, env, nenv);
    add_pairs(&w->secret_env, secret_env, nsecret);
    if (token)
        w->token = text_of(token);
}

forge_held_t *forge_held_of_request(const forge_request_t *req)
{
    wanted_t w = WANTED_INIT;
    const forge_launch_t *l;
    forge_held_t *h;

    if (!req || req->kind != FORGE_REQUEST_LAUNCH)
        return NULL;
    l = &req->launch;
    want(&w, l->labels, l->label_count, l->env, l->env_count, l->secret_env,
         l->secret_env_count, l->ingest_token);
    for (size_t i = 0; i < l->pool_count; i++)
        add(&w.pools, text_of(l->pools[i].name));
    if (l->tenant)
        w.tenant = text_of(l->tenant);
    w.live_logs = l->live_logs;
    h = build(&w);
    wanted_clear(&w);
    return h;
}

forge_held_t *forge_held_copy(const forge_held_t *h)
{
    wanted_t w = WANTED_INIT;
    forge_held_t *c;

    if (!h)
        return NULL;
    want(&w, h->labels, h->label_count, h->env, h->env_count, h->secret_env,
         h->secret_env_count, h->token);
    for (size_t i = 0; i < h->pool_count; i++)
        add(&w.pools, text_of(h->pools[i]));
    if (h->tenant)
        w.tenant = text_of(h->tenant);
    w.live_logs = h->live_logs;
    c = build(&w);
    wanted_clear(&w);
    return c;
}

static json_t *pairs_json(const forge_kv_t *kv, size_t n)
{
    json_t *o = json_object();

    for (size_t i = 0; i < n; i++)
        json_object_set_new(o, kv[i].key, json_string(kv[i].value));
    return o;
}

bool forge_held_credentials(const forge_held_t *h, forge_buf_t *out)
{
    /* records written before the credentials were kept numbered their
     * secrets ("1", "2", ...): no name to stage them under */
    for (size_t i = 0; h && i < h->secret_env_count; i++)
        if (!forge_render_env_name_ok(h->secret_env[i].key))
            return false;
    return h && forge_render_credential_pairs(h->token, h->env, h->env_count,
                                              h->secret_env,
                                              h->secret_env_count, out);
}

char *forge_held_to_json(const forge_held_t *h, size_t *len)
{
    json_t *o = json_object(), *pools = json_array();
    char *text;

    for (size_t i = 0; i < h->pool_count; i++)
        json_array_append_new(pools, json_pack("{s:s}", "name", h->pools[i]));
    json_object_set_new(o, "labels", pairs_json(h->labels, h->label_count));
    json_object_set_new(o, "env", pairs_json(h->env, h->env_count));
    json_object_set_new(o, "secret_env",
                        pairs_json(h->secret_env, h->secret_env_count));
    if (h->token)
        json_object_set_new(o, "ingest", json_pack("{s:s}", "token", h->token));
    json_object_set_new(o, "pools", pools);
    if (h->tenant)
        json_object_set_new(o, "tenant", json_string(h->tenant));
    if (h->live_logs != FORGE_LIVE_LOGS_UNSET)
        json_object_set_new(
            o, "logs",
            json_pack("{s:b}", "live", h->live_logs != FORGE_LIVE_LOGS_FALSE));
    text = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    *len = strlen(text);
    return text;
}

/* ---- read from the bytes: a scan, or jansson --------------------------- */

/* The string members of object o, as (name, value) pairs. */
static void json_pairs(json_t *o, texts_t *list)
{
    const char *key;
    json_t *v;

    json_object_foreach(o, key, v)
    {
        if (!json_is_string(v))
            continue;
        add(list, text_of(key));
        add(list, (text_t){json_string_value(v), json_string_length(v)});
    }
}

static forge_held_t *held_of_json(const char *buf, size_t len)
{
    json_t *root = json_loadb(buf, len, JSON_ALLOW_NUL, NULL), *body, *v;
    wanted_t w = WANTED_INIT;
    size_t i;
    forge_held_t *h;

    if (!json_is_object(root)) {
        json_decref(root);
        return NULL;
    }
    body = json_object_get(root, "specversion") ? json_object_get(root, "data")
                                                : root;
    json_pairs(json_object_get(body, "labels"), &w.labels);
    json_pairs(json_object_get(body, "env"), &w.env);
    v = json_object_get(json_object_get(body, "ingest"), "token");
    if (json_is_string(v))
        w.token = (text_t){json_string_value(v), json_string_length(v)};
    json_pairs(json_object_get(body, "secret_env"), &w.secret_env);
    json_array_foreach(json_object_get(body, "pools"), i, v)
    {
        json_t *name = json_object_get(v, "name");
        if (json_is_string(name))
            add(&w.pools,
                (text_t){json_string_value(name), json_string_length(name)});
    }
    v = json_object_get(body, "tenant");
    if (json_is_string(v))
        w.tenant = (text_t){json_string_value(v), json_string_length(v)};
    v = json_object_get(json_object_get(body, "logs"), "live");
    if (json_is_boolean(v))
        w.live_logs =
            json_is_true(v) ? FORGE_LIVE_LOGS_TRUE : FORGE_LIVE_LOGS_FALSE;
    h = build(&w);
    wanted_clear(&w);
    json_decref(root);
    return h;
}

/*
 * The scan: reads the request's JSON only as far as to find the few
 * values held, borrowing them from the buffer, and skips the rest (the
 * bytes authenticated: they are what the worker validated and sealed).
 * It gives up (false) on what would need more than a scan to read the
 * same as jansson: an escape in a key or a value it keeps, a key it looks
 * for given twice (jansson keeps the last), nesting deeper than
 * FORGE_JSCAN_DEPTH. Then held_of_json decides.
 */
typedef forge_jscan_t scan_t;

/* A kept string's value: no escape (its raw text is then its value). */
static bool kept_string(scan_t *s, text_t *t)
{
    bool escaped;

    return forge_jscan_string(s, t, &escaped) && !escaped;
}

/* The pairs of one object (labels, env, secret_env; ctx: their list):
 * strings kept, the rest skipped; a key twice gives up. */
static bool string_member(void *ctx, text_t key, bool escaped, scan_t *s,
                          int depth)
{
    texts_t *list = ctx;
    text_t value;

    if (forge_jscan_peek(s) != '"')
        return forge_jscan_skip(s, depth);
    if (escaped || !kept_string(s, &value))
        return false;
    for (size_t i = 0; i < list->n; i += 2)
        if (list->items[i].n == key.n &&
            !memcmp(list->items[i].p, key.p, key.n))
            return false;
    add(list, key);
    add(list, value);
    return true;
}

/* Where the body's members are, as found at one level. */
typedef struct found {
    const char *labels, *env, *secret_env, *ingest, *data, *pools, *tenant,
        *logs;
    bool specversion;
} found_t;

static bool find_member(void *ctx, text_t key, bool escaped, scan_t *s,
                        int depth)
{
    found_t *f = ctx;
    const char **at = forge_jscan_is(key, "labels")       ? &f->labels
                      : forge_jscan_is(key, "env")        ? &f->env
                      : forge_jscan_is(key, "secret_env") ? &f->secret_env
                      : forge_jscan_is(key, "ingest")     ? &f->ingest
                      : forge_jscan_is(key, "data")       ? &f->data
                      : forge_jscan_is(key, "pools")      ? &f->pools
                      : forge_jscan_is(key, "tenant")     ? &f->tenant
                      : forge_jscan_is(key, "logs")       ? &f->logs
                                                          : NULL;

    if (escaped)
        return false;
    if (forge_jscan_is(key, "specversion")) {
        if (f->specversion)
            return false;
        f->specversion = true;
    }
    forge_jscan_ws(s);
    if (at) {
        if (*at)
            return false;
        *at = s->p;
    }
    return forge_jscan_skip(s, depth);
}

/* One member named `name` whose string value is kept (others skipped). */
typedef struct named {
    const char *name;
    text_t value; /* p NULL: not found */
} named_t;

static bool named_member(void *ctx, text_t key, bool escaped, scan_t *s,
                         int depth)
{
    named_t *n = ctx;

    if (escaped)
        return false;
    if (!forge_jscan_is(key, n->name) || forge_jscan_peek(s) != '"')
        return forge_jscan_skip(s, depth);
    return !n->value.p && kept_string(s, &n->value);
}

/* logs' "live" (ctx: the int it sets): a boolean kept, other members
 * skipped. Gives up on a "live" that is not a boolean (never in what the
 * worker accepted; jansson's reading leaves it unset) or given twice
 * (jansson keeps the last). */
static bool live_member(void *ctx, text_t key, bool escaped, scan_t *s,
                        int depth)
{
    int *live_logs = ctx;
    bool seen = *live_logs != FORGE_LIVE_LOGS_UNSET;

    if (escaped)
        return false;
    if (!forge_jscan_is(key, "live"))
        return forge_jscan_skip(s, depth);
    if (forge_jscan_word(s, "true"))
        *live_logs = FORGE_LIVE_LOGS_TRUE;
    else if (forge_jscan_word(s, "false"))
        *live_logs = FORGE_LIVE_LOGS_FALSE;
    else
        return false; /* not a boolean: rare, jansson's to read */
    return !seen;
}

/* Scans the object at `at` (NULL: absent; not an object: nothing). */
static bool scan_object(const char *at, const char *end,
                        forge_jscan_member_fn fn, void *ctx)
{
    scan_t s = {at, end};

    if (!at || at >= end || *at != '{')
        return true;
    return forge_jscan_members(&s, 1, fn, ctx);
}

/* The pools' names: each element of the array at `at` that is an object
 * with a string "name" (others skipped; not an array: none). */
static bool scan_pools(const char *at, const char *end, texts_t *pools)
{
    scan_t s = {at, end};

    if (!at || at >= end || *at != '[')
        return true;
    s.p++;
    if (forge_jscan_eat(&s, ']'))
        return true;
    do {
        named_t name = {"name", {0}};
        if (forge_jscan_peek(&s) != '{') {
            if (!forge_jscan_skip(&s, 2))
                return false;
            continue;
        }
        if (!forge_jscan_members(&s, 2, named_member, &name))
            return false;
        if (name.value.p)
            add(pools, name.value);
    } while (forge_jscan_eat(&s, ','));
    return forge_jscan_eat(&s, ']');
}

static bool held_scan(const char *buf, size_t len, wanted_t *w)
{
    const char *end = buf + len;
    scan_t s = {buf, end};
    found_t root = {0}, data = {0}, *body = &root;
    named_t token = {"token", {0}};
    scan_t tenant;

    if (!forge_jscan_members(&s, 0, find_member, &root) ||
        (forge_jscan_ws(&s), s.p != end))
        return false;
    if (root.specversion) {
        body = &data;
        if (!scan_object(root.data, end, find_member, &data))
            return false;
    }
    if (!scan_object(body->labels, end, string_member, &w->labels) ||
        !scan_object(body->env, end, string_member, &w->env) ||
        !scan_object(body->ingest, end, named_member, &token))
        return false;
    w->token = token.value;
    if (!scan_object(body->secret_env, end, string_member, &w->secret_env) ||
        !scan_pools(body->pools, end, &w->pools) ||
        !scan_object(body->logs, end, live_member, &w->live_logs))
        return false;
    tenant = (scan_t){body->tenant, end};
    return !body->tenant || *body->tenant != '"' ||
           kept_string(&tenant, &w->tenant);
}

forge_held_t *forge_held_of_trusted(const char *buf, size_t len)
{
    wanted_t w = WANTED_INIT;
    forge_held_t *h;

    if (held_scan(buf, len, &w)) {
        h = build(&w);
    } else {
        wanted_clear(&w);
        w = WANTED_INIT;
        h = held_of_json(buf, len);
    }
    wanted_clear(&w);
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
