/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pool.c - threads with an inbox and an outbox (pool.h), generic: what an
 * item is and how it runs is the handler table's.
 *
 * Inbox: one, served by every thread. With a key function (lanes), a
 * thread takes the oldest item whose key is free (no item of that key
 * running; an older one waiting is met first); so one key's items run one at a
 * time in the order posted, and whichever thread is free takes the next
 * key (a burst spreads over all threads, never piles up behind one). A
 * thread knows its seat (forge_pool_seat): a handler keeps per-thread
 * things (a connection) by it.
 *
 * Threads and ownership: `lock` guards the lists (the inbox,
 * running, outbox), the counters and `stopping`; the threads wait on
 * the inbox's `wake`, forge_pool_settle on `finished` (a condition on the
 * monotonic clock). The notify hook (forge_pool_set_notify) is called by
 * the pool thread that filled the outbox, with the lock held, so once it
 * is unset no thread calls it any more.
 * An item is touched by one thread at a time: the poster's before
 * forge_pool_post, one pool thread's while it runs (unlocked), the
 * taker's after forge_pool_take; forge_pool_each_pending visits items of
 * the inbox and the running list under the lock, where no thread can move
 * them to the outbox or free them. The list nodes are the pool's own. The
 * handlers' context is shared by the pool's threads (the handlers say how
 * they share it) and outlives them.
 */
#include "loop/pool.h"
#include "clock/clock.h"
#include "base/util.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

typedef struct node {
    void *item;
    size_t key; /* the key function's answer (lanes), else 0 */
    struct node *next;
} node_t;

typedef struct queue {
    node_t *head, *tail;
} queue_t;

typedef struct lane {
    queue_t inbox;
    pthread_cond_t wake; /* an item posted, a key freed, or stopping */
} lane_t;

/* One thread: its pool and its index (forge_pool_seat). */
typedef struct seat {
    struct forge_pool *pool;
    lane_t *lane;
    size_t index;
} seat_t;

static _Thread_local size_t my_seat = SIZE_MAX;

struct forge_pool {
    forge_pool_handlers_t h;
    forge_pool_lane_fn lane; /* NULL: any item, in the order posted */
    void *ctx;
    pthread_t threads[FORGE_POOL_MAX_THREADS];
    seat_t seats[FORGE_POOL_MAX_THREADS];
    size_t thread_count;
    lane_t lanes[1];   /* the inbox */
    size_t lane_count; /* 1 */
    pthread_mutex_t lock;
    pthread_cond_t finished; /* an item reached the outbox */
    queue_t outbox;
    node_t *running; /* taken from the inbox, not yet in the outbox */
    size_t in_flight;
    size_t done; /* items in the outbox */
    bool stopping;
    void (*notify)(void *arg); /* forge_pool_set_notify: under `lock` */
    void *notify_arg;
};

static void push(queue_t *q, node_t *n)
{
    n->next = NULL;
    if (q->tail)
        q->tail->next = n;
    else
        q->head = n;
    q->tail = n;
}

static node_t *pop(queue_t *q)
{
    node_t *n = q->head;

    if (n && !(q->head = n->next))
        q->tail = NULL;
    return n;
}

/* Whether an item of key k may start now (keys: lanes): none of its key
 * running. The inbox is scanned oldest first, so an older item of k
 * waiting is always met, and started, before a newer one. */
static bool key_free(const forge_pool_t *p, size_t k)
{
    for (const node_t *r = p->running; r; r = r->next)
        if (r->key == k)
            return false;
    return true;
}

/* The oldest item of the inbox that may start, unlinked; NULL if none. */
static node_t *take_startable(forge_pool_t *p, queue_t *q)
{
    node_t *prev = NULL;

    if (!p->lane)
        return pop(q);
    for (node_t *n = q->head; n; prev = n, n = n->next) {
        if (!key_free(p, n->key))
            continue;
        if (prev)
            prev->next = n->next;
        else
            q->head = n->next;
        if (q->tail == n)
            q->tail = prev;
        return n;
    }
    return NULL;
}

static void unlink_running(forge_pool_t *p, const node_t *n)
{
    for (node_t **link = &p->running; *link; link = &(*link)->next)
        if (*link == n) {
            *link = n->next;
            return;
        }
}

/* The next item of lane to run, moved to `running`; NULL once stopping.
 * Called and returns with the lock held. */
static node_t *next_item(forge_pool_t *p, lane_t *lane)
{
    node_t *n = NULL;

    while (!p->stopping && !(n = take_startable(p, &lane->inbox)))
        pthread_cond_wait(&lane->wake, &p->lock);
    if (p->stopping)
        return NULL;
    n->next = p->running;
    p->running = n;
    return n;
}

static void *thread_main(void *arg)
{
    seat_t *seat = arg;
    forge_pool_t *p = seat->pool;
    node_t *n;

    my_seat = seat->index;
    pthread_mutex_lock(&p->lock);
    while ((n = next_item(p, seat->lane))) {
        pthread_mutex_unlock(&p->lock);
        p->h.run(p->ctx, n->item);
        pthread_mutex_lock(&p->lock);
        unlink_running(p, n);
        push(&p->outbox, n);
        p->done++;
        pthread_cond_broadcast(&p->finished);
        if (p->lane) /* its key is free: the next of that key may start */
            pthread_cond_broadcast(&seat->lane->wake);
        if (p->notify) /* under the lock: never after set_notify(NULL) */
            p->notify(p->notify_arg);
    }
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

static forge_pool_t *pool_new(const forge_pool_handlers_t *h, void *ctx)
{
    forge_pool_t *p = forge_xcalloc(1, sizeof(*p));

    p->h = *h;
    p->ctx = ctx;
    p->lane_count = 1;
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->lanes[0].wake, NULL);
    forge_clock_cond_init(&p->finished);
    return p;
}

