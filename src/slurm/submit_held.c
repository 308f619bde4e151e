/* SPDX-License-Identifier: Apache-2.0 */
/*
 * slurm/submit_held.c - a launch's job made in Slurm (submit_held.h): the
 * held POST, the adoption of an unknown POST by its tag, the release of
 * every component, the cancel of a job that could not be released, and
 * the adoption of a job an interrupted submit left.
 * On top of client.h's operations only; no state of its own.
 */
#include "slurm/submit_held.h"
#include "log/log.h"
#include "testpoint/testpoint.h"
#include "base/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Outcome unknown, right after the POST: the tag says whether the job
 * exists, looked up among the jobs above the POST's floor (client.h:
 * forge_slurm_find_submitted; the whole list when in doubt). */
static bool adopt_tagged(forge_slurm_client_t *c, const char *comment,
                         uint32_t floor, uint32_t *job_id)
{
    forge_slurm_job_list_t jobs = {NULL, 0};
    forge_slurm_result_t res = {0};
    bool found = false;

    if (comment &&
        forge_slurm_find_submitted(c, comment, floor, &jobs, &res) ==
            FORGE_SLURM_OK &&
        jobs.count > 0) {
        *job_id = jobs.jobs[0].het_job_id ? jobs.jobs[0].het_job_id
                                          : jobs.jobs[0].job_id;
        found = true;
    }
    forge_slurm_job_list_clear(&jobs);
    return found;
}

/* The component ids of the new job: its own for one pool, else from its
 * details (in het offset order). False (res says why) when they cannot be
 * had. */
static bool learn_components(forge_slurm_client_t *c, size_t pool_count,
                             forge_slurm_released_t *out,
                             forge_slurm_result_t *res)
{
    forge_slurm_job_list_t jobs = {NULL, 0};
    forge_slurm_result_t got = {0};
    bool learnt = false;

    if (pool_count <= 1) {
        out->component_ids = forge_xcalloc(1, sizeof(uint32_t));
        out->component_ids[0] = out->job_id;
        out->component_count = 1;
        return true;
    }
    if (forge_slurm_job_details(c, out->job_id, &jobs, &got) ==
            FORGE_SLURM_OK &&
        jobs.count > 0) {
        out->component_ids = forge_xcalloc(jobs.count, sizeof(uint32_t));
        for (size_t i = 0; i < jobs.count; i++)
            out->component_ids[i] = jobs.jobs[i].job_id;
        out->component_count = jobs.count;
        learnt = true;
    } else {
        *res = got;
        snprintf(res->message, sizeof(res->message),
                 "the components of het job %u: %.400s", out->job_id,
                 got.message);
    }
    forge_slurm_job_list_clear(&jobs);
    return learnt;
}

/* Every component released from its hold, one by one, as user (the
 * submitter's hold is the submitter's to release). False (res says
 * why) at the first that is not. */
static bool release_all(forge_slurm_client_t *c, const char *user,
                        const forge_slurm_released_t *out,
                        forge_slurm_result_t *res)
{
    forge_slurm_result_t got = {0};

    for (size_t i = 0; i < out->component_count; i++) {
        if (forge_slurm_release(c, user, out->component_ids[i], &got) ==
            FORGE_SLURM_OK)
            continue;
        *res = got;
        snprintf(res->message, sizeof(res->message),
                 "release of job %u: %.400s", out->job_id, got.message);
        return false;
    }
    return true;
}

/* Whether the caller still owns the launch (submit_held.h: job->owned);
 * res says so when it does not. */
static bool owned(const forge_slurm_held_job_t *job, forge_slurm_result_t *res)
{
    if (!job->owned || job->owned(job->owned_ctx))
        return true;
    snprintf(res->message, sizeof(res->message),
             "the launch is no longer this worker's");
    return false;
}

/* A job made but not released: cancelled as far as it can be when the
 * caller still owns the launch (the clean before a retry cancels what its
 * tag still finds), else left held to its owner now; the submit failed,
 * retriable: never taken as Slurm's refusal of the launch. */
