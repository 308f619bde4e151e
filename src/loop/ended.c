/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ended.c - the ends of jobs the loop saw (ended.h): a hash of job ids
 * (chained buckets) over a queue in the order they were put, so the oldest
 * go first, by age or by count. Loop thread only.
 */
#include "loop/ended.h"
#include "base/util.h"

#include <stdlib.h>
#include <string.h>

#define BUCKETS 4096

typedef struct ended_node {
    forge_ended_job_t job;
    long long seen_ms;
    struct ended_node *chain; /* same bucket */
    struct ended_node *next;  /* the queue: put after this one */
} ended_node_t;

struct forge_ended {
    ended_node_t *buckets[BUCKETS];
    ended_node_t *oldest, *newest; /* the queue */
    size_t count;
};

forge_ended_t *forge_ended_new(void)
{
    return forge_xcalloc(1, sizeof(forge_ended_t));
}

static ended_node_t **link_of(forge_ended_t *t, uint32_t job_id)
{
    ended_node_t **link = &t->buckets[job_id % BUCKETS];

    while (*link && (*link)->job.job_id != job_id)
        link = &(*link)->chain;
    return link;
}

static void node_free(ended_node_t *n)
{
    free(n->job.reason);
    json_decref(n->job.slurm);
    json_decref(n->job.usage);
    free(n);
}

/* Takes the oldest out of the queue and its bucket. */
static void drop_oldest(forge_ended_t *t)
{
    ended_node_t *n = t->oldest;
    ended_node_t **link = link_of(t, n->job.job_id);

    while (*link != n) /* a newer end of the same job went in front */
        link = &(*link)->chain;
    *link = n->chain;
    t->oldest = n->next;
    if (!t->oldest)
        t->newest = NULL;
    t->count--;
    node_free(n);
}

static void expire(forge_ended_t *t, long long now_ms)
{
    while (t->oldest && (now_ms - t->oldest->seen_ms >= FORGE_ENDED_KEEP_MS ||
                         t->count > FORGE_ENDED_MAX))
        drop_oldest(t);
}

void forge_ended_put(forge_ended_t *t, uint32_t job_id, forge_state_t state,
                     const char *reason, json_t *slurm, json_t *usage,
                     long long now_ms)
{
    ended_node_t *n = forge_xcalloc(1, sizeof(*n));
    ended_node_t **bucket = &t->buckets[job_id % BUCKETS];

    n->job.job_id = job_id;
    n->job.state = state;
    n->job.reason = reason ? forge_xstrdup(reason) : NULL;
    n->job.slurm = slurm ? json_incref(slurm) : NULL;
    n->job.usage = usage ? json_incref(usage) : NULL;
    n->seen_ms = now_ms;
    n->chain = *bucket; /* in front: found before an older end of the job */
    *bucket = n;
    if (t->newest)
        t->newest->next = n;
    else
        t->oldest = n;
    t->newest = n;
    t->count++;
    expire(t, now_ms);
}

const forge_ended_job_t *forge_ended_find(forge_ended_t *t, uint32_t job_id,
                                          long long now_ms)
{
    ended_node_t *n;

    expire(t, now_ms);
    n = *link_of(t, job_id);
    return n ? &n->job : NULL;
}

size_t forge_ended_count(const forge_ended_t *t)
{
    return t->count;
}

void forge_ended_free(forge_ended_t *t)
{
    if (!t)
        return;
    while (t->oldest)
        drop_oldest(t);
    free(t);
}
