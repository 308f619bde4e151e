/* SPDX-License-Identifier: Apache-2.0 */
/*
 * launch_logs.c - a launch record's live logs (issue 29, launch.h): how
 * many chunks its attempt published, whether the final one is, and each
 * file's cursor (archive/live.h), in the record's JSON both ways
 * (launch_int.h). The fast decoder does not know the member: a record
 * with it takes the general one. No I/O.
 */
#include "base/util.h"
#include "record/launch.h"
#include "record/launch_int.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

void forge_launch_set_logs(forge_launch_record_t *r, long n, bool final,
                           forge_live_cursor_t *cursors, size_t count)
{
    forge_live_cursors_free(r->log_cursors, r->log_cursor_count);
    r->log_cursors = cursors;
    r->log_cursor_count = count;
    r->log_chunks = n;
    r->log_final = final;
}

void forge_launch_put_logs(json_t *o, const forge_launch_record_t *r)
{
    json_t *files;

    if (r->log_chunks <= 0 && !r->log_final && r->log_cursor_count == 0)
        return;
    files = json_array();
    for (size_t i = 0; i < r->log_cursor_count; i++) {
        const forge_live_cursor_t *c = &r->log_cursors[i];
        json_array_append_new(
            files, json_pack("{s:s, s:I, s:I, s:I}", "name", c->name, "offset",
                             (json_int_t)c->offset, "ino", (json_int_t)c->ino,
                             "mark", (json_int_t)c->mark));
    }
    json_object_set_new(o, "logs",
                        json_pack("{s:I, s:b, s:o}", "n",
                                  (json_int_t)r->log_chunks, "final",
                                  r->log_final, "files", files));
}

/* A non-negative integer of o's member name, or -1. */
static json_int_t natural(const json_t *o, const char *name)
{
    const json_t *v = json_object_get(o, name);

    return json_is_integer(v) && json_integer_value(v) >= 0
               ? json_integer_value(v)
               : -1;
}

void forge_launch_read_logs(forge_launch_record_t *r, const json_t *o)
{
    const json_t *logs = json_object_get(o, "logs"), *files, *f;
    size_t i;

    if (!json_is_object(logs) || natural(logs, "n") < 0 ||
        natural(logs, "n") > LONG_MAX)
        return;
    r->log_chunks = (long)natural(logs, "n");
    r->log_final = json_is_true(json_object_get(logs, "final"));
    files = json_object_get(logs, "files");
    if (!json_is_array(files) || json_array_size(files) == 0)
        return;
    r->log_cursors =
        forge_xcalloc(json_array_size(files), sizeof(*r->log_cursors));
    json_array_foreach(files, i, f)
    {
        const char *name = json_string_value(json_object_get(f, "name"));
        if (!name || !*name || natural(f, "offset") < 0 ||
            r->log_cursor_count >= FORGE_LIVE_FILES_MAX)
            continue;
        r->log_cursors[r->log_cursor_count++] = (forge_live_cursor_t){
            forge_xstrdup(name), (uint64_t)natural(f, "offset"),
            natural(f, "ino") > 0 ? (uint64_t)natural(f, "ino") : 0,
            natural(f, "mark") > 0 && natural(f, "mark") <= UINT32_MAX
                ? (uint32_t)natural(f, "mark")
                : 0,
            0};
    }
}
