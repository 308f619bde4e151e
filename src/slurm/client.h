/* SPDX-License-Identifier: Apache-2.0 */
/*
 * slurm/client.h - forge-worker's slurmrestd client: one object per thread
 * that talks to Slurm (connection reuse is per object; objects are not
 * shared between threads), JWT auth, bounded retries, and the operations the
 * worker needs. Nothing here ever runs sbatch or ssh: REST + JWT only.
 *
 * Every call returns a forge_slurm_status_t and fills a caller-owned
 * forge_slurm_result_t with the HTTP status, Slurm's first error and a
 * message. The status says what the caller may do next:
 *   TRANSPORT  nothing of the request left (connect refused, name or TLS
 *              failure) - retried here; safe to retry later
 *   TIMED_OUT  sent, no complete answer (timeout, connection closed or reset,
 *              garbled answer; a kept connection found closed after the
 *              request went out, which is never sent again): the outcome
 *              is unknown. Reads were retried; a submit never is - look
 *              its tag up first
 *   AUTH       the token was refused (401, 511, or 500 with Slurm's auth
 *              error before 24.11) even after one reload/re-mint: stop
 *   REJECTED   4xx: Slurm said no (bad partition, invalid field): never
 *              retried; message carries Slurm's errors[] text
 *   NOT_FOUND  404 for a job id (error 2017): unknown or aged out
 *   SERVER     5xx after the bounded retries (e.g. slurmctld unreachable)
 *   PROTOCOL   2xx whose body is not what this API version returns
 */
#ifndef FORGE_SLURM_CLIENT_H
#define FORGE_SLURM_CLIENT_H

#include "config/config.h"
#include "base/error.h"
#include "slurm/usage.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum forge_slurm_status {
    FORGE_SLURM_OK = 0,
    FORGE_SLURM_TRANSPORT,
    FORGE_SLURM_TIMED_OUT,
    FORGE_SLURM_AUTH,
    FORGE_SLURM_REJECTED,
    FORGE_SLURM_NOT_FOUND,
    FORGE_SLURM_SERVER,
    FORGE_SLURM_PROTOCOL,
} forge_slurm_status_t;

typedef struct forge_slurm_result {
    forge_slurm_status_t status;
    long http_status;  /* 0 when no answer came */
    int slurm_error;   /* errors[0].error_number, 0 if none */
    int attempts;      /* HTTP requests made for this call */
    char message[512]; /* errors[] text, or what went wrong */
} forge_slurm_result_t;

const char *forge_slurm_status_name(forge_slurm_status_t s);

/* Whether s is an answer of a slurmrestd that can act (OK, NOT_FOUND,
 * REJECTED): one that holds readiness up (hooks/hooks.h's slurm_request);
 * no answer, a server error or an auth refusal is not. */
bool forge_slurm_status_answered(forge_slurm_status_t s);

/* Whether the same call may be made again later. */
bool forge_slurm_status_retriable(forge_slurm_status_t s);

typedef struct forge_slurm_options {
    const char *base_url; /* http(s)://host:port, no trailing '/' */
    forge_api_version_t version;
    const char *user;
    const char *jwt_file;     /* exactly one of jwt_file ...   */
    const char *jwt_key_file; /* ... and jwt_key_file          */
    bool tls_verify;
    const char *ca_file;   /* NULL: the system's */
    const char *cert_file; /* a client certificate (PEM), NULL: none */
    const char *key_file;  /* its private key (PEM), with cert_file */
    long connect_timeout_ms;
    long request_timeout_ms;
    int max_attempts;      /* per call, for retriable outcomes (+1 with a
                              new token after a refusal) */
    long backoff_base_ms;  /* first retry delay; doubles, with jitter */
    long backoff_max_ms;   /* cap of one delay */
    int token_lifetime_s;  /* minted tokens; re-minted while they have
                              request_timeout_ms + 1 s left */
    size_t max_body_bytes; /* responses larger than this are refused */
    int max_rps; /* requests per second to base_url, shared by every client
                    of the process with the same base_url and rate
                    (budget.h); 0: no budget */
} forge_slurm_options_t;

/* Options from the worker's configuration, with production defaults
 * (connect 5 s, request 30 s, 4 attempts, 200 ms .. 5 s backoff, 300 s
 * tokens, 64 MiB bodies; the budget FORGE_SLURM_MAX_RPS). Strings are
 * borrowed from cfg. */
void forge_slurm_options_from_config(const forge_config_t *cfg,
                                     forge_slurm_options_t *opts);

typedef struct forge_slurm_client forge_slurm_client_t;

