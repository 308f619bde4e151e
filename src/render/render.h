/* SPDX-License-Identifier: Apache-2.0 */
/*
 * render.h - a valid LaunchRequest and this worker's configuration into (a)
 * the batch script and (b) the complete slurmrestd submit body.
 *
 * The script follows the runtime profile (enroot-pyxis: srun's Pyxis
 * options and a constant /bin/sh wrapper in the container; apptainer: srun
 * apptainer exec with a clean environment), and launches one srun step
 * across every pool (one het component per pool). Request values reach the
 * script only through shell.h's quoting; the ingest token and the env and
 * secret_env values never appear: the script reads them from the 0600
 * `credentials` file in the staging folder (forge_render_credentials()
 * below), removes it, and hands them to the tasks in srun's environment
 * under prefixed names (APPTAINERENV_<NAME>, FORGE_E_<NAME>), never in
 * srun's argv, which Slurm keeps as the step's SubmitLine. Paths are
 * cluster-side.
 *
 * Both functions expect a request that passed forge_request_parse() and
 * forge_request_check() with the same configuration and catalogue.
 */
#ifndef FORGE_RENDER_H
#define FORGE_RENDER_H

#include "core/buf.h"
#include "core/config.h"
#include "request/request.h"
#include "request/series.h"

#include <jansson.h>
#include <stdbool.h>

/*
 * The apptainer profile's image check, before anything else of the job
 * runs (no credentials read, no task started): the image must open as a
 * SIF (`apptainer sif list`: a file of zeros, a SquashFS under a .sif
 * name, a file gone since the submit fail there, in apptainer's own
 * words) and hold every byte its descriptors name (a file cut short lists
 * fine, and would fail only once a task mounted it). A refused image ends
 * the job with FORGE_RENDER_IMAGE_EXIT, apptainer's word in the staging
 * folder's FORGE_RENDER_IMAGE_NOTE and on the job's stderr; the worker
 * reads the note into the FAILED event (loop/image_note.c).
 */
#define FORGE_RENDER_IMAGE_EXIT     66 /* sysexits.h's EX_NOINPUT */
#define FORGE_RENDER_IMAGE_NOTE     "image.error"
#define FORGE_RENDER_IMAGE_NOTE_MAX 2048 /* bytes of it the worker reads */

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

/* Whether name is an environment name the script's reader takes
 * (^[A-Za-z_][A-Za-z0-9_]*$). */
bool forge_render_env_name_ok(const char *name);

/* The credentials file of a job's run: FORGE_CREDENTIALS_FILE for its
 * first, "credentials.<restart>" for the run after its restart-th requeue
 * (SLURM_RESTART_COUNT), written by the worker once its poll saw the
 * requeue (new). */
char *forge_render_credentials_name(int restart);

/* Whether name is one forge_render_credentials_name gives (or could):
 * "credentials", or "credentials." and digits. */
bool forge_render_is_credentials_name(const char *name);

/* The batch script (new, free()). */
char *forge_render_script(const forge_launch_t *launch,
                          const forge_config_t *cfg);

/*
 * The submit body for cfg->slurm_api_version: {"job": {...}} for one pool,
 * {"jobs": [...]} for several, with `script` in the (first) job; a
 * checkpoint_signal as kill_warning_signal and kill_warning_delay in every
 * component (payload.c). New reference (json_decref). FORGE_ESERIES_* if a
 * pool's series is not usable (forge_request_check() would have said so
 * first).
 */
forge_rc_t forge_render_payload(const forge_launch_t *launch,
                                const forge_config_t *cfg,
                                const forge_series_catalog_t *catalog,
                                const char *script, json_t **out,
                                forge_error_t *err) FORGE_WARN_UNUSED;

/* "forge-<launch_id>-<attempt>" and "forge:<launch_id>:<attempt>" (new):
 * how the worker finds its jobs again. Every tag begins with
 * FORGE_JOB_TAG_PREFIX. */
#define FORGE_JOB_TAG_PREFIX "forge:"
char *forge_render_job_name(const char *launch_id, int attempt);
char *forge_render_job_comment(const char *launch_id, int attempt);

#endif
