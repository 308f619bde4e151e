/* SPDX-License-Identifier: Apache-2.0 */
/*
 * reconcile_topics.c - what the topics say of each launch, for reconcile
 * (reconcile.h): every partition of the state, requests, status and logs
 * topics read from its beginning to its end, read_committed, by a
 * group-less consumer (assign, never subscribe: nothing joins the workers'
 * group and nothing is committed). The requests topic's reader also asks
 * the group's committed offsets, so a request is known as consumed (the
 * worker acted on it) or still to come.
 *
 * Small and self-contained on purpose: `launches` and `replay` (issue 15)
 * read the state topic too; the two are to be folded together. It talks
 * to librdkafka through kafka_int.h's configuration helpers, the one place
 * outside src/kafka/ that does.
 */
#include "recovery/reconcile.h"
#include "core/clock.h"
#include "core/log.h"
#include "core/util.h"
#include "kafka/kafka_int.h"
#include "request/request.h"

#include <stdlib.h>
#include <string.h>

#define METADATA_MAX_MS 15000

typedef struct reading {
    forge_recon_sources_t *s;
    const forge_sealer_t *sealer;
    int64_t *committed; /* requests: per partition, -1 none */
    size_t partitions;
} reading_t;

typedef void (*on_message_t)(reading_t *r, const rd_kafka_message_t *m,
                             const char *key);

/* librdkafka's own log lines go to the worker's log at debug level, not
 * to stderr: the command's stderr carries one JSON object on failure
 * (CONTRACT section 4), not a line every 50 ms while a broker is away. */
static void quiet_log(const rd_kafka_t *rk, int level, const char *fac,
                      const char *buf)
{
    (void)rk;
    (void)level;
    forge_log_debug("librdkafka %s: %s", fac, buf);
}

static rd_kafka_t *reader_new(const forge_config_t *cfg, const char *group,
                              forge_error_t *err)
{
    rd_kafka_conf_t *conf = forge_kafka_conf_base(cfg, err);
    char errstr[256];
    rd_kafka_t *rk;

    if (!conf || forge_kafka_conf_set(conf, "group.id", group, err) ||
        forge_kafka_conf_set(conf, "enable.auto.commit", "false", err) ||
        forge_kafka_conf_set(conf, "isolation.level", "read_committed", err) ||
        forge_kafka_conf_set(conf, "enable.partition.eof", "true", err) ||
        forge_kafka_conf_set(conf, "fetch.wait.max.ms", "10", err)) {
        if (conf)
            rd_kafka_conf_destroy(conf);
        return NULL;
    }
    rd_kafka_conf_set_log_cb(conf, quiet_log);
    if (!(rk = forge_kafka_handle_new(RD_KAFKA_CONSUMER, conf, errstr,
                                      sizeof(errstr))))
        forge_error_set(err, FORGE_ECONFIG, "FORGE_KAFKA_BROKERS",
                        "consumer: %s", errstr);
    return rk;
}

static int left_ms(long long until)
{
    long long left = until - forge_clock_ms();

    return left > 0 ? (int)left : 1;
}

/* The topic's partition count; FORGE_EINVAL when it does not exist. */
static forge_rc_t partition_count(rd_kafka_t *rk, const char *topic,
                                  const char *var, long long until, size_t *n,
                                  forge_error_t *err)
{
    rd_kafka_topic_t *t = rd_kafka_topic_new(rk, topic, NULL);
    const struct rd_kafka_metadata *md = NULL;
    /* a broker that does not answer in METADATA_MAX_MS is away: 69 */
    int wait =
        left_ms(until) < METADATA_MAX_MS ? left_ms(until) : METADATA_MAX_MS;
    rd_kafka_resp_err_t e = rd_kafka_metadata(rk, 0, t, &md, wait);
    forge_rc_t rc = FORGE_OK;

    if (e)
        rc = forge_error_set(err, FORGE_EIO, "FORGE_KAFKA_BROKERS",
                             "Kafka metadata of %s: %s", topic,
                             rd_kafka_err2str(e));
    else if (md->topic_cnt != 1 || md->topics[0].err ||
             md->topics[0].partition_cnt == 0)
        rc = forge_error_set(
            err, FORGE_EINVAL, var, "topic %s does not exist (%s)", topic,
            rd_kafka_err2str(md->topic_cnt ? md->topics[0].err
                                           : RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC));
    else
        *n = (size_t)md->topics[0].partition_cnt;
    if (md)
        rd_kafka_metadata_destroy(md);
    rd_kafka_topic_destroy(t);
    return rc;
}

