/* SPDX-License-Identifier: Apache-2.0 */
/*
 * config_security.c - the security variables (config_security.h): their
 * rules inside forge_config_load (config_int.h), their librdkafka
 * properties, their files read at start, and the warnings at start. Tables
 * first, then the functions that walk them.
 */
#include "config/config_int.h"
#include "config/config_security.h"
#include "secrets/secret_file.h"
#include "secrets/secrets.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#define AT(field) offsetof(forge_config_t, field)

/* ---- the tables ------------------------------------------------------- */

/* Each first-class Kafka variable and the property it sets: its value is
 * the variable's own, or (a password file) the file's content. */
static const struct kafka_var {
    const char *var;
    const char *prop;
    const char *alias; /* another name librdkafka takes for prop */
    size_t set_at;     /* the variable's field */
    size_t value_at;   /* the property's value */
    bool secret;
} kafka_vars[] = {
    {"FORGE_KAFKA_SECURITY_PROTOCOL", "security.protocol", NULL,
     AT(kafka_security_protocol), AT(kafka_security_protocol), false},
    {"FORGE_KAFKA_SASL_MECHANISM", "sasl.mechanisms", "sasl.mechanism",
     AT(kafka_sasl_mechanism), AT(kafka_sasl_mechanism), false},
    {"FORGE_KAFKA_SASL_USERNAME", "sasl.username", NULL,
     AT(kafka_sasl_username), AT(kafka_sasl_username), false},
    {"FORGE_KAFKA_SASL_PASSWORD_FILE", "sasl.password", NULL,
     AT(kafka_sasl_password_file), AT(kafka_sasl_password), true},
    {"FORGE_KAFKA_SSL_CA_FILE", "ssl.ca.location", NULL, AT(kafka_ssl_ca_file),
     AT(kafka_ssl_ca_file), false},
    {"FORGE_KAFKA_SSL_CERT_FILE", "ssl.certificate.location", NULL,
     AT(kafka_ssl_cert_file), AT(kafka_ssl_cert_file), false},
    {"FORGE_KAFKA_SSL_KEY_FILE", "ssl.key.location", NULL,
     AT(kafka_ssl_key_file), AT(kafka_ssl_key_file), false},
    {"FORGE_KAFKA_SSL_KEY_PASSWORD_FILE", "ssl.key.password", NULL,
     AT(kafka_ssl_key_password_file), AT(kafka_ssl_key_password), true},
};

#define KAFKA_VAR_COUNT (sizeof(kafka_vars) / sizeof(kafka_vars[0]))

/* A variable set needs another: "<var> needs <needs>". */
static const struct pair_rule {
    const char *var;
    size_t at;
    const char *needs;
    size_t needs_at;
} pair_rules[] = {
    {"FORGE_KAFKA_SASL_USERNAME", AT(kafka_sasl_username),
     "FORGE_KAFKA_SASL_PASSWORD_FILE", AT(kafka_sasl_password_file)},
    {"FORGE_KAFKA_SASL_PASSWORD_FILE", AT(kafka_sasl_password_file),
     "FORGE_KAFKA_SASL_USERNAME", AT(kafka_sasl_username)},
    {"FORGE_KAFKA_SASL_USERNAME", AT(kafka_sasl_username),
     "FORGE_KAFKA_SASL_MECHANISM", AT(kafka_sasl_mechanism)},
    {"FORGE_KAFKA_SSL_CERT_FILE", AT(kafka_ssl_cert_file),
     "FORGE_KAFKA_SSL_KEY_FILE", AT(kafka_ssl_key_file)},
    {"FORGE_KAFKA_SSL_KEY_FILE", AT(kafka_ssl_key_file),
     "FORGE_KAFKA_SSL_CERT_FILE", AT(kafka_ssl_cert_file)},
    {"FORGE_KAFKA_SSL_KEY_PASSWORD_FILE", AT(kafka_ssl_key_password_file),
     "FORGE_KAFKA_SSL_KEY_FILE", AT(kafka_ssl_key_file)},
    {"FORGE_SLURM_TLS_CERT_FILE", AT(slurm_tls_cert_file),
     "FORGE_SLURM_TLS_KEY_FILE", AT(slurm_tls_key_file)},
    {"FORGE_SLURM_TLS_KEY_FILE", AT(slurm_tls_key_file),
     "FORGE_SLURM_TLS_CERT_FILE", AT(slurm_tls_cert_file)},
};

