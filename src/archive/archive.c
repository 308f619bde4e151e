/* SPDX-License-Identifier: Apache-2.0 */
/*
 * archive.c - logs.tar.gz from a staging folder (archive.h). libarchive
 * writes the tar+gzip stream (pax restricted format, gzip without its
 * timestamp: same files, same bytes) through our write callback, which
 * hashes (sha256.h) what it writes, so the archive is read once.
 * Every file operation goes through safe_fs.h, beneath a descriptor of the
 * storage root: a link planted by a job anywhere on the way (at `staging`,
 * the staging folder, `artifacts`, ...) is refused or skipped, never
 * followed, and so is a file with more than one hard link (it may be
 * another launch's or root's). The archive is created, linked into place,
 * re-read and synced by descriptors of its folder only.
 */
#include "archive/archive.h"
#include "archive/archive_int.h"
#include "clock/timestamp.h"
#include "base/buf.h"
#include "log/log.h"
#include "secrets/redact.h"
#include "fs/paths.h"
#include "render/render.h"
#include "fs/safe_fs.h"
#include "secrets/secrets.h"
#include "render/staging.h"
#include "text/utf8.h"
#include "base/util.h"

#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define CHUNK     (256 * 1024)
#define MAX_DEPTH 8
#define MAX_FILES 10000

/* Files of the worker's own in the staging folder: never archived (nor
 * any run's credentials file, render.h: a requeued job's left unread). */
static const char *const own_files[] = {FORGE_STAGING_SCRIPT, NULL};

typedef struct sink {
    int fd;
    forge_sha256_t *sha;
    uint64_t bytes;
} sink_t;

static la_ssize_t sink_write(struct archive *a, void *ctx, const void *buf,
                             size_t len)
{
    sink_t *s = ctx;

    if (!forge_write_all(s->fd, buf, len)) {
        archive_set_error(a, errno, "write: %s", strerror(errno));
        return -1;
    }
    forge_sha256_update(s->sha, buf, len);
    s->bytes += len;
    return (la_ssize_t)len;
}

/* ---- which files ---------------------------------------------------------
 */

/* Names an event can carry (schemas/logs-archived.v1.json): UTF-8, no
 * control characters. A file named otherwise is not archived. */
static bool name_ok(const char *name)
{
    const unsigned char *p = (const unsigned char *)name;
    size_t left = strlen(name);

    while (left > 0) {
        size_t n = forge_utf8_len(p, left);
        if (n == 0 || *p < 0x20 || *p == 0x7f)
            return false;
        p += n;
        left -= n;
    }
    return true;
}

static void push(char ***list, size_t *count, char *name)
{
    *list = forge_xrealloc(*list, (*count + 1) * sizeof(char *));
    (*list)[(*count)++] = name;
}

static bool is_own(const char *rel)
{
    if (forge_render_is_credentials_name(rel))
        return true;
    for (size_t i = 0; own_files[i]; i++)
        if (!strcmp(rel, own_files[i]))
            return true;
    return false;
}

