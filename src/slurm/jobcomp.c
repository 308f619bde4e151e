/* SPDX-License-Identifier: Apache-2.0 */
/*
 * slurm/jobcomp.c - jobcomp/kafka records read, and the decision one makes
 * for a launch (slurm/jobcomp.h). The record's fields are a table (name,
 * kind, where it lands); the decision is a sequence of rules, each with
 * its name, and a table of Slurm's end states that a requeue may follow.
 * The state mapping itself is job_state.h's, the poll's.
 */
#include "slurm/jobcomp.h"
#include "base/util.h"
#include "render/try.h"

#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* ---- reading ------------------------------------------------------------ */

typedef enum field_kind {
    F_STRING, /* a string (null: absent) */
    F_INT,    /* an integer */
    F_TIME,   /* "%FT%T", UTC */
    F_EXIT,   /* "code:signal" */
    F_STATE,  /* a string, or null on a start record */
} field_kind_t;

/* Where each field lands: offsets into the record (for an exit code, the
 * code's; the signal's is `extra`). */
static const struct field {
    const char *name;
    field_kind_t kind;
    size_t offset;
    size_t extra;
} fields[] = {
#define AT(m) offsetof(forge_jobcomp_record_t, m)
    {"state", F_STATE, AT(state), 0},
    {"job_name", F_STRING, AT(job_name), 0},
    {"wc_key", F_STRING, AT(wc_key), 0},
    {"nodes", F_STRING, AT(nodes), 0},
    {"partition", F_STRING, AT(partition), 0},
    {"cluster", F_STRING, AT(cluster), 0},
    {"work_dir", F_STRING, AT(work_dir), 0},
    {"tres_alloc", F_STRING, AT(tres_alloc), 0},
    {"comment", F_STRING, AT(comment), 0},
    {"@start", F_TIME, AT(start_s), 0},
    {"@end", F_TIME, AT(end_s), 0},
    {"elapsed", F_INT, AT(elapsed_s), 0},
    {"total_cpus", F_INT, AT(total_cpus), 0},
    {"total_nodes", F_INT, AT(total_nodes), 0},
    {"exit_code", F_EXIT, AT(exit_code), AT(signal)},
    {"derived_ec", F_EXIT, AT(derived_exit_code), AT(derived_signal)},
#undef AT
};

/* "2026-12-06T11:00:05" (UTC) → UNIX seconds. */
static bool read_time(const char *s, long long *out)
{
    struct tm tm;
    int n = 0;

    memset(&tm, 0, sizeof(tm));
    if (sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d%n", &tm.tm_year, &tm.tm_mon,
               &tm.tm_mday, &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &n) != 6 ||
        s[n] != '\0' || n != 19)
        return false;
    if (tm.tm_mon < 1 || tm.tm_mon > 12 || tm.tm_mday < 1 || tm.tm_mday > 31 ||
        tm.tm_hour > 23 || tm.tm_min > 59 || tm.tm_sec > 60)
        return false;
    tm.tm_year -= 1900;
    tm.tm_mon -= 1;
    *out = (long long)timegm(&tm);
    return true;
}

/* "0:15" → 0 and 15. */
static bool read_exit(const char *s, int *code, int *sig)
{
    int n = 0;

    return sscanf(s, "%d:%d%n", code, sig, &n) == 2 && s[n] == '\0' &&
           *code >= 0 && *sig >= 0;
}

static forge_rc_t read_field(const struct field *f, const json_t *v,
                             forge_jobcomp_record_t *r, forge_error_t *err)
{
    char *base = (char *)r;
    const char *s = json_string_value(v);

    if (!v || json_is_null(v))
        return FORGE_OK;
    switch (f->kind) {
    case F_STRING:
    case F_STATE:
        if (!s)
            break;
        *(char **)(base + f->offset) = forge_xstrdup(s);
        return FORGE_OK;
    case F_INT:
        if (!json_is_integer(v) || json_integer_value(v) < 0)
            break;
        *(long long *)(base + f->offset) = json_integer_value(v);
        return FORGE_OK;
    case F_TIME:
        if (s && read_time(s, (long long *)(base + f->offset)))
            return FORGE_OK;
        break;
    case F_EXIT:
        if (s &&
            read_exit(s, (int *)(base + f->offset), (int *)(base + f->extra)))
            return FORGE_OK;
        break;
    }
    return forge_error_set(err, FORGE_EINVALID_JSON, f->name,
                           "the jobcomp record's %s is not of its shape",
                           f->name);
}

