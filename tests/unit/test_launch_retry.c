/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_launch_retry.c - a launch record's tries (src/record/
 * launch_retry.c, issue 26): the retry fields round trip through both
 * decoders and are absent for a launch never retried (an old record reads
 * as its first try, no policy); the retry step makes the next try's
 * intent (PENDING, seq + 1, try + 1, the ended job's traces gone, failed
 * nodes gathered once each, only when the policy excludes them) from the
 * states a retry may leave and no other; a record whose policy may still
 * retry keeps and carries its whole request with its job id.
 */
#include "record/launch.h"

#include "support_storage.h"

#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char dir[] = "/tmp/forge-test-retry-XXXXXX";
static forge_sealer_t *sealer;

static const char request[] =
    "{\"kind\": \"launch\", \"launch_id\": \"L1\", \"image\": {\"path\": "
    "\"images/a.sif\", \"format\": \"sif\"}, \"command\": [\"run\"], "
    "\"pools\": [{\"name\": \"main\", \"series\": \"h200\", \"nodes\": 1}], "
    "\"labels\": {\"team\": \"a\"}}";

static void setup(void)
{
    cr_assert_not_null(mkdtemp(dir));
    sealer = support_sealer_in(dir);
}

static void teardown(void)
{
    char cmd[128];

    forge_sealer_destroy(sealer);
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    cr_assert_eq(system(cmd), 0);
}

TestSuite(launch_retry, .init = setup, .fini = teardown);

static const forge_retry_policy_t policy = {
    3, FORGE_RETRY_NODE_FAIL | FORGE_RETRY_PREEMPTED, 45, true};

/* RUNNING with job 77 under policy. */
static forge_launch_record_t *running(void)
{
    forge_launch_record_t *r =
        forge_launch_record_new("L1", 2, request, strlen(request));

    r->retry = policy;
    cr_assert_eq(forge_launch_advance(r, FORGE_STATE_ACCEPTED, 100), 0);
    cr_assert_eq(forge_launch_advance(r, FORGE_STATE_SUBMITTED, 200), 0);
    cr_assert_eq(forge_launch_advance(r, FORGE_STATE_RUNNING, 300), 0);
    r->job_id = 77;
    r->component_ids = calloc(2, sizeof(uint32_t));
    r->component_ids[0] = 77;
    r->component_count = 1;
    return r;
}

static char *encode_ok(const forge_launch_record_t *r)
{
    json_t *o = NULL;
    forge_error_t err = {0};
    char *text;

    cr_assert_eq(forge_launch_record_encode(r, sealer, &o, &err), FORGE_OK,
                 "%s", err.message);
    text = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    return text;
}

static void assert_same_retry(const forge_launch_record_t *a,
                              const forge_launch_record_t *b)
{
    cr_assert_eq(a->retry.max_tries, b->retry.max_tries);
    cr_assert_eq(a->retry.causes, b->retry.causes);
    cr_assert_eq(a->retry.backoff_s, b->retry.backoff_s);
    cr_assert_eq(a->retry.exclude_failed_nodes, b->retry.exclude_failed_nodes);
    cr_assert_eq(a->try_num, b->try_num);
    cr_assert_eq(a->retry_not_before_ms, b->retry_not_before_ms);
    cr_assert_eq(!a->retry_cause, !b->retry_cause);
    if (a->retry_cause)
        cr_assert_str_eq(a->retry_cause, b->retry_cause);
    cr_assert_eq(!a->excluded_nodes, !b->excluded_nodes);
    if (a->excluded_nodes)
        cr_assert_str_eq(a->excluded_nodes, b->excluded_nodes);
}

/* text decoded both ways (they must agree); the fast one returned. */
static forge_launch_record_t *decode_both(const char *text)
{
    forge_launch_record_t *fast = NULL, *general = NULL;
    forge_error_t e1 = {0}, e2 = {0};

    cr_assert_eq(
        forge_launch_record_decode(text, strlen(text), sealer, &fast, &e1),
        FORGE_OK, "%s", e1.message);
    cr_assert_eq(forge_launch_record_decode_general(text, strlen(text), sealer,
                                                    &general, &e2),
                 FORGE_OK, "%s", e2.message);
    assert_same_retry(fast, general);
    cr_assert_eq(fast->state, general->state);
    cr_assert_eq(fast->job_id, general->job_id);
    forge_launch_record_free(general);
    return fast;
}

