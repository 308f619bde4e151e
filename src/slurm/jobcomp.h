/* SPDX-License-Identifier: Apache-2.0 */
/*
 * slurm/jobcomp.h - the records Slurm's jobcomp/kafka plugin publishes
 * (issue 28), read, and what one means for a launch: nothing, RUNNING, its
 * terminal state, or "ask slurmctld now". Pure: no I/O, no Kafka; the
 * consumer of the topic and the loop's use of a decision come later.
 *
 * The record (Slurm 26.05, src/plugins/jobcomp/common/jobcomp_common.c,
 * jobcomp_common_job_record_to_data; serialized by jobcomp_kafka.c with
 * serialize_g_data_to_string(MIME_TYPE_JSON, SER_FLAGS_COMPACT), produced
 * by jobcomp_kafka_message.c with no key and no headers): one JSON object
 * per job, per het component, at its end, and with
 * JobCompParams=enable_job_start at its start (node_scheduler.c
 * jobcomp_g_record_job_start). Fields read here:
 *   jobid          integer, the component's own job id
 *   het_job_id, het_job_offset
 *                  integers, only for a het job (the leader's id; offset)
 *   state          Slurm's base state name (job_state_string of
 *                  job_state & JOB_STATE_BASE) on an end record; null on a
 *                  start record (state_string is only set for an end)
 *   exit_code, derived_ec
 *                  "code:signal" (WEXITSTATUS:WTERMSIG), end records only
 *   @start, @end   "%FT%T" in UTC with no zone (parse_time_make_str_utc),
 *                  left out when unknown ("Unknown"/"None"); @end only on
 *                  an end record
 *   elapsed        integer seconds, end records only
 *   job_name, wc_key, nodes, partition, cluster, work_dir, tres_alloc
 *                  strings (tres_alloc: tres_fmt_alloc_str, slurm/usage.h)
 *   total_cpus, total_nodes
 *                  integers
 *   comment        only with JobCompParams=send_comment (26.05): the
 *                  worker's tag `forge:<launch_id>:<attempt>[:<try>]`
 *                  (render/try.h)
 *
 * What an end record does NOT say: whether the job is over. slurmctld
 * writes one for every run of a job it requeues (job_mgr.c
 * job_completion_logger(job_ptr, true)): state NODE_FAIL on a node failure
 * or a failed launch, PREEMPTED on a preemption with PreemptMode=REQUEUE,
 * PENDING on `scontrol requeue`, and, where the site sets RequeueExit /
 * RequeueExitHold, whatever state a run with a listed exit code ended in
 * (the requeue is decided later, at epilog completion:
 * _set_job_requeue_exit_value). Such an end is CONFIRM, never terminal:
 * the job's details (what the poll asks) decide at once.
 */
#ifndef FORGE_SLURM_JOBCOMP_H
#define FORGE_SLURM_JOBCOMP_H

#include "base/error.h"
#include "record/state.h"
#include "slurm/job_state.h"
#include "slurm/usage.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum forge_jobcomp_kind {
    FORGE_JOBCOMP_START = 1, /* the job (component) began running */
    FORGE_JOBCOMP_END,       /* a run of it ended */
} forge_jobcomp_kind_t;

/* One record; strings owned (NULL when absent), numbers -1 when absent. */
typedef struct forge_jobcomp_record {
    forge_jobcomp_kind_t kind;
    uint32_t job_id;
    uint32_t het_job_id; /* 0: not het */
    int het_offset;
    char *state;                 /* Slurm's name; NULL on a start record */
    forge_slurm_state_set_t set; /* state parsed (job_state.h) */
    int exit_code;               /* -1 unknown */
    int signal;                  /* 0 none */
    int derived_exit_code;       /* -1 unknown */
    int derived_signal;
    long long start_s; /* UNIX seconds, -1 unknown */
    long long end_s;
    long long elapsed_s;
    long long total_cpus;
    long long total_nodes;
    char *job_name;
    char *wc_key;
    char *nodes;
    char *partition;
    char *cluster;
    char *work_dir;
    char *tres_alloc;
    char *comment;
    /* the comment read as the worker's tag (render/try.h) */
    bool tagged;
    char *launch_id; /* NULL unless tagged */
    int attempt;
    int try_num; /* 1 for a tag without a try */
} forge_jobcomp_record_t;

/* The record in bytes[0..len) into out (emptied first). FORGE_EINVALID_JSON
 * naming the field when it is not a JSON object, has no positive integer
 * jobid, or a field read here is not of its type and shape (a time not
 * "%FT%T", an exit code not "code:signal"); out is then empty. A record
 * without a comment or with another one is not an error: tagged false. */
