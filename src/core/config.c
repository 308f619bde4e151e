/* SPDX-License-Identifier: Apache-2.0 */
/*
 * config.c - the table of FORGE_* variables and the rules that read them.
 *
 * One row per variable: its name, where it lands in forge_config_t, how it is
 * parsed and its default. Parsing walks the table once; checks that involve
 * two variables (auth source, storage roots) run after it. No globals, no
 * I/O: the same envp always gives the same result, which is what the unit
 * tests rely on.
 */
#include "core/config.h"
#include "core/text.h"
#include "core/util.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef enum var_kind {
    VAR_STR,      /* free text, no control characters */
    VAR_NAME,     /* Slurm / user name: [A-Za-z0-9._@-], <= 64 */
    VAR_ID,       /* worker / group id: [A-Za-z0-9][A-Za-z0-9._-]{0,63} */
    VAR_TOPIC,    /* Kafka topic name */
    VAR_ABSPATH,  /* absolute path, no "..", normalized */
    VAR_PATHLIST, /* ':'-separated absolute paths */
    VAR_URL,      /* http:// or https:// */
    VAR_BROKERS,  /* host:port[,host:port...] */
    VAR_HOSTPORT, /* host:port */
    VAR_INT,
    VAR_BOOL,
    VAR_ENUM,
} var_kind_t;

/*
 * A row also carries what the documentation says of it: docs/CONFIGURATION.md
 * is printed from this table (forge_config_var(), scripts/config-doc), so a
 * row without doc or since fails the generator, and a row added without the
 * page regenerated fails `scripts/config-doc --check`.
 */
typedef struct var_rule {
    const char *name;
    var_kind_t kind;
    size_t offset;             /* into forge_config_t */
    const char *default_value; /* NULL: unset unless given */
    long min, max;             /* VAR_INT */
    const char *const *names;  /* VAR_ENUM: index = enum value */
    const char *def_note;      /* a default finish() derives, in words */
    const char *doc;           /* what it changes: one or two sentences */
    const char *since;         /* the commit (and issue) that added it */
} var_rule_t;

static const char *const api_names[] = {"v0.0.41", "v0.0.42", "v0.0.43",
                                        "v0.0.44", "v0.0.45", NULL};
static const char *const profile_names[] = {"enroot-pyxis", "apptainer", NULL};
static const char *const level_names[] = {"debug", "info", "warn", "error",
                                          NULL};
static const char *const format_names[] = {"json", "text", NULL};

#define AT(field) offsetof(forge_config_t, field)

/* The seed's variables (docs/CONTRACT.md section 5) were all in the first
 * commit of the table. */
#define SEED  "cea768d (seed)"
#define FIRST "cea768d"