Test(launch_retry, an_old_record_is_its_first_try_without_a_policy)
{
    forge_launch_record_t *r = running(), *back;
    char *text;

    r->retry = (forge_retry_policy_t){0};
    text = encode_ok(r);
    cr_assert_null(strstr(text, "retry"), "%s", text);
    cr_assert_null(strstr(text, "\"try\""), "%s", text);
    cr_assert_null(strstr(text, "excluded_nodes"), "%s", text);
    back = decode_both(text);
    cr_assert_eq(back->try_num, 0);
    cr_assert_eq(forge_launch_try(back), 1);
    cr_assert_eq(back->retry.max_tries, 0);
    cr_assert_not(forge_launch_may_retry(back));
    forge_launch_record_free(back);
    free(text);
    forge_launch_record_free(r);
}

Test(launch_retry, the_fields_round_trip_through_both_decoders)
{
    forge_launch_record_t *r = running(), *back;
    char *text;

    cr_assert_eq(
        forge_launch_retry(r, "node_fail", "h200-[1-2]", 1700000000123LL, 400),
        FORGE_OK);
    text = encode_ok(r);
    back = decode_both(text);
    assert_same_retry(r, back);
    cr_assert_eq(back->retry.max_tries, 3);
    cr_assert_eq(back->retry.causes,
                 FORGE_RETRY_NODE_FAIL | FORGE_RETRY_PREEMPTED);
    cr_assert_eq(back->retry.backoff_s, 45);
    cr_assert(back->retry.exclude_failed_nodes);
    cr_assert_eq(back->try_num, 2);
    cr_assert_str_eq(back->retry_cause, "node_fail");
    cr_assert_str_eq(back->excluded_nodes, "h200-[1-2]");
    cr_assert_eq(back->retry_not_before_ms, 1700000000123LL);
    cr_assert_str_eq(back->request, request, "a retry may need it all");
    cr_assert(strstr(text, "\"retry_on\":\"node_fail,preempted\""), "%s", text);
    forge_launch_record_free(back);
    free(text);
    forge_launch_record_free(r);
}

/* A cause a later worker added is left out, the rest read; a value out of
 * range reads as absent; both decoders alike. */
Test(launch_retry, what_this_worker_does_not_know_is_left_out)
{
    forge_launch_record_t *r = running(), *back;
    char *text = encode_ok(r), *edited;
    const char *from = "\"retry_on\":\"node_fail,preempted\"";
    char *at = strstr(text, from);
    size_t n;

    cr_assert_not_null(at, "%s", text);
    n = strlen(text) + 64;
    edited = malloc(n);
    snprintf(edited, n, "%.*s%s%s", (int)(at - text), text,
             "\"retry_on\":\"gpu_fault,preempted\",\"try\":-2",
             at + strlen(from));
    back = decode_both(edited);
    cr_assert_eq(back->retry.causes, FORGE_RETRY_PREEMPTED);
    cr_assert_eq(back->try_num, 0);
    forge_launch_record_free(back);
    free(edited);
    free(text);
    forge_launch_record_free(r);
}

Test(launch_retry, a_retry_makes_the_next_tries_intent)
{
    forge_launch_record_t *r = running();
    long seq = r->seq;

    r->slurm_states = strdup("77:NODE_FAIL,;");
    r->missing_since_ms = 9;
    r->restarts = 2;
    r->restarts_staged = 2;
    r->sweep_due = true;
    cr_assert_not(forge_launch_is_intent(r));
    cr_assert_eq(forge_launch_retry(r, "node_fail", "h200-1", 5000, 400),
                 FORGE_OK);
    cr_assert_eq(r->state, FORGE_STATE_PENDING);
    cr_assert_eq(r->seq, seq + 1);
    cr_assert_eq(r->updated_at_ms, 400);
    cr_assert_eq(forge_launch_try(r), 2);
    cr_assert_eq(r->job_id, 0);
    cr_assert_eq(r->component_count, 0);
    cr_assert_null(r->slurm_states);
    cr_assert_eq(r->missing_since_ms, 0);
    cr_assert_eq(r->restarts, 0);
    cr_assert_eq(r->restarts_staged, 0);
    cr_assert_not(r->sweep_due);
    cr_assert_eq(r->retry_not_before_ms, 5000);
    cr_assert(forge_launch_is_intent(r), "PENDING without a job: an intent");
    /* the second try ran on other nodes, and they failed too */
    r->job_id = 78;
    cr_assert_eq(forge_launch_advance(r, FORGE_STATE_SUBMITTED, 500), 0);
    cr_assert_eq(
        forge_launch_retry(r, "boot_fail", "a100-1,h200-1,gpu[1,3]", 6000, 600),
        FORGE_OK);
    cr_assert_eq(forge_launch_try(r), 3);
    cr_assert_str_eq(r->retry_cause, "boot_fail");
    cr_assert_str_eq(r->excluded_nodes, "h200-1,a100-1,gpu[1,3]",
                     "each node once, a bracket's commas its own");
    cr_assert_not(forge_launch_may_retry(r), "the third of three");
    forge_launch_record_free(r);
}

