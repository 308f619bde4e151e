/* SPDX-License-Identifier: Apache-2.0 */
/*
 * request_redact.h - a copy of a request message's bytes for a place
 * outside the worker (the DLQ: kafka/dlq.h) with the request's known
 * secret values replaced by "[REDACTED]": the ingest token
 * (`ingest.token`) and every `secret_env` value, whatever their type, as
 * docs/SECURITY.md says. Everything else stays as it was sent, in its
 * order. Bytes that are no JSON object are kept as they are (nothing in
 * them can be told a secret), and so is an object holding neither field.
 */
#ifndef FORGE_REQUEST_REDACT_H
#define FORGE_REQUEST_REDACT_H

#include <stddef.h>

/* The redacted copy of bytes[0..len): a new buffer (the caller's, to
 * free()), its length in *out_len and what was replaced in *which
 * ("ingest.token", "secret_env" or "ingest.token,secret_env": static).
 * NULL when there is nothing to redact (see the top comment): the caller
 * keeps the bytes as they were. */
char *forge_request_redacted_copy(const char *bytes, size_t len,
                                  size_t *out_len, const char **which);

#endif