static const var_rule_t rules[] = {
    {.name = "FORGE_DEFAULT_FLEET_KIND",
     .kind = VAR_STR,
     .offset = AT(fleet_kind),
     .default_value = "slurm",
     .doc = "The fleet this worker serves. Only `slurm` is accepted: a worker "
            "deployed for another fleet stops at start instead of taking its "
            "launches.",
     .since = SEED},
    {.name = "FORGE_SLURM_REST_URL",
     .kind = VAR_URL,
     .offset = AT(slurm_rest_url),
     .doc = "slurmrestd's base URL (a trailing `/` is dropped). Required by "
            "every command that talks to slurmrestd.",
     .since = SEED},
    {.name = "FORGE_SLURM_REST_API_VERSION",
     .kind = VAR_ENUM,
     .offset = AT(slurm_api_version),
     .default_value = "v0.0.43",
     .names = api_names,
     .doc = "The slurmrestd API version spoken. At start (`run`, `ping`, "
            "`submit`) the worker asks `/openapi/v3` whether the server "
            "serves it, and names the versions it does serve if not.",
     .since = SEED},
    {.name = "FORGE_SLURM_REST_USER",
     .kind = VAR_NAME,
     .offset = AT(slurm_user),
     .doc = "The Slurm user the worker authenticates as (and, without "
            "tenants, the user every job runs as). Required with "
            "`FORGE_SLURM_REST_URL`.",
     .since = SEED},
    {.name = "FORGE_SLURM_JWT_FILE",
     .kind = VAR_ABSPATH,
     .offset = AT(slurm_jwt_file),
     .doc = "A file holding slurmrestd's JWT (readable by its owner only), "
            "re-read when it changes; the site renews it. Exactly one of it "
            "and `FORGE_SLURM_JWT_KEY_FILE` is needed to talk to Slurm.",
     .since = SEED},
    {.name = "FORGE_SLURM_JWT_KEY_FILE",
     .kind = VAR_ABSPATH,
     .offset = AT(slurm_jwt_key_file),
     .doc = "The cluster's HS256 key (readable by its owner only): the worker "
            "mints its own short-lived tokens instead of reading one. Not "
            "with `FORGE_SLURM_JWT_FILE`.",
     .since = FIRST},
    {.name = "FORGE_SLURM_TLS_VERIFY",
     .kind = VAR_BOOL,
     .offset = AT(slurm_tls_verify),
     .default_value = "1",
     .doc = "Whether slurmrestd's TLS certificate is verified (an `https://` "
            "URL).",
     .since = SEED},
    {.name = "FORGE_SLURM_TLS_CA_FILE",
     .kind = VAR_ABSPATH,
     .offset = AT(slurm_tls_ca_file),
     .doc = "A CA bundle to verify slurmrestd's certificate with, instead of "
            "the system's.",
     .since = FIRST},
    {.name = "FORGE_SLURM_PARTITION",
     .kind = VAR_NAME,
     .offset = AT(slurm_partition),
     .def_note = "the cluster's default partition",
     .doc = "The partition of a job whose request names none.",
     .since = SEED},
    {.name = "FORGE_SLURM_ACCOUNT",
     .kind = VAR_NAME,
     .offset = AT(slurm_account),
     .doc = "The Slurm account of a job whose request names none; unset: "
            "the user's default.",
     .since = FIRST},
    {.name = "FORGE_SLURM_QOS",
     .kind = VAR_NAME,
     .offset = AT(slurm_qos),
     .doc = "The QOS of a job whose request names none; unset: the "
            "default.",
     .since = FIRST},
    {.name = "FORGE_SLURM_DEFAULT_TIME_LIMIT",
     .kind = VAR_INT,
     .offset = AT(slurm_default_time_limit_min),
     .default_value = "60",
     .min = 1,
     .max = 525600,
     .doc = "A job's time limit in minutes when its request sets none.",
     .since = FIRST},
    {.name = "FORGE_SLURM_MAX_CONNECTIONS",
     .kind = VAR_INT,
     .offset = AT(slurm_max_connections),
     .default_value = "4",
     .min = 1,
     .max = 64,
     .doc = "How many submits, cancels and cleans go to slurmrestd at once: "
            "that many threads, each with its own keep-alive connection (one "
            "launch's steps stay in order). Keep the fleet's sum well below "
            "slurmrestd's connection cap (docs/CONTRACT.md section 5).",
     .since = "11828c6"},
    {.name = "FORGE_SLURM_MAX_RPS",
     .kind = VAR_INT,
     .offset = AT(slurm_max_rps),
     .default_value = "200",
     .min = 0,
     .max = 100000,
     .doc = "Requests per second to slurmrestd, every thread of the worker "
            "together (0: no budget); a request over budget waits, and the "
            "log says so. A submit is at least two requests, so submits top "
            "out at half of it.",
     .since = "11828c6"},
    {.name = "FORGE_SLURM_RUNTIME_PROFILE",
     .kind = VAR_ENUM,
     .offset = AT(runtime_profile),
     .default_value = "enroot-pyxis",
     .names = profile_names,
     .doc = "How the image runs: Enroot+Pyxis (`.sqsh` images, srun's "
            "`--container-*` options) or Apptainer (`.sif` images, "
            "`apptainer exec --cleanenv`).",
     .since = SEED},
    {.name = "FORGE_STORAGE_ROOT",
     .kind = VAR_ABSPATH,
     .offset = AT(storage_root),
     .doc = "The shared storage as this worker sees it: staging folders, "
            "archives, images and mount sources live under it. Required by "
            "`run`, `submit`, `validate` and `render`.",
     .since = SEED},
    {.name = "FORGE_SLURM_STORAGE_ROOT",
     .kind = VAR_ABSPATH,
     .offset = AT(slurm_storage_root),
     .def_note = "`FORGE_STORAGE_ROOT`",
     .doc = "The same storage as the jobs see it on the cluster, where the "
            "paths differ. Needs `FORGE_STORAGE_ROOT`.",
     .since = SEED},
    {.name = "FORGE_RUNTIME_ROOT",
     .kind = VAR_ABSPATH,
     .offset = AT(runtime_root),
     .def_note = "`$FORGE_STORAGE_ROOT/runtimes`",
     .doc = "Where images are looked up: a request's `image.path` is a file "
            "under it, never pulled.",
     .since = FIRST},
    {.name = "FORGE_MOUNT_ALLOW",
     .kind = VAR_PATHLIST,
     .offset = AT(mount_allow),
     .doc = "Roots besides the storage root that a request's mount sources "
            "may lie under (resolved, with no link on the way).",
     .since = FIRST},
    {.name = "FORGE_GPU_SERIES_FILE",
     .kind = VAR_ABSPATH,
     .offset = AT(gpu_series_file),
     .doc = "The GPU series catalogue (JSON: each series' Slurm constraint "
            "and GPUs per node). A pool whose series is unknown or has no "
            "constraint is refused. Required with `FORGE_STORAGE_ROOT`.",
     .since = FIRST},
    {.name = "FORGE_TENANTS_FILE",
     .kind = VAR_ABSPATH,
     .offset = AT(tenants_file),
     .doc = "Maps a request's `tenant` to a Slurm user and its uid/gid "
            "(`schemas/tenants.v1.json`); each launch runs as its tenant's "
            "user. Unset: every job runs as `FORGE_SLURM_REST_USER` "
            "(docs/SECURITY.md).",
     .since = "93303fa (issue 10)"},
    {.name = "FORGE_STATE_KEY_FILE",
     .kind = VAR_ABSPATH,
     .offset = AT(state_key_file),
     .doc = "32 raw bytes, readable by its owner only, that seal each "
            "launch's request in the state topic (AES-256-GCM). Required by "
            "`run`, `launches` and `reconcile`; every worker of a group needs "
            "the same.",
     .since = "978eeca"},
    {.name = "FORGE_STATE_KEY_FILE_PREVIOUS",
     .kind = VAR_ABSPATH,
     .offset = AT(state_key_file_previous),
     .doc = "An older key that only opens records sealed before a rotation "
            "(docs/CONTRACT.md section 5 says how to rotate).",
     .since = "978eeca"},
    {.name = "FORGE_KAFKA_BROKERS",
     .kind = VAR_BROKERS,
     .offset = AT(kafka_brokers),
     .doc = "The Kafka bootstrap brokers. Required by every command that "
            "reads or writes the topics.",
     .since = FIRST},
    {.name = "FORGE_KAFKA_GROUP_ID",
     .kind = VAR_ID,
     .offset = AT(kafka_group_id),
     .default_value = "forge-worker",
     .doc = "The workers' consumer group: every worker of one fleet has the "
            "same, and the recovery commands act on it.",
     .since = FIRST},
    {.name = "FORGE_KAFKA_TOPIC_REQUESTS",
     .kind = VAR_TOPIC,
     .offset = AT(topic_requests),
     .default_value = "forge.launch.requests",
     .doc = "The launch and cancel requests the platform sends.",
     .since = FIRST},
    {.name = "FORGE_KAFKA_TOPIC_STATUS",
     .kind = VAR_TOPIC,
     .offset = AT(topic_status),
     .default_value = "forge.launch.status",
     .doc = "Where the status events go.",
     .since = FIRST},
    {.name = "FORGE_KAFKA_TOPIC_LOGS",
     .kind = VAR_TOPIC,
     .offset = AT(topic_logs),
     .default_value = "forge.launch.logs",
     .doc = "Where the `logs_archived` events go.",
     .since = FIRST},
    {.name = "FORGE_KAFKA_TOPIC_STATE",
     .kind = VAR_TOPIC,
     .offset = AT(topic_state),
     .default_value = "forge.launch.state",
     .doc = "The compacted state topic, with the requests topic's partition "
            "count and `max.message.bytes=4194304`.",
     .since = FIRST},
    {.name = "FORGE_KAFKA_TOPIC_DLQ",
     .kind = VAR_TOPIC,
     .offset = AT(topic_dlq),
     .default_value = "forge.launch.dlq",
     .doc = "Where requests with no usable `launch_id` go.",
     .since = FIRST},
    {.name = "FORGE_DLQ_MAX_BYTES",
     .kind = VAR_INT,
     .offset = AT(dlq_max_bytes),
     .default_value = "1000000",
     .min = 65536,
     .max = 67108864,
     .doc = "A DLQ record's key, value and headers at most: a larger one is "
            "cut, its length and SHA-256 in headers, so the broker never "
            "refuses it.",
     .since = "2bbf499"},
    {.name = "FORGE_WORKER_ID",
     .kind = VAR_ID,
     .offset = AT(worker_id),
     .def_note = "the host name (made a valid id)",
     .doc = "This worker's name in events and logs; distinct per worker "
            "(the systemd unit and the Kubernetes Deployment set it).",
     .since = FIRST},
    {.name = "FORGE_POLL_INTERVAL_MS",
     .kind = VAR_INT,
     .offset = AT(poll_interval_ms),
     .default_value = "5000",
     .min = 200,
     .max = 3600000,
     .doc = "How often the owned jobs' states are asked of slurmrestd.",
     .since = FIRST},
    {.name = "FORGE_LOST_GRACE_S",
     .kind = VAR_INT,
     .offset = AT(lost_grace_s),
     .default_value = "600",
     .min = 0,
     .max = 604800,
     .doc = "How long a job neither slurmctld nor accounting knows is waited "
            "for before its launch is LOST.",
     .since = FIRST},
    {.name = "FORGE_LATE_JOB_SWEEP_S",
     .kind = VAR_INT,
     .offset = AT(late_job_sweep_s),
     .default_value = "300",
     .min = 1,
     .max = 86400,
     .doc = "After the clean of an interrupted submit, when the launch's "
            "owner looks once more for a late (held) job its tag finds, and "
            "cancels it.",
     .since = "2975fd7 (issue 11)"},
    {.name = "FORGE_HTTP_LISTEN",
     .kind = VAR_HOSTPORT,
     .offset = AT(http_listen),
     .def_note = "unset: no listener",
     .doc = "Where `run` serves `/healthz`, `/readyz` and `/metrics` "
            "(`[v6]:port` for IPv6; port 0 picks one, logged). A port in use "
            "is exit 1 (docs/OPERATING.md).",
     .since = FIRST},
    {.name = "FORGE_HEALTH_STALL_S",
     .kind = VAR_INT,
     .offset = AT(health_stall_s),
     .default_value = "300",
     .min = 2,
     .max = 3600,
     .doc = "`/healthz` turns 503 when the consume loop has not passed for "
            "longer. A commit given up, rewound and restored may hold the "
            "loop three quarters of `max.poll.interval.ms` (300 s by "
            "default): keep it at that or above, and lower both together.",
     .since = "9df4d91 (issue 14)"},
    {.name = "FORGE_READY_SLURM_S",
     .kind = VAR_INT,
     .offset = AT(ready_slurm_s),
     .default_value = "60",
     .min = 3,
     .max = 3600,
     .doc = "`/readyz` wants a slurmrestd answer at most this old; with "
            "nothing else to ask, the worker pings it every third of it.",
     .since = "9df4d91 (issue 14)"},
    {.name = "FORGE_LOG_LEVEL",
     .kind = VAR_ENUM,
     .offset = AT(log_level),
     .default_value = "info",
     .names = level_names,
     .doc = "The least level logged.",
     .since = FIRST},
    {.name = "FORGE_LOG_FORMAT",
     .kind = VAR_ENUM,
     .offset = AT(log_format),
     .default_value = "json",
     .names = format_names,
     .doc = "Log lines on stderr as JSON lines or text (secrets redacted "
            "either way: docs/SECURITY.md).",
     .since = FIRST},
};

