/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kafka/jobcomp_reader.c - Slurm's jobcomp/kafka topic read for push
 * completion (jobcomp_reader.h). A consumer of its own, with the worker's
 * client configuration and security (kafka_conf.h), and NO group: no
 * group.id, no subscribe, no offsets committed. It uses librdkafka's
 * simple consumer (consume_start_queue on each partition, one queue for
 * all), which needs none. Every partition the topic has at start is read
 * from its END (what ended before the worker started is the poll's to
 * find); the topic's metadata is read again every METADATA_EVERY_MS, and
 * a partition that appears later is read from its beginning (it holds
 * nothing older than the worker). Records carry no key; each one's
 * payload is copied into the queue the loop empties.
 *
 * Threads and ownership: start (the composition's thread) makes the
 * consumer and starts the reader's thread, which alone touches the
 * librdkafka handle, topic and fetch queue from then on. The loop's thread
 * takes records with forge_jobcomp_reader_next; the record queue between
 * the two is guarded by `lock` (held for a pointer swap, never across a
 * librdkafka call). A record joining an empty queue calls notify (the
 * loop's Kafka poll woken: forge_kafka_wake), so a record reaches the loop
 * within a fetch's wait (fetch.wait.max.ms, 10 ms here) plus the loop's
 * pass in progress, well under 100 ms; a loop that polls this handle
 * itself would add up to its own 100 ms poll wait instead. stop sets
 * `stopping` (an atomic the thread reads between two fetch waits of
 * POLL_MS), joins the thread, then destroys the handle on the stopping
 * thread. Errors of this consumer never stop the worker: a topic missing
 * or a READ refused is logged (the refusal named, at most every
 * LOG_EVERY_MS) and asked again; the poll goes on meanwhile.
 */
#include "kafka/jobcomp_reader.h"
#include "clock/clock.h"
#include "log/log.h"
#include "base/util.h"
#include "kafka/kafka_access.h"
#include "kafka/kafka_conf.h"

#include <librdkafka/rdkafka.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define POLL_MS             100   /* one fetch wait: a stop is seen within */
#define BATCH               64    /* records taken from librdkafka at once */
#define METADATA_EVERY_MS   30000 /* new partitions noticed within */
#define METADATA_RETRY_MS   5000  /* while the topic is missing or refused */
#define METADATA_TIMEOUT_MS 2000
#define QUEUE_MAX           20000 /* records waiting for the loop, at most */
#define LOG_EVERY_MS        10000

typedef struct item {
    char *bytes;
    size_t len;
    struct item *next;
} item_t;

struct forge_jobcomp_reader {
    const forge_config_t *cfg; /* borrowed: outlives the reader */
    forge_jobcomp_notify_fn notify;
    void *ctx;
    /* the reader's thread's own (start's before it runs, stop's after) */
    rd_kafka_t *rk;
    rd_kafka_topic_t *rkt;
    rd_kafka_queue_t *fetched;
    bool *started; /* by partition: consume_start_queue called */
    int32_t started_cap;
    bool first_read; /* the partitions at start assigned (from their end) */
    long long next_metadata_ms;
    long long logged_ms, dropped_logged_ms;
    pthread_t thread;
    atomic_bool stopping;
    /* the loop's side: guarded by lock */
    pthread_mutex_t lock;
    item_t *head, **tail;
    size_t queued;
    atomic_bool
        any; /* queued > 0: the loop's every pass looks without the lock */
    size_t dropped;
};

/* ---- the queue between the reader and the loop --------------------------- */

/* A copy of bytes[0..len) queued; false when the queue is full. True
 * *was_empty when it joined an empty queue. */
static bool enqueue(forge_jobcomp_reader_t *r, const void *bytes, size_t len,
                    bool *was_empty)
{
    item_t *it;

    pthread_mutex_lock(&r->lock);
    if (r->queued >= QUEUE_MAX) {
        r->dropped++;
        pthread_mutex_unlock(&r->lock);
        return false;
    }
    pthread_mutex_unlock(&r->lock);
    it = forge_xcalloc(1, sizeof(*it));
    it->bytes = forge_xmalloc(len ? len : 1);
    memcpy(it->bytes, bytes, len);
    it->len = len;
    pthread_mutex_lock(&r->lock);
    *was_empty = r->queued == 0;
    *r->tail = it;
    r->tail = &it->next;
    r->queued++;
    atomic_store_explicit(&r->any, true, memory_order_release);
    pthread_mutex_unlock(&r->lock);
    return true;
}

bool forge_jobcomp_reader_next(forge_jobcomp_reader_t *r, char **bytes,
                               size_t *len)
{
    item_t *it;

    if (!atomic_load_explicit(&r->any, memory_order_acquire))
        return false; /* the loop's every pass: no lock taken */
    pthread_mutex_lock(&r->lock);
    if ((it = r->head)) {
        r->head = it->next;
        if (!r->head)
            r->tail = &r->head;
        r->queued--;
    }
    atomic_store_explicit(&r->any, r->queued > 0, memory_order_relaxed);
    pthread_mutex_unlock(&r->lock);
    if (!it)
        return false;
    *bytes = it->bytes;
    *len = it->len;
    free(it);
    return true;
}

/* ---- what the broker says -------------------------------------------------
 */

/* Whether a line said every LOG_EVERY_MS at most may be said now. */
static bool log_due(long long *last)
{
    long long now = forge_clock_ms();

    if (*last && now - *last < LOG_EVERY_MS)
        return false;
    *last = now;
    return true;
}

/* A refusal to read the topic named as kafka_access.c names the others';
 * any other error said as it is. */
static void said(forge_jobcomp_reader_t *r, rd_kafka_resp_err_t code,
                 const char *what)
{
    char principal[160];

    if (!log_due(&r->logged_ms))
        return;
    if (forge_kafka_is_denial(code)) {
        forge_kafka_principal(r->cfg, principal, sizeof(principal));
        forge_log_error("Kafka denies %s: READ on topic %s (reads Slurm's job "
                        "completion records: push completion); the poll "
                        "alone follows the jobs until the broker allows it "
                        "(docs/KAFKA_ACLS.md lists what a worker needs)",
                        principal, r->cfg->topic_jobcomp);
        return;
    }
    forge_log_warn("jobcomp topic %s: %s (%s); push completion waits, the "
                   "poll goes on",
                   r->cfg->topic_jobcomp, what, rd_kafka_err2str(code));
}

static void on_error(rd_kafka_t *rk, int err, const char *reason, void *opaque)
{
    forge_jobcomp_reader_t *r = opaque;

    (void)rk;
    said(r, (rd_kafka_resp_err_t)err, reason);
}

static void on_log(const rd_kafka_t *rk, int level, const char *fac,
                   const char *line)
{
    (void)rk;
    (void)level;
    forge_log_debug("librdkafka (jobcomp) %s: %s", fac, line);
}

/* ---- partitions ------------------------------------------------------------
 */

/* Partition p read from offset (the queue `fetched`). */
static void start_partition(forge_jobcomp_reader_t *r, int32_t p,
                            int64_t offset)
{
    if (p >= r->started_cap) {
        int32_t cap = r->started_cap ? r->started_cap : 8;
        while (cap <= p)
            cap *= 2;
        r->started = forge_xrealloc(r->started, (size_t)cap * sizeof(bool));
        memset(r->started + r->started_cap, 0,
               (size_t)(cap - r->started_cap) * sizeof(bool));
        r->started_cap = cap;
    }
    if (r->started[p])
        return;
    if (rd_kafka_consume_start_queue(r->rkt, p, offset, r->fetched) == -1) {
        said(r, rd_kafka_last_error(), "a partition could not be read");
        return;
    }
    r->started[p] = true;
}

/* The topic's partitions now: those not read yet started (from their end
 * the first time, from their beginning after). */
static void read_metadata(forge_jobcomp_reader_t *r)
{
    const struct rd_kafka_metadata *md = NULL;
    rd_kafka_resp_err_t e;
    int count = 0;

    r->next_metadata_ms = forge_clock_ms() + METADATA_RETRY_MS;
    e = rd_kafka_metadata(r->rk, 0, r->rkt, &md, METADATA_TIMEOUT_MS);
    if (e) {
        said(r, e, "no metadata");
        return;
    }
    if (md->topic_cnt == 1 && md->topics[0].err)
        said(r, md->topics[0].err, "the topic cannot be read");
    else if (md->topic_cnt == 1)
        count = md->topics[0].partition_cnt;
    rd_kafka_metadata_destroy(md);
    if (count <= 0)
        return;
    for (int32_t p = 0; p < count; p++)
        start_partition(r, p,
                        r->first_read ? RD_KAFKA_OFFSET_BEGINNING
                                      : RD_KAFKA_OFFSET_END);
    if (!r->first_read)
        forge_log_info("push completion: reading the %d partitions of %s from "
                       "their end",
                       count, r->cfg->topic_jobcomp);
    r->first_read = true;
    r->next_metadata_ms = forge_clock_ms() + METADATA_EVERY_MS;
}

/* ---- the reader's thread ----------------------------------------------------
 */

static void on_message(forge_jobcomp_reader_t *r, const rd_kafka_message_t *m)
{
    bool was_empty = false;

    if (m->err) {
        if (m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF)
            said(r, m->err, rd_kafka_message_errstr(m));
        return;
    }
    if (!m->payload)
        return; /* a tombstone: no record */
    if (!enqueue(r, m->payload, m->len, &was_empty)) {
        if (log_due(&r->dropped_logged_ms))
            forge_log_warn("push completion: %d records wait for the loop "
                           "already, a jobcomp record dropped (the poll "
                           "follows its job)",
                           QUEUE_MAX);
        return;
    }
    if (was_empty && r->notify)
        r->notify(r->ctx);
}

static void *run(void *arg)
{
    forge_jobcomp_reader_t *r = arg;
    rd_kafka_message_t *batch[BATCH];

    while (!atomic_load(&r->stopping)) {
        ssize_t n;
        if (forge_clock_ms() >= r->next_metadata_ms)
            read_metadata(r);
        n = rd_kafka_consume_batch_queue(r->fetched, POLL_MS, batch, BATCH);
        for (ssize_t i = 0; i < n; i++) {
            on_message(r, batch[i]);
            rd_kafka_message_destroy(batch[i]);
        }
        rd_kafka_poll(r->rk, 0); /* error_cb, log_cb */
    }
    return NULL;
}

/* ---- start and stop ---------------------------------------------------------
 */

/* The consumer's configuration: the worker's (security included), no
 * group, and fetches that do not wait long. NULL with err set. */
static rd_kafka_conf_t *reader_conf(forge_jobcomp_reader_t *r,
                                    forge_error_t *err)
{
    rd_kafka_conf_t *conf = forge_kafka_conf_base(r->cfg, err);

    if (!conf)
        return NULL;
    if (forge_kafka_conf_set(conf, "enable.partition.eof", "false", err) ||
        forge_kafka_conf_set(conf, "fetch.wait.max.ms", "10", err) ||
        forge_kafka_conf_set(conf, "auto.offset.reset", "latest", err)) {
        rd_kafka_conf_destroy(conf);
        return NULL;
    }
    rd_kafka_conf_set_opaque(conf, r);
    rd_kafka_conf_set_error_cb(conf, on_error);
    rd_kafka_conf_set_log_cb(conf, on_log);
    return conf;
}

static void reader_free(forge_jobcomp_reader_t *r)
{
    char *bytes;
    size_t len;

    while (forge_jobcomp_reader_next(r, &bytes, &len))
        free(bytes);
    for (int32_t p = 0; r->rkt && p < r->started_cap; p++)
        if (r->started[p])
            rd_kafka_consume_stop(r->rkt, p);
    if (r->fetched)
        rd_kafka_queue_destroy(r->fetched);
    if (r->rkt)
        rd_kafka_topic_destroy(r->rkt);
    if (r->rk)
        rd_kafka_destroy(r->rk);
    pthread_mutex_destroy(&r->lock);
    free(r->started);
    free(r);
}

forge_rc_t forge_jobcomp_reader_start(const forge_config_t *cfg,
                                      forge_jobcomp_notify_fn notify, void *ctx,
                                      forge_jobcomp_reader_t **out,
                                      forge_error_t *err)
{
    forge_jobcomp_reader_t *r = forge_xcalloc(1, sizeof(*r));
    rd_kafka_conf_t *conf;
    char errstr[256];

    *out = NULL;
    r->cfg = cfg;
    r->notify = notify;
    r->ctx = ctx;
    r->tail = &r->head;
    atomic_init(&r->stopping, false);
    atomic_init(&r->any, false);
    pthread_mutex_init(&r->lock, NULL);
    if (!(conf = reader_conf(r, err)))
        goto fail;
    if (!(r->rk = forge_kafka_handle_new(RD_KAFKA_CONSUMER, conf, errstr,
                                         sizeof(errstr)))) {
        forge_error_set(err, FORGE_ECONFIG, "FORGE_KAFKA_JOBCOMP_TOPIC",
                        "the jobcomp reader's Kafka client: %s", errstr);
        goto fail;
    }
    r->rkt = rd_kafka_topic_new(r->rk, cfg->topic_jobcomp, NULL);
    r->fetched = rd_kafka_queue_new(r->rk);
    if (pthread_create(&r->thread, NULL, run, r)) {
        forge_error_set(err, FORGE_EIO, "FORGE_KAFKA_JOBCOMP_TOPIC",
                        "the jobcomp reader's thread could not start");
        goto fail;
    }
    *out = r; /* the caller's: forge_jobcomp_reader_stop */
    return FORGE_OK;
fail:
    reader_free(r);
    return err->code ? err->code : FORGE_ECONFIG;
}

void forge_jobcomp_reader_stop(forge_jobcomp_reader_t *r)
{
    if (!r)
        return;
    atomic_store(&r->stopping, true);
    pthread_join(r->thread, NULL);
    reader_free(r);
}
