/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_slurm_auth.c - the client's credentials (slurm/auth.c) and what
 * reaches slurmrestd of them, read back from a fake slurmrestd
 * (support_http.h). Files: a token or key file readable by group or others
 * is refused, `scontrol token`'s SLURM_JWT= form is read as the bare token,
 * keys too short, empty or missing files are refused, exactly one source
 * must be set. Refusals: a refused token makes the file be re-read (or the
 * token re-minted) once and sent again, whichever release's way slurmrestd
 * refuses it; a file caught mid-rotation keeps the token in use. Minted
 * tokens: HS256 with sun/iat/exp, renewed while they still have the longest
 * call to live.
 */
#include "slurm/client.h"
#include "support_http.h"
#include "base/util.h"

#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <fcntl.h>
#include <jansson.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define TOKEN_A "forge-token-AAAAAAAAAAAAAAAAAAAAAAAAAAAA"
#define TOKEN_B "forge-token-BBBBBBBBBBBBBBBBBBBBBBBBBBBB"
#define KEY     "0123456789abcdef0123456789abcdef"
#define PING    "/slurm/v0.0.43/ping"
#define PINGS                                                                  \
    "{\"pings\": [{\"hostname\": \"localhost\", \"pinged\": \"UP\", "          \
    "\"responding\": true, \"latency\": 321, \"mode\": \"primary\"}], "        \
    "\"errors\": [], \"warnings\": []}"
#define SUBMITTED                                                              \
    "{\"job_id\": 7, \"step_id\": \"batch\", \"errors\": [], \"warnings\": "   \
    "[]}"

static support_http_t *srv;
static char dir[64], token_file[96], key_file[96], path[96];

static void write_file(const char *file, const char *text, mode_t mode)
{
    int fd = open(file, O_WRONLY | O_CREAT | O_TRUNC, 0600);

    cr_assert_geq(fd, 0);
    cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    cr_assert_eq(chmod(file, mode), 0);
}

static void write_private(const char *file, const char *text)
{
    write_file(file, text, 0600);
}

static void setup(void)
{
    snprintf(dir, sizeof(dir), "/tmp/forge-auth-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    snprintf(token_file, sizeof(token_file), "%s/token", dir);
    snprintf(key_file, sizeof(key_file), "%s/key", dir);
    snprintf(path, sizeof(path), "%s/secret", dir);
    write_private(token_file, TOKEN_A "\n");
    write_private(key_file, KEY);
    srv = support_http_start();
    support_http_default(srv, 200, PINGS);
}

static void teardown(void)
{
    support_http_stop(srv);
    unlink(token_file);
    unlink(key_file);
    unlink(path);
    rmdir(dir);
}

TestSuite(slurm_auth, .init = setup, .fini = teardown, .timeout = 20);

static forge_slurm_options_t options(const char *jwt_file, const char *key)
{
    return support_http_options(srv, jwt_file, key);
}

/* A new client, or the refusal's code with err set. */
static forge_rc_t try_make(const char *jwt_file, const char *key,
                           forge_slurm_client_t **c, forge_error_t *err)
{
    forge_slurm_options_t o = options(jwt_file, key);

    *c = NULL;
    memset(err, 0, sizeof(*err)); /* a set error keeps its first message */
    return forge_slurm_client_new(&o, c, err);
}

static forge_slurm_client_t *make(const forge_slurm_options_t *o)
{
    return support_http_client(o);
}

static forge_slurm_client_t *client(void)
{
    forge_slurm_options_t o = options(token_file, NULL);
    return make(&o);
}

static forge_slurm_status_t ping(forge_slurm_client_t *c,
                                 forge_slurm_result_t *res)
{
    forge_slurm_ping_t p;

    return forge_slurm_ping(c, &p, res);
}

static forge_slurm_status_t submit(forge_slurm_client_t *c,
                                   forge_slurm_result_t *res)
{
    forge_slurm_submit_t sub;
    json_t *body = json_pack("{s:s, s:{s:s}}", "script", "#!/bin/bash\n", "job",
                             "name", "forge-x-1");
    forge_slurm_status_t st = forge_slurm_submit(c, body, &sub, res);

    json_decref(body);
    return st;
}

/* ---- files -------------------------------------------------------------- */

Test(slurm_auth, files_readable_by_group_or_others_are_refused)
{
    static const mode_t modes[] = {0640, 0644, 0604, 0660};
    forge_slurm_client_t *c;
    forge_error_t err = {0};

    for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
        write_file(path, TOKEN_A, modes[i]);
        cr_assert_eq(try_make(path, NULL, &c, &err), FORGE_ECONFIG);
        cr_assert(strstr(err.message, "readable by group or others"), "%s",
                  err.message);
        cr_assert(strstr(err.message, path), "%s", err.message);
        cr_assert(strstr(err.message, "chmod 600"), "%s", err.message);
        cr_assert_str_eq(err.field, "FORGE_SLURM_JWT_FILE");
        write_file(path, KEY, modes[i]);
        cr_assert_eq(try_make(NULL, path, &c, &err), FORGE_ECONFIG);
        cr_assert(strstr(err.message, "readable by group or others"), "%s",
                  err.message);
        cr_assert_str_eq(err.field, "FORGE_SLURM_JWT_KEY_FILE");
    }
    write_file(path, TOKEN_A, 0400); /* the owner's only: fine */
    cr_assert_eq(try_make(path, NULL, &c, &err), FORGE_OK, "%s", err.message);
    forge_slurm_client_destroy(c);
    write_file(path, KEY, 0700);
    cr_assert_eq(try_make(NULL, path, &c, &err), FORGE_OK, "%s", err.message);
    forge_slurm_client_destroy(c);
}

