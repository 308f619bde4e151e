/* SPDX-License-Identifier: Apache-2.0 */
/*
 * admin/reconcile.h - `forge-worker reconcile`: the state topic held up
 * against what else knows the launches (docs/CONTRACT.md section 4,
 * docs/RECOVERY.md). The sources, one module each:
 *   reconcile_topics.c  the state topic (latest record per launch, from
 *                       launch_table.h), the requests topic (each launch's
 *                       request, cancels, whether the group consumed it:
 *                       group.h's committed offsets), the status topic
 *                       (last seq and state per launch), the logs topic
 *                       (archived or not): all read_committed, through
 *                       topic_scan.h, as `launches` and `replay` read;
 *   reconcile_slurm.c   Slurm: every job tagged `forge:<id>:<attempt>`
 *                       (GET /jobs), accounting for one job when slurmdbd
 *                       is there, cancels;
 *   reconcile_plan.c    the verdict per launch (pure: unit-tested);
 *   reconcile_apply.c   --execute: through the workers' own group and a
 *                       transaction (docs/RECOVERY.md says why);
 *   reconcile_report.c  the report as JSON;
 *   reconcile_map.c     a string-keyed table the others share.
 * One thread (the command's).
 */
#ifndef FORGE_RECONCILE_H
#define FORGE_RECONCILE_H

#include "config/config.h"
#include "base/error.h"
#include "record/launch.h"
#include "admin/admin.h"
#include "slurm/client.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* ---- reconcile_map.c: key -> value, insertion order kept ---------------- */

typedef struct forge_recon_map forge_recon_map_t;

forge_recon_map_t *forge_recon_map_new(void);
/* Frees the table and its keys; values are the caller's (free them with
 * forge_recon_map_each first). NULL-safe. */
void forge_recon_map_free(forge_recon_map_t *m);
/* The value slot of key, made (NULL) when absent. */
void **forge_recon_map_slot(forge_recon_map_t *m, const char *key);
void *forge_recon_map_get(const forge_recon_map_t *m, const char *key);
size_t forge_recon_map_count(const forge_recon_map_t *m);
/* The i-th value and key (insertion order), i < count. */
void *forge_recon_map_at(const forge_recon_map_t *m, size_t i);
const char *forge_recon_map_key_at(const forge_recon_map_t *m, size_t i);

/* ---- what the sources say of one launch -------------------------------- */

typedef struct forge_recon_launch {
    char *launch_id;
    /* state topic: the latest record (NULL: none, or a tombstone) */
    forge_launch_record_t *rec;
    int32_t rec_partition;
    /* requests topic: the latest launch request (NULL: none, or one the
     * worker refused: then only its attempt and partition are known) */
    char *request;
    size_t request_len;
    int request_attempt;
    int32_t request_partition; /* -1: no request at all */
    bool request_consumed;     /* before the group's committed offset */
    bool cancel_requested;     /* a cancel for it came after it */
    /* status topic: the latest attempt's events */
    int status_attempt; /* 0: none */
    long status_seq;    /* the last event's seq */
    forge_state_t status_state;
    uint32_t status_job_id; /* the last event's slurm.job_id, 0: none (a
                               retry's PENDING names the failed try's) */
    int status_try;         /* the last event's try (1 when it names none) */
    bool status_gap;        /* a seq did not follow the one before */
    /* logs topic: the highest attempt archived, 0: none */
    int logs_attempt;
} forge_recon_launch_t;

void forge_recon_launch_free(forge_recon_launch_t *l); /* NULL-safe */

typedef struct forge_recon_sources {
    forge_recon_map_t *launches; /* launch_id -> forge_recon_launch_t */
    forge_recon_map_t *jobs; /* "<id>:<attempt>:<try>" -> job list (Slurm) */
    size_t state_records;    /* records read (before "latest wins") */
    size_t partitions;       /* of the requests topic */
    size_t foreign_jobs;     /* tagged, another deployment's */
    bool accounting;         /* slurmdbd answers */
} forge_recon_sources_t;

void forge_recon_sources_clear(forge_recon_sources_t *s);

