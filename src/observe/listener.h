/* SPDX-License-Identifier: Apache-2.0 */
/*
 * observe/listener.h - the HTTP listener on FORGE_HTTP_LISTEN (libmicrohttpd,
 * one thread of its own): GET /healthz, /readyz (health.h: 200 or 503 with
 * a JSON body saying why) and /metrics (observe.h: Prometheus text format
 * 0.0.4). It only reads what the worker published; it never calls into
 * the loop, so a stuck loop still gets its 503.
 */
#ifndef FORGE_OBSERVE_LISTENER_H
#define FORGE_OBSERVE_LISTENER_H

#include "base/error.h"

typedef struct forge_listener forge_listener_t;

/* Binds hostport ("host:port", "[v6]:port"; port 0 picks one) and serves.
 * FORGE_ECONFIG: the address cannot be resolved or is not this host's;
 * FORGE_EIO: it cannot be bound now (in use): err says which. */
forge_rc_t forge_listener_start(const char *hostport, forge_listener_t **out,
                                forge_error_t *err) FORGE_WARN_UNUSED;

/* The port it listens on (the one picked, for port 0). */
int forge_listener_port(const forge_listener_t *l);

/* Stops serving (a request under way finishes), frees. NULL-safe. */
void forge_listener_stop(forge_listener_t *l);

#endif
