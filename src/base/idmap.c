/* SPDX-License-Identifier: Apache-2.0 */
/*
 * base/idmap.c - job ids to values (idmap.h): linear probing over a
 * power-of-two array, at most half full, ids spread by a multiplicative
 * hash (consecutive job ids are the common case).
 */
#include "base/idmap.h"
#include "base/util.h"

#include <stdlib.h>

static size_t slot_of(const forge_idmap_t *m, uint32_t id)
{
    return (size_t)((id * 2654435761u) ^ (id >> 16)) & m->mask;
}

void forge_idmap_init(forge_idmap_t *m, size_t expected)
{
    size_t slots = 16;

    while (slots < 2 * expected + 2)
        slots *= 2;
    m->keys = forge_xcalloc(slots, sizeof(*m->keys));
    m->values = forge_xcalloc(slots, sizeof(*m->values));
    m->mask = slots - 1;
    m->count = 0;
}

void forge_idmap_clear(forge_idmap_t *m)
{
    free(m->keys);
    free(m->values);
    m->keys = NULL;
    m->values = NULL;
    m->mask = 0;
    m->count = 0;
}

bool forge_idmap_put(forge_idmap_t *m, uint32_t id, uint64_t value)
{
    size_t s;

    if (!id || !m->keys)
        return false;
    for (s = slot_of(m, id); m->keys[s] && m->keys[s] != id;
         s = (s + 1) & m->mask)
        ;
    if (!m->keys[s]) {
        if (2 * (m->count + 1) > m->mask + 1)
            return false; /* past half full: the caller sized it */
        m->keys[s] = id;
        m->count++;
    }
    m->values[s] = value;
    return true;
}

bool forge_idmap_get(const forge_idmap_t *m, uint32_t id, uint64_t *value)
{
    if (!id || !m->keys)
        return false;
    for (size_t s = slot_of(m, id); m->keys[s]; s = (s + 1) & m->mask)
        if (m->keys[s] == id) {
            *value = m->values[s];
            return true;
        }
    return false;
}
