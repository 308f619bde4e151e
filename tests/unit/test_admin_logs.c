/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_admin_logs.c - the printer of `forge-worker logs` (admin/logs.h),
 * fed event JSON as the logs topic carries it, its output read back from
 * memory streams: chunks in order, a re-sent chunk, overlaps, the skip and
 * restart lines, headers when there are several files, the final chunk
 * then logs_archived, the archive's tail when no chunk came, other
 * attempts, other launches, other event types and garbage ignored; and
 * what an event on the logs topic is (the kinds reconcile and the
 * command's first reading go by).
 */
#include "admin/logs.h"

#include <criterion/criterion.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LID  "train-7"
#define PATH "/srv/forge/artifacts/train-7/1/logs.tar.gz"

static FILE *out, *diag;
static char *out_buf, *diag_buf;
static size_t out_len, diag_len;
static forge_logs_printer_t *printer;

static void start(int attempt)
{
    out = open_memstream(&out_buf, &out_len);
    diag = open_memstream(&diag_buf, &diag_len);
    cr_assert(out && diag);
    printer = forge_logs_printer_new(LID, attempt, out, diag);
}

static void fx_fini(void)
{
    forge_logs_printer_destroy(printer);
    printer = NULL;
    if (out)
        fclose(out);
    if (diag)
        fclose(diag);
    free(out_buf);
    free(diag_buf);
    out = diag = NULL;
    out_buf = diag_buf = NULL;
}

TestSuite(logs_printer, .fini = fx_fini, .timeout = 30);

static const char *printed(void)
{
    fflush(out);
    return out_buf ? out_buf : "";
}

static const char *said(void)
{
    fflush(diag);
    return diag_buf ? diag_buf : "";
}

/* ---- events as the worker writes them ----------------------------------- */

/* A segment (new). */
static json_t *seg(const char *file, long long offset, const char *text)
{
    return json_pack("{s:s, s:I, s:I, s:s}", "file", file, "offset",
                     (json_int_t)offset, "length", (json_int_t)strlen(text),
                     "text", text);
}

static json_t *with(json_t *s, const char *key, json_t *v)
{
    json_object_set_new(s, key, v);
    return s;
}

/* An event of type with data (stolen), as compact JSON text (new). */
static char *event(const char *type, int attempt, const char *suffix,
                   json_t *data)
{
    char id[128];
    char *text;
    json_t *e;

    snprintf(id, sizeof(id), LID "/%d/%s", attempt, suffix);
    e = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:o}", "specversion",
                  "1.0", "id", id, "source", "forge-worker/w1", "type", type,
                  "subject", LID, "time", "2026-12-07T10:00:00.000Z",
                  "datacontenttype", "application/json", "data", data);
    text = json_dumps(e, JSON_COMPACT);
    json_decref(e);
    return text;
}

/* A chunk of the launch with segments (stolen). */
static char *chunk_of(const char *launch_id, int attempt, long n, bool final,
                      json_t *segments)
{
    char suffix[32];

    snprintf(suffix, sizeof(suffix), "log/%ld", n);
    return event(FORGE_LOGS_TYPE_CHUNK, attempt, suffix,
                 json_pack("{s:s, s:i, s:i, s:I, s:s, s:b, s:{}, s:o}",
                           "launch_id", launch_id, "attempt", attempt, "try", 1,
                           "n", (json_int_t)n, "at", "2026-12-07T10:00:00.000Z",
                           "final", final, "labels", "segments", segments));
}

static char *chunk(int attempt, long n, json_t *segments)
{
    return chunk_of(LID, attempt, n, false, segments);
}

/* The attempt's logs_archived; tail NULL: null. */
static char *archived(int attempt, const char *tail)
{
    return event(
        FORGE_LOGS_TYPE_ARCHIVED, attempt, "logs",
        json_pack(
            "{s:s, s:i, s:s, s:{s:s, s:s, s:i, s:s, s:s}, s:[], s:o}",
            "launch_id", LID, "attempt", attempt, "at",
            "2026-12-07T10:00:05.000Z", "archive", "path", PATH,
            "relative_path", "artifacts/train-7/1/logs.tar.gz", "bytes", 120,
            "sha256", "00", "format", "tar+gzip", "files", "tail",
            tail ? json_pack("{s:s, s:s}", "name", "main.out", "text", tail)
                 : json_null()));
}

/* Feeds text (freed); returns what the printer said (complete). */
static bool feed(char *text)
{
    bool done = forge_logs_printer_feed(printer, text, strlen(text));

    free(text);
    return done;
}

/* ---- order, duplicates, overlaps ----------------------------------------- */