Test(slurm_auth, scontrol_token_form_is_sent_bare)
{
    forge_slurm_client_t *c;
    forge_error_t err = {0};
    forge_slurm_result_t res = {0};
    support_http_request_t r;

    write_private(path, "SLURM_JWT=eyJhbGciOiJIUzI1NiJ9.e30.sig\r\n");
    cr_assert_eq(try_make(path, NULL, &c, &err), FORGE_OK, "%s", err.message);
    cr_assert_eq(ping(c, &res), FORGE_SLURM_OK, "%s", res.message);
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

    write_private(path, "\n");
    cr_assert_eq(try_make(path, NULL, &c, &err), FORGE_ECONFIG);
    cr_assert(strstr(err.message, "empty"), "%s", err.message);
    write_private(path, "SLURM_JWT=\n");
    cr_assert_eq(try_make(path, NULL, &c, &err), FORGE_ECONFIG);
    cr_assert(strstr(err.message, "empty"), "%s", err.message);
    write_private(path, "0123456789abcde"); /* 15 bytes */
    cr_assert_eq(try_make(NULL, path, &c, &err), FORGE_ECONFIG);
    cr_assert(strstr(err.message, "16 to"), "%s", err.message);
    cr_assert_str_eq(err.field, "FORGE_SLURM_JWT_KEY_FILE");
    cr_assert_eq(try_make("/nonexistent/token", NULL, &c, &err), FORGE_ECONFIG);
    cr_assert(strstr(err.message, "/nonexistent/token cannot be read"), "%s",
              err.message);
    cr_assert_eq(try_make(NULL, "/nonexistent/key", &c, &err), FORGE_ECONFIG);
    cr_assert_str_eq(err.field, "FORGE_SLURM_JWT_KEY_FILE");
    cr_assert(strstr(err.message, "/nonexistent/key"), "%s", err.message);
}

Test(slurm_auth, exactly_one_source)
{
    forge_slurm_client_t *c;
    forge_error_t err = {0};

    cr_assert_eq(try_make(token_file, key_file, &c, &err), FORGE_ECONFIG);
    cr_assert_eq(try_make(NULL, NULL, &c, &err), FORGE_ECONFIG);
    cr_assert(strstr(err.message, "one of them"), "%s", err.message);
}

/* ---- refused and rotated tokens ------------------------------------------ */

/* Rewrites the token file in place, same size and times, so only a refusal
 * can make the client read it again. */
