/* SPDX-License-Identifier: Apache-2.0 */
/*
 * reconcile_slurm.c - what Slurm says of the launches, for reconcile
 * (reconcile.h): every job whose comment carries the worker's tag
 * `forge:<launch_id>:<attempt>`, or `forge:<launch_id>:<attempt>:<try>`
 * for a retry's later try (render/try.h puts it on every job), from one
 * GET /jobs, grouped by tag; accounting (slurmdbd) for a job the live list
 * no longer has, where there is accounting. Ended jobs stay in slurmctld's
 * list for MinJobAge (300 s by default): a job that ended longer ago and
 * has no accounting is not found, and the worker decides (LOST).
 *
 * Whose jobs: the tag names a launch, not a deployment, and one cluster
 * may run several (production and staging workers, each with its topics
 * and group). Every job the worker submits runs in its staging folder
 * under FORGE_SLURM_STORAGE_ROOT, and two deployments cannot share a
 * storage root (their staging folders would collide), so a tagged job
 * whose working directory is elsewhere is another deployment's: counted,
 * never adopted nor cancelled.
 */
#include "admin/reconcile.h"
#include "render/render.h"
#include "render/try.h"
#include "log/log.h"
#include "base/util.h"
#include "slurm/verdict.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

uint32_t forge_recon_leader(const forge_slurm_job_t *j)
{
    return j->het_job_id && j->het_job_id != (uint32_t)-1 ? j->het_job_id
                                                          : j->job_id;
}

static int by_leader(const void *a, const void *b)
{
    const forge_slurm_job_t *x = a, *y = b;
    uint32_t lx = forge_recon_leader(x), ly = forge_recon_leader(y);

    if (lx != ly)
        return lx < ly ? -1 : 1;
    return x->het_offset - y->het_offset;
}

void forge_recon_tag_key(char *key, size_t size, const char *launch_id,
                         int attempt, int try_num)
{
    snprintf(key, size, "%s:%d:%d", launch_id, attempt,
             try_num > 1 ? try_num : 1);
}

/* The s->jobs key of a tag (new), or NULL when comment is not one. */
static char *tag_key(const char *comment)
{
    forge_try_tag_parts_t t;
    char id[128], key[160];

    if (!forge_try_tag_parse(comment, &t) || t.id_len >= sizeof(id))
        return NULL;
    memcpy(id, t.id, t.id_len);
    id[t.id_len] = '\0';
    forge_recon_tag_key(key, sizeof(key), id, t.attempt, t.try_num);
    return forge_xstrdup(key);
}

static void add_job(forge_recon_map_t *m, const char *key, forge_slurm_job_t *j)
{
    forge_slurm_job_list_t **slot =
        (forge_slurm_job_list_t **)forge_recon_map_slot(m, key);

    if (!*slot)
        *slot = forge_xcalloc(1, sizeof(**slot));
    (*slot)->jobs =
        forge_xrealloc((*slot)->jobs, ((*slot)->count + 1) * sizeof(*j));
    (*slot)->jobs[(*slot)->count++] = *j;
    memset(j, 0, sizeof(*j)); /* moved */
}

static void sort_all(forge_recon_map_t *m)
{
    for (size_t i = 0; i < forge_recon_map_count(m); i++) {
        forge_slurm_job_list_t *l = forge_recon_map_at(m, i);
        qsort(l->jobs, l->count, sizeof(*l->jobs), by_leader);
    }
}

