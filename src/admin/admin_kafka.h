/* SPDX-License-Identifier: Apache-2.0 */
/*
 * admin_kafka.h - what topic_scan.c and group.c, the recovery side's
 * two librdkafka users, share: a client configuration like the worker's
 * (kafka/kafka_conf.h's forge_kafka_conf_base: FORGE_KAFKA_BROKERS and
 * FORGE_KAFKA_PROP_*) whose librdkafka log lines go to the worker's log at
 * debug level instead of stderr (a broker away would otherwise print a
 * line every few milliseconds before the command's one JSON error).
 */
#ifndef FORGE_ADMIN_KAFKA_H
#define FORGE_ADMIN_KAFKA_H

#include "kafka/kafka_conf.h"
#include "admin/admin.h"

/* New configuration (the caller gives it to rd_kafka_new or destroys it),
 * or NULL with err set (config). */
rd_kafka_conf_t *forge_admin_kafka_conf(const forge_config_t *cfg,
                                        forge_admin_error_t *err);

#endif
