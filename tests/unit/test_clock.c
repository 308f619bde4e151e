/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_clock.c - the monotonic clock (src/clock/clock.c): it is
 * CLOCK_MONOTONIC (not the wall clock, which a step moves), it never goes
 * back, a sleep lasts at least what was asked even when signals keep
 * interrupting it, and a condition variable made by forge_clock_cond_init
 * times out on forge_clock_deadline's times (a wall-clock condition would
 * take a monotonic deadline as decades past and return at once).
 * Only lower bounds on time: never how fast.
 */
#include "clock/clock.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/time.h>

static long long raw_ms(clockid_t id)
{
    struct timespec ts;

    clock_gettime(id, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

Test(clock, is_the_monotonic_clock)
{
    long long before = raw_ms(CLOCK_MONOTONIC);
    long long now = forge_clock_ms();
    long long after = raw_ms(CLOCK_MONOTONIC);

    cr_assert(now >= before && now <= after,
              "forge_clock_ms %lld outside CLOCK_MONOTONIC [%lld, %lld]", now,
              before, after);
}

Test(clock, never_goes_back)
{
    long long last = forge_clock_ms();

    for (int i = 0; i < 200000; i++) {
        long long now = forge_clock_ms();
        cr_assert_geq(now, last, "read %d went back: %lld after %lld", i, now,
                      last);
        last = now;
    }
}

Test(clock, sleep_lasts_at_least_what_was_asked)
{
    long long start = raw_ms(CLOCK_MONOTONIC);

    forge_clock_sleep_ms(120);
    cr_assert_geq(raw_ms(CLOCK_MONOTONIC) - start, 120);
    start = raw_ms(CLOCK_MONOTONIC);
    forge_clock_sleep_ms(0);
    forge_clock_sleep_ms(-5); /* nothing to wait for */
    cr_assert_geq(raw_ms(CLOCK_MONOTONIC), start);
}

static volatile sig_atomic_t alarms;

static void on_alarm(int sig)
{
    (void)sig;
    alarms++;
}

/* A signal every 10 ms, with a handler installed without SA_RESTART: each
 * one interrupts the sleep (EINTR), which must go on to its end. */
Test(clock, sleep_outlasts_signals)
{
    struct sigaction sa;
    struct itimerval every = {{0, 10000}, {0, 10000}}, off;
    long long start;

    memset(&sa, 0, sizeof(sa));
    memset(&off, 0, sizeof(off));
    sa.sa_handler = on_alarm;
    sigemptyset(&sa.sa_mask);
    cr_assert_eq(sigaction(SIGALRM, &sa, NULL), 0);
    start = raw_ms(CLOCK_MONOTONIC);
    cr_assert_eq(setitimer(ITIMER_REAL, &every, NULL), 0);
    forge_clock_sleep_ms(200);
    setitimer(ITIMER_REAL, &off, NULL);
    cr_assert_gt(alarms, 0, "no signal arrived during the sleep");
    cr_assert_geq(raw_ms(CLOCK_MONOTONIC) - start, 200,
                  "the sleep ended early (%d signals)", (int)alarms);
}

Test(clock, condition_times_out_on_the_monotonic_deadline)
{
    pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    pthread_cond_t cv;
    struct timespec until;
    long long start;
    int rc;

    forge_clock_cond_init(&cv);
    pthread_mutex_lock(&mu);
    start = raw_ms(CLOCK_MONOTONIC);
    until = forge_clock_deadline(150);
    do
        rc = pthread_cond_timedwait(&cv, &mu, &until);
    while (rc == 0); /* spurious wake-ups */
    pthread_mutex_unlock(&mu);
    cr_assert_eq(rc, ETIMEDOUT);
    cr_assert_geq(raw_ms(CLOCK_MONOTONIC) - start, 150,
                  "the wait ended before its deadline");
    pthread_cond_destroy(&cv);
}

Test(clock, deadline_is_a_normalised_time_from_now)
{
    long long before = raw_ms(CLOCK_MONOTONIC);
    struct timespec later = forge_clock_deadline(1999);
    struct timespec now = forge_clock_deadline(-1);
    long long later_ms =
        (long long)later.tv_sec * 1000 + later.tv_nsec / 1000000;
    long long now_ms = (long long)now.tv_sec * 1000 + now.tv_nsec / 1000000;

    cr_assert(later.tv_nsec >= 0 && later.tv_nsec < 1000000000L);
    cr_assert_geq(later_ms, before + 1999);
    cr_assert_geq(now_ms, before, "a negative wait is now, not the past");
}
