/* SPDX-License-Identifier: Apache-2.0 */
/*
 * request.c - parsing and document-level validation of LaunchRequest and
 * CancelRequest (request.h).
 *
 * Each JSON object is described by a table of fields (key, type, where it
 * lands, bounds, the error code of a violation); parse_fields() walks a
 * table. Arrays and maps with rules of their own have small handlers. The
 * rules are the ones of schemas/launch-request.v1.json and
 * schemas/cancel-request.v1.json; tests/schema checks both sides agree on
 * every example.
 */
#include "request/request.h"
#include "core/document.h"
#include "core/text.h"
#include "core/utf8.h"
#include "core/util.h"

#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- JSON paths ------------------------------------------------------- */

typedef struct jpath {
    char buf[FORGE_ERROR_FIELD_MAX];
    size_t len;
} jpath_t;

static size_t jpath_append(jpath_t *p, const char *text)
{
    size_t old = p->len;
    size_t room = sizeof(p->buf) - p->len - 1;
    size_t n = strlen(text);

    n = n < room ? n : room;
    memcpy(p->buf + p->len, text, n);
    p->len += n;
    p->buf[p->len] = '\0';
    return old;
}

static size_t jpath_key(jpath_t *p, const char *key)
{
    size_t old = jpath_append(p, ".");

    jpath_append(p, key);
    return old;
}

static size_t jpath_index(jpath_t *p, size_t i)
{
    char seg[32];

    snprintf(seg, sizeof(seg), "[%zu]", i);
    return jpath_append(p, seg);
}

static void jpath_pop(jpath_t *p, size_t old)
{
    p->len = old;
    p->buf[old] = '\0';
}

/* ---- character rules -------------------------------------------------- */

/* ^[first][rest]{0,max-1}$ over ASCII. */
typedef struct pattern {
    const char *first; /* allowed first characters, "" + flags below */
    const char *rest;
    unsigned classes; /* P_ALNUM etc. for first and rest alike */
    unsigned first_classes;
    size_t max;
    const char *regex; /* for messages */
} pattern_t;

enum { P_LOWER = 1, P_UPPER = 2, P_DIGIT = 4 };
#define P_ALNUM (P_LOWER | P_UPPER | P_DIGIT)

static bool in_class(int c, unsigned classes, const char *extra)
{
    return ((classes & P_LOWER) && c >= 'a' && c <= 'z') ||
           ((classes & P_UPPER) && c >= 'A' && c <= 'Z') ||
           ((classes & P_DIGIT) && c >= '0' && c <= '9') ||
           (c && strchr(extra, c));
}

static bool pattern_match(const pattern_t *pat, const char *s)
{
    size_t n = strlen(s);

    if (n == 0 || n > pat->max ||
        !in_class((unsigned char)s[0], pat->first_classes, pat->first))
        return false;
    for (size_t i = 1; i < n; i++)
        if (!in_class((unsigned char)s[i], pat->classes, pat->rest))
            return false;
    return true;
}

static const pattern_t pat_id64 = {
    "", "._-", P_ALNUM, P_ALNUM, 64, "^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$"};
static const pattern_t pat_name64 = {
    "", "._@-", P_ALNUM, P_ALNUM, 64, "^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$"};
static const pattern_t pat_pool = {
    "", "._-", P_ALNUM, P_ALNUM, 32, "^[A-Za-z0-9][A-Za-z0-9._-]{0,31}$"};
static const pattern_t pat_framework = {
    "", "_-", P_LOWER | P_DIGIT, P_LOWER, 32, "^[a-z][a-z0-9_-]{0,31}$"};
static const pattern_t pat_env = {"_",     "_",
                                  P_ALNUM, P_LOWER | P_UPPER,
                                  128,     "^[A-Za-z_][A-Za-z0-9_]{0,127}$"};
static const pattern_t pat_label = {
    "", "._/-", P_ALNUM, P_ALNUM, 63, "^[A-Za-z0-9][A-Za-z0-9._/-]{0,62}$"};

/* String flags. */
enum {
    S_NO_CONTROL = 1 << 0,  /* no U+0000..U+001F, U+007F */
    S_ABSOLUTE = 1 << 1,    /* starts with '/' */
    S_NO_DOTDOT = 1 << 2,   /* no ".." path component */
    S_MOUNT_CHARS = 1 << 3, /* [A-Za-z0-9._/+@=-] only: no separator or
                               character a mount spec gives a meaning */
    S_HTTP_URL = 1 << 4,    /* ^https?://[^\s]+$ */
};

static bool has_dotdot(const char *s)
{
    for (const char *p = s; (p = strstr(p, "..")); p += 2)
        if ((p == s || p[-1] == '/') && (p[2] == '\0' || p[2] == '/'))
            return true;
    return false;
}

