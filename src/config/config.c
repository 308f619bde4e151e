/* SPDX-License-Identifier: Apache-2.0 */
/*
 * config.c - the rules that read the FORGE_* variables into one
 * forge_config_t, by the table of config_table.c (a row per variable: its
 * name, where it lands, how it is parsed and its default). Parsing walks the
 * table once; checks that involve
 * two variables (auth source, storage roots) run after it. No globals, no
 * I/O: the same envp always gives the same result, which is what the unit
 * tests rely on.
 */
#include "config/config.h"
#include "config/config_int.h"
#include "base/buf.h"
#include "text/text.h"
#include "base/util.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define KAFKA_PROP_PREFIX FORGE_KAFKA_PROP_PREFIX
#define AT(field)         offsetof(forge_config_t, field)
#define MAX_VALUE_LEN     4096

/* ---- value checks ---------------------------------------------------- */

static bool is_name_char(int c, const char *extra)
{
    return isalnum(c) || (c && strchr(extra, c));
}

static bool is_topic_name(const char *s)
{
    size_t n = strlen(s);

    if (n == 0 || n > 249 || !strcmp(s, ".") || !strcmp(s, ".."))
        return false;
    for (size_t i = 0; i < n; i++)
        if (!is_name_char((unsigned char)s[i], "._-"))
            return false;
    return true;
}

/* Absolute, no "." or ".." component, no "//"; trailing '/' removed. */
static forge_rc_t check_abspath(char *path, const char *var, forge_error_t *err)
{
    size_t n = strlen(path);
    const char *p;

    if (path[0] != '/')
        return forge_error_set(err, FORGE_ECONFIG, var,
                               "%s must be an absolute path", var);
    while (n > 1 && path[n - 1] == '/')
        path[--n] = '\0';
    for (p = path; p && *p; p = strchr(p + 1, '/')) {
        const char *c = p + 1;
        size_t len = strcspn(c, "/");
        if ((len == 0 && c[0] == '/') || (len == 1 && c[0] == '.') ||
            (len == 2 && c[0] == '.' && c[1] == '.'))
            return forge_error_set(err, FORGE_ECONFIG, var,
                                   "%s must be a normalized path without "
                                   "'.', '..' or '//' (got \"%s\")",
                                   var, path);
    }
    return FORGE_OK;
}

/* host:port where host is a name, IPv4, or [IPv6]; port 1..65535 (0 ok
 * when allow_zero, for "pick one"). */
static bool is_hostport(const char *s, size_t len, bool allow_zero)
{
    const char *colon;
    char port[8];
    size_t host_len, port_len;
    char *end;
    long v;

    if (len == 0)
        return false;
    if (s[0] == '[') {
        const char *close = memchr(s, ']', len);
        if (!close || close + 1 >= s + len || close[1] != ':')
            return false;
        colon = close + 1;
    } else {
        colon = NULL;
        for (size_t i = 0; i < len; i++)
            if (s[i] == ':')
                colon = s + i;
    }
    if (!colon)
        return false;
    host_len = (size_t)(colon - s);
    port_len = len - host_len - 1;
    if (host_len == 0 || port_len == 0 || port_len >= sizeof(port))
        return false;
    for (size_t i = 0; i < host_len; i++)
        if (!is_name_char((unsigned char)s[i], ".-_[]:"))
            return false;
    memcpy(port, colon + 1, port_len);
    port[port_len] = '\0';
    errno = 0;
    v = strtol(port, &end, 10);
    return !errno && *end == '\0' && isdigit((unsigned char)port[0]) &&
           v >= (allow_zero ? 0 : 1) && v <= 65535;
}

static bool is_brokers(const char *s)
{
    while (*s) {
        size_t len = strcspn(s, ",");
        if (!is_hostport(s, len, false))
            return false;
        s += len;
        if (*s == ',')
            s++;
        else
            break;
    }
    return true;
}

