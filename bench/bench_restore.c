/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench_restore.c - the two halves of the restore benchmark that Python
 * does too slowly (bench/bench_restore.py runs them):
 *
 *   seed     N launch records straight into a state topic, as a worker
 *            leaves a live launch (PENDING, a job id, seq 3), spread over
 *            its partitions, each with its request sealed by the stack's
 *            key (launch.h, seal.h) or, with --bare, none (a record whose
 *            request was dropped); made with libforge's own encoder, so
 *            the bytes are what a worker writes
 *   consume  the baseline: a plain librdkafka consumer with the restore
 *            reader's fetch settings (kafka.c: read_committed, partition
 *            EOF, fetch.wait.max.ms 10) reading every partition of the
 *            topic from the beginning to its end, all at once; prints the
 *            records and the milliseconds from the handle's creation to
 *            the last partition's end
 *
 *   build/bench/bench_restore seed BROKERS TOPIC PARTITIONS N KEYFILE [--bare]
 *   build/bench/bench_restore consume BROKERS TOPIC PARTITIONS
 *
 * A benchmark helper, not a test: it never fails on speed.
 */
#include "core/clock.h"
#include "launch/launch.h"
#include "launch/seal.h"

#include <jansson.h>
#include <librdkafka/rdkafka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define JOB_ID_BASE 5000000u

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

static int seed(int argc, char **argv)
{
    const char *brokers = argv[2], *topic = argv[3];
    int partitions = atoi(argv[4]);
    long n = atol(argv[5]);
    bool bare = argc > 7 && !strcmp(argv[7], "--bare");
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
        char id[64];
        char *req, *value;
        json_t *o;
        forge_launch_record_t *r;

        snprintf(id, sizeof(id), "bench-%08ld", i);
        req = bare ? NULL : request_of(id);
        r = forge_launch_record_new(id, 1, req, req ? strlen(req) : 0);
        r->state = FORGE_STATE_PENDING;
        r->seq = 3;
        r->job_id = JOB_ID_BASE + (uint32_t)i;
        r->component_ids = calloc(1, sizeof(uint32_t));
        r->component_ids[0] = r->job_id;
        r->component_count = 1;
        r->accepted_at_ms = r->updated_at_ms = now;
        if (forge_launch_record_encode(r, s, &o, &err)) {
            fprintf(stderr, "%s\n", err.message);
            return 2;
        }
        value = json_dumps(o, JSON_COMPACT);
        while (
            rd_kafka_producev(p, RD_KAFKA_V_TOPIC(topic),
                              RD_KAFKA_V_PARTITION((int32_t)(i % partitions)),
                              RD_KAFKA_V_KEY(id, strlen(id)),
                              RD_KAFKA_V_VALUE(value, strlen(value)),
                              RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_FREE),
                              RD_KAFKA_V_END) == RD_KAFKA_RESP_ERR__QUEUE_FULL)
            rd_kafka_poll(p, 100);
        rd_kafka_poll(p, 0);
        json_decref(o);
        forge_launch_record_free(r);
        free(req);
    }
    rd_kafka_flush(p, 120000);
    printf("seeded %ld records (%s)\n", n, bare ? "bare" : "sealed requests");
    rd_kafka_destroy(p);
    forge_sealer_destroy(s);
    return 0;
}

static int consume(char **argv)
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

int main(int argc, char **argv)
{
    if (argc >= 7 && !strcmp(argv[1], "seed"))
        return seed(argc, argv);
    if (argc == 5 && !strcmp(argv[1], "consume"))
        return consume(argv);
    fprintf(stderr, "usage: bench_restore seed BROKERS TOPIC PARTITIONS N "
                    "KEYFILE [--bare]\n"
                    "       bench_restore consume BROKERS TOPIC PARTITIONS\n");
    return 2;
}
