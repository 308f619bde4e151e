/* SPDX-License-Identifier: Apache-2.0 */
/*
 * launch.c - launch records: state machine steps, digest, and the JSON
 * form kept in the state topic (launch.h). The encoding carries a version
 * ("v": 1) so a later worker can read records an older one wrote; the
 * request goes in sealed (seal.h), old records' clear requests are read.
 * A record's tries (the retry step, its fields' JSON) are launch_retry.c's.
 */
#include "record/launch.h"
#include "record/launch_int.h"
#include "json/jscan.h"
#include "base/util.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RECORD_VERSION  1
#define SEAL_AAD_PREFIX "forge-state/v1/"

forge_launch_record_t *forge_launch_record_new(const char *launch_id,
                                               int attempt, const char *request,
                                               size_t request_len)
{
    forge_launch_record_t *r = forge_xcalloc(1, sizeof(*r));

    r->launch_id = forge_xstrdup(launch_id);
    r->attempt = attempt;
    if (request) {
        r->request = forge_xstrndup(request, request_len);
        r->request_len = request_len;
    }
    forge_sha256_hex(request ? request : "", request ? request_len : 0,
                     r->digest);
    return r;
}

void forge_launch_record_free(forge_launch_record_t *r)
{
    if (!r)
        return;
    free(r->launch_id);
    forge_launch_drop_request(r);
    free(r->component_ids);
    free(r->slurm_states);
    free(r->retry_cause);
    free(r->excluded_nodes);
    forge_live_cursors_free(r->log_cursors, r->log_cursor_count);
    free(r);
}

forge_launch_record_t *forge_launch_record_copy(const forge_launch_record_t *r)
{
    forge_launch_record_t *c = forge_xmalloc(sizeof(*c));

    /* Every field by value first, so one added later is copied too; then
     * each pointer the record owns gets its own copy. */
    *c = *r;
    c->launch_id = forge_xstrdup(r->launch_id);
    c->request = r->request ? forge_xstrndup(r->request, r->request_len) : NULL;
    c->request_sealed =
        r->request_sealed ? json_deep_copy(r->request_sealed) : NULL;
    c->request_error = NULL;
    if (r->request_error) {
        c->request_error = forge_xmalloc(sizeof(*c->request_error));
        *c->request_error = *r->request_error;
    }
    c->component_ids = forge_xcalloc(r->component_count + 1, sizeof(uint32_t));
    if (r->component_count)
        memcpy(c->component_ids, r->component_ids,
               r->component_count * sizeof(uint32_t));
    c->slurm_states = forge_xstrdup(r->slurm_states);
    c->retry_cause = forge_xstrdup(r->retry_cause);
    c->excluded_nodes = forge_xstrdup(r->excluded_nodes);
    c->log_cursors =
        forge_live_cursors_copy(r->log_cursors, r->log_cursor_count);
    return c;
}

void forge_launch_drop_request(forge_launch_record_t *r)
{
    free(r->request);
    r->request = NULL;
    r->request_len = 0;
    r->request_was_sealed = false;
    json_decref(r->request_sealed);
    r->request_sealed = NULL;
    free(r->request_error);
    r->request_error = NULL;
}

void forge_launch_compact(forge_launch_record_t *r)
{
    if (!r->request || forge_launch_may_retry(r))
        return;
    explicit_bzero(r->request, r->request_len);
    free(r->request);
    r->request = NULL;
    r->request_len = 0;
}

char *forge_launch_seal_aad(const char *launch_id, int attempt)
{
    size_t n = sizeof(SEAL_AAD_PREFIX) + strlen(launch_id) + 16;
    char *aad = forge_xmalloc(n);

    snprintf(aad, n, SEAL_AAD_PREFIX "%s/%d", launch_id, attempt);
    return aad;
}

void forge_launch_add_usage(forge_launch_record_t *r, const json_t *usage)
{
    const json_t *gpu = json_object_get(usage, "gpu_hours");
    const json_t *elapsed = json_object_get(usage, "elapsed_s");
    long long gpu_s, elapsed_s;

    if (!json_is_number(gpu) || json_number_value(gpu) < 0)
        return;
    gpu_s = llround(json_number_value(gpu) * 3600.0);
    elapsed_s = json_is_integer(elapsed) && json_integer_value(elapsed) >= 0
                    ? json_integer_value(elapsed)
                    : -1;
    if (r->has_usage) { /* a later try: what the tries used together */
        gpu_s += r->gpu_seconds;
        elapsed_s =
            r->elapsed_s >= 0 && elapsed_s >= 0 ? r->elapsed_s + elapsed_s : -1;
    }
    r->has_usage = true;
    r->gpu_seconds = gpu_s;
    r->elapsed_s = elapsed_s;
}