#define KAFKA_PROP_PREFIX FORGE_KAFKA_PROP_PREFIX

/*
 * librdkafka properties the worker sets itself: overriding any of them would
 * break partition ownership or exactly-once, so they are refused.
 */
static const char *const owned_kafka_props[] = {
    "bootstrap.servers",
    "metadata.broker.list",
    "group.id",
    "group.instance.id",
    "enable.auto.commit",
    "enable.auto.offset.store",
    "isolation.level",
    "transactional.id",
    "enable.idempotence",
    "partition.assignment.strategy",
    "partitioner",
    "auto.offset.reset",
    NULL,
};

/* Prefixes of FORGE_* variables that belong to the test stack, not to us. */
static const char *const foreign_prefixes[] = {"FORGE_STACK_", "FORGE_TEST_",
                                               NULL};

#define MAX_VALUE_LEN 4096

/* ---- value checks ---------------------------------------------------- */

static bool is_name_char(int c, const char *extra)
{
    return isalnum(c) || (c && strchr(extra, c));
}

static bool is_topic_name(const char *s)
{
    size_t n = strlen(s);

    if (n == 0 || n > 249 || !strcmp(s, ".") || !strcmp(s, ".."))
        return false;
    for (size_t i = 0; i < n; i++)
        if (!is_name_char((unsigned char)s[i], "._-"))
            return false;
    return true;
}

