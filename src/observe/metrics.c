/* SPDX-License-Identifier: Apache-2.0 */
/*
 * observe/metrics.c - the registry of metrics.h. Threads: any thread updates,
 * the listener's renders; `lock` guards every family and series (held for
 * a lookup and an addition, or one render). Series live in a list per
 * family, in the order they were first touched (a few dozen at most: ops
 * and codes, states, partitions), so a linear lookup is the right size.
 */
#include "observe/metrics.h"
#include "base/buf.h"
#include "base/util.h"

#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

typedef struct series {
    struct series *next;
    char *values[FORGE_METRIC_LABELS_MAX];
    double value;    /* counter, gauge; a histogram's sum */
    double count;    /* histogram: observations */
    double *buckets; /* histogram: per bucket (not cumulative), bucket_count */
} series_t;

typedef struct family {
    const forge_metric_def_t *def;
    size_t label_count;
    series_t *series; /* newest first; rendered oldest first */
} family_t;

struct forge_metrics {
    pthread_mutex_t lock;
    family_t *families;
    size_t count;
};

static void series_free(series_t *s)
{
    for (size_t i = 0; i < FORGE_METRIC_LABELS_MAX; i++)
        free(s->values[i]);
    free(s->buckets);
    free(s);
}

static size_t labels_of(const forge_metric_def_t *d)
{
    size_t n = 0;

    while (n < FORGE_METRIC_LABELS_MAX && d->labels[n])
        n++;
    return n;
}

static bool same_values(const series_t *s, const char *const *values, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(s->values[i], values[i] ? values[i] : ""))
            return false;
    return true;
}

/* The series of values in f, made when missing. Under the lock. */
static series_t *series_of(family_t *f, const char *const *values)
{
    series_t *s;

    for (s = f->series; s; s = s->next)
        if (same_values(s, values, f->label_count))
            return s;
    s = forge_xcalloc(1, sizeof(*s));
    for (size_t i = 0; i < f->label_count; i++)
        s->values[i] = forge_xstrdup(values[i] ? values[i] : "");
    if (f->def->type == FORGE_METRIC_HISTOGRAM)
        s->buckets = forge_xcalloc(f->def->bucket_count + 1, sizeof(double));
    s->next = f->series;
    f->series = s;
    return s;
}

/* A counter or histogram without labels starts at 0: "nothing yet" is a
 * value. A gauge shows once it is set: until then it is unknown. */
static void start_series(family_t *f)
{
    if (!f->label_count && f->def->type != FORGE_METRIC_GAUGE)
        (void)series_of(f, NULL);
}

forge_metrics_t *forge_metrics_new(const forge_metric_def_t *defs, size_t n)
{
    forge_metrics_t *m = forge_xcalloc(1, sizeof(*m));

    pthread_mutex_init(&m->lock, NULL);
    m->families = forge_xcalloc(n ? n : 1, sizeof(family_t));
    m->count = n;
    for (size_t i = 0; i < n; i++) {
        m->families[i].def = &defs[i];
        m->families[i].label_count = labels_of(&defs[i]);
        start_series(&m->families[i]);
    }
    return m;
}

static void drop_series(family_t *f)
{
    while (f->series) {
        series_t *s = f->series;
        f->series = s->next;
        series_free(s);
    }
}

void forge_metrics_free(forge_metrics_t *m)
{
    if (!m)
        return;
    for (size_t i = 0; i < m->count; i++)
        drop_series(&m->families[i]);
    free(m->families);
    pthread_mutex_destroy(&m->lock);
    free(m);
}

/* The family if it is of type t, NULL otherwise. */
static family_t *family_typed(forge_metrics_t *m, size_t family,
                              forge_metric_type_t t)
{
    if (!m || family >= m->count || m->families[family].def->type != t)
        return NULL;
    return &m->families[family];
}

static void update(forge_metrics_t *m, size_t family, forge_metric_type_t t,
                   const char *const *values, double v)
{
    family_t *f = family_typed(m, family, t);
    series_t *s;
    size_t b;

    if (!f || isnan(v) || (t == FORGE_METRIC_COUNTER && v < 0))
        return;
    pthread_mutex_lock(&m->lock);
    s = series_of(f, values);
    if (t == FORGE_METRIC_GAUGE) {
        s->value = v;
    } else if (t == FORGE_METRIC_COUNTER) {
        s->value += v;
    } else {
        for (b = 0; b < f->def->bucket_count && v > f->def->buckets[b]; b++)
            ;
        s->buckets[b] += 1; /* b == bucket_count: only +Inf */
        s->value += v;
        s->count += 1;
    }
    pthread_mutex_unlock(&m->lock);
}

void forge_metrics_add(forge_metrics_t *m, size_t family,
                       const char *const *values, double v)
{
    update(m, family, FORGE_METRIC_COUNTER, values, v);
}

