/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_held.c - what the launch table keeps of a request (record/held.h):
 * read without validation from the bytes of a request the worker stored,
 * it must be what the validating parse gives (the labels events carry, the
 * secrets registered for redaction, in the same order), bare or as a
 * CloudEvent, with its pools' names, tenant and logs.live; and the kept
 * form (forge_held_to_json) read back the same.
 */
#include "record/held.h"
#include "config/config.h"
#include "render/render.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#define BODY                                                                   \
    "\"launch_id\": \"L1\", \"attempt\": 2, \"image\": {\"path\": "            \
    "\"images/a.sif\", \"format\": \"sif\"}, \"command\": [\"true\"], "        \
    "\"pools\": [{\"name\": \"main\", \"series\": \"h200\", \"nodes\": 1}], "  \
    "\"env\": {\"PLAIN\": \"not-a-secret\"}, \"secret_env\": {\"API_KEY\": "   \
    "\"secret-env-value-1\", \"PIN\": \"1234\"}, \"ingest\": {\"endpoint\": "  \
    "\"https://ingest.example\", \"token\": \"ingest-token-A\"}, \"labels\": " \
    "{\"team\": \"alignment\", \"run\": \"ppo-7\", \"empty\": \"\"}"

static const char bare[] = "{\"kind\": \"launch\", " BODY "}";
static const char event[] =
    "{\"specversion\": \"1.0\", \"id\": \"e1\", \"source\": \"s\", \"type\": "
    "\"forge.launch.requested\", \"data\": {" BODY "}}";

/* The credentials file a requeued run is staged from (render.h): the
 * same bytes from both. */
static void assert_same_credentials(const forge_held_t *a,
                                    const forge_held_t *b)
{
    forge_buf_t x = FORGE_BUF_INIT, y = FORGE_BUF_INIT;
    bool has = forge_held_credentials(a, &x);

    cr_assert_eq(has, forge_held_credentials(b, &y));
    cr_assert_eq(x.len, y.len);
    cr_assert(!x.len || !memcmp(x.data, y.data, x.len));
    forge_buf_clear(&x);
    forge_buf_clear(&y);
}

static void assert_same(const forge_held_t *a, const forge_held_t *b)
{
    cr_assert_not_null(a);
    cr_assert_not_null(b);
    cr_assert_eq(a->label_count, b->label_count);
    for (size_t i = 0; i < a->label_count; i++) {
        cr_assert_str_eq(a->labels[i].key, b->labels[i].key);
        cr_assert_str_eq(a->labels[i].value, b->labels[i].value);
    }
    cr_assert_eq(a->secret_count, b->secret_count);
    for (size_t i = 0; i < a->secret_count; i++)
        cr_assert_str_eq(a->secrets[i], b->secrets[i]);
    assert_same_credentials(a, b);
    cr_assert_eq(a->pool_count, b->pool_count);
    for (size_t i = 0; i < a->pool_count; i++)
        cr_assert_str_eq(a->pools[i], b->pools[i]);
    cr_assert_eq(!a->tenant, !b->tenant);
    if (a->tenant)
        cr_assert_str_eq(a->tenant, b->tenant);
    cr_assert_eq(a->live_logs, b->live_logs);
}

/* h written as the kept form and read back: the same. */
static void assert_kept_round_trip(const forge_held_t *h)
{
    size_t len;
    char *text = forge_held_to_json(h, &len);
    forge_held_t *back = forge_held_of_trusted(text, len), *copy;

    cr_assert_eq(len, strlen(text));
    assert_same(h, back);
    copy = forge_held_copy(back);
    assert_same(h, copy);
    forge_held_free(copy);
    forge_held_free(back);
    free(text);
}

/* What is kept restages exactly the first run's credentials file. */
static void check_credentials(const forge_request_t *req, const forge_held_t *h)
{
    forge_buf_t want = FORGE_BUF_INIT, got = FORGE_BUF_INIT;

    cr_assert(forge_render_credentials(&req->launch, &want));
    cr_assert(forge_held_credentials(h, &got));
    cr_assert_eq(got.len, want.len);
    cr_assert(!memcmp(got.data, want.data, got.len));
    cr_assert_eq(h->env_count, 1);
    cr_assert_str_eq(h->env[0].key, "PLAIN");
    cr_assert_str_eq(h->secret_env[1].key, "PIN");
    cr_assert_str_eq(h->token, "ingest-token-A");
    forge_buf_clear(&want);
    forge_buf_clear(&got);
}

