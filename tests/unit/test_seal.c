/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_seal.c - the state keys and AES-256-GCM sealing (src/record/seal.c): a
 * round trip, the key id, a fresh IV per seal, what must not open (another
 * aad, a tampered IV, ciphertext or tag, an unknown key id, a malformed
 * value), rotation (the previous key opens, the current one seals), and the
 * key files refused at start (mode, size, kind), each naming its variable.
 */
#include "record/seal.h"

#include <criterion/criterion.h>
#include <pthread.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[] = "/tmp/forge-test-seal-XXXXXX";

static void setup(void)
{
    cr_assert_not_null(mkdtemp(dir));
}

static void teardown(void)
{
    char cmd[128];

    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    cr_assert_eq(system(cmd), 0);
}

TestSuite(seal, .init = setup, .fini = teardown);

/* dir/name holding n bytes of fill (or bytes, when given), mode. New path. */
static char *key_file(const char *name, const void *bytes, size_t n, char fill,
                      mode_t mode)
{
    char *path = malloc(256), buf[128];
    int fd;

    snprintf(path, 256, "%s/%s", dir, name);
    memset(buf, fill, sizeof(buf));
    fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    cr_assert_geq(fd, 0, "%s: %s", path, strerror(errno));
    cr_assert_eq(write(fd, bytes ? bytes : buf, n), (ssize_t)n);
    close(fd);
    cr_assert_eq(chmod(path, mode), 0);
    return path;
}

static forge_sealer_t *load(const char *current, const char *previous)
{
    forge_sealer_t *s = NULL;
    forge_error_t err = {0};

    cr_assert_eq(forge_sealer_load(current, previous, &s, &err), FORGE_OK, "%s",
                 err.message);
    return s;
}

static forge_sealer_t *sealer_of(char fill)
{
    char name[16];
    char *path;
    forge_sealer_t *s;

    snprintf(name, sizeof(name), "key-%c", fill);
    path = key_file(name, NULL, FORGE_SEAL_KEY_BYTES, fill, 0600);
    s = load(path, NULL);
    free(path);
    return s;
}

static json_t *seal_ok(const forge_sealer_t *s, const char *aad,
                       const char *text)
{
    json_t *o = NULL;
    forge_error_t err = {0};

    cr_assert_eq(forge_seal(s, aad, text, strlen(text), &o, &err), FORGE_OK,
                 "%s", err.message);
    cr_assert_not_null(o);
    return o;
}

static forge_rc_t open_rc(const forge_sealer_t *s, const char *aad,
                          const json_t *o, forge_error_t *err)
{
    char *out = (char *)0x1;
    size_t len = 7;
    forge_rc_t rc = forge_unseal(s, aad, o, &out, &len, err);

    if (rc) {
        cr_assert_null(out, "nothing comes out of a failed open");
        cr_assert_eq(len, 0);
    }
    free(out);
    return rc;
}

static void assert_opens(const forge_sealer_t *s, const char *aad,
                         const json_t *o, const char *expect)
{
    char *out = NULL;
    size_t len = 0;
    forge_error_t err = {0};

    cr_assert_eq(forge_unseal(s, aad, o, &out, &len, &err), FORGE_OK, "%s",
                 err.message);
    cr_assert_eq(len, strlen(expect));
    cr_assert_str_eq(out, expect);
    free(out);
}

#define AAD    "forge-state/v1/L1/1"
#define SECRET "ingest-tok-6f1d2c3b4a59687766554433221100ff"

Test(seal, round_trip_and_nothing_in_clear)
{
    forge_sealer_t *s = sealer_of('a');
    json_t *o = seal_ok(s, AAD, "{\"ingest\":{\"token\":\"" SECRET "\"}}");
    char *text = json_dumps(o, JSON_COMPACT);

    cr_assert_null(strstr(text, SECRET), "%s", text);
    cr_assert_null(strstr(text, "ingest"), "%s", text);
    cr_assert_str_eq(json_string_value(json_object_get(o, "kid")),
                     forge_sealer_kid(s));
    cr_assert_eq(strlen(json_string_value(json_object_get(o, "iv"))), 16,
                 "96 bits, base64");
    assert_opens(s, AAD, o, "{\"ingest\":{\"token\":\"" SECRET "\"}}");
    free(text);
    json_decref(o);
    forge_sealer_destroy(s);
}

