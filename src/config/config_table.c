/* SPDX-License-Identifier: Apache-2.0 */
/*
 * config_table.c - the table of FORGE_* variables: one row per variable
 * (its name, where it lands in forge_config_t, its kind, bounds and
 * default, and what docs/CONFIGURATION.md says of it: what it changes and
 * since when), and the librdkafka properties and prefixes the worker keeps
 * for itself. config.c reads the environment through it; the page is
 * printed from it (tests/tools/config_doc.c).
 */
#include "config/config_int.h"

#include <stddef.h>

const char *const forge_config_api_names[] = {"v0.0.41", "v0.0.42", "v0.0.43",
                                              "v0.0.44", "v0.0.45", NULL};
const char *const forge_config_profile_names[] = {"enroot-pyxis", "apptainer",
                                                  NULL};
const char *const forge_config_level_names[] = {"debug", "info", "warn",
                                                "error", NULL};
static const char *const format_names[] = {"json", "text", NULL};
const char *const forge_config_live_names[] = {"off", "opt-in", "on", NULL};
const char *const forge_config_group_protocol_names[] = {"classic", "consumer",
                                                         NULL};
/* As librdkafka spells security.protocol and sasl.mechanisms. */
const char *const forge_config_protocol_names[] = {
    "plaintext", "ssl", "sasl_plaintext", "sasl_ssl", NULL};
const char *const forge_config_mechanism_names[] = {
    "PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER", NULL};

#define AT(field) offsetof(forge_config_t, field)

/* The seed's variables (docs/CONTRACT.md section 5) were all in the first
 * commit of the table. */
#define SEED  "cea768d (seed)"
#define FIRST "cea768d"
#define RETRY "issue 26 (retry policy)"
#define TLS   "issue 27"
#define LIVE  "issue 29 (live logs)"

