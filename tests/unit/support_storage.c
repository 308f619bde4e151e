/* SPDX-License-Identifier: Apache-2.0 */
/*
 * support_storage.c - shell commands and tree removal for the storage
 * tests (support_storage.h).
 */
#define _XOPEN_SOURCE 700
#include "support_storage.h"

#include <criterion/criterion.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void support_vsh(const char *root, const char *outside, const char *fmt,
                 va_list ap)
{
    char cmd[2048], full[2400];

    vsnprintf(cmd, sizeof(cmd), fmt, ap);
    snprintf(full, sizeof(full), "R='%s'; O='%s'; set -e; %s", root ? root : "",
             outside ? outside : "", cmd);
    cr_assert_eq(system(full), 0, "%s", cmd);
}

static int remove_one(const char *path, const struct stat *st, int type,
                      struct FTW *ftw)
{
    (void)st;
    (void)ftw;
    return type == FTW_DP ? rmdir(path) : unlink(path);
}

void support_rm_tree(const char *path)
{
    nftw(path, remove_one, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
}

void support_sh_in(const char *top, const char *fmt, ...)
{
    char r[128], o[128];
    va_list ap;

    snprintf(r, sizeof(r), "%s/storage", top);
    snprintf(o, sizeof(o), "%s/host", top);
    va_start(ap, fmt);
    support_vsh(r, o, fmt, ap);
    va_end(ap);
}

forge_sealer_t *support_sealer_in(const char *dir)
{
    char path[256], key[FORGE_SEAL_KEY_BYTES];
    forge_sealer_t *sealer = NULL;
    forge_error_t err = {0};
    int fd;

    snprintf(path, sizeof(path), "%s/state-key", dir);
    memset(key, 'k', sizeof(key));
    fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    cr_assert_geq(fd, 0);
    cr_assert_eq(write(fd, key, sizeof(key)), (ssize_t)sizeof(key));
    close(fd);
    cr_assert_eq(forge_sealer_load(path, NULL, &sealer, &err), FORGE_OK, "%s",
                 err.message);
    return sealer;
}