Test(seal, empty_and_binary_values_round_trip)
{
    forge_sealer_t *s = sealer_of('a');
    json_t *o = seal_ok(s, AAD, "");
    const char bin[] = "a\0b\xff";
    char *out = NULL;
    size_t len = 0;
    forge_error_t err = {0};

    assert_opens(s, AAD, o, "");
    json_decref(o);
    cr_assert_eq(forge_seal(s, AAD, bin, sizeof(bin), &o, &err), FORGE_OK);
    cr_assert_eq(forge_unseal(s, AAD, o, &out, &len, &err), FORGE_OK);
    cr_assert_eq(len, sizeof(bin));
    cr_assert_eq(memcmp(out, bin, len), 0);
    free(out);
    json_decref(o);
    forge_sealer_destroy(s);
}

Test(seal, key_id_is_the_start_of_the_keys_sha256)
{
    static const unsigned char zeros[FORGE_SEAL_KEY_BYTES] = {0};
    char *path = key_file("zeros", zeros, sizeof(zeros), 0, 0600);
    forge_sealer_t *s = load(path, NULL);

    /* sha256 of 32 zero bytes: 66687aad f862bd77 6c8fc18b ... */
    cr_assert_str_eq(forge_sealer_kid(s), "66687aadf862bd77");
    forge_sealer_destroy(s);
    free(path);
}

Test(seal, every_seal_has_its_own_iv)
{
    forge_sealer_t *s = sealer_of('a');
    json_t *a = seal_ok(s, AAD, "same"), *b = seal_ok(s, AAD, "same");

    cr_assert_str_neq(json_string_value(json_object_get(a, "iv")),
                      json_string_value(json_object_get(b, "iv")));
    cr_assert_str_neq(json_string_value(json_object_get(a, "ct")),
                      json_string_value(json_object_get(b, "ct")));
    json_decref(a);
    json_decref(b);
    forge_sealer_destroy(s);
}

Test(seal, another_aad_does_not_open)
{
    forge_sealer_t *s = sealer_of('a');
    json_t *o = seal_ok(s, AAD, SECRET);
    forge_error_t err = {0};

    cr_assert_eq(open_rc(s, "forge-state/v1/L2/1", o, &err), FORGE_ESCHEMA);
    cr_assert(strstr(err.message, "does not authenticate"), "%s", err.message);
    cr_assert_null(strstr(err.message, SECRET));
    forge_error_clear(&err);
    cr_assert_eq(open_rc(s, "forge-state/v1/L1/2", o, &err), FORGE_ESCHEMA,
                 "another attempt of the same launch");
    json_decref(o);
    forge_sealer_destroy(s);
}

