/*
 * kafka.c - consumer, transactional producer, restore reader (kafka.h).
 *
 * Error tiers, as in librdkafka's examples/transactions.c: retriable →
 * call again; txn_requires_abort → abort, rewind the consumer to the
 * committed offsets, report ABORTED; fatal (fenced) → FATAL. Consumer
 * errors are logged and consumption goes on.
 *
 * The commit budget: the loop that commits is the one that must poll the
 * consumer within max.poll.interval.ms (M, read back from the consumer's
 * configuration, librdkafka's default 300 s), or the group throws the
 * worker out and its partitions move. So one forge_kafka_commit holds the
 * loop for at most M/2, whatever the broker does:
 *   - sending the offsets and committing, retriable errors retried (after
 *     100 ms, doubling up to 1 s), each call given what is left: until M/4
 *     has passed (`attempts_ms`);
 *   - then, still failing, the transaction is aborted (librdkafka: a
 *     commit_transaction that timed out may be retried or aborted; a timed
 *     out call leaves it abortable), the abort itself retried while
 *     retriable for at most min(M/8, 30 s) (`abort_ms`);
 *   - then the consumer is rewound to the committed offsets: at most
 *     min(M/16, 10 s) to read them and as long to seek (`rewind_ms`).
 * The caller gets ABORTED and rewinds its memory (loop.c restore()), as
 * after any abortable error: what did not commit is done again. An abort
 * librdkafka refuses or cannot finish in its budget (the coordinator
 * unreachable throughout, or a commit still flushing) is FATAL: the worker
 * exits 1 and its supervisor restarts it (a new producer with the same
 * transactional.id aborts what was left).
 *
 * A producer that cannot go on is replaced, not the worker: sending the
 * offsets may never return (kafka_guard.h: a librdkafka bug after broker
 * restarts), so it is waited for at most its share of the attempts plus
 * min(M/16, 5 s) (`guard_ms`, inside `attempts_ms`), then the producer is
 * given up on; a producer in a fatal state that is not a fence (seen:
 * INVALID_TXN_STATE after a broker restart) is destroyed. A new producer
 * with the same transactional.id takes its place (its init, at most
 * `abort_ms`, fences the old one; the coordinator aborts what that one
 * left open), the consumer rewinds, the caller gets ABORTED. Fenced
 * (another process holds this worker's transactional.id) stays FATAL, and
 * so does a fifth producer given up on while four still hang.
 */
#include "kafka/kafka.h"
#include "core/buf.h"
#include "kafka/kafka_guard.h"
#include "core/log.h"
#include "core/testpoint.h"
#include "core/util.h"

#include <librdkafka/rdkafka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define TXN_TIMEOUT_MS     30000 /* one transactional call at most */
#define TXN_BACKOFF_MS     100   /* before retrying a retriable error ... */
#define TXN_BACKOFF_MAX_MS 1000  /* ... doubling up to this */
#define REWIND_MAX_MS      10000
#define RESTORE_MAX_MS     60000  /* one partition's restore */
#define INIT_TIMEOUT_MS    60000  /* the first init_transactions */
#define MAX_POLL_DEFAULT   300000 /* librdkafka's max.poll.interval.ms */
#define GUARD_MAX_MS       5000   /* grace for a call that may not return */
#define ABANDONED_MAX      4      /* producers given up on, still hanging */

/* How long one commit may hold the loop (the top comment). */
typedef struct txn_budget {
    int max_poll_ms; /* the consumer's max.poll.interval.ms */
    int attempts_ms; /* offsets + commit, retries included */
    int abort_ms;    /* the abort, retries included */
    int rewind_ms;   /* each of: committed offsets, seek */
    int guard_ms;    /* past a guarded call's timeout: given up */
} txn_budget_t;

