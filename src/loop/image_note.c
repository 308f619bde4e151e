/* SPDX-License-Identifier: Apache-2.0 */
/*
 * image_note.c - a job whose image its batch script refused (render.h:
 * under the apptainer profile the script checks the image before anything
 * of the job runs: a file that is not a SIF, one cut short, one gone since
 * the submit) exits FORGE_RENDER_IMAGE_EXIT and leaves apptainer's word on
 * the image in its staging folder (FORGE_RENDER_IMAGE_NOTE). Such an end,
 * FAILED with that exit code however it was seen (a poll, a jobcomp push,
 * accounting, an end seen before the records rewound), waits for that
 * note, read on the file threads (the loop never touches the shared
 * storage), and goes out FAILED with reason `image_invalid` and an error
 * naming `$.image.path` with the note. No note (the job's own command
 * exited with the same code), or one that cannot be read (logged): the end
 * goes out as Slurm said it.
 *
 * Nothing is recorded while the note is read: a worker that dies meanwhile
 * leaves the launch as it was in its record, and the next owner's poll sees
 * the end again (its poller has no memory of the job) and reads the note
 * again. One read per launch at a time (the entry's image_note_out); the
 * same end seen again meanwhile (a push, then a poll) waits with it. A
 * pushed end's archive gate (jobcomp.c) is not set for it: a job that
 * stopped before its first step has no step left COMPLETING to wait for.
 * Loop thread only.
 */
#include "log/log.h"
#include "text/utf8.h"
#include "base/util.h"
#include "render/render.h"
#include "loop/loop_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The error message's room for the note, after "image <path>: " is
 * left out (the field names the image). */
#define NOTE_SHOWN_MAX 400

/* Whether c, e's end, is the image check's exit (render.h). */
static bool is_image_exit(const forge_loop_t *w, const change_t *c)
{
    const json_t *code = json_object_get(c->slurm, "exit_code");

    return c->to == FORGE_STATE_FAILED &&
           w->cfg->runtime_profile == FORGE_PROFILE_APPTAINER &&
           json_is_integer(code) &&
           json_integer_value(code) == FORGE_RENDER_IMAGE_EXIT;
}

bool forge_loop_image_note_first(forge_loop_t *w, forge_entry_t *e,
                                 const change_t *c)
{
    forge_work_t *work;

    if (e->image_note_out)
        return true; /* the same end, seen again: it waits with the first */
    if (!is_image_exit(w, c))
        return false;
    work = forge_loop_new_work(FORGE_WORK_IMAGE_NOTE, e);
    work->image.job_id = e->rec->job_id;
    work->image.reason = forge_xstrdup(c->reason);
    work->image.slurm = json_incref((json_t *)c->slurm);
    work->image.usage = json_incref((json_t *)c->usage);
    e->image_note_out = true;
    forge_loop_defer(w, work);
    return true;
}

/* The note's text for people (into out, at most max - 1 bytes and a NUL):
 * its lines joined with "; ", control characters and bytes that are not
 * UTF-8 as '?', cut at a character's end. */
static void note_text(const forge_buf_t *note, char *out, size_t max)
{
    const unsigned char *p = (const unsigned char *)note->data;
    size_t n = note->len, o = 0, len;

    while (n && (p[n - 1] == '\n' || p[n - 1] == '\r'))
        n--;
    for (size_t i = 0; i < n && o + 4 < max; i += len) {
        len = forge_utf8_len(p + i, n - i);
        if (p[i] == '\n' && o + 2 < max) {
            memcpy(out + o, "; ", 2);
            o += 2;
            len = 1;
        } else if (!len || p[i] < 0x20 || p[i] == 0x7f) {
            out[o++] = '?';
            len = len ? len : 1;
        } else {
            memcpy(out + o, p + i, len);
            o += len;
        }
    }
    out[o] = '\0';
}

/* The end the note waited for, published as the note says. */
static void publish_end(forge_loop_t *w, forge_entry_t *e,
                        const forge_work_t *work)
{
    const forge_work_image_note_t *im = &work->image;
    forge_error_t error = {0};
    char shown[NOTE_SHOWN_MAX];
    change_t c = {FORGE_STATE_FAILED, im->reason, im->slurm, NULL, im->usage};
    forge_log_field_t f[] = {{"launch_id", e->rec->launch_id}};

    if (im->found && im->note.len) {
        note_text(&im->note, shown, sizeof(shown));
        forge_error_set(&error, FORGE_EIMAGE_INVALID, "$.image.path",
                        "the image did not open where the job ran: %s", shown);
        c.reason = forge_rc_name(FORGE_EIMAGE_INVALID);
        c.error = &error;
        forge_log_fields(FORGE_LOG_WARN, f, 1, "job %u refused its image: %s",
                         (unsigned)im->job_id, shown);
    }
    if (!forge_loop_retry_instead(w, e, &c)) /* tries.c */
        forge_loop_publish_event(w, e, &c, true);
}

void forge_loop_on_image_note(forge_loop_t *w, forge_entry_t *e,
                              forge_work_t *work)
{
    forge_log_field_t f[] = {{"launch_id", e->rec->launch_id},
                             {"error", forge_rc_name(work->code)}};

    e->image_note_out = false;
    if (e->rec->job_id != work->image.job_id ||
        forge_state_is_terminal(e->rec->state))
        return; /* moved on meanwhile (a retry's next try, a cancel) */
    if (work->code != FORGE_OK)
        forge_log_fields(FORGE_LOG_WARN, f, 2,
                         "the image check's note of job %u is not read: %s; "
                         "its end goes out as Slurm said it",
                         (unsigned)work->image.job_id, work->message);
    publish_end(w, e, work);
}