/* jobid, het_job_id, het_job_offset: non-negative integers. */
static bool read_id(const json_t *o, const char *key, long long *out)
{
    const json_t *v = json_object_get(o, key);

    if (!json_is_integer(v) || json_integer_value(v) < 0 ||
        json_integer_value(v) > UINT32_MAX)
        return false;
    *out = json_integer_value(v);
    return true;
}

static void take_tag(forge_jobcomp_record_t *r)
{
    forge_try_tag_parts_t t;

    if (!forge_try_tag_parse(r->comment, &t))
        return;
    r->tagged = true;
    r->launch_id = forge_xstrndup(t.id, t.id_len);
    r->attempt = t.attempt;
    r->try_num = t.try_num;
}

forge_rc_t forge_jobcomp_parse(const char *bytes, size_t len,
                               forge_jobcomp_record_t *out, forge_error_t *err)
{
    json_error_t je;
    json_t *o = json_loadb(bytes, len, JSON_REJECT_DUPLICATES, &je);
    long long id = 0, het = 0, off = 0;
    forge_rc_t rc = FORGE_OK;

    memset(out, 0, sizeof(*out));
    out->exit_code = out->derived_exit_code = -1;
    out->start_s = out->end_s = out->elapsed_s = -1;
    out->total_cpus = out->total_nodes = -1;
    if (!json_is_object(o)) {
        rc = forge_error_set(err, FORGE_EINVALID_JSON, NULL,
                             "a jobcomp record is a JSON object: %s",
                             o ? "not an object" : je.text);
        goto done;
    }
    if (!read_id(o, "jobid", &id) || id == 0) {
        rc = forge_error_set(err, FORGE_EINVALID_JSON, "jobid",
                             "a jobcomp record names its job (jobid)");
        goto done;
    }
    out->job_id = (uint32_t)id;
    if (json_object_get(o, "het_job_id")) {
        if (!read_id(o, "het_job_id", &het) ||
            !read_id(o, "het_job_offset", &off) ||
            off >= FORGE_JOBCOMP_MAX_COMPONENTS) {
            rc = forge_error_set(err, FORGE_EINVALID_JSON, "het_job_id",
                                 "het_job_id and het_job_offset are the "
                                 "het job's id and the component's offset");
            goto done;
        }
        out->het_job_id = (uint32_t)het;
        out->het_offset = (int)off;
    }
    for (size_t i = 0; rc == FORGE_OK && i < COUNT(fields); i++)
        rc = read_field(&fields[i], json_object_get(o, fields[i].name), out,
                        err);
    if (rc)
        goto done;
    /* an end record has @end or a state; a start record neither */
    out->kind =
        out->state || out->end_s >= 0 ? FORGE_JOBCOMP_END : FORGE_JOBCOMP_START;
    if (out->state) {
        const char *names[1] = {out->state};
        out->set = forge_slurm_state_parse(names, 1);
    }
    take_tag(out);
done:
    json_decref(o);
    if (rc)
        forge_jobcomp_record_clear(out);
    return rc;
}

void forge_jobcomp_record_clear(forge_jobcomp_record_t *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < COUNT(fields); i++)
        if (fields[i].kind == F_STRING || fields[i].kind == F_STATE)
            free(*(char **)((char *)r + fields[i].offset));
    free(r->launch_id);
    memset(r, 0, sizeof(*r));
}

forge_rc_t forge_jobcomp_usage_part(const forge_jobcomp_record_t *r,
                                    forge_slurm_usage_part_t *out,
                                    forge_error_t *err)
{
    forge_slurm_tres_list_t t = {NULL, 0};
    forge_rc_t rc = forge_slurm_tres_parse_text(r->tres_alloc, &t, err);

    if (rc == FORGE_OK)
        *out = forge_slurm_usage_part(r->job_id, r->het_offset, &t,
                                      r->elapsed_s, -1);
    forge_slurm_tres_list_clear(&t);
    return rc;
}

