/* SPDX-License-Identifier: Apache-2.0 */
/*
 * clock/timestamp.h - wall time as the worker reads and writes it, in log
 * lines, events, records and archives alike: the wall clock now
 * (clock.h says which times are on it; every deadline is on the monotonic
 * one), and RFC 3339, UTC, milliseconds ("2026-12-02T17:54:39.123Z").
 */
#ifndef FORGE_TIMESTAMP_H
#define FORGE_TIMESTAMP_H

#include <stddef.h>

#define FORGE_TIMESTAMP_MAX 32 /* room for any year time_t holds, + NUL */

/* Milliseconds since the epoch, now: the wall clock (CLOCK_REALTIME), for
 * what goes into an event, a record, an archive's result or a log line. */
long long forge_timestamp_now_ms(void);

/* at_ms (milliseconds since the epoch) into out (size >=
 * FORGE_TIMESTAMP_MAX). */
void forge_timestamp_format(long long at_ms, char *out, size_t size);

#endif
