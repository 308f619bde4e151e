/* SPDX-License-Identifier: Apache-2.0 */
/*
 * launch.c - launch records: state machine steps, digest, and the JSON
 * form kept in the state topic (launch.h). The encoding carries a version
 * ("v": 1) so a later worker can read records an older one wrote; the
 * request goes in sealed (seal.h), old records' clear requests are read.
 */
#include "launch/launch.h"
#include "core/util.h"

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
    free(r);
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

char *forge_launch_seal_aad(const char *launch_id, int attempt)
{
    size_t n = sizeof(SEAL_AAD_PREFIX) + strlen(launch_id) + 16;
    char *aad = forge_xmalloc(n);

    snprintf(aad, n, SEAL_AAD_PREFIX "%s/%d", launch_id, attempt);
    return aad;
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

/* The request as the record carries it: sealed now, sealed as it was read
 * (it could not be opened), or none. *out new; NULL for none. */
static forge_rc_t sealed_request(const forge_launch_record_t *r,
                                 const forge_sealer_t *s, json_t **out,
                                 forge_error_t *err)
{
    char *aad;
    forge_rc_t rc;

    *out = NULL;
    if (!r->request) {
        *out = json_incref(r->request_sealed);
        return FORGE_OK;
    }
    if (!s)
        return forge_error_set(err, FORGE_EINVAL, "$.request",
                               "a request is never stored unsealed");
    aad = forge_launch_seal_aad(r->launch_id, r->attempt);
    rc = forge_seal(s, aad, r->request, r->request_len, out, err);
    free(aad);
    return rc;
}

forge_rc_t forge_launch_record_encode(const forge_launch_record_t *r,
                                      const forge_sealer_t *s, json_t **out,
                                      forge_error_t *err)
{
    json_t *ids, *sealed = NULL;
    forge_rc_t rc;

    *out = NULL;
    if ((rc = sealed_request(r, s, &sealed, err)))
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
    return FORGE_OK;
}

forge_rc_t forge_launch_record_decode(const char *buf, size_t len,
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
