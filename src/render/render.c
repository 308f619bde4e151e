/* SPDX-License-Identifier: Apache-2.0 */
/*
 * render.c - the batch script of a launch and its credentials file's
 * content (render.h); the submit body is payload.c's.
 *
 * The script, top to bottom: identity and layout variables, rendezvous
 * variables derived from Slurm's own, the credentials (ingest token and the
 * request's env and secret_env, read from the 0600 file of
 * forge_render_credentials() and removed), the ingest endpoint, the
 * container's environment (never visible to host programs under its own
 * names), then one `exec srun` with one component per pool. Every request
 * value in the script goes through forge_shell_quote(); numbers are printed
 * from ints; env values and the token are never in it, nor in srun's argv
 * (which Slurm keeps as the step's SubmitLine): they travel in the job's
 * environment under prefixed names.
 */
#include "render/render.h"
#include "base/buf.h"
#include "fs/paths.h"
#include "text/shell.h"
#include "render/image_check.h"
#include "render/staging.h"
#include "render/try.h"
#include "request/request_paths.h"
#include "base/util.h"
#include "config/version.h"

#include <stdlib.h>
#include <string.h>

/* The characters of an environment name, spelled out (a bracket range
 * could mean more in some shell's locale). */
#define FORGE_NAME_CHARS                                                       \
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_"

/* The wrapper each apptainer task runs (a constant: no request data). It
 * hands Slurm's per-task variables (SLURM_PROCID, ..., and the GPU binding
 * slurmd sets, unless the request set the same name) and the pool's identity
 * into the clean container environment through APPTAINERENV_, which no host
 * program reads. $1 pool, $2 roles,
 * then the apptainer argv. */
static const char apptainer_task_wrapper[] =
    "export APPTAINERENV_FORGE_POOL=\"$1\" APPTAINERENV_FORGE_ROLES=\"$2\"; "
    "shift 2; "
    "for forge_v in ${!SLURM_@} CUDA_VISIBLE_DEVICES ROCR_VISIBLE_DEVICES "
    "GPU_DEVICE_ORDINAL; do "
    "forge_a=APPTAINERENV_$forge_v; "
    "[ -n \"${!forge_v+set}\" ] && [ -z \"${!forge_a+set}\" ] && "
    "export \"$forge_a=${!forge_v}\"; done; "
    "exec \"$@\"";

/*
 * The wrapper each enroot-pyxis task runs inside its container with
 * /bin/sh (a constant: no request data; POSIX sh, as dash runs it). The
 * batch script exports each env and secret_env pair as FORGE_E_<NAME> and
 * lists the names in FORGE_ENV_NAMES (space-separated); Pyxis hands the
 * job's environment to the container, where this wrapper exports each NAME
 * with FORGE_E_<NAME>'s value (after the image's environment is applied, so
 * the request wins, as it did with /usr/bin/env NAME=value), then removes
 * the FORGE_E_ variables and runs the program. $1 pool, $2 roles, then the
 * argv.
 *
 * First pass, before any export: every name is checked again (letters,
 * digits, _, no leading digit, listed character by character so no locale
 * can widen a range; not FORGE_*, the wrapper's own), names a shell owns
 * (computed, read-only or arrays in dash or bash, which is /bin/sh in some
 * images) are refused, and each FORGE_E_<NAME> must have arrived. Second
 * pass: the value is read with one eval of text built only from the checked
 * name and exported as one quoted word, so it is never evaluated; reading
 * it back catches a shell that would not keep it (a read-only variable
 * stops the shell by itself). Only builtins run after the first export.
 * Names are parsed with pattern removal, not word splitting: no IFS, no
 * globbing. A name listed twice is exported once.
 */
