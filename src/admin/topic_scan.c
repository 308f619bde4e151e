/* SPDX-License-Identifier: Apache-2.0 */
/*
 * topic_scan.c - a topic read to its end, or one partition followed with
 * no end (`logs --follow`), group-less and read_committed, for the
 * recovery commands (topic_scan.h). One of the two places outside
 * src/kafka/ that speaks librdkafka (group.c is the other): both take the
 * worker's client configuration from src/kafka/ (admin_kafka.h, made
 * here), so FORGE_KAFKA_PROP_* (TLS, SASL) apply to them as to the worker.
 * The caller's thread runs it all.
 */
#include "admin/topic_scan.h"
#include "clock/clock.h"
#include "log/log.h"
#include "base/util.h"
#include "admin/admin_kafka.h"

#include <stdlib.h>
#include <string.h>

/* The group id librdkafka wants of a consumer; never joined, nothing
 * committed under it (partitions are assigned, never subscribed). */
#define SCAN_GROUP "forge-worker-recovery-scan"

static void kafka_log(const rd_kafka_t *rk, int level, const char *fac,
                      const char *line)
{
    (void)rk;
    (void)level;
    forge_log_debug("librdkafka %s: %s", fac, line);
}

rd_kafka_conf_t *forge_admin_kafka_conf(const forge_config_t *cfg,
                                        forge_admin_error_t *err)
{
    forge_error_t e = {0};
    rd_kafka_conf_t *conf = forge_kafka_conf_base(cfg, &e);

    if (!conf) {
        forge_admin_fail(err, FORGE_RECOVERY_CONFIG, "%s", e.message);
        return NULL;
    }
    rd_kafka_conf_set_log_cb(conf, kafka_log);
    return conf;
}

static rd_kafka_t *scan_consumer(const forge_config_t *cfg,
                                 forge_admin_error_t *err)
{
    forge_error_t e = {0};
    rd_kafka_conf_t *conf = forge_admin_kafka_conf(cfg, err);
    char errstr[256];
    rd_kafka_t *rk;

    if (!conf)
        return NULL;
    if (forge_kafka_conf_set(conf, "group.id", SCAN_GROUP, &e) ||
        forge_kafka_conf_set(conf, "enable.auto.commit", "false", &e) ||
        forge_kafka_conf_set(conf, "isolation.level", "read_committed", &e) ||
        forge_kafka_conf_set(conf, "enable.partition.eof", "true", &e) ||
        forge_kafka_conf_set(conf, "auto.offset.reset", "earliest", &e) ||
        forge_kafka_conf_set(conf, "fetch.wait.max.ms", "50", &e)) {
        rd_kafka_conf_destroy(conf);
        forge_admin_fail(err, FORGE_RECOVERY_CONFIG, "%s", e.message);
        return NULL;
    }
    rk =
        forge_kafka_handle_new(RD_KAFKA_CONSUMER, conf, errstr, sizeof(errstr));
    if (!rk)
        forge_admin_fail(err, FORGE_RECOVERY_CONFIG, "Kafka client: %s",
                         errstr);
    return rk;
}

/* The topic's partition count, from the brokers' metadata. */
static forge_admin_code_t partitions_of(rd_kafka_t *rk, const char *topic,
                                        int timeout_ms, int32_t *count,
                                        forge_admin_error_t *err)
{
    rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, topic, NULL);
    const struct rd_kafka_metadata *md = NULL;
    rd_kafka_resp_err_t e;
    forge_admin_code_t rc = FORGE_RECOVERY_OK;

    e = rd_kafka_metadata(rk, 0, rkt, &md, timeout_ms);
    rd_kafka_topic_destroy(rkt);
    if (e)
        return forge_admin_fail(err, FORGE_RECOVERY_KAFKA_UNAVAILABLE,
                                "Kafka (%s) did not answer: %s",
                                "FORGE_KAFKA_BROKERS", rd_kafka_err2str(e));
    if (md->topic_cnt != 1 || md->topics[0].err ||
        md->topics[0].partition_cnt <= 0)
        rc = forge_admin_fail(err, FORGE_RECOVERY_TOPIC_MISSING, "topic %s: %s",
                              topic,
                              md->topic_cnt == 1 && md->topics[0].err
                                  ? rd_kafka_err2str(md->topics[0].err)
                                  : "no partitions");
    else
        *count = md->topics[0].partition_cnt;
    rd_kafka_metadata_destroy(md);
    return rc;
}

