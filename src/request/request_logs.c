/* SPDX-License-Identifier: Apache-2.0 */
/*
 * request_logs.c - a LaunchRequest's `logs` object (request_logs.h):
 * {"live": bool}, kept as forge_launch_t's tri-state live_logs
 * (FORGE_LIVE_LOGS_UNSET when the request says nothing, config/config.h).
 * Its rules are schemas/launch-request.v1.json's `logs`: unlike the
 * request's other objects it names every member it may have, so a member
 * this version does not know is refused rather than ignored.
 */
#include "request/request_logs.h"
#include "config/config.h"
#include "request/request.h"

#include <string.h>

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static forge_rc_t live_flag(const forge_jv_t *v, void *target,
                            forge_field_path_t *p, forge_error_t *err)
{
    if (!forge_jv_is_bool(v))
        return forge_field_fail(err, FORGE_ESCHEMA, p, "must be true or false");
    ((forge_launch_t *)target)->live_logs =
        forge_jv_is_true(v) ? FORGE_LIVE_LOGS_TRUE : FORGE_LIVE_LOGS_FALSE;
    return FORGE_OK;
}

static const forge_field_t logs_fields[] = {
    {"live", FORGE_FIELD_CUSTOM, 0, false, NULL, 0, 0, 0, 0, 0, live_flag},
};

/* Whether the member v is a row of logs_fields (all of its key: a key may
 * hold NUL). */
static bool known_member(const forge_jv_t *v)
{
    for (size_t i = 0; i < COUNT(logs_fields); i++)
        if (v->key_len == strlen(logs_fields[i].key) &&
            !memcmp(v->key, logs_fields[i].key, v->key_len))
            return true;
    return false;
}

forge_rc_t forge_request_logs_object(const forge_jv_t *v, void *target,
                                     forge_field_path_t *p, forge_error_t *err)
{
    forge_rc_t rc = forge_field_parse_table(v, logs_fields, COUNT(logs_fields),
                                            target, p, err);

    for (size_t i = 0; !rc && i < forge_jv_size(v); i++) {
        const forge_jv_t *member = forge_jv_at(v, i);
        if (known_member(member))
            continue;
        size_t old = forge_field_path_key(p, member->key);
        rc = forge_field_fail(err, FORGE_ESCHEMA, p,
                              "is not a member of logs (it has only \"live\")");
        forge_field_path_pop(p, old);
    }
    return rc;
}
