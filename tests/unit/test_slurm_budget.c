/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_slurm_budget.c - a cluster's request budget (slurm/budget.h,
 * FORGE_SLURM_MAX_RPS): the bucket's slots on a clock the test gives (a
 * tenth of a second's worth at once, then one token per 1/rps, each waiter
 * its own slot), one budget per URL and rate shared by its holders, a wait
 * a stop cuts short; and through real clients against the scripted fake
 * slurmrestd (support_http.h, here only as something that answers fast):
 * two clients of one cluster, on two threads, keep to the rate together,
 * and the log says the budget held requests back.
 */
#include "clock/clock.h"
#include "log/log.h"
#include "slurm/budget.h"
#include "slurm/client.h"
#include "support_http.h"

#include <criterion/criterion.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MS    1000000LL
#define SEC   (1000 * MS)
#define T0    (1000 * SEC) /* any monotonic origin */
#define URL_A "http://slurm-a.test:6820"
#define URL_B "http://slurm-b.test:6820"

TestSuite(budget, .timeout = 30);

Test(budget, one_token_per_interval_each_waiter_its_own_slot)
{
    forge_slurm_budget_t *b = forge_slurm_budget_acquire(URL_A, 10);

    cr_assert_eq(forge_slurm_budget_reserve(b, T0), 0);
    cr_assert_eq(forge_slurm_budget_reserve(b, T0), 100 * MS);
    cr_assert_eq(forge_slurm_budget_reserve(b, T0), 200 * MS);
    cr_assert_eq(forge_slurm_budget_reserve(b, T0 + 50 * MS), 250 * MS);
    /* idle long enough: the slots are behind, a token is there */
    cr_assert_eq(forge_slurm_budget_reserve(b, T0 + 5 * SEC), 0);
    cr_assert_eq(forge_slurm_budget_reserve(b, T0 + 5 * SEC), 100 * MS);
    forge_slurm_budget_release(b);
}

Test(budget, a_tenth_of_a_second_piles_up_never_more)
{
    forge_slurm_budget_t *b = forge_slurm_budget_acquire(URL_A, 100);

    for (int i = 0; i < 10; i++)
        cr_assert_eq(forge_slurm_budget_reserve(b, T0), 0, "request %d", i);
    cr_assert_eq(forge_slurm_budget_reserve(b, T0), 10 * MS);
    /* a minute idle earns no more than the ten */
    for (int i = 0; i < 10; i++)
        cr_assert_eq(forge_slurm_budget_reserve(b, T0 + 60 * SEC), 0);
    cr_assert_eq(forge_slurm_budget_reserve(b, T0 + 60 * SEC), 10 * MS);
    forge_slurm_budget_release(b);
}

Test(budget, one_per_cluster_shared_by_its_holders)
{
    forge_slurm_budget_t *a1 = forge_slurm_budget_acquire(URL_A, 10);
    forge_slurm_budget_t *a2 = forge_slurm_budget_acquire(URL_A, 10);
    forge_slurm_budget_t *b = forge_slurm_budget_acquire(URL_B, 10);

    cr_assert_null(forge_slurm_budget_acquire(URL_A, 0), "0: no budget");
    cr_assert_eq(a1, a2);
    cr_assert_neq(a1, b);
    cr_assert_eq(forge_slurm_budget_reserve(a1, T0), 0);
    cr_assert_eq(forge_slurm_budget_reserve(a2, T0), 100 * MS, "shared");
    cr_assert_eq(forge_slurm_budget_reserve(b, T0), 0, "another cluster");
    forge_slurm_budget_release(a1);
    cr_assert_eq(forge_slurm_budget_reserve(a2, T0), 200 * MS, "still held");
    forge_slurm_budget_release(a2);
    forge_slurm_budget_release(b);
    a1 = forge_slurm_budget_acquire(URL_A, 10);
    cr_assert_eq(forge_slurm_budget_reserve(a1, T0), 0, "made afresh");
    forge_slurm_budget_release(a1);
    forge_slurm_budget_release(NULL);
    cr_assert_not(forge_slurm_budget_wait(NULL, NULL));
}

static atomic_bool stop_flag;

static void *stop_later(void *arg)
{
    (void)arg;
    forge_clock_sleep_ms(100);
    atomic_store(&stop_flag, true);
    return NULL;
}

