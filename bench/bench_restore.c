/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench_restore.c - the two halves of the restore benchmark that Python
 * does too slowly (bench/bench_restore.py runs them):
 *
 *   seed     N launch records straight into a state topic, as a worker
 *            leaves a live launch (PENDING, a job id, seq 3), spread over
 *            its partitions, each with its request sealed by the stack's
 *            key (launch.h, seal.h: reduced to what a launch with a job
 *            keeps), with --whole the whole request (as workers before
 *            issue 13 wrote it), or with --bare none (a record whose
 *            request was dropped); made with libforge's own encoder, so
 *            the bytes are what a worker writes. With --running the
 *            launches are RUNNING (seq 4) instead: jobs that print, for
 *            the live logs benchmark (bench/bench_live.py)
 *   consume  the baseline: a plain librdkafka consumer with the restore
 *            reader's fetch settings (kafka.c: read_committed, partition
 *            EOF, fetch.wait.max.ms 10) reading every partition of the
 *            topic from the beginning to its end, all at once; prints the
 *            records and the milliseconds from the handle's creation to
 *            the last partition's end; with --leaders-first it asks the
            topic's leaders before it assigns, as the worker's reader
            does (kafka.c: else each partition waits for librdkafka's
            offset query timer, 500 ms, before its first fetch)
 *
 *   decode   the decoding alone, in process, one thread (for perf)
 *   table    the table a restore leaves, in process: RSS per launch
 *
 *   build/bench/bench_restore seed BROKERS TOPIC PARTITIONS N KEYFILE
 *       [--bare|--whole] [--running]
 *   build/bench/bench_restore consume BROKERS TOPIC PARTITIONS
 *       [--leaders-first]
 *   build/bench/bench_restore decode N KEYFILE [--bare|--whole]
 *   build/bench/bench_restore table N KEYFILE [--bare|--whole]
 *
 * BENCH_KAFKA_PROPS (environment): extra librdkafka properties, one
 * NAME=VALUE a line, for a secured listener (SASL_SSL on the stack).
 *
 * A benchmark helper, not a test: it never fails on speed.
 */
#include "clock/clock.h"
#include "record/held.h"
#include "record/launch.h"
#include "record/owner.h"
#include "record/seal.h"

#include <jansson.h>
#include <librdkafka/rdkafka.h>
#include <malloc.h> /* malloc_trim: glibc */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define JOB_ID_BASE   5000000u
#define DECODE_ROUNDS 5

/* BENCH_KAFKA_PROPS: librdkafka properties for both halves, one
 * NAME=VALUE a line (bench_restore.py: the secured listener's
 * security.protocol, SASL and CA settings, as the worker is given them). */
static void extra_props(rd_kafka_conf_t *c)
{
    const char *env = getenv("BENCH_KAFKA_PROPS");
    char *copy, *line, *save = NULL, errstr[256];

    if (!env || !*env)
        return;
    copy = strdup(env);
    for (line = strtok_r(copy, "\n", &save); line;
         line = strtok_r(NULL, "\n", &save)) {
        char *eq = strchr(line, '=');

        if (!eq)
            continue;
        *eq = '\0';
        if (rd_kafka_conf_set(c, line, eq + 1, errstr, sizeof(errstr)) !=
            RD_KAFKA_CONF_OK) {
            fprintf(stderr, "BENCH_KAFKA_PROPS %s: %s\n", line, errstr);
            exit(2);
        }
    }
    free(copy);
}

static rd_kafka_t *handle(rd_kafka_type_t type, const char *brokers,
                          const char *const *conf)
{
    rd_kafka_conf_t *c = rd_kafka_conf_new();
    char errstr[256];
    rd_kafka_t *rk;

    rd_kafka_conf_set(c, "bootstrap.servers", brokers, NULL, 0);
    for (size_t i = 0; conf[i]; i += 2)
        if (rd_kafka_conf_set(c, conf[i], conf[i + 1], errstr,
                              sizeof(errstr)) != RD_KAFKA_CONF_OK) {
            fprintf(stderr, "%s: %s\n", conf[i], errstr);
            exit(2);
        }
    extra_props(c); /* last: it may name the group id too */
    if (!(rk = rd_kafka_new(type, c, errstr, sizeof(errstr)))) {
        fprintf(stderr, "rd_kafka_new: %s\n", errstr);
        exit(2);
    }
    return rk;
}

/* A launch request like the e2e harness's (~700 bytes, a secret env value
 * and an ingest token of its own, as the platform gives each launch),
 * named for launch_id. */
