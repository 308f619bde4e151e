/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_jdoc.c - the request document's two readings (request/jdoc.h) agree:
 * wherever the fast reader gives a tree, jansson accepts the same bytes and
 * gives the same tree (types, values, string bytes, keys and member order);
 * wherever jansson refuses, the fast reader gives up. Over the repository's
 * request documents (schema examples, render goldens, fuzz corpus), edges
 * written here, and many mutations of them (control characters, escapes,
 * non-ASCII and broken UTF-8, numbers, brackets, duplicates).
 */
#include "request/jdoc.h"
#include "base/util.h"

#include <criterion/criterion.h>
#include <glob.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool same(const forge_jv_t *a, const forge_jv_t *b)
{
    if (a->type != b->type || a->key_len != b->key_len ||
        (a->key_len && memcmp(a->key, b->key, a->key_len + 1) != 0))
        return false;
    switch (a->type) {
    case FORGE_JV_INT:
        return a->u.i == b->u.i;
    case FORGE_JV_REAL:
        return a->u.d == b->u.d;
    case FORGE_JV_STRING:
        return a->n == b->n && !memcmp(a->u.s, b->u.s, a->n + 1);
    case FORGE_JV_ARRAY:
    case FORGE_JV_OBJECT:
        if (a->n != b->n)
            return false;
        for (size_t i = 0; i < a->n; i++)
            if (!same(&a->u.kids[i], &b->u.kids[i]))
                return false;
        return true;
    default:
        return true;
    }
}

typedef struct tally {
    size_t fast, gave_up, refused;
} tally_t;

/* The two readings of buf agree; counts what happened. */
static void agree(const char *buf, size_t len, tally_t *t)
{
    forge_jdoc_t *fast = forge_jdoc_parse_fast(buf, len);
    forge_jdoc_t *slow = forge_jdoc_parse_jansson(buf, len);

    if (fast) {
        cr_assert_not_null(slow, "fast read what jansson refuses: %.*s",
                           (int)len, buf);
        cr_assert(same(forge_jdoc_root(fast), forge_jdoc_root(slow)),
                  "the readings differ: %.*s", (int)len, buf);
        t->fast++;
    } else if (slow) {
        t->gave_up++;
    } else {
        t->refused++;
    }
    forge_jdoc_free(fast);
    forge_jdoc_free(slow);
}

static void agree_text(const char *text, tally_t *t)
{
    agree(text, strlen(text), t);
}

static const char *const edges[] = {
    "{}",
    " \t\r\n{ } \n",
    "{\"a\": 1, \"b\": -0, \"c\": 123456789012345678, \"d\": 0}",
    "{\"a\": 1234567890123456789}",
    "{\"a\": 12345678901234567890123}",
    "{\"a\": 01}",
    "{\"a\": -}",
    "{\"a\": 1.5, \"b\": 2.0, \"c\": 1e3, \"d\": -0.0}",
    "{\"a\": true, \"b\": false, \"c\": null}",
    "{\"a\": truex}",
    "{\"a\": tru}",
    "{\"a\": [1, [2, [3, {}]], []]}",
    "{\"a\": [1,]}",
    "{\"a\": 1,}",
    "{\"a\" 1}",
    "{\"a\": 1 \"b\": 2}",
    "{\"a\": 1, \"a\": 2}",
    "{\"a\": {\"x\": 1}, \"b\": {\"x\": 2}}",
    "{\"a\\u0000b\": 1, \"a\": 2}",
    "{\"a\": \"x\\u0000y\"}",
    "{\"a\": \"\\\"\\\\\\/\\b\\f\\n\\r\\t\"}",
    "{\"a\": \"\\x\"}",
    "{\"a\": \"\\u00e9\\ud83d\\ude00\"}",
    "{\"a\": \"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"}",
    "{\"a\": \"\xc0\xaf\"}",
    "{\"a\": \"\xed\xa0\x80\"}",
    "{\"a\": \"\xf4\x90\x80\x80\"}",
    "{\"a\": \"\xff\"}",
    "{\"a\": \"tab\there\"}",
    "{\"a\": \"del\x7f\"}",
    "{\"a\": \"open}",
    "{\"a\": 1}x",
    "{\"a\": 1}{}",
    "[1, 2]",
    "\"text\"",
    "",
    "   ",
    "\xef\xbb\xbf{}",
    "{\"\": \"\"}",
    "{\"a\": [0.5, 1E3, -2e-2]}",
    "{\"a\": {\"b\": {\"c\": 1, \"c\": 2}}}",
};

Test(jdoc, edges_read_alike)
{
    tally_t t = {0};

    for (size_t i = 0; i < sizeof(edges) / sizeof(edges[0]); i++)
        agree_text(edges[i], &t);
    cr_assert_gt(t.fast, 5);
    cr_assert_gt(t.gave_up, 5);
    cr_assert_gt(t.refused, 5);
}

Test(jdoc, a_nul_inside_the_bytes)
{
    static const char with_nul[] = "{\"a\": \"x\0y\"}";
    tally_t t = {0};

    agree(with_nul, sizeof(with_nul) - 1, &t);
    cr_assert_eq(t.refused, 1);
}