static void rotate_unseen(const char *text)
{
    struct stat st;
    struct timespec times[2];

    cr_assert_eq(stat(token_file, &st), 0);
    write_private(token_file, text);
    times[0] = st.st_atim;
    times[1] = st.st_mtim;
    cr_assert_eq(utimensat(AT_FDCWD, token_file, times, 0), 0);
}

static void assert_token(size_t i, const char *token)
{
    support_http_request_t r = support_http_request(srv, i);

    cr_assert_str_eq(r.token, token, "request %zu", i);
    cr_assert_str_eq(r.user, "forge");
    support_http_request_clear(&r);
}

Test(slurm_auth, a_401_rereads_the_rotated_token_file_once)
{
    forge_slurm_client_t *c = client();
    forge_slurm_result_t res = {0};

    rotate_unseen(TOKEN_B "\n");
    support_http_accept_token(srv, TOKEN_B);
    support_http_default(srv, 200, PINGS);
    cr_assert_eq(ping(c, &res), FORGE_SLURM_OK, "%s", res.message);
    cr_assert_eq(support_http_count(srv), 2);
    assert_token(0, TOKEN_A);
    assert_token(1, TOKEN_B);
    forge_slurm_client_destroy(c);
}

Test(slurm_auth, a_token_refused_twice_is_auth_without_a_loop)
{
    forge_slurm_client_t *c = client();
    forge_slurm_result_t res = {0};

    support_http_accept_token(srv, "some-other-token");
    cr_assert_eq(ping(c, &res), FORGE_SLURM_AUTH);
    cr_assert_eq(res.attempts, 2);
    cr_assert_eq(support_http_count(srv), 2);
    cr_assert_eq(res.http_status, 401);
    cr_assert_not(forge_slurm_status_retriable(res.status));
    /* a refused submit was not carried out: it goes once more, re-read */
    cr_assert_eq(submit(c, &res), FORGE_SLURM_AUTH);
    cr_assert_eq(support_http_count(srv), 4);
    forge_slurm_client_destroy(c);
}

typedef struct refusal {
    int http;
    int slurm_error;
} refusal_t;

ParameterizedTestParameters(slurm_auth, each_releases_auth_refusal_rereads)
{
    /* 25.11+: 401 (ESLURM_AUTH_*); 24.11+: 511 (Protocol authentication
     * error); 23.11-24.05: 500 with that error */
    static refusal_t r[] = {{401, 6000}, {401, 6001}, {511, 1007}, {500, 1007}};
    return cr_make_param_array(refusal_t, r, 4);
}

ParameterizedTest(refusal_t *r, slurm_auth, each_releases_auth_refusal_rereads)
{
    forge_slurm_client_t *c = client();
    forge_slurm_result_t res = {0};
    char body[256];

    snprintf(body, sizeof(body),
             "{\"errors\": [{\"error_number\": %d, \"error\": \"Protocol "
             "authentication error\"}], \"warnings\": []}",
             r->slurm_error);
    rotate_unseen(TOKEN_B "\n");
    support_http_push(srv, PING, r->http, body, 0);
    support_http_push(srv, PING, 200, PINGS, 0);
    cr_assert_eq(ping(c, &res), FORGE_SLURM_OK, "%s", res.message);
    assert_token(1, TOKEN_B);
    support_http_default(srv, r->http, body); /* and refused for good */
    cr_assert_eq(ping(c, &res), FORGE_SLURM_AUTH);
    cr_assert_eq(res.attempts, 2);
    forge_slurm_client_destroy(c);
}

Test(slurm_auth, a_401_rereads_even_with_a_single_attempt)
{
    forge_slurm_options_t o = options(token_file, NULL);
    forge_slurm_client_t *c;
    forge_slurm_result_t res = {0};

    o.max_attempts = 1; /* no retries; the refreshed token still goes */
    c = make(&o);
    rotate_unseen(TOKEN_B "\n");
    support_http_accept_token(srv, TOKEN_B);
    support_http_default(srv, 200, SUBMITTED);
    cr_assert_eq(submit(c, &res), FORGE_SLURM_OK, "%s", res.message);
    cr_assert_eq(res.attempts, 2);
    assert_token(1, TOKEN_B);
    forge_slurm_client_destroy(c);
}

