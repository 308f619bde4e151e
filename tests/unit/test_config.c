/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_config.c - every rule of src/config/config.c: defaults, each variable's
 * accepted and refused values, the cross-variable checks, and the
 * requirements per command. A refused value must name its variable.
 */
#include "config/config.h"

#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static forge_config_t *load_ok(char *const *envp)
{
    forge_config_t *cfg = NULL;
    forge_error_t err = {0};
    forge_rc_t rc = forge_config_load(envp, &cfg, &err);

    cr_assert_eq(rc, FORGE_OK, "load failed: %s (%s)", err.message, err.field);
    cr_assert_not_null(cfg);
    return cfg;
}

Test(config, defaults_when_nothing_is_set)
{
    char *envp[] = {"PATH=/usr/bin", NULL};
    forge_config_t *cfg = load_ok(envp);

    cr_assert_str_eq(cfg->fleet_kind, "slurm");
    cr_assert_eq(cfg->slurm_api_version, FORGE_API_V0_0_43);
    cr_assert(cfg->slurm_tls_verify);
    cr_assert_eq(cfg->slurm_default_time_limit_min, 60);
    cr_assert_eq(cfg->slurm_max_connections, 4);
    cr_assert_eq(cfg->slurm_max_rps, 200);
    cr_assert_eq(cfg->runtime_profile, FORGE_PROFILE_ENROOT_PYXIS);
    cr_assert_str_eq(cfg->topic_requests, "forge.launch.requests");
    cr_assert_str_eq(cfg->topic_status, "forge.launch.status");
    cr_assert_str_eq(cfg->topic_logs, "forge.launch.logs");
    cr_assert_str_eq(cfg->topic_state, "forge.launch.state");
    cr_assert_str_eq(cfg->topic_dlq, "forge.launch.dlq");
    cr_assert_str_eq(cfg->kafka_group_id, "forge-worker");
    cr_assert_eq(cfg->kafka_group_protocol, FORGE_KAFKA_GROUP_CLASSIC);
    cr_assert_eq(cfg->poll_interval_ms, 5000);
    cr_assert_eq(cfg->lost_grace_s, 600);
    cr_assert_eq(cfg->log_level, FORGE_LOG_INFO);
    cr_assert_eq(cfg->log_format, FORGE_LOG_JSON);
    cr_assert_null(cfg->storage_root);
    cr_assert_null(cfg->http_listen);
    cr_assert_eq(cfg->health_stall_s, 300);
    cr_assert_eq(cfg->ready_slurm_s, 60);
    cr_assert_null(cfg->slurm_partition);
    cr_assert_not_null(cfg->worker_id);
    cr_assert_eq(cfg->mount_allow_count, 0);
    cr_assert_eq(cfg->log_live, FORGE_LOG_LIVE_OPT_IN);
    cr_assert_eq(cfg->log_live_interval_ms, 1000);
    cr_assert_eq(cfg->log_live_chunk_bytes, 65536);
    cr_assert_eq(cfg->log_live_budget_bytes, 1048576);
    forge_config_destroy(cfg);
}