static char *request_of(const char *launch_id)
{
    char token[96];
    json_t *o;

    snprintf(token, sizeof(token), "ingest-%s-%08x", launch_id,
             (unsigned)rand());
    o = json_pack(
        "{s:s, s:s, s:i, s:s, s:{s:s, s:s}, s:[s, s, s, s], s:{s:s, s:s, s:s}, "
        "s:{s:s}, s:[{s:s, s:s, s:i, s:i, s:i}], s:i, s:{s:s, s:s}, "
        "s:{s:s, s:s}}",
        "kind", "launch", "launch_id", launch_id, "attempt", 1, "project",
        "bench", "image", "path", "images/e2e.sif", "format", "sif", "command",
        "torchrun", "-m", "train", "--steps=20000", "env", "NCCL_DEBUG", "WARN",
        "HF_HOME", "/cache/hf", "OMP_NUM_THREADS", "8", "secret_env",
        "WANDB_API_KEY", "bench-secret-value-0123456789abcdef", "pools", "name",
        "main", "series", "h200", "nodes", 1, "gpus_per_node", 1,
        "tasks_per_node", 1, "time_limit_minutes", 60, "labels", "team",
        "alignment", "run", launch_id, "ingest", "endpoint",
        "https://ingest.example.org/v1", "token", token);
    char *text = json_dumps(o, JSON_COMPACT);

    json_decref(o);
    return text;
}

/* What the records carry: as this worker writes a live launch's (the
 * request reduced to what is kept: launch.h), as workers before issue 13's
 * compact records wrote them (the whole request), or none (--bare). */
typedef enum { KEPT, WHOLE, BARE } form_t;

static bool has_flag(int argc, char **argv, int at, const char *flag)
{
    for (int i = at; i < argc; i++)
        if (!strcmp(argv[i], flag))
            return true;
    return false;
}

static form_t form_of(int argc, char **argv, int at)
{
    if (has_flag(argc, argv, at, "--bare"))
        return BARE;
    if (has_flag(argc, argv, at, "--whole"))
        return WHOLE;
    return KEPT;
}

static const char *form_name(form_t f)
{
    return f == BARE    ? "bare"
           : f == WHOLE ? "whole sealed requests"
                        : "sealed requests";
}

/* Record i as the state topic's value (new), or NULL (a message said why):
 * PENDING (seq 3: accepted, submitted, pending), or RUNNING (seq 4). */
static char *record_value(long i, form_t form, forge_state_t state,
                          const forge_sealer_t *s, long long now)
{
    char id[64], *req, *value = NULL;
    json_t *o;
    forge_launch_record_t *r;
    forge_error_t err = {0};

    snprintf(id, sizeof(id), "bench-%08ld", i);
    req = form == BARE ? NULL : request_of(id);
    r = forge_launch_record_new(id, 1, req, req ? strlen(req) : 0);
    r->state = state;
    r->seq = state == FORGE_STATE_RUNNING ? 4 : 3;
    /* the whole request: sealed as for an intent (its additional data
     * does not name the job), then the job id set, as a worker before
     * issue 13 wrote it */
    r->job_id = form == WHOLE ? 0 : JOB_ID_BASE + (uint32_t)i;
    r->component_ids = calloc(1, sizeof(uint32_t));
    r->component_ids[0] = JOB_ID_BASE + (uint32_t)i;
    r->component_count = 1;
    r->accepted_at_ms = r->updated_at_ms = now;
    if (forge_launch_record_encode(r, s, &o, &err)) {
        fprintf(stderr, "%s\n", err.message);
    } else {
        json_object_set_new(o, "job_id",
                            json_integer(JOB_ID_BASE + (uint32_t)i));
        value = json_dumps(o, JSON_COMPACT);
        json_decref(o);
    }
    forge_launch_record_free(r);
    free(req);
    return value;
}

