/* SPDX-License-Identifier: Apache-2.0 */
/*
 * slurm/job_state.h - Slurm's job_state sets onto the platform's states
 * (docs/CONTRACT.md section 3). Pure, table-driven, no I/O.
 *
 * slurmrestd reports job_state as an array: one base state plus flags
 * ("RUNNING", "COMPLETING"; "PENDING", "REQUEUED"). It is classified by
 * membership, never by position. A heterogeneous job is one launch: its
 * components' states are aggregated.
 */
#ifndef FORGE_SLURM_JOB_STATE_H
#define FORGE_SLURM_JOB_STATE_H

#include "record/state.h"

#include <stddef.h>
#include <stdint.h>

/* Slurm's base states, one bit each (a set may, in theory, hold several). */
enum {
    FORGE_SLURM_PENDING = 1u << 0,
    FORGE_SLURM_RUNNING = 1u << 1,
    FORGE_SLURM_SUSPENDED = 1u << 2,
    FORGE_SLURM_COMPLETED = 1u << 3,
    FORGE_SLURM_CANCELLED = 1u << 4,
    FORGE_SLURM_FAILED = 1u << 5,
    FORGE_SLURM_TIMEOUT = 1u << 6,
    FORGE_SLURM_NODE_FAIL = 1u << 7,
    FORGE_SLURM_PREEMPTED = 1u << 8,
    FORGE_SLURM_BOOT_FAIL = 1u << 9,
    FORGE_SLURM_DEADLINE = 1u << 10,
    FORGE_SLURM_OUT_OF_MEMORY = 1u << 11,
};

/* Slurm's state flags that change the mapping (others are kept as
 * FORGE_SLURM_FLAG_OTHER and ignored). */
enum {
    FORGE_SLURM_FLAG_REQUEUED = 1u << 0,
    FORGE_SLURM_FLAG_REQUEUE_HOLD = 1u << 1,
    FORGE_SLURM_FLAG_REQUEUE_FED = 1u << 2,
    FORGE_SLURM_FLAG_COMPLETING = 1u << 3,
    FORGE_SLURM_FLAG_CONFIGURING = 1u << 4,
    FORGE_SLURM_FLAG_LAUNCH_FAILED = 1u << 5,
    FORGE_SLURM_FLAG_SPECIAL_EXIT = 1u << 6,
    FORGE_SLURM_FLAG_RESIZING = 1u << 7,
    FORGE_SLURM_FLAG_STAGE_OUT = 1u << 8,
    FORGE_SLURM_FLAG_STOPPED = 1u << 9,
    FORGE_SLURM_FLAG_SIGNALING = 1u << 10,
    FORGE_SLURM_FLAG_UPDATE_DB = 1u << 11,
    FORGE_SLURM_FLAG_RECONFIG_FAIL = 1u << 12,
    FORGE_SLURM_FLAG_POWER_UP_NODE = 1u << 13,
    FORGE_SLURM_FLAG_REVOKED = 1u << 14,
    FORGE_SLURM_FLAG_RESV_DEL_HOLD = 1u << 15,
    FORGE_SLURM_FLAG_OTHER = 1u << 31, /* a name this table does not know */
};

typedef struct forge_slurm_state_set {
    uint32_t base;  /* FORGE_SLURM_<BASE> bits */
    uint32_t flags; /* FORGE_SLURM_FLAG_* bits */
} forge_slurm_state_set_t;

/* Parses job_state names (as slurmrestd spells them). Unknown names set
 * FORGE_SLURM_FLAG_OTHER; they never make a state terminal. */
forge_slurm_state_set_t forge_slurm_state_parse(const char *const *names,
                                                size_t count);

/* What one component (or a non-het job) reports. */
typedef struct forge_slurm_component_state {
    forge_slurm_state_set_t set;
    int exit_code; /* return code of the batch script, -1 unknown */
    int signal;    /* 0 none */
} forge_slurm_component_state_t;

/* The platform's view: a state and the event's reason (a static string,
 * NULL for none; the caller adds Slurm's state_reason for PENDING). */
typedef struct forge_slurm_verdict {
    forge_state_t state; /* FORGE_STATE_NONE: no verdict (e.g. empty set) */
    const char *reason;
} forge_slurm_verdict_t;

/*
 * Maps one component's state (contract section 3 table). cancel_requested:
 * a CancelRequest asked for this launch ("requested" vs "by_scheduler").
 */
forge_slurm_verdict_t
forge_slurm_state_map(const forge_slurm_component_state_t *c,
                      int cancel_requested);

/*
 * Aggregates a heterogeneous job's components into one verdict: FAILED if
 * any failed, else TIMED_OUT if any timed out, else CANCELLED if any was
 * cancelled, SUCCEEDED only when all completed, RUNNING while any runs
 * (and none has decided the outcome), PENDING otherwise.
 */
forge_slurm_verdict_t
forge_slurm_state_aggregate(const forge_slurm_component_state_t *components,
                            size_t count, int cancel_requested);

/* Name of a base state bit ("PENDING"), NULL if not exactly one bit. */
const char *forge_slurm_base_name(uint32_t base_bit);

#endif
