/* SPDX-License-Identifier: Apache-2.0 */
/*
 * live.c - a running launch's new output, read into segments (live.h).
 * One read: the staging folder opened beneath the storage root, its files
 * listed as the archive lists them (archive_int.h), each file opened
 * without following anything (safe_fs.h) and fstat'ed, the read's bytes
 * shared fairly among the files that grew, and each file's share read
 * with one pread, cut at a line end, redacted and cleaned.
 */
#include "archive/live.h"
#include "archive/archive_int.h"
#include "secrets/redact.h"
#include "fs/safe_fs.h"
#include "secrets/secrets.h"
#include "base/util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- cursors -------------------------------------------------------------
 */

forge_live_cursor_t *forge_live_cursors_copy(const forge_live_cursor_t *c,
                                             size_t count)
{
    forge_live_cursor_t *out;

    if (count == 0)
        return NULL;
    out = forge_xcalloc(count, sizeof(*out));
    for (size_t i = 0; i < count; i++) {
        out[i] = c[i];
        out[i].name = forge_xstrdup(c[i].name);
    }
    return out;
}

void forge_live_cursors_free(forge_live_cursor_t *c, size_t count)
{
    for (size_t i = 0; c && i < count; i++)
        free(c[i].name);
    free(c);
}

static forge_live_cursor_t *cursor_find(forge_live_read_t *r, const char *name)
{
    for (size_t i = 0; i < r->cursor_count; i++)
        if (!strcmp(r->cursors[i].name, name))
            return &r->cursors[i];
    return NULL;
}

/* The cursors given, then a new one at 0 for each listed file without
 * one, up to FORGE_LIVE_FILES_MAX. */
static void merge_cursors(forge_live_read_t *r, const forge_live_cursor_t *c,
                          size_t count, const forge_archive_listing_t *l)
{
    r->cursors = forge_live_cursors_copy(c, count);
    r->cursor_count = count;
    for (size_t i = 0; i < l->count; i++) {
        if (r->cursor_count >= FORGE_LIVE_FILES_MAX)
            break;
        if (cursor_find(r, l->names[i]))
            continue;
        r->cursors = forge_xrealloc(r->cursors, (r->cursor_count + 1) *
                                                    sizeof(*r->cursors));
        r->cursors[r->cursor_count++] =
            (forge_live_cursor_t){forge_xstrdup(l->names[i]), 0, 0, 0, 0};
    }
}

/* ---- one file ------------------------------------------------------------
 */

/* A file opened for this read, and what it has past its cursor. */
typedef struct open_file {
    forge_live_cursor_t *cur;
    int fd; /* -1: gone, or refused now */
    uint64_t size;
    uint64_t ino;
    uint64_t from; /* where reading starts: the offset, or 0 (restarted) */
    bool restarted;
    uint64_t share; /* the bytes it may carry in this read */
} open_file_t;

#define MARK_BYTES 32

/* The hash of the (up to) MARK_BYTES bytes before offset, never 0 (0:
 * unknown); 0 when offset is 0 or they cannot be read. FNV-1a. */
static uint32_t mark_of(int fd, uint64_t offset)
{
    unsigned char b[MARK_BYTES];
    size_t k = offset < MARK_BYTES ? (size_t)offset : MARK_BYTES;
    uint32_t h = 2166136261u;
    ssize_t got;

    if (k == 0)
        return 0;
    do
        got = pread(fd, b, k, (off_t)(offset - k));
    while (got < 0 && errno == EINTR);
    if (got != (ssize_t)k)
        return 0;
    for (size_t i = 0; i < k; i++)
        h = (h ^ b[i]) * 16777619u;
    return h | 1u;
}

static void open_one(int root, open_file_t *f)
{
    struct stat st;

    f->fd = -1;
    if (forge_fs_open_file(root, "", f->cur->name, &f->fd, &st, NULL) ||
        f->fd < 0) {
        f->fd = -1; /* a link, a FIFO, a hard link, gone: never read */
        return;
    }
    f->size = (uint64_t)st.st_size;
    f->ino = (uint64_t)st.st_ino;
    f->from = f->cur->offset;
    f->restarted =
        (f->cur->ino && f->cur->ino != f->ino) || f->size < f->cur->offset ||
        (f->cur->mark && mark_of(f->fd, f->cur->offset) != f->cur->mark);
    if (f->restarted)
        f->from = 0;
}

static uint64_t pending(const open_file_t *f)
{
    return f->fd < 0 ? 0 : f->size - f->from;
}

/* The read's bytes shared among the files: each gets an equal share of
 * what is left, a file needing less than its share leaving the rest to the
 * others (water-filling), so one chatty file never starves the others. */
