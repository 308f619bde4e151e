/* SPDX-License-Identifier: Apache-2.0 */
/*
 * owner.c - owned partitions and the launch table (owner.h): a bucket
 * array with chaining (FNV-1a), doubled as the table grows, the open list
 * of the launches not settled yet (what the tick walks), a small partition
 * array, and the registration of the held requests' secrets with the log
 * (log.h), and the partitions' generations (generation.h), which the runners
 * read.
 */
#include "record/owner.h"
#include "hooks/hooks.h"
#include "log/log.h"
#include "secrets/secrets.h"
#include "base/util.h"

#include <stdlib.h>
#include <string.h>

#define BUCKETS_MIN    4096 /* then doubled: at most one entry a bucket */
#define PARTITIONS_MAX FORGE_PARTITIONS_MAX

typedef enum { P_NONE = 0, P_RESTORING, P_READY } pstate_t;

struct forge_owner {
    forge_entry_t **buckets;
    size_t nbuckets; /* a power of two, >= BUCKETS_MIN */
    size_t count;
    forge_entry_t *open; /* the open list's head (forge_owner_each) */
    size_t open_count;
    unsigned char partitions[PARTITIONS_MAX]; /* pstate_t */
    /* a restore that failed: when to try again (0: none due), and how many
     * times in a row it failed (for the backoff; cleared once ready) */
    long long retry_at[PARTITIONS_MAX];
    unsigned char failures[PARTITIONS_MAX];
    /* kept with the arrays above, so the loop's per-iteration questions
     * (ready? how many owned? a restore due?) never scan them */
    size_t owned, restoring, retrying;
    forge_generations_t *generations; /* read by the runners' threads */
};

/* Every partition state change goes through here, with the counts. */
static void set_state(forge_owner_t *o, int32_t p, pstate_t to)
{
    pstate_t from = (pstate_t)o->partitions[p];

    o->owned += (to != P_NONE) - (from != P_NONE);
    o->restoring += (to == P_RESTORING) - (from == P_RESTORING);
    o->partitions[p] = (unsigned char)to;
    forge_hooks()->partitions(o->owned, o->restoring);
}

static void set_retry(forge_owner_t *o, int32_t p, long long at)
{
    o->retrying += (at != 0) - (o->retry_at[p] != 0);
    o->retry_at[p] = at;
}

static uint32_t hash_of(const char *key)
{
    uint32_t h = 2166136261u;

    for (; *key; key++)
        h = (h ^ (unsigned char)*key) * 16777619u;
    return h;
}

static forge_entry_t **bucket_of(const forge_owner_t *o, const char *key)
{
    return &o->buckets[hash_of(key) & (o->nbuckets - 1)];
}

/* buckets' buckets, rehashed (a power of two, more than now). */
static void rehash(forge_owner_t *o, size_t buckets)
{
    forge_entry_t **old = o->buckets;
    size_t n = o->nbuckets;

    o->nbuckets = buckets;
    o->buckets = forge_xcalloc(o->nbuckets, sizeof(*o->buckets));
    for (size_t b = 0; b < n; b++)
        for (forge_entry_t *e = old[b], *next; e; e = next) {
            forge_entry_t **slot = bucket_of(o, e->rec->launch_id);
            next = e->next;
            e->next = *slot;
            *slot = e;
        }
    free(old);
}

/* Twice the buckets, once there are more entries than buckets: a lookup
 * stays a bucket's few entries at 100,000 launches. */
static void grow(forge_owner_t *o)
{
    rehash(o, 2 * o->nbuckets);
}

void forge_owner_reserve(forge_owner_t *o, size_t more)
{
    size_t want = o->nbuckets;

    while (want < o->count + more)
        want *= 2;
    if (want > o->nbuckets)
        rehash(o, want);
}

/* Secrets too short for the log's registry are refused there (they would
 * garble every line); the archive still redacts them in its own launch's
 * tail (archive_work.c). */
static void secret_add(void *ctx, const char *secret)
{
    (void)ctx;
    (void)forge_secret_add(secret);
}

static void secret_remove(void *ctx, const char *secret)
{
    (void)ctx;
    forge_secret_remove(secret);
}

void forge_owner_register(const forge_held_t *held)
{
    forge_held_each_secret(held, secret_add, NULL);
}

typedef struct secret_list {
    const char **at;
    size_t n, size;
} secret_list_t;

