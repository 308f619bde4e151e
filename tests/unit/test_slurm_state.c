/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_slurm_state.c - src/slurm/job_state.c against docs/CONTRACT.md section
 * 3: every Slurm base state alone, every flag alone and with the bases it
 * meets, exit codes and signals, cancel attribution, unknown names, the
 * same sets in every order, and het job aggregation.
 */
#include "slurm/job_state.h"

#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdio.h>
#include <string.h>

#define MAX_NAMES 4
#define NAME_LEN  24
#define MAX_COMPS 8

/* Fixed arrays, no pointers: Criterion runs each parameter in a fresh
 * process. */
typedef struct map_case {
    char names[MAX_NAMES][NAME_LEN]; /* "" ends the list */
    int exit_code;
    int signal;
    int cancel_requested;
    forge_state_t state;
    char reason[NAME_LEN]; /* "" for NULL */
} map_case_t;

#define NONE      FORGE_STATE_NONE
#define PENDING   FORGE_STATE_PENDING
#define RUNNING   FORGE_STATE_RUNNING
#define SUCCEEDED FORGE_STATE_SUCCEEDED
#define FAILED    FORGE_STATE_FAILED
#define CANCELLED FORGE_STATE_CANCELLED
#define TIMED_OUT FORGE_STATE_TIMED_OUT

