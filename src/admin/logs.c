/* SPDX-License-Identifier: Apache-2.0 */
/*
 * logs.c - the printer of `forge-worker logs` (logs.h): the logs topic's
 * events of one launch's attempt in, an operator's view of its files out.
 * Pure (no Kafka, no clock): what it prints, and why, is logs.h's comment;
 * it prints in the order of arrival and dedups by file and offset.
 *
 * State per file: the offset printed up to in the file's current run
 * (`next`) and the n of the chunk that last restarted it. Memory is the
 * file names only (the worker follows 64 files a launch at most; more
 * than FILES_MAX are not printed), never the text.
 */
#include "admin/logs.h"
#include "text/utf8.h"
#include "base/util.h"

#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define ATTEMPT_MAX 1000000
#define FILES_MAX   1024

typedef struct logs_file {
    char *name;
    uint64_t next;  /* printed up to here, in the file's current run */
    long restart_n; /* the chunk that last restarted it; 0: none */
    bool taken;     /* a segment of the current run was taken */
} logs_file_t;

struct forge_logs_printer_s {
    char *launch_id;
    int attempt; /* 0: the first fed decides */
    FILE *out, *diag;
    logs_file_t *files;
    size_t file_count, file_cap;
    const logs_file_t *last; /* whose output was printed last */
    bool chunk_seen;         /* a chunk of the attempt */
    bool complete;           /* its logs_archived */
    bool at_line_start;      /* out's last byte was '\n' (or none yet) */
    bool printed;            /* out written since the last flush */
};

/* ---- what an event is --------------------------------------------------- */

static const struct {
    const char *type;
    forge_logs_event_t kind;
} kinds[] = {
    {FORGE_LOGS_TYPE_CHUNK, FORGE_LOGS_EVENT_CHUNK},
    {FORGE_LOGS_TYPE_ARCHIVED, FORGE_LOGS_EVENT_ARCHIVED},
};

/* The event's kind and its data (borrowed) when it is one of launch_id's
 * (NULL: any launch's) with a valid attempt. */
static forge_logs_event_t event_of(const json_t *event, const char *launch_id,
                                   int *attempt, const json_t **data)
{
    const char *type = json_string_value(json_object_get(event, "type"));
    const json_t *d = json_object_get(event, "data");
    const json_t *a = json_object_get(d, "attempt");
    const char *id = json_string_value(json_object_get(d, "launch_id"));
    forge_logs_event_t kind = FORGE_LOGS_EVENT_NONE;

    for (size_t i = 0; type && i < sizeof(kinds) / sizeof(kinds[0]); i++)
        if (!strcmp(type, kinds[i].type))
            kind = kinds[i].kind;
    if (!kind || !json_is_object(d) || !json_is_integer(a) ||
        json_integer_value(a) < 1 || json_integer_value(a) > ATTEMPT_MAX ||
        !id || (launch_id && strcmp(id, launch_id)))
        return FORGE_LOGS_EVENT_NONE;
    *attempt = (int)json_integer_value(a);
    *data = d;
    return kind;
}

forge_logs_event_t forge_logs_event_of(const char *value, size_t len,
                                       const char *launch_id, int *attempt)
{
    json_t *event = value ? json_loadb(value, len, 0, NULL) : NULL;
    const json_t *data;
    forge_logs_event_t kind = event_of(event, launch_id, attempt, &data);

    json_decref(event);
    return kind;
}

/* ---- output ------------------------------------------------------------- */

static void emit(forge_logs_printer_t *p, const char *s, size_t n)
{
    if (!n)
        return;
    fwrite(s, 1, n, p->out);
    p->at_line_start = s[n - 1] == '\n';
    p->printed = true;
}

/* One line of ours (a header, a marker): on a line of its own. */
static void emit_line(forge_logs_printer_t *p, const char *fmt, ...)
    FORGE_PRINTF(2, 3);

static void emit_line(forge_logs_printer_t *p, const char *fmt, ...)
{
    va_list ap;

    if (!p->at_line_start)
        fputc('\n', p->out);
    va_start(ap, fmt);
    vfprintf(p->out, fmt, ap);
    va_end(ap);
    fputc('\n', p->out);
    p->at_line_start = true;
    p->printed = true;
}

