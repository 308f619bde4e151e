/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fs/paths.c - path strings (paths.h).
 */
#include "fs/paths.h"
#include "base/buf.h"
#include "base/util.h"

#include <stdlib.h>
#include <string.h>

bool forge_path_is_under(const char *path, const char *root)
{
    size_t n = strlen(root);

    if (n == 1 && root[0] == '/')
        return path[0] == '/';
    return !strncmp(path, root, n) && (path[n] == '\0' || path[n] == '/');
}

char *forge_path_join(const char *a, const char *b)
{
    forge_buf_t out = FORGE_BUF_INIT;
    size_t n = strlen(a);

    forge_buf_append(&out, a, n && a[n - 1] == '/' ? n - 1 : n);
    forge_buf_putc(&out, '/');
    forge_buf_puts(&out, b[0] == '/' ? b + 1 : b);
    return forge_buf_take(&out);
}

char *forge_path_to_cluster(const forge_config_t *cfg, const char *host_path)
{
    forge_buf_t out = FORGE_BUF_INIT;
    size_t n;

    if (!cfg->storage_root ||
        !forge_path_is_under(host_path, cfg->storage_root))
        return forge_xstrdup(host_path);
    n = strcmp(cfg->storage_root, "/") ? strlen(cfg->storage_root) : 0;
    forge_buf_puts(&out, cfg->slurm_storage_root);
    if (host_path[n])
        forge_buf_puts(&out, host_path + n);
    return forge_buf_take(&out);
}

char *forge_path_normalize(const char *path)
{
    forge_buf_t b = FORGE_BUF_INIT;

    for (const char *p = path; *p;) {
        size_t n = strcspn(p, "/");
        if (n == 2 && p[0] == '.' && p[1] == '.') {
            forge_buf_clear(&b);
            return NULL;
        }
        if (n > 0 && !(n == 1 && p[0] == '.')) {
            forge_buf_putc(&b, '/');
            forge_buf_append(&b, p, n);
        }
        p += n + (p[n] == '/');
    }
    return b.len ? forge_buf_take(&b) : forge_xstrdup("/");
}

const char *forge_path_below(const char *path, const char *root)
{
    size_t n = strlen(root);

    if (!forge_path_is_under(path, root))
        return NULL;
    if (n == 1) /* root is "/" */
        return path + 1;
    return path[n] == '/' ? path + n + 1 : path + n;
}