const var_rule_t forge_config_rules[] = {
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
            "every command that talks to slurmrestd. Several, separated by "
            "commas (since issue 39), are endpoints of one cluster (stateless "
            "slurmrestd side by side): requests go to the first that "
            "answers, and one that does not (refused, reset, timed out) is "
            "left alone for a cooldown (1 s, doubling, at most 30 s) before "
            "it is tried again; a single URL may be a load balancer's.",
     .since = SEED},
    {.name = "FORGE_SLURM_REST_API_VERSION",
     .kind = VAR_ENUM,
     .offset = AT(slurm_api_version),
     .default_value = "v0.0.43",
     .names = forge_config_api_names,
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
    {.name = "FORGE_SLURM_TLS_CERT_FILE",
     .kind = VAR_ABSPATH,
     .offset = AT(slurm_tls_cert_file),
     .doc = "A client certificate (PEM) the worker shows slurmrestd's TLS "
            "front (mTLS). Needs `FORGE_SLURM_TLS_KEY_FILE`; must be a "
            "readable file at start.",
     .since = TLS},
    {.name = "FORGE_SLURM_TLS_KEY_FILE",
     .kind = VAR_ABSPATH,
     .offset = AT(slurm_tls_key_file),
     .doc = "The client certificate's private key (PEM, unencrypted), not "
            "readable by others. Needs `FORGE_SLURM_TLS_CERT_FILE`.",
     .since = TLS},
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
     .names = forge_config_profile_names,
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
    {.name = "FORGE_KAFKA_GROUP_PROTOCOL",
     .kind = VAR_ENUM,
     .offset = AT(kafka_group_protocol),
     .default_value = "classic",
     .names = forge_config_group_protocol_names,
     .doc = "The consumer group protocol: `classic` (the workers assign the "
            "partitions among themselves, cooperative-sticky) or `consumer` "
            "(Kafka 4's KIP-848: the group coordinator assigns them; its "
            "session and heartbeat are the broker's "
            "`group.consumer.session.timeout.ms` and "
            "`group.consumer.heartbeat.interval.ms`, so "
            "`FORGE_KAFKA_PROP_session_timeout_ms` and "
            "`FORGE_KAFKA_PROP_heartbeat_interval_ms` stop the worker at "
            "start with it). Why `classic` is the default: "
            "docs/CONTRACT.md section 5.",
     .since = "issue 38"},
    {.name = "FORGE_KAFKA_SECURITY_PROTOCOL",
     .kind = VAR_CHOICE,
     .offset = AT(kafka_security_protocol),
     .names = forge_config_protocol_names,
     .def_note = "librdkafka's: `plaintext`",
     .doc = "librdkafka's `security.protocol` (any case). `sasl_*` for "
            "`FORGE_KAFKA_SASL_MECHANISM`, `ssl` or `sasl_ssl` for the CA, "
            "certificate and key files. `sasl_plaintext` to a broker that "
            "is not loopback is warned about at start.",
     .since = TLS},
    {.name = "FORGE_KAFKA_SASL_MECHANISM",
     .kind = VAR_CHOICE,
     .offset = AT(kafka_sasl_mechanism),
     .names = forge_config_mechanism_names,
     .doc = "`sasl.mechanisms`. `PLAIN` and `SCRAM-*` need the user and "
            "password file; `OAUTHBEARER` takes neither: its settings "
            "(`sasl.oauthbearer.*`) go through `FORGE_KAFKA_PROP_*` "
            "(docs/OPERATING.md).",
     .since = TLS},
    {.name = "FORGE_KAFKA_SASL_USERNAME",
     .kind = VAR_STR,
     .offset = AT(kafka_sasl_username),
     .doc = "`sasl.username`. Needs `FORGE_KAFKA_SASL_PASSWORD_FILE` and a "
            "`PLAIN` or `SCRAM-*` mechanism.",
     .since = TLS},
    {.name = "FORGE_KAFKA_SASL_PASSWORD_FILE",
     .kind = VAR_ABSPATH,
     .offset = AT(kafka_sasl_password_file),
     .doc = "A file holding the SASL password (`sasl.password`), read once "
            "at start: owner-only, not empty, one line (a trailing new line "
            "is dropped). Its content is never logged.",
     .since = TLS},
    {.name = "FORGE_KAFKA_SSL_CA_FILE",
     .kind = VAR_ABSPATH,
     .offset = AT(kafka_ssl_ca_file),
     .doc = "`ssl.ca.location`: a CA bundle to verify the brokers with, "
            "instead of the system's.",
     .since = TLS},
    {.name = "FORGE_KAFKA_SSL_CERT_FILE",
     .kind = VAR_ABSPATH,
     .offset = AT(kafka_ssl_cert_file),
     .doc = "`ssl.certificate.location`: the worker's client certificate "
            "(mTLS). Needs `FORGE_KAFKA_SSL_KEY_FILE`.",
     .since = TLS},
    {.name = "FORGE_KAFKA_SSL_KEY_FILE",
     .kind = VAR_ABSPATH,
     .offset = AT(kafka_ssl_key_file),
     .doc = "`ssl.key.location`: the client certificate's private key, not "
            "readable by others. Needs `FORGE_KAFKA_SSL_CERT_FILE`.",
     .since = TLS},
    {.name = "FORGE_KAFKA_SSL_KEY_PASSWORD_FILE",
     .kind = VAR_ABSPATH,
     .offset = AT(kafka_ssl_key_password_file),
     .doc = "A file holding the private key's passphrase "
            "(`ssl.key.password`), read as the SASL password file is. Needs "
            "`FORGE_KAFKA_SSL_KEY_FILE`.",
     .since = TLS},
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
     .doc = "Where the `logs_archived` events go, and the live logs' "
            "`log_chunk` events (`FORGE_LOG_LIVE`).",
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
    {.name = "FORGE_KAFKA_JOBCOMP_TOPIC",
     .kind = VAR_TOPIC,
     .offset = AT(topic_jobcomp),
     .doc = "Push completion (unset: off). The topic Slurm's `jobcomp/kafka` "
            "plugin publishes to, start and end records on the one topic "
            "(`JobCompType=jobcomp/kafka`, `JobCompParams=topic=X,"
            "topic_job_start=X,enable_job_start,send_comment`: the comment "
            "carries the worker's tag). Every worker reads every partition "
            "of it from its end at start, with no consumer group, and acts "
            "only on the jobs it owns: a start record publishes RUNNING at "
            "once, an end record the terminal state (with the job's usage), "
            "an end a requeue may follow asks slurmctld at once. The poll "
            "stays the safety net and decides whatever the records do not: "
            "with push on, `FORGE_POLL_INTERVAL_MS=60000` is recommended. "
            "Needs READ on the topic (checked at start).",
     .since = "issue 28 (push completion)"},
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
     .doc = "How often the owned jobs' states are asked of slurmrestd. With "
            "push completion on (`FORGE_KAFKA_JOBCOMP_TOPIC`) the poll is "
            "the safety net (a record lost, a job that ended while no "
            "worker read the topic): 60000 is recommended there, which "
            "costs slurmctld a twelfth of the default's requests.",
     .since = FIRST},
    {.name = "FORGE_REQUEUE_CREDENTIALS_WAIT_S",
     .kind = VAR_INT,
     .offset = AT(requeue_credentials_wait_s),
     .default_value = "300",
     .min = 0,
     .max = 86400,
     .doc = "How long a job Slurm requeued waits, at the start of its next "
            "run, for the credentials the worker stages for that run once "
            "its poll sees the requeue; it stops with one line when they "
            "never come.",
     .since = "issue 26"},
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
     .doc = "After an interrupted submit is settled (its job adopted, or "
            "the launch submitted or cancelled), when the launch's owner "
            "looks once more for a late (held) job its tag finds, and "
            "cancels it.",
     .since = "2975fd7 (issue 11)"},
    {.name = "FORGE_RETRY_MAX_TRIES",
     .kind = VAR_INT,
     .offset = AT(retry.max_tries),
     .default_value = "1",
     .min = 1,
     .max = FORGE_RETRY_MAX_TRIES,
     .doc = "How many tries (Slurm jobs) one attempt of a launch gets when a "
            "try ends with a cause of `FORGE_RETRY_ON`: 1 never retries. A "
            "request's `retry.max_tries` overrides it (docs/CONTRACT.md "
            "section 3, \"A retry\").",
     .since = RETRY},
    {.name = "FORGE_RETRY_ON",
     .kind = VAR_CAUSES,
     .offset = AT(retry.causes),
     .default_value = "node_fail,boot_fail,launch_failed",
     .doc = "The causes a try is retried on (a request's `retry.on` "
            "overrides it). `failed`, `out_of_memory` and `timeout` are the "
            "job's own: retried only where a policy names them.",
     .since = RETRY},
    {.name = "FORGE_RETRY_BACKOFF_S",
     .kind = VAR_INT,
     .offset = AT(retry.backoff_s),
     .default_value = "30",
     .min = 0,
     .max = FORGE_RETRY_BACKOFF_MAX,
     .doc = "Seconds before the second try; doubled for each try after it, "
            "at most 600 (a request's `retry.backoff_s` overrides it).",
     .since = RETRY},
    {.name = "FORGE_RETRY_EXCLUDE_FAILED_NODES",
     .kind = VAR_BOOL,
     .offset = AT(retry.exclude_failed_nodes),
     .default_value = "1",
     .doc = "Whether a retry excludes the nodes the failed tries ran on "
            "(Slurm's `excluded_nodes`; a request's "
            "`retry.exclude_failed_nodes` overrides it).",
     .since = RETRY},
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
     .names = forge_config_level_names,
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
    {.name = "FORGE_LOG_LIVE",
     .kind = VAR_ENUM,
     .offset = AT(log_live),
     .default_value = "opt-in",
     .names = forge_config_live_names,
     .doc = "Which launches' output is tailed while they run, onto "
            "`FORGE_KAFKA_TOPIC_LOGS` as `forge.launch.log_chunk` events "
            "(`forge-worker logs` prints them): `off` none, whatever a "
            "request asks (the fleet's switch); `opt-in` only those whose "
            "request says `logs.live: true`; `on` every launch but those "
            "whose request says `logs.live: false`. Every launch's logs are "
            "archived either way.",
     .since = LIVE},
    {.name = "FORGE_LOG_LIVE_INTERVAL_MS",
     .kind = VAR_INT,
     .offset = AT(log_live_interval_ms),
     .default_value = "1000",
     .min = 200,
     .max = 60000,
     .doc = "At most one live chunk per launch per this many milliseconds: "
            "lower, fresher output and more events.",
     .since = LIVE},
    {.name = "FORGE_LOG_LIVE_CHUNK_BYTES",
     .kind = VAR_INT,
     .offset = AT(log_live_chunk_bytes),
     .default_value = "65536",
     .min = 4096,
     .max = 131072,
     .doc = "A live chunk's bytes of the launch's files at most, all its "
            "files together; what is left waits for the next chunk.",
     .since = LIVE},
    {.name = "FORGE_LOG_LIVE_BUDGET_BYTES",
     .kind = VAR_INT,
     .offset = AT(log_live_budget_bytes),
     .default_value = "1048576",
     .min = 4096,
     .max = 1073741824,
     .doc = "A launch's bytes of files tailed live per minute at most: "
            "beyond it the worker skips ahead, and the chunk says how many "
            "bytes it skipped (only the live tail skips them: the archive "
            "is made from the files).",
     .since = LIVE},
};

const size_t forge_config_rule_count =
    sizeof(forge_config_rules) / sizeof(forge_config_rules[0]);

/*
 * librdkafka properties the worker sets itself: overriding any of them would
 * break partition ownership or exactly-once, so they are refused.
 */
const char *const forge_config_owned_props[] = {
    "bootstrap.servers",  "metadata.broker.list",
    "group.id",           "group.instance.id",
    "enable.auto.commit", "enable.auto.offset.store",
    "isolation.level",    "transactional.id",
    "enable.idempotence", "partition.assignment.strategy",
    "group.protocol",     "partitioner",
    "auto.offset.reset",  NULL,
};

/* Prefixes of FORGE_* variables that belong to the test stack, not to us. */
const char *const forge_config_foreign[] = {"FORGE_STACK_", "FORGE_TEST_",
                                            NULL};