/* `scontrol token > file` truncates the file, then writes it. */
Test(slurm_auth, a_token_file_caught_mid_rotation_keeps_the_token)
{
    forge_slurm_client_t *c = client();
    forge_slurm_result_t res = {0};

    support_http_default(srv, 200, PINGS);
    write_private(token_file, "");
    cr_assert_eq(ping(c, &res), FORGE_SLURM_OK, "%s", res.message);
    cr_assert_eq(chmod(token_file, 0644), 0); /* a careless rotation */
    cr_assert_eq(ping(c, &res), FORGE_SLURM_OK, "%s", res.message);
    cr_assert_eq(chmod(token_file, 0600), 0);
    write_private(token_file, "SLURM_JWT=" TOKEN_B "\n");
    cr_assert_eq(ping(c, &res), FORGE_SLURM_OK, "%s", res.message);
    assert_token(0, TOKEN_A);
    assert_token(1, TOKEN_A);
    assert_token(2, TOKEN_B);
    forge_slurm_client_destroy(c);
}

Test(slurm_auth, a_refusal_with_an_unreadable_token_file_is_auth)
{
    forge_slurm_client_t *c = client();
    forge_slurm_result_t res = {0};

    rotate_unseen("");
    support_http_push(srv, PING, 401, "{\"errors\": []}", 0);
    cr_assert_eq(ping(c, &res), FORGE_SLURM_AUTH);
    cr_assert(strstr(res.message, "empty"), "%s", res.message);
    cr_assert_eq(support_http_count(srv), 1);
    forge_slurm_client_destroy(c);
}

/* ---- minted tokens ------------------------------------------------------- */

/* A claim of a JWT's payload (base64url JSON); "sun" as 1 when it is
 * "forge". */
static long claim(const char *token, const char *name)
{
    const char *p = strchr(token, '.'), *q = p ? strchr(p + 1, '.') : NULL;
    char b64[512], *json;
    unsigned char raw[512];
    size_t n;
    long value;
    json_t *o;

    cr_assert(p && q && (size_t)(q - p - 1) < sizeof(b64) - 4, "%s", token);
    n = (size_t)(q - p - 1);
    memcpy(b64, p + 1, n);
    for (size_t i = 0; i < n; i++) /* base64url -> base64 */
        b64[i] = b64[i] == '-' ? '+' : b64[i] == '_' ? '/' : b64[i];
    while (n % 4)
        b64[n++] = '=';
    b64[n] = '\0';
    n = (size_t)EVP_DecodeBlock(raw, (unsigned char *)b64, (int)n);
    json = forge_xstrndup((char *)raw, n);
    o = json_loads(json, JSON_DISABLE_EOF_CHECK, NULL);
    cr_assert_not_null(o, "not a JWT payload: %s", json);
    if (!strcmp(name, "sun"))
        value = !strcmp(json_string_value(json_object_get(o, "sun")), "forge");
    else
        value = (long)json_integer_value(json_object_get(o, name));
    json_decref(o);
    free(json);
    return value;
}

static char *token_of(size_t i)
{
    support_http_request_t r = support_http_request(srv, i);
    char *t = r.token;

    r.token = NULL;
    support_http_request_clear(&r);
    return t;
}

static void sleep_until(time_t t)
{
    while (time(NULL) < t)
        usleep(10 * 1000);
}

/* Lifetime 3 s, requests of at most 500 ms: every token sent must have
 * the request timeout (rounded up) plus a second left, so the token is
 * renewed 1 s after it was minted - before it expires, never after. */