static forge_rc_t parse_int(const char *v, const var_rule_t *r, int *out,
                            forge_error_t *err)
{
    char *end;
    long n;

    errno = 0;
    n = strtol(v, &end, 10);
    if (errno || end == v || *end != '\0' ||
        !(isdigit((unsigned char)v[0]) || v[0] == '-'))
        return forge_error_set(err, FORGE_ECONFIG, r->name,
                               "%s must be an integer (got \"%s\")", r->name,
                               v);
    if (n < r->min || n > r->max)
        return forge_error_set(err, FORGE_ECONFIG, r->name,
                               "%s must be between %ld and %ld (got %ld)",
                               r->name, r->min, r->max, n);
    *out = (int)n;
    return FORGE_OK;
}

static forge_rc_t parse_bool(const char *v, const var_rule_t *r, bool *out,
                             forge_error_t *err)
{
    static const char *const yes[] = {"1", "true", "yes", "on", NULL};
    static const char *const no[] = {"0", "false", "no", "off", NULL};

    for (size_t i = 0; yes[i]; i++) {
        if (!strcasecmp(v, yes[i]))
            return (*out = true), FORGE_OK;
        if (!strcasecmp(v, no[i]))
            return (*out = false), FORGE_OK;
    }
    return forge_error_set(err, FORGE_ECONFIG, r->name,
                           "%s must be 1 or 0 (true/false, yes/no, on/off; "
                           "got \"%s\")",
                           r->name, v);
}

static forge_rc_t parse_enum(const char *v, const var_rule_t *r, int *out,
                             forge_error_t *err)
{
    char allowed[256] = "";

    for (size_t i = 0; r->names[i]; i++) {
        if (!strcmp(v, r->names[i]))
            return (*out = (int)i), FORGE_OK;
        forge_strlcat(allowed, i ? ", " : "", sizeof(allowed));
        forge_strlcat(allowed, r->names[i], sizeof(allowed));
    }
    return forge_error_set(err, FORGE_ECONFIG, r->name,
                           "%s must be one of %s (got \"%s\")", r->name,
                           allowed, v);
}

/* A VAR_CHOICE: the value in names' spelling, whatever case it came in. */
static forge_rc_t parse_choice(const char *v, const var_rule_t *r, char **out,
                               forge_error_t *err)
{
    int i = -1;
    forge_rc_t rc;

    for (size_t k = 0; r->names[k] && i < 0; k++)
        if (!strcasecmp(v, r->names[k]))
            i = (int)k;
    if (i < 0 && (rc = parse_enum(v, r, &i, err)))
        return rc;
    *out = forge_xstrdup(r->names[i]);
    return FORGE_OK;
}

static forge_rc_t parse_causes(const char *v, const var_rule_t *r,
                               unsigned *out, forge_error_t *err)
{
    const char *bad;
    forge_buf_t allowed = FORGE_BUF_INIT;
    forge_rc_t rc = FORGE_OK;

    if (forge_retry_causes_parse(v, out, &bad))
        return FORGE_OK;
    forge_retry_causes_format(~0u, &allowed);
    rc = forge_error_set(
        err, FORGE_ECONFIG, r->name, "%s: \"%.*s\" is not a cause (causes: %s)",
        r->name, (int)strcspn(bad, ", \t"), bad, forge_buf_str(&allowed));
    forge_buf_clear(&allowed);
    return rc;
}

/* ---- strings and lists ------------------------------------------------ */

static bool is_name(const char *v)
{
    return forge_text_is_name(v, "._@-", 64);
}

static bool is_id(const char *v)
{
    return forge_text_is_name(v, "._-", 64);
}

/* One base URL, or several separated by commas (slurmrestd's endpoints:
 * slurm/endpoints.h), none empty. */
static bool is_base_urls(const char *v)
{
    bool ok = *v != '\0';

    while (ok) {
        size_t n = strcspn(v, ",");
        char *one = forge_xstrndup(v, n);
        ok = forge_text_is_http_url(one, FORGE_URL_BASE);
        free(one);
        if (!v[n])
            break;
        v += n + 1;
    }
    return ok;
}

