/* SPDX-License-Identifier: Apache-2.0 */
/*
 * live_work.c - the live logs' thread (live_work.h): each launch of a LIVE
 * item read past its cursors (archive/live.h), its own secrets and every
 * registered one redacted, within the bounds the item says.
 *
 * Threads and ownership: one thread; its context (the configuration) is
 * read-only; the item is its own while it runs (work.h), and everything in
 * it was copied by the loop, so nothing here touches the launch table.
 */
#include "loop/live_work.h"
#include "core/util.h"
#include "loop/work.h"

#include <stdio.h>
#include <stdlib.h>

static void read_item(const forge_config_t *cfg, forge_live_item_t *it)
{
    uint64_t chunk = (uint64_t)cfg->log_live_chunk_bytes;
    forge_live_spec_t spec = {it->launch_id,
                              it->attempt,
                              (const char *const *)it->secrets,
                              it->secret_count,
                              chunk,
                              it->allowance,
                              (uint64_t)cfg->log_live_budget_bytes,
                              it->final};
    forge_error_t err = {0};

    if (forge_live_read(cfg, &spec, it->cursors, it->cursor_count, &it->read,
                        &err)) {
        it->code = err.code ? err.code : FORGE_EIO;
        snprintf(it->message, sizeof(it->message), "%s", err.message);
    }
}

static void run(void *ctx, void *item)
{
    forge_work_t *w = item;

    w->status = FORGE_SLURM_OK;       /* no Slurm here */
    if (w->kind != FORGE_WORK_LIVE) { /* not this thread's: a bug */
        w->code = FORGE_EINVAL;
        forge_work_say(w, "work of kind %d posted to the live logs' thread",
                       (int)w->kind);
        return;
    }
    for (size_t i = 0; i < w->live.item_count; i++)
        read_item(ctx, &w->live.items[i]);
}

/* The context is the caller's configuration: nothing to destroy. */
static const forge_pool_handlers_t handlers = {run, forge_work_drop, NULL,
                                               NULL};

forge_rc_t forge_live_work_start(const forge_config_t *cfg, forge_pool_t **out,
                                 forge_error_t *err)
{
    return forge_pool_start("live-logs", 1, &handlers, (void *)cfg, out, err);
}