static bool mount_chars_only(const char *s)
{
    for (; *s; s++)
        if (!in_class((unsigned char)*s, P_ALNUM, "._/+@=-"))
            return false;
    return true;
}

/* Why a string breaks its flags, or NULL when it does not. */
static const char *string_flag_problem(const char *s, unsigned flags)
{
    if ((flags & S_NO_CONTROL) && forge_text_has_control(s))
        return "must not contain control characters";
    if ((flags & S_ABSOLUTE) && s[0] != '/')
        return "must be an absolute path";
    if ((flags & S_NO_DOTDOT) && has_dotdot(s))
        return "must not contain a '..' component";
    if ((flags & S_MOUNT_CHARS) && !mount_chars_only(s))
        return "may hold only letters, digits and . _ / + @ = - (Pyxis, "
               "enroot and Apptainer give other characters a meaning)";
    if ((flags & S_HTTP_URL) && !forge_text_is_http_url(s, 0))
        return "must be an http:// or https:// URL without spaces";
    return NULL;
}

/* ---- field tables ----------------------------------------------------- */

typedef forge_rc_t (*custom_fn)(json_t *v, void *target, jpath_t *p,
                                forge_error_t *err);

typedef enum field_type { F_STR, F_INT, F_LONG, F_BOOL, F_CUSTOM } field_type_t;

typedef struct field {
    const char *key;
    field_type_t type;
    size_t offset; /* into the target struct */
    bool required;
    const pattern_t *pattern; /* F_STR: NULL for free text */
    unsigned flags;           /* F_STR: S_* */
    long min, max;            /* F_STR: length in code points; F_INT: value */
    long dflt;                /* F_INT, F_LONG when absent */
    forge_rc_t code;          /* of a violation; 0 means FORGE_ESCHEMA */
    custom_fn custom;
} field_t;

/* Records "<path> <what>" as the error; returns its code (0: schema). */
static forge_rc_t fail(forge_error_t *err, forge_rc_t code, const jpath_t *p,
                       const char *fmt, ...) FORGE_PRINTF(4, 5);

static forge_rc_t fail(forge_error_t *err, forge_rc_t code, const jpath_t *p,
                       const char *fmt, ...)
{
    char what[FORGE_ERROR_MESSAGE_MAX];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    return forge_error_set(err, code ? code : FORGE_ESCHEMA, p->buf, "%s %s",
                           p->buf, what);
}

/* A JSON string without NUL, as a new C string; NULL on a type error. */
static forge_rc_t take_string(json_t *v, const field_t *f, char **out,
                              jpath_t *p, forge_error_t *err)
{
    const char *s = json_string_value(v);
    size_t n = json_string_length(v), count;
    const char *problem;

    if (!json_is_string(v))
        return fail(err, f->code, p, "must be a string");
    if (strlen(s) != n)
        return fail(err, f->code, p, "must not contain NUL");
    count = forge_utf8_count(s, n); /* jansson: valid UTF-8 */
    if (f->pattern && !pattern_match(f->pattern, s))
        return fail(err, f->code, p, "must match %s", f->pattern->regex);
    if (count < (size_t)f->min || (f->max && count > (size_t)f->max)) {
        char bounds[64];
        snprintf(bounds, sizeof(bounds), "%ld..%ld", f->min, f->max);
        return fail(err, f->code, p, "must be %s characters long", bounds);
    }
    if ((problem = string_flag_problem(s, f->flags)))
        return fail(err, f->code, p, "%s", problem);
    *out = forge_xstrndup(s, n);
    return FORGE_OK;
}

/* An integer in [min, max]; 2.0 counts as an integer, as in JSON Schema. */
static forge_rc_t take_integer(json_t *v, const field_t *f, long *out,
                               jpath_t *p, forge_error_t *err)
{
    double d;
    char bounds[64];

    snprintf(bounds, sizeof(bounds), "%ld..%ld", f->min, f->max);
    if (json_is_integer(v)) {
        json_int_t i = json_integer_value(v);
        if (i >= f->min && i <= f->max)
            return (*out = (long)i), FORGE_OK;
    } else if (json_is_real(v)) {
        d = json_real_value(v);
        if (d == floor(d) && d >= (double)f->min && d <= (double)f->max)
            return (*out = (long)d), FORGE_OK;
    }
    return fail(err, f->code, p, "must be an integer in %s", bounds);
}