static void list_dir(int dfd, const char *prefix, int depth,
                     forge_archive_listing_t *l)
{
    DIR *d = fdopendir(dfd);
    struct dirent *de;

    if (!d) {
        close(dfd);
        return;
    }
    while ((de = readdir(d)) && l->count < MAX_FILES) {
        struct stat st;
        char *rel;
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") ||
            !name_ok(de->d_name))
            continue;
        if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
            continue;
        rel = *prefix ? forge_path_join(prefix, de->d_name)
                      : forge_xstrdup(de->d_name);
        if (is_own(rel)) {
            free(rel);
            continue;
        }
        if (S_ISREG(st.st_mode) && st.st_nlink == 1) {
            push(&l->names, &l->count, rel);
            continue;
        }
        if (!S_ISDIR(st.st_mode)) { /* a link, FIFO, ..., or a hard link */
            push(&l->refused, &l->refused_count, rel);
            continue;
        }
        if (depth < MAX_DEPTH) {
            int sub = openat(dirfd(d), de->d_name,
                             O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (sub >= 0)
                list_dir(sub, rel, depth + 1, l);
        }
        free(rel);
    }
    closedir(d);
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* ---- writing ------------------------------------------------------------- */

/* Opens rel under the staging folder without following any link, and
 * without waiting: a FIFO, a link, a hard link or anything but a regular
 * file put there since the listing gives -1 (safe_fs.h). *st: its fstat. */
static int open_rel(int root, const char *rel, struct stat *st)
{
    int fd = -1;

    if (forge_fs_open_file(root, "", rel, &fd, st, NULL))
        return -1;
    return fd;
}

/* One file into the archive, as big as it was when its header was
 * written: a file that grows meanwhile is cut there, one that shrinks is
 * padded (by the writer), so *bytes is what the entry holds. 1: added;
 * 0: unreadable (skipped); -1: the archive itself failed. */
static int add_file(struct archive *a, int root, const char *rel,
                    uint64_t *bytes)
{
    struct archive_entry *e;
    struct stat st;
    int fd = open_rel(root, rel, &st);
    char *buf;
    int rc = 1;

    if (fd < 0)
        return 0;
    e = archive_entry_new();
    archive_entry_set_pathname(e, rel);
    archive_entry_set_filetype(e, AE_IFREG);
    archive_entry_set_perm(e, 0644);
    archive_entry_set_size(e, st.st_size);
    archive_entry_set_mtime(e, st.st_mtim.tv_sec, 0);
    if (archive_write_header(a, e) < ARCHIVE_WARN)
        rc = -1; /* WARN: written, the name as raw bytes (hdrcharset) */
    buf = forge_xmalloc(CHUNK);
    for (uint64_t done = 0; rc == 1 && done < (uint64_t)st.st_size;) {
        uint64_t left = (uint64_t)st.st_size - done;
        ssize_t n = read(fd, buf, left < CHUNK ? (size_t)left : CHUNK);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break; /* shrank: the writer pads the entry */
        if (archive_write_data(a, buf, (size_t)n) < 0)
            rc = -1;
        done += (uint64_t)n;
    }
    *bytes = (uint64_t)st.st_size;
    free(buf);
    archive_entry_free(e);
    close(fd);
    return rc;
}

static struct archive *new_writer(sink_t *sink)
{
    struct archive *a = archive_write_new();

    archive_write_add_filter_gzip(a);
    archive_write_set_filter_option(a, "gzip", "timestamp", NULL);
    archive_write_set_format_pax_restricted(a);
    archive_write_set_bytes_in_last_block(a, 1);
    if (archive_write_open2(a, sink, NULL, sink_write, NULL, NULL) !=
        ARCHIVE_OK) {
        archive_write_free(a);
        return NULL;
    }
    return a;
}

/* ---- the tail ------------------------------------------------------------ */

#define TAIL_MAX        FORGE_ARCHIVE_TAIL_MAX
#define SECRET_PART_MIN FORGE_SECRET_PART_MIN /* secrets.h */

/* Where the last TAIL_MAX bytes of text start: at a line start when there
 * is one (the byte before the window counts, when text has it); *mid_line
 * when the start cuts a line. */
static size_t tail_start(const char *text, size_t len, bool from_start,
                         bool *mid_line)
{
    size_t start = len > TAIL_MAX ? len - TAIL_MAX : 0;
    const char *nl;

    *mid_line = false;
    if ((from_start && len <= TAIL_MAX) ||
        (start > 0 && text[start - 1] == '\n'))
        return start;
    if (len > start && (nl = memchr(text + start, '\n', len - start)) &&
        nl + 1 < text + len)
        return (size_t)(nl + 1 - text);
    *mid_line = true;
    return start;
}

/* How many bytes of the secret's end open text (a cut through it), or 0. */
static size_t secret_end_at_head(const char *text, size_t len,
                                 const char *secret, size_t slen)
{
    for (size_t k = slen; k-- > SECRET_PART_MIN;)
        if (k <= len && !memcmp(text, secret + slen - k, k))
            return k;
    return 0;
}

/* How many bytes of the secret's start close text (a log ending inside
 * it), or 0. */
static size_t secret_start_at_end(const char *text, size_t len,
                                  const char *secret, size_t slen)
{
    for (size_t k = slen; k-- > SECRET_PART_MIN;)
        if (k <= len && !memcmp(text + len - k, secret, k))
            return k;
    return 0;
}

/* Where secret shows in the window w[0..n): each whole occurrence, its end
 * opening the window when the window cuts a line (cut_head), its start
 * closing the window. */
void forge_archive_find_secret(forge_redact_runs_t *s, const char *w, size_t n,
                               bool cut_head, const char *secret)
{
    size_t slen = secret ? strlen(secret) : 0, k;

    if (!slen)
        return;
    forge_redact_find(s, w, n, secret, slen);
    if (cut_head && (k = secret_end_at_head(w, n, secret, slen)))
        forge_redact_add(s, 0, k);
    if ((k = secret_start_at_end(w, n, secret, slen)))
        forge_redact_add(s, n - k, n);
}

/* text[0..len) as valid UTF-8 without NULs. */
void forge_archive_put_clean(forge_buf_t *b, const char *text, size_t len)
{
    const unsigned char *p = (const unsigned char *)text;

    for (size_t i = 0; i < len;) {
        size_t n = forge_utf8_len(p + i, len - i);
        if (n == 0 || p[i] == 0) {
            forge_buf_puts(b, "\xEF\xBF\xBD");
            i++;
        } else {
            forge_buf_append(b, p + i, n);
            i += n;
        }
    }
}

/* True when a run opens the window (a secret's end cut by it). */
static bool opens_window(const forge_redact_runs_t *s)
{
    for (size_t k = 0; k < s->count; k++)
        if (s->at[k].start == 0)
            return true;
    return false;
}

/* The replacements can make the text longer than it was: its last TAIL_MAX
 * bytes, cut as tail_start cuts. New string; b emptied. */
static char *take_last(forge_buf_t *b)
{
    const char *s = forge_buf_str(b);
    size_t len = b->len, start;
    bool mid_line;
    char *out;

    if (len <= TAIL_MAX)
        return forge_buf_take(b);
    start = tail_start(s, len, false, &mid_line);
    /* s is valid UTF-8: a character boundary */
    start = forge_utf8_boundary((const unsigned char *)s, len, start);
    out = forge_xstrdup(s + start);
    forge_buf_clear(b);
    return out;
}

char *forge_archive_tail_text(const char *text, size_t len, bool from_start,
                              const char *const *secrets, size_t count)
{
    const unsigned char *p = (const unsigned char *)text;
    forge_buf_t b = FORGE_BUF_INIT;
    forge_redact_runs_t s = {NULL, 0};
    size_t start, at = 0;
    bool mid_line;

    start = tail_start(text, len, from_start, &mid_line);
    for (size_t i = 0; secrets && i < count; i++)
        forge_archive_find_secret(&s, text + start, len - start, mid_line,
                                  secrets[i]);
    forge_secrets_find(&s, text + start, len - start);
    forge_secrets_find_cut(&s, text + start, len - start, mid_line);
    /* a character boundary, unless a secret's end opens the window */
    if (!opens_window(&s))
        at = forge_utf8_boundary(p + start, len - start, 0);
    forge_redact_write(&b, text + start, len - start, at, &s,
                       forge_archive_put_clean);
    forge_redact_clear(&s);
    return take_last(&b);
}

/* The main log's tail, when it is a regular file (never a link, a FIFO). */
static void read_tail(int root, const char *name,
                      const forge_archive_spec_t *spec, forge_archive_t *out)
{
    char buf[TAIL_MAX + 1]; /* + the byte before: is it a line start? */
    struct stat st;
    int fd = open_rel(root, name, &st);
    off_t at = 0;
    ssize_t n;

    if (fd < 0)
        return;
    if (st.st_size > TAIL_MAX)
        at = st.st_size - (TAIL_MAX + 1);
    n = pread(fd, buf, sizeof(buf), at);
    close(fd);
    if (n < 0)
        return;
    out->tail_name = forge_xstrdup(name);
    out->tail_text = forge_archive_tail_text(buf, (size_t)n, at == 0,
                                             spec->secrets, spec->secret_count);
}

/* ---- the whole ----------------------------------------------------------- */

static void note_missing(const forge_archive_spec_t *spec, forge_archive_t *out)
{
    static const char *const kinds[] = {"out", "err"};

    for (size_t i = 0; i < spec->pool_count; i++) {
        for (size_t k = 0; k < 2; k++) {
            char name[128];
            bool found = false;
            snprintf(name, sizeof(name), "%s.%s", spec->pools[i], kinds[k]);
            for (size_t f = 0; f < out->file_count && !found; f++)
                found = !strcmp(out->files[f].name, name);
            if (found)
                continue;
            out->missing = forge_xrealloc(
                out->missing, (out->missing_count + 1) * sizeof(char *));
            out->missing[out->missing_count++] = forge_xstrdup(name);
        }
    }
}

static forge_rc_t write_all(struct archive *a, int root,
                            forge_archive_listing_t *l, forge_archive_t *out,
                            forge_error_t *err)
{
    for (size_t i = 0; i < l->count; i++) {
        uint64_t bytes = 0;
        int rc = add_file(a, root, l->names[i], &bytes);
        if (rc < 0)
            return forge_error_set(err, FORGE_EIO, out->path, "archive %s: %s",
                                   out->path, archive_error_string(a));
        if (rc == 0)
            continue; /* unreadable: listed as missing if expected */
        out->files = forge_xrealloc(out->files, (out->file_count + 1) *
                                                    sizeof(*out->files));
        out->files[out->file_count].name = l->names[i];
        out->files[out->file_count++].bytes = bytes;
        l->names[i] = NULL;
    }
    if (archive_write_close(a) != ARCHIVE_OK)
        return forge_error_set(err, FORGE_EIO, out->path, "archive %s: %s",
                               out->path, archive_error_string(a));
    return FORGE_OK;
}

/* Where the archive goes: its folder beneath the storage root, made (W
 * 0711, W 0711, W:J.gid 0750, safe_fs.h), and its names. */
typedef struct target {
    int fd;      /* artifacts/<launch_id>/<attempt> */
    char *rel;   /* that folder, storage-relative, for messages */
    gid_t group; /* the job's group: may read the archive */
} target_t;

/* <artifacts>/<launch_id>/<attempt>, created; t->fd open, out's paths
 * set. */
static forge_rc_t prepare_target(const forge_config_t *cfg, int root,
                                 const forge_archive_spec_t *spec, target_t *t,
                                 forge_archive_t *out, forge_error_t *err)
{
    const forge_fs_level_t levels[] = {
        {0711, FORGE_FS_KEEP, FORGE_FS_REPLACE}, /* artifacts */
        {0711, FORGE_FS_KEEP, FORGE_FS_REPLACE}, /* <launch_id> */
        {0750, {(uid_t)-1, t->group}, FORGE_FS_REPLACE},
    };
    forge_buf_t rel = FORGE_BUF_INIT;

    forge_buf_printf(&rel, "artifacts/%s/%d", spec->launch_id, spec->attempt);
    t->rel = forge_xstrdup(forge_buf_str(&rel));
    forge_buf_puts(&rel, "/" FORGE_ARCHIVE_NAME);
    out->relative_path = forge_buf_take(&rel);
    out->path = forge_path_join(cfg->storage_root, out->relative_path);
    return forge_fs_mkdirs(root, "", t->rel, levels, 3, &t->fd, err);
}

/* The sink's digest and size redone over the archive already in place,
 * which must be the worker's own single-link regular file. */
static forge_rc_t hash_existing(const target_t *t, sink_t *sink,
                                forge_error_t *err)
{
    char *buf, who[32];
    struct stat st;
    ssize_t n = 0;
    int fd;
    forge_rc_t rc;

    if ((rc = forge_fs_open_file(t->fd, t->rel, FORGE_ARCHIVE_NAME, &fd, &st,
                                 err)))
        return rc;
    if (fd < 0)
        return forge_error_set(err, FORGE_EIO, "storage",
                               "%s/" FORGE_ARCHIVE_NAME " vanished", t->rel);
    if (st.st_uid != geteuid()) {
        close(fd);
        return forge_error_set(err, FORGE_EUNSAFE_PATH, "storage",
                               "%s/" FORGE_ARCHIVE_NAME " is owned by %s, not "
                               "the worker",
                               t->rel,
                               forge_fs_uid_name(st.st_uid, who, sizeof(who)));
    }
    buf = forge_xmalloc(CHUNK);
    forge_sha256_restart(sink->sha);
    sink->bytes = 0;
    while ((n = read(fd, buf, CHUNK)) > 0 || (n < 0 && errno == EINTR)) {
        if (n < 0)
            continue;
        forge_sha256_update(sink->sha, buf, (size_t)n);
        sink->bytes += (uint64_t)n;
    }
    if (n < 0)
        rc = forge_error_set(err, FORGE_EIO, "storage",
                             "read %s/" FORGE_ARCHIVE_NAME ": %s", t->rel,
                             strerror(errno));
    close(fd);
    free(buf);
    return rc;
}

/* An entry at the archive's name that is not the worker's own single-link
 * regular file was planted by a job (the folder was its, once): its name is
 * removed - unlinking never follows a link nor touches another name of a
 * hard-linked file - so the worker's archive can take the place. True when
 * it removed one. */
static bool drop_foreign_archive(const target_t *t)
{
    struct stat st;

    if (fstatat(t->fd, FORGE_ARCHIVE_NAME, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
        (S_ISREG(st.st_mode) && st.st_nlink == 1 && st.st_uid == geteuid()))
        return false;
    if (unlinkat(t->fd, FORGE_ARCHIVE_NAME, 0) != 0)
        return false;
    forge_log_warn("%s/" FORGE_ARCHIVE_NAME " was not the worker's (mode "
                   "%04o, uid %u, %u links): removed, never read",
                   t->rel, (unsigned)st.st_mode, (unsigned)st.st_uid,
                   (unsigned)st.st_nlink);
    return true;
}

static forge_rc_t finish_file(sink_t *sink, const target_t *t, const char *tmp,
                              forge_archive_t *out, forge_error_t *err)
{
    forge_rc_t rc;

    if (fsync(sink->fd) != 0 || close(sink->fd) != 0) {
        sink->fd = -1;
        return forge_error_set(err, FORGE_EIO, "storage", "sync %s/%s: %s",
                               t->rel, tmp, strerror(errno));
    }
    sink->fd = -1;
    /* Into place without ever replacing an archive: link() fails with
     * EEXIST when one is there already (a redo after a crash, or an old
     * owner finishing late after a rebalance). That one was whole when it
     * was linked and may be published already, so it stays, and it is the
     * one described. link() is atomic on NFS too, unlike RENAME_NOREPLACE.
     * linkat without AT_SYMLINK_FOLLOW, both names in the folder's
     * descriptor: nothing is followed. */
    int linked = linkat(t->fd, tmp, t->fd, FORGE_ARCHIVE_NAME, 0);

    if (linked != 0 && errno == EEXIST && drop_foreign_archive(t))
        linked = linkat(t->fd, tmp, t->fd, FORGE_ARCHIVE_NAME, 0);

    if (linked != 0 && errno != EEXIST)
        return forge_error_set(err, FORGE_EIO, "storage", "link to %s: %s",
                               out->relative_path, strerror(errno));
    if (linked != 0 && (rc = hash_existing(t, sink, err)))
        return rc;
    unlinkat(t->fd, tmp, 0);
    forge_fs_sync_dir(t->fd); /* the link itself made durable */
    forge_sha256_final_hex(sink->sha, out->sha256);
    out->bytes = sink->bytes;
    out->at_ms = forge_timestamp_now_ms();
    return FORGE_OK;
}

/* The listed files into the archive's place. A temporary of its own beside
 * it (safe_fs.h: unique per writer, W:J.gid 0640): two writers of one
 * archive at once (a partition that moved while its archive ran) never
 * share one, so each links a whole archive. */
static forge_rc_t write_archive(int root, forge_archive_listing_t *l,
                                const target_t *t, forge_archive_t *out,
                                forge_error_t *err)
{
    sink_t sink = {-1, forge_sha256_new(), 0};
    forge_fs_owner_t group = {(uid_t)-1, t->group};
    struct archive *a = NULL;
    char *tmp = NULL;
    forge_rc_t rc;

    if ((rc = forge_fs_create_temp(t->fd, t->rel, FORGE_ARCHIVE_NAME, 0640,
                                   group, &tmp, &sink.fd, err)))
        goto out;
    if (!(a = new_writer(&sink))) {
        rc = forge_error_set(err, FORGE_EIO, "storage",
                             "cannot write %s/%s: libarchive", t->rel, tmp);
        goto out;
    }
    if (!(rc = write_all(a, root, l, out, err)))
        rc = finish_file(&sink, t, tmp, out, err);
out:
    if (a)
        archive_write_free(a);
    if (sink.fd >= 0)
        close(sink.fd);
    if (rc && tmp)
        unlinkat(t->fd, tmp, 0);
    forge_sha256_destroy(sink.sha);
    free(tmp);
    return rc;
}

void forge_archive_list(int root, forge_archive_listing_t *l)
{
    if (root >= 0)
        list_dir(dup(root), "", 0, l);
    if (l->count > 1)
        qsort(l->names, l->count, sizeof(char *), by_name);
    if (l->refused_count > 1)
        qsort(l->refused, l->refused_count, sizeof(char *), by_name);
}

/* The staging folder beneath the storage root (*sroot), no link on the
 * way: *fd -1 when it does not exist. */
static forge_rc_t open_staging(const forge_config_t *cfg, const char *launch_id,
                               int attempt, int *sroot, int *fd,
                               forge_error_t *err)
{
    char *rel;
    forge_rc_t rc;

    *fd = -1;
    if ((rc = forge_fs_open_root(cfg->storage_root, sroot, err)))
        return rc;
    rel = forge_staging_rel(launch_id, attempt);
    rc = forge_fs_open(*sroot, "", rel, O_RDONLY | O_DIRECTORY, 0, fd, NULL,
                       err);
    free(rel);
    return rc;
}

forge_rc_t forge_archive_open_staging(const forge_config_t *cfg,
                                      const char *launch_id, int attempt,
                                      int *sroot, int *fd, char **unsafe,
                                      forge_error_t *err)
{
    forge_error_t inner = {0};
    forge_rc_t rc;

    *sroot = -1;
    rc = open_staging(cfg, launch_id, attempt, sroot, fd, &inner);
    if (rc == FORGE_EUNSAFE_PATH && *sroot >= 0) {
        *unsafe = forge_xstrdup(inner.message);
        return FORGE_OK;
    }
    if (rc)
        forge_error_set(err, rc, inner.field, "%s", inner.message);
    return rc;
}

/* The error of a refusal names the folder it was in: "staging" (the logs
 * cannot be read) or "artifacts" (they can, once the target is fixed). */
static forge_rc_t blame(forge_error_t *err, forge_rc_t rc, const char *field)
{
    if (err && rc && err->code == rc)
        snprintf(err->field, sizeof(err->field), "%s", field);
    return rc;
}

static void close_fd(int fd)
{
    if (fd >= 0)
        close(fd);
}

forge_rc_t forge_archive_logs(const forge_config_t *cfg,
                              const forge_archive_spec_t *spec,
                              forge_fs_owner_t owner, forge_archive_t *out,
                              forge_error_t *err)
{
    /* libarchive writes a non-ASCII name as a standard UTF-8 pax path only
     * under a UTF-8 locale; the worker runs in "C". This thread only. */
    locale_t utf8 = newlocale(LC_CTYPE_MASK, "C.UTF-8", (locale_t)0);
    locale_t saved = utf8 ? uselocale(utf8) : (locale_t)0;
    forge_archive_listing_t l = {NULL, 0, NULL, 0};
    target_t t = {-1, NULL, owner.gid};
    int sroot = -1, root = -1;
    forge_rc_t rc;

    memset(out, 0, sizeof(*out));
    if (!(rc = blame(err,
                     forge_archive_open_staging(cfg, spec->launch_id,
                                                spec->attempt, &sroot, &root,
                                                &out->unsafe, err),
                     "staging"))) {
        forge_archive_list(root, &l);
        out->refused = l.refused;
        out->refused_count = l.refused_count;
        rc = blame(err, prepare_target(cfg, sroot, spec, &t, out, err),
                   "artifacts");
    }
    if (!rc && !(rc = write_archive(root, &l, &t, out, err))) {
        note_missing(spec, out);
        if (spec->pool_count > 0 && root >= 0) {
            char main_log[128];
            snprintf(main_log, sizeof(main_log), "%s.out", spec->pools[0]);
            read_tail(root, main_log, spec, out);
        }
    }
    close_fd(root);
    close_fd(sroot);
    close_fd(t.fd);
    free(t.rel);
    forge_strings_free(l.names, l.count);
    if (utf8) {
        uselocale(saved);
        freelocale(utf8);
    }
    return rc;
}

void forge_archive_clear(forge_archive_t *a)
{
    if (!a)
        return;
    free(a->path);
    free(a->relative_path);
    for (size_t i = 0; i < a->file_count; i++)
        free(a->files[i].name);
    free(a->files);
    forge_strings_free(a->missing, a->missing_count);
    forge_strings_free(a->refused, a->refused_count);
    free(a->tail_name);
    free(a->tail_text);
    free(a->unsafe);
    memset(a, 0, sizeof(*a));
}
