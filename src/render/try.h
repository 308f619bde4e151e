/* SPDX-License-Identifier: Apache-2.0 */
/*
 * try.h - what a try of a launch changes in what is rendered (issue 26:
 * a retry is a new Slurm job of the same attempt, retry/retry.h): its
 * comment tag, the line that marks its output in the logs it appends to,
 * the nodes it may not use, and whether Slurm may requeue it.
 *
 * Tags: the first try's is `forge:<launch_id>:<attempt>`, the tag every
 * job had before retries, so nothing made before changes; try N >= 2 is tagged
 * `forge:<launch_id>:<attempt>: <N>`. A launch_id holds no ':', so a tag reads
 * back one way, and a clean or a sweep of one try (an exact tag) never finds
 * another try's jobs.
 *
 * The first try's body is what render.h makes; a later try's is that body
 * with forge_try_apply's changes (the loop's Slurm thread makes them when
 * it prepares the try: loop/submit.c). Pure: no I/O.
 */
#ifndef FORGE_TRY_H
#define FORGE_TRY_H

#include "base/buf.h"
#include "config/config.h"
#include "request/request.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* Every tag begins with it: how the worker finds its jobs again. */
#define FORGE_JOB_TAG_PREFIX "forge:"

/* The comment tag of try try_num (1-based; < 1 is the first) of
 * (launch_id, attempt) (new). */
char *forge_try_tag(const char *launch_id, int attempt, int try_num);

/* A tag read back: the launch_id (borrowed from the comment, id_len
 * bytes), the attempt and the try (1 for a tag without one). */
typedef struct forge_try_tag_parts {
    const char *id;
    size_t id_len;
    int attempt;
    int try_num;
} forge_try_tag_parts_t;

/* Whether comment is a tag forge_try_tag makes (prefix, a non-empty id
 * without ':', an attempt >= 1, and for a later try a try >= 2), and its
 * parts. */
bool forge_try_tag_parse(const char *comment, forge_try_tag_parts_t *out);

/* Whether l's jobs go to Slurm with its requeue off (`"requeue": false`):
 * the request itself asks for failed nodes to be excluded
 * (retry.exclude_failed_nodes true) and node_fail is among its causes
 * (its own or the fleet's). A node failure then ends the try NODE_FAIL,
 * and the worker's retry excludes the node, where Slurm would requeue the
 * job as it is. The fleet's defaults alone never turn Slurm's requeue
 * off. */
bool forge_try_requeue_off(const forge_launch_t *l, const forge_config_t *cfg);

/* The batch script's lines, after the restart's (render.c), that start a
 * later try's output and error logs with `== forge: try <N> ==`: its
 * first run only (a requeue within the try marks a restart). The try is
 * FORGE_TRY in the job's environment (forge_try_apply), 1 when unset. */
void forge_try_put_marker(forge_buf_t *s);

/* A first try's submit body (render.h's, for l's launch_id and attempt:
 * `job` or `jobs`) made try try_num's, in place: in each component the
 * try's tag as `comment`, `FORGE_TRY=<try_num>` added to `environment`,
 * and excluded_nodes (Slurm's node list, comma-separated; NULL or "":
 * none) as `excluded_nodes`. try_num <= 1 without excluded nodes changes
 * nothing. */
void forge_try_apply(json_t *payload, const char *launch_id, int attempt,
                     int try_num, const char *excluded_nodes);

#endif
