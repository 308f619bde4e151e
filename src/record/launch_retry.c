/* SPDX-License-Identifier: Apache-2.0 */
/*
 * launch_retry.c - a launch record's tries (issue 26, launch.h): the next
 * try's intent made of a record whose try ended with a cause its policy
 * retries (forge_launch_retry), the nodes its failed tries ran on gathered
 * for the next to exclude, whether its request must still be kept, and its
 * retry fields in the record's JSON both ways (launch_int.h: launch.c's
 * two decoders share them). No I/O.
 */
#include "base/buf.h"
#include "base/util.h"
#include "record/launch.h"
#include "record/launch_int.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* A count read from a record: absent, negative or too large is 0. */
static int count_of(long long v)
{
    return v > 0 && v <= INT_MAX ? (int)v : 0;
}

int forge_launch_try(const forge_launch_record_t *r)
{
    return r->try_num > 1 ? r->try_num : 1;
}

bool forge_launch_may_retry(const forge_launch_record_t *r)
{
    return forge_retry_may_retry(&r->retry, forge_launch_try(r));
}

bool forge_launch_is_intent(const forge_launch_record_t *r)
{
    return !r->job_id &&
           (r->state == FORGE_STATE_ACCEPTED ||
            (r->state == FORGE_STATE_PENDING && forge_launch_try(r) > 1));
}

/* Node lists a job may not use stay this short at most: ten tries of a
 * job on many nodes say enough; more would only grow the record. */
#define EXCLUDED_MAX 4096

/* The next node list entry of list from *at (a name or a bracketed
 * range, "gpu[1-4]": commas inside brackets are the entry's): its length,
 * *at moved past it and its comma. */
static size_t node_entry(const char *list, size_t *at)
{
    size_t start = *at, depth = 0, i = start;

    for (; list[i] && (list[i] != ',' || depth); i++) {
        if (list[i] == '[')
            depth++;
        else if (list[i] == ']' && depth)
            depth--;
    }
    *at = list[i] ? i + 1 : i;
    return i - start;
}

static bool node_listed(const char *list, const char *entry, size_t len)
{
    size_t at = 0;

    while (list && list[at]) {
        const char *e = list + at;
        size_t n = node_entry(list, &at);
        if (n == len && !memcmp(e, entry, len))
            return true;
    }
    return false;
}

/* Each entry of nodes not in *list yet added to it (up to EXCLUDED_MAX). */
static void exclude_nodes(char **list, const char *nodes)
{
    forge_buf_t b = FORGE_BUF_INIT;
    size_t at = 0;

    forge_buf_puts(&b, *list ? *list : "");
    while (nodes && nodes[at]) {
        const char *e = nodes + at;
        size_t n = node_entry(nodes, &at);
        if (!n || node_listed(forge_buf_str(&b), e, n) ||
            b.len + n + 1 > EXCLUDED_MAX)
            continue;
        if (b.len)
            forge_buf_putc(&b, ',');
        forge_buf_append(&b, e, n);
    }
    free(*list);
    *list = b.len ? forge_buf_take(&b) : NULL;
    forge_buf_clear(&b);
}

json_t *forge_launch_excluded_json(const forge_launch_record_t *r)
{
    json_t *list = json_array();
    const char *nodes = r->excluded_nodes;
    size_t at = 0;

    while (nodes && nodes[at]) {
        const char *e = nodes + at;
        size_t n = node_entry(nodes, &at);
        if (n)
            json_array_append_new(list, json_stringn(e, n));
    }
    return list;
}

json_t *forge_launch_tries_usage_json(const forge_launch_record_t *r)
{
    double hours = r->has_usage ? (double)r->gpu_seconds / 3600.0 : 0.0;

    return json_pack("{s:i, s:f, s:o}", "tries", forge_launch_try(r),
                     "gpu_hours", round(hours * 1e6) / 1e6, "elapsed_s",
                     r->has_usage && r->elapsed_s >= 0
                         ? json_integer(r->elapsed_s)
                         : json_null());
}

