/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_idmap.c - job ids to values (base/idmap.h): what a poll tick of
 * 100,000 jobs leans on.
 */
#include "base/idmap.h"

#include <criterion/criterion.h>

Test(idmap, finds_what_was_put_and_nothing_else)
{
    forge_idmap_t m;
    uint64_t v = 0;

    forge_idmap_init(&m, 100000);
    for (uint32_t id = 1; id <= 100000; id++) /* consecutive, as Slurm's */
        cr_assert(forge_idmap_put(&m, id * 7u, id));
    cr_assert_eq(m.count, 100000);
    for (uint32_t id = 1; id <= 100000; id++) {
        cr_assert(forge_idmap_get(&m, id * 7u, &v), "id %u", id * 7u);
        cr_assert_eq(v, id);
        cr_assert_not(forge_idmap_get(&m, id * 7u + 1, &v));
    }
    forge_idmap_clear(&m);
}

Test(idmap, a_put_again_replaces)
{
    forge_idmap_t m;
    uint64_t v = 0;

    forge_idmap_init(&m, 4);
    cr_assert(forge_idmap_put(&m, 42, 1));
    cr_assert(forge_idmap_put(&m, 42, 2));
    cr_assert_eq(m.count, 1);
    cr_assert(forge_idmap_get(&m, 42, &v));
    cr_assert_eq(v, 2);
    forge_idmap_clear(&m);
}

Test(idmap, refuses_id_zero_and_more_than_it_was_sized_for)
{
    forge_idmap_t m, cleared;
    uint64_t v = 0;
    size_t stored = 0;

    forge_idmap_init(&m, 3);
    cr_assert_not(forge_idmap_put(&m, 0, 1));
    cr_assert_not(forge_idmap_get(&m, 0, &v));
    for (uint32_t id = 1; id <= 100; id++)
        stored += forge_idmap_put(&m, id, id);
    cr_assert_geq(stored, 3);
    cr_assert_lt(stored, 100, "a map sized for 3 never grows");
    for (uint32_t id = 1; id <= stored; id++) /* what it took, it finds */
        cr_assert(forge_idmap_get(&m, id, &v));
    forge_idmap_clear(&m);
    cleared = m;
    cr_assert_not(forge_idmap_get(&cleared, 1, &v), "a cleared map is empty");
}
