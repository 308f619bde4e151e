/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_document.c - JSON documents (document.h): bytes to JSON with
 * duplicate keys refused and syntax errors placed, and the site's files
 * read and parsed with errors that name the variable and the file.
 */
#include "json/document.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static json_t *parsed;
static forge_error_t parse_err;

/* doc parsed with flags into parsed and parse_err (fresh each time). */
static forge_rc_t parse(const char *doc, size_t flags)
{
    json_decref(parsed);
    parsed = NULL;
    forge_error_clear(&parse_err);
    return forge_document_parse(doc, strlen(doc), flags, &parsed, &parse_err);
}

Test(document, parses_json)
{
    cr_assert_eq(parse("{\"a\": 1}", 0), FORGE_OK);
    cr_assert_eq(json_integer_value(json_object_get(parsed, "a")), 1);
}

Test(document, duplicate_keys_are_refused)
{
    cr_assert_eq(parse("{\"a\": 1, \"a\": 2}", 0), FORGE_EINVALID_JSON);
    cr_assert_null(parsed);
    cr_assert_str_eq(parse_err.field, "$");
}

Test(document, a_syntax_error_says_where)
{
    cr_assert_eq(parse("{\n  \"a\": }", 0), FORGE_EINVALID_JSON);
    cr_assert_eq(strncmp(parse_err.message, "line 2 column ", 14), 0, "%s",
                 parse_err.message);
}

Test(document, nul_only_with_allow_nul)
{
    const char *doc = "{\"a\": \"x\\u0000y\"}";

    cr_assert_eq(parse(doc, 0), FORGE_EINVALID_JSON);
    cr_assert_eq(parse(doc, JSON_ALLOW_NUL), FORGE_OK);
}

/* A parser for the load tests: "ok" or an error of its own. */
static forge_rc_t parse_ok(const char *buf, size_t len, void *out,
                           forge_error_t *err)
{
    if (len == 2 && !memcmp(buf, "ok", 2)) {
        *(int *)out = 1;
        return FORGE_OK;
    }
    return forge_error_set(err, FORGE_ESCHEMA, "$.x", "not ok");
}

static char path[64];

static void write_file(const char *text)
{
    FILE *f;

    strcpy(path, "/tmp/forge-test-doc-XXXXXX");
    close(mkstemp(path));
    f = fopen(path, "w");
    fputs(text, f);
    fclose(f);
}

static void remove_file(void)
{
    unlink(path);
}

TestSuite(document_load, .fini = remove_file);

static forge_rc_t load(const char *file, size_t max, forge_rc_t code, int *got,
                       forge_error_t *err)
{
    return forge_document_load(file, max, "FORGE_X", "the x file", code,
                               parse_ok, got, err);
}

Test(document_load, a_file_is_read_and_parsed)
{
    forge_error_t err = {0};
    int got = 0;

    write_file("ok");
    cr_assert_eq(load(path, 100, 0, &got, &err), FORGE_OK);
    cr_assert_eq(got, 1);
}

Test(document_load, errors_name_the_variable_and_the_file)
{
    forge_error_t err = {0};
    int got = 0;
    char want[160];

    cr_assert_eq(load("/nonexistent/x", 100, 0, &got, &err), FORGE_EIO);
    cr_assert_str_eq(err.field, "FORGE_X");
    cr_assert_str_eq(err.message, "cannot read the x file /nonexistent/x");
    forge_error_clear(&err);
    write_file("not");
    cr_assert_eq(load(path, 100, 0, &got, &err), FORGE_ESCHEMA);
    snprintf(want, sizeof(want), "%s: $.x: not ok", path);
    cr_assert_str_eq(err.message, want);
    cr_assert_eq(got, 0);
}

Test(document_load, code_overrides_the_errors_own)
{
    forge_error_t err = {0};
    int got = 0;

    write_file("too long for the limit");
    cr_assert_eq(load(path, 4, 0, &got, &err), FORGE_ETOO_LARGE);
    cr_assert_eq(load(path, 4, FORGE_ECONFIG, &got, &err), FORGE_ECONFIG);
    write_file("bad");
    cr_assert_eq(load(path, 100, FORGE_ECONFIG, &got, &err), FORGE_ECONFIG);
}
