/* SPDX-License-Identifier: Apache-2.0 */
/*
 * clock.h - the monotonic clock every deadline is measured on, and the
 * sleeps and condition-variable waits that go with it.
 *
 * Two clocks, and which one each time uses:
 *   - monotonic (forge_clock_ms, here): CLOCK_MONOTONIC, as curl and
 *     Redis measure their timeouts. Every deadline, timeout, interval,
 *     backoff and elapsed time inside one process: the poll tick's
 *     schedule, a submit's or a cleanup's retry_at_ms, a cancel's resend,
 *     a restore's backoff and its pass budget, the batch, settle and drain
 *     bounds, the transaction's commit budget, the state topic's restore
 *     timeout, slurmrestd backoffs, `submit --wait`'s LOST grace. A step of
 *     the wall clock (NTP, an operator) moves none of them. Its values mean
 *     nothing in another process or after a restart: never stored, never
 *     sent. It counts from an arbitrary point (boot), so 0 is no sentinel
 *     for "long ago": a "never" field is tested as such.
 *   - wall (forge_timestamp_now_ms in clock/timestamp.h, log.c's timestamps):
 *     what goes into an event, a record or a log line, and what is
 *     compared across processes and restarts: a record's accepted_at_ms,
 *     updated_at_ms and missing_since_ms (the worker's LOST grace: kept in
 *     the state record, so the next owner of the launch, after a restart,
 *     goes on with the same grace), the JWT's exp (slurmrestd checks it on
 *     its wall clock), a test point's _UNTIL (epoch seconds).
 */
#ifndef FORGE_CLOCK_H
#define FORGE_CLOCK_H

#include <pthread.h>
#include <time.h>

/* Milliseconds on the monotonic clock, now. Never goes back. */
long long forge_clock_ms(void);

/* The same clock in nanoseconds (request budgets: slurm/budget.h). */
long long forge_clock_ns(void);

/* Sleeps at least ns nanoseconds (none for ns <= 0), as forge_clock_sleep_ms.
 */
void forge_clock_sleep_ns(long long ns);

/* Sleeps at least ms milliseconds (none for ms <= 0), whatever signals
 * arrive meanwhile. */
void forge_clock_sleep_ms(long ms);

/* Initialises cv to wait on the monotonic clock: the only kind of
 * condition variable forge_clock_deadline's times may be given to. */
void forge_clock_cond_init(pthread_cond_t *cv);

/* The absolute monotonic time ms milliseconds from now (ms < 0: now), for
 * pthread_cond_timedwait on a condition made by forge_clock_cond_init. */
struct timespec forge_clock_deadline(long ms);

#endif