/* names, exit code, signal, cancel requested -> state, reason */
static map_case_t map_cases[] = {
    /* ---- every base state alone ---- */
    {{"PENDING"}, 0, 0, 0, PENDING, ""},
    {{"RUNNING"}, 0, 0, 0, RUNNING, ""},
    {{"SUSPENDED"}, 0, 0, 0, RUNNING, "suspended"},
    {{"COMPLETED"}, 0, 0, 0, SUCCEEDED, ""},
    {{"CANCELLED"}, 0, 0, 0, CANCELLED, "by_scheduler"},
    {{"FAILED"}, 1, 0, 0, FAILED, "failed"},
    {{"TIMEOUT"}, 0, 15, 0, TIMED_OUT, "timeout"},
    {{"NODE_FAIL"}, 0, 0, 0, FAILED, "node_fail"},
    {{"PREEMPTED"}, 0, 0, 0, FAILED, "preempted"},
    {{"BOOT_FAIL"}, 0, 0, 0, FAILED, "boot_fail"},
    {{"DEADLINE"}, 0, 0, 0, FAILED, "deadline"},
    {{"OUT_OF_MEMORY"}, 0, 9, 0, FAILED, "out_of_memory"},

    /* ---- every flag alone: only those that decide by themselves ---- */
    {{"REQUEUED"}, 0, 0, 0, PENDING, "requeued"},
    {{"REQUEUE_HOLD"}, 0, 0, 0, PENDING, "requeued"},
    {{"REQUEUE_FED"}, 0, 0, 0, PENDING, "requeued"},
    {{"COMPLETING"}, 0, 0, 0, RUNNING, ""},
    {{"CONFIGURING"}, 0, 0, 0, RUNNING, ""},
    {{"LAUNCH_FAILED"}, 0, 0, 0, FAILED, "launch_failed"},
    {{"SPECIAL_EXIT"}, 0, 0, 0, NONE, ""},
    {{"RESIZING"}, 0, 0, 0, NONE, ""},
    {{"STAGE_OUT"}, 0, 0, 0, NONE, ""},
    {{"STOPPED"}, 0, 0, 0, NONE, ""},
    {{"SIGNALING"}, 0, 0, 0, NONE, ""},
    {{"UPDATE_DB"}, 0, 0, 0, NONE, ""},
    {{"RECONFIG_FAIL"}, 0, 0, 0, NONE, ""},
    {{"POWER_UP_NODE"}, 0, 0, 0, NONE, ""},
    {{"REVOKED"}, 0, 0, 0, NONE, ""},
    {{"RESV_DEL_HOLD"}, 0, 0, 0, NONE, ""},
    {{"FUTURE_STATE"}, 0, 0, 0, NONE, ""},
    {{""}, 0, 0, 0, NONE, ""}, /* empty job_state: no verdict */

    /* ---- COMPLETING: not yet final, whatever the base ---- */
    {{"RUNNING", "COMPLETING"}, 0, 0, 0, RUNNING, ""},
    {{"COMPLETED", "COMPLETING"}, 0, 0, 0, RUNNING, ""},
    {{"FAILED", "COMPLETING"}, 1, 0, 0, RUNNING, ""},
    {{"CANCELLED", "COMPLETING"}, 0, 15, 1, RUNNING, ""},
    {{"TIMEOUT", "COMPLETING"}, 0, 0, 0, RUNNING, ""},
    {{"NODE_FAIL", "COMPLETING"}, 0, 0, 0, RUNNING, ""},
    {{"OUT_OF_MEMORY", "COMPLETING"}, 0, 0, 0, RUNNING, ""},
    {{"PREEMPTED", "COMPLETING"}, 0, 0, 0, RUNNING, ""},
    {{"SUSPENDED", "COMPLETING"}, 0, 0, 0, RUNNING, ""},
    /* a requeue still completing its run's epilog: requeued already (26.05
     * shows PENDING,COMPLETING after `scontrol requeue`) */
    {{"PENDING", "COMPLETING", "REQUEUED"}, 0, 0, 0, PENDING, "requeued"},
    {{"PENDING", "COMPLETING"}, 0, 0, 0, PENDING, "requeued"},
    {{"COMPLETED", "COMPLETING", "STAGE_OUT"}, 0, 0, 0, RUNNING, ""},

    /* ---- requeue flags: the same job id continues ---- */
    {{"PENDING", "REQUEUED"}, 0, 0, 0, PENDING, "requeued"},
    {{"PENDING", "REQUEUE_HOLD"}, 0, 0, 0, PENDING, "requeued"},
    {{"PENDING", "REQUEUE_FED"}, 0, 0, 0, PENDING, "requeued"},
    {{"RUNNING", "REQUEUED"}, 0, 0, 0, PENDING, "requeued"},
    {{"PREEMPTED", "REQUEUED"}, 0, 0, 0, PENDING, "requeued"},
    {{"PREEMPTED", "REQUEUE_HOLD"}, 0, 0, 0, PENDING, "requeued"},
    {{"COMPLETED", "REQUEUED"}, 0, 0, 0, PENDING, "requeued"},
    {{"FAILED", "REQUEUED"}, 1, 0, 0, PENDING, "requeued"},
    {{"NODE_FAIL", "REQUEUED"}, 0, 0, 0, PENDING, "requeued"},
    /* prolog failure: Slurm requeues held with LAUNCH_FAILED */
    {{"PENDING", "REQUEUE_HOLD", "LAUNCH_FAILED"},
     0,
     0,
     0,
     PENDING,
     "requeued"},
    {{"PENDING", "REQUEUE_HOLD", "SPECIAL_EXIT"}, 0, 0, 0, PENDING, "requeued"},

    /* ---- CONFIGURING and the flags the base decides ---- */
    {{"RUNNING", "CONFIGURING"}, 0, 0, 0, RUNNING, ""},
    {{"RUNNING", "CONFIGURING", "POWER_UP_NODE"}, 0, 0, 0, RUNNING, ""},
    {{"PENDING", "CONFIGURING"}, 0, 0, 0, PENDING, ""},
    {{"PENDING", "POWER_UP_NODE"}, 0, 0, 0, PENDING, ""},
    {{"PENDING", "RESV_DEL_HOLD"}, 0, 0, 0, PENDING, ""},
    {{"PENDING", "SPECIAL_EXIT"}, 0, 0, 0, PENDING, ""},
    {{"PENDING", "RECONFIG_FAIL"}, 0, 0, 0, PENDING, ""},
    {{"PENDING", "REVOKED"}, 0, 0, 0, PENDING, ""},
    {{"RUNNING", "STOPPED"}, 0, 0, 0, RUNNING, ""},
    {{"RUNNING", "SIGNALING"}, 0, 0, 0, RUNNING, ""},
    {{"RUNNING", "RESIZING"}, 0, 0, 0, RUNNING, ""},
    {{"RUNNING", "UPDATE_DB"}, 0, 0, 0, RUNNING, ""},
    {{"SUSPENDED", "STOPPED"}, 0, 0, 0, RUNNING, "suspended"},
    {{"COMPLETED", "STAGE_OUT"}, 0, 0, 0, SUCCEEDED, ""},
    {{"COMPLETED", "UPDATE_DB"}, 0, 0, 0, SUCCEEDED, ""},
    {{"FAILED", "UPDATE_DB"}, 3, 0, 0, FAILED, "failed"},
    {{"CANCELLED", "REVOKED"}, 0, 0, 0, CANCELLED, "by_scheduler"},
    {{"CANCELLED", "SIGNALING"}, 0, 15, 1, CANCELLED, "requested"},
    {{"TIMEOUT", "STAGE_OUT"}, 0, 0, 0, TIMED_OUT, "timeout"},
    {{"BOOT_FAIL", "RECONFIG_FAIL"}, 0, 0, 0, FAILED, "boot_fail"},

    /* ---- LAUNCH_FAILED: decides unless another final base says more ---- */
    {{"PENDING", "LAUNCH_FAILED"}, 0, 0, 0, PENDING, ""}, /* may be retried */
    {{"RUNNING", "LAUNCH_FAILED"}, 0, 0, 0, FAILED, "launch_failed"},
    {{"SUSPENDED", "LAUNCH_FAILED"}, 0, 0, 0, FAILED, "launch_failed"},
    {{"FAILED", "LAUNCH_FAILED"}, 1, 0, 0, FAILED, "launch_failed"},
    {{"NODE_FAIL", "LAUNCH_FAILED"}, 0, 0, 0, FAILED, "node_fail"},
    {{"BOOT_FAIL", "LAUNCH_FAILED"}, 0, 0, 0, FAILED, "boot_fail"},
    {{"TIMEOUT", "LAUNCH_FAILED"}, 0, 0, 0, TIMED_OUT, "timeout"},
    {{"CANCELLED", "LAUNCH_FAILED"}, 0, 0, 1, CANCELLED, "requested"},
    {{"COMPLETED", "LAUNCH_FAILED"}, 0, 0, 0, SUCCEEDED, ""},
    {{"RUNNING", "COMPLETING", "LAUNCH_FAILED"}, 0, 0, 0, RUNNING, ""},

    /* ---- COMPLETED: exit code and signal ---- */
    {{"COMPLETED"}, 2, 0, 0, FAILED, "failed"},
    {{"COMPLETED"}, 0, 9, 0, FAILED, "failed"},
    {{"COMPLETED"}, 1, 9, 0, FAILED, "failed"},
    {{"COMPLETED"}, -1, 0, 0, SUCCEEDED, ""}, /* unknown: Slurm's word */
    {{"COMPLETED"}, 0, 0, 1, SUCCEEDED, ""},  /* finished before the cancel */
    {{"FAILED"}, 0, 0, 0, FAILED, "failed"},
    {{"FAILED"}, 2, 0, 0, FAILED, "failed"},

    /* ---- CANCELLED: who asked ---- */
    {{"CANCELLED"}, 0, 15, 1, CANCELLED, "requested"},
    {{"CANCELLED"}, 0, 9, 0, CANCELLED, "by_scheduler"},
    {{"PENDING"}, 0, 0, 1, PENDING, ""}, /* asked, not done yet */
    {{"RUNNING"}, 0, 0, 1, RUNNING, ""},

    /* ---- unknown names never decide ---- */
    {{"RUNNING", "FUTURE_STATE"}, 0, 0, 0, RUNNING, ""},
    {{"PENDING", "FUTURE_STATE"}, 0, 0, 0, PENDING, ""},
    {{"COMPLETED", "FUTURE_STATE"}, 0, 0, 0, SUCCEEDED, ""},
    {{"FUTURE_STATE", "ANOTHER_ONE"}, 0, 0, 0, NONE, ""},
    {{"running"}, 0, 0, 0, NONE, ""}, /* case-sensitive */
    {{"Completed"}, 0, 0, 0, NONE, ""},
    {{"CANCELLED by 0"}, 0, 0, 0, NONE, ""}, /* squeue text, not a name */

    /* ---- several bases (should not happen): first final one wins ---- */
    {{"RUNNING", "FAILED"}, 1, 0, 0, FAILED, "failed"},
    {{"NODE_FAIL", "FAILED"}, 1, 0, 0, FAILED, "failed"},
    {{"OUT_OF_MEMORY", "DEADLINE"}, 0, 0, 0, FAILED, "out_of_memory"},
    {{"COMPLETED", "TIMEOUT"}, 0, 0, 0, TIMED_OUT, "timeout"},
    {{"TIMEOUT", "PREEMPTED"}, 0, 0, 0, FAILED, "preempted"},
    {{"TIMEOUT", "CANCELLED"}, 0, 0, 1, TIMED_OUT, "timeout"},
    {{"CANCELLED", "COMPLETED"}, 0, 0, 1, CANCELLED, "requested"},
    {{"COMPLETED", "RUNNING"}, 0, 0, 0, SUCCEEDED, ""},
    {{"PENDING", "RUNNING"}, 0, 0, 0, RUNNING, ""},
    {{"RUNNING", "SUSPENDED"}, 0, 0, 0, RUNNING, ""},
    {{"PENDING", "SUSPENDED"}, 0, 0, 0, RUNNING, "suspended"},
};