Test(logs_printer, chunks_in_order_as_they_are)
{
    start(0);
    cr_assert_not(
        feed(chunk(1, 1, json_pack("[o]", seg("main.out", 0, "epoch 1\n")))));
    feed(chunk(1, 2, json_pack("[o]", seg("main.out", 8, "epoch 2 loss="))));
    feed(chunk(1, 3, json_pack("[o]", seg("main.out", 21, "0.5\n"))));
    cr_assert_str_eq(printed(), "epoch 1\nepoch 2 loss=0.5\n");
    cr_assert(forge_logs_printer_found(printer));
    cr_assert_not(forge_logs_printer_complete(printer));
    cr_assert_eq(forge_logs_printer_attempt(printer), 1);
    cr_assert_str_eq(said(), "", "nothing on diag before the archive");
}

Test(logs_printer, a_resent_chunk_is_printed_once)
{
    start(0);
    feed(chunk(1, 1, json_pack("[o]", seg("main.out", 0, "one\n"))));
    feed(chunk(1, 2, json_pack("[o]", seg("main.out", 4, "two\n"))));
    feed(chunk(1, 2, json_pack("[o]", seg("main.out", 4, "two\n"))));
    feed(chunk(1, 1, json_pack("[o]", seg("main.out", 0, "one\n"))));
    feed(chunk(1, 3, json_pack("[o]", seg("main.out", 8, "three\n"))));
    cr_assert_str_eq(printed(), "one\ntwo\nthree\n");
}

Test(logs_printer, an_overlap_prints_only_what_is_new)
{
    start(0);
    feed(chunk(1, 1, json_pack("[o]", seg("main.out", 0, "alpha\n"))));
    /* re-sent from the same cursor, longer: the file grew meanwhile */
    feed(chunk(1, 1, json_pack("[o]", seg("main.out", 0, "alpha\nbeta\n"))));
    /* from inside what was printed (bytes 8..10 are "ta\n") */
    feed(chunk(1, 2,
               json_pack("[o]", seg("main.out", 8, "ta\ngamma \xc3\xa9\n"))));
    cr_assert_str_eq(printed(), "alpha\nbeta\ngamma \xc3\xa9\n");
}

Test(logs_printer, an_overlap_of_replaced_bytes_is_cut_at_a_character)
{
    start(0);
    /* byte 1 was not UTF-8: U+FFFD (3 bytes) stands for it */
    feed(chunk(1, 1,
               json_pack("[o]", with(seg("main.out", 0, "a\xef\xbf\xbd"),
                                     "length", json_integer(2)))));
    /* bytes 1..2 again: the cut at 1 byte falls inside U+FFFD */
    feed(chunk(1, 2,
               json_pack("[o]", with(seg("main.out", 1, "\xef\xbf\xbdz"),
                                     "length", json_integer(2)))));
    cr_assert_str_eq(printed(), "a\xef\xbf\xbdz");
}

Test(logs_printer, a_late_chunk_adds_nothing_printed_already)
{
    start(0);
    feed(chunk(1, 1, json_pack("[o]", seg("main.out", 0, "a\n"))));
    feed(chunk(1, 3, json_pack("[o]", seg("main.out", 4, "c\n"))));
    feed(chunk(1, 2, json_pack("[o]", seg("main.out", 2, "b\n"))));
    cr_assert_str_eq(printed(), "a\nc\n", "in order of arrival, deduped");
}

/* ---- markers --------------------------------------------------------------
 */

Test(logs_printer, skipped_bytes_are_said_on_their_own_line)
{
    start(0);
    feed(chunk(1, 1, json_pack("[o]", seg("main.out", 0, "start"))));
    feed(chunk(1, 2,
               json_pack("[o]", with(seg("main.out", 1005, "late line\n"),
                                     "skipped", json_integer(1000)))));
    /* a skip whose first bytes were printed: only the rest said */
    feed(chunk(1, 3,
               json_pack("[o]", with(seg("main.out", 1100, "later\n"),
                                     "skipped", json_integer(200)))));
    feed(chunk(1, 3,
               json_pack("[o]", with(seg("main.out", 1100, "later\n"),
                                     "skipped", json_integer(200)))));
    cr_assert_str_eq(printed(),
                     "start\n"
                     "[forge-worker: 1000 bytes of main.out skipped]\n"
                     "late line\n"
                     "[forge-worker: 85 bytes of main.out skipped]\n"
                     "later\n");
}

