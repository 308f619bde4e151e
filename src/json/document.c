/* SPDX-License-Identifier: Apache-2.0 */
/*
 * document.c - JSON documents from bytes and from files (document.h).
 */
#include "json/document.h"
#include "base/util.h"

#include <stdlib.h>

forge_rc_t forge_document_parse(const char *buf, size_t len, size_t flags,
                                json_t **root, forge_error_t *err)
{
    json_error_t jerr;

    *root = json_loadb(buf, len, flags | JSON_REJECT_DUPLICATES, &jerr);
    if (!*root)
        return forge_error_set(err, FORGE_EINVALID_JSON, "$",
                               "line %d column %d: %s", jerr.line, jerr.column,
                               jerr.text);
    return FORGE_OK;
}

forge_rc_t forge_document_load(const char *path, size_t max, const char *var,
                               const char *what, forge_rc_t code,
                               forge_document_parser_t parse, void *out,
                               forge_error_t *err)
{
    forge_error_t inner = {0};
    char *buf = NULL;
    size_t len = 0;
    forge_rc_t rc;

    if ((rc = forge_read_file(path, max, &buf, &len)))
        return forge_error_set(err, code ? code : rc, var, "cannot read %s %s",
                               what, path);
    rc = parse(buf, len, out, &inner);
    free(buf);
    if (rc)
        return forge_error_set(err, code ? code : rc, var, "%s: %s: %s", path,
                               inner.field, inner.message);
    return FORGE_OK;
}
