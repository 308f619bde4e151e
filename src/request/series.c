/* SPDX-License-Identifier: Apache-2.0 */
/*
 * series.c - reading the GPU series catalogue (series.h).
 */
#include "request/series.h"
#include "json/document.h"
#include "text/text.h"
#include "base/util.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define CATALOG_MAX_BYTES (1024 * 1024)
#define CONSTRAINT_MAX    256

/* Slurm constraint expression characters: features, & | ( ) ! * : . - _ */
static bool valid_constraint(const char *s)
{
    size_t n = strlen(s);

    return n > 0 && n <= CONSTRAINT_MAX &&
           strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                     "0123456789_.&|()!*:-[]") == n;
}

static forge_rc_t parse_entry(const char *name, json_t *v, forge_series_t *s,
                              forge_error_t *err)
{
    json_t *c = json_object_get(v, "slurm_constraint");
    json_t *g = json_object_get(v, "gpus_per_node");

    if (!forge_text_is_name(name, "._-", 64))
        return forge_error_set(err, FORGE_ESCHEMA, "$.series",
                               "series name \"%.64s\" must match "
                               "^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$",
                               name);
    if (!json_is_object(v))
        return forge_error_set(err, FORGE_ESCHEMA, "$.series",
                               "series %s must be an object", name);
    if (c && !json_is_null(c) &&
        (!json_is_string(c) || !valid_constraint(json_string_value(c))))
        return forge_error_set(err, FORGE_ESCHEMA, "$.series",
                               "series %s: slurm_constraint must be a Slurm "
                               "constraint expression (or null)",
                               name);
    if (!json_is_integer(g) || json_integer_value(g) < 0 ||
        json_integer_value(g) > 64)
        return forge_error_set(err, FORGE_ESCHEMA, "$.series",
                               "series %s: gpus_per_node is required, 0..64",
                               name);
    s->name = forge_xstrdup(name);
    s->constraint =
        json_is_string(c) ? forge_xstrdup(json_string_value(c)) : NULL;
    s->gpus_per_node = (int)json_integer_value(g);
    return FORGE_OK;
}

forge_rc_t forge_series_parse(const char *buf, size_t len,
                              forge_series_catalog_t **out, forge_error_t *err)
{
    forge_series_catalog_t *cat = NULL;
    json_t *root, *series, *v;
    const char *name;
    forge_rc_t rc;

    *out = NULL;
    if ((rc = forge_document_parse(buf, len, 0, &root, err)))
        return rc;
    rc = FORGE_ESCHEMA;
    series = json_object_get(root, "series");
    if (!json_is_object(series)) {
        forge_error_set(err, FORGE_ESCHEMA, "$.series",
                        "the catalogue needs a \"series\" object");
        goto out;
    }
    cat = forge_xcalloc(1, sizeof(*cat));
    cat->series =
        forge_xcalloc(json_object_size(series) + 1, sizeof(*cat->series));
    rc = FORGE_OK;
    json_object_foreach(series, name, v)
    {
        if ((rc = parse_entry(name, v, &cat->series[cat->count], err)))
            goto out;
        cat->count++;
    }
    *out = cat;
    cat = NULL;
out:
    forge_series_catalog_destroy(cat);
    json_decref(root);
    return rc;
}

static forge_rc_t parse_into(const char *buf, size_t len, void *out,
                             forge_error_t *err)
{
    return forge_series_parse(buf, len, out, err);
}

forge_rc_t forge_series_load(const char *path, forge_series_catalog_t **out,
                             forge_error_t *err)
{
    *out = NULL;
    return forge_document_load(path, CATALOG_MAX_BYTES, "FORGE_GPU_SERIES_FILE",
                               "the GPU series catalogue", 0, parse_into, out,
                               err);
}

const forge_series_t *forge_series_find(const forge_series_catalog_t *cat,
                                        const char *name)
{
    for (size_t i = 0; cat && i < cat->count; i++)
        if (!strcmp(cat->series[i].name, name))
            return &cat->series[i];
    return NULL;
}

void forge_series_catalog_destroy(forge_series_catalog_t *cat)
{
    if (!cat)
        return;
    for (size_t i = 0; i < cat->count; i++) {
        free(cat->series[i].name);
        free(cat->series[i].constraint);
    }
    free(cat->series);
    free(cat);
}