double forge_launch_gpu_hours(const forge_launch_record_t *r)
{
    return r->has_usage ? (double)r->gpu_seconds / 3600.0 : -1.0;
}

/* The usage fields as a decoder read them (either path): gpu_seconds
 * present (has), elapsed_s present (has_elapsed). */
static void take_usage(forge_launch_record_t *r, bool has, long long gpu_s,
                       bool has_elapsed, long long elapsed_s)
{
    r->has_usage = has && gpu_s >= 0;
    r->gpu_seconds = r->has_usage ? gpu_s : 0;
    r->elapsed_s =
        r->has_usage && has_elapsed && elapsed_s >= 0 ? elapsed_s : -1;
}

forge_rc_t forge_launch_advance(forge_launch_record_t *r, forge_state_t to,
                                long long now_ms)
{
    if (!forge_state_transition_legal(r->state, to))
        return FORGE_EINVAL;
    r->state = to;
    r->seq++;
    r->updated_at_ms = now_ms;
    if (to == FORGE_STATE_ACCEPTED)
        r->accepted_at_ms = now_ms;
    return FORGE_OK;
}

/* What the record's sealed value holds: the whole request until its job
 * id is recorded (or, while a retry may need it, until it can no longer),
 * then only what is still needed of it (held.h: kept, or made from the
 * request's bytes). The text to seal (*copy when it was
 * made here: it holds secrets, the caller wipes it), or NULL: nothing to
 * seal now. */
static const char *to_seal(const forge_launch_record_t *r,
                           const forge_held_t *kept, size_t *len, char **copy)
{
    forge_held_t *made = NULL;

    *copy = NULL;
    if (r->job_id && (kept || r->request) && !forge_launch_may_retry(r)) {
        if (!kept)
            kept = made = forge_held_of_trusted(r->request, r->request_len);
        if (kept)
            *copy = forge_held_to_json(kept, len);
        forge_held_free(made);
        return *copy;
    }
    *len = r->request_len;
    return r->request;
}

/* The request as the record carries it: sealed now (whole, or reduced to
 * what is kept), sealed as it was read (it could not be opened), or none.
 * *out new; NULL for none. */
static forge_rc_t sealed_request(const forge_launch_record_t *r,
                                 const forge_held_t *kept,
                                 const forge_sealer_t *s, json_t **out,
                                 forge_error_t *err)
{
    char *aad, *copy;
    size_t len = 0;
    const char *text = to_seal(r, kept, &len, &copy);
    forge_rc_t rc;

    *out = NULL;
    if (!text) {
        *out = json_incref(r->request_sealed);
        return FORGE_OK;
    }
    if (!s) {
        rc = forge_error_set(err, FORGE_EINVAL, "$.request",
                             "a request is never stored unsealed");
    } else {
        aad = forge_launch_seal_aad(r->launch_id, r->attempt);
        rc = forge_seal(s, aad, text, len, out, err);
        free(aad);
    }
    if (copy) {
        explicit_bzero(copy, len);
        free(copy);
    }
    return rc;
}

bool forge_launch_decided(const forge_launch_record_t *r, int attempt)
{
    return r->attempt >= attempt || r->refused_attempt >= attempt;
}

bool forge_launch_refused(const forge_launch_record_t *r, int attempt)
{
    return (r->attempt == attempt && r->state == FORGE_STATE_REJECTED) ||
           r->refused_attempt == attempt;
}

forge_rc_t forge_launch_record_encode(const forge_launch_record_t *r,
                                      const forge_sealer_t *s, json_t **out,
                                      forge_error_t *err)
{
    return forge_launch_record_encode_kept(r, NULL, s, out, err);
}

