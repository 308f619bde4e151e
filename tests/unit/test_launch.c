/*
 * test_launch.c - launch records: the state machine through them (seq +1
 * per legal move, nothing for an illegal one), the digest, and the state
 * topic encoding round trip, including refusal of what is not a record.
 */
#include "launch.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

Test(launch, digest_is_sha256_hex)
{
    char hex[FORGE_DIGEST_HEX];

    forge_digest_hex("abc", 3, hex);
    cr_assert_str_eq(
        hex,
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

Test(launch, advance_counts_legal_moves_only)
{
    forge_launch_record_t *r = forge_launch_record_new("L1", 1, "{}", 2);

    cr_assert_eq(forge_launch_advance(r, FORGE_STATE_ACCEPTED, 10), 0);
    cr_assert_eq(r->accepted_at_ms, 10);
    cr_assert_eq(forge_launch_advance(r, FORGE_STATE_SUBMITTED, 11), 0);
    cr_assert_eq(forge_launch_advance(r, FORGE_STATE_RUNNING, 12), 0);
    cr_assert_eq(forge_launch_advance(r, FORGE_STATE_PENDING, 13), 0,
                 "requeue");
    cr_assert_eq(forge_launch_advance(r, FORGE_STATE_RUNNING, 14), 0);
    cr_assert_eq(forge_launch_advance(r, FORGE_STATE_RUNNING, 15), FORGE_EINVAL,
                 "no move to itself");
    cr_assert_eq(forge_launch_advance(r, FORGE_STATE_SUCCEEDED, 16), 0);
    cr_assert_eq(forge_launch_advance(r, FORGE_STATE_FAILED, 17), FORGE_EINVAL,
                 "nothing leaves a terminal state");
    cr_assert_eq(r->seq, 6);
    cr_assert_eq(r->state, FORGE_STATE_SUCCEEDED);
    cr_assert_eq(r->updated_at_ms, 16);
    forge_launch_record_free(r);
}

Test(launch, encode_decode_round_trip)
{
    const char req[] = "{\"kind\": \"launch\", \"launch_id\": \"L1\", "
                       "\"env\": {\"A\": \"\\u00e9 \\\"q\\\"\"}}";
    forge_launch_record_t *r = forge_launch_record_new("L1", 3, req,
                                                       strlen(req)),
                          *back = NULL;
    forge_error_t err = {0};
    json_t *o;
    char *text;

    cr_assert_eq(forge_launch_advance(r, FORGE_STATE_ACCEPTED, 100), 0);
    cr_assert_eq(forge_launch_advance(r, FORGE_STATE_SUBMITTED, 200), 0);
    r->job_id = 4242;
    r->component_ids = calloc(2, sizeof(uint32_t));
    r->component_ids[0] = 4242;
    r->component_ids[1] = 4243;
    r->component_count = 2;
    r->cancel_requested = true;
    r->missing_since_ms = 300;
    o = forge_launch_record_encode(r);
    text = json_dumps(o, JSON_COMPACT);
    cr_assert_eq(forge_launch_record_decode(text, strlen(text), &back, &err), 0,
                 "%s", err.message);
    cr_assert_str_eq(back->launch_id, "L1");
    cr_assert_eq(back->attempt, 3);
    cr_assert_eq(back->state, FORGE_STATE_SUBMITTED);
    cr_assert_eq(back->seq, 2);
    cr_assert_str_eq(back->digest, r->digest);
    cr_assert_eq(back->request_len, strlen(req));
    cr_assert_eq(memcmp(back->request, req, strlen(req)), 0);
    cr_assert_eq(back->job_id, 4242);
    cr_assert_eq(back->component_count, 2);
    cr_assert_eq(back->component_ids[1], 4243);
    cr_assert(back->cancel_requested);
    cr_assert_not(back->archived);
    cr_assert_eq(back->accepted_at_ms, 100);
    cr_assert_eq(back->updated_at_ms, 200);
    cr_assert_eq(back->missing_since_ms, 300);
    free(text);
    json_decref(o);
    forge_launch_record_free(back);
    forge_launch_record_free(r);
}

Test(launch, decode_refuses_what_is_not_a_record)
{
    const char *bad[] = {
        "garbage",
        "{}",
        "{\"v\": 2, \"launch_id\": \"L\"}",
        "[1]",
    };
    forge_launch_record_t *r = (forge_launch_record_t *)0x1;
    forge_error_t err = {0};

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        forge_error_clear(&err);
        cr_assert_neq(
            forge_launch_record_decode(bad[i], strlen(bad[i]), &r, &err), 0,
            "%s", bad[i]);
        cr_assert_null(r);
    }
}