static int seed(int argc, char **argv)
{
    const char *brokers = argv[2], *topic = argv[3];
    int partitions = atoi(argv[4]);
    long n = atol(argv[5]);
    form_t form = form_of(argc, argv, 7);
    forge_state_t state = has_flag(argc, argv, 7, "--running")
                              ? FORGE_STATE_RUNNING
                              : FORGE_STATE_PENDING;
    const char *const conf[] = {"linger.ms",
                                "50",
                                "batch.size",
                                "1000000",
                                "compression.type",
                                "none",
                                "message.max.bytes",
                                "4194304",
                                NULL};
    rd_kafka_t *p = handle(RD_KAFKA_PRODUCER, brokers, conf);
    forge_sealer_t *s = NULL;
    forge_error_t err = {0};
    long long now = (long long)time(NULL) * 1000;

    if (forge_sealer_load(argv[6], NULL, &s, &err)) {
        fprintf(stderr, "%s\n", err.message);
        return 2;
    }
    for (long i = 0; i < n; i++) {
        char id[64], *value = record_value(i, form, state, s, now);

        if (!value)
            return 2;
        snprintf(id, sizeof(id), "bench-%08ld", i);
        while (
            rd_kafka_producev(p, RD_KAFKA_V_TOPIC(topic),
                              RD_KAFKA_V_PARTITION((int32_t)(i % partitions)),
                              RD_KAFKA_V_KEY(id, strlen(id)),
                              RD_KAFKA_V_VALUE(value, strlen(value)),
                              RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_FREE),
                              RD_KAFKA_V_END) == RD_KAFKA_RESP_ERR__QUEUE_FULL)
            rd_kafka_poll(p, 100);
        rd_kafka_poll(p, 0);
    }
    rd_kafka_flush(p, 120000);
    printf("seeded %ld records (%s, %s)\n", n, form_name(form),
           state == FORGE_STATE_RUNNING ? "running" : "pending");
    rd_kafka_destroy(p);
    forge_sealer_destroy(s);
    return 0;
}

/* This thread's CPU time: the machine is shared, and a wall clock would
 * count the others' turns. */
static long long cpu_ns(void)
{
    struct timespec t;

    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

/* The restore's decoding alone, in this process, without Kafka: N records
 * made as seed makes them, then each decoded as restore.c's reading
 * threads do (the record, its sealed request opened, what the table keeps
 * of it read, the bytes dropped for a launch with a job id), on one
 * thread, DECODE_ROUNDS times (the best kept). For profiling (perf), not a
 * ratio. */
static int decode(int argc, char **argv)
{
    long n = atol(argv[2]);
    form_t form = form_of(argc, argv, 4);
    forge_sealer_t *s = NULL;
    forge_error_t err = {0};
    char **values = calloc((size_t)n + 1, sizeof(char *));
    long long now = (long long)time(NULL) * 1000, start, best = 0;
    size_t bytes = 0;

    if (forge_sealer_load(argv[3], NULL, &s, &err)) {
        fprintf(stderr, "%s\n", err.message);
        return 2;
    }
    for (long i = 0; i < n; i++)
        if (!(values[i] = record_value(i, form, FORGE_STATE_PENDING, s, now)))
            return 2;
    for (int round = 0; round < DECODE_ROUNDS; round++) {
        long long took;
        start = cpu_ns();
        bytes = 0;
        for (long i = 0; i < n; i++) {
            forge_launch_record_t *r = NULL;
            forge_held_t *held = NULL;
            size_t len = strlen(values[i]);

            bytes += len;
            if (forge_launch_record_decode(values[i], len, s, &r, &err)) {
                fprintf(stderr, "%s\n", err.message);
                return 2;
            }
            if (r->request)
                held = forge_held_of_trusted(r->request, r->request_len);
            if (r->job_id)
                forge_launch_compact(r);
            forge_held_free(held);
            forge_launch_record_free(r);
        }
        took = (cpu_ns() - start) / 1000000;
        best = round && best < took ? best : took;
    }
    printf("decoded %ld records (%s, %zu bytes each) in %lld ms of CPU "
           "(best of %d)\n",
           n, form_name(form), bytes / (size_t)(n ? n : 1), best,
           DECODE_ROUNDS);
    for (long i = 0; i < n; i++)
        free(values[i]);
    free(values);
    forge_sealer_destroy(s);
    return 0;
}

/* The topic's leaders asked (one metadata round trip), as kafka.c's
 * reader does before it assigns a restore's partitions. */
static void leaders_first(rd_kafka_t *c, const char *topic)
{
    rd_kafka_topic_t *t = rd_kafka_topic_new(c, topic, NULL);
    const struct rd_kafka_metadata *md = NULL;

    if (!rd_kafka_metadata(c, 0, t, &md, 10000))
        rd_kafka_metadata_destroy(md);
    rd_kafka_topic_destroy(t);
}

static int consume(int argc, char **argv)
{
    const char *topic = argv[3];
    int partitions = atoi(argv[4]), ended = 0;
    long records = 0;
    long long start = forge_clock_ms();
    const char *const conf[] = {"group.id",
                                "bench-restore-baseline",
                                "enable.auto.commit",
                                "false",
                                "isolation.level",
                                "read_committed",
                                "enable.partition.eof",
                                "true",
                                "fetch.wait.max.ms",
                                "10",
                                "message.max.bytes",
                                "4194304",
                                NULL};
    rd_kafka_t *c = handle(RD_KAFKA_CONSUMER, argv[2], conf);
    rd_kafka_topic_partition_list_t *l =
        rd_kafka_topic_partition_list_new(partitions);

    if (argc > 5 && !strcmp(argv[5], "--leaders-first"))
        leaders_first(c, topic);
    for (int p = 0; p < partitions; p++)
        rd_kafka_topic_partition_list_add(l, topic, p)->offset =
            RD_KAFKA_OFFSET_BEGINNING;
    rd_kafka_assign(c, l);
    while (ended < partitions) {
        rd_kafka_message_t *m = rd_kafka_consumer_poll(c, 100);
        if (!m)
            continue;
        if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF)
            ended++;
        else if (!m->err)
            records++;
        rd_kafka_message_destroy(m);
    }
    printf("consumed %ld records in %lld ms\n", records,
           forge_clock_ms() - start);
    rd_kafka_assign(c, NULL);
    rd_kafka_topic_partition_list_destroy(l);
    rd_kafka_destroy(c);
    return 0;
}

