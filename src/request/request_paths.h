/* SPDX-License-Identifier: Apache-2.0 */
/*
 * request/request_paths.h - where a request's own files are on this host:
 * its image and its mounts' sources (relative ones under the runtime and
 * the storage root). The checks (request_check.c) and the batch script
 * (render.c) resolve them the same way through here. Pure string work;
 * returned strings are new (free()).
 */
#ifndef FORGE_REQUEST_PATHS_H
#define FORGE_REQUEST_PATHS_H

#include "config/config.h"
#include "request/request.h"

/* The image file of a request, host side: relative paths are under the
 * runtime root. */
char *forge_request_image_path(const forge_config_t *cfg,
                               const forge_launch_t *l);

/* A mount's source, host side: relative paths are under the storage root. */
char *forge_request_mount_source(const forge_config_t *cfg,
                                 const forge_mount_t *m);

#endif