static forge_rc_t parse_field(json_t *v, const field_t *f, void *target,
                              jpath_t *p, forge_error_t *err)
{
    void *slot = (char *)target + f->offset;
    long n = 0;
    forge_rc_t rc;

    switch (f->type) {
    case F_STR:
        return take_string(v, f, (char **)slot, p, err);
    case F_INT:
    case F_LONG:
        if ((rc = take_integer(v, f, &n, p, err)))
            return rc;
        if (f->type == F_INT)
            *(int *)slot = (int)n;
        else
            *(long *)slot = n;
        return FORGE_OK;
    case F_BOOL:
        if (!json_is_boolean(v))
            return fail(err, f->code, p, "must be true or false");
        *(bool *)slot = json_is_true(v);
        return FORGE_OK;
    case F_CUSTOM:
        return f->custom(v, target, p, err);
    }
    return FORGE_EINVAL;
}

static forge_rc_t parse_fields(json_t *obj, const field_t *fields, size_t n,
                               void *target, jpath_t *p, forge_error_t *err)
{
    forge_rc_t rc = FORGE_OK;

    if (!json_is_object(obj))
        return fail(err, FORGE_ESCHEMA, p, "must be an object");
    for (size_t i = 0; i < n && !rc; i++) {
        const field_t *f = &fields[i];
        json_t *v = json_object_get(obj, f->key);
        size_t old = jpath_key(p, f->key);
        if (v)
            rc = parse_field(v, f, target, p, err);
        else if (f->required)
            rc = fail(err, FORGE_ESCHEMA, p, "is required");
        else if (f->type == F_INT)
            *(int *)((char *)target + f->offset) = (int)f->dflt;
        jpath_pop(p, old);
    }
    return rc;
}

#define COUNT(a)  (sizeof(a) / sizeof((a)[0]))
#define AT(field) offsetof(forge_launch_t, field)

/* ---- launch: nested objects ------------------------------------------- */

static forge_rc_t image_path(json_t *v, void *target, jpath_t *p,
                             forge_error_t *err)
{
    static const field_t f = {"path", F_STR, AT(image_path),
                              true,   NULL,  S_NO_CONTROL | S_NO_DOTDOT,
                              1,      4096,  0,
                              0,      NULL};
    const char *s = json_string_value(v);

    if (s && strpbrk(s, ":@"))
        return fail(err, FORGE_EOCI_IMAGE_REFUSED, p,
                    "looks like a registry reference (':' or '@'); images "
                    "must be sqsh/sif files under the runtime root");
    return take_string(v, &f, &((forge_launch_t *)target)->image_path, p, err);
}

static forge_rc_t image_format(json_t *v, void *target, jpath_t *p,
                               forge_error_t *err)
{
    static const char *const names[] = {"sqsh", "sif"};
    const char *s = json_string_value(v);

    for (size_t i = 0; s && i < COUNT(names); i++) {
        if (!strcmp(s, names[i])) {
            ((forge_launch_t *)target)->image_format = (forge_image_format_t)i;
            return FORGE_OK;
        }
    }
    return fail(err, FORGE_ESCHEMA, p, "must be \"sqsh\" or \"sif\"");
}

static const field_t image_fields[] = {
    {"path", F_CUSTOM, 0, true, NULL, 0, 0, 0, 0, 0, image_path},
    {"format", F_CUSTOM, 0, true, NULL, 0, 0, 0, 0, 0, image_format},
};

static forge_rc_t image_object(json_t *v, void *target, jpath_t *p,
                               forge_error_t *err)
{
    return parse_fields(v, image_fields, COUNT(image_fields), target, p, err);
}

static const field_t framework_fields[] = {
    {"kind", F_STR, AT(framework_kind), true, &pat_framework, 0, 1, 32, 0, 0,
     NULL},
    {"runtime_id", F_STR, AT(framework_runtime_id), false, &pat_id64, 0, 1, 64,
     0, 0, NULL},
};

static forge_rc_t framework_object(json_t *v, void *target, jpath_t *p,
                                   forge_error_t *err)
{
    return parse_fields(v, framework_fields, COUNT(framework_fields), target, p,
                        err);
}

static const field_t ingest_fields[] = {
    {"endpoint", F_STR, AT(ingest_endpoint), true, NULL,
     S_NO_CONTROL | S_HTTP_URL, 1, 2048, 0, 0, NULL},
    {"token", F_STR, AT(ingest_token), true, NULL, S_NO_CONTROL, 1, 8192, 0, 0,
     NULL},
};

static forge_rc_t ingest_object(json_t *v, void *target, jpath_t *p,
                                forge_error_t *err)
{
    return parse_fields(v, ingest_fields, COUNT(ingest_fields), target, p, err);
}

/* ---- launch: arrays and maps ------------------------------------------ */