Test(config, every_value_read)
{
    char *envp[] = {
        "FORGE_SLURM_REST_URL=https://slurm.example:6820/",
        "FORGE_SLURM_REST_API_VERSION=v0.0.45",
        "FORGE_SLURM_REST_USER=forge",
        "FORGE_SLURM_JWT_FILE=/run/secrets/jwt",
        "FORGE_SLURM_TLS_VERIFY=false",
        "FORGE_SLURM_TLS_CA_FILE=/etc/ssl/ca.pem",
        "FORGE_SLURM_PARTITION=gpu",
        "FORGE_SLURM_ACCOUNT=ml-team",
        "FORGE_SLURM_QOS=high",
        "FORGE_SLURM_DEFAULT_TIME_LIMIT=120",
        "FORGE_SLURM_MAX_CONNECTIONS=64",
        "FORGE_SLURM_MAX_RPS=0",
        "FORGE_SLURM_RUNTIME_PROFILE=apptainer",
        "FORGE_STORAGE_ROOT=/mnt/shared/",
        "FORGE_SLURM_STORAGE_ROOT=/lustre/forge",
        "FORGE_MOUNT_ALLOW=/datasets:/models/ro",
        "FORGE_GPU_SERIES_FILE=/etc/forge/series.json",
        "FORGE_STATE_KEY_FILE=/run/secrets/state.key",
        "FORGE_STATE_KEY_FILE_PREVIOUS=/run/secrets/state.key.old",
        "FORGE_KAFKA_BROKERS=k1:9092,10.0.0.2:9093,[::1]:9094",
        "FORGE_KAFKA_GROUP_ID=forge-prod",
        "FORGE_KAFKA_GROUP_PROTOCOL=consumer",
        "FORGE_KAFKA_TOPIC_REQUESTS=a.requests",
        "FORGE_KAFKA_TOPIC_STATE=a.state",
        "FORGE_WORKER_ID=worker-7",
        "FORGE_POLL_INTERVAL_MS=1000",
        "FORGE_LOST_GRACE_S=30",
        "FORGE_HTTP_LISTEN=0.0.0.0:8080",
        "FORGE_HEALTH_STALL_S=120",
        "FORGE_READY_SLURM_S=30",
        "FORGE_LOG_LEVEL=debug",
        "FORGE_LOG_FORMAT=text",
        "FORGE_KAFKA_PROP_SOCKET_TIMEOUT_MS=30000",
        "FORGE_KAFKA_PROP_security_protocol=ssl",
        NULL,
    };
    forge_config_t *cfg = load_ok(envp);

    cr_assert_str_eq(cfg->slurm_rest_url, "https://slurm.example:6820");
    cr_assert_eq(cfg->slurm_api_version, FORGE_API_V0_0_45);
    cr_assert_str_eq(cfg->slurm_user, "forge");
    cr_assert_str_eq(cfg->slurm_jwt_file, "/run/secrets/jwt");
    cr_assert_not(cfg->slurm_tls_verify);
    cr_assert_str_eq(cfg->slurm_tls_ca_file, "/etc/ssl/ca.pem");
    cr_assert_str_eq(cfg->slurm_partition, "gpu");
    cr_assert_str_eq(cfg->slurm_account, "ml-team");
    cr_assert_str_eq(cfg->slurm_qos, "high");
    cr_assert_eq(cfg->slurm_default_time_limit_min, 120);
    cr_assert_eq(cfg->slurm_max_connections, 64);
    cr_assert_eq(cfg->slurm_max_rps, 0);
    cr_assert_eq(cfg->runtime_profile, FORGE_PROFILE_APPTAINER);
    cr_assert_str_eq(cfg->storage_root, "/mnt/shared");
    cr_assert_str_eq(cfg->slurm_storage_root, "/lustre/forge");
    cr_assert_str_eq(cfg->runtime_root, "/mnt/shared/runtimes");
    cr_assert_eq(cfg->mount_allow_count, 2);
    cr_assert_str_eq(cfg->mount_allow[0], "/datasets");
    cr_assert_str_eq(cfg->mount_allow[1], "/models/ro");
    cr_assert_null(cfg->mount_allow[2]);
    cr_assert_str_eq(cfg->gpu_series_file, "/etc/forge/series.json");
    cr_assert_str_eq(cfg->state_key_file, "/run/secrets/state.key");
    cr_assert_str_eq(cfg->state_key_file_previous,
                     "/run/secrets/state.key.old");
    cr_assert_str_eq(cfg->kafka_brokers, "k1:9092,10.0.0.2:9093,[::1]:9094");
    cr_assert_str_eq(cfg->kafka_group_id, "forge-prod");
    cr_assert_eq(cfg->kafka_group_protocol, FORGE_KAFKA_GROUP_CONSUMER);
    cr_assert_str_eq(cfg->topic_requests, "a.requests");
    cr_assert_str_eq(cfg->topic_state, "a.state");
    cr_assert_str_eq(cfg->worker_id, "worker-7");
    cr_assert_eq(cfg->poll_interval_ms, 1000);
    cr_assert_eq(cfg->lost_grace_s, 30);
    cr_assert_str_eq(cfg->http_listen, "0.0.0.0:8080");
    cr_assert_eq(cfg->health_stall_s, 120);
    cr_assert_eq(cfg->ready_slurm_s, 30);
    cr_assert_eq(cfg->log_level, FORGE_LOG_DEBUG);
    cr_assert_eq(cfg->log_format, FORGE_LOG_TEXT);
    cr_assert_eq(cfg->kafka_prop_count, 2);
    cr_assert_str_eq(cfg->kafka_props[0].name, "socket.timeout.ms");
    cr_assert_str_eq(cfg->kafka_props[0].value, "30000");
    cr_assert_str_eq(cfg->kafka_props[1].name, "security.protocol");
    forge_config_destroy(cfg);
}

Test(config, storage_root_defaults_flow_to_cluster_side_and_runtimes)
{
    char *envp[] = {"FORGE_STORAGE_ROOT=/srv/forge", NULL};
    forge_config_t *cfg = load_ok(envp);

    cr_assert_str_eq(cfg->slurm_storage_root, "/srv/forge");
    cr_assert_str_eq(cfg->runtime_root, "/srv/forge/runtimes");
    forge_config_destroy(cfg);
}

Test(config, empty_value_means_unset)
{
    char *envp[] = {"FORGE_SLURM_PARTITION=", "FORGE_LOG_LEVEL=", NULL};
    forge_config_t *cfg = load_ok(envp);

    cr_assert_null(cfg->slurm_partition);
    cr_assert_eq(cfg->log_level, FORGE_LOG_INFO);
    forge_config_destroy(cfg);
}

