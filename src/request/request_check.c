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
#include "request/forbidden.h"
#include "base/buf.h"
#include "fs/paths.h"
#include "text/shell.h"
#include "request/request_paths.h"
#include "fs/safe_fs.h"
#include "base/util.h"

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

/* realpath when it exists, else the path as configured (new). */
static char *canonical(const char *path)
{
    char buf[PATH_MAX];

    return forge_xstrdup(realpath(path, buf) ? buf : path);
}

/* A configured folder: beneath the storage root's descriptor (the
 * snapshot's, when there is one), no link on the way, when it lies under
 * the storage root (the runtime root does by default, and the storage's
 * owner controls what is there); else as configured
 * (forge_fs_open_root). */
static forge_rc_t open_config_dir(const forge_config_t *cfg,
                                  const forge_forbidden_set_t *set,
                                  const char *path, int *fd, forge_error_t *err)
{
    const char *rel =
        cfg->storage_root ? forge_path_below(path, cfg->storage_root) : NULL;
    int sfd;
    forge_rc_t rc;

    if (!rel || !*rel)
        return forge_fs_open_root(path, fd, err);
    if (set && set->sfd >= 0)
        sfd = set->sfd;
    else if ((rc = forge_fs_open_root(cfg->storage_root, &sfd, err)))
        return rc;
    rc = forge_fs_open(sfd, "", rel, O_PATH | O_DIRECTORY, 0, fd, NULL, err);
    if (!set || sfd != set->sfd)
        close(sfd);
    if (!rc && *fd < 0)
        rc = forge_error_set(err, FORGE_EIO, "storage", "%s does not exist",
                             path);
    return rc;
}

/* ---- image ----------------------------------------------------------------
 */

/* The image in one resolution beneath the snapshot's storage root
 * descriptor (the runtime root's path below the storage root, then rel),
 * no link in any component: true when that settles it (*fd the image, or
 * -1: there is none); false when the runtime root is not under the storage
 * root or something on the way was refused, which the way in two steps
 * (open_config_dir, then rel) then names as it always has. */
static bool open_image_at_storage(const forge_config_t *cfg,
                                  const forge_forbidden_set_t *set,
                                  const char *rel, int *fd, struct stat *st)
{
    const char *runtimes =
        set && set->sfd >= 0
            ? forge_path_below(cfg->runtime_root, cfg->storage_root)
            : NULL;
    forge_error_t ignored;
    char *joined;
    forge_rc_t rc;

    if (!runtimes || !*runtimes)
        return false;
    joined = forge_path_join(runtimes, rel);
    rc = forge_fs_open(set->sfd, "", joined, O_PATH, 0, fd, st, &ignored);
    free(joined);
    if (rc)
        *fd = -1;
    return !rc;
}

static forge_rc_t check_image(const forge_request_t *req,
                              const forge_config_t *cfg,
                              const forge_forbidden_set_t *set,
                              forge_error_t *err)
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
    path = forge_request_image_path(cfg, l);
    norm = forge_path_normalize(path);
    rel = norm ? forge_path_below(norm, cfg->runtime_root) : NULL;
    if (!rel)
        rc = refuse(err, FORGE_EIMAGE_MISSING, req, ".image.path",
                    "leads outside the runtime root (%s)", cfg->runtime_root);
    else if (*rel && !open_image_at_storage(cfg, set, rel, &fd, &st) &&
             !open_config_dir(cfg, set, cfg->runtime_root, &rfd, &why) &&
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
 * The places come from forbidden.h's snapshot (cached, revalidated at each
 * check by the rule it states).
 */

/* What no mount may be, contain, or (but the storage root) lie in: the
 * snapshot's places, in the order violations are reported (secrets, the
 * storage root, staging, artifacts). */
typedef struct guard {
    const forge_forbidden_set_t *set;
    size_t count;
} guard_t;

static void guard_init(const forge_forbidden_set_t *set, guard_t *g)
{
    g->set = set;
    g->count = set->count + (set->storage ? 2 : 0);
}

static const forge_forbidden_t *guard_at(const guard_t *g, size_t k)
{
    return k < g->set->count ? &g->set->f[k] : &g->set->own[k - g->set->count];
}

/* A mount source as resolved. */
typedef struct source {
    char *canon;         /* canonical path (new) */
    forge_chain_t chain; /* its deepest existing component and above */
    bool exists;         /* all of it */
} source_t;

/* s->chain from what forge_fs_resolve found beneath rfd (r->fd, closed by
 * the caller, is -1 when that is rfd itself); above: rfd's own chain when
 * walked already, else NULL. */
