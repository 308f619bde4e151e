/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kafka/kafka_access.h - what the broker lets this worker do, asked and
 * named (kafka_access.c says how).
 */
#ifndef FORGE_KAFKA_ACCESS_H
#define FORGE_KAFKA_ACCESS_H

#include "config/config.h"

#include <librdkafka/rdkafka.h>
#include <stdbool.h>
#include <stddef.h>

/* Whether code is the broker refusing an operation to the worker's
 * principal: a topic, its group, its transactional id, the cluster. */
bool forge_kafka_is_denial(rd_kafka_resp_err_t code);

/* Asks the broker, through rk, what cfg's worker may do on its topics and
 * its group, within timeout_ms. Each operation it lacks is written to
 * missing as "OP on KIND NAME (what for)", separated by "; ". Returns how
 * many lack, 0 none, -1 when the broker did not say (away, too old to
 * report authorized operations): nothing is known then. */
int forge_kafka_access_check(rd_kafka_t *rk, const forge_config_t *cfg,
                             int timeout_ms, char *missing, size_t size);

/* "User:NAME" with SASL, else "the worker's principal": for messages. */
void forge_kafka_principal(const forge_config_t *cfg, char *out, size_t size);

/* librdkafka's error_cb for the worker's own handles: logs the error and
 * remembers the last refusal of the worker's credentials (authentication)
 * or of the broker's certificate (TLS). Any thread. */
void forge_kafka_on_client_error(rd_kafka_t *rk, int err, const char *reason,
                                 void *opaque);

/* Remembers reason when err is such a refusal (a consumer's error
 * message: its handle hands errors to its poll, not to the error_cb). */
void forge_kafka_note_refusal(int err, const char *reason);

/* The last refusal remembered since start (or the last call): its reason
 * and the variable to name (FORGE_KAFKA_SASL_PASSWORD_FILE,
 * FORGE_KAFKA_SSL_CA_FILE). False, nothing written, when there was none.
 * Forgets it. */
bool forge_kafka_take_refusal(char *reason, size_t size, const char **variable);

#endif
