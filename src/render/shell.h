/* SPDX-License-Identifier: Apache-2.0 */
/*
 * shell.h - the only place that turns data into shell text.
 *
 * Every value that comes from a request reaches a batch script through
 * forge_shell_quote(): one single-quoted word, with each ' written as '\''.
 * Inside single quotes bash gives no character a meaning (not $, `, \, !,
 * newline), so a quoted value is always exactly one word, byte for byte.
 * Values cannot hold NUL (the request parser refuses it), which is the one
 * byte a shell word cannot carry.
 */
#ifndef FORGE_SHELL_H
#define FORGE_SHELL_H

#include "core/buf.h"

/* Appends s as one single-quoted shell word. */
void forge_shell_quote(forge_buf_t *out, const char *s);

/* Appends " " and the quoted word: for building argv lines. */
void forge_shell_arg(forge_buf_t *out, const char *s);

/* Appends " " and the quoted word of the n strings joined: what
 * forge_shell_arg of their concatenation appends, without building it
 * (quoting works piece by piece: inside '...' nothing joins or splits). */
void forge_shell_arg_cat(forge_buf_t *out, size_t n, const char *const *parts);

#endif
