/* SPDX-License-Identifier: Apache-2.0 */
/*
 * launch_table.c - the state topic read into each launch's latest record
 * (launch_table.h). While reading, a JSON object maps each key to its slot
 * (later records overwrite their slot, tombstones empty it); the slots
 * left are then sorted by launch_id. The caller's thread.
 */
#include "admin/launch_table.h"
#include "base/util.h"
#include "admin/topic_scan.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

typedef struct loading {
    forge_launch_table_t *t;
    const forge_sealer_t *sealer;
    json_t *slots; /* key -> index into t->entries */
    size_t cap;
} loading_t;

static void drop_slot(forge_launch_table_entry_t *e)
{
    forge_launch_record_free(e->rec);
    e->rec = NULL;
}

static void on_record(void *ctx, const forge_scan_record_t *r)
{
    loading_t *l = ctx;
    forge_launch_table_t *t = l->t;
    forge_launch_record_t *rec = NULL;
    forge_error_t err = {0};
    char *key;
    json_t *slot;

    t->records_read++;
    if (!r->key)
        return; /* the worker always keys by launch_id */
    key = forge_xstrndup(r->key, r->key_len);
    slot = json_object_get(l->slots, key);
    if (!r->value) { /* a tombstone: the launch is gone */
        if (slot)
            drop_slot(&t->entries[json_integer_value(slot)]);
    } else if (forge_launch_record_decode(r->value, r->value_len, l->sealer,
                                          &rec, &err)) {
        if (!t->undecodable++)
            snprintf(t->first_error, sizeof(t->first_error), "%d/%lld: %.400s",
                     (int)r->partition, (long long)r->offset, err.message);
    } else {
        size_t i = slot ? (size_t)json_integer_value(slot) : t->count;
        if (!slot) {
            if (t->count == l->cap) {
                l->cap = l->cap ? l->cap * 2 : 64;
                t->entries =
                    forge_xrealloc(t->entries, l->cap * sizeof(*t->entries));
            }
            t->count++;
            json_object_set_new_nocheck(l->slots, key,
                                        json_integer((json_int_t)i));
        } else {
            drop_slot(&t->entries[i]);
        }
        t->entries[i] = (forge_launch_table_entry_t){
            rec, r->partition, r->offset, r->timestamp_ms};
    }
    free(key);
}

static int by_launch_id(const void *a, const void *b)
{
    const forge_launch_table_entry_t *x = a, *y = b;

    return strcmp(x->rec->launch_id, y->rec->launch_id);
}

/* Tombstoned slots out, the rest sorted. */
static void settle(forge_launch_table_t *t)
{
    size_t kept = 0;

    for (size_t i = 0; i < t->count; i++)
        if (t->entries[i].rec)
            t->entries[kept++] = t->entries[i];
    t->count = kept;
    if (kept)
        qsort(t->entries, kept, sizeof(*t->entries), by_launch_id);
}

forge_admin_code_t forge_launch_table_load(const forge_config_t *cfg,
                                           const forge_sealer_t *sealer,
                                           const forge_scan_marks_t *until,
                                           int32_t count, int timeout_ms,
                                           forge_launch_table_t *t,
                                           forge_admin_error_t *err)
{
    loading_t l = {t, sealer, json_object(), 0};
    forge_admin_code_t rc = FORGE_RECOVERY_OK;

    memset(t, 0, sizeof(*t));
    t->partitions = count;
    if (until || !(rc = forge_topic_partitions(
                       cfg, cfg->topic_state, timeout_ms, &t->partitions, err)))
        rc = forge_topic_scan_until(cfg, cfg->topic_state, until, t->partitions,
                                    timeout_ms, on_record, &l, err);
    json_decref(l.slots);
    settle(t);
    if (rc)
        forge_launch_table_clear(t);
    return rc;
}

const forge_launch_table_entry_t *
forge_launch_table_find(const forge_launch_table_t *t, const char *launch_id)
{
    size_t lo = 0, hi = t->count;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(launch_id, t->entries[mid].rec->launch_id);
        if (!c)
            return &t->entries[mid];
        if (c < 0)
            hi = mid;
        else
            lo = mid + 1;
    }
    return NULL;
}

void forge_launch_table_clear(forge_launch_table_t *t)
{
    if (!t)
        return;
    for (size_t i = 0; i < t->count; i++)
        forge_launch_record_free(t->entries[i].rec);
    free(t->entries);
    memset(t, 0, sizeof(*t));
}
