/* SPDX-License-Identifier: Apache-2.0 */
/*
 * held.h - what the launch table keeps of a launch's parsed request
 * (owner.h), and all a launch needs of it once its job id is recorded:
 * the labels its events carry, its secrets (the ingest token, each
 * secret_env value: registered for redaction while the launch is held,
 * and redacted from its archive's tail), its pools' names (the logs to
 * archive), the tenant it names (whose the archive is), its logs.live
 * (whether its output is tailed live, issue 29: config/config.h's
 * forge_live_logs_wanted), and its credentials (the ingest token, env and
 * secret_env by name: what a run of its job that Slurm requeued is staged
 * again, render.h). Nothing else
 * of the parsed request is read once the launch is accepted: a submit is
 * prepared from the request's bytes, which the record keeps only until
 * its job id is recorded (launch.h); from then on the record carries
 * this, sealed in the request's place (forge_held_to_json), and the
 * archive is made from it. One allocation, so a table of 100,000 launches
 * does not carry 100,000 parsed requests.
 *
 * Threads: none of its own; a held value is read-only once made, and
 * made on any thread (a restore's reading threads make them).
 */
#ifndef FORGE_HELD_H
#define FORGE_HELD_H

#include "base/buf.h"
#include "request/request.h"

#include <stdbool.h>
#include <stddef.h>

typedef struct forge_held {
    const forge_kv_t *labels; /* label_count of them */
    size_t label_count;
    const forge_kv_t *env; /* env_count of them, in the request's order */
    size_t env_count;
    const forge_kv_t *secret_env; /* the same; records written before they
                                     were kept name them "1", "2", ... */
    size_t secret_env_count;
    const char *token;          /* the ingest token; NULL: none */
    const char *const *secrets; /* the token, then secret_env's values */
    size_t secret_count;
    const char *const *pools; /* pool_count names, in the request's order */
    size_t pool_count;
    const char *tenant; /* the tenant the request names; NULL: none */
    /* the request's logs.live: FORGE_LIVE_LOGS_UNSET (-1: absent), _FALSE
     * (0) or _TRUE (1) (config/config.h) */
    int live_logs;
} forge_held_t;

/* What req holds (new), or NULL: req is NULL or a cancel. */
forge_held_t *forge_held_of_request(const forge_request_t *req);

/*
 * The same from a request's bytes, without validating them again: for a
 * request the worker itself accepted and stored (a record's sealed request,
 * which authenticates: launch.h), whose validation passed when it came in,
 * or what forge_held_to_json made of one. Reads "labels", "env",
 * "ingest"."token", "secret_env", "pools"[]."name" and "tenant" of the
 * request (of its "data" for a CloudEvent), string values only, as the
 * parse keeps them, and "logs"."live" (a boolean; anything else: unset).
 * NULL: not a JSON object.
 */
forge_held_t *forge_held_of_trusted(const char *buf, size_t len);

/* h as a request reduced to what it holds (new text, NUL-terminated; it
 * holds the secrets: the caller wipes it), which forge_held_of_trusted
 * reads back the same: {"labels": {...}, "env": {...}, "secret_env":
 * {NAME: secret, ...}, "ingest": {"token": ...}, "pools": [{"name": ...},
 * ...], "tenant": ..., "logs": {"live": true|false}} ("ingest", "tenant"
 * and "logs" only when h has them). */
char *forge_held_to_json(const forge_held_t *h, size_t *len);

/* The credentials file's bytes for h (render.h: token, env, secret_env),
 * appended to out (secrets: the caller wipes them). False, out untouched:
 * h is NULL, holds none, or came from a record written before they were
 * kept (its secret_env numbered, not named). */
bool forge_held_credentials(const forge_held_t *h, forge_buf_t *out);

/* A copy of h (new), or NULL for NULL. */
forge_held_t *forge_held_copy(const forge_held_t *h);

/* Calls fn(ctx, secret) for each secret of h (NULL: none). */
void forge_held_each_secret(const forge_held_t *h,
                            void (*fn)(void *ctx, const char *secret),
                            void *ctx);

void forge_held_free(forge_held_t *h); /* NULL-safe; secrets wiped */

#endif
