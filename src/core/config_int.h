/* SPDX-License-Identifier: Apache-2.0 */
/*
 * config_int.h - what config.c (the rules that read the variables) and
 * config_table.c (the table of variables itself) share: a row's shape and
 * the table. Private to src/core/config*.c.
 */
#ifndef FORGE_CONFIG_INT_H
#define FORGE_CONFIG_INT_H

#include "core/config.h"

#include <stddef.h>

typedef enum var_kind {
    VAR_STR,      /* free text, no control characters */
    VAR_NAME,     /* Slurm / user name: [A-Za-z0-9._@-], <= 64 */
    VAR_ID,       /* worker / group id: [A-Za-z0-9][A-Za-z0-9._-]{0,63} */
    VAR_TOPIC,    /* Kafka topic name */
    VAR_ABSPATH,  /* absolute path, no "..", normalized */
    VAR_PATHLIST, /* ':'-separated absolute paths */
    VAR_URL,      /* http:// or https:// */
    VAR_BROKERS,  /* host:port[,host:port...] */
    VAR_HOSTPORT, /* host:port */
    VAR_INT,
    VAR_BOOL,
    VAR_ENUM,
    VAR_CAUSES, /* retry causes, comma-separated (retry.h) into unsigned */
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
    const char *const *names;  /* VAR_ENUM: index = enum value */
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

#endif