struct forge_kafka {
    const forge_config_t *cfg; /* borrowed, outlives the object */
    forge_kafka_handlers_t handlers;
    rd_kafka_t *consumer;
    rd_kafka_t *producer;
    rd_kafka_t *reader;       /* restores; created on first use */
    rd_kafka_message_t *last; /* the message handed out by poll */
    rd_kafka_topic_partition_list_t *offsets; /* to commit in the txn */
    bool in_txn;
    bool produce_failed; /* this transaction lost a message: abort it */
    txn_budget_t budget;
};

static long long monotonic_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};

    nanosleep(&ts, NULL);
}

static int at_most(int a, int b)
{
    return a < b ? a : b;
}

static forge_rc_t set(rd_kafka_conf_t *conf, const char *name,
                      const char *value, forge_error_t *err)
{
    char errstr[256];

    if (rd_kafka_conf_set(conf, name, value, errstr, sizeof(errstr)) !=
        RD_KAFKA_CONF_OK)
        return forge_error_set(err, FORGE_ECONFIG, name, "librdkafka %s=%s: %s",
                               name, value, errstr);
    return FORGE_OK;
}

/* Our defaults, then the operator's FORGE_KAFKA_PROP_*, then what we own
 * (which wins). message.max.bytes: a state record carries its request (up
 * to 1 MiB, JSON-escaped inside the record), more than librdkafka's 1 MB
 * default; the state topic's max.message.bytes must allow it too. */
static rd_kafka_conf_t *base_conf(const forge_config_t *cfg, forge_error_t *err)
{
    rd_kafka_conf_t *conf = rd_kafka_conf_new();

    if (set(conf, "message.max.bytes", "4194304", err))
        goto fail;
    for (size_t i = 0; i < cfg->kafka_prop_count; i++)
        if (set(conf, cfg->kafka_props[i].name, cfg->kafka_props[i].value, err))
            goto fail;
    if (set(conf, "bootstrap.servers", cfg->kafka_brokers, err) ||
        set(conf, "client.id", cfg->worker_id, err))
        goto fail;
    return conf;
fail:
    rd_kafka_conf_destroy(conf);
    return NULL;
}

static int32_t *partition_array(const rd_kafka_topic_partition_list_t *l,
                                const char *topic, size_t *n)
{
    int32_t *p = forge_xcalloc((size_t)l->cnt + 1, sizeof(int32_t));

    *n = 0;
    for (int i = 0; i < l->cnt; i++)
        if (!strcmp(l->elems[i].topic, topic))
            p[(*n)++] = l->elems[i].partition;
    return p;
}

/* Aborts the open transaction, retrying a retriable failure (a timed out
 * call resumes) until budget_ms has passed. NULL once aborted. */
static rd_kafka_error_t *abort_within(forge_kafka_t *k, int budget_ms)
{
    long long until = monotonic_ms() + budget_ms;
    rd_kafka_error_t *e;

    for (;;) {
        long long left = until - monotonic_ms();
        e = rd_kafka_abort_transaction(k->producer, left > 0 ? (int)left : 1);
        if (!e || !rd_kafka_error_is_retriable(e) || monotonic_ms() >= until)
            return e;
        rd_kafka_error_destroy(e);
    }
}

static void on_rebalance(rd_kafka_t *rk, rd_kafka_resp_err_t why,
                         rd_kafka_topic_partition_list_t *parts, void *opaque)
{
    forge_kafka_t *k = opaque;
    size_t n;
    int32_t *p = partition_array(parts, k->cfg->topic_requests, &n);
    rd_kafka_error_t *e;

    if (why == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS) {
        if ((e = rd_kafka_incremental_assign(rk, parts)))
            rd_kafka_error_destroy(e);
        rd_kafka_pause_partitions(rk, parts);
        forge_log_info("assigned %zu partition(s)", n);
        k->handlers.assigned(k->handlers.ctx, p, n);
    } else {
        bool lost = rd_kafka_assignment_lost(rk);
        if (!lost && k->handlers.flush(k->handlers.ctx, p, n) != 0)
            lost = true; /* could not commit: treat as lost */
        if (lost && k->in_txn) {
            if ((e = abort_within(k, k->budget.abort_ms)))
                rd_kafka_error_destroy(e);
            k->in_txn = false;
            k->produce_failed = false;
            rd_kafka_topic_partition_list_destroy(k->offsets);
            k->offsets = rd_kafka_topic_partition_list_new(8);
        }
        forge_log_info("revoked %zu partition(s)%s", n, lost ? " (lost)" : "");
        k->handlers.revoked(k->handlers.ctx, p, n, lost);
        if ((e = rd_kafka_incremental_unassign(rk, parts)))
            rd_kafka_error_destroy(e);
    }
    free(p);
}

