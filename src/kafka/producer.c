/* SPDX-License-Identifier: Apache-2.0 */
/*
 * producer.c - the transactional producer's life: made and initialised
 * (at start, a broker that is away is waited for), replaced when it cannot
 * go on, and waiting for the broker while its replacement cannot be
 * initialised.
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
 * so does a fifth producer given up on while four still hang; fenced by
 * the coordinator itself (a transaction open past transaction.timeout.ms,
 * as through a long broker outage) is replaced. An abort that cannot
 * finish (the broker away) replaces the producer too.
 *
 * A replacement that cannot be initialised (the broker is away) waits:
 * every commit until then makes one short attempt at its initialisation
 * and reports WAITING (nothing committed, nothing to redo yet: the caller
 * drops the work deferred to the commit); the first that succeeds reports
 * ABORTED, and the caller restores. The worker outlives a broker outage of
 * any length.
 */
#include "kafka/kafka_int.h"
#include "hooks/hooks.h"
#include "base/buf.h"
#include "clock/clock.h"
#include "log/log.h"
#include "kafka/kafka_access.h"
#include "kafka/kafka_guard.h"

#include <stdlib.h>
#include <string.h>

/* Errors of init_transactions that only say the coordinator is not there
 * yet (a broker starting or restarting), besides the retriable ones. */
static bool coordinator_away(const rd_kafka_error_t *e)
{
    rd_kafka_resp_err_t code = rd_kafka_error_code(e);

    return rd_kafka_error_is_retriable(e) ||
           code == RD_KAFKA_RESP_ERR_NOT_COORDINATOR ||
           code == RD_KAFKA_RESP_ERR_COORDINATOR_NOT_AVAILABLE ||
           code == RD_KAFKA_RESP_ERR_COORDINATOR_LOAD_IN_PROGRESS ||
           code == RD_KAFKA_RESP_ERR__TRANSPORT ||
           code == RD_KAFKA_RESP_ERR__TIMED_OUT;
}

/* The broker refused the worker, at start: its transactional id (an
 * ACL), or (the error_cb's, kafka_access.c) its credentials or the
 * broker's certificate. A configuration error (78), the ACL named. */
static bool refused_at_start(forge_kafka_t *k, const rd_kafka_error_t *e,
                             forge_error_t *err)
{
    rd_kafka_resp_err_t code = rd_kafka_error_code(e);
    char principal[160], reason[512];
    const char *variable;

    forge_kafka_principal(k->cfg, principal, sizeof(principal));
    if (code == RD_KAFKA_RESP_ERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED) {
        forge_error_set(err, FORGE_ECONFIG, "FORGE_WORKER_ID",
                        "Kafka's ACLs deny %s: WRITE on transactional id "
                        "forge-worker-%s (commits its transactions; "
                        "docs/KAFKA_ACLS.md lists what a worker needs)",
                        principal, k->cfg->worker_id);
        return true;
    }
    rd_kafka_poll(k->producer, 0); /* serves the error_cb */
    if (!forge_kafka_take_refusal(reason, sizeof(reason), &variable))
        return false;
    forge_error_set(err, FORGE_ECONFIG, variable, "Kafka as %s: %s (see %s)",
                    principal, reason, variable);
    return true;
}

/* init_transactions within init_ms; with stop (the worker's start), a
 * coordinator that is away is waited for, attempt after attempt, until
 * *stop: a worker started while the broker restarts must not end as if
 * it were misconfigured (exit 78, which its supervisor does not restart).
 * A refusal (refused_at_start) is that misconfiguration: 78. Without
 * stop (a replacement), a coordinator away sets producer_waiting. */
static forge_rc_t init_transactions(forge_kafka_t *k, int init_ms,
                                    volatile sig_atomic_t *stop,
                                    forge_error_t *err)
{
    for (int attempt = 1;; attempt++) {
        rd_kafka_error_t *e = rd_kafka_init_transactions(k->producer, init_ms);
        if (!e)
            return FORGE_OK;
        if (stop && refused_at_start(k, e, err)) {
            rd_kafka_error_destroy(e);
            return FORGE_ECONFIG;
        }
        if (!stop || *stop || !coordinator_away(e)) {
            k->producer_waiting =
                !stop && coordinator_away(e) && !rd_kafka_error_is_fatal(e);
            forge_error_set(err, FORGE_EIO, "FORGE_KAFKA_BROKERS",
                            "init_transactions: %s", rd_kafka_error_string(e));
            rd_kafka_error_destroy(e);
            return FORGE_EIO;
        }
        forge_log_warn("init_transactions: %s (attempt %d): waiting for the "
                       "broker",
                       rd_kafka_error_string(e), attempt);
        rd_kafka_error_destroy(e);
    }
}

