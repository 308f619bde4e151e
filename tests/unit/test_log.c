/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_log.c - src/log/log.c: line formats, levels, and above all redaction: a
 * secret passed anywhere into a log call (message, argument, field key or
 * value, worker id), in any spelling the encoder could produce, never
 * reaches the output.
 */
#include "log/log.h"
#include "secrets/secrets.h"

#include <criterion/criterion.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static FILE *sink;

static void setup(void)
{
    sink = tmpfile();
    cr_assert_not_null(sink);
    forge_log_reset();
    forge_log_configure(FORGE_LOG_DEBUG, FORGE_LOG_JSON, fileno(sink), "w-1");
}

static void teardown(void)
{
    forge_log_reset();
    fclose(sink);
}

/* Everything written so far (new, free()). */
static char *output(void)
{
    long n;
    char *s;

    fflush(sink);
    n = lseek(fileno(sink), 0, SEEK_END);
    s = calloc(1, (size_t)n + 1);
    cr_assert_eq(pread(fileno(sink), s, (size_t)n, 0), n);
    return s;
}

static json_t *only_line(void)
{
    char *out = output();
    json_error_t jerr;
    json_t *line = json_loads(out, 0, &jerr);

    cr_assert_not_null(line, "not one JSON line: %s (%s)", out, jerr.text);
    free(out);
    return line;
}

TestSuite(log, .init = setup, .fini = teardown);

Test(log, json_line_has_time_level_worker_message_fields)
{
    forge_log_field_t f[] = {{"launch_id", "L1"}, {"partition", "3"}};
    json_t *line;

    forge_log_fields(FORGE_LOG_INFO, f, 2, "submitted %d job", 1);
    line = only_line();
    cr_assert_str_eq(json_string_value(json_object_get(line, "level")), "info");
    cr_assert_str_eq(json_string_value(json_object_get(line, "worker")), "w-1");
    cr_assert_str_eq(json_string_value(json_object_get(line, "msg")),
                     "submitted 1 job");
    cr_assert_str_eq(json_string_value(json_object_get(line, "launch_id")),
                     "L1");
    cr_assert_str_eq(json_string_value(json_object_get(line, "partition")),
                     "3");
    const char *ts = json_string_value(json_object_get(line, "ts"));
    cr_assert_eq(strlen(ts), strlen("2026-12-02T16:53:56.123Z"), "%s", ts);
    cr_assert_eq(ts[23], 'Z');
    json_decref(line);
}

Test(log, levels_below_the_threshold_are_dropped)
{
    char *out;

    forge_log_configure(FORGE_LOG_WARN, FORGE_LOG_JSON, fileno(sink), NULL);
    forge_log_debug("d");
    forge_log_info("i");
    forge_log_warn("w");
    forge_log_error("e");
    out = output();
    cr_assert_null(strstr(out, "\"msg\":\"d\""));
    cr_assert_null(strstr(out, "\"msg\":\"i\""));
    cr_assert_not_null(strstr(out, "\"msg\":\"w\""));
    cr_assert_not_null(strstr(out, "\"msg\":\"e\""));
    cr_assert_not(forge_log_enabled(FORGE_LOG_INFO));
    free(out);
}

Test(log, text_format_escapes_control_characters)
{
    forge_log_field_t f[] = {{"k", "v"}};
    char *out;

    forge_log_configure(FORGE_LOG_INFO, FORGE_LOG_TEXT, fileno(sink), "w-2");
    forge_log_fields(FORGE_LOG_WARN, f, 1, "line\nbreak");
    out = output();
    cr_assert_not_null(strstr(out, " warn  worker=w-2 line\\x0abreak k=v\n"),
                       "%s", out);
    cr_assert_eq(strchr(out, '\n'), out + strlen(out) - 1, "one line: %s", out);
    free(out);
}

Test(log, invalid_utf8_still_gives_valid_json)
{
    json_t *line;

    forge_log_info("bad \xff\xfe bytes \xc3");
    line = only_line();
    cr_assert_str_eq(json_string_value(json_object_get(line, "msg")),
                     "bad \xef\xbf\xbd\xef\xbf\xbd bytes \xef\xbf\xbd");
    json_decref(line);
}

/* ---- redaction ------------------------------------------------------- */

