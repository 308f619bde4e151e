/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_dlq.c - the DLQ record of a message with no usable launch_id: the
 * key and bytes kept exactly (NUL bytes and all) while they fit, the error
 * and the source in headers, and never more than the configured size: a
 * record the broker refused would come back forever (dlq.h); a request's
 * known secrets (ingest token, secret_env values) never in the copy.
 */
#include "kafka/dlq.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

static const char *header(const forge_dlq_record_t *d, const char *name)
{
    for (size_t i = 0; i < d->record.header_count; i++)
        if (!strcmp(d->record.headers[i].name, name))
            return d->record.headers[i].value;
    return NULL;
}

static size_t record_size(const forge_dlq_record_t *d)
{
    size_t n = d->record.key_len + d->record.value_len;

    for (size_t i = 0; i < d->record.header_count; i++)
        n += strlen(d->record.headers[i].name) + d->record.headers[i].len;
    return n;
}

static forge_error_t parse_error(void)
{
    forge_error_t e = {0};

    forge_error_set(&e, FORGE_ESCHEMA, "$", "line 1 column 2: not JSON");
    return e;
}

Test(dlq, keeps_key_and_bytes_exactly_and_names_the_source)
{
    static const char key[] = {'k', 0, 'x'}; /* a NUL inside: kept */
    static const char value[] = "{\"launch_id\": 5";
    forge_kafka_message_t m = {4,           1234,  key,
                               sizeof(key), value, sizeof(value) - 1};
    forge_error_t e = parse_error();
    forge_dlq_record_t d;

    forge_dlq_record(&d, "dlq", "requests", &m, &e, 1000000);
    cr_assert_str_eq(d.record.topic, "dlq");
    cr_assert_eq(d.record.partition, -1);
    cr_assert_eq(d.record.key_len, 3);
    cr_assert_eq(memcmp(d.record.key, key, 3), 0);
    cr_assert_eq(d.record.value_len, sizeof(value) - 1);
    cr_assert_str_eq(header(&d, "forge.error.code"), "schema");
    cr_assert_str_eq(header(&d, "forge.error.message"),
                     "line 1 column 2: not JSON");
    cr_assert_str_eq(header(&d, "forge.source.topic"), "requests");
    cr_assert_str_eq(header(&d, "forge.source.partition"), "4");
    cr_assert_str_eq(header(&d, "forge.source.offset"), "1234");
    cr_assert_null(header(&d, "forge.dlq.value_bytes"));
    cr_assert_null(header(&d, "forge.dlq.key_bytes"));
}

Test(dlq, no_key_stays_no_key)
{
    forge_kafka_message_t m = {0, 0, NULL, 0, "x", 1};
    forge_error_t e = parse_error();
    forge_dlq_record_t d;

    forge_dlq_record(&d, "dlq", "requests", &m, &e, 1000000);
    cr_assert_null(d.record.key);
    cr_assert_eq(d.record.key_len, 0);
}

Test(dlq, a_value_past_the_limit_keeps_its_head_length_and_digest)
{
    size_t len = 3 * 1024 * 1024, max = 1000000;
    char *value = malloc(len);
    forge_kafka_message_t m = {1, 9, "key", 3, value, len};
    forge_error_t e = parse_error();
    forge_dlq_record_t d;
    char digest[FORGE_SHA256_HEX];

    memset(value, 'v', len);
    forge_dlq_record(&d, "dlq", "requests", &m, &e, max);
    cr_assert_leq(record_size(&d) + FORGE_DLQ_RESERVE / 2, max);
    cr_assert_gt(d.record.value_len, max / 2, "the head is kept");
    cr_assert_eq(d.record.value, value);
    cr_assert_eq(d.record.key_len, 3);
    cr_assert_str_eq(header(&d, "forge.dlq.value_bytes"), "3145728");
    forge_sha256_hex(value, len, digest);
    cr_assert_str_eq(header(&d, "forge.dlq.value_sha256"), digest);
    free(value);
}

