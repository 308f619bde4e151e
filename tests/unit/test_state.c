/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_state.c - src/record/state.c against docs/CONTRACT.md
 * section 3: every (from, to) pair of the 11 states checked against a matrix
 * written out here (a second, independent statement of the contract), the
 * terminal states, and the names.
 */
#include "record/state.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

/*
 * Row: from, column: to, both in enum order:
 *   N=NONE A=ACCEPTED S=SUBMITTED P=PENDING R=RUNNING u=SUCCEEDED
 *   F=FAILED C=CANCELLED T=TIMED_OUT j=REJECTED L=LOST
 * 'x' legal, '.' not.
 */
static const char *const legal[FORGE_STATE__COUNT] = {
    /* to:           NASPRuFCTjL */
    /* NONE      */ ".x.......x.",
    /* ACCEPTED  */ "..xxxxxxxx.",
    /* SUBMITTED */ "...xxxxxx.x",
    /* PENDING   */ "..x.xxxxx.x",
    /* RUNNING   */ "...x.xxxx.x",
    /* SUCCEEDED */ "...........",
    /* FAILED    */ "...........",
    /* CANCELLED */ "...........",
    /* TIMED_OUT */ "...........",
    /* REJECTED  */ "...........",
    /* LOST      */ "...........",
};

static const char *const expected_names[FORGE_STATE__COUNT] = {
    NULL,     "ACCEPTED",  "SUBMITTED", "PENDING",  "RUNNING", "SUCCEEDED",
    "FAILED", "CANCELLED", "TIMED_OUT", "REJECTED", "LOST",
};

static const char *label(int s)
{
    return s == FORGE_STATE_NONE ? "NONE" : expected_names[s];
}

Test(state, every_transition_against_the_matrix)
{
    int checked = 0;

    for (int from = 0; from < FORGE_STATE__COUNT; from++) {
        cr_assert_eq(strlen(legal[from]), (size_t)FORGE_STATE__COUNT);
        for (int to = 0; to < FORGE_STATE__COUNT; to++) {
            bool want = legal[from][to] == 'x';
            bool got = forge_state_transition_legal((forge_state_t)from,
                                                    (forge_state_t)to);

            cr_expect_eq(got, want, "%s -> %s: got %s, want %s", label(from),
                         label(to), got ? "legal" : "illegal",
                         want ? "legal" : "illegal");
            checked++;
        }
    }
    cr_assert_eq(checked, 121);
}

Test(state, nothing_moves_to_itself)
{
    for (int s = 0; s < FORGE_STATE__COUNT; s++)
        cr_expect_not(
            forge_state_transition_legal((forge_state_t)s, (forge_state_t)s),
            "%s -> itself", label(s));
}

Test(state, contract_examples)
{
    /* a fast job; requeue; cancel before submit; Slurm lost the job */
    cr_expect(forge_state_transition_legal(FORGE_STATE_SUBMITTED,
                                           FORGE_STATE_SUCCEEDED));
    cr_expect(
        forge_state_transition_legal(FORGE_STATE_RUNNING, FORGE_STATE_PENDING));
    cr_expect(forge_state_transition_legal(FORGE_STATE_ACCEPTED,
                                           FORGE_STATE_CANCELLED));
    cr_expect(
        forge_state_transition_legal(FORGE_STATE_RUNNING, FORGE_STATE_LOST));
    cr_expect_not(forge_state_transition_legal(FORGE_STATE_SUBMITTED,
                                               FORGE_STATE_REJECTED));
    cr_expect_not(
        forge_state_transition_legal(FORGE_STATE_ACCEPTED, FORGE_STATE_LOST));
    /* a retry's next try submitted (issue 26) */
    cr_expect(forge_state_transition_legal(FORGE_STATE_PENDING,
                                           FORGE_STATE_SUBMITTED));
    cr_expect_not(forge_state_transition_legal(FORGE_STATE_PENDING,
                                               FORGE_STATE_ACCEPTED));
    cr_expect_not(forge_state_transition_legal(FORGE_STATE_SUCCEEDED,
                                               FORGE_STATE_RUNNING));
}

/* A retry leaves a live state with a job for PENDING (retrying), the one
 * move to PENDING from PENDING; never before a job, never after the end. */
Test(state, a_retry_leaves_a_state_with_a_job)
{
    for (int s = 0; s < FORGE_STATE__COUNT; s++) {
        bool want = s == FORGE_STATE_SUBMITTED || s == FORGE_STATE_PENDING ||
                    s == FORGE_STATE_RUNNING;
        cr_expect_eq(forge_state_retry_legal((forge_state_t)s), want, "%s",
                     label(s));
    }
}

Test(state, out_of_range_is_never_legal)
{
    forge_state_t bad = (forge_state_t)FORGE_STATE__COUNT;

    cr_expect_not(forge_state_transition_legal(bad, FORGE_STATE_ACCEPTED));
    cr_expect_not(forge_state_transition_legal(FORGE_STATE_NONE, bad));
    cr_expect_not(
        forge_state_transition_legal((forge_state_t)-1, FORGE_STATE_ACCEPTED));
    cr_expect_not(forge_state_is_terminal(bad));
    cr_expect_null(forge_state_name(bad));
    cr_expect_null(forge_state_name((forge_state_t)-1));
}

Test(state, terminal_states)
{
    static const bool terminal[FORGE_STATE__COUNT] = {
        [FORGE_STATE_SUCCEEDED] = true, [FORGE_STATE_FAILED] = true,
        [FORGE_STATE_CANCELLED] = true, [FORGE_STATE_TIMED_OUT] = true,
        [FORGE_STATE_REJECTED] = true,  [FORGE_STATE_LOST] = true,
    };

    for (int s = 0; s < FORGE_STATE__COUNT; s++) {
        cr_expect_eq(forge_state_is_terminal((forge_state_t)s), terminal[s],
                     "%s", label(s));
        /* a terminal state's row of the matrix is empty, and only those */
        cr_expect_eq(strchr(legal[s], 'x') == NULL, terminal[s], "%s",
                     label(s));
    }
}

Test(state, names_round_trip)
{
    cr_expect_null(forge_state_name(FORGE_STATE_NONE));
    for (int s = 1; s < FORGE_STATE__COUNT; s++) {
        const char *name = forge_state_name((forge_state_t)s);

        cr_assert_not_null(name, "state %d has no name", s);
        cr_expect_str_eq(name, expected_names[s]);
        cr_expect_eq(forge_state_from_name(name), (forge_state_t)s, "%s", name);
    }
}

Test(state, unknown_names_are_none)
{
    static const char *const unknown[] = {
        "", "NONE", "accepted", "Running", "RUNNING ", "TIMEOUT", "COMPLETED",
    };

    cr_expect_eq(forge_state_from_name(NULL), FORGE_STATE_NONE);
    for (size_t i = 0; i < sizeof(unknown) / sizeof(unknown[0]); i++)
        cr_expect_eq(forge_state_from_name(unknown[i]), FORGE_STATE_NONE,
                     "\"%s\"", unknown[i]);
}