forge_rc_t forge_launch_record_encode_kept(const forge_launch_record_t *r,
                                           const forge_held_t *kept,
                                           const forge_sealer_t *s,
                                           json_t **out, forge_error_t *err)
{
    json_t *ids, *sealed = NULL;
    forge_rc_t rc;

    *out = NULL;
    if ((rc = sealed_request(r, kept, s, &sealed, err)))
        return rc;
    ids = json_array();
    for (size_t i = 0; i < r->component_count; i++)
        json_array_append_new(ids, json_integer(r->component_ids[i]));
    *out = json_pack(
        "{s:i, s:s, s:i, s:s, s:I, s:s, s:n, s:I, s:o, s:b, s:b, s:I, s:I, "
        "s:I, s:b}",
        "v", RECORD_VERSION, "launch_id", r->launch_id, "attempt", r->attempt,
        "state", forge_state_name(r->state) ? forge_state_name(r->state) : "",
        "seq", (json_int_t)r->seq, "digest", r->digest, "request", "job_id",
        (json_int_t)r->job_id, "components", ids, "cancel_requested",
        r->cancel_requested, "archived", r->archived, "accepted_at_ms",
        (json_int_t)r->accepted_at_ms, "updated_at_ms",
        (json_int_t)r->updated_at_ms, "missing_since_ms",
        (json_int_t)r->missing_since_ms, "cleaned", r->cleaned);
    if (sealed)
        json_object_set_new(*out, "request_sealed", sealed);
    if (r->slurm_states)
        json_object_set_new(*out, "slurm_states", json_string(r->slurm_states));
    if (r->refused_attempt > 0) /* optional: older records have none */
        json_object_set_new(*out, "refused_attempt",
                            json_integer(r->refused_attempt));
    if (r->sweep_due) /* optional: absent when false */
        json_object_set_new(*out, "sweep_due", json_true());
    if (r->restarts > 0) /* optional: absent until Slurm requeues the job */
        json_object_set_new(*out, "restarts", json_integer(r->restarts));
    if (r->restarts_staged > 0)
        json_object_set_new(*out, "restarts_staged",
                            json_integer(r->restarts_staged));
    forge_launch_put_retry(*out, r);
    if (r->has_usage) { /* optional: a terminal move's usage */
        json_object_set_new(*out, "gpu_seconds", json_integer(r->gpu_seconds));
        if (r->elapsed_s >= 0)
            json_object_set_new(*out, "elapsed_s", json_integer(r->elapsed_s));
    }
    forge_launch_put_logs(*out, r);
    return FORGE_OK;
}

/* The record's request: sealed (opened with s, or kept with the reason it
 * did not open), or in clear (a record from before sealing), or none. */
static void read_request(forge_launch_record_t *r, json_t *clear,
                         json_t *sealed, const forge_sealer_t *s)
{
    forge_error_t why = {0};
    char *aad;

    if (sealed && !json_is_null(sealed)) {
        aad = forge_launch_seal_aad(r->launch_id, r->attempt);
        if (forge_unseal(s, aad, sealed, &r->request, &r->request_len, &why)) {
            if (json_is_object(sealed)) /* else nothing worth keeping */
                r->request_sealed = json_incref(sealed);
            r->request_error = forge_xmalloc(sizeof(why));
            *r->request_error = why;
        } else {
            r->request_was_sealed = true;
        }
        free(aad);
    } else if (json_is_string(clear)) {
        r->request_len = json_string_length(clear);
        r->request = forge_xstrndup(json_string_value(clear), r->request_len);
    }
}

/* An optional count (restarts): absent, negative or too large is 0. */
static int count_of(long long v)
{
    return v > 0 && v <= INT_MAX ? (int)v : 0;
}

static int count_json(const json_t *v)
{
    return json_is_integer(v) ? count_of(json_integer_value(v)) : 0;
}