Test(dlq, a_huge_key_cannot_squeeze_out_the_value)
{
    size_t len = 2 * 1024 * 1024, max = 65536;
    char *key = malloc(len);
    forge_kafka_message_t m = {1, 9, key, len, "garbage", 7};
    forge_error_t e = parse_error();
    forge_dlq_record_t d;

    memset(key, 'k', len);
    forge_dlq_record(&d, "dlq", "requests", &m, &e, max);
    cr_assert_leq(record_size(&d), max);
    cr_assert_eq(d.record.value_len, 7, "the value is whole");
    cr_assert_str_eq(header(&d, "forge.dlq.key_bytes"), "2097152");
    cr_assert_null(header(&d, "forge.dlq.value_bytes"));
    free(key);
}

/* A request without a launch_id, holding an ingest token and secret_env
 * values: the copy has them replaced and everything else as sent, in its
 * order; a header says what was replaced (issue 40). */
Test(dlq, the_copy_of_a_request_never_holds_its_secrets)
{
    static const char value[] =
        "{\"kind\": \"launch\", \"image\": {\"path\": \"i.sif\"}, "
        "\"ingest\": {\"endpoint\": \"https://in.example\", \"token\": "
        "\"tok-SECRET-1\"}, \"secret_env\": {\"API_KEY\": \"sek-SECRET-2\", "
        "\"N\": 7}, \"env\": {\"PLAIN\": \"p\"}}";
    forge_kafka_message_t m = {2, 77, "k", 1, value, sizeof(value) - 1};
    forge_error_t e = parse_error();
    forge_dlq_record_t d;
    char digest[FORGE_SHA256_HEX];
    char *copy;

    forge_dlq_record(&d, "dlq", "requests", &m, &e, 1000000);
    copy = strndup(d.record.value, d.record.value_len);
    cr_assert_null(strstr(copy, "SECRET"), "%s", copy);
    cr_assert_str_eq(copy,
                     "{\"kind\":\"launch\",\"image\":{\"path\":\"i.sif\"},"
                     "\"ingest\":{\"endpoint\":\"https://in.example\","
                     "\"token\":\"[REDACTED]\"},\"secret_env\":{\"API_KEY\":"
                     "\"[REDACTED]\",\"N\":\"[REDACTED]\"},\"env\":{\"PLAIN\":"
                     "\"p\"}}");
    cr_assert_str_eq(header(&d, "forge.dlq.redacted"),
                     "ingest.token,secret_env");
    cr_assert_str_eq(header(&d, "forge.source.offset"), "77");
    forge_sha256_hex(value, sizeof(value) - 1, digest);
    cr_assert_str_eq(header(&d, "forge.dlq.value_sha256"), digest,
                     "the original's: it finds the message");
    cr_assert_null(header(&d, "forge.dlq.value_bytes"), "not cut");
    free(copy);
    forge_dlq_record_clear(&d);
}

/* Nothing to replace (no secret field, or no JSON object): the bytes as
 * they were, no header. */
Test(dlq, a_copy_without_secrets_is_the_message_itself)
{
    static const char plain[] = "{\"kind\": \"launch\", \"ingest\": "
                                "{\"endpoint\": \"https://in.example\"}}";
    static const char *const others[] = {plain, "[1, 2]", "{\"token\": 5",
                                         "\"ingest\""};
    forge_error_t e = parse_error();

    for (size_t i = 0; i < sizeof(others) / sizeof(*others); i++) {
        forge_kafka_message_t m = {0, 1, NULL, 0, others[i], strlen(others[i])};
        forge_dlq_record_t d;
        forge_dlq_record(&d, "dlq", "requests", &m, &e, 1000000);
        cr_assert_eq(d.record.value, others[i], "%s", others[i]);
        cr_assert_null(header(&d, "forge.dlq.redacted"));
        forge_dlq_record_clear(&d);
    }
}
