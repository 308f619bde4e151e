/* SPDX-License-Identifier: Apache-2.0 */
/*
 * slurm/job_state.c - Slurm's job_state sets onto the platform's states
 * (slurm/job_state.h, docs/CONTRACT.md section 3): the names slurmrestd uses,
 * the mapping of one component, and the aggregation of a het job. Pure and
 * table-driven; the tables below are the whole policy.
 */
#include "slurm/job_state.h"

#include <stdbool.h>
#include <string.h>

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* ---- names ------------------------------------------------------------ */

typedef struct name_bit {
    const char *name;
    uint32_t bit;
} name_bit_t;

/* In bit order: forge_slurm_base_name indexes it by bit position. */
static const name_bit_t base_names[] = {
    {"PENDING", FORGE_SLURM_PENDING},
    {"RUNNING", FORGE_SLURM_RUNNING},
    {"SUSPENDED", FORGE_SLURM_SUSPENDED},
    {"COMPLETED", FORGE_SLURM_COMPLETED},
    {"CANCELLED", FORGE_SLURM_CANCELLED},
    {"FAILED", FORGE_SLURM_FAILED},
    {"TIMEOUT", FORGE_SLURM_TIMEOUT},
    {"NODE_FAIL", FORGE_SLURM_NODE_FAIL},
    {"PREEMPTED", FORGE_SLURM_PREEMPTED},
    {"BOOT_FAIL", FORGE_SLURM_BOOT_FAIL},
    {"DEADLINE", FORGE_SLURM_DEADLINE},
    {"OUT_OF_MEMORY", FORGE_SLURM_OUT_OF_MEMORY},
};

static const name_bit_t flag_names[] = {
    {"REQUEUED", FORGE_SLURM_FLAG_REQUEUED},
    {"REQUEUE_HOLD", FORGE_SLURM_FLAG_REQUEUE_HOLD},
    {"REQUEUE_FED", FORGE_SLURM_FLAG_REQUEUE_FED},
    {"COMPLETING", FORGE_SLURM_FLAG_COMPLETING},
    {"CONFIGURING", FORGE_SLURM_FLAG_CONFIGURING},
    {"LAUNCH_FAILED", FORGE_SLURM_FLAG_LAUNCH_FAILED},
    {"SPECIAL_EXIT", FORGE_SLURM_FLAG_SPECIAL_EXIT},
    {"RESIZING", FORGE_SLURM_FLAG_RESIZING},
    {"STAGE_OUT", FORGE_SLURM_FLAG_STAGE_OUT},
    {"STOPPED", FORGE_SLURM_FLAG_STOPPED},
    {"SIGNALING", FORGE_SLURM_FLAG_SIGNALING},
    {"UPDATE_DB", FORGE_SLURM_FLAG_UPDATE_DB},
    {"RECONFIG_FAIL", FORGE_SLURM_FLAG_RECONFIG_FAIL},
    {"POWER_UP_NODE", FORGE_SLURM_FLAG_POWER_UP_NODE},
    {"REVOKED", FORGE_SLURM_FLAG_REVOKED},
    {"RESV_DEL_HOLD", FORGE_SLURM_FLAG_RESV_DEL_HOLD},
};

static uint32_t lookup(const name_bit_t *table, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(table[i].name, name) == 0)
            return table[i].bit;
    return 0;
}

forge_slurm_state_set_t forge_slurm_state_parse(const char *const *names,
                                                size_t count)
{
    forge_slurm_state_set_t set = {0, 0};

    for (size_t i = 0; names != NULL && i < count; i++) {
        uint32_t bit;

        if (names[i] == NULL)
            continue;
        if ((bit = lookup(base_names, COUNT(base_names), names[i])) != 0)
            set.base |= bit;
        else if ((bit = lookup(flag_names, COUNT(flag_names), names[i])) != 0)
            set.flags |= bit;
        else
            set.flags |= FORGE_SLURM_FLAG_OTHER;
    }
    return set;
}

const char *forge_slurm_base_name(uint32_t base_bit)
{
    for (size_t i = 0; i < COUNT(base_names); i++)
        if (base_names[i].bit == base_bit)
            return base_names[i].name;
    return NULL; /* zero, several bits, or a bit this table does not know */
}

/* ---- one component ---------------------------------------------------- */

#define REQUEUE_FLAGS                                                          \
    (FORGE_SLURM_FLAG_REQUEUED | FORGE_SLURM_FLAG_REQUEUE_HOLD |               \
     FORGE_SLURM_FLAG_REQUEUE_FED)

