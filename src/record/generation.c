/* SPDX-License-Identifier: Apache-2.0 */
/*
 * generation.c - the partitions' generations (generation.h: the ownership
 * story). One atomic slot per partition and one counter. The loop's
 * writes are releases and the runners' reads acquires, so a runner that
 * sees a generation end also sees everything the loop did before ending
 * it; the counter is touched by the loop's thread only.
 */
#include "record/generation.h"
#include "base/util.h"

#include <stdatomic.h>
#include <stdlib.h>

struct forge_generations {
    _Atomic uint64_t held[FORGE_PARTITIONS_MAX]; /* 0: not held */
    uint64_t last;                               /* the loop's thread only */
};

forge_generations_t *forge_generations_new(void)
{
    forge_generations_t *g = forge_xcalloc(1, sizeof(*g));

    for (size_t p = 0; p < FORGE_PARTITIONS_MAX; p++)
        atomic_init(&g->held[p], 0);
    return g;
}

void forge_generations_destroy(forge_generations_t *g)
{
    free(g);
}

static bool in_range(int32_t p)
{
    return p >= 0 && p < FORGE_PARTITIONS_MAX;
}

uint64_t forge_generation_begin(forge_generations_t *g, int32_t p)
{
    if (!in_range(p))
        return 0;
    atomic_store_explicit(&g->held[p], ++g->last, memory_order_release);
    return g->last;
}

void forge_generation_end(forge_generations_t *g, int32_t p)
{
    if (in_range(p))
        atomic_store_explicit(&g->held[p], 0, memory_order_release);
}

uint64_t forge_generation_of(const forge_generations_t *g, int32_t p)
{
    return in_range(p) ? atomic_load_explicit(&g->held[p], memory_order_acquire)
                       : 0;
}

bool forge_generation_current(const forge_generations_t *g, int32_t p,
                              uint64_t gen)
{
    return gen != 0 && forge_generation_of(g, p) == gen;
}
