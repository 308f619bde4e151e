/*
 * test_document.c - JSON documents (document.h): bytes to JSON with
 * duplicate keys refused and syntax errors placed, and the site's files
 * read and parsed with errors that name the variable and the file.
 */
#include "core/document.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

Test(document, parses_json)
{
    json_t *root = NULL;
    forge_error_t err = {0};

    cr_assert_eq(forge_document_parse("{\"a\": 1}", 8, 0, &root, &err),
                 FORGE_OK);
    cr_assert_eq(json_integer_value(json_object_get(root, "a")), 1);
    json_decref(root);
}

Test(document, duplicate_keys_are_refused)
{
    json_t *root = NULL;
    forge_error_t err = {0};
    const char *doc = "{\"a\": 1, \"a\": 2}";

    cr_assert_eq(forge_document_parse(doc, strlen(doc), 0, &root, &err),
                 FORGE_EINVALID_JSON);
    cr_assert_null(root);
    cr_assert_str_eq(err.field, "$");
}

Test(document, a_syntax_error_says_where)
{
    json_t *root = NULL;
    forge_error_t err = {0};
    const char *doc = "{\n  \"a\": }";

    cr_assert_eq(forge_document_parse(doc, strlen(doc), 0, &root, &err),
                 FORGE_EINVALID_JSON);
    cr_assert_eq(strncmp(err.message, "line 2 column ", 14), 0, "%s",
                 err.message);
}

Test(document, nul_only_with_allow_nul)
{
    json_t *root = NULL;
    forge_error_t err = {0};
    const char doc[] = "{\"a\": \"x\\u0000y\"}";

    cr_assert_neq(forge_document_parse(doc, strlen(doc), 0, &root, &err), 0);
    cr_assert_eq(
        forge_document_parse(doc, strlen(doc), JSON_ALLOW_NUL, &root, &err),
        FORGE_OK);
    json_decref(root);
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

Test(document_load, a_file_is_read_and_parsed)
{
    forge_error_t err = {0};
    int got = 0;

    write_file("ok");
    cr_assert_eq(forge_document_load(path, 100, "FORGE_X", "the x file", 0,
                                     parse_ok, &got, &err),
                 FORGE_OK);
    cr_assert_eq(got, 1);
}

Test(document_load, errors_name_the_variable_and_the_file)
{
    forge_error_t err = {0};
    int got = 0;
    char want[160];

    cr_assert_eq(forge_document_load("/nonexistent/x", 100, "FORGE_X",
                                     "the x file", 0, parse_ok, &got, &err),
                 FORGE_EIO);
    cr_assert_str_eq(err.field, "FORGE_X");
    cr_assert_str_eq(err.message, "cannot read the x file /nonexistent/x");
    forge_error_clear(&err);
    write_file("not");
    cr_assert_eq(forge_document_load(path, 100, "FORGE_X", "the x file", 0,
                                     parse_ok, &got, &err),
                 FORGE_ESCHEMA);
    snprintf(want, sizeof(want), "%s: $.x: not ok", path);
    cr_assert_str_eq(err.message, want);
    cr_assert_eq(got, 0);
}

Test(document_load, code_overrides_the_errors_own)
{
    forge_error_t err = {0};
    int got = 0;

    write_file("too long for the limit");
    cr_assert_eq(forge_document_load(path, 4, "FORGE_X", "the x file", 0,
                                     parse_ok, &got, &err),
                 FORGE_ETOO_LARGE);
    cr_assert_eq(forge_document_load(path, 4, "FORGE_X", "the x file",
                                     FORGE_ECONFIG, parse_ok, &got, &err),
                 FORGE_ECONFIG);
    write_file("bad");
    cr_assert_eq(forge_document_load(path, 100, "FORGE_X", "the x file",
                                     FORGE_ECONFIG, parse_ok, &got, &err),
                 FORGE_ECONFIG);
}
