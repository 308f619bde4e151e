/* SPDX-License-Identifier: Apache-2.0 */
/*
 * launch.h - a launch's durable record: what the worker must know to carry
 * on after a crash or a rebalance (docs/CONTRACT.md section 1: the state
 * topic, keyed by launch_id, co-partitioned with the requests). One record
 * per launch, for its latest attempt; the state machine's rules (legal
 * transitions, seq +1 per event) are enforced here.
 *
 * The request itself is kept (as received) until the launch's job id is
 * recorded, so a new owner can resubmit an interrupted submit without the
 * requests topic. From then on only what is still needed of it is kept
 * (held.h: its labels, secrets, pools' names and tenant, for events,
 * redaction and the archive), until the launch is archived (or cleaned,
 * when it has no logs). Both hold secrets (the ingest token, env and
 * secret_env values), so the state topic only ever gets them sealed
 * (seal.h), bound to the record's launch_id and attempt: "request": null,
 * "request_sealed": {"kid", "iv", "ct"}, which opens to the whole request
 * or, once a job id is recorded, to the request reduced to what is kept
 * (forge_held_to_json: same shape, so whatever reads the one reads the
 * other). Records written before sealing carry it in clear in "request";
 * they are read as before and sealed on their next write. The version
 * stays 1: the change is additive, and a worker that predates it reads a
 * sealed record as one without its request.
 *
 * A sealed request that cannot be opened (a key this worker does not hold,
 * or it does not authenticate) leaves the rest of the record intact: the
 * request is NULL, request_error says why, and the sealed value is kept and
 * written back as it was, so a worker with the right key can still open it.
 *
 * In memory (the launch table holds one record per launch: 100,000 of
 * them at scale), a record keeps its request's bytes only while a submit
 * may still need them (no job id yet), and nothing parsed of them (the
 * table keeps the labels, secrets, pools and tenant apart: held.h). Once
 * the job id is recorded the bytes go (forge_launch_compact): every
 * record written from then on carries the kept form, sealed
 * (forge_launch_record_encode_kept), and the archive is made from it. An
 * aborted transaction loses nothing by it: the loop restores from the
 * state topic, whose committed record of a launch without a job id still
 * carries the whole request. Decoding takes a fast path for records
 * shaped as this worker writes them (launch.c) and gives the general
 * parse everything else.
 *
 * After a terminal state: archived (the logs event is out, in the same
 * transaction as the record saying so), then cleaned (staging deleted).
 *
 * slurm_states (optional, additive like the sealed request): the job's
 * Slurm states, as the poller writes them down (poller.c: "<job_id>:<state>,
 * ...;" per job entry), that the record's state was derived from. A worker
 * that restores the record takes them for what it last saw, so an
 * unchanged job costs no details call; a record an aborted transaction
 * rewound carries the states of its own, older state, so the job's
 * present ones differ and are looked at again.
 */
#ifndef FORGE_LAUNCH_H
#define FORGE_LAUNCH_H

