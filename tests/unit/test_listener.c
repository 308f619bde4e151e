/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_listener.c - the HTTP listener (src/observe/listener.c) over a real
 * socket, asked with libcurl: /healthz and /readyz answer 200 or 503 with
 * the health verdict's JSON, /metrics the text format 0.0.4 with its
 * content type, anything else 404, a method other than GET or HEAD 405;
 * an address that cannot be resolved is a configuration error, a port in
 * use is not (a restart may find it free).
 */
#include "config/config.h"
#include "observe/health.h"
#include "observe/listener.h"
#include "observe/observe.h"

#include <criterion/criterion.h>
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct got {
    long status;
    char type[128];
    char body[8192];
    size_t len;
} got_t;

static size_t collect(char *p, size_t size, size_t n, void *ctx)
{
    got_t *g = ctx;
    size_t take = size * n;

    if (g->len + take >= sizeof(g->body))
        take = sizeof(g->body) - 1 - g->len;
    memcpy(g->body + g->len, p, take);
    g->len += take;
    g->body[g->len] = '\0';
    return size * n;
}

static got_t ask(int port, const char *method, const char *path)
{
    got_t g = {0};
    char url[128];
    char *type = NULL;
    CURL *c = curl_easy_init();

    snprintf(url, sizeof(url), "http://127.0.0.1:%d%s", port, path);
    curl_easy_setopt(c, CURLOPT_URL, url);
    if (!strcmp(method, "HEAD"))
        curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
    else
        curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, collect);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &g);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 10L);
    cr_assert_eq(curl_easy_perform(c), CURLE_OK, "%s %s", method, url);
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &g.status);
    curl_easy_getinfo(c, CURLINFO_CONTENT_TYPE, &type);
    snprintf(g.type, sizeof(g.type), "%s", type ? type : "");
    curl_easy_cleanup(c);
    return g;
}

static forge_listener_t *listener;
static forge_config_t cfg;

static int start(void)
{
    forge_error_t err = {0};

    forge_health_init(300, 60);
    forge_observe_start(&cfg);
    cr_assert_eq(forge_listener_start("127.0.0.1:0", &listener, &err), FORGE_OK,
                 "%s", err.message);
    cr_assert_gt(forge_listener_port(listener), 0);
    return forge_listener_port(listener);
}

static void stop(void)
{
    forge_listener_stop(listener);
    listener = NULL;
    forge_observe_stop();
}

TestSuite(listener, .fini = stop);

Test(listener, probes_answer_200_or_503_with_why)
{
    int port = start();
    got_t g = ask(port, "GET", "/readyz");

    cr_assert_eq(g.status, 503);
    cr_assert_str_eq(g.type, "application/json");
    cr_assert_not_null(strstr(g.body, "not assigned by the group yet"), "%s",
                       g.body);
    forge_health_beat();
    forge_health_partitions(2, 0);
    forge_health_loop_ready(1);
    forge_health_slurm_answered();
    g = ask(port, "GET", "/readyz");
    cr_assert_eq(g.status, 200, "%s", g.body);
    cr_assert_not_null(strstr(g.body, "\"ready\": true"));
    g = ask(port, "GET", "/healthz");
    cr_assert_eq(g.status, 200, "%s", g.body);
    cr_assert_not_null(strstr(g.body, "\"loop\": \"running\""));
}

Test(listener, metrics_in_the_text_format)
{
    int port = start();
    got_t g;

    forge_observe_rebalance("assigned");
    g = ask(port, "GET", "/metrics");
    cr_assert_eq(g.status, 200);
    cr_assert_str_eq(g.type, "text/plain; version=0.0.4; charset=utf-8");
    cr_assert_not_null(strstr(g.body, "# TYPE forge_kafka_rebalances_total "
                                      "counter\n"),
                       "%s", g.body);
    cr_assert_not_null(
        strstr(g.body, "forge_kafka_rebalances_total{kind=\"assigned\"} 1\n"));
    g = ask(port, "HEAD", "/metrics");
    cr_assert_eq(g.status, 200);
}

Test(listener, other_paths_and_methods_are_refused)
{
    int port = start();

    cr_assert_eq(ask(port, "GET", "/").status, 404);
    cr_assert_eq(ask(port, "GET", "/metrics/x").status, 404);
    cr_assert_eq(ask(port, "POST", "/readyz").status, 405);
    cr_assert_eq(ask(port, "DELETE", "/healthz").status, 405);
}

Test(listener, an_address_it_cannot_have_is_an_error_that_says_which)
{
    forge_listener_t *other = NULL;
    forge_error_t err = {0};
    char in_use[64];
    int port = start();

    cr_assert_eq(
        forge_listener_start("no-such-host.invalid:8080", &other, &err),
        FORGE_ECONFIG);
    cr_assert_str_eq(err.field, "FORGE_HTTP_LISTEN");
    cr_assert_null(other);
    memset(&err, 0, sizeof(err));
    cr_assert_eq(forge_listener_start("192.0.2.1:8080", &other, &err),
                 FORGE_ECONFIG, "not this host's address: %s", err.message);
    memset(&err, 0, sizeof(err));
    snprintf(in_use, sizeof(in_use), "127.0.0.1:%d", port);
    cr_assert_eq(forge_listener_start(in_use, &other, &err), FORGE_EIO);
    cr_assert_not_null(strstr(err.message, "in use"), "%s", err.message);
}
