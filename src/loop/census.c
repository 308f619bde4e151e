/* SPDX-License-Identifier: Apache-2.0 */
/*
 * loop/census.c - the loop's census (census.h). Threads: the loop's.
 */
#include "loop/census.h"
#include "hooks/hooks.h"
#include "record/state.h"

typedef struct census {
    forge_owner_t *owner;
    unsigned live[FORGE_STATE__COUNT];
    unsigned archive_queue;
} census_t;

static void count_entry(void *ctx, forge_entry_t *e)
{
    census_t *c = ctx;

    if (!forge_owner_owns(c->owner, e->partition))
        return;
    if (!forge_state_is_terminal(e->rec->state))
        c->live[e->rec->state]++;
    else if (e->rec->job_id && !e->rec->archived)
        c->archive_queue++;
}

void forge_census_push(forge_owner_t *o, long long late_ms)
{
    census_t c = {o, {0}, 0};

    if (!forge_hooks_installed())
        return;
    forge_owner_each(o, count_entry, &c);
    forge_hooks()->census(late_ms, c.live, FORGE_STATE__COUNT, c.archive_queue);
}