static forge_rc_t fill(forge_launch_record_t *r, json_t *o,
                       const forge_sealer_t *s, forge_error_t *err)
{
    json_t *request = NULL, *ids = NULL, *v;
    const char *id = NULL, *state = NULL, *digest = NULL;
    json_int_t version = 0, seq = 0, job = 0, acc = 0, upd = 0, miss = 0;
    int attempt = 0, cancel = 0, archived = 0;
    json_error_t jerr;
    size_t i;

    if (json_unpack_ex(o, &jerr, 0,
                       "{s:I, s:s, s:i, s:s, s:I, s:s, s:o, s:I, s:o, s:b, "
                       "s:b, s:I, s:I, s:I}",
                       "v", &version, "launch_id", &id, "attempt", &attempt,
                       "state", &state, "seq", &seq, "digest", &digest,
                       "request", &request, "job_id", &job, "components", &ids,
                       "cancel_requested", &cancel, "archived", &archived,
                       "accepted_at_ms", &acc, "updated_at_ms", &upd,
                       "missing_since_ms", &miss) != 0 ||
        version != RECORD_VERSION || strlen(digest) != 64 ||
        !json_is_array(ids) ||
        (!json_is_string(request) && !json_is_null(request)))
        return forge_error_set(err, FORGE_ESCHEMA, "$",
                               "not a version-%d launch record: %s",
                               RECORD_VERSION, jerr.text);
    r->launch_id = forge_xstrdup(id);
    r->attempt = attempt;
    r->state = forge_state_from_name(state);
    r->seq = (long)seq;
    memcpy(r->digest, digest, 65);
    read_request(r, request, json_object_get(o, "request_sealed"), s);
    r->job_id = (uint32_t)job;
    r->component_ids =
        forge_xcalloc(json_array_size(ids) + 1, sizeof(uint32_t));
    json_array_foreach(ids, i, v) r->component_ids[r->component_count++] =
        (uint32_t)json_integer_value(v);
    r->cancel_requested = cancel;
    r->archived = archived;
    r->accepted_at_ms = acc;
    r->updated_at_ms = upd;
    r->missing_since_ms = miss;
    r->cleaned = json_is_true(json_object_get(o, "cleaned")); /* optional */
    v = json_object_get(o, "slurm_states");                   /* optional */
    if (json_is_string(v))
        r->slurm_states = forge_xstrdup(json_string_value(v));
    v = json_object_get(o, "refused_attempt"); /* optional */
    if (json_is_integer(v) && json_integer_value(v) > 0 &&
        json_integer_value(v) <= INT_MAX)
        r->refused_attempt = (int)json_integer_value(v);
    r->sweep_due = json_is_true(json_object_get(o, "sweep_due")); /* optional */
    r->restarts = count_json(json_object_get(o, "restarts"));
    r->restarts_staged = count_json(json_object_get(o, "restarts_staged"));
    forge_launch_read_retry(r, o);
    v = json_object_get(o, "elapsed_s"); /* optional, as gpu_seconds */
    take_usage(r, json_is_integer(json_object_get(o, "gpu_seconds")),
               json_integer_value(json_object_get(o, "gpu_seconds")),
               json_is_integer(v), json_integer_value(v));
    forge_launch_read_logs(r, o);
    return FORGE_OK;
}

/* ---- decoding, the fast path ------------------------------------------
 *
 * A restore decodes every record of its partitions, and a general JSON
 * parse (a tree, a hash table per object, every string copied, the sealed
 * request's long base64 text among them) was most of its time. Records as
 * this worker writes them are simple: one object of known keys whose
 * values are integers, booleans, null, plain strings (no escape, no byte
 * outside printable ASCII), a list of integers and the sealed request's
 * object of three strings. fast_scan reads exactly that shape through the
 * scanner of json/jscan.h, borrowing the strings from the buffer; anything else
 * (an unknown or repeated key, an escape, a request in clear, a number that is
 * not a plain integer, trailing text) gives up, and the general path (fill)
 * decides, so both paths agree on every record: test_launch.c checks them
 * against each other. */

enum {
    K_V,
    K_ID,
    K_ATTEMPT,
    K_STATE,
    K_SEQ,
    K_DIGEST,
    K_REQUEST,
    K_JOB,
    K_COMPONENTS,
    K_CANCEL,
    K_ARCHIVED,
    K_ACCEPTED,
    K_UPDATED,
    K_MISSING,
    K_CLEANED,
    K_SEALED,
    K_STATES,
    K_REFUSED,
    K_SWEEP,
    K_RESTARTS,
    K_STAGED,
    K_MAX_TRIES,
    K_RETRY_ON,
    K_BACKOFF,
    K_EXCLUDE,
    K_TRY,
    K_CAUSE,
    K_EXCLUDED,
    K_NOT_BEFORE,
    K_GPU_SECONDS,
    K_ELAPSED,
    K__COUNT /* at most 32: fast_t.seen's bits */
};
#define K_REQUIRED ((1u << K_CLEANED) - 1) /* K_V .. K_MISSING */