static void check(const char *text)
{
    forge_request_t *req = NULL;
    forge_error_t err = {0};
    forge_held_t *parsed, *trusted;

    cr_assert_eq(forge_request_parse(text, strlen(text), &req, &err), FORGE_OK,
                 "%s", err.message);
    parsed = forge_held_of_request(req);
    trusted = forge_held_of_trusted(text, strlen(text));
    assert_same(parsed, trusted);
    cr_assert_eq(trusted->label_count, 3);
    cr_assert_str_eq(trusted->labels[1].value, "ppo-7");
    cr_assert_eq(trusted->secret_count, 3, "the token, then secret_env's");
    cr_assert_str_eq(trusted->secrets[0], "ingest-token-A");
    cr_assert_str_eq(trusted->secrets[2], "1234");
    cr_assert_eq(trusted->pool_count, 1);
    cr_assert_str_eq(trusted->pools[0], "main");
    cr_assert_null(trusted->tenant);
    cr_assert_eq(trusted->live_logs, FORGE_LIVE_LOGS_UNSET);
    check_credentials(req, trusted);
    assert_kept_round_trip(trusted);
    forge_held_free(parsed);
    forge_held_free(trusted);
    forge_request_destroy(req);
}

Test(held, a_stored_request_read_without_validation_is_what_the_parse_gives)
{
    check(bare);
}

Test(held, a_cloudevent_is_read_from_its_data)
{
    check(event);
}

Test(held, a_request_without_labels_or_secrets_keeps_its_pools)
{
    const char text[] =
        "{\"kind\": \"launch\", \"launch_id\": \"L2\", \"image\": {\"path\": "
        "\"images/a.sif\", \"format\": \"sif\"}, \"command\": [\"true\"], "
        "\"tenant\": \"team-a\", \"pools\": [{\"name\": \"main\", \"series\": "
        "\"h200\", \"nodes\": 1}, {\"series\": \"a100\", \"nodes\": 1, "
        "\"name\": \"aux\"}]}";
    forge_request_t *req = NULL;
    forge_error_t err = {0};
    forge_held_t *parsed, *trusted;

    cr_assert_eq(forge_request_parse(text, sizeof(text) - 1, &req, &err),
                 FORGE_OK, "%s", err.message);
    parsed = forge_held_of_request(req);
    trusted = forge_held_of_trusted(text, sizeof(text) - 1);
    assert_same(parsed, trusted);
    cr_assert_eq(trusted->label_count + trusted->secret_count, 0);
    cr_assert_eq(trusted->pool_count, 2);
    cr_assert_str_eq(trusted->pools[1], "aux");
    cr_assert_str_eq(trusted->tenant, "team-a");
    assert_kept_round_trip(trusted);
    cr_assert_null(forge_held_of_trusted("[1]", 3), "not an object");
    cr_assert_null(forge_held_of_request(NULL));
    cr_assert_null(forge_held_copy(NULL));
    forge_held_free(parsed);
    forge_held_free(trusted);
    forge_request_destroy(req);
}

/* The scan reads what it can and leaves the rest to jansson: either way,
 * what the validating parse gives. Escapes in kept values, unicode, values
 * of every kind around them, whitespace everywhere. */