/* Each URL of a list without its trailing '/'s, in place. */
static void trim_base_urls(char *v)
{
    char *out = v;

    while (*v) {
        size_t n = strcspn(v, ",");
        size_t keep = n;
        while (keep > 0 && v[keep - 1] == '/')
            keep--;
        memmove(out, v, keep);
        out += keep;
        v += n;
        if (*v == ',')
            *out++ = *v++;
    }
    *out = '\0';
}

static bool is_any_hostport(const char *v)
{
    return is_hostport(v, strlen(v), true);
}

/* The string kinds a check decides: "<VAR> <must>", and the value after
 * it when shown. */
static const struct string_rule {
    var_kind_t kind;
    bool (*ok)(const char *v);
    const char *must;
    bool show_value;
} string_rules[] = {
    {VAR_NAME, is_name, "must match ^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$", false},
    {VAR_ID, is_id, "must match ^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$", false},
    {VAR_TOPIC, is_topic_name,
     "is not a valid Kafka topic name ([A-Za-z0-9._-], 1..249 characters)",
     false},
    {VAR_URL, is_base_urls,
     "must be an http:// or https:// URL with a host and no query, or "
     "several separated by commas",
     true},
    {VAR_BROKERS, is_brokers, "must be host:port[,host:port...]", true},
    {VAR_HOSTPORT, is_any_hostport, "must be host:port", true},
};

static forge_rc_t check_string(char *v, const var_rule_t *r, forge_error_t *err)
{
    if (r->kind == VAR_ABSPATH)
        return check_abspath(v, r->name, err);
    for (size_t i = 0; i < sizeof(string_rules) / sizeof(string_rules[0]);
         i++) {
        const struct string_rule *s = &string_rules[i];
        if (s->kind != r->kind)
            continue;
        if (s->ok(v))
            break;
        if (s->show_value)
            return forge_error_set(err, FORGE_ECONFIG, r->name,
                                   "%s %s (got \"%s\")", r->name, s->must, v);
        return forge_error_set(err, FORGE_ECONFIG, r->name, "%s %s", r->name,
                               s->must);
    }
    if (r->kind == VAR_URL) /* a base: no trailing '/' */
        trim_base_urls(v);
    return FORGE_OK;
}

static forge_rc_t parse_pathlist(forge_config_t *cfg, const char *v,
                                 const var_rule_t *r, forge_error_t *err)
{
    while (*v) {
        size_t len = strcspn(v, ":");
        char *path = forge_xstrndup(v, len);
        forge_rc_t rc = check_abspath(path, r->name, err);
        if (rc) {
            free(path);
            return rc;
        }
        cfg->mount_allow = forge_xrealloc(
            cfg->mount_allow, (cfg->mount_allow_count + 2) * sizeof(char *));
        cfg->mount_allow[cfg->mount_allow_count++] = path;
        cfg->mount_allow[cfg->mount_allow_count] = NULL;
        v += len;
        if (*v == ':')
            v++;
    }
    return FORGE_OK;
}

_Static_assert(sizeof(forge_api_version_t) == sizeof(int) &&
                   sizeof(forge_runtime_profile_t) == sizeof(int) &&
                   sizeof(forge_log_level_t) == sizeof(int) &&
                   sizeof(forge_log_format_t) == sizeof(int) &&
                   sizeof(forge_log_live_t) == sizeof(int),
               "enum fields are written through int *");

