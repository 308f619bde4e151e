/* SPDX-License-Identifier: Apache-2.0 */
/*
 * checkpoint.c - a LaunchRequest's checkpoint_signal (checkpoint.h): the
 * allow-list of signals a request may ask Slurm to send its job before
 * the end, and the field table of the object. Out of request.c, which
 * holds every other field's table, to keep that file readable.
 */
#include "request/checkpoint.h"
#include "request/request.h"

#include <stddef.h>
#include <string.h>

/*
 * What a request may ask for, spelled as Slurm spells them (sbatch
 * --signal, slurmrestd's kill_warning_signal: the name without SIG): the
 * signals a program can catch to save its state and that stop nothing by
 * themselves when it does (the default action of each ends a process that
 * does not catch it, as the time limit would anyway). Never KILL or STOP
 * (they cannot be caught), nor the job-control and error signals.
 */
static const char *const signal_names[] = {"USR1", "USR2", "TERM", "INT",
                                           "HUP"};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static forge_rc_t signal_name(const forge_jv_t *v, void *target,
                              forge_field_path_t *p, forge_error_t *err)
{
    const char *s = forge_jv_str(v);

    for (size_t i = 0; s && i < COUNT(signal_names); i++) {
        if (strlen(signal_names[i]) == forge_jv_len(v) && /* no NUL */
            !strcmp(s, signal_names[i])) {
            ((forge_launch_t *)target)->checkpoint_signal = signal_names[i];
            return FORGE_OK;
        }
    }
    return forge_field_fail(err, FORGE_ESCHEMA, p,
                            "must be one of \"USR1\", \"USR2\", \"TERM\", "
                            "\"INT\", \"HUP\"");
}

static const forge_field_t checkpoint_fields[] = {
    {"signal", FORGE_FIELD_CUSTOM, 0, true, NULL, 0, 0, 0, 0, 0, signal_name},
    {"seconds_before_end", FORGE_FIELD_INT,
     offsetof(forge_launch_t, checkpoint_seconds), false, NULL, 0, 0,
     FORGE_CHECKPOINT_SECONDS_MAX, FORGE_CHECKPOINT_SECONDS_DEFAULT, 0, NULL},
};

forge_rc_t forge_checkpoint_object(const forge_jv_t *v, void *target,
                                   forge_field_path_t *p, forge_error_t *err)
{
    return forge_field_parse_table(v, checkpoint_fields,
                                   COUNT(checkpoint_fields), target, p, err);
}
