/* SPDX-License-Identifier: Apache-2.0 */
/*
 * group.c - the worker group through Kafka's admin API (group.h): one
 * short-lived admin client per call, configured like the worker's clients
 * (admin_kafka.h, as topic_scan.c), a result queue
 * waited on for at most the caller's timeout. A group coordinator that is
 * loading or moving (a broker just started, a leadership moved: seen on
 * three nodes, `replay` refused with "Coordinator load in progress") is
 * asked again within that timeout (while_coordinator_moves). The
 * caller's thread.
 */
#include "admin/group.h"
#include "clock/clock.h"
#include "base/util.h"
#include "admin/admin_kafka.h"

#include <stdio.h>
#include <string.h>

typedef struct admin {
    rd_kafka_t *rk;
    rd_kafka_queue_t *queue;
    rd_kafka_AdminOptions_t *options;
} admin_t;

static forge_admin_code_t admin_open(const forge_config_t *cfg,
                                     rd_kafka_admin_op_t op, int timeout_ms,
                                     admin_t *a, forge_admin_error_t *err)
{
    rd_kafka_conf_t *conf = forge_admin_kafka_conf(cfg, err);
    char errstr[256];

    memset(a, 0, sizeof(*a));
    if (!conf)
        return err->code;
    if (!(a->rk = forge_kafka_handle_new(RD_KAFKA_PRODUCER, conf, errstr,
                                         sizeof(errstr))))
        return forge_admin_fail(err, FORGE_RECOVERY_CONFIG,
                                "Kafka admin client: %s", errstr);
    a->queue = rd_kafka_queue_new(a->rk);
    a->options = rd_kafka_AdminOptions_new(a->rk, op);
    rd_kafka_AdminOptions_set_request_timeout(a->options, timeout_ms, errstr,
                                              sizeof(errstr));
    return FORGE_RECOVERY_OK;
}

static void admin_close(admin_t *a)
{
    if (a->options)
        rd_kafka_AdminOptions_destroy(a->options);
    if (a->queue)
        rd_kafka_queue_destroy(a->queue);
    if (a->rk)
        rd_kafka_destroy(a->rk);
}

/* The result event of the request just sent (caller destroys it), or NULL
 * with err set. */
static rd_kafka_event_t *admin_wait(admin_t *a, const char *what,
                                    int timeout_ms, forge_admin_error_t *err)
{
    rd_kafka_event_t *ev = rd_kafka_queue_poll(a->queue, timeout_ms + 1000);

    if (!ev) {
        forge_admin_fail(err, FORGE_RECOVERY_KAFKA_UNAVAILABLE,
                         "%s: no answer from Kafka within %d ms", what,
                         timeout_ms);
        return NULL;
    }
    if (rd_kafka_event_error(ev)) {
        forge_admin_fail(err, FORGE_RECOVERY_KAFKA_UNAVAILABLE, "%s: %s", what,
                         rd_kafka_event_error_string(ev));
        rd_kafka_event_destroy(ev);
        return NULL;
    }
    return ev;
}

forge_admin_code_t forge_group_describe(const forge_config_t *cfg,
                                        const char *group, int timeout_ms,
                                        forge_group_view_t *out,
                                        forge_admin_error_t *err)
{
    const rd_kafka_ConsumerGroupDescription_t **groups;
    forge_admin_code_t rc;
    rd_kafka_event_t *ev;
    const rd_kafka_error_t *ge;
    admin_t a;
    size_t n = 0;

    memset(out, 0, sizeof(*out));
    if ((rc = admin_open(cfg, RD_KAFKA_ADMIN_OP_DESCRIBECONSUMERGROUPS,
                         timeout_ms, &a, err)))
        return rc;
    rd_kafka_DescribeConsumerGroups(a.rk, &group, 1, a.options, a.queue);
    if (!(ev = admin_wait(&a, "describe the group", timeout_ms, err))) {
        admin_close(&a);
        return err->code;
    }
    groups = rd_kafka_DescribeConsumerGroups_result_groups(
        rd_kafka_event_DescribeConsumerGroups_result(ev), &n);
    if (n != 1) {
        rc = forge_admin_fail(err, FORGE_RECOVERY_KAFKA_UNAVAILABLE,
                              "describe the group: %zu results", n);
    } else if ((ge = rd_kafka_ConsumerGroupDescription_error(groups[0]))) {
        if (rd_kafka_error_code(ge) == RD_KAFKA_RESP_ERR_GROUP_ID_NOT_FOUND)
            snprintf(out->state, sizeof(out->state), "Dead");
        else
            rc = forge_admin_fail(err, FORGE_RECOVERY_KAFKA_UNAVAILABLE,
                                  "describe group %s: %s", group,
                                  rd_kafka_error_string(ge));
    } else {
        out->members =
            rd_kafka_ConsumerGroupDescription_member_count(groups[0]);
        snprintf(out->state, sizeof(out->state), "%s",
                 rd_kafka_consumer_group_state_name(
                     rd_kafka_ConsumerGroupDescription_state(groups[0])));
    }
    rd_kafka_event_destroy(ev);
    admin_close(&a);
    return rc;
}