static size_t fill_names(const map_case_t *c, const char **names)
{
    size_t n = 0;

    while (n < MAX_NAMES && c->names[n][0] != '\0') {
        names[n] = c->names[n];
        n++;
    }
    return n;
}

static void describe(const char *const *names, size_t n, char *out, size_t size)
{
    size_t used = 0;

    out[0] = '\0';
    for (size_t i = 0; i < n && used < size; i++)
        used += (size_t)snprintf(out + used, size - used, "%s%s", i ? "," : "",
                                 names[i]);
}

static forge_slurm_verdict_t map_names(const char *const *names, size_t n,
                                       const map_case_t *c)
{
    forge_slurm_component_state_t comp = {
        .set = forge_slurm_state_parse(names, n),
        .exit_code = c->exit_code,
        .signal = c->signal,
    };

    return forge_slurm_state_map(&comp, c->cancel_requested);
}

static void expect_verdict(forge_slurm_verdict_t v, forge_state_t state,
                           const char *reason, const char *what)
{
    cr_expect_eq(v.state, state, "%s: state %s, want %s", what,
                 v.state ? forge_state_name(v.state) : "NONE",
                 state ? forge_state_name(state) : "NONE");
    if (reason[0] == '\0')
        cr_expect_null(v.reason, "%s: reason \"%s\", want none", what,
                       v.reason);
    else if (v.reason == NULL)
        cr_expect_fail("%s: no reason, want \"%s\"", what, reason);
    else
        cr_expect_str_eq(v.reason, reason, "%s", what);
}