/* The mechanisms and whether they take the user and password file. */
static const struct mechanism_rule {
    const char *name;
    bool credentials;
} mechanism_rules[] = {
    {"PLAIN", true},
    {"SCRAM-SHA-256", true},
    {"SCRAM-SHA-512", true},
    {"OAUTHBEARER", false},
};

/* The files checked at start: what a command must need, the mode bits
 * refused (077: owner only, 007: not for others, 0: readable will do), or
 * read whole into read_at (a password). */
static const struct file_rule {
    unsigned need;
    const char *var;
    size_t at;
    mode_t refused;
    bool read;
    size_t read_at;
} file_rules[] = {
    {FORGE_NEED_KAFKA, "FORGE_KAFKA_SASL_PASSWORD_FILE",
     AT(kafka_sasl_password_file), 077, true, AT(kafka_sasl_password)},
    {FORGE_NEED_KAFKA, "FORGE_KAFKA_SSL_KEY_PASSWORD_FILE",
     AT(kafka_ssl_key_password_file), 077, true, AT(kafka_ssl_key_password)},
    {FORGE_NEED_KAFKA, "FORGE_KAFKA_SSL_CA_FILE", AT(kafka_ssl_ca_file), 0,
     false, 0},
    {FORGE_NEED_KAFKA, "FORGE_KAFKA_SSL_CERT_FILE", AT(kafka_ssl_cert_file), 0,
     false, 0},
    {FORGE_NEED_KAFKA, "FORGE_KAFKA_SSL_KEY_FILE", AT(kafka_ssl_key_file), 007,
     false, 0},
    {FORGE_NEED_SLURM, "FORGE_SLURM_TLS_CERT_FILE", AT(slurm_tls_cert_file), 0,
     false, 0},
    {FORGE_NEED_SLURM, "FORGE_SLURM_TLS_KEY_FILE", AT(slurm_tls_key_file), 007,
     false, 0},
};

/* librdkafka properties whose values are secrets, by a part of the name. */
static const char *const secret_parts[] = {
    "password",    "secret",      "sasl.oauthbearer.config",
    "ssl.key.pem", "ssl_key.pem", NULL};

static const char *str_at(const forge_config_t *cfg, size_t at)
{
    return *(char *const *)((const char *)cfg + at);
}

/* ---- the rules inside forge_config_load ------------------------------- */

/* security.protocol as librdkafka will have it: the variable, else the
 * pass-through, else librdkafka's default. */
static const char *protocol_of(const forge_config_t *cfg)
{
    if (cfg->kafka_security_protocol)
        return cfg->kafka_security_protocol;
    for (size_t i = 0; i < cfg->kafka_prop_count; i++)
        if (!strcmp(cfg->kafka_props[i].name, "security.protocol"))
            return cfg->kafka_props[i].value;
    return "plaintext";
}

static bool protocol_has(const forge_config_t *cfg, const char *kind)
{
    const char *p = protocol_of(cfg);

    return !strcasecmp(kind, "sasl") ? !strncasecmp(p, "sasl_", 5)
           : !strcasecmp(kind, "ssl")
               ? !strcasecmp(p, "ssl") || !strcasecmp(p, "sasl_ssl")
               : false;
}

static forge_rc_t check_pairs(const forge_config_t *cfg, forge_error_t *err)
{
    for (size_t i = 0; i < sizeof(pair_rules) / sizeof(pair_rules[0]); i++) {
        const struct pair_rule *r = &pair_rules[i];
        if (str_at(cfg, r->at) && !str_at(cfg, r->needs_at))
            return forge_error_set(err, FORGE_ECONFIG, r->needs,
                                   "%s is set but %s is not: set both", r->var,
                                   r->needs);
    }
    return FORGE_OK;
}

