/* SPDX-License-Identifier: Apache-2.0 */
/*
 * config.h - every FORGE_* environment variable of the contract (docs/
 * CONTRACT.md section 5) read once into one immutable struct.
 *
 * Reading is pure: no file is opened, no network touched; files named here
 * (JWT, key, series catalogue) are checked by the modules that use them.
 * A bad value is an FORGE_ECONFIG error naming the variable; `forge-worker
 * run` turns it into exit 78. Variables a command needs but does not find are
 * reported by forge_config_require(), so `validate` runs without Kafka set.
 */
#ifndef FORGE_CONFIG_H
#define FORGE_CONFIG_H

#include "base/error.h"
#include "retry/retry.h"

#include <stdbool.h>
#include <stddef.h>

/* slurmrestd API versions this worker speaks, oldest first. */
typedef enum forge_api_version {
    FORGE_API_V0_0_41,
    FORGE_API_V0_0_42,
    FORGE_API_V0_0_43,
    FORGE_API_V0_0_44,
    FORGE_API_V0_0_45,
    FORGE_API__COUNT
} forge_api_version_t;

#define FORGE_API_DEFAULT FORGE_API_V0_0_43

typedef enum forge_runtime_profile {
    FORGE_PROFILE_ENROOT_PYXIS,
    FORGE_PROFILE_APPTAINER,
} forge_runtime_profile_t;

typedef enum forge_log_level {
    FORGE_LOG_DEBUG,
    FORGE_LOG_INFO,
    FORGE_LOG_WARN,
    FORGE_LOG_ERROR,
} forge_log_level_t;

typedef enum forge_log_format {
    FORGE_LOG_JSON,
    FORGE_LOG_TEXT,
} forge_log_format_t;

/* FORGE_LOG_LIVE (issue 29): which launches' output is tailed live onto
 * the logs topic while they run. */
typedef enum forge_log_live {
    FORGE_LOG_LIVE_OFF,    /* none, whatever a request asks */
    FORGE_LOG_LIVE_OPT_IN, /* those whose request says logs.live: true */
    FORGE_LOG_LIVE_ON,     /* all but those that say logs.live: false */
} forge_log_live_t;

/* A request's logs.live (request.h, held.h), a tri-state: absent (the
 * fleet's FORGE_LOG_LIVE decides), false, true. */
/* FORGE_KAFKA_GROUP_PROTOCOL: the consumer group protocol (kafka.c). */
enum {
    FORGE_KAFKA_GROUP_CLASSIC = 0,  /* classic, cooperative-sticky */
    FORGE_KAFKA_GROUP_CONSUMER = 1, /* KIP-848: the broker assigns */
};

enum {
    FORGE_LIVE_LOGS_UNSET = -1,
    FORGE_LIVE_LOGS_FALSE = 0,
    FORGE_LIVE_LOGS_TRUE = 1,
};

/* One FORGE_KAFKA_PROP_<name> pair, name already rewritten to dots. */
typedef struct forge_kafka_prop {
    char *name;
    char *value;
} forge_kafka_prop_t;

/* Everything is owned by the struct; free with forge_config_destroy(). */
typedef struct forge_config {
    char *fleet_kind; /* FORGE_DEFAULT_FLEET_KIND: always "slurm" here */

    char *slurm_rest_url;
    forge_api_version_t slurm_api_version;
    char *slurm_user;
    char *slurm_jwt_file;     /* read a token ...               */
    char *slurm_jwt_key_file; /* ... or mint them: exactly one  */
    bool slurm_tls_verify;
    char *slurm_tls_ca_file;
    char *slurm_tls_cert_file; /* a client certificate (mTLS) ... */
    char *slurm_tls_key_file;  /* ... and its key: both or neither */
    char *slurm_partition;     /* NULL: the cluster's default partition */
    char *slurm_account;
    char *slurm_qos;
    int slurm_default_time_limit_min;
    /* Submits in parallel: this many lanes, each its own slurmrestd
     * connection (submit.h). */
    int slurm_max_connections;
    /* Requests per second to slurmrestd, all clients of the process
     * together (slurm/budget.h); 0: no budget. */
    int slurm_max_rps;
    forge_runtime_profile_t runtime_profile;

    char *storage_root;       /* as this worker sees it */
    char *slurm_storage_root; /* the same storage as the jobs see it */
    char *runtime_root;       /* image registry root */
    char **mount_allow;       /* NULL-terminated extra mount prefixes */
    size_t mount_allow_count;
    char *gpu_series_file;
    char *tenants_file; /* NULL: no tenants, every job as slurm_user */

    /* The state topic's sealing keys (seal.h): opened by seal.c. */
    char *state_key_file;          /* seals and opens */
    char *state_key_file_previous; /* opens only: rotation */

    char *kafka_brokers;
    char *kafka_group_id;
    int kafka_group_protocol; /* FORGE_KAFKA_GROUP_* */
    char *topic_requests;
    char *topic_status;
    char *topic_logs;
    char *topic_state;
    char *topic_dlq;
    /* Slurm's jobcomp/kafka records (issue 28: push completion); NULL:
     * push off, the poll alone follows the jobs */
    char *topic_jobcomp;
    int dlq_max_bytes; /* a DLQ record's key, value and headers at most */
    forge_kafka_prop_t *kafka_props;
    size_t kafka_prop_count;
    /* Kafka's security (issue 27): each sets one librdkafka property
     * (config_security.h), never also given by a FORGE_KAFKA_PROP_*. */
    char *kafka_security_protocol; /* librdkafka's spelling: "sasl_ssl" */
    char *kafka_sasl_mechanism;    /* "SCRAM-SHA-512", ... */
    char *kafka_sasl_username;
    char *kafka_sasl_password_file;
    char *kafka_ssl_ca_file;
    char *kafka_ssl_cert_file;
    char *kafka_ssl_key_file;
    char *kafka_ssl_key_password_file;
    /* The password files' contents: NULL until forge_config_read_secrets
     * reads them (registered secrets; wiped by forge_config_destroy). */
    char *kafka_sasl_password;
    char *kafka_ssl_key_password;
    bool prop_secrets_registered; /* the pass-through's secrets, too */

    char *worker_id;
    int poll_interval_ms;
    int lost_grace_s;
    /* how long a requeued job's next run waits for its credentials */
    int requeue_credentials_wait_s;
    /* after the clean of an interrupted submit, when to look for a late
     * job its tag finds (submit.c: held, never started) and cancel it */
    int late_job_sweep_s;
    /* the fleet's retry policy (FORGE_RETRY_*): what a request's `retry`
     * overrides key by key (retry.h) */
    forge_retry_policy_t retry;
    char *http_listen;  /* NULL: no health/metrics listener */
    int health_stall_s; /* /healthz: the loop's pass at most this old */
    int ready_slurm_s;  /* /readyz: a slurmrestd answer at most this old */
    forge_log_level_t log_level;
    forge_log_format_t log_format;
    /* live logs (issue 29): whose output is tailed (forge_live_logs_wanted),
     * at most one chunk per launch per interval, a chunk's file bytes at
     * most, a launch's file bytes per minute at most (beyond: skipped) */
    forge_log_live_t log_live;
    int log_live_interval_ms;
    int log_live_chunk_bytes;
    int log_live_budget_bytes;

    /* FORGE_* names set in the environment that this version does not
     * know: worth a warning at start (typos). NULL-terminated. */
    char **unknown_vars;
    size_t unknown_count;
} forge_config_t;

