/* SPDX-License-Identifier: Apache-2.0 */
/*
 * archive_work.h - the file threads: a finished launch's logs archived
 * (work.h kind ARCHIVE, archive/archive.h) and its staging folder removed
 * (CLEANUP), on a pool of their own (pool.h) that never touches Slurm, so
 * a 1 GiB log delays neither a submit nor a poll tick. finish.c decides
 * when, on the loop's thread.
 */
#ifndef FORGE_ARCHIVE_WORK_H
#define FORGE_ARCHIVE_WORK_H

#include "config/config.h"
#include "request/tenants.h"
#include "loop/pool.h"

/* The files lane's threads (the composition root starts them). */
#define FORGE_ARCHIVE_THREADS 2

/* `threads` file threads (cfg and tenants borrowed, must outlive them;
 * tenants NULL: none). forge_pool_stop lets the file work in hand finish. */
forge_rc_t forge_files_start(const forge_config_t *cfg,
                             const forge_tenants_t *tenants, size_t threads,
                             forge_pool_t **out,
                             forge_error_t *err) FORGE_WARN_UNUSED;

#endif
