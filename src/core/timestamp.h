/* SPDX-License-Identifier: Apache-2.0 */
/*
 * timestamp.h - wall time as the worker writes it, in log lines and in
 * events alike: RFC 3339, UTC, milliseconds ("2026-12-02T17:54:39.123Z").
 * Formatting only: which clock gives the time is the caller's.
 */
#ifndef FORGE_TIMESTAMP_H
#define FORGE_TIMESTAMP_H

#include <stddef.h>

#define FORGE_TIMESTAMP_MAX 32 /* room for any year time_t holds, + NUL */

/* at_ms (milliseconds since the epoch) into out (size >=
 * FORGE_TIMESTAMP_MAX). */
void forge_timestamp_format(long long at_ms, char *out, size_t size);

#endif