/* What a command needs beyond the always-checked values. */
enum {
    FORGE_NEED_SLURM = 1 << 0,     /* REST URL, user, one auth source */
    FORGE_NEED_STORAGE = 1 << 1,   /* storage root */
    FORGE_NEED_KAFKA = 1 << 2,     /* brokers */
    FORGE_NEED_SERIES = 1 << 3,    /* the GPU series catalogue file */
    FORGE_NEED_STATE_KEY = 1 << 4, /* the state topic's sealing key */
};

/*
 * Reads configuration from envp (a NULL-terminated "NAME=value" array such
 * as environ). On success *out is new and owned by the caller. On failure
 * *out is NULL and err names the first bad variable.
 */
forge_rc_t forge_config_load(char *const *envp, forge_config_t **out,
                             forge_error_t *err) FORGE_WARN_UNUSED;

/* Checks that the variables behind the FORGE_NEED_* bits are set. */
forge_rc_t forge_config_require(const forge_config_t *cfg, unsigned needs,
                                forge_error_t *err) FORGE_WARN_UNUSED;

void forge_config_destroy(forge_config_t *cfg); /* NULL-safe */

/*
 * The table's rows as the documentation reads them (docs/CONFIGURATION.md is
 * printed from them by tests/tools/config_doc.c: scripts/config-doc). Every
 * string is static; NULL where a row has nothing to say.
 */
typedef struct forge_config_var {
    const char *name;         /* "FORGE_POLL_INTERVAL_MS" */
    const char *type;         /* "integer", "absolute path", "enum", ... */
    const char *def;          /* the default as written, NULL: none */
    const char *def_note;     /* a default derived from other values, or NULL */
    const char *allowed;      /* what a value must be, in words */
    long min, max;            /* an integer's range (type "integer") */
    const char *const *names; /* an enum's values, NULL-terminated */
    const char *doc;          /* what it changes: a sentence or two */
    const char *since;        /* the commit (and issue) that added it */
} forge_config_var_t;

/* Row i of the table into *out; false past the last row. */
bool forge_config_var(size_t i, forge_config_var_t *out);

/* The prefix of FORGE_KAFKA_PROP_<name>, and the librdkafka properties it may
 * not set (NULL-terminated): the worker sets them itself. */
#define FORGE_KAFKA_PROP_PREFIX "FORGE_KAFKA_PROP_"
const char *const *forge_config_owned_kafka_props(void);

/* Prefixes of FORGE_* names that belong to the test stack and the test
 * builds, never warned about (NULL-terminated). */
const char *const *forge_config_foreign_prefixes(void);

/* "v0.0.43" for FORGE_API_V0_0_43; NULL if out of range. */
const char *forge_api_version_name(forge_api_version_t v);
const char *forge_runtime_profile_name(forge_runtime_profile_t p);
const char *forge_log_level_name(forge_log_level_t l);
/* "off", "opt-in", "on"; NULL if out of range. */
const char *forge_log_live_name(forge_log_live_t m);

/*
 * Whether a launch's output is tailed live (issue 29): cfg's FORGE_LOG_LIVE
 * against the launch's request's logs.live (FORGE_LIVE_LOGS_*: unset, false,
 * true). off: never; opt-in: only when it says true; on: unless it says
 * false. Pure. False for a NULL cfg; a live_logs above 1 counts as true,
 * below -1 as unset.
 */
bool forge_live_logs_wanted(const forge_config_t *cfg, int live_logs);

#endif