static forge_rc_t check_array(json_t *v, size_t min, size_t max, jpath_t *p,
                              forge_rc_t code, forge_error_t *err)
{
    char bounds[64];

    snprintf(bounds, sizeof(bounds), "%zu..%zu", min, max);
    if (!json_is_array(v))
        return fail(err, code, p, "must be an array");
    if (json_array_size(v) < min || json_array_size(v) > max)
        return fail(err, code, p, "must have %s elements", bounds);
    return FORGE_OK;
}

static forge_rc_t command_array(json_t *v, void *target, jpath_t *p,
                                forge_error_t *err)
{
    static const field_t arg = {
        "", F_STR, 0, true, NULL, 0, 0, FORGE_ARG_MAX_CHARS, 0, 0, NULL};
    forge_launch_t *l = target;
    forge_rc_t rc;
    size_t n;

    if ((rc = check_array(v, 1, 4096, p, FORGE_ESCHEMA, err)))
        return rc;
    n = json_array_size(v);
    l->command = forge_xcalloc(n + 1, sizeof(char *));
    for (size_t i = 0; i < n; i++) {
        size_t old = jpath_index(p, i);
        rc = take_string(json_array_get(v, i), &arg, &l->command[i], p, err);
        if (!rc && !strcmp(l->command[i], ":"))
            rc = fail(err, FORGE_ESCHEMA, p,
                      "must not be a lone ':' (srun splits its command "
                      "line there)");
        if (!rc && i == 0 &&
            (l->command[0][0] == '\0' || l->command[0][0] == '-' ||
             strchr(l->command[0], '=')))
            rc = fail(err, FORGE_ESCHEMA, p,
                      "(the program) must be non-empty, must not start "
                      "with '-' and must not contain '='");
        jpath_pop(p, old);
        if (rc)
            return rc;
        l->command_count = i + 1;
    }
    return FORGE_OK;
}

/* A JSON object of string values into a forge_kv_t array; names checked
 * against name_pattern (a bad name is `code`), values against value_field. */
static forge_rc_t string_map(json_t *v, forge_kv_t **out, size_t *count,
                             size_t max, const pattern_t *name_pattern,
                             const field_t *value_field, forge_rc_t code,
                             jpath_t *p, forge_error_t *err)
{
    const char *key;
    json_t *value;
    forge_rc_t rc = FORGE_OK;

    if (!json_is_object(v))
        return fail(err, FORGE_ESCHEMA, p, "must be an object");
    if (json_object_size(v) > max)
        return fail(err, FORGE_ESCHEMA, p, "has too many entries");
    *out = forge_xcalloc(json_object_size(v) + 1, sizeof(**out));
    json_object_foreach(v, key, value)
    {
        size_t old = jpath_key(p, key);
        forge_kv_t *kv = &(*out)[*count];
        if (!pattern_match(name_pattern, key))
            rc = fail(err, code, p, "the name must match %s",
                      name_pattern->regex);
        else
            rc = take_string(value, value_field, &kv->value, p, err);
        if (!rc) {
            kv->key = forge_xstrdup(key);
            (*count)++;
        }
        jpath_pop(p, old);
        if (rc)
            return rc;
    }
    return FORGE_OK;
}

/*
 * Names a request may not set: Slurm's and the worker's own, and those the
 * container runtimes take for themselves (apptainer drops HOME and its own
 * APPTAINER_/SINGULARITY_ names, and reads APPEND_PATH/PREPEND_PATH as edits
 * of PATH): a value must reach the job as written or be refused.
 */
static const char *const reserved_env_prefixes[] = {
    "SLURM_", "FORGE_", "APPTAINER", "SINGULARITY", NULL};
static const char *const reserved_env_names[] = {"HOME", "APPEND_PATH",
                                                 "PREPEND_PATH", NULL};

static bool env_name_reserved(const char *name)
{
    for (size_t i = 0; reserved_env_prefixes[i]; i++)
        if (forge_str_starts_with(name, reserved_env_prefixes[i]))
            return true;
    for (size_t i = 0; reserved_env_names[i]; i++)
        if (!strcmp(name, reserved_env_names[i]))
            return true;
    return false;
}

/* env and secret_env alike: names by pat_env and not reserved, values any
 * string without NUL up to FORGE_ARG_MAX_CHARS. */