/* Output of f follows: its header first when the launch has several
 * files and the last output was another's. */
static void switch_to(forge_logs_printer_t *p, const logs_file_t *f)
{
    if (p->last != f && p->file_count > 1)
        emit_line(p, "==> %s <==", f->name);
    p->last = f;
}

/* ---- files -------------------------------------------------------------- */

/* The file named name (found or added; NULL beyond FILES_MAX). */
static logs_file_t *file_of(forge_logs_printer_t *p, const char *name)
{
    logs_file_t *f;

    for (size_t i = 0; i < p->file_count; i++)
        if (!strcmp(p->files[i].name, name))
            return &p->files[i];
    if (p->file_count == FILES_MAX)
        return NULL;
    if (p->file_count == p->file_cap) {
        size_t at = p->last ? (size_t)(p->last - p->files) : 0;
        p->file_cap = p->file_cap ? 2 * p->file_cap : 8;
        p->files = forge_xrealloc(p->files, p->file_cap * sizeof(*p->files));
        if (p->last)
            p->last = &p->files[at];
    }
    f = &p->files[p->file_count++];
    *f = (logs_file_t){forge_xstrdup(name), 0, 0, false};
    return f;
}

/* ---- a chunk ------------------------------------------------------------ */

typedef struct segment {
    const char *file;
    uint64_t offset, length, skipped;
    bool restarted;
    const char *text;
    size_t text_len;
} segment_t;

/* A non-negative integer member, at least min (absent: 0, or false when
 * required). */
static bool member_u64(const json_t *o, const char *key, bool required,
                       uint64_t min, uint64_t *v)
{
    const json_t *j = json_object_get(o, key);

    if (!j) {
        *v = 0;
        return !required;
    }
    if (!json_is_integer(j) || json_integer_value(j) < 0 ||
        (uint64_t)json_integer_value(j) < min)
        return false;
    *v = (uint64_t)json_integer_value(j);
    return true;
}

static bool segment_read(const json_t *o, segment_t *s)
{
    const json_t *restarted = json_object_get(o, "restarted");
    const json_t *text = json_object_get(o, "text");

    s->file = json_string_value(json_object_get(o, "file"));
    s->text = json_string_value(text);
    s->text_len = json_string_length(text);
    s->restarted = json_is_true(restarted);
    return json_is_object(o) && s->file && *s->file && s->text &&
           member_u64(o, "offset", true, 0, &s->offset) &&
           member_u64(o, "length", true, 0, &s->length) &&
           member_u64(o, "skipped", false, 1, &s->skipped) &&
           s->offset <= UINT64_MAX - s->length &&
           (!restarted || json_is_true(restarted));
}

/* Where in s's text the bytes from `from` (> s->offset) start. */
static size_t text_cut(const segment_t *s, uint64_t from)
{
    uint64_t at = from - s->offset;

    if (at >= s->text_len)
        return s->text_len;
    return forge_utf8_boundary((const unsigned char *)s->text, s->text_len,
                               (size_t)at);
}

static void print_segment(forge_logs_printer_t *p, long n, const segment_t *s)
{
    logs_file_t *f = file_of(p, s->file);
    uint64_t end = s->offset + s->length;
    size_t from = 0;

    if (!f)
        return;
    if (s->restarted && n > f->restart_n) { /* a new run of the file */
        f->restart_n = n;
        f->next = 0;
        f->taken = false;
        switch_to(p, f);
        emit_line(p, "[forge-worker: %s restarted]", f->name);
    } else if (f->taken && end <= f->next) {
        return; /* printed already */
    }
    if (s->skipped && s->offset > f->next) {
        uint64_t first = s->skipped < s->offset ? s->offset - s->skipped : 0;
        uint64_t left =
            s->offset - (f->taken && first < f->next ? f->next : first);
        switch_to(p, f);
        emit_line(p, "[forge-worker: %llu bytes of %s skipped]",
                  (unsigned long long)left, f->name);
    }
    if (f->taken && s->offset < f->next)
        from = text_cut(s, f->next); /* an overlap: from what is new */
    if (from < s->text_len) {
        switch_to(p, f);
        emit(p, s->text + from, s->text_len - from);
    }
    if (!f->taken || end > f->next)
        f->next = end;
    f->taken = true;
}

