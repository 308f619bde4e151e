/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_metrics.c - the registry and its exposition (src/observe/metrics.c):
 * counters, gauges and histograms with labels in the Prometheus text
 * format 0.0.4 (HELP and TYPE lines, escaped label values, cumulative
 * buckets, _sum and _count), a reset family, updates from several threads
 * at once, and the whole text accepted by `promtool check metrics` (Debian's
 * prometheus package, installed by scripts/setup.d/apt.sh).
 */
#include "support_text.h"
#include "observe/metrics.h"

#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { C_REQ, G_TEMP, H_LAT, G_PLAIN, C_PLAIN, N_DEFS };

static const double buckets[] = {0.1, 1, 10};

static const forge_metric_def_t defs[N_DEFS] = {
    [C_REQ] = {"demo_requests_total",
               "Requests, by operation and code",
               FORGE_METRIC_COUNTER,
               {"operation", "code"},
               NULL,
               0},
    [G_TEMP] = {"demo_temperature_celsius",
                "A gauge with a \\ backslash\nand a newline in its help",
                FORGE_METRIC_GAUGE,
                {"room"},
                NULL,
                0},
    [H_LAT] = {"demo_latency_seconds",
               "A histogram",
               FORGE_METRIC_HISTOGRAM,
               {"operation"},
               buckets,
               3},
    [G_PLAIN] = {"demo_ready",
                 "A gauge without labels",
                 FORGE_METRIC_GAUGE,
                 {NULL},
                 NULL,
                 0},
    [C_PLAIN] = {"demo_things_total",
                 "A counter without labels",
                 FORGE_METRIC_COUNTER,
                 {NULL},
                 NULL,
                 0},
};

#define assert_line(text, line)                                                \
    cr_assert(support_has_line(text, line), "no line \"%s\" in:\n%s", line,    \
              text)

Test(metrics, families_render_with_help_type_and_their_series)
{
    forge_metrics_t *m = forge_metrics_new(defs, N_DEFS);
    const char *ok[] = {"submit", "200"}, *bad[] = {"submit", "500"};
    const char *room[] = {"a\"b\\c\nd"};
    char *text;

    forge_metrics_add(m, C_REQ, ok, 1);
    forge_metrics_add(m, C_REQ, ok, 2);
    forge_metrics_add(m, C_REQ, bad, 1);
    forge_metrics_add(m, C_REQ, bad, -5); /* counters never go down */
    forge_metrics_set(m, G_TEMP, room, 21.5);
    text = forge_metrics_render(m);
    cr_assert_null(strstr(text, "\ndemo_ready "), "a gauge never set: absent");
    free(text);
    forge_metrics_set(m, G_PLAIN, NULL, 1);
    text = forge_metrics_render(m);
    assert_line(text, "# HELP demo_requests_total Requests, by operation and "
                      "code");
    assert_line(text, "# TYPE demo_requests_total counter");
    assert_line(text,
                "demo_requests_total{operation=\"submit\",code=\"200\"} 3");
    assert_line(text,
                "demo_requests_total{operation=\"submit\",code=\"500\"} 1");
    assert_line(text, "# HELP demo_temperature_celsius A gauge with a \\\\ "
                      "backslash\\nand a newline in its help");
    assert_line(text, "# TYPE demo_temperature_celsius gauge");
    assert_line(text,
                "demo_temperature_celsius{room=\"a\\\"b\\\\c\\nd\"} 21.5");
    assert_line(text, "demo_ready 1");
    /* a family without labels shows from the start, at 0 */
    assert_line(text, "demo_things_total 0");
    /* a labelled family nobody touched: its HELP and TYPE only */
    assert_line(text, "# TYPE demo_latency_seconds histogram");
    cr_assert_null(strstr(text, "demo_latency_seconds_bucket"));
    cr_assert_eq(forge_metrics_value(m, C_REQ, ok), 3);
    free(text);
    forge_metrics_free(m);
}