/* The coordinator cannot answer for the group now, and will: asked
 * again. */
static bool coordinator_moving(rd_kafka_resp_err_t e)
{
    return e == RD_KAFKA_RESP_ERR_COORDINATOR_LOAD_IN_PROGRESS ||
           e == RD_KAFKA_RESP_ERR_COORDINATOR_NOT_AVAILABLE ||
           e == RD_KAFKA_RESP_ERR_NOT_COORDINATOR;
}

/* One admin call of a group (ctx its arguments): *again when the
 * coordinator was moving. */
typedef forge_admin_code_t (*group_call_t)(void *ctx, int timeout_ms,
                                           bool *again,
                                           forge_admin_error_t *err);

/* call, asked again while the coordinator moves and timeout_ms lasts
 * (200 ms, doubling to 2 s, between). */
static forge_admin_code_t while_coordinator_moves(group_call_t call, void *ctx,
                                                  int timeout_ms,
                                                  forge_admin_error_t *err)
{
    long long until = forge_clock_ms() + timeout_ms;
    int backoff = 200;

    for (;;) {
        long long left = until - forge_clock_ms();
        bool again = false;
        forge_admin_code_t rc =
            call(ctx, left > 1000 ? (int)left : 1000, &again, err);
        if (!again || forge_clock_ms() + backoff >= until)
            return rc;
        forge_clock_sleep_ms(backoff);
        backoff = backoff < 1000 ? backoff * 2 : 2000;
    }
}

typedef struct committed_args {
    const forge_config_t *cfg;
    const char *group, *topic;
    int32_t count;
    int64_t *offsets;
} committed_args_t;

static forge_admin_code_t committed_once(void *ctx, int timeout_ms, bool *again,
                                         forge_admin_error_t *err)
{
    const committed_args_t *c = ctx;
    const forge_config_t *cfg = c->cfg;
    const char *group = c->group, *topic = c->topic;
    int32_t count = c->count;
    int64_t *offsets = c->offsets;
    rd_kafka_topic_partition_list_t *l =
        rd_kafka_topic_partition_list_new(count);
    rd_kafka_ListConsumerGroupOffsets_t *req;
    const rd_kafka_group_result_t **groups;
    const rd_kafka_topic_partition_list_t *got;
    forge_admin_code_t rc;
    rd_kafka_error_t *e;
    rd_kafka_event_t *ev;
    admin_t a;
    size_t n = 0;

    for (int32_t p = 0; p < count; p++) {
        rd_kafka_topic_partition_list_add(l, topic, p);
        offsets[p] = FORGE_GROUP_NO_OFFSET;
    }
    if ((rc = admin_open(cfg, RD_KAFKA_ADMIN_OP_LISTCONSUMERGROUPOFFSETS,
                         timeout_ms, &a, err))) {
        rd_kafka_topic_partition_list_destroy(l);
        return rc;
    }
    if ((e = rd_kafka_AdminOptions_set_require_stable_offsets(a.options, 1)))
        rd_kafka_error_destroy(e);
    req = rd_kafka_ListConsumerGroupOffsets_new(group, l);
    rd_kafka_topic_partition_list_destroy(l);
    rd_kafka_ListConsumerGroupOffsets(a.rk, &req, 1, a.options, a.queue);
    rd_kafka_ListConsumerGroupOffsets_destroy(req);
    if (!(ev = admin_wait(&a, "the group's committed offsets", timeout_ms,
                          err))) {
        admin_close(&a);
        return err->code;
    }
    groups = rd_kafka_ListConsumerGroupOffsets_result_groups(
        rd_kafka_event_ListConsumerGroupOffsets_result(ev), &n);
    if (n == 1 && rd_kafka_group_result_error(groups[0]))
        *again = coordinator_moving(
            rd_kafka_error_code(rd_kafka_group_result_error(groups[0])));
    if (n != 1 || rd_kafka_group_result_error(groups[0])) {
        rc = forge_admin_fail(
            err, FORGE_RECOVERY_KAFKA_UNAVAILABLE,
            "the committed offsets of group %s: %s", group,
            n == 1
                ? rd_kafka_error_string(rd_kafka_group_result_error(groups[0]))
                : "no result");
    } else {
        got = rd_kafka_group_result_partitions(groups[0]);
        for (int i = 0; got && i < got->cnt; i++) {
            const rd_kafka_topic_partition_t *tp = &got->elems[i];
            if (!tp->err && tp->offset >= 0 && tp->partition >= 0 &&
                tp->partition < count && !strcmp(tp->topic, topic))
                offsets[tp->partition] = tp->offset;
        }
    }
    rd_kafka_event_destroy(ev);
    admin_close(&a);
    return rc;
}

