/* SPDX-License-Identifier: Apache-2.0 */
/*
 * support_slurm.h - shared by the tests/integration/test_slurm_*.c tests:
 * the stack's configuration, clients per API version, launches rendered
 * and staged exactly as the worker does (forge_prepare +
 * forge_staging_prepare) and submitted through the project's client, and
 * following a job until a state while recording what was seen.
 *
 * Environment (besides the stack's FORGE_* variables):
 *   FORGE_TEST_SLURM_ENV       an env file (`export NAME=VALUE` lines, as
 *                              tests/e2e/stack.d/slurm.sh writes them) whose
 *                              variables override the process environment:
 *                              points the tests at another cluster (trixie)
 *   FORGE_TEST_API_VERSIONS    the API versions to test, comma or blank
 *                              separated (default v0.0.42,v0.0.43,v0.0.44,
 *                              v0.0.45: what the sid cluster serves)
 *   FORGE_TEST_UNSERVED_VERSIONS  versions the server must refuse
 *                              (default v0.0.41)
 *
 * Every test process calls sl_setup() first and sl_teardown() last (the
 * suite's .init/.fini); teardown cancels every job the process submitted
 * that may still run, so a failed test leaves no sleeper behind.
 */
#ifndef FORGE_TEST_SUPPORT_SLURM_H
#define FORGE_TEST_SUPPORT_SLURM_H

#include "config/config.h"
#include "record/state.h"
#include "slurm/client.h"
#include "slurm/submit_held.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

void sl_setup(void);
void sl_teardown(void);

/* The configuration every test uses (after FORGE_TEST_SLURM_ENV). */
const forge_config_t *sl_config(void);

/* The selected API versions (FORGE_TEST_API_VERSIONS) as ints, -1 for a
 * name this worker does not know (the test then fails naming it). */
size_t sl_versions(int *out, size_t cap);
/* The versions the server must refuse (FORGE_TEST_UNSERVED_VERSIONS). */
size_t sl_unserved_versions(int *out, size_t cap);
/* Whether v is among the selected versions. */
int sl_version_selected(forge_api_version_t v);
/* Whether the stack runs slurmdbd accounting (its env file's
 * FORGE_STACK_SLURMDB=1). */
bool sl_has_accounting(void);
/* Fails the test unless v is a version this worker knows. */
forge_api_version_t sl_version_check(int v);

/* A new client for version v (destroy with forge_slurm_client_destroy). */
forge_slurm_client_t *sl_client(forge_api_version_t v);

/* What one launch went through. */
#define SL_STEPS_MAX 24
typedef struct sl_step {
    forge_state_t state;
    char reason[48];
    double at; /* seconds since the submit */
} sl_step_t;

typedef struct sl_trace {
    char label[64];     /* "v0.0.43 single" */
    char launch_id[64]; /* unique per test run */
    forge_api_version_t version;
    uint32_t job_id; /* 0 until submitted */
    double t0;       /* monotonic seconds at the submit */
    sl_step_t steps[SL_STEPS_MAX];
    size_t n;                    /* platform states from job/{id} */
    char slurm_seen[512];        /* Slurm's job_state sets, as they changed */
    char polled_seen[256];       /* platform states from jobs/state */
    forge_state_t polled_state;  /* the last one */
    forge_slurm_job_list_t last; /* the last job/{id} answer */
    int exit_code;               /* of the last verdict, -1 unknown */
    int polls;
    char *staging; /* host-side staging folder */
} sl_trace_t;

/* A launch request for pools (a JSON array, stolen): launch_id and image
 * are filled in, extra (may be NULL, stolen) is merged last, so it may
 * override time_limit_minutes (default 5) or add partition. The command is
 * the JSON array cmd (stolen). */
json_t *sl_request(const sl_trace_t *t, json_t *cmd, json_t *pools,
                   json_t *extra);

/* Starts a trace: label "<version> <what>", a unique launch id. */
void sl_trace_init(sl_trace_t *t, forge_api_version_t v, const char *what);

/*
 * forge_prepare + forge_staging_prepare + forge_slurm_submit of req
 * (stolen). The trace records ACCEPTED, then SUBMITTED or REJECTED. The
 * client's status is returned, its result in *res.
 */
forge_slurm_status_t sl_submit(forge_slurm_client_t *c, sl_trace_t *t,
                               json_t *req, forge_slurm_result_t *res);

/* The same through the worker's (and `forge-worker submit`'s) one submit
 * path, forge_slurm_submit_held (slurm/submit_held.h): what it made in
 * *made (its component ids the caller's to free). */
forge_slurm_status_t sl_submit_held(forge_slurm_client_t *c, sl_trace_t *t,
                                    json_t *req, forge_slurm_released_t *made,
                                    forge_slurm_result_t *res);

/*
 * Follows t's job every 200 ms until its platform state (from job/{id},
 * through forge_slurm_verdict) is `until` or terminal, or timeout_s pass.
 * Each poll also asks jobs/state for the same id and records that view.
 * Every change must be a legal transition (checked). Returns the state.
 */
forge_state_t sl_follow(forge_slurm_client_t *c, sl_trace_t *t,
                        forge_state_t until, int cancel_requested,
                        int timeout_s);

/* The last recorded platform state and its reason ("" for none). */
forge_state_t sl_state(const sl_trace_t *t);
const char *sl_reason(const sl_trace_t *t);

/* "SUBMITTED 0.0s → PENDING 0.2s → ..." into buf. */
const char *sl_trace_str(const sl_trace_t *t, char *buf, size_t cap);

/* One line per scenario on stderr: what the report quotes. */
void sl_trace_print(const sl_trace_t *t, const char *note);

/* Frees what t holds and removes its staging folder. */
void sl_trace_free(sl_trace_t *t);

/* Reads the host-side file <staging>/<name> (new, NULL if missing). */
char *sl_staging_read(const sl_trace_t *t, const char *name);

/* Runs `chroot $FORGE_STACK_SLURM_CHROOT scontrol ARGS` (as root, the
 * chroot's /etc/slurm/slurm.conf); returns its exit status, output in out. */
int sl_scontrol(char *out, size_t cap, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Monotonic seconds. */
double sl_now(void);

#endif
