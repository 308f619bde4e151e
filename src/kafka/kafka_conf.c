/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kafka/kafka_conf.c - a librdkafka client configuration like the worker's,
 * and making a handle of it (kafka_conf.h).
 */
#include "kafka/kafka_conf.h"
#include "config/config_security.h"

/* A secret's value is never shown: not even librdkafka's reason, which may
 * quote it. */
forge_rc_t forge_kafka_conf_set(rd_kafka_conf_t *conf, const char *name,
                                const char *value, forge_error_t *err)
{
    char errstr[256];

    if (rd_kafka_conf_set(conf, name, value, errstr, sizeof(errstr)) ==
        RD_KAFKA_CONF_OK)
        return FORGE_OK;
    if (forge_kafka_prop_is_secret(name))
        return forge_error_set(err, FORGE_ECONFIG, name,
                               "librdkafka refused %s (its value not shown)",
                               name);
    return forge_error_set(err, FORGE_ECONFIG, name, "librdkafka %s=%s: %s",
                           name, value, errstr);
}

/* The first-class security variables (config_security.h), each that is
 * set; no FORGE_KAFKA_PROP_* names the same property (refused at load). */
static forge_rc_t set_security(rd_kafka_conf_t *conf, const forge_config_t *cfg,
                               forge_error_t *err)
{
    forge_kafka_security_prop_t p;
    forge_rc_t rc;

    for (size_t i = 0; forge_config_kafka_security(cfg, i, &p); i++)
        if (p.value && (rc = forge_kafka_conf_set(conf, p.prop, p.value, err)))
            return rc;
    return FORGE_OK;
}

/* Our defaults, then the operator's FORGE_KAFKA_PROP_* and the security
 * variables (never the same property: refused at load), then what we own
 * (which wins). message.max.bytes: a state record carries its request (up
 * to 1 MiB, JSON-escaped inside the record), more than librdkafka's 1 MB
 * default; the state topic's max.message.bytes must allow it too. */
rd_kafka_conf_t *forge_kafka_conf_base(const forge_config_t *cfg,
                                       forge_error_t *err)
{
    rd_kafka_conf_t *conf = rd_kafka_conf_new();

    if (forge_kafka_conf_set(conf, "message.max.bytes", "4194304", err))
        goto fail;
    for (size_t i = 0; i < cfg->kafka_prop_count; i++)
        if (forge_kafka_conf_set(conf, cfg->kafka_props[i].name,
                                 cfg->kafka_props[i].value, err))
            goto fail;
    if (set_security(conf, cfg, err))
        goto fail;
    if (forge_kafka_conf_set(conf, "bootstrap.servers", cfg->kafka_brokers,
                             err) ||
        forge_kafka_conf_set(conf, "client.id", cfg->worker_id, err))
        goto fail;
    return conf;
fail:
    rd_kafka_conf_destroy(conf);
    return NULL;
}

/* rd_kafka_new, which takes conf only when it succeeds: conf is destroyed
 * here when it fails, so the caller never owns it afterwards. */
rd_kafka_t *forge_kafka_handle_new(rd_kafka_type_t type, rd_kafka_conf_t *conf,
                                   char *errstr, size_t size)
{
    rd_kafka_t *rk = rd_kafka_new(type, conf, errstr, size);

    if (!rk)
        rd_kafka_conf_destroy(conf);
    return rk;
}
