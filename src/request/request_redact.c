/* SPDX-License-Identifier: Apache-2.0 */
/*
 * request_redact.c - a request message's bytes with its known secret
 * values replaced (request_redact.h), for the DLQ's copy of a message the
 * worker refused (issue 40: a request without a launch_id went there with
 * its ingest token in clear). jansson reads the bytes and writes the
 * object back in the order it was read; no state, no threads.
 */
#include "request/request_redact.h"
#include "base/util.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#define REDACTED "[REDACTED]"

/* The ingest token replaced; true when there was one. */
static bool redact_token(json_t *request)
{
    json_t *ingest = json_object_get(request, "ingest");

    if (!json_is_object(ingest) || !json_object_get(ingest, "token"))
        return false;
    json_object_set_new(ingest, "token", json_string(REDACTED));
    return true;
}

/* Every secret_env value replaced; true when there was one. */
static bool redact_secret_env(json_t *request)
{
    json_t *env = json_object_get(request, "secret_env"), *value;
    const char *name;
    void *tmp;
    bool any = false;

    if (!json_is_object(env))
        return false;
    json_object_foreach_safe(env, tmp, name, value)
    {
        json_object_set_new(env, name, json_string(REDACTED));
        any = true;
    }
    return any;
}

char *forge_request_redacted_copy(const char *bytes, size_t len,
                                  size_t *out_len, const char **which)
{
    static const char *const said[] = {NULL, "ingest.token", "secret_env",
                                       "ingest.token,secret_env"};
    json_t *request = json_loadb(bytes, len, JSON_ALLOW_NUL, NULL);
    char *copy = NULL;
    int what = 0;

    if (json_is_object(request))
        what = (redact_token(request) ? 1 : 0) |
               (redact_secret_env(request) ? 2 : 0);
    if (what) {
        copy = json_dumps(request, JSON_COMPACT);
        if (!copy) /* jansson out of memory: never the secret instead */
            copy = forge_xstrdup("{\"withheld\": \"" REDACTED "\"}");
        *out_len = strlen(copy);
        *which = said[what];
    }
    json_decref(request);
    return copy;
}
