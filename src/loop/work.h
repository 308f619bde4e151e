/* SPDX-License-Identifier: Apache-2.0 */
/*
 * work.h - the work the loop hands to the threads beside it (pool.h), one
 * kind per job that must never run on the consume loop: slurmrestd calls
 * (submit, cancel, clean an interrupted submit: submit.h; a poll tick:
 * poller.h) and file work on the shared storage (archive, cleanup:
 * archive_work.h).
 *
 * A forge_work_t is what every kind shares (the launch it is for, the
 * partition generation it was made in, how it went) and one payload per
 * kind (the union: only the member of its kind is valid).
 *
 * Ownership: an item belongs to the loop until it is posted, to the pool's
 * thread running it until it is finished, then to the loop again
 * (forge_pool_take); the one exception is a submit's `withdraw` flag,
 * which forge_submit_withdraw sets from the loop's thread while the item
 * is out (an atomic). Every pointer in an item is the item's own: freed by
 * forge_work_free, whatever its kind; a consumer that keeps one (the loop
 * adopting a submit's component ids, a poll item's states) takes it and
 * leaves NULL behind.
 */
#ifndef FORGE_WORK_H
#define FORGE_WORK_H

#include "archive/archive.h"
#include "archive/live.h"
#include "base/error.h"
#include "base/buf.h"
#include "record/held.h"
#include "record/state.h"
#include "render/staging.h"
#include "prepare/prepare.h"
#include "request/request.h"
#include "request/tenants.h"
#include "slurm/client.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

typedef enum forge_work_kind {
    FORGE_WORK_SUBMIT,       /* render, stage, submit; adopt on unknown */
    FORGE_WORK_CLEAN_SUBMIT, /* interrupted submit: adopt the tagged job
                                that may run, cancel the others; none:
                                remove staging, then submit */
    FORGE_WORK_CLEAN_CANCEL, /* an intent cancelled before its submit was
                                known: cancel tagged jobs, remove staging,
                                submit nothing */
    FORGE_WORK_CANCEL,
    FORGE_WORK_SWEEP, /* after an interrupted submit's clean: cancel the
                         jobs its tag finds but the launch's own (late
                         POSTs, held: submit.c) */
    FORGE_WORK_POLL,
    FORGE_WORK_ARCHIVE,    /* a finished launch's logs into logs.tar.gz */
    FORGE_WORK_CLEANUP,    /* delete the staging folder (and its logs) */
    FORGE_WORK_RESTAGE,    /* a requeued job's next run's credentials */
    FORGE_WORK_LIVE,       /* running launches' new output (live_work.h) */
    FORGE_WORK_IMAGE_NOTE, /* a job's end waits for its image check's
                              note (image_note.c) */
    FORGE_WORK__COUNT
} forge_work_kind_t;

/* Whether the Slurm thread carried a work item out (submit.h). */
typedef enum forge_work_refusal {
    FORGE_WORK_DONE = 0, /* carried out: the result says how it went */
    FORGE_WORK_STALE,    /* its partition's generation passed: dropped,
                            nothing of it reached Slurm after that */
    FORGE_WORK_WITHDRAWN /* a submit whose launch was cancelled before its
                            POST: nothing submitted (a CLEAN_SUBMIT's clean
                            ran; `status` says how it went) */
} forge_work_refusal_t;

/* A submit's request as the loop prepared it when it took the request
 * (parsed, checked against the storage, rendered: prepare.h), so the
 * Slurm thread neither parses, checks nor renders it again. */
typedef struct forge_work_prepared {
    char *script;            /* the batch script */
    json_t *payload;         /* the submit body (this reference: the item's) */
    forge_buf_t credentials; /* the credentials file's bytes (render.h):
                                secrets, wiped when freed */
    bool has_credentials;    /* false: the launch has none */
    size_t pool_count;
    /* whom it runs as (tenants.h; NULL: no tenant): borrowed from the
     * tenants, which outlive the pools (submit.h) */
    const forge_tenant_t *tenant;
} forge_work_prepared_t;

/* SUBMIT, CLEAN_SUBMIT, CLEAN_CANCEL. */
typedef struct forge_work_submit {
    char *request; /* the request bytes; NULL: its sealed request did not
                      open (a CLEAN_SUBMIT then submits nothing) */
    size_t request_len;
    /* NULL: prepared on the Slurm thread from `request` (a restored
     * intent, a retry) */
    forge_work_prepared_t *prepared;
    /* the nodes a later try may not use (render/try.h; NULL: none) */
    char *excluded_nodes;
    /* a clean's window in accounting: jobs eligible since (UNIX seconds;
     * the launch's acceptance, less an hour for clocks that disagree) */
    long long since_s;
    atomic_bool withdraw; /* set by forge_submit_withdraw */
    /* results */
    uint32_t job_id; /* the new job (the leader) */
    uint32_t *component_ids;
    size_t component_count;
} forge_work_submit_t;

