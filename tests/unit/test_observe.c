/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_observe.c - the worker's metrics (src/observe/observe.c), reached as
 * the worker's modules reach them, through hooks/hooks.h's table that
 * forge_observe_start fills, and the consumer lag read from librdkafka's
 * statistics (src/kafka/kafka_stats.c): what a transaction carried counts
 * once it commits and never when it aborts; slurmrestd requests by
 * operation (read from the URL) and code; seconds to the JWT's expiry from
 * its exp claim; the live launches of the owned partitions by state (the
 * loop's census, src/loop/census.c); build info; hooks that do nothing
 * before start.
 */
#include "support_text.h"
#include "config/config.h"
#include "hooks/hooks.h"
#include "slurm/auth.h"
#include "kafka/kafka_stats.h"
#include "loop/census.h"
#include "observe/health.h"
#include "observe/observe.h"
#include "record/owner.h"
#include "slurm/client.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static forge_config_t cfg;

static void start(void)
{
    cfg.slurm_api_version = FORGE_API_V0_0_43;
    forge_health_init(300, 60);
    forge_observe_start(&cfg);
}

/* The rendered metrics must (or, with want false, must not) hold line. */
static void expect(const char *line, bool want)
{
    char *text = forge_observe_render();

    cr_assert_not_null(text);
    cr_assert_eq(support_has_line(text, line), want, "%s \"%s\" in:\n%s",
                 want ? "no" : "unexpected", line, text);
    free(text);
}

TestSuite(observe, .fini = forge_observe_stop);

Test(observe, before_start_the_hooks_do_nothing)
{
    forge_hooks()->moved(FORGE_STATE_NONE, FORGE_STATE_ACCEPTED, NULL);
    forge_hooks()->txn(FORGE_HOOK_TXN_COMMITTED);
    forge_hooks()->slurm_request("GET", "http://h/slurm/v0.0.43/ping", 200,
                                 true, 3);
    forge_observe_moved(FORGE_STATE_NONE, FORGE_STATE_ACCEPTED, NULL);
    forge_observe_txn(FORGE_HOOK_TXN_COMMITTED);
    cr_assert_null(forge_observe_render());
    cr_assert_not(forge_observe_started());
    cr_assert_not(forge_hooks_installed());
}

Test(observe, build_info_names_the_versions)
{
    start();
    char *text = forge_observe_render();
    cr_assert_not_null(strstr(text, "forge_build_info{version=\""));
    cr_assert_not_null(strstr(text, "slurm_api=\"v0.0.43\"} 1\n"), "%s", text);
    free(text);
}

Test(observe, what_a_transaction_carried_counts_once_it_commits)
{
    start();
    forge_hooks()->moved(FORGE_STATE_NONE, FORGE_STATE_ACCEPTED, NULL);
    forge_hooks()->moved(FORGE_STATE_ACCEPTED, FORGE_STATE_SUBMITTED, NULL);
    forge_hooks()->moved(FORGE_STATE_NONE, FORGE_STATE_REJECTED, "schema");
    forge_hooks()->dlq();
    forge_hooks()->txn(FORGE_HOOK_TXN_ABORTED); /* none of it happened */
    expect("forge_kafka_transactions_total{outcome=\"aborted\"} 1", true);
    expect("forge_dlq_records_total 0", true);
    expect("forge_launch_transitions_total{from=\"NONE\",to=\"ACCEPTED\"} 1",
           false);

    /* done again after the rewind, and committed */
    forge_hooks()->moved(FORGE_STATE_NONE, FORGE_STATE_ACCEPTED, NULL);
    forge_hooks()->moved(FORGE_STATE_ACCEPTED, FORGE_STATE_SUBMITTED, NULL);
    forge_hooks()->moved(FORGE_STATE_NONE, FORGE_STATE_REJECTED, "schema");
    forge_hooks()->moved(FORGE_STATE_NONE, FORGE_STATE_REJECTED, "schema");
    forge_hooks()->moved(FORGE_STATE_NONE, FORGE_STATE_REJECTED,
                         "image_missing");
    forge_hooks()->dlq();
    forge_hooks()->txn(FORGE_HOOK_TXN_COMMITTED);
    expect("forge_kafka_transactions_total{outcome=\"committed\"} 1", true);
    expect("forge_launch_transitions_total{from=\"NONE\",to=\"ACCEPTED\"} 1",
           true);
    expect("forge_launch_transitions_total{from=\"ACCEPTED\",to=\"SUBMITTED\"} "
           "1",
           true);
    expect("forge_launches_rejected_total{reason=\"schema\"} 2", true);
    expect("forge_launches_rejected_total{reason=\"image_missing\"} 1", true);
    expect("forge_dlq_records_total 1", true);

    /* a transaction that sent nothing (its producer waits): forgotten */
    forge_hooks()->moved(FORGE_STATE_SUBMITTED, FORGE_STATE_RUNNING, NULL);
    forge_hooks()->txn(FORGE_HOOK_TXN_NONE);
    forge_hooks()->txn(FORGE_HOOK_TXN_COMMITTED);
    expect("forge_launch_transitions_total{from=\"SUBMITTED\",to=\"RUNNING\"} "
           "1",
           false);
    expect("forge_kafka_transactions_total{outcome=\"committed\"} 2", true);
}

Test(observe, slurm_operations_are_read_from_the_url)
{
    static const struct {
        const char *method, *url, *op;
    } cases[] = {
        {"POST", "https://h:6820/slurm/v0.0.43/job/submit", "submit"},
        {"GET", "https://h:6820/slurm/v0.0.43/jobs/state?job_id=1,2",
         "jobs_state"},
        {"GET", "https://h:6820/slurm/v0.0.43/jobs", "jobs"},
        {"GET", "https://h:6820/slurm/v0.0.41/job/4711", "job"},
        {"DELETE", "https://h:6820/slurm/v0.0.43/job/4711?signal=KILL",
         "cancel"},
        {"GET", "https://h:6820/slurmdb/v0.0.43/job/4711", "accounting"},
        {"GET", "https://h:6820/slurm/v0.0.45/ping", "ping"},
        {"GET", "https://h:6820/openapi/v3", "openapi"},
        {"GET", "https://h:6820/prefix/slurm/v0.0.43/ping", "ping"},
        {"PUT", "https://h:6820/slurm/v0.0.43/nodes", "other"},
        {"GET", "https://h:6820/", "other"},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        cr_assert_str_eq(
            forge_observe_slurm_operation(cases[i].method, cases[i].url),
            cases[i].op, "%s %s", cases[i].method, cases[i].url);
}

Test(observe, slurm_requests_count_by_operation_and_code_with_latency)
{
    start();
    forge_hooks()->slurm_request(
        "GET", "http://h/slurm/v0.0.43/ping", 0,
        forge_slurm_status_answered(FORGE_SLURM_TRANSPORT), 2);
    forge_hooks()->slurm_request("GET", "http://h/slurm/v0.0.43/ping", 401,
                                 forge_slurm_status_answered(FORGE_SLURM_AUTH),
                                 2);
    cr_assert_lt(forge_health_slurm_age_ms(), 0, "no answer, an auth refusal");
    forge_hooks()->slurm_request(
        "POST", "http://h/slurm/v0.0.43/job/submit", 500,
        forge_slurm_status_answered(FORGE_SLURM_SERVER), 10);
    cr_assert_lt(forge_health_slurm_age_ms(), 0, "a server error");
    forge_hooks()->slurm_request("GET", "http://h/slurm/v0.0.43/ping", 200,
                                 forge_slurm_status_answered(FORGE_SLURM_OK),
                                 2);
    cr_assert_lt(forge_health_slurm_age_ms(), 0, "a ping: the probe's call");
    forge_hooks()->slurm_request(
        "POST", "http://h/slurm/v0.0.43/job/submit", 200,
        forge_slurm_status_answered(FORGE_SLURM_OK), 40);
    expect("forge_slurm_requests_total{operation=\"submit\",code=\"200\"} 1",
           true);
    expect("forge_slurm_requests_total{operation=\"submit\",code=\"500\"} 1",
           true);
    expect("forge_slurm_requests_total{operation=\"ping\",code=\"none\"} 1",
           true);
    expect("forge_slurm_request_duration_seconds_count{operation=\"submit\"} 2",
           true);
    expect("forge_slurm_request_duration_seconds_bucket{operation=\"submit\","
           "le=\"0.05\"} 2",
           true);
    expect("forge_slurm_request_duration_seconds_bucket{operation=\"submit\","
           "le=\"0.025\"} 1",
           true);
    /* the answered one holds readiness's slurmrestd fact up */
    cr_assert_geq(forge_health_slurm_age_ms(), 0);
}

Test(observe, seconds_to_the_jwt_expiry_come_from_its_exp_claim)
{
    char token[256], line[96];
    long long exp = (long long)time(NULL) + 3600;
    char payload[64], b64[128];
    static const char alphabet[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    size_t n, o = 0;
    unsigned long acc = 0;
    int bits = 0;
    char *text, *at;

    start();
    forge_hooks()->jwt(forge_slurm_jwt_expiry("opaque-token-without-dots"),
                       false);
    text = forge_observe_render();
    cr_assert_null(strstr(text, "\nforge_slurm_jwt_expiry_seconds"), "%s",
                   text);
    free(text);
    /* a payload {"exp":<now+3600>,"sun":"forge"}, base64url, unpadded */
    n = (size_t)snprintf(payload, sizeof(payload),
                         "{\"exp\":%lld,\"sun\":\"forge\"}", exp);
    for (size_t i = 0; i < n; i++) {
        acc = (acc << 8) | (unsigned char)payload[i];
        for (bits += 8; bits >= 6; bits -= 6)
            b64[o++] = alphabet[(acc >> (bits - 6)) & 63];
    }
    if (bits)
        b64[o++] = alphabet[(acc << (6 - bits)) & 63];
    b64[o] = '\0';
    snprintf(token, sizeof(token), "eyJhbGciOiJIUzI1NiJ9.%s.c2ln", b64);
    forge_hooks()->jwt(forge_slurm_jwt_expiry(token), false);
    text = forge_observe_render();
    at = strstr(text, "\nforge_slurm_jwt_expiry_seconds{source=\"file\"} ");
    cr_assert_not_null(at, "%s", text);
    snprintf(line, sizeof(line), "%s", strchr(at, '}') + 2);
    cr_assert_geq(atof(line), 3590, "%s", line);
    cr_assert_leq(atof(line), 3600, "%s", line);
    free(text);
    forge_hooks()->jwt(forge_slurm_jwt_expiry(token),
                       true); /* minted from the key instead */
    text = forge_observe_render();
    cr_assert_not_null(
        strstr(text, "\nforge_slurm_jwt_expiry_seconds{source=\"minted\"} "),
        "%s", text);
    free(text);
}

Test(observe, partitions_and_rebalances)
{
    start();
    forge_hooks()->partitions(4, 1);
    forge_hooks()->rebalance("assigned");
    forge_hooks()->rebalance("assigned");
    forge_hooks()->rebalance("lost");
    expect("forge_partitions_owned 4", true);
    expect("forge_partitions_restoring 1", true);
    expect("forge_kafka_rebalances_total{kind=\"assigned\"} 2", true);
    expect("forge_kafka_rebalances_total{kind=\"lost\"} 1", true);
    expect("forge_ready 0", true); /* restoring */
}

Test(observe, the_lag_gauge_is_replaced_whole)
{
    int32_t p1[] = {0, 3}, p2[] = {5};
    long long l1[] = {7, 0}, l2[] = {12};

    start();
    forge_hooks()->lag(p1, l1, 2);
    expect("forge_kafka_consumer_lag{partition=\"0\"} 7", true);
    expect("forge_kafka_consumer_lag{partition=\"3\"} 0", true);
    forge_hooks()->lag(p2, l2, 1); /* the partitions moved */
    expect("forge_kafka_consumer_lag{partition=\"0\"} 7", false);
    expect("forge_kafka_consumer_lag{partition=\"5\"} 12", true);
}

Test(observe, lag_is_read_from_librdkafka_statistics)
{
    /* trimmed from a real consumer's statistics: partition 0 fetched with
     * 3 taken of 10, 1 fetched with nothing taken yet (committed 4), 2
     * not fetched here, 3 with nothing taken or committed (from its low
     * watermark), -1 the internal UA partition; another topic */
    static const char json[] =
        "{\"name\": \"c#consumer-1\", \"type\": \"consumer\", \"topics\": {"
        "\"req\": {\"topic\": \"req\", \"partitions\": {"
        "\"0\": {\"partition\": 0, \"fetch_state\": \"active\", "
        "\"ls_offset\": 10, \"hi_offset\": 12, \"app_offset\": 3, "
        "\"committed_offset\": 2},"
        "\"1\": {\"partition\": 1, \"fetch_state\": \"active\", "
        "\"ls_offset\": 9, \"app_offset\": -1001, \"committed_offset\": 4},"
        "\"2\": {\"partition\": 2, \"fetch_state\": \"none\", "
        "\"ls_offset\": -1001, \"app_offset\": -1001, "
        "\"committed_offset\": -1001},"
        "\"3\": {\"partition\": 3, \"fetch_state\": \"active\", "
        "\"ls_offset\": 5, \"lo_offset\": 1, \"app_offset\": -1001, "
        "\"committed_offset\": -1001},"
        "\"-1\": {\"partition\": -1, \"fetch_state\": \"none\"}}},"
        "\"other\": {\"partitions\": {\"0\": {\"partition\": 0, "
        "\"fetch_state\": \"active\", \"ls_offset\": 99, \"app_offset\": 0}}}"
        "}}";
    int32_t parts[8];
    long long lags[8];
    long n = forge_kafka_stats_lag(json, strlen(json), "req", parts, lags, 8);

    cr_assert_eq(n, 3);
    cr_assert_eq(parts[0], 0);
    cr_assert_eq(lags[0], 7);
    cr_assert_eq(parts[1], 1);
    cr_assert_eq(lags[1], 5);
    cr_assert_eq(parts[2], 3); /* nothing taken nor committed: from lo */
    cr_assert_eq(lags[2], 4);
    cr_assert_eq(forge_kafka_stats_lag("not json", 8, "req", parts, lags, 8),
                 -1);
    cr_assert_eq(
        forge_kafka_stats_lag(json, strlen(json), "absent", parts, lags, 8), 0);
}

Test(observe, live_launches_by_state_and_the_archive_queue)
{
    forge_owner_t *o = forge_owner_new();
    static const struct {
        const char *id;
        forge_state_t state;
        uint32_t job;
        bool archived;
        int32_t partition;
    } launches[] = {
        {"a", FORGE_STATE_RUNNING, 11, false, 0},
        {"b", FORGE_STATE_RUNNING, 12, false, 0},
        {"c", FORGE_STATE_ACCEPTED, 0, false, 1},
        {"d", FORGE_STATE_SUCCEEDED, 13, false, 1}, /* to archive */
        {"e", FORGE_STATE_SUCCEEDED, 14, true, 1},  /* archived */
        {"f", FORGE_STATE_REJECTED, 0, false, 1},   /* nothing to archive */
        {"g", FORGE_STATE_RUNNING, 15, false, 2},   /* not owned */
    };

    start();
    forge_owner_assign(o, 0);
    forge_owner_set_ready(o, 0);
    forge_owner_assign(o, 1);
    forge_owner_set_ready(o, 1);
    for (size_t i = 0; i < sizeof(launches) / sizeof(launches[0]); i++) {
        forge_launch_record_t *r =
            forge_launch_record_new(launches[i].id, 1, NULL, 0);
        r->state = launches[i].state;
        r->job_id = launches[i].job;
        r->archived = launches[i].archived;
        forge_owner_put(o, r, NULL, launches[i].partition);
    }
    forge_census_push(o, 120); /* the loop's, at a poll tick */
    expect("forge_launches_live{state=\"RUNNING\"} 2", true);
    expect("forge_launches_live{state=\"ACCEPTED\"} 1", true);
    expect("forge_launches_live{state=\"PENDING\"} 0", true);
    expect("forge_archive_queue_depth 1", true);
    expect("forge_poll_tick_lateness_seconds_count 1", true);
    expect("forge_poll_tick_lateness_seconds_bucket{le=\"0.1\"} 0", true);
    expect("forge_poll_tick_lateness_seconds_bucket{le=\"0.25\"} 1", true);
    expect("forge_partitions_owned 2", true); /* owner.c said so */
    forge_owner_destroy(o);
}

/* The statistics the lag comes from: every 5 s unless the operator chose
 * (FORGE_KAFKA_PROP_STATISTICS_INTERVAL_MS), and none before start. */
static const char *interval_of(rd_kafka_conf_t *conf)
{
    static char value[32];
    size_t size = sizeof(value);

    cr_assert_eq(
        rd_kafka_conf_get(conf, "statistics.interval.ms", value, &size),
        RD_KAFKA_CONF_OK);
    return value;
}

Test(observe, the_consumer_gets_statistics_every_5_s_unless_set)
{
    rd_kafka_conf_t *conf = rd_kafka_conf_new();

    forge_kafka_stats_conf(conf, "req"); /* not started: nothing */
    cr_assert_str_eq(interval_of(conf), "0");
    start();
    forge_kafka_stats_conf(conf, "req");
    cr_assert_str_eq(interval_of(conf), FORGE_KAFKA_STATS_INTERVAL);
    rd_kafka_conf_destroy(conf);
    conf = rd_kafka_conf_new();
    cr_assert_eq(
        rd_kafka_conf_set(conf, "statistics.interval.ms", "1000", NULL, 0),
        RD_KAFKA_CONF_OK);
    forge_kafka_stats_conf(conf, "req");
    cr_assert_str_eq(interval_of(conf), "1000");
    rd_kafka_conf_destroy(conf);
}
