/* SPDX-License-Identifier: Apache-2.0 */
/*
 * shell.c - single-quoting for bash (shell.h).
 */
#include "text/shell.h"

#include <string.h>

/* s inside an open single-quoted word: each ' closes it, is written as
 * \' and opens it again. */
static void quote_inside(forge_buf_t *out, const char *s)
{
    for (const char *q; (q = strchr(s, '\'')); s = q + 1) {
        forge_buf_append(out, s, (size_t)(q - s));
        forge_buf_append(out, "'\\''", 4);
    }
    forge_buf_puts(out, s);
}

void forge_shell_quote(forge_buf_t *out, const char *s)
{
    forge_buf_putc(out, '\'');
    quote_inside(out, s);
    forge_buf_putc(out, '\'');
}

void forge_shell_arg_cat(forge_buf_t *out, size_t n, const char *const *parts)
{
    forge_buf_append(out, " '", 2);
    for (size_t i = 0; i < n; i++)
        quote_inside(out, parts[i]);
    forge_buf_putc(out, '\'');
}

void forge_shell_arg(forge_buf_t *out, const char *s)
{
    forge_buf_putc(out, ' ');
    forge_shell_quote(out, s);
}

bool forge_shell_owns(const char *name)
{
    static const char owned[] = FORGE_SHELL_OWNED_NAMES;
    size_t n = strlen(name);

    for (const char *p = owned; *p;) {
        size_t len = strcspn(p, " |");
        if (len == n && !strncmp(p, name, n))
            return true;
        p += len;
        p += strspn(p, " |");
    }
    return false;
}
