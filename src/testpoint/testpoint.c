/* SPDX-License-Identifier: Apache-2.0 */
/*
 * testpoint.c - the test-only failure points of testpoint.h. Empty unless
 * the build defines FORGE_TEST_HOOKS. The abort counter is touched by the
 * consume loop's thread only; the crash point may be reached from any
 * thread (it only reads the environment and kills the process). The
 * commit stall's, the offsets hang's and the producer fatal's counters are
 * the loop's too, and so is the loop stall.
 */
#include "testpoint/testpoint.h"

#ifdef FORGE_TEST_HOOKS
#include "clock/clock.h"
#include "log/log.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* A point that fires at its n-th call, n from var (calls counted while var
 * is set), and says so: "test point: <before><n><after>". */
typedef struct nth_point {
    const char *var;
    const char *before, *after;
    long seen;
} nth_point_t;

static bool nth_point(nth_point_t *p)
{
    const char *want = getenv(p->var);

    if (!want || ++p->seen != strtol(want, NULL, 10))
        return false;
    forge_log_warn("test point: %s%ld%s", p->before, p->seen, p->after);
    return true;
}

void forge_testpoint_crash(const char *name)
{
    const char *want = getenv("FORGE_TEST_CRASH_POINT");

    if (!want || strcmp(want, name) != 0)
        return;
    forge_log_warn("test point %s: killing this process (SIGKILL)", name);
    raise(SIGKILL);
}

/* A status event of the state FORGE_TEST_ABORT_TXN_STATE names went into
 * the open transaction: it is aborted (once in the process's life). */
static bool state_seen, state_aborted;

/* FORGE_TEST_HOLD_STATE=<S>:<path>: while a file exists at path, the
 * loop stops before it writes a status event of state S. */
static void hold_state(const char *state)
{
    const char *hold = getenv("FORGE_TEST_HOLD_STATE");
    const char *colon = hold ? strchr(hold, ':') : NULL;
    bool said = false;

    if (!colon || strlen(state) != (size_t)(colon - hold) ||
        strncmp(hold, state, (size_t)(colon - hold)))
        return;
    while (access(colon + 1, F_OK) == 0) {
        if (!said)
            forge_log_warn("test point: the loop holds a %s event while %s "
                           "exists",
                           state, colon + 1);
        said = true;
        forge_clock_sleep_ms(100);
    }
    if (said)
        forge_log_warn("test point: the %s event goes on", state);
}

void forge_testpoint_event_state(const char *state)
{
    const char *want = getenv("FORGE_TEST_ABORT_TXN_STATE");

    if (!state)
        return;
    if (want && !strcmp(want, state) && !state_aborted)
        state_seen = true;
    hold_state(state);
}

/* FORGE_TEST_ABORT_TXN_RANDOM=<per-mille>: each transaction is aborted
 * with that chance, until FORGE_TEST_ABORT_TXN_RANDOM_UNTIL (epoch seconds)
 * if set; the generator is seeded from the clock and the pid, and
 * the seed is logged once so a run can be told apart. */
static bool random_abort(void)
{
    static unsigned int seed;
    static bool seeded;
    const char *per_mille = getenv("FORGE_TEST_ABORT_TXN_RANDOM");
    const char *until = getenv("FORGE_TEST_ABORT_TXN_RANDOM_UNTIL");
    long chance = per_mille ? strtol(per_mille, NULL, 10) : 0;

    if (chance <= 0 || (until && time(NULL) >= strtoll(until, NULL, 10)))
        return false;
    if (!seeded) {
        seed = (unsigned int)time(NULL) ^ ((unsigned int)getpid() << 16);
        seeded = true;
        forge_log_warn("test point: aborting transactions at random, %ld per "
                       "mille (seed %u)",
                       chance, seed);
    }
    if (rand_r(&seed) % 1000 >= chance)
        return false;
    forge_log_warn("test point: aborting a transaction at random");
    return true;
}

bool forge_testpoint_abort_txn(void)
{
    static nth_point_t nth = {"FORGE_TEST_ABORT_TXN", "aborting transaction ",
                              " on purpose", 0};

    if (random_abort())
        return true;
    if (state_seen) {
        state_seen = false;
        state_aborted = true;
        forge_log_warn("test point: aborting the transaction carrying a %s "
                       "event on purpose",
                       getenv("FORGE_TEST_ABORT_TXN_STATE"));
        return true;
    }
    return nth_point(&nth);
}
/* Called once per transaction that carries anything (kafka.c). */
bool forge_testpoint_commit_stalls(void)
{
    static nth_point_t nth = {"FORGE_TEST_COMMIT_STALLS", "transaction ",
                              " stalls at its commit on purpose", 0};

    return nth_point(&nth);
}

/* Called once per sending of offsets (kafka.c), on the loop's thread. */
bool forge_testpoint_offsets_hang(void)
{
    static nth_point_t nth = {"FORGE_TEST_OFFSETS_HANG", "sending offsets ",
                              " never returns, on purpose", 0};

    return nth_point(&nth);
}

/* Called once per transaction that carries anything (kafka.c). */
bool forge_testpoint_producer_fatal(void)
{
    static nth_point_t nth = {
        "FORGE_TEST_PRODUCER_FATAL",
        "the producer takes a fatal error before transaction ",
        " commits, on purpose", 0};

    return nth_point(&nth);
}

bool forge_testpoint_restore_fail(void)
{
    static long failed;
    const char *want = getenv("FORGE_TEST_RESTORE_FAILS");

    if (!want || failed >= strtol(want, NULL, 10))
        return false;
    failed++;
    forge_log_warn("test point: restore %ld fails on purpose", failed);
    return true;
}
/* Called once per restore (loop/restore.c), on the loop's thread. */
bool forge_testpoint_restore_stalls(int timeout_ms)
{
    static long seen;
    const char *want = getenv("FORGE_TEST_RESTORE_STALLS");
    const char *colon = want ? strchr(want, ':') : NULL;
    long from = colon ? strtol(want, NULL, 10) : 1;
    long n = want ? strtol(colon ? colon + 1 : want, NULL, 10) : 0;

    seen++;
    if (seen < from || seen >= from + n)
        return false;
    forge_log_warn("test point: restore %ld stalls %d ms, then fails, on "
                   "purpose",
                   seen, timeout_ms);
    forge_clock_sleep_ms(timeout_ms);
    return true;
}

/* Called at the top of each pass of the loop, on its thread. */
void forge_testpoint_loop_stall(void)
{
    const char *path = getenv("FORGE_TEST_LOOP_STALL");
    bool said = false;

    while (path && *path && access(path, F_OK) == 0) {
        if (!said)
            forge_log_warn("test point: the loop stalls while %s exists", path);
        said = true;
        forge_clock_sleep_ms(100);
    }
    if (said)
        forge_log_warn("test point: the loop goes on");
}
#else
typedef int forge_testpoint_unused_t; /* ISO C: no empty translation unit */
#endif
