/* SPDX-License-Identifier: Apache-2.0 */
/*
 * clock.c - the monotonic clock (clock.h says which times use it and which
 * stay on the wall clock): milliseconds, absolute sleeps that a signal
 * cannot shorten, and condition variables that time out on it.
 */
#include "clock/clock.h"

#include <errno.h>

#define MS_PER_S  1000L
#define NS_PER_MS 1000000L
#define NS_PER_S  1000000000L

long long forge_clock_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * MS_PER_S + ts.tv_nsec / NS_PER_MS;
}

long long forge_clock_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * NS_PER_S + ts.tv_nsec;
}

struct timespec forge_clock_deadline(long ms)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    if (ms < 0)
        ms = 0;
    ts.tv_sec += ms / MS_PER_S;
    ts.tv_nsec += (ms % MS_PER_S) * NS_PER_MS;
    if (ts.tv_nsec >= NS_PER_S) {
        ts.tv_sec++;
        ts.tv_nsec -= NS_PER_S;
    }
    return ts;
}

/* To an absolute time: a signal's EINTR resumes toward the same end, so
 * the sleep is never shortened (nor lengthened by restarts). */
void forge_clock_sleep_ms(long ms)
{
    struct timespec until;

    if (ms <= 0)
        return;
    until = forge_clock_deadline(ms);
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &until, NULL) ==
           EINTR)
        ;
}

void forge_clock_sleep_ns(long long ns)
{
    long long end = forge_clock_ns() + ns;
    struct timespec until = {(time_t)(end / NS_PER_S), (long)(end % NS_PER_S)};

    if (ns <= 0)
        return;
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &until, NULL) ==
           EINTR)
        ;
}

void forge_clock_cond_init(pthread_cond_t *cv)
{
    pthread_condattr_t attr;

    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(cv, &attr);
    pthread_condattr_destroy(&attr);
}
