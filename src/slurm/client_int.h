/* SPDX-License-Identifier: Apache-2.0 */
/*
 * slurm/client_int.h - the client object and the HTTP call every operation
 * goes through; shared by the files of src/slurm/ only.
 */
#ifndef FORGE_SLURM_CLIENT_INT_H
#define FORGE_SLURM_CLIENT_INT_H

#include "slurm/auth.h"
#include "slurm/budget.h"
#include "slurm/endpoints.h"
#include "slurm/client.h"

#include <curl/curl.h>
#include <stdatomic.h>

struct forge_slurm_client {
    forge_slurm_options_t opts; /* strings below are owned copies */
    char *base_url; /* one URL, or the endpoints' list (endpoints.h) */
    char *user;
    const char *act_as; /* the user of the call under way, when not user
                           (slurmrestd's user proxy: forge_slurm_submit_as) */
    char *ca_file;
    char *cert_file; /* the client certificate (mTLS) and ... */
    char *key_file;  /* ... its key: both or neither */
    forge_slurm_auth_t *auth;
    forge_slurm_budget_t *budget;       /* the cluster's, shared; NULL: none */
    forge_slurm_endpoints_t *endpoints; /* the cluster's, shared */
    CURL *curl;
    char curl_error[CURL_ERROR_SIZE]; /* libcurl's own words for the last
                                         failure (which certificate check
                                         failed, and why): http.c */
    bool fresh_connection;   /* the last answer was an error: slurmrestd
                                closes such connections (every other call
                                reuses the kept one, a submit too: http.c) */
    unsigned rand_state;     /* backoff jitter */
    uint32_t newest_job_id;  /* the last job id a submit was answered with */
    long long newest_job_ms; /* when (forge_clock_ms), 0: never */
    /* Set once by forge_slurm_client_interrupt, from any thread; read by
     * the calling thread's progress callback and retry loop (http.c). */
    atomic_bool interrupted;
};

/* How a call may be retried once it may have reached slurmrestd. */
typedef enum forge_slurm_retry {
    FORGE_SLURM_RETRY_READ,  /* idempotent: timeouts and 5xx retried */
    FORGE_SLURM_RETRY_NEVER, /* submit: only a refused connection is retried */
} forge_slurm_retry_t;

/*
 * One call: method, path below the base URL (e.g. "/slurm/v0.0.43/ping"),
 * optional JSON body. *json is the parsed answer whenever it had a JSON body,
 * whatever the status (new: the caller always json_decref()s it); errors[0]
 * is in res.
 */
forge_slurm_status_t forge_slurm_call(forge_slurm_client_t *c,
                                      const char *method, const char *path,
                                      const char *body,
                                      forge_slurm_retry_t retry, json_t **json,
                                      forge_slurm_result_t *res);

/* Whether Slurm's error number says its controller could not be reached
 * or cannot serve now (communication failures to or from slurmctld, the
 * backup answering in standby, socket failures): http.c. During a
 * controller takeover slurmrestd may answer with them, in any HTTP status:
 * the call is retried (FORGE_SLURM_SERVER), never a refusal of the request
 * (CONTRACT §1, issue 39). */
bool forge_slurm_controller_away(int slurm_error);

/* "/slurm/<version>/<rest>" or "/slurmdb/<version>/<rest>" (new). */
char *forge_slurm_path(const forge_slurm_client_t *c, const char *plugin,
                       const char *rest);

/* One job object of slurm job/{id}, jobs, or slurmdb job/{id}, jobs into
 * j (its strings new): ops.c. */
void forge_slurm_parse_job(const json_t *o, forge_slurm_job_t *j);

/* Appends j to l, its strings stolen (the array grows by doubling): ops.c. */
void forge_slurm_list_add(forge_slurm_job_list_t *l,
                          const forge_slurm_job_t *j);

/* Slurm numbers: plain, or {"set", "infinite", "number"}. false when unset
 * or infinite. */
bool forge_slurm_number(const json_t *v, long long *out);

#endif