Test(held, the_scan_and_its_fallback_agree_with_the_parse)
{
    static const char *const variants[] = {
        "{\"kind\": \"launch\", " BODY "}",
        "{\"kind\":\"launch\",\"launch_id\":\"L3\",\"image\":{\"path\":"
        "\"images/a.sif\",\"format\":\"sif\"},\"command\":[\"sh\",\"-c\","
        "\"echo \\\"hi\\\" {x} [y]\"],\"pools\":[{\"name\":\"main\","
        "\"series\":\"h200\",\"nodes\":1,\"gpus_per_node\":0}],"
        "\"labels\":{\"quote\":\"a\\\"b\",\"uni\":\"\xc3\xa9t\xc3\xa9\"},"
        "\"secret_env\":{\"K\":\"s\\\\1\"},\"time_limit_minutes\":5,"
        "\"ingest\":{\"endpoint\":\"https://i.example\",\"token\":\"t-1\"}}",
        "\n{ \"kind\" : \"launch\" , \"labels\" : { \"a\" : \"1\" } , "
        "\"launch_id\" : \"L4\" , \"image\" : { \"path\" : \"images/a.sif\" ,"
        " \"format\" : \"sif\" } , \"command\" : [ \"true\" ] , \"pools\" : "
        "[ { \"name\" : \"main\" , \"series\" : \"h200\" , \"nodes\" : 1 } ]"
        " , \"ingest\" : { \"token\" : \"tok-4\" , \"endpoint\" : "
        "\"https://i.example\" } }\n",
        "{\"kind\":\"launch\",\"launch_id\":\"L5\",\"tenant\":\"team\\u002da\","
        "\"image\":{\"path\":\"images/a.sif\",\"format\":\"sif\"},"
        "\"command\":[\"true\"],\"pools\":[{\"series\":\"h200\",\"nodes\":1,"
        "\"name\":\"ma\\u0069n\"}],\"labels\":{}}",
    };

    for (size_t i = 0; i < sizeof(variants) / sizeof(variants[0]); i++) {
        forge_request_t *req = NULL;
        forge_error_t err = {0};
        forge_held_t *parsed, *trusted;
        const char *text = variants[i];

        cr_assert_eq(forge_request_parse(text, strlen(text), &req, &err),
                     FORGE_OK, "%zu: %s", i, err.message);
        parsed = forge_held_of_request(req);
        trusted = forge_held_of_trusted(text, strlen(text));
        assert_same(parsed, trusted);
        assert_kept_round_trip(trusted);
        forge_held_free(parsed);
        forge_held_free(trusted);
        forge_request_destroy(req);
    }
}

/* More strings than a list keeps in place: the same answers. */
Test(held, many_labels_and_secrets)
{
    char text[4096];
    size_t at = 0;
    forge_request_t *req = NULL;
    forge_error_t err = {0};
    forge_held_t *parsed, *trusted;

    at += (size_t)snprintf(text + at, sizeof(text) - at,
                           "{\"kind\": \"launch\", \"launch_id\": \"L6\", "
                           "\"image\": {\"path\": \"images/a.sif\", "
                           "\"format\": \"sif\"}, \"command\": [\"true\"], "
                           "\"pools\": [{\"name\": \"main\", \"series\": "
                           "\"h200\", \"nodes\": 1}], \"labels\": {");
    for (int i = 0; i < 20; i++)
        at += (size_t)snprintf(text + at, sizeof(text) - at,
                               "%s\"k%d\": \"v%d\"", i ? ", " : "", i, i);
    at +=
        (size_t)snprintf(text + at, sizeof(text) - at, "}, \"secret_env\": {");
    for (int i = 0; i < 12; i++)
        at += (size_t)snprintf(text + at, sizeof(text) - at,
                               "%s\"S%d\": \"secret-value-%d\"", i ? ", " : "",
                               i, i);
    snprintf(text + at, sizeof(text) - at, "}}");
    cr_assert_eq(forge_request_parse(text, strlen(text), &req, &err), FORGE_OK,
                 "%s", err.message);
    parsed = forge_held_of_request(req);
    trusted = forge_held_of_trusted(text, strlen(text));
    assert_same(parsed, trusted);
    cr_assert_eq(trusted->label_count, 20);
    cr_assert_eq(trusted->secret_count, 12);
    cr_assert_str_eq(trusted->labels[19].value, "v19");
    assert_kept_round_trip(trusted);
    forge_held_free(parsed);
    forge_held_free(trusted);
    forge_request_destroy(req);
}

Test(held, a_record_from_before_the_credentials_were_kept_stages_none)
{
    /* the kept form as workers before issue 26 wrote it: secret_env
     * numbered, no env, the token among the secrets */
    static const char old[] = "{\"labels\": {}, \"secret_env\": {\"1\": "
                              "\"tok\", \"2\": \"s\"}, \"pools\": "
                              "[{\"name\": \"main\"}]}";
    forge_held_t *h = forge_held_of_trusted(old, strlen(old));
    forge_buf_t b = FORGE_BUF_INIT;

    cr_assert_eq(h->secret_count, 2, "both still redacted");
    cr_assert_eq(h->live_logs, FORGE_LIVE_LOGS_UNSET, "no logs: unset");
    cr_assert_not(forge_held_credentials(h, &b));
    cr_assert_eq(b.len, 0);
    forge_held_free(h);
}

