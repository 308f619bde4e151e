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

#include "base/buf.h"
#include "config/config.h"
#include "render/credentials.h"
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

/* Whether name is an environment name the script's reader takes
 * (^[A-Za-z_][A-Za-z0-9_]*$). */
bool forge_render_env_name_ok(const char *name);

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

/* "forge-<launch_id>-<attempt>" (new): the job's name; its comment is
 * its try's tag (try.h: forge_try_tag), how the worker finds it again. */
char *forge_render_job_name(const char *launch_id, int attempt);

#endif
