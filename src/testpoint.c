/*
 * testpoint.c - the test-only failure points of testpoint.h. Empty unless
 * the build defines FORGE_TEST_HOOKS. The abort counter is touched by the
 * consume loop's thread only; the crash point may be reached from any
 * thread (it only reads the environment and kills the process).
 */
#include "testpoint.h"

#ifdef FORGE_TEST_HOOKS
#include "log.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>

void forge_testpoint_crash(const char *name)
{
    const char *want = getenv("FORGE_TEST_CRASH_POINT");

    if (!want || strcmp(want, name) != 0)
        return;
    forge_log_warn("test point %s: killing this process (SIGKILL)", name);
    raise(SIGKILL);
}

bool forge_testpoint_abort_txn(void)
{
    static long seen;
    const char *want = getenv("FORGE_TEST_ABORT_TXN");

    if (!want)
        return false;
    seen++;
    if (seen != strtol(want, NULL, 10))
        return false;
    forge_log_warn("test point: aborting transaction %ld on purpose", seen);
    return true;
}
#else
typedef int forge_testpoint_unused_t; /* ISO C: no empty translation unit */
#endif
