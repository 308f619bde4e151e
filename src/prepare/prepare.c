/* SPDX-License-Identifier: Apache-2.0 */
/*
 * prepare.c - parse → check → render for one request (prepare.h).
 *
 * The parsed document (jdoc.h: one arena, not a jansson tree, which was
 * most of a prepare's cost in bench/bench_render, issue 13) is freed last,
 * after the script and the submit body are built; the request never
 * points into it.
 */
#include "prepare/prepare.h"
#include "render/render.h"
#include "request/request_check.h"
#include "text/utf8.h"
#include "base/util.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

forge_rc_t forge_prepare(const char *buf, size_t len, const forge_config_t *cfg,
                         const forge_series_catalog_t *catalog,
                         forge_prepared_t **out, forge_error_t *err)
{
    forge_prepared_t *p = forge_xcalloc(1, sizeof(*p));
    forge_jdoc_t *doc = NULL;
    forge_rc_t rc;

    *out = NULL;
    if ((rc = forge_request_parse_keep(buf, len, &p->request, &doc, err)))
        goto out;
    if ((rc = forge_request_check(p->request, cfg, catalog, err)))
        goto out;
    if (p->request->kind == FORGE_REQUEST_LAUNCH) {
        size_t script_len;
        p->script = forge_render_script(&p->request->launch, cfg);
        script_len = strlen(p->script);
        /* srun's argv carries the command once per pool: past this the
         * kernel would refuse to start it (ARG_MAX is 2 MiB). */
        if (script_len > FORGE_SCRIPT_MAX_BYTES) {
            rc = forge_error_set(err, FORGE_ETOO_LARGE, "$.command",
                                 "the rendered script would be %zu bytes; "
                                 "the limit is %d (command and env are "
                                 "repeated once per pool)",
                                 script_len, FORGE_SCRIPT_MAX_BYTES);
            goto out;
        }
        rc = forge_render_payload(&p->request->launch, cfg, catalog, p->script,
                                  &p->payload, err);
        if (rc)
            goto out;
    }
    *out = p;
    p = NULL;
out:
    forge_prepared_destroy(p);
    forge_jdoc_free(doc);
    return rc;
}

void forge_prepared_destroy(forge_prepared_t *p)
{
    if (!p)
        return;
    forge_request_destroy(p->request);
    free(p->script);
    json_decref(p->payload);
    free(p);
}

/* Copies s with every byte that does not start a valid UTF-8 sequence
 * made '?' (a truncated message may end inside a character). */
static char *utf8_clean(const char *s)
{
    char *copy = forge_xstrdup(s);
    size_t n = strlen(copy);

    for (size_t i = 0; i < n;) {
        size_t len = forge_utf8_len((const unsigned char *)copy + i, n - i);
        if (len)
            i += len;
        else
            copy[i++] = '?';
    }
    return copy;
}

char *forge_error_json(const forge_error_t *err)
{
    char *field = utf8_clean(err->field), *message = utf8_clean(err->message);
    json_t *o = json_pack("{s:s, s:s, s:s}", "error", forge_rc_name(err->code),
                          "field", field, "message", message);
    char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;

    json_decref(o);
    free(field);
    free(message);
    return text ? text : forge_xstrdup("{\"error\": \"out_of_memory\"}");
}
