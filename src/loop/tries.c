/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tries.c - a launch's tries (issue 26): the end of a try that its retry
 * policy names (retry/retry.h: a node failure, a boot or launch failure,
 * a preemption; the job's own ends only where the policy names them),
 * with a try left, is not the launch's end. In the transaction that would
 * have carried the terminal event go instead:
 *
 *   1. the event PENDING, reason `retrying`, with `try` (the next) and
 *      `retry` (max_tries, the cause, when the next try is submitted at
 *      the earliest, the nodes it may not use), the failed job's `slurm`;
 *   2. the record made the next try's intent (launch.h:
 *      forge_launch_retry): no job, try + 1, retry_not_before.
 *
 * The intent machinery does the rest, as for an interrupted submit
 * (loop.c's tick, submit.c): once the backoff has passed, the clean of the
 * next try's tag (`forge:<id>:<attempt>:<try>`, render/try.h) adopts a job
 * an interrupted submit of that try left, or submits it afresh into the
 * same staging folder (logs appended after `== forge: try N ==`). So a
 * kill -9 anywhere leaves either the try that ended (whose end the next
 * owner's poll sees again, and decides the same) or the next try's intent
 * (submitted once, by its tag): one live job, one terminal event.
 * Every seen move (a poll's, a push's, accounting's) asks here first
 * (tick.c: forge_loop_job_moved; an image check's end reads its note
 * first: image_note.c). Loop thread only.
 */
#include "base/buf.h"
#include "clock/clock.h"
#include "log/log.h"
#include "clock/timestamp.h"
#include "base/util.h"
#include "loop/loop_int.h"

#include <stdlib.h>
#include <string.h>

/* The nodes the ended job ran on, from its event's `slurm` object (every
 * component's node list, comma-separated; new), or NULL: none known. */
static char *failed_nodes(const json_t *slurm)
{
    json_t *components = json_object_get(slurm, "components"), *c;
    forge_buf_t b = FORGE_BUF_INIT;
    size_t i;

    json_array_foreach(components, i, c)
    {
        const char *nodes = json_string_value(json_object_get(c, "nodes"));
        if (!nodes || !*nodes)
            continue;
        if (b.len)
            forge_buf_putc(&b, ',');
        forge_buf_puts(&b, nodes);
    }
    if (!b.len)
        return NULL;
    return forge_buf_take(&b);
}

/* The event's `retry` object for r, just made the next try's intent. */
static json_t *retry_object(const forge_launch_record_t *r)
{
    char at[FORGE_TIMESTAMP_MAX];

    forge_timestamp_format(r->retry_not_before_ms, at, sizeof(at));
    return json_pack("{s:i, s:i, s:s, s:s, s:o}", "try", forge_launch_try(r),
                     "max_tries", r->retry.max_tries, "cause", r->retry_cause,
                     "not_before", at, "excluded_nodes",
                     forge_launch_excluded_json(r));
}

/* Why a try that ended with a cause of its policy is not retried: said
 * once, with the launch's end. */
static void say_not_retried(const forge_entry_t *e, const change_t *c,
                            const char *why)
{
    forge_log_field_t f[] = {{"launch_id", e->rec->launch_id},
                             {"reason", c->reason}};

    forge_log_fields(FORGE_LOG_INFO, f, 2, "try %d of %d ended (%s): %s",
                     forge_launch_try(e->rec), e->rec->retry.max_tries,
                     c->reason, why);
}

/* e's record, whose try ended as c says, made the next try's intent after
 * d's backoff and published as such. */
static bool retry(forge_loop_t *w, forge_entry_t *e, const change_t *c,
                  const forge_retry_decision_t *d)
{
    forge_launch_record_t *r = e->rec;
    forge_state_t from = r->state;
    long long now = forge_timestamp_now_ms();
    /* the ended try's usage goes with its PENDING (retrying), and into the
     * record's sum of the tries (launch.h: forge_launch_add_usage) */
    change_t pending = {FORGE_STATE_PENDING, "retrying", c->slurm, NULL,
                        c->usage};
    char *nodes = failed_nodes(c->slurm);
    uint32_t job = r->job_id;
    json_t *object;
    forge_log_field_t f[] = {{"launch_id", r->launch_id},
                             {"reason", c->reason}};

    if (forge_launch_retry(r, c->reason, nodes, now + d->delay_ms, now)) {
        free(nodes);
        return false;
    }
    e->next_try_ms = forge_clock_ms() + d->delay_ms;
    e->submit_failures = 0;
    e->submit_unknown = false; /* nothing of the next try is submitted */
    e->sweep_at_ms = 0;
    e->cancel_sent_ms = 0;
    if (c->usage)
        forge_launch_add_usage(r, c->usage);
    object = retry_object(r);
    forge_loop_publish_retry(w, e, from, &pending, object);
    forge_log_fields(FORGE_LOG_INFO, f, 2,
                     "job %u of try %d ended (%s) on %s: try %d of %d in "
                     "%lld s%s%s",
                     (unsigned)job, d->next_try - 1, c->reason,
                     nodes ? nodes : "no node", d->next_try, r->retry.max_tries,
                     d->delay_ms / 1000,
                     r->excluded_nodes ? ", excluding " : "",
                     r->excluded_nodes ? r->excluded_nodes : "");
    json_decref(object);
    free(nodes);
    return true;
}

bool forge_loop_retry_instead(forge_loop_t *w, forge_entry_t *e,
                              const change_t *c)
{
    const forge_launch_record_t *r = e->rec;
    forge_retry_decision_t d;

    if (!forge_state_is_terminal(c->to) || r->cancel_requested)
        return false;
    d = forge_retry_decide(&r->retry, c->reason, forge_launch_try(r));
    if (d.exhausted && r->retry.max_tries > 1)
        say_not_retried(e, c, "no try left");
    if (d.retry && !r->request) /* its sealed request did not open */
        say_not_retried(e, c,
                        "its request cannot be read back to submit "
                        "the next try");
    return d.retry && r->request && retry(w, e, c, &d);
}