/* Asserts neither the secret nor its JSON-escaped spelling is in out. */
static void assert_absent(const char *out, const char *secret)
{
    json_t *s = json_string(secret);
    char *escaped = json_dumps(s, JSON_ENCODE_ANY);

    cr_assert_null(strstr(out, secret), "secret leaked: %s", out);
    escaped[strlen(escaped) - 1] = '\0';
    cr_assert_null(strstr(out, escaped + 1), "escaped secret leaked: %s", out);
    free(escaped);
    json_decref(s);
}

static const char *const secrets[] = {
    "ingest-tok-3f9a8b7c6d5e",
    "with\"quote\\and\nnewline",
    "unicode-\xc3\xa9\xe2\x82\xac-token",
    "$(rm -rf /)`id`",
};

Test(log, registered_secret_never_reaches_output_anywhere)
{
    for (size_t i = 0; i < sizeof(secrets) / sizeof(secrets[0]); i++) {
        const char *s = secrets[i];
        forge_log_field_t f[] = {{"endpoint", s}, {s, "value"}};
        char *out;

        cr_assert_eq(forge_secret_add(s), FORGE_OK);
        forge_log_configure(FORGE_LOG_DEBUG, FORGE_LOG_JSON, fileno(sink), s);
        forge_log_fields(FORGE_LOG_INFO, f, 2, "token=%s and again %s.", s, s);
        forge_log_configure(FORGE_LOG_DEBUG, FORGE_LOG_TEXT, fileno(sink), s);
        forge_log_fields(FORGE_LOG_ERROR, f, 2, "%s%s", s, s);
        out = output();
        assert_absent(out, s);
        cr_assert_not_null(strstr(out, FORGE_REDACTED));
        free(out);
        forge_secret_remove(s);
    }
}

Test(log, text_around_a_secret_is_kept)
{
    json_t *line;

    cr_assert_eq(forge_secret_add("s3cr3t-value"), FORGE_OK);
    forge_log_info("before s3cr3t-value after");
    line = only_line();
    cr_assert_str_eq(json_string_value(json_object_get(line, "msg")),
                     "before " FORGE_REDACTED " after");
    json_decref(line);
}

Test(log, jwt_shaped_strings_are_redacted_unregistered)
{
    const char *jwt = "eyJhbGciOiJIUzI1NiJ9.eyJzdW4iOiJmb3JnZSIsImV4cCI6MX0."
                      "c2lnbmF0dXJlLWJ5dGVz";
    forge_log_field_t f[] = {{"header", jwt}};
    char *out;

    forge_log_fields(FORGE_LOG_INFO, f, 1, "X-SLURM-USER-TOKEN: %s", jwt);
    out = output();
    assert_absent(out, jwt);
    cr_assert_null(strstr(out, "c2lnbmF0dXJlLWJ5dGVz"));
    free(out);
}

Test(log, fields_named_like_secrets_are_blanked)
{
    forge_log_field_t f[] = {{"token", "short"},
                             {"Authorization", "Bearer abc"},
                             {"ingest_credentials", "xyz1"},
                             {"launch_id", "visible"}};
    char *out;

    forge_log_fields(FORGE_LOG_INFO, f, 4, "m");
    out = output();
    cr_assert_null(strstr(out, "short"));
    cr_assert_null(strstr(out, "Bearer abc"));
    cr_assert_null(strstr(out, "xyz1"));
    cr_assert_not_null(strstr(out, "visible"));
    free(out);
}

Test(log, overlapping_secrets_leave_no_fragment)
{
    char *out;

    cr_assert_eq(forge_secret_add("abcd1234"), FORGE_OK);
    cr_assert_eq(forge_secret_add("1234wxyz"), FORGE_OK);
    cr_assert_eq(forge_secret_add("abcd"), FORGE_OK);
    forge_log_info("[abcd1234wxyz]");
    out = output();
    cr_assert_null(strstr(out, "1234"), "%s", out);
    cr_assert_null(strstr(out, "wxyz"), "%s", out);
    cr_assert_null(strstr(out, "abcd"), "%s", out);
    cr_assert_not_null(strstr(out, "\"[" FORGE_REDACTED "]\""), "%s", out);
    free(out);
}

Test(log, secret_at_the_truncation_boundary_does_not_leak)
{
    size_t n = 64 * 1024 + 100;
    char *msg = malloc(n + 1), *out;
    const char *s = "tok-at-the-edge-0123456789";

    memset(msg, 'x', n);
    memcpy(msg + 64 * 1024 - 5, s, strlen(s));
    msg[n] = '\0';
    cr_assert_eq(forge_secret_add(s), FORGE_OK);
    forge_log_info("%s", msg);
    out = output();
    cr_assert_null(strstr(out, "tok-at"), "prefix of the secret leaked");
    cr_assert_not_null(strstr(out, "(truncated)"));
    free(out);
    free(msg);
}

