/* SPDX-License-Identifier: Apache-2.0 */
/*
 * request_check.c - configuration-dependent rules of a LaunchRequest
 * (request_check.h). One function per rule, run in document order so the
 * first error reported is the first one a reader meets. Paths (the image,
 * mount sources) are resolved on the file system beneath a descriptor of
 * their root, never matched as strings only: a job owns much of what lies
 * under the storage root and may plant links there.
 */
#include "request/request_check.h"
#include "core/buf.h"
#include "render/paths.h"
#include "render/render.h"
#include "core/safe_fs.h"
#include "core/util.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static forge_rc_t refuse(forge_error_t *err, forge_rc_t code,
                         const forge_request_t *req, const char *rel,
                         const char *fmt, ...) FORGE_PRINTF(5, 6);

/* Records "<path> <what>" with the path made absolute for the envelope. */
static forge_rc_t refuse(forge_error_t *err, forge_rc_t code,
                         const forge_request_t *req, const char *rel,
                         const char *fmt, ...)
{
    char path[FORGE_ERROR_FIELD_MAX];
    char what[FORGE_ERROR_MESSAGE_MAX];
    va_list ap;

    snprintf(path, sizeof(path), "%s%s", req->cloudevent ? "$.data" : "$", rel);
    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    return forge_error_set(err, code, path, "%s %s", path, what);
}

static const forge_image_format_t profile_format[] = {
    [FORGE_PROFILE_ENROOT_PYXIS] = FORGE_IMAGE_SQSH,
    [FORGE_PROFILE_APPTAINER] = FORGE_IMAGE_SIF,
};

/* ---- paths: resolved beneath a root, never matched as strings only ------ */

/* A configured folder: beneath the storage root's descriptor, no link on
 * the way, when it lies under the storage root (the runtime root does by
 * default, and the storage's owner controls what is there); else as
 * configured (forge_fs_open_root). */
static forge_rc_t open_config_dir(const forge_config_t *cfg, const char *path,
                                  int *fd, forge_error_t *err)
{
    const char *rel =
        cfg->storage_root ? forge_path_below(path, cfg->storage_root) : NULL;
    int sfd;
    forge_rc_t rc;

    if (!rel || !*rel)
        return forge_fs_open_root(path, fd, err);
    if ((rc = forge_fs_open_root(cfg->storage_root, &sfd, err)))
        return rc;
    rc = forge_fs_open(sfd, "", rel, O_PATH | O_DIRECTORY, 0, fd, NULL, err);
    close(sfd);
    if (!rc && *fd < 0)
        rc = forge_error_set(err, FORGE_EIO, "storage", "%s does not exist",
                             path);
    return rc;
}

/* ---- image ----------------------------------------------------------------
 */

static forge_rc_t check_image(const forge_request_t *req,
                              const forge_config_t *cfg, forge_error_t *err)
{
    const forge_launch_t *l = &req->launch;
    forge_image_format_t want = profile_format[cfg->runtime_profile];
    char *path, *norm;
    const char *rel;
    forge_error_t why = {0};
    struct stat st;
    int rfd = -1, fd = -1;
    forge_rc_t rc = FORGE_OK;

    if (l->image_format != want)
        return refuse(err, FORGE_EIMAGE_FORMAT, req, ".image.format",
                      "must be \"%s\" for this fleet's runtime profile",
                      forge_image_format_name(want));
    path = forge_path_image(cfg, l);
    norm = forge_path_normalize(path);
    rel = norm ? forge_path_below(norm, cfg->runtime_root) : NULL;
    if (!rel)
        rc = refuse(err, FORGE_EIMAGE_MISSING, req, ".image.path",
                    "leads outside the runtime root (%s)", cfg->runtime_root);
    else if (*rel && !open_config_dir(cfg, cfg->runtime_root, &rfd, &why) &&
             forge_fs_open(rfd, "", rel, O_PATH, 0, &fd, &st, &why))
        fd = -1; /* why says what was wrong */
    /* No link is followed under the runtime root: one leading to another
     * image is refused too. */
    if (!rc && why.code == FORGE_EUNSAFE_PATH)
        rc = refuse(err, FORGE_EIMAGE_MISSING, req, ".image.path",
                    "is refused: %s (no link is followed under the runtime "
                    "root %s)",
                    why.message, cfg->runtime_root);
    else if (!rc && (fd < 0 || !S_ISREG(st.st_mode)))
        rc = refuse(err, FORGE_EIMAGE_MISSING, req, ".image.path",
                    "names no image file under the runtime root (%s)",
                    cfg->runtime_root);
    if (fd >= 0)
        close(fd);
    if (rfd >= 0)
        close(rfd);
    free(norm);
    free(path);
    return rc;
}

