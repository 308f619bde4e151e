/* SPDX-License-Identifier: Apache-2.0 */
/*
 * slurm/accounting.h - a job as slurmdbd's accounting keeps it, through
 * slurmrestd's `GET /slurmdb/<version>/job/{job_id}` (issue 28): what the
 * worker needs of a job slurmctld no longer knows (it ended more than
 * MinJobAge ago): every het component's state and exit code as the poll
 * maps them (slurm/verdict.h), its times, and what it used (slurm/usage.h).
 *
 * The answer's shape is data_parser's JOB (slurmdb_job_rec_t), the same in
 * v0.0.41 to v0.0.45 for the fields read here (Slurm's
 * src/plugins/data_parser/v0.0.4x/parsers.c, PARSER_ARRAY(JOB) and
 * PARSER_ARRAY(STEP)):
 *   job_id, het.job_id / het.job_offset (0 and unset when not het),
 *   state.current[] / state.reason, exit_code and derived_exit_code
 *   ({status[], return_code, signal{id, name}}), time.submission /
 *   time.start / time.end (plain UNIX seconds, 0: unknown) / time.elapsed,
 *   tres.allocated[] ({type, name, id, count}; mem in MB), restart_cnt
 *   (v0.0.42+), comment.job, working_directory, nodes, and
 *   steps[].tres.requested.max[] ({type, name, id, count, task, node}: the
 *   steps' tres_usage_in_max, mem in bytes: max RSS).
 *
 * What the lookup returns: slurmrestd asks slurmdbd with JOBCOND_FLAG_DUP
 * (openapi/slurmdbd jobs.c), and the query matches `id_job = id OR
 * het_job_id = id` (as_mysql_jobacct_process.c), so the answer holds every
 * component of a het job asked by its leader, and every *run* of a job
 * Slurm requeued (a requeue gives the job a new submit time and a new
 * accounting record: job_mgr.c "Set a new submit time so the restarted job
 * looks like a new job"). Each component's latest run is kept (highest
 * restart_cnt, then submission, then start time); the earlier runs are
 * counted, not mapped (their REQUEUED / NODE_FAIL / PREEMPTED rows would
 * otherwise keep a finished job PENDING or end it with its first run's
 * state). A tag, when given, drops records with another comment (job ids
 * repeat after a controller's state is lost: render/try.h's tag names the
 * launch's job); a record without any comment is kept (slurmdbd stores
 * comments only with AccountingStoreFlags=job_comment): the caller checks
 * what else it can (the loop: the job's name, loop/tick.c).
 */
#ifndef FORGE_SLURM_ACCOUNTING_H
#define FORGE_SLURM_ACCOUNTING_H

#include "slurm/client.h"
#include "slurm/job_state.h"
#include "slurm/usage.h"

#include <jansson.h>
#include <stdbool.h>

/* What accounting adds to a component's job (forge_slurm_job_t), beside
 * what it used (the job's `use`: its allocated TRES, start, end and
 * elapsed time, the steps' largest RSS). Times in UNIX seconds, -1
 * unknown. */
typedef struct forge_slurm_acct_part {
    long long submit_s;
    int restart_count;
    int derived_exit_code; /* the highest of the steps', -1 unknown */
    int derived_signal;    /* 0 none */
} forge_slurm_acct_part_t;

typedef struct forge_slurm_accounting {
    forge_slurm_job_list_t jobs;    /* each component's latest run, in
                                       het_offset order: what the poll maps */
    forge_slurm_acct_part_t *parts; /* parallel to jobs.jobs */
    size_t earlier_runs;            /* records of requeued runs left out */
    size_t other_tags;              /* records dropped for another comment */
} forge_slurm_accounting_t;

/* Frees what a holds and leaves it empty. */
void forge_slurm_accounting_clear(forge_slurm_accounting_t *a);

/*
 * An answer's jobs[] read into out (emptied first): the records of job_id
 * (its own, or its het components'), with tag or no comment (tag NULL:
 * any comment), each component's latest run, each job with its `use`. OK with
 * at least one; NOT_FOUND with none; PROTOCOL when the answer has no jobs[].
 * res says why.
 */
forge_slurm_status_t forge_slurm_accounting_parse(const json_t *answer,
                                                  uint32_t job_id,
                                                  const char *tag,
                                                  forge_slurm_accounting_t *out,
                                                  forge_slurm_result_t *res);

/* GET /slurmdb/<version>/job/{job_id}, read as forge_slurm_accounting_parse
 * does. NOT_FOUND also when slurmrestd serves no /slurmdb/ (404: no
 * accounting configured) or when accounting has no record of it. */
forge_slurm_status_t forge_slurm_accounting_get(forge_slurm_client_t *c,
                                                uint32_t job_id,
                                                const char *tag,
                                                forge_slurm_accounting_t *out,
                                                forge_slurm_result_t *res);

/* A job of a launch's try that accounting saw start (its command ran, or
 * runs): the leader and its components, in het_offset order. */
typedef struct forge_slurm_accounted_job {
    uint32_t leader;         /* 0: none */
    uint32_t *component_ids; /* new (free()) */
    size_t component_count;
} forge_slurm_accounted_job_t;

/*
 * The job named `name` and tagged `tag` that accounting saw start, among
 * those eligible since since_s (UNIX seconds): GET /slurmdb/<version>/
 * jobs?job_name=<name>&start_time=<since_s>. What an interrupted submit's
 * clean asks when slurmctld's listing has no job of its tag: slurmctld
 * forgets an ended job MinJobAge after its end, accounting does not. A job
 * never released (cancelled on its submit hold) never becomes eligible,
 * so it is never listed; a record whose time.start is unset never ran. A
 * record with another comment is not the try's; one without any comment
 * (AccountingStoreFlags without job_comment) is taken only when
 * untagged_ok (the name alone then names the try: the first). Several:
 * the lowest leader (the first POST). OK with one (out set); NOT_FOUND
 * with none, or when slurmrestd serves no /slurmdb/ (404); the call's
 * failure otherwise (res says why: the caller must not take "none").
 */
forge_slurm_status_t forge_slurm_accounting_started(
    forge_slurm_client_t *c, const char *name, const char *tag,
    bool untagged_ok, long long since_s, forge_slurm_accounted_job_t *out,
    forge_slurm_result_t *res);

/* The verdict the poll would give these components (verdict.h's
 * forge_slurm_verdict: the same tables, the same het aggregation):
 * SUCCEEDED / FAILED (reason failed, node_fail, out_of_memory, preempted,
 * boot_fail, deadline) / CANCELLED / TIMED_OUT, or a live state for a
 * job accounting still sees live. *exit_code: the batch script's. */
forge_slurm_verdict_t
forge_slurm_accounting_verdict(const forge_slurm_accounting_t *a,
                               int cancel_requested, int *exit_code);

/* What the job used, per component and in total (usage.h's
 * forge_slurm_usage_of_jobs over a->jobs; out emptied first). */
void forge_slurm_accounting_usage(const forge_slurm_accounting_t *a,
                                  forge_slurm_usage_t *out);

#endif