typedef enum { T_INT, T_STR, T_BOOL, T_NULL, T_IDS, T_SEALED } kind_t;

#define KEY(name, kind)                                                        \
    {                                                                          \
        name, sizeof(name) - 1, kind                                           \
    }
typedef struct fast_key {
    const char *name;
    size_t len;
    kind_t kind;
} fast_key_t;

static const fast_key_t fast_keys[K__COUNT] = {
    KEY("v", T_INT),
    KEY("launch_id", T_STR),
    KEY("attempt", T_INT),
    KEY("state", T_STR),
    KEY("seq", T_INT),
    KEY("digest", T_STR),
    KEY("request", T_NULL),
    KEY("job_id", T_INT),
    KEY("components", T_IDS),
    KEY("cancel_requested", T_BOOL),
    KEY("archived", T_BOOL),
    KEY("accepted_at_ms", T_INT),
    KEY("updated_at_ms", T_INT),
    KEY("missing_since_ms", T_INT),
    KEY("cleaned", T_BOOL),
    KEY("request_sealed", T_SEALED),
    KEY("slurm_states", T_STR),
    KEY("refused_attempt", T_INT),
    KEY("sweep_due", T_BOOL),
    KEY("restarts", T_INT),
    KEY("restarts_staged", T_INT),
    KEY("retry_max_tries", T_INT),
    KEY("retry_on", T_STR),
    KEY("retry_backoff_s", T_INT),
    KEY("retry_exclude", T_BOOL),
    KEY("try", T_INT),
    KEY("retry_cause", T_STR),
    KEY("excluded_nodes", T_STR),
    KEY("retry_not_before_ms", T_INT),
    KEY("gpu_seconds", T_INT),
    KEY("elapsed_s", T_INT),
};

typedef struct fast {
    forge_jscan_t s;
    unsigned seen;
    long long num[K__COUNT]; /* integers and booleans */
    const char *str[K__COUNT];
    size_t str_len[K__COUNT];
    bool sealed; /* request_sealed is an object (not null) */
    forge_sealed_parts_t parts;
    uint32_t *ids;
    size_t id_count, id_size;
} fast_t;

static bool fast_string(fast_t *f, const char **s, size_t *n)
{
    forge_jscan_text_t t;

    if (!forge_jscan_plain(&f->s, &t))
        return false;
    *s = t.p;
    *n = t.n;
    return true;
}

static bool fast_ids(fast_t *f)
{
    long long v;

    if (!forge_jscan_eat(&f->s, '['))
        return false;
    if (forge_jscan_eat(&f->s, ']'))
        return true;
    do {
        if (!forge_jscan_int(&f->s, &v))
            return false;
        if (f->id_count == f->id_size) {
            f->id_size = f->id_size ? 2 * f->id_size : 4;
            f->ids = forge_xrealloc(f->ids, f->id_size * sizeof(*f->ids));
        }
        f->ids[f->id_count++] = (uint32_t)v;
    } while (forge_jscan_eat(&f->s, ','));
    return forge_jscan_eat(&f->s, ']');
}

/* The next member's key ("name":) looked up in keys: its index, or -1
 * (malformed, or a key not in keys: the fast reader gives up either way). */
static int fast_key(fast_t *f, const fast_key_t *keys, int count)
{
    const char *key;
    size_t n;

    if (!fast_string(f, &key, &n) || !forge_jscan_eat(&f->s, ':'))
        return -1;
    for (int i = 0; i < count; i++)
        if (keys[i].len == n && !memcmp(keys[i].name, key, n))
            return i;
    return -1;
}

static const fast_key_t sealed_keys[3] = {
    KEY("kid", T_STR),
    KEY("iv", T_STR),
    KEY("ct", T_STR),
};