forge_rc_t forge_recon_read_slurm(forge_slurm_client_t *c, const char *staging,
                                  forge_recon_sources_t *s, forge_error_t *err)
{
    forge_slurm_job_list_t all = {NULL, 0};
    forge_slurm_result_t res = {0};

    if (forge_slurm_find_by_comment_prefix(c, FORGE_JOB_TAG_PREFIX, &all,
                                           &res) != FORGE_SLURM_OK)
        return forge_error_set(err, FORGE_EIO, "FORGE_SLURM_REST_URL",
                               "GET jobs: %s", res.message);
    for (size_t i = 0; i < all.count; i++) {
        const char *dir = all.jobs[i].workdir;
        char *key = tag_key(all.jobs[i].comment);
        if (key && !(dir && !strncmp(dir, staging, strlen(staging))))
            s->foreign_jobs++;
        else if (key)
            add_job(s->jobs, key, &all.jobs[i]);
        free(key);
    }
    forge_slurm_job_list_clear(&all);
    sort_all(s->jobs);
    return FORGE_OK;
}

const forge_slurm_job_list_t *
forge_recon_jobs_of(const forge_recon_sources_t *s, const char *launch_id,
                    int attempt, int try_num)
{
    char key[160];

    forge_recon_tag_key(key, sizeof(key), launch_id, attempt, try_num);
    return forge_recon_map_get(s->jobs, key);
}

forge_slurm_job_list_t forge_recon_job_view(const forge_slurm_job_list_t *list,
                                            uint32_t leader)
{
    forge_slurm_job_list_t v = {NULL, 0};

    for (size_t i = 0; list && i < list->count; i++) {
        if (forge_recon_leader(&list->jobs[i]) != leader)
            continue;
        if (!v.jobs)
            v.jobs = &list->jobs[i];
        v.count++;
    }
    return v;
}

bool forge_recon_any_live(const forge_slurm_job_list_t *list)
{
    for (size_t i = 0; list && i < list->count; i++) {
        forge_slurm_job_list_t one =
            forge_recon_job_view(list, forge_recon_leader(&list->jobs[i]));
        int exit_code;
        forge_slurm_verdict_t v = forge_slurm_verdict(&one, 0, &exit_code);
        if (v.state != FORGE_STATE_NONE && !forge_state_is_terminal(v.state))
            return true;
    }
    return false;
}

/* The job a launch's record (or, without one, its last event) names, when
 * it is live by those and Slurm's list does not have it. */
static uint32_t missing_job(const forge_recon_sources_t *s,
                            const forge_recon_launch_t *l, int *attempt,
                            int *try_num)
{
    const forge_slurm_job_list_t *jobs;
    uint32_t id = l->rec ? l->rec->job_id : l->status_job_id;
    forge_state_t st = l->rec ? l->rec->state : l->status_state;

    *attempt = l->rec ? l->rec->attempt : l->status_attempt;
    *try_num = l->rec ? forge_launch_try(l->rec) : l->status_try;
    if (!id || st == FORGE_STATE_NONE || forge_state_is_terminal(st))
        return 0;
    jobs = forge_recon_jobs_of(s, l->launch_id, *attempt, *try_num);
    return forge_recon_job_view(jobs, id).count ? 0 : id;
}

void forge_recon_read_accounting(forge_slurm_client_t *c,
                                 forge_recon_sources_t *s)
{
    for (size_t i = 0; i < forge_recon_map_count(s->launches); i++) {
        forge_recon_launch_t *l = forge_recon_map_at(s->launches, i);
        forge_slurm_job_list_t found = {NULL, 0};
        forge_slurm_result_t res = {0};
        char key[160];
        int attempt, try_num;
        uint32_t id = missing_job(s, l, &attempt, &try_num);

        if (!id)
            continue;
        if (forge_slurm_job_accounting(c, id, &found, &res) != FORGE_SLURM_OK) {
            forge_log_info("job %u of %s: not in Slurm's list, and accounting "
                           "does not know it (%s)",
                           (unsigned)id, l->launch_id, res.message);
            continue;
        }
        s->accounting = true;
        forge_recon_tag_key(key, sizeof(key), l->launch_id, attempt, try_num);
        for (size_t j = 0; j < found.count; j++)
            add_job(s->jobs, key, &found.jobs[j]);
        forge_slurm_job_list_clear(&found);
    }
    sort_all(s->jobs);
}