Test(log, removed_secret_is_no_longer_redacted_and_short_ones_refused)
{
    char *out;

    cr_assert_eq(forge_secret_add("abc"), FORGE_EINVAL);
    cr_assert_eq(forge_secret_add(NULL), FORGE_EINVAL);
    cr_assert_eq(forge_secret_add("public-after-all"), FORGE_OK);
    forge_secret_remove("public-after-all");
    forge_log_info("public-after-all");
    out = output();
    cr_assert_not_null(strstr(out, "public-after-all"));
    free(out);
}

Test(log, redact_helper_for_other_outputs)
{
    char *r;

    cr_assert_eq(forge_secret_add("hunter2hunter2"), FORGE_OK);
    r = forge_log_redact("pw=hunter2hunter2;");
    cr_assert_str_eq(r, "pw=" FORGE_REDACTED ";");
    free(r);
}

static void assert_redacted(const char *secret, bool redacted)
{
    char *r = forge_log_redact(secret);

    if (redacted)
        cr_assert_str_eq(r, FORGE_REDACTED, "%s", secret);
    else
        cr_assert_str_eq(r, secret);
    free(r);
}

/* Two launches holding one value: it stays redacted until both let go. */
Test(log, secrets_are_counted_per_holder)
{
    cr_assert_eq(forge_secret_add("shared-token-1234"), FORGE_OK);
    cr_assert_eq(forge_secret_add("shared-token-1234"), FORGE_OK);
    forge_secret_remove("shared-token-1234");
    assert_redacted("shared-token-1234", true);
    forge_secret_remove("shared-token-1234");
    assert_redacted("shared-token-1234", false);
    forge_secret_remove("shared-token-1234"); /* one too many: no-op */
    cr_assert_eq(forge_secret_add("shared-token-1234"), FORGE_OK);
    assert_redacted("shared-token-1234", true);
}

Test(log, secrets_are_counted_once_per_value)
{
    cr_assert_eq(forge_secret_count(), 0);
    cr_assert_eq(forge_secret_add("first-secret"), FORGE_OK);
    cr_assert_eq(forge_secret_add("second-secret"), FORGE_OK);
    cr_assert_eq(forge_secret_add("first-secret"), FORGE_OK);
    cr_assert_eq(forge_secret_count(), 2,
                 "one entry per value, however many hold it");
    forge_secret_remove("second-secret");
    cr_assert_eq(forge_secret_count(), 1);
    forge_log_reset();
    cr_assert_eq(forge_secret_count(), 0, "a reset forgets every secret");
}

/* ---- threads --------------------------------------------------------- */

static void *log_many(void *arg)
{
    forge_log_field_t f[] = {{"thread", arg}};

    for (int i = 0; i < 500; i++)
        forge_log_fields(FORGE_LOG_INFO, f, 1,
                         "line %d of a longer message "
                         "to make interleaving likely if it could happen",
                         i);
    return NULL;
}

Test(log, lines_from_threads_never_interleave)
{
    pthread_t t[4];
    char names[4][8];
    char *out, *line, *save = NULL;
    int count = 0;

    for (int i = 0; i < 4; i++) {
        snprintf(names[i], sizeof(names[i]), "t%d", i);
        pthread_create(&t[i], NULL, log_many, names[i]);
    }
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    out = output();
    for (line = strtok_r(out, "\n", &save); line;
         line = strtok_r(NULL, "\n", &save), count++) {
        json_t *j = json_loads(line, 0, NULL);
        cr_assert_not_null(j, "torn line: %s", line);
        json_decref(j);
    }
    cr_assert_eq(count, 2000);
    free(out);
}

/* Many secrets (a worker holding 100,000 launches registers as many), added
 * twice and removed in another order: each stays registered until its last
 * holder removes it, and the registry ends empty (the hash index over the
 * list keeps up with slots moved by removals). */