forge_rc_t forge_jobcomp_parse(const char *bytes, size_t len,
                               forge_jobcomp_record_t *out,
                               forge_error_t *err) FORGE_WARN_UNUSED;

/* Frees what r holds and leaves it empty. */
void forge_jobcomp_record_clear(forge_jobcomp_record_t *r);

/* What the component of an end record used (slurm/usage.h): its
 * tres_alloc text and elapsed seconds; jobcomp carries no RSS (-1).
 * FORGE_EINVALID_JSON when tres_alloc is not Slurm's TRES text. */
forge_rc_t forge_jobcomp_usage_part(const forge_jobcomp_record_t *r,
                                    forge_slurm_usage_part_t *out,
                                    forge_error_t *err) FORGE_WARN_UNUSED;

/* ---- what a record means for a launch ---------------------------------- */

#define FORGE_JOBCOMP_MAX_COMPONENTS 32

/* The launch a record's tag names, as its owner's table has it (borrowed). */
typedef struct forge_jobcomp_launch {
    const char *launch_id;
    int attempt;
    int try_num;          /* its current try (1: the first) */
    forge_state_t state;  /* the record's state now */
    uint32_t job_id;      /* the try's job (het leader); 0: none recorded */
    size_t components;    /* het components (>= 1) */
    int cancel_requested; /* a CancelRequest asked (reason "requested") */
    /* When the record last moved to PENDING for a requeue (ms, wall
     * clock), 0 never: a start or end of a run before it is older. */
    long long requeued_at_ms;
    /* This deployment's staging root as jobs see it (the jobs' working
     * directories are below it: admin/reconcile_slurm.c); NULL: not
     * checked. */
    const char *staging;
    /* The site requeues by exit code (RequeueExit / RequeueExitHold): an
     * end with a non-zero exit may be requeued too. */
    bool exit_may_requeue;
    /* Slurm's requeues of the job so far (the record's restarts): a
     * SIGKILL end of a requeued job may be the orphan race's (verdict.c),
     * which only the job's details tell. */
    int restarts;
} forge_jobcomp_launch_t;

/* What the launch's owner remembers of its job's records between them
 * (zeroed at first; not durable: lost at a restart, the poll covers it). */
typedef struct forge_jobcomp_seen {
    long long run_start_s; /* @start of the newest run seen, 0: none */
    uint32_t ended;        /* components whose end of that run came */
    forge_slurm_component_state_t ends[FORGE_JOBCOMP_MAX_COMPONENTS];
} forge_jobcomp_seen_t;

typedef enum forge_jobcomp_action {
    FORGE_JOBCOMP_IGNORE,   /* changes nothing (why says which rule) */
    FORGE_JOBCOMP_RUNNING,  /* publish RUNNING */
    FORGE_JOBCOMP_TERMINAL, /* publish state with reason, as a poll would */
    FORGE_JOBCOMP_CONFIRM,  /* the job may go on (a requeue) or the record
                               does not decide: ask slurmctld for this job
                               now (details) and let the poll's verdict
                               decide */
} forge_jobcomp_action_t;

typedef struct forge_jobcomp_decision {
    forge_jobcomp_action_t action;
    forge_state_t state; /* RUNNING or the terminal state; NONE otherwise */
    const char *reason;  /* the event's reason (job_state.h's), static */
    int exit_code;       /* the batch script's (component 0), -1 unknown */
    int signal;
    const char *why; /* static: the rule that decided (for logs, tests) */
} forge_jobcomp_decision_t;

/* Whether work_dir is staging or below it (a '/' boundary). */
bool forge_jobcomp_below(const char *work_dir, const char *staging);

/*
 * What record r means for launch l (NULL: no launch of this worker has r's
 * launch_id), seen updated with it. IGNORE: not tagged, another
 * deployment's, not owned, another launch / attempt / try / job (a job the
 * adoption of an interrupted submit cancelled carries the same tag), no
 * job recorded yet, the launch already settled (terminal), a duplicate, a
 * run older than one seen (or than the requeue), a start after its end,
 * a het job's end while a component has not ended, a move the state
 * machine refuses, RUNNING already. RUNNING: a start record. TERMINAL:
 * the last component's end, every component's end state mapped and
 * aggregated by job_state.h's tables (the poll's), when none may be
 * requeued. CONFIRM: an end that may be a requeue's, or a state that does
 * not decide.
 */
forge_jobcomp_decision_t forge_jobcomp_decide(const forge_jobcomp_launch_t *l,
                                              forge_jobcomp_seen_t *seen,
                                              const forge_jobcomp_record_t *r);

#endif
