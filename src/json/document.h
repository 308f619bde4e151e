/* SPDX-License-Identifier: Apache-2.0 */
/*
 * document.h - JSON documents the worker reads, once: bytes to a JSON value
 * (duplicate keys refused; a syntax error as FORGE_EINVALID_JSON at "$"
 * with its line and column), and the site's files a configuration
 * variable names (FORGE_GPU_SERIES_FILE, FORGE_TENANTS_FILE) read whole
 * and parsed, their errors naming the variable and the file.
 */
#ifndef FORGE_DOCUMENT_H
#define FORGE_DOCUMENT_H

#include "base/error.h"

#include <jansson.h>
#include <stddef.h>

/* buf[0..len) as JSON (flags: jansson's decoding flags, to which
 * JSON_REJECT_DUPLICATES is added): *root new, or err set and NULL. */
forge_rc_t forge_document_parse(const char *buf, size_t len, size_t flags,
                                json_t **root, forge_error_t *err);

/* Parses a file's bytes into out (the caller's T **, passed as void *). */
typedef forge_rc_t (*forge_document_parser_t)(const char *buf, size_t len,
                                              void *out, forge_error_t *err);

/* The file at path (at most max bytes) a variable names, parsed into out.
 * Errors are err's, with field var: "cannot read <what> <path>", or
 * "<path>: <field>: <message>" of the parser's; code is their code (0:
 * the reader's or the parser's own). */
forge_rc_t forge_document_load(const char *path, size_t max, const char *var,
                               const char *what, forge_rc_t code,
                               forge_document_parser_t parse, void *out,
                               forge_error_t *err) FORGE_WARN_UNUSED;

#endif
