/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_health.c - the verdicts behind /healthz and /readyz
 * (src/observe/health.c), from the facts the worker publishes: live while the
 * loop's heartbeat is younger than its bound (and before the first pass,
 * and while draining); ready only when assigned, every owned partition
 * restored, the producer usable, transactions committing and slurmrestd
 * answered within its bound;
 * a standby owning nothing is ready and says so.
 */
#include "clock/clock.h"
#include "observe/health.h"
#include "slurm/endpoints.h"

#include <criterion/criterion.h>
#include <string.h>

#define assert_says(v, text)                                                   \
    cr_assert_not_null(strstr((v).body, text), "\"%s\" not in %s", text,       \
                       (v).body)

/* Everything a ready worker has said. */
static void all_good(size_t owned)
{
    forge_health_beat();
    forge_health_partitions(owned, 0);
    forge_health_loop_ready(owned ? 1 : 2);
    forge_health_slurm_answered();
}

Test(health, live_before_the_first_pass_while_passing_and_while_draining)
{
    forge_health_verdict_t v;

    forge_health_init(2, 60);
    forge_health_live(&v);
    cr_assert(v.ok);
    assert_says(v, "\"loop\": \"starting\"");
    forge_health_beat();
    forge_health_live(&v);
    cr_assert(v.ok);
    assert_says(v, "\"loop\": \"running\"");
    assert_says(v, "\"bound_s\": 2");
    forge_clock_sleep_ms(2100); /* no pass for longer than the bound */
    forge_health_live(&v);
    cr_assert_not(v.ok, "%s", v.body);
    assert_says(v, "\"loop\": \"stalled\"");
    forge_health_beat();
    forge_health_live(&v);
    cr_assert(v.ok);
    forge_health_stopping(); /* a drain is no stall */
    forge_clock_sleep_ms(2100);
    forge_health_live(&v);
    cr_assert(v.ok);
    assert_says(v, "\"loop\": \"stopping\"");
}

Test(health, ready_needs_every_fact)
{
    forge_health_verdict_t v;

    forge_health_init(300, 60);
    forge_health_ready(&v);
    cr_assert_not(v.ok);
    assert_says(v, "not assigned by the group yet");
    assert_says(v, "slurmrestd has not answered yet");
    all_good(6);
    forge_health_ready(&v);
    cr_assert(v.ok, "%s", v.body);
    assert_says(v, "\"owned\": 6");
    assert_says(v, "\"standby\": false");
    assert_says(v, "every owned partition is restored");

    forge_health_partitions(6, 2); /* a rebalance brought two more */
    forge_health_ready(&v);
    cr_assert_not(v.ok);
    assert_says(v, "owned partitions are restoring");
    assert_says(v, "\"restoring\": 2");
    forge_health_partitions(6, 0);

    forge_health_producer(false);
    forge_health_ready(&v);
    cr_assert_not(v.ok);
    assert_says(v, "the producer waits for the broker");
    assert_says(v, "\"producer_usable\": false");
    forge_health_producer(true);

    /* an ACL removed under the worker: named, JSON-safe, until it is back */
    forge_health_kafka_denied("WRITE on topic s (publishes \"status\")");
    forge_health_ready(&v);
    cr_assert_not(v.ok);
    assert_says(v, "Kafka refuses the worker");
    assert_says(v, "\"kafka_denied\": \"WRITE on topic s (publishes "
                   "?status?)\"");
    forge_health_kafka_denied(NULL);
    forge_health_ready(&v);
    cr_assert(v.ok, "%s", v.body);
    assert_says(v, "\"kafka_denied\": \"\"");

    /* transactions failing (two of three brokers down): not ready, the
     * reason and Kafka's words, for as long as none commits */
    forge_health_commit_failing("timed_out", "Local: Message timed out");
    forge_clock_sleep_ms(20);
    forge_health_commit_failing("broker_unreachable", "Broker transport "
                                                      "failure");
    forge_health_ready(&v);
    cr_assert_not(v.ok);
    assert_says(v, "Kafka transactions fail to commit");
    assert_says(v, "\"commit_failing_reason\": \"broker_unreachable\"");
    assert_says(v, "\"commit_error\": \"Broker transport failure\"");
    cr_assert_geq(forge_health_commit_failing_ms(NULL, 0, NULL, 0), 20,
                  "since the first failure");
    forge_health_commit_failing(NULL, NULL);
    forge_health_ready(&v);
    cr_assert(v.ok, "%s", v.body);
    assert_says(v, "\"commit_failing_s\": 0.000");
    cr_assert_eq(forge_health_commit_failing_ms(NULL, 0, NULL, 0), 0);

    forge_health_stopping();
    forge_health_ready(&v);
    cr_assert_not(v.ok);
    assert_says(v, "stopping");
}

/* The slurmrestd endpoints in use (slurm/endpoints.h) and their states,
 * their URLs without user info. */
Test(health, readyz_lists_the_slurmrestd_endpoints)
{
    forge_health_verdict_t v;
    forge_slurm_endpoints_t *e;

    forge_health_init(300, 60);
    forge_health_ready(&v);
    assert_says(v, "\"slurm_endpoints\": []");
    e = forge_slurm_endpoints_acquire("http://u:pw@r1:6820,http://r2:6820");
    forge_slurm_endpoints_report(e, 0, false);
    forge_health_ready(&v);
    assert_says(v, "\"slurm_endpoints\": [{\"url\": \"http://r1:6820\", "
                   "\"state\": \"refused\"}, {\"url\": \"http://r2:6820\", "
                   "\"state\": \"in_use\"}]");
    cr_assert_null(strstr(v.body, "pw"), "%s", v.body);
    forge_slurm_endpoints_release(e);
}

Test(health, a_slurmrestd_answer_older_than_its_bound_is_not_ready)
{
    forge_health_verdict_t v;

    forge_health_init(300, 3);
    all_good(1);
    forge_health_ready(&v);
    cr_assert(v.ok, "%s", v.body);
    forge_clock_sleep_ms(3100);
    forge_health_beat();
    forge_health_ready(&v);
    cr_assert_not(v.ok);
    assert_says(v, "slurmrestd has not answered within the bound");
    cr_assert_geq(forge_health_slurm_age_ms(), 3000);
    forge_health_slurm_answered();
    forge_health_ready(&v);
    cr_assert(v.ok, "%s", v.body);
}

Test(health, a_standby_owning_nothing_is_ready_and_says_so)
{
    forge_health_verdict_t v;

    forge_health_init(300, 60);
    all_good(0);
    forge_health_ready(&v);
    cr_assert(v.ok, "%s", v.body);
    assert_says(v, "\"standby\": true");
    assert_says(v, "standby: this worker owns no partition");
}

Test(health, a_stalled_loop_is_not_ready_either)
{
    forge_health_verdict_t v;

    forge_health_init(2, 60);
    all_good(3);
    forge_clock_sleep_ms(2100);
    forge_health_ready(&v);
    cr_assert_not(v.ok);
    assert_says(v, "the loop is stalled");
}