/* Every base this table knows. */
#define ALL_BASES                                                              \
    (FORGE_SLURM_PENDING | FORGE_SLURM_RUNNING | FORGE_SLURM_SUSPENDED |       \
     FORGE_SLURM_COMPLETED | FORGE_SLURM_CANCELLED | FORGE_SLURM_FAILED |      \
     FORGE_SLURM_TIMEOUT | FORGE_SLURM_NODE_FAIL | FORGE_SLURM_PREEMPTED |     \
     FORGE_SLURM_BOOT_FAIL | FORGE_SLURM_DEADLINE | FORGE_SLURM_OUT_OF_MEMORY)

/* Final bases that already say more than LAUNCH_FAILED would. */
#define FINAL_EXCEPT_FAILED                                                    \
    (FORGE_SLURM_COMPLETED | FORGE_SLURM_CANCELLED | FORGE_SLURM_TIMEOUT |     \
     FORGE_SLURM_NODE_FAIL | FORGE_SLURM_PREEMPTED | FORGE_SLURM_BOOT_FAIL |   \
     FORGE_SLURM_DEADLINE | FORGE_SLURM_OUT_OF_MEMORY)

/*
 * Flags that decide before the base, in this order. A rule applies when
 * one of its flags is set, one of its `needs` bases (if any) is, and none
 * of its `unless` bases is.
 *   REQUEUED / REQUEUE_HOLD / REQUEUE_FED: the same job id continues, its
 *     run over (COMPLETING beside it is that run's epilog: the job goes
 *     back to PENDING, which is what happened to the launch).
 *   COMPLETING on a PENDING base: a requeue under way too (seen on 26.05:
 *     `scontrol requeue` shows PENDING,COMPLETING with the restart count
 *     already raised, then PENDING with reason BeginTime); a job that
 *     never ran is never COMPLETING.
 *   COMPLETING: not yet final (epilog, logs still being written), even when
 *     the base already says COMPLETED/FAILED/CANCELLED.
 *   LAUNCH_FAILED: decides unless a final base other than FAILED says more,
 *     or the job is PENDING (Slurm may retry a failed launch: only a
 *     job that left PENDING is failed by it).
 *   CONFIGURING (nodes booting for an allocated job): RUNNING; only looked
 *     at without a base - with one, the base decides.
 */
static const struct flag_rule {
    uint32_t flags;
    uint32_t needs; /* bases one of which must be set (0: none) */
    uint32_t unless;
    forge_state_t state;
    const char *reason;
} flag_rules[] = {
    {REQUEUE_FLAGS, 0, 0, FORGE_STATE_PENDING, "requeued"},
    {FORGE_SLURM_FLAG_COMPLETING, FORGE_SLURM_PENDING, 0, FORGE_STATE_PENDING,
     "requeued"},
    {FORGE_SLURM_FLAG_COMPLETING, 0, 0, FORGE_STATE_RUNNING, NULL},
    {FORGE_SLURM_FLAG_LAUNCH_FAILED, 0,
     FINAL_EXCEPT_FAILED | FORGE_SLURM_PENDING, FORGE_STATE_FAILED,
     "launch_failed"},
    {FORGE_SLURM_FLAG_CONFIGURING, 0, ALL_BASES, FORGE_STATE_RUNNING, NULL},
};

typedef enum base_kind {
    BASE_PLAIN,     /* state and reason as written */
    BASE_COMPLETED, /* SUCCEEDED unless the exit code or signal says not */
    BASE_CANCELLED, /* reason from cancel_requested */
} base_kind_t;

/*
 * The bases, in priority order: should a set ever hold several (Slurm
 * sends one), the first listed wins - failures, then TIMEOUT, CANCELLED,
 * COMPLETED, and only then the live states RUNNING, SUSPENDED, PENDING.
 */
static const struct base_rule {
    uint32_t bit;
    base_kind_t kind;
    forge_state_t state;
    const char *reason;
} base_rules[] = {
    {FORGE_SLURM_FAILED, BASE_PLAIN, FORGE_STATE_FAILED, "failed"},
    {FORGE_SLURM_NODE_FAIL, BASE_PLAIN, FORGE_STATE_FAILED, "node_fail"},
    {FORGE_SLURM_BOOT_FAIL, BASE_PLAIN, FORGE_STATE_FAILED, "boot_fail"},
    {FORGE_SLURM_OUT_OF_MEMORY, BASE_PLAIN, FORGE_STATE_FAILED,
     "out_of_memory"},
    {FORGE_SLURM_DEADLINE, BASE_PLAIN, FORGE_STATE_FAILED, "deadline"},
    {FORGE_SLURM_PREEMPTED, BASE_PLAIN, FORGE_STATE_FAILED, "preempted"},
    {FORGE_SLURM_TIMEOUT, BASE_PLAIN, FORGE_STATE_TIMED_OUT, "timeout"},
    {FORGE_SLURM_CANCELLED, BASE_CANCELLED, FORGE_STATE_CANCELLED, NULL},
    {FORGE_SLURM_COMPLETED, BASE_COMPLETED, FORGE_STATE_SUCCEEDED, NULL},
    {FORGE_SLURM_RUNNING, BASE_PLAIN, FORGE_STATE_RUNNING, NULL},
    {FORGE_SLURM_SUSPENDED, BASE_PLAIN, FORGE_STATE_RUNNING, "suspended"},
    /* reason NULL: the caller adds Slurm's state_reason */
    {FORGE_SLURM_PENDING, BASE_PLAIN, FORGE_STATE_PENDING, NULL},
};

