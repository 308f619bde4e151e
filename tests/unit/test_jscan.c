/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_jscan.c - the borrowed-bytes JSON scanner (json/jscan.h): it reads
 * byte for byte only what jansson would give the same (plain strings,
 * plain integers), reports escapes instead of reading them, and skips
 * any value. Its two callers hold their fast paths to jansson's answers
 * (test_launch.c, test_held.c); these are its own edges.
 */
#include "json/jscan.h"

#include <criterion/criterion.h>
#include <string.h>

static forge_jscan_t of(const char *text)
{
    return (forge_jscan_t){text, text + strlen(text)};
}

Test(jscan, strings_are_borrowed_and_escapes_reported)
{
    forge_jscan_t s = of("  \"abc\" \"a\\\"b\" \"caf\xc3\xa9\" \"open");
    forge_jscan_text_t t;
    bool escaped;

    cr_assert(forge_jscan_string(&s, &t, &escaped));
    cr_assert_eq(t.n, 3);
    cr_assert(forge_jscan_is(t, "abc"));
    cr_assert_not(escaped);
    cr_assert(forge_jscan_string(&s, &t, &escaped));
    cr_assert(escaped, "the raw text is not the value");
    cr_assert_eq(t.n, 4);
    cr_assert_not(forge_jscan_plain(&s, &t), "not ASCII: jansson's to read");
    cr_assert_not(forge_jscan_string(&s, &t, &escaped), "never ends");
    s = of("\"a\\\"b\"");
    cr_assert_not(forge_jscan_plain(&s, &t), "an escape: give up");
    s = of("12");
    cr_assert_not(forge_jscan_string(&s, &t, &escaped), "not a string");
}

Test(jscan, only_plain_integers)
{
    static const struct {
        const char *text;
        bool ok;
        long long v;
    } cases[] = {
        {"0", true, 0},
        {"-42", true, -42},
        {" 123456789012345678", true, 123456789012345678LL},
        {"1234567890123456789", false, 0},
        {"01", false, 0},
        {"1.5", false, 0},
        {"1e3", false, 0},
        {"-", false, 0},
        {"x", false, 0},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        forge_jscan_t s = of(cases[i].text);
        long long v;
        cr_assert_eq(forge_jscan_int(&s, &v), cases[i].ok, "%s", cases[i].text);
        if (cases[i].ok)
            cr_assert_eq(v, cases[i].v, "%s", cases[i].text);
    }
}

static bool count_member(void *ctx, forge_jscan_text_t key, bool escaped,
                         forge_jscan_t *s, int depth)
{
    (void)key;
    (void)escaped;
    ++*(int *)ctx;
    return forge_jscan_skip(s, depth);
}

Test(jscan, values_are_skipped_and_members_walked)
{
    forge_jscan_t s = of("{\"a\": [1, {\"b\": \"x\\\"}\"}, true, null, -1.5e3],"
                         " \"c\": {}, \"d\": []} tail");
    int n = 0;
    char deep[2 * (FORGE_JSCAN_DEPTH + 2) + 1];

    cr_assert(forge_jscan_members(&s, 0, count_member, &n));
    cr_assert_eq(n, 3);
    cr_assert(forge_jscan_word(&s, "tail"));
    cr_assert_eq(forge_jscan_peek(&s), '\0', "the end");
    cr_assert_not(forge_jscan_eat(&s, '}'));
    memset(deep, '[', FORGE_JSCAN_DEPTH + 2);
    memset(deep + FORGE_JSCAN_DEPTH + 2, ']', FORGE_JSCAN_DEPTH + 2);
    deep[sizeof(deep) - 1] = '\0';
    s = of(deep);
    cr_assert_not(forge_jscan_skip(&s, 0), "nesting deeper than the bound");
    s = of("{\"a\" 1}");
    cr_assert_not(forge_jscan_members(&s, 0, count_member, &n), "no colon");
}

/* Long runs are read eight bytes at a time: a special byte is found at
 * every position of a run, whatever its neighbours. */
Test(jscan, a_special_byte_is_found_anywhere_in_a_long_run)
{
    static const char specials[] = {'"',    '\\',   '\x01',
                                    '\x1f', '\x7f', (char)0xc3};

    for (size_t k = 0; k < sizeof(specials); k++)
        for (size_t at = 0; at < 24; at++) {
            char text[40];
            forge_jscan_t s;
            forge_jscan_text_t t;
            bool escaped, plain;

            memset(text, 'A', sizeof(text));
            text[0] = '"';
            text[1 + at] = specials[k];
            text[30] = '"';
            s = (forge_jscan_t){text, text + 31};
            if (specials[k] == '"') {
                cr_assert(forge_jscan_string(&s, &t, &escaped));
                cr_assert_eq(t.n, at, "%zu", at);
                continue;
            }
            cr_assert(forge_jscan_string(&s, &t, &escaped));
            cr_assert_eq(t.n, 29, "%zu", at);
            cr_assert_eq(escaped, specials[k] == '\\', "%zu %zu", k, at);
            s = (forge_jscan_t){text, text + 31};
            plain = forge_jscan_plain(&s, &t);
            cr_assert_not(plain, "byte %zu at %zu", k, at);
        }
}