/* The producer's transaction.timeout.ms as librdkafka took it. */
static int transaction_timeout_ms(rd_kafka_t *producer)
{
    char value[32];
    size_t size = sizeof(value);

    if (rd_kafka_conf_get(rd_kafka_conf(producer), "transaction.timeout.ms",
                          value, &size) != RD_KAFKA_CONF_OK)
        return 60000; /* librdkafka's default */
    return (int)strtol(value, NULL, 10);
}

/* Whether the operator set librdkafka's `name` (FORGE_KAFKA_PROP_*). */
static bool operator_set(const forge_config_t *cfg, const char *name)
{
    for (size_t i = 0; i < cfg->kafka_prop_count; i++)
        if (!strcmp(cfg->kafka_props[i].name, name))
            return true;
    return false;
}

/*
 * The producer's configuration: the base (kafka.c), then what exactly-once
 * needs (a transactional.id per worker, acks=all), and retry.backoff.ms,
 * unless the operator set it: 20 ms, not librdkafka's 100. A transaction begun
 * right after a commit asks the coordinator to add the group's offsets
 * (AddOffsetsToTxn) while the last one's markers may still be written; the
 * coordinator answers CONCURRENT_TRANSACTIONS, and librdkafka retries that
 * request after retry.backoff.ms (it waits 20 ms only for AddPartitionsToTxn;
 * rdkafka_txnmgr.c). Under a burst of 300 launches on the test stack, commits
 * (the loop held throughout) took a median 46-49 ms, p90 127-131 ms; with 20
 * ms, 26-34 ms and 50-59 ms. Later retries still back off exponentially, up to
 * retry.backoff.max.ms (1 s).
 */
rd_kafka_conf_t *forge_kafka_producer_conf(const forge_config_t *cfg,
                                           forge_error_t *err)
{
    rd_kafka_conf_t *conf = forge_kafka_conf_base(cfg, err);
    forge_buf_t txid = FORGE_BUF_INIT;
    bool ok;

    if (!conf)
        return NULL;
    rd_kafka_conf_set_error_cb(conf, forge_kafka_on_client_error);
    /* Stable per worker instance: a restarted worker fences its zombie. */
    forge_buf_printf(&txid, "forge-worker-%s", cfg->worker_id);
    ok = (operator_set(cfg, "retry.backoff.ms") ||
          !forge_kafka_conf_set(conf, "retry.backoff.ms", "20", err)) &&
         !forge_kafka_conf_set(conf, "transactional.id", forge_buf_str(&txid),
                               err) &&
         !forge_kafka_conf_set(conf, "partitioner", "murmur2_random", err) &&
         !forge_kafka_conf_set(conf, "acks", "all", err);
    forge_buf_clear(&txid);
    if (!ok) {
        rd_kafka_conf_destroy(conf);
        return NULL;
    }
    return conf;
}

forge_rc_t forge_kafka_producer_new(forge_kafka_t *k, int init_ms,
                                    volatile sig_atomic_t *stop,
                                    forge_error_t *err)
{
    rd_kafka_conf_t *conf = forge_kafka_producer_conf(k->cfg, err);
    char errstr[256];

    if (!conf)
        return FORGE_ECONFIG;
    if (!(k->producer = forge_kafka_handle_new(RD_KAFKA_PRODUCER, conf, errstr,
                                               sizeof(errstr)))) {
        return forge_error_set(err, FORGE_ECONFIG, "FORGE_KAFKA_BROKERS",
                               "producer: %s", errstr);
    }
    k->txn_timeout_ms = transaction_timeout_ms(k->producer);
    return init_transactions(k, init_ms, stop, err);
}

/* The producer is in a fatal state: e says so, or an error that is not
 * (a commit's failed deliveries) came from a producer that is. */
bool forge_kafka_producer_broken(forge_kafka_t *k, const rd_kafka_error_t *e)
{
    return rd_kafka_error_is_fatal(e) ||
           rd_kafka_fatal_error(k->producer, NULL, 0) !=
               RD_KAFKA_RESP_ERR_NO_ERROR;
}