Test(config, bool_spellings)
{
    const char *yes[] = {"1", "true", "TRUE", "yes", "on"};
    const char *no[] = {"0", "false", "No", "off"};
    char var[64];

    for (size_t i = 0; i < 5 + 4; i++) {
        const char *v = i < 5 ? yes[i] : no[i - 5];
        char *envp[] = {var, NULL};
        snprintf(var, sizeof(var), "FORGE_SLURM_TLS_VERIFY=%s", v);
        forge_config_t *cfg = load_ok(envp);
        cr_assert_eq(cfg->slurm_tls_verify, i < 5, "%s", v);
        forge_config_destroy(cfg);
    }
}

Test(config, every_api_version_accepted)
{
    const char *v[] = {"v0.0.41", "v0.0.42", "v0.0.43", "v0.0.44", "v0.0.45"};
    char var[64];

    for (int i = 0; i < 5; i++) {
        char *envp[] = {var, NULL};
        snprintf(var, sizeof(var), "FORGE_SLURM_REST_API_VERSION=%s", v[i]);
        forge_config_t *cfg = load_ok(envp);
        cr_assert_eq((int)cfg->slurm_api_version, i);
        cr_assert_str_eq(forge_api_version_name(cfg->slurm_api_version), v[i]);
        forge_config_destroy(cfg);
    }
}

Test(config, unknown_forge_variables_are_listed_not_fatal)
{
    char *envp[] = {"FORGE_POLL_INTERVAL=100", "FORGE_STACK_RUN=/tmp/x",
                    "FORGE_TEST_CRASH_POINT=x", "OTHER=1", NULL};
    forge_config_t *cfg = load_ok(envp);

    cr_assert_eq(cfg->unknown_count, 1);
    cr_assert_str_eq(cfg->unknown_vars[0], "FORGE_POLL_INTERVAL");
    forge_config_destroy(cfg);
}

/* The retry policy's defaults (retry.h): one try, the infrastructure's
 * causes but preemption, 30 s, failed nodes excluded; and every value. */
Test(config, retry_policy_defaults_and_values)
{
    char *none[] = {NULL};
    char *envp[] = {
        "FORGE_RETRY_MAX_TRIES=3", "FORGE_RETRY_ON= preempted , failed,timeout",
        "FORGE_RETRY_BACKOFF_S=0", "FORGE_RETRY_EXCLUDE_FAILED_NODES=no", NULL};
    forge_config_t *cfg = load_ok(none);

    cr_assert_eq(cfg->retry.max_tries, 1);
    cr_assert_eq(cfg->retry.causes, FORGE_RETRY_NODE_FAIL |
                                        FORGE_RETRY_BOOT_FAIL |
                                        FORGE_RETRY_LAUNCH_FAILED);
    cr_assert_eq(cfg->retry.backoff_s, 30);
    cr_assert(cfg->retry.exclude_failed_nodes);
    forge_config_destroy(cfg);
    cfg = load_ok(envp);
    cr_assert_eq(cfg->retry.max_tries, 3);
    cr_assert_eq(cfg->retry.causes, FORGE_RETRY_PREEMPTED | FORGE_RETRY_FAILED |
                                        FORGE_RETRY_TIMEOUT);
    cr_assert_eq(cfg->retry.backoff_s, 0);
    cr_assert_not(cfg->retry.exclude_failed_nodes);
    forge_config_destroy(cfg);
}

/* A cause that is not one: named, with the ones there are. */
Test(config, a_bad_retry_cause_is_named)
{
    char *envp[] = {"FORGE_RETRY_ON=node_fail, oom", NULL};
    forge_config_t *cfg = NULL;
    forge_error_t err = {0};

    cr_assert_eq(forge_config_load(envp, &cfg, &err), FORGE_ECONFIG);
    cr_assert_str_eq(err.field, "FORGE_RETRY_ON");
    cr_assert(strstr(err.message, "\"oom\" is not a cause"), "%s", err.message);
    cr_assert(strstr(err.message, "out_of_memory"), "%s", err.message);
}

/* Live logs (issue 29): each mode by name, and the bounds of the rest. */
Test(config, live_logs_values)
{
    char *off[] = {"FORGE_LOG_LIVE=off", "FORGE_LOG_LIVE_INTERVAL_MS=200",
                   "FORGE_LOG_LIVE_CHUNK_BYTES=4096",
                   "FORGE_LOG_LIVE_BUDGET_BYTES=4096", NULL};
    char *on[] = {"FORGE_LOG_LIVE=on", "FORGE_LOG_LIVE_INTERVAL_MS=60000",
                  "FORGE_LOG_LIVE_CHUNK_BYTES=131072",
                  "FORGE_LOG_LIVE_BUDGET_BYTES=1073741824", NULL};
    char *opt_in[] = {"FORGE_LOG_LIVE=opt-in", NULL};
    forge_config_t *cfg = load_ok(off);

    cr_assert_eq(cfg->log_live, FORGE_LOG_LIVE_OFF);
    cr_assert_eq(cfg->log_live_interval_ms, 200);
    cr_assert_eq(cfg->log_live_chunk_bytes, 4096);
    cr_assert_eq(cfg->log_live_budget_bytes, 4096);
    forge_config_destroy(cfg);
    cfg = load_ok(on);
    cr_assert_eq(cfg->log_live, FORGE_LOG_LIVE_ON);
    cr_assert_eq(cfg->log_live_interval_ms, 60000);
    cr_assert_eq(cfg->log_live_chunk_bytes, 131072);
    cr_assert_eq(cfg->log_live_budget_bytes, 1073741824);
    forge_config_destroy(cfg);
    cfg = load_ok(opt_in);
    cr_assert_eq(cfg->log_live, FORGE_LOG_LIVE_OPT_IN);
    forge_config_destroy(cfg);
    cr_assert_str_eq(forge_log_live_name(FORGE_LOG_LIVE_OFF), "off");
    cr_assert_str_eq(forge_log_live_name(FORGE_LOG_LIVE_OPT_IN), "opt-in");
    cr_assert_str_eq(forge_log_live_name(FORGE_LOG_LIVE_ON), "on");
    cr_assert_null(forge_log_live_name((forge_log_live_t)3));
}

