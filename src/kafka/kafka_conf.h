/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kafka/kafka_conf.h - the one door in kafka.h's wall: a librdkafka client
 * configuration like the worker's own (the defaults, FORGE_KAFKA_BROKERS,
 * FORGE_KAFKA_PROP_*, the security variables, the worker's client.id), for the
 * consumer and producer of kafka.c and producer.c and for the operator
 * commands' own short-lived clients (admin/: topic scans, group offsets), which
 * use librdkafka directly.
 *
 * Threads: none of its own; any thread may build a configuration.
 */
#ifndef FORGE_KAFKA_CONF_H
#define FORGE_KAFKA_CONF_H

#include "config/config.h"
#include "base/error.h"

#include <librdkafka/rdkafka.h>
#include <stddef.h>

/* name=value into conf; FORGE_ECONFIG with librdkafka's reason (for a
 * secret-valued name, neither the value nor the reason). */
forge_rc_t forge_kafka_conf_set(rd_kafka_conf_t *conf, const char *name,
                                const char *value, forge_error_t *err);

/* A new configuration (the caller's: to rd_kafka_new or destroyed) with
 * the worker's defaults, the operator's FORGE_KAFKA_PROP_*, the security
 * variables (FORGE_KAFKA_SECURITY_PROTOCOL, _SASL_*, _SSL_*: the passwords
 * as forge_config_read_secrets read them) and the brokers; NULL with err
 * set when librdkafka refuses one. */
rd_kafka_conf_t *forge_kafka_conf_base(const forge_config_t *cfg,
                                       forge_error_t *err);

/* rd_kafka_new(type, conf): conf is the handle's on success and destroyed
 * on failure, never the caller's afterwards. NULL with errstr set. */
rd_kafka_t *forge_kafka_handle_new(rd_kafka_type_t type, rd_kafka_conf_t *conf,
                                   char *errstr, size_t size);

#endif