static forge_rc_t apply_rule(forge_config_t *cfg, const var_rule_t *r,
                             const char *v, forge_error_t *err)
{
    void *slot = (char *)cfg + r->offset;
    char *copy;
    forge_rc_t rc;

    if (strlen(v) > MAX_VALUE_LEN)
        return forge_error_set(err, FORGE_ECONFIG, r->name,
                               "%s is longer than %d bytes", r->name,
                               MAX_VALUE_LEN);
    if (forge_text_has_control(v))
        return forge_error_set(err, FORGE_ECONFIG, r->name,
                               "%s contains control characters", r->name);
    switch (r->kind) {
    case VAR_INT:
        return parse_int(v, r, (int *)slot, err);
    case VAR_BOOL:
        return parse_bool(v, r, (bool *)slot, err);
    case VAR_ENUM:
        return parse_enum(v, r, (int *)slot, err);
    case VAR_CAUSES:
        return parse_causes(v, r, (unsigned *)slot, err);
    case VAR_CHOICE:
        return parse_choice(v, r, (char **)slot, err);
    case VAR_PATHLIST:
        return parse_pathlist(cfg, v, r, err);
    default:
        copy = forge_xstrdup(v);
        if ((rc = check_string(copy, r, err))) {
            free(copy);
            return rc;
        }
        *(char **)slot = copy;
        return FORGE_OK;
    }
}

/* ---- the environment -------------------------------------------------- */

/* Value of name in envp; NULL when absent or empty (empty means unset). */
static const char *env_get(char *const *envp, const char *name)
{
    size_t n = strlen(name);

    for (; envp && *envp; envp++)
        if (!strncmp(*envp, name, n) && (*envp)[n] == '=')
            return (*envp)[n + 1] ? *envp + n + 1 : NULL;
    return NULL;
}

static bool is_known_var(const char *entry)
{
    size_t n = strcspn(entry, "=");

    for (size_t i = 0; i < forge_config_rule_count; i++)
        if (strlen(forge_config_rules[i].name) == n &&
            !strncmp(entry, forge_config_rules[i].name, n))
            return true;
    for (size_t i = 0; forge_config_foreign[i]; i++)
        if (forge_str_starts_with(entry, forge_config_foreign[i]))
            return true;
    return forge_str_starts_with(entry, KAFKA_PROP_PREFIX);
}

static void note_unknown(forge_config_t *cfg, const char *entry)
{
    cfg->unknown_vars = forge_xrealloc(
        cfg->unknown_vars, (cfg->unknown_count + 2) * sizeof(char *));
    cfg->unknown_vars[cfg->unknown_count++] =
        forge_xstrndup(entry, strcspn(entry, "="));
    cfg->unknown_vars[cfg->unknown_count] = NULL;
}

static forge_rc_t add_kafka_prop(forge_config_t *cfg, const char *entry,
                                 forge_error_t *err)
{
    const char *name = entry + strlen(KAFKA_PROP_PREFIX);
    size_t len = strcspn(name, "=");
    char var[160];
    char *prop;
    forge_kafka_prop_t *slot;

    snprintf(var, sizeof(var), "%.*s", (int)(strcspn(entry, "=")), entry);
    if (len == 0 || len > 100 || !name[len] || !name[len + 1])
        return forge_error_set(err, FORGE_ECONFIG, var,
                               "%s needs a property name and a value", var);
    prop = forge_xstrndup(name, len);
    for (char *c = prop; *c; c++) {
        if (!isalnum((unsigned char)*c) && *c != '_') {
            free(prop);
            return forge_error_set(err, FORGE_ECONFIG, var,
                                   "%s: property names are letters, digits "
                                   "and '_' (for '.')",
                                   var);
        }
        *c = *c == '_' ? '.' : (char)tolower((unsigned char)*c);
    }
    for (size_t i = 0; forge_config_owned_props[i]; i++) {
        if (!strcmp(prop, forge_config_owned_props[i])) {
            forge_error_set(err, FORGE_ECONFIG, var,
                            "%s: %s is set by forge-worker itself (partition "
                            "ownership and exactly-once depend on it)",
                            var, prop);
            free(prop);
            return FORGE_ECONFIG;
        }
    }
    if (forge_config_prop_conflict(cfg, prop, var, err)) {
        free(prop);
        return FORGE_ECONFIG;
    }
    cfg->kafka_props = forge_xrealloc(
        cfg->kafka_props, (cfg->kafka_prop_count + 1) * sizeof(*slot));
    slot = &cfg->kafka_props[cfg->kafka_prop_count++];
    slot->name = prop;
    slot->value = forge_xstrdup(name + len + 1);
    return FORGE_OK;
}

