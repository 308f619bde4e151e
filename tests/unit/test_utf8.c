/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_utf8.c - UTF-8 once (utf8.h): which sequences are valid (strict,
 * as jansson is), how many characters a string holds, where a cut may go.
 */
#include "text/utf8.h"

#include <criterion/criterion.h>
#include <string.h>

static size_t len_of(const char *s)
{
    return forge_utf8_len((const unsigned char *)s, strlen(s));
}

Test(utf8, valid_sequences_of_one_to_four_bytes)
{
    cr_assert_eq(len_of("a"), 1);
    cr_assert_eq(len_of("\x7f"), 1);
    cr_assert_eq(len_of("\xc3\xa9"), 2);         /* é */
    cr_assert_eq(len_of("\xe2\x82\xac"), 3);     /* € */
    cr_assert_eq(len_of("\xf0\x9f\x98\x80"), 4); /* U+1F600 */
    cr_assert_eq(len_of("\xf4\x8f\xbf\xbf"), 4); /* U+10FFFF */
}

Test(utf8, overlong_surrogate_and_out_of_range_are_refused)
{
    cr_assert_eq(len_of("\xc0\xaf"), 0);         /* overlong '/' */
    cr_assert_eq(len_of("\xc1\xbf"), 0);         /* overlong */
    cr_assert_eq(len_of("\xe0\x80\xaf"), 0);     /* overlong */
    cr_assert_eq(len_of("\xf0\x80\x80\xaf"), 0); /* overlong */
    cr_assert_eq(len_of("\xed\xa0\x80"), 0);     /* U+D800 */
    cr_assert_eq(len_of("\xf4\x90\x80\x80"), 0); /* past U+10FFFF */
    cr_assert_eq(len_of("\xf5\x80\x80\x80"), 0);
    cr_assert_eq(len_of("\x80"), 0); /* a continuation byte alone */
}

Test(utf8, a_sequence_cut_short_is_refused)
{
    cr_assert_eq(forge_utf8_len((const unsigned char *)"\xe2\x82\xac", 2), 0);
    cr_assert_eq(len_of("\xe2\x82"), 0);
    cr_assert_eq(len_of("\xe2\x82x"), 0);
    cr_assert_eq(len_of("\xf0\x9f\x98"), 0);
}

Test(utf8, count_is_characters_not_bytes)
{
    const char *s = "a\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80";

    cr_assert_eq(forge_utf8_count(s, strlen(s)), 4);
    cr_assert_eq(forge_utf8_count("", 0), 0);
}

Test(utf8, boundary_skips_to_the_next_character)
{
    const unsigned char *s = (const unsigned char *)"\xe2\x82\xac"
                                                    "b";

    cr_assert_eq(forge_utf8_boundary(s, 4, 0), 0);
    cr_assert_eq(forge_utf8_boundary(s, 4, 1), 3);
    cr_assert_eq(forge_utf8_boundary(s, 4, 2), 3);
    cr_assert_eq(forge_utf8_boundary(s, 4, 3), 3);
    cr_assert_eq(forge_utf8_boundary(s, 2, 1), 2); /* never past len */
}
