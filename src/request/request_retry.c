/* SPDX-License-Identifier: Apache-2.0 */
/*
 * request_retry.c - a LaunchRequest's `retry` object (request_retry.h):
 * {"max_tries": 1..10, "on": [cause, ...], "backoff_s": 0..600,
 * "exclude_failed_nodes": bool}, every key optional; what it sets
 * overrides the fleet's policy (FORGE_RETRY_*), key by key, and what it
 * leaves out stays the fleet's (retry/retry.h: forge_retry_policy_merge).
 * Its rules are schemas/launch-request.v1.json's `retry`.
 */
#include "request/request_retry.h"
#include "base/buf.h"
#include "retry/retry.h"
#include "request/request.h"

#include <stddef.h>
#include <string.h>

#define COUNT(a)  (sizeof(a) / sizeof((a)[0]))
#define RT(field) offsetof(forge_retry_policy_t, field)

/* `on`: causes by name (retry/retry.h), each once; [] names none (no try
 * is then ever retried). */
static forge_rc_t causes_array(const forge_jv_t *v, void *target,
                               forge_field_path_t *p, forge_error_t *err)
{
    forge_retry_policy_t *policy = target;
    forge_rc_t rc = FORGE_OK;

    if (!forge_jv_is_array(v))
        return forge_field_fail(err, FORGE_ESCHEMA, p, "must be an array");
    policy->causes = 0;
    for (size_t i = 0; !rc && i < forge_jv_size(v); i++) {
        const forge_jv_t *name = forge_jv_at(v, i);
        size_t old = forge_field_path_index(p, i);
        unsigned bit =
            forge_retry_cause_named(forge_jv_str(name), forge_jv_len(name));
        if (!bit) {
            forge_buf_t all = FORGE_BUF_INIT;
            forge_retry_causes_format(~0u, &all);
            rc = forge_field_fail(err, FORGE_ESCHEMA, p,
                                  "must be one of the causes %s",
                                  forge_buf_str(&all));
            forge_buf_clear(&all);
        }
        forge_field_path_pop(p, old);
        if (!rc && (policy->causes & bit)) /* the schema's uniqueItems */
            rc = forge_field_fail(err, FORGE_ESCHEMA, p, "names %s twice",
                                  forge_retry_cause_name(bit));
        policy->causes |= bit;
    }
    return rc;
}

static const forge_field_t retry_fields[] = {
    {"max_tries", FORGE_FIELD_INT, RT(max_tries), false, NULL, 0, 1,
     FORGE_RETRY_MAX_TRIES, 0, 0, NULL},
    {"on", FORGE_FIELD_CUSTOM, 0, false, NULL, 0, 0, 0, 0, 0, causes_array},
    {"backoff_s", FORGE_FIELD_INT, RT(backoff_s), false, NULL, 0, 0,
     FORGE_RETRY_BACKOFF_MAX, 0, 0, NULL},
    {"exclude_failed_nodes", FORGE_FIELD_BOOL, RT(exclude_failed_nodes), false,
     NULL, 0, 0, 0, 0, 0, NULL},
};

/* The FORGE_RETRY_SET_* bit of each row of retry_fields, in order. */
static const unsigned retry_set[COUNT(retry_fields)] = {
    FORGE_RETRY_SET_MAX_TRIES,
    FORGE_RETRY_SET_CAUSES,
    FORGE_RETRY_SET_BACKOFF,
    FORGE_RETRY_SET_EXCLUDE,
};

forge_rc_t forge_request_retry_object(const forge_jv_t *v, void *target,
                                      forge_field_path_t *p, forge_error_t *err)
{
    forge_retry_override_t *o = &((forge_launch_t *)target)->retry;
    forge_rc_t rc = forge_field_parse_table(
        v, retry_fields, COUNT(retry_fields), &o->value, p, err);

    for (size_t i = 0; !rc && i < COUNT(retry_fields); i++)
        if (forge_jv_get(v, retry_fields[i].key))
            o->set |= retry_set[i];
    return rc;
}
