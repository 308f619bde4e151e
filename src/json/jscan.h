/* SPDX-License-Identifier: Apache-2.0 */
/*
 * jscan.h - a JSON scanner over borrowed bytes, for the two places that
 * read JSON the worker itself wrote, often enough that a general parse
 * (a tree, every string copied) was most of their time: launch.c's
 * decoder of state records and held.c's scan of a stored request.
 *
 * It reads only what it can give byte for byte as jansson would:
 * whitespace, one character, a literal word, strings as their raw text
 * between the quotes (borrowed, never unescaped: the caller learns that a
 * string held an escape, or a byte outside printable ASCII, and gives up
 * where that matters), plain integers, and any value skipped. A caller
 * that meets what the scanner does not read the same as jansson gives up
 * and lets jansson decide, so the fast and the general reading agree
 * (test_launch.c, test_held.c, test_jscan.c hold them to it).
 *
 * Threads: none; a scanner is its caller's.
 */
#ifndef FORGE_JSCAN_H
#define FORGE_JSCAN_H

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#define FORGE_JSCAN_DEPTH 64 /* nesting skipped at most (deeper: give up) */

typedef struct forge_jscan {
    const char *p, *end;
} forge_jscan_t;

/* A string's raw text, borrowed: n bytes at p, not NUL-terminated. */
typedef struct forge_jscan_text {
    const char *p;
    size_t n;
} forge_jscan_text_t;

/* The small steps are inline: a restore takes them some 30 times a
 * record, and a word's or a name's length is then known at compile time. */
static inline void forge_jscan_ws(forge_jscan_t *s)
{
    while (s->p < s->end &&
           (*s->p == ' ' || *s->p == '\n' || *s->p == '\t' || *s->p == '\r'))
        s->p++;
}

/* The next byte after whitespace, or 0 at the end. */
static inline char forge_jscan_peek(forge_jscan_t *s)
{
    forge_jscan_ws(s);
    return s->p < s->end ? *s->p : '\0';
}

/* After whitespace: c (taken, true) or not (nothing taken). */
static inline bool forge_jscan_eat(forge_jscan_t *s, char c)
{
    forge_jscan_ws(s);
    if (s->p < s->end && *s->p == c) {
        s->p++;
        return true;
    }
    return false;
}

/* After whitespace: the literal word (true, null, ...). */
static inline bool forge_jscan_word(forge_jscan_t *s, const char *word)
{
    size_t n = strlen(word);

    forge_jscan_ws(s);
    if ((size_t)(s->end - s->p) < n || memcmp(s->p, word, n) != 0)
        return false;
    s->p += n;
    return true;
}

/*
 * A string: *t its raw text between the quotes. *escaped when it holds a
 * backslash (its text is then not its value). False: no string here, or
 * it does not end.
 */
bool forge_jscan_string(forge_jscan_t *s, forge_jscan_text_t *t, bool *escaped);

/* A plain string: no escape and only printable ASCII, so its raw text is
 * its value without a UTF-8 check. False otherwise (give up). */
bool forge_jscan_plain(forge_jscan_t *s, forge_jscan_text_t *t);

/* A plain integer of at most 18 digits (no fraction, exponent or leading
 * zero: those are jansson's to judge). */
bool forge_jscan_int(forge_jscan_t *s, long long *v);

/* Any value, skipped (strings with escapes too), nesting at most
 * FORGE_JSCAN_DEPTH below depth. */
bool forge_jscan_skip(forge_jscan_t *s, int depth);

/* An object's members in turn: fn reads (or skips) each value; false from
 * fn gives up. escaped: the key held an escape (its text is raw). */
typedef bool (*forge_jscan_member_fn)(void *ctx, forge_jscan_text_t key,
                                      bool escaped, forge_jscan_t *s,
                                      int depth);
bool forge_jscan_members(forge_jscan_t *s, int depth, forge_jscan_member_fn fn,
                         void *ctx);

/* Whether t is the text name. */
static inline bool forge_jscan_is(forge_jscan_text_t t, const char *name)
{
    return t.n == strlen(name) && !memcmp(t.p, name, t.n);
}

#endif