/* {"kid", "iv", "ct"} strings, each once, in any order; or null. */
static bool fast_sealed(fast_t *f)
{
    const char **s[3] = {&f->parts.kid, &f->parts.iv, &f->parts.ct};
    size_t *len[3] = {&f->parts.kid_len, &f->parts.iv_len, &f->parts.ct_len};
    unsigned seen = 0;

    if (forge_jscan_word(&f->s, "null"))
        return true;
    if (!forge_jscan_eat(&f->s, '{'))
        return false;
    do {
        int k = fast_key(f, sealed_keys, 3);
        if (k < 0 || seen & (1u << k) || !fast_string(f, s[k], len[k]))
            return false;
        seen |= 1u << k;
    } while (forge_jscan_eat(&f->s, ','));
    f->sealed = true;
    return seen == 7 && forge_jscan_eat(&f->s, '}');
}

static bool fast_value(fast_t *f, int k)
{
    switch (fast_keys[k].kind) {
    case T_INT:
        return forge_jscan_int(&f->s, &f->num[k]);
    case T_STR:
        return fast_string(f, &f->str[k], &f->str_len[k]);
    case T_BOOL:
        if (forge_jscan_word(&f->s, "true"))
            return (f->num[k] = 1);
        return forge_jscan_word(&f->s, "false");
    case T_NULL:
        return forge_jscan_word(&f->s, "null");
    case T_IDS:
        return fast_ids(f);
    case T_SEALED:
        return fast_sealed(f);
    }
    return false;
}

static bool fast_scan(fast_t *f)
{
    if (!forge_jscan_eat(&f->s, '{'))
        return false;
    do {
        int k = fast_key(f, fast_keys, K__COUNT);
        if (k < 0 || f->seen & (1u << k) || !fast_value(f, k))
            return false;
        f->seen |= 1u << k;
    } while (forge_jscan_eat(&f->s, ','));
    if (!forge_jscan_eat(&f->s, '}') || (f->seen & K_REQUIRED) != K_REQUIRED)
        return false;
    forge_jscan_ws(&f->s); /* trailing whitespace, and nothing else */
    return f->s.p == f->s.end && f->num[K_V] == RECORD_VERSION &&
           f->str_len[K_DIGEST] == 64 && f->str_len[K_STATE] < 32;
}

/* "forge-state/v1/<id>/<attempt>" into room (long enough: the caller
 * checked), as forge_launch_seal_aad writes it, without printf. */
static void aad_into(char *room, const char *id, int attempt)
{
    char digits[12];
    size_t n = 0, at = sizeof(SEAL_AAD_PREFIX) - 1, len = strlen(id);
    unsigned v = attempt < 0 ? 0u - (unsigned)attempt : (unsigned)attempt;

    memcpy(room, SEAL_AAD_PREFIX, at);
    memcpy(room + at, id, len);
    at += len;
    room[at++] = '/';
    if (attempt < 0)
        room[at++] = '-';
    do
        digits[n++] = (char)('0' + v % 10);
    while (v /= 10);
    while (n)
        room[at++] = digits[--n];
    room[at] = '\0';
}

/* The request of a record the fast path read: sealed (opened with s, or
 * kept with the reason it did not open), or none; as read_request. */
static void fast_request(forge_launch_record_t *r, const fast_t *f,
                         const forge_sealer_t *s)
{
    const forge_sealed_parts_t *v = &f->parts;
    forge_error_t why = {0};
    char room[128], *aad;

    if (!f->sealed)
        return;
    /* on the stack when it fits (one record per call, at restore) */
    if (sizeof(SEAL_AAD_PREFIX) + strlen(r->launch_id) + 12 <= sizeof(room)) {
        aad = room;
        aad_into(room, r->launch_id, r->attempt);
    } else {
        aad = forge_launch_seal_aad(r->launch_id, r->attempt);
    }
    if (forge_unseal_parts(s, aad, v, &r->request, &r->request_len, &why)) {
        r->request_sealed =
            json_pack("{s:s%, s:s%, s:s%}", "kid", v->kid, v->kid_len, "iv",
                      v->iv, v->iv_len, "ct", v->ct, v->ct_len);
        r->request_error = forge_xmalloc(sizeof(why));
        *r->request_error = why;
    } else {
        r->request_was_sealed = true;
    }
    if (aad != room)
        free(aad);
}

/* A string the fast path read, when it saw the key (else NULL). */
static const char *fast_text(const fast_t *f, int k, size_t *n)
{
    *n = f->seen & (1u << k) ? f->str_len[k] : 0;
    return f->seen & (1u << k) ? f->str[k] : NULL;
}