static void source_chain(int rfd, const char *rel, const forge_fs_resolved_t *r,
                         const forge_chain_t *above, source_t *s)
{
    char *parent, *slash;
    forge_error_t ignored = {0};
    int pfd = -1;

    if (S_ISDIR(r->st.st_mode)) {
        forge_chain_walk_up(r->fd >= 0 ? r->fd : rfd, &r->st, &s->chain, above,
                            r->depth);
        return;
    }
    /* a file, which exists: its folder is rel's parent */
    forge_chain_push(&s->chain, &r->st);
    parent = forge_xstrdup(rel);
    slash = strrchr(parent, '/');
    if (slash)
        *slash = '\0';
    if (!slash)
        forge_chain_walk_up(rfd, NULL, &s->chain, above, 0);
    else if (!forge_fs_open(rfd, "", parent, O_PATH | O_DIRECTORY, 0, &pfd,
                            NULL, &ignored) &&
             pfd >= 0)
        forge_chain_walk_up(pfd, NULL, &s->chain, above, r->depth - 1);
    if (pfd >= 0)
        close(pfd);
    free(parent);
}

/* rel beneath root (where: how messages name root), no link on the way.
 * A root that does not exist on this host (a FORGE_MOUNT_ALLOW prefix only
 * the cluster has) leaves only the name rules: s->chain empty. The storage
 * root comes from the snapshot: its descriptor, fstat, canonical path and
 * chain. */
static forge_rc_t resolve_source(const guard_t *g, const char *root,
                                 const char *where, const char *rel,
                                 source_t *s, forge_error_t *why)
{
    const forge_forbidden_set_t *set = g->set;
    const forge_forbidden_t *storage =
        set->sfd >= 0 && set->storage && !*where /* the storage root */
            ? set->storage
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
        rfd = set->sfd;
    else if (stat(root, &st) != 0 && errno == ENOENT)
        return FORGE_OK;
    else if ((rc = forge_fs_open_root(root, &rfd, why)))
        return rc;
    if (!(rc = forge_fs_resolve(rfd, where, rel,
                                storage ? &set->storage_st : NULL, &r, why))) {
        s->exists = r.exists;
        if (r.exists && !S_ISDIR(r.st.st_mode) && !S_ISREG(r.st.st_mode))
            rc = forge_error_set(why, FORGE_EUNSAFE_PATH, "storage",
                                 "%s%s%s is neither a folder nor a regular "
                                 "file",
                                 where, *where ? "/" : "", rel);
        else
            source_chain(rfd, rel, &r, storage ? &storage->chain : NULL, s);
        if (r.fd >= 0)
            close(r.fd);
    }
    if (!storage)
        close(rfd);
    return rc;
}

/* How s breaks f ("is", "contains", "lies in"), or NULL. */
static const char *violation(const forge_forbidden_t *f, const source_t *s)
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
        if (!forge_file_id_same(s->chain.id[k], f->chain.id[0]))
            continue;
        if (k == 0 && s->exists)
            return "is";
        if (!f->may_lie_below)
            return "lies in";
    }
    for (size_t k = 1; s->exists && k < f->chain.n; k++)
        if (forge_file_id_same(f->chain.id[k], s->chain.id[0]))
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
    char *source = forge_request_mount_source(cfg, &req->launch.mounts[i]);
    char *norm = forge_path_normalize(source), field[64];
    const char *rel = NULL, *root = norm ? root_of(cfg, norm, &rel) : NULL;
    source_t s;
    forge_error_t why = {0};
    forge_rc_t rc = FORGE_OK;

    s.canon = NULL;
    s.chain.n = 0;
    s.exists = false;
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
        const forge_forbidden_t *f = guard_at(g, k);
        const char *how = violation(f, &s);
        if (how)
            rc = refuse(err, FORGE_EMOUNT_REFUSED, req, field, "%s %s", how,
                        f->what);
    }
    free(s.canon);
    free(norm);
    free(source);
    return rc;
}

static forge_rc_t check_mounts(const forge_request_t *req,
                               const forge_config_t *cfg,
                               const forge_forbidden_set_t *set,
                               const forge_error_t *set_err, forge_error_t *err)
{
    guard_t g;
    forge_rc_t rc = FORGE_OK;

    if (req->launch.mount_count == 0)
        return FORGE_OK;
    if (!set)
        return refuse(err, FORGE_EMOUNT_REFUSED, req, ".mounts",
                      "cannot be checked: %s", set_err->message);
    guard_init(set, &g);
    for (size_t i = 0; !rc && i < req->launch.mount_count; i++)
        rc = check_mount(req, cfg, &g, i, err);
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
        if (!forge_shell_owns(kv[i].key))
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
    forge_forbidden_set_t *set = NULL;
    forge_error_t set_err;
    forge_rc_t rc;

    if (req->kind != FORGE_REQUEST_LAUNCH)
        return FORGE_OK;
    /* NULL when the storage root cannot be opened: the image is then
     * looked for as before, and mounts cannot be checked (set_err). */
    if (forge_forbidden_get(cfg, &set, &set_err))
        set = NULL;
    if (!(rc = check_image(req, cfg, set, err)))
        rc = check_mounts(req, cfg, set, &set_err, err);
    forge_forbidden_release(set);
    if (rc)
        return rc;
    if ((rc = check_env_shell(req, cfg, err)))
        return rc;
    return check_series(req, catalog, err);
}
