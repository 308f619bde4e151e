/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kafka/jobcomp_reader.h - the reader of Slurm's jobcomp/kafka topic
 * (FORGE_KAFKA_JOBCOMP_TOPIC, issue 28: push completion): every partition
 * of it, from its end at start, with no consumer group, each record's
 * payload handed to the loop (loop/jobcomp.c) through a queue.
 * jobcomp_reader.c says how and on which thread.
 */
#ifndef FORGE_KAFKA_JOBCOMP_READER_H
#define FORGE_KAFKA_JOBCOMP_READER_H

#include "config/config.h"
#include "base/error.h"

#include <stdbool.h>
#include <stddef.h>

typedef struct forge_jobcomp_reader forge_jobcomp_reader_t;

/* Called on the reader's thread when a record joins an empty queue (the
 * loop's Kafka poll woken: kafka.h forge_kafka_wake). */
typedef void (*forge_jobcomp_notify_fn)(void *ctx);

/* The reader of cfg->topic_jobcomp (which must be set), its thread
 * started; notify(ctx) as above (NULL: none). FORGE_ECONFIG when
 * librdkafka refuses the configuration. A broker away, a topic missing,
 * a READ refused are not errors: logged, and tried again while it runs. */
forge_rc_t forge_jobcomp_reader_start(const forge_config_t *cfg,
                                      forge_jobcomp_notify_fn notify, void *ctx,
                                      forge_jobcomp_reader_t **out,
                                      forge_error_t *err) FORGE_WARN_UNUSED;

/* The oldest record not yet taken: its payload (new, the caller frees it;
 * not NUL-terminated) and length. False when none waits. Any thread (the
 * loop's). */
bool forge_jobcomp_reader_next(forge_jobcomp_reader_t *r, char **bytes,
                               size_t *len);

/* Stops the thread (within about POLL_MS), drops what is queued,
 * destroys the consumer. NULL-safe. After it, notify is never called. */
void forge_jobcomp_reader_stop(forge_jobcomp_reader_t *r);

#endif
