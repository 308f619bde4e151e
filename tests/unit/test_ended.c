/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_ended.c - the ends of jobs the loop saw (src/loop/ended.c): found
 * by job id while young enough, the latest end of a job found first, the
 * oldest dropped by age and by count, the Slurm object referenced.
 */
#include "loop/ended.h"

#include <criterion/criterion.h>

Test(ended, an_end_is_found_by_its_job_id_until_it_is_too_old)
{
    forge_ended_t *t = forge_ended_new();
    json_t *slurm = json_pack("{s:s}", "state", "COMPLETED");
    const forge_ended_job_t *end;

    forge_ended_put(t, 42, FORGE_STATE_SUCCEEDED, "exit 0", slurm, NULL, 1000);
    json_decref(slurm); /* the table holds its own reference */
    cr_assert_null(forge_ended_find(t, 43, 1000));
    end = forge_ended_find(t, 42, 1000 + FORGE_ENDED_KEEP_MS - 1);
    cr_assert_not_null(end);
    cr_assert_eq(end->state, FORGE_STATE_SUCCEEDED);
    cr_assert_str_eq(end->reason, "exit 0");
    cr_assert_str_eq(json_string_value(json_object_get(end->slurm, "state")),
                     "COMPLETED");
    cr_assert_null(forge_ended_find(t, 42, 1000 + FORGE_ENDED_KEEP_MS));
    cr_assert_eq(forge_ended_count(t), 0);
    forge_ended_free(t);
}

Test(ended, the_latest_end_of_a_job_is_found_and_both_expire_in_order)
{
    forge_ended_t *t = forge_ended_new();

    forge_ended_put(t, 7, FORGE_STATE_FAILED, NULL, NULL, NULL, 0);
    forge_ended_put(t, 7 + 4096, FORGE_STATE_CANCELLED, NULL, NULL, NULL, 5);
    forge_ended_put(t, 7, FORGE_STATE_SUCCEEDED, NULL, NULL, NULL, 10);
    cr_assert_eq(forge_ended_find(t, 7, 10)->state, FORGE_STATE_SUCCEEDED);
    cr_assert_eq(forge_ended_find(t, 7 + 4096, 10)->state,
                 FORGE_STATE_CANCELLED, "same bucket, other job");
    /* the first end of 7 ages out; the later one stays */
    cr_assert_eq(forge_ended_find(t, 7, FORGE_ENDED_KEEP_MS + 6)->state,
                 FORGE_STATE_SUCCEEDED);
    cr_assert_eq(forge_ended_count(t), 1);
    forge_ended_free(t);
}

Test(ended, the_oldest_go_first_past_the_count)
{
    forge_ended_t *t = forge_ended_new();

    for (uint32_t id = 1; id <= FORGE_ENDED_MAX + 10; id++)
        forge_ended_put(t, id, FORGE_STATE_SUCCEEDED, NULL, NULL, NULL, id);
    cr_assert_eq(forge_ended_count(t), FORGE_ENDED_MAX);
    cr_assert_null(forge_ended_find(t, 10, FORGE_ENDED_MAX + 10));
    cr_assert_not_null(forge_ended_find(t, 11, FORGE_ENDED_MAX + 10));
    forge_ended_free(t);
}