/* The launch_id's entry, made when absent. */
forge_recon_launch_t *forge_recon_launch_of(forge_recon_sources_t *s,
                                            const char *launch_id);

/* ---- reconcile_topics.c ------------------------------------------------- */

/*
 * Reads the requests, state, status and logs topics (in that order) into
 * s->launches, each partition from its beginning to its end
 * (read_committed), and s->partitions (the requests topic's). timeout_ms
 * bounds each wait for the brokers (topic_scan.h). Errors:
 * kafka_unavailable (no answer, or no progress that long), topic_missing,
 * config (the Kafka client's configuration).
 */
forge_admin_code_t
forge_recon_read_topics(const forge_config_t *cfg, const forge_sealer_t *sealer,
                        forge_recon_sources_t *s, int timeout_ms,
                        forge_admin_error_t *err) FORGE_WARN_UNUSED;

/* ---- reconcile_slurm.c -------------------------------------------------- */

/* Every job tagged forge:<id>:<attempt>, or forge:<id>:<attempt>:<try> for
 * a retry's later try (render/try.h), whose working directory lies in
 * this deployment's staging folder (staging: "<FORGE_SLURM_STORAGE_ROOT>/
 * staging/", where the worker runs every job) into s->jobs, keyed
 * "<id>:<attempt>:<try>" (forge_recon_tag_key; a het job's components
 * together); tagged jobs elsewhere are another deployment's on the same
 * cluster: only counted (s->foreign_jobs). FORGE_EIO: slurmrestd failed. */
forge_rc_t forge_recon_read_slurm(forge_slurm_client_t *c, const char *staging,
                                  forge_recon_sources_t *s,
                                  forge_error_t *err) FORGE_WARN_UNUSED;

/* The key of s->jobs for the tag of (launch_id, attempt, try_num):
 * "<id>:<attempt>:<try>" (a try < 1 is the first), cut to size. */
void forge_recon_tag_key(char *key, size_t size, const char *launch_id,
                         int attempt, int try_num);

/* The jobs tagged for try try_num of (launch_id, attempt); NULL: none. */
const forge_slurm_job_list_t *
forge_recon_jobs_of(const forge_recon_sources_t *s, const char *launch_id,
                    int attempt, int try_num);

/* Of list (sorted by leader, then het_offset, as read_slurm leaves it),
 * the components of the job led by leader: a view into list (never
 * cleared), empty when none. */
forge_slurm_job_list_t forge_recon_job_view(const forge_slurm_job_list_t *list,
                                            uint32_t leader);

/* Accounting (slurmdbd) for the launches whose record or last event names
 * a job Slurm's live list no longer has: what it knows joins s->jobs. The
 * stack has no slurmdbd: every such call answers NOT_FOUND, and the
 * launch is left to the worker (LOST after FORGE_LOST_GRACE_S). */
void forge_recon_read_accounting(forge_slurm_client_t *c,
                                 forge_recon_sources_t *s);

/* A job's leader id (its het_job_id, or its own id). */
uint32_t forge_recon_leader(const forge_slurm_job_t *j);

/* Whether any job of list is not finished (its verdict not terminal). */
bool forge_recon_any_live(const forge_slurm_job_list_t *list);

/* ---- reconcile_plan.c --------------------------------------------------- */

typedef enum forge_recon_kind {
    FORGE_RECON_CONSISTENT,
    FORGE_RECON_REBUILD,        /* no record: rebuilt (requests + status +
                                   Slurm) */
    FORGE_RECON_ORPHAN_REBUILD, /* a tagged job no record knows, its request
                                   on the requests topic: rebuilt */
    FORGE_RECON_ORPHAN_CANCEL,  /* a tagged job, no record, no request */
    FORGE_RECON_ADOPT,          /* record without its job: the tag's job */
    FORGE_RECON_TRANSITIONS,    /* record live, Slurm further: events */
    FORGE_RECON_ENDED_JOB_LIVE, /* record terminal, a tagged job live */
    FORGE_RECON_DUPLICATE_JOB,  /* record live with its job, and another
                                   live job with its tag: cancelled */
    FORGE_RECON_JOB_MISSING,    /* record live, no job anywhere: left to the
                                   worker (LOST after FORGE_LOST_GRACE_S) */
    FORGE_RECON_SEQ_MISMATCH,   /* status topic and record disagree on seq:
                                   nothing written (it would break seq) */
} forge_recon_kind_t;