/* A bad mode's message says which there are. */
Test(config, a_bad_live_logs_mode_names_the_modes)
{
    char *envp[] = {"FORGE_LOG_LIVE=yes", NULL};
    forge_config_t *cfg = NULL;
    forge_error_t err = {0};

    cr_assert_eq(forge_config_load(envp, &cfg, &err), FORGE_ECONFIG);
    cr_assert_str_eq(err.field, "FORGE_LOG_LIVE");
    cr_assert(strstr(err.message, "off, opt-in, on"), "%s", err.message);
}

/* FORGE_LOG_LIVE against a request's logs.live: off always wins, opt-in
 * wants a true, on takes all but a false. */
typedef struct live_case {
    forge_log_live_t mode;
    int live_logs;
    bool wanted;
} live_case_t;

static live_case_t live_cases[] = {
    {FORGE_LOG_LIVE_OFF, FORGE_LIVE_LOGS_UNSET, false},
    {FORGE_LOG_LIVE_OFF, FORGE_LIVE_LOGS_FALSE, false},
    {FORGE_LOG_LIVE_OFF, FORGE_LIVE_LOGS_TRUE, false},
    {FORGE_LOG_LIVE_OPT_IN, FORGE_LIVE_LOGS_UNSET, false},
    {FORGE_LOG_LIVE_OPT_IN, FORGE_LIVE_LOGS_FALSE, false},
    {FORGE_LOG_LIVE_OPT_IN, FORGE_LIVE_LOGS_TRUE, true},
    {FORGE_LOG_LIVE_ON, FORGE_LIVE_LOGS_UNSET, true},
    {FORGE_LOG_LIVE_ON, FORGE_LIVE_LOGS_FALSE, false},
    {FORGE_LOG_LIVE_ON, FORGE_LIVE_LOGS_TRUE, true},
    /* out of range: above true is true, below unset is unset */
    {FORGE_LOG_LIVE_OPT_IN, 7, true},
    {FORGE_LOG_LIVE_ON, -5, true},
    {FORGE_LOG_LIVE_OFF, 7, false},
};

ParameterizedTestParameters(config, live_logs_decision)
{
    return cr_make_param_array(live_case_t, live_cases,
                               sizeof(live_cases) / sizeof(live_cases[0]));
}

ParameterizedTest(live_case_t *c, config, live_logs_decision)
{
    forge_config_t cfg = {.log_live = c->mode};

    cr_assert_eq(forge_live_logs_wanted(&cfg, c->live_logs), c->wanted,
                 "FORGE_LOG_LIVE=%s, logs.live %d",
                 forge_log_live_name(c->mode), c->live_logs);
}

/* A configuration that says nothing sane tails nothing. */
Test(config, live_logs_decision_without_a_mode)
{
    forge_config_t cfg = {.log_live = (forge_log_live_t)3};

    cr_assert_not(forge_live_logs_wanted(NULL, FORGE_LIVE_LOGS_TRUE));
    cr_assert_not(forge_live_logs_wanted(&cfg, FORGE_LIVE_LOGS_TRUE));
    cfg.log_live = (forge_log_live_t)-1;
    cr_assert_not(forge_live_logs_wanted(&cfg, FORGE_LIVE_LOGS_UNSET));
}

/* ---- refused values: each names its variable ------------------------- */

/* Arrays, not pointers: Criterion runs each case in a fresh process where
 * the parent's pointers mean nothing. */
typedef struct bad_case {
    char env[3][96];
    char variable[64];
} bad_case_t;

