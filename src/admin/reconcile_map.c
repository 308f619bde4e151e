/* SPDX-License-Identifier: Apache-2.0 */
/*
 * reconcile_map.c - the tables reconcile's modules share (reconcile.h):
 * a string-keyed table (launches by launch_id, Slurm jobs by tag), and
 * the sources it holds, made and freed here. Open addressing
 * over an array of entries kept in insertion order, so a report lists
 * things in the order they were met. Values belong to the caller.
 */
#include "admin/reconcile.h"
#include "base/util.h"

#include <stdlib.h>
#include <string.h>

typedef struct entry {
    char *key;
    void *value;
} entry_t;

struct forge_recon_map {
    entry_t *entries;
    size_t count, room;
    size_t *index; /* entry + 1; 0: free */
    size_t slots;  /* a power of two, at least twice count */
};

static size_t hash(const char *s)
{
    size_t h = 14695981039346656037ull; /* FNV-1a */

    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static size_t *find(const forge_recon_map_t *m, const char *key)
{
    size_t i = hash(key) & (m->slots - 1);

    while (m->index[i] && strcmp(m->entries[m->index[i] - 1].key, key))
        i = (i + 1) & (m->slots - 1);
    return &m->index[i];
}

static void grow(forge_recon_map_t *m)
{
    free(m->index);
    m->slots *= 2;
    m->index = forge_xcalloc(m->slots, sizeof(size_t));
    for (size_t e = 0; e < m->count; e++)
        *find(m, m->entries[e].key) = e + 1;
}

forge_recon_map_t *forge_recon_map_new(void)
{
    forge_recon_map_t *m = forge_xcalloc(1, sizeof(*m));

    m->slots = 64;
    m->index = forge_xcalloc(m->slots, sizeof(size_t));
    return m;
}

void forge_recon_map_free(forge_recon_map_t *m)
{
    if (!m)
        return;
    for (size_t i = 0; i < m->count; i++)
        free(m->entries[i].key);
    free(m->entries);
    free(m->index);
    free(m);
}

void **forge_recon_map_slot(forge_recon_map_t *m, const char *key)
{
    size_t *at;

    if (2 * (m->count + 1) > m->slots)
        grow(m);
    at = find(m, key);
    if (*at)
        return &m->entries[*at - 1].value;
    if (m->count == m->room) {
        m->room = m->room ? 2 * m->room : 64;
        m->entries = forge_xrealloc(m->entries, m->room * sizeof(entry_t));
    }
    m->entries[m->count] = (entry_t){forge_xstrdup(key), NULL};
    *at = ++m->count;
    return &m->entries[m->count - 1].value;
}

void *forge_recon_map_get(const forge_recon_map_t *m, const char *key)
{
    size_t *at;

    if (!m)
        return NULL;
    at = find(m, key);

    return *at ? m->entries[*at - 1].value : NULL;
}

size_t forge_recon_map_count(const forge_recon_map_t *m)
{
    return m ? m->count : 0;
}

void *forge_recon_map_at(const forge_recon_map_t *m, size_t i)
{
    return m->entries[i].value;
}

const char *forge_recon_map_key_at(const forge_recon_map_t *m, size_t i)
{
    return m->entries[i].key;
}

forge_recon_launch_t *forge_recon_launch_of(forge_recon_sources_t *s,
                                            const char *launch_id)
{
    forge_recon_launch_t **slot;

    if (!s->launches)
        s->launches = forge_recon_map_new();
    slot =
        (forge_recon_launch_t **)forge_recon_map_slot(s->launches, launch_id);
    if (!*slot) {
        *slot = forge_xcalloc(1, sizeof(**slot));
        (*slot)->launch_id = forge_xstrdup(launch_id);
        (*slot)->rec_partition = -1;
        (*slot)->request_partition = -1;
    }
    return *slot;
}

void forge_recon_launch_free(forge_recon_launch_t *l)
{
    if (!l)
        return;
    free(l->launch_id);
    forge_launch_record_free(l->rec);
    free(l->request);
    free(l);
}

void forge_recon_sources_clear(forge_recon_sources_t *s)
{
    for (size_t i = 0; i < forge_recon_map_count(s->launches); i++)
        forge_recon_launch_free(forge_recon_map_at(s->launches, i));
    for (size_t i = 0; i < forge_recon_map_count(s->jobs); i++) {
        forge_slurm_job_list_t *l = forge_recon_map_at(s->jobs, i);
        forge_slurm_job_list_clear(l);
        free(l);
    }
    forge_recon_map_free(s->launches);
    forge_recon_map_free(s->jobs);
    memset(s, 0, sizeof(*s));
}