/* Only from a state with a job: never before one, never after the end;
 * nothing changes when it may not. */
Test(launch_retry, a_retry_leaves_only_a_state_with_a_job)
{
    forge_launch_record_t *r =
        forge_launch_record_new("L1", 1, request, strlen(request));

    cr_assert_eq(forge_launch_retry(r, "node_fail", NULL, 0, 1), FORGE_EINVAL);
    cr_assert_eq(forge_launch_advance(r, FORGE_STATE_ACCEPTED, 100), 0);
    cr_assert_eq(forge_launch_retry(r, "node_fail", NULL, 0, 1), FORGE_EINVAL);
    cr_assert(forge_launch_is_intent(r), "ACCEPTED without a job");
    cr_assert_eq(forge_launch_advance(r, FORGE_STATE_FAILED, 200), 0);
    cr_assert_eq(forge_launch_retry(r, "node_fail", NULL, 0, 1), FORGE_EINVAL);
    cr_assert_eq(r->state, FORGE_STATE_FAILED);
    cr_assert_eq(forge_launch_try(r), 1);
    cr_assert_not(forge_launch_is_intent(r));
    forge_launch_record_free(r);
}

Test(launch_retry, failed_nodes_are_kept_only_for_a_nodes_failure_to_exclude)
{
    forge_launch_record_t *r = running();

    r->retry.exclude_failed_nodes = false;
    cr_assert_eq(forge_launch_retry(r, "node_fail", "h200-1", 0, 400),
                 FORGE_OK);
    cr_assert_null(r->excluded_nodes);
    forge_launch_record_free(r);
    r = running();
    cr_assert_eq(forge_launch_retry(r, "boot_fail", NULL, 0, 400), FORGE_OK);
    cr_assert_null(r->excluded_nodes, "no nodes: none");
    forge_launch_record_free(r);
    r = running(); /* a preemption says nothing against the node */
    cr_assert_eq(forge_launch_retry(r, "preempted", "h200-1", 0, 400),
                 FORGE_OK);
    cr_assert_null(r->excluded_nodes);
    forge_launch_record_free(r);
}

/* While a retry may still need it, the request stays whole with the job
 * id (in memory and sealed in the record); once none can, only what is
 * kept of it. */
Test(launch_retry, a_record_that_may_retry_keeps_its_whole_request)
{
    forge_launch_record_t *r = running(), *back;
    char *text;

    cr_assert(forge_launch_may_retry(r));
    forge_launch_compact(r);
    cr_assert_str_eq(r->request, request, "not compacted");
    text = encode_ok(r);
    back = decode_both(text);
    cr_assert_str_eq(back->request, request, "sealed whole");
    forge_launch_record_free(back);
    free(text);
    r->try_num = 3; /* the last try: nothing needs it any more */
    cr_assert_not(forge_launch_may_retry(r));
    text = encode_ok(r);
    back = decode_both(text);
    cr_assert_neq(strcmp(back->request, request), 0, "only what is kept");
    cr_assert(strstr(back->request, "\"team\""), "%s", back->request);
    forge_launch_record_free(back);
    free(text);
    forge_launch_compact(r);
    cr_assert_null(r->request);
    forge_launch_record_free(r);
}

Test(launch_retry, a_copy_carries_the_retry_fields)
{
    forge_launch_record_t *r = running(), *c;

    cr_assert_eq(forge_launch_retry(r, "node_fail", "h200-1", 7, 400),
                 FORGE_OK);
    c = forge_launch_record_copy(r);
    forge_launch_record_free(r);
    cr_assert_eq(c->try_num, 2);
    cr_assert_str_eq(c->retry_cause, "node_fail");
    cr_assert_str_eq(c->excluded_nodes, "h200-1");
    cr_assert_eq(c->retry.max_tries, 3);
    cr_assert_eq(c->retry_not_before_ms, 7);
    forge_launch_record_free(c);
}
