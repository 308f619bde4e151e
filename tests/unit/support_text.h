/* SPDX-License-Identifier: Apache-2.0 */
/*
 * support_text.h - what the unit tests of rendered text share (metrics,
 * observe): whether a text holds a whole line.
 */
#ifndef FORGE_SUPPORT_TEXT_H
#define FORGE_SUPPORT_TEXT_H

#include <stdbool.h>

/* True when text holds line as one whole line ('\n'-terminated). */
bool support_has_line(const char *text, const char *line);

#endif