static const char pyxis_task_wrapper[] =
    "FORGE_R=${FORGE_ENV_NAMES-}\n"
    "while [ -n \"$FORGE_R\" ]; do\n"
    "    FORGE_N=${FORGE_R%% *}\n"
    "    FORGE_R=${FORGE_R#\"$FORGE_N\"}\n"
    "    FORGE_R=${FORGE_R# }\n"
    "    case $FORGE_N in\n"
    "    \"\" | [0123456789]* | FORGE_* | *[!" FORGE_NAME_CHARS "]*)\n"
    "        echo \"forge: FORGE_ENV_NAMES holds a malformed name; not "
    "starting\" >&2\n"
    "        exit 1 ;;\n"
    "    " FORGE_SHELL_OWNED_NAMES ")\n"
    "        echo \"forge: $FORGE_N belongs to the shell: /bin/sh cannot pass "
    "it; not starting\" >&2\n"
    "        exit 1 ;;\n"
    "    esac\n"
    "    eval \"FORGE_S=\\${FORGE_E_$FORGE_N+set}\"\n"
    "    if [ \"$FORGE_S\" != set ]; then\n"
    "        echo \"forge: FORGE_E_$FORGE_N did not reach the container; not "
    "starting\" >&2\n"
    "        exit 1\n"
    "    fi\n"
    "done\n"
    "FORGE_R=${FORGE_ENV_NAMES-}\n"
    "while [ -n \"$FORGE_R\" ]; do\n"
    "    FORGE_N=${FORGE_R%% *}\n"
    "    FORGE_R=${FORGE_R#\"$FORGE_N\"}\n"
    "    FORGE_R=${FORGE_R# }\n"
    "    eval \"FORGE_S=\\${FORGE_E_$FORGE_N+set} "
    "FORGE_V=\\${FORGE_E_$FORGE_N-}\"\n"
    "    if [ \"$FORGE_S\" = set ]; then\n"
    "        export \"$FORGE_N=$FORGE_V\"\n"
    "        eval \"FORGE_S=\\${$FORGE_N-}\"\n"
    "        if [ \"$FORGE_S\" != \"$FORGE_V\" ]; then\n"
    "            echo \"forge: /bin/sh did not keep $FORGE_N as given; not "
    "starting\" >&2\n"
    "            exit 1\n"
    "        fi\n"
    "        unset \"FORGE_E_$FORGE_N\"\n"
    "    fi\n"
    "done\n"
    "unset FORGE_ENV_NAMES FORGE_R FORGE_N FORGE_S FORGE_V\n"
    "export FORGE_POOL=\"$1\" FORGE_ROLES=\"$2\"\n"
    "shift 2\n"
    "exec \"$@\"\n";

/* Host-side variables the job's tasks also see. */
static const char *const shared_vars[] = {
    "FORGE_LAUNCH_ID", "FORGE_ATTEMPT", "FORGE_POOLS", "FORGE_STAGING",
    "MASTER_ADDR",     "MASTER_PORT",   "WORLD_SIZE",  "NNODES",
};

char *forge_render_job_name(const char *launch_id, int attempt)
{
    forge_buf_t b = FORGE_BUF_INIT;

    forge_buf_puts(&b, "forge-");
    forge_buf_puts(&b, launch_id);
    forge_buf_putc(&b, '-');
    forge_buf_put_long(&b, attempt);
    return forge_buf_take(&b);
}

/* Roles mapped to a pool, space-separated (new; "" for none). */
static char *pool_roles(const forge_launch_t *l, const forge_pool_t *pool)
{
    forge_buf_t b = FORGE_BUF_INIT;

    for (size_t i = 0; i < l->role_count; i++) {
        if (strcmp(l->roles[i].value, pool->name) != 0)
            continue;
        if (b.len)
            forge_buf_putc(&b, ' ');
        forge_buf_puts(&b, l->roles[i].key);
    }
    return forge_buf_take(&b);
}

bool forge_render_env_name_ok(const char *name)
{
    size_t n = strlen(name);

    return n && strspn(name, FORGE_NAME_CHARS) == n &&
           !(name[0] >= '0' && name[0] <= '9');
}

/* ---- script sections -------------------------------------------------- */

