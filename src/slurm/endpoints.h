/* SPDX-License-Identifier: Apache-2.0 */
/*
 * slurm/endpoints.h - the slurmrestd endpoints of one cluster (issue 39):
 * FORGE_SLURM_REST_URL's URLs (one, or several separated by commas: the
 * stateless slurmrestd a site runs side by side), in the order given, each
 * with a circuit breaker shared by every client of the process (the Slurm
 * lanes, the poller, the probe).
 *
 * A request goes to the first endpoint whose circuit is closed. An
 * endpoint that does not answer (the connection refused, reset or timed
 * out; nothing or no HTTP answer came back) opens its circuit: no request
 * tries it for a cooldown (1 s, doubling with each failure in a row, at
 * most 30 s), then one may (half-open); answered, it is closed again. With
 * every circuit open, the endpoint whose cooldown ends first is tried: a
 * call is never refused for want of an endpoint. An HTTP answer, whatever
 * its status, is an answer: slurmrestd is there (a 5xx of a slurmctld
 * that is away is the controller's, not the endpoint's).
 *
 * Threads: the process's list (one entry per URL list, shared by reference
 * count) under `registry_lock`; each entry's endpoints under its `lock`.
 */
#ifndef FORGE_SLURM_ENDPOINTS_H
#define FORGE_SLURM_ENDPOINTS_H

#include <stdbool.h>
#include <stddef.h>

typedef struct forge_slurm_endpoints forge_slurm_endpoints_t;

/* The shared endpoints of `urls` (comma-separated base URLs, no trailing
 * '/'; one at least), made the first time. Release it with _release. */
forge_slurm_endpoints_t *forge_slurm_endpoints_acquire(const char *urls);
void forge_slurm_endpoints_release(forge_slurm_endpoints_t *e);

size_t forge_slurm_endpoints_count(const forge_slurm_endpoints_t *e);

/* The endpoint a request goes to now (above): its index, *url its base URL
 * (borrowed: lives as long as e). */
size_t forge_slurm_endpoints_pick(forge_slurm_endpoints_t *e, const char **url);

/* How a request to endpoint i went: answered (any HTTP answer) or not. */
void forge_slurm_endpoints_report(forge_slurm_endpoints_t *e, size_t i,
                                  bool answered);

/* What the metrics and /readyz show of one endpoint. */
typedef enum forge_slurm_endpoint_state {
    FORGE_ENDPOINT_IN_USE,  /* the one requests go to now */
    FORGE_ENDPOINT_STANDBY, /* closed, after the one in use */
    FORGE_ENDPOINT_REFUSED, /* its circuit is open: it did not answer */
} forge_slurm_endpoint_state_t;

const char *forge_slurm_endpoint_state_name(forge_slurm_endpoint_state_t s);

/* Calls fn for each endpoint of every URL list in use in the process,
 * in order: its URL (without user info), state and failures in a row. */
void forge_slurm_endpoints_each(void (*fn)(const char *url,
                                           forge_slurm_endpoint_state_t state,
                                           int failures, void *ctx),
                                void *ctx);

#endif
