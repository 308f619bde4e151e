/* SPDX-License-Identifier: Apache-2.0 */
/*
 * request/request_paths.c - a request's files on this host
 * (request_paths.h).
 */
#include "request/request_paths.h"
#include "fs/paths.h"
#include "base/util.h"

char *forge_request_image_path(const forge_config_t *cfg,
                               const forge_launch_t *l)
{
    if (l->image_path[0] == '/')
        return forge_xstrdup(l->image_path);
    return forge_path_join(cfg->runtime_root, l->image_path);
}

char *forge_request_mount_source(const forge_config_t *cfg,
                                 const forge_mount_t *m)
{
    if (m->source[0] == '/')
        return forge_xstrdup(m->source);
    return forge_path_join(cfg->storage_root, m->source);
}
