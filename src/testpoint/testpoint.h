/* SPDX-License-Identifier: Apache-2.0 */
/*
 * testpoint.h - named places where the end-to-end tests make a worker fail
 * on purpose, to prove what a real crash or a broker error would do:
 *
 *   FORGE_TEST_CRASH_POINT=<name>  the process kills itself (SIGKILL, no
 *                                  cleanup, like kill -9) on reaching <name>
 *   FORGE_TEST_ABORT_TXN=<n>       the n-th transaction that carries
 *                                  anything is aborted instead of committed
 *   FORGE_TEST_RESTORE_FAILS=<n>   the first n partition restores fail (as
 *                                  if the state topic's end was not reached)
 *   FORGE_TEST_RESTORE_STALLS=[<from>:]<n>  n partition restores (from the
 *                                  from-th on, the first by default) wait
 *                                  out their whole timeout, then fail, as
 *                                  with a state topic that does not answer
 *   FORGE_TEST_ABORT_TXN_STATE=<S> the first transaction that carries a
 *                                  status event of state S (SUCCEEDED, ...)
 *                                  is aborted instead of committed
 *   FORGE_TEST_HOLD_STATE=<S>:<path>  while a file exists at path, the
 *                                  loop stops before it writes a status
 *                                  event of state S (the transition made,
 *                                  nothing of it sent yet), as a worker
 *                                  paused there (a long GC-like stall, a
 *                                  broker outage) would: the group moves
 *                                  on without it
 *   FORGE_TEST_COMMIT_STALLS=<n>   the n-th transaction that carries
 *                                  anything stalls at its commit: every
 *                                  attempt waits out its whole timeout and
 *                                  fails with a retriable timeout, as with a
 *                                  transaction coordinator that does not
 *                                  answer, until the worker gives up on it
 *                                  (kafka.c: the commit budget) and aborts
 *   FORGE_TEST_OFFSETS_HANG=<n>    the n-th sending of offsets to a
 *                                  transaction never returns (its thread
 *                                  waits an hour first), as librdkafka's
 *                                  may not after a broker restart
 *                                  (kafka_guard.h): the worker gives that
 *                                  producer up and replaces it
 *   FORGE_TEST_PRODUCER_FATAL=<n>  the producer takes a fatal error
 *                                  (INVALID_TXN_STATE, as seen after a
 *                                  broker restart) before the n-th
 *                                  transaction that carries anything
 *                                  commits: the worker replaces it
 *   FORGE_TEST_ABORT_TXN_RANDOM=<m> each transaction that carries anything
 *                                  is aborted with a chance of m per mille
 *                                  (the chaos scenarios); with
 *   FORGE_TEST_ABORT_TXN_RANDOM_UNTIL=<t> only before t (epoch seconds)
 *   FORGE_TEST_LOOP_STALL=<path>   while a file exists at path, the consume
 *                                  loop stops at the top of its pass (it
 *                                  looks again every 100 ms), as a loop
 *                                  stuck in a call would: its heartbeat
 *                                  ages and /healthz turns 503
 * (observe/health.h)
 *
 * Points: "submit.before" (the intent committed, Slurm not yet called),
 * "submit.after" (Slurm took the job, held, its id not yet recorded),
 * "submit.released" (the job released: it may run; its id not yet
 * recorded), "restage.before" (a requeue recorded, its run's credentials
 * not yet staged), "retry.before" (a retry's next try: its intent
 * committed, its staging folder written, its POST not yet made:
 * loop/tries.c, loop/submit.c).
 *
 * Compiled in only when the build defines FORGE_TEST_HOOKS (CMake option
 * of the same name; scripts/build sets it for the builds the tests use). A
 * production build has none of this: the macros expand to constants and
 * the environment variables mean nothing to it.
 */
#ifndef FORGE_TESTPOINT_H
#define FORGE_TESTPOINT_H

#include <stdbool.h>

#ifdef FORGE_TEST_HOOKS
void forge_testpoint_crash(const char *name);
bool forge_testpoint_abort_txn(void);
void forge_testpoint_event_state(const char *state);
bool forge_testpoint_restore_fail(void);
bool forge_testpoint_restore_stalls(int timeout_ms);
bool forge_testpoint_commit_stalls(void);
bool forge_testpoint_offsets_hang(void);
bool forge_testpoint_producer_fatal(void);
void forge_testpoint_loop_stall(void);
#define FORGE_TESTPOINT_RESTORE_FAIL()     forge_testpoint_restore_fail()
#define FORGE_TESTPOINT_RESTORE_STALLS(ms) forge_testpoint_restore_stalls(ms)
#define FORGE_TESTPOINT_COMMIT_STALLS()    forge_testpoint_commit_stalls()
#define FORGE_TESTPOINT_OFFSETS_HANG()     forge_testpoint_offsets_hang()
#define FORGE_TESTPOINT_PRODUCER_FATAL()   forge_testpoint_producer_fatal()
#define FORGE_TESTPOINT_LOOP_STALL()       forge_testpoint_loop_stall()
#define FORGE_TESTPOINT_CRASH(name)        forge_testpoint_crash(name)
#define FORGE_TESTPOINT_EVENT_STATE(state) forge_testpoint_event_state(state)
#define FORGE_TESTPOINT_ABORT_TXN()        forge_testpoint_abort_txn()
#define FORGE_TESTPOINTS_BUILT             1
#else
#define FORGE_TESTPOINT_CRASH(name)        ((void)0)
#define FORGE_TESTPOINT_ABORT_TXN()        false
#define FORGE_TESTPOINT_EVENT_STATE(state) ((void)0)
#define FORGE_TESTPOINT_RESTORE_FAIL()     false
#define FORGE_TESTPOINT_RESTORE_STALLS(ms) false
#define FORGE_TESTPOINT_COMMIT_STALLS()    false
#define FORGE_TESTPOINT_OFFSETS_HANG()     false
#define FORGE_TESTPOINT_PRODUCER_FATAL()   false
#define FORGE_TESTPOINT_LOOP_STALL()       ((void)0)
#define FORGE_TESTPOINTS_BUILT             0
#endif

#endif