static long rss_kib(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kib = -1;

    while (f && fgets(line, sizeof(line), f))
        if (!strncmp(line, "VmRSS:", 6))
            kib = atol(line + 6);
    if (f)
        fclose(f);
    return kib;
}

/* The launch table a restore leaves, in this process, without Kafka: N
 * records made one at a time, decoded as the reading threads do and put
 * in a table as the loop's thread does (their secrets registered with the
 * log); the RSS it grew by per launch (after malloc_trim, as restore.c)
 * and the time of the table's part. A check of what the worker's
 * restore (bench_restore.py) will show, for profiling, not a ratio. */
static int table(int argc, char **argv)
{
    long n = atol(argv[2]);
    form_t form = form_of(argc, argv, 4);
    forge_sealer_t *s = NULL;
    forge_error_t err = {0};
    forge_owner_t *o = forge_owner_new();
    forge_launch_record_t **recs = calloc((size_t)n + 1, sizeof(*recs));
    forge_held_t **helds = calloc((size_t)n + 1, sizeof(*helds));
    long long now = (long long)time(NULL) * 1000, put_ms = 0, trim_ms;
    long before;

    if (forge_sealer_load(argv[3], NULL, &s, &err)) {
        fprintf(stderr, "%s\n", err.message);
        return 2;
    }
    forge_owner_assign(o, 0);
    malloc_trim(0);
    before = rss_kib();
    for (long i = 0; i < n; i++) {
        char *value = record_value(i, form, FORGE_STATE_PENDING, s, now);

        if (!value ||
            forge_launch_record_decode(value, strlen(value), s, &recs[i], &err))
            return 2;
        free(value);
        if (recs[i]->request)
            helds[i] =
                forge_held_of_trusted(recs[i]->request, recs[i]->request_len);
        if (recs[i]->job_id)
            forge_launch_compact(recs[i]);
        forge_owner_register(helds[i]); /* on the reading threads */
    }
    put_ms = cpu_ns(); /* the loop's thread's part, as restore.c */
    forge_owner_reserve(o, (size_t)n);
    for (long i = 0; i < n; i++)
        forge_owner_put_registered(o, recs[i], helds[i], 0);
    put_ms = (cpu_ns() - put_ms) / 1000000;
    free(recs);
    free(helds);
    trim_ms = cpu_ns();
    malloc_trim(0); /* as restore.c, after the table */
    trim_ms = (cpu_ns() - trim_ms) / 1000000;
    printf("a table of %ld launches (%s): %ld bytes of RSS each, put in "
           "%lld ms of CPU, malloc_trim %lld ms\n",
           n, form_name(form), (rss_kib() - before) * 1024 / (n ? n : 1),
           put_ms, trim_ms);
    forge_owner_destroy(o);
    forge_sealer_destroy(s);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc >= 7 && !strcmp(argv[1], "seed"))
        return seed(argc, argv);
    if ((argc == 5 || argc == 6) && !strcmp(argv[1], "consume"))
        return consume(argc, argv);
    if (argc >= 4 && !strcmp(argv[1], "decode"))
        return decode(argc, argv);
    if (argc >= 4 && !strcmp(argv[1], "table"))
        return table(argc, argv);
    fprintf(stderr, "usage: bench_restore seed BROKERS TOPIC PARTITIONS N "
                    "KEYFILE [--bare|--whole] [--running]\n"
                    "       bench_restore consume BROKERS TOPIC PARTITIONS "
                    "[--leaders-first]\n"
                    "       bench_restore decode N KEYFILE [--bare|--whole]\n"
                    "       bench_restore table N KEYFILE [--bare|--whole]\n");
    return 2;
}