forge_rc_t forge_launch_retry(forge_launch_record_t *r, const char *cause,
                              const char *failed_nodes, long long not_before_ms,
                              long long now_ms)
{
    if (!forge_state_retry_legal(r->state))
        return FORGE_EINVAL;
    r->state = FORGE_STATE_PENDING;
    r->seq++;
    r->updated_at_ms = now_ms;
    r->try_num = forge_launch_try(r) + 1;
    r->job_id = 0;
    free(r->component_ids);
    r->component_ids = NULL;
    r->component_count = 0;
    r->missing_since_ms = 0;
    free(r->slurm_states);
    r->slurm_states = NULL;
    r->restarts = r->restarts_staged = 0;
    r->sweep_due = false;
    free(r->retry_cause);
    r->retry_cause = forge_xstrdup(cause);
    if (r->retry.exclude_failed_nodes &&
        (forge_retry_cause_of_reason(cause) & FORGE_RETRY_NODE_CAUSES))
        exclude_nodes(&r->excluded_nodes, failed_nodes);
    r->retry_not_before_ms = not_before_ms;
    return FORGE_OK;
}

/* The retry fields (launch.h), each only when set: the records of a
 * launch never retried look as they did before retries. */
void forge_launch_put_retry(json_t *o, const forge_launch_record_t *r)
{
    forge_buf_t causes = FORGE_BUF_INIT;

    if (r->retry.max_tries > 1) {
        forge_retry_causes_format(r->retry.causes, &causes);
        json_object_set_new(o, "retry_max_tries",
                            json_integer(r->retry.max_tries));
        json_object_set_new(o, "retry_on", json_string(forge_buf_str(&causes)));
        json_object_set_new(o, "retry_backoff_s",
                            json_integer(r->retry.backoff_s));
        json_object_set_new(o, "retry_exclude",
                            json_boolean(r->retry.exclude_failed_nodes));
    }
    if (r->try_num > 1)
        json_object_set_new(o, "try", json_integer(r->try_num));
    if (r->retry_cause)
        json_object_set_new(o, "retry_cause", json_string(r->retry_cause));
    if (r->excluded_nodes)
        json_object_set_new(o, "excluded_nodes",
                            json_string(r->excluded_nodes));
    if (r->retry_not_before_ms > 0)
        json_object_set_new(o, "retry_not_before_ms",
                            json_integer(r->retry_not_before_ms));
    forge_buf_clear(&causes);
}

/* Causes by name, those this worker does not know left out (a later
 * worker's). */
static unsigned causes_of(const char *s, size_t n)
{
    unsigned causes = 0;
    size_t at = 0;

    while (s && at < n) {
        size_t len = 0;
        while (at + len < n && s[at + len] != ',')
            len++;
        causes |= forge_retry_cause_named(s + at, len);
        at += len + 1;
    }
    return causes;
}

void forge_launch_take_retry(forge_launch_record_t *r,
                             const forge_retry_read_t *t)
{
    r->retry.max_tries = count_of(t->max_tries);
    r->retry.causes = causes_of(t->on, t->on_len);
    r->retry.backoff_s = count_of(t->backoff_s);
    r->retry.exclude_failed_nodes = t->exclude;
    r->try_num = count_of(t->try_num);
    if (t->cause)
        r->retry_cause = forge_xstrndup(t->cause, t->cause_len);
    if (t->excluded && t->excluded_len)
        r->excluded_nodes = forge_xstrndup(t->excluded, t->excluded_len);
    r->retry_not_before_ms = t->not_before_ms > 0 ? t->not_before_ms : 0;
}

static void json_text(const json_t *v, const char **s, size_t *n)
{
    *s = json_is_string(v) ? json_string_value(v) : NULL;
    *n = *s ? json_string_length(v) : 0;
}

void forge_launch_read_retry(forge_launch_record_t *r, const json_t *o)
{
    forge_retry_read_t t = {0};

    t.max_tries = json_integer_value(json_object_get(o, "retry_max_tries"));
    t.backoff_s = json_integer_value(json_object_get(o, "retry_backoff_s"));
    t.try_num = json_integer_value(json_object_get(o, "try"));
    t.not_before_ms =
        json_integer_value(json_object_get(o, "retry_not_before_ms"));
    t.exclude = json_is_true(json_object_get(o, "retry_exclude"));
    json_text(json_object_get(o, "retry_on"), &t.on, &t.on_len);
    json_text(json_object_get(o, "retry_cause"), &t.cause, &t.cause_len);
    json_text(json_object_get(o, "excluded_nodes"), &t.excluded,
              &t.excluded_len);
    forge_launch_take_retry(r, &t);
}