/* Absolute, no "." or ".." component, no "//"; trailing '/' removed. */
static forge_rc_t check_abspath(char *path, const char *var, forge_error_t *err)
{
    size_t n = strlen(path);
    const char *p;

    if (path[0] != '/')
        return forge_error_set(err, FORGE_ECONFIG, var,
                               "%s must be an absolute path", var);
    while (n > 1 && path[n - 1] == '/')
        path[--n] = '\0';
    for (p = path; p && *p; p = strchr(p + 1, '/')) {
        const char *c = p + 1;
        size_t len = strcspn(c, "/");
        if ((len == 0 && c[0] == '/') || (len == 1 && c[0] == '.') ||
            (len == 2 && c[0] == '.' && c[1] == '.'))
            return forge_error_set(err, FORGE_ECONFIG, var,
                                   "%s must be a normalized path without "
                                   "'.', '..' or '//' (got \"%s\")",
                                   var, path);
    }
    return FORGE_OK;
}

/* host:port where host is a name, IPv4, or [IPv6]; port 1..65535 (0 ok
 * when allow_zero, for "pick one"). */
static bool is_hostport(const char *s, size_t len, bool allow_zero)
{
    const char *colon;
    char port[8];
    size_t host_len, port_len;
    char *end;
    long v;

    if (len == 0)
        return false;
    if (s[0] == '[') {
        const char *close = memchr(s, ']', len);
        if (!close || close + 1 >= s + len || close[1] != ':')
            return false;
        colon = close + 1;
    } else {
        colon = NULL;
        for (size_t i = 0; i < len; i++)
            if (s[i] == ':')
                colon = s + i;
    }
    if (!colon)
        return false;
    host_len = (size_t)(colon - s);
    port_len = len - host_len - 1;
    if (host_len == 0 || port_len == 0 || port_len >= sizeof(port))
        return false;
    for (size_t i = 0; i < host_len; i++)
        if (!is_name_char((unsigned char)s[i], ".-_[]:"))
            return false;
    memcpy(port, colon + 1, port_len);
    port[port_len] = '\0';
    errno = 0;
    v = strtol(port, &end, 10);
    return !errno && *end == '\0' && isdigit((unsigned char)port[0]) &&
           v >= (allow_zero ? 0 : 1) && v <= 65535;
}