/* The commit budget (the top comment), from the consumer's configuration
 * as librdkafka took it (the operator may set FORGE_KAFKA_PROP_...). */
static txn_budget_t budget_of(rd_kafka_t *consumer)
{
    char value[32];
    size_t size = sizeof(value);
    long m = MAX_POLL_DEFAULT;
    txn_budget_t b;

    if (rd_kafka_conf_get(rd_kafka_conf(consumer), "max.poll.interval.ms",
                          value, &size) == RD_KAFKA_CONF_OK)
        m = strtol(value, NULL, 10);
    if (m < 16)
        m = 16;
    b.max_poll_ms = (int)m;
    b.attempts_ms = (int)(m / 4);
    b.abort_ms = at_most((int)(m / 8), TXN_TIMEOUT_MS);
    b.rewind_ms = at_most((int)(m / 16), REWIND_MAX_MS);
    b.guard_ms = at_most((int)(m / 16), GUARD_MAX_MS);
    return b;
}

static forge_rc_t new_consumer(forge_kafka_t *k, forge_error_t *err)
{
    rd_kafka_conf_t *conf = base_conf(k->cfg, err);
    rd_kafka_topic_partition_list_t *topics;
    char errstr[256];

    if (!conf || set(conf, "group.id", k->cfg->kafka_group_id, err) ||
        set(conf, "enable.auto.commit", "false", err) ||
        set(conf, "enable.auto.offset.store", "false", err) ||
        set(conf, "isolation.level", "read_committed", err) ||
        set(conf, "auto.offset.reset", "earliest", err) ||
        set(conf, "partition.assignment.strategy", "cooperative-sticky", err)) {
        if (conf)
            rd_kafka_conf_destroy(conf);
        return FORGE_ECONFIG;
    }
    rd_kafka_conf_set_rebalance_cb(conf, on_rebalance);
    rd_kafka_conf_set_opaque(conf, k);
    if (!(k->consumer =
              rd_kafka_new(RD_KAFKA_CONSUMER, conf, errstr, sizeof(errstr))))
        return forge_error_set(err, FORGE_ECONFIG, "FORGE_KAFKA_BROKERS",
                               "consumer: %s", errstr);
    rd_kafka_poll_set_consumer(k->consumer);
    k->budget = budget_of(k->consumer);
    forge_log_debug("commit budget: %d ms of attempts, %d ms to abort, "
                    "2 x %d ms to rewind (max.poll.interval.ms %d)",
                    k->budget.attempts_ms, k->budget.abort_ms,
                    k->budget.rewind_ms, k->budget.max_poll_ms);
    topics = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(topics, k->cfg->topic_requests,
                                      RD_KAFKA_PARTITION_UA);
    rd_kafka_resp_err_t e = rd_kafka_subscribe(k->consumer, topics);
    rd_kafka_topic_partition_list_destroy(topics);
    if (e)
        return forge_error_set(err, FORGE_EIO, "FORGE_KAFKA_TOPIC_REQUESTS",
                               "subscribe: %s", rd_kafka_err2str(e));
    return FORGE_OK;
}