static void put_header(forge_buf_t *s, const forge_config_t *cfg)
{
    forge_buf_puts(s, "#!/bin/bash\n# Generated by forge-worker ");
    forge_buf_puts(s, forge_version());
    forge_buf_puts(s, " (profile ");
    forge_buf_puts(s, forge_runtime_profile_name(cfg->runtime_profile));
    forge_buf_puts(s, "). Do not edit.\n"
                      "# Every value taken from the request appears below "
                      "only inside single quotes;\n# env values and the "
                      "ingest token never are: the job reads them from a "
                      "file.\n"
                      "set -euo pipefail\n\n");
}

static void put_identity(forge_buf_t *s, const forge_launch_t *l,
                         const char *cluster_staging)
{
    forge_buf_t pools = FORGE_BUF_INIT;
    long world = 0, nodes = 0;

    for (size_t i = 0; i < l->pool_count; i++) {
        if (i)
            forge_buf_putc(&pools, ' ');
        forge_buf_puts(&pools, l->pools[i].name);
        world += (long)l->pools[i].nodes * l->pools[i].tasks_per_node;
        nodes += l->pools[i].nodes;
    }
    forge_buf_puts(s, "# Who this job is, and its layout (pools in request "
                      "order = het components).\n");
    forge_buf_puts(s, "export FORGE_LAUNCH_ID=");
    forge_shell_quote(s, l->launch_id);
    forge_buf_puts(s, "\nexport FORGE_ATTEMPT=");
    forge_buf_put_long(s, l->attempt);
    forge_buf_puts(s, "\nexport FORGE_POOLS=");
    forge_shell_quote(s, forge_buf_str(&pools));
    forge_buf_puts(s, "\nexport FORGE_STAGING=");
    forge_shell_quote(s, cluster_staging);
    forge_buf_puts(s, "\n\n# Rendezvous for multi-node frameworks, from "
                      "Slurm's own view of the job.\n"
                      "export MASTER_ADDR=\"$(hostname)\"\n"
                      "export MASTER_PORT=$((20000 + SLURM_JOB_ID % 20000))\n");
    forge_buf_puts(s, "export WORLD_SIZE=");
    forge_buf_put_long(s, world);
    forge_buf_puts(s, "\nexport NNODES=");
    forge_buf_put_long(s, nodes);
    forge_buf_puts(s, "\n\n");
    forge_buf_clear(&pools);
}

/* Pairs in the credentials file (forge_render_credentials writes one per
 * token, env and secret_env entry); 0 when there is no file. */
static size_t credential_pairs(const forge_launch_t *l)
{
    return (l->ingest_token ? 1 : 0) + l->env_count + l->secret_env_count;
}

/* What each profile does around the reader loop: `init` before it, `pair`
 * with each checked pair ($forge_k, $forge_v).
 * apptainer: forge_env holds "NAME=value" words, exported as APPTAINERENV_
 * later. enroot-pyxis: each pair is exported as FORGE_E_<NAME> (a prefix no
 * request name has: srun, Pyxis and enroot never see a request's name, be it
 * SRUN_*, ENROOT_* or LD_PRELOAD) and its name added once to
 * FORGE_ENV_NAMES, for the task wrapper to unpack inside the container
 * (pyxis_task_wrapper); the token is exported as itself, since Pyxis hands
 * the job's environment to the container. */
typedef struct reader_part {
    const char *init;
    const char *pair;
} reader_part_t;

static const reader_part_t reader_parts[] = {
    [FORGE_PROFILE_APPTAINER] =
        {
            .init = "forge_env=()\n",
            .pair = "    forge_env+=(\"$forge_k=$forge_v\")\n",
        },
    [FORGE_PROFILE_ENROOT_PYXIS] =
        {
            .init = "unset ${!FORGE_E_@}\n"
                    "export FORGE_ENV_NAMES=\n",
            .pair = "    if [ \"$forge_k\" = FORGE_INGEST_TOKEN ]; then\n"
                    "        export FORGE_INGEST_TOKEN=\"$forge_v\"\n"
                    "    else\n"
                    "        forge_e=\"FORGE_E_$forge_k\"\n"
                    "        if [ -z \"${!forge_e+set}\" ]; then\n"
                    "            FORGE_ENV_NAMES+=\"${FORGE_ENV_NAMES:+ }"
                    "$forge_k\"\n"
                    "        fi\n"
                    "        export \"$forge_e=$forge_v\"\n"
                    "    fi\n",
        },
};