static bool is_brokers(const char *s)
{
    while (*s) {
        size_t len = strcspn(s, ",");
        if (!is_hostport(s, len, false))
            return false;
        s += len;
        if (*s == ',')
            s++;
        else
            break;
    }
    return true;
}

static forge_rc_t parse_int(const char *v, const var_rule_t *r, int *out,
                            forge_error_t *err)
{
    char *end;
    long n;

    errno = 0;
    n = strtol(v, &end, 10);
    if (errno || end == v || *end != '\0' ||
        !(isdigit((unsigned char)v[0]) || v[0] == '-'))
        return forge_error_set(err, FORGE_ECONFIG, r->name,
                               "%s must be an integer (got \"%s\")", r->name,
                               v);
    if (n < r->min || n > r->max)
        return forge_error_set(err, FORGE_ECONFIG, r->name,
                               "%s must be between %ld and %ld (got %ld)",
                               r->name, r->min, r->max, n);
    *out = (int)n;
    return FORGE_OK;
}

static forge_rc_t parse_bool(const char *v, const var_rule_t *r, bool *out,
                             forge_error_t *err)
{
    static const char *const yes[] = {"1", "true", "yes", "on", NULL};
    static const char *const no[] = {"0", "false", "no", "off", NULL};

    for (size_t i = 0; yes[i]; i++) {
        if (!strcasecmp(v, yes[i]))
            return (*out = true), FORGE_OK;
        if (!strcasecmp(v, no[i]))
            return (*out = false), FORGE_OK;
    }
    return forge_error_set(err, FORGE_ECONFIG, r->name,
                           "%s must be 1 or 0 (true/false, yes/no, on/off; "
                           "got \"%s\")",
                           r->name, v);
}

static forge_rc_t parse_enum(const char *v, const var_rule_t *r, int *out,
                             forge_error_t *err)
{
    char allowed[256] = "";

    for (size_t i = 0; r->names[i]; i++) {
        if (!strcmp(v, r->names[i]))
            return (*out = (int)i), FORGE_OK;
        forge_strlcat(allowed, i ? ", " : "", sizeof(allowed));
        forge_strlcat(allowed, r->names[i], sizeof(allowed));
    }
    return forge_error_set(err, FORGE_ECONFIG, r->name,
                           "%s must be one of %s (got \"%s\")", r->name,
                           allowed, v);
}

/* ---- strings and lists ------------------------------------------------ */

static bool is_name(const char *v)
{
    return forge_text_is_name(v, "._@-", 64);
}

static bool is_id(const char *v)
{
    return forge_text_is_name(v, "._-", 64);
}

static bool is_base_url(const char *v)
{
    return forge_text_is_http_url(v, FORGE_URL_BASE);
}

static bool is_any_hostport(const char *v)
{
    return is_hostport(v, strlen(v), true);
}

/* The string kinds a check decides: "<VAR> <must>", and the value after
 * it when shown. */
static const struct string_rule {
    var_kind_t kind;
    bool (*ok)(const char *v);
    const char *must;
    bool show_value;
} string_rules[] = {
    {VAR_NAME, is_name, "must match ^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$", false},
    {VAR_ID, is_id, "must match ^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$", false},
    {VAR_TOPIC, is_topic_name,
     "is not a valid Kafka topic name ([A-Za-z0-9._-], 1..249 characters)",
     false},
    {VAR_URL, is_base_url,
     "must be an http:// or https:// URL with a host and no query", true},
    {VAR_BROKERS, is_brokers, "must be host:port[,host:port...]", true},
    {VAR_HOSTPORT, is_any_hostport, "must be host:port", true},
};

static forge_rc_t check_string(char *v, const var_rule_t *r, forge_error_t *err)
{
    if (r->kind == VAR_ABSPATH)
        return check_abspath(v, r->name, err);
    for (size_t i = 0; i < sizeof(string_rules) / sizeof(string_rules[0]);
         i++) {
        const struct string_rule *s = &string_rules[i];
        if (s->kind != r->kind)
            continue;
        if (s->ok(v))
            break;
        if (s->show_value)
            return forge_error_set(err, FORGE_ECONFIG, r->name,
                                   "%s %s (got \"%s\")", r->name, s->must, v);
        return forge_error_set(err, FORGE_ECONFIG, r->name, "%s %s", r->name,
                               s->must);
    }
    if (r->kind == VAR_URL) /* a base: no trailing '/' */
        for (size_t n = strlen(v); n > 0 && v[n - 1] == '/'; n--)
            v[n - 1] = '\0';
    return FORGE_OK;
}