forge_rc_t forge_pool_start(const char *name, size_t threads,
                            const forge_pool_handlers_t *h, void *ctx,
                            forge_pool_t **out, forge_error_t *err)
{
    return forge_pool_start_lanes(name, threads, h, NULL, ctx, out, err);
}

forge_rc_t forge_pool_start_lanes(const char *name, size_t threads,
                                  const forge_pool_handlers_t *h,
                                  forge_pool_lane_fn lane, void *ctx,
                                  forge_pool_t **out, forge_error_t *err)
{
    forge_pool_t *p = pool_new(h, ctx);

    *out = NULL;
    if (threads == 0 || threads > FORGE_POOL_MAX_THREADS) {
        forge_pool_stop(p);
        return forge_error_set(err, FORGE_EINVAL, name, "%zu threads: 1 to %d",
                               threads, FORGE_POOL_MAX_THREADS);
    }
    p->lane = lane;
    for (size_t i = 0; i < threads; i++) {
        p->seats[i] = (seat_t){p, &p->lanes[0], i};
        if (pthread_create(&p->threads[i], NULL, thread_main, &p->seats[i]) !=
            0) {
            forge_pool_stop(p);
            return forge_error_set(err, FORGE_EIO, name,
                                   "pthread_create failed");
        }
        p->thread_count++;
    }
    *out = p;
    return FORGE_OK;
}

void forge_pool_post(forge_pool_t *p, void *item)
{
    node_t *n = forge_xcalloc(1, sizeof(*n));
    lane_t *lane = &p->lanes[0];

    n->item = item;
    n->key = p->lane ? p->lane(p->ctx, item) : 0;
    pthread_mutex_lock(&p->lock);
    push(&lane->inbox, n);
    p->in_flight++;
    pthread_cond_signal(&lane->wake);
    pthread_mutex_unlock(&p->lock);
}

size_t forge_pool_seat(void)
{
    return my_seat;
}

void forge_pool_set_notify(forge_pool_t *p, void (*notify)(void *arg),
                           void *arg)
{
    pthread_mutex_lock(&p->lock);
    p->notify = notify;
    p->notify_arg = arg;
    pthread_mutex_unlock(&p->lock);
}

void *forge_pool_take(forge_pool_t *p)
{
    node_t *n;
    void *item = NULL;

    pthread_mutex_lock(&p->lock);
    if ((n = pop(&p->outbox))) {
        p->in_flight--;
        p->done--;
    }
    pthread_mutex_unlock(&p->lock);
    if (n) {
        item = n->item;
        free(n);
    }
    return item;
}

bool forge_pool_settle(forge_pool_t *p, long timeout_ms)
{
    struct timespec until = forge_clock_deadline(timeout_ms);
    bool settled;

    pthread_mutex_lock(&p->lock);
    while (p->done < p->in_flight && !p->stopping &&
           pthread_cond_timedwait(&p->finished, &p->lock, &until) == 0)
        ;
    settled = p->done >= p->in_flight;
    pthread_mutex_unlock(&p->lock);
    return settled;
}

size_t forge_pool_in_flight(forge_pool_t *p)
{
    size_t n;

    pthread_mutex_lock(&p->lock);
    n = p->in_flight;
    pthread_mutex_unlock(&p->lock);
    return n;
}

void forge_pool_each_pending(forge_pool_t *p, void (*visit)(void *, void *),
                             void *ctx)
{
    pthread_mutex_lock(&p->lock);
    for (size_t i = 0; i < p->lane_count; i++)
        for (node_t *n = p->lanes[i].inbox.head; n; n = n->next)
            visit(ctx, n->item);
    for (node_t *n = p->running; n; n = n->next)
        visit(ctx, n->item);
    pthread_mutex_unlock(&p->lock);
}

void forge_pool_interrupt(forge_pool_t *p)
{
    pthread_mutex_lock(&p->lock);
    p->stopping = true;
    for (size_t i = 0; i < p->lane_count; i++)
        pthread_cond_broadcast(&p->lanes[i].wake);
    pthread_cond_broadcast(&p->finished);
    pthread_mutex_unlock(&p->lock);
    if (p->h.interrupt)
        p->h.interrupt(p->ctx); /* the work in hand */
}

static void drop_all(forge_pool_t *p, queue_t *q)
{
    node_t *n;

    while ((n = pop(q))) {
        p->h.drop(n->item);
        free(n);
    }
}

void forge_pool_stop(forge_pool_t *p)
{
    if (!p)
        return;
    forge_pool_interrupt(p);
    for (size_t i = 0; i < p->thread_count; i++)
        pthread_join(p->threads[i], NULL);
    for (size_t i = 0; i < p->lane_count; i++)
        drop_all(p, &p->lanes[i].inbox);
    drop_all(p, &p->outbox);
    if (p->h.destroy)
        p->h.destroy(p->ctx);
    pthread_mutex_destroy(&p->lock);
    pthread_cond_destroy(&p->lanes[0].wake);
    pthread_cond_destroy(&p->finished);
    free(p);
}