static forge_rc_t new_producer(forge_kafka_t *k, int init_ms,
                               forge_error_t *err)
{
    rd_kafka_conf_t *conf = base_conf(k->cfg, err);
    forge_buf_t txid = FORGE_BUF_INIT;
    rd_kafka_error_t *e;
    char errstr[256];
    forge_rc_t rc = FORGE_ECONFIG;

    /* Stable per worker instance: a restarted worker fences its zombie. */
    forge_buf_printf(&txid, "forge-worker-%s", k->cfg->worker_id);
    if (!conf || set(conf, "transactional.id", forge_buf_str(&txid), err) ||
        set(conf, "partitioner", "murmur2_random", err) ||
        set(conf, "acks", "all", err)) {
        if (conf)
            rd_kafka_conf_destroy(conf);
        goto out;
    }
    if (!(k->producer =
              rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof(errstr)))) {
        forge_error_set(err, FORGE_ECONFIG, "FORGE_KAFKA_BROKERS",
                        "producer: %s", errstr);
        goto out;
    }
    if ((e = rd_kafka_init_transactions(k->producer, init_ms))) {
        forge_error_set(err, FORGE_EIO, "FORGE_KAFKA_BROKERS",
                        "init_transactions: %s", rd_kafka_error_string(e));
        rd_kafka_error_destroy(e);
        goto out;
    }
    rc = FORGE_OK;
out:
    forge_buf_clear(&txid);
    return rc;
}

forge_rc_t forge_kafka_new(const forge_config_t *cfg,
                           const forge_kafka_handlers_t *handlers,
                           forge_kafka_t **out, forge_error_t *err)
{
    forge_kafka_t *k = forge_xcalloc(1, sizeof(*k));
    forge_rc_t rc;

    *out = NULL;
    k->cfg = cfg;
    k->handlers = *handlers;
    k->offsets = rd_kafka_topic_partition_list_new(8);
    if ((rc = new_producer(k, INIT_TIMEOUT_MS, err)) ||
        (rc = new_consumer(k, err))) {
        forge_kafka_destroy(k);
        return rc;
    }
    *out = k;
    return FORGE_OK;
}

void forge_kafka_destroy(forge_kafka_t *k)
{
    rd_kafka_error_t *e;

    if (!k)
        return;
    if (k->last)
        rd_kafka_message_destroy(k->last);
    if (k->consumer) {
        rd_kafka_consumer_close(k->consumer); /* runs the revoke handler */
        rd_kafka_destroy(k->consumer);
    }
    if (k->producer) {
        if (k->in_txn &&
            (e = rd_kafka_abort_transaction(k->producer, TXN_TIMEOUT_MS)))
            rd_kafka_error_destroy(e);
        rd_kafka_destroy(k->producer);
    }
    if (k->reader)
        rd_kafka_destroy(k->reader);
    rd_kafka_topic_partition_list_destroy(k->offsets);
    free(k);
}

bool forge_kafka_poll(forge_kafka_t *k, int timeout_ms,
                      forge_kafka_message_t *msg)
{
    rd_kafka_message_t *m;

    if (k->last) {
        rd_kafka_message_destroy(k->last);
        k->last = NULL;
    }
    rd_kafka_poll(k->producer, 0); /* delivery reports, errors */
    if (!(m = rd_kafka_consumer_poll(k->consumer, timeout_ms)))
        return false;
    if (m->err) {
        if (m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF)
            forge_log_warn("consumer: %s", rd_kafka_message_errstr(m));
        rd_kafka_message_destroy(m);
        return false;
    }
    k->last = m;
    msg->partition = m->partition;
    msg->offset = m->offset;
    msg->key = m->key;
    msg->key_len = m->key_len;
    msg->value = m->payload;
    msg->value_len = m->len;
    return true;
}

static void pause_or_resume(forge_kafka_t *k, int32_t partition, bool pause)
{
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(1);

    rd_kafka_topic_partition_list_add(l, k->cfg->topic_requests, partition);
    if (pause)
        rd_kafka_pause_partitions(k->consumer, l);
    else
        rd_kafka_resume_partitions(k->consumer, l);
    rd_kafka_topic_partition_list_destroy(l);
}

