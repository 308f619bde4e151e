/* SPDX-License-Identifier: Apache-2.0 */
/*
 * observe/metrics.h - a metrics registry: counters, gauges and histograms with
 * labels, and their exposition in the Prometheus text format 0.0.4.
 *
 * The families are a table given at creation (name, help, type, label
 * names, a histogram's buckets); a series is made the first time a family
 * is touched with its label values. Threads: every function may be called
 * from any thread; one mutex guards the registry (updates are a lookup and
 * an addition: the loop never waits on a scrape longer than one render).
 */
#ifndef FORGE_OBSERVE_METRICS_H
#define FORGE_OBSERVE_METRICS_H

#include <stddef.h>

#define FORGE_METRIC_LABELS_MAX 3

typedef enum forge_metric_type {
    FORGE_METRIC_COUNTER,
    FORGE_METRIC_GAUGE,
    FORGE_METRIC_HISTOGRAM,
} forge_metric_type_t;

typedef struct forge_metric_def {
    const char *name; /* a counter's ends in _total */
    const char *help;
    forge_metric_type_t type;
    const char *labels[FORGE_METRIC_LABELS_MAX]; /* names; NULL ends */
    const double *buckets; /* histograms: upper bounds, ascending (+Inf is
                              added) */
    size_t bucket_count;
} forge_metric_def_t;

typedef struct forge_metrics forge_metrics_t;

/* A registry of the n families of defs (borrowed: a static table). A
 * counter or histogram without labels starts with its one series at 0, so
 * it shows from the first scrape; a gauge once it is set; labelled
 * families show each series once touched. */
forge_metrics_t *forge_metrics_new(const forge_metric_def_t *defs, size_t n);
void forge_metrics_free(forge_metrics_t *m); /* NULL-safe */

/* family: an index into defs; values: one per label name of the family
 * (copied), NULL when it has none. A call with the wrong type of family
 * does nothing. Counters only go up: a negative v is ignored. */
void forge_metrics_add(forge_metrics_t *m, size_t family,
                       const char *const *values, double v);
void forge_metrics_set(forge_metrics_t *m, size_t family,
                       const char *const *values, double v);
void forge_metrics_observe(forge_metrics_t *m, size_t family,
                           const char *const *values, double v);

/* Forgets every series of a family (a gauge rebuilt whole: consumer lag
 * per partition, after the partitions moved). */
void forge_metrics_reset(forge_metrics_t *m, size_t family);

/* The value of one counter or gauge series, 0 when it does not exist
 * (tests, and the health verdicts that read a gauge). */
double forge_metrics_value(forge_metrics_t *m, size_t family,
                           const char *const *values);

/* Every family in the text format 0.0.4 (# HELP, # TYPE, samples; label
 * values escaped), as one string (new). */
char *forge_metrics_render(forge_metrics_t *m);

#endif