/* ---- mounts ---------------------------------------------------------------
 */

/*
 * A mount source is resolved beneath a descriptor of the root it lies under
 * (the storage root, else the longest FORGE_MOUNT_ALLOW prefix) with no link
 * in any component, as far as it exists: a source that does not exist yet
 * is allowed (the job may create it). Whatever the job does to the path
 * between this check and the mount (create it, swap in a link) happens
 * with the job user's own permissions, and so does the mount (Pyxis,
 * Apptainer run as that user): that window gives the job nothing it could
 * not read anyway. What the check keeps the job from is what only the
 * worker may reach: the worker's staging and artifacts folders (other
 * launches' credentials and logs), the storage root as a whole, and the
 * worker's secret files; by canonical path and, where they exist, by
 * identity (device and inode, which also sees a bind mount's alias).
 */

#define CHAIN_MAX     128
#define FORBIDDEN_MAX 8

typedef struct file_id {
    dev_t dev;
    ino_t ino;
} file_id_t;

/* A file and its ancestors up to "/" (or CHAIN_MAX), itself first. */
typedef struct chain {
    file_id_t id[CHAIN_MAX];
    size_t n;
} chain_t;

typedef struct forbidden {
    const char *what;   /* for messages */
    char *canon;        /* canonical path, or NULL */
    bool may_lie_below; /* a source under it is fine (the storage root) */
    chain_t chain;      /* n == 0: not there */
} forbidden_t;

typedef struct guard {
    forbidden_t f[FORBIDDEN_MAX];
    size_t count;
    /* the storage root, when configured: opened once for the whole
     * check (the mounts under it resolve beneath this descriptor), and
     * its entry above (canonical path and chain, reused by them) */
    int sfd;
    const forbidden_t *storage;
} guard_t;

static bool same_id(file_id_t a, file_id_t b)
{
    return a.dev == b.dev && a.ino == b.ino;
}

static void push_id(chain_t *c, const struct stat *st)
{
    if (c->n < CHAIN_MAX)
        c->id[c->n++] = (file_id_t){st->st_dev, st->st_ino};
}

/*
 * The folder dir (not closed) and its ancestors, by "..": identities only,
 * nothing is read or opened; one fstat per folder (fstatat of "..",
 * "../..", ... beneath dir: the kernel walks ".." as openat would, mounts
 * included, and ".." is never a link). above (may be NULL): the chain of
 * a root dir lies `steps` folders below, walked already in this check:
 * when exactly `steps` ".." lead to that root, its chain is appended
 * instead of walked again (the same folders: the path between was
 * resolved beneath the root, so the ".." walk retraces it). Anywhere else
 * (a folder moved meanwhile), the walk goes on to "/" as without it.
 * known (may be NULL): dir's fstat, when the caller has it.
 */
