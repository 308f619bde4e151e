/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_redact.c - secrets written over by one marker (redact.h), as the
 * log's lines and an archive's tail both use it: every occurrence found,
 * overlapping runs as one, adjacent ones each replaced, the text between
 * runs written through the caller's cleaner.
 */
#include "secrets/redact.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

/* text with each of the secrets (NULL-terminated) redacted from at. */
static char *redacted(const char *text, size_t at, const char *const *secrets)
{
    forge_redact_runs_t runs = {NULL, 0};
    forge_buf_t out = FORGE_BUF_INIT;

    for (size_t i = 0; secrets[i]; i++)
        forge_redact_find(&runs, text, strlen(text), secrets[i],
                          strlen(secrets[i]));
    forge_redact_write(&out, text, strlen(text), at, &runs, NULL);
    forge_redact_clear(&runs);
    cr_assert_null(runs.at);
    return forge_buf_take(&out);
}

#define CHECK(text, at, want, ...)                                             \
    do {                                                                       \
        const char *const s_[] = {__VA_ARGS__, NULL};                          \
        char *got_ = redacted(text, at, s_);                                   \
        cr_assert_str_eq(got_, want);                                          \
        free(got_);                                                            \
    } while (0)

Test(redact, every_occurrence_is_replaced)
{
    CHECK("a s3cret b s3cret", 0, "a [REDACTED] b [REDACTED]", "s3cret");
    CHECK("nothing here", 0, "nothing here", "s3cret");
    CHECK("s3cret", 0, FORGE_REDACTED, "s3cret");
}

Test(redact, overlapping_runs_are_one_adjacent_ones_two)
{
    CHECK("x abab y", 0, "x [REDACTED] y", "aba", "bab");
    CHECK("x aaaa y", 0, "x [REDACTED] y", "aaa"); /* overlapping itself */
    CHECK("onetwo", 0, "[REDACTED][REDACTED]", "one", "two");
    CHECK("x abcdef y", 0, "x [REDACTED] y", "abcdef", "cd");
}

Test(redact, text_before_at_is_left_out)
{
    CHECK("skip s3cret tail", 5, "[REDACTED] tail", "s3cret");
    CHECK("s3cret tail", 6, " tail", "s3cret"); /* a run before at: gone */
    CHECK("s3cret tail", 2, "[REDACTED] tail", "s3cret"); /* cut at at */
}

Test(redact, an_empty_secret_finds_nothing)
{
    forge_redact_runs_t runs = {NULL, 0};

    forge_redact_find(&runs, "abc", 3, "", 0);
    cr_assert_eq(runs.count, 0);
}

static void upper(forge_buf_t *out, const char *text, size_t n)
{
    for (size_t i = 0; i < n; i++)
        forge_buf_putc(out, (char)(text[i] >= 'a' && text[i] <= 'z'
                                       ? text[i] - 'a' + 'A'
                                       : text[i]));
}

Test(redact, text_between_runs_goes_through_put)
{
    forge_redact_runs_t runs = {NULL, 0};
    forge_buf_t out = FORGE_BUF_INIT;
    const char *text = "ab key cd key";

    forge_redact_find(&runs, text, strlen(text), "key", 3);
    forge_redact_write(&out, text, strlen(text), 0, &runs, upper);
    cr_assert_str_eq(forge_buf_str(&out), "AB [REDACTED] CD [REDACTED]");
    forge_redact_clear(&runs);
    forge_buf_clear(&out);
}
