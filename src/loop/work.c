/* SPDX-License-Identifier: Apache-2.0 */
/*
 * work.c - a work item's life (work.h): made empty for its kind, a
 * submit given the loop's prepare, freed with whatever its kind's payload
 * holds (secrets wiped); and what submits and archives share (whose a
 * launch's files are). No threads of its own: an item is
 * touched by whoever owns it at the time (work.h).
 */
#include "loop/work.h"
#include "clock/clock.h"
#include "base/util.h"
#include "render/render.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

forge_work_t *forge_work_new(forge_work_kind_t kind, const char *launch_id,
                             int attempt, int32_t partition,
                             uint64_t generation)
{
    forge_work_t *w = forge_xcalloc(1, sizeof(*w));

    w->kind = kind;
    w->launch_id = launch_id ? forge_xstrdup(launch_id) : NULL;
    w->attempt = attempt;
    w->partition = partition;
    w->generation = generation;
    w->made_ns = forge_clock_ns();
    if (kind <= FORGE_WORK_CLEAN_CANCEL)
        atomic_init(&w->submit.withdraw, false);
    return w;
}

void forge_work_take_prepared(forge_work_t *w, forge_prepared_t *p,
                              const forge_launch_t *launch,
                              const forge_tenant_t *tenant)
{
    forge_work_prepared_t *into = forge_xcalloc(1, sizeof(*into));

    into->script = p->script;
    into->payload = p->payload;
    p->script = NULL;
    p->payload = NULL;
    into->has_credentials =
        forge_render_credentials(launch, &into->credentials);
    into->pool_count = launch->pool_count;
    into->tenant = tenant;
    w->submit.prepared = into;
}

static void free_prepared(forge_work_prepared_t *p)
{
    if (!p)
        return;
    free(p->script);
    json_decref(p->payload);
    if (p->credentials.data) /* secrets: not left in freed memory */
        memset(p->credentials.data, 0, p->credentials.cap);
    forge_buf_clear(&p->credentials);
    free(p);
}

static void free_submit(forge_work_t *w)
{
    free(w->submit.request);
    free(w->submit.excluded_nodes);
    free(w->submit.component_ids);
    free_prepared(w->submit.prepared);
}

static void free_poll(forge_work_t *w)
{
    for (size_t i = 0; i < w->poll.item_count; i++) {
        forge_poll_item_t *it = &w->poll.items[i];
        free(it->component_ids);
        free(it->states);
        free(it->tag);
        forge_slurm_job_list_clear(&it->jobs);
    }
    free(w->poll.items);
}

static void free_files(forge_work_t *w)
{
    forge_held_free(w->files.kept);
    forge_archive_clear(&w->files.archive);
}

static void free_live(forge_work_t *w)
{
    for (size_t i = 0; i < w->live.item_count; i++) {
        forge_live_item_t *it = &w->live.items[i];
        free(it->launch_id);
        forge_held_free(it->kept);
        free(it->event);
        forge_live_cursors_free(it->cursors, it->cursor_count);
        forge_live_read_clear(&it->read);
    }
    free(w->live.items);
}

static void free_image_note(forge_work_t *w)
{
    free(w->image.reason);
    json_decref(w->image.slurm);
    json_decref(w->image.usage);
    forge_buf_clear(&w->image.note);
}

/* What each kind's payload holds (NULL: nothing). */
static void (*const payload_free[FORGE_WORK__COUNT])(forge_work_t *) = {
    [FORGE_WORK_SUBMIT] = free_submit,
    [FORGE_WORK_CLEAN_SUBMIT] = free_submit,
    [FORGE_WORK_CLEAN_CANCEL] = free_submit,
    [FORGE_WORK_POLL] = free_poll,
    [FORGE_WORK_ARCHIVE] = free_files,
    [FORGE_WORK_CLEANUP] = free_files,
    [FORGE_WORK_RESTAGE] = free_files,
    [FORGE_WORK_LIVE] = free_live,
    [FORGE_WORK_IMAGE_NOTE] = free_image_note,
};

void forge_work_free(forge_work_t *w)
{
    if (!w)
        return;
    if (w->kind < FORGE_WORK__COUNT && payload_free[w->kind])
        payload_free[w->kind](w);
    free(w->launch_id);
    free(w);
}

void forge_work_drop(void *w)
{
    forge_work_free(w);
}

void forge_work_say(forge_work_t *w, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(w->message, sizeof(w->message), fmt, ap);
    va_end(ap);
}

forge_rc_t forge_work_files_owner(const forge_config_t *cfg,
                                  const forge_tenants_t *tenants,
                                  const forge_held_t *kept,
                                  forge_fs_owner_t *owner, const char **user,
                                  forge_error_t *err)
{
    const forge_tenant_t *t = NULL;
    forge_rc_t rc;

    *user = NULL;
    if (kept && (rc = forge_tenant_named(tenants, kept->tenant, &t, err)))
        return rc;
    if (t)
        *user = t->slurm_user;
    return forge_staging_owner(cfg, t, owner, err);
}
