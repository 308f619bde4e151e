/* SPDX-License-Identifier: Apache-2.0 */
/*
 * request.h - LaunchRequest and CancelRequest (docs/CONTRACT.md section 2,
 * schemas/ *.json): parsing and the rules that need nothing but the document.
 *
 * A request arrives as a structured CloudEvent (type forge.launch.requested
 * or forge.launch.cancel_requested, the request in `data`) or bare with
 * "kind": "launch" | "cancel". Unknown fields are ignored and never kept, so
 * nothing unknown can be rendered (inside `logs` they are refused:
 * request_logs.h). Errors carry the contract's code and a
 * JSON path into the document as received ("$.data.pools[1].nodes").
 *
 * Rules that need configuration (image exists, profile format, mount
 * prefixes, GPU series) live in request_check.h.
 */
#ifndef FORGE_REQUEST_H
#define FORGE_REQUEST_H

#include "base/error.h"
#include "retry/retry.h"
#include "request/jdoc.h"

#include <stdbool.h>
#include <stddef.h>

#define FORGE_REQUEST_MAX_BYTES (1024 * 1024)
#define FORGE_POOLS_MAX         8
/* One command argument or env value, in characters: at most 64 KiB of
 * UTF-8, well below the kernel's 128 KiB limit on one argv string. */
#define FORGE_ARG_MAX_CHARS 16384

typedef enum forge_image_format {
    FORGE_IMAGE_SQSH,
    FORGE_IMAGE_SIF,
} forge_image_format_t;

typedef struct forge_kv {
    char *key;
    char *value;
} forge_kv_t;

typedef struct forge_mount {
    char *source; /* as written: relative to the storage root, or absolute */
    char *target; /* absolute, inside the container */
    bool read_only;
} forge_mount_t;

typedef struct forge_pool {
    char *name;
    char *series;
    int nodes;
    int gpus_per_node;
    int tasks_per_node;
    int cpus_per_task;    /* 0: not asked */
    long mem_per_node_mb; /* 0: not asked */
} forge_pool_t;

/* A valid LaunchRequest. Every string is owned by the struct. */
typedef struct forge_launch {
    char *launch_id;
    int attempt;
    char *project, *owner, *name; /* optional */
    char *framework_kind;         /* optional */
    char *framework_runtime_id;   /* optional */
    char *image_path;
    forge_image_format_t image_format;
    char **command; /* argv, command_count >= 1, NULL-terminated */
    size_t command_count;
    char *workdir; /* optional */
    forge_kv_t *env;
    size_t env_count;
    forge_kv_t *secret_env; /* secret: like env, and redacted wherever seen */
    size_t secret_env_count;
    char *tenant; /* optional: the site's tenant (FORGE_TENANTS_FILE) */
    forge_mount_t *mounts;
    size_t mount_count;
    forge_pool_t *pools;
    size_t pool_count;
    forge_kv_t *roles; /* role -> pool name */
    size_t role_count;
    int time_limit_minutes;          /* 0: the configured default */
    char *partition, *account, *qos; /* optional overrides */
    char *ingest_endpoint;           /* optional, with ingest_token */
    char *ingest_token; /* secret: never rendered, logged or published */
    forge_kv_t *labels;
    size_t label_count;
    /* optional (request/checkpoint.h): the signal Slurm sends the job's
     * steps checkpoint_seconds before its end, "USR1" say; a static name
     * of the allow-list, never owned; NULL: none */
    const char *checkpoint_signal;
    int checkpoint_seconds; /* 0..65535 */
    /* the fleet's retry policy as this request overrides it (issue 26):
     * retry.set names the keys it set (retry/retry.h) */
    forge_retry_override_t retry;
    /* logs.live (issue 29, request/request_logs.h), a tri-state:
     * FORGE_LIVE_LOGS_UNSET (-1: absent, the fleet's FORGE_LOG_LIVE
     * decides), _FALSE (0), _TRUE (1) (config/config.h) */
    int live_logs;
} forge_launch_t;

typedef struct forge_cancel {
    char *launch_id;
    int attempt;  /* 0: the latest attempt */
    char *reason; /* optional */
} forge_cancel_t;

typedef enum forge_request_kind {
    FORGE_REQUEST_LAUNCH,
    FORGE_REQUEST_CANCEL,
} forge_request_kind_t;

typedef struct forge_request {
    forge_request_kind_t kind;
    bool cloudevent;       /* arrived as a structured CloudEvent */
    char *event_id;        /* the CloudEvent's id, NULL when bare */
    forge_launch_t launch; /* kind == FORGE_REQUEST_LAUNCH */
    forge_cancel_t cancel; /* kind == FORGE_REQUEST_CANCEL */
} forge_request_t;

/*
 * Parses and validates one message value (not NUL-terminated; at most
 * FORGE_REQUEST_MAX_BYTES). On success *out is new (forge_request_destroy).
 * On failure *out is NULL and err holds the code and JSON path.
 */
forge_rc_t forge_request_parse(const char *buf, size_t len,
                               forge_request_t **out,
                               forge_error_t *err) FORGE_WARN_UNUSED;

/*
 * forge_request_parse(), and the parsed document too: on success *doc is
 * the JSON tree the request was read from (new; forge_jdoc_free), for a
 * caller that frees it later than the request's parse (forge_prepare:
 * see prepare.c); NULL on failure. The request never points into it.
 */
forge_rc_t forge_request_parse_keep(const char *buf, size_t len,
                                    forge_request_t **out, forge_jdoc_t **doc,
                                    forge_error_t *err) FORGE_WARN_UNUSED;

/* Calls fn(ctx, secret) for every secret of req: its ingest token and each
 * secret_env value (req may be NULL or a cancel: none). What the worker
 * registers for redaction while it holds req, and what its tail hides. */
void forge_request_each_secret(const forge_request_t *req,
                               void (*fn)(void *ctx, const char *secret),
                               void *ctx);

void forge_request_destroy(forge_request_t *req); /* NULL-safe */

/*
 * For a message that failed to parse: the launch_id (new) and attempt it
 * names (1 when it names none), so the refusal can be published as
 * REJECTED; NULL when it names no well-formed launch_id, or an attempt
 * that is not an integer from 1 to 1000000 (a string "2", 2.5, 0): no
 * (launch, attempt) can be told, and the message goes to the DLQ.
 */
char *forge_request_salvage_id(const char *buf, size_t len, int *attempt);

/* The pool a role maps to, or NULL. Borrowed from launch. */
const forge_pool_t *forge_launch_role_pool(const forge_launch_t *launch,
                                           const char *role);

const char *forge_image_format_name(forge_image_format_t f);

#endif