void forge_kafka_pause(forge_kafka_t *k, int32_t partition)
{
    pause_or_resume(k, partition, true);
}

void forge_kafka_resume(forge_kafka_t *k, int32_t partition)
{
    pause_or_resume(k, partition, false);
}

void forge_kafka_pause_all(forge_kafka_t *k)
{
    rd_kafka_topic_partition_list_t *l = NULL;

    if (rd_kafka_assignment(k->consumer, &l) == 0 && l) {
        rd_kafka_pause_partitions(k->consumer, l);
        rd_kafka_topic_partition_list_destroy(l);
    }
}

static rd_kafka_error_t *begin(forge_kafka_t *k)
{
    rd_kafka_error_t *e;

    if (k->in_txn)
        return NULL;
    if ((e = rd_kafka_begin_transaction(k->producer)))
        return e;
    k->in_txn = true;
    return NULL;
}

forge_rc_t forge_kafka_produce_record(forge_kafka_t *k,
                                      const forge_kafka_record_t *r,
                                      forge_error_t *err)
{
    rd_kafka_headers_t *h;
    rd_kafka_resp_err_t e;
    rd_kafka_error_t *txn_error;

    if ((txn_error = begin(k))) { /* the next commit deals with it */
        forge_error_set(err, FORGE_EIO, r->topic, "begin_transaction: %s",
                        rd_kafka_error_string(txn_error));
        rd_kafka_error_destroy(txn_error);
        k->produce_failed = true;
        return FORGE_EIO;
    }
    h = rd_kafka_headers_new(r->header_count);
    for (size_t i = 0; i < r->header_count; i++)
        rd_kafka_header_add(h, r->headers[i].name, -1, r->headers[i].value,
                            (ssize_t)r->headers[i].len);
    e = rd_kafka_producev(k->producer, RD_KAFKA_V_TOPIC(r->topic),
                          RD_KAFKA_V_PARTITION(r->partition < 0
                                                   ? RD_KAFKA_PARTITION_UA
                                                   : r->partition),
                          RD_KAFKA_V_KEY(r->key, r->key ? r->key_len : 0),
                          RD_KAFKA_V_VALUE((void *)r->value, r->value_len),
                          RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                          RD_KAFKA_V_HEADERS(h), RD_KAFKA_V_END);
    if (e) {
        rd_kafka_headers_destroy(h);
        k->produce_failed = true; /* never commit a transaction missing it */
        return forge_error_set(err, FORGE_EIO, r->topic, "produce to %s: %s",
                               r->topic, rd_kafka_err2str(e));
    }
    return FORGE_OK;
}

forge_rc_t forge_kafka_produce(forge_kafka_t *k, const char *topic,
                               int32_t partition, const char *key,
                               const void *value, size_t len,
                               forge_error_t *err)
{
    static const char type[] = "application/cloudevents+json";
    forge_kafka_header_t h = {"content-type", type, sizeof(type) - 1};
    forge_kafka_record_t r = {topic, partition, key, strlen(key),
                              value, len,       &h,  1};

    return forge_kafka_produce_record(k, &r, err);
}

void forge_kafka_fail_txn(forge_kafka_t *k)
{
    k->produce_failed = true;
}

void forge_kafka_mark_done(forge_kafka_t *k, int32_t partition, int64_t offset)
{
    rd_kafka_topic_partition_t *p = rd_kafka_topic_partition_list_find(
        k->offsets, k->cfg->topic_requests, partition);

    if (!p)
        p = rd_kafka_topic_partition_list_add(
            k->offsets, k->cfg->topic_requests, partition);
    if (offset + 1 > p->offset)
        p->offset = offset + 1;
}

bool forge_kafka_pending(const forge_kafka_t *k)
{
    return k->in_txn || k->produce_failed || k->offsets->cnt > 0;
}

