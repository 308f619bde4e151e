/* SPDX-License-Identifier: Apache-2.0 */
/*
 * requests.c - what one message of the requests topic does, on the loop's
 * thread (loop.c reads the batch and commits): prepared once (parse →
 * check → render, prepare.h), then a launch taken (its intent ACCEPTED,
 * its submit deferred until that commits), a cancel carried out, or the
 * message refused, leaving a trace whatever happens: REJECTED where it
 * names a launch and an attempt not decided yet, the DLQ otherwise, and a
 * log line either way (docs/CONTRACT.md §1).
 */
#include "loop/loop_int.h"
#include "kafka/dlq.h"
#include "hooks/hooks.h"
#include "clock/clock.h"
#include "log/log.h"
#include "record/owner.h"
#include "prepare/prepare.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A message no launch can be told from (why: what it lacks), or one for an
 * attempt decided otherwise: its bytes to the DLQ (its known secrets
 * replaced: kafka/dlq.h), and a line. */
static void to_dlq(forge_loop_t *w, const forge_kafka_message_t *m,
                   const forge_error_t *error, const char *why)
{
    forge_error_t err = {0};
    forge_dlq_record_t d;

    forge_dlq_record(&d, w->cfg->topic_dlq, w->cfg->topic_requests, m, error,
                     (size_t)w->cfg->dlq_max_bytes);
    if (w->kafka_ops->produce(w->kafka, &d.record, &err))
        forge_log_error("%s", err.message);
    forge_hooks()->dlq();
    forge_log_warn("message at %d/%lld %s: to the DLQ (%s)%s",
                   (int)m->partition, (long long)m->offset, why, error->message,
                   forge_dlq_record_cut(&d)
                       ? "; its value is cut to FORGE_DLQ_MAX_BYTES"
                       : "");
    forge_dlq_record_clear(&d);
}

/* A message that changes nothing (a replay, a resend, a cancel of nothing
 * live) still leaves its line: where it was and why nothing moved. */
static void unchanged(const forge_kafka_message_t *m, const char *launch_id,
                      int attempt, const char *why)
{
    char at[48];
    forge_log_field_t f[] = {{"launch_id", launch_id}, {"message", at}};

    snprintf(at, sizeof(at), "%d/%lld", (int)m->partition,
             (long long)m->offset);
    forge_log_fields(FORGE_LOG_INFO, f, 2, "attempt %d: %s; nothing changes",
                     attempt, why);
}

/* A later attempt arrived while e's runs: REJECTED, and remembered in e's
 * record (the same transaction), so reading it again once e's attempt has
 * ended decides nothing twice: no second seq 1 for (launch_id, attempt). */
static void refuse_while_live(forge_loop_t *w, forge_entry_t *e, int attempt,
                              const forge_error_t *error)
{
    forge_loop_publish_unstored(w, e->rec->launch_id, attempt, e->partition,
                                error);
    e->rec->refused_attempt = attempt;
    forge_loop_write_record(w, e);
}

static void on_invalid(forge_loop_t *w, const forge_kafka_message_t *m,
                       const forge_error_t *error)
{
    int attempt = 1;
    char *id = forge_request_salvage_id(m->value, m->value_len, &attempt);
    forge_entry_t *e;
    change_t c = {FORGE_STATE_REJECTED, forge_rc_name(error->code), NULL, error,
                  NULL};

    if (!id) {
        to_dlq(w, m, error,
               "names no launch_id and attempt the worker can use");
        return;
    }
    e = forge_owner_find(w->owner, id);
    if (e && forge_launch_refused(e->rec, attempt)) {
        unchanged(m, id, attempt, "refused already (a replay or a resend)");
    } else if (e && forge_launch_decided(e->rec, attempt)) {
        /* its (launch, attempt) was decided otherwise: a second decision
         * would be a second seq 1, so the message itself is kept */
        to_dlq(w, m, error, "is invalid for an attempt decided already");
    } else if (e && !forge_state_is_terminal(e->rec->state)) {
        refuse_while_live(w, e, attempt, error);
    } else {
        e = forge_owner_put(w->owner,
                            forge_launch_record_new(id, attempt, NULL, 0), NULL,
                            m->partition);
        forge_loop_publish_event(w, e, &c, true);
    }
    free(id);
}

