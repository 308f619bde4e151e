/* SPDX-License-Identifier: Apache-2.0 */
/*
 * replay.c - the replay plan and its execution (replay.h): the group's
 * offsets against the requests topic's, the requests between counted
 * against the state table, the move committed. The caller's thread.
 */
#include "admin/replay.h"
#include "base/util.h"
#include "record/state.h"
#include "admin/topic_scan.h"
#include "request/request.h"

#include <stdlib.h>
#include <string.h>

/* ---- which requests change nothing when read ---------------------------- */

typedef struct counting {
    forge_replay_plan_t *plan;
    const forge_launch_table_t *table;
} counting_t;

/* A cancel changes nothing when its launch is unknown, of another attempt,
 * finished, or already being cancelled (loop/loop.c, on_cancel). */
static bool cancel_known(const forge_launch_table_t *t, const forge_cancel_t *c)
{
    const forge_launch_table_entry_t *e =
        forge_launch_table_find(t, c->launch_id);

    return !e || (c->attempt && c->attempt != e->rec->attempt) ||
           forge_state_is_terminal(e->rec->state) || e->rec->cancel_requested;
}

/* A launch changes nothing when its record decided that attempt already
 * (forge_launch_decided, as loop.c's on_launch); an invalid message naming
 * one, only when that attempt was refused (forge_launch_refused): for an
 * attempt decided otherwise the worker sends it to the DLQ again, as it
 * does a message naming no launch (loop.c on_invalid). */
static void count_request(void *ctx, const forge_scan_record_t *r)
{
    counting_t *c = ctx;
    forge_replay_part_t *part = &c->plan->parts[r->partition];
    forge_request_t *req = NULL;
    forge_error_t err = {0};
    const forge_launch_table_entry_t *e;
    char *id;
    int attempt = 1;
    bool valid;

    part->requests++;
    if (!r->value)
        return; /* a tombstone on the requests topic: the worker skips it */
    valid = !forge_request_parse(r->value, r->value_len, &req, &err);
    if (valid && req->kind == FORGE_REQUEST_CANCEL) {
        part->known += cancel_known(c->table, &req->cancel);
        forge_request_destroy(req);
        return;
    }
    forge_request_destroy(req);
    if (!(id = forge_request_salvage_id(r->value, r->value_len, &attempt))) {
        part->dlq++;
        return;
    }
    e = forge_launch_table_find(c->table, id);
    /* as the worker decides (loop.c on_invalid): a replayed refusal
     * changes nothing, one for an attempt decided otherwise goes to the
     * DLQ again */
    if (e && (valid || forge_launch_refused(e->rec, attempt)))
        part->known += forge_launch_decided(e->rec, attempt);
    else if (e && forge_launch_decided(e->rec, attempt))
        part->dlq++;
    free(id);
}

/* ---- the plan ----------------------------------------------------------- */

static int64_t clamp(int64_t v, const forge_scan_marks_t *m)
{
    return v < m->low ? m->low : v > m->high ? m->high : v;
}

/* The target offsets (targets[p], -1: unchanged). */
static forge_admin_code_t targets_of(const forge_config_t *cfg,
                                     const forge_replay_target_t *target,
                                     const forge_scan_marks_t *marks,
                                     int32_t count, int timeout_ms, int64_t *to,
                                     forge_admin_error_t *err)
{
    int64_t *at = NULL;
    int32_t n = 0;
    forge_admin_code_t rc;

    for (int32_t p = 0; p < count; p++)
        to[p] = target->kind == FORGE_REPLAY_OFFSETS ? -1 : marks[p].low;
    if (target->kind == FORGE_REPLAY_OFFSETS) {
        for (size_t i = 0; i < target->offset_count; i++) {
            const forge_replay_offset_t *o = &target->offsets[i];
            if (o->partition >= count)
                return forge_admin_fail(
                    err, FORGE_RECOVERY_OFFSETS_FILE,
                    "partition %d: topic %s has %d partition(s)",
                    (int)o->partition, cfg->topic_requests, (int)count);
            to[o->partition] = clamp(o->offset, &marks[o->partition]);
        }
    } else if (target->kind == FORGE_REPLAY_DATETIME) {
        if ((rc =
                 forge_topic_offsets_at(cfg, cfg->topic_requests, target->at_ms,
                                        timeout_ms, &at, &n, err)))
            return rc;
        for (int32_t p = 0; p < count && p < n; p++)
            to[p] = clamp(at[p], &marks[p]);
        free(at);
    }
    return FORGE_RECOVERY_OK;
}

