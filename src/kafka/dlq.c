/* SPDX-License-Identifier: Apache-2.0 */
/*
 * dlq.c - the DLQ record of a message with no usable launch_id (dlq.h):
 * original key and bytes, cut to FORGE_DLQ_MAX_BYTES only when they would
 * not fit, the error and the source in headers; its known secrets
 * replaced (request/request_redact.h).
 */
#include "kafka/dlq.h"
#include "request/request_redact.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void add(forge_dlq_record_t *d, const char *name, const char *value)
{
    forge_kafka_header_t *h = &d->headers[d->record.header_count++];

    h->name = name;
    h->value = value;
    h->len = strlen(value);
}

/* The key keeps at most half of what the headers leave, the value the
 * rest: a huge key cannot squeeze out the bytes that say what was sent. */
static void fit(forge_dlq_record_t *d, size_t max_bytes, size_t original_len)
{
    forge_kafka_record_t *r = &d->record;
    size_t room = max_bytes - FORGE_DLQ_RESERVE;

    if (r->key_len > room / 2) {
        snprintf(d->key_bytes, sizeof(d->key_bytes), "%zu", r->key_len);
        add(d, "forge.dlq.key_bytes", d->key_bytes);
        r->key_len = room / 2;
    }
    room -= r->key_len;
    if (r->value_len > room) {
        snprintf(d->value_bytes, sizeof(d->value_bytes), "%zu", original_len);
        add(d, "forge.dlq.value_bytes", d->value_bytes);
        if (!d->value_sha256[0]) { /* else redact() said the original's */
            forge_sha256_hex(r->value, r->value_len, d->value_sha256);
            add(d, "forge.dlq.value_sha256", d->value_sha256);
        }
        r->value_len = room;
    }
}

/* The value's known secrets replaced, said in a header (dlq.h), with the
 * original's digest (forge.dlq.value_sha256: what finds the message in
 * the requests topic). */
static void redact(forge_dlq_record_t *d)
{
    forge_kafka_record_t *r = &d->record;
    const char *which = NULL;
    size_t len = 0;

    d->redacted =
        forge_request_redacted_copy(r->value, r->value_len, &len, &which);
    if (!d->redacted)
        return;
    forge_sha256_hex(r->value, r->value_len, d->value_sha256);
    r->value = d->redacted;
    r->value_len = len;
    add(d, "forge.dlq.redacted", which);
    add(d, "forge.dlq.value_sha256", d->value_sha256);
}

void forge_dlq_record(forge_dlq_record_t *out, const char *dlq_topic,
                      const char *source_topic, const forge_kafka_message_t *m,
                      const forge_error_t *error, size_t max_bytes)
{
    memset(out, 0, sizeof(*out));
    out->record = (forge_kafka_record_t){dlq_topic,    -1,       m->key,
                                         m->key_len,   m->value, m->value_len,
                                         out->headers, 0};
    snprintf(out->partition, sizeof(out->partition), "%d", (int)m->partition);
    snprintf(out->offset, sizeof(out->offset), "%lld", (long long)m->offset);
    add(out, "forge.error.code", forge_rc_name(error->code));
    add(out, "forge.error.message", error->message);
    add(out, "forge.source.topic", source_topic);
    add(out, "forge.source.partition", out->partition);
    add(out, "forge.source.offset", out->offset);
    redact(out);
    fit(out, max_bytes, m->value_len);
}

void forge_dlq_record_clear(forge_dlq_record_t *d)
{
    free(d->redacted);
    memset(d, 0, sizeof(*d));
}

bool forge_dlq_record_cut(const forge_dlq_record_t *d)
{
    return d->value_bytes[0] != '\0';
}
