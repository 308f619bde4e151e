/*
 * test_slurm_auth.c - the client's credentials (slurm/auth.c): token and
 * key files readable by others are refused, `scontrol token`'s SLURM_JWT=
 * form is read as the bare token, keys too short are refused, exactly one
 * source must be set. What reaches the server is read back from a local
 * HTTP server (support_http.h).
 */
#include "support_http.h"
#include "slurm/client.h"

#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[64], path[96];
static support_http_t *srv;

static void setup(void)
{
    snprintf(dir, sizeof(dir), "/tmp/forge-auth-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/secret", dir);
    srv = support_http_start();
}

static void teardown(void)
{
    support_http_stop(srv);
    unlink(path);
    rmdir(dir);
}

TestSuite(slurm_auth, .init = setup, .fini = teardown, .timeout = 20);

static void write_file(const char *text, mode_t mode)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

    cr_assert_geq(fd, 0);
    cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    cr_assert_eq(chmod(path, mode), 0);
}

static forge_rc_t make(const char *jwt_file, const char *key_file,
                       forge_slurm_client_t **c, forge_error_t *err)
{
    forge_slurm_options_t o = {
        .base_url = support_http_url(srv),
        .version = FORGE_API_V0_0_43,
        .user = "forge",
        .jwt_file = jwt_file,
        .jwt_key_file = key_file,
        .connect_timeout_ms = 1000,
        .request_timeout_ms = 1000,
        .max_attempts = 1,
        .backoff_base_ms = 10,
        .backoff_max_ms = 10,
        .token_lifetime_s = 60,
        .max_body_bytes = 4096,
    };

    *c = NULL;
    memset(err, 0, sizeof(*err)); /* a set error keeps its first message */
    return forge_slurm_client_new(&o, c, err);
}

Test(slurm_auth, files_readable_by_group_or_others_are_refused)
{
    static const mode_t modes[] = {0640, 0644, 0604, 0660};
    forge_slurm_client_t *c;
    forge_error_t err = {0};

    for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
        write_file("a.b.c", modes[i]);
        cr_assert_eq(make(path, NULL, &c, &err), FORGE_ECONFIG);
        cr_assert(strstr(err.message, "readable by group or others"), "%s",
                  err.message);
        cr_assert_str_eq(err.field, "FORGE_SLURM_JWT_FILE");
        write_file("0123456789abcdef0123456789abcdef", modes[i]);
        cr_assert_eq(make(NULL, path, &c, &err), FORGE_ECONFIG);
        cr_assert_str_eq(err.field, "FORGE_SLURM_JWT_KEY_FILE");
    }
}

Test(slurm_auth, scontrol_token_form_is_sent_bare)
{
    forge_slurm_client_t *c;
    forge_error_t err = {0};
    forge_slurm_ping_t ping;
    forge_slurm_result_t res = {0};
    support_http_request_t r;

    write_file("SLURM_JWT=eyJhbGciOiJIUzI1NiJ9.e30.sig\n", 0600);
    cr_assert_eq(make(path, NULL, &c, &err), FORGE_OK, "%s", err.message);
    (void)forge_slurm_ping(c, &ping, &res);
    r = support_http_request(srv, 0);
    cr_assert_str_eq(r.token, "eyJhbGciOiJIUzI1NiJ9.e30.sig");
    cr_assert_str_eq(r.user, "forge");
    support_http_request_clear(&r);
    forge_slurm_client_destroy(c);
}

Test(slurm_auth, empty_missing_and_short_secrets_are_refused)
{
    forge_slurm_client_t *c;
    forge_error_t err = {0};

    write_file("\n", 0600);
    cr_assert_eq(make(path, NULL, &c, &err), FORGE_ECONFIG);
    cr_assert(strstr(err.message, "empty"), "%s", err.message);
    write_file("too-short-key", 0600);
    cr_assert_eq(make(NULL, path, &c, &err), FORGE_ECONFIG);
    cr_assert(strstr(err.message, "16 to"), "%s", err.message);
    cr_assert_eq(make("/nonexistent/token", NULL, &c, &err), FORGE_ECONFIG);
    cr_assert(strstr(err.message, "cannot be read"), "%s", err.message);
}

Test(slurm_auth, exactly_one_source)
{
    forge_slurm_client_t *c;
    forge_error_t err = {0};

    write_file("0123456789abcdef0123456789abcdef", 0600);
    cr_assert_eq(make(path, path, &c, &err), FORGE_ECONFIG);
    cr_assert_eq(make(NULL, NULL, &c, &err), FORGE_ECONFIG);
    cr_assert(strstr(err.message, "one of them"), "%s", err.message);
}