static forge_rc_t scan_extras(forge_config_t *cfg, char *const *envp,
                              forge_error_t *err)
{
    forge_rc_t rc;

    for (; envp && *envp; envp++) {
        if (!forge_str_starts_with(*envp, "FORGE_"))
            continue;
        if (forge_str_starts_with(*envp, KAFKA_PROP_PREFIX)) {
            if ((rc = add_kafka_prop(cfg, *envp, err)))
                return rc;
        } else if (!is_known_var(*envp)) {
            note_unknown(cfg, *envp);
        }
    }
    return FORGE_OK;
}

/* With the consumer group protocol (KIP-848) the broker holds the
 * member's session and heartbeat: librdkafka's settings of them are
 * refused, by the variable that set one. */
static forge_rc_t check_group_protocol(const forge_config_t *cfg,
                                       forge_error_t *err)
{
    static const char *const broker_side[][2] = {
        {"session.timeout.ms", "group.consumer.session.timeout.ms"},
        {"heartbeat.interval.ms", "group.consumer.heartbeat.interval.ms"},
    };

    if (cfg->kafka_group_protocol != FORGE_KAFKA_GROUP_CONSUMER)
        return FORGE_OK;
    for (size_t i = 0; i < cfg->kafka_prop_count; i++)
        for (size_t b = 0; b < 2; b++)
            if (!strcmp(cfg->kafka_props[i].name, broker_side[b][0]))
                return forge_error_set(
                    err, FORGE_ECONFIG, "FORGE_KAFKA_GROUP_PROTOCOL",
                    "FORGE_KAFKA_GROUP_PROTOCOL=consumer: %s is the broker's "
                    "(%s), not the worker's: drop "
                    "FORGE_KAFKA_PROP_%s",
                    broker_side[b][0], broker_side[b][1],
                    b ? "heartbeat_interval_ms" : "session_timeout_ms");
    return FORGE_OK;
}

/* The host name, made into a valid worker id ("forge-worker" if none). */
static char *default_worker_id(void)
{
    char host[256] = "";
    size_t n;

    if (gethostname(host, sizeof(host) - 1) != 0 ||
        !isalnum((unsigned char)host[0]))
        return forge_xstrdup("forge-worker");
    n = strnlen(host, 64);
    host[n] = '\0';
    for (size_t i = 0; i < n; i++)
        if (!is_name_char((unsigned char)host[i], "._-"))
            host[i] = '-';
    return forge_xstrdup(host);
}

/* Rules that involve more than one variable, and derived defaults. */
static forge_rc_t finish(forge_config_t *cfg, forge_error_t *err)
{
    if (strcmp(cfg->fleet_kind, "slurm") != 0)
        return forge_error_set(err, FORGE_ECONFIG, "FORGE_DEFAULT_FLEET_KIND",
                               "FORGE_DEFAULT_FLEET_KIND must be \"slurm\" "
                               "for forge-worker (got \"%s\")",
                               cfg->fleet_kind);
    if (cfg->slurm_jwt_file && cfg->slurm_jwt_key_file)
        return forge_error_set(err, FORGE_ECONFIG, "FORGE_SLURM_JWT_KEY_FILE",
                               "set FORGE_SLURM_JWT_FILE or "
                               "FORGE_SLURM_JWT_KEY_FILE, not both");
    if (cfg->slurm_storage_root && !cfg->storage_root)
        return forge_error_set(err, FORGE_ECONFIG, "FORGE_STORAGE_ROOT",
                               "FORGE_SLURM_STORAGE_ROOT is set but "
                               "FORGE_STORAGE_ROOT is not");
    if (cfg->storage_root && !cfg->slurm_storage_root)
        cfg->slurm_storage_root = forge_xstrdup(cfg->storage_root);
    if (cfg->storage_root && !cfg->runtime_root) {
        size_t n = strlen(cfg->storage_root) + sizeof("/runtimes");
        cfg->runtime_root = forge_xmalloc(n);
        snprintf(cfg->runtime_root, n, "%s/runtimes",
                 strcmp(cfg->storage_root, "/") ? cfg->storage_root : "");
    }
    if (!cfg->worker_id)
        cfg->worker_id = default_worker_id();
    if (check_group_protocol(cfg, err))
        return FORGE_ECONFIG;
    return forge_config_check_security(cfg, err);
}

