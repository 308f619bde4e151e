/* SPDX-License-Identifier: Apache-2.0 */
/*
 * payload.c - the slurmrestd submit body of a launch (render.h,
 * forge_render_payload): one job description per pool (a het component
 * each), every one held, tagged with the launch's name and comment, its
 * logs in the staging folder opened for append, the batch script in the
 * first. The body has the same fields for every API version the worker
 * speaks (v0.0.41 to v0.0.45). Out of render.c, which writes the script.
 */
#include "render/render.h"
#include "base/buf.h"
#include "fs/paths.h"
#include "render/staging.h"
#include "render/try.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* json_string, without its byte-by-byte UTF-8 check when the text is
 * plain ASCII (always valid UTF-8; checked a word at a time): the script,
 * several KiB, is most of a body's strings. */
static json_t *text(const char *s)
{
    size_t n = strlen(s), i = 0;
    uint64_t high = 0;

    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, s + i, 8);
        high |= w;
    }
    for (; i < n; i++)
        high |= (uint8_t)s[i];
    if (high & 0x8080808080808080ull)
        return json_string(s);
    return json_stringn_nocheck(s, n);
}

static void set_str(json_t *o, const char *key, const char *value)
{
    if (value)
        json_object_set_new_nocheck(o, key, text(value));
}

/*
 * The request's checkpoint_signal (request/checkpoint.h) as Slurm's
 * --signal=SIG@SECONDS: kill_warning_signal (the name, which slurmctld
 * reads as its own number: "USR1") and kill_warning_delay (seconds before
 * the end), the same fields in v0.0.41 to v0.0.45 (data_parser
 * parsers.c, JOB_DESC_MSG). No kill_warning_flags: without BATCH_JOB
 * ("B:") Slurm signals every step of the job and not the batch shell, so
 * the signal reaches the srun step's tasks, the command itself in both
 * runtime profiles (the task wrappers exec it), never only the script,
 * which has exec'd srun. Every het component carries it: each is a job of
 * its own to slurmctld, which signals the steps of the component whose
 * time is near (or that is preempted).
 */
static void put_checkpoint_signal(json_t *job, const forge_launch_t *l)
{
    if (!l->checkpoint_signal)
        return;
    json_object_set_new_nocheck(job, "kill_warning_signal",
                                text(l->checkpoint_signal));
    json_object_set_new_nocheck(job, "kill_warning_delay",
                                json_integer(l->checkpoint_seconds));
}

static json_t *component(const forge_launch_t *l, const forge_config_t *cfg,
                         const forge_pool_t *pool, const char *constraint,
                         const char *cluster_staging)
{
    json_t *job = json_object(), *env = json_array();
    forge_buf_t b = FORGE_BUF_INIT;
    char *name = forge_render_job_name(l->launch_id, l->attempt);
    char *comment = forge_try_tag(l->launch_id, l->attempt, 1);

    set_str(job, "name", name);
    set_str(job, "comment", comment);
    /* held until the worker that posted it releases it (submit.c): a POST
     * slurmctld takes after its worker gave up on it starts nothing */
    json_object_set_new_nocheck(job, "hold", json_true());
    if (forge_try_requeue_off(l, cfg)) /* a node failure is the retry's */
        json_object_set_new_nocheck(job, "requeue", json_false());
    set_str(job, "partition",
            l->partition ? l->partition : cfg->slurm_partition);
    set_str(job, "account", l->account ? l->account : cfg->slurm_account);
    set_str(job, "qos", l->qos ? l->qos : cfg->slurm_qos);
    set_str(job, "constraints", constraint);
    forge_buf_put_long(&b, pool->nodes);
    set_str(job, "nodes", forge_buf_str(&b));
    json_object_set_new_nocheck(job, "tasks_per_node",
                                json_integer(pool->tasks_per_node));
    if (pool->cpus_per_task)
        json_object_set_new_nocheck(job, "cpus_per_task",
                                    json_integer(pool->cpus_per_task));
    if (pool->gpus_per_node) {
        forge_buf_truncate(&b, 0);
        forge_buf_puts(&b, "gres/gpu:");
        forge_buf_put_long(&b, pool->gpus_per_node);
        set_str(job, "tres_per_node", forge_buf_str(&b));
    }
    if (pool->mem_per_node_mb)
        json_object_set_new_nocheck(job, "memory_per_node",
                                    json_integer(pool->mem_per_node_mb));
    json_object_set_new_nocheck(
        job, "time_limit",
        json_integer(l->time_limit_minutes
                         ? l->time_limit_minutes
                         : cfg->slurm_default_time_limit_min));
    set_str(job, "current_working_directory", cluster_staging);
    forge_buf_truncate(&b, 0);
    forge_buf_puts(&b, cluster_staging);
    forge_buf_putc(&b, '/');
    forge_buf_puts(&b, pool->name);
    forge_buf_puts(&b, ".out");
    set_str(job, "standard_output", forge_buf_str(&b));
    forge_buf_truncate(&b, 0);
    forge_buf_puts(&b, cluster_staging);
    forge_buf_putc(&b, '/');
    forge_buf_puts(&b, pool->name);
    forge_buf_puts(&b, ".err");
    set_str(job, "standard_error", forge_buf_str(&b));
    /* appended to, never truncated: a requeued job's next run (same job,
     * same files) keeps the earlier runs' output for the archive */
    json_object_set_new_nocheck(job, "open_mode", json_pack("[s]", "APPEND"));
    /* slurmctld demands a non-empty environment for every component. */
    json_array_append_new(env, text("PATH=/usr/local/sbin:/usr/local/"
                                    "bin:/usr/sbin:/usr/bin:/sbin:/bin"));
    forge_buf_truncate(&b, 0);
    forge_buf_puts(&b, "FORGE_LAUNCH_ID=");
    forge_buf_puts(&b, l->launch_id);
    json_array_append_new(env, text(forge_buf_str(&b)));
    json_object_set_new_nocheck(job, "environment", env);
    put_checkpoint_signal(job, l);
    forge_buf_clear(&b);
    free(name);
    free(comment);
    return job;
}

forge_rc_t forge_render_payload(const forge_launch_t *launch,
                                const forge_config_t *cfg,
                                const forge_series_catalog_t *catalog,
                                const char *script, json_t **out,
                                forge_error_t *err)
{
    char *staging = forge_staging_path(cfg, launch->launch_id, launch->attempt);
    char *cluster_staging = forge_path_to_cluster(cfg, staging);
    json_t *jobs = json_array(), *body = json_object();
    forge_rc_t rc = FORGE_OK;

    *out = NULL;
    for (size_t i = 0; i < launch->pool_count && !rc; i++) {
        const forge_pool_t *pool = &launch->pools[i];
        const forge_series_t *s = forge_series_find(catalog, pool->series);
        if (!s || !s->constraint) {
            rc = forge_error_set(
                err, s ? FORGE_ESERIES_UNCONSTRAINED : FORGE_ESERIES_UNKNOWN,
                "$.pools",
                "pool %s: series %s is not "
                "usable",
                pool->name, pool->series);
            break;
        }
        json_array_append_new(
            jobs, component(launch, cfg, pool, s->constraint, cluster_staging));
    }
    if (!rc) {
        json_object_set_new_nocheck(json_array_get(jobs, 0), "script",
                                    text(script));
        if (launch->pool_count == 1)
            json_object_set(body, "job", json_array_get(jobs, 0));
        else
            json_object_set(body, "jobs", jobs);
        *out = body;
        body = NULL;
    }
    json_decref(body);
    json_decref(jobs);
    free(staging);
    free(cluster_staging);
    return rc;
}
