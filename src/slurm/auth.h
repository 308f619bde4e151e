/* SPDX-License-Identifier: Apache-2.0 */
/*
 * slurm/auth.h - the JWT a slurmrestd request carries: read from a token
 * file (re-read when the file changes - a file caught mid-rotation leaves
 * the current token in use - and on demand after an auth failure) or minted
 * as short-lived HS256 tokens from the cluster's key file (claims sun, iat,
 * exp; re-minted while they still have the longest call to live). Either
 * file must not be readable by group or others. Tokens are registered with
 * the log's redaction, and never appear in an error message.
 *
 * Not thread-safe: one per client object.
 */
#ifndef FORGE_SLURM_AUTH_H
#define FORGE_SLURM_AUTH_H

#include "base/error.h"

#include <stdbool.h>

typedef struct forge_slurm_auth forge_slurm_auth_t;

/*
 * Exactly one of token_file and key_file. lifetime_s: of minted tokens.
 * min_validity_s: how long a minted token handed out has yet to live at
 * least (the longest a call may take): it is re-minted before that, and
 * lives at least a second longer.
 */
forge_rc_t forge_slurm_auth_new(const char *user, const char *token_file,
                                const char *key_file, int lifetime_s,
                                int min_validity_s, forge_slurm_auth_t **out,
                                forge_error_t *err) FORGE_WARN_UNUSED;

void forge_slurm_auth_destroy(forge_slurm_auth_t *a); /* NULL-safe */

/* A JWT's exp claim, epoch seconds (read, not verified: slurmrestd
 * verifies), or 0 when token is no JWT or has none. */
long long forge_slurm_jwt_expiry(const char *token);

/*
 * The current token (borrowed until the next call). force: the server
 * refused the last one - re-read the file / mint anew even if nothing
 * seems to have changed. NULL with err set when no token can be had.
 */
const char *forge_slurm_auth_token(forge_slurm_auth_t *a, bool force,
                                   forge_error_t *err);

#endif