static forge_rc_t parse_pathlist(forge_config_t *cfg, const char *v,
                                 const var_rule_t *r, forge_error_t *err)
{
    while (*v) {
        size_t len = strcspn(v, ":");
        char *path = forge_xstrndup(v, len);
        forge_rc_t rc = check_abspath(path, r->name, err);
        if (rc) {
            free(path);
            return rc;
        }
        cfg->mount_allow = forge_xrealloc(
            cfg->mount_allow, (cfg->mount_allow_count + 2) * sizeof(char *));
        cfg->mount_allow[cfg->mount_allow_count++] = path;
        cfg->mount_allow[cfg->mount_allow_count] = NULL;
        v += len;
        if (*v == ':')
            v++;
    }
    return FORGE_OK;
}

_Static_assert(sizeof(forge_api_version_t) == sizeof(int) &&
                   sizeof(forge_runtime_profile_t) == sizeof(int) &&
                   sizeof(forge_log_level_t) == sizeof(int) &&
                   sizeof(forge_log_format_t) == sizeof(int),
               "enum fields are written through int *");

static forge_rc_t apply_rule(forge_config_t *cfg, const var_rule_t *r,
                             const char *v, forge_error_t *err)
{
    void *slot = (char *)cfg + r->offset;
    char *copy;
    forge_rc_t rc;

    if (strlen(v) > MAX_VALUE_LEN)
        return forge_error_set(err, FORGE_ECONFIG, r->name,
                               "%s is longer than %d bytes", r->name,
                               MAX_VALUE_LEN);
    if (forge_text_has_control(v))
        return forge_error_set(err, FORGE_ECONFIG, r->name,
                               "%s contains control characters", r->name);
    switch (r->kind) {
    case VAR_INT:
        return parse_int(v, r, (int *)slot, err);
    case VAR_BOOL:
        return parse_bool(v, r, (bool *)slot, err);
    case VAR_ENUM:
        return parse_enum(v, r, (int *)slot, err);
    case VAR_PATHLIST:
        return parse_pathlist(cfg, v, r, err);
    default:
        copy = forge_xstrdup(v);
        if ((rc = check_string(copy, r, err))) {
            free(copy);
            return rc;
        }
        *(char **)slot = copy;
        return FORGE_OK;
    }
}

/* ---- the environment -------------------------------------------------- */

/* Value of name in envp; NULL when absent or empty (empty means unset). */
static const char *env_get(char *const *envp, const char *name)
{
    size_t n = strlen(name);

    for (; envp && *envp; envp++)
        if (!strncmp(*envp, name, n) && (*envp)[n] == '=')
            return (*envp)[n + 1] ? *envp + n + 1 : NULL;
    return NULL;
}

static bool is_known_var(const char *entry)
{
    size_t n = strcspn(entry, "=");

    for (size_t i = 0; i < sizeof(rules) / sizeof(rules[0]); i++)
        if (strlen(rules[i].name) == n && !strncmp(entry, rules[i].name, n))
            return true;
    for (size_t i = 0; foreign_prefixes[i]; i++)
        if (forge_str_starts_with(entry, foreign_prefixes[i]))
            return true;
    return forge_str_starts_with(entry, KAFKA_PROP_PREFIX);
}

static void note_unknown(forge_config_t *cfg, const char *entry)
{
    cfg->unknown_vars = forge_xrealloc(
        cfg->unknown_vars, (cfg->unknown_count + 2) * sizeof(char *));
    cfg->unknown_vars[cfg->unknown_count++] =
        forge_xstrndup(entry, strcspn(entry, "="));
    cfg->unknown_vars[cfg->unknown_count] = NULL;
}

static forge_rc_t add_kafka_prop(forge_config_t *cfg, const char *entry,
                                 forge_error_t *err)
{
    const char *name = entry + strlen(KAFKA_PROP_PREFIX);
    size_t len = strcspn(name, "=");
    char var[160];
    char *prop;
    forge_kafka_prop_t *slot;

    snprintf(var, sizeof(var), "%.*s", (int)(strcspn(entry, "=")), entry);
    if (len == 0 || len > 100 || !name[len] || !name[len + 1])
        return forge_error_set(err, FORGE_ECONFIG, var,
                               "%s needs a property name and a value", var);
    prop = forge_xstrndup(name, len);
    for (char *c = prop; *c; c++) {
        if (!isalnum((unsigned char)*c) && *c != '_') {
            free(prop);
            return forge_error_set(err, FORGE_ECONFIG, var,
                                   "%s: property names are letters, digits "
                                   "and '_' (for '.')",
                                   var);
        }
        *c = *c == '_' ? '.' : (char)tolower((unsigned char)*c);
    }
    for (size_t i = 0; owned_kafka_props[i]; i++) {
        if (!strcmp(prop, owned_kafka_props[i])) {
            forge_error_set(err, FORGE_ECONFIG, var,
                            "%s: %s is set by forge-worker itself (partition "
                            "ownership and exactly-once depend on it)",
                            var, prop);
            free(prop);
            return FORGE_ECONFIG;
        }
    }
    cfg->kafka_props = forge_xrealloc(
        cfg->kafka_props, (cfg->kafka_prop_count + 1) * sizeof(*slot));
    slot = &cfg->kafka_props[cfg->kafka_prop_count++];
    slot->name = prop;
    slot->value = forge_xstrdup(name + len + 1);
    return FORGE_OK;
}