Test(logs_printer, a_restarted_file_is_said_once_and_counted_again)
{
    start(0);
    feed(chunk(1, 1, json_pack("[o]", seg("main.out", 0, "run 1\nmore\n"))));
    feed(chunk(1, 2,
               json_pack("[o]", with(seg("main.out", 0, "run 2\n"), "restarted",
                                     json_true()))));
    feed(chunk(1, 2,
               json_pack("[o]", with(seg("main.out", 0, "run 2\n"), "restarted",
                                     json_true()))));
    feed(chunk(1, 3, json_pack("[o]", seg("main.out", 6, "after\n"))));
    /* restarted and skipped ahead at once */
    feed(chunk(1, 4,
               json_pack("[o]", with(with(seg("main.out", 40, "run 3\n"),
                                          "restarted", json_true()),
                                     "skipped", json_integer(40)))));
    cr_assert_str_eq(printed(), "run 1\nmore\n"
                                "[forge-worker: main.out restarted]\n"
                                "run 2\nafter\n"
                                "[forge-worker: main.out restarted]\n"
                                "[forge-worker: 40 bytes of main.out skipped]\n"
                                "run 3\n");
}

/* ---- several files ------------------------------------------------------- */

Test(logs_printer, several_files_get_headers)
{
    start(0);
    feed(chunk(1, 1, json_pack("[o]", seg("main.out", 0, "out 1\n"))));
    feed(chunk(1, 2,
               json_pack("[o, o]", seg("main.err", 0, "err 1\n"),
                         seg("main.out", 6, "out 2\n"))));
    feed(chunk(1, 3, json_pack("[o]", seg("main.out", 12, "out 3\n"))));
    feed(chunk(1, 4, json_pack("[o]", seg("metrics/loss.csv", 0, "1,0.5\n"))));
    cr_assert_str_eq(printed(), "out 1\n"
                                "==> main.err <==\n"
                                "err 1\n"
                                "==> main.out <==\n"
                                "out 2\n"
                                "out 3\n"
                                "==> metrics/loss.csv <==\n"
                                "1,0.5\n");
}

Test(logs_printer, a_first_chunk_of_two_files_has_both_headers)
{
    start(0);
    feed(chunk(1, 1,
               json_pack("[o, o]", seg("main.out", 0, "partial"),
                         seg("main.err", 0, "warning\n"))));
    feed(chunk(1, 2, json_pack("[o]", seg("main.out", 7, " line\n"))));
    cr_assert_str_eq(printed(), "==> main.out <==\n"
                                "partial\n"
                                "==> main.err <==\n"
                                "warning\n"
                                "==> main.out <==\n"
                                " line\n");
}

/* ---- the end ------------------------------------------------------------- */

Test(logs_printer, final_then_archived)
{
    start(0);
    feed(chunk(1, 1, json_pack("[o]", seg("main.out", 0, "working\n"))));
    cr_assert_not(feed(chunk_of(LID, 1, 2, true,
                                json_pack("[o]", seg("main.out", 8, "done")))));
    cr_assert(feed(archived(1, "working\ndone")));
    cr_assert(forge_logs_printer_complete(printer));
    cr_assert_str_eq(printed(), "working\ndone", "the tail not printed");
    cr_assert_str_eq(said(), "forge-worker: archive " PATH "\n");
    /* after the end nothing more */
    cr_assert(feed(chunk(1, 3, json_pack("[o]", seg("main.out", 12, "x\n")))));
    cr_assert(feed(archived(1, "again")));
    cr_assert_str_eq(printed(), "working\ndone");
    cr_assert_str_eq(said(), "forge-worker: archive " PATH "\n");
}

Test(logs_printer, a_final_chunk_without_segments)
{
    start(0);
    feed(chunk(1, 1, json_pack("[o]", seg("main.out", 0, "all\n"))));
    feed(chunk_of(LID, 1, 2, true, json_array()));
    cr_assert(feed(archived(1, "all\n")));
    cr_assert_str_eq(printed(), "all\n");
}

Test(logs_printer, no_chunk_prints_the_archives_tail)
{
    start(0);
    cr_assert(feed(archived(1, "last lines\nof main.out\n")));
    cr_assert_str_eq(printed(), "last lines\nof main.out\n");
    cr_assert_str_eq(said(), "forge-worker: archive " PATH "\n");
    cr_assert(forge_logs_printer_found(printer));
}

Test(logs_printer, no_chunk_and_no_tail)
{
    start(0);
    cr_assert(feed(archived(1, NULL)));
    cr_assert_str_eq(printed(), "");
    cr_assert_str_eq(said(), "forge-worker: archive " PATH "\n");
}

/* ---- what is not the attempt's ------------------------------------------- */

Test(logs_printer, other_attempts_are_ignored)
{
    start(2);
    feed(chunk(1, 1, json_pack("[o]", seg("main.out", 0, "attempt 1\n"))));
    cr_assert_not(feed(archived(1, "attempt 1\n")));
    feed(chunk(2, 1, json_pack("[o]", seg("main.out", 0, "attempt 2\n"))));
    feed(chunk(3, 1, json_pack("[o]", seg("main.out", 0, "attempt 3\n"))));
    cr_assert_str_eq(printed(), "attempt 2\n");
    cr_assert_str_eq(said(), "");
    cr_assert(feed(archived(2, NULL)));
}