static bad_case_t bad_cases[] = {
    {{"FORGE_DEFAULT_FLEET_KIND=kubernetes"}, "FORGE_DEFAULT_FLEET_KIND"},
    {{"FORGE_SLURM_REST_URL=slurm:6820"}, "FORGE_SLURM_REST_URL"},
    {{"FORGE_SLURM_REST_URL=ftp://slurm"}, "FORGE_SLURM_REST_URL"},
    {{"FORGE_SLURM_REST_URL=http://"}, "FORGE_SLURM_REST_URL"},
    {{"FORGE_SLURM_REST_URL=http://h/x?y=1"}, "FORGE_SLURM_REST_URL"},
    {{"FORGE_SLURM_REST_URL=http://h x"}, "FORGE_SLURM_REST_URL"},
    {{"FORGE_SLURM_REST_URL=http://a:1,,http://b:2"}, "FORGE_SLURM_REST_URL"},
    {{"FORGE_SLURM_REST_URL=http://a:1,"}, "FORGE_SLURM_REST_URL"},
    {{"FORGE_SLURM_REST_URL=http://a:1,ftp://b"}, "FORGE_SLURM_REST_URL"},
    {{"FORGE_SLURM_REST_API_VERSION=v0.0.40"}, "FORGE_SLURM_REST_API_VERSION"},
    {{"FORGE_SLURM_REST_API_VERSION=0.0.43"}, "FORGE_SLURM_REST_API_VERSION"},
    {{"FORGE_SLURM_REST_USER=-root"}, "FORGE_SLURM_REST_USER"},
    {{"FORGE_SLURM_REST_USER=a b"}, "FORGE_SLURM_REST_USER"},
    {{"FORGE_SLURM_JWT_FILE=jwt.txt"}, "FORGE_SLURM_JWT_FILE"},
    {{"FORGE_SLURM_JWT_FILE=/run/a", "FORGE_SLURM_JWT_KEY_FILE=/run/b"},
     "FORGE_SLURM_JWT_KEY_FILE"},
    {{"FORGE_SLURM_JWT_KEY_FILE=/run/../etc/key"}, "FORGE_SLURM_JWT_KEY_FILE"},
    {{"FORGE_SLURM_TLS_VERIFY=maybe"}, "FORGE_SLURM_TLS_VERIFY"},
    {{"FORGE_SLURM_TLS_CA_FILE=ca.pem"}, "FORGE_SLURM_TLS_CA_FILE"},
    {{"FORGE_SLURM_PARTITION=gpu;rm"}, "FORGE_SLURM_PARTITION"},
    {{"FORGE_SLURM_ACCOUNT=$(id)"}, "FORGE_SLURM_ACCOUNT"},
    {{"FORGE_SLURM_QOS=q q"}, "FORGE_SLURM_QOS"},
    {{"FORGE_SLURM_DEFAULT_TIME_LIMIT=0"}, "FORGE_SLURM_DEFAULT_TIME_LIMIT"},
    {{"FORGE_SLURM_DEFAULT_TIME_LIMIT=10m"}, "FORGE_SLURM_DEFAULT_TIME_LIMIT"},
    {{"FORGE_SLURM_DEFAULT_TIME_LIMIT=99999999999999999999"},
     "FORGE_SLURM_DEFAULT_TIME_LIMIT"},
    {{"FORGE_SLURM_RUNTIME_PROFILE=docker"}, "FORGE_SLURM_RUNTIME_PROFILE"},
    {{"FORGE_STORAGE_ROOT=relative/path"}, "FORGE_STORAGE_ROOT"},
    {{"FORGE_STORAGE_ROOT=/a/./b"}, "FORGE_STORAGE_ROOT"},
    {{"FORGE_STORAGE_ROOT=/a//b"}, "FORGE_STORAGE_ROOT"},
    {{"FORGE_SLURM_STORAGE_ROOT=/lustre"}, "FORGE_STORAGE_ROOT"},
    {{"FORGE_SLURM_STORAGE_ROOT=lustre", "FORGE_STORAGE_ROOT=/s"},
     "FORGE_SLURM_STORAGE_ROOT"},
    {{"FORGE_RUNTIME_ROOT=runtimes"}, "FORGE_RUNTIME_ROOT"},
    {{"FORGE_MOUNT_ALLOW=/data:models"}, "FORGE_MOUNT_ALLOW"},
    {{"FORGE_MOUNT_ALLOW=/data/../etc"}, "FORGE_MOUNT_ALLOW"},
    {{"FORGE_GPU_SERIES_FILE=series.json"}, "FORGE_GPU_SERIES_FILE"},
    {{"FORGE_STATE_KEY_FILE=state.key"}, "FORGE_STATE_KEY_FILE"},
    {{"FORGE_STATE_KEY_FILE_PREVIOUS=/run/../old.key"},
     "FORGE_STATE_KEY_FILE_PREVIOUS"},
    {{"FORGE_KAFKA_BROKERS=localhost"}, "FORGE_KAFKA_BROKERS"},
    {{"FORGE_KAFKA_BROKERS=k1:9092,k2"}, "FORGE_KAFKA_BROKERS"},
    {{"FORGE_KAFKA_BROKERS=k1:99999"}, "FORGE_KAFKA_BROKERS"},
    {{"FORGE_KAFKA_BROKERS=k1:0"}, "FORGE_KAFKA_BROKERS"},
    {{"FORGE_KAFKA_GROUP_ID=.hidden"}, "FORGE_KAFKA_GROUP_ID"},
    {{"FORGE_KAFKA_TOPIC_REQUESTS=bad topic"}, "FORGE_KAFKA_TOPIC_REQUESTS"},
    {{"FORGE_KAFKA_TOPIC_STATUS=.."}, "FORGE_KAFKA_TOPIC_STATUS"},
    {{"FORGE_KAFKA_TOPIC_LOGS=a/b"}, "FORGE_KAFKA_TOPIC_LOGS"},
    {{"FORGE_KAFKA_TOPIC_STATE=a:b"}, "FORGE_KAFKA_TOPIC_STATE"},
    {{"FORGE_KAFKA_TOPIC_DLQ=a b"}, "FORGE_KAFKA_TOPIC_DLQ"},
    {{"FORGE_KAFKA_PROP_enable_auto_commit=true"},
     "FORGE_KAFKA_PROP_enable_auto_commit"},
    {{"FORGE_KAFKA_PROP_TRANSACTIONAL_ID=x"},
     "FORGE_KAFKA_PROP_TRANSACTIONAL_ID"},
    {{"FORGE_KAFKA_PROP_isolation_level=read_uncommitted"},
     "FORGE_KAFKA_PROP_isolation_level"},
    {{"FORGE_KAFKA_PROP_=x"}, "FORGE_KAFKA_PROP_"},
    {{"FORGE_KAFKA_PROP_a-b=x"}, "FORGE_KAFKA_PROP_a-b"},
    {{"FORGE_KAFKA_PROP_acks="}, "FORGE_KAFKA_PROP_acks"},
    {{"FORGE_KAFKA_PROP_group_protocol=consumer"},
     "FORGE_KAFKA_PROP_group_protocol"},
    {{"FORGE_KAFKA_GROUP_PROTOCOL=CONSUMER"}, "FORGE_KAFKA_GROUP_PROTOCOL"},
    {{"FORGE_KAFKA_GROUP_PROTOCOL=cooperative-sticky"},
     "FORGE_KAFKA_GROUP_PROTOCOL"},
    {{"FORGE_KAFKA_GROUP_PROTOCOL=consumer",
      "FORGE_KAFKA_PROP_SESSION_TIMEOUT_MS=6000"},
     "FORGE_KAFKA_GROUP_PROTOCOL"},
    {{"FORGE_KAFKA_GROUP_PROTOCOL=consumer",
      "FORGE_KAFKA_PROP_heartbeat_interval_ms=1000"},
     "FORGE_KAFKA_GROUP_PROTOCOL"},
    {{"FORGE_WORKER_ID=worker 1"}, "FORGE_WORKER_ID"},
    {{"FORGE_POLL_INTERVAL_MS=50"}, "FORGE_POLL_INTERVAL_MS"},
    {{"FORGE_SLURM_MAX_CONNECTIONS=0"}, "FORGE_SLURM_MAX_CONNECTIONS"},
    {{"FORGE_SLURM_MAX_CONNECTIONS=65"}, "FORGE_SLURM_MAX_CONNECTIONS"},
    {{"FORGE_SLURM_MAX_CONNECTIONS=four"}, "FORGE_SLURM_MAX_CONNECTIONS"},
    {{"FORGE_SLURM_MAX_RPS=-1"}, "FORGE_SLURM_MAX_RPS"},
    {{"FORGE_SLURM_MAX_RPS=1.5"}, "FORGE_SLURM_MAX_RPS"},
    {{"FORGE_POLL_INTERVAL_MS=1e3"}, "FORGE_POLL_INTERVAL_MS"},
    {{"FORGE_POLL_INTERVAL_MS= 500"}, "FORGE_POLL_INTERVAL_MS"},
    {{"FORGE_LOST_GRACE_S=-1"}, "FORGE_LOST_GRACE_S"},
    {{"FORGE_HTTP_LISTEN=8080"}, "FORGE_HTTP_LISTEN"},
    {{"FORGE_HTTP_LISTEN=:8080"}, "FORGE_HTTP_LISTEN"},
    {{"FORGE_HEALTH_STALL_S=1"}, "FORGE_HEALTH_STALL_S"},
    {{"FORGE_HEALTH_STALL_S=5m"}, "FORGE_HEALTH_STALL_S"},
    {{"FORGE_READY_SLURM_S=2"}, "FORGE_READY_SLURM_S"},
    {{"FORGE_READY_SLURM_S=3601"}, "FORGE_READY_SLURM_S"},
    {{"FORGE_LOG_LEVEL=verbose"}, "FORGE_LOG_LEVEL"},
    {{"FORGE_LOG_FORMAT=xml"}, "FORGE_LOG_FORMAT"},
    {{"FORGE_SLURM_PARTITION=gpu\nrm"}, "FORGE_SLURM_PARTITION"},
    {{"FORGE_RETRY_MAX_TRIES=0"}, "FORGE_RETRY_MAX_TRIES"},
    {{"FORGE_RETRY_MAX_TRIES=11"}, "FORGE_RETRY_MAX_TRIES"},
    {{"FORGE_RETRY_ON=node_fail,deadline"}, "FORGE_RETRY_ON"},
    {{"FORGE_RETRY_ON=NODE_FAIL"}, "FORGE_RETRY_ON"},
    {{"FORGE_RETRY_BACKOFF_S=601"}, "FORGE_RETRY_BACKOFF_S"},
    {{"FORGE_RETRY_BACKOFF_S=-1"}, "FORGE_RETRY_BACKOFF_S"},
    {{"FORGE_RETRY_EXCLUDE_FAILED_NODES=sometimes"},
     "FORGE_RETRY_EXCLUDE_FAILED_NODES"},
    {{"FORGE_LOG_LIVE=true"}, "FORGE_LOG_LIVE"},
    {{"FORGE_LOG_LIVE=OFF"}, "FORGE_LOG_LIVE"},
    {{"FORGE_LOG_LIVE=opt_in"}, "FORGE_LOG_LIVE"},
    {{"FORGE_LOG_LIVE=optin"}, "FORGE_LOG_LIVE"},
    {{"FORGE_LOG_LIVE=on "}, "FORGE_LOG_LIVE"},
    {{"FORGE_LOG_LIVE_INTERVAL_MS=199"}, "FORGE_LOG_LIVE_INTERVAL_MS"},
    {{"FORGE_LOG_LIVE_INTERVAL_MS=60001"}, "FORGE_LOG_LIVE_INTERVAL_MS"},
    {{"FORGE_LOG_LIVE_INTERVAL_MS=1s"}, "FORGE_LOG_LIVE_INTERVAL_MS"},
    {{"FORGE_LOG_LIVE_CHUNK_BYTES=4095"}, "FORGE_LOG_LIVE_CHUNK_BYTES"},
    {{"FORGE_LOG_LIVE_CHUNK_BYTES=131073"}, "FORGE_LOG_LIVE_CHUNK_BYTES"},
    {{"FORGE_LOG_LIVE_CHUNK_BYTES=64k"}, "FORGE_LOG_LIVE_CHUNK_BYTES"},
    {{"FORGE_LOG_LIVE_BUDGET_BYTES=4095"}, "FORGE_LOG_LIVE_BUDGET_BYTES"},
    {{"FORGE_LOG_LIVE_BUDGET_BYTES=1073741825"}, "FORGE_LOG_LIVE_BUDGET_BYTES"},
    {{"FORGE_LOG_LIVE_BUDGET_BYTES=99999999999999999999"},
     "FORGE_LOG_LIVE_BUDGET_BYTES"},
    {{"FORGE_LOG_LIVE_BUDGET_BYTES=-1"}, "FORGE_LOG_LIVE_BUDGET_BYTES"},
};