static void on_launch(forge_loop_t *w, const forge_kafka_message_t *m,
                      forge_prepared_t *p, const forge_tenant_t *tenant)
{
    const forge_launch_t *l = &p->request->launch;
    forge_entry_t *e = forge_owner_find(w->owner, l->launch_id);
    change_t accepted = {FORGE_STATE_ACCEPTED, NULL, NULL, NULL, NULL};
    forge_launch_record_t *rec;

    if (e && forge_launch_decided(e->rec, l->attempt)) {
        unchanged(m, l->launch_id, l->attempt,
                  "decided already (a replay or a resend)");
        return;
    }
    if (e && !forge_state_is_terminal(e->rec->state)) {
        forge_error_t err = {0};
        forge_error_set(&err, FORGE_ESCHEMA, "$.attempt",
                        "attempt %d of %s is still live; this attempt is "
                        "refused for good: send a higher one once it has "
                        "ended",
                        e->rec->attempt, l->launch_id);
        refuse_while_live(w, e, l->attempt, &err);
        return;
    }
    rec = forge_launch_record_new(l->launch_id, l->attempt, m->value,
                                  m->value_len);
    /* the policy of every try of this attempt: the fleet's as the request
     * overrides it (retry/retry.h) */
    rec->retry = forge_retry_policy_merge(&w->cfg->retry, &l->retry);
    /* the entry keeps the request's labels and secrets (held.h); p keeps
     * the request, which l points into, until its caller frees it */
    e = forge_owner_put_held(w->owner, rec, forge_held_of_request(p->request),
                             m->partition);
    if (forge_loop_publish_event(w, e, &accepted, true) == 0) {
        forge_work_t *submit = forge_loop_new_work(FORGE_WORK_SUBMIT, e);
        /* prepared once, here: the Slurm thread takes it as it is */
        forge_work_take_prepared(submit, p, l, tenant);
        e->busy = true; /* the intent commits first, then the submit */
        forge_loop_defer(w, submit);
    }
}

/* Takes back a submit of e not yet posted (its intent is in the same
 * uncommitted batch). True when there was one. */
static bool withdraw_submit(forge_loop_t *w, forge_entry_t *e)
{
    for (forge_work_t **link = &w->deferred; *link; link = &(*link)->next) {
        forge_work_t *work = *link;
        if (work->kind == FORGE_WORK_CANCEL || work->kind == FORGE_WORK_SWEEP ||
            forge_loop_entry_of(w, work) != e)
            continue;
        *link = work->next;
        forge_work_free(work);
        e->busy = false;
        return true;
    }
    return false;
}

static void on_cancel(forge_loop_t *w, const forge_kafka_message_t *m,
                      const forge_cancel_t *c)
{
    forge_entry_t *e = forge_owner_find(w->owner, c->launch_id);
    change_t cancelled = {FORGE_STATE_CANCELLED, "requested", NULL, NULL, NULL};

    if (!e || (c->attempt && c->attempt != e->rec->attempt) ||
        forge_state_is_terminal(e->rec->state) || e->rec->cancel_requested) {
        unchanged(m, c->launch_id, c->attempt,
                  !e ? "a cancel of a launch this worker does not know"
                     : "a cancel of another attempt, an ended one, or one "
                       "asked already");
        return;
    }
    e->rec->cancel_requested = true;
    /* A submit not sent yet never will be; one posted already is withdrawn
     * on the Slurm thread: it submits nothing unless it is past its POST. */
    if (e->rec->job_id == 0 && e->busy && !withdraw_submit(w, e))
        w->pool_ops->withdraw(w->pools, e->rec->launch_id, e->rec->attempt);
    if (e->rec->job_id == 0 && !e->busy && !e->submit_unknown) {
        forge_loop_publish_event(w, e, &cancelled,
                                 true); /* never submitted: nothing to cancel */
    } else if (e->rec->job_id == 0 && !e->busy) {
        /* a submit may have reached Slurm: the jobs its tag finds are
         * cancelled first, then CANCELLED (on_withdrawn) */
        forge_loop_write_record(w, e);
        e->busy = true;
        forge_loop_defer(w, forge_loop_new_work(FORGE_WORK_CLEAN_CANCEL, e));
    } else {
        forge_loop_write_record(w, e);
        if (e->rec->job_id) { /* else: the submit result will cancel it */
            e->cancel_sent_ms = forge_clock_ms();
            forge_loop_defer(w, forge_loop_new_work(FORGE_WORK_CANCEL, e));
        }
    }
}

void forge_loop_on_request(forge_loop_t *w, const forge_kafka_message_t *m)
{
    const forge_tenant_t *tenant;
    forge_prepared_t *p = NULL;
    forge_error_t err = {0};

    if (forge_prepare(m->value, m->value_len, w->cfg, w->catalog, &p, &err) ||
        forge_tenant_of(w->tenants, p->request, &tenant, &err))
        on_invalid(w, m, &err);
    else if (p->request->kind == FORGE_REQUEST_LAUNCH)
        on_launch(w, m, p, tenant);
    else
        on_cancel(w, m, &p->request->cancel);
    forge_prepared_destroy(p);
    w->kafka_ops->mark_done(w->kafka, m->partition, m->offset);
    w->commit_now = true;
}
