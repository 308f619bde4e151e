/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kafka/kafka_access.c - what the broker lets this worker do, asked and
 * named (kafka_access.h), and what happens when it says no.
 *
 * The ACLs a worker needs (docs/KAFKA_ACLS.md, deploy/kafka/acls.tsv):
 * READ on the requests topic, READ and WRITE on the state topic, WRITE on
 * the status, logs and DLQ topics, READ on its group, DESCRIBE on the
 * restore reader's group id, WRITE on its transactional id, and with push
 * completion on (FORGE_KAFKA_JOBCOMP_TOPIC) READ on Slurm's jobcomp topic
 * (jobcomp_reader.c, which names a refusal itself while it runs: it never
 * stops the worker once started). The first ones are
 * compared with what the broker says the worker's principal is authorized for
 * (the Admin API's DescribeTopics and DescribeConsumerGroups with
 * include_authorized_operations, KIP-430); the transactional id's is
 * init_transactions' own answer (producer.c).
 *
 * At start (kafka.c) a missing ACL is a configuration error: the worker
 * exits 78 naming each one, before it takes a partition. While it runs (an
 * ACL removed under it), a refusal seen by the consumer, a restore or a
 * transaction makes it ask again (at most every RECHECK_MS, CHECK_MS at
 * most on the loop), log what is missing and tell /readyz (hooks/hooks.h's
 * kafka_denied) until a check finds everything allowed again.
 * Meanwhile nothing commits and the loop keeps retrying: what did not
 * commit is redone once the ACL is back (the transaction's rules, txn.c).
 *
 * A refusal of the worker's credentials (SASL authentication) or of the
 * broker's certificate (TLS) reaches librdkafka's error_cb
 * (forge_kafka_on_client_error), which remembers the last one: the start
 * exits 78 naming it (producer.c), a running worker reports it like a
 * denial.
 *
 * Threads: the checks run on their caller's thread (start, then the loop;
 * forge_kafka_t is the loop's). The error_cb runs on whichever thread
 * polls a handle; the refusal it remembers is guarded by refusal_lock,
 * and refusal_noted (an atomic) says whether there is one, so the loop's
 * every poll (forge_kafka_poll) looks without taking the lock.
 */
#include "kafka/kafka_access.h"
#include "clock/clock.h"
#include "hooks/hooks.h"
#include "log/log.h"
#include "kafka/kafka_int.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#define RECHECK_MS      10000 /* a denial asked about again at most this often */
#define CHECK_MS        2000  /* one check while running, at most */
#define ERROR_REPEAT_MS 10000 /* a client error warned about again after */

typedef struct topic_need {
    size_t name_at; /* offsetof the topic's name in forge_config_t */
    rd_kafka_AclOperation_t ops[2];
    const char *why;
} topic_need_t;

static const topic_need_t TOPIC_NEEDS[] = {
    {offsetof(forge_config_t, topic_requests),
     {RD_KAFKA_ACL_OPERATION_READ},
     "consumes the launch requests"},
    {offsetof(forge_config_t, topic_state),
     {RD_KAFKA_ACL_OPERATION_READ, RD_KAFKA_ACL_OPERATION_WRITE},
     "restores and writes the launch records"},
    {offsetof(forge_config_t, topic_status),
     {RD_KAFKA_ACL_OPERATION_WRITE},
     "publishes the status events"},
    {offsetof(forge_config_t, topic_logs),
     {RD_KAFKA_ACL_OPERATION_WRITE},
     "publishes the log-archived events"},
    {offsetof(forge_config_t, topic_dlq),
     {RD_KAFKA_ACL_OPERATION_WRITE},
     "dead-letters what it cannot use"},
    /* only when set (NULL: push completion off) */
    {offsetof(forge_config_t, topic_jobcomp),
     {RD_KAFKA_ACL_OPERATION_READ},
     "reads Slurm's job completion records: push completion"},
};
#define TOPIC_COUNT (sizeof(TOPIC_NEEDS) / sizeof(TOPIC_NEEDS[0]))

static const char *topic_name(const forge_config_t *cfg, const topic_need_t *n)
{
    return *(char *const *)(const void *)((const char *)cfg + n->name_at);
}

bool forge_kafka_is_denial(rd_kafka_resp_err_t code)
{
    return code == RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED ||
           code == RD_KAFKA_RESP_ERR_GROUP_AUTHORIZATION_FAILED ||
           code == RD_KAFKA_RESP_ERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED ||
           code == RD_KAFKA_RESP_ERR_CLUSTER_AUTHORIZATION_FAILED;
}

void forge_kafka_principal(const forge_config_t *cfg, char *out, size_t size)
{
    if (cfg->kafka_sasl_username)
        snprintf(out, size, "User:%s", cfg->kafka_sasl_username);
    else
        snprintf(out, size, "the worker's principal");
}

/* ---- the check ----------------------------------------------------------- */

typedef struct missing {
    char *text;
    size_t size;
    int count;
} missing_t;

static void lacks(missing_t *m, rd_kafka_AclOperation_t op, const char *kind,
                  const char *name, const char *why)
{
    size_t used = strlen(m->text);

    snprintf(m->text + used, m->size - used, "%s%s on %s %s (%s)",
             m->count ? "; " : "", rd_kafka_AclOperation_name(op), kind, name,
             why);
    m->count++;
}

/* ALL grants every operation; READ and WRITE imply DESCRIBE. */
static bool allows(const rd_kafka_AclOperation_t *ops, size_t n,
                   rd_kafka_AclOperation_t want)
{
    for (size_t i = 0; i < n; i++)
        if (ops[i] == want || ops[i] == RD_KAFKA_ACL_OPERATION_ALL)
            return true;
    return false;
}

/* The admin result of type on q within timeout_ms, NULL when it did not
 * come or failed as a whole (nothing known). */
static rd_kafka_event_t *result(rd_kafka_queue_t *q, rd_kafka_event_type_t type,
                                int timeout_ms)
{
    rd_kafka_event_t *ev = rd_kafka_queue_poll(q, timeout_ms + 500);

    if (ev && (rd_kafka_event_type(ev) != type || rd_kafka_event_error(ev))) {
        forge_log_debug("kafka access check: %s",
                        rd_kafka_event_error_string(ev));
        rd_kafka_event_destroy(ev);
        return NULL;
    }
    return ev;
}

static rd_kafka_AdminOptions_t *options(rd_kafka_t *rk, rd_kafka_admin_op_t op,
                                        int timeout_ms)
{
    rd_kafka_AdminOptions_t *o = rd_kafka_AdminOptions_new(rk, op);
    char errstr[128];
    rd_kafka_error_t *e;

    rd_kafka_AdminOptions_set_request_timeout(o, timeout_ms, errstr,
                                              sizeof(errstr));
    if ((e = rd_kafka_AdminOptions_set_include_authorized_operations(o, 1)))
        rd_kafka_error_destroy(e);
    return o;
}

/* One topic's answer against its need. A topic the broker does not know
 * is no ACL matter (the probe and the consumer say so). */
static void topic_against(const rd_kafka_TopicDescription_t *d,
                          const topic_need_t *need, const char *name,
                          missing_t *m)
{
    const rd_kafka_error_t *e = rd_kafka_TopicDescription_error(d);
    const rd_kafka_AclOperation_t *ops;
    size_t n = 0;

    if (e &&
        rd_kafka_error_code(e) != RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED)
        return;
    ops = e ? NULL : rd_kafka_TopicDescription_authorized_operations(d, &n);
    if (!e && !ops)
        return; /* the broker does not report authorized operations */
    for (size_t i = 0; i < 2 && need->ops[i]; i++)
        if (!allows(ops, n, need->ops[i]))
            lacks(m, need->ops[i], "topic", name, need->why);
}

static bool check_topics(rd_kafka_t *rk, rd_kafka_queue_t *q,
                         const forge_config_t *cfg, int timeout_ms,
                         missing_t *m)
{
    const char *names[TOPIC_COUNT];
    const topic_need_t *needs[TOPIC_COUNT];
    rd_kafka_TopicCollection_t *topics;
    rd_kafka_AdminOptions_t *o;
    const rd_kafka_TopicDescription_t **found;
    rd_kafka_event_t *ev;
    size_t n = 0, asked = 0;

    for (size_t i = 0; i < TOPIC_COUNT; i++)
        if ((names[asked] = topic_name(cfg, &TOPIC_NEEDS[i])))
            needs[asked++] = &TOPIC_NEEDS[i]; /* a topic not set: no need */
    topics = rd_kafka_TopicCollection_of_topic_names(names, asked);
    o = options(rk, RD_KAFKA_ADMIN_OP_DESCRIBETOPICS, timeout_ms);
    rd_kafka_DescribeTopics(rk, topics, o, q);
    rd_kafka_AdminOptions_destroy(o);
    rd_kafka_TopicCollection_destroy(topics);
    if (!(ev = result(q, RD_KAFKA_EVENT_DESCRIBETOPICS_RESULT, timeout_ms)))
        return false;
    found = rd_kafka_DescribeTopics_result_topics(
        rd_kafka_event_DescribeTopics_result(ev), &n);
    for (size_t t = 0; t < asked; t++)
        for (size_t i = 0; i < n; i++)
            if (!strcmp(rd_kafka_TopicDescription_name(found[i]), names[t]))
                topic_against(found[i], needs[t], names[t], m);
    rd_kafka_event_destroy(ev);
    return true;
}

/* One group's answer: op allowed, or lacked (a refusal to describe it
 * lacks it too). */
static void group_against(const rd_kafka_ConsumerGroupDescription_t *d,
                          const char *group, rd_kafka_AclOperation_t op,
                          const char *why, missing_t *m)
{
    const rd_kafka_error_t *e = rd_kafka_ConsumerGroupDescription_error(d);
    const rd_kafka_AclOperation_t *ops = NULL;
    size_t n = 0;

    if (!e)
        ops = rd_kafka_ConsumerGroupDescription_authorized_operations(d, &n);
    if ((e && rd_kafka_error_code(e) ==
                  RD_KAFKA_RESP_ERR_GROUP_AUTHORIZATION_FAILED) ||
        (!e && ops && !allows(ops, n, op)))
        lacks(m, op, "group", group, why);
}

/* The workers' group (READ) and the restore reader's (DESCRIBE). */
static bool check_groups(rd_kafka_t *rk, rd_kafka_queue_t *q,
                         const forge_config_t *cfg, int timeout_ms,
                         missing_t *m)
{
    const char *groups[] = {cfg->kafka_group_id, RESTORE_GROUP_ID};
    const rd_kafka_ConsumerGroupDescription_t **found;
    rd_kafka_AdminOptions_t *o;
    rd_kafka_event_t *ev;
    size_t n = 0;

    o = options(rk, RD_KAFKA_ADMIN_OP_DESCRIBECONSUMERGROUPS, timeout_ms);
    rd_kafka_DescribeConsumerGroups(rk, groups, 2, o, q);
    rd_kafka_AdminOptions_destroy(o);
    if (!(ev = result(q, RD_KAFKA_EVENT_DESCRIBECONSUMERGROUPS_RESULT,
                      timeout_ms)))
        return false;
    found = rd_kafka_DescribeConsumerGroups_result_groups(
        rd_kafka_event_DescribeConsumerGroups_result(ev), &n);
    for (size_t i = 0; i < n; i++) {
        const char *id = rd_kafka_ConsumerGroupDescription_group_id(found[i]);
        if (!strcmp(id, groups[0]))
            group_against(found[i], id, RD_KAFKA_ACL_OPERATION_READ,
                          "joins the group that shares out the requests' "
                          "partitions, commits their offsets",
                          m);
        else if (!strcmp(id, groups[1]))
            group_against(found[i], id, RD_KAFKA_ACL_OPERATION_DESCRIBE,
                          "the restore reader's group id: its coordinator "
                          "looked up",
                          m);
    }
    rd_kafka_event_destroy(ev);
    return true;
}

int forge_kafka_access_check(rd_kafka_t *rk, const forge_config_t *cfg,
                             int timeout_ms, char *missing, size_t size)
{
    rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
    missing_t m = {missing, size, 0};
    bool topics, group;

    missing[0] = '\0';
    topics = check_topics(rk, q, cfg, timeout_ms, &m);
    group = check_groups(rk, q, cfg, timeout_ms, &m);
    rd_kafka_queue_destroy(q);
    if (m.count)
        return m.count;
    return topics && group ? 0 : -1;
}

/* ---- refusals of the credentials or the certificate ---------------------- */

static pthread_mutex_t refusal_lock = PTHREAD_MUTEX_INITIALIZER;
static char refusal_reason[512];
static const char *refusal_variable;
static atomic_bool refusal_noted; /* refusal_variable set: the fast path */

void forge_kafka_note_refusal(int err, const char *reason)
{
    const char *variable =
        err == RD_KAFKA_RESP_ERR__AUTHENTICATION ? "FORGE_KAFKA_SASL_USERNAME"
        : err == RD_KAFKA_RESP_ERR__SSL          ? "FORGE_KAFKA_SSL_CA_FILE"
                                                 : NULL;

    if (!variable)
        return;
    pthread_mutex_lock(&refusal_lock);
    snprintf(refusal_reason, sizeof(refusal_reason), "%s", reason);
    refusal_variable = variable;
    atomic_store_explicit(&refusal_noted, true, memory_order_release);
    pthread_mutex_unlock(&refusal_lock);
}

/* Whether an error of code err is the same as the last one warned about
 * less than ERROR_REPEAT_MS ago: a broker away makes librdkafka report the
 * same failure on every reconnect of every handle, and one warning of it
 * says enough (the repeats go to debug). Racy by design: at worst one
 * more warning. */
static bool error_repeats(int err)
{
    static atomic_int last_err;
    static atomic_llong last_ms;
    long long now = forge_clock_ms();

    if (atomic_load(&last_err) == err &&
        now - atomic_load(&last_ms) < ERROR_REPEAT_MS)
        return true;
    atomic_store(&last_err, err);
    atomic_store(&last_ms, now);
    return false;
}

void forge_kafka_on_client_error(rd_kafka_t *rk, int err, const char *reason,
                                 void *opaque)
{
    (void)opaque;
    if (error_repeats(err))
        forge_log_debug("kafka (%s): %s", rd_kafka_name(rk), reason);
    else
        forge_log_warn("kafka (%s): %s (the same error again within %d s: "
                       "logged at debug)",
                       rd_kafka_name(rk), reason, ERROR_REPEAT_MS / 1000);
    forge_kafka_note_refusal(err, reason);
}

bool forge_kafka_take_refusal(char *reason, size_t size, const char **variable)
{
    bool had;

    if (!atomic_load_explicit(&refusal_noted, memory_order_acquire))
        return false; /* every loop pass: no lock taken */
    pthread_mutex_lock(&refusal_lock);
    had = refusal_variable != NULL;
    if (had) {
        snprintf(reason, size, "%s", refusal_reason);
        *variable = refusal_variable;
        refusal_variable = NULL;
    }
    atomic_store_explicit(&refusal_noted, false, memory_order_relaxed);
    pthread_mutex_unlock(&refusal_lock);
    return had;
}

/* ---- while running (the loop's thread) ---------------------------------- */

static void report(forge_kafka_t *k, const char *what)
{
    char principal[160];

    forge_kafka_principal(k->cfg, principal, sizeof(principal));
    forge_log_error("Kafka denies %s: %s; retrying until the broker allows "
                    "it (docs/KAFKA_ACLS.md lists what a worker needs)",
                    principal, what);
    if (!k->denied || strcmp(k->denied_what, what)) {
        snprintf(k->denied_what, sizeof(k->denied_what), "%s", what);
        forge_hooks()->kafka_denied(what);
    }
    k->denied = true;
}

static void denial_over(forge_kafka_t *k)
{
    if (!k->denied)
        return;
    k->denied = false;
    k->access_checked_ms = 0;
    k->denied_what[0] = '\0';
    forge_log_info("Kafka allows the worker again");
    forge_hooks()->kafka_denied(NULL);
}

/* Asks again (CHECK_MS at most): what is missing, or code's own words
 * when the broker does not say (the transactional id, an old broker). */
static void recheck(forge_kafka_t *k, rd_kafka_resp_err_t code)
{
    char missing[512];
    int n;

    k->access_checked_ms = forge_clock_ms();
    /* the producer's handle, as at start: the consumer's main queue is
     * its poll's (an admin request through it waits for the poll) */
    n = forge_kafka_access_check(k->producer ? k->producer : k->consumer,
                                 k->cfg, CHECK_MS, missing, sizeof(missing));
    if (n > 0)
        report(k, missing);
    else if (code)
        report(k, rd_kafka_err2str(code));
    else if (n == 0)
        denial_over(k);
}

void forge_kafka_denial_seen(forge_kafka_t *k, rd_kafka_resp_err_t code)
{
    char reason[512], what[600];
    const char *variable;

    if (k->role != FORGE_KAFKA_WORKER) /* its ACLs are another list's */
        return;
    if (forge_kafka_take_refusal(reason, sizeof(reason), &variable)) {
        snprintf(what, sizeof(what), "%s (%s)", reason, variable);
        report(k, what);
        k->access_checked_ms = forge_clock_ms();
        return;
    }
    if (!forge_kafka_is_denial(code) ||
        (k->access_checked_ms &&
         forge_clock_ms() - k->access_checked_ms < RECHECK_MS))
        return;
    recheck(k, code);
}

void forge_kafka_access_tick(forge_kafka_t *k)
{
    if (k->denied && forge_clock_ms() - k->access_checked_ms >= RECHECK_MS)
        recheck(k, RD_KAFKA_RESP_ERR_NO_ERROR);
}
