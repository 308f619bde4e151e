/* SPDX-License-Identifier: Apache-2.0 */
/*
 * slurm/endpoints.c - a cluster's slurmrestd endpoints and their circuit
 * breakers (endpoints.h): the process's list of URL lists (shared by
 * reference count, as budget.c's budgets are), the pick, the report of
 * each request's outcome, and the log line when an endpoint is refused
 * and when it answers again.
 *
 * Threads: `registry_lock` guards the list and the reference counts; each
 * entry's `lock` its endpoints' circuits. Nothing is called under a lock
 * but the log and the caller's `each` function.
 */
#include "slurm/endpoints.h"
#include "clock/clock.h"
#include "log/log.h"
#include "base/util.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define COOLDOWN_FIRST_MS 1000
#define COOLDOWN_MAX_MS   30000

typedef struct endpoint {
    char *url;
    char *shown;          /* url without its user info: logs, metrics */
    int failures;         /* in a row; 0: closed */
    long long open_until; /* forge_clock_ms; 0: closed */
} endpoint_t;

struct forge_slurm_endpoints {
    char *urls;
    int holders; /* registry_lock */
    struct forge_slurm_endpoints *next;
    pthread_mutex_t lock;
    endpoint_t *list;
    size_t count;
};

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static forge_slurm_endpoints_t *registry;

/* url without the user info a URL may carry ("https://user:pw@host/" is
 * shown "https://host/"): what logs, metrics and /readyz may say. New. */
static char *shown_url(const char *url)
{
    const char *host = strstr(url, "://");
    const char *at;
    size_t len;
    char *out;

    if (!host)
        return forge_xstrdup(url);
    host += 3;
    len = strcspn(host, "/?#");
    at = memchr(host, '@', len);
    if (!at)
        return forge_xstrdup(url);
    out = forge_xmalloc(strlen(url) + 1);
    memcpy(out, url, (size_t)(host - url));
    strcpy(out + (host - url), at + 1);
    return out;
}

static forge_slurm_endpoints_t *endpoints_new(const char *urls)
{
    forge_slurm_endpoints_t *e = forge_xcalloc(1, sizeof(*e));
    const char *p = urls;

    e->urls = forge_xstrdup(urls);
    pthread_mutex_init(&e->lock, NULL);
    for (;;) {
        const char *comma = strchr(p, ',');
        size_t n = comma ? (size_t)(comma - p) : strlen(p);
        char *url = forge_xstrndup(p, n);
        e->list = forge_xrealloc(e->list, (e->count + 1) * sizeof(*e->list));
        e->list[e->count++] = (endpoint_t){url, shown_url(url), 0, 0};
        if (!comma)
            break;
        p = comma + 1;
    }
    return e;
}

forge_slurm_endpoints_t *forge_slurm_endpoints_acquire(const char *urls)
{
    forge_slurm_endpoints_t *e;

    pthread_mutex_lock(&registry_lock);
    for (e = registry; e; e = e->next)
        if (!strcmp(e->urls, urls))
            break;
    if (!e) {
        e = endpoints_new(urls);
        e->next = registry;
        registry = e;
    }
    e->holders++;
    pthread_mutex_unlock(&registry_lock);
    return e;
}

void forge_slurm_endpoints_release(forge_slurm_endpoints_t *e)
{
    bool last;

    if (!e)
        return;
    pthread_mutex_lock(&registry_lock);
    last = --e->holders == 0;
    for (forge_slurm_endpoints_t **link = &registry; last && *link;
         link = &(*link)->next)
        if (*link == e) {
            *link = e->next;
            break;
        }
    pthread_mutex_unlock(&registry_lock);
    if (!last)
        return;
    for (size_t i = 0; i < e->count; i++) {
        free(e->list[i].url);
        free(e->list[i].shown);
    }
    free(e->list);
    pthread_mutex_destroy(&e->lock);
    free(e->urls);
    free(e);
}

size_t forge_slurm_endpoints_count(const forge_slurm_endpoints_t *e)
{
    return e->count;
}

/* The first closed (or half-open: its cooldown over) endpoint; all open,
 * the one whose cooldown ends first. Called with e->lock held. */
static size_t pick_locked(const forge_slurm_endpoints_t *e, long long now)
{
    size_t soonest = 0;

    for (size_t i = 0; i < e->count; i++) {
        if (e->list[i].open_until <= now)
            return i;
        if (e->list[i].open_until < e->list[soonest].open_until)
            soonest = i;
    }
    return soonest;
}

size_t forge_slurm_endpoints_pick(forge_slurm_endpoints_t *e, const char **url)
{
    size_t i;

    if (e->count == 1) { /* nothing to choose: no lock */
        *url = e->list[0].url;
        return 0;
    }
    pthread_mutex_lock(&e->lock);
    i = pick_locked(e, forge_clock_ms());
    *url = e->list[i].url;
    pthread_mutex_unlock(&e->lock);
    return i;
}

static long long cooldown_ms(int failures)
{
    long long ms = COOLDOWN_FIRST_MS;

    for (int k = 1; k < failures && ms < COOLDOWN_MAX_MS; k++)
        ms *= 2;
    return ms < COOLDOWN_MAX_MS ? ms : COOLDOWN_MAX_MS;
}

void forge_slurm_endpoints_report(forge_slurm_endpoints_t *e, size_t i,
                                  bool answered)
{
    endpoint_t *p;
    int was;

    if (e->count == 1 || i >= e->count)
        return; /* one endpoint: nothing to fail over to */
    pthread_mutex_lock(&e->lock);
    p = &e->list[i];
    was = p->failures;
    if (answered) {
        p->failures = 0;
        p->open_until = 0;
    } else {
        p->failures++;
        p->open_until = forge_clock_ms() + cooldown_ms(p->failures);
    }
    pthread_mutex_unlock(&e->lock);
    if (answered && was)
        forge_log_info("slurmrestd %s answers again", p->shown);
    else if (!answered && !was)
        forge_log_warn("slurmrestd %s does not answer: requests go to the "
                       "next endpoint (it is tried again after %lld ms)",
                       p->shown, cooldown_ms(1));
}

const char *forge_slurm_endpoint_state_name(forge_slurm_endpoint_state_t s)
{
    static const char *const names[] = {"in_use", "standby", "refused"};

    return names[s];
}

void forge_slurm_endpoints_each(void (*fn)(const char *url,
                                           forge_slurm_endpoint_state_t state,
                                           int failures, void *ctx),
                                void *ctx)
{
    pthread_mutex_lock(&registry_lock);
    for (forge_slurm_endpoints_t *e = registry; e; e = e->next) {
        long long now = forge_clock_ms();
        pthread_mutex_lock(&e->lock);
        size_t in_use = pick_locked(e, now);
        for (size_t i = 0; i < e->count; i++)
            fn(e->list[i].shown,
               i == in_use                   ? FORGE_ENDPOINT_IN_USE
               : e->list[i].open_until > now ? FORGE_ENDPOINT_REFUSED
                                             : FORGE_ENDPOINT_STANDBY,
               e->list[i].failures, ctx);
        pthread_mutex_unlock(&e->lock);
    }
    pthread_mutex_unlock(&registry_lock);
}