static void share_out(open_file_t *f, size_t n, uint64_t total)
{
    size_t hungry = 0;

    for (size_t i = 0; i < n; i++)
        hungry += pending(&f[i]) > 0;
    while (hungry > 0 && total > 0) {
        uint64_t each = total / hungry ? total / hungry : 1;
        size_t still = 0;
        for (size_t i = 0; i < n && total > 0; i++) {
            uint64_t want = pending(&f[i]) - f[i].share, give;
            if (want == 0)
                continue;
            give = want < each ? want : each;
            give = give < total ? give : total;
            f[i].share += give;
            total -= give;
            still += f[i].share < pending(&f[i]);
        }
        hungry = still;
    }
}

static bool line_end(char c)
{
    return c == '\n' || c == '\r';
}

/* n, or less so that w[0..n) does not end inside a UTF-8 character
 * (its lead byte's length says how long it is). */
static size_t utf8_whole(const char *w, size_t n)
{
    size_t lead = n, need;
    unsigned char c;

    while (lead > 0 && n - lead < 4 &&
           ((unsigned char)w[lead - 1] & 0xC0) == 0x80)
        lead--;
    if (lead == 0)
        return n;
    c = (unsigned char)w[lead - 1];
    need = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
    return n - (lead - 1) < need ? lead - 1 : n;
}

/* Where a forced cut at n (a line longer than the read may carry) may go:
 * before a registered or own secret whose first bytes close the window
 * (it then goes whole in the next read), and never inside a UTF-8
 * character. */
static size_t forced_cut(const char *w, size_t n, const forge_live_spec_t *spec)
{
    forge_redact_runs_t runs = {NULL, 0};
    size_t cut = n;

    forge_secrets_find_cut(&runs, w, n, false);
    for (size_t i = 0; i < spec->secret_count; i++)
        forge_archive_find_secret(&runs, w, n, false, spec->secrets[i]);
    for (size_t i = 0; i < runs.count; i++)
        if (runs.at[i].end == n && runs.at[i].start > 0 &&
            runs.at[i].start < cut)
            cut = runs.at[i].start;
    forge_redact_clear(&runs);
    return utf8_whole(w, cut);
}

/* How much of the window w[0..n) goes now: through its last line end; all
 * of it when the file stopped growing at its end or this is the last
 * read; a forced cut when a line fills the whole share; else nothing. */
static size_t cut_at(const char *w, size_t n, bool at_eof, bool still,
                     bool full, const forge_live_spec_t *spec)
{
    size_t last = n;

    if (n == 0)
        return 0;
    if (at_eof && (still || spec->final))
        return n;
    while (last > 0 && !line_end(w[last - 1]))
        last--;
    if (last > 0)
        return last;
    return full ? forced_cut(w, n, spec) : 0;
}

/* The window's text: secrets redacted (a secret's end opening it too,
 * when it starts inside a line), valid UTF-8. New. */
static char *clean_text(const char *w, size_t n, bool cut_head,
                        const forge_live_spec_t *spec)
{
    forge_redact_runs_t runs = {NULL, 0};
    forge_buf_t b = FORGE_BUF_INIT;

    for (size_t i = 0; i < spec->secret_count; i++)
        forge_archive_find_secret(&runs, w, n, cut_head, spec->secrets[i]);
    forge_secrets_find(&runs, w, n);
    forge_secrets_find_cut(&runs, w, n, cut_head);
    forge_redact_write(&b, w, n, 0, &runs, forge_archive_put_clean);
    forge_redact_clear(&runs);
    forge_buf_str(&b); /* "" rather than NULL for an empty text */
    return forge_buf_take(&b);
}

static void add_segment(forge_live_read_t *r, const open_file_t *f,
                        uint64_t offset, uint64_t skipped, char *text,
                        uint64_t length)
{
    forge_live_segment_t *s;

    r->segments = forge_xrealloc(r->segments,
                                 (r->segment_count + 1) * sizeof(*r->segments));
    s = &r->segments[r->segment_count++];
    *s = (forge_live_segment_t){forge_xstrdup(f->cur->name),
                                offset,
                                length,
                                text,
                                skipped,
                                f->restarted};
    r->bytes += length;
}

/* A file more than skip_over behind goes ahead to its last `share` bytes;
 * *from moves, and what it passed is returned. */
static uint64_t skip_ahead(const open_file_t *f, uint64_t *from,
                           const forge_live_spec_t *spec)
{
    uint64_t behind = f->size - *from;

    if (behind <= spec->skip_over || behind <= f->share)
        return 0;
    *from = f->size - f->share;
    return behind - f->share;
}

