/* SPDX-License-Identifier: Apache-2.0 */
/*
 * config_int.h - what config.c (the rules that read the variables) and
 * config_table.c (the table of variables itself) share: a row's shape and
 * the table. Private to src/config/config*.c.
 */
#ifndef FORGE_CONFIG_INT_H
#define FORGE_CONFIG_INT_H

#include "config/config.h"

#include <stddef.h>

typedef enum var_kind {
    VAR_STR,      /* free text, no control characters */
    VAR_NAME,     /* Slurm / user name: [A-Za-z0-9._@-], <= 64 */
    VAR_ID,       /* worker / group id: [A-Za-z0-9][A-Za-z0-9._-]{0,63} */
    VAR_TOPIC,    /* Kafka topic name */
    VAR_ABSPATH,  /* absolute path, no "..", normalized */
    VAR_PATHLIST, /* ':'-separated absolute paths */
    VAR_URL,      /* http:// or https:// base URLs, comma-separated */
    VAR_BROKERS,  /* host:port[,host:port...] */
    VAR_HOSTPORT, /* host:port */
    VAR_INT,
    VAR_BOOL,
    VAR_ENUM,
    VAR_CAUSES, /* retry causes, comma-separated (retry.h) into unsigned */
    VAR_CHOICE, /* one of names (any case), kept as text in names' spelling */
} var_kind_t;

/*
 * A row also carries what the documentation says of it: docs/CONFIGURATION.md
 * is printed from this table (forge_config_var(), scripts/config-doc), so a
 * row without doc or since fails the generator, and a row added without the
 * page regenerated fails `scripts/config-doc --check`.
 */
typedef struct var_rule {
    const char *name;
    var_kind_t kind;
    size_t offset;             /* into forge_config_t */
    const char *default_value; /* NULL: unset unless given */
    long min, max;             /* VAR_INT */
    const char *const *names;  /* VAR_ENUM: index = enum value; VAR_CHOICE */
    const char *def_note;      /* a default finish() derives, in words */
    const char *doc;           /* what it changes: one or two sentences */
    const char *since;         /* the commit (and issue) that added it */
} var_rule_t;

/* Every FORGE_* variable, one row each (config_table.c). */
extern const var_rule_t forge_config_rules[];
extern const size_t forge_config_rule_count;

/* librdkafka properties the worker sets itself (NULL-terminated). */
extern const char *const forge_config_owned_props[];
/* Prefixes of FORGE_* variables that are not ours (NULL-terminated). */
extern const char *const forge_config_foreign[];

/* The enum variables' names, index = value (NULL-terminated). */
extern const char *const forge_config_api_names[];
extern const char *const forge_config_profile_names[];
extern const char *const forge_config_level_names[];
extern const char *const forge_config_live_names[];
extern const char *const forge_config_group_protocol_names[];

/* The choices of FORGE_KAFKA_SECURITY_PROTOCOL and _SASL_MECHANISM. */
extern const char *const forge_config_protocol_names[];
extern const char *const forge_config_mechanism_names[];

/* config_security.c: the security variables' rules that involve more than
 * one variable (finish() calls it), and the refusal of a FORGE_KAFKA_PROP_*
 * (variable var) that names a property a first-class variable sets. */
forge_rc_t forge_config_check_security(const forge_config_t *cfg,
                                       forge_error_t *err);
forge_rc_t forge_config_prop_conflict(const forge_config_t *cfg,
                                      const char *prop, const char *var,
                                      forge_error_t *err);

/* What forge_config_read_secrets registered and read, let go of: the
 * passwords unregistered, wiped and freed, the pass-through's secrets
 * unregistered (config_security.c; forge_config_destroy calls it). */
void forge_config_drop_secrets(forge_config_t *cfg);

#endif
