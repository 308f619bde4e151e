/* SPDX-License-Identifier: Apache-2.0 */
/*
 * jscan.c - the borrowed-bytes JSON scanner (jscan.h).
 */
#include "json/jscan.h"

#include <stdint.h>
#include <string.h>

/* Each byte inside a string: 0 ordinary (printable ASCII), 1 the closing
 * quote, 2 a backslash, 3 outside printable ASCII. The common case, a run
 * of ordinary bytes (a sealed request's long base64 text), is one lookup
 * a byte. */
static const unsigned char string_class[256] = {
    3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3,
    3, 3, 3, 3, 3, 3, 3, 3, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3,
    3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3,
    3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3,
    3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3,
    3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3,
    3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3,
};

/* Eight bytes at a time (SWAR): whether any is below 0x20, above 0x7e, a
 * quote or a backslash; bit 7 of each such byte set. */
#define ONES       0x0101010101010101ULL
#define HIGHS      0x8080808080808080ULL
#define LESS(x, n) (((x)-ONES * (n)) & ~(x)&HIGHS)
#define MORE(x, n) ((((x) + ONES * (127 - (n))) | (x)) & HIGHS)
static bool any_special(uint64_t w)
{
    return (LESS(w, 0x20) | MORE(w, 0x7e) | LESS(w ^ (ONES * '"'), 1) |
            LESS(w ^ (ONES * '\\'), 1)) != 0;
}

/* Past the ordinary bytes from p (string_class 0): eight at a time while
 * none is special, then one at a time. */
static const unsigned char *ordinary_run(const unsigned char *p,
                                         const unsigned char *end)
{
    uint64_t w;

    while (end - p >= 8) {
        memcpy(&w, p, sizeof(w));
        if (any_special(w))
            break;
        p += 8;
    }
    while (p < end && string_class[*p] == 0)
        p++;
    return p;
}

/* The string at s: raw text, whether it holds an escape, whether it is
 * printable ASCII throughout. */
static bool scan_string(forge_jscan_t *s, forge_jscan_text_t *t, bool *escaped,
                        bool *printable)
{
    const unsigned char *p, *end = (const unsigned char *)s->end;

    if (!forge_jscan_eat(s, '"'))
        return false;
    t->p = s->p;
    *escaped = false;
    *printable = true;
    for (p = (const unsigned char *)s->p; p < end; p++) {
        p = ordinary_run(p, end);
        if (p == end || string_class[*p] == 1)
            break;
        if (string_class[*p] == 2) {
            *escaped = true;
            if (++p == end) /* the escaped byte, whatever it is */
                break;
        } else {
            *printable = false;
        }
    }
    if (p >= end)
        return false;
    s->p = (const char *)p + 1;
    t->n = (size_t)((const char *)p - t->p);
    return true;
}

bool forge_jscan_string(forge_jscan_t *s, forge_jscan_text_t *t, bool *escaped)
{
    bool printable;

    return scan_string(s, t, escaped, &printable);
}

bool forge_jscan_plain(forge_jscan_t *s, forge_jscan_text_t *t)
{
    bool escaped, printable;

    return scan_string(s, t, &escaped, &printable) && !escaped && printable;
}

bool forge_jscan_int(forge_jscan_t *s, long long *v)
{
    bool minus;
    int digits = 0;

    forge_jscan_ws(s);
    minus = s->p < s->end && *s->p == '-';
    s->p += minus;
    *v = 0;
    while (s->p < s->end && *s->p >= '0' && *s->p <= '9' && digits < 19) {
        *v = *v * 10 + (*s->p++ - '0');
        digits++;
    }
    if (digits == 0 || digits > 18 || (digits > 1 && s->p[-digits] == '0') ||
        (s->p < s->end && (*s->p == '.' || *s->p == 'e' || *s->p == 'E' ||
                           (*s->p >= '0' && *s->p <= '9'))))
        return false;
    if (minus)
        *v = -*v;
    return true;
}

bool forge_jscan_members(forge_jscan_t *s, int depth, forge_jscan_member_fn fn,
                         void *ctx)
{
    forge_jscan_text_t key;
    bool escaped;

    if (!forge_jscan_eat(s, '{'))
        return false;
    if (forge_jscan_eat(s, '}'))
        return true;
    do {
        if (!forge_jscan_string(s, &key, &escaped) ||
            !forge_jscan_eat(s, ':') || !fn(ctx, key, escaped, s, depth + 1))
            return false;
    } while (forge_jscan_eat(s, ','));
    return forge_jscan_eat(s, '}');
}

static bool skip_member(void *ctx, forge_jscan_text_t key, bool escaped,
                        forge_jscan_t *s, int depth)
{
    (void)ctx;
    (void)key;
    (void)escaped;
    return forge_jscan_skip(s, depth);
}

bool forge_jscan_skip(forge_jscan_t *s, int depth)
{
    forge_jscan_text_t t;
    bool escaped;
    char c = forge_jscan_peek(s);

    if (depth > FORGE_JSCAN_DEPTH || !c)
        return false;
    if (c == '"')
        return forge_jscan_string(s, &t, &escaped);
    if (c == '{')
        return forge_jscan_members(s, depth, skip_member, NULL);
    if (c == '[') {
        s->p++;
        if (forge_jscan_eat(s, ']'))
            return true;
        do {
            if (!forge_jscan_skip(s, depth + 1))
                return false;
        } while (forge_jscan_eat(s, ','));
        return forge_jscan_eat(s, ']');
    }
    t.p = s->p; /* a number, true, false or null */
    while (s->p < s->end && *s->p && strchr("-+.0123456789eEtrufalsn", *s->p))
        s->p++;
    return s->p > t.p;
}