/* After an abort: every assigned partition back to its committed offset. */
static void rewind_consumer(forge_kafka_t *k)
{
    rd_kafka_topic_partition_list_t *l = NULL;
    rd_kafka_error_t *e;

    if (rd_kafka_assignment(k->consumer, &l) || !l)
        return;
    if (rd_kafka_committed(k->consumer, l, k->budget.rewind_ms) == 0) {
        for (int i = 0; i < l->cnt; i++)
            if (l->elems[i].offset < 0)
                l->elems[i].offset = RD_KAFKA_OFFSET_BEGINNING;
        if ((e = rd_kafka_seek_partitions(k->consumer, l, k->budget.rewind_ms)))
            rd_kafka_error_destroy(e);
    }
    rd_kafka_topic_partition_list_destroy(l);
}

static forge_kafka_outcome_t
replace_producer(forge_kafka_t *k, rd_kafka_error_t *e, bool abandoned);

/* The producer is in a fatal state: e says so, or an error that is not
 * (a commit's failed deliveries) came from a producer that is. */
static bool broken(forge_kafka_t *k, const rd_kafka_error_t *e)
{
    return rd_kafka_error_is_fatal(e) ||
           rd_kafka_fatal_error(k->producer, NULL, 0) !=
               RD_KAFKA_RESP_ERR_NO_ERROR;
}

static forge_kafka_outcome_t abort_txn(forge_kafka_t *k, rd_kafka_error_t *e)
{
    forge_log_warn("transaction aborted: %s", rd_kafka_error_string(e));
    rd_kafka_error_destroy(e);
    if ((e = abort_within(k, k->budget.abort_ms))) {
        if (broken(k, e))
            return replace_producer(k, e, false);
        forge_log_error("abort_transaction: %s", rd_kafka_error_string(e));
        rd_kafka_error_destroy(e);
        return FORGE_KAFKA_FATAL;
    }
    k->in_txn = false;
    rewind_consumer(k);
    return FORGE_KAFKA_ABORTED;
}

/* A fatal error that only means another process holds this worker's
 * transactional.id, or may not use it: replacing would fight it. */
static bool fenced(rd_kafka_resp_err_t code)
{
    return code == RD_KAFKA_RESP_ERR__FENCED ||
           code == RD_KAFKA_RESP_ERR_PRODUCER_FENCED ||
           code == RD_KAFKA_RESP_ERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED ||
           code == RD_KAFKA_RESP_ERR_CLUSTER_AUTHORIZATION_FAILED;
}

/* The producer cannot go on (the top comment): given up on (abandoned, its
 * call still out and now kafka_guard.c's) or fatal. Takes e. */
static forge_kafka_outcome_t
replace_producer(forge_kafka_t *k, rd_kafka_error_t *e, bool abandoned)
{
    forge_error_t err = {0};
    char why[512] = "";
    rd_kafka_resp_err_t code =
        abandoned ? RD_KAFKA_RESP_ERR_NO_ERROR
                  : rd_kafka_fatal_error(k->producer, why, sizeof(why));

    forge_log_error("transaction: %s%s%s", rd_kafka_error_string(e),
                    *why ? ": " : "", why);
    rd_kafka_error_destroy(e);
    if (fenced(code)) {
        forge_log_error("producer fenced: another process holds this "
                        "worker's transactional.id (FORGE_WORKER_ID must be "
                        "unique), or may not use it");
        return FORGE_KAFKA_FATAL;
    }
    if (forge_kafka_guard_abandoned() > ABANDONED_MAX) {
        forge_log_error("%d producers given up on still hang in librdkafka: "
                        "exiting, for a supervisor to restart the worker",
                        forge_kafka_guard_abandoned());
        return FORGE_KAFKA_FATAL;
    }
    if (!abandoned)
        rd_kafka_destroy(k->producer);
    k->producer = NULL;
    k->in_txn = false;
    if (new_producer(k, k->budget.abort_ms, &err)) {
        forge_log_error("replacing the producer: %s", err.message);
        return FORGE_KAFKA_FATAL;
    }
    forge_log_warn("producer replaced (%s): the transaction it left open is "
                   "aborted, the consumer rewound",
                   abandoned ? "its call never returned" : "fatal error");
    rewind_consumer(k);
    return FORGE_KAFKA_ABORTED;
}