/* Every permutation of names[k..n): the verdict must not depend on order. */
static int permute(const char **names, size_t k, size_t n, const map_case_t *c)
{
    int seen = 0;

    if (k + 1 >= n) {
        char what[160];

        describe(names, n, what, sizeof(what));
        expect_verdict(map_names(names, n, c), c->state, c->reason, what);
        return 1;
    }
    for (size_t i = k; i < n; i++) {
        const char *t = names[k];

        names[k] = names[i];
        names[i] = t;
        seen += permute(names, k + 1, n, c);
        names[i] = names[k];
        names[k] = t;
    }
    return seen;
}

ParameterizedTestParameters(slurm_state, map)
{
    return cr_make_param_array(map_case_t, map_cases,
                               sizeof(map_cases) / sizeof(map_cases[0]));
}

ParameterizedTest(map_case_t *c, slurm_state, map)
{
    const char *names[MAX_NAMES];
    size_t n = fill_names(c, names);
    static const int factorial[] = {1, 1, 2, 6, 24};
    char what[160];

    /* in the given order, then in every other order */
    describe(names, n, what, sizeof(what));
    expect_verdict(map_names(names, n, c), c->state, c->reason, what);
    cr_expect_eq(permute(names, 0, n, c), factorial[n]);

    /* a het job of one component is that component */
    {
        forge_slurm_component_state_t comp = {
            .set = forge_slurm_state_parse(names, n),
            .exit_code = c->exit_code,
            .signal = c->signal,
        };
        forge_slurm_verdict_t one =
            forge_slurm_state_map(&comp, c->cancel_requested);
        forge_slurm_verdict_t agg =
            forge_slurm_state_aggregate(&comp, 1, c->cancel_requested);

        cr_expect_eq(agg.state, one.state, "%s: aggregate of one", what);
        cr_expect(agg.reason == one.reason ||
                      (agg.reason && one.reason &&
                       strcmp(agg.reason, one.reason) == 0),
                  "%s: aggregate of one: reason", what);
    }
}