/* ---- deciding ----------------------------------------------------------- */

bool forge_jobcomp_below(const char *work_dir, const char *staging)
{
    size_t n;

    if (!work_dir || !staging)
        return false;
    n = strlen(staging);
    while (n > 1 && staging[n - 1] == '/')
        n--;
    return strncmp(work_dir, staging, n) == 0 &&
           (work_dir[n] == '\0' || work_dir[n] == '/');
}

/* Slurm's base states on an end record: whether a requeue may follow
 * (jobcomp.h: job_mgr.c writes an end for each requeued run). The live
 * states are there for `scontrol requeue` (PENDING) and for what a record
 * should never say but might (a resize's RUNNING): neither ends a job. */
static const struct end_rule {
    uint32_t base;
    bool may_continue;
} end_rules[] = {
    {FORGE_SLURM_NODE_FAIL, true}, /* node failure, failed launch */
    {FORGE_SLURM_PREEMPTED, true}, /* PreemptMode=REQUEUE */
    {FORGE_SLURM_BOOT_FAIL, true}, /* nodes that failed to boot */
    {FORGE_SLURM_PENDING, true},   /* scontrol requeue */
    {FORGE_SLURM_RUNNING, true},   /* not an end */
    {FORGE_SLURM_SUSPENDED, true}, /* not an end */
    {FORGE_SLURM_COMPLETED, false}, {FORGE_SLURM_CANCELLED, false},
    {FORGE_SLURM_FAILED, false},    {FORGE_SLURM_TIMEOUT, false},
    {FORGE_SLURM_DEADLINE, false},  {FORGE_SLURM_OUT_OF_MEMORY, false},
};

/* Whether an end with this state and exit code may be followed by another
 * run of the same job. No base, several, or a name job_state.c does not
 * know: yes (it does not decide). */
static bool may_continue(const forge_slurm_component_state_t *c,
                         bool exit_may_requeue)
{
    if (c->set.flags &
        (FORGE_SLURM_FLAG_REQUEUED | FORGE_SLURM_FLAG_REQUEUE_HOLD |
         FORGE_SLURM_FLAG_REQUEUE_FED | FORGE_SLURM_FLAG_OTHER))
        return true;
    if (exit_may_requeue && c->exit_code > 0)
        return true; /* RequeueExit=<code> */
    for (size_t i = 0; i < COUNT(end_rules); i++)
        if (c->set.base == end_rules[i].base)
            return end_rules[i].may_continue;
    return true;
}

static forge_jobcomp_decision_t decision(forge_jobcomp_action_t a,
                                         const char *why)
{
    forge_jobcomp_decision_t d = {a, FORGE_STATE_NONE, NULL, -1, 0, why};

    return d;
}

static uint32_t leader_of(const forge_jobcomp_record_t *r)
{
    return r->het_job_id ? r->het_job_id : r->job_id;
}

/* The rules before the record's kind matters: whose record it is. NULL:
 * the launch's. */
static const char *not_ours(const forge_jobcomp_launch_t *l,
                            const forge_jobcomp_record_t *r)
{
    size_t n;

    if (!r->tagged)
        return "untagged";
    if (l && l->staging && !forge_jobcomp_below(r->work_dir, l->staging))
        return "other_deployment";
    if (!l)
        return "not_owned";
    n = strlen(l->launch_id);
    if (strlen(r->launch_id) != n || memcmp(r->launch_id, l->launch_id, n))
        return "other_launch";
    if (r->attempt != l->attempt)
        return "other_attempt";
    if (r->try_num != (l->try_num > 1 ? l->try_num : 1))
        return "other_try";
    if (!l->job_id)
        return "no_job";
    if (leader_of(r) != l->job_id)
        return "other_job";
    if ((size_t)r->het_offset >= (l->components ? l->components : 1))
        return "unknown_component";
    if (l->components > FORGE_JOBCOMP_MAX_COMPONENTS)
        return "too_many_components"; /* the poll follows it */
    if (forge_state_is_terminal(l->state))
        return "settled";
    return NULL;
}

/* Whether r belongs to a run before the newest one seen, or before the
 * launch's requeue; a newer run resets what was seen. */
