/* SPDX-License-Identifier: Apache-2.0 */
/*
 * clock/timestamp.c - the wall clock, and RFC 3339 UTC with milliseconds
 * (timestamp.h).
 */
#include "clock/timestamp.h"

#include <stdio.h>
#include <time.h>

long long forge_timestamp_now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void forge_timestamp_format(long long at_ms, char *out, size_t size)
{
    time_t secs = (time_t)(at_ms / 1000);
    struct tm tm;
    char stamp[24];

    gmtime_r(&secs, &tm);
    strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(out, size, "%.19s.%03dZ", stamp,
             (int)(at_ms % 1000 + 1000) % 1000);
}