Test(metrics, a_histogram_has_cumulative_buckets_a_sum_and_a_count)
{
    forge_metrics_t *m = forge_metrics_new(defs, N_DEFS);
    const char *op[] = {"ping"};
    char *text;

    forge_metrics_observe(m, H_LAT, op, 0.05);
    forge_metrics_observe(m, H_LAT, op, 0.1); /* le is inclusive */
    forge_metrics_observe(m, H_LAT, op, 5);
    forge_metrics_observe(m, H_LAT, op, 100);
    text = forge_metrics_render(m);
    assert_line(text,
                "demo_latency_seconds_bucket{operation=\"ping\",le=\"0.1\"} 2");
    assert_line(text,
                "demo_latency_seconds_bucket{operation=\"ping\",le=\"1\"} 2");
    assert_line(text,
                "demo_latency_seconds_bucket{operation=\"ping\",le=\"10\"} 3");
    assert_line(
        text, "demo_latency_seconds_bucket{operation=\"ping\",le=\"+Inf\"} 4");
    cr_assert_not_null(
        strstr(text, "demo_latency_seconds_sum{operation=\"ping\"} 105.15"));
    assert_line(text, "demo_latency_seconds_count{operation=\"ping\"} 4");
    free(text);
    forge_metrics_free(m);
}

Test(metrics, the_wrong_kind_of_update_changes_nothing)
{
    forge_metrics_t *m = forge_metrics_new(defs, N_DEFS);
    const char *op[] = {"ping"};

    forge_metrics_set(m, C_PLAIN, NULL, 7);     /* a counter is not set */
    forge_metrics_add(m, G_PLAIN, NULL, 7);     /* a gauge is not added to */
    forge_metrics_observe(m, C_PLAIN, NULL, 1); /* nor observed */
    forge_metrics_add(m, N_DEFS + 3, op, 1);    /* no such family */
    forge_metrics_add(NULL, C_PLAIN, NULL, 1);  /* no registry */
    cr_assert_eq(forge_metrics_value(m, C_PLAIN, NULL), 0);
    cr_assert_eq(forge_metrics_value(m, G_PLAIN, NULL), 0);
    forge_metrics_free(m);
}

Test(metrics, a_reset_family_forgets_its_series)
{
    forge_metrics_t *m = forge_metrics_new(defs, N_DEFS);
    const char *a[] = {"a"}, *b[] = {"b"};
    char *text;

    forge_metrics_set(m, G_TEMP, a, 1);
    forge_metrics_reset(m, G_TEMP);
    forge_metrics_set(m, G_TEMP, b, 2);
    text = forge_metrics_render(m);
    cr_assert_null(strstr(text, "room=\"a\""), "%s", text);
    assert_line(text, "demo_temperature_celsius{room=\"b\"} 2");
    free(text);
    forge_metrics_free(m);
}

typedef struct worker_arg {
    forge_metrics_t *m;
    const char *code;
} worker_arg_t;

static void *hammer(void *arg)
{
    worker_arg_t *w = arg;
    const char *labels[] = {"submit", w->code}, *op[] = {"submit"};

    for (int i = 0; i < 20000; i++) {
        forge_metrics_add(w->m, C_REQ, labels, 1);
        forge_metrics_observe(w->m, H_LAT, op, 0.5);
        if (i % 1000 == 0)
            free(forge_metrics_render(w->m));
    }
    return NULL;
}

Test(metrics, updates_from_several_threads_are_all_counted)
{
    forge_metrics_t *m = forge_metrics_new(defs, N_DEFS);
    pthread_t t[4];
    worker_arg_t args[4] = {{m, "200"}, {m, "200"}, {m, "500"}, {m, "200"}};
    const char *ok[] = {"submit", "200"}, *bad[] = {"submit", "500"};
    char *text;

    for (int i = 0; i < 4; i++)
        pthread_create(&t[i], NULL, hammer, &args[i]);
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    cr_assert_eq(forge_metrics_value(m, C_REQ, ok), 60000);
    cr_assert_eq(forge_metrics_value(m, C_REQ, bad), 20000);
    text = forge_metrics_render(m);
    assert_line(text, "demo_latency_seconds_count{operation=\"submit\"} 80000");
    free(text);
    forge_metrics_free(m);
}

Test(metrics, promtool_accepts_the_exposition)
{
    forge_metrics_t *m = forge_metrics_new(defs, N_DEFS);
    const char *ok[] = {"submit", "200"}, *room[] = {"x\"y"}, *op[] = {"p"};
    char *text;
    FILE *p;
    int status;

    forge_metrics_add(m, C_REQ, ok, 3);
    forge_metrics_set(m, G_TEMP, room, -4.25);
    forge_metrics_observe(m, H_LAT, op, 0.3);
    text = forge_metrics_render(m);
    p = popen("promtool check metrics >/dev/null", "w");
    cr_assert_not_null(p, "promtool: scripts/setup installs it (prometheus)");
    fputs(text, p);
    status = pclose(p);
    cr_assert_eq(status, 0, "promtool check metrics refused:\n%s", text);
    free(text);
    forge_metrics_free(m);
}
