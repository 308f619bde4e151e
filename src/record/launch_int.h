/* SPDX-License-Identifier: Apache-2.0 */
/*
 * launch_int.h - what launch.c (the record, its codec) and launch_retry.c
 * (its retry fields) and launch_logs.c (its live logs' cursors) share: the
 * retry fields as either decoding path reads them, and their JSON both ways.
 * Private to src/record/launch*.c.
 */
#ifndef FORGE_LAUNCH_INT_H
#define FORGE_LAUNCH_INT_H

#include "record/launch.h"

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* The retry fields as a decoder read them (strings borrowed from what it
 * reads; NULL: absent). */
typedef struct forge_retry_read {
    long long max_tries, backoff_s, try_num, not_before_ms;
    bool exclude;
    const char *on, *cause, *excluded;
    size_t on_len, cause_len, excluded_len;
} forge_retry_read_t;

/* t into r's retry fields (launch.h), out of range values as absent,
 * causes this worker does not know left out. */
void forge_launch_take_retry(forge_launch_record_t *r,
                             const forge_retry_read_t *t);

/* The general decoder's: o's retry fields into r. */
void forge_launch_read_retry(forge_launch_record_t *r, const json_t *o);

/* r's retry fields into o, each only when set. */
void forge_launch_put_retry(json_t *o, const forge_launch_record_t *r);

/* The live logs' member (launch_logs.c): r's into o when it has one; o's
 * into r (the general decoder), anything malformed read as none. */
void forge_launch_put_logs(json_t *o, const forge_launch_record_t *r);
void forge_launch_read_logs(forge_launch_record_t *r, const json_t *o);

#endif
