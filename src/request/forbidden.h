/* SPDX-License-Identifier: Apache-2.0 */
/*
 * forbidden.h - the places no mount source may reach that the
 * configuration names (docs/CONTRACT.md §2 "mounts", §7): the worker's
 * secret files and the storage root, each by canonical path and by
 * identity chain (the file and every folder above it, by device and
 * inode), and a descriptor of the storage root, beneath which the mount
 * sources and the image are resolved, and the storage root's `staging`
 * and `artifacts` folders (by canonical path, and by identity when each is
 * a real folder there). request_check.c compares each mount source with
 * them.
 *
 * Cached: deriving them costs a realpath, a stat and a walk up to "/" per
 * place (about 20 syscalls for the storage root alone), on every request.
 * One snapshot per process, shared by the threads that check requests
 * (the loop, the Slurm pool's threads), immutable once built, reference
 * counted. Revalidation rule, applied by forge_forbidden_get before each
 * check hands the snapshot out (a few syscalls, one per place):
 *   - the storage root: its configured path, not followed at its last
 *     component (as forge_fs_open_root opens it), is still a folder with
 *     the device, inode and ctime the snapshot's descriptor had. The
 *     ctime also vouches for `staging` and `artifacts`, which a job owning
 *     the storage root may rename or replace: adding, removing, renaming or
 *     replacing an entry of a folder sets the folder's ctime;
 *   - each secret file: its configured path, followed (as the
 *     configuration's links are), is still the file with the same device,
 *     inode and ctime, or still cannot be stat-ed when it could not then;
 *   - the configuration names the same paths, and the snapshot is younger
 *     than FORGE_FORBIDDEN_MAX_AGE_MS;
 *   - no stamp was racy: a snapshot whose storage root or secret file had
 *     a ctime less than 2 s before its build serves that one check (file
 *     system timestamps are coarse: a change in the same tick would leave
 *     the ctime as it was).
 * Anything else, and any error, builds a new snapshot from scratch. A
 * file replaced (a new inode), renamed or given another hard link (both
 * change its ctime), a folder or link put in the storage root's place, is
 * seen at the next check. What only the age bound catches: a folder ABOVE
 * the storage root or above a secret file moved elsewhere while a link
 * keeps the configured path leading to the same file: those folders are
 * the site's, which the trust model (§7) trusts, and jobs cannot touch
 * them; such a move is seen within FORGE_FORBIDDEN_MAX_AGE_MS.
 *
 * The snapshot keeps the storage root open (one descriptor, O_DIRECTORY)
 * while it is the process's current one.
 */
#ifndef FORGE_FORBIDDEN_H
#define FORGE_FORBIDDEN_H

#include "config/config.h"
#include "base/error.h"

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>

#define FORGE_CHAIN_MAX            128
#define FORGE_FORBIDDEN_MAX        6 /* the 5 secret files, the storage root */
#define FORGE_FORBIDDEN_MAX_AGE_MS 1000

typedef struct forge_file_id {
    dev_t dev;
    ino_t ino;
} forge_file_id_t;

/* A file and its ancestors up to "/" (or FORGE_CHAIN_MAX), itself first. */
typedef struct forge_chain {
    forge_file_id_t id[FORGE_CHAIN_MAX];
    size_t n;
} forge_chain_t;

typedef struct forge_forbidden {
    const char *what;    /* for messages */
    char *canon;         /* canonical path */
    bool may_lie_below;  /* a source under it is fine (the storage root) */
    forge_chain_t chain; /* n == 0: not there */
} forge_forbidden_t;

/* One snapshot (read only for its users): f then own are the places in
 * the order their violations are reported. */
typedef struct forge_forbidden_set {
    forge_forbidden_t f[FORGE_FORBIDDEN_MAX]; /* secrets, then storage */
    size_t count;
    /* the storage root, when configured (else NULL, -1): its entry in f,
     * a descriptor of it and that descriptor's fstat; the canonical
     * paths of its staging and artifacts folders */
    const forge_forbidden_t *storage;
    int sfd;
    struct stat storage_st;
    forge_forbidden_t own[2];            /* staging, artifacts (when storage) */
    struct forge_forbidden_cache *cache; /* forbidden.c's own */
} forge_forbidden_set_t;

/* The current snapshot for cfg, revalidated or built anew (*out: a
 * reference, released with forge_forbidden_release). An error when the
 * storage root cannot be opened. */
forge_rc_t forge_forbidden_get(const forge_config_t *cfg,
                               forge_forbidden_set_t **out,
                               forge_error_t *err) FORGE_WARN_UNUSED;

void forge_forbidden_release(forge_forbidden_set_t *set); /* NULL-safe */

/* How many snapshots this process has built (the tests: a check served
 * from the cache builds none). */
unsigned long forge_forbidden_builds(void);

static inline bool forge_file_id_same(forge_file_id_t a, forge_file_id_t b)
{
    return a.dev == b.dev && a.ino == b.ino;
}

void forge_chain_push(forge_chain_t *c, const struct stat *st);

/* Appends the chain of the folder dir (not closed) and its ancestors, by
 * "..": identities only, one fstatat per folder. above (may be NULL): the
 * chain of a root dir lies `steps` folders below, walked already: when
 * exactly `steps` ".." lead to that root, its chain is appended instead of
 * walked again. known (may be NULL): dir's fstat, when the caller has it. */
void forge_chain_walk_up(int dir, const struct stat *known, forge_chain_t *c,
                         const forge_chain_t *above, size_t steps);

#endif