Test(budget, a_stop_cuts_a_wait_short)
{
    forge_slurm_budget_t *b = forge_slurm_budget_acquire(URL_A, 1);
    long long start = forge_clock_ms();
    pthread_t t;

    atomic_store(&stop_flag, false);
    cr_assert_not(forge_slurm_budget_wait(b, &stop_flag), "a token is there");
    cr_assert_lt(forge_clock_ms() - start, 50);
    pthread_create(&t, NULL, stop_later, NULL);
    cr_assert(forge_slurm_budget_wait(b, &stop_flag), "not told it stopped");
    cr_assert_lt(forge_clock_ms() - start, 500, "waited %lld ms",
                 forge_clock_ms() - start);
    pthread_join(t, NULL);
    forge_slurm_budget_release(b);
}

/* ---- through the client ----------------------------------------------------
 */

#define PINGS    15 /* per thread */
#define RATE     20
#define PING_200 "{\"pings\": [{\"responding\": true}], \"errors\": []}"

static support_http_t *srv;
static char dir[64], token_file[96], log_path[96];
static int log_fd = -1;

static void setup(void)
{
    int fd;

    snprintf(dir, sizeof(dir), "/tmp/forge-budget-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    snprintf(token_file, sizeof(token_file), "%s/token", dir);
    snprintf(log_path, sizeof(log_path), "%s/log", dir);
    fd = open(token_file, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    cr_assert_eq(write(fd, "a.b.c\n", 6), 6);
    close(fd);
    log_fd = open(log_path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    forge_log_configure(FORGE_LOG_INFO, FORGE_LOG_JSON, log_fd, "w-budget");
    srv = support_http_start();
    support_http_default(srv, 200, PING_200);
}

static void teardown(void)
{
    char cmd[128];

    support_http_stop(srv);
    forge_log_reset();
    close(log_fd);
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    cr_assert_eq(system(cmd), 0);
}

TestSuite(budget_client, .init = setup, .fini = teardown, .timeout = 30);

static void *pinger(void *arg)
{
    forge_slurm_client_t *c = arg;
    forge_slurm_ping_t ping;
    forge_slurm_result_t res;

    for (int i = 0; i < PINGS; i++)
        cr_assert_eq(forge_slurm_ping(c, &ping, &res), FORGE_SLURM_OK, "%s",
                     res.message);
    return NULL;
}

/* 2 * PINGS pings from two clients of the cluster on two threads, each
 * client with max_rps rps: how long they took (ms). */
static long long two_clients(int max_rps)
{
    forge_slurm_options_t o = support_http_options(srv, token_file, NULL);
    forge_slurm_client_t *c1, *c2;
    pthread_t t1, t2;
    long long start;

    o.max_rps = max_rps;
    c1 = support_http_client(&o);
    c2 = support_http_client(&o);
    start = forge_clock_ms();
    pthread_create(&t1, NULL, pinger, c1);
    pthread_create(&t2, NULL, pinger, c2);
    pthread_join(t1, NULL);
    pthread_join(t2, NULL);
    start = forge_clock_ms() - start;
    forge_slurm_client_destroy(c1);
    forge_slurm_client_destroy(c2);
    return start;
}

static char *read_log(void)
{
    static char text[65536];
    ssize_t n = pread(log_fd, text, sizeof(text) - 1, 0);

    text[n > 0 ? n : 0] = '\0';
    return text;
}

Test(budget_client, two_clients_of_a_cluster_keep_to_its_rate_together)
{
    /* 30 requests at 20/s, 2 at once: 28 slots of 50 ms at least */
    long long ms = two_clients(RATE);

    cr_assert_geq(ms, (2 * PINGS - 2) * 1000 / RATE - 50, "took %lld ms", ms);
    cr_assert_eq(support_http_count(srv), 2 * PINGS);
    cr_assert(strstr(read_log(), "request budget reached "
                                 "(FORGE_SLURM_MAX_RPS=20)"),
              "%s", read_log());
}

Test(budget_client, without_a_budget_nothing_waits)
{
    long long ms = two_clients(0);

    cr_assert_lt(ms, 1000, "took %lld ms", ms);
    cr_assert_eq(support_http_count(srv), 2 * PINGS);
    cr_assert_null(strstr(read_log(), "request budget"), "%s", read_log());
}
