/* SPDX-License-Identifier: Apache-2.0 */
/*
 * reconcile_report.c - what `forge-worker reconcile` prints (reconcile.h):
 * the plan as one JSON object (--json), or one line per launch that is
 * not consistent and a summary. Every launch is counted; consistent ones
 * are listed in the JSON only.
 */
#include "admin/reconcile.h"

#include <stdio.h>

static json_t *event_json(const forge_recon_event_t *e)
{
    return json_pack("{s:I, s:s, s:s?, s:s?, s:O?}", "seq", (json_int_t)e->seq,
                     "state", forge_state_name(e->state), "previous",
                     forge_state_name(e->previous), "reason", e->reason,
                     "slurm", e->slurm);
}

static json_t *item_json(const forge_recon_item_t *it, bool execute)
{
    json_t *events = json_array(), *cancel = json_array();
    json_t *o;

    for (size_t e = 0; e < it->event_count; e++)
        json_array_append_new(events, event_json(&it->events[e]));
    for (size_t c = 0; c < it->cancel_count; c++)
        json_array_append_new(cancel, json_integer(it->cancel_jobs[c]));
    o = json_pack("{s:s, s:i, s:s, s:i, s:s?, s:b, s:o, s:o, s:s?}",
                  "launch_id", it->launch_id, "attempt", it->attempt, "kind",
                  forge_recon_kind_name(it->kind), "partition",
                  (int)it->partition, "state", forge_state_name(it->state),
                  "writes_record", it->rec != NULL, "events", events,
                  "cancel_jobs", cancel, "note", it->note);
    if (it->rec)
        json_object_set_new(o, "job_id", json_integer(it->rec->job_id));
    if (execute) {
        json_object_set_new(o, "done", json_boolean(it->done));
        if (it->error)
            json_object_set_new(o, "error", json_string(it->error));
    }
    return o;
}

static void count(const forge_recon_plan_t *p, size_t *inconsistent,
                  size_t *undone)
{
    *inconsistent = *undone = 0;
    for (size_t i = 0; i < p->count; i++) {
        *inconsistent += !forge_recon_item_consistent(&p->items[i]);
        *undone += !forge_recon_item_settled(&p->items[i]);
    }
}

json_t *forge_recon_report_json(const forge_recon_plan_t *p, bool execute)
{
    json_t *items = json_array();
    size_t inconsistent, undone;

    count(p, &inconsistent, &undone);
    for (size_t i = 0; i < p->count; i++)
        json_array_append_new(items, item_json(&p->items[i], execute));
    return json_pack(
        "{s:b, s:b, s:I, s:I, s:I, s:I, s:o}", "execute", execute,
        "state_topic_empty", p->state_topic_empty, "foreign_jobs",
        (json_int_t)p->foreign_jobs, "launches", (json_int_t)p->count,
        "inconsistent", (json_int_t)inconsistent, "undone",
        (json_int_t)(execute ? undone : inconsistent), "items", items);
}

void forge_recon_report_text(const forge_recon_plan_t *p, bool execute,
                             FILE *out)
{
    size_t inconsistent, undone;

    count(p, &inconsistent, &undone);
    for (size_t i = 0; i < p->count; i++) {
        const forge_recon_item_t *it = &p->items[i];
        if (forge_recon_item_consistent(it))
            continue;
        fprintf(out, "%s/%d  %-15s %-10s events %zu, cancel %zu%s%s%s%s\n",
                it->launch_id, it->attempt, forge_recon_kind_name(it->kind),
                forge_state_name(it->state) ? forge_state_name(it->state) : "-",
                it->event_count, it->cancel_count,
                it->rec ? ", record written" : "",
                execute ? (it->done ? "  [done]" : "  [not done]") : "",
                it->note ? "  " : "", it->note ? it->note : "");
        if (it->error)
            fprintf(out, "    error: %s\n", it->error);
    }
    fprintf(out, "%zu launch(es), %zu inconsistent%s%s; %s\n", p->count,
            inconsistent,
            p->state_topic_empty ? " (the state topic holds no record)" : "",
            "",
            execute ? (undone ? "some repairs left undone" : "all repaired")
                    : (inconsistent ? "dry run: run again with --execute"
                                    : "nothing to do"));
}
