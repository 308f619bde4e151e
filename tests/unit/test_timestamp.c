/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_timestamp.c - wall time as logs and events write it (timestamp.h):
 * RFC 3339, UTC, always three digits of milliseconds.
 */
#include "clock/timestamp.h"

#include <criterion/criterion.h>

static const char *format(long long at_ms)
{
    static char out[FORGE_TIMESTAMP_MAX];

    forge_timestamp_format(at_ms, out, sizeof(out));
    return out;
}

Test(timestamp, utc_with_milliseconds)
{
    cr_assert_str_eq(format(1796234079123LL), "2026-12-02T17:54:39.123Z");
    cr_assert_str_eq(format(0), "1970-01-01T00:00:00.000Z");
}

Test(timestamp, milliseconds_always_take_three_digits)
{
    cr_assert_str_eq(format(1796234079007LL), "2026-12-02T17:54:39.007Z");
    cr_assert_str_eq(format(1796234079999LL), "2026-12-02T17:54:39.999Z");
    cr_assert_str_eq(format(1796234080000LL), "2026-12-02T17:54:40.000Z");
}

Test(timestamp, a_short_buffer_is_cut_not_overrun)
{
    char out[11];

    forge_timestamp_format(1796234079123LL, out, sizeof(out));
    cr_assert_str_eq(out, "2026-12-02");
}