/* A chunk's n and segments (borrowed; NULL: none) when it has the
 * event's shape. */
static bool chunk_shape(const json_t *d, long *n, const json_t **segs)
{
    const json_t *jn = json_object_get(d, "n");

    *segs = json_object_get(d, "segments");
    if (!json_is_integer(jn) || json_integer_value(jn) < 1 ||
        json_integer_value(jn) > LONG_MAX || (*segs && !json_is_array(*segs)))
        return false;
    *n = (long)json_integer_value(jn);
    return true;
}

static void on_chunk(forge_logs_printer_t *p, long n, const json_t *segs)
{
    const json_t *o;
    segment_t s;
    size_t i;

    p->chunk_seen = true;
    /* the chunk's files counted first: its first output has its header
     * when it brings a second file */
    json_array_foreach(segs, i, o)
    {
        if (segment_read(o, &s))
            file_of(p, s.file);
    }
    json_array_foreach(segs, i, o)
    {
        if (segment_read(o, &s))
            print_segment(p, n, &s);
    }
}

/* ---- the end ------------------------------------------------------------ */

static void on_archived(forge_logs_printer_t *p, const json_t *d)
{
    const json_t *tail = json_object_get(json_object_get(d, "tail"), "text");
    const char *path = json_string_value(
        json_object_get(json_object_get(d, "archive"), "path"));

    if (!p->chunk_seen && json_is_string(tail))
        emit(p, json_string_value(tail), json_string_length(tail));
    fflush(p->out);
    fprintf(p->diag, "forge-worker: archive %s\n", path ? path : "(no path)");
    fflush(p->diag);
    p->complete = true;
}

/* ---- the printer -------------------------------------------------------- */

forge_logs_printer_t *forge_logs_printer_new(const char *launch_id, int attempt,
                                             FILE *out, FILE *diag)
{
    forge_logs_printer_t *p = forge_xcalloc(1, sizeof(*p));

    p->launch_id = forge_xstrdup(launch_id);
    p->attempt = attempt > 0 ? attempt : 0;
    p->out = out;
    p->diag = diag;
    p->at_line_start = true;
    return p;
}

void forge_logs_printer_destroy(forge_logs_printer_t *p)
{
    if (!p)
        return;
    for (size_t i = 0; i < p->file_count; i++)
        free(p->files[i].name);
    free(p->files);
    free(p->launch_id);
    free(p);
}

bool forge_logs_printer_feed_json(forge_logs_printer_t *p, const json_t *event)
{
    const json_t *data = NULL, *segs = NULL;
    int attempt = 0;
    long n = 0;
    forge_logs_event_t kind;

    if (p->complete)
        return true;
    kind = event_of(event, p->launch_id, &attempt, &data);
    if (!kind || (p->attempt && attempt != p->attempt) ||
        (kind == FORGE_LOGS_EVENT_CHUNK && !chunk_shape(data, &n, &segs)))
        return false;
    p->attempt = attempt; /* the first one's, when none was given */
    if (kind == FORGE_LOGS_EVENT_CHUNK)
        on_chunk(p, n, segs);
    else
        on_archived(p, data);
    if (p->printed)
        fflush(p->out);
    p->printed = false;
    return p->complete;
}

bool forge_logs_printer_feed(forge_logs_printer_t *p, const char *value,
                             size_t len)
{
    json_t *event;
    bool done;

    if (p->complete || !value)
        return p->complete;
    event = json_loadb(value, len, 0, NULL);
    done = forge_logs_printer_feed_json(p, event);
    json_decref(event);
    return done;
}

bool forge_logs_printer_complete(const forge_logs_printer_t *p)
{
    return p->complete;
}

bool forge_logs_printer_found(const forge_logs_printer_t *p)
{
    return p->chunk_seen || p->complete;
}

int forge_logs_printer_attempt(const forge_logs_printer_t *p)
{
    return p->attempt;
}
