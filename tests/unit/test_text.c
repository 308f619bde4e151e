/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_text.c - the checks on text that configuration, requests and the
 * catalogues share (text.h): control characters, the name shape and
 * http(s) URLs, plain and as a base URL.
 */
#include "text/text.h"

#include <criterion/criterion.h>
#include <string.h>

Test(text, control_characters_below_space_and_del)
{
    cr_assert_not(forge_text_has_control(""));
    cr_assert_not(forge_text_has_control("plain text, ünïcode ok ~"));
    cr_assert(forge_text_has_control("tab\there"));
    cr_assert(forge_text_has_control("line\n"));
    cr_assert(forge_text_has_control("\x1f"));
    cr_assert(forge_text_has_control("del\x7f"));
}

Test(text, names_start_with_a_letter_or_digit_then_extra)
{
    cr_assert(forge_text_is_name("a", "._-", 64));
    cr_assert(forge_text_is_name("0abc.d_e-f", "._-", 64));
    cr_assert_not(forge_text_is_name("", "._-", 64));
    cr_assert_not(forge_text_is_name(".hidden", "._-", 64));
    cr_assert_not(forge_text_is_name("-x", "._-", 64));
    cr_assert_not(forge_text_is_name("a b", "._-", 64));
    cr_assert_not(forge_text_is_name("a@b", "._-", 64));
    cr_assert(forge_text_is_name("a@b", "._@-", 64));
    cr_assert_not(forge_text_is_name("caf\xc3\xa9", "._-", 64));
}

Test(text, names_are_at_most_max_characters)
{
    char name[66];

    memset(name, 'x', 65);
    name[65] = '\0';
    cr_assert_not(forge_text_is_name(name, "", 64));
    name[64] = '\0';
    cr_assert(forge_text_is_name(name, "", 64));
}

Test(text, http_urls_have_a_scheme_something_after_it_and_no_space)
{
    cr_assert(forge_text_is_http_url("http://h", 0));
    cr_assert(forge_text_is_http_url("https://h:6820/a?b#c", 0));
    cr_assert(forge_text_is_http_url("https:///path", 0));
    cr_assert_not(forge_text_is_http_url("https://", 0));
    cr_assert_not(forge_text_is_http_url("ftp://h", 0));
    cr_assert_not(forge_text_is_http_url("HTTP://h", 0));
    cr_assert_not(forge_text_is_http_url("http://h /x", 0));
    cr_assert_not(forge_text_is_http_url("http://h\t", 0));
}

Test(text, base_urls_need_a_host_and_no_query_or_fragment)
{
    cr_assert(forge_text_is_http_url("http://slurmrestd:6820", FORGE_URL_BASE));
    cr_assert(forge_text_is_http_url("https://h/slurm/", FORGE_URL_BASE));
    cr_assert_not(forge_text_is_http_url("http:///x", FORGE_URL_BASE));
    cr_assert_not(forge_text_is_http_url("http://:6820", FORGE_URL_BASE));
    cr_assert_not(forge_text_is_http_url("http://h/?a=1", FORGE_URL_BASE));
    cr_assert_not(forge_text_is_http_url("http://h/#top", FORGE_URL_BASE));
    cr_assert_not(forge_text_is_http_url("http://", FORGE_URL_BASE));
}