Test(logs_printer, without_an_attempt_the_first_fed_is_taken)
{
    start(0);
    cr_assert_not(forge_logs_printer_found(printer));
    cr_assert_eq(forge_logs_printer_attempt(printer), 0);
    feed(chunk(3, 1, json_pack("[o]", seg("main.out", 0, "three\n"))));
    feed(chunk(4, 1, json_pack("[o]", seg("main.out", 0, "four\n"))));
    cr_assert_eq(forge_logs_printer_attempt(printer), 3);
    cr_assert_str_eq(printed(), "three\n");
}

Test(logs_printer, other_events_and_garbage_are_ignored)
{
    const char *garbage[] = {"",
                             "{",
                             "null",
                             "[1,2]",
                             "{\"type\":7}",
                             "{\"type\":\"forge.launch.log_chunk\"}",
                             "\xff\xfe not json"};
    char status[] =
        "{\"specversion\":\"1.0\",\"id\":\"" LID "/1/3\",\"type\":"
        "\"forge.launch.status_changed\",\"data\":{\"launch_id\":\"" LID
        "\",\"attempt\":1,\"seq\":3,\"state\":\"RUNNING\"}}";
    char *text;
    json_t *bad_n;

    start(0);
    for (size_t i = 0; i < sizeof(garbage) / sizeof(garbage[0]); i++)
        cr_assert_not(
            forge_logs_printer_feed(printer, garbage[i], strlen(garbage[i])));
    cr_assert_not(forge_logs_printer_feed(printer, NULL, 0), "a tombstone");
    cr_assert_not(forge_logs_printer_feed(printer, status, strlen(status)));
    feed(chunk_of("other-launch", 1, 1, false,
                  json_pack("[o]", seg("main.out", 0, "not ours\n"))));
    /* a chunk without its n; an attempt out of range */
    text = chunk(1, 1, json_pack("[o]", seg("main.out", 0, "x")));
    bad_n = json_loads(text, 0, NULL);
    free(text);
    cr_assert_not_null(bad_n);
    json_object_del(json_object_get(bad_n, "data"), "n");
    cr_assert_not(forge_logs_printer_feed_json(printer, bad_n));
    json_decref(bad_n);
    feed(chunk(0, 1, json_pack("[o]", seg("main.out", 0, "attempt 0\n"))));
    cr_assert_not(forge_logs_printer_found(printer));
    cr_assert_str_eq(printed(), "");
    cr_assert_eq(forge_logs_printer_attempt(printer), 0);
    /* a broken segment among good ones: the good ones printed */
    feed(chunk(
        1, 1,
        json_pack(
            "[o, o, o, o, o]", seg("main.out", 0, "good\n"),
            with(seg("main.out", 5, "neg\n"), "offset", json_integer(-1)),
            with(seg("main.out", 5, "no text\n"), "text", json_integer(3)),
            with(seg("", 5, "no file\n"), "x", json_null()),
            with(seg("main.out", 5, "skip 0\n"), "skipped", json_integer(0)))));
    cr_assert_str_eq(printed(), "good\n");
}

/* ---- what an event is -----------------------------------------------------
 */

Test(logs_event, kinds)
{
    char *c = chunk(2, 1, json_array());
    char *a = archived(3, NULL);
    char *o = chunk_of("other", 4, 1, false, json_array());
    int attempt = 0;

    cr_assert_eq(forge_logs_event_of(c, strlen(c), LID, &attempt),
                 FORGE_LOGS_EVENT_CHUNK);
    cr_assert_eq(attempt, 2);
    cr_assert_eq(forge_logs_event_of(a, strlen(a), NULL, &attempt),
                 FORGE_LOGS_EVENT_ARCHIVED);
    cr_assert_eq(attempt, 3);
    cr_assert_eq(forge_logs_event_of(o, strlen(o), LID, &attempt),
                 FORGE_LOGS_EVENT_NONE, "another launch's");
    cr_assert_eq(forge_logs_event_of(o, strlen(o), NULL, &attempt),
                 FORGE_LOGS_EVENT_CHUNK, "any launch's");
    cr_assert_eq(forge_logs_event_of("{}", 2, NULL, &attempt),
                 FORGE_LOGS_EVENT_NONE);
    cr_assert_eq(forge_logs_event_of(NULL, 0, NULL, &attempt),
                 FORGE_LOGS_EVENT_NONE);
    free(c);
    free(a);
    free(o);
}