static forge_rc_t check_mechanism(const forge_config_t *cfg, forge_error_t *err)
{
    const char *m = cfg->kafka_sasl_mechanism;
    bool credentials = false;

    if (!m)
        return FORGE_OK;
    if (!protocol_has(cfg, "sasl"))
        return forge_error_set(err, FORGE_ECONFIG, "FORGE_KAFKA_SASL_MECHANISM",
                               "FORGE_KAFKA_SASL_MECHANISM needs the security "
                               "protocol sasl_ssl or sasl_plaintext "
                               "(FORGE_KAFKA_SECURITY_PROTOCOL; it is %s)",
                               protocol_of(cfg));
    for (size_t i = 0; i < sizeof(mechanism_rules) / sizeof(mechanism_rules[0]);
         i++)
        if (!strcmp(m, mechanism_rules[i].name))
            credentials = mechanism_rules[i].credentials;
    if (credentials && !cfg->kafka_sasl_username)
        return forge_error_set(err, FORGE_ECONFIG, "FORGE_KAFKA_SASL_USERNAME",
                               "FORGE_KAFKA_SASL_MECHANISM %s needs "
                               "FORGE_KAFKA_SASL_USERNAME and "
                               "FORGE_KAFKA_SASL_PASSWORD_FILE",
                               m);
    if (!credentials && cfg->kafka_sasl_username)
        return forge_error_set(err, FORGE_ECONFIG, "FORGE_KAFKA_SASL_USERNAME",
                               "FORGE_KAFKA_SASL_USERNAME and "
                               "FORGE_KAFKA_SASL_PASSWORD_FILE are not for %s: "
                               "its settings go through FORGE_KAFKA_PROP_*",
                               m);
    return FORGE_OK;
}

/* The TLS files want a protocol that speaks TLS. */
static forge_rc_t check_tls_files(const forge_config_t *cfg, forge_error_t *err)
{
    for (size_t i = 0; i < KAFKA_VAR_COUNT; i++) {
        const struct kafka_var *v = &kafka_vars[i];
        if (strncmp(v->var, "FORGE_KAFKA_SSL_", 16) || !str_at(cfg, v->set_at))
            continue;
        if (!protocol_has(cfg, "ssl"))
            return forge_error_set(err, FORGE_ECONFIG, v->var,
                                   "%s needs the security protocol ssl or "
                                   "sasl_ssl (FORGE_KAFKA_SECURITY_PROTOCOL; "
                                   "it is %s)",
                                   v->var, protocol_of(cfg));
    }
    return FORGE_OK;
}

forge_rc_t forge_config_check_security(const forge_config_t *cfg,
                                       forge_error_t *err)
{
    forge_rc_t rc;

    if ((rc = check_pairs(cfg, err)) || (rc = check_mechanism(cfg, err)) ||
        (rc = check_tls_files(cfg, err)))
        return rc;
    return FORGE_OK;
}

forge_rc_t forge_config_prop_conflict(const forge_config_t *cfg,
                                      const char *prop, const char *var,
                                      forge_error_t *err)
{
    for (size_t i = 0; i < KAFKA_VAR_COUNT; i++) {
        const struct kafka_var *v = &kafka_vars[i];
        if (!str_at(cfg, v->set_at) ||
            (strcmp(prop, v->prop) && !(v->alias && !strcmp(prop, v->alias))))
            continue;
        return forge_error_set(err, FORGE_ECONFIG, var,
                               "%s and %s both set librdkafka's %s: keep one "
                               "(nothing is overridden silently)",
                               var, v->var, v->prop);
    }
    return FORGE_OK;
}

/* ---- the properties --------------------------------------------------- */

bool forge_config_kafka_security(const forge_config_t *cfg, size_t i,
                                 forge_kafka_security_prop_t *out)
{
    if (i >= KAFKA_VAR_COUNT)
        return false;
    *out = (forge_kafka_security_prop_t){
        .var = kafka_vars[i].var,
        .prop = kafka_vars[i].prop,
        .value = str_at(cfg, kafka_vars[i].value_at),
        .secret = kafka_vars[i].secret,
    };
    return true;
}