/* Test builds only (testpoint.h): the transaction's messages reach the
 * broker, then it is aborted, so a read_uncommitted reader sees what a
 * read_committed one must never see. */
static rd_kafka_error_t *forced_abort(forge_kafka_t *k)
{
    rd_kafka_flush(k->producer, TXN_TIMEOUT_MS);
    return rd_kafka_error_new(RD_KAFKA_RESP_ERR__STATE,
                              "aborted on purpose by a test point");
}

/* Test builds only (testpoint.h): an attempt that waits out its whole
 * timeout and fails with a retriable timeout, as a commit to a transaction
 * coordinator that does not answer would. */
static rd_kafka_error_t *stalled_attempt(int timeout_ms)
{
    sleep_ms(timeout_ms);
    return rd_kafka_error_new(RD_KAFKA_RESP_ERR__TIMED_OUT,
                              "commit stalled on purpose by a test point");
}

/* One attempt at the transaction's end: the offsets (guarded, the top
 * comment), then the commit, together within timeout_ms. *retriable: the
 * error may be retried; *abandoned: the producer was given up on. */
static rd_kafka_error_t *commit_once(forge_kafka_t *k, int timeout_ms,
                                     bool stalled, bool *retriable,
                                     bool *abandoned)
{
    int guard_ms = at_most(k->budget.guard_ms, timeout_ms / 2);
    rd_kafka_error_t *e = NULL;

    if (stalled) {
        *retriable = true;
        return stalled_attempt(timeout_ms);
    }
    if (k->offsets->cnt)
        e = forge_kafka_guard_send_offsets(
            k->producer, k->offsets,
            rd_kafka_consumer_group_metadata(k->consumer),
            timeout_ms - guard_ms, guard_ms, FORGE_TESTPOINT_OFFSETS_HANG(),
            abandoned);
    if (!e)
        e = rd_kafka_commit_transaction(k->producer, timeout_ms);
    *retriable = e && !*abandoned && rd_kafka_error_is_retriable(e);
    return e;
}

/* Sends the offsets and commits, retrying retriable errors within the
 * budget's attempts_ms (the top comment). NULL when committed; an error
 * otherwise (*abandoned: the producer was given up on), the caller aborts
 * or replaces the producer. */
static rd_kafka_error_t *send_and_commit(forge_kafka_t *k, bool stalled,
                                         bool *abandoned)
{
    long long start = monotonic_ms(), until = start + k->budget.attempts_ms;
    int backoff = TXN_BACKOFF_MS, attempts = 0;
    rd_kafka_error_t *e = NULL;
    bool retriable = false;

    for (;;) {
        long long left = until - monotonic_ms();
        if (e)
            rd_kafka_error_destroy(e);
        e = commit_once(k, left > 1 ? at_most((int)left, TXN_TIMEOUT_MS) : 2,
                        stalled, &retriable, abandoned);
        attempts++;
        left = until - monotonic_ms();
        if (!e || !retriable || left <= backoff)
            break;
        forge_log_warn("commit: %s (retriable, attempt %d); again in %d ms",
                       rd_kafka_error_string(e), attempts, backoff);
        sleep_ms(backoff);
        backoff = at_most(backoff * 2, TXN_BACKOFF_MAX_MS);
    }
    if (e && retriable)
        forge_log_warn("commit: still failing after %d attempt(s) in %lld ms "
                       "(budget %d ms, a quarter of max.poll.interval.ms %d "
                       "ms): the transaction is aborted and rewound",
                       attempts, monotonic_ms() - start, k->budget.attempts_ms,
                       k->budget.max_poll_ms);
    return e;
}

