/* SPDX-License-Identifier: Apache-2.0 */
/*
 * txn.c - the transaction: what goes into it (kafka.h's produce calls and
 * input offsets), its commit within a budget, its abort, then the
 * consumer's rewind (rewind.c).
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
 * The caller gets ABORTED and rewinds its memory (loop/restore.c), as
 * after any abortable error: what did not commit is done again. An abort
 * librdkafka refuses or cannot finish in its budget (the coordinator
 * unreachable throughout, or a commit still flushing) costs the producer:
 * a new one with the same transactional.id aborts what was left.
 *
 * What happens to a producer that cannot go on is producer.c's.
 *
 * A failed attempt, and a transaction that ends without committing, are
 * told (hooks/hooks.h's commit_failing: /readyz and the metrics) with a
 * short reason from Kafka's error code (commit_reasons); the next commit
 * clears it. When no partition has min.insync.replicas in sync (two of
 * three brokers down), nothing commits: the worker publishes nothing and
 * acts on nothing new (loop.c posts a transaction's work only once it
 * committed), says so, and goes on by itself when a broker returns.
 */
#include "kafka/kafka_int.h"
#include "hooks/hooks.h"
#include "clock/clock.h"
#include "log/log.h"
#include "testpoint/testpoint.h"
#include "kafka/kafka_guard.h"

#include <string.h>

/* Why a commit failed, from Kafka's error code: the metrics' label. */
static const struct {
    rd_kafka_resp_err_t code;
    const char *reason;
} commit_reasons[] = {
    {RD_KAFKA_RESP_ERR_NOT_ENOUGH_REPLICAS, "not_enough_replicas"},
    {RD_KAFKA_RESP_ERR_NOT_ENOUGH_REPLICAS_AFTER_APPEND, "not_enough_replicas"},
    {RD_KAFKA_RESP_ERR__MSG_TIMED_OUT, "timed_out"},
    {RD_KAFKA_RESP_ERR__TIMED_OUT, "timed_out"},
    {RD_KAFKA_RESP_ERR__TIMED_OUT_QUEUE, "timed_out"},
    {RD_KAFKA_RESP_ERR_REQUEST_TIMED_OUT, "timed_out"},
    {RD_KAFKA_RESP_ERR__TRANSPORT, "broker_unreachable"},
    {RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN, "broker_unreachable"},
    {RD_KAFKA_RESP_ERR_COORDINATOR_NOT_AVAILABLE, "coordinator_unavailable"},
    {RD_KAFKA_RESP_ERR_NOT_COORDINATOR, "coordinator_unavailable"},
    {RD_KAFKA_RESP_ERR_COORDINATOR_LOAD_IN_PROGRESS, "coordinator_unavailable"},
    {RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION, "leader_unavailable"},
    {RD_KAFKA_RESP_ERR_LEADER_NOT_AVAILABLE, "leader_unavailable"},
    {RD_KAFKA_RESP_ERR_ILLEGAL_GENERATION, "group_moved"},
    {RD_KAFKA_RESP_ERR_UNKNOWN_MEMBER_ID, "group_moved"},
    {RD_KAFKA_RESP_ERR_FENCED_INSTANCE_ID, "group_moved"},
    {RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED, "denied"},
    {RD_KAFKA_RESP_ERR_GROUP_AUTHORIZATION_FAILED, "denied"},
    {RD_KAFKA_RESP_ERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED, "denied"},
};

const char *forge_kafka_commit_reason(rd_kafka_resp_err_t code)
{
    for (size_t i = 0; i < sizeof(commit_reasons) / sizeof(*commit_reasons);
         i++)
        if (commit_reasons[i].code == code)
            return commit_reasons[i].reason;
    return "other";
}

/* A failed attempt or transaction told (the top comment). */
static void tell_failure(forge_kafka_t *k, const rd_kafka_error_t *e)
{
    k->commit_failing = true;
    forge_hooks()->commit_failing(
        forge_kafka_commit_reason(rd_kafka_error_code(e)),
        rd_kafka_error_string(e));
}

/* Aborts the open transaction, retrying a retriable failure (a timed out
 * call resumes) until budget_ms has passed. NULL once aborted. */
