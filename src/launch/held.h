/* SPDX-License-Identifier: Apache-2.0 */
/*
 * held.h - what the launch table keeps of a launch's parsed request
 * (owner.h): the labels its events carry, and its secrets (the ingest
 * token, each secret_env value), registered for redaction while the
 * launch is held. Nothing else of the parsed request is read once the
 * launch is accepted: a submit is prepared from the request's bytes
 * (launch.h: the record keeps them, sealed on the state topic), and so is
 * an archive (its pools, owner and secrets). One allocation, so a table
 * of 100,000 launches does not carry 100,000 parsed requests.
 *
 * Threads: none of its own; a held value is read-only once made, and
 * made on any thread (a restore's reading threads make them).
 */
#ifndef FORGE_HELD_H
#define FORGE_HELD_H

#include "request/request.h"

#include <stddef.h>

typedef struct forge_held {
    const forge_kv_t *labels; /* label_count of them */
    size_t label_count;
    const char *const *secrets; /* secret_count of them */
    size_t secret_count;
} forge_held_t;

/* What req holds (new), or NULL: req is NULL or a cancel, or it has no
 * label and no secret. */
forge_held_t *forge_held_of_request(const forge_request_t *req);

/*
 * The same from a request's bytes, without validating them again: for a
 * request the worker itself accepted and stored (a record's sealed request,
 * which authenticates: launch.h), whose validation passed when it came in.
 * Reads "labels", "ingest"."token" and "secret_env" of the request (of its
 * "data" for a CloudEvent), string values only, as the parse keeps them.
 * NULL: nothing to keep, or not a JSON object.
 */
forge_held_t *forge_held_of_trusted(const char *buf, size_t len);

/* Calls fn(ctx, secret) for each secret of h (NULL: none). */
void forge_held_each_secret(const forge_held_t *h,
                            void (*fn)(void *ctx, const char *secret),
                            void *ctx);

void forge_held_free(forge_held_t *h); /* NULL-safe; secrets wiped */

#endif