/* CANCEL. */
typedef struct forge_work_cancel {
    uint32_t job_id;
} forge_work_cancel_t;

enum {
    FORGE_POLL_UNANSWERED = 0, /* error: change nothing */
    FORGE_POLL_UNCHANGED,
    FORGE_POLL_CHANGED,
    /* slurmctld no longer knows it, and accounting has no record of it,
     * or does not answer (no /slurmdb/, slurmdbd down), or was asked
     * too recently to be asked again (poller.c) */
    FORGE_POLL_ABSENT,
    /* slurmctld no longer knows it; accounting's records are in `jobs`
     * (each component's latest run, with its use): the loop checks they
     * are the launch's (tag or name) and that they say it ended */
    FORGE_POLL_ACCOUNTED,
};

/* One live job in a poll tick, and what the tick found. Nothing in it is
 * copied from the record but numbers: no string, and no allocation for a
 * job that is its own only component (the common case), so a tick of
 * 100,000 jobs is one array (the loop finds each job's launch back by its
 * id: tick.c). */
typedef struct forge_poll_item {
    uint32_t job_id; /* the leader */
    /* known components other than the leader's own id, or NULL */
    uint32_t *component_ids;
    uint32_t component_count; /* the record's count (the leader included) */
    /* The record's state when the tick was made. A job whose Slurm states
     * map (without details) to this same live state has not moved, seen
     * before or not: it costs no details call, after a restore too. */
    forge_state_t state;
    /* The record's updated_at_ms (the wall clock): when it took `state`.
     * A PENDING job that took it shortly before a controller was lost is
     * looked at after the loss (poller.c: a submit hold restored). */
    long long state_since_ms;
    bool missing;                /* the record had missing_since_ms set */
    int outcome;                 /* FORGE_POLL_* */
    forge_slurm_job_list_t jobs; /* CHANGED: the details; ACCOUNTED: the
                                    accounting records */
    char *states; /* FORGE_POLL_CHANGED: the states seen (for the record) */
    /* The launch's tag (render/try.h), only for a job already missing
     * (rare, like component_ids): accounting is asked for that tag's
     * records, so a reused job id's other record never hides this one's
     * (a first absence asks for any, and the loop checks the comment). */
    char *tag;
} forge_poll_item_t;

/* POLL: many launches at once (the work's launch_id is NULL), or one
 * (targeted). */
typedef struct forge_work_poll {
    forge_poll_item_t *items;
    size_t item_count;
    size_t item_cap; /* items allocated (tick.c grows it by doubling) */
    /* The loop's memory generation. The poller's memory of what it saw
     * (its change signatures) belongs to the records of one generation: a
     * new one (records rewound by an aborted transaction, partitions
     * restored) makes it forget, so every job is looked at afresh and a
     * state the rewind took back is published again. */
    unsigned long epoch;
    /* One job asked for now (loop/jobcomp.c: a jobcomp end that does not
     * decide, or a pushed end whose archive waits for Slurm's COMPLETING
     * to clear): one item, its details asked whatever the change cache
     * says (accounting when slurmctld no longer knows it), and what it
     * saw MERGED into the cache, which a tick's answer replaces instead.
     * The work's launch_id, attempt, partition and generation are its
     * launch's. */
    bool targeted;
} forge_work_poll_t;

/* ARCHIVE, RESTAGE (a CLEANUP carries nothing but its launch). */
typedef struct forge_work_files {
    /* what is kept of the request (held.h: its pools, secrets, tenant,
     * credentials), a copy; NULL: unknown (no pools, no secrets of its
     * own) */
    forge_held_t *kept;
    int restart;             /* RESTAGE: the run whose credentials to write */
    forge_archive_t archive; /* the result */
} forge_work_files_t;

/* IMAGE_NOTE: a FAILED end whose exit says the image check refused the
 * image (render.h), waiting for the check's note (loop/image_note.c). */
typedef struct forge_work_image_note {
    uint32_t job_id;  /* the job that ended */
    char *reason;     /* the end as Slurm said it: reason (copied), */
    json_t *slurm;    /* its slurm object and */
    json_t *usage;    /* what it used (references; NULL: unknown) */
    bool found;       /* result: the job left a note */
    forge_buf_t note; /* result: its first bytes (render.h's limit) */
} forge_work_image_note_t;