static void fast_retry(forge_launch_record_t *r, const fast_t *f)
{
    forge_retry_read_t t = {0};

    t.max_tries = f->num[K_MAX_TRIES];
    t.backoff_s = f->num[K_BACKOFF];
    t.try_num = f->num[K_TRY];
    t.not_before_ms = f->num[K_NOT_BEFORE];
    t.exclude = f->num[K_EXCLUDE] != 0;
    t.on = fast_text(f, K_RETRY_ON, &t.on_len);
    t.cause = fast_text(f, K_CAUSE, &t.cause_len);
    t.excluded = fast_text(f, K_EXCLUDED, &t.excluded_len);
    forge_launch_take_retry(r, &t);
}

/* The record from what fast_scan read, as fill makes it. */
static forge_launch_record_t *fast_record(fast_t *f, const forge_sealer_t *s)
{
    forge_launch_record_t *r = forge_xcalloc(1, sizeof(*r));
    char state[32];

    r->launch_id = forge_xstrndup(f->str[K_ID], f->str_len[K_ID]);
    r->attempt = (int)f->num[K_ATTEMPT];
    memcpy(state, f->str[K_STATE], f->str_len[K_STATE]);
    state[f->str_len[K_STATE]] = '\0';
    r->state = forge_state_from_name(state);
    r->seq = (long)f->num[K_SEQ];
    memcpy(r->digest, f->str[K_DIGEST], 64);
    r->digest[64] = '\0';
    fast_request(r, f, s);
    r->job_id = (uint32_t)f->num[K_JOB];
    r->component_ids = forge_xcalloc(f->id_count + 1, sizeof(uint32_t));
    if (f->id_count)
        memcpy(r->component_ids, f->ids, f->id_count * sizeof(uint32_t));
    r->component_count = f->id_count;
    r->cancel_requested = f->num[K_CANCEL];
    r->archived = f->num[K_ARCHIVED];
    r->accepted_at_ms = f->num[K_ACCEPTED];
    r->updated_at_ms = f->num[K_UPDATED];
    r->missing_since_ms = f->num[K_MISSING];
    r->cleaned = f->num[K_CLEANED];
    if (f->seen & (1u << K_STATES))
        r->slurm_states =
            forge_xstrndup(f->str[K_STATES], f->str_len[K_STATES]);
    if (f->seen & (1u << K_REFUSED) && f->num[K_REFUSED] > 0 &&
        f->num[K_REFUSED] <= INT_MAX)
        r->refused_attempt = (int)f->num[K_REFUSED];
    r->sweep_due = f->num[K_SWEEP] != 0;
    r->restarts = count_of(f->num[K_RESTARTS]);
    r->restarts_staged = count_of(f->num[K_STAGED]);
    fast_retry(r, f);
    take_usage(r, f->seen & (1u << K_GPU_SECONDS), f->num[K_GPU_SECONDS],
               f->seen & (1u << K_ELAPSED), f->num[K_ELAPSED]);
    return r;
}

/* ---- decoding ----------------------------------------------------------- */

forge_rc_t forge_launch_record_decode(const char *buf, size_t len,
                                      const forge_sealer_t *s,
                                      forge_launch_record_t **out,
                                      forge_error_t *err)
{
    fast_t f = {.s = {buf, buf + len}};
    bool fast = fast_scan(&f);

    *out = fast ? fast_record(&f, s) : NULL;
    free(f.ids);
    if (fast)
        return FORGE_OK;
    return forge_launch_record_decode_general(buf, len, s, out, err);
}

forge_rc_t forge_launch_record_decode_general(const char *buf, size_t len,
                                              const forge_sealer_t *s,
                                              forge_launch_record_t **out,
                                              forge_error_t *err)
{
    json_error_t jerr;
    json_t *o = json_loadb(buf, len, JSON_ALLOW_NUL, &jerr);
    forge_launch_record_t *r;
    forge_rc_t rc;

    *out = NULL;
    if (!o)
        return forge_error_set(err, FORGE_EINVALID_JSON, "$", "%s", jerr.text);
    r = forge_xcalloc(1, sizeof(*r));
    rc = fill(r, o, s, err);
    json_decref(o);
    if (rc) {
        forge_launch_record_free(r);
        return rc;
    }
    *out = r;
    return FORGE_OK;
}