static const char b64[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* Flips the high bit of one base64 digit of field at i (from the end when
 * i < 0): a bit that always counts, even in the last digit. */
static void flip(json_t *o, const char *field, long i)
{
    char *v = strdup(json_string_value(json_object_get(o, field)));
    size_t n = strlen(v), at;

    while (n && v[n - 1] == '=')
        n--;
    at = i < 0 ? n + (size_t)i : (size_t)i;
    v[at] = b64[(strchr(b64, v[at]) - b64) ^ 0x20];
    json_object_set_new(o, field, json_string(v));
    free(v);
}

Test(seal, tampering_anywhere_does_not_open)
{
    forge_sealer_t *s = sealer_of('a');
    static const struct {
        const char *field;
        long at;
    } cases[] = {
        {"ct", 0},  /* ciphertext */
        {"ct", -1}, /* tag */
        {"ct", -8}, /* tag */
        {"iv", 0},  {"iv", -1},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        json_t *o = seal_ok(s, AAD, "a request with " SECRET);
        forge_error_t err = {0};
        flip(o, cases[i].field, cases[i].at);
        cr_assert_eq(open_rc(s, AAD, o, &err), FORGE_ESCHEMA, "case %zu", i);
        json_decref(o);
    }
    forge_sealer_destroy(s);
}

/* Each thread keeps one cipher context (seal.c): keyed afresh at each
 * use, so a failed open, another key or the other direction before it
 * change nothing of the next; and another thread has its own. */
static void *open_in_thread(void *arg)
{
    const json_t *const *o = arg;
    forge_sealer_t *s = sealer_of('a');

    assert_opens(s, AAD, o[0], "one");
    forge_sealer_destroy(s);
    return NULL;
}

Test(seal, a_threads_context_carries_nothing_from_one_use_to_the_next)
{
    forge_sealer_t *a = sealer_of('a'), *b = sealer_of('b');
    json_t *one = seal_ok(a, AAD, "one"), *two = seal_ok(b, AAD, "two");
    json_t *bad = seal_ok(a, AAD, "bad");
    const json_t *arg[1] = {one};
    forge_error_t err = {0};
    pthread_t t;

    flip(bad, "ct", -1);
    cr_assert_eq(open_rc(a, AAD, bad, &err), FORGE_ESCHEMA);
    assert_opens(a, AAD, one, "one");
    cr_assert_eq(open_rc(a, "forge-state/v1/L2/1", one, &err), FORGE_ESCHEMA);
    assert_opens(b, AAD, two, "two");
    assert_opens(a, AAD, one, "one");
    cr_assert_eq(pthread_create(&t, NULL, open_in_thread, arg), 0);
    cr_assert_eq(pthread_join(t, NULL), 0);
    assert_opens(b, AAD, two, "two");
    json_decref(one);
    json_decref(two);
    json_decref(bad);
    forge_sealer_destroy(a);
    forge_sealer_destroy(b);
}

Test(seal, malformed_values_do_not_open)
{
    forge_sealer_t *s = sealer_of('a');
    json_t *good = seal_ok(s, AAD, SECRET);
    const char *kid = forge_sealer_kid(s);
    const char *iv = json_string_value(json_object_get(good, "iv"));
    const char *ct = json_string_value(json_object_get(good, "ct"));
    json_t *bad[] = {
        json_string("sealed"),
        json_pack("{s:s, s:s}", "kid", kid, "iv", iv),
        json_pack("{s:s, s:s, s:i}", "kid", kid, "iv", iv, "ct", 3),
        json_pack("{s:s, s:s, s:s}", "kid", "KID!", "iv", iv, "ct", ct),
        json_pack("{s:s, s:s, s:s}", "kid", kid, "iv", "AAAA", "ct", ct),
        json_pack("{s:s, s:s, s:s}", "kid", kid, "iv", iv, "ct", "not base64"),
        json_pack("{s:s, s:s, s:s}", "kid", kid, "iv", iv, "ct", "AAAA"),
        json_pack("{s:s, s:s, s:s}", "kid", kid, "iv", iv, "ct", ""),
    };

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        forge_error_t err = {0};
        cr_assert_eq(open_rc(s, AAD, bad[i], &err), FORGE_ESCHEMA, "case %zu",
                     i);
        json_decref(bad[i]);
    }
    json_decref(good);
    forge_sealer_destroy(s);
}

Test(seal, unknown_key_id_names_the_rotation_variable)
{
    forge_sealer_t *a = sealer_of('a'), *b = sealer_of('b');
    json_t *o = seal_ok(a, AAD, SECRET);
    forge_error_t err = {0};

    cr_assert_eq(open_rc(b, AAD, o, &err), FORGE_ECONFIG);
    cr_assert_str_eq(err.field, "FORGE_STATE_KEY_FILE_PREVIOUS");
    cr_assert(strstr(err.message, forge_sealer_kid(a)), "%s", err.message);
    forge_error_clear(&err);
    cr_assert_eq(open_rc(NULL, AAD, o, &err), FORGE_ECONFIG, "no keys at all");
    json_decref(o);
    forge_sealer_destroy(a);
    forge_sealer_destroy(b);
}

