/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sha256.h - SHA-256 as lower-case hex, the one way the worker names bytes
 * by their digest: a launch record's request, a DLQ value, a state key's
 * id, a logs archive. OpenSSL underneath; one call for bytes in memory, a
 * stream (new, update..., final) for bytes that arrive in pieces.
 */
#ifndef FORGE_SHA256_H
#define FORGE_SHA256_H

#include <stddef.h>

#define FORGE_SHA256_HEX 65 /* 64 hex digits + NUL */

/* SHA-256 of bytes[0..len) as hex into out. */
void forge_sha256_hex(const void *bytes, size_t len,
                      char out[FORGE_SHA256_HEX]);

/* A digest being computed over pieces. Not shared between threads. */
typedef struct forge_sha256 forge_sha256_t;

forge_sha256_t *forge_sha256_new(void);       /* never NULL (util.h's policy) */
void forge_sha256_restart(forge_sha256_t *h); /* as if new */
void forge_sha256_update(forge_sha256_t *h, const void *bytes, size_t len);
/* The digest of every piece since new or restart, as hex into out. */
void forge_sha256_final_hex(forge_sha256_t *h, char out[FORGE_SHA256_HEX]);
void forge_sha256_destroy(forge_sha256_t *h); /* NULL-safe */

#endif