forge_admin_code_t forge_topic_partitions(const forge_config_t *cfg,
                                          const char *topic, int timeout_ms,
                                          int32_t *count,
                                          forge_admin_error_t *err)
{
    rd_kafka_t *rk = scan_consumer(cfg, err);
    forge_admin_code_t rc;

    if (!rk)
        return err->code;
    rc = partitions_of(rk, topic, timeout_ms, count, err);
    rd_kafka_destroy(rk);
    return rc;
}

forge_admin_code_t forge_topic_marks(const forge_config_t *cfg,
                                     const char *topic, int timeout_ms,
                                     forge_scan_marks_t **marks, int32_t *count,
                                     forge_admin_error_t *err)
{
    return forge_topics_marks(cfg, &topic, 1, timeout_ms, marks, count, err);
}

static forge_admin_code_t ask_marks(rd_kafka_t *rk, const char *topic,
                                    int32_t p, int timeout_ms,
                                    forge_scan_marks_t *m,
                                    forge_admin_error_t *err)
{
    rd_kafka_resp_err_t e = rd_kafka_query_watermark_offsets(
        rk, topic, p, &m->low, &m->high, timeout_ms);

    if (e)
        return forge_admin_fail(err, FORGE_RECOVERY_KAFKA_UNAVAILABLE,
                                "offsets of %s [%d]: %s", topic, (int)p,
                                rd_kafka_err2str(e));
    return FORGE_RECOVERY_OK;
}

forge_admin_code_t forge_topics_marks(const forge_config_t *cfg,
                                      const char *const *topics, size_t n,
                                      int timeout_ms,
                                      forge_scan_marks_t **marks,
                                      int32_t *counts, forge_admin_error_t *err)
{
    rd_kafka_t *rk = scan_consumer(cfg, err);
    forge_admin_code_t rc = FORGE_RECOVERY_OK;
    int32_t most = 0;

    for (size_t i = 0; i < n; i++)
        marks[i] = NULL;
    if (!rk)
        return err->code;
    for (size_t i = 0; i < n && !rc; i++)
        if (!(rc = partitions_of(rk, topics[i], timeout_ms, &counts[i], err))) {
            marks[i] = forge_xcalloc((size_t)counts[i], sizeof(**marks));
            most = counts[i] > most ? counts[i] : most;
        }
    for (int32_t p = 0; p < most && !rc; p++)
        for (size_t i = 0; i < n && !rc; i++)
            if (p < counts[i])
                rc = ask_marks(rk, topics[i], p, timeout_ms, &marks[i][p], err);
    rd_kafka_destroy(rk);
    for (size_t i = 0; rc && i < n; i++) {
        free(marks[i]);
        marks[i] = NULL;
    }
    return rc;
}

forge_admin_code_t forge_topic_offsets_at(const forge_config_t *cfg,
                                          const char *topic, int64_t at_ms,
                                          int timeout_ms, int64_t **offsets,
                                          int32_t *count,
                                          forge_admin_error_t *err)
{
    forge_scan_marks_t *marks = NULL;
    rd_kafka_topic_partition_list_t *l;
    forge_admin_code_t rc;
    rd_kafka_resp_err_t e;
    rd_kafka_t *rk;

    *offsets = NULL;
    if ((rc = forge_topic_marks(cfg, topic, timeout_ms, &marks, count, err)))
        return rc;
    if (!(rk = scan_consumer(cfg, err))) {
        free(marks);
        return err->code;
    }
    l = rd_kafka_topic_partition_list_new(*count);
    for (int32_t p = 0; p < *count; p++)
        rd_kafka_topic_partition_list_add(l, topic, p)->offset = at_ms;
    if ((e = rd_kafka_offsets_for_times(rk, l, timeout_ms))) {
        rc = forge_admin_fail(err, FORGE_RECOVERY_KAFKA_UNAVAILABLE,
                              "offsets of %s by time: %s", topic,
                              rd_kafka_err2str(e));
    } else {
        *offsets = forge_xcalloc((size_t)*count, sizeof(int64_t));
        for (int i = 0; i < l->cnt; i++) {
            const rd_kafka_topic_partition_t *tp = &l->elems[i];
            /* none at or after at_ms: the end, as Kafka's own tool does */
            (*offsets)[tp->partition] = tp->err || tp->offset < 0
                                            ? marks[tp->partition].high
                                            : tp->offset;
        }
    }
    rd_kafka_topic_partition_list_destroy(l);
    rd_kafka_destroy(rk);
    free(marks);
    return rc;
}

/* ---- the scan ----------------------------------------------------------- */

typedef struct scan_part {
    int64_t to; /* FORGE_SCAN_END: until its end */
    bool done;
} scan_part_t;

