/* SPDX-License-Identifier: Apache-2.0 */
/*
 * config_security.h - the configuration's security (issue 27): the
 * first-class Kafka security variables and the librdkafka properties they
 * set, the files they name read or checked once at start (passwords
 * registered as secrets), and the warnings a configuration deserves at
 * start (a certificate not verified, a JWT or a SASL exchange in clear).
 *
 * The rules that refuse a configuration (exit 78) run inside
 * forge_config_load (config_security.c, through config_int.h); what is
 * here runs after it. Threads: none; the warnings are a pure function.
 */
#ifndef FORGE_CONFIG_SECURITY_H
#define FORGE_CONFIG_SECURITY_H

#include "config/config.h"

#include <stdbool.h>
#include <stddef.h>

/* One first-class variable as librdkafka is told it. */
typedef struct forge_kafka_security_prop {
    const char *var;   /* "FORGE_KAFKA_SASL_PASSWORD_FILE" */
    const char *prop;  /* "sasl.password" */
    const char *value; /* borrowed from cfg; NULL: unset (a password: not
                          read yet) */
    bool secret;       /* the value is a password: never shown */
} forge_kafka_security_prop_t;

/* Row i of the first-class Kafka security variables into *out; false past
 * the last row. The builder of every Kafka client sets each row with a
 * value (kafka/kafka_conf.c). */
bool forge_config_kafka_security(const forge_config_t *cfg, size_t i,
                                 forge_kafka_security_prop_t *out);

/* Whether librdkafka's property name holds a secret (a password, a client
 * secret, a key's PEM): its value is never shown. */
bool forge_kafka_prop_is_secret(const char *name);

/*
 * Reads and checks, once at start, the files the security variables name,
 * for what a command needs: FORGE_NEED_KAFKA reads the password files into
 * cfg (owner-only, one line: secrets/secret_file.h) and registers them and
 * every secret-valued FORGE_KAFKA_PROP_* as secrets (secrets/secrets.h: no log
 * line shows them), and checks the CA, certificate (readable) and key (not
 * readable by others) files; FORGE_NEED_SLURM checks slurmrestd's client
 * certificate and key the same way. FORGE_ECONFIG naming the variable
 * otherwise (exit 78). Call once per configuration, before sharing it.
 */
forge_rc_t forge_config_read_secrets(forge_config_t *cfg, unsigned needs,
                                     forge_error_t *err) FORGE_WARN_UNUSED;

/* Whether host (len bytes, "[...]" allowed around an IPv6 address) is a
 * loopback: localhost, 127.0.0.0/8, ::1, ::ffff:127.x.x.x. No lookup. */
bool forge_host_is_loopback(const char *host, size_t len);

/* A warning at start: the variable it is about, and why (static text). */
typedef struct forge_config_warning {
    const char *variable;
    const char *message;
} forge_config_warning_t;

#define FORGE_CONFIG_WARNINGS_MAX 4

/*
 * The warnings cfg deserves for a command that needs `needs` (FORGE_NEED_*:
 * Slurm's for FORGE_NEED_SLURM, Kafka's for FORGE_NEED_KAFKA), into out;
 * how many. Pure: the same configuration gives the same warnings.
 *   - FORGE_SLURM_TLS_VERIFY=0 with an https:// URL: any server can take
 *     the JWT;
 *   - FORGE_SLURM_REST_URL http:// to a host that is not loopback: the JWT
 *     travels in clear;
 *   - Kafka's sasl_plaintext to a broker that is not loopback: the SASL
 *     exchange (with PLAIN, the password) travels in clear.
 */
size_t forge_config_warnings(const forge_config_t *cfg, unsigned needs,
                             forge_config_warning_t *out);

#endif