static const char *older(const forge_jobcomp_launch_t *l,
                         forge_jobcomp_seen_t *seen,
                         const forge_jobcomp_record_t *r)
{
    if (r->start_s > 0 && seen->run_start_s > 0 &&
        r->start_s < seen->run_start_s)
        return "older_run";
    if (l->state == FORGE_STATE_PENDING && l->requeued_at_ms > 0) {
        if (r->kind == FORGE_JOBCOMP_START &&
            r->start_s * 1000 <= l->requeued_at_ms)
            return "before_requeue";
        if (r->kind == FORGE_JOBCOMP_END && r->end_s >= 0 &&
            r->end_s * 1000 < l->requeued_at_ms)
            return "before_requeue";
    }
    if (r->start_s > seen->run_start_s) {
        seen->run_start_s = r->start_s;
        seen->ended = 0;
    }
    return NULL;
}

static forge_jobcomp_decision_t on_start(const forge_jobcomp_launch_t *l,
                                         const forge_jobcomp_seen_t *seen,
                                         const forge_jobcomp_record_t *r)
{
    forge_jobcomp_decision_t d;

    if (seen->ended & (1u << r->het_offset))
        return decision(FORGE_JOBCOMP_IGNORE, "start_after_end");
    if (l->state == FORGE_STATE_RUNNING)
        return decision(FORGE_JOBCOMP_IGNORE, "running_already");
    if (!forge_state_transition_legal(l->state, FORGE_STATE_RUNNING))
        return decision(FORGE_JOBCOMP_IGNORE, "illegal_move");
    d = decision(FORGE_JOBCOMP_RUNNING, "start");
    d.state = FORGE_STATE_RUNNING;
    return d;
}

static forge_jobcomp_decision_t on_end(const forge_jobcomp_launch_t *l,
                                       forge_jobcomp_seen_t *seen,
                                       const forge_jobcomp_record_t *r)
{
    size_t n = l->components ? l->components : 1;
    uint32_t bit = 1u << r->het_offset, all = (uint32_t)((1ull << n) - 1);
    forge_slurm_component_state_t *c = &seen->ends[r->het_offset];
    forge_slurm_verdict_t v;
    forge_jobcomp_decision_t d;

    if (seen->ended & bit)
        return decision(FORGE_JOBCOMP_IGNORE, "duplicate");
    seen->ended |= bit;
    c->set = r->set;
    c->exit_code = r->exit_code;
    c->signal = r->signal;
    if ((seen->ended & all) != all)
        return decision(FORGE_JOBCOMP_IGNORE, "components_left");
    for (size_t i = 0; i < n; i++)
        if (may_continue(&seen->ends[i], l->exit_may_requeue))
            return decision(FORGE_JOBCOMP_CONFIRM, "may_requeue");
    for (size_t i = 0; i < n && l->restarts > 0; i++)
        if (seen->ends[i].signal == SIGKILL) /* the orphan race's? */
            return decision(FORGE_JOBCOMP_CONFIRM, "killed_after_requeue");
    v = forge_slurm_state_aggregate(seen->ends, n, l->cancel_requested);
    if (!forge_state_is_terminal(v.state))
        return decision(FORGE_JOBCOMP_CONFIRM, "not_final");
    if (!forge_state_transition_legal(l->state, v.state))
        return decision(FORGE_JOBCOMP_IGNORE, "illegal_move");
    d = decision(FORGE_JOBCOMP_TERMINAL, "end");
    d.state = v.state;
    d.reason = v.reason;
    d.exit_code = seen->ends[0].exit_code;
    d.signal = seen->ends[0].signal;
    return d;
}

forge_jobcomp_decision_t forge_jobcomp_decide(const forge_jobcomp_launch_t *l,
                                              forge_jobcomp_seen_t *seen,
                                              const forge_jobcomp_record_t *r)
{
    const char *why = not_ours(l, r);

    if (why)
        return decision(FORGE_JOBCOMP_IGNORE, why);
    if ((why = older(l, seen, r)))
        return decision(FORGE_JOBCOMP_IGNORE, why);
    return r->kind == FORGE_JOBCOMP_START ? on_start(l, seen, r)
                                          : on_end(l, seen, r);
}