Test(seal, rotation_previous_opens_current_seals)
{
    char *old_key = key_file("old", NULL, FORGE_SEAL_KEY_BYTES, 'o', 0600);
    char *new_key = key_file("new", NULL, FORGE_SEAL_KEY_BYTES, 'n', 0400);
    forge_sealer_t *before = load(old_key, NULL);
    forge_sealer_t *during = load(new_key, old_key);
    forge_sealer_t *after = load(new_key, NULL);
    json_t *old_seal = seal_ok(before, AAD, "old " SECRET);
    json_t *new_seal = seal_ok(during, AAD, "new " SECRET);
    forge_error_t err = {0};

    assert_opens(during, AAD, old_seal, "old " SECRET);
    cr_assert_str_eq(json_string_value(json_object_get(new_seal, "kid")),
                     forge_sealer_kid(after), "new seals use the current key");
    assert_opens(after, AAD, new_seal, "new " SECRET);
    cr_assert_eq(open_rc(before, AAD, new_seal, &err), FORGE_ECONFIG);
    forge_error_clear(&err);
    cr_assert_eq(open_rc(after, AAD, old_seal, &err), FORGE_ECONFIG,
                 "the previous key dropped: old seals no longer open");
    json_decref(old_seal);
    json_decref(new_seal);
    forge_sealer_destroy(before);
    forge_sealer_destroy(during);
    forge_sealer_destroy(after);
    free(old_key);
    free(new_key);
}

/* ---- key files refused at start ----------------------------------------- */

static void assert_refused(const char *current, const char *previous,
                           const char *variable, const char *words)
{
    forge_sealer_t *s = (forge_sealer_t *)0x1;
    forge_error_t err = {0};

    cr_assert_eq(forge_sealer_load(current, previous, &s, &err), FORGE_ECONFIG,
                 "%s / %s", current, previous ? previous : "-");
    cr_assert_null(s);
    cr_assert_str_eq(err.field, variable, "%s", err.message);
    cr_assert(strstr(err.message, variable), "%s", err.message);
    cr_assert(strstr(err.message, words), "'%s' not in: %s", words,
              err.message);
}

Test(seal, key_files_open_to_others_are_refused)
{
    static const mode_t modes[] = {0640, 0604, 0660, 0620, 0602, 0610, 0644};

    for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
        char *path =
            key_file("open", NULL, FORGE_SEAL_KEY_BYTES, 'k', modes[i]);
        assert_refused(path, NULL, "FORGE_STATE_KEY_FILE", "chmod 600");
        free(path);
    }
}

Test(seal, key_files_of_the_wrong_size_are_refused)
{
    static const size_t sizes[] = {0, 16, 31, 33, 64, 65};

    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        char *path = key_file("size", NULL, sizes[i], 'k', 0600);
        assert_refused(path, NULL, "FORGE_STATE_KEY_FILE", "exactly 32");
        free(path);
    }
}

Test(seal, what_is_not_a_regular_file_is_refused, .timeout = 10)
{
    char fifo[256];

    assert_refused(dir, NULL, "FORGE_STATE_KEY_FILE", "not a regular file");
    snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
    cr_assert_eq(mkfifo(fifo, 0600), 0);
    assert_refused(fifo, NULL, "FORGE_STATE_KEY_FILE", "not a regular file");
    assert_refused("/nonexistent/forge.key", NULL, "FORGE_STATE_KEY_FILE",
                   "cannot be opened");
    assert_refused(NULL, NULL, "FORGE_STATE_KEY_FILE", "required");
}

Test(seal, a_link_to_a_private_key_file_is_fine)
{
    char *path = key_file("real", NULL, FORGE_SEAL_KEY_BYTES, 'k', 0600);
    char link[256];
    forge_sealer_t *a, *b;

    snprintf(link, sizeof(link), "%s/link", dir);
    cr_assert_eq(symlink(path, link), 0);
    a = load(link, NULL);
    b = load(path, NULL);
    cr_assert_str_eq(forge_sealer_kid(a), forge_sealer_kid(b));
    forge_sealer_destroy(a);
    forge_sealer_destroy(b);
    free(path);
}

Test(seal, a_bad_previous_key_names_its_own_variable)
{
    char *good = key_file("good", NULL, FORGE_SEAL_KEY_BYTES, 'k', 0600);
    char *open_key = key_file("open", NULL, FORGE_SEAL_KEY_BYTES, 'o', 0644);
    char *short_key = key_file("short", NULL, 8, 's', 0600);

    assert_refused(good, open_key, "FORGE_STATE_KEY_FILE_PREVIOUS",
                   "chmod 600");
    assert_refused(good, short_key, "FORGE_STATE_KEY_FILE_PREVIOUS",
                   "exactly 32");
    assert_refused(good, "/nonexistent/old.key",
                   "FORGE_STATE_KEY_FILE_PREVIOUS", "cannot be opened");
    free(good);
    free(open_key);
    free(short_key);
}