/*
 * The credentials reader: reads the file (NUL-separated NAME, VALUE pairs),
 * checks every name before bash uses it (a name only ever becomes part of
 * an array element or, checked, of an exported name: never a subscript,
 * never evaluated), removes the file, and stops the job unless it held
 * exactly the pairs the worker wrote. Constant text: the profile's parts go
 * between head and loop and into the loop, the pair count into the tail.
 */
static const char credentials_head_1[] =
    "# Credentials: the ingest token and the request's environment are in "
    "the 0600\n# file the worker wrote (NUL-separated NAME, VALUE pairs), "
    "never in this script,\n# which Slurm keeps. Each name is checked before "
    "use; the file is removed before\n# any user code runs. A run after a "
    "requeue reads its own, credentials.<restart>,\n# which the worker "
    "stages once its poll sees the requeue: waited for, bounded.\n"
    "forge_cred=\"$FORGE_STAGING/" FORGE_CREDENTIALS_FILE "\"\n"
    "forge_wait=0\n"
    "if [ \"$forge_restart\" -gt 0 ]; then\n"
    "    forge_cred=\"$forge_cred.$forge_restart\"\n"
    "    forge_wait=";
static const char credentials_head_2[] =
    "\n"
    "fi\n"
    "forge_waited=0\n"
    "while [ ! -f \"$forge_cred\" ] && [ \"$forge_waited\" -lt "
    "\"$forge_wait\" ]; do\n"
    "    sleep 1\n"
    "    forge_waited=$((forge_waited + 1))\n"
    "done\n"
    "if [ ! -f \"$forge_cred\" ]; then\n"
    "    echo \"forge: $forge_cred is missing (run $forge_restart of the job, "
    "waited ${forge_waited} s): the worker stages each run's credentials; "
    "not starting\" >&2\n"
    "    exit 1\n"
    "fi\n"
    "unset forge_wait forge_waited\n";

static const char credentials_loop[] =
    "forge_n=0\n"
    "while IFS= read -r -d '' forge_k && IFS= read -r -d '' forge_v; do\n"
    "    if ! [[ $forge_k =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]]; then\n"
    "        rm -f -- \"$forge_cred\"\n"
    "        echo \"forge: $forge_cred holds a malformed name; not "
    "starting\" >&2\n"
    "        exit 1\n"
    "    fi\n";

/* The tail, in the pieces around its two pair counts and its names. */
static const char credentials_tail_1[] =
    "    forge_n=$((forge_n + 1))\n"
    "done <\"$forge_cred\"\n"
    "rm -f -- \"$forge_cred\"\n"
    "if [ -n \"$forge_k\" ] || [ \"$forge_n\" -ne ";
static const char credentials_tail_2[] =
    " ]; then\n"
    "    echo \"forge: $forge_cred did not hold the ";
static const char credentials_tail_3[] =
    " pairs the worker wrote; not starting\" >&2\n"
    "    exit 1\n"
    "fi\n"
    "unset forge_k forge_v forge_n";

static void put_credentials(forge_buf_t *s, const forge_config_t *cfg,
                            size_t pairs)
{
    const reader_part_t *part = &reader_parts[cfg->runtime_profile];

    if (!pairs)
        return;
    forge_buf_puts(s, credentials_head_1);
    forge_buf_put_long(s, cfg->requeue_credentials_wait_s);
    forge_buf_puts(s, credentials_head_2);
    forge_buf_puts(s, part->init);
    forge_buf_puts(s, credentials_loop);
    forge_buf_puts(s, part->pair);
    forge_buf_puts(s, credentials_tail_1);
    forge_buf_put_long(s, (long long)pairs);
    forge_buf_puts(s, credentials_tail_2);
    forge_buf_put_long(s, (long long)pairs);
    forge_buf_puts(s, credentials_tail_3);
    if (cfg->runtime_profile == FORGE_PROFILE_ENROOT_PYXIS)
        forge_buf_puts(s, " forge_e");
    forge_buf_puts(s, "\n\n");
}