static void walk_up_to(int dir, const struct stat *known, chain_t *c,
                       const chain_t *above, size_t steps)
{
    char ups[CHAIN_MAX * 3 + 1] = "";
    struct stat st;
    file_id_t id;

    if (known)
        st = *known;
    else if (fstat(dir, &st) != 0)
        return;
    id = (file_id_t){st.st_dev, st.st_ino};
    for (size_t level = 0; c->n < CHAIN_MAX; level++) {
        if (above && above->n && level == steps && same_id(id, above->id[0])) {
            for (size_t k = 0; k < above->n && c->n < CHAIN_MAX; k++)
                c->id[c->n++] = above->id[k];
            return;
        }
        c->id[c->n++] = id;
        /* "..", then "../..", "../../..": 3 more bytes a level */
        memcpy(ups + (level ? 3 * level - 1 : 0), level ? "/.." : "..",
               level ? 4 : 3);
        if (fstatat(dir, ups, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
            !S_ISDIR(st.st_mode) ||
            same_id(id, (file_id_t){st.st_dev, st.st_ino}))
            return; /* "/" is its own parent */
        id = (file_id_t){st.st_dev, st.st_ino};
    }
}

static void walk_up(int dir, chain_t *c)
{
    walk_up_to(dir, NULL, c, NULL, 0);
}

/* The chain of an absolute path the configuration names (links in it are
 * the site's: followed); n == 0 when it does not exist. */
static void chain_of_path(const char *canon, chain_t *c)
{
    char *dir = forge_xstrdup(canon), *slash = strrchr(dir, '/');
    struct stat st;
    int fd;

    c->n = 0;
    if (stat(canon, &st) == 0) {
        push_id(c, &st);
        slash[slash == dir ? 1 : 0] = '\0';
        if (strcmp(canon, "/") &&
            (fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC)) >= 0) {
            walk_up(fd, c);
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

static forbidden_t *forbid(guard_t *g, const char *what, char *canon,
                           bool may_lie_below)
{
    forbidden_t *f = &g->f[g->count++];

    f->what = what;
    f->canon = canon;
    f->may_lie_below = may_lie_below;
    f->chain.n = 0;
    return f;
}

/* The worker's secret files the configuration names (FORGE_SLURM_TLS_CA_
 * FILE is public). A state key or tenants file, once configured, belongs
 * here too. */
static void forbid_secrets(const forge_config_t *cfg, guard_t *g)
{
    const struct {
        const char *what, *path;
    } secrets[] = {
        {"FORGE_SLURM_JWT_FILE (a secret of the worker)", cfg->slurm_jwt_file},
        {"FORGE_SLURM_JWT_KEY_FILE (a secret of the worker)",
         cfg->slurm_jwt_key_file},
        {"FORGE_STATE_KEY_FILE (a secret of the worker)", cfg->state_key_file},
        {"FORGE_STATE_KEY_FILE_PREVIOUS (a secret of the worker)",
         cfg->state_key_file_previous},
        {"FORGE_TENANTS_FILE (the worker's)", cfg->tenants_file},
    };

    _Static_assert(sizeof(secrets) / sizeof(*secrets) + 3 <= FORBIDDEN_MAX,
                   "guard_t holds the secrets and the storage's three");
    for (size_t i = 0; i < sizeof(secrets) / sizeof(*secrets); i++) {
        forbidden_t *f;
        if (!secrets[i].path)
            continue;
        f = forbid(g, secrets[i].what, canonical(secrets[i].path), false);
        chain_of_path(f->canon, &f->chain);
    }
}

/* What no mount may be, contain, or (but the storage root) lie in. */
static forge_rc_t guard_init(const forge_config_t *cfg, guard_t *g,
                             forge_error_t *err)
{
    static const char *const own[][2] = {
        {"staging", "the worker's staging folder"},
        {"artifacts", "the worker's artifacts folder"},
    };
    forbidden_t *f;
    const char *storage;
    int sfd;
    forge_rc_t rc;

    g->count = 0; /* the chains are filled as they are walked */
    g->sfd = -1;
    g->storage = NULL;
    forbid_secrets(cfg, g);
    if (!cfg->storage_root)
        return FORGE_OK;
    if ((rc = forge_fs_open_root(cfg->storage_root, &sfd, err)))
        return rc;
    f = forbid(g, "the storage root", canonical(cfg->storage_root), true);
    walk_up(sfd, &f->chain);
    g->sfd = sfd;
    g->storage = f;
    storage = f->canon;
    for (size_t i = 0; i < 2; i++) {
        forge_error_t ignored = {0};
        int fd = -1;
        f = forbid(g, own[i][1], forge_path_join(storage, own[i][0]), false);
        /* identity only when it is a real folder: a link there is the
         * storage owner's doing, and the name rule covers it */
        if (!forge_fs_open(sfd, "", own[i][0], O_PATH | O_DIRECTORY, 0, &fd,
                           NULL, &ignored) &&
            fd >= 0) {
            walk_up_to(fd, NULL, &f->chain, &g->storage->chain, 1);
            close(fd);
        }
    }
    return FORGE_OK;
}

static void guard_clear(guard_t *g)
{
    for (size_t i = 0; i < g->count; i++)
        free(g->f[i].canon);
    if (g->sfd >= 0)
        close(g->sfd);
}

/* A mount source as resolved. */
typedef struct source {
    char *canon;   /* canonical path (new) */
    chain_t chain; /* its deepest existing component and the folders above */
    bool exists;   /* all of it */
} source_t;

/* s->chain from what forge_fs_resolve found beneath rfd (r->fd closed by
 * the caller); above: rfd's own chain when walked already, else NULL. */
static void source_chain(int rfd, const char *rel, const forge_fs_resolved_t *r,
                         const chain_t *above, source_t *s)
{
    char *parent = forge_xstrdup(rel), *slash = strrchr(parent, '/');
    forge_error_t ignored = {0};
    int pfd = -1;

    if (S_ISDIR(r->st.st_mode)) {
        walk_up_to(r->fd, &r->st, &s->chain, above, r->depth);
    } else { /* a file, which exists: its folder is rel's parent */
        push_id(&s->chain, &r->st);
        if (slash)
            *slash = '\0';
        if (!slash)
            walk_up_to(rfd, NULL, &s->chain, above, 0);
        else if (!forge_fs_open(rfd, "", parent, O_PATH | O_DIRECTORY, 0, &pfd,
                                NULL, &ignored) &&
                 pfd >= 0)
            walk_up_to(pfd, NULL, &s->chain, above, r->depth - 1);
    }
    if (pfd >= 0)
        close(pfd);
    free(parent);
}

/* rel beneath root (where: how messages name root), no link on the way.
 * A root that does not exist on this host (a FORGE_MOUNT_ALLOW prefix only
 * the cluster has) leaves only the name rules: s->chain empty. The storage
 * root comes from the guard: its descriptor, canonical path and chain. */
static forge_rc_t resolve_source(const guard_t *g, const char *root,
                                 const char *where, const char *rel,
                                 source_t *s, forge_error_t *why)
{
    const forbidden_t *storage =
        g->sfd >= 0 && g->storage && !*where /* the storage root */
            ? g->storage
            : NULL;
    char *rcanon = storage ? NULL : canonical(root);
    const char *canon = storage ? storage->canon : rcanon;
    forge_fs_resolved_t r;
    struct stat st;
    int rfd;
    forge_rc_t rc;

    s->canon = *rel ? forge_path_join(canon, rel) : forge_xstrdup(canon);
    free(rcanon);
    if (storage)
        rfd = g->sfd;
    else if (stat(root, &st) != 0 && errno == ENOENT)
        return FORGE_OK;
    else if ((rc = forge_fs_open_root(root, &rfd, why)))
        return rc;
    if (!(rc = forge_fs_resolve(rfd, where, rel, &r, why))) {
        s->exists = r.exists;
        if (r.exists && !S_ISDIR(r.st.st_mode) && !S_ISREG(r.st.st_mode))
            rc = forge_error_set(why, FORGE_EUNSAFE_PATH, "storage",
                                 "%s%s%s is neither a folder nor a regular "
                                 "file",
                                 where, *where ? "/" : "", rel);
        else
            source_chain(rfd, rel, &r, storage ? &storage->chain : NULL, s);
        close(r.fd);
    }
    if (!storage)
        close(rfd);
    return rc;
}

/* How s breaks f ("is", "contains", "lies in"), or NULL. */
static const char *violation(const forbidden_t *f, const source_t *s)
{
    if (!strcmp(s->canon, f->canon))
        return "is";
    if (forge_path_is_under(f->canon, s->canon))
        return "contains";
    if (!f->may_lie_below && forge_path_is_under(s->canon, f->canon))
        return "lies in";
    if (!f->chain.n || !s->chain.n)
        return NULL;
    for (size_t k = 0; k < s->chain.n; k++) {
        if (!same_id(s->chain.id[k], f->chain.id[0]))
            continue;
        if (k == 0 && s->exists)
            return "is";
        if (!f->may_lie_below)
            return "lies in";
    }
    for (size_t k = 1; s->exists && k < f->chain.n; k++)
        if (same_id(f->chain.id[k], s->chain.id[0]))
            return "contains";
    return NULL;
}

/* The root a mount source lies under: the storage root, else the longest
 * FORGE_MOUNT_ALLOW prefix; NULL when none. *rel: the rest. */
static const char *root_of(const forge_config_t *cfg, const char *norm,
                           const char **rel)
{
    const char *best = NULL;

    if (cfg->storage_root && (*rel = forge_path_below(norm, cfg->storage_root)))
        return cfg->storage_root;
    for (size_t i = 0; i < cfg->mount_allow_count; i++) {
        const char *r = forge_path_below(norm, cfg->mount_allow[i]);
        if (r && (!best || strlen(cfg->mount_allow[i]) > strlen(best))) {
            best = cfg->mount_allow[i];
            *rel = r;
        }
    }
    return best;
}

static forge_rc_t check_mount(const forge_request_t *req,
                              const forge_config_t *cfg, const guard_t *g,
                              size_t i, forge_error_t *err)
{
    char *source = forge_path_mount_source(cfg, &req->launch.mounts[i]);
    char *norm = forge_path_normalize(source), field[64];
    const char *rel = NULL, *root = norm ? root_of(cfg, norm, &rel) : NULL;
    source_t s = {NULL, {{{0}}, 0}, false};
    forge_error_t why = {0};
    forge_rc_t rc = FORGE_OK;

    snprintf(field, sizeof(field), ".mounts[%zu].source", i);
    if (!root)
        rc = refuse(err, FORGE_EMOUNT_REFUSED, req, field,
                    "is outside the storage root and FORGE_MOUNT_ALLOW");
    else if (resolve_source(g, root, root == cfg->storage_root ? "" : root, rel,
                            &s, &why))
        rc = refuse(err, FORGE_EMOUNT_REFUSED, req, field,
                    "is refused: %s (no link is followed in a mount source)",
                    why.message);
    for (size_t k = 0; !rc && k < g->count; k++) {
        const char *how = violation(&g->f[k], &s);
        if (how)
            rc = refuse(err, FORGE_EMOUNT_REFUSED, req, field, "%s %s", how,
                        g->f[k].what);
    }
    free(s.canon);
    free(norm);
    free(source);
    return rc;
}

static forge_rc_t check_mounts(const forge_request_t *req,
                               const forge_config_t *cfg, forge_error_t *err)
{
    guard_t g;
    forge_error_t why = {0};
    forge_rc_t rc = FORGE_OK;

    if (req->launch.mount_count == 0)
        return FORGE_OK;
    if (guard_init(cfg, &g, &why))
        rc = refuse(err, FORGE_EMOUNT_REFUSED, req, ".mounts",
                    "cannot be checked: %s", why.message);
    for (size_t i = 0; !rc && i < req->launch.mount_count; i++)
        rc = check_mount(req, cfg, &g, i, err);
    guard_clear(&g);
    return rc;
}

static forge_rc_t check_series(const forge_request_t *req,
                               const forge_series_catalog_t *catalog,
                               forge_error_t *err)
{
    const forge_launch_t *l = &req->launch;

    for (size_t i = 0; i < l->pool_count; i++) {
        const forge_pool_t *pool = &l->pools[i];
        const forge_series_t *s = forge_series_find(catalog, pool->series);
        char rel[64];

        snprintf(rel, sizeof(rel), ".pools[%zu].series", i);
        if (!s)
            return refuse(err, FORGE_ESERIES_UNKNOWN, req, rel,
                          "names a GPU series this fleet does not know "
                          "(\"%s\")",
                          pool->series);
        if (!s->constraint)
            return refuse(err, FORGE_ESERIES_UNCONSTRAINED, req, rel,
                          "names series \"%s\", which has no Slurm "
                          "constraint: refused rather than run on "
                          "arbitrary nodes",
                          pool->series);
        if (s->gpus_per_node && pool->gpus_per_node > s->gpus_per_node) {
            snprintf(rel, sizeof(rel), ".pools[%zu].gpus_per_node", i);
            return refuse(err, FORGE_ESCHEMA, req, rel,
                          "asks more GPUs than a node of series %s has",
                          pool->series);
        }
    }
    return FORGE_OK;
}

/* enroot-pyxis: the task wrapper exports env names with /bin/sh, which
 * cannot pass the names it owns (render.h); refused here rather than stop
 * the job at its start. */
static forge_rc_t check_shell_owned(const forge_request_t *req,
                                    const char *field, const forge_kv_t *kv,
                                    size_t count, forge_error_t *err)
{
    for (size_t i = 0; i < count; i++) {
        char rel[FORGE_ERROR_FIELD_MAX];
        if (!forge_render_shell_owns(kv[i].key))
            continue;
        snprintf(rel, sizeof(rel), ".%s.%s", field, kv[i].key);
        return refuse(err, FORGE_EENV_REFUSED, req, rel,
                      "is a variable /bin/sh owns (computed or read-only): "
                      "the enroot-pyxis profile cannot pass it to the "
                      "program");
    }
    return FORGE_OK;
}

static forge_rc_t check_env_shell(const forge_request_t *req,
                                  const forge_config_t *cfg, forge_error_t *err)
{
    const forge_launch_t *l = &req->launch;
    forge_rc_t rc;

    if (cfg->runtime_profile != FORGE_PROFILE_ENROOT_PYXIS)
        return FORGE_OK;
    if ((rc = check_shell_owned(req, "env", l->env, l->env_count, err)))
        return rc;
    return check_shell_owned(req, "secret_env", l->secret_env,
                             l->secret_env_count, err);
}

forge_rc_t forge_request_check(const forge_request_t *req,
                               const forge_config_t *cfg,
                               const forge_series_catalog_t *catalog,
                               forge_error_t *err)
{
    forge_rc_t rc;

    if (req->kind != FORGE_REQUEST_LAUNCH)
        return FORGE_OK;
    if ((rc = check_image(req, cfg, err)))
        return rc;
    if ((rc = check_mounts(req, cfg, err)))
        return rc;
    if ((rc = check_env_shell(req, cfg, err)))
        return rc;
    return check_series(req, catalog, err);
}