static forge_rc_t env_like_map(json_t *v, forge_kv_t **out, size_t *count,
                               jpath_t *p, forge_error_t *err)
{
    static const field_t value = {
        "", F_STR, 0, true, NULL, 0, 0, FORGE_ARG_MAX_CHARS, 0, 0, NULL};
    forge_rc_t rc = string_map(v, out, count, 1024, &pat_env, &value,
                               FORGE_EENV_REFUSED, p, err);

    for (size_t i = 0; !rc && i < *count; i++) {
        const char *name = (*out)[i].key;
        if (env_name_reserved(name)) {
            size_t old = jpath_key(p, name);
            rc = fail(err, FORGE_EENV_REFUSED, p,
                      "is reserved: names starting SLURM_, FORGE_, "
                      "APPTAINER*, SINGULARITY*, and HOME, APPEND_PATH, "
                      "PREPEND_PATH belong to Slurm, the worker or the "
                      "container runtime");
            jpath_pop(p, old);
        }
    }
    return rc;
}

static forge_rc_t env_map(json_t *v, void *target, jpath_t *p,
                          forge_error_t *err)
{
    forge_launch_t *l = target;

    return env_like_map(v, &l->env, &l->env_count, p, err);
}

/* Secret values: like env's, and never rendered, logged or published (an
 * error names the field, never the value). */
static forge_rc_t secret_env_map(json_t *v, void *target, jpath_t *p,
                                 forge_error_t *err)
{
    forge_launch_t *l = target;

    return env_like_map(v, &l->secret_env, &l->secret_env_count, p, err);
}

static forge_rc_t roles_map(json_t *v, void *target, jpath_t *p,
                            forge_error_t *err)
{
    static const field_t value = {"", F_STR, 0, true, &pat_pool, 0,
                                  1,  32,    0, 0,    NULL};
    forge_launch_t *l = target;

    return string_map(v, &l->roles, &l->role_count, 64, &pat_pool, &value,
                      FORGE_ESCHEMA, p, err);
}

static forge_rc_t labels_map(json_t *v, void *target, jpath_t *p,
                             forge_error_t *err)
{
    static const field_t value = {"", F_STR, 0, true, NULL, 0,
                                  0,  256,   0, 0,    NULL};
    forge_launch_t *l = target;

    return string_map(v, &l->labels, &l->label_count, 64, &pat_label, &value,
                      FORGE_ESCHEMA, p, err);
}

#define MOUNT_STR (S_NO_CONTROL | S_NO_DOTDOT | S_MOUNT_CHARS)
#define MT(field) offsetof(forge_mount_t, field)
static const field_t mount_fields[] = {
    {"source", F_STR, MT(source), true, NULL, MOUNT_STR, 1, 4096, 0,
     FORGE_EMOUNT_REFUSED, NULL},
    {"target", F_STR, MT(target), true, NULL, MOUNT_STR | S_ABSOLUTE, 1, 4096,
     0, FORGE_EMOUNT_REFUSED, NULL},
    {"read_only", F_BOOL, MT(read_only), false, NULL, 0, 0, 0, 0, 0, NULL},
};

#define PL(field) offsetof(forge_pool_t, field)
static const field_t pool_fields[] = {
    {"name", F_STR, PL(name), true, &pat_pool, 0, 1, 32, 0, 0, NULL},
    {"series", F_STR, PL(series), true, &pat_id64, 0, 1, 64, 0, 0, NULL},
    {"nodes", F_INT, PL(nodes), true, NULL, 0, 1, 4096, 0, 0, NULL},
    {"gpus_per_node", F_INT, PL(gpus_per_node), false, NULL, 0, 0, 64, 0, 0,
     NULL},
    {"tasks_per_node", F_INT, PL(tasks_per_node), false, NULL, 0, 1, 1024, 1, 0,
     NULL},
    {"cpus_per_task", F_INT, PL(cpus_per_task), false, NULL, 0, 1, 1024, 0, 0,
     NULL},
    {"mem_per_node_mb", F_LONG, PL(mem_per_node_mb), false, NULL, 0, 1,
     16777216, 0, 0, NULL},
};

/* Parses an array of objects of `size` bytes each with `fields`. */
static forge_rc_t object_array(json_t *v, size_t min, size_t max,
                               const field_t *fields, size_t nfields,
                               size_t size, void **out, size_t *count,
                               jpath_t *p, forge_error_t *err)
{
    forge_rc_t rc = check_array(v, min, max, p, FORGE_ESCHEMA, err);

    if (rc)
        return rc;
    *out = forge_xcalloc(json_array_size(v) + 1, size);
    for (size_t i = 0; i < json_array_size(v); i++) {
        size_t old = jpath_index(p, i);
        rc = parse_fields(json_array_get(v, i), fields, nfields,
                          (char *)*out + i * size, p, err);
        jpath_pop(p, old);
        *count = i + 1; /* the partial element is freed too */
        if (rc)
            return rc;
    }
    return FORGE_OK;
}