#include "base/error.h"
#include "retry/retry.h"
#include "text/sha256.h"
#include "archive/live.h"
#include "record/held.h"
#include "record/state.h"
#include "record/seal.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct forge_launch_record {
    char *launch_id;
    int attempt;
    forge_state_t state;
    long seq; /* events published so far for (launch_id, attempt) */
    char digest[FORGE_SHA256_HEX]; /* of the request bytes */
    /* The flags, one byte each, where the digest leaves room (the record
     * is every tracked launch's: docs/BENCHMARKS.md, memory). */
    /* decoded: request was opened from a sealed value (it authenticated:
     * the worker wrote it, after validating it), not read in clear */
    bool request_was_sealed;
    bool cancel_requested;
    bool archived; /* the logs_archived event is published */
    bool cleaned;  /* staging and scheduler logs deleted (or never made) */
    /* The clean of an interrupted submit of this attempt ran: a POST of
     * it slurmrestd still held may land later (held, never started), so
     * the owner looks for the jobs the tag finds again and cancels those
     * not the launch's (the worker's sweep), then drops the flag. */
    bool sweep_due;
    bool has_usage; /* gpu_seconds and elapsed_s are known (below) */
    bool log_final; /* the final live chunk is published (below) */
    /* the request as received, or NULL; with a job id recorded: what the
     * sealed value opened to (decoded), or NULL (forge_launch_compact) */
    char *request;
    size_t request_len;
    json_t *request_sealed; /* could not be opened: kept as read, or NULL */
    forge_error_t *request_error; /* why not (no secret in it), or NULL */
    uint32_t job_id;              /* 0: intent recorded, no job id yet */
    /* The highest later attempt refused while this one was live (0: none):
     * that (launch_id, attempt) was decided REJECTED, so reading its
     * request again (a replay, a resend) changes nothing. */
    int refused_attempt;
    uint32_t *component_ids; /* het components, in het_offset order */
    size_t component_count;
    long long accepted_at_ms;
    long long updated_at_ms;
    long long missing_since_ms; /* 0: Slurm knows the job */
    char *slurm_states;         /* see above; NULL: none seen yet */
    /* Slurm requeued the job (a preemption, a node failure, `scontrol
     * requeue`): restarts is the highest restart count a poll saw (written
     * with the PENDING move it came with), restarts_staged the highest run
     * whose credentials the worker staged (render.h:
     * forge_render_credentials_name). Each run from restarts_staged + 1 to
     * restarts is staged by whoever owns the launch (restage.c), so an
     * owner that died between the two leaves it to the next. Optional,
     * absent while 0. */
    int restarts;
    int restarts_staged;
    /* Retries (issue 26, retry/retry.h): the policy the launch was accepted
     * with, kept for all its tries (max_tries 0 or 1: never retried;
     * records from before read so); which try of the attempt the record
     * is at (1-based, 0 read as 1); the cause of the last retry; the nodes
     * the failed tries ran on, when the policy excludes them (Slurm's node
     * list, comma-separated); and when the next try may be submitted
     * (wall clock, ms; 0: at once). A record whose policy may still retry
     * keeps its whole request, sealed, with its job id too (the next try
     * is submitted from it). Each optional, absent while unset. */
    forge_retry_policy_t retry;
    int try_num;
    char *retry_cause;
    char *excluded_nodes;
    long long retry_not_before_ms;
    /* What the job used, from its terminal move's `usage` (issue 28:
     * forge_launch_add_usage; with retries, every try's end summed, issue
     * 40): GPU-seconds over its components (each
     * component's GPUs x its elapsed seconds: the event's gpu_hours x
     * 3600, whole seconds, so the record keeps plain integers) and the
     * elapsed seconds (-1 unknown). has_usage (above) false: none said
     * (LOST, no job, a live launch, records from before). Optional, absent
     * while unknown: "gpu_seconds", "elapsed_s". */
    long long gpu_seconds;
    long long elapsed_s;
    /* Live logs (issue 29, archive/live.h): the chunks published for this
     * attempt (the last one's n), whether the final one is (log_final,
     * above), and where each
     * file of its staging folder stands: written with each chunk, in its
     * transaction, so a new owner continues where the last committed chunk
     * ended. Optional, absent until the first chunk: "logs": {"n",
     * "final", "files": [{"name", "offset", "ino"}]} (launch_logs.c). A
     * record with it takes the general decoder. */
    long log_chunks;
    forge_live_cursor_t *log_cursors;
    size_t log_cursor_count;
} forge_launch_record_t;

/* A new record in state NONE for (launch_id, attempt) and its request
 * bytes (copied; digest computed). */
forge_launch_record_t *forge_launch_record_new(const char *launch_id,
                                               int attempt, const char *request,
                                               size_t request_len);

void forge_launch_record_free(forge_launch_record_t *r); /* NULL-safe */

/* A deep copy of r (new: forge_launch_record_free): every field, those
 * added later too, and each thing r owns copied, never shared. */
forge_launch_record_t *forge_launch_record_copy(const forge_launch_record_t *r);

/* Whether a request for (r's launch_id, attempt) was decided already, so
 * reading it again changes nothing: r's attempt or an earlier one, or one
 * refused while r's ran (refused_attempt). */
bool forge_launch_decided(const forge_launch_record_t *r, int attempt);

/* Whether attempt was decided REJECTED: r's own attempt, REJECTED, or the
 * later one refused while r's ran. An invalid request for it again is a
 * replay of that refusal; one for an attempt decided otherwise is not. */
bool forge_launch_refused(const forge_launch_record_t *r, int attempt);

/*
 * Moves the record to `to` if the contract allows it (seq + 1, updated_at
 * = now_ms). FORGE_EINVAL (and nothing changes) for an illegal move.
 */
forge_rc_t forge_launch_advance(forge_launch_record_t *r, forge_state_t to,
                                long long now_ms) FORGE_WARN_UNUSED;

/*
 * The next try (issue 26): the job of r's try ended with a cause its
 * policy retries (retry/retry.h: forge_retry_decide), and r becomes the
 * next try's intent: PENDING (seq + 1, updated_at = now_ms), try + 1, no
 * job (its ids, the Slurm states seen, missing_since, the requeue counts
 * and a sweep due are the ended job's: gone), cause as retry_cause, the
 * nodes that job ran on (Slurm's node list; NULL: none) added to
 * excluded_nodes when the policy excludes them and the cause is a node's
 * failure (retry/retry.h: FORGE_RETRY_NODE_CAUSES), not_before_ms as
 * retry_not_before_ms. FORGE_EINVAL (nothing changes) from a state a
 * retry may not leave (state.h: forge_state_retry_legal).
 */
