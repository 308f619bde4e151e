/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_retry.c - the retry policy (src/retry/retry.h): causes by name and
 * by a terminal event's reason, the list the configuration reads, a
 * request's override merged key by key, and the decision a try's end
 * leads to: a cause in the policy with a try left is retried; tries
 * exhausted, a cause the policy does not name, a non-zero exit, an OOM or
 * a time limit (unless named) are not; the backoff doubles and is capped.
 */
#include "retry/retry.h"

#include <criterion/criterion.h>
#include <string.h>

static const forge_retry_policy_t infra = {
    3,
    FORGE_RETRY_NODE_FAIL | FORGE_RETRY_BOOT_FAIL | FORGE_RETRY_LAUNCH_FAILED,
    30, true};

Test(retry, causes_by_name_and_by_reason)
{
    cr_assert_eq(forge_retry_cause_named("node_fail", 9),
                 FORGE_RETRY_NODE_FAIL);
    cr_assert_eq(forge_retry_cause_named("node_fail,x", 9),
                 FORGE_RETRY_NODE_FAIL);
    cr_assert_eq(forge_retry_cause_named("node", 4), 0);
    cr_assert_str_eq(forge_retry_cause_name(FORGE_RETRY_TIMEOUT), "timeout");
    cr_assert_null(forge_retry_cause_name(FORGE_RETRY_TIMEOUT | 1));
    cr_assert_eq(forge_retry_cause_of_reason("preempted"),
                 FORGE_RETRY_PREEMPTED);
    cr_assert_eq(forge_retry_cause_of_reason("out_of_memory"),
                 FORGE_RETRY_OUT_OF_MEMORY);
    cr_assert_eq(forge_retry_cause_of_reason("failed"), FORGE_RETRY_FAILED);
    /* not causes: a cancel, LOST, a deadline, a refusal, none */
    cr_assert_eq(forge_retry_cause_of_reason("requested"), 0);
    cr_assert_eq(forge_retry_cause_of_reason("not_found"), 0);
    cr_assert_eq(forge_retry_cause_of_reason("deadline"), 0);
    cr_assert_eq(forge_retry_cause_of_reason("slurm_refused"), 0);
    cr_assert_eq(forge_retry_cause_of_reason(NULL), 0);
}

Test(retry, a_list_of_causes_reads_and_prints_back)
{
    unsigned causes = 1234;
    const char *bad = NULL;
    forge_buf_t b = FORGE_BUF_INIT;

    cr_assert(forge_retry_causes_parse(" timeout ,node_fail,,", &causes, &bad));
    cr_assert_eq(causes, FORGE_RETRY_TIMEOUT | FORGE_RETRY_NODE_FAIL);
    forge_retry_causes_format(causes, &b);
    cr_assert_str_eq(forge_buf_str(&b), "node_fail,timeout");
    forge_buf_truncate(&b, 0);
    cr_assert(forge_retry_causes_parse("", &causes, &bad));
    cr_assert_eq(causes, 0);
    forge_retry_causes_format(0, &b);
    cr_assert_str_eq(forge_buf_str(&b), "");
    cr_assert_not(forge_retry_causes_parse("boot_fail,oom", &causes, &bad));
    cr_assert_str_eq(bad, "oom");
    forge_buf_clear(&b);
}

Test(retry, an_override_wins_key_by_key)
{
    forge_retry_override_t o = {FORGE_RETRY_SET_MAX_TRIES |
                                    FORGE_RETRY_SET_EXCLUDE,
                                {5, FORGE_RETRY_FAILED, 1, false}};
    forge_retry_policy_t p = forge_retry_policy_merge(&infra, &o);

    cr_assert_eq(p.max_tries, 5);
    cr_assert_eq(p.causes, infra.causes, "on not set: the fleet's");
    cr_assert_eq(p.backoff_s, 30, "backoff not set: the fleet's");
    cr_assert_not(p.exclude_failed_nodes);
    o.set = FORGE_RETRY_SET_CAUSES | FORGE_RETRY_SET_BACKOFF;
    p = forge_retry_policy_merge(&infra, &o);
    cr_assert_eq(p.max_tries, 3);
    cr_assert_eq(p.causes, FORGE_RETRY_FAILED);
    cr_assert_eq(p.backoff_s, 1);
    p = forge_retry_policy_merge(&infra, NULL);
    cr_assert_eq(memcmp(&p, &infra, sizeof(p)), 0);
}

