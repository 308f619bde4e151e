/* SPDX-License-Identifier: Apache-2.0 */
/*
 * forbidden.c - the places no mount source may reach, derived once and
 * revalidated at each check (forbidden.h says by which rule). Any thread
 * that checks requests calls forge_forbidden_get: the current snapshot is
 * one pointer under a mutex, each snapshot reference counted (atomic), so
 * a thread that finds it stale builds a new one without holding the lock
 * and the others keep theirs until they release it.
 */
#include "request/forbidden.h"
#include "clock/clock.h"
#include "fs/safe_fs.h"
#include "base/util.h"
#include "fs/paths.h"

#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ---- identity chains ---------------------------------------------------- */

void forge_chain_push(forge_chain_t *c, const struct stat *st)
{
    if (c->n < FORGE_CHAIN_MAX)
        c->id[c->n++] = (forge_file_id_t){st->st_dev, st->st_ino};
}

/*
 * Nothing is read or opened: fstatat of "..", "../..", ... beneath dir
 * (the kernel walks ".." as openat would, mounts included, and ".." is
 * never a link). When `steps` ".." lead to above's root, the path between
 * was resolved beneath that root, so the walk would retrace it; anywhere
 * else (a folder moved meanwhile) the walk goes on to "/".
 */
void forge_chain_walk_up(int dir, const struct stat *known, forge_chain_t *c,
                         const forge_chain_t *above, size_t steps)
{
    char ups[FORGE_CHAIN_MAX * 3 + 1] = "";
    struct stat st;
    forge_file_id_t id;

    if (known)
        st = *known;
    else if (fstat(dir, &st) != 0)
        return;
    id = (forge_file_id_t){st.st_dev, st.st_ino};
    for (size_t level = 0; c->n < FORGE_CHAIN_MAX; level++) {
        if (above && above->n && level == steps &&
            forge_file_id_same(id, above->id[0])) {
            for (size_t k = 0; k < above->n && c->n < FORGE_CHAIN_MAX; k++)
                c->id[c->n++] = above->id[k];
            return;
        }
        c->id[c->n++] = id;
        /* "..", then "../..", "../../..": 3 more bytes a level */
        memcpy(ups + (level ? 3 * level - 1 : 0), level ? "/.." : "..",
               level ? 4 : 3);
        if (fstatat(dir, ups, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
            !S_ISDIR(st.st_mode) ||
            forge_file_id_same(id, (forge_file_id_t){st.st_dev, st.st_ino}))
            return; /* "/" is its own parent */
        id = (forge_file_id_t){st.st_dev, st.st_ino};
    }
}

/* The chain of an absolute path the configuration names (links in it are
 * the site's: followed); n == 0 when it does not exist. */
static void chain_of_path(const char *canon, forge_chain_t *c)
{
    char *dir = forge_xstrdup(canon), *slash = strrchr(dir, '/');
    struct stat st;
    int fd;

    c->n = 0;
    if (slash && stat(canon, &st) == 0) {
        forge_chain_push(c, &st);
        slash[slash == dir ? 1 : 0] = '\0';
        if (strcmp(canon, "/") &&
            (fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC)) >= 0) {
            forge_chain_walk_up(fd, NULL, c, NULL, 0);
            close(fd);
        }
    }
    free(dir);
}

/* realpath when it exists, else the path as configured (new). */
static char *canonical(const char *path)
{
    char buf[PATH_MAX];

    return forge_xstrdup(realpath(path, buf) ? buf : path);
}

/* ---- the snapshot ------------------------------------------------------- */

/* What a place was when the snapshot was built (forbidden.h's rule). */
typedef struct stamp {
    bool present; /* stat-ed: the rest is its answer */
    dev_t dev;
    ino_t ino;
    struct timespec ctime;
} stamp_t;

#define SECRETS 5

/* The cache's part of a snapshot: its key (the paths it was built from),
 * its stamps and age, its references. */
typedef struct forge_forbidden_cache {
    atomic_int refs;
    long long built_ms;
    bool racy; /* a stamp too recent to vouch for anything: not reused */
    char *storage_root;
    char *secret_path[SECRETS];
    stamp_t storage, secret[SECRETS];
} forbidden_cache_t;

/* The worker's secret files the configuration names (FORGE_SLURM_TLS_CA_
 * FILE is public), in the order their violations are reported. */
