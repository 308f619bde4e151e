/* SPDX-License-Identifier: Apache-2.0 */
/*
 * text/shell.h - the only place that turns data into shell text, and the
 * names /bin/sh keeps for itself.
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

#include "base/buf.h"

#include <stdbool.h>

/* Names /bin/sh owns (dash, and bash, which is /bin/sh in some images):
 * computed on each read, read-only, arrays, or set again on exec (SHLVL,
 * _), so an export would not reach the program as given; a case pattern. */
#define FORGE_SHELL_OWNED_NAMES                                                \
    "BASHOPTS | BASHPID | BASH_ALIASES | BASH_ARGC | BASH_ARGV | "             \
    "BASH_CMDS | BASH_COMMAND | BASH_LINENO | BASH_MONOSECONDS | "             \
    "BASH_REMATCH | BASH_SOURCE | BASH_SUBSHELL | BASH_TRAPSIG | "             \
    "BASH_VERSINFO | DIRSTACK | EPOCHREALTIME | EPOCHSECONDS | EUID | "        \
    "FUNCNAME | GROUPS | HISTCMD | LINENO | OPTIND | PIPESTATUS | PPID | "     \
    "RANDOM | SECONDS | SHELLOPTS | SHLVL | SRANDOM | UID | _"

/* Appends s as one single-quoted shell word. */
void forge_shell_quote(forge_buf_t *out, const char *s);

/* Appends " " and the quoted word: for building argv lines. */
void forge_shell_arg(forge_buf_t *out, const char *s);

/* Appends " " and the quoted word of the n strings joined: what
 * forge_shell_arg of their concatenation appends, without building it
 * (quoting works piece by piece: inside '...' nothing joins or splits). */
void forge_shell_arg_cat(forge_buf_t *out, size_t n, const char *const *parts);

/* True when /bin/sh owns name (one of FORGE_SHELL_OWNED_NAMES): the
 * enroot-pyxis task wrapper (render.c) could not export it as given, so
 * such an env name is refused for that profile (request_check.c). */
bool forge_shell_owns(const char *name);

#endif