forge_rc_t forge_config_load(char *const *envp, forge_config_t **out,
                             forge_error_t *err)
{
    forge_config_t *cfg = forge_xcalloc(1, sizeof(*cfg));
    forge_rc_t rc = FORGE_OK;

    *out = NULL;
    for (size_t i = 0; i < forge_config_rule_count && !rc; i++) {
        const char *v = env_get(envp, forge_config_rules[i].name);
        if (!v)
            v = forge_config_rules[i].default_value;
        if (v)
            rc = apply_rule(cfg, &forge_config_rules[i], v, err);
    }
    if (!rc)
        rc = scan_extras(cfg, envp, err);
    if (!rc)
        rc = finish(cfg, err);
    if (rc) {
        forge_config_destroy(cfg);
        return rc;
    }
    *out = cfg;
    return FORGE_OK;
}

forge_rc_t forge_config_require(const forge_config_t *cfg, unsigned needs,
                                forge_error_t *err)
{
    static const struct {
        unsigned need;
        size_t offset;
        const char *name;
    } required[] = {
        {FORGE_NEED_SLURM, AT(slurm_rest_url), "FORGE_SLURM_REST_URL"},
        {FORGE_NEED_SLURM, AT(slurm_user), "FORGE_SLURM_REST_USER"},
        {FORGE_NEED_STORAGE, AT(storage_root), "FORGE_STORAGE_ROOT"},
        {FORGE_NEED_KAFKA, AT(kafka_brokers), "FORGE_KAFKA_BROKERS"},
        {FORGE_NEED_SERIES, AT(gpu_series_file), "FORGE_GPU_SERIES_FILE"},
        {FORGE_NEED_STATE_KEY, AT(state_key_file), "FORGE_STATE_KEY_FILE"},
    };

    for (size_t i = 0; i < sizeof(required) / sizeof(required[0]); i++) {
        const char *v =
            *(char *const *)((const char *)cfg + required[i].offset);
        if ((needs & required[i].need) && !v)
            return forge_error_set(err, FORGE_ECONFIG, required[i].name,
                                   "%s is required", required[i].name);
    }
    if ((needs & FORGE_NEED_SLURM) && !cfg->slurm_jwt_file &&
        !cfg->slurm_jwt_key_file)
        return forge_error_set(err, FORGE_ECONFIG, "FORGE_SLURM_JWT_FILE",
                               "FORGE_SLURM_JWT_FILE or "
                               "FORGE_SLURM_JWT_KEY_FILE is required");
    return FORGE_OK;
}

void forge_config_destroy(forge_config_t *cfg)
{
    if (!cfg)
        return;
    forge_config_drop_secrets(cfg);
    for (size_t i = 0; i < forge_config_rule_count; i++) {
        var_kind_t k = forge_config_rules[i].kind;
        if (k != VAR_INT && k != VAR_BOOL && k != VAR_ENUM &&
            k != VAR_PATHLIST && k != VAR_CAUSES)
            free(*(char **)((char *)cfg + forge_config_rules[i].offset));
    }
    forge_strings_free(cfg->mount_allow, cfg->mount_allow_count);
    forge_strings_free(cfg->unknown_vars, cfg->unknown_count);
    for (size_t i = 0; i < cfg->kafka_prop_count; i++) {
        free(cfg->kafka_props[i].name);
        free(cfg->kafka_props[i].value);
    }
    free(cfg->kafka_props);
    free(cfg);
}