/* ---- parsing ---------------------------------------------------------- */

typedef struct name_case {
    char name[NAME_LEN];
    uint32_t base;
    uint32_t flags;
} name_case_t;

static name_case_t name_cases[] = {
    {"PENDING", FORGE_SLURM_PENDING, 0},
    {"RUNNING", FORGE_SLURM_RUNNING, 0},
    {"SUSPENDED", FORGE_SLURM_SUSPENDED, 0},
    {"COMPLETED", FORGE_SLURM_COMPLETED, 0},
    {"CANCELLED", FORGE_SLURM_CANCELLED, 0},
    {"FAILED", FORGE_SLURM_FAILED, 0},
    {"TIMEOUT", FORGE_SLURM_TIMEOUT, 0},
    {"NODE_FAIL", FORGE_SLURM_NODE_FAIL, 0},
    {"PREEMPTED", FORGE_SLURM_PREEMPTED, 0},
    {"BOOT_FAIL", FORGE_SLURM_BOOT_FAIL, 0},
    {"DEADLINE", FORGE_SLURM_DEADLINE, 0},
    {"OUT_OF_MEMORY", FORGE_SLURM_OUT_OF_MEMORY, 0},
    {"REQUEUED", 0, FORGE_SLURM_FLAG_REQUEUED},
    {"REQUEUE_HOLD", 0, FORGE_SLURM_FLAG_REQUEUE_HOLD},
    {"REQUEUE_FED", 0, FORGE_SLURM_FLAG_REQUEUE_FED},
    {"COMPLETING", 0, FORGE_SLURM_FLAG_COMPLETING},
    {"CONFIGURING", 0, FORGE_SLURM_FLAG_CONFIGURING},
    {"LAUNCH_FAILED", 0, FORGE_SLURM_FLAG_LAUNCH_FAILED},
    {"SPECIAL_EXIT", 0, FORGE_SLURM_FLAG_SPECIAL_EXIT},
    {"RESIZING", 0, FORGE_SLURM_FLAG_RESIZING},
    {"STAGE_OUT", 0, FORGE_SLURM_FLAG_STAGE_OUT},
    {"STOPPED", 0, FORGE_SLURM_FLAG_STOPPED},
    {"SIGNALING", 0, FORGE_SLURM_FLAG_SIGNALING},
    {"UPDATE_DB", 0, FORGE_SLURM_FLAG_UPDATE_DB},
    {"RECONFIG_FAIL", 0, FORGE_SLURM_FLAG_RECONFIG_FAIL},
    {"POWER_UP_NODE", 0, FORGE_SLURM_FLAG_POWER_UP_NODE},
    {"REVOKED", 0, FORGE_SLURM_FLAG_REVOKED},
    {"RESV_DEL_HOLD", 0, FORGE_SLURM_FLAG_RESV_DEL_HOLD},
    {"FUTURE_STATE", 0, FORGE_SLURM_FLAG_OTHER},
    {"pending", 0, FORGE_SLURM_FLAG_OTHER},
    {"PENDING ", 0, FORGE_SLURM_FLAG_OTHER},
    {"", 0, FORGE_SLURM_FLAG_OTHER},
};