forge_rc_t forge_launch_retry(forge_launch_record_t *r, const char *cause,
                              const char *failed_nodes, long long not_before_ms,
                              long long now_ms) FORGE_WARN_UNUSED;

/* r's excluded nodes as a JSON array of Slurm node list entries ("h200-1",
 * "gpu[1-4]"; [] for none): new reference. */
json_t *forge_launch_excluded_json(const forge_launch_record_t *r);

/* The usage object of a try's end (slurm/usage.h: forge_slurm_usage_json,
 * borrowed: a terminal event's, or a retried try's PENDING) added to r's:
 * its gpu_hours and elapsed_s, summed over the tries (elapsed unknown once
 * one try's is). Nothing changes when it is not an object with a
 * gpu_hours number. */
void forge_launch_add_usage(forge_launch_record_t *r, const json_t *usage);

/* What r's tries used together, for its terminal event's usage after
 * more than one try (new): {"tries", "gpu_hours", "elapsed_s"}, from what
 * forge_launch_add_usage summed (launch_retry.c). */
json_t *forge_launch_tries_usage_json(const forge_launch_record_t *r);

/* r's file cursors become cursors (taken: the caller's are freed), and
 * log_chunks n, log_final final: after a chunk is published. */
void forge_launch_set_logs(forge_launch_record_t *r, long n, bool final,
                           forge_live_cursor_t *cursors, size_t count);

/* r's GPU-hours (gpu_seconds / 3600), or -1 when r has no usage. */
double forge_launch_gpu_hours(const forge_launch_record_t *r);

/* r's try (1-based: a record from before tries is at its first). */
int forge_launch_try(const forge_launch_record_t *r);

/* Whether r's policy may still retry it (a try left, a cause named): its
 * whole request is then kept with its job id (forge_launch_compact leaves
 * it, and records carry it sealed). */
bool forge_launch_may_retry(const forge_launch_record_t *r);

/* Whether r is an intent: a live launch without a job, whose submit (or
 * next try's) is to be made: ACCEPTED, or PENDING after a retry. */
bool forge_launch_is_intent(const forge_launch_record_t *r);

/* Forgets the request (the logs are safe, or there are none): the next
 * record written carries none, sealed or not. */
void forge_launch_drop_request(forge_launch_record_t *r);

/* The job id is recorded: the request's bytes are no longer needed
 * (what is, the caller keeps: held.h), and are wiped and freed; unless a
 * retry may still need them (forge_launch_may_retry). */
void forge_launch_compact(forge_launch_record_t *r);

/* What a record's request is sealed for ("forge-state/v1/<id>/<attempt>"):
 * the additional data that binds it to this launch and attempt. New. */
char *forge_launch_seal_aad(const char *launch_id, int attempt);

/*
 * The record as the state topic's value (*out new), its request sealed by
 * s: the whole request while it has no job id; with one, only what is
 * kept of it (kept, or NULL: made from the request's bytes, if any).
 * Never in clear: FORGE_EINVAL when there is a request and no s, and
 * whatever forge_seal says when sealing fails (*out NULL then).
 */
forge_rc_t
forge_launch_record_encode_kept(const forge_launch_record_t *r,
                                const forge_held_t *kept,
                                const forge_sealer_t *s, json_t **out,
                                forge_error_t *err) FORGE_WARN_UNUSED;

/* The same with kept NULL. */
forge_rc_t forge_launch_record_encode(const forge_launch_record_t *r,
                                      const forge_sealer_t *s, json_t **out,
                                      forge_error_t *err) FORGE_WARN_UNUSED;

/*
 * A state topic value back into a record (*out new). A sealed request is
 * opened with s (which may be NULL: then it cannot be); one that does not
 * open is not an error of the record (see above).
 */
forge_rc_t forge_launch_record_decode(const char *buf, size_t len,
                                      const forge_sealer_t *s,
                                      forge_launch_record_t **out,
                                      forge_error_t *err) FORGE_WARN_UNUSED;

/* The same through a general JSON parse only (decode takes a fast path
 * for records shaped as this worker writes them: launch.c); for the tests
 * that hold the two paths to the same answers. */
forge_rc_t forge_launch_record_decode_general(
    const char *buf, size_t len, const forge_sealer_t *s,
    forge_launch_record_t **out, forge_error_t *err) FORGE_WARN_UNUSED;

#endif