Test(jdoc, nesting_past_the_fast_depth_is_jansson_s)
{
    char deep[2 * (FORGE_JDOC_FAST_DEPTH + 8) + 16];
    size_t n = 0, levels = FORGE_JDOC_FAST_DEPTH + 4;
    tally_t t = {0};

    n += (size_t)sprintf(deep, "{\"a\": ");
    for (size_t i = 0; i < levels; i++)
        deep[n++] = '[';
    for (size_t i = 0; i < levels; i++)
        deep[n++] = ']';
    deep[n++] = '}';
    agree(deep, n, &t);
    cr_assert_eq(t.gave_up, 1);
}

Test(jdoc, many_members_are_jansson_s)
{
    char *doc = forge_xmalloc(16 * (FORGE_JDOC_FAST_MEMBERS + 2) + 8);
    size_t n = 0;
    tally_t t = {0};

    doc[n++] = '{';
    for (int i = 0; i <= FORGE_JDOC_FAST_MEMBERS; i++)
        n += (size_t)sprintf(doc + n, "%s\"k%d\": %d", i ? ", " : "", i, i);
    doc[n++] = '}';
    agree(doc, n, &t);
    cr_assert_eq(t.gave_up, 1);
    free(doc);
}

/* Every request document the repository holds. */
static size_t load_corpus(char ***docs, size_t **lens)
{
    static const char *const patterns[] = {
        FORGE_SOURCE_DIR "/schemas/examples/*/*.json",
        FORGE_SOURCE_DIR "/tests/data/render/*/request.json",
        FORGE_SOURCE_DIR "/tests/fuzz/corpus/*",
    };
    size_t count = 0;

    *docs = NULL;
    *lens = NULL;
    for (size_t p = 0; p < sizeof(patterns) / sizeof(patterns[0]); p++) {
        glob_t g;
        if (glob(patterns[p], 0, NULL, &g) != 0)
            continue;
        for (size_t i = 0; i < g.gl_pathc; i++) {
            char *buf = NULL;
            size_t len = 0;
            if (forge_read_file(g.gl_pathv[i], 4 << 20, &buf, &len))
                continue;
            *docs = forge_xrealloc(*docs, (count + 1) * sizeof(char *));
            *lens = forge_xrealloc(*lens, (count + 1) * sizeof(size_t));
            (*docs)[count] = buf;
            (*lens)[count++] = len;
        }
        globfree(&g);
    }
    return count;
}

Test(jdoc, the_repository_s_documents_read_alike)
{
    char **docs;
    size_t *lens, n = load_corpus(&docs, &lens);
    tally_t t = {0};

    cr_assert_gt(n, 20, "the corpus was not found");
    for (size_t i = 0; i < n; i++) {
        agree(docs[i], lens[i], &t);
        free(docs[i]);
    }
    free(docs);
    free(lens);
    cr_assert_gt(t.fast, n / 2, "the fast reader read %zu of %zu", t.fast, n);
}

static uint64_t next(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* Bytes that mean something to a JSON reader, or break UTF-8. */
static const char tricky[] = "\"\\{}[],:0-9e.+ tnfu/\x01\x1f\x7f\x80\xbf\xc3"
                             "\xa9\xe2\xed\xf0\xf4\xff\n";

/* One random edit of buf (len bytes, room for 8 more). */
static size_t mutate(char *buf, size_t len, uint64_t *s)
{
    size_t at = len ? next(s) % len : 0;
    char c = tricky[next(s) % (sizeof(tricky) - 1)];

    switch (next(s) % 4) {
    case 0: /* replace */
        if (len)
            buf[at] = c;
        return len;
    case 1: /* insert */
        memmove(buf + at + 1, buf + at, len - at);
        buf[at] = c;
        return len + 1;
    case 2: /* delete */
        if (len)
            memmove(buf + at, buf + at + 1, len - at - 1);
        return len ? len - 1 : 0;
    default: /* an escape or a duplicate-prone key inserted */
    {
        static const char *const bits[] = {"\\n", "\\u0041", "\\\"", "\"a\":1,",
                                           "\\",  "1e5",     "-0"};
        const char *b = bits[next(s) % (sizeof(bits) / sizeof(bits[0]))];
        size_t bn = strlen(b);
        memmove(buf + at + bn, buf + at, len - at);
        memcpy(buf + at, b, bn);
        return len + bn;
    }
    }
}

Test(jdoc, mutations_read_alike)
{
    char **docs;
    size_t *lens, n = load_corpus(&docs, &lens);
    uint64_t seed = 0x9e3779b97f4a7c15ull;
    tally_t t = {0};

    cr_assert_gt(n, 0);
    for (size_t round = 0; round < 30000; round++) {
        size_t d = next(&seed) % n, edits = 1 + next(&seed) % 3;
        size_t len = lens[d];
        char *buf = forge_xmalloc(len + 8 * edits + 1);
        memcpy(buf, docs[d], len);
        for (size_t e = 0; e < edits; e++)
            len = mutate(buf, len, &seed);
        agree(buf, len, &t);
        free(buf);
    }
    for (size_t i = 0; i < n; i++)
        free(docs[i]);
    free(docs);
    free(lens);
    cr_assert_gt(t.fast, 1000, "fast %zu", t.fast);
    cr_assert_gt(t.refused, 1000, "refused %zu", t.refused);
    cr_assert_gt(t.gave_up, 100, "gave up %zu", t.gave_up);
}
