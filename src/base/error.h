/* SPDX-License-Identifier: Apache-2.0 */
/*
 * error.h - forge-worker's own error codes and the caller-owned error record
 * that carries *where* a failure happened (a JSON path for a request, a
 * variable name for configuration) and a human-readable message.
 *
 * Codes are ours, apart from Slurm's and Kafka's. 0 is success; every
 * function that can fail returns a forge_rc_t and fills an optional
 * forge_error_t (first error wins, like jansson's json_error_t).
 */
#ifndef FORGE_ERROR_H
#define FORGE_ERROR_H

#include <stddef.h>

#if defined(__GNUC__)
#define FORGE_WARN_UNUSED  __attribute__((warn_unused_result))
#define FORGE_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define FORGE_WARN_UNUSED
#define FORGE_PRINTF(f, a)
#endif

/* Keep in step with the name table in error.c. */
typedef enum forge_rc {
    FORGE_OK = 0,
    FORGE_ENOMEM,  /* allocation failed */
    FORGE_EINVAL,  /* a caller passed something impossible */
    FORGE_ECONFIG, /* a FORGE_* variable is wrong: exit 78 */
    FORGE_EIO,     /* file or socket I/O failed */
    /* A request refused (docs/CONTRACT.md section 4): exit 2, REJECTED. */
    FORGE_EINVALID_JSON,
    FORGE_ESCHEMA,
    FORGE_ETOO_LARGE,
    FORGE_EIMAGE_FORMAT,
    FORGE_EIMAGE_MISSING,
    FORGE_EOCI_IMAGE_REFUSED,
    FORGE_ESERIES_UNKNOWN,
    FORGE_ESERIES_UNCONSTRAINED,
    FORGE_EMOUNT_REFUSED,
    FORGE_EENV_REFUSED,
    FORGE_ETENANT_UNKNOWN, /* the request's tenant is not in the site file */
    /* Something on the shared storage is not what the worker made there (a
     * link, a foreign owner): the step is refused, nothing is followed. */
    FORGE_EUNSAFE_PATH,
    /* A finished launch's logs could not be archived (archive/archive.h): the
     * archive is tried again later. Never in an event. */
    FORGE_EARCHIVE,
    /* The job's image did not open where the job ran (the batch script's
     * check: render.h): a FAILED event's error, never a refusal. */
    FORGE_EIMAGE_INVALID,
    FORGE_RC__COUNT
} forge_rc_t;

#define FORGE_ERROR_FIELD_MAX   256
#define FORGE_ERROR_MESSAGE_MAX 512

typedef struct forge_error {
    forge_rc_t code;
    char field[FORGE_ERROR_FIELD_MAX];     /* JSON path or variable name */
    char message[FORGE_ERROR_MESSAGE_MAX]; /* what was wrong, for people */
} forge_error_t;

/* Stable lower-case name of a code ("invalid_json", "config", ...). */
const char *forge_rc_name(forge_rc_t rc);

/*
 * Records the first error into err (NULL-safe; later calls do not overwrite
 * an error already set) and returns code, so a caller can write
 *   return forge_error_set(err, FORGE_ECONFIG, "FORGE_X", "bad: %s", v);
 * field may be NULL. Overlong text is truncated, never overflowed.
 */
forge_rc_t forge_error_set(forge_error_t *err, forge_rc_t code,
                           const char *field, const char *fmt, ...)
    FORGE_PRINTF(4, 5);

/* Empties err (NULL-safe). */
void forge_error_clear(forge_error_t *err);

#endif
