/* SPDX-License-Identifier: Apache-2.0 */
/*
 * slurm/usage.h - what a launch's Slurm job used (issue 28): elapsed time,
 * GPU-hours and CPU-hours from the allocated TRES, nodes, and the largest
 * RSS a step reported, per het component and in total; the `usage` object
 * a terminal event will carry. Pure, table-driven, no I/O.
 *
 * The inputs are Slurm's own numbers, read by slurm/accounting.h (slurmdbd
 * through slurmrestd's /slurmdb/ endpoints) or slurm/jobcomp.h (the
 * jobcomp/kafka record), so a platform's bill is accounting's:
 *   - allocated TRES as {type, name, count}: slurmdb `tres.allocated[]`,
 *     or jobcomp's `tres_alloc` text ("cpu=2,mem=4000M,node=1,gres/gpu=4",
 *     Slurm's assoc_mgr_make_tres_str_from_array with
 *     TRES_STR_CONVERT_UNITS: mem in MB with a unit suffix, the rest plain
 *     counts), parsed by forge_slurm_tres_parse_text;
 *   - elapsed seconds: slurmdb `time.elapsed`, jobcomp `elapsed`;
 *   - max RSS in bytes: slurmdb `steps[].tres.requested.max[]` of type
 *     `mem` (the steps' tres_usage_in_max; jobacct_gather records rss *
 *     page size, bytes), the largest over the steps.
 * GPUs are the `gres/gpu` TRES; where a site tracks only typed GPUs
 * (`gres/gpu:h200`) their sum, never both (Slurm records the plain one
 * beside the typed ones when both are tracked: summing would count twice).
 */
#ifndef FORGE_SLURM_USAGE_H
#define FORGE_SLURM_USAGE_H

#include "base/error.h"

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

/* One TRES as Slurm lists it: type "cpu", "mem", "node", "gres", ...;
 * name "gpu", "gpu:h200" for gres (NULL: none); count (mem in MB for an
 * allocation, bytes for a step's usage). */
typedef struct forge_slurm_tres {
    char *type;
    char *name;
    long long count;
} forge_slurm_tres_t;

typedef struct forge_slurm_tres_list {
    forge_slurm_tres_t *items;
    size_t count;
} forge_slurm_tres_list_t;

/* Frees what l holds and leaves it empty. */
void forge_slurm_tres_list_clear(forge_slurm_tres_list_t *l);

/* Appends {type, name, count} (strings copied; name NULL or "": none). */
void forge_slurm_tres_list_add(forge_slurm_tres_list_t *l, const char *type,
                               const char *name, long long count);

/* slurmdb's TRES array ([{type, name, id, count}]) appended to l; entries
 * without a type or a count are skipped. */
void forge_slurm_tres_list_from_json(forge_slurm_tres_list_t *l,
                                     const json_t *array);

/* jobcomp's `tres_alloc` text appended to l: comma-separated
 * `type[/name]=count`, mem and bb counts with Slurm's unit suffix (K, M,
 * G, T, P: powers of 1024, read back to MB). FORGE_EINVALID_JSON naming
 * the entry when one is not of that shape (l then holds the entries
 * before it). */
forge_rc_t forge_slurm_tres_parse_text(const char *text,
                                       forge_slurm_tres_list_t *l,
                                       forge_error_t *err) FORGE_WARN_UNUSED;

/* What one component (or a non-het job) used; -1: unknown. */
typedef struct forge_slurm_usage_part {
    uint32_t job_id;
    int het_offset;
    long long elapsed_s;
    long long cpus;
    long long gpus;
    long long nodes;
    long long mem_mb;        /* allocated memory */
    long long max_rss_bytes; /* -1: no step reported it */
    double cpu_hours;        /* cpus x elapsed / 3600; 0 when either unknown */
    double gpu_hours;        /* gpus x elapsed / 3600; 0 when no GPU */
} forge_slurm_usage_part_t;

/* The whole job: parts in het_offset order, totals over them. */
typedef struct forge_slurm_usage {
    forge_slurm_usage_part_t *parts;
    size_t count;
    long long elapsed_s; /* the longest component's, -1 unknown */
    long long cpus, gpus, nodes;
    long long max_rss_bytes; /* the largest, -1 unknown */
    double cpu_hours, gpu_hours;
} forge_slurm_usage_t;

/* What one job (or het component) used, as far as an answer told
 * (forge_slurm_job_t.use, client.h): slurmctld's details give
 * `tres_alloc_str` (the text forge_slurm_tres_parse_text reads) and
 * `start_time` / `end_time`; accounting its `tres.allocated[]`,
 * `time.{start, end, elapsed}` and the steps' largest RSS. */
typedef struct forge_slurm_job_use {
    forge_slurm_tres_list_t tres_alloc;
    long long start_s, end_s; /* UNIX seconds, -1 unknown */
    long long elapsed_s;      /* -1 unknown */
    long long max_rss_bytes;  /* -1: not reported (slurmctld never does) */
} forge_slurm_job_use_t;

/* A new use, every number unknown (-1), no TRES. */
forge_slurm_job_use_t *forge_slurm_job_use_new(void);

/* u and what it holds. NULL-safe. */
void forge_slurm_job_use_free(forge_slurm_job_use_t *u);

/* One component's usage from its allocated TRES, elapsed seconds (-1
 * unknown) and max RSS (-1 unknown). */
forge_slurm_usage_part_t
forge_slurm_usage_part(uint32_t job_id, int het_offset,
                       const forge_slurm_tres_list_t *alloc,
                       long long elapsed_s, long long max_rss_bytes);

/* Appends part to u and adds it to the totals. */
void forge_slurm_usage_add(forge_slurm_usage_t *u,
                           const forge_slurm_usage_part_t *part);

/* A job's usage from its components as an answer gave them (client.h's
 * list: each job's `use`; a job without one counts as unknown), in the
 * list's order (out emptied first). */
struct forge_slurm_job_list;
void forge_slurm_usage_of_jobs(const struct forge_slurm_job_list *jobs,
                               forge_slurm_usage_t *out);

/* Frees what u holds and leaves it empty. */
void forge_slurm_usage_clear(forge_slurm_usage_t *u);

/* The `usage` object of a terminal event (new reference):
 * {elapsed_s, gpu_hours, cpu_hours, gpus, cpus, nodes, max_rss_bytes,
 *  components: [{job_id, het_offset, elapsed_s, gpus, cpus, nodes, mem_mb,
 *  gpu_hours, cpu_hours, max_rss_bytes}]}; unknown numbers are null, hours
 * rounded to 1e-6. */
json_t *forge_slurm_usage_json(const forge_slurm_usage_t *u);

#endif
