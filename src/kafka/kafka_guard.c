/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kafka_guard.c - a librdkafka call that may never return, waited for with
 * a deadline (kafka_guard.h says which call and why).
 *
 * Seen here before this existed: after the second of two broker restarts a
 * worker's loop sat in send_offsets_to_transaction for five minutes, until
 * the group threw it out; its partitions stood still meanwhile.
 *
 * Threads and ownership: each guarded call runs on a detached thread of
 * its own, given a guard_call_t that both sides hold (refs, under mu). The
 * caller waits on cv until the call is done or its deadline passes.
 *   - Done in time: the caller takes the result; the last of the two to let
 *     go frees the call.
 *   - Overdue: under mu the caller marks the call abandoned and from then
 *     on never touches the producer again (kafka.c replaces it: a new
 *     producer with the same transactional.id fences the old one, and the
 *     broker aborts the transaction it left open). The call's thread owns
 *     the producer now: if the call returns, it destroys the producer.
 * `abandoned_now` counts producers given up whose call is still out.
 */
#include "kafka/kafka_guard.h"
#include "clock/clock.h"
#include "log/log.h"
#include "base/util.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#define HANG_MS (3600 * 1000) /* the test point's "never" */

typedef struct guard_call {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int refs;                /* under mu: the caller, the call's thread */
    bool done;               /* under mu */
    bool abandoned;          /* under mu: the producer is the thread's */
    rd_kafka_error_t *error; /* under mu: the call's result */
    /* the call's arguments, the thread's to read */
    rd_kafka_t *producer;
    rd_kafka_topic_partition_list_t *offsets;
    rd_kafka_consumer_group_metadata_t *md;
    int timeout_ms;
    bool hang;
} guard_call_t;

static atomic_int abandoned_now;

int forge_kafka_guard_abandoned(void)
{
    return atomic_load(&abandoned_now);
}

static void release(guard_call_t *c)
{
    bool last;

    pthread_mutex_lock(&c->mu);
    last = --c->refs == 0;
    pthread_mutex_unlock(&c->mu);
    if (!last)
        return;
    if (c->error)
        rd_kafka_error_destroy(c->error);
    rd_kafka_topic_partition_list_destroy(c->offsets);
    rd_kafka_consumer_group_metadata_destroy(c->md);
    pthread_cond_destroy(&c->cv);
    pthread_mutex_destroy(&c->mu);
    free(c);
}

static void *run_call(void *arg)
{
    guard_call_t *c = arg;
    rd_kafka_error_t *e;
    bool abandoned;

    if (c->hang)
        forge_clock_sleep_ms(HANG_MS);
    e = rd_kafka_send_offsets_to_transaction(c->producer, c->offsets, c->md,
                                             c->timeout_ms);
    pthread_mutex_lock(&c->mu);
    c->done = true;
    abandoned = c->abandoned;
    if (abandoned && e)
        rd_kafka_error_destroy(e);
    else
        c->error = e;
    pthread_cond_signal(&c->cv);
    pthread_mutex_unlock(&c->mu);
    if (abandoned) {
        forge_log_warn("an abandoned producer's send_offsets_to_transaction "
                       "returned at last: that producer is destroyed");
        rd_kafka_destroy(c->producer);
        atomic_fetch_sub(&abandoned_now, 1);
    }
    release(c);
    return NULL;
}

static guard_call_t *call_new(rd_kafka_t *producer,
                              const rd_kafka_topic_partition_list_t *offsets,
                              rd_kafka_consumer_group_metadata_t *md,
                              int timeout_ms, bool hang)
{
    guard_call_t *c = forge_xcalloc(1, sizeof(*c));

    pthread_mutex_init(&c->mu, NULL);
    forge_clock_cond_init(&c->cv);
    c->refs = 2;
    c->producer = producer;
    c->offsets = rd_kafka_topic_partition_list_copy(offsets);
    c->md = md;
    c->timeout_ms = timeout_ms;
    c->hang = hang;
    return c;
}

rd_kafka_error_t *forge_kafka_guard_send_offsets(
    rd_kafka_t *producer, const rd_kafka_topic_partition_list_t *offsets,
    rd_kafka_consumer_group_metadata_t *md, int timeout_ms, int grace_ms,
    bool hang, bool *abandoned)
{
    guard_call_t *c = call_new(producer, offsets, md, timeout_ms, hang);
    struct timespec until = forge_clock_deadline(timeout_ms + grace_ms);
    rd_kafka_error_t *e = NULL;
    pthread_attr_t attr;
    pthread_t thread;
    int rc;

    *abandoned = false;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    rc = pthread_create(&thread, &attr, run_call, c);
    pthread_attr_destroy(&attr);
    if (rc) { /* no thread: the call is not made, the transaction aborts */
        c->refs = 1;
        release(c);
        return rd_kafka_error_new(RD_KAFKA_RESP_ERR__TIMED_OUT,
                                  "no thread for send_offsets_to_transaction "
                                  "(pthread_create: error %d)",
                                  rc);
    }
    pthread_mutex_lock(&c->mu);
    while (!c->done &&
           pthread_cond_timedwait(&c->cv, &c->mu, &until) != ETIMEDOUT)
        ;
    if (c->done) {
        e = c->error;
        c->error = NULL;
    } else {
        c->abandoned = true;
        *abandoned = true;
        atomic_fetch_add(&abandoned_now, 1);
        e = rd_kafka_error_new(RD_KAFKA_RESP_ERR__TIMED_OUT,
                               "send_offsets_to_transaction did not return "
                               "within %d ms of its %d ms timeout",
                               grace_ms, timeout_ms);
    }
    pthread_mutex_unlock(&c->mu);
    release(c);
    return e;
}