Test(slurm_auth, a_minted_token_is_renewed_before_it_expires)
{
    forge_slurm_options_t o = options(NULL, key_file);
    forge_slurm_client_t *c;
    forge_slurm_ping_t ping;
    forge_slurm_result_t res = {0};
    char *t1, *t2, *t3;

    o.token_lifetime_s = 3;
    sleep_until(time(NULL) + 1); /* the start of a second */
    c = make(&o);
    support_http_default(srv, 200, PINGS);
    cr_assert_eq(forge_slurm_ping(c, &ping, &res), FORGE_SLURM_OK);
    cr_assert_eq(forge_slurm_ping(c, &ping, &res), FORGE_SLURM_OK);
    t1 = token_of(0);
    t2 = token_of(1);
    cr_assert_str_eq(t1, t2, "a token was minted for every call");
    cr_assert_eq(claim(t1, "sun"), 1);
    cr_assert_eq(claim(t1, "exp") - claim(t1, "iat"), 3);
    sleep_until(claim(t1, "iat") + 1);
    cr_assert_eq(forge_slurm_ping(c, &ping, &res), FORGE_SLURM_OK);
    cr_assert_lt(time(NULL), claim(t1, "exp") - 1, "test too slow");
    t3 = token_of(2);
    cr_assert_gt(claim(t3, "exp"), claim(t1, "exp"),
                 "a token with 2 s left went on a call of up to 500 ms");
    cr_assert_eq(claim(t3, "sun"), 1);
    free(t1);
    free(t2);
    free(t3);
    forge_slurm_client_destroy(c);
}

Test(slurm_auth, a_refused_minted_token_is_reminted_once)
{
    forge_slurm_options_t o = options(NULL, key_file);
    forge_slurm_client_t *c;
    forge_slurm_ping_t ping;
    forge_slurm_result_t res = {0};

    c = make(&o);
    support_http_push(srv, NULL, 401, "{\"errors\": []}", 0);
    support_http_default(srv, 200, PINGS);
    cr_assert_eq(forge_slurm_ping(c, &ping, &res), FORGE_SLURM_OK, "%s",
                 res.message);
    cr_assert_eq(res.attempts, 2);
    cr_assert(ping.responding);
    support_http_default(srv, 401, "{\"errors\": []}");
    cr_assert_eq(forge_slurm_ping(c, &ping, &res), FORGE_SLURM_AUTH);
    cr_assert_eq(res.attempts, 2);
    forge_slurm_client_destroy(c);
}

/* base64url without padding, as JWTs spell it. */
static void base64url(const unsigned char *in, size_t n, char *out)
{
    int len = EVP_EncodeBlock((unsigned char *)out, in, (int)n);

    while (len > 0 && out[len - 1] == '=')
        out[--len] = '\0';
    for (int i = 0; i < len; i++)
        out[i] = out[i] == '+' ? '-' : out[i] == '/' ? '_' : out[i];
}

/* Slurm's jwt_key is raw random bytes, NULs and all. */
Test(slurm_auth, a_minted_token_is_hs256_over_the_raw_key_bytes)
{
    static const unsigned char key[32] = {
        0x00, 0xff, 0x10, 0x00, 0x7f, 0x80, 0x0a, 0x0d, 1,  2,   3,
        4,    5,    6,    7,    8,    9,    10,   11,   12, 13,  14,
        15,   16,   17,   18,   19,   20,   21,   22,   23, 0x00};
    forge_slurm_options_t o = options(NULL, key_file);
    forge_slurm_client_t *c;
    forge_slurm_result_t res = {0};
    unsigned char mac[EVP_MAX_MD_SIZE];
    unsigned int mac_len = 0;
    char want[128], *token;
    const char *sig;
    int fd = open(key_file, O_WRONLY | O_TRUNC);

    cr_assert_eq(write(fd, key, sizeof(key)), (ssize_t)sizeof(key));
    close(fd);
    c = make(&o);
    cr_assert_eq(ping(c, &res), FORGE_SLURM_OK, "%s", res.message);
    token = token_of(0);
    cr_assert(!strncmp(token, "eyJ", 3), "%s", token);
    sig = strrchr(token, '.');
    cr_assert_not_null(HMAC(EVP_sha256(), key, (int)sizeof(key),
                            (const unsigned char *)token, (size_t)(sig - token),
                            mac, &mac_len));
    base64url(mac, mac_len, want);
    cr_assert_str_eq(sig + 1, want, "not signed with the key's bytes");
    cr_assert_eq(claim(token, "sun"), 1);
    free(token);
    forge_slurm_client_destroy(c);
}
