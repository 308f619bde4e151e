/* SPDX-License-Identifier: Apache-2.0 */
/*
 * dlq.h - what a request message with no usable launch_id becomes: one
 * record of the DLQ topic (docs/CONTRACT.md section 1), built here and
 * produced by the loop (loop.c).
 *
 * It keeps the message's key and bytes as they were, says why in headers,
 * and where the message came from (topic, partition, offset), so an
 * operator can find the original. A record the broker refuses for its size
 * would abort its transaction, and the message would be consumed and
 * refused again forever: a poison pill wedging its partition. So a record
 * never exceeds FORGE_DLQ_MAX_BYTES: past it, the key and then the value
 * keep their first bytes, and headers give the original length and the
 * value's sha256. The value's known secrets (the ingest token, secret_env
 * values: request/request_redact.h) are replaced first, and a header says
 * which (forge.dlq.redacted): the DLQ's readers are operators, who are
 * not meant to hold a launch's secrets.
 */
#ifndef FORGE_DLQ_H
#define FORGE_DLQ_H

#include "base/error.h"
#include "kafka/kafka.h"
#include "text/sha256.h"

#include <stdbool.h>
#include <stddef.h>

#define FORGE_DLQ_HEADERS_MAX 10
/* What a record's framing and headers may take beyond its key and value:
 * the budget's reserve (Kafka's record and batch framing is well below). */
#define FORGE_DLQ_RESERVE 4096

/* A DLQ record; the key points into the message it was made from, the
 * value too unless it was redacted (then into `redacted`, its own: free
 * it with forge_dlq_record_clear). */
typedef struct forge_dlq_record {
    forge_kafka_record_t record;
    forge_kafka_header_t headers[FORGE_DLQ_HEADERS_MAX];
    char partition[16];
    char offset[24];
    char key_bytes[24];   /* the original key's length, when cut */
    char value_bytes[24]; /* the original value's length, when cut */
    char value_sha256[FORGE_SHA256_HEX];
    char *redacted; /* the value with its secrets replaced; NULL: none */
} forge_dlq_record_t;

/* Fills *out for message m of source_topic refused with error, in at most
 * max_bytes (>= 2 * FORGE_DLQ_RESERVE) of key, value and headers. */
void forge_dlq_record(forge_dlq_record_t *out, const char *dlq_topic,
                      const char *source_topic, const forge_kafka_message_t *m,
                      const forge_error_t *error, size_t max_bytes);

/* Frees what *d owns (its redacted value) and leaves it empty. */
void forge_dlq_record_clear(forge_dlq_record_t *d);

/* Whether the value was cut to fit max_bytes. */
bool forge_dlq_record_cut(const forge_dlq_record_t *d);

#endif
