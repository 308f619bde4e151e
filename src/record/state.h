/* SPDX-License-Identifier: Apache-2.0 */
/*
 * record/state.h - the platform's launch states (docs/CONTRACT.md section
 * 3) and which transitions between them are legal. Shared by the Slurm
 * state mapping, the launch records and the events.
 */
#ifndef FORGE_RECORD_STATE_H
#define FORGE_RECORD_STATE_H

#include <stdbool.h>

typedef enum forge_state {
    FORGE_STATE_NONE = 0, /* no state yet (before ACCEPTED) */
    FORGE_STATE_ACCEPTED,
    FORGE_STATE_SUBMITTED,
    FORGE_STATE_PENDING,
    FORGE_STATE_RUNNING,
    FORGE_STATE_SUCCEEDED,
    FORGE_STATE_FAILED,
    FORGE_STATE_CANCELLED,
    FORGE_STATE_TIMED_OUT,
    FORGE_STATE_REJECTED,
    FORGE_STATE_LOST,
    FORGE_STATE__COUNT
} forge_state_t;

/* "ACCEPTED", ...; NULL for FORGE_STATE_NONE or out of range. */
const char *forge_state_name(forge_state_t s);

/* The state named name, or FORGE_STATE_NONE. */
forge_state_t forge_state_from_name(const char *name);

/* SUCCEEDED, FAILED, CANCELLED, TIMED_OUT, REJECTED, LOST. */
bool forge_state_is_terminal(forge_state_t s);

/*
 * Whether a launch may go from `from` to `to`: forward along ACCEPTED →
 * SUBMITTED → PENDING → RUNNING → terminal, skipping allowed; RUNNING →
 * PENDING (requeue); PENDING → SUBMITTED (a retry's next try submitted);
 * REJECTED only before SUBMITTED; nothing leaves a terminal state; a state
 * never "moves" to itself.
 */
bool forge_state_transition_legal(forge_state_t from, forge_state_t to);

/*
 * Whether a launch in `from` may be retried: its try's job ended with a
 * cause its policy retries (retry/retry.h), and the launch goes PENDING
 * (reason `retrying`) as the next try's intent instead of the terminal
 * state. From SUBMITTED, PENDING (a job that failed before a poll saw it
 * run: the one move to the same state) and RUNNING.
 */
bool forge_state_retry_legal(forge_state_t from);

#endif