/* pread of len bytes at off, whole or as much as the file has: bytes read,
 * or -1. */
static ssize_t read_at(int fd, char *buf, size_t len, uint64_t off)
{
    size_t done = 0;

    while (done < len) {
        ssize_t n = pread(fd, buf + done, len - done, (off_t)(off + done));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -1;
        if (n == 0)
            break;
        done += (size_t)n;
    }
    return (ssize_t)done;
}

/* After a skip, the window starts at the next line start when it has one
 * (w[0] is the byte before the window). How many bytes that moves. */
static size_t to_line_start(const char *w, size_t n)
{
    for (size_t i = 0; i + 1 < n; i++)
        if (line_end(w[i]))
            return i;
    return 0;
}

/* One file's share, read into a segment (or none: nothing new, or only a
 * line still being written). */
static void read_one(open_file_t *f, const forge_live_spec_t *spec,
                     forge_live_read_t *r)
{
    uint64_t from = f->from, skipped = skip_ahead(f, &from, spec);
    size_t want = (size_t)(f->size - from), lead = from > 0, cut, moved = 0;
    bool still = f->size == f->cur->seen_size && !f->restarted;
    char *buf;
    ssize_t got;

    if (want > f->share)
        want = (size_t)f->share;
    f->cur->ino = f->ino;
    f->cur->seen_size = f->size;
    if (want == 0 && !skipped) {
        if (f->restarted) /* truncated to nothing (yet): say so */
            add_segment(r, f, 0, 0, forge_xstrdup(""), 0);
        f->cur->offset = from;
        f->cur->mark = mark_of(f->fd, from);
        return;
    }
    buf = forge_xmalloc(want + 1);
    got = read_at(f->fd, buf, want + lead, from - lead);
    if (got < (ssize_t)lead) {
        free(buf);
        return; /* unreadable now: tried again at the next read */
    }
    want = (size_t)got - lead;
    if (skipped && lead)
        moved = to_line_start(buf, want + lead);
    cut = cut_at(buf + lead + moved, want - moved, from + want == f->size,
                 still, want == f->share, spec);
    if (cut > 0 || skipped || f->restarted) {
        bool head = lead && !line_end(buf[moved]);
        char *text = clean_text(buf + lead + moved, cut, head, spec);
        add_segment(r, f, from + moved, skipped + moved, text, cut);
        f->cur->offset = from + moved + cut;
        f->cur->mark = mark_of(f->fd, f->cur->offset);
    }
    free(buf);
}

/* ---- the read ------------------------------------------------------------
 */

static void read_files(int root, const forge_live_spec_t *spec,
                       forge_live_read_t *r)
{
    uint64_t total =
        spec->allowance < spec->max_bytes ? spec->allowance : spec->max_bytes;
    open_file_t *f =
        forge_xcalloc(r->cursor_count ? r->cursor_count : 1, sizeof(*f));

    for (size_t i = 0; i < r->cursor_count; i++) {
        f[i].cur = &r->cursors[i];
        open_one(root, &f[i]);
    }
    share_out(f, r->cursor_count, total);
    for (size_t i = 0; i < r->cursor_count; i++) {
        if (f[i].fd < 0)
            continue;
        read_one(&f[i], spec, r);
        close(f[i].fd);
    }
    free(f);
}

forge_rc_t forge_live_read(const forge_config_t *cfg,
                           const forge_live_spec_t *spec,
                           const forge_live_cursor_t *cursors, size_t count,
                           forge_live_read_t *out, forge_error_t *err)
{
    forge_archive_listing_t l = {NULL, 0, NULL, 0};
    int sroot = -1, root = -1;
    forge_rc_t rc;

    memset(out, 0, sizeof(*out));
    rc = forge_archive_open_staging(cfg, spec->launch_id, spec->attempt, &sroot,
                                    &root, &out->unsafe, err);
    if (rc == FORGE_OK && root >= 0)
        forge_archive_list(root, &l);
    merge_cursors(out, cursors, count, &l);
    if (rc == FORGE_OK && root >= 0)
        read_files(root, spec, out);
    forge_strings_free(l.names, l.count);
    forge_strings_free(l.refused, l.refused_count);
    if (root >= 0)
        close(root);
    if (sroot >= 0)
        close(sroot);
    return rc;
}

void forge_live_read_clear(forge_live_read_t *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->segment_count; i++) {
        free(r->segments[i].file);
        free(r->segments[i].text);
    }
    free(r->segments);
    forge_live_cursors_free(r->cursors, r->cursor_count);
    free(r->unsafe);
    memset(r, 0, sizeof(*r));
}
