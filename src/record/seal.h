/* SPDX-License-Identifier: Apache-2.0 */
/*
 * seal.h - what the worker keeps in Kafka that must not be read there: the
 * request in a launch's state record (its ingest token, its env and
 * secret_env values) is stored sealed, AES-256-GCM (OpenSSL EVP).
 *
 * Keys: FORGE_STATE_KEY_FILE (the current key: every new seal uses it) and
 * FORGE_STATE_KEY_FILE_PREVIOUS (optional: only opens what an older key
 * sealed, for a rotation). A key file holds exactly 32 raw bytes (e.g.
 * `head -c 32 /dev/urandom`), is a regular file (a link to one is fine),
 * and is readable by its owner only (mode & 077 == 0); anything else is a
 * FORGE_ECONFIG error naming the variable, so `forge-worker run` stops with
 * exit 78. Key bytes are wiped when the sealer is destroyed.
 *
 * A sealed value is {"kid": <key id>, "iv": <base64>, "ct": <base64 of
 * ciphertext || 16-byte tag>}: a random 96-bit IV per seal, and additional
 * data the caller chooses (launch.c binds it to the record's launch and
 * attempt) that must be given again to open it, so a sealed value moved
 * elsewhere does not open. The key id is the first 8 bytes of the key's
 * SHA-256 as hex (`sha256sum KEYFILE | cut -c1-16`): it says which key to
 * open with, and nothing about the key.
 *
 * Threads: a sealer is read-only once loaded; any thread may seal and open.
 */
#ifndef FORGE_SEAL_H
#define FORGE_SEAL_H

#include "config/config.h"
#include "base/error.h"

#include <jansson.h>
#include <stddef.h>

#define FORGE_SEAL_KEY_BYTES 32
#define FORGE_SEAL_KID_HEX   17 /* 8 bytes as hex + NUL */

typedef struct forge_sealer forge_sealer_t;

/*
 * Loads the current key from key_file (required) and, when previous_file
 * is not NULL, the previous one. *out new (forge_sealer_destroy). Errors:
 * FORGE_ECONFIG naming FORGE_STATE_KEY_FILE or FORGE_STATE_KEY_FILE_PREVIOUS.
 */
forge_rc_t forge_sealer_load(const char *key_file, const char *previous_file,
                             forge_sealer_t **out,
                             forge_error_t *err) FORGE_WARN_UNUSED;

/* forge_sealer_load with the files of cfg (state_key_file must be set). */
forge_rc_t forge_sealer_from_config(const forge_config_t *cfg,
                                    forge_sealer_t **out,
                                    forge_error_t *err) FORGE_WARN_UNUSED;

void forge_sealer_destroy(forge_sealer_t *s); /* NULL-safe; wipes the keys */

/* The current key's id (16 hex digits). */
const char *forge_sealer_kid(const forge_sealer_t *s);

/*
 * Seals len bytes of pt with the current key, bound to aad (a string).
 * *out is a new JSON object as above. FORGE_EIO when OpenSSL fails (no
 * randomness, say): nothing is sealed then, and nothing must be written
 * in clear instead.
 */
forge_rc_t forge_seal(const forge_sealer_t *s, const char *aad, const void *pt,
                      size_t len, json_t **out,
                      forge_error_t *err) FORGE_WARN_UNUSED;

/*
 * Opens a sealed value with the key its kid names and the same aad. *out
 * new (NUL-terminated, *out_len bytes before the NUL). Errors, none of
 * which prints a secret: FORGE_ECONFIG (field FORGE_STATE_KEY_FILE_PREVIOUS)
 * when neither key has that id; FORGE_ESCHEMA when the value is malformed
 * or does not authenticate (tampered, another key with a colliding id, or
 * another aad: moved from another record). s may be NULL: nothing opens.
 */
forge_rc_t forge_unseal(const forge_sealer_t *s, const char *aad,
                        const json_t *sealed, char **out, size_t *out_len,
                        forge_error_t *err) FORGE_WARN_UNUSED;

/* A sealed value's three strings, taken apart already (each len bytes, not
 * NUL-terminated): what the record decoder's fast path finds. */
typedef struct forge_sealed_parts {
    const char *kid, *iv, *ct;
    size_t kid_len, iv_len, ct_len;
} forge_sealed_parts_t;

/* forge_unseal of a value taken apart; the same errors. */
forge_rc_t forge_unseal_parts(const forge_sealer_t *s, const char *aad,
                              const forge_sealed_parts_t *v, char **out,
                              size_t *out_len,
                              forge_error_t *err) FORGE_WARN_UNUSED;

#endif
