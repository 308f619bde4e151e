/* SPDX-License-Identifier: Apache-2.0 */
/*
 * checkpoint.h - a LaunchRequest's `checkpoint_signal` (docs/CONTRACT.md
 * section 2): the signal Slurm sends the job's steps, the processes the
 * command runs as, a chosen number of seconds before the time limit (and,
 * where the site sets PreemptParameters=send_user_signal, when a preemption
 * begins), so a training job can save a checkpoint. The signal is one of a
 * fixed allow-list, never one that stops or kills outright (KILL, STOP).
 * request.c's table parses the object with forge_checkpoint_object; the
 * submit body carries it (render/payload.c).
 */
#ifndef FORGE_CHECKPOINT_H
#define FORGE_CHECKPOINT_H

#include "base/error.h"
#include "request/field.h"

/* seconds_before_end: Slurm's own bounds (sbatch --signal=SIG@TIME), and
 * its default when a request names none. */
#define FORGE_CHECKPOINT_SECONDS_MAX     65535
#define FORGE_CHECKPOINT_SECONDS_DEFAULT 60

/*
 * The field handler of "checkpoint_signal" (field.h's custom row):
 * {"signal": NAME, "seconds_before_end": 0..65535 (default 60)} into the
 * forge_launch_t at target (checkpoint_signal: a static name of the
 * allow-list, never owned; checkpoint_seconds). Unknown members are
 * ignored, as everywhere in a request. A violation is FORGE_ESCHEMA at its
 * JSON path.
 */
forge_rc_t forge_checkpoint_object(const forge_jv_t *v, void *target,
                                   forge_field_path_t *p, forge_error_t *err);

#endif
