/* SPDX-License-Identifier: Apache-2.0 */
/*
 * credentials.h - the credentials file a job reads from its staging
 * folder: what the job must get but its batch script must never hold (the
 * ingest token, env, secret_env), its name for each run of the job, and
 * its content. The script reads it and removes it before any user code
 * runs (render.c); staging.c writes it, and again for a requeued job's
 * next run. Pure: no I/O.
 */
#ifndef FORGE_RENDER_CREDENTIALS_H
#define FORGE_RENDER_CREDENTIALS_H

#include "base/buf.h"
#include "request/request.h"

#include <stdbool.h>
#include <stddef.h>

/* Name of the credentials file in the staging folder. */
#define FORGE_CREDENTIALS_FILE "credentials"

/*
 * The credentials file's content: what the job must get but the batch
 * script (which Slurm stores, and `scontrol write batch_script` prints) must
 * never hold. NUL-separated pairs, NAME\0VALUE\0, in this order: the ingest
 * token as FORGE_INGEST_TOKEN, then env, then secret_env, each in request
 * order. Names are the request's (already checked against the name rule);
 * values hold no NUL (the request parser refuses it). The script reads the
 * pairs with `read -r -d ''` and removes the file before any user code runs.
 * Appends to out; returns false (out untouched) when there is nothing to
 * pass, and the script then reads no file.
 */
bool forge_render_credentials(const forge_launch_t *launch, forge_buf_t *out);

/* The same from its parts (token NULL: none): what a requeued job's run
 * is staged again from (record/held.h). */
bool forge_render_credential_pairs(const char *token, const forge_kv_t *env,
                                   size_t env_count,
                                   const forge_kv_t *secret_env,
                                   size_t secret_env_count, forge_buf_t *out);

/* The credentials file of a job's run: FORGE_CREDENTIALS_FILE for its
 * first, "credentials.<restart>" for the run after its restart-th requeue
 * (SLURM_RESTART_COUNT), written by the worker once its poll saw the
 * requeue (new). */
char *forge_render_credentials_name(int restart);

/* Whether name is one forge_render_credentials_name gives (or could):
 * "credentials", or "credentials." and digits. */
bool forge_render_is_credentials_name(const char *name);

#endif