const char *forge_recon_kind_name(forge_recon_kind_t k);

/* One status event the repair publishes. */
typedef struct forge_recon_event {
    long seq;
    forge_state_t state, previous;
    char *reason;  /* owned; NULL: none */
    json_t *slurm; /* owned; NULL: none */
} forge_recon_event_t;

typedef struct forge_recon_item {
    const forge_recon_launch_t *launch; /* borrowed from the sources while
                                           planning; NULL after */
    char *launch_id;
    int attempt;
    int32_t partition; /* of the record; -1: none */
    forge_recon_kind_t kind;
    forge_state_t state; /* what the record says (or will) before events */
    forge_launch_record_t *rec; /* the record to write, owned; NULL: none */
    forge_recon_event_t *events;
    size_t event_count;
    uint32_t *cancel_jobs; /* Slurm jobs to cancel */
    size_t cancel_count;
    char *note; /* why, for people */
    bool done;  /* --execute: carried out */
    char *error;
} forge_recon_item_t;

typedef struct forge_recon_plan {
    forge_recon_item_t *items; /* sorted by launch_id */
    size_t count;
    bool state_topic_empty;
    size_t foreign_jobs; /* tagged jobs of another deployment, left alone */
} forge_recon_plan_t;

/* The verdict for every launch and every tagged job of s. now_ms stamps
 * the rebuilt records. */
void forge_recon_plan_make(const forge_recon_sources_t *s, long long now_ms,
                           forge_recon_plan_t *out);
void forge_recon_plan_clear(forge_recon_plan_t *p);

/* Whether an item asks for anything (a record, an event, a cancel) or is
 * wrong in a way nothing here repairs. */
bool forge_recon_item_consistent(const forge_recon_item_t *it);
/* Whether an item is repaired, or has nothing left for reconcile to do
 * (job_missing: the worker decides). */
bool forge_recon_item_settled(const forge_recon_item_t *it);

/* ---- reconcile_apply.c -------------------------------------------------- */

/* What --execute found in the way (the command's exit code). */
typedef enum forge_recon_refusal {
    FORGE_RECON_OK = 0,
    FORGE_RECON_GROUP_ACTIVE,  /* 75 */
    FORGE_RECON_KAFKA_DOWN,    /* 69 */
    FORGE_RECON_SLURM_DOWN,    /* 69 */
    FORGE_RECON_TOPIC_MISSING, /* 69 */
    FORGE_RECON_CONFIG,        /* 78 */
} forge_recon_refusal_t;

typedef struct forge_recon_run {
    const forge_config_t *cfg;
    const forge_sealer_t *sealer;
    forge_slurm_client_t *slurm;
    const char *staging; /* "<FORGE_SLURM_STORAGE_ROOT>/staging/" */
    bool execute;
    int timeout_ms;    /* joining the group */
    int kafka_wait_ms; /* any other wait for the brokers (CONTRACT section
                          4: no progress that long is kafka_unavailable) */
} forge_recon_run_t;

/*
 * The whole command: with execute, checks the group is empty and joins it
 * (holding every partition) before anything is read; reads the sources,
 * plans, and with execute writes the records and events in one
 * transaction carrying the group's offsets unchanged, then cancels what
 * the plan cancels, then leaves the group. *plan is filled unless the
 * answer is not FORGE_RECON_OK (err says why then).
 */
forge_recon_refusal_t forge_recon_run(const forge_recon_run_t *run,
                                      forge_recon_plan_t *plan,
                                      forge_error_t *err);

/* ---- reconcile_report.c ------------------------------------------------- */

/* {"execute", "state_topic_empty", "launches": n, "inconsistent": n,
 *  "undone": n, "items": [...]} (new). */
json_t *forge_recon_report_json(const forge_recon_plan_t *p, bool execute);

/* One line per item that is not consistent, and a summary line. */
void forge_recon_report_text(const forge_recon_plan_t *p, bool execute,
                             FILE *out);

#endif
