/* SPDX-License-Identifier: Apache-2.0 */
/*
 * redact.c - runs of secrets found and written over (redact.h).
 */
#include "secrets/redact.h"
#include "base/util.h"

#include <stdlib.h>
#include <string.h>

void forge_redact_add(forge_redact_runs_t *r, size_t start, size_t end)
{
    r->at = forge_xrealloc(r->at, (r->count + 1) * sizeof(*r->at));
    r->at[r->count++] = (forge_redact_run_t){start, end};
}

void forge_redact_find(forge_redact_runs_t *r, const char *text, size_t n,
                       const char *secret, size_t slen)
{
    const char *p = text;

    if (!slen)
        return;
    while ((p = memmem(p, n - (size_t)(p - text), secret, slen))) {
        forge_redact_add(r, (size_t)(p - text), (size_t)(p - text) + slen);
        p++;
    }
}

static int run_cmp(const void *a, const void *b)
{
    const forge_redact_run_t *x = a, *y = b;

    return x->start < y->start ? -1 : x->start > y->start;
}

static void put(forge_buf_t *out, const char *text, size_t n,
                forge_redact_put_t fn)
{
    if (fn)
        fn(out, text, n);
    else
        forge_buf_append(out, text, n);
}

void forge_redact_write(forge_buf_t *out, const char *text, size_t n, size_t at,
                        forge_redact_runs_t *r, forge_redact_put_t fn)
{
    if (r->count > 1)
        qsort(r->at, r->count, sizeof(*r->at), run_cmp);
    for (size_t k = 0; k < r->count; k++) {
        size_t start = r->at[k].start, end = r->at[k].end;
        while (k + 1 < r->count && r->at[k + 1].start < end)
            if (r->at[++k].end > end)
                end = r->at[k].end;
        if (end <= at) /* inside what was skipped or written */
            continue;
        if (start > at)
            put(out, text + at, start - at, fn);
        forge_buf_puts(out, FORGE_REDACTED);
        at = end;
    }
    put(out, text + at, n - at, fn);
}

void forge_redact_clear(forge_redact_runs_t *r)
{
    free(r->at);
    r->at = NULL;
    r->count = 0;
}