static void fill_parts(forge_replay_plan_t *plan,
                       const forge_scan_marks_t *marks, const int64_t *to,
                       const int64_t *committed)
{
    for (size_t p = 0; p < plan->count; p++) {
        forge_replay_part_t *part = &plan->parts[p];
        part->partition = (int32_t)p;
        part->committed = committed[p];
        part->low = marks[p].low;
        part->high = marks[p].high;
        /* no offset: the workers start at the earliest (kafka.c) */
        part->from = committed[p] == FORGE_GROUP_NO_OFFSET
                         ? marks[p].low
                         : clamp(committed[p], &marks[p]);
        part->to = to[p] < 0 ? part->from : to[p];
        part->moves = to[p] >= 0 && to[p] != committed[p];
    }
}

/* The requests between from and to, counted against the state table. */
static forge_admin_code_t count_between(const forge_config_t *cfg,
                                        forge_replay_plan_t *plan,
                                        int timeout_ms,
                                        forge_admin_error_t *err)
{
    forge_scan_range_t *ranges = forge_xcalloc(plan->count, sizeof(*ranges));
    forge_launch_table_t table;
    forge_admin_code_t rc;
    size_t n = 0;

    for (size_t p = 0; p < plan->count; p++) {
        const forge_replay_part_t *part = &plan->parts[p];
        if (part->from != part->to)
            ranges[n++] = (forge_scan_range_t){
                part->partition, part->from < part->to ? part->from : part->to,
                part->from < part->to ? part->to : part->from};
    }
    if (n == 0) {
        free(ranges);
        return FORGE_RECOVERY_OK;
    }
    /* no key: whether a record's request opens does not matter here */
    if (!(rc = forge_launch_table_load(cfg, NULL, NULL, 0, timeout_ms, &table,
                                       err))) {
        counting_t c = {plan, &table};
        rc = forge_topic_scan(cfg, cfg->topic_requests, ranges, n, timeout_ms,
                              count_request, &c, err);
        forge_launch_table_clear(&table);
    }
    free(ranges);
    return rc;
}

forge_admin_code_t forge_replay_plan(const forge_config_t *cfg,
                                     const forge_replay_target_t *target,
                                     int timeout_ms, forge_replay_plan_t *plan,
                                     forge_admin_error_t *err)
{
    forge_scan_marks_t *marks = NULL;
    int64_t *to = NULL, *committed = NULL;
    forge_admin_code_t rc;
    int32_t count = 0;

    memset(plan, 0, sizeof(*plan));
    plan->group = forge_xstrdup(cfg->kafka_group_id);
    plan->topic = forge_xstrdup(cfg->topic_requests);
    if ((rc = forge_topic_marks(cfg, cfg->topic_requests, timeout_ms, &marks,
                                &count, err)))
        return rc;
    to = forge_xcalloc((size_t)count, sizeof(*to));
    committed = forge_xcalloc((size_t)count, sizeof(*committed));
    if (!(rc = targets_of(cfg, target, marks, count, timeout_ms, to, err)) &&
        !(rc = forge_group_describe(cfg, plan->group, timeout_ms, &plan->view,
                                    err)) &&
        !(rc = forge_topic_cleanup_policy(cfg, cfg->topic_state, timeout_ms,
                                          plan->state_policy,
                                          sizeof(plan->state_policy), err)) &&
        !(rc = forge_group_committed(cfg, plan->group, plan->topic, count,
                                     timeout_ms, committed, err))) {
        plan->count = (size_t)count;
        plan->parts = forge_xcalloc(plan->count, sizeof(*plan->parts));
        fill_parts(plan, marks, to, committed);
        rc = count_between(cfg, plan, timeout_ms, err);
    }
    free(marks);
    free(to);
    free(committed);
    return rc;
}

forge_admin_code_t forge_replay_execute(const forge_config_t *cfg,
                                        forge_replay_plan_t *plan,
                                        int timeout_ms,
                                        forge_admin_error_t *err)
{
    int32_t *parts = forge_xcalloc(plan->count + 1, sizeof(*parts));
    int64_t *offsets = forge_xcalloc(plan->count + 1, sizeof(*offsets));
    forge_admin_code_t rc;
    size_t n = 0;

    if (!(rc = forge_group_describe(cfg, plan->group, timeout_ms, &plan->view,
                                    err)) &&
        plan->view.members > 0)
        rc = forge_admin_fail(
            err, FORGE_RECOVERY_GROUP_ACTIVE,
            "group %s has %zu member(s) (%s): stop the workers, or wait for "
            "their sessions to expire, and run it again",
            plan->group, plan->view.members, plan->view.state);
    for (size_t p = 0; !rc && p < plan->count; p++)
        if (plan->parts[p].moves) {
            parts[n] = plan->parts[p].partition;
            offsets[n++] = plan->parts[p].to;
        }
    if (!rc && n > 0)
        rc = forge_group_alter(cfg, plan->group, plan->topic, parts, offsets, n,
                               timeout_ms, err);
    plan->executed = !rc;
    free(parts);
    free(offsets);
    return rc;
}

