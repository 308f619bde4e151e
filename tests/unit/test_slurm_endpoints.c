/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_slurm_endpoints.c - several slurmrestd endpoints of one cluster
 * (slurm/endpoints.h, issue 39): the circuit breakers alone (the first
 * closed endpoint, a cooldown that doubles, the half-open try, every one
 * open, the user info never shown), and the client through them against
 * the fake slurmrestd of support_http.h (a fake because an endpoint that
 * refuses or hangs on cue is fault injection on HTTP): a refused endpoint
 * is left for the next at once, without a backoff; a submit is never sent
 * to a second endpoint once the first may have carried it out; an attempt
 * that made no request (no token) says nothing of the endpoint.
 */
#include "slurm/client.h"
#include "slurm/endpoints.h"
#include "support_http.h"
#include "clock/clock.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define TOKEN "forge-token-EEEEEEEEEEEEEEEEEEEEEEEEEEEE"
#define META                                                                   \
    "\"meta\": {\"plugin\": {\"type\": \"openapi/slurmctld\"}}, \"errors\": "  \
    "[], \"warnings\": []"

Test(slurm_endpoints, the_first_closed_endpoint_takes_the_requests)
{
    forge_slurm_endpoints_t *e =
        forge_slurm_endpoints_acquire("http://a:1,http://b:2,http://c:3");
    const char *url;

    cr_assert_eq(forge_slurm_endpoints_count(e), 3);
    cr_assert_eq(forge_slurm_endpoints_pick(e, &url), 0);
    cr_assert_str_eq(url, "http://a:1");
    forge_slurm_endpoints_report(e, 0, false); /* a: refused, 1 s */
    cr_assert_eq(forge_slurm_endpoints_pick(e, &url), 1);
    cr_assert_str_eq(url, "http://b:2");
    forge_slurm_endpoints_report(e, 1, false); /* b too */
    cr_assert_eq(forge_slurm_endpoints_pick(e, &url), 2);
    forge_slurm_endpoints_report(e, 2, false); /* every one: the soonest */
    cr_assert_eq(forge_slurm_endpoints_pick(e, &url), 0);
    forge_clock_sleep_ms(1100); /* a's cooldown over: half-open */
    cr_assert_eq(forge_slurm_endpoints_pick(e, &url), 0);
    forge_slurm_endpoints_report(e, 0, true); /* answered: closed */
    cr_assert_eq(forge_slurm_endpoints_pick(e, &url), 0);
    forge_slurm_endpoints_release(e);
}

/* Each failure in a row doubles the cooldown: a second one after the
 * half-open try keeps the endpoint out for 2 s. */
Test(slurm_endpoints, a_cooldown_doubles_with_each_failure_in_a_row)
{
    forge_slurm_endpoints_t *e =
        forge_slurm_endpoints_acquire("http://d:1,http://e:2");
    const char *url;

    forge_slurm_endpoints_report(e, 0, false);
    forge_clock_sleep_ms(1100);
    cr_assert_eq(forge_slurm_endpoints_pick(e, &url), 0, "half-open");
    forge_slurm_endpoints_report(e, 0, false); /* still down: 2 s */
    forge_clock_sleep_ms(1100);
    cr_assert_eq(forge_slurm_endpoints_pick(e, &url), 1, "still cooling");
    forge_clock_sleep_ms(1000);
    cr_assert_eq(forge_slurm_endpoints_pick(e, &url), 0);
    forge_slurm_endpoints_release(e);
}

typedef struct seen {
    char urls[4][64];
    forge_slurm_endpoint_state_t states[4];
    size_t n;
} seen_t;

static void collect(const char *url, forge_slurm_endpoint_state_t state,
                    int failures, void *ctx)
{
    seen_t *s = ctx;

    (void)failures;
    if (s->n < 4 && strstr(url, "://f")) { /* this test's */
        snprintf(s->urls[s->n], sizeof(s->urls[0]), "%s", url);
        s->states[s->n++] = state;
    }
}

/* What metrics and /readyz are given: each endpoint's state, its URL
 * without the user info a URL may carry. */
Test(slurm_endpoints, states_are_shown_without_user_info)
{
    forge_slurm_endpoints_t *e = forge_slurm_endpoints_acquire(
        "https://forge:secret@f1:6820/api,http://f2:6820");
    seen_t s = {0};

    forge_slurm_endpoints_report(e, 0, false);
    forge_slurm_endpoints_each(collect, &s);
    cr_assert_eq(s.n, 2);
    cr_assert_str_eq(s.urls[0], "https://f1:6820/api");
    cr_assert_eq(s.states[0], FORGE_ENDPOINT_REFUSED);
    cr_assert_str_eq(s.urls[1], "http://f2:6820");
    cr_assert_eq(s.states[1], FORGE_ENDPOINT_IN_USE);
    cr_assert_str_eq(forge_slurm_endpoint_state_name(FORGE_ENDPOINT_STANDBY),
                     "standby");
    forge_slurm_endpoints_release(e);
}

/* ---- the client through them ------------------------------------------- */

static support_http_fixture_t http;