rd_kafka_error_t *forge_kafka_abort_within(forge_kafka_t *k, int budget_ms)
{
    long long until = forge_clock_ms() + budget_ms;
    rd_kafka_error_t *e;

    for (;;) {
        long long left = until - forge_clock_ms();
        e = rd_kafka_abort_transaction(k->producer, left > 0 ? (int)left : 1);
        if (!e || !rd_kafka_error_is_retriable(e) || forge_clock_ms() >= until)
            return e;
        rd_kafka_error_destroy(e);
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
    k->txn_began_ms = forge_clock_ms();
    return NULL;
}

forge_rc_t forge_kafka_produce_record(forge_kafka_t *k,
                                      const forge_kafka_record_t *r,
                                      forge_error_t *err)
{
    rd_kafka_headers_t *h;
    rd_kafka_resp_err_t e;
    rd_kafka_error_t *txn_error;

    if (k->producer_waiting) { /* nothing commits until it is initialised */
        k->produce_failed = true;
        return forge_error_set(err, FORGE_EIO, r->topic,
                               "produce to %s: the producer waits for the "
                               "broker",
                               r->topic);
    }
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

forge_kafka_record_t forge_kafka_event_record(const char *topic,
                                              int32_t partition,
                                              const char *key,
                                              const void *value, size_t len)
{
    static const char type[] = "application/cloudevents+json";
    static const forge_kafka_header_t h = {"content-type", type,
                                           sizeof(type) - 1};

    return (forge_kafka_record_t){topic, partition, key, strlen(key),
                                  value, len,       &h,  1};
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

size_t forge_kafka_assigned_count(forge_kafka_t *k)
{
    rd_kafka_topic_partition_list_t *l = NULL;
    size_t n = 0;

    if (rd_kafka_assignment(k->consumer, &l) == 0 && l) {
        n = (size_t)l->cnt;
        rd_kafka_topic_partition_list_destroy(l);
    }
    return n;
}

/* ---- the committed offsets this worker knows -----------------------------
 * A transaction that consumed nothing still carries offsets, so that its
 * commit carries the group's generation (fence_by_generation). Which ones:
 * the committed offsets as they are, read once by an OffsetFetch and then
 * kept here, advanced by each transaction that commits offsets, so a
 * steady worker does not pay a round trip per such transaction. Only this
 * worker commits its assigned partitions, so what it knows stays true
 * until one of these drops it: a rebalance (partitions come and go), and
 * any transaction that did not commit (a replaced producer may have had
 * its commit finished by the broker unheard). An offset known too old would
 * move the group back, so in any doubt it is read again. */

void forge_kafka_forget_committed(forge_kafka_t *k)
{
    if (k->known_committed)
        rd_kafka_topic_partition_list_destroy(k->known_committed);
    k->known_committed = NULL;
}

/* The offsets a transaction just committed, into what is known. */
static void learn_committed(forge_kafka_t *k,
                            const rd_kafka_topic_partition_list_t *sent)
{
    if (!k->known_committed)
        return; /* unknown stays unknown: what was sent may be a part */
    for (int i = 0; i < sent->cnt; i++) {
        const rd_kafka_topic_partition_t *s = &sent->elems[i];
        rd_kafka_topic_partition_t *p = rd_kafka_topic_partition_list_find(
            k->known_committed, s->topic, s->partition);
        if (!p)
            p = rd_kafka_topic_partition_list_add(k->known_committed, s->topic,
                                                  s->partition);
        p->offset = s->offset;
    }
}

static void mark_known(forge_kafka_t *k)
{
    const rd_kafka_topic_partition_list_t *l = k->known_committed;

    for (int i = 0; i < l->cnt; i++)
        if (l->elems[i].offset > 0)
            forge_kafka_mark_done(k, l->elems[i].partition,
                                  l->elems[i].offset - 1);
}

int forge_kafka_keep_offsets(forge_kafka_t *k, int timeout_ms)
{
    rd_kafka_topic_partition_list_t *l = NULL;

    if (rd_kafka_assignment(k->consumer, &l) || !l)
        return -1;
    if (rd_kafka_committed(k->consumer, l, timeout_ms) != 0) {
        rd_kafka_topic_partition_list_destroy(l);
        return -1;
    }
    forge_kafka_forget_committed(k);
    k->known_committed = l;
    mark_known(k);
    return 0;
}

bool forge_kafka_pending(const forge_kafka_t *k)
{
    return k->in_txn || k->produce_failed || k->producer_waiting ||
           k->offsets->cnt > 0;
}

/* After an abort: every assigned partition back to its committed offset. */
static forge_kafka_outcome_t abort_txn(forge_kafka_t *k, rd_kafka_error_t *e)
{
    forge_log_warn("transaction aborted: %s", rd_kafka_error_string(e));
    forge_kafka_denial_seen(k, rd_kafka_error_code(e)); /* an ACL removed */
    rd_kafka_error_destroy(e);
    if ((e = forge_kafka_abort_within(k, k->budget.abort_ms)))
        return forge_kafka_producer_replace(k, e, false);
    k->in_txn = false;
    forge_kafka_rewind(k);
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
    forge_clock_sleep_ms(timeout_ms);
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

/* A transaction that consumed nothing (a poll tick's transitions, a
 * submit's result, an archive's event) would commit without the group's
 * generation, so a worker the group has moved on from, that has not heard
 * yet (a broker outage, a long pause), could still commit records for
 * launches another worker now owns: two terminal events for one launch
 * (found by a long chaos run). It carries the committed offsets of its
 * assignment instead, unchanged (as this worker knows them: above), with
 * the group's metadata: the group coordinator refuses them from a member
 * of an older generation (KIP-447) and the transaction aborts. A partition
 * never committed is left out. Offsets that cannot be read (the broker
 * away: the very time the group may move on) fail the transaction: it is
 * aborted and redone, never committed without the fence (a long chaos run
 * saw a poll tick's RUNNING committed that way, unfenced, 15 s into a
 * broker restart, after the new owner had published the launch's end).
 * NULL when the transaction may go on. */
static rd_kafka_error_t *fence_by_generation(forge_kafka_t *k)
{
    if (k->offsets->cnt || !k->in_txn)
        return NULL;
    if (k->known_committed)
        mark_known(k);
    else if (forge_kafka_keep_offsets(k, k->budget.rewind_ms))
        return rd_kafka_error_new(RD_KAFKA_RESP_ERR__TIMED_OUT,
                                  "the group's committed offsets could not "
                                  "be read: the transaction would not carry "
                                  "the group's generation");
    return NULL;
}

/* Sends the offsets and commits, retrying retriable errors within the
 * budget's attempts_ms (the top comment). NULL when committed; an error
 * otherwise (*abandoned: the producer was given up on), the caller aborts
 * or replaces the producer. */
static rd_kafka_error_t *send_and_commit(forge_kafka_t *k, bool stalled,
                                         bool *abandoned)
{
    long long start = forge_clock_ms(), until = start + k->budget.attempts_ms;
    int backoff = TXN_BACKOFF_MS, attempts = 0;
    rd_kafka_error_t *e = NULL;
    bool retriable = false;

    for (;;) {
        long long left = until - forge_clock_ms();
        if (e)
            rd_kafka_error_destroy(e);
        e = commit_once(k, left > 1 ? at_most((int)left, TXN_TIMEOUT_MS) : 2,
                        stalled, &retriable, abandoned);
        attempts++;
        left = until - forge_clock_ms();
        if (!e || !retriable || left <= backoff)
            break;
        forge_log_warn("commit: %s (retriable, attempt %d); again in %d ms",
                       rd_kafka_error_string(e), attempts, backoff);
        tell_failure(k, e);
        forge_clock_sleep_ms(backoff);
        backoff = at_most(backoff * 2, TXN_BACKOFF_MAX_MS);
    }
    if (e && retriable)
        forge_log_warn("commit: still failing after %d attempt(s) in %lld ms "
                       "(budget %d ms, a quarter of max.poll.interval.ms %d "
                       "ms): the transaction is aborted and rewound",
                       attempts, forge_clock_ms() - start,
                       k->budget.attempts_ms, k->budget.max_poll_ms);
    return e;
}

forge_kafka_outcome_t forge_kafka_commit(forge_kafka_t *k)
{
    rd_kafka_error_t *e;
    bool abandoned = false;
    forge_kafka_outcome_t out = FORGE_KAFKA_COMMITTED;

    if (!forge_kafka_pending(k))
        return FORGE_KAFKA_COMMITTED;
    if (k->producer_waiting) {
        k->produce_failed = false;
        rd_kafka_topic_partition_list_destroy(k->offsets);
        k->offsets = rd_kafka_topic_partition_list_new(8);
        forge_hooks()->txn(FORGE_HOOK_TXN_NONE); /* nothing was sent */
        return forge_kafka_producer_wait(k);
    }
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
    else if (!(e = fence_by_generation(k)))
        e = send_and_commit(k, FORGE_TESTPOINT_COMMIT_STALLS(), &abandoned);
    k->produce_failed = false;
    if (e) {
        tell_failure(k, e);
    } else if (k->commit_failing) { /* told once, not on every commit */
        k->commit_failing = false;
        forge_hooks()->commit_failing(NULL, NULL);
    }
    if (e && (abandoned || forge_kafka_producer_broken(k, e)))
        out = forge_kafka_producer_replace(k, e, abandoned);
    else if (e)
        out = abort_txn(k, e);
    else
        k->in_txn = false;
    if (out == FORGE_KAFKA_COMMITTED)
        learn_committed(k, k->offsets);
    else
        forge_kafka_forget_committed(k);
    rd_kafka_topic_partition_list_destroy(k->offsets);
    k->offsets = rd_kafka_topic_partition_list_new(8);
    forge_hooks()->txn(out == FORGE_KAFKA_COMMITTED ? FORGE_HOOK_TXN_COMMITTED
                                                    : FORGE_HOOK_TXN_ABORTED);
    return out;
}