static void secret_paths(const forge_config_t *cfg, const char *path[SECRETS],
                         const char *what[SECRETS])
{
    static const char *const names[SECRETS] = {
        "FORGE_SLURM_JWT_FILE (a secret of the worker)",
        "FORGE_SLURM_JWT_KEY_FILE (a secret of the worker)",
        "FORGE_STATE_KEY_FILE (a secret of the worker)",
        "FORGE_STATE_KEY_FILE_PREVIOUS (a secret of the worker)",
        "FORGE_TENANTS_FILE (the worker's)",
    };

    path[0] = cfg->slurm_jwt_file;
    path[1] = cfg->slurm_jwt_key_file;
    path[2] = cfg->state_key_file;
    path[3] = cfg->state_key_file_previous;
    path[4] = cfg->tenants_file;
    for (size_t i = 0; what && i < SECRETS; i++)
        what[i] = names[i];
}

static atomic_ulong builds;

unsigned long forge_forbidden_builds(void)
{
    return atomic_load(&builds);
}

/* A ctime this close to now cannot tell a later change apart: file system
 * timestamps are coarse (a kernel tick; a second or two on some), so a
 * rename in the same tick would leave it as it is. */
#define RACY_SECONDS 1

static bool stamp_racy(const stamp_t *s)
{
    struct timespec now;

    clock_gettime(CLOCK_REALTIME, &now);
    return s->present && s->ctime.tv_sec >= now.tv_sec - RACY_SECONDS;
}

static void stamp_of(const struct stat *st, bool present, stamp_t *s)
{
    *s = (stamp_t){present, 0, 0, {0, 0}};
    if (present) {
        s->dev = st->st_dev;
        s->ino = st->st_ino;
        s->ctime = st->st_ctim;
    }
}

static bool stamp_same(const stamp_t *a, const stamp_t *b)
{
    return a->present == b->present &&
           (!a->present || (a->dev == b->dev && a->ino == b->ino &&
                            a->ctime.tv_sec == b->ctime.tv_sec &&
                            a->ctime.tv_nsec == b->ctime.tv_nsec));
}

static bool same_text(const char *a, const char *b)
{
    return a == b || (a && b && !strcmp(a, b));
}

static void set_free(forge_forbidden_set_t *set)
{
    forbidden_cache_t *c = set->cache;

    for (size_t i = 0; i < set->count; i++)
        free(set->f[i].canon);
    if (set->sfd >= 0)
        close(set->sfd);
    free(set->own[0].canon);
    free(set->own[1].canon);
    free(c->storage_root);
    for (size_t i = 0; i < SECRETS; i++)
        free(c->secret_path[i]);
    free(c);
    free(set);
}

void forge_forbidden_release(forge_forbidden_set_t *set)
{
    if (set && atomic_fetch_sub(&set->cache->refs, 1) == 1)
        set_free(set);
}

static forge_forbidden_t *add(forge_forbidden_set_t *set, const char *what,
                              char *canon, bool may_lie_below)
{
    forge_forbidden_t *f = &set->f[set->count++];

    f->what = what;
    f->canon = canon;
    f->may_lie_below = may_lie_below;
    f->chain.n = 0;
    return f;
}

/* staging and artifacts by name under the storage root's canonical path,
 * and by identity when each is a real folder there (fstatat beneath the
 * root's descriptor, not following a link: a link there is the storage
 * owner's doing, and the name rule covers it; its parent is the storage
 * root, whose chain follows). */
static void own_folders(forge_forbidden_set_t *set)
{
    static const char *const own[][2] = {
        {"staging", "the worker's staging folder"},
        {"artifacts", "the worker's artifacts folder"},
    };
    const forge_chain_t *above = &set->storage->chain;

    for (size_t i = 0; i < 2; i++) {
        forge_forbidden_t *f = &set->own[i];
        struct stat st;
        f->what = own[i][1];
        f->canon = forge_path_join(set->storage->canon, own[i][0]);
        f->may_lie_below = false;
        f->chain.n = 0;
        if (fstatat(set->sfd, own[i][0], &st, AT_SYMLINK_NOFOLLOW) != 0 ||
            !S_ISDIR(st.st_mode))
            continue;
        forge_chain_push(&f->chain, &st);
        for (size_t k = 0; k < above->n && f->chain.n < FORGE_CHAIN_MAX; k++)
            f->chain.id[f->chain.n++] = above->id[k];
    }
}

/* Each stamp is taken before what it vouches for is derived: a change
 * while the snapshot is built makes the next check build again. */