static void pause_one(rd_kafka_t *rk, const char *topic, int32_t p)
{
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(1);

    rd_kafka_topic_partition_list_add(l, topic, p);
    rd_kafka_pause_partitions(rk, l);
    rd_kafka_topic_partition_list_destroy(l);
}

/* One message of the scan; true when it made progress. */
/* m as the callbacks see it (borrowed: valid while m is). */
static forge_scan_record_t record_of(const rd_kafka_message_t *m)
{
    rd_kafka_timestamp_type_t tt;

    return (forge_scan_record_t){m->partition,
                                 m->offset,
                                 rd_kafka_message_timestamp(m, &tt),
                                 m->key,
                                 m->key_len,
                                 m->payload,
                                 m->payload ? m->len : 0};
}

static bool scan_one(rd_kafka_t *rk, const char *topic, rd_kafka_message_t *m,
                     scan_part_t *parts, int32_t count, size_t *left,
                     forge_scan_fn fn, void *ctx)
{
    scan_part_t *sp;

    if (m->err && m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF) {
        forge_log_warn("scan of %s: %s", topic, rd_kafka_message_errstr(m));
        return false;
    }
    if (m->partition < 0 || m->partition >= count ||
        (sp = &parts[m->partition])->done)
        return false;
    if (!m->err && (sp->to == FORGE_SCAN_END || m->offset < sp->to)) {
        forge_scan_record_t r = record_of(m);
        fn(ctx, &r);
    }
    if (m->err || (sp->to != FORGE_SCAN_END && m->offset + 1 >= sp->to)) {
        sp->done = true;
        (*left)--;
        pause_one(rk, topic, m->partition);
    }
    return true;
}

static forge_admin_code_t scan_assigned(rd_kafka_t *rk, const char *topic,
                                        scan_part_t *parts, int32_t count,
                                        size_t left, int timeout_ms,
                                        forge_scan_fn fn, void *ctx,
                                        forge_admin_error_t *err)
{
    long long quiet_since = forge_clock_ms();

    while (left > 0) {
        rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 100);
        if (m) {
            if (scan_one(rk, topic, m, parts, count, &left, fn, ctx))
                quiet_since = forge_clock_ms();
            rd_kafka_message_destroy(m);
        }
        if (forge_clock_ms() - quiet_since > timeout_ms)
            return forge_admin_fail(
                err, FORGE_RECOVERY_KAFKA_UNAVAILABLE,
                "reading %s: no progress for %d ms, %zu partition(s) not "
                "read to their end",
                topic, timeout_ms, left);
    }
    return FORGE_RECOVERY_OK;
}

forge_admin_code_t forge_topic_scan(const forge_config_t *cfg,
                                    const char *topic,
                                    const forge_scan_range_t *ranges, size_t n,
                                    int timeout_ms, forge_scan_fn fn, void *ctx,
                                    forge_admin_error_t *err)
{
    rd_kafka_t *rk = scan_consumer(cfg, err);
    rd_kafka_topic_partition_list_t *l;
    scan_part_t *parts;
    forge_admin_code_t rc;
    int32_t count = 0;
    size_t left = 0;

    if (!rk)
        return err->code;
    if ((rc = partitions_of(rk, topic, timeout_ms, &count, err))) {
        rd_kafka_destroy(rk);
        return rc;
    }
    parts = forge_xcalloc((size_t)count, sizeof(*parts));
    for (int32_t p = 0; p < count; p++)
        parts[p].done = true;
    l = rd_kafka_topic_partition_list_new((int)n);
    for (size_t i = 0; i < n; i++) {
        const forge_scan_range_t *r = &ranges[i];
        if (r->partition < 0 || r->partition >= count ||
            !parts[r->partition].done ||
            (r->to != FORGE_SCAN_END && r->from >= 0 && r->from >= r->to) ||
            r->to == 0)
            continue; /* unknown, repeated, or empty */
        parts[r->partition] = (scan_part_t){r->to, false};
        rd_kafka_topic_partition_list_add(l, topic, r->partition)->offset =
            r->from == FORGE_SCAN_BEGINNING ? RD_KAFKA_OFFSET_BEGINNING
                                            : r->from;
        left++;
    }
    if (left > 0) {
        rd_kafka_assign(rk, l); /* group-less: assign, never subscribe */
        rc = scan_assigned(rk, topic, parts, count, left, timeout_ms, fn, ctx,
                           err);
        rd_kafka_assign(rk, NULL);
    }
    rd_kafka_topic_partition_list_destroy(l);
    free(parts);
    rd_kafka_destroy(rk);
    return rc;
}

