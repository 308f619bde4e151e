/* SPDX-License-Identifier: Apache-2.0 */
/*
 * listing.c - the forge-tagged jobs of one whole listing of slurmctld's
 * jobs, shared by the Slurm lanes (listing.h says why and when one may be
 * used).
 *
 * Threads and ownership: the Slurm lanes call forge_listing_find at once.
 * `lock` guards everything here: the newest listing (its entries, sorted
 * by tag, and when it was begun) and whether one is being asked for. The
 * lane that asks does so unlocked, with its own client, then puts the
 * answer in under the lock and wakes the lanes waiting on `done`; a lane
 * copies what it needs out under the lock, so an answer replaced meanwhile
 * is never read. The listing outlives the lanes (submit.c frees it after
 * the pool's threads have stopped).
 */
#include "loop/listing.h"
#include "clock/clock.h"
#include "base/util.h"
#include "render/render.h"
#include "render/try.h"
#include "slurm/job_state.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

typedef struct entry {
    char *comment; /* the job's tag */
    forge_tagged_job_t job;
} entry_t;

struct forge_listing {
    pthread_mutex_t lock;
    pthread_cond_t done; /* an answer came (or the ask failed) */
    entry_t *entries;    /* sorted by comment */
    size_t count;
    bool have;
    long long begun_ns; /* when the listing held was asked for */
    bool asking;        /* a lane is asking for one */
};

forge_listing_t *forge_listing_new(void)
{
    forge_listing_t *l = forge_xcalloc(1, sizeof(*l));

    pthread_mutex_init(&l->lock, NULL);
    pthread_cond_init(&l->done, NULL);
    return l;
}

static void drop_entries(forge_listing_t *l)
{
    for (size_t i = 0; i < l->count; i++)
        free(l->entries[i].comment);
    free(l->entries);
    l->entries = NULL;
    l->count = 0;
}

void forge_listing_destroy(forge_listing_t *l)
{
    if (!l)
        return;
    drop_entries(l);
    pthread_cond_destroy(&l->done);
    pthread_mutex_destroy(&l->lock);
    free(l);
}

static int by_comment(const void *a, const void *b)
{
    return strcmp(((const entry_t *)a)->comment, ((const entry_t *)b)->comment);
}

/* Whether j may still start or run: pending, running or suspended, or a
 * state not known to be an end. */
static bool live(const forge_slurm_job_t *j)
{
    forge_slurm_state_set_t set =
        forge_slurm_state_parse((const char *const *)j->state, j->state_count);

    return (set.base & (FORGE_SLURM_PENDING | FORGE_SLURM_RUNNING |
                        FORGE_SLURM_SUSPENDED)) ||
           !set.base;
}

/* What the listing keeps of jobs (its comments taken), sorted. */
static entry_t *entries_of(forge_slurm_job_list_t *jobs)
{
    entry_t *e = forge_xcalloc(jobs->count ? jobs->count : 1, sizeof(*e));

    for (size_t i = 0; i < jobs->count; i++) {
        forge_slurm_job_t *j = &jobs->jobs[i];
        e[i].comment = j->comment;
        j->comment = NULL;
        e[i].job.job_id = j->job_id;
        e[i].job.leader = j->het_job_id && j->het_job_id != (uint32_t)-1
                              ? j->het_job_id
                              : j->job_id;
        e[i].job.live = live(j);
        e[i].job.held = e[i].job.live && j->state_reason &&
                        !strncmp(j->state_reason, "JobHeld", 7);
        e[i].job.started = j->nodes && j->nodes[0];
    }
    qsort(e, jobs->count, sizeof(*e), by_comment);
    return e;
}

/* The entries tagged comment, copied out (lock held). */
static void copy_tagged(const forge_listing_t *l, const char *comment,
                        forge_tagged_job_t **jobs, size_t *n)
{
    entry_t key = {(char *)comment, {0}};
    const entry_t *hit =
        bsearch(&key, l->entries, l->count, sizeof(*l->entries), by_comment);
    size_t first, end;

    *jobs = NULL;
    *n = 0;
    if (!hit)
        return;
    first = end = (size_t)(hit - l->entries);
    while (first > 0 && !strcmp(l->entries[first - 1].comment, comment))
        first--;
    while (end < l->count && !strcmp(l->entries[end].comment, comment))
        end++;
    *jobs = forge_xcalloc(end - first, sizeof(**jobs));
    for (size_t i = first; i < end; i++)
        (*jobs)[(*n)++] = l->entries[i].job;
}

/* Asks slurmctld for a listing with c (lock held on entry and on return,
 * released while asking and sorting the answer). */
static forge_slurm_status_t ask(forge_listing_t *l, forge_slurm_client_t *c,
                                forge_slurm_result_t *res)
{
    forge_slurm_job_list_t jobs = {NULL, 0};
    long long begun = forge_clock_ns();
    forge_slurm_status_t st;
    entry_t *fresh = NULL;

    l->asking = true;
    pthread_mutex_unlock(&l->lock);
    st =
        forge_slurm_find_by_comment_prefix(c, FORGE_JOB_TAG_PREFIX, &jobs, res);
    if (st == FORGE_SLURM_OK)
        fresh = entries_of(&jobs);
    pthread_mutex_lock(&l->lock);
    l->asking = false;
    if (fresh) { /* one ask at a time: never older than the one held */
        drop_entries(l);
        l->entries = fresh;
        l->count = jobs.count;
        l->have = true;
        l->begun_ns = begun;
    }
    forge_slurm_job_list_clear(&jobs);
    pthread_cond_broadcast(&l->done);
    return st;
}

forge_slurm_status_t forge_listing_find(forge_listing_t *l,
                                        forge_slurm_client_t *c,
                                        const char *comment,
                                        long long not_before_ns,
                                        forge_tagged_job_t **jobs, size_t *n,
                                        forge_slurm_result_t *res)
{
    forge_slurm_status_t st = FORGE_SLURM_OK;

    *jobs = NULL;
    *n = 0;
    pthread_mutex_lock(&l->lock);
    /* one ask at a time: a lane needing a newer listing than the one in
     * flight waits for it to end, then asks */
    while (!(l->have && l->begun_ns >= not_before_ns) && l->asking)
        pthread_cond_wait(&l->done, &l->lock);
    if (!(l->have && l->begun_ns >= not_before_ns))
        st = ask(l, c, res);
    if (st == FORGE_SLURM_OK)
        copy_tagged(l, comment, jobs, n);
    pthread_mutex_unlock(&l->lock);
    return st;
}
