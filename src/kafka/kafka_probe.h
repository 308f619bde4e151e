/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kafka_probe.h - "are the brokers reachable?": one metadata request with a
 * deadline, for `forge-worker ping` and readiness. Uses a short-lived
 * producer handle; never joins a group or touches a topic.
 */
#ifndef FORGE_KAFKA_PROBE_H
#define FORGE_KAFKA_PROBE_H

#include "config/config.h"

#include <stddef.h>

typedef struct forge_kafka_probe {
    int ok;
    int brokers;   /* brokers the metadata listed */
    int topics_ok; /* the worker's five topics exist */
    char error[256];
} forge_kafka_probe_t;

void forge_kafka_probe(const forge_config_t *cfg, int timeout_ms,
                       forge_kafka_probe_t *out);

#endif
