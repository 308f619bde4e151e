/* SPDX-License-Identifier: Apache-2.0 */
/*
 * buf.h - a growable byte buffer (curl's dynbuf in spirit) for building log
 * lines, scripts and request bodies. Always NUL-terminated, so data can be
 * handed to C string functions; len excludes the terminator.
 *
 * Ownership: the buffer owns data; forge_buf_take() hands it to the caller.
 * Allocation follows util.h's policy (abort on out of memory).
 */
#ifndef FORGE_BUF_H
#define FORGE_BUF_H

#include "base/error.h"

#include <stdarg.h>
#include <stddef.h>

typedef struct forge_buf {
    char *data; /* NULL until the first append */
    size_t len;
    size_t cap;
} forge_buf_t;

#define FORGE_BUF_INIT                                                         \
    {                                                                          \
        NULL, 0, 0                                                             \
    }

void forge_buf_append(forge_buf_t *b, const void *p, size_t n);
void forge_buf_puts(forge_buf_t *b, const char *s);
void forge_buf_putc(forge_buf_t *b, char c);
void forge_buf_printf(forge_buf_t *b, const char *fmt, ...) FORGE_PRINTF(2, 3);
void forge_buf_vprintf(forge_buf_t *b, const char *fmt, va_list ap)
    FORGE_PRINTF(2, 0);
void forge_buf_truncate(forge_buf_t *b, size_t len); /* len <= b->len */

/* Room for n more bytes (and the terminator) at once: one allocation for
 * text whose size is known roughly in advance. */
void forge_buf_reserve(forge_buf_t *b, size_t n);

/* Appends v in decimal (no printf: scripts and bodies hold many). */
void forge_buf_put_long(forge_buf_t *b, long long v);

/* Returns the text ("" when empty); the buffer keeps ownership. */
const char *forge_buf_str(const forge_buf_t *b);

/* Hands the data to the caller (new, free()) and empties the buffer. */
char *forge_buf_take(forge_buf_t *b);

void forge_buf_clear(forge_buf_t *b); /* frees data, leaves b empty */

#endif