/* One launch of a LIVE read (loop/live.c makes it, live_work.c reads it
 * and makes its chunk's event): everything copied, so the launch may go
 * meanwhile. */
typedef struct forge_live_item {
    char *launch_id;
    int attempt;
    int try_num;
    int32_t partition;
    uint64_t generation;
    /* what is kept of its request (held.h: its own secrets, its labels),
     * a copy; NULL: unknown */
    forge_held_t *kept;
    forge_live_cursor_t *cursors; /* the record's, copies */
    size_t cursor_count;
    long n;             /* the chunk this read would be (the record's + 1) */
    uint64_t allowance; /* archive/live.h: its budget left */
    bool final;         /* the launch ended: its last read */
    /* results */
    forge_rc_t code; /* FORGE_OK, or the read failed (retried next time) */
    char message[512];
    forge_live_read_t read;
    char *event; /* the chunk's CloudEvent, compact JSON; NULL: none due */
    size_t event_len;
    uint64_t skipped; /* the bytes its segments skipped */
} forge_live_item_t;

/* LIVE: many launches at once (the work's launch_id is NULL). */
typedef struct forge_work_live {
    forge_live_item_t *items;
    size_t item_count;
} forge_work_live_t;

typedef struct forge_work {
    forge_work_kind_t kind;
    char *launch_id; /* NULL for a POLL */
    int attempt;
    int try_num; /* the launch's try it was made for (1-based; 0: none) */
    /* the launch's partition, and the generation it was made in */
    int32_t partition;
    uint64_t generation;
    long long made_ns; /* when it was made (clock/clock.h: listing.h) */
    /* results */
    forge_work_refusal_t refused; /* the Slurm thread's kinds */
    /* How the Slurm thread's kinds and the poll went; FORGE_SLURM_OK for
     * file work. */
    forge_slurm_status_t status;
    /* Our own refusal or failure, or FORGE_OK. A SUBMIT REJECTED before
     * Slurm saw it (the request's check; the staging folder unsafe): final,
     * not retried. File work: FORGE_OK done, FORGE_EUNSAFE_PATH a cleanup
     * refused (final), FORGE_EARCHIVE an archive that failed, any other a
     * cleanup that failed (both retried later). */
    forge_rc_t code;
    char message[512];
    union {
        forge_work_submit_t submit;    /* SUBMIT, CLEAN_SUBMIT, CLEAN_CANCEL */
        forge_work_cancel_t cancel;    /* CANCEL; SWEEP: the job kept */
        forge_work_poll_t poll;        /* POLL */
        forge_work_files_t files;      /* ARCHIVE, CLEANUP, RESTAGE */
        forge_work_live_t live;        /* LIVE */
        forge_work_image_note_t image; /* IMAGE_NOTE */
    };
    struct forge_work *next; /* the loop's lists (never the pool's) */
} forge_work_t;

/* A new item of `kind` for (launch_id, attempt) (copied; NULL for a POLL),
 * made in generation `generation` of `partition`; its payload empty. */
forge_work_t *forge_work_new(forge_work_kind_t kind, const char *launch_id,
                             int attempt, int32_t partition,
                             uint64_t generation);

/* p's script and payload (taken: NULL left in p) and what the Slurm
 * thread needs of launch (its credentials rendered, its pool count), for
 * whom tenant says, into w's submit (a SUBMIT or CLEAN_SUBMIT): the one
 * prepare of that submit. */
void forge_work_take_prepared(forge_work_t *w, forge_prepared_t *p,
                              const forge_launch_t *launch,
                              const forge_tenant_t *tenant);

/* w and everything it holds, whatever its kind. NULL-safe. */
void forge_work_free(forge_work_t *w);

/* The same, as a pool's drop handler. */
void forge_work_drop(void *w);

/* How the item went, for people (truncated to fit). */
void forge_work_say(forge_work_t *w, const char *fmt, ...) FORGE_PRINTF(2, 3);

/*
 * Whose a launch's files are and whom its job runs as: its tenant's user
 * (owner only when the worker is root: nobody else may give files away),
 * or, without tenants, the storage root's owner and the fleet's own user
 * (*user NULL). kept NULL (a record without its request): the latter.
 */
forge_rc_t forge_work_files_owner(const forge_config_t *cfg,
                                  const forge_tenants_t *tenants,
                                  const forge_held_t *kept,
                                  forge_fs_owner_t *owner, const char **user,
                                  forge_error_t *err) FORGE_WARN_UNUSED;

#endif