static forge_rc_t mounts_array(json_t *v, void *target, jpath_t *p,
                               forge_error_t *err)
{
    forge_launch_t *l = target;

    return object_array(v, 0, 64, mount_fields, COUNT(mount_fields),
                        sizeof(forge_mount_t), (void **)&l->mounts,
                        &l->mount_count, p, err);
}

static forge_rc_t pools_array(json_t *v, void *target, jpath_t *p,
                              forge_error_t *err)
{
    forge_launch_t *l = target;
    forge_rc_t rc = object_array(v, 1, FORGE_POOLS_MAX, pool_fields,
                                 COUNT(pool_fields), sizeof(forge_pool_t),
                                 (void **)&l->pools, &l->pool_count, p, err);

    for (size_t i = 0; !rc && i < l->pool_count; i++) {
        for (size_t j = 0; j < i; j++) {
            if (!strcmp(l->pools[i].name, l->pools[j].name)) {
                size_t old = jpath_index(p, i);
                jpath_key(p, "name");
                rc = fail(err, FORGE_ESCHEMA, p, "pool names must be unique%s",
                          "");
                jpath_pop(p, old);
                break;
            }
        }
    }
    return rc;
}

/* ---- the two requests ------------------------------------------------- */

static const field_t launch_fields[] = {
    {"launch_id", F_STR, AT(launch_id), true, &pat_id64, 0, 1, 64, 0, 0, NULL},
    {"attempt", F_INT, AT(attempt), false, NULL, 0, 1, 1000000, 1, 0, NULL},
    {"project", F_STR, AT(project), false, &pat_name64, 0, 1, 64, 0, 0, NULL},
    {"owner", F_STR, AT(owner), false, &pat_name64, 0, 1, 64, 0, 0, NULL},
    {"name", F_STR, AT(name), false, &pat_name64, 0, 1, 64, 0, 0, NULL},
    {"framework", F_CUSTOM, 0, false, NULL, 0, 0, 0, 0, 0, framework_object},
    {"image", F_CUSTOM, 0, true, NULL, 0, 0, 0, 0, 0, image_object},
    {"command", F_CUSTOM, 0, true, NULL, 0, 0, 0, 0, 0, command_array},
    {"workdir", F_STR, AT(workdir), false, NULL, S_NO_CONTROL | S_ABSOLUTE, 1,
     4096, 0, 0, NULL},
    {"env", F_CUSTOM, 0, false, NULL, 0, 0, 0, 0, 0, env_map},
    {"secret_env", F_CUSTOM, 0, false, NULL, 0, 0, 0, 0, 0, secret_env_map},
    {"tenant", F_STR, AT(tenant), false, &pat_id64, 0, 1, 64, 0, 0, NULL},
    {"mounts", F_CUSTOM, 0, false, NULL, 0, 0, 0, 0, 0, mounts_array},
    {"pools", F_CUSTOM, 0, true, NULL, 0, 0, 0, 0, 0, pools_array},
    {"roles", F_CUSTOM, 0, false, NULL, 0, 0, 0, 0, 0, roles_map},
    {"time_limit_minutes", F_INT, AT(time_limit_minutes), false, NULL, 0, 1,
     525600, 0, 0, NULL},
    {"partition", F_STR, AT(partition), false, &pat_name64, 0, 1, 64, 0, 0,
     NULL},
    {"account", F_STR, AT(account), false, &pat_name64, 0, 1, 64, 0, 0, NULL},
    {"qos", F_STR, AT(qos), false, &pat_name64, 0, 1, 64, 0, 0, NULL},
    {"ingest", F_CUSTOM, 0, false, NULL, 0, 0, 0, 0, 0, ingest_object},
    {"labels", F_CUSTOM, 0, false, NULL, 0, 0, 0, 0, 0, labels_map},
};

#define CA(field) offsetof(forge_cancel_t, field)
static const field_t cancel_fields[] = {
    {"launch_id", F_STR, CA(launch_id), true, &pat_id64, 0, 1, 64, 0, 0, NULL},
    {"attempt", F_INT, CA(attempt), false, NULL, 0, 1, 1000000, 0, 0, NULL},
    {"reason", F_STR, CA(reason), false, NULL, S_NO_CONTROL, 0, 256, 0, 0,
     NULL},
};

/* A name set in both env and secret_env: which value would win is not
 * the request's to leave open. */
static forge_rc_t env_names_unique(const forge_launch_t *l, jpath_t *p,
                                   forge_error_t *err)
{
    for (size_t i = 0; i < l->secret_env_count; i++) {
        for (size_t j = 0; j < l->env_count; j++) {
            if (strcmp(l->secret_env[i].key, l->env[j].key) != 0)
                continue;
            size_t old = jpath_key(p, "secret_env");
            jpath_key(p, l->secret_env[i].key);
            forge_rc_t rc = fail(err, FORGE_EENV_REFUSED, p,
                                 "is also in env: a name goes in env or in "
                                 "secret_env, not both");
            jpath_pop(p, old);
            return rc;
        }
    }
    return FORGE_OK;
}