ParameterizedTestParameters(slurm_state, parse_one_name)
{
    return cr_make_param_array(name_case_t, name_cases,
                               sizeof(name_cases) / sizeof(name_cases[0]));
}

ParameterizedTest(name_case_t *c, slurm_state, parse_one_name)
{
    const char *names[] = {c->name};
    forge_slurm_state_set_t set = forge_slurm_state_parse(names, 1);

    cr_expect_eq(set.base, c->base, "\"%s\": base %#x", c->name, set.base);
    cr_expect_eq(set.flags, c->flags, "\"%s\": flags %#x", c->name, set.flags);
    if (c->base != 0)
        cr_expect_str_eq(forge_slurm_base_name(c->base), c->name);
}

Test(slurm_state, parse_a_set_by_membership)
{
    const char *names[] = {"COMPLETING",   NULL,       "FAILED",
                           "FUTURE_STATE", "REQUEUED", "FAILED"};
    forge_slurm_state_set_t set = forge_slurm_state_parse(names, 6);

    cr_expect_eq(set.base, FORGE_SLURM_FAILED);
    cr_expect_eq(set.flags, FORGE_SLURM_FLAG_COMPLETING |
                                FORGE_SLURM_FLAG_REQUEUED |
                                FORGE_SLURM_FLAG_OTHER);
}

Test(slurm_state, parse_nothing)
{
    const char *nulls[] = {NULL, NULL};
    forge_slurm_state_set_t set = forge_slurm_state_parse(NULL, 3);

    cr_expect_eq(set.base, 0);
    cr_expect_eq(set.flags, 0);
    set = forge_slurm_state_parse(nulls, 2);
    cr_expect_eq(set.base, 0);
    cr_expect_eq(set.flags, 0);
    set = forge_slurm_state_parse(nulls, 0);
    cr_expect_eq(set.base, 0);
}

Test(slurm_state, base_name_needs_exactly_one_known_bit)
{
    cr_expect_null(forge_slurm_base_name(0));
    cr_expect_null(
        forge_slurm_base_name(FORGE_SLURM_RUNNING | FORGE_SLURM_FAILED));
    cr_expect_null(forge_slurm_base_name(1u << 12));
    cr_expect_null(forge_slurm_base_name(1u << 31));
    for (unsigned b = 0; b < 12; b++)
        cr_expect_not_null(forge_slurm_base_name(1u << b), "bit %u", b);
}

Test(slurm_state, map_null_is_no_verdict)
{
    forge_slurm_verdict_t v = forge_slurm_state_map(NULL, 1);

    cr_expect_eq(v.state, FORGE_STATE_NONE);
    cr_expect_null(v.reason);
}

/* ---- het jobs --------------------------------------------------------- */

typedef struct het_case {
    char label[48];
    char comps[MAX_COMPS][2][NAME_LEN]; /* per component: up to two names */
    int exit_code[MAX_COMPS];
    size_t count;
    int cancel_requested;
    forge_state_t state;
    char reason[NAME_LEN];
} het_case_t;