static const char *enum_name(const char *const *names, size_t count, int v)
{
    return v >= 0 && (size_t)v < count ? names[v] : NULL;
}

const char *forge_api_version_name(forge_api_version_t v)
{
    return enum_name(forge_config_api_names, FORGE_API__COUNT, (int)v);
}

const char *forge_runtime_profile_name(forge_runtime_profile_t p)
{
    return enum_name(forge_config_profile_names, 2, (int)p);
}

const char *forge_log_level_name(forge_log_level_t l)
{
    return enum_name(forge_config_level_names, 4, (int)l);
}

const char *forge_log_live_name(forge_log_live_t m)
{
    return enum_name(forge_config_live_names, 3, (int)m);
}

/* ---- what the configuration decides ----------------------------------- */

/* Live logs: [FORGE_LOG_LIVE][logs.live + 1], logs.live unset, false, true. */
static const bool live_logs_table[3][3] = {
    [FORGE_LOG_LIVE_OFF] = {false, false, false},
    [FORGE_LOG_LIVE_OPT_IN] = {false, false, true},
    [FORGE_LOG_LIVE_ON] = {true, false, true},
};

bool forge_live_logs_wanted(const forge_config_t *cfg, int live_logs)
{
    int asked = live_logs < FORGE_LIVE_LOGS_FALSE   ? 0
                : live_logs > FORGE_LIVE_LOGS_FALSE ? 2
                                                    : 1;

    if (!cfg || (unsigned)cfg->log_live > FORGE_LOG_LIVE_ON)
        return false;
    return live_logs_table[cfg->log_live][asked];
}

/* ---- the table as the documentation reads it -------------------------- */

/* What a value of each kind must be, for the kinds string_rules does not
 * describe (their `must` is the text). */
static const struct kind_doc {
    var_kind_t kind;
    const char *type;
    const char *allowed;
} kind_docs[] = {
    {VAR_STR, "string", "no control characters"},
    {VAR_NAME, "name", NULL},
    {VAR_ID, "id", NULL},
    {VAR_TOPIC, "topic", NULL},
    {VAR_ABSPATH, "absolute path",
     "an absolute, normalized path without '.', '..' or '//'"},
    {VAR_PATHLIST, "path list", "':'-separated absolute, normalized paths"},
    {VAR_URL, "URL list",
     "an http:// or https:// base URL, or several separated by commas"},
    {VAR_BROKERS, "brokers", NULL},
    {VAR_HOSTPORT, "host:port", NULL},
    {VAR_INT, "integer", NULL},
    {VAR_BOOL, "boolean", "1 or 0 (true/false, yes/no, on/off)"},
    {VAR_ENUM, "enum", NULL},
    {VAR_CHOICE, "enum", NULL},
    {VAR_CAUSES, "cause list",
     "comma-separated causes: node_fail, boot_fail, launch_failed, "
     "preempted, failed (a non-zero exit), out_of_memory, timeout"},
};

bool forge_config_var(size_t i, forge_config_var_t *out)
{
    const var_rule_t *r;

    if (i >= forge_config_rule_count)
        return false;
    r = &forge_config_rules[i];
    *out = (forge_config_var_t){
        .name = r->name,
        .def = r->default_value,
        .def_note = r->def_note,
        .min = r->min,
        .max = r->max,
        .names = r->names,
        .doc = r->doc,
        .since = r->since,
    };
    for (size_t k = 0; k < sizeof(kind_docs) / sizeof(kind_docs[0]); k++)
        if (kind_docs[k].kind == r->kind) {
            out->type = kind_docs[k].type;
            out->allowed = kind_docs[k].allowed;
        }
    for (size_t k = 0; k < sizeof(string_rules) / sizeof(string_rules[0]); k++)
        if (string_rules[k].kind == r->kind)
            out->allowed = string_rules[k].must;
    return true;
}

const char *const *forge_config_owned_kafka_props(void)
{
    return forge_config_owned_props;
}

const char *const *forge_config_foreign_prefixes(void)
{
    return forge_config_foreign;
}
