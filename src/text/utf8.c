/* SPDX-License-Identifier: Apache-2.0 */
/*
 * utf8.c - UTF-8 sequences, counts and boundaries (utf8.h).
 */
#include "text/utf8.h"

#include <stdbool.h>

static bool is_continuation(unsigned char c)
{
    return (c & 0xC0) == 0x80;
}

size_t forge_utf8_len(const unsigned char *p, size_t left)
{
    unsigned char lo = 0x80, hi = 0xBF;
    size_t n;

    if (p[0] < 0x80)
        return 1;
    if (p[0] < 0xC2 || p[0] > 0xF4)
        return 0;
    n = p[0] < 0xE0 ? 2 : p[0] < 0xF0 ? 3 : 4;
    if (p[0] == 0xE0)
        lo = 0xA0; /* overlong */
    else if (p[0] == 0xED)
        hi = 0x9F; /* surrogates */
    else if (p[0] == 0xF0)
        lo = 0x90; /* overlong */
    else if (p[0] == 0xF4)
        hi = 0x8F; /* past U+10FFFF */
    if (n > left || p[1] < lo || p[1] > hi)
        return 0;
    for (size_t i = 2; i < n; i++)
        if (!is_continuation(p[i]))
            return 0;
    return n;
}

size_t forge_utf8_count(const char *s, size_t n)
{
    size_t count = 0;

    for (size_t i = 0; i < n; i++)
        if (!is_continuation((unsigned char)s[i]))
            count++;
    return count;
}

size_t forge_utf8_boundary(const unsigned char *s, size_t len, size_t at)
{
    while (at < len && is_continuation(s[at]))
        at++;
    return at;
}
