/* SPDX-License-Identifier: Apache-2.0 */
/*
 * util.c - aborting allocators (the out-of-memory policy of util.h) and
 * small string helpers.
 */
#include "base/util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/error.h"

static void out_of_memory(size_t n)
{
    fprintf(stderr, "forge-worker: out of memory allocating %zu bytes\n", n);
    abort();
}

void *forge_xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);

    if (!p)
        out_of_memory(n);
    return p;
}

void *forge_xcalloc(size_t n, size_t m)
{
    void *p = calloc(n ? n : 1, m ? m : 1);

    if (!p)
        out_of_memory(n * m);
    return p;
}

void *forge_xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);

    if (!q)
        out_of_memory(n);
    return q;
}

char *forge_xstrndup(const char *s, size_t n)
{
    char *d = forge_xmalloc(n + 1);

    memcpy(d, s, n);
    d[n] = '\0';
    return d;
}

char *forge_xstrdup(const char *s)
{
    return s ? forge_xstrndup(s, strlen(s)) : NULL;
}

bool forge_write_all(int fd, const void *buf, size_t len)
{
    const char *p = buf;

    while (len > 0) {
        ssize_t w = write(fd, p, len);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return false;
        p += w;
        len -= (size_t)w;
    }
    return true;
}

void forge_strings_free(char **v, size_t n)
{
    for (size_t i = 0; v && i < n; i++)
        free(v[i]);
    free(v);
}

size_t forge_strlcat(char *dst, const char *src, size_t dstsize)
{
    size_t dlen = strnlen(dst, dstsize);
    size_t slen = strlen(src);

    if (dlen == dstsize)
        return dstsize + slen;
    if (slen < dstsize - dlen) {
        memcpy(dst + dlen, src, slen + 1);
    } else {
        memcpy(dst + dlen, src, dstsize - dlen - 1);
        dst[dstsize - 1] = '\0';
    }
    return dlen + slen;
}

int forge_str_starts_with(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

int forge_read_stream(FILE *f, size_t max, char **out, size_t *len)
{
    char *buf = NULL;
    size_t n = 0, cap = 0, r;

    *out = NULL;
    *len = 0;
    do {
        if (cap - n < 4096) {
            cap = cap ? cap * 2 : 8192;
            buf = forge_xrealloc(buf, cap + 1);
        }
        r = fread(buf + n, 1, cap - n, f);
        n += r;
    } while (r > 0 && n <= max);
    if (ferror(f)) {
        free(buf);
        return FORGE_EIO;
    }
    buf[n] = '\0';
    *out = buf;
    *len = n;
    return FORGE_OK;
}

int forge_read_file(const char *path, size_t max, char **out, size_t *len)
{
    FILE *f = fopen(path, "rb");
    int rc;

    *out = NULL;
    *len = 0;
    if (!f)
        return FORGE_EIO;
    rc = forge_read_stream(f, max, out, len);
    fclose(f);
    if (!rc && *len > max) {
        free(*out);
        *out = NULL;
        *len = 0;
        rc = FORGE_ETOO_LARGE;
    }
    return rc;
}