static forge_rc_t scan_extras(forge_config_t *cfg, char *const *envp,
                              forge_error_t *err)
{
    forge_rc_t rc;

    for (; envp && *envp; envp++) {
        if (!forge_str_starts_with(*envp, "FORGE_"))
            continue;
        if (forge_str_starts_with(*envp, KAFKA_PROP_PREFIX)) {
            if ((rc = add_kafka_prop(cfg, *envp, err)))
                return rc;
        } else if (!is_known_var(*envp)) {
            note_unknown(cfg, *envp);
        }
    }
    return FORGE_OK;
}

/* The host name, made into a valid worker id ("forge-worker" if none). */
static char *default_worker_id(void)
{
    char host[256] = "";
    size_t n;

    if (gethostname(host, sizeof(host) - 1) != 0 ||
        !isalnum((unsigned char)host[0]))
        return forge_xstrdup("forge-worker");
    n = strnlen(host, 64);
    host[n] = '\0';
    for (size_t i = 0; i < n; i++)
        if (!is_name_char((unsigned char)host[i], "._-"))
            host[i] = '-';
    return forge_xstrdup(host);
}

/* Rules that involve more than one variable, and derived defaults. */
static forge_rc_t finish(forge_config_t *cfg, forge_error_t *err)
{
    if (strcmp(cfg->fleet_kind, "slurm") != 0)
        return forge_error_set(err, FORGE_ECONFIG, "FORGE_DEFAULT_FLEET_KIND",
                               "FORGE_DEFAULT_FLEET_KIND must be \"slurm\" "
                               "for forge-worker (got \"%s\")",
                               cfg->fleet_kind);
    if (cfg->slurm_jwt_file && cfg->slurm_jwt_key_file)
        return forge_error_set(err, FORGE_ECONFIG, "FORGE_SLURM_JWT_KEY_FILE",
                               "set FORGE_SLURM_JWT_FILE or "
                               "FORGE_SLURM_JWT_KEY_FILE, not both");
    if (cfg->slurm_storage_root && !cfg->storage_root)
        return forge_error_set(err, FORGE_ECONFIG, "FORGE_STORAGE_ROOT",
                               "FORGE_SLURM_STORAGE_ROOT is set but "
                               "FORGE_STORAGE_ROOT is not");
    if (cfg->storage_root && !cfg->slurm_storage_root)
        cfg->slurm_storage_root = forge_xstrdup(cfg->storage_root);
    if (cfg->storage_root && !cfg->runtime_root) {
        size_t n = strlen(cfg->storage_root) + sizeof("/runtimes");
        cfg->runtime_root = forge_xmalloc(n);
        snprintf(cfg->runtime_root, n, "%s/runtimes",
                 strcmp(cfg->storage_root, "/") ? cfg->storage_root : "");
    }
    if (!cfg->worker_id)
        cfg->worker_id = default_worker_id();
    return FORGE_OK;
}

forge_rc_t forge_config_load(char *const *envp, forge_config_t **out,
                             forge_error_t *err)
{
    forge_config_t *cfg = forge_xcalloc(1, sizeof(*cfg));
    forge_rc_t rc = FORGE_OK;

    *out = NULL;
    for (size_t i = 0; i < sizeof(rules) / sizeof(rules[0]) && !rc; i++) {
        const char *v = env_get(envp, rules[i].name);
        if (!v)
            v = rules[i].default_value;
        if (v)
            rc = apply_rule(cfg, &rules[i], v, err);
    }
    if (!rc)
        rc = scan_extras(cfg, envp, err);
    if (!rc)
        rc = finish(cfg, err);
    if (rc) {
        forge_config_destroy(cfg);
        return rc;
    }
    *out = cfg;
    return FORGE_OK;
}

