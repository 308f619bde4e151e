/*
 * launch.c - launch records: state machine steps, digest, and the JSON
 * form kept in the state topic (launch.h). The encoding carries a version
 * ("v": 1) so a later worker can read records an older one wrote.
 */
#include "launch.h"
#include "util.h"

#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RECORD_VERSION 1

void forge_digest_hex(const void *bytes, size_t len, char out[FORGE_DIGEST_HEX])
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int n = 0;

    EVP_Digest(bytes, len, md, &n, EVP_sha256(), NULL);
    for (unsigned i = 0; i < n && i < 32; i++)
        snprintf(out + 2 * i, 3, "%02x", md[i]);
    out[64] = '\0';
}

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
    forge_digest_hex(request ? request : "", request ? request_len : 0,
                     r->digest);
    return r;
}

void forge_launch_record_free(forge_launch_record_t *r)
{
    if (!r)
        return;
    free(r->launch_id);
    free(r->request);
    free(r->component_ids);
    free(r);
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

json_t *forge_launch_record_encode(const forge_launch_record_t *r)
{
    json_t *ids = json_array(), *request = NULL;

    for (size_t i = 0; i < r->component_count; i++)
        json_array_append_new(ids, json_integer(r->component_ids[i]));
    /* A request that parsed is valid UTF-8; anything else is not kept. */
    if (r->request)
        request = json_stringn(r->request, r->request_len);
    return json_pack(
        "{s:i, s:s, s:i, s:s, s:I, s:s, s:o, s:I, s:o, s:b, s:b, s:I, s:I, "
        "s:I, s:b}",
        "v", RECORD_VERSION, "launch_id", r->launch_id, "attempt", r->attempt,
        "state", forge_state_name(r->state) ? forge_state_name(r->state) : "",
        "seq", (json_int_t)r->seq, "digest", r->digest, "request",
        request ? request : json_null(), "job_id", (json_int_t)r->job_id,
        "components", ids, "cancel_requested", r->cancel_requested, "archived",
        r->archived, "accepted_at_ms", (json_int_t)r->accepted_at_ms,
        "updated_at_ms", (json_int_t)r->updated_at_ms, "missing_since_ms",
        (json_int_t)r->missing_since_ms, "cleaned", r->cleaned);
}

static forge_rc_t fill(forge_launch_record_t *r, json_t *o, forge_error_t *err)
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
    if (json_is_string(request)) {
        r->request_len = json_string_length(request);
        r->request = forge_xstrndup(json_string_value(request), r->request_len);
    }
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
    return FORGE_OK;
}

forge_rc_t forge_launch_record_decode(const char *buf, size_t len,
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
    rc = fill(r, o, err);
    json_decref(o);
    if (rc) {
        forge_launch_record_free(r);
        return rc;
    }
    *out = r;
    return FORGE_OK;
}
