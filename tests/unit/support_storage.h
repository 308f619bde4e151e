/* SPDX-License-Identifier: Apache-2.0 */
/*
 * support_storage.h - what the unit tests of the shared-storage code share
 * (safe_fs, staging, archive, request_check, submit, archive_work):
 * shell commands that plant links and files as a job would, and removing
 * a test's folders without following what was planted in them; and the
 * state key the tests that seal records write into their folder.
 */
#ifndef FORGE_SUPPORT_STORAGE_H
#define FORGE_SUPPORT_STORAGE_H

#include "base/error.h"
#include "record/seal.h"

#include <stdarg.h>

/* Runs `set -e; <fmt...>` with $R = root and $O = outside (either may be
 * NULL: then unset); a failing command fails the test. */
void support_vsh(const char *root, const char *outside, const char *fmt,
                 va_list ap);

/* support_vsh with $R = <top>/storage and $O = <top>/host (the submit and
 * file-work tests' layout). */
void support_sh_in(const char *top, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* The launch request the submit and file-work tests hold (launch "L1"). */
#define SUPPORT_L1_REQUEST                                                     \
    "{\"kind\": \"launch\", \"launch_id\": \"L1\", \"image\": "                \
    "{\"path\": \"images/a.sif\", \"format\": \"sif\"}, \"command\": "         \
    "[\"run\"], \"pools\": [{\"name\": \"main\", \"series\": \"h200\", "       \
    "\"nodes\": 1}], \"ingest\": {\"endpoint\": \"https://i.example\", "       \
    "\"token\": \"tok-123456789\"}}"

/* A state key of 32 'k' bytes written to <dir>/state-key (0600) and
 * loaded: the sealer of the tests that seal records (the loop's, a
 * launch's tries). The caller destroys it. */
forge_sealer_t *support_sealer_in(const char *dir);

/* Removes path and everything below it: links unlinked, never followed,
 * no mount point crossed. A missing path is fine. */
void support_rm_tree(const char *path);

#endif