Test(log, many_secrets_come_and_go_by_their_holders)
{
    enum { N = 3000 };
    char s[32];
    char *out;

    for (int round = 0; round < 2; round++)
        for (int i = 0; i < N; i++) {
            snprintf(s, sizeof(s), "many-secret-%05d", i);
            cr_assert_eq(forge_secret_add(s), FORGE_OK);
        }
    for (int i = 0; i < N; i += 2) { /* the even ones' first holder goes */
        snprintf(s, sizeof(s), "many-secret-%05d", i);
        forge_secret_remove(s);
    }
    cr_assert_eq(forge_secret_count(), N,
                 "a secret went while a holder still has it");
    for (int i = N - 1; i >= 0; i--) { /* odd ones twice, even ones once */
        snprintf(s, sizeof(s), "many-secret-%05d", i);
        forge_secret_remove(s);
        if (i % 2)
            forge_secret_remove(s);
        if (i == N / 2) {
            char *red = forge_log_redact("x many-secret-00007 y");
            cr_assert_str_eq(red, "x " FORGE_REDACTED " y");
            free(red);
        }
    }
    cr_assert_eq(forge_secret_count(), 0, "%zu secrets left",
                 forge_secret_count());
    forge_log_info("after many-secret-00007");
    out = output();
    cr_assert_not_null(strstr(out, "many-secret-00007"),
                       "a removed secret is still redacted");
    free(out);
}

/* Redaction finds secrets by their first bytes (at most 32) at each place
 * of a line: longer secrets, ones that share those first bytes, and ones
 * that begin where another does are all found, and a text that only
 * begins like a secret is left alone (but for the short one inside it,
 * twice). */
Test(log, secrets_found_by_their_first_bytes_whatever_their_length)
{
    const char *longer = "0123456789abcdef0123456789abcdef-long-tail-1";
    const char *sibling = "0123456789abcdef0123456789abcdef-long-tail-2";
    char *red;

    cr_assert_eq(forge_secret_add(longer), FORGE_OK);
    cr_assert_eq(forge_secret_add(sibling), FORGE_OK);
    cr_assert_eq(forge_secret_add("abcd"), FORGE_OK);
    red =
        forge_log_redact("x 0123456789abcdef0123456789abcdef-long-tail-2 y "
                         "0123456789abcdef0123456789abcdef-long-tail-3 "
                         "zabcdz 0123456789abcdef0123456789abcdef-long-tail-1");
    cr_assert_str_eq(red,
                     "x " FORGE_REDACTED " y "
                     "0123456789" FORGE_REDACTED "ef0123456789" FORGE_REDACTED
                     "ef-long-tail-3 z" FORGE_REDACTED "z " FORGE_REDACTED);
    free(red);
}

/* The search rolls its hash along the text: every occurrence of every
 * secret, at every position (the first and the last among them), of every
 * window length, is what a naive search finds too. */
Test(log, the_rolling_search_finds_what_a_naive_one_finds)
{
    char text[4096], planted[24][48];
    forge_redact_runs_t runs = {NULL, 0};
    size_t want = 0;

    srand(29);
    for (size_t i = 0; i < sizeof(text); i++)
        text[i] = (char)('a' + rand() % 3); /* few letters: many near misses */
    for (int s = 0; s < 24; s++) {
        size_t len = 4 + (size_t)s * 39 % 41; /* 4 .. 44 bytes */
        for (size_t k = 0; k < len; k++)
            planted[s][k] = (char)('a' + rand() % 4);
        planted[s][len] = '\0';
        cr_assert_eq(forge_secret_add(planted[s]), FORGE_OK);
        /* planted: at the start, at the end, and somewhere */
        memcpy(text + (s == 0   ? 0
                       : s == 1 ? sizeof(text) - len
                                : (size_t)rand() % (sizeof(text) - len)),
               planted[s], len);
    }
    for (int s = 0; s < 24; s++) {
        size_t len = strlen(planted[s]);
        bool again = false;
        for (int o = 0; o < s; o++)
            again = again || !strcmp(planted[o], planted[s]);
        for (size_t i = 0; !again && i + len <= sizeof(text); i++)
            want += !memcmp(text + i, planted[s], len);
    }
    forge_secrets_find(&runs, text, sizeof(text));
    cr_assert_eq(runs.count, want);
    for (size_t r = 0; r < runs.count; r++) {
        bool one = false;
        for (int s = 0; s < 24 && !one; s++)
            one = runs.at[r].end - runs.at[r].start == strlen(planted[s]) &&
                  !memcmp(text + runs.at[r].start, planted[s],
                          strlen(planted[s]));
        cr_assert(one, "a run at %zu is no secret", runs.at[r].start);
    }
    forge_redact_clear(&runs);
}