static forge_slurm_status_t give_up_held(forge_slurm_client_t *c,
                                         const forge_slurm_held_job_t *job,
                                         forge_slurm_released_t *out,
                                         forge_slurm_result_t *res)
{
    forge_slurm_result_t cancel = {0};

    if (owned(job, &cancel)) {
        (void)forge_slurm_cancel(c, out->job_id, NULL, &cancel);
        out->cancelled_job_id = out->job_id;
    } else {
        forge_log_info("job %u not released (%s): left held to the launch's "
                       "owner now",
                       out->job_id, res->message);
    }
    free(out->component_ids);
    out->component_ids = NULL;
    out->component_count = 0;
    out->job_id = 0;
    return res->status = FORGE_SLURM_SERVER;
}

forge_slurm_status_t forge_slurm_submit_held(forge_slurm_client_t *c,
                                             const forge_slurm_held_job_t *job,
                                             forge_slurm_released_t *out,
                                             forge_slurm_result_t *res)
{
    forge_slurm_submit_t sub;
    forge_slurm_status_t st;

    memset(out, 0, sizeof(*out));
    st = forge_slurm_submit_as(c, job->user, job->payload, &sub, res);
    if (st == FORGE_SLURM_OK) {
        FORGE_TESTPOINT_CRASH("submit.after");
        out->job_id = sub.job_id;
        if (sub.warnings[0]) /* "Job is in held state": as asked */
            forge_log_debug("job %u submitted held: %s", sub.job_id,
                            sub.warnings);
    } else if (st != FORGE_SLURM_REJECTED && st != FORGE_SLURM_AUTH &&
               adopt_tagged(c, job->comment, sub.floor_job_id, &out->job_id)) {
        out->adopted = true; /* it did reach Slurm */
        st = res->status = FORGE_SLURM_OK;
    }
    if (st != FORGE_SLURM_OK)
        return st;
    if (!learn_components(c, job->pool_count, out, res) || !owned(job, res) ||
        !release_all(c, job->user, out, res))
        return give_up_held(c, job, out, res);
    FORGE_TESTPOINT_CRASH("submit.released");
    return FORGE_SLURM_OK;
}

/* Whether component j still waits on its submit hold. */
static bool on_hold(const forge_slurm_job_t *j)
{
    return j->state_reason && !strncmp(j->state_reason, "JobHeld", 7);
}

forge_slurm_status_t forge_slurm_adopt_job(forge_slurm_client_t *c,
                                           const forge_slurm_held_job_t *job,
                                           uint32_t job_id,
                                           forge_slurm_released_t *out,
                                           forge_slurm_result_t *res)
{
    forge_slurm_job_list_t parts = {NULL, 0};
    forge_slurm_result_t got = {0};
    forge_slurm_status_t st;

    memset(out, 0, sizeof(*out));
    st = forge_slurm_job_details(c, job_id, &parts, res);
    if (st != FORGE_SLURM_OK || !parts.count) {
        forge_slurm_job_list_clear(&parts);
        return st != FORGE_SLURM_OK ? st
                                    : (res->status = FORGE_SLURM_NOT_FOUND);
    }
    out->job_id = job_id;
    out->adopted = true;
    out->component_ids = forge_xcalloc(parts.count, sizeof(uint32_t));
    out->component_count = parts.count;
    for (size_t i = 0; i < parts.count; i++)
        out->component_ids[i] = parts.jobs[i].job_id;
    for (size_t i = 0; i < parts.count && st == FORGE_SLURM_OK; i++) {
        if (!on_hold(&parts.jobs[i]))
            continue;
        st = forge_slurm_release(c, job->user, parts.jobs[i].job_id, &got);
        if (st != FORGE_SLURM_OK) {
            *res = got;
            snprintf(res->message, sizeof(res->message),
                     "release of adopted job %u: %.400s", job_id, got.message);
        }
    }
    forge_slurm_job_list_clear(&parts);
    return st == FORGE_SLURM_OK ? FORGE_SLURM_OK
                                : give_up_held(c, job, out, res);
}