forge_admin_code_t forge_group_committed(const forge_config_t *cfg,
                                         const char *group, const char *topic,
                                         int32_t count, int timeout_ms,
                                         int64_t *offsets,
                                         forge_admin_error_t *err)
{
    committed_args_t c = {cfg, group, topic, count, offsets};

    return while_coordinator_moves(committed_once, &c, timeout_ms, err);
}

/* The coordinator's refusal of offsets for a group with members. */
static bool member_refusal(rd_kafka_resp_err_t e)
{
    switch (e) {
    case RD_KAFKA_RESP_ERR_UNKNOWN_MEMBER_ID:
    case RD_KAFKA_RESP_ERR_ILLEGAL_GENERATION:
    case RD_KAFKA_RESP_ERR_REBALANCE_IN_PROGRESS:
    case RD_KAFKA_RESP_ERR_GROUP_SUBSCRIBED_TO_TOPIC:
    case RD_KAFKA_RESP_ERR_STALE_MEMBER_EPOCH:
    case RD_KAFKA_RESP_ERR_FENCED_MEMBER_EPOCH:
        return true;
    default:
        return false;
    }
}

static forge_admin_code_t alter_result(rd_kafka_event_t *ev, const char *group,
                                       bool *again, forge_admin_error_t *err)
{
    const rd_kafka_group_result_t **groups;
    const rd_kafka_topic_partition_list_t *got;
    const rd_kafka_error_t *ge;
    size_t n = 0;

    groups = rd_kafka_AlterConsumerGroupOffsets_result_groups(
        rd_kafka_event_AlterConsumerGroupOffsets_result(ev), &n);
    if (n != 1)
        return forge_admin_fail(err, FORGE_RECOVERY_KAFKA_UNAVAILABLE,
                                "commit for group %s: no result", group);
    if ((ge = rd_kafka_group_result_error(groups[0]))) {
        *again = coordinator_moving(rd_kafka_error_code(ge));
        return forge_admin_fail(err,
                                member_refusal(rd_kafka_error_code(ge))
                                    ? FORGE_RECOVERY_GROUP_ACTIVE
                                    : FORGE_RECOVERY_KAFKA_UNAVAILABLE,
                                "commit for group %s: %s", group,
                                rd_kafka_error_string(ge));
    }
    got = rd_kafka_group_result_partitions(groups[0]);
    for (int i = 0; got && i < got->cnt; i++)
        if (got->elems[i].err) {
            *again = coordinator_moving(got->elems[i].err);
            return forge_admin_fail(err,
                                    member_refusal(got->elems[i].err)
                                        ? FORGE_RECOVERY_GROUP_ACTIVE
                                        : FORGE_RECOVERY_KAFKA_UNAVAILABLE,
                                    "commit for group %s, partition %d: %s",
                                    group, (int)got->elems[i].partition,
                                    rd_kafka_err2str(got->elems[i].err));
        }
    return FORGE_RECOVERY_OK;
}