static void setup(void)
{
    support_http_fixture_init(&http, "forge-endpoints", TOKEN);
}

static void teardown(void)
{
    support_http_fixture_fini(&http);
}

/* A client of "http://127.0.0.1:<refused>,<the fake>", its backoff long
 * enough that a wait for it would show. */
static forge_slurm_client_t *client_after_a_dead_endpoint(char *urls,
                                                          size_t size, int *fd)
{
    forge_slurm_options_t o =
        support_http_options(http.srv, http.token_file, NULL);
    unsigned port;

    *fd = support_http_refusing_port(&port);
    snprintf(urls, size, "http://127.0.0.1:%u,%s", port,
             support_http_url(http.srv));
    o.base_url = urls;
    o.backoff_base_ms = o.backoff_max_ms = 2000;
    return support_http_client(&o);
}

Test(slurm_endpoints, a_refused_endpoint_is_left_for_the_next_at_once,
     .init = setup, .fini = teardown, .timeout = 30)
{
    char urls[128];
    int fd;
    forge_slurm_client_t *c =
        client_after_a_dead_endpoint(urls, sizeof(urls), &fd);
    forge_slurm_ping_t ping;
    forge_slurm_result_t res = {0};
    long long t0 = forge_clock_ms();

    support_http_default(http.srv, 200,
                         "{" META ", \"pings\": [{\"hostname\": \"ctl\", "
                         "\"pinged\": \"UP\", \"responding\": true, "
                         "\"primary\": true, \"mode\": \"primary\"}]}");
    cr_assert_eq(forge_slurm_ping(c, &ping, &res), FORGE_SLURM_OK, "%s",
                 res.message);
    cr_assert_eq(res.attempts, 2, "the dead one, then the fake");
    cr_assert_lt(forge_clock_ms() - t0, 1500, "no backoff between them");
    /* the next call goes straight to the one that answers */
    cr_assert_eq(forge_slurm_ping(c, &ping, &res), FORGE_SLURM_OK);
    cr_assert_eq(res.attempts, 1);
    cr_assert_eq(support_http_count(http.srv), 2);
    forge_slurm_client_destroy(c);
    close(fd);
}

/* A submit the first endpoint may have carried out (sent, no answer) is
 * never sent to the second: its outcome is the tag's to settle. */
Test(slurm_endpoints, a_submit_that_may_have_landed_is_not_sent_again,
     .init = setup, .fini = teardown, .timeout = 30)
{
    forge_slurm_options_t o =
        support_http_options(http.srv, http.token_file, NULL);
    support_http_fixture_t second;
    forge_slurm_client_t *c;
    forge_slurm_submit_t sub;
    forge_slurm_result_t res = {0};
    char urls[128];
    json_t *body = json_pack("{s:s, s:{s:s}}", "script", "#!/bin/bash\n", "job",
                             "comment", "forge:x:1");

    support_http_fixture_init(&second, "forge-endpoints2", TOKEN);
    snprintf(urls, sizeof(urls), "%s,%s", support_http_url(http.srv),
             support_http_url(second.srv));
    o.base_url = urls;
    c = support_http_client(&o);
    support_http_push(http.srv, NULL, 200, "{}", 2000); /* past the timeout */
    cr_assert_eq(forge_slurm_submit(c, body, &sub, &res), FORGE_SLURM_TIMED_OUT,
                 "%s", res.message);
    cr_assert_eq(support_http_count(http.srv), 1);
    cr_assert_eq(support_http_count(second.srv), 0, "never sent twice");
    json_decref(body);
    forge_slurm_client_destroy(c);
    support_http_fixture_fini(&second);
}

/* An attempt that makes no request (slurmrestd refused the token, and a
 * new one cannot be read) says nothing of the endpoint: it stays the one
 * in use. */
Test(slurm_endpoints, a_call_without_a_token_leaves_the_endpoint_closed,
     .init = setup, .fini = teardown, .timeout = 30)
{
    forge_slurm_options_t o =
        support_http_options(http.srv, http.token_file, NULL);
    forge_slurm_endpoints_t *e;
    forge_slurm_client_t *c;
    forge_slurm_ping_t ping;
    forge_slurm_result_t res = {0};
    char urls[128];
    const char *url;

    snprintf(urls, sizeof(urls), "%s,http://127.0.0.1:1",
             support_http_url(http.srv));
    o.base_url = urls;
    c = support_http_client(&o);
    support_http_accept_token(http.srv, "forge-token-another");
    cr_assert_eq(unlink(http.token_file), 0);
    cr_assert_eq(forge_slurm_ping(c, &ping, &res), FORGE_SLURM_AUTH);
    cr_assert_eq(res.attempts, 1,
                 "the refused one; no request without a "
                 "token: %s",
                 res.message);
    cr_assert_eq(support_http_count(http.srv), 1);
    e = forge_slurm_endpoints_acquire(urls); /* the client's, shared */
    cr_assert_eq(forge_slurm_endpoints_pick(e, &url), 0, "still the first");
    forge_slurm_endpoints_release(e);
    forge_slurm_client_destroy(c);
}
