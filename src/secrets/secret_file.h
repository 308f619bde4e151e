/* SPDX-License-Identifier: Apache-2.0 */
/*
 * secret_file.h - the files a variable names that hold a secret or what
 * guards one (a password, a private key, a certificate): opened once at
 * start, checked (a regular file, no mode bit the caller refuses), and a
 * password read whole. Neither a path's content nor any part of it is ever
 * put in an error: errors name the variable and the path only.
 *
 * Threads: none of its own; no state.
 */
#ifndef FORGE_SECRET_FILE_H
#define FORGE_SECRET_FILE_H

#include "base/error.h"

#include <stddef.h>
#include <sys/types.h>

/* A password file holds at most this many bytes. */
#define FORGE_SECRET_FILE_MAX 4096

/*
 * Checks that path (variable var, named in errors) can be opened for
 * reading, is a regular file and has none of the mode bits in refused (077:
 * owner only; 007: not for others; 0: any). FORGE_ECONFIG naming var
 * otherwise. A FIFO or a device does not hang it (O_NONBLOCK).
 */
forge_rc_t forge_secret_file_check(const char *path, const char *var,
                                   mode_t refused,
                                   forge_error_t *err) FORGE_WARN_UNUSED;

/*
 * Reads the password file path (variable var): forge_secret_file_check
 * with 077, at most FORGE_SECRET_FILE_MAX bytes, one trailing "\n" (or
 * "\r\n") dropped; what is left must not be empty nor hold a NUL, CR or LF.
 * On success *out is new (free it with forge_secret_free); on failure
 * *out is NULL and err names var, never the content.
 */
forge_rc_t forge_secret_file_read(const char *path, const char *var, char **out,
                                  forge_error_t *err) FORGE_WARN_UNUSED;

/* Wipes s (up to its NUL: explicit_bzero, which no optimiser drops) and
 * frees it. NULL-safe. */
void forge_secret_free(char *s);

#endif
