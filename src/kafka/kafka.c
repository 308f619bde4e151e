/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kafka.c - the consumer (a consumer group, cooperative-sticky,
 * read_committed, manual offsets: kafka.h), its rebalances, and the
 * group-less reader of the state topic for restores (made at start; the
 * topic's leaders asked before a restore's assignment, every partition of
 * it fetched at once, read by RESTORE_THREADS + 1 threads). The
 * transaction is txn.c's, the producer's life producer.c's (kafka_int.h).
 * Consumer errors are logged and consumption goes on.
 */
#include "kafka/kafka_int.h"
#include "hooks/hooks.h"
#include "kafka/kafka_access.h"
#include "clock/clock.h"
#include "log/log.h"
#include "base/util.h"
#include "kafka/kafka_stats.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

static void on_rebalance(rd_kafka_t *rk, rd_kafka_resp_err_t why,
                         rd_kafka_topic_partition_list_t *parts, void *opaque)
{
    forge_kafka_t *k = opaque;
    size_t n;
    int32_t *p = partition_array(parts, k->cfg->topic_requests, &n);
    rd_kafka_error_t *e;

    forge_kafka_forget_committed(k); /* read again for the new assignment */
    if (why == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS) {
        if ((e = rd_kafka_incremental_assign(rk, parts)))
            rd_kafka_error_destroy(e);
        rd_kafka_pause_partitions(rk, parts);
        forge_log_info("assigned %zu partition(s)", n);
        forge_hooks()->rebalance("assigned");
        k->handlers.assigned(k->handlers.ctx, p, n);
    } else {
        bool lost = rd_kafka_assignment_lost(rk);
        if (!lost && k->handlers.flush(k->handlers.ctx, p, n) != 0)
            lost = true; /* could not commit: treat as lost */
        if (lost && k->in_txn) {
            if ((e = forge_kafka_abort_within(k, k->budget.abort_ms)))
                rd_kafka_error_destroy(e);
            k->in_txn = false;
            k->produce_failed = false;
            forge_hooks()->txn(FORGE_HOOK_TXN_ABORTED);
            rd_kafka_topic_partition_list_destroy(k->offsets);
            k->offsets = rd_kafka_topic_partition_list_new(8);
        }
        forge_log_info("revoked %zu partition(s)%s", n, lost ? " (lost)" : "");
        forge_hooks()->rebalance(lost ? "lost" : "revoked");
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

/* The group protocol (config.h: FORGE_KAFKA_GROUP_PROTOCOL). classic:
 * the members assign among themselves, cooperative-sticky (incremental:
 * only moving partitions are revoked). consumer (KIP-848): the group
 * coordinator assigns, no client-side assignor; librdkafka hands the
 * changes to on_rebalance incrementally, as cooperative-sticky does, so
 * the same code takes both. */
static forge_rc_t set_group_protocol(const forge_config_t *cfg,
                                     rd_kafka_conf_t *conf, forge_error_t *err)
{
    if (cfg->kafka_group_protocol == FORGE_KAFKA_GROUP_CONSUMER)
        return forge_kafka_conf_set(conf, "group.protocol", "consumer", err);
    return forge_kafka_conf_set(conf, "partition.assignment.strategy",
                                "cooperative-sticky", err);
}

static forge_rc_t new_consumer(forge_kafka_t *k, forge_error_t *err)
{
    rd_kafka_conf_t *conf = forge_kafka_conf_base(k->cfg, err);
    rd_kafka_topic_partition_list_t *topics;
    char errstr[256];

    if (!conf ||
        forge_kafka_conf_set(conf, "group.id", k->cfg->kafka_group_id, err) ||
        forge_kafka_conf_set(conf, "enable.auto.commit", "false", err) ||
        forge_kafka_conf_set(conf, "enable.auto.offset.store", "false", err) ||
        forge_kafka_conf_set(conf, "isolation.level", "read_committed", err) ||
        forge_kafka_conf_set(conf, "auto.offset.reset", "earliest", err) ||
        set_group_protocol(k->cfg, conf, err)) {
        if (conf)
            rd_kafka_conf_destroy(conf);
        return FORGE_ECONFIG;
    }
    rd_kafka_conf_set_rebalance_cb(conf, on_rebalance);
    rd_kafka_conf_set_error_cb(conf, forge_kafka_on_client_error);
    forge_kafka_stats_conf(conf, k->cfg->topic_requests); /* consumer lag */
    rd_kafka_conf_set_opaque(conf, k);
    if (!(k->consumer = forge_kafka_handle_new(RD_KAFKA_CONSUMER, conf, errstr,
                                               sizeof(errstr))))
        return forge_error_set(err, FORGE_ECONFIG, "FORGE_KAFKA_BROKERS",
                               "consumer: %s", errstr);
    rd_kafka_poll_set_consumer(k->consumer);
    k->consumer_q = rd_kafka_queue_get_consumer(k->consumer);
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

static rd_kafka_t *reader(forge_kafka_t *k);

/* What the broker lets the worker do, asked through the producer before
 * the consumer joins the group (kafka_access.c): a missing ACL stops the
 * start (78, naming each) before the loop's handlers could be called; a
 * broker that does not say lets it go on, as before. */
static forge_rc_t access_at_start(forge_kafka_t *k, forge_error_t *err)
{
    char missing[768], principal[160];

    if (forge_kafka_access_check(k->producer, k->cfg, INIT_ATTEMPT_MS, missing,
                                 sizeof(missing)) <= 0)
        return FORGE_OK;
    forge_kafka_principal(k->cfg, principal, sizeof(principal));
    return forge_error_set(err, FORGE_ECONFIG, "FORGE_KAFKA_SASL_USERNAME",
                           "Kafka's ACLs deny %s: %s (docs/KAFKA_ACLS.md "
                           "lists what a worker needs)",
                           principal, missing);
}

forge_rc_t forge_kafka_new(const forge_config_t *cfg,
                           const forge_kafka_handlers_t *handlers,
                           forge_kafka_role_t role, volatile sig_atomic_t *stop,
                           forge_kafka_t **out, forge_error_t *err)
{
    forge_kafka_t *k = forge_xcalloc(1, sizeof(*k));
    forge_rc_t rc;

    *out = NULL;
    k->cfg = cfg;
    k->role = role;
    k->handlers = *handlers;
    k->offsets = rd_kafka_topic_partition_list_new(8);
    if ((rc = forge_kafka_producer_new(k, INIT_ATTEMPT_MS, stop, err)) ||
        (role == FORGE_KAFKA_WORKER && (rc = access_at_start(k, err))) ||
        (rc = new_consumer(k, err))) {
        forge_kafka_destroy(k);
        return rc;
    }
    reader(k); /* connected, the state topic's leaders asked, before the
                * first restore (one that fails here is made again then) */
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
        if (k->consumer_q)
            rd_kafka_queue_destroy(k->consumer_q);
        rd_kafka_destroy(k->consumer);
    }
    if (k->producer) {
        if (k->in_txn &&
            (e = rd_kafka_abort_transaction(k->producer, TXN_TIMEOUT_MS)))
            rd_kafka_error_destroy(e);
        rd_kafka_destroy(k->producer);
    }
    if (k->reader_topic)
        rd_kafka_topic_destroy(k->reader_topic);
    if (k->reader)
        rd_kafka_destroy(k->reader);
    rd_kafka_topic_partition_list_destroy(k->offsets);
    forge_kafka_forget_committed(k);
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
    /* the error_cb's refusal, if any (an atomic read when none) */
    forge_kafka_denial_seen(k, RD_KAFKA_RESP_ERR_NO_ERROR);
    forge_kafka_access_tick(k);
    if (!(m = rd_kafka_consumer_poll(k->consumer, timeout_ms)))
        return false;
    if (m->err) {
        if (m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF)
            forge_log_warn("consumer: %s", rd_kafka_message_errstr(m));
        forge_kafka_note_refusal(m->err, rd_kafka_message_errstr(m));
        forge_kafka_denial_seen(k, m->err);
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

void forge_kafka_wake(forge_kafka_t *k)
{
    if (k->consumer_q)
        rd_kafka_queue_yield(k->consumer_q);
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

/* ---- restore ------------------------------------------------------------ */

/* The reader: a group-less consumer of the state topic, made once (at
 * start, so a restore does not wait for its connection), with a handle on
 * the topic, so librdkafka learns and keeps its partitions' leaders. */
static rd_kafka_t *reader(forge_kafka_t *k)
{
    forge_error_t err = {0};
    rd_kafka_conf_t *conf;
    char errstr[256];

    if (k->reader)
        return k->reader;
    conf = forge_kafka_conf_base(k->cfg, &err);
    if (!conf ||
        forge_kafka_conf_set(conf, "group.id", RESTORE_GROUP_ID, &err) ||
        forge_kafka_conf_set(conf, "enable.auto.commit", "false", &err) ||
        forge_kafka_conf_set(conf, "isolation.level", "read_committed", &err) ||
        forge_kafka_conf_set(conf, "enable.partition.eof", "true", &err) ||
        forge_kafka_conf_set(conf, "fetch.wait.max.ms", "10", &err)) {
        if (conf)
            rd_kafka_conf_destroy(conf);
        forge_log_error("restore reader: %s", err.message);
        return NULL;
    }
    rd_kafka_conf_set_error_cb(conf, forge_kafka_on_client_error);
    k->reader =
        forge_kafka_handle_new(RD_KAFKA_CONSUMER, conf, errstr, sizeof(errstr));
    if (!k->reader)
        forge_log_error("restore reader: %s", errstr);
    else
        k->reader_topic = rd_kafka_topic_new(k->reader, k->cfg->topic_state,
                                             NULL); /* its metadata asked */
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

/* One restore of several partitions (forge_kafka_restore): each has its
 * own queue (not forwarded to the reader's: librdkafka fetches them all at
 * once), and the threads take partitions in turn, each read to its end by
 * one thread. */
typedef struct restore_run {
    rd_kafka_queue_t **queues;
    const int32_t *parts;
    bool *reached;
    size_t n;
    atomic_size_t next;
    long long until; /* clock.h */
    forge_kafka_restore_fn fn;
    void *ctx;
    atomic_int denied; /* an authorization error a thread saw, 0 none */
} restore_run_t;

static bool read_to_end(restore_run_t *run, size_t i)
{
    while (forge_clock_ms() < run->until) {
        rd_kafka_message_t *m = rd_kafka_consume_queue(run->queues[i], 100);
        if (!m)
            continue;
        if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
            rd_kafka_message_destroy(m);
            return true;
        }
        if (!m->err)
            run->fn(run->ctx, run->parts[i], m->key, m->key_len, m->payload,
                    m->len);
        else {
            forge_log_warn("restore: partition %d: %s", (int)run->parts[i],
                           rd_kafka_message_errstr(m));
            if (forge_kafka_is_denial(m->err))
                atomic_store(&run->denied, m->err);
        }
        rd_kafka_message_destroy(m);
    }
    return false;
}

static void *restore_thread(void *arg)
{
    restore_run_t *run = arg;
    size_t i;

    while ((i = atomic_fetch_add(&run->next, 1)) < run->n)
        run->reached[i] = read_to_end(run, i);
    return NULL;
}

/* The state topic's leaders asked before its partitions are assigned: a
 * partition assigned while its leader is unknown waits for librdkafka's
 * offset query timer (500 ms) before its first fetch. One round trip when
 * they are known already; on failure (the broker away) the read goes on
 * and fails on its own deadline, as it always did. */
static void leaders_known(forge_kafka_t *k, long long until)
{
    const struct rd_kafka_metadata *md = NULL;
    long long left = until - forge_clock_ms();
    rd_kafka_resp_err_t e;

    if (!k->reader_topic || left <= 0)
        return;
    e = rd_kafka_metadata(k->reader, 0, k->reader_topic, &md, (int)left);
    if (e)
        forge_log_debug("restore: the state topic's metadata: %s",
                        rd_kafka_err2str(e));
    else
        rd_kafka_metadata_destroy(md);
}

size_t forge_kafka_restore(forge_kafka_t *k, const int32_t *parts, size_t n,
                           forge_kafka_restore_fn fn, void *ctx, int timeout_ms,
                           bool *reached)
{
    rd_kafka_t *r = reader(k);
    restore_run_t run = {
        NULL, parts, reached, n, 0, forge_clock_ms() + timeout_ms, fn, ctx, 0};
    pthread_t threads[RESTORE_THREADS];
    size_t started = 0, done = 0;
    rd_kafka_topic_partition_list_t *l;
    rd_kafka_message_t *m;

    memset(reached, 0, n * sizeof(*reached));
    if (!r || n == 0)
        return 0;
    leaders_known(k, run.until);
    run.queues = forge_xcalloc(n, sizeof(*run.queues));
    l = rd_kafka_topic_partition_list_new((int)n);
    for (size_t i = 0; i < n; i++) {
        /* unforwarded before the assignment: none of it reaches the
         * reader's own queue */
        run.queues[i] =
            rd_kafka_queue_get_partition(r, k->cfg->topic_state, parts[i]);
        rd_kafka_queue_forward(run.queues[i], NULL);
        rd_kafka_topic_partition_list_add(l, k->cfg->topic_state, parts[i])
            ->offset = RD_KAFKA_OFFSET_BEGINNING;
    }
    rd_kafka_assign(r, l); /* group-less: assign, never subscribe */
    while (started < RESTORE_THREADS && started + 1 < n &&
           pthread_create(&threads[started], NULL, restore_thread, &run) == 0)
        started++;
    restore_thread(&run); /* the caller's thread reads too */
    for (size_t t = 0; t < started; t++)
        pthread_join(threads[t], NULL);
    rd_kafka_assign(r, NULL);
    while ((m = rd_kafka_consumer_poll(r, 0))) { /* errors no one reads */
        if (m->err && m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF)
            forge_log_warn("restore: %s", rd_kafka_message_errstr(m));
        if (forge_kafka_is_denial(m->err))
            atomic_store(&run.denied, m->err);
        rd_kafka_message_destroy(m);
    }
    forge_kafka_denial_seen(k, (rd_kafka_resp_err_t)atomic_load(&run.denied));
    for (size_t i = 0; i < n; i++) {
        rd_kafka_queue_destroy(run.queues[i]);
        done += reached[i];
    }
    free(run.queues);
    rd_kafka_topic_partition_list_destroy(l);
    return done;
}