ParameterizedTestParameters(config, refused_values)
{
    return cr_make_param_array(bad_case_t, bad_cases,
                               sizeof(bad_cases) / sizeof(bad_cases[0]));
}

ParameterizedTest(bad_case_t *c, config, refused_values)
{
    char *envp[4] = {c->env[0][0] ? c->env[0] : NULL,
                     c->env[1][0] ? c->env[1] : NULL,
                     c->env[2][0] ? c->env[2] : NULL, NULL};
    forge_config_t *cfg = (forge_config_t *)0x1;
    forge_error_t err = {0};
    forge_rc_t rc = forge_config_load(envp, &cfg, &err);

    cr_assert_eq(rc, FORGE_ECONFIG, "%s accepted", c->env[0]);
    cr_assert_null(cfg);
    cr_assert_str_eq(err.field, c->variable, "%s: field %s", c->env[0],
                     err.field);
    cr_assert(strstr(err.message, c->variable) != NULL,
              "message must name %s: %s", c->variable, err.message);
}

/* Each string check says what the value must be, in its own words, and
 * shows the value where it is not a name. */
Test(config, string_refusals_say_what_is_expected)
{
    static const struct {
        char *env, *message;
    } cases[] = {
        {"FORGE_SLURM_REST_USER=a b", "FORGE_SLURM_REST_USER must match "
                                      "^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$"},
        {"FORGE_KAFKA_GROUP_ID=a@b",
         "FORGE_KAFKA_GROUP_ID must match ^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$"},
        {"FORGE_KAFKA_TOPIC_LOGS=a/b",
         "FORGE_KAFKA_TOPIC_LOGS is not a valid Kafka topic name "
         "([A-Za-z0-9._-], 1..249 characters)"},
        {"FORGE_SLURM_REST_URL=http://h/?q",
         "FORGE_SLURM_REST_URL must be an http:// or https:// URL with a "
         "host and no query, or several separated by commas (got "
         "\"http://h/?q\")"},
        {"FORGE_KAFKA_BROKERS=h",
         "FORGE_KAFKA_BROKERS must be host:port[,host:port...] (got \"h\")"},
        {"FORGE_HTTP_LISTEN=h:x",
         "FORGE_HTTP_LISTEN must be host:port (got \"h:x\")"},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char *envp[] = {cases[i].env, NULL};
        forge_config_t *cfg = NULL;
        forge_error_t err = {0};

        cr_assert_eq(forge_config_load(envp, &cfg, &err), FORGE_ECONFIG,
                     "%s accepted", cases[i].env);
        cr_assert_str_eq(err.message, cases[i].message);
    }
}

