/* SPDX-License-Identifier: Apache-2.0 */
/*
 * util.h - the out-of-memory policy and the few string helpers every module
 * shares.
 *
 * Out-of-memory policy (one, written down): forge-worker is a server whose
 * every allocation is small next to the machine; when one fails nothing
 * sensible can follow, so forge_x* allocators print a line and abort(), as
 * Redis' zmalloc and librdkafka's rd_malloc do. Callers therefore never see
 * NULL from them and carry no ENOMEM paths.
 */
#ifndef FORGE_UTIL_H
#define FORGE_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

void *forge_xmalloc(size_t n);                 /* new; never NULL */
void *forge_xcalloc(size_t n, size_t m);       /* new, zeroed; never NULL */
void *forge_xrealloc(void *p, size_t n);       /* never NULL */
char *forge_xstrdup(const char *s);            /* new copy; NULL in, NULL out */
char *forge_xstrndup(const char *s, size_t n); /* new, NUL-terminated */

/* Writes all len bytes of buf to fd, through short writes and EINTR.
 * false, errno set, when write(2) fails (or writes nothing). */
bool forge_write_all(int fd, const void *buf, size_t len);

/* Frees the n strings of v, then v itself (v NULL: nothing). */
void forge_strings_free(char **v, size_t n);

/* BSD strlcat: appends src to dst (of total size dstsize), always
 * NUL-terminates, returns the length it tried to create. */
size_t forge_strlcat(char *dst, const char *src, size_t dstsize);

/* Reads f to its end, or until more than max bytes came: *out (new,
 * NUL-terminated) holds what was read, *len its length without the NUL (>
 * max when f holds more than max). FORGE_EIO when f cannot be read (*out
 * NULL). The one reader of whole inputs: files, and stdin for commands. */
int forge_read_stream(FILE *f, size_t max, char **out, size_t *len);

/* Reads a whole file of at most max bytes into *out (new, NUL-terminated;
 * *len excludes the NUL). FORGE_EIO when it cannot be read, FORGE_ETOO_LARGE
 * when it is bigger than max. */
int forge_read_file(const char *path, size_t max, char **out, size_t *len);

/* True when s starts with prefix. */
int forge_str_starts_with(const char *s, const char *prefix);

#endif