/* The group's committed offset per partition (-1: none). */
static forge_rc_t committed(rd_kafka_t *rk, const char *topic, size_t n,
                            long long until, int64_t *out, forge_error_t *err)
{
    rd_kafka_topic_partition_list_t *l =
        rd_kafka_topic_partition_list_new((int)n);
    rd_kafka_resp_err_t e;

    for (size_t p = 0; p < n; p++)
        rd_kafka_topic_partition_list_add(l, topic, (int32_t)p);
    e = rd_kafka_committed(rk, l, left_ms(until));
    for (int i = 0; !e && i < l->cnt; i++)
        out[l->elems[i].partition] = l->elems[i].offset;
    rd_kafka_topic_partition_list_destroy(l);
    if (e)
        return forge_error_set(err, FORGE_EIO, "FORGE_KAFKA_GROUP_ID",
                               "committed offsets of the group: %s",
                               rd_kafka_err2str(e));
    return FORGE_OK;
}

/* Every message of every partition, in offset order per partition, until
 * each has reported its end. */
static forge_rc_t read_all(rd_kafka_t *rk, const char *topic, reading_t *r,
                           on_message_t fn, long long until, forge_error_t *err)
{
    rd_kafka_topic_partition_list_t *l =
        rd_kafka_topic_partition_list_new((int)r->partitions);
    bool *ended = forge_xcalloc(r->partitions, sizeof(bool));
    size_t ends = 0;

    for (size_t p = 0; p < r->partitions; p++)
        rd_kafka_topic_partition_list_add(l, topic, (int32_t)p)->offset =
            RD_KAFKA_OFFSET_BEGINNING;
    rd_kafka_assign(rk, l);
    while (ends < r->partitions && forge_clock_ms() < until) {
        rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 100);
        if (!m)
            continue;
        if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
            if (!ended[m->partition]) {
                ended[m->partition] = true;
                ends++;
            }
        } else if (m->err) {
            forge_log_warn("reading %s: %s", topic, rd_kafka_message_errstr(m));
        } else if (!ended[m->partition]) { /* a request may have no key */
            char *key = forge_xstrndup(m->key ? m->key : "", m->key_len);
            fn(r, m, key);
            free(key);
        }
        rd_kafka_message_destroy(m);
    }
    rd_kafka_assign(rk, NULL);
    rd_kafka_topic_partition_list_destroy(l);
    free(ended);
    if (ends < r->partitions)
        return forge_error_set(err, FORGE_EIO, "FORGE_KAFKA_BROKERS",
                               "%s: %zu of %zu partitions read to their end "
                               "in time",
                               topic, ends, r->partitions);
    return FORGE_OK;
}

/* ---- per topic ---------------------------------------------------------- */

static void on_state(reading_t *r, const rd_kafka_message_t *m, const char *key)
{
    forge_recon_launch_t *l;
    forge_launch_record_t *rec = NULL;
    forge_error_t err = {0};

    if (!*key)
        return; /* the worker keys every record */
    l = forge_recon_launch_of(r->s, key);
    r->s->state_records++;
    if (m->payload &&
        forge_launch_record_decode(m->payload, m->len, r->sealer, &rec, &err)) {
        forge_log_warn("state record of %s skipped: %s", key, err.message);
        return;
    }
    forge_launch_record_free(l->rec); /* the latest wins; a tombstone too */
    l->rec = rec;
    l->rec_partition = m->partition;
}

static void take_launch(forge_recon_launch_t *l, const rd_kafka_message_t *m,
                        int attempt, bool consumed)
{
    /* a consumed request wins over one still to come, then the attempt */
    if (l->request &&
        (l->request_consumed > consumed ||
         (l->request_consumed == consumed && l->request_attempt > attempt)))
        return;
    free(l->request);
    l->request = forge_xstrndup(m->payload, m->len);
    l->request_len = m->len;
    l->request_attempt = attempt;
    l->request_partition = m->partition;
    l->request_consumed = consumed;
    l->cancel_requested = false;
}

/* A request the worker refused (REJECTED) still has a record, without
 * its request, in its partition: where a rebuilt one goes. */
static void refused(reading_t *r, const rd_kafka_message_t *m, bool consumed)
{
    int attempt = 1;
    char *id = forge_request_salvage_id(m->payload, m->len, &attempt);
    forge_recon_launch_t *l;

    if (!id)
        return; /* the DLQ's: no launch */
    l = forge_recon_launch_of(r->s, id);
    if (!l->request && (l->request_partition < 0 ||
                        (consumed && attempt >= l->request_attempt))) {
        l->request_attempt = attempt;
        l->request_partition = m->partition;
        l->request_consumed = consumed;
    }
    free(id);
}

static void on_request(reading_t *r, const rd_kafka_message_t *m,
                       const char *key)
{
    forge_request_t *req = NULL;
    forge_error_t err = {0};
    bool consumed = m->offset < r->committed[m->partition];
    forge_recon_launch_t *l;

    (void)key; /* the request's launch_id decides, as for the worker */
    if (!m->payload)
        return;
    if (forge_request_parse(m->payload, m->len, &req, &err)) {
        refused(r, m, consumed);
        return;
    }
    if (req->kind == FORGE_REQUEST_LAUNCH) {
        l = forge_recon_launch_of(r->s, req->launch.launch_id);
        take_launch(l, m, req->launch.attempt, consumed);
    } else if (consumed) { /* one still to come is the worker's to act on */
        l = forge_recon_launch_of(r->s, req->cancel.launch_id);
        if (l->request && l->request_consumed &&
            (!req->cancel.attempt || req->cancel.attempt == l->request_attempt))
            l->cancel_requested = true;
    }
    forge_request_destroy(req);
}