/*
 * New client (strings copied). Checks the auth source now: the token or
 * key file must exist and must not be readable by group or others.
 */
forge_rc_t forge_slurm_client_new(const forge_slurm_options_t *opts,
                                  forge_slurm_client_t **out,
                                  forge_error_t *err) FORGE_WARN_UNUSED;

void forge_slurm_client_destroy(forge_slurm_client_t *c); /* NULL-safe */

const char *forge_slurm_client_version_name(const forge_slurm_client_t *c);

/*
 * Interrupts c for good: the one call another thread may make on a client
 * (a pool stopping, pool.h). A call under way gives up within about a
 * second, wherever it is (connecting, waiting for an answer, sleeping
 * before a retry: libcurl's progress callback runs at least every second),
 * and every later call returns at once without a request. Such a call says
 * TRANSPORT when nothing of its request had left, TIMED_OUT once some had
 * (its outcome unknown, as for any cut-off call), with the message
 * "interrupted".
 */
void forge_slurm_client_interrupt(forge_slurm_client_t *c);

/* ---- operations ------------------------------------------------------- */

typedef struct forge_slurm_ping {
    bool responding; /* slurmctld answered the ping */
    char server[64]; /* the Slurm release slurmrestd reports, if any */
    long latency_us; /* the controller's ping latency, -1 unknown */
} forge_slurm_ping_t;

forge_slurm_status_t forge_slurm_ping(forge_slurm_client_t *c,
                                      forge_slurm_ping_t *out,
                                      forge_slurm_result_t *res);

/* GET /openapi/v3: OK when the server serves this client's API version;
 * REJECTED (with the versions it does serve in res->message) otherwise. */
forge_slurm_status_t forge_slurm_check_version(forge_slurm_client_t *c,
                                               forge_slurm_result_t *res);

typedef struct forge_slurm_submit {
    uint32_t job_id;    /* the het leader for several components */
    char warnings[512]; /* Slurm's warnings[] text, "" for none */
    /* A job id slurmctld gave this client within FORGE_SLURM_FLOOR_FRESH_S
     * before this POST began (0: none): whatever job the POST made has a
     * higher id (forge_slurm_find_submitted). Set whatever the status. */
    uint32_t floor_job_id;
} forge_slurm_submit_t;

/* How recent a floor must be (forge_slurm_submit_t): slurmctld hands out
 * job ids in increasing order but for a wrap at MaxJobId (back to
 * FirstJobId) or a cold start; a recent floor keeps that window short. */
#define FORGE_SLURM_FLOOR_FRESH_S 300

/* POST job/submit with body (borrowed). Never retried once the request may
 * have reached slurmrestd: TIMEOUT means "look the tag up". */
forge_slurm_status_t forge_slurm_submit(forge_slurm_client_t *c,
                                        const json_t *body,
                                        forge_slurm_submit_t *out,
                                        forge_slurm_result_t *res);

/* The same, submitted for another user (X-SLURM-USER-NAME: user) with this
 * client's token: slurmrestd's user proxy, which slurmctld allows only to a
 * token of SlurmUser or root (seen on 24.11 and 26.05: any other token's
 * user gets error 1007, "Protocol authentication error", status AUTH). The
 * job then runs as user. user NULL: as forge_slurm_submit. */
forge_slurm_status_t forge_slurm_submit_as(forge_slurm_client_t *c,
                                           const char *user, const json_t *body,
                                           forge_slurm_submit_t *out,
                                           forge_slurm_result_t *res);

/* Releases a held job (POST job/{job_id} {"hold": false}: priority back
 * to what Slurm computes), as user when not NULL (the submitter's hold
 * is the submitter's to release). One record: slurmrestd updates the id
 * it is given, so a het job's components are released one by one. OK
 * also when it was not held; NOT_FOUND for an unknown job; REJECTED when
 * Slurm refuses (an ended job: 2017 / 2020), res saying why. */
forge_slurm_status_t forge_slurm_release(forge_slurm_client_t *c,
                                         const char *user, uint32_t job_id,
                                         forge_slurm_result_t *res);

/* One job (or het component) as Slurm reports it. */
typedef struct forge_slurm_job {
    uint32_t job_id;
    uint32_t het_job_id; /* 0: not het */
    int het_offset;
    char **state; /* job_state names, NULL-terminated */
    size_t state_count;
    int exit_code;      /* -1 unknown */
    int signal;         /* 0 none */
    char *state_reason; /* NULL: "None" */
    char *nodes;
    char *constraints;
    char *comment;
    char *name;
    char *workdir; /* current_working_directory (slurmdb: working_directory) */
    int restart_count;
    /* what it used (usage.h), from a details or accounting answer; NULL
     * for the others (jobs/state, a whole listing) */
    forge_slurm_job_use_t *use;
} forge_slurm_job_t;