/* Which run of the job this is: Slurm's SLURM_RESTART_COUNT (0 or unset
 * on the first; +1 at each requeue, same job id). A later run marks the
 * start of its output in both logs, which it appends to (the submit
 * body's open_mode): the archive holds every run's. */
static void put_restart(forge_buf_t *s)
{
    forge_buf_puts(
        s, "# Which run: Slurm counts its requeues of this job. A later run "
           "appends to the\n# logs (open_mode append) after a marker line.\n"
           "forge_restart=\"${SLURM_RESTART_COUNT:-0}\"\n"
           "if ! [[ $forge_restart =~ ^[0-9]{1,9}$ ]]; then\n"
           "    forge_restart=0\n"
           "fi\n"
           "if [ \"$forge_restart\" -gt 0 ]; then\n"
           "    echo \"== forge: restart $forge_restart ==\"\n"
           "    echo \"== forge: restart $forge_restart ==\" >&2\n"
           "fi\n\n");
}

static void put_ingest(forge_buf_t *s, const forge_launch_t *l)
{
    if (!l->ingest_endpoint)
        return;
    forge_buf_puts(s, "# Ingest: where the job reports (its token came with "
                      "the credentials).\nexport FORGE_INGEST_ENDPOINT=");
    forge_shell_quote(s, l->ingest_endpoint);
    forge_buf_puts(s, "\n\n");
}

/* apptainer: everything the tasks must see goes in as APPTAINERENV_*; the
 * credentials' pairs last, so a request's env wins over the defaults above
 * (MASTER_PORT, say), as it does with enroot-pyxis. */
static void put_apptainer_env(forge_buf_t *s, const forge_launch_t *l,
                              size_t pairs)
{
    forge_buf_puts(s, "# The container's environment: --cleanenv plus these "
                      "APPTAINERENV_ variables,\n# which no host program "
                      "reads.\n");
    for (size_t i = 0; i < sizeof(shared_vars) / sizeof(shared_vars[0]); i++) {
        forge_buf_puts(s, "export APPTAINERENV_");
        forge_buf_puts(s, shared_vars[i]);
        forge_buf_puts(s, "=\"$");
        forge_buf_puts(s, shared_vars[i]);
        forge_buf_puts(s, "\"\n");
    }
    if (l->ingest_endpoint)
        forge_buf_puts(s, "export APPTAINERENV_FORGE_INGEST_ENDPOINT="
                          "\"$FORGE_INGEST_ENDPOINT\"\n");
    if (pairs)
        forge_buf_puts(s, "for forge_p in ${forge_env[@]+\"${forge_env[@]}\"}; "
                          "do\n    export \"APPTAINERENV_$forge_p\"\n"
                          "done\nunset forge_env forge_p\n");
    forge_buf_puts(s, "forge_task=");
    forge_shell_quote(s, apptainer_task_wrapper);
    forge_buf_puts(s, "\n\n");
}

/* enroot-pyxis: the env and secret_env pairs are already in the job's
 * environment as FORGE_E_<NAME> (the credentials reader); each task unpacks
 * them inside its container. */
static void put_pyxis_env(forge_buf_t *s)
{
    forge_buf_puts(s, "# The container's environment: the job's, which Pyxis "
                      "passes in, holding the\n# request's env as "
                      "FORGE_E_<NAME>; forge_unpack exports each as NAME "
                      "inside the\n# container. Never in srun's argv, which "
                      "Slurm keeps as the step's SubmitLine.\n"
                      "forge_unpack=");
    forge_shell_quote(s, pyxis_task_wrapper);
    forge_buf_puts(s, "\n\n");
}

/* ---- the srun step ---------------------------------------------------- */

/* What the srun step repeats per pool, derived once per script: the
 * cluster's paths of the staging folder, the image and each mount
 * source. */