forge_admin_code_t forge_topic_scan_all(const forge_config_t *cfg,
                                        const char *topic, int timeout_ms,
                                        forge_scan_fn fn, void *ctx,
                                        forge_admin_error_t *err)
{
    return forge_topic_scan_until(cfg, topic, NULL, 0, timeout_ms, fn, ctx,
                                  err);
}

forge_admin_code_t forge_topic_scan_until(const forge_config_t *cfg,
                                          const char *topic,
                                          const forge_scan_marks_t *marks,
                                          int32_t count, int timeout_ms,
                                          forge_scan_fn fn, void *ctx,
                                          forge_admin_error_t *err)
{
    forge_scan_range_t *ranges;
    forge_admin_code_t rc;

    if (!marks &&
        (rc = forge_topic_partitions(cfg, topic, timeout_ms, &count, err)))
        return rc;
    ranges = forge_xcalloc((size_t)count, sizeof(*ranges));
    for (int32_t p = 0; p < count; p++)
        ranges[p] = (forge_scan_range_t){
            p, FORGE_SCAN_BEGINNING, marks ? marks[p].high : FORGE_SCAN_END};
    rc = forge_topic_scan(cfg, topic, ranges, (size_t)count, timeout_ms, fn,
                          ctx, err);
    free(ranges);
    return rc;
}

/* ---- one partition followed --------------------------------------------- */

int32_t forge_topic_key_partition(const char *key, size_t len, int32_t count)
{
    /* with a key, murmur2_random never looks at the topic nor the
     * partitions' availability (only a keyless record is placed at random) */
    return rd_kafka_msg_partitioner_murmur2_random(NULL, key, len, count, NULL,
                                                   NULL);
}

/* A consumer error while following: the refusals that waiting will not
 * cure end the follow; the rest are logged once per kind in a row. */
static bool follow_error(const char *topic, const rd_kafka_message_t *m,
                         rd_kafka_resp_err_t *last, forge_admin_error_t *err)
{
    switch (m->err) {
    case RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED:
    case RD_KAFKA_RESP_ERR_GROUP_AUTHORIZATION_FAILED:
    case RD_KAFKA_RESP_ERR__AUTHENTICATION:
    case RD_KAFKA_RESP_ERR_SASL_AUTHENTICATION_FAILED:
        forge_admin_fail(err, FORGE_RECOVERY_KAFKA_UNAVAILABLE,
                         "reading %s: %s", topic, rd_kafka_message_errstr(m));
        return true;
    default:
        if (m->err != *last)
            forge_log_warn("following %s: %s", topic,
                           rd_kafka_message_errstr(m));
        *last = m->err;
        return false;
    }
}

forge_admin_code_t forge_topic_follow(const forge_config_t *cfg,
                                      const char *topic, int32_t partition,
                                      int64_t from,
                                      const volatile sig_atomic_t *stop,
                                      int timeout_ms, forge_follow_fn fn,
                                      void *ctx, forge_admin_error_t *err)
{
    rd_kafka_t *rk = scan_consumer(cfg, err);
    rd_kafka_topic_partition_list_t *l = NULL;
    rd_kafka_resp_err_t last = RD_KAFKA_RESP_ERR_NO_ERROR;
    forge_admin_code_t rc;
    int32_t count = 0;
    bool done = false;

    if (!rk)
        return err->code;
    if ((rc = partitions_of(rk, topic, timeout_ms, &count, err)))
        goto out;
    if (partition < 0 || partition >= count) {
        rc = forge_admin_fail(err, FORGE_RECOVERY_TOPIC_MISSING,
                              "topic %s has no partition %d", topic,
                              (int)partition);
        goto out;
    }
    l = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(l, topic, partition)->offset =
        from == FORGE_SCAN_BEGINNING ? RD_KAFKA_OFFSET_BEGINNING : from;
    rd_kafka_assign(rk, l); /* group-less: assign, never subscribe */
    while (!done && !rc && !(stop && *stop)) {
        rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 100);
        if (!m)
            continue;
        if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
            last = m->err; /* caught up: wait for more */
        } else if (m->err) {
            if (follow_error(topic, m, &last, err))
                rc = err->code;
        } else {
            forge_scan_record_t r = record_of(m);
            last = RD_KAFKA_RESP_ERR_NO_ERROR;
            done = fn(ctx, &r);
        }
        rd_kafka_message_destroy(m);
    }
    rd_kafka_assign(rk, NULL);
out:
    if (l)
        rd_kafka_topic_partition_list_destroy(l);
    rd_kafka_destroy(rk);
    return rc;
}
