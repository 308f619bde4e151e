/* SPDX-License-Identifier: Apache-2.0 */
/*
 * slurm/usage.c - a job's usage from Slurm's TRES (slurm/usage.h): the TRES
 * lists (slurmdb's JSON array, jobcomp's text), the table of the TRES the
 * worker reads, the arithmetic of hours and totals, the event's object.
 */
#include "slurm/usage.h"
#include "base/util.h"
#include "slurm/client.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* ---- TRES lists ------------------------------------------------------- */

void forge_slurm_tres_list_clear(forge_slurm_tres_list_t *l)
{
    for (size_t i = 0; l && i < l->count; i++) {
        free(l->items[i].type);
        free(l->items[i].name);
    }
    if (l) {
        free(l->items);
        l->items = NULL;
        l->count = 0;
    }
}

void forge_slurm_tres_list_add(forge_slurm_tres_list_t *l, const char *type,
                               const char *name, long long count)
{
    forge_slurm_tres_t *t;

    l->items = forge_xrealloc(l->items, (l->count + 1) * sizeof(*l->items));
    t = &l->items[l->count++];
    t->type = forge_xstrdup(type);
    t->name = name && *name ? forge_xstrdup(name) : NULL;
    t->count = count;
}

void forge_slurm_tres_list_from_json(forge_slurm_tres_list_t *l,
                                     const json_t *array)
{
    size_t i;
    const json_t *o;

    json_array_foreach(array, i, o)
    {
        const char *type = json_string_value(json_object_get(o, "type"));
        const json_t *count = json_object_get(o, "count");

        if (type && *type && json_is_integer(count))
            forge_slurm_tres_list_add(
                l, type, json_string_value(json_object_get(o, "name")),
                json_integer_value(count));
    }
}

/* Slurm's unit suffixes (convert_num_unit, base 1024) → MB. */
static const struct unit {
    char suffix;
    double to_mb;
} units[] = {
    {'K', 1.0 / 1024},
    {'M', 1.0},
    {'G', 1024.0},
    {'T', 1024.0 * 1024},
    {'P', 1024.0 * 1024 * 1024},
};

/* "4000M", "3.50G", "2": the count in MB for mem (and a plain count for
 * the rest, which never carry a suffix). */
static bool read_count(const char *s, size_t n, long long *out)
{
    char buf[64], *end;
    double v;

    if (n == 0 || n >= sizeof(buf))
        return false;
    memcpy(buf, s, n);
    buf[n] = '\0';
    errno = 0;
    v = strtod(buf, &end);
    if (errno || end == buf || v < 0 || !isfinite(v))
        return false;
    if (*end) {
        const struct unit *u = NULL;
        for (size_t i = 0; i < COUNT(units); i++)
            if (units[i].suffix == *end)
                u = &units[i];
        if (!u || end[1])
            return false;
        v *= u->to_mb;
    }
    *out = (long long)llround(v);
    return true;
}

forge_rc_t forge_slurm_tres_parse_text(const char *text,
                                       forge_slurm_tres_list_t *l,
                                       forge_error_t *err)
{
    const char *p = text ? text : "";

    while (*p) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        const char *eq = memchr(p, '=', len);
        const char *slash = eq ? memchr(p, '/', (size_t)(eq - p)) : NULL;
        const char *type_end = slash ? slash : eq;
        long long count;
        char *type, *name;

        if (!eq || type_end == p ||
            !read_count(eq + 1, len - (size_t)(eq + 1 - p), &count))
            return forge_error_set(err, FORGE_EINVALID_JSON, "tres_alloc",
                                   "not a TRES entry: '%.*s'", (int)len, p);
        type = forge_xstrndup(p, (size_t)(type_end - p));
        name =
            slash ? forge_xstrndup(slash + 1, (size_t)(eq - slash - 1)) : NULL;
        forge_slurm_tres_list_add(l, type, name, count);
        free(type);
        free(name);
        p += len;
        if (*p == ',')
            p++;
    }
    return FORGE_OK;
}