/* Checks that run across fields once every field parsed. */
static forge_rc_t launch_cross_checks(const forge_launch_t *l, jpath_t *p,
                                      forge_error_t *err)
{
    for (size_t i = 0; i < l->role_count; i++) {
        if (!forge_launch_role_pool(l, l->roles[i].key)) {
            size_t old = jpath_key(p, "roles");
            jpath_key(p, l->roles[i].key);
            forge_rc_t rc = fail(err, FORGE_ESCHEMA, p,
                                 "names a pool the request does not have");
            jpath_pop(p, old);
            return rc;
        }
    }
    return env_names_unique(l, p, err);
}

static forge_rc_t parse_body(forge_request_t *req, json_t *body, jpath_t *p,
                             forge_error_t *err)
{
    forge_rc_t rc;

    if (req->kind == FORGE_REQUEST_CANCEL)
        return parse_fields(body, cancel_fields, COUNT(cancel_fields),
                            &req->cancel, p, err);
    rc = parse_fields(body, launch_fields, COUNT(launch_fields), &req->launch,
                      p, err);
    return rc ? rc : launch_cross_checks(&req->launch, p, err);
}

/* ---- envelopes -------------------------------------------------------- */

static const struct {
    const char *type; /* CloudEvent type */
    const char *kind; /* bare "kind" */
    forge_request_kind_t request_kind;
} request_kinds[] = {
    {"forge.launch.requested", "launch", FORGE_REQUEST_LAUNCH},
    {"forge.launch.cancel_requested", "cancel", FORGE_REQUEST_CANCEL},
};

/* Finds the request's kind and body (borrowed from root). */
static forge_rc_t unwrap(forge_request_t *req, json_t *root, json_t **body,
                         jpath_t *p, forge_error_t *err)
{
    json_t *spec = json_object_get(root, "specversion");
    const char *kind = json_string_value(json_object_get(root, "kind"));
    const char *type = json_string_value(json_object_get(root, "type"));
    size_t i;

    req->cloudevent = spec != NULL;
    for (i = 0; i < COUNT(request_kinds); i++)
        if (spec ? type && !strcmp(type, request_kinds[i].type)
                 : kind && !strcmp(kind, request_kinds[i].kind))
            break;
    if (!spec && i == COUNT(request_kinds)) {
        jpath_key(p, "kind");
        return fail(err, FORGE_ESCHEMA, p,
                    "must be \"launch\" or \"cancel\" (or send a "
                    "CloudEvent)");
    }
    if (spec && !json_is_string(spec)) {
        jpath_key(p, "specversion");
        return fail(err, FORGE_ESCHEMA, p, "must be \"1.0\"");
    }
    if (spec && strcmp(json_string_value(spec), "1.0") != 0) {
        jpath_key(p, "specversion");
        return fail(err, FORGE_ESCHEMA, p, "must be \"1.0\"");
    }
    if (spec && i == COUNT(request_kinds)) {
        jpath_key(p, "type");
        return fail(err, FORGE_ESCHEMA, p,
                    "must be forge.launch.requested or "
                    "forge.launch.cancel_requested");
    }
    req->kind = request_kinds[i].request_kind;
    *body = root;
    for (size_t k = 0; spec && k < 2; k++) {
        static const char *const required[] = {"id", "source"};
        const char *v = json_string_value(json_object_get(root, required[k]));
        if (!v || !*v) {
            jpath_key(p, required[k]);
            return fail(err, FORGE_ESCHEMA, p,
                        "is required in a CloudEvent (non-empty string)");
        }
    }
    if (spec) {
        req->event_id =
            forge_xstrdup(json_string_value(json_object_get(root, "id")));
        *body = json_object_get(root, "data");
        jpath_key(p, "data");
        kind = json_string_value(json_object_get(*body, "kind"));
        if (kind && strcmp(kind, request_kinds[i].kind) != 0) {
            jpath_key(p, "kind");
            return fail(err, FORGE_ESCHEMA, p,
                        "disagrees with the CloudEvent type");
        }
    }
    return FORGE_OK;
}

