/* SPDX-License-Identifier: Apache-2.0 */
/*
 * series.h - the GPU series catalogue (FORGE_GPU_SERIES_FILE,
 * schemas/gpu-series.v1.json): which Slurm constraint pins each series.
 *
 * A series without a constraint may be listed (an inventory can be
 * incomplete) but is refused at use: a component must never land on
 * arbitrary GPU nodes (series_unconstrained). Loaded once at start; the
 * catalogue is immutable and may be shared by threads.
 */
#ifndef FORGE_SERIES_H
#define FORGE_SERIES_H

#include "base/error.h"

#include <stddef.h>

typedef struct forge_series {
    char *name;
    char *constraint; /* NULL: listed but unconstrained */
    int gpus_per_node;
} forge_series_t;

typedef struct forge_series_catalog {
    forge_series_t *series;
    size_t count;
} forge_series_catalog_t;

/* Parses a catalogue document. *out is new (forge_series_catalog_destroy). */
forge_rc_t forge_series_parse(const char *buf, size_t len,
                              forge_series_catalog_t **out,
                              forge_error_t *err) FORGE_WARN_UNUSED;

/* Reads and parses the file at path; errors name the file. */
forge_rc_t forge_series_load(const char *path, forge_series_catalog_t **out,
                             forge_error_t *err) FORGE_WARN_UNUSED;

/* The series called name, or NULL. Borrowed from the catalogue. */
const forge_series_t *forge_series_find(const forge_series_catalog_t *cat,
                                        const char *name);

void forge_series_catalog_destroy(forge_series_catalog_t *cat); /* NULL-safe */

#endif
