/* SPDX-License-Identifier: Apache-2.0 */
/*
 * support_text.c - support_text.h: lines looked for in rendered text.
 */
#include "support_text.h"

#include <string.h>

bool support_has_line(const char *text, const char *line)
{
    size_t n = strlen(line);

    for (const char *p = text; (p = strstr(p, line)); p += n)
        if ((p == text || p[-1] == '\n') && p[n] == '\n')
            return true;
    return false;
}
