/* SPDX-License-Identifier: Apache-2.0 */
/*
 * record/state.c - the platform's launch states (state.h): their
 * names, which are terminal, and the table of legal transitions
 * (docs/CONTRACT.md section 3).
 */
#include "record/state.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))
#define BIT(s)   ((uint16_t)(1u << (s)))

static const char *const names[FORGE_STATE__COUNT] = {
    [FORGE_STATE_NONE] = NULL,
    [FORGE_STATE_ACCEPTED] = "ACCEPTED",
    [FORGE_STATE_SUBMITTED] = "SUBMITTED",
    [FORGE_STATE_PENDING] = "PENDING",
    [FORGE_STATE_RUNNING] = "RUNNING",
    [FORGE_STATE_SUCCEEDED] = "SUCCEEDED",
    [FORGE_STATE_FAILED] = "FAILED",
    [FORGE_STATE_CANCELLED] = "CANCELLED",
    [FORGE_STATE_TIMED_OUT] = "TIMED_OUT",
    [FORGE_STATE_REJECTED] = "REJECTED",
    [FORGE_STATE_LOST] = "LOST",
};

/* The outcomes Slurm can report for a job it ran (or cancelled). */
#define OUTCOMES                                                               \
    (BIT(FORGE_STATE_SUCCEEDED) | BIT(FORGE_STATE_FAILED) |                    \
     BIT(FORGE_STATE_CANCELLED) | BIT(FORGE_STATE_TIMED_OUT))

#define TERMINAL (OUTCOMES | BIT(FORGE_STATE_REJECTED) | BIT(FORGE_STATE_LOST))

/*
 * Allowed targets per source state. Forward along ACCEPTED → SUBMITTED →
 * PENDING → RUNNING → outcome, skipping allowed; RUNNING → PENDING (requeue,
 * preemption with requeue); REJECTED only before submission (from NONE or
 * ACCEPTED); LOST only once Slurm had the job (SUBMITTED, PENDING, RUNNING);
 * CANCELLED from ACCEPTED on (a cancel before the submit); PENDING →
 * SUBMITTED: a retry's next try submitted (its PENDING, reason retrying,
 * is forge_state_retry_legal's move). Terminal states have no row: nothing
 * leaves them. No row holds its own state.
 */
static const uint16_t allowed[FORGE_STATE__COUNT] = {
    [FORGE_STATE_NONE] = BIT(FORGE_STATE_ACCEPTED) | BIT(FORGE_STATE_REJECTED),
    [FORGE_STATE_ACCEPTED] =
        BIT(FORGE_STATE_SUBMITTED) | BIT(FORGE_STATE_PENDING) |
        BIT(FORGE_STATE_RUNNING) | OUTCOMES | BIT(FORGE_STATE_REJECTED),
    [FORGE_STATE_SUBMITTED] = BIT(FORGE_STATE_PENDING) |
                              BIT(FORGE_STATE_RUNNING) | OUTCOMES |
                              BIT(FORGE_STATE_LOST),
    [FORGE_STATE_PENDING] = BIT(FORGE_STATE_SUBMITTED) |
                            BIT(FORGE_STATE_RUNNING) | OUTCOMES |
                            BIT(FORGE_STATE_LOST),
    [FORGE_STATE_RUNNING] =
        BIT(FORGE_STATE_PENDING) | OUTCOMES | BIT(FORGE_STATE_LOST),
};

static bool in_range(forge_state_t s)
{
    return (unsigned)s < FORGE_STATE__COUNT;
}

const char *forge_state_name(forge_state_t s)
{
    return in_range(s) ? names[s] : NULL;
}

forge_state_t forge_state_from_name(const char *name)
{
    if (name == NULL)
        return FORGE_STATE_NONE;
    for (size_t i = 0; i < COUNT(names); i++)
        if (names[i] != NULL && strcmp(names[i], name) == 0)
            return (forge_state_t)i;
    return FORGE_STATE_NONE;
}

bool forge_state_is_terminal(forge_state_t s)
{
    return in_range(s) && (TERMINAL & BIT(s)) != 0;
}

bool forge_state_retry_legal(forge_state_t from)
{
    return from == FORGE_STATE_SUBMITTED || from == FORGE_STATE_PENDING ||
           from == FORGE_STATE_RUNNING;
}

bool forge_state_transition_legal(forge_state_t from, forge_state_t to)
{
    return in_range(from) && in_range(to) && (allowed[from] & BIT(to)) != 0;
}