Test(retry, a_cause_in_the_policy_with_a_try_left_is_retried)
{
    forge_retry_decision_t d = forge_retry_decide(&infra, "node_fail", 1);

    cr_assert(d.retry);
    cr_assert_not(d.exhausted);
    cr_assert_eq(d.cause, FORGE_RETRY_NODE_FAIL);
    cr_assert_eq(d.next_try, 2);
    cr_assert_eq(d.delay_ms, 30000);
    d = forge_retry_decide(&infra, "boot_fail", 2);
    cr_assert(d.retry);
    cr_assert_eq(d.next_try, 3);
    cr_assert_eq(d.delay_ms, 60000, "doubled for the third try");
    d = forge_retry_decide(&infra, "launch_failed", 0); /* an old record */
    cr_assert(d.retry);
    cr_assert_eq(d.next_try, 2);
}

Test(retry, tries_exhausted_end_the_launch)
{
    forge_retry_decision_t d = forge_retry_decide(&infra, "node_fail", 3);
    forge_retry_policy_t once = infra;

    cr_assert_not(d.retry);
    cr_assert(d.exhausted);
    cr_assert_eq(d.cause, FORGE_RETRY_NODE_FAIL);
    once.max_tries = 1;
    d = forge_retry_decide(&once, "node_fail", 1);
    cr_assert_not(d.retry);
    cr_assert(d.exhausted);
    cr_assert_not(forge_retry_may_retry(&once, 1));
    cr_assert(forge_retry_may_retry(&infra, 2));
    cr_assert_not(forge_retry_may_retry(&infra, 3));
    once.max_tries = 3;
    once.causes = 0;
    cr_assert_not(forge_retry_may_retry(&once, 1), "no cause: never");
}

/* A non-zero exit, an OOM, a time limit, a preemption: the policy must
 * name them; what is not a cause never is retried. */
Test(retry, the_jobs_own_ends_only_when_named)
{
    static const char *const own[] = {"failed", "out_of_memory", "timeout",
                                      "preempted"};
    forge_retry_policy_t named = infra;

    for (size_t i = 0; i < 4; i++) {
        forge_retry_decision_t d = forge_retry_decide(&infra, own[i], 1);
        cr_assert_not(d.retry, "%s retried without being named", own[i]);
        cr_assert_not(d.exhausted, "%s", own[i]);
        named.causes = forge_retry_cause_of_reason(own[i]);
        d = forge_retry_decide(&named, own[i], 1);
        cr_assert(d.retry, "%s named, not retried", own[i]);
    }
    named.causes = ~0u;
    cr_assert_not(forge_retry_decide(&named, "requested", 1).retry);
    cr_assert_not(forge_retry_decide(&named, "deadline", 1).retry);
    cr_assert_not(forge_retry_decide(&named, NULL, 1).retry);
}

Test(retry, the_backoff_doubles_up_to_its_cap)
{
    forge_retry_policy_t p = infra;

    cr_assert_eq(forge_retry_backoff_ms(&p, 2), 30000);
    cr_assert_eq(forge_retry_backoff_ms(&p, 3), 60000);
    cr_assert_eq(forge_retry_backoff_ms(&p, 6), 480000);
    cr_assert_eq(forge_retry_backoff_ms(&p, 7), 600000, "capped");
    cr_assert_eq(forge_retry_backoff_ms(&p, 10), 600000);
    p.backoff_s = 0;
    cr_assert_eq(forge_retry_backoff_ms(&p, 5), 0);
    p.backoff_s = 600;
    cr_assert_eq(forge_retry_backoff_ms(&p, 2), 600000);
}