static void secret_collect(void *ctx, const char *secret)
{
    secret_list_t *l = ctx;

    if (l->n == l->size) {
        l->size = l->size ? 2 * l->size : 64;
        l->at = forge_xrealloc(l->at, l->size * sizeof(*l->at));
    }
    l->at[l->n++] = secret;
}

void forge_owner_register_many(forge_held_t *const *helds, size_t n)
{
    secret_list_t l = {0};

    for (size_t i = 0; i < n; i++)
        forge_held_each_secret(helds[i], secret_collect, &l);
    forge_secrets_add_many(l.at, l.n);
    free(l.at);
}

void forge_owner_unregister(const forge_held_t *held)
{
    forge_held_each_secret(held, secret_remove, NULL);
}

static void release_request(forge_entry_t *e)
{
    forge_held_each_secret(e->held, secret_remove, NULL);
    forge_held_free(e->held);
    e->held = NULL;
}

/* ---- the open list (owner.h: forge_owner_each) ------------------------ */

/* Settled: nothing left to do for it, a sweep for late jobs included (the
 * record's flag: a restored entry is put before its sweep is timed). */
static bool settled(const forge_entry_t *e)
{
    return forge_state_is_terminal(e->rec->state) && e->rec->cleaned &&
           !e->rec->sweep_due;
}

static bool is_open(const forge_owner_t *o, const forge_entry_t *e)
{
    return e->open_prev || o->open == e;
}

static void open_link(forge_owner_t *o, forge_entry_t *e)
{
    if (is_open(o, e) || settled(e))
        return;
    e->open_prev = NULL;
    e->open_next = o->open;
    if (o->open)
        o->open->open_prev = e;
    o->open = e;
    o->open_count++;
}

static void open_unlink(forge_owner_t *o, forge_entry_t *e)
{
    if (!is_open(o, e))
        return;
    if (e->open_prev)
        e->open_prev->open_next = e->open_next;
    else
        o->open = e->open_next;
    if (e->open_next)
        e->open_next->open_prev = e->open_prev;
    e->open_prev = e->open_next = NULL;
    o->open_count--;
}

/* The loop's memory of the entry's jobcomp records (owner.h). */
static void push_release(forge_entry_t *e)
{
    if (e->push_free)
        e->push_free(e->push);
    e->push = NULL;
    e->push_free = NULL;
    e->archive_gated = false;
}

static void entry_free(forge_entry_t *e)
{
    push_release(e);
    forge_launch_record_free(e->rec);
    release_request(e);
    free(e);
}

forge_owner_t *forge_owner_new(void)
{
    forge_owner_t *o = forge_xcalloc(1, sizeof(forge_owner_t));

    o->nbuckets = BUCKETS_MIN;
    o->buckets = forge_xcalloc(o->nbuckets, sizeof(*o->buckets));
    o->generations = forge_generations_new();
    return o;
}

void forge_owner_destroy(forge_owner_t *o)
{
    if (!o)
        return;
    for (size_t b = 0; b < o->nbuckets; b++)
        for (forge_entry_t *e = o->buckets[b], *next; e; e = next) {
            next = e->next;
            entry_free(e);
        }
    forge_generations_destroy(o->generations);
    free(o->buckets);
    free(o);
}

forge_entry_t *forge_owner_find(forge_owner_t *o, const char *launch_id)
{
    for (forge_entry_t *e = *bucket_of(o, launch_id); e; e = e->next)
        if (!strcmp(e->rec->launch_id, launch_id))
            return e;
    return NULL;
}

forge_entry_t *forge_owner_put(forge_owner_t *o, forge_launch_record_t *rec,
                               forge_request_t *req, int32_t partition)
{
    forge_held_t *held = forge_held_of_request(req);

    forge_request_destroy(req);
    return forge_owner_put_held(o, rec, held, partition);
}

forge_entry_t *forge_owner_put_held(forge_owner_t *o,
                                    forge_launch_record_t *rec,
                                    forge_held_t *held, int32_t partition)
{
    /* before the old request lets go: a value both hold stays registered */
    forge_owner_register(held);
    return forge_owner_put_registered(o, rec, held, partition);
}

forge_entry_t *forge_owner_put_registered(forge_owner_t *o,
                                          forge_launch_record_t *rec,
                                          forge_held_t *held, int32_t partition)
{
    forge_entry_t **slot, *e;

    if (o->count >= o->nbuckets)
        grow(o);
    slot = bucket_of(o, rec->launch_id);
    for (e = *slot; e; e = e->next)
        if (!strcmp(e->rec->launch_id, rec->launch_id))
            break;
    if (e) { /* replace in place: a newer attempt */
        open_unlink(o, e);
        push_release(e);
        forge_launch_record_free(e->rec);
        release_request(e);
        forge_entry_t *next = e->next;
        memset(e, 0, sizeof(*e));
        e->next = next;
    } else {
        e = forge_xcalloc(1, sizeof(*e));
        e->next = *slot;
        *slot = e;
        o->count++;
    }
    e->rec = rec;
    e->held = held;
    e->partition = partition;
    e->generation = forge_generation_of(o->generations, partition);
    open_link(o, e);
    return e;
}

