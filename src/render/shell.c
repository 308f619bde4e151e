/* SPDX-License-Identifier: Apache-2.0 */
/*
 * shell.c - single-quoting for bash (shell.h).
 */
#include "render/shell.h"

#include <stdarg.h>
#include <string.h>

void forge_shell_quote(forge_buf_t *out, const char *s)
{
    forge_buf_putc(out, '\'');
    for (const char *q; (q = strchr(s, '\'')); s = q + 1) {
        forge_buf_append(out, s, (size_t)(q - s));
        forge_buf_puts(out, "'\\''");
    }
    forge_buf_puts(out, s);
    forge_buf_putc(out, '\'');
}

void forge_shell_arg(forge_buf_t *out, const char *s)
{
    forge_buf_putc(out, ' ');
    forge_shell_quote(out, s);
}

void forge_shell_argf(forge_buf_t *out, const char *fmt, ...)
{
    forge_buf_t word = FORGE_BUF_INIT;
    va_list ap;

    va_start(ap, fmt);
    forge_buf_vprintf(&word, fmt, ap);
    va_end(ap);
    forge_shell_arg(out, forge_buf_str(&word));
    forge_buf_clear(&word);
}