Test(config, a_base_url_loses_its_trailing_slashes)
{
    char *envp[] = {"FORGE_SLURM_REST_URL=http://h:6820//", NULL};
    forge_config_t *cfg = load_ok(envp);

    cr_assert_str_eq(cfg->slurm_rest_url, "http://h:6820");
    forge_config_destroy(cfg);
}

/* Several endpoints (slurm/endpoints.h): each loses its own. */
Test(config, each_endpoint_loses_its_trailing_slashes)
{
    char *envp[] = {"FORGE_SLURM_REST_URL=https://a:6820/,https://b:6820//,"
                    "http://127.0.0.1:6820",
                    NULL};
    forge_config_t *cfg = load_ok(envp);

    cr_assert_str_eq(cfg->slurm_rest_url,
                     "https://a:6820,https://b:6820,http://127.0.0.1:6820");
    forge_config_destroy(cfg);
}

Test(config, oversized_value_refused)
{
    static char var[8192];
    char *envp[] = {var, NULL};
    forge_config_t *cfg = NULL;
    forge_error_t err = {0};

    memset(var, 'a', sizeof(var) - 1);
    memcpy(var, "FORGE_SLURM_QOS=", 16);
    cr_assert_eq(forge_config_load(envp, &cfg, &err), FORGE_ECONFIG);
    cr_assert_str_eq(err.field, "FORGE_SLURM_QOS");
}

