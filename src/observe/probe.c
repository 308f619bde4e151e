/* SPDX-License-Identifier: Apache-2.0 */
/*
 * observe/probe.c - the slurmrestd pinger of probe.h.
 *
 * Threads and ownership: the probe's thread owns its slurmrestd client and
 * runs run() only; it reads health.h's atomics, never the loop's state.
 * `lock` guards `stopping`, on which the thread waits between pings;
 * forge_probe_stop (the starter's thread) sets it, interrupts the client
 * (the one call another thread may make on it, client.h), joins, frees.
 */
#include "observe/probe.h"
#include "clock/clock.h"
#include "log/log.h"
#include "base/util.h"
#include "observe/health.h"
#include "slurm/client.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

#define CHECK_MS 500 /* how often the thread looks at the answer's age */

struct forge_probe {
    forge_slurm_client_t *client;
    long long every_ms; /* a third of FORGE_READY_SLURM_S */
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    bool stopping;
};

/* Waits ms or until stopping; true when stopping. */
static bool wait_ms(forge_probe_t *p, long ms)
{
    struct timespec until = forge_clock_deadline(ms);
    bool stopping;

    pthread_mutex_lock(&p->lock);
    if (!p->stopping)
        pthread_cond_timedwait(&p->wake, &p->lock, &until);
    stopping = p->stopping;
    pthread_mutex_unlock(&p->lock);
    return stopping;
}

static void *run(void *arg)
{
    forge_probe_t *p = arg;
    long long last_ping = 0;

    while (!wait_ms(p, CHECK_MS)) {
        long long age = forge_health_slurm_age_ms();
        forge_slurm_ping_t ping;
        forge_slurm_result_t res = {0};
        if (age >= 0 && age < p->every_ms)
            continue; /* something else was answered lately */
        if (last_ping && forge_clock_ms() - last_ping < p->every_ms)
            continue; /* the last ping failed: not again so soon */
        last_ping = forge_clock_ms();
        if (forge_slurm_ping(p->client, &ping, &res) != FORGE_SLURM_OK)
            forge_log_debug("readiness ping: %s (%s)", res.message,
                            forge_slurm_status_name(res.status));
        else if (ping.responding) /* slurmrestd and slurmctld answer */
            forge_health_slurm_answered();
        else
            forge_log_debug("readiness ping: slurmctld is not responding");
    }
    return NULL;
}

forge_rc_t forge_probe_start(const forge_config_t *cfg, forge_probe_t **out,
                             forge_error_t *err)
{
    forge_probe_t *p = forge_xcalloc(1, sizeof(*p));
    forge_slurm_options_t opts;

    *out = NULL;
    forge_slurm_options_from_config(cfg, &opts);
    opts.max_attempts = 1; /* a ping that fails is simply made again */
    if (forge_slurm_client_new(&opts, &p->client, err)) {
        free(p);
        return FORGE_ECONFIG;
    }
    p->every_ms = cfg->ready_slurm_s * 1000LL / 3;
    pthread_mutex_init(&p->lock, NULL);
    forge_clock_cond_init(&p->wake);
    if (pthread_create(&p->thread, NULL, run, p) != 0) {
        forge_slurm_client_destroy(p->client);
        pthread_cond_destroy(&p->wake);
        pthread_mutex_destroy(&p->lock);
        free(p);
        return forge_error_set(err, FORGE_EIO, "FORGE_HTTP_LISTEN",
                               "cannot start the readiness probe's thread");
    }
    *out = p;
    return FORGE_OK;
}

void forge_probe_stop(forge_probe_t *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->lock);
    p->stopping = true;
    pthread_cond_signal(&p->wake);
    pthread_mutex_unlock(&p->lock);
    forge_slurm_client_interrupt(p->client);
    pthread_join(p->thread, NULL);
    forge_slurm_client_destroy(p->client);
    pthread_cond_destroy(&p->wake);
    pthread_mutex_destroy(&p->lock);
    free(p);
}