static json_t *load_json(const char *buf, size_t len, forge_error_t *err)
{
    json_t *root;

    if (len > FORGE_REQUEST_MAX_BYTES) {
        forge_error_set(err, FORGE_ETOO_LARGE, "$",
                        "the request is %zu bytes; the limit is %d", len,
                        FORGE_REQUEST_MAX_BYTES);
        return NULL;
    }
    if (forge_document_parse(buf, len, JSON_ALLOW_NUL, &root, err))
        return NULL;
    if (!json_is_object(root)) {
        forge_error_set(err, FORGE_ESCHEMA, "$",
                        "a request must be a JSON object");
        json_decref(root);
        return NULL;
    }
    return root;
}

forge_rc_t forge_request_parse(const char *buf, size_t len,
                               forge_request_t **out, forge_error_t *err)
{
    forge_request_t *req = NULL;
    jpath_t path = {"$", 1};
    json_t *root, *body = NULL;
    forge_rc_t rc = FORGE_ESCHEMA;

    *out = NULL;
    if (!(root = load_json(buf, len, err)))
        return err && err->code ? err->code : FORGE_EINVALID_JSON;
    req = forge_xcalloc(1, sizeof(*req));
    if ((rc = unwrap(req, root, &body, &path, err)))
        goto out;
    if ((rc = parse_body(req, body, &path, err)))
        goto out;
    *out = req;
    req = NULL;
out:
    forge_request_destroy(req);
    json_decref(root);
    return rc;
}

char *forge_request_salvage_id(const char *buf, size_t len, int *attempt)
{
    json_t *root = load_json(buf, len, NULL), *body, *a;
    const char *id;
    char *found = NULL;

    *attempt = 1;
    if (!root)
        return NULL;
    body = json_object_get(root, "specversion") ? json_object_get(root, "data")
                                                : root;
    id = json_string_value(json_object_get(body, "launch_id"));
    if (id && pattern_match(&pat_id64, id)) {
        found = forge_xstrdup(id);
        a = json_object_get(body, "attempt");
        if (json_is_integer(a) && json_integer_value(a) >= 1 &&
            json_integer_value(a) <= 1000000)
            *attempt = (int)json_integer_value(a);
    }
    json_decref(root);
    return found;
}

/* ---- accessors and cleanup -------------------------------------------- */

const forge_pool_t *forge_launch_role_pool(const forge_launch_t *launch,
                                           const char *role)
{
    for (size_t i = 0; i < launch->role_count; i++) {
        if (strcmp(launch->roles[i].key, role) != 0)
            continue;
        for (size_t j = 0; j < launch->pool_count; j++)
            if (!strcmp(launch->pools[j].name, launch->roles[i].value))
                return &launch->pools[j];
    }
    return NULL;
}

const char *forge_image_format_name(forge_image_format_t f)
{
    return f == FORGE_IMAGE_SIF ? "sif" : "sqsh";
}

static void free_kvs(forge_kv_t *kv, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(kv[i].key);
        free(kv[i].value);
    }
    free(kv);
}

static void launch_clear(forge_launch_t *l)
{
    char **owned[] = {&l->launch_id,
                      &l->project,
                      &l->owner,
                      &l->name,
                      &l->framework_kind,
                      &l->framework_runtime_id,
                      &l->image_path,
                      &l->workdir,
                      &l->partition,
                      &l->account,
                      &l->qos,
                      &l->ingest_endpoint,
                      &l->ingest_token,
                      &l->tenant};

    for (size_t i = 0; i < COUNT(owned); i++)
        free(*owned[i]);
    for (size_t i = 0; l->command && l->command[i]; i++)
        free(l->command[i]);
    free(l->command);
    free_kvs(l->env, l->env_count);
    free_kvs(l->secret_env, l->secret_env_count);
    free_kvs(l->roles, l->role_count);
    free_kvs(l->labels, l->label_count);
    for (size_t i = 0; i < l->mount_count; i++) {
        free(l->mounts[i].source);
        free(l->mounts[i].target);
    }
    free(l->mounts);
    for (size_t i = 0; i < l->pool_count; i++) {
        free(l->pools[i].name);
        free(l->pools[i].series);
    }
    free(l->pools);
}

void forge_request_each_secret(const forge_request_t *req,
                               void (*fn)(void *ctx, const char *secret),
                               void *ctx)
{
    const forge_launch_t *l;

    if (!req || req->kind != FORGE_REQUEST_LAUNCH)
        return;
    l = &req->launch;
    if (l->ingest_token)
        fn(ctx, l->ingest_token);
    for (size_t i = 0; l->secret_env && i < l->secret_env_count; i++)
        if (l->secret_env[i].value)
            fn(ctx, l->secret_env[i].value);
}

void forge_request_destroy(forge_request_t *req)
{
    if (!req)
        return;
    launch_clear(&req->launch);
    free(req->cancel.launch_id);
    free(req->cancel.reason);
    free(req->event_id);
    free(req);
}