forge_rc_t forge_config_require(const forge_config_t *cfg, unsigned needs,
                                forge_error_t *err)
{
    static const struct {
        unsigned need;
        size_t offset;
        const char *name;
    } required[] = {
        {FORGE_NEED_SLURM, AT(slurm_rest_url), "FORGE_SLURM_REST_URL"},
        {FORGE_NEED_SLURM, AT(slurm_user), "FORGE_SLURM_REST_USER"},
        {FORGE_NEED_STORAGE, AT(storage_root), "FORGE_STORAGE_ROOT"},
        {FORGE_NEED_KAFKA, AT(kafka_brokers), "FORGE_KAFKA_BROKERS"},
        {FORGE_NEED_SERIES, AT(gpu_series_file), "FORGE_GPU_SERIES_FILE"},
        {FORGE_NEED_STATE_KEY, AT(state_key_file), "FORGE_STATE_KEY_FILE"},
    };

    for (size_t i = 0; i < sizeof(required) / sizeof(required[0]); i++) {
        const char *v =
            *(char *const *)((const char *)cfg + required[i].offset);
        if ((needs & required[i].need) && !v)
            return forge_error_set(err, FORGE_ECONFIG, required[i].name,
                                   "%s is required", required[i].name);
    }
    if ((needs & FORGE_NEED_SLURM) && !cfg->slurm_jwt_file &&
        !cfg->slurm_jwt_key_file)
        return forge_error_set(err, FORGE_ECONFIG, "FORGE_SLURM_JWT_FILE",
                               "FORGE_SLURM_JWT_FILE or "
                               "FORGE_SLURM_JWT_KEY_FILE is required");
    return FORGE_OK;
}

void forge_config_destroy(forge_config_t *cfg)
{
    if (!cfg)
        return;
    for (size_t i = 0; i < sizeof(rules) / sizeof(rules[0]); i++) {
        var_kind_t k = rules[i].kind;
        if (k != VAR_INT && k != VAR_BOOL && k != VAR_ENUM && k != VAR_PATHLIST)
            free(*(char **)((char *)cfg + rules[i].offset));
    }
    forge_strings_free(cfg->mount_allow, cfg->mount_allow_count);
    forge_strings_free(cfg->unknown_vars, cfg->unknown_count);
    for (size_t i = 0; i < cfg->kafka_prop_count; i++) {
        free(cfg->kafka_props[i].name);
        free(cfg->kafka_props[i].value);
    }
    free(cfg->kafka_props);
    free(cfg);
}

static const char *enum_name(const char *const *names, size_t count, int v)
{
    return v >= 0 && (size_t)v < count ? names[v] : NULL;
}

const char *forge_api_version_name(forge_api_version_t v)
{
    return enum_name(api_names, FORGE_API__COUNT, (int)v);
}

const char *forge_runtime_profile_name(forge_runtime_profile_t p)
{
    return enum_name(profile_names, 2, (int)p);
}

const char *forge_log_level_name(forge_log_level_t l)
{
    return enum_name(level_names, 4, (int)l);
}

/* ---- the table as the documentation reads it -------------------------- */

/* What a value of each kind must be, for the kinds string_rules does not
 * describe (their `must` is the text). */
static const struct kind_doc {
    var_kind_t kind;
    const char *type;
    const char *allowed;
} kind_docs[] = {
    {VAR_STR, "string", "no control characters"},
    {VAR_NAME, "name", NULL},
    {VAR_ID, "id", NULL},
    {VAR_TOPIC, "topic", NULL},
    {VAR_ABSPATH, "absolute path",
     "an absolute, normalized path without '.', '..' or '//'"},
    {VAR_PATHLIST, "path list", "':'-separated absolute, normalized paths"},
    {VAR_URL, "URL", NULL},
    {VAR_BROKERS, "brokers", NULL},
    {VAR_HOSTPORT, "host:port", NULL},
    {VAR_INT, "integer", NULL},
    {VAR_BOOL, "boolean", "1 or 0 (true/false, yes/no, on/off)"},
    {VAR_ENUM, "enum", NULL},
};

bool forge_config_var(size_t i, forge_config_var_t *out)
{
    const var_rule_t *r;

    if (i >= sizeof(rules) / sizeof(rules[0]))
        return false;
    r = &rules[i];
    *out = (forge_config_var_t){
        .name = r->name,
        .def = r->default_value,
        .def_note = r->def_note,
        .min = r->min,
        .max = r->max,
        .names = r->names,
        .doc = r->doc,
        .since = r->since,
    };
    for (size_t k = 0; k < sizeof(kind_docs) / sizeof(kind_docs[0]); k++)
        if (kind_docs[k].kind == r->kind) {
            out->type = kind_docs[k].type;
            out->allowed = kind_docs[k].allowed;
        }
    for (size_t k = 0; k < sizeof(string_rules) / sizeof(string_rules[0]); k++)
        if (string_rules[k].kind == r->kind)
            out->allowed = string_rules[k].must;
    return true;
}

const char *const *forge_config_owned_kafka_props(void)
{
    return owned_kafka_props;
}

const char *const *forge_config_foreign_prefixes(void)
{
    return foreign_prefixes;
}