/* ---- the TRES the worker reads ---------------------------------------- */

typedef enum match {
    MATCH_EXACT,  /* type and name (NULL: no name) as written */
    MATCH_PREFIX, /* type, and a name starting with `name` */
} match_t;

/* Where a TRES lands in a part; the typed GPUs are summed apart and used
 * only when the plain gres/gpu is absent (usage.h). */
typedef enum slot {
    SLOT_CPUS,
    SLOT_NODES,
    SLOT_MEM_MB,
    SLOT_GPUS,
    SLOT_TYPED_GPUS,
    SLOT__COUNT
} slot_t;

static const struct tres_row {
    const char *type;
    const char *name;
    match_t match;
    slot_t slot;
} tres_rows[] = {
    {"cpu", NULL, MATCH_EXACT, SLOT_CPUS},
    {"node", NULL, MATCH_EXACT, SLOT_NODES},
    {"mem", NULL, MATCH_EXACT, SLOT_MEM_MB},
    {"gres", "gpu", MATCH_EXACT, SLOT_GPUS},
    {"gres", "gpu:", MATCH_PREFIX, SLOT_TYPED_GPUS},
};

static bool row_matches(const struct tres_row *r, const forge_slurm_tres_t *t)
{
    if (strcmp(r->type, t->type) != 0)
        return false;
    if (!r->name)
        return t->name == NULL;
    if (!t->name)
        return false;
    return r->match == MATCH_EXACT
               ? strcmp(r->name, t->name) == 0
               : strncmp(r->name, t->name, strlen(r->name)) == 0;
}

static double hours(long long count, long long elapsed_s)
{
    if (count <= 0 || elapsed_s <= 0)
        return 0.0;
    return (double)count * (double)elapsed_s / 3600.0;
}

forge_slurm_usage_part_t
forge_slurm_usage_part(uint32_t job_id, int het_offset,
                       const forge_slurm_tres_list_t *alloc,
                       long long elapsed_s, long long max_rss_bytes)
{
    long long v[SLOT__COUNT];
    bool seen[SLOT__COUNT] = {false};
    forge_slurm_usage_part_t p;

    memset(v, 0, sizeof(v));
    for (size_t i = 0; alloc && i < alloc->count; i++)
        for (size_t r = 0; r < COUNT(tres_rows); r++)
            if (row_matches(&tres_rows[r], &alloc->items[i])) {
                v[tres_rows[r].slot] += alloc->items[i].count;
                seen[tres_rows[r].slot] = true;
            }
    memset(&p, 0, sizeof(p));
    p.job_id = job_id;
    p.het_offset = het_offset;
    p.elapsed_s = elapsed_s >= 0 ? elapsed_s : -1;
    p.cpus = seen[SLOT_CPUS] ? v[SLOT_CPUS] : -1;
    p.nodes = seen[SLOT_NODES] ? v[SLOT_NODES] : -1;
    p.mem_mb = seen[SLOT_MEM_MB] ? v[SLOT_MEM_MB] : -1;
    /* no GPU TRES at all is no GPU: 0, not unknown */
    p.gpus = seen[SLOT_GPUS] ? v[SLOT_GPUS] : v[SLOT_TYPED_GPUS];
    p.max_rss_bytes = max_rss_bytes >= 0 ? max_rss_bytes : -1;
    p.cpu_hours = hours(p.cpus, p.elapsed_s);
    p.gpu_hours = hours(p.gpus, p.elapsed_s);
    return p;
}

/* a + b where -1 is unknown: unknown only when both are. */
static long long add_known(long long a, long long b)
{
    if (a < 0)
        return b;
    if (b < 0)
        return a;
    return a + b;
}

static long long max_known(long long a, long long b)
{
    return a > b ? a : b; /* -1 loses to any known value */
}