/* logs.live survives the kept form (the record keeps only it once the job
 * id is known): unset, false and true, bare and as a CloudEvent, from the
 * parse and from the bytes, written only when set, and copied. */
Test(held, logs_live_survives_the_kept_form)
{
    static const struct {
        const char *logs;
        int live_logs;
        const char *kept; /* what the kept form holds of it; NULL: nothing */
    } cases[] = {
        {"", FORGE_LIVE_LOGS_UNSET, NULL},
        {", \"logs\": {}", FORGE_LIVE_LOGS_UNSET, NULL},
        {", \"logs\": {\"live\": true}", FORGE_LIVE_LOGS_TRUE,
         "\"logs\":{\"live\":true}"},
        {", \"logs\": {\"live\": false}", FORGE_LIVE_LOGS_FALSE,
         "\"logs\":{\"live\":false}"},
    };
    char text[2048];

    for (size_t i = 0; i < 2 * sizeof(cases) / sizeof(cases[0]); i++) {
        size_t c = i / 2;
        forge_request_t *req = NULL;
        forge_error_t err = {0};
        forge_held_t *parsed, *trusted, *back, *copy;
        size_t len;
        char *kept;

        if (i % 2)
            snprintf(text, sizeof(text),
                     "{\"specversion\": \"1.0\", \"id\": \"e1\", \"source\": "
                     "\"s\", \"type\": \"forge.launch.requested\", \"data\": "
                     "{" BODY "%s}}",
                     cases[c].logs);
        else
            snprintf(text, sizeof(text), "{\"kind\": \"launch\", " BODY "%s}",
                     cases[c].logs);
        cr_assert_eq(forge_request_parse(text, strlen(text), &req, &err),
                     FORGE_OK, "%s: %s", text, err.message);
        parsed = forge_held_of_request(req);
        trusted = forge_held_of_trusted(text, strlen(text));
        cr_assert_eq(parsed->live_logs, cases[c].live_logs, "%s", text);
        assert_same(parsed, trusted);
        kept = forge_held_to_json(trusted, &len);
        if (cases[c].kept)
            cr_assert(strstr(kept, cases[c].kept), "%s", kept);
        else
            cr_assert_null(strstr(kept, "\"logs\""), "%s", kept);
        back = forge_held_of_trusted(kept, len);
        cr_assert_eq(back->live_logs, cases[c].live_logs, "%s", kept);
        copy = forge_held_copy(back);
        cr_assert_eq(copy->live_logs, cases[c].live_logs);
        assert_same(parsed, copy);
        forge_held_free(copy);
        forge_held_free(back);
        free(kept);
        forge_held_free(parsed);
        forge_held_free(trusted);
        forge_request_destroy(req);
    }
}

/* Where the scan gives up on logs (an escaped key, a "live" that is no
 * boolean, one given twice) jansson reads the same as the parse; a kept
 * form's logs with no boolean is unset. */
Test(held, logs_live_where_the_scan_gives_up)
{
    static const struct {
        const char *text;
        int live_logs;
    } cases[] = {
        {"{\"logs\": {\"li\\u0076e\": false}, \"pools\": []}",
         FORGE_LIVE_LOGS_FALSE},
        {"{\"logs\": {\"other\": [1, {\"live\": false}], \"live\": true}}",
         FORGE_LIVE_LOGS_TRUE},
        {"{\"logs\": {\"live\": \"yes\"}}", FORGE_LIVE_LOGS_UNSET},
        {"{\"logs\": {\"live\": null}}", FORGE_LIVE_LOGS_UNSET},
        {"{\"logs\": {\"live\": true, \"live\": false}}",
         FORGE_LIVE_LOGS_FALSE},
        {"{\"logs\": true}", FORGE_LIVE_LOGS_UNSET},
        {"{\"logs\":{\"live\":true},\"tenant\":\"t\\u002d1\"}",
         FORGE_LIVE_LOGS_TRUE},
        {" { \"logs\" : { \"live\" : false } } ", FORGE_LIVE_LOGS_FALSE},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        forge_held_t *h =
            forge_held_of_trusted(cases[i].text, strlen(cases[i].text));
        cr_assert_not_null(h, "%s", cases[i].text);
        cr_assert_eq(h->live_logs, cases[i].live_logs, "%s: %d", cases[i].text,
                     h->live_logs);
        forge_held_free(h);
    }
}
