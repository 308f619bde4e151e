/* SPDX-License-Identifier: Apache-2.0 */
/*
 * retry.c - the retry policy (retry.h): the causes by name, a policy
 * merged from the fleet's default and a request's override, and the pure
 * decision a try's end leads to. A cause's name is the reason a terminal
 * status event gives for it (slurm/job_state.c), so the table below is
 * the whole mapping.
 */
#include "retry/retry.h"

#include <string.h>

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* In bit order: the infrastructure's causes, then the job's own. */
static const char *const cause_names[FORGE_RETRY_CAUSE_COUNT] = {
    "node_fail", "boot_fail",     "launch_failed", "preempted",
    "failed",    "out_of_memory", "timeout",
};

unsigned forge_retry_cause_named(const char *name, size_t len)
{
    for (size_t i = 0; name && i < COUNT(cause_names); i++)
        if (strlen(cause_names[i]) == len && !memcmp(cause_names[i], name, len))
            return 1u << i;
    return 0;
}

const char *forge_retry_cause_name(unsigned bit)
{
    for (size_t i = 0; i < COUNT(cause_names); i++)
        if (bit == 1u << i)
            return cause_names[i];
    return NULL;
}

unsigned forge_retry_cause_of_reason(const char *reason)
{
    return reason ? forge_retry_cause_named(reason, strlen(reason)) : 0;
}

static bool is_blank(char c)
{
    return c == ' ' || c == '\t';
}

bool forge_retry_causes_parse(const char *list, unsigned *causes,
                              const char **bad)
{
    const char *p = list;

    *causes = 0;
    *bad = NULL;
    while (*p) {
        size_t len = strcspn(p, ",");
        const char *name = p, *end = p + len;
        unsigned bit;
        while (name < end && is_blank(*name))
            name++;
        while (end > name && is_blank(end[-1]))
            end--;
        bit = forge_retry_cause_named(name, (size_t)(end - name));
        if (!bit && end > name) {
            *bad = name;
            return false;
        }
        *causes |= bit;
        p += len;
        if (*p == ',')
            p++;
    }
    return true;
}

void forge_retry_causes_format(unsigned causes, forge_buf_t *out)
{
    bool first = true;

    for (size_t i = 0; i < COUNT(cause_names); i++) {
        if (!(causes & (1u << i)))
            continue;
        if (!first)
            forge_buf_putc(out, ',');
        forge_buf_puts(out, cause_names[i]);
        first = false;
    }
}

forge_retry_policy_t
forge_retry_policy_merge(const forge_retry_policy_t *fleet,
                         const forge_retry_override_t *override)
{
    forge_retry_policy_t p = *fleet;
    const forge_retry_policy_t *v = override ? &override->value : NULL;
    unsigned set = override ? override->set : 0;

    if (set & FORGE_RETRY_SET_MAX_TRIES)
        p.max_tries = v->max_tries;
    if (set & FORGE_RETRY_SET_CAUSES)
        p.causes = v->causes;
    if (set & FORGE_RETRY_SET_BACKOFF)
        p.backoff_s = v->backoff_s;
    if (set & FORGE_RETRY_SET_EXCLUDE)
        p.exclude_failed_nodes = v->exclude_failed_nodes;
    return p;
}

bool forge_retry_may_retry(const forge_retry_policy_t *p, int try_num)
{
    return p->causes && try_num < p->max_tries;
}

long long forge_retry_backoff_ms(const forge_retry_policy_t *p, int next_try)
{
    long long s = p->backoff_s > 0 ? p->backoff_s : 0;

    for (int t = 2; t < next_try && s < FORGE_RETRY_BACKOFF_MAX; t++)
        s *= 2;
    if (s > FORGE_RETRY_BACKOFF_MAX)
        s = FORGE_RETRY_BACKOFF_MAX;
    return s * 1000;
}

forge_retry_decision_t forge_retry_decide(const forge_retry_policy_t *p,
                                          const char *reason, int try_num)
{
    forge_retry_decision_t d = {0};
    unsigned cause = forge_retry_cause_of_reason(reason);

    if (try_num < 1)
        try_num = 1;
    d.cause = cause;
    if (!cause || !(p->causes & cause))
        return d;
    if (try_num >= p->max_tries) {
        d.exhausted = true;
        return d;
    }
    d.retry = true;
    d.next_try = try_num + 1;
    d.delay_ms = forge_retry_backoff_ms(p, d.next_try);
    return d;
}