void forge_slurm_usage_add(forge_slurm_usage_t *u,
                           const forge_slurm_usage_part_t *part)
{
    if (u->count == 0) {
        u->elapsed_s = u->cpus = u->gpus = u->nodes = u->max_rss_bytes = -1;
        u->cpu_hours = u->gpu_hours = 0.0;
    }
    u->parts = forge_xrealloc(u->parts, (u->count + 1) * sizeof(*u->parts));
    u->parts[u->count++] = *part;
    u->elapsed_s = max_known(u->elapsed_s, part->elapsed_s);
    u->cpus = add_known(u->cpus, part->cpus);
    u->gpus = add_known(u->gpus, part->gpus);
    u->nodes = add_known(u->nodes, part->nodes);
    u->max_rss_bytes = max_known(u->max_rss_bytes, part->max_rss_bytes);
    u->cpu_hours += part->cpu_hours;
    u->gpu_hours += part->gpu_hours;
}

void forge_slurm_usage_clear(forge_slurm_usage_t *u)
{
    if (!u)
        return;
    free(u->parts);
    memset(u, 0, sizeof(*u));
}

/* ---- a job's components -------------------------------------------------- */

forge_slurm_job_use_t *forge_slurm_job_use_new(void)
{
    forge_slurm_job_use_t *u = forge_xcalloc(1, sizeof(*u));

    u->start_s = u->end_s = u->elapsed_s = u->max_rss_bytes = -1;
    return u;
}

void forge_slurm_job_use_free(forge_slurm_job_use_t *u)
{
    if (!u)
        return;
    forge_slurm_tres_list_clear(&u->tres_alloc);
    free(u);
}

void forge_slurm_usage_of_jobs(const struct forge_slurm_job_list *jobs,
                               forge_slurm_usage_t *out)
{
    memset(out, 0, sizeof(*out));
    for (size_t i = 0; jobs && i < jobs->count; i++) {
        const forge_slurm_job_t *j = &jobs->jobs[i];
        const forge_slurm_job_use_t *u = j->use;
        forge_slurm_usage_part_t p = forge_slurm_usage_part(
            j->job_id, j->het_offset, u ? &u->tres_alloc : NULL,
            u ? u->elapsed_s : -1, u ? u->max_rss_bytes : -1);
        forge_slurm_usage_add(out, &p);
    }
}

/* ---- the event's object ------------------------------------------------ */

static json_t *known(long long v)
{
    return v >= 0 ? json_integer(v) : json_null();
}

static json_t *hours_json(double h)
{
    return json_real(round(h * 1e6) / 1e6);
}

json_t *forge_slurm_usage_json(const forge_slurm_usage_t *u)
{
    json_t *parts = json_array();

    for (size_t i = 0; i < u->count; i++) {
        const forge_slurm_usage_part_t *p = &u->parts[i];
        json_array_append_new(
            parts,
            json_pack("{s:I, s:i, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o}",
                      "job_id", (json_int_t)p->job_id, "het_offset",
                      p->het_offset, "elapsed_s", known(p->elapsed_s), "gpus",
                      known(p->gpus), "cpus", known(p->cpus), "nodes",
                      known(p->nodes), "mem_mb", known(p->mem_mb), "gpu_hours",
                      hours_json(p->gpu_hours), "cpu_hours",
                      hours_json(p->cpu_hours), "max_rss_bytes",
                      known(p->max_rss_bytes)));
    }
    if (u->count == 0)
        return json_pack("{s:n, s:f, s:f, s:n, s:n, s:n, s:n, s:o}",
                         "elapsed_s", "gpu_hours", 0.0, "cpu_hours", 0.0,
                         "gpus", "cpus", "nodes", "max_rss_bytes", "components",
                         parts);
    return json_pack("{s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o}", "elapsed_s",
                     known(u->elapsed_s), "gpu_hours", hours_json(u->gpu_hours),
                     "cpu_hours", hours_json(u->cpu_hours), "gpus",
                     known(u->gpus), "cpus", known(u->cpus), "nodes",
                     known(u->nodes), "max_rss_bytes", known(u->max_rss_bytes),
                     "components", parts);
}
