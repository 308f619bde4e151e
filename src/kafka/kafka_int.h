/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kafka_int.h - what the files of src/kafka/ share behind kafka.h: the
 * object, the commit budget (the configuration is kafka_conf.h). kafka.c: the
 * consumer, rebalances, restores; txn.c: the transaction (produce, commit,
 * abort, the budget); producer.c: the transactional producer's life (made,
 * initialised, replaced, waiting for the broker). All of it runs on the
 * consume loop's thread (kafka.h), kafka_guard.c's call thread aside.
 */
#ifndef FORGE_KAFKA_INT_H
#define FORGE_KAFKA_INT_H

#include "kafka/kafka.h"
#include "kafka/kafka_conf.h"

#include <librdkafka/rdkafka.h>

#define TXN_TIMEOUT_MS     30000 /* one transactional call at most */
#define TXN_BACKOFF_MS     100   /* before retrying a retriable error ... */
#define TXN_BACKOFF_MAX_MS 1000  /* ... doubling up to this */
#define REWIND_MAX_MS      10000
#define RESTORE_MAX_MS     60000 /* one restore (of several partitions) */
#define RESTORE_THREADS    1 /* beside the caller's: partitions read at once */
#define INIT_ATTEMPT_MS    10000  /* one init_transactions at start */
#define WAIT_ATTEMPT_MS    1000   /* one, while a replacement waits */
#define MAX_POLL_DEFAULT   300000 /* librdkafka's max.poll.interval.ms */
#define GUARD_MAX_MS       5000   /* grace for a call that may not return */
#define ABANDONED_MAX      4      /* producers given up on, still hanging */
/* The restore reader's group id: never joined, nothing committed, but
 * librdkafka looks its coordinator up (DESCRIBE on it, kafka_access.c). */
#define RESTORE_GROUP_ID "forge-worker-restore"

/* How long one commit may hold the loop (txn.c's top comment). */
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
    rd_kafka_queue_t *consumer_q; /* its queue: forge_kafka_wake yields it */
    rd_kafka_t *producer;
    rd_kafka_t *reader;             /* restores; made at start (or first use) */
    rd_kafka_topic_t *reader_topic; /* the state topic: its leaders known */
    rd_kafka_message_t *last;       /* the message handed out by poll */
    rd_kafka_topic_partition_list_t *offsets; /* to commit in the txn */
    /* the group's committed offsets as this worker last knew them (txn.c:
     * the fence), NULL when unknown */
    rd_kafka_topic_partition_list_t *known_committed;
    bool in_txn;
    bool produce_failed;    /* this transaction lost a message: abort it */
    bool producer_waiting;  /* replaced, not initialised: the broker is away */
    bool commit_failing;    /* the last transaction did not commit (told) */
    long long txn_began_ms; /* the open transaction's begin (clock.h) */
    int txn_timeout_ms;     /* the producer's transaction.timeout.ms */
    txn_budget_t budget;
    /* kafka_access.c: the broker refuses something (an ACL removed under
     * the running worker), what, and when it was last asked */
    forge_kafka_role_t role; /* the worker's ACLs are checked, not others' */
    bool denied;
    char denied_what[640];
    long long access_checked_ms;
};

static inline int at_most(int a, int b)
{
    return a < b ? a : b;
}

/* Refusals while running (kafka_access.c, the loop's thread): a client
 * error seen (code, or only a remembered refusal of the credentials or
 * the certificate when code is 0), and the check again while refused
 * (which ends the refusal when the broker allows everything again). */
void forge_kafka_denial_seen(forge_kafka_t *k, rd_kafka_resp_err_t code);
void forge_kafka_access_tick(forge_kafka_t *k);

/* The transaction (txn.c). */
rd_kafka_error_t *forge_kafka_abort_within(forge_kafka_t *k, int budget_ms);

/* Why a commit failed, as a short word from Kafka's error code (txn.c's
 * table): the metrics' label, /readyz's reason. "other" when unknown. */
const char *forge_kafka_commit_reason(rd_kafka_resp_err_t code);
void forge_kafka_forget_committed(forge_kafka_t *k);

/* The consumer back at its committed offsets (rewind.c). */
void forge_kafka_rewind(forge_kafka_t *k);

/* The producer (producer.c). forge_kafka_producer_conf: its configuration
 * (new, the caller's; NULL with err set when refused). */
rd_kafka_conf_t *forge_kafka_producer_conf(const forge_config_t *cfg,
                                           forge_error_t *err);
forge_rc_t forge_kafka_producer_new(forge_kafka_t *k, int init_ms,
                                    volatile sig_atomic_t *stop,
                                    forge_error_t *err);
bool forge_kafka_producer_broken(forge_kafka_t *k, const rd_kafka_error_t *e);
forge_kafka_outcome_t forge_kafka_producer_replace(forge_kafka_t *k,
                                                   rd_kafka_error_t *e,
                                                   bool abandoned);
forge_kafka_outcome_t forge_kafka_producer_wait(forge_kafka_t *k);

#endif