bool forge_kafka_prop_is_secret(const char *name)
{
    for (size_t i = 0; secret_parts[i]; i++)
        if (strstr(name, secret_parts[i]))
            return true;
    return false;
}

/* ---- the files at start ----------------------------------------------- */

static forge_rc_t read_file_rule(forge_config_t *cfg, const struct file_rule *r,
                                 forge_error_t *err)
{
    const char *path = str_at(cfg, r->at);
    char **slot = (char **)((char *)cfg + r->read_at);
    forge_rc_t rc;

    if (!r->read)
        return forge_secret_file_check(path, r->var, r->refused, err);
    if (*slot) /* read already */
        return FORGE_OK;
    if ((rc = forge_secret_file_read(path, r->var, slot, err)))
        return rc;
    if (strlen(*slot) >= FORGE_SECRET_MIN_LEN)
        (void)forge_secret_add(*slot);
    return FORGE_OK;
}

/* Secrets given through FORGE_KAFKA_PROP_* registered too: a library's
 * log line or an error that quotes one is redacted. */
static void register_prop_secrets(forge_config_t *cfg)
{
    if (cfg->prop_secrets_registered)
        return;
    for (size_t i = 0; i < cfg->kafka_prop_count; i++)
        if (forge_kafka_prop_is_secret(cfg->kafka_props[i].name) &&
            strlen(cfg->kafka_props[i].value) >= FORGE_SECRET_MIN_LEN)
            (void)forge_secret_add(cfg->kafka_props[i].value);
    cfg->prop_secrets_registered = true;
}

forge_rc_t forge_config_read_secrets(forge_config_t *cfg, unsigned needs,
                                     forge_error_t *err)
{
    forge_rc_t rc;

    for (size_t i = 0; i < sizeof(file_rules) / sizeof(file_rules[0]); i++) {
        const struct file_rule *r = &file_rules[i];
        if ((needs & r->need) && str_at(cfg, r->at) &&
            (rc = read_file_rule(cfg, r, err)))
            return rc;
    }
    if (needs & FORGE_NEED_KAFKA)
        register_prop_secrets(cfg);
    return FORGE_OK;
}

void forge_config_drop_secrets(forge_config_t *cfg)
{
    char *read[] = {cfg->kafka_sasl_password, cfg->kafka_ssl_key_password};

    for (size_t i = 0; i < sizeof(read) / sizeof(read[0]); i++) {
        if (read[i] && strlen(read[i]) >= FORGE_SECRET_MIN_LEN)
            forge_secret_remove(read[i]);
        forge_secret_free(read[i]);
    }
    cfg->kafka_sasl_password = cfg->kafka_ssl_key_password = NULL;
    for (size_t i = 0;
         cfg->prop_secrets_registered && i < cfg->kafka_prop_count; i++)
        if (forge_kafka_prop_is_secret(cfg->kafka_props[i].name) &&
            strlen(cfg->kafka_props[i].value) >= FORGE_SECRET_MIN_LEN)
            forge_secret_remove(cfg->kafka_props[i].value);
    cfg->prop_secrets_registered = false;
}

/* ---- the warnings at start -------------------------------------------- */

bool forge_host_is_loopback(const char *host, size_t len)
{
    char name[256];
    struct in_addr v4;
    struct in6_addr v6;

    if (len >= 2 && host[0] == '[' && host[len - 1] == ']')
        host++, len -= 2;
    if (len > 1 && host[len - 1] == '.') /* "localhost." */
        len--;
    if (len == 0 || len >= sizeof(name))
        return false;
    memcpy(name, host, len);
    name[len] = '\0';
    if (!strcasecmp(name, "localhost"))
        return true;
    if (inet_pton(AF_INET, name, &v4) == 1)
        return (ntohl(v4.s_addr) >> 24) == 127;
    if (inet_pton(AF_INET6, name, &v6) == 1)
        return IN6_IS_ADDR_LOOPBACK(&v6) ||
               (IN6_IS_ADDR_V4MAPPED(&v6) && v6.s6_addr[12] == 127);
    return false;
}