static forge_rc_t build(const forge_config_t *cfg, forge_forbidden_set_t **out,
                        forge_error_t *err)
{
    forge_forbidden_set_t *set = forge_xcalloc(1, sizeof(*set));
    forbidden_cache_t *c = forge_xcalloc(1, sizeof(*c));
    const char *path[SECRETS], *what[SECRETS];
    forge_forbidden_t *f;
    struct stat st;
    forge_rc_t rc;

    _Static_assert(SECRETS + 1 <= FORGE_FORBIDDEN_MAX,
                   "a snapshot holds the secrets and the storage root");
    set->cache = c;
    set->sfd = -1;
    atomic_init(&c->refs, 1);
    c->built_ms = forge_clock_ms();
    secret_paths(cfg, path, what);
    for (size_t i = 0; i < SECRETS; i++) {
        if (!path[i])
            continue;
        c->secret_path[i] = forge_xstrdup(path[i]);
        stamp_of(&st, stat(path[i], &st) == 0, &c->secret[i]);
        c->racy |= stamp_racy(&c->secret[i]);
        f = add(set, what[i], canonical(path[i]), false);
        chain_of_path(f->canon, &f->chain);
    }
    if (cfg->storage_root) {
        c->storage_root = forge_xstrdup(cfg->storage_root);
        if ((rc = forge_fs_open_root(cfg->storage_root, &set->sfd, err)) ||
            (fstat(set->sfd, &set->storage_st) != 0 &&
             (rc = forge_error_set(err, FORGE_EIO, "storage", "%s: fstat",
                                   cfg->storage_root)))) {
            set_free(set);
            return rc;
        }
        stamp_of(&set->storage_st, true, &c->storage);
        c->racy |= stamp_racy(&c->storage);
        f = add(set, "the storage root", canonical(cfg->storage_root), true);
        forge_chain_walk_up(set->sfd, &set->storage_st, &f->chain, NULL, 0);
        set->storage = f;
        own_folders(set);
    }
    atomic_fetch_add(&builds, 1);
    *out = set;
    return FORGE_OK;
}

/* forbidden.h's revalidation rule. */
static bool still_valid(const forge_forbidden_set_t *set,
                        const forge_config_t *cfg)
{
    const forbidden_cache_t *c = set->cache;
    const char *path[SECRETS];
    long long age = forge_clock_ms() - c->built_ms;
    struct stat st;
    stamp_t now;

    if (c->racy || age < 0 || age >= FORGE_FORBIDDEN_MAX_AGE_MS ||
        !same_text(c->storage_root, cfg->storage_root))
        return false;
    secret_paths(cfg, path, NULL);
    for (size_t i = 0; i < SECRETS; i++)
        if (!same_text(c->secret_path[i], path[i]))
            return false;
    if (c->storage_root) {
        bool there =
            fstatat(AT_FDCWD, c->storage_root, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
            S_ISDIR(st.st_mode);
        stamp_of(&st, there, &now);
        if (!stamp_same(&now, &c->storage))
            return false;
    }
    for (size_t i = 0; i < SECRETS; i++) {
        if (!path[i])
            continue;
        stamp_of(&st, stat(path[i], &st) == 0, &now);
        if (!stamp_same(&now, &c->secret[i]))
            return false;
    }
    return true;
}

static pthread_mutex_t current_lock = PTHREAD_MUTEX_INITIALIZER;
static forge_forbidden_set_t *current; /* holds one reference */

forge_rc_t forge_forbidden_get(const forge_config_t *cfg,
                               forge_forbidden_set_t **out, forge_error_t *err)
{
    forge_forbidden_set_t *set, *old;
    forge_rc_t rc;

    *out = NULL;
    pthread_mutex_lock(&current_lock);
    if ((set = current))
        atomic_fetch_add(&set->cache->refs, 1);
    pthread_mutex_unlock(&current_lock);
    if (set && still_valid(set, cfg)) {
        *out = set;
        return FORGE_OK;
    }
    forge_forbidden_release(set);
    set = NULL;
    rc = build(cfg, &set, err);
    if (set)
        atomic_fetch_add(&set->cache->refs, 1); /* the caller's and ours */
    pthread_mutex_lock(&current_lock);
    old = current;
    current = set; /* NULL after an error: the next check builds again */
    pthread_mutex_unlock(&current_lock);
    forge_forbidden_release(old);
    *out = set;
    return rc;
}
