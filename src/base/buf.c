/* SPDX-License-Identifier: Apache-2.0 */
/*
 * buf.c - the growable buffer of buf.h: doubling growth, always
 * NUL-terminated.
 */
#include "base/buf.h"
#include "base/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void reserve(forge_buf_t *b, size_t extra)
{
    size_t need = b->len + extra + 1;
    size_t cap = b->cap ? b->cap : 64;

    if (need <= b->cap)
        return;
    while (cap < need)
        cap *= 2;
    b->data = forge_xrealloc(b->data, cap);
    b->cap = cap;
}

void forge_buf_reserve(forge_buf_t *b, size_t n)
{
    reserve(b, n);
}

void forge_buf_put_long(forge_buf_t *b, long long v)
{
    char digits[24], *at = digits + sizeof(digits);
    unsigned long long u =
        v < 0 ? 0ull - (unsigned long long)v : (unsigned long long)v;

    do
        *--at = (char)('0' + u % 10);
    while ((u /= 10) != 0);
    if (v < 0)
        *--at = '-';
    forge_buf_append(b, at, (size_t)(digits + sizeof(digits) - at));
}

void forge_buf_append(forge_buf_t *b, const void *p, size_t n)
{
    reserve(b, n);
    if (n)
        memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = '\0';
}

void forge_buf_puts(forge_buf_t *b, const char *s)
{
    forge_buf_append(b, s, strlen(s));
}

void forge_buf_putc(forge_buf_t *b, char c)
{
    forge_buf_append(b, &c, 1);
}

/* One formatting pass when the text fits in the room left (the common
 * case once the buffer has grown), two only when it must grow first. */
void forge_buf_vprintf(forge_buf_t *b, const char *fmt, va_list ap)
{
    va_list copy;
    size_t room;
    int n;

    reserve(b, 32);
    room = b->cap - b->len;
    va_copy(copy, ap);
    n = vsnprintf(b->data + b->len, room, fmt, copy);
    va_end(copy);
    if (n < 0) {
        b->data[b->len] = '\0';
        return;
    }
    if ((size_t)n >= room) {
        reserve(b, (size_t)n);
        vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    }
    b->len += (size_t)n;
}

void forge_buf_printf(forge_buf_t *b, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    forge_buf_vprintf(b, fmt, ap);
    va_end(ap);
}

void forge_buf_truncate(forge_buf_t *b, size_t len)
{
    if (b->data && len < b->len) {
        b->len = len;
        b->data[len] = '\0';
    }
}

const char *forge_buf_str(const forge_buf_t *b)
{
    return b->data ? b->data : "";
}

char *forge_buf_take(forge_buf_t *b)
{
    char *d = b->data ? b->data : forge_xstrdup("");

    b->data = NULL;
    b->len = b->cap = 0;
    return d;
}

void forge_buf_clear(forge_buf_t *b)
{
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}