/* Fenced by another process: replacing would fight it. A fence that comes to a
 * transaction open longer than transaction.timeout.ms is the coordinator's own
 * (it aborted the transaction and bumped the epoch, as after a long broker
 * outage): a replacement recovers from it (KIP-588). */
static bool fenced_by_another(const forge_kafka_t *k, rd_kafka_resp_err_t code)
{
    bool fence = code == RD_KAFKA_RESP_ERR__FENCED ||
                 code == RD_KAFKA_RESP_ERR_PRODUCER_FENCED;

    return fence && !(k->txn_began_ms &&
                      forge_clock_ms() - k->txn_began_ms >= k->txn_timeout_ms);
}

/* The replacement is initialised: the consumer rewinds, the caller gets
 * ABORTED and rewinds its memory. */
static forge_kafka_outcome_t producer_ready(forge_kafka_t *k, const char *why)
{
    k->producer_waiting = false;
    forge_hooks()->producer(true);
    forge_log_warn("producer replaced (%s): the transaction it left open is "
                   "aborted, the consumer rewound",
                   why);
    forge_kafka_rewind(k);
    return FORGE_KAFKA_ABORTED;
}

/* The producer cannot go on (the top comment): given up on (abandoned, its
 * call still out and now kafka_guard.c's), fatal, or its abort could not
 * finish. Takes e. */
forge_kafka_outcome_t forge_kafka_producer_replace(forge_kafka_t *k,
                                                   rd_kafka_error_t *e,
                                                   bool abandoned)
{
    forge_error_t err = {0};
    char why[512] = "";
    rd_kafka_resp_err_t code =
        abandoned ? RD_KAFKA_RESP_ERR_NO_ERROR
                  : rd_kafka_fatal_error(k->producer, why, sizeof(why));
    const char *cause = abandoned ? "its call never returned"
                        : code    ? "fatal error"
                                  : "its abort did not finish";

    forge_log_error("transaction: %s%s%s", rd_kafka_error_string(e),
                    *why ? ": " : "", why);
    rd_kafka_error_destroy(e);
    if (code == RD_KAFKA_RESP_ERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED ||
        code == RD_KAFKA_RESP_ERR_CLUSTER_AUTHORIZATION_FAILED) {
        forge_kafka_denial_seen(k, code);
        forge_log_error("Kafka denies the worker its transactional id "
                        "forge-worker-%s: exiting, for a supervisor to "
                        "restart the worker (which stops at start, 78, until "
                        "the ACL is back)",
                        k->cfg->worker_id);
        return FORGE_KAFKA_FATAL;
    }
    if (fenced_by_another(k, code)) {
        forge_log_error("producer fenced: another process holds this "
                        "worker's transactional.id (FORGE_WORKER_ID must be "
                        "unique)");
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
    k->txn_began_ms = 0;
    if (forge_kafka_producer_new(k, k->budget.abort_ms, NULL, &err) == 0)
        return producer_ready(k, cause);
    if (!k->producer || !k->producer_waiting) {
        forge_log_error("replacing the producer: %s", err.message);
        return FORGE_KAFKA_FATAL;
    }
    forge_hooks()->producer(false);
    forge_log_warn("producer replaced (%s), its initialisation waits for the "
                   "broker: %s",
                   cause, err.message);
    return FORGE_KAFKA_WAITING;
}

/* A replacement waits for the broker: one attempt at its initialisation
 * (WAIT_ATTEMPT_MS; a timed out init_transactions resumes). Until it
 * succeeds nothing commits (WAITING); then ABORTED, once. */
forge_kafka_outcome_t forge_kafka_producer_wait(forge_kafka_t *k)
{
    rd_kafka_error_t *e =
        rd_kafka_init_transactions(k->producer, WAIT_ATTEMPT_MS);

    if (!e)
        return producer_ready(k, "the broker is back");
    if (coordinator_away(e) && !rd_kafka_error_is_fatal(e)) {
        rd_kafka_error_destroy(e);
        return FORGE_KAFKA_WAITING;
    }
    forge_log_error("the replaced producer's init_transactions: %s",
                    rd_kafka_error_string(e));
    rd_kafka_error_destroy(e);
    return FORGE_KAFKA_FATAL;
}