typedef struct step_paths {
    char *cluster_staging;
    char *image;
    char **mount_src;
} step_paths_t;

static void put_mounts_apptainer(forge_buf_t *s, const forge_launch_t *l,
                                 const step_paths_t *sp)
{
    for (size_t i = 0; i < l->mount_count; i++) {
        const char *parts[] = {sp->mount_src[i], ":", l->mounts[i].target,
                               l->mounts[i].read_only ? ":ro" : ""};
        forge_buf_puts(s, " --bind");
        forge_shell_arg_cat(s, 4, parts);
    }
}

static void put_mounts_pyxis(forge_buf_t *s, const forge_launch_t *l,
                             const step_paths_t *sp)
{
    forge_buf_t spec = FORGE_BUF_INIT;

    for (size_t i = 0; i < l->mount_count; i++) {
        if (i)
            forge_buf_putc(&spec, ',');
        forge_buf_puts(&spec, sp->mount_src[i]);
        forge_buf_putc(&spec, ':');
        forge_buf_puts(&spec, l->mounts[i].target);
        if (l->mounts[i].read_only)
            forge_buf_puts(&spec, ":ro");
    }
    if (spec.len) {
        const char *parts[] = {"--container-mounts=", forge_buf_str(&spec)};
        forge_shell_arg_cat(s, 2, parts);
    }
    forge_buf_clear(&spec);
}

static void put_command(forge_buf_t *s, const forge_launch_t *l)
{
    for (size_t i = 0; i < l->command_count; i++)
        forge_shell_arg(s, l->command[i]);
}

static void put_apptainer_task(forge_buf_t *s, const forge_launch_t *l,
                               const step_paths_t *sp, const forge_pool_t *pool)
{
    char *roles = pool_roles(l, pool);

    forge_buf_puts(s, " \\\n    /bin/bash -c \"$forge_task\" forge-task");
    forge_shell_arg(s, pool->name);
    forge_shell_arg(s, roles);
    forge_buf_puts(s, " \\\n    apptainer exec --cleanenv");
    if (pool->gpus_per_node > 0)
        forge_buf_puts(s, " --nv");
    put_mounts_apptainer(s, l, sp);
    if (l->workdir) {
        forge_buf_puts(s, " --pwd");
        forge_shell_arg(s, l->workdir);
    }
    forge_buf_puts(s, " \\\n   ");
    forge_shell_arg(s, sp->image);
    put_command(s, l);
    free(roles);
}

static void put_pyxis_task(forge_buf_t *s, const forge_launch_t *l,
                           const step_paths_t *sp, const forge_pool_t *pool)
{
    char *roles = pool_roles(l, pool);
    const char *image[] = {"--container-image=", sp->image};

    forge_buf_puts(s, " \\\n   ");
    forge_shell_arg_cat(s, 2, image);
    put_mounts_pyxis(s, l, sp);
    if (l->workdir) {
        const char *workdir[] = {"--container-workdir=", l->workdir};
        forge_shell_arg_cat(s, 2, workdir);
    }
    forge_buf_puts(s, " --no-container-mount-home \\\n"
                      "    /bin/sh -c \"$forge_unpack\" forge-env");
    forge_shell_arg(s, pool->name);
    forge_shell_arg(s, roles);
    forge_buf_puts(s, " \\\n   ");
    put_command(s, l);
    free(roles);
}

/* A het component's own <pool>.out / <pool>.err in the staging folder,
 * where the archive (archive.h) expects them. */
static void put_component_logs(forge_buf_t *s, const step_paths_t *sp,
                               const forge_pool_t *pool)
{
    const char *out[] = {"--output=", sp->cluster_staging, "/", pool->name,
                         ".out"};
    const char *err[] = {"--error=", sp->cluster_staging, "/", pool->name,
                         ".err"};

    forge_buf_puts(s, " \\\n    --open-mode=append");
    forge_shell_arg_cat(s, 5, out);
    forge_shell_arg_cat(s, 5, err);
}