static het_case_t het_cases[] = {
    {"all completed", {{"COMPLETED"}, {"COMPLETED"}}, {0}, 2, 0, SUCCEEDED, ""},
    {"one failed, others completed",
     {{"COMPLETED"}, {"FAILED"}, {"COMPLETED"}},
     {0, 1, 0},
     3,
     0,
     FAILED,
     "failed"},
    {"completed with exit 2 + completed",
     {{"COMPLETED"}, {"COMPLETED"}},
     {2, 0},
     2,
     0,
     FAILED,
     "failed"},
    {"first failed component's reason",
     {{"COMPLETED"}, {"NODE_FAIL"}, {"OUT_OF_MEMORY"}},
     {0},
     3,
     0,
     FAILED,
     "node_fail"},
    {"first failed component's reason, swapped",
     {{"OUT_OF_MEMORY"}, {"NODE_FAIL"}},
     {0},
     2,
     0,
     FAILED,
     "out_of_memory"},
    {"one timeout, one completed",
     {{"TIMEOUT"}, {"COMPLETED"}},
     {0},
     2,
     0,
     TIMED_OUT,
     "timeout"},
    {"failed + timeout",
     {{"FAILED"}, {"TIMEOUT"}},
     {1},
     2,
     0,
     FAILED,
     "failed"},
    {"timeout + failed",
     {{"TIMEOUT"}, {"FAILED"}},
     {0, 1},
     2,
     0,
     FAILED,
     "failed"},
    {"preempted + completed",
     {{"COMPLETED"}, {"PREEMPTED"}},
     {0},
     2,
     0,
     FAILED,
     "preempted"},
    {"cancelled + completed",
     {{"CANCELLED"}, {"COMPLETED"}},
     {0},
     2,
     0,
     CANCELLED,
     "by_scheduler"},
    {"cancelled on request + completed",
     {{"COMPLETED"}, {"CANCELLED"}},
     {0},
     2,
     1,
     CANCELLED,
     "requested"},
    {"cancelled + timeout",
     {{"CANCELLED"}, {"TIMEOUT"}},
     {0},
     2,
     1,
     TIMED_OUT,
     "timeout"},
    {"cancelled + failed",
     {{"CANCELLED"}, {"FAILED"}},
     {0, 1},
     2,
     1,
     FAILED,
     "failed"},
    {"one running, one completed",
     {{"RUNNING"}, {"COMPLETED"}},
     {0},
     2,
     0,
     RUNNING,
     ""},
    {"one running, one failed: not final yet",
     {{"FAILED"}, {"RUNNING"}},
     {1, 0},
     2,
     0,
     RUNNING,
     ""},
    {"one completing, one completed",
     {{"COMPLETED", "COMPLETING"}, {"COMPLETED"}},
     {0},
     2,
     0,
     RUNNING,
     ""},
    {"one pending, one running",
     {{"PENDING"}, {"RUNNING"}},
     {0},
     2,
     0,
     RUNNING,
     ""},
    {"both pending", {{"PENDING"}, {"PENDING"}}, {0}, 2, 0, PENDING, ""},
    {"pending + completed",
     {{"COMPLETED"}, {"PENDING"}},
     {0},
     2,
     0,
     PENDING,
     ""},
    {"both requeued",
     {{"PENDING", "REQUEUED"}, {"PENDING", "REQUEUED"}},
     {0},
     2,
     0,
     PENDING,
     "requeued"},
    {"one requeued, one running",
     {{"RUNNING"}, {"PENDING", "REQUEUED"}},
     {0},
     2,
     0,
     RUNNING,
     "requeued"},
    {"both suspended",
     {{"SUSPENDED"}, {"SUSPENDED"}},
     {0},
     2,
     0,
     RUNNING,
     "suspended"},
    {"suspended + pending",
     {{"PENDING"}, {"SUSPENDED"}},
     {0},
     2,
     0,
     RUNNING,
     "suspended"},
    {"suspended + running",
     {{"SUSPENDED"}, {"RUNNING"}},
     {0},
     2,
     0,
     RUNNING,
     ""},
    {"one NONE", {{"RUNNING"}, {""}}, {0}, 2, 0, NONE, ""},
    {"one unknown only",
     {{"COMPLETED"}, {"FUTURE_STATE"}},
     {0},
     2,
     0,
     NONE,
     ""},
    {"NONE beats failed", {{"FAILED"}, {""}}, {1}, 2, 0, NONE, ""},
    {"8 completed",
     {{"COMPLETED"},
      {"COMPLETED"},
      {"COMPLETED"},
      {"COMPLETED"},
      {"COMPLETED"},
      {"COMPLETED"},
      {"COMPLETED"},
      {"COMPLETED"}},
     {0},
     8,
     0,
     SUCCEEDED,
     ""},
    {"8, the sixth failed",
     {{"COMPLETED"},
      {"COMPLETED"},
      {"COMPLETED"},
      {"COMPLETED"},
      {"COMPLETED"},
      {"BOOT_FAIL"},
      {"COMPLETED"},
      {"COMPLETED"}},
     {0},
     8,
     0,
     FAILED,
     "boot_fail"},
    {"8, the last still running",
     {{"COMPLETED"},
      {"COMPLETED"},
      {"COMPLETED"},
      {"COMPLETED"},
      {"COMPLETED"},
      {"COMPLETED"},
      {"COMPLETED"},
      {"RUNNING"}},
     {0},
     8,
     0,
     RUNNING,
     ""},
    {"8, a timeout and a cancel",
     {{"COMPLETED"},
      {"CANCELLED"},
      {"COMPLETED"},
      {"COMPLETED"},
      {"TIMEOUT"},
      {"COMPLETED"},
      {"COMPLETED"},
      {"COMPLETED"}},
     {0},
     8,
     0,
     TIMED_OUT,
     "timeout"},
    {"8, the fourth unknown",
     {{"COMPLETED"},
      {"COMPLETED"},
      {"COMPLETED"},
      {""},
      {"COMPLETED"},
      {"COMPLETED"},
      {"COMPLETED"},
      {"COMPLETED"}},
     {0},
     8,
     0,
     NONE,
     ""},
};

