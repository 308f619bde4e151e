/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fs/paths.h - path strings, on this host and on the cluster.
 *
 * The worker and the jobs see the same shared storage at different paths:
 * FORGE_STORAGE_ROOT here, FORGE_SLURM_STORAGE_ROOT on the cluster. Every
 * path that goes into a script or a submit body passes through
 * forge_path_to_cluster(). All functions are pure string work; all returned
 * strings are new (free()). Where a request's own files are is
 * request/request_paths.h; the staging folder's place, render/staging.h.
 */
#ifndef FORGE_PATHS_H
#define FORGE_PATHS_H

#include "config/config.h"

#include <stdbool.h>

/* path equals root or lies below it ("/a/b" is under "/a", "/ab" is not). */
bool forge_path_is_under(const char *path, const char *root);

/* a + "/" + b (b relative). */
char *forge_path_join(const char *a, const char *b);

/* host_path with the storage root rewritten to the cluster's; other paths
 * unchanged (they are the same on both sides). */
char *forge_path_to_cluster(const forge_config_t *cfg, const char *host_path);

/* path without empty and "." components, or NULL when it has a ".."
 * component. */
char *forge_path_normalize(const char *path);

/* The part of path (normalized) below root: "" for root itself, NULL when
 * path is not under root. Borrowed from path. */
const char *forge_path_below(const char *path, const char *root);

#endif