/* ---- what each command needs ----------------------------------------- */

Test(config, require_names_the_missing_variable)
{
    char *none[] = {NULL};
    char *no_auth[] = {"FORGE_SLURM_REST_URL=http://h:1",
                       "FORGE_SLURM_REST_USER=u", NULL};
    char *full[] = {
        "FORGE_SLURM_REST_URL=http://h:1", "FORGE_SLURM_REST_USER=u",
        "FORGE_SLURM_JWT_KEY_FILE=/k",     "FORGE_STORAGE_ROOT=/s",
        "FORGE_KAFKA_BROKERS=k:1",         NULL};
    struct {
        char **envp;
        unsigned needs;
        const char *missing;
    } cases[] = {
        {none, FORGE_NEED_SLURM, "FORGE_SLURM_REST_URL"},
        {none, FORGE_NEED_STORAGE, "FORGE_STORAGE_ROOT"},
        {none, FORGE_NEED_KAFKA, "FORGE_KAFKA_BROKERS"},
        {no_auth, FORGE_NEED_SLURM, "FORGE_SLURM_JWT_FILE"},
        {full, FORGE_NEED_STATE_KEY, "FORGE_STATE_KEY_FILE"},
        {full, FORGE_NEED_SLURM | FORGE_NEED_STORAGE | FORGE_NEED_KAFKA, NULL},
        {none, 0, NULL},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        forge_config_t *cfg = load_ok(cases[i].envp);
        forge_error_t err = {0};
        forge_rc_t rc = forge_config_require(cfg, cases[i].needs, &err);
        if (cases[i].missing) {
            cr_assert_eq(rc, FORGE_ECONFIG, "case %zu", i);
            cr_assert_str_eq(err.field, cases[i].missing);
        } else {
            cr_assert_eq(rc, FORGE_OK, "case %zu: %s", i, err.message);
        }
        forge_config_destroy(cfg);
    }
}

/* The rows as docs/CONFIGURATION.md reads them: every variable the loader
 * reads is described, with what the page needs, and an integer's default
 * lies in its range. */
Test(config, rows_describe_every_variable)
{
    forge_config_var_t v;
    size_t n = 0;

    for (; forge_config_var(n, &v); n++) {
        cr_assert(v.name && !strncmp(v.name, "FORGE_", 6));
        cr_assert(v.type && v.doc && *v.doc && v.since && *v.since, "%s",
                  v.name);
        if (!strcmp(v.type, "integer") && v.def) {
            long d = strtol(v.def, NULL, 10);
            cr_assert(d >= v.min && d <= v.max, "%s", v.name);
        }
        if (!strcmp(v.type, "enum"))
            cr_assert(v.names && v.names[0], "%s", v.name);
    }
    cr_assert_geq(n, 40);
    cr_assert(!forge_config_var(n, &v));
    cr_assert_str_eq(forge_config_owned_kafka_props()[0], "bootstrap.servers");
    cr_assert_str_eq(forge_config_foreign_prefixes()[0], "FORGE_STACK_");
}