ParameterizedTestParameters(slurm_state, aggregate)
{
    return cr_make_param_array(het_case_t, het_cases,
                               sizeof(het_cases) / sizeof(het_cases[0]));
}

ParameterizedTest(het_case_t *c, slurm_state, aggregate)
{
    forge_slurm_component_state_t comps[MAX_COMPS];

    cr_assert_leq(c->count, (size_t)MAX_COMPS);
    for (size_t i = 0; i < c->count; i++) {
        const char *names[2];
        size_t n = 0;

        while (n < 2 && c->comps[i][n][0] != '\0') {
            names[n] = c->comps[i][n];
            n++;
        }
        comps[i].set = forge_slurm_state_parse(names, n);
        comps[i].exit_code = c->exit_code[i];
        comps[i].signal = 0;
    }
    expect_verdict(
        forge_slurm_state_aggregate(comps, c->count, c->cancel_requested),
        c->state, c->reason, c->label);
}

Test(slurm_state, aggregate_of_nothing_is_no_verdict)
{
    forge_slurm_component_state_t one = {
        .set = {FORGE_SLURM_COMPLETED, 0}, .exit_code = 0, .signal = 0};
    forge_slurm_verdict_t v = forge_slurm_state_aggregate(&one, 0, 0);

    cr_expect_eq(v.state, FORGE_STATE_NONE);
    cr_expect_null(v.reason);
    v = forge_slurm_state_aggregate(NULL, 2, 0);
    cr_expect_eq(v.state, FORGE_STATE_NONE);
}