/* ---- shown -------------------------------------------------------------- */

static const char *direction(const forge_replay_part_t *p)
{
    if (p->to == p->from)
        return "none";
    return p->to < p->from ? "reread" : "skip";
}

json_t *forge_replay_plan_json(const forge_replay_plan_t *plan)
{
    json_t *parts = json_array();
    size_t requests = 0, known = 0, dlq = 0;

    for (size_t i = 0; i < plan->count; i++) {
        const forge_replay_part_t *p = &plan->parts[i];
        requests += p->requests;
        known += p->known;
        dlq += p->dlq;
        json_array_append_new(
            parts,
            json_pack("{s:i, s:o, s:I, s:I, s:I, s:I, s:b, s:s, s:I, s:I, "
                      "s:I, s:I}",
                      "partition", (int)p->partition, "committed",
                      p->committed == FORGE_GROUP_NO_OFFSET
                          ? json_null()
                          : json_integer(p->committed),
                      "from", (json_int_t)p->from, "to", (json_int_t)p->to,
                      "low", (json_int_t)p->low, "high", (json_int_t)p->high,
                      "moves", p->moves, "direction", direction(p), "requests",
                      (json_int_t)p->requests, "known", (json_int_t)p->known,
                      "unknown", (json_int_t)(p->requests - p->known - p->dlq),
                      "dlq", (json_int_t)p->dlq));
    }
    return json_pack(
        "{s:s, s:s, s:I, s:s, s:s, s:b, s:o, s:{s:I, s:I, s:I, s:I}}", "group",
        plan->group, "topic", plan->topic, "members",
        (json_int_t)plan->view.members, "group_state", plan->view.state,
        "state_cleanup_policy", plan->state_policy, "executed", plan->executed,
        "partitions", parts, "total", "requests", (json_int_t)requests, "known",
        (json_int_t)known, "unknown", (json_int_t)(requests - known - dlq),
        "dlq", (json_int_t)dlq);
}

/* What the operator must know before --execute. */
static void print_warnings(FILE *out, const forge_replay_plan_t *plan)
{
    size_t skipped = 0, reread = 0;

    for (size_t i = 0; i < plan->count; i++) {
        const forge_replay_part_t *p = &plan->parts[i];
        size_t unknown = p->requests - p->known - p->dlq;
        if (p->to > p->from)
            skipped += unknown;
        else
            reread += unknown;
    }
    if (reread)
        fprintf(out,
                "note: %zu unknown request(s) will be acted on when read "
                "(launched, refused or cancelled now)\n",
                reread);
    if (skipped)
        fprintf(out,
                "warning: %zu unknown request(s) are skipped: no worker will "
                "ever handle them\n",
                skipped);
    if (plan->state_policy[0] && strcmp(plan->state_policy, "compact"))
        fprintf(out,
                "warning: the state topic's cleanup.policy is \"%s\", not "
                "\"compact\": finished launches whose records were deleted "
                "run again when their requests are read\n",
                plan->state_policy);
    if (!plan->executed && plan->view.members)
        fprintf(out,
                "note: the group has %zu member(s): --execute is refused "
                "until the workers are stopped\n",
                plan->view.members);
}

void forge_replay_plan_print(FILE *out, const forge_replay_plan_t *plan)
{
    size_t requests = 0, known = 0, dlq = 0;

    fprintf(out, "group %s on %s: %zu member(s), %s\n", plan->group,
            plan->topic, plan->view.members, plan->view.state);
    fprintf(out, "%9s %10s %10s %-7s %9s %9s %9s %5s\n", "PARTITION", "FROM",
            "TO", "MOVE", "REQUESTS", "KNOWN", "UNKNOWN", "DLQ");
    for (size_t i = 0; i < plan->count; i++) {
        const forge_replay_part_t *p = &plan->parts[i];
        requests += p->requests;
        known += p->known;
        dlq += p->dlq;
        fprintf(out, "%9d %10lld %10lld %-7s %9zu %9zu %9zu %5zu\n",
                (int)p->partition, (long long)p->from, (long long)p->to,
                direction(p), p->requests, p->known,
                p->requests - p->known - p->dlq, p->dlq);
    }
    fprintf(out,
            "%zu request(s) in range: %zu known (change nothing when read), "
            "%zu unknown, %zu to the DLQ\n",
            requests, known, requests - known - dlq, dlq);
    print_warnings(out, plan);
    fprintf(out, "%s\n",
            plan->executed ? "committed: the group's offsets were moved"
                           : "dry run: nothing changed (--execute commits)");
}

void forge_replay_plan_clear(forge_replay_plan_t *plan)
{
    free(plan->group);
    free(plan->topic);
    free(plan->parts);
    memset(plan, 0, sizeof(*plan));
}