static forge_slurm_verdict_t verdict(forge_state_t state, const char *reason)
{
    forge_slurm_verdict_t v = {state, reason};

    return v;
}

/*
 * COMPLETED means exit 0 to Slurm; a known non-zero exit code or a signal
 * contradicts it and is taken as a failure. Negative values (-1) are
 * "unknown" - e.g. the batched /jobs/state poll carries no exit code - and
 * leave Slurm's verdict standing.
 */
static forge_slurm_verdict_t completed(const forge_slurm_component_state_t *c)
{
    if (c->exit_code > 0 || c->signal > 0)
        return verdict(FORGE_STATE_FAILED, "failed");
    return verdict(FORGE_STATE_SUCCEEDED, NULL);
}

forge_slurm_verdict_t
forge_slurm_state_map(const forge_slurm_component_state_t *c,
                      int cancel_requested)
{
    if (c == NULL)
        return verdict(FORGE_STATE_NONE, NULL);

    for (size_t i = 0; i < COUNT(flag_rules); i++) {
        const struct flag_rule *r = &flag_rules[i];

        if ((c->set.flags & r->flags) != 0 && (c->set.base & r->unless) == 0 &&
            (!r->needs || (c->set.base & r->needs) != 0))
            return verdict(r->state, r->reason);
    }
    for (size_t i = 0; i < COUNT(base_rules); i++) {
        const struct base_rule *r = &base_rules[i];

        if ((c->set.base & r->bit) == 0)
            continue;
        switch (r->kind) {
        case BASE_COMPLETED:
            return completed(c);
        case BASE_CANCELLED:
            return verdict(r->state,
                           cancel_requested ? "requested" : "by_scheduler");
        case BASE_PLAIN:
            break;
        }
        return verdict(r->state, r->reason);
    }
    /* No base and no flag that decides alone: no verdict. */
    return verdict(FORGE_STATE_NONE, NULL);
}

/* ---- a het job -------------------------------------------------------- */

/* The terminal outcomes by precedence: the first one any component has
 * decides the launch, with that component's reason. */
static const forge_state_t outcome_order[] = {
    FORGE_STATE_FAILED,
    FORGE_STATE_TIMED_OUT,
    FORGE_STATE_CANCELLED,
    FORGE_STATE_SUCCEEDED,
};

static bool reason_is(const char *reason, const char *want)
{
    return reason != NULL && strcmp(reason, want) == 0;
}

forge_slurm_verdict_t
forge_slurm_state_aggregate(const forge_slurm_component_state_t *components,
                            size_t count, int cancel_requested)
{
    bool live = false, running = false, requeued = false;
    bool running_not_suspended = false;

    if (components == NULL || count == 0)
        return verdict(FORGE_STATE_NONE, NULL);

    for (size_t i = 0; i < count; i++) {
        forge_slurm_verdict_t v =
            forge_slurm_state_map(&components[i], cancel_requested);

        if (v.state == FORGE_STATE_NONE)
            return v; /* an incomplete answer changes nothing */
        if (forge_state_is_terminal(v.state))
            continue;
        live = true;
        requeued |= reason_is(v.reason, "requeued");
        if (v.state == FORGE_STATE_RUNNING) {
            running = true;
            running_not_suspended |= !reason_is(v.reason, "suspended");
        }
    }

    /* Never terminal while a component still runs or waits. */
    if (live) {
        const char *reason = NULL;

        if (requeued)
            reason = "requeued";
        else if (running && !running_not_suspended)
            reason = "suspended";
        return verdict(running ? FORGE_STATE_RUNNING : FORGE_STATE_PENDING,
                       reason);
    }

    for (size_t o = 0; o < COUNT(outcome_order); o++)
        for (size_t i = 0; i < count; i++) {
            forge_slurm_verdict_t v =
                forge_slurm_state_map(&components[i], cancel_requested);

            if (v.state == outcome_order[o])
                return v;
        }
    return verdict(FORGE_STATE_NONE, NULL); /* not reached */
}