typedef struct alter_args {
    const forge_config_t *cfg;
    const char *group, *topic;
    const int32_t *partitions;
    const int64_t *offsets;
    size_t n;
} alter_args_t;

static forge_admin_code_t alter_once(void *ctx, int timeout_ms, bool *again,
                                     forge_admin_error_t *err)
{
    const alter_args_t *c = ctx;
    const forge_config_t *cfg = c->cfg;
    const char *group = c->group, *topic = c->topic;
    const int32_t *partitions = c->partitions;
    const int64_t *offsets = c->offsets;
    size_t n = c->n;
    rd_kafka_topic_partition_list_t *l =
        rd_kafka_topic_partition_list_new((int)n);
    rd_kafka_AlterConsumerGroupOffsets_t *req;
    forge_admin_code_t rc;
    rd_kafka_event_t *ev;
    admin_t a;

    for (size_t i = 0; i < n; i++)
        rd_kafka_topic_partition_list_add(l, topic, partitions[i])->offset =
            offsets[i];
    if ((rc = admin_open(cfg, RD_KAFKA_ADMIN_OP_ALTERCONSUMERGROUPOFFSETS,
                         timeout_ms, &a, err))) {
        rd_kafka_topic_partition_list_destroy(l);
        return rc;
    }
    req = rd_kafka_AlterConsumerGroupOffsets_new(group, l);
    rd_kafka_topic_partition_list_destroy(l);
    rd_kafka_AlterConsumerGroupOffsets(a.rk, &req, 1, a.options, a.queue);
    rd_kafka_AlterConsumerGroupOffsets_destroy(req);
    if (!(ev = admin_wait(&a, "commit the group's offsets", timeout_ms, err))) {
        admin_close(&a);
        return err->code;
    }
    rc = alter_result(ev, group, again, err);
    rd_kafka_event_destroy(ev);
    admin_close(&a);
    return rc;
}

forge_admin_code_t forge_group_alter(const forge_config_t *cfg,
                                     const char *group, const char *topic,
                                     const int32_t *partitions,
                                     const int64_t *offsets, size_t n,
                                     int timeout_ms, forge_admin_error_t *err)
{
    alter_args_t c = {cfg, group, topic, partitions, offsets, n};

    return while_coordinator_moves(alter_once, &c, timeout_ms, err);
}

forge_admin_code_t forge_topic_cleanup_policy(const forge_config_t *cfg,
                                              const char *topic, int timeout_ms,
                                              char *policy, size_t size,
                                              forge_admin_error_t *err)
{
    rd_kafka_ConfigResource_t *res;
    const rd_kafka_ConfigResource_t **got;
    const rd_kafka_ConfigEntry_t **entries;
    forge_admin_code_t rc;
    rd_kafka_event_t *ev;
    admin_t a;
    size_t n = 0, m = 0;

    policy[0] = '\0';
    if ((rc = admin_open(cfg, RD_KAFKA_ADMIN_OP_DESCRIBECONFIGS, timeout_ms, &a,
                         err)))
        return rc;
    res = rd_kafka_ConfigResource_new(RD_KAFKA_RESOURCE_TOPIC, topic);
    rd_kafka_DescribeConfigs(a.rk, &res, 1, a.options, a.queue);
    rd_kafka_ConfigResource_destroy(res);
    if (!(ev = admin_wait(&a, "the topic's configuration", timeout_ms, err))) {
        admin_close(&a);
        return err->code;
    }
    got = rd_kafka_DescribeConfigs_result_resources(
        rd_kafka_event_DescribeConfigs_result(ev), &n);
    if (n == 1 && !rd_kafka_ConfigResource_error(got[0])) {
        entries = rd_kafka_ConfigResource_configs(got[0], &m);
        for (size_t i = 0; i < m; i++)
            if (!strcmp(rd_kafka_ConfigEntry_name(entries[i]),
                        "cleanup.policy") &&
                rd_kafka_ConfigEntry_value(entries[i]))
                snprintf(policy, size, "%s",
                         rd_kafka_ConfigEntry_value(entries[i]));
    }
    rd_kafka_event_destroy(ev);
    admin_close(&a);
    return FORGE_RECOVERY_OK;
}