/* The host of "host:port", "[v6]:port" or a bare host: where it starts in
 * s (len bytes) and how long it is. */
static size_t host_part(const char *s, size_t len)
{
    const char *colon;

    if (len > 0 && s[0] == '[') {
        const char *close = memchr(s, ']', len);
        return close ? (size_t)(close - s) + 1 : len;
    }
    colon = memchr(s, ':', len);
    return colon ? (size_t)(colon - s) : len;
}

/* Only over https: a plain http:// URL has no certificate to verify (the
 * next rule is about it). */
/* Whether one of the comma-separated URLs of `urls` passes `test`. */
static bool any_url(const char *urls, bool (*test)(const char *u))
{
    for (const char *u = urls; u && *u;) {
        if (test(u))
            return true;
        u += strcspn(u, ",");
        if (*u == ',')
            u++;
    }
    return false;
}

static bool is_https(const char *u)
{
    return !strncasecmp(u, "https://", 8);
}

/* An http:// URL (up to the next ',') to a host that is not loopback. */
static bool http_not_loopback(const char *u)
{
    const char *at;
    size_t len;

    if (strncasecmp(u, "http://", 7))
        return false;
    u += 7;
    len = strcspn(u, "/?#,");
    if ((at = memchr(u, '@', len))) /* user info */
        len -= (size_t)(at + 1 - u), u = at + 1;
    return !forge_host_is_loopback(u, host_part(u, len));
}

static bool slurm_unverified(const forge_config_t *cfg)
{
    return !cfg->slurm_tls_verify && any_url(cfg->slurm_rest_url, is_https);
}

static bool slurm_in_clear(const forge_config_t *cfg)
{
    return any_url(cfg->slurm_rest_url, http_not_loopback);
}

static bool sasl_in_clear(const forge_config_t *cfg)
{
    const char *b = cfg->kafka_brokers;

    if (!b || strcasecmp(protocol_of(cfg), "sasl_plaintext"))
        return false;
    while (*b) {
        size_t len = strcspn(b, ",");
        if (!forge_host_is_loopback(b, host_part(b, len)))
            return true;
        b += len + (b[len] == ',');
    }
    return false;
}

static const struct warning_rule {
    unsigned need;
    bool (*applies)(const forge_config_t *cfg);
    forge_config_warning_t warning;
} warning_rules[] = {
    {FORGE_NEED_SLURM,
     slurm_unverified,
     {"FORGE_SLURM_TLS_VERIFY",
      "slurmrestd's TLS certificate is not verified "
      "(FORGE_SLURM_TLS_VERIFY=0): any server that answers at "
      "FORGE_SLURM_REST_URL is sent the JWT"}},
    {FORGE_NEED_SLURM,
     slurm_in_clear,
     {"FORGE_SLURM_REST_URL",
      "FORGE_SLURM_REST_URL is plain http:// to a host that is not "
      "loopback: the JWT travels in clear"}},
    {FORGE_NEED_KAFKA,
     sasl_in_clear,
     {"FORGE_KAFKA_SECURITY_PROTOCOL",
      "Kafka's security protocol is sasl_plaintext to a broker that is not "
      "loopback: the SASL exchange (with PLAIN, the password itself) and "
      "every record travel in clear"}},
};

_Static_assert(sizeof(warning_rules) / sizeof(warning_rules[0]) <=
                   FORGE_CONFIG_WARNINGS_MAX,
               "FORGE_CONFIG_WARNINGS_MAX holds every warning");

size_t forge_config_warnings(const forge_config_t *cfg, unsigned needs,
                             forge_config_warning_t *out)
{
    size_t n = 0;

    for (size_t i = 0; i < sizeof(warning_rules) / sizeof(warning_rules[0]);
         i++)
        if ((needs & warning_rules[i].need) && warning_rules[i].applies(cfg))
            out[n++] = warning_rules[i].warning;
    return n;
}