static json_t *event_data(const rd_kafka_message_t *m, json_t **doc)
{
    json_error_t jerr;

    *doc = m->payload ? json_loadb(m->payload, m->len, 0, &jerr) : NULL;
    return json_object_get(*doc, "data");
}

static void on_status(reading_t *r, const rd_kafka_message_t *m,
                      const char *key)
{
    json_t *doc, *d = event_data(m, &doc);
    forge_recon_launch_t *l;
    int attempt = (int)json_integer_value(json_object_get(d, "attempt"));
    long seq = (long)json_integer_value(json_object_get(d, "seq"));
    json_t *job = json_object_get(json_object_get(d, "slurm"), "job_id");

    if (!d || attempt < 1 || !*key) {
        json_decref(doc);
        return;
    }
    l = forge_recon_launch_of(r->s, key);
    if (attempt > l->status_attempt) {
        l->status_attempt = attempt;
        l->status_seq = 0;
        l->status_job_id = 0;
    }
    if (attempt == l->status_attempt) {
        if (seq != l->status_seq + 1)
            l->status_gap = true;
        l->status_seq = seq;
        l->status_state = forge_state_from_name(
            json_string_value(json_object_get(d, "state")));
        if (json_integer_value(job) > 0)
            l->status_job_id = (uint32_t)json_integer_value(job);
    }
    json_decref(doc);
}

static void on_logs(reading_t *r, const rd_kafka_message_t *m, const char *key)
{
    json_t *doc, *d = event_data(m, &doc);
    int attempt = (int)json_integer_value(json_object_get(d, "attempt"));
    forge_recon_launch_t *l;

    if (attempt > 0 && *key) {
        l = forge_recon_launch_of(r->s, key);
        if (attempt > l->logs_attempt)
            l->logs_attempt = attempt;
    }
    json_decref(doc);
}

/* ---- the four topics ---------------------------------------------------- */

typedef struct topic_spec {
    const char *var; /* its configuration variable */
    on_message_t fn;
} topic_spec_t;

static const char *topic_name(const forge_config_t *cfg, size_t i)
{
    const char *names[] = {cfg->topic_requests, cfg->topic_state,
                           cfg->topic_status, cfg->topic_logs};
    return names[i];
}

static const topic_spec_t topics[] = {
    {"FORGE_KAFKA_TOPIC_REQUESTS", on_request}, /* first: offsets, count */
    {"FORGE_KAFKA_TOPIC_STATE", on_state},
    {"FORGE_KAFKA_TOPIC_STATUS", on_status},
    {"FORGE_KAFKA_TOPIC_LOGS", on_logs},
};

forge_rc_t forge_recon_read_topics(const forge_config_t *cfg,
                                   const forge_sealer_t *sealer,
                                   forge_recon_sources_t *s, int timeout_ms,
                                   forge_error_t *err)
{
    long long until = forge_clock_ms() + timeout_ms;
    rd_kafka_t *rk = reader_new(cfg, cfg->kafka_group_id, err);
    reading_t r = {s, sealer, NULL, 0};
    forge_rc_t rc = rk ? FORGE_OK : FORGE_ECONFIG;

    for (size_t i = 0; !rc && i < sizeof(topics) / sizeof(topics[0]); i++) {
        const char *topic = topic_name(cfg, i);
        if ((rc = partition_count(rk, topic, topics[i].var, until,
                                  &r.partitions, err)))
            break;
        if (i == 0) {
            s->partitions = r.partitions;
            r.committed = forge_xcalloc(r.partitions, sizeof(int64_t));
            if ((rc = committed(rk, topic, r.partitions, until, r.committed,
                                err)))
                break;
        }
        rc = read_all(rk, topic, &r, topics[i].fn, until, err);
    }
    free(r.committed);
    if (rk)
        rd_kafka_destroy(rk);
    return rc;
}

forge_rc_t forge_recon_group_members(const forge_config_t *cfg, int *members,
                                     forge_error_t *err)
{
    rd_kafka_t *rk = reader_new(cfg, "forge-worker-reconcile", err);
    const struct rd_kafka_group_list *groups = NULL;
    rd_kafka_resp_err_t e;

    if (!rk)
        return FORGE_ECONFIG;
    e = rd_kafka_list_groups(rk, cfg->kafka_group_id, &groups, 10000);
    *members = 0;
    if (!e && groups)
        for (int i = 0; i < groups->group_cnt; i++)
            *members += groups->groups[i].member_cnt;
    if (groups)
        rd_kafka_group_list_destroy(groups);
    rd_kafka_destroy(rk);
    if (e)
        return forge_error_set(err, FORGE_EIO, "FORGE_KAFKA_BROKERS",
                               "describe group %s: %s", cfg->kafka_group_id,
                               rd_kafka_err2str(e));
    return FORGE_OK;
}
