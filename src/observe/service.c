/* SPDX-License-Identifier: Apache-2.0 */
/*
 * observe/service.c - starts and stops service.h's pieces in order. Threads:
 * the caller's (cmd_run's main thread) only; the listener and the probe run
 * their own threads (listener.c, probe.c say what those touch).
 */
#include "observe/service.h"
#include "log/log.h"
#include "base/util.h"
#include "observe/health.h"
#include "observe/listener.h"
#include "observe/observe.h"
#include "observe/probe.h"

#include <stdlib.h>

struct forge_ops {
    forge_listener_t *listener; /* NULL: FORGE_HTTP_LISTEN unset */
    forge_probe_t *probe;
};

forge_rc_t forge_observe_service_start(const forge_config_t *cfg,
                                       forge_observe_service_t **out,
                                       forge_error_t *err)
{
    forge_observe_service_t *ops = forge_xcalloc(1, sizeof(*ops));
    forge_rc_t rc;

    *out = NULL;
    forge_health_init(cfg->health_stall_s, cfg->ready_slurm_s);
    forge_observe_start(cfg);
    if (cfg->http_listen) {
        if ((rc =
                 forge_listener_start(cfg->http_listen, &ops->listener, err)) ||
            (rc = forge_probe_start(cfg, &ops->probe, err))) {
            forge_observe_service_stop(ops);
            return rc;
        }
        forge_log_info("listening on %s (port %d): /healthz, /readyz, "
                       "/metrics",
                       cfg->http_listen, forge_listener_port(ops->listener));
    }
    *out = ops;
    return FORGE_OK;
}

void forge_observe_service_stop(forge_observe_service_t *ops)
{
    if (!ops)
        return;
    forge_probe_stop(ops->probe);
    forge_listener_stop(ops->listener);
    forge_observe_stop();
    free(ops);
}