/* Frees what j holds and leaves it empty (j itself is the caller's: an
 * element of a list, or on the stack). The one place a job is freed. */
void forge_slurm_job_clear(forge_slurm_job_t *j);

typedef struct forge_slurm_job_list {
    forge_slurm_job_t *jobs;
    size_t count;
} forge_slurm_job_list_t;

/* Frees what l holds and leaves it empty (l itself is the caller's). */
void forge_slurm_job_list_clear(forge_slurm_job_list_t *l);

/*
 * Cheap batched poll: the states of many job ids in as few calls as the
 * chunk size allows (GET jobs/state?job_id=..&job_id=..). Only job_id,
 * het fields and state are filled. Ids Slurm does not know are simply
 * missing from the answer: absence is never a verdict.
 */
forge_slurm_status_t forge_slurm_job_states(forge_slurm_client_t *c,
                                            const uint32_t *ids, size_t n,
                                            forge_slurm_job_list_t *out,
                                            forge_slurm_result_t *res);

/* Details of one job: for a het leader, every component, in het_offset
 * order, each with its `use` (the allocated TRES and start / end times:
 * usage.h). NOT_FOUND when Slurm no longer knows it. */
forge_slurm_status_t forge_slurm_job_details(forge_slurm_client_t *c,
                                             uint32_t job_id,
                                             forge_slurm_job_list_t *out,
                                             forge_slurm_result_t *res);

/* Accounting (slurmdbd) view of a job that aged out of slurmctld: each
 * component's latest run (a requeued job's earlier runs left out), in
 * het_offset order (slurm/accounting.h: times, exit codes and usage too).
 * NOT_FOUND when accounting does not know it or is not configured. */
forge_slurm_status_t forge_slurm_job_accounting(forge_slurm_client_t *c,
                                                uint32_t job_id,
                                                forge_slurm_job_list_t *out,
                                                forge_slurm_result_t *res);

/*
 * The jobs a submit with this comment may have made, when its outcome is
 * unknown (TIMED_OUT), in a number of calls bounded by what slurmctld holds
 * above floor_job_id (forge_slurm_submit_t) rather than by the cluster's
 * size: slurmctld hands out job ids in increasing order, so such a job's id
 * is above the floor. One `GET jobs/state` (every job's id and state, a few
 * dozen bytes each), then the details of each job above the floor. The
 * whole listing, its comments compared, instead, when any doubt is
 * left: no floor (0); the floor's own job no longer in jobs/state (it
 * ended and aged out, or slurmctld lost it: its ids may have started
 * again); more than FORGE_SLURM_FIND_CANDIDATES jobs above the floor; or
 * the floor that close to 67,043,328, MaxJobId's default and largest value
 * (the ids may wrap right after it). What no answer shows is a MaxJobId
 * set lower with the floor within FORGE_SLURM_FIND_CANDIDATES of it.
 * (slurmrestd's GET /jobs `update_time` cannot bound it: slurmctld answers
 * the whole list whenever any job changed since, never just the jobs
 * that did - _slurm_rpc_dump_jobs, pack_all_jobs.)
 */
#define FORGE_SLURM_FIND_CANDIDATES 64
forge_slurm_status_t forge_slurm_find_submitted(forge_slurm_client_t *c,
                                                const char *comment,
                                                uint32_t floor_job_id,
                                                forge_slurm_job_list_t *out,
                                                forge_slurm_result_t *res);

/* Jobs whose comment starts with prefix ("forge:": every job the worker
 * made, for `forge-worker reconcile` and the Slurm lanes' shared listing,
 * loop/listing.h), from one whole listing (never for a poll tick). */
forge_slurm_status_t
forge_slurm_find_by_comment_prefix(forge_slurm_client_t *c, const char *prefix,
                                   forge_slurm_job_list_t *out,
                                   forge_slurm_result_t *res);

/* Cancels a job (het-aware: the whole job). signal NULL: Slurm's default
 * (KILL). OK also when the job had already finished (error 2021). From
 * v0.0.42 Slurm tells each job record it could not signal (a het job's
 * components, an array's tasks) apart: the worst of them decides - NOT_FOUND
 * for an unknown job (2017), REJECTED for anything else (2020 "can not be
 * altered now") - and res names that job. */
forge_slurm_status_t forge_slurm_cancel(forge_slurm_client_t *c,
                                        uint32_t job_id, const char *signal,
                                        forge_slurm_result_t *res);

#endif