static void put_srun(forge_buf_t *s, const forge_launch_t *l,
                     const forge_config_t *cfg, const step_paths_t *sp)
{
    forge_buf_puts(s, "# One step across every pool; its exit status is the "
                      "job's.\nexec srun");
    for (size_t i = 0; i < l->pool_count; i++) {
        const forge_pool_t *pool = &l->pools[i];
        if (i > 0)
            forge_buf_puts(s, " \\\n  : ");
        else
            forge_buf_puts(s, " ");
        if (l->pool_count > 1) {
            forge_buf_puts(s, "--het-group=");
            forge_buf_put_long(s, (long long)i);
            forge_buf_putc(s, ' ');
        }
        forge_buf_puts(s, "--nodes=");
        forge_buf_put_long(s, pool->nodes);
        forge_buf_puts(s, " --ntasks-per-node=");
        forge_buf_put_long(s, pool->tasks_per_node);
        if (pool->cpus_per_task) {
            forge_buf_puts(s, " --cpus-per-task=");
            forge_buf_put_long(s, pool->cpus_per_task);
        }
        forge_buf_puts(s, " --kill-on-bad-exit=1");
        if (i > 0) /* the leader's step writes the batch's own logs */
            put_component_logs(s, sp, pool);
        if (cfg->runtime_profile == FORGE_PROFILE_APPTAINER)
            put_apptainer_task(s, l, sp, pool);
        else
            put_pyxis_task(s, l, sp, pool);
    }
    forge_buf_putc(s, '\n');
}

static void step_paths_init(step_paths_t *sp, const forge_launch_t *l,
                            const forge_config_t *cfg)
{
    char *staging = forge_staging_path(cfg, l->launch_id, l->attempt);
    /* the file the request's check opened (request_check.c): "x.sif/" or
     * "x.sif/." name it there, and would not to apptainer */
    char *given = forge_request_image_path(cfg, l);
    char *host_image = forge_path_normalize(given);

    if (!host_image) /* a ".." the check refuses: never rendered */
        host_image = forge_xstrdup(given);

    sp->cluster_staging = forge_path_to_cluster(cfg, staging);
    sp->image = forge_path_to_cluster(cfg, host_image);
    sp->mount_src = forge_xcalloc(l->mount_count + 1, sizeof(char *));
    for (size_t i = 0; i < l->mount_count; i++) {
        char *host = forge_request_mount_source(cfg, &l->mounts[i]);
        sp->mount_src[i] = forge_path_to_cluster(cfg, host);
        free(host);
    }
    free(host_image);
    free(given);
    free(staging);
}

static void step_paths_clear(step_paths_t *sp, const forge_launch_t *l)
{
    for (size_t i = 0; i < l->mount_count; i++)
        free(sp->mount_src[i]);
    free(sp->mount_src);
    free(sp->image);
    free(sp->cluster_staging);
}

char *forge_render_script(const forge_launch_t *launch,
                          const forge_config_t *cfg)
{
    forge_buf_t s = FORGE_BUF_INIT;
    size_t pairs = credential_pairs(launch);
    step_paths_t sp;

    /* one allocation of 8 KiB for a typical script (about 4-6 KiB; the
     * buffer keeps room for its NUL, so 8191 and not 8192, which would
     * double it to 16 KiB) */
    forge_buf_reserve(&s, 8191);
    step_paths_init(&sp, launch, cfg);
    put_header(&s, cfg);
    put_identity(&s, launch, sp.cluster_staging);
    put_restart(&s);
    forge_try_put_marker(&s); /* a later try's first run (try.h) */
    if (cfg->runtime_profile == FORGE_PROFILE_APPTAINER)
        forge_render_put_image_check(&s, sp.image);
    put_credentials(&s, cfg, pairs);
    put_ingest(&s, launch);
    if (cfg->runtime_profile == FORGE_PROFILE_APPTAINER)
        put_apptainer_env(&s, launch, pairs);
    else
        put_pyxis_env(&s);
    put_srun(&s, launch, cfg, &sp);
    step_paths_clear(&sp, launch);
    return forge_buf_take(&s);
}