forge_kafka_outcome_t forge_kafka_commit(forge_kafka_t *k)
{
    rd_kafka_error_t *e;
    bool abandoned = false;
    forge_kafka_outcome_t out = FORGE_KAFKA_COMMITTED;

    if (!forge_kafka_pending(k))
        return FORGE_KAFKA_COMMITTED;
    if (FORGE_TESTPOINT_PRODUCER_FATAL())
        rd_kafka_test_fatal_error(k->producer,
                                  RD_KAFKA_RESP_ERR_INVALID_TXN_STATE,
                                  "raised by a test point");
    if ((e = begin(k)))
        ;                       /* dealt with below, as any failure to commit */
    else if (k->produce_failed) /* a state record or event did not make it */
        e = rd_kafka_error_new(RD_KAFKA_RESP_ERR__FAIL,
                               "a message of this transaction could not be "
                               "produced");
    else if (FORGE_TESTPOINT_ABORT_TXN())
        e = forced_abort(k);
    else
        e = send_and_commit(k, FORGE_TESTPOINT_COMMIT_STALLS(), &abandoned);
    k->produce_failed = false;
    if (e && (abandoned || broken(k, e)))
        out = replace_producer(k, e, abandoned);
    else if (e)
        out = abort_txn(k, e);
    else
        k->in_txn = false;
    rd_kafka_topic_partition_list_destroy(k->offsets);
    k->offsets = rd_kafka_topic_partition_list_new(8);
    return out;
}

/* ---- restore ------------------------------------------------------------ */

static rd_kafka_t *reader(forge_kafka_t *k)
{
    forge_error_t err = {0};
    rd_kafka_conf_t *conf;
    char errstr[256];

    if (k->reader)
        return k->reader;
    conf = base_conf(k->cfg, &err);
    if (!conf || set(conf, "group.id", "forge-worker-restore", &err) ||
        set(conf, "enable.auto.commit", "false", &err) ||
        set(conf, "isolation.level", "read_committed", &err) ||
        set(conf, "enable.partition.eof", "true", &err) ||
        set(conf, "fetch.wait.max.ms", "10", &err)) {
        if (conf)
            rd_kafka_conf_destroy(conf);
        forge_log_error("restore reader: %s", err.message);
        return NULL;
    }
    k->reader = rd_kafka_new(RD_KAFKA_CONSUMER, conf, errstr, sizeof(errstr));
    if (!k->reader)
        forge_log_error("restore reader: %s", errstr);
    return k->reader;
}

int forge_kafka_restore_timeout_ms(const forge_kafka_t *k)
{
    return at_most(k->budget.max_poll_ms / 8, RESTORE_MAX_MS);
}

int forge_kafka_restore_pass_ms(const forge_kafka_t *k)
{
    return k->budget.max_poll_ms / 4;
}

int forge_kafka_restore(forge_kafka_t *k, int32_t partition,
                        void (*fn)(void *ctx, const char *key, size_t key_len,
                                   const char *value, size_t len),
                        void *ctx, int timeout_ms)
{
    rd_kafka_t *r = reader(k);
    rd_kafka_topic_partition_list_t *l;
    long long until = monotonic_ms() + timeout_ms;
    int rc = -1;

    if (!r)
        return -1;
    l = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(l, k->cfg->topic_state, partition)
        ->offset = RD_KAFKA_OFFSET_BEGINNING;
    rd_kafka_assign(r, l); /* group-less: assign, never subscribe */
    while (monotonic_ms() < until) {
        rd_kafka_message_t *m = rd_kafka_consumer_poll(r, 100);
        if (!m)
            continue;
        if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
            rd_kafka_message_destroy(m);
            rc = 0;
            break;
        }
        if (!m->err)
            fn(ctx, m->key, m->key_len, m->payload, m->len);
        else
            forge_log_warn("restore: %s", rd_kafka_message_errstr(m));
        rd_kafka_message_destroy(m);
    }
    rd_kafka_assign(r, NULL);
    rd_kafka_topic_partition_list_destroy(l);
    return rc;
}
