/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_pool.c - the generic pool (pool.h) on its own, with a handler table
 * that records what it is asked to do: items start in the order posted
 * and come back oldest first; settle waits for the work in hand and says
 * when it is not done; an interrupt reaches the handlers and starts
 * nothing more; a stop with work queued drops every item the pool still
 * holds and destroys the context (ASan's leak check counts the rest);
 * each_pending sees exactly the items queued or running. With lanes
 * (forge_pool_start_lanes): one lane's items run one at a time in the
 * order posted, while the other lanes go on beside a lane held. The
 * notify hook is called once per item that lands in the outbox, when it
 * is there already, and never once unset.
 *
 * A run handler may be held at a gate (the test opens it, or the
 * interrupt handler does, as a real one cuts its slurmrestd call short),
 * so what the pool holds at each moment is known without timing.
 */
#include "base/util.h"
#include "loop/pool.h"

#include <criterion/criterion.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MANY 20

#define LANES 3

typedef struct item {
    int id;
    size_t lane; /* forge_pool_start_lanes */
} item_t;

/* What the handlers saw; the context is the pool's (destroyed with it),
 * so what the tests read after a stop lives here. */
static struct {
    pthread_mutex_t lock;
    pthread_cond_t changed;
    bool gate_open;
    int ran[MANY + 1]; /* ids, in the order their run began */
    size_t ran_count;
    size_t running;                               /* runs in progress */
    size_t lane_running[LANES], lane_most[LANES]; /* at once, per lane */
    size_t interrupts, drops, destroys;
} seen;

static void fx_init(void)
{
    memset(&seen, 0, sizeof(seen));
    pthread_mutex_init(&seen.lock, NULL);
    pthread_cond_init(&seen.changed, NULL);
}

static void fx_fini(void)
{
    pthread_mutex_destroy(&seen.lock);
    pthread_cond_destroy(&seen.changed);
}

TestSuite(pool, .init = fx_init, .fini = fx_fini, .timeout = 30);

static void run(void *ctx, void *arg)
{
    item_t *it = arg;

    cr_assert_not_null(ctx);
    pthread_mutex_lock(&seen.lock);
    if (seen.ran_count <= MANY)
        seen.ran[seen.ran_count++] = it->id;
    seen.running++;
    if (++seen.lane_running[it->lane] > seen.lane_most[it->lane])
        seen.lane_most[it->lane] = seen.lane_running[it->lane];
    pthread_cond_broadcast(&seen.changed);
    while (!seen.gate_open)
        pthread_cond_wait(&seen.changed, &seen.lock);
    seen.lane_running[it->lane]--;
    seen.running--;
    pthread_mutex_unlock(&seen.lock);
}

static void open_gate(void)
{
    pthread_mutex_lock(&seen.lock);
    seen.gate_open = true;
    pthread_cond_broadcast(&seen.changed);
    pthread_mutex_unlock(&seen.lock);
}

static void drop(void *arg)
{
    pthread_mutex_lock(&seen.lock);
    seen.drops++;
    pthread_mutex_unlock(&seen.lock);
    free(arg);
}

static void interrupt(void *ctx)
{
    cr_assert_not_null(ctx);
    pthread_mutex_lock(&seen.lock);
    seen.interrupts++;
    pthread_mutex_unlock(&seen.lock);
    open_gate(); /* the work in hand is cut short */
}

static void destroy(void *ctx)
{
    pthread_mutex_lock(&seen.lock);
    seen.destroys++;
    pthread_mutex_unlock(&seen.lock);
    free(ctx);
}

static const forge_pool_handlers_t handlers = {run, drop, interrupt, destroy};

static forge_pool_t *start(size_t threads, bool gate_open)
{
    forge_pool_t *p = NULL;
    forge_error_t err = {0};

    seen.gate_open = gate_open;
    cr_assert_eq(forge_pool_start("test", threads, &handlers,
                                  forge_xcalloc(1, 16), &p, &err),
                 FORGE_OK, "%s", err.message);
    return p;
}

static void post(forge_pool_t *p, int id)
{
    item_t *it = forge_xcalloc(1, sizeof(*it));

    it->id = id;
    forge_pool_post(p, it);
}

/* Until n runs are in progress at once (a run begun is held at the
 * gate). */
static void wait_running(size_t n)
{
    pthread_mutex_lock(&seen.lock);
    while (seen.running < n)
        pthread_cond_wait(&seen.changed, &seen.lock);
    pthread_mutex_unlock(&seen.lock);
}

static size_t ran_count(void)
{
    size_t n;

    pthread_mutex_lock(&seen.lock);
    n = seen.ran_count;
    pthread_mutex_unlock(&seen.lock);
    return n;
}

static int id_of(void *item)
{
    int id;

    cr_assert_not_null(item);
    id = ((item_t *)item)->id;
    free(item);
    return id;
}

static void count_pending(void *ctx, void *item)
{
    (void)item;
    (*(size_t *)ctx)++;
}

static size_t pending(forge_pool_t *p)
{
    size_t n = 0;

    forge_pool_each_pending(p, count_pending, &n);
    return n;
}

Test(pool, items_run_in_the_order_posted_and_come_back_oldest_first)
{
    forge_pool_t *p = start(1, true);

    for (int i = 0; i < MANY; i++)
        post(p, i);
    cr_assert(forge_pool_settle(p, 10000), "the items did not finish");
    cr_assert_eq(forge_pool_in_flight(p), MANY);
    for (int i = 0; i < MANY; i++) {
        cr_assert_eq(seen.ran[i], i, "run %d was item %d", i, seen.ran[i]);
        cr_assert_eq(id_of(forge_pool_take(p)), i);
    }
    cr_assert_null(forge_pool_take(p));
    cr_assert_eq(forge_pool_in_flight(p), 0);
    forge_pool_stop(p);
    cr_assert_eq(seen.drops, 0, "everything was taken back");
    cr_assert_eq(seen.destroys, 1);
}

/* The notify hook: counts, and checks the item it announces can be
 * taken (it is called under the pool's lock, so it only peeks at the
 * counter the test reads). */
static size_t notified;

static void on_notify(void *arg)
{
    cr_assert_eq(arg, &notified);
    notified++;
}

Test(pool, notify_is_called_once_per_item_finished_and_never_once_unset)
{
    forge_pool_t *p = start(2, false);

    notified = 0;
    forge_pool_set_notify(p, on_notify, &notified);
    post(p, 1);
    post(p, 2);
    wait_running(2);
    cr_assert_eq(notified, 0, "notified before anything finished");
    open_gate();
    cr_assert(forge_pool_settle(p, 10000), "the items did not finish");
    cr_assert_eq(notified, 2, "one notify per item finished");
    id_of(forge_pool_take(p));
    id_of(forge_pool_take(p));
    forge_pool_set_notify(p, NULL, NULL);
    post(p, 3);
    cr_assert(forge_pool_settle(p, 10000), "the item did not finish");
    cr_assert_eq(notified, 2, "notified once unset");
    cr_assert_eq(id_of(forge_pool_take(p)), 3);
    forge_pool_stop(p);
}

Test(pool, settle_waits_for_the_work_in_hand_and_says_when_it_is_not_done)
{
    forge_pool_t *p = start(1, false);

    post(p, 1);
    wait_running(1);
    cr_assert_not(forge_pool_settle(p, 100), "settled with a run held");
    cr_assert_null(forge_pool_take(p), "taken back before it finished");
    cr_assert_eq(forge_pool_in_flight(p), 1);
    open_gate();
    cr_assert(forge_pool_settle(p, 10000), "not settled once it finished");
    cr_assert_eq(id_of(forge_pool_take(p)), 1);
    cr_assert_eq(forge_pool_in_flight(p), 0);
    forge_pool_stop(p);
    cr_assert_eq(seen.interrupts, 1, "the stop interrupts");
}

Test(pool, an_interrupt_reaches_the_handlers_and_starts_nothing_more)
{
    forge_pool_t *p = start(1, false);
    void *first = NULL;

    for (int i = 0; i < 3; i++)
        post(p, i);
    wait_running(1);
    forge_pool_interrupt(p); /* opens the gate: item 0 ends */
    cr_assert_eq(seen.interrupts, 1);
    cr_assert_not(forge_pool_settle(p, 60000), "items 1 and 2 never run");
    for (int i = 0; i < 3000 && !first; i++) {
        first = forge_pool_take(p);
        usleep(1000);
    }
    /* item 0 reached the outbox; its thread looked at `stopping` under the
     * same lock and took nothing more */
    cr_assert_eq(id_of(first), 0);
    cr_assert_eq(ran_count(), 1, "%zu items ran after the interrupt",
                 ran_count() - 1);
    cr_assert_eq(forge_pool_in_flight(p), 2);
    forge_pool_stop(p);
    cr_assert_eq(ran_count(), 1);
    cr_assert_eq(seen.drops, 2, "the two never run are dropped");
    cr_assert_eq(seen.interrupts, 2);
    cr_assert_eq(seen.destroys, 1);
}

Test(pool, a_stop_with_work_queued_drops_all_the_pool_holds)
{
    forge_pool_t *p = start(2, false);

    for (int i = 0; i < 6; i++)
        post(p, i);
    wait_running(2);
    forge_pool_stop(p); /* its interrupt cuts the two runs short */
    cr_assert_eq(ran_count(), 2);
    cr_assert_eq(seen.drops, 6, "4 never run and 2 never taken back");
    cr_assert_eq(seen.destroys, 1);
}

Test(pool, each_pending_sees_the_items_queued_or_running)
{
    forge_pool_t *p = start(1, false);

    cr_assert_eq(pending(p), 0);
    for (int i = 0; i < 3; i++)
        post(p, i);
    wait_running(1);
    cr_assert_eq(pending(p), 3, "one running, two queued");
    open_gate();
    cr_assert(forge_pool_settle(p, 10000));
    cr_assert_eq(pending(p), 0, "finished items are no longer pending");
    for (int i = 0; i < 3; i++)
        cr_assert_eq(id_of(forge_pool_take(p)), i);
    forge_pool_stop(p);
}

Test(pool, threads_share_one_inbox)
{
    forge_pool_t *p = start(4, false);

    for (int i = 0; i < 4; i++)
        post(p, i);
    wait_running(4); /* never returns unless four run at once */
    open_gate();
    cr_assert(forge_pool_settle(p, 10000));
    for (int i = 0; i < 4; i++) {
        void *it = forge_pool_take(p);
        cr_assert_not_null(it);
        free(it);
    }
    forge_pool_stop(p);
}

Test(pool, a_start_refused_still_destroys_its_context)
{
    forge_pool_t *p = (forge_pool_t *)&seen;
    forge_error_t err = {0};

    cr_assert_eq(forge_pool_start("test", FORGE_POOL_MAX_THREADS + 1, &handlers,
                                  forge_xcalloc(1, 16), &p, &err),
                 FORGE_EINVAL);
    cr_assert_null(p);
    cr_assert_eq(seen.destroys, 1);
    cr_assert(strstr(err.message, "threads"), "%s", err.message);
    forge_pool_stop(NULL);
}

/* ---- lanes ----------------------------------------------------------------
 */

static size_t lane_of(void *ctx, const void *item)
{
    (void)ctx;
    return ((const item_t *)item)->lane;
}

static forge_pool_t *start_lanes(size_t lanes)
{
    forge_pool_t *p = NULL;
    forge_error_t err = {0};

    seen.gate_open = false;
    cr_assert_eq(forge_pool_start_lanes("test", lanes, &handlers, lane_of,
                                        forge_xcalloc(1, 16), &p, &err),
                 FORGE_OK, "%s", err.message);
    return p;
}

static void post_in(forge_pool_t *p, int id, size_t lane)
{
    item_t *it = forge_xcalloc(1, sizeof(*it));

    it->id = id;
    it->lane = lane;
    forge_pool_post(p, it);
}

Test(pool, a_lane_held_never_delays_another)
{
    forge_pool_t *p = start_lanes(2);

    post_in(p, 0, 0);
    post_in(p, 1, 0); /* behind 0 in its lane */
    post_in(p, 2, 1); /* posted last, runs beside 0 */
    wait_running(2);  /* never returns unless 0 and 2 run at once */
    usleep(100000);
    pthread_mutex_lock(&seen.lock);
    cr_assert_eq(seen.ran_count, 2, "item 1 ran while 0 was held");
    cr_assert(seen.ran[0] != 1 && seen.ran[1] != 1);
    pthread_mutex_unlock(&seen.lock);
    cr_assert_eq(pending(p), 3, "two running, one queued");
    open_gate();
    cr_assert(forge_pool_settle(p, 10000));
    for (int i = 0; i < 3; i++)
        free(forge_pool_take(p));
    forge_pool_stop(p);
    cr_assert_eq(seen.ran[2], 1);
}

Test(pool, each_lane_runs_its_items_in_order_one_at_a_time)
{
    forge_pool_t *p = start_lanes(LANES);
    int last[LANES] = {-1, -1, -1};

    seen.gate_open = true;
    for (int i = 0; i < MANY; i++) /* lanes 0, 0, 1, 2, 2, 0, ... */
        post_in(p, i, (size_t)(i * 7 / 3) % LANES);
    cr_assert(forge_pool_settle(p, 10000), "the items did not finish");
    cr_assert_eq(seen.ran_count, MANY);
    for (size_t i = 0; i < MANY; i++) {
        size_t lane = (size_t)(seen.ran[i] * 7 / 3) % LANES;
        cr_assert_gt(seen.ran[i], last[lane], "lane %zu ran %d after %d", lane,
                     seen.ran[i], last[lane]);
        last[lane] = seen.ran[i];
    }
    for (size_t l = 0; l < LANES; l++)
        cr_assert_eq(seen.lane_most[l], 1, "lane %zu ran %zu at once", l,
                     seen.lane_most[l]);
    for (int i = 0; i < MANY; i++)
        free(forge_pool_take(p));
    cr_assert_eq(forge_pool_in_flight(p), 0);
    forge_pool_stop(p);
}

Test(pool, a_stop_drops_what_every_lane_holds)
{
    forge_pool_t *p = start_lanes(LANES);

    for (int i = 0; i < 9; i++)
        post_in(p, i, (size_t)i % LANES);
    wait_running(LANES);
    cr_assert_eq(pending(p), 9, "each_pending sees every lane");
    forge_pool_stop(p); /* its interrupt cuts the three runs short */
    cr_assert_eq(ran_count(), LANES);
    cr_assert_eq(seen.drops, 9, "6 never run and 3 never taken back");
    cr_assert_eq(seen.destroys, 1);
}
