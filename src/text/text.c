/* SPDX-License-Identifier: Apache-2.0 */
/*
 * text.c - checks on text (text.h). ASCII classes by hand, never
 * <ctype.h>: a locale must not change what a name may hold.
 */
#include "text/text.h"

#include <string.h>

static bool ascii_alnum(int c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           (c >= '0' && c <= '9');
}

bool forge_text_has_control(const char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || *s == 0x7f)
            return true;
    return false;
}

bool forge_text_is_name(const char *s, const char *extra, size_t max)
{
    size_t n = strlen(s);

    if (n == 0 || n > max || !ascii_alnum((unsigned char)s[0]))
        return false;
    for (size_t i = 1; i < n; i++)
        if (!ascii_alnum((unsigned char)s[i]) && !strchr(extra, s[i]))
            return false;
    return true;
}

bool forge_text_is_http_url(const char *s, unsigned flags)
{
    const char *rest = !strncmp(s, "http://", 7)    ? s + 7
                       : !strncmp(s, "https://", 8) ? s + 8
                                                    : NULL;

    if (!rest || !*rest)
        return false;
    if ((flags & FORGE_URL_BASE) && (*rest == '/' || *rest == ':'))
        return false;
    for (; *rest; rest++)
        if (strchr(" \t\n\r\f\v", *rest) ||
            ((flags & FORGE_URL_BASE) && (*rest == '?' || *rest == '#')))
            return false;
    return true;
}