void forge_metrics_set(forge_metrics_t *m, size_t family,
                       const char *const *values, double v)
{
    update(m, family, FORGE_METRIC_GAUGE, values, v);
}

void forge_metrics_observe(forge_metrics_t *m, size_t family,
                           const char *const *values, double v)
{
    update(m, family, FORGE_METRIC_HISTOGRAM, values, v);
}

void forge_metrics_reset(forge_metrics_t *m, size_t family)
{
    if (!m || family >= m->count)
        return;
    pthread_mutex_lock(&m->lock);
    drop_series(&m->families[family]);
    start_series(&m->families[family]);
    pthread_mutex_unlock(&m->lock);
}

double forge_metrics_value(forge_metrics_t *m, size_t family,
                           const char *const *values)
{
    double v = 0;

    if (!m || family >= m->count)
        return 0;
    pthread_mutex_lock(&m->lock);
    for (series_t *s = m->families[family].series; s; s = s->next)
        if (same_values(s, values, m->families[family].label_count)) {
            v = s->value;
            break;
        }
    pthread_mutex_unlock(&m->lock);
    return v;
}

/* ---- exposition --------------------------------------------------------- */

/* A HELP text: backslash and newline escaped. */
static void put_help(forge_buf_t *b, const char *text)
{
    for (; *text; text++) {
        if (*text == '\\')
            forge_buf_puts(b, "\\\\");
        else if (*text == '\n')
            forge_buf_puts(b, "\\n");
        else
            forge_buf_putc(b, *text);
    }
}

/* A label value: backslash, double quote and newline escaped. */
static void put_label_value(forge_buf_t *b, const char *v)
{
    for (; *v; v++) {
        if (*v == '\\' || *v == '"')
            forge_buf_putc(b, '\\');
        if (*v == '\n')
            forge_buf_puts(b, "\\n");
        else
            forge_buf_putc(b, *v);
    }
}

static void put_number(forge_buf_t *b, double v)
{
    if (isinf(v))
        forge_buf_puts(b, v > 0 ? "+Inf" : "-Inf");
    else if (v == floor(v) && fabs(v) < 1e15)
        forge_buf_printf(b, "%.0f", v);
    else
        forge_buf_printf(b, "%.17g", v);
}

/* name{l1="v1",...,extra="x"} value, extra (le) may be NULL. */
static void put_sample(forge_buf_t *b, const family_t *f, const series_t *s,
                       const char *suffix, const char *extra,
                       const char *extra_value, double v)
{
    bool any = f->label_count || extra;

    forge_buf_printf(b, "%s%s", f->def->name, suffix);
    if (any)
        forge_buf_putc(b, '{');
    for (size_t i = 0; i < f->label_count; i++) {
        forge_buf_printf(b, "%s%s=\"", i ? "," : "", f->def->labels[i]);
        put_label_value(b, s->values[i]);
        forge_buf_putc(b, '"');
    }
    if (extra)
        forge_buf_printf(b, "%s%s=\"%s\"", f->label_count ? "," : "", extra,
                         extra_value);
    if (any)
        forge_buf_putc(b, '}');
    forge_buf_putc(b, ' ');
    put_number(b, v);
    forge_buf_putc(b, '\n');
}

static void put_histogram(forge_buf_t *b, const family_t *f, const series_t *s)
{
    double cumulative = 0;
    char le[64];

    for (size_t i = 0; i < f->def->bucket_count; i++) {
        cumulative += s->buckets[i];
        snprintf(le, sizeof(le), "%g", f->def->buckets[i]);
        put_sample(b, f, s, "_bucket", "le", le, cumulative);
    }
    put_sample(b, f, s, "_bucket", "le", "+Inf", s->count);
    put_sample(b, f, s, "_sum", NULL, NULL, s->value);
    put_sample(b, f, s, "_count", NULL, NULL, s->count);
}

/* Series oldest first: the order they were first touched. */
static void put_series(forge_buf_t *b, const family_t *f, const series_t *s)
{
    if (!s)
        return;
    put_series(b, f, s->next);
    if (f->def->type == FORGE_METRIC_HISTOGRAM)
        put_histogram(b, f, s);
    else
        put_sample(b, f, s, "", NULL, NULL, s->value);
}

static const char *const type_names[] = {"counter", "gauge", "histogram"};

char *forge_metrics_render(forge_metrics_t *m)
{
    forge_buf_t b = FORGE_BUF_INIT;

    forge_buf_puts(&b, "");
    pthread_mutex_lock(&m->lock);
    for (size_t i = 0; i < m->count; i++) {
        const family_t *f = &m->families[i];
        forge_buf_printf(&b, "# HELP %s ", f->def->name);
        put_help(&b, f->def->help);
        forge_buf_printf(&b, "\n# TYPE %s %s\n", f->def->name,
                         type_names[f->def->type]);
        put_series(&b, f, f->series);
    }
    pthread_mutex_unlock(&m->lock);
    return forge_buf_take(&b);
}