void forge_owner_drop_request(forge_entry_t *e)
{
    forge_launch_drop_request(e->rec);
    release_request(e);
}

void forge_owner_assign(forge_owner_t *o, int32_t p)
{
    if (p >= 0 && p < PARTITIONS_MAX) {
        set_state(o, p, P_RESTORING);
        forge_generation_begin(o->generations, p);
    }
}

void forge_owner_release(forge_owner_t *o, int32_t p)
{
    forge_generation_end(o->generations, p);
}

const forge_generations_t *forge_owner_generations(const forge_owner_t *o)
{
    return o->generations;
}

void forge_owner_set_ready(forge_owner_t *o, int32_t p)
{
    if (p >= 0 && p < PARTITIONS_MAX && o->partitions[p] == P_RESTORING) {
        set_state(o, p, P_READY);
        set_retry(o, p, 0);
        o->failures[p] = 0;
    }
}

int forge_owner_restore_failed(forge_owner_t *o, int32_t p, long long retry_at)
{
    if (p < 0 || p >= PARTITIONS_MAX || o->partitions[p] != P_RESTORING)
        return 0;
    set_retry(o, p, retry_at);
    if (o->failures[p] < 255)
        o->failures[p]++;
    return o->failures[p];
}

void forge_owner_restore_later(forge_owner_t *o, int32_t p, long long at)
{
    if (p >= 0 && p < PARTITIONS_MAX && o->partitions[p] == P_RESTORING)
        set_retry(o, p, at);
}

int forge_owner_restore_failures(const forge_owner_t *o, int32_t p)
{
    return p >= 0 && p < PARTITIONS_MAX ? o->failures[p] : 0;
}

int32_t forge_owner_restore_due(const forge_owner_t *o, long long now)
{
    int32_t due = -1;

    for (int32_t p = 0; o->retrying && p < PARTITIONS_MAX; p++)
        if (o->partitions[p] == P_RESTORING && o->retry_at[p] &&
            now >= o->retry_at[p] &&
            (due < 0 || o->retry_at[p] < o->retry_at[due]))
            due = p;
    return due;
}

void forge_owner_drop(forge_owner_t *o, int32_t p)
{
    if (p < 0 || p >= PARTITIONS_MAX)
        return;
    set_state(o, p, P_NONE);
    set_retry(o, p, 0); /* failures stay: a restore again soon backs off */
    forge_generation_end(o->generations, p);
    for (size_t b = 0; b < o->nbuckets; b++) {
        forge_entry_t **link = &o->buckets[b];
        while (*link) {
            forge_entry_t *e = *link;
            if (e->partition == p) {
                *link = e->next;
                open_unlink(o, e);
                entry_free(e);
                o->count--;
            } else {
                link = &e->next;
            }
        }
    }
}

bool forge_owner_owns(const forge_owner_t *o, int32_t p)
{
    return p >= 0 && p < PARTITIONS_MAX && o->partitions[p] == P_READY;
}

bool forge_owner_ready(const forge_owner_t *o)
{
    return o->restoring == 0;
}

size_t forge_owner_partition_count(const forge_owner_t *o)
{
    return o->owned;
}

int32_t *forge_owner_partitions(const forge_owner_t *o, size_t *n)
{
    int32_t *out = forge_xcalloc(PARTITIONS_MAX, sizeof(int32_t));

    *n = 0;
    for (int32_t p = 0; p < PARTITIONS_MAX; p++)
        if (o->partitions[p] != P_NONE)
            out[(*n)++] = p;
    return out;
}

void forge_owner_each(forge_owner_t *o, void (*fn)(void *ctx, forge_entry_t *),
                      void *ctx)
{
    for (forge_entry_t *e = o->open, *next; e; e = next) {
        next = e->open_next;
        fn(ctx, e);
        if (settled(e))
            open_unlink(o, e);
    }
}

size_t forge_owner_open_count(const forge_owner_t *o)
{
    return o->open_count;
}

size_t forge_owner_count(const forge_owner_t *o)
{
    return o->count;
}
