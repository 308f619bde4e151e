/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_config_security.c - the security variables of issue 27
 * (src/config/config_security.c, secret_file.c): each one's accepted and
 * refused values and the rules between them (a refusal names the
 * variable), a FORGE_KAFKA_PROP_* naming the same property refused, the
 * password files read at start (trailing new line, empty, missing,
 * unreadable, open to others), the password in no log line, the
 * librdkafka properties every Kafka client is built with (read back with
 * rd_kafka_conf_get: no broker), slurmrestd's client certificate in the
 * client's options, and the warnings at start.
 */
#include "config/config.h"
#include "config/config_security.h"
#include "log/log.h"
#include "secrets/secret_file.h"
#include "secrets/secrets.h"
#include "kafka/kafka_conf.h"
#include "slurm/client.h"

#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define PASSWORD "s3cret-Pa55word"

static char dir[] = "/tmp/forge-cfgsec-XXXXXX";

static void setup(void)
{
    cr_assert_not_null(mkdtemp(dir));
}

static void teardown(void)
{
    char cmd[128];

    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    cr_expect_eq(system(cmd), 0);
    forge_secrets_reset();
}

TestSuite(config_security, .init = setup, .fini = teardown);

/* A file under dir with content and mode; its path (static, per name). */
static const char *file(const char *name, const char *content, mode_t mode)
{
    static char paths[8][160];
    static int next;
    char *path = paths[next++ % 8];
    FILE *f;

    snprintf(path, sizeof(paths[0]), "%s/%s", dir, name);
    cr_assert_not_null(f = fopen(path, "w"));
    fputs(content, f);
    fclose(f);
    cr_assert_eq(chmod(path, mode), 0);
    return path;
}

/* "NAME=value" (static, per call slot). */
static char *var(const char *name, const char *value)
{
    static char vars[8][256];
    static int next;
    char *v = vars[next++ % 8];

    snprintf(v, sizeof(vars[0]), "%s=%s", name, value);
    return v;
}

static forge_config_t *load_ok(char *const *envp)
{
    forge_config_t *cfg = NULL;
    forge_error_t err = {0};

    cr_assert_eq(forge_config_load(envp, &cfg, &err), FORGE_OK,
                 "load failed: %s (%s)", err.message, err.field);
    return cfg;
}

/* ---- values and the rules between them ---------------------------------- */

Test(config_security,
     choices_are_read_in_any_case_and_kept_as_librdkafka_spells)
{
    char *envp[] = {"FORGE_KAFKA_SECURITY_PROTOCOL=SASL_SSL",
                    "FORGE_KAFKA_SASL_MECHANISM=scram-sha-512",
                    "FORGE_KAFKA_SASL_USERNAME=forge-worker",
                    "FORGE_KAFKA_SASL_PASSWORD_FILE=/run/secrets/kafka",
                    "FORGE_KAFKA_SSL_CA_FILE=/etc/forge/ca.pem",
                    "FORGE_KAFKA_SSL_CERT_FILE=/etc/forge/client.pem",
                    "FORGE_KAFKA_SSL_KEY_FILE=/etc/forge/client.key",
                    "FORGE_KAFKA_SSL_KEY_PASSWORD_FILE=/run/secrets/keypass",
                    "FORGE_SLURM_TLS_CERT_FILE=/etc/forge/slurm.pem",
                    "FORGE_SLURM_TLS_KEY_FILE=/etc/forge/slurm.key",
                    NULL};
    forge_config_t *cfg = load_ok(envp);

    cr_expect_str_eq(cfg->kafka_security_protocol, "sasl_ssl");
    cr_expect_str_eq(cfg->kafka_sasl_mechanism, "SCRAM-SHA-512");
    cr_expect_str_eq(cfg->kafka_sasl_username, "forge-worker");
    cr_expect_str_eq(cfg->kafka_sasl_password_file, "/run/secrets/kafka");
    cr_expect_str_eq(cfg->kafka_ssl_key_password_file, "/run/secrets/keypass");
    cr_expect_str_eq(cfg->slurm_tls_cert_file, "/etc/forge/slurm.pem");
    cr_expect_str_eq(cfg->slurm_tls_key_file, "/etc/forge/slurm.key");
    cr_expect_null(cfg->kafka_sasl_password, "read at start, not at load");
    cr_expect_eq(cfg->unknown_count, 0);
    forge_config_destroy(cfg);
}

Test(config_security,
     oauthbearer_takes_no_user_and_the_protocol_may_come_from_the_pass_through)
{
    char *envp[] = {"FORGE_KAFKA_PROP_security_protocol=sasl_ssl",
                    "FORGE_KAFKA_SASL_MECHANISM=OAUTHBEARER",
                    "FORGE_KAFKA_PROP_sasl_oauthbearer_method=oidc", NULL};
    forge_config_t *cfg = load_ok(envp);

    cr_expect_str_eq(cfg->kafka_sasl_mechanism, "OAUTHBEARER");
    forge_config_destroy(cfg);
}

typedef struct bad_case {
    char env[4][96];
    char variable[64];
} bad_case_t;

#define USER     "FORGE_KAFKA_SASL_USERNAME=w"
#define PASS     "FORGE_KAFKA_SASL_PASSWORD_FILE=/run/p"
#define SCRAM    "FORGE_KAFKA_SASL_MECHANISM=SCRAM-SHA-512"
#define SASL_SSL "FORGE_KAFKA_SECURITY_PROTOCOL=sasl_ssl"

static bad_case_t bad_cases[] = {
    {{"FORGE_KAFKA_SECURITY_PROTOCOL=tls"}, "FORGE_KAFKA_SECURITY_PROTOCOL"},
    {{"FORGE_KAFKA_SECURITY_PROTOCOL=sasl-ssl"},
     "FORGE_KAFKA_SECURITY_PROTOCOL"},
    {{"FORGE_KAFKA_SASL_MECHANISM=GSSAPI", SASL_SSL},
     "FORGE_KAFKA_SASL_MECHANISM"},
    {{"FORGE_KAFKA_SASL_MECHANISM=SCRAM-SHA-1", SASL_SSL},
     "FORGE_KAFKA_SASL_MECHANISM"},
    {{"FORGE_KAFKA_SASL_USERNAME=a\tb"}, "FORGE_KAFKA_SASL_USERNAME"},
    {{"FORGE_KAFKA_SASL_PASSWORD_FILE=secrets/p"},
     "FORGE_KAFKA_SASL_PASSWORD_FILE"},
    {{"FORGE_KAFKA_SSL_CA_FILE=ca.pem"}, "FORGE_KAFKA_SSL_CA_FILE"},
    {{"FORGE_KAFKA_SSL_CERT_FILE=/a/../c"}, "FORGE_KAFKA_SSL_CERT_FILE"},
    {{"FORGE_KAFKA_SSL_KEY_FILE=k"}, "FORGE_KAFKA_SSL_KEY_FILE"},
    {{"FORGE_KAFKA_SSL_KEY_PASSWORD_FILE=p"},
     "FORGE_KAFKA_SSL_KEY_PASSWORD_FILE"},
    {{"FORGE_SLURM_TLS_CERT_FILE=c.pem"}, "FORGE_SLURM_TLS_CERT_FILE"},
    {{"FORGE_SLURM_TLS_KEY_FILE=//k"}, "FORGE_SLURM_TLS_KEY_FILE"},
    /* a user without a password file, and the other way round */
    {{USER, SCRAM, SASL_SSL}, "FORGE_KAFKA_SASL_PASSWORD_FILE"},
    {{PASS, SCRAM, SASL_SSL}, "FORGE_KAFKA_SASL_USERNAME"},
    /* credentials without a mechanism, a mechanism without them */
    {{USER, PASS, SASL_SSL}, "FORGE_KAFKA_SASL_MECHANISM"},
    {{SCRAM, SASL_SSL}, "FORGE_KAFKA_SASL_USERNAME"},
    {{"FORGE_KAFKA_SASL_MECHANISM=OAUTHBEARER", USER, PASS, SASL_SSL},
     "FORGE_KAFKA_SASL_USERNAME"},
    /* a SASL mechanism over a protocol without SASL */
    {{SCRAM, USER, PASS}, "FORGE_KAFKA_SASL_MECHANISM"},
    {{SCRAM, USER, PASS, "FORGE_KAFKA_SECURITY_PROTOCOL=ssl"},
     "FORGE_KAFKA_SASL_MECHANISM"},
    /* TLS files over a protocol without TLS */
    {{"FORGE_KAFKA_SSL_CA_FILE=/ca.pem"}, "FORGE_KAFKA_SSL_CA_FILE"},
    {{"FORGE_KAFKA_SSL_CA_FILE=/ca.pem",
      "FORGE_KAFKA_SECURITY_PROTOCOL=sasl_plaintext"},
     "FORGE_KAFKA_SSL_CA_FILE"},
    /* a certificate without its key, a key without its certificate */
    {{"FORGE_KAFKA_SSL_CERT_FILE=/c.pem", "FORGE_KAFKA_SECURITY_PROTOCOL=ssl"},
     "FORGE_KAFKA_SSL_KEY_FILE"},
    {{"FORGE_KAFKA_SSL_KEY_FILE=/c.key", "FORGE_KAFKA_SECURITY_PROTOCOL=ssl"},
     "FORGE_KAFKA_SSL_CERT_FILE"},
    {{"FORGE_KAFKA_SSL_KEY_PASSWORD_FILE=/p",
      "FORGE_KAFKA_SECURITY_PROTOCOL=ssl"},
     "FORGE_KAFKA_SSL_KEY_FILE"},
    {{"FORGE_SLURM_TLS_CERT_FILE=/c.pem"}, "FORGE_SLURM_TLS_KEY_FILE"},
    {{"FORGE_SLURM_TLS_KEY_FILE=/c.key"}, "FORGE_SLURM_TLS_CERT_FILE"},
    /* a FORGE_KAFKA_PROP_* naming what a variable sets: both named */
    {{PASS, USER, SCRAM, "FORGE_KAFKA_PROP_sasl_password=x"},
     "FORGE_KAFKA_PROP_sasl_password"},
    {{SASL_SSL, "FORGE_KAFKA_PROP_SECURITY_PROTOCOL=ssl"},
     "FORGE_KAFKA_PROP_SECURITY_PROTOCOL"},
    {{SCRAM, "FORGE_KAFKA_PROP_sasl_mechanism=PLAIN"},
     "FORGE_KAFKA_PROP_sasl_mechanism"},
    {{"FORGE_KAFKA_SSL_CA_FILE=/ca.pem", "FORGE_KAFKA_PROP_ssl_ca_location=/x"},
     "FORGE_KAFKA_PROP_ssl_ca_location"},
};

ParameterizedTestParameters(config_security, refused)
{
    return cr_make_param_array(bad_case_t, bad_cases,
                               sizeof(bad_cases) / sizeof(bad_cases[0]));
}

ParameterizedTest(bad_case_t *c, config_security, refused)
{
    char *envp[5] = {NULL};
    forge_config_t *cfg = (forge_config_t *)0x1;
    forge_error_t err = {0};
    size_t n = 0;

    for (size_t i = 0; i < 4; i++)
        if (c->env[i][0])
            envp[n++] = c->env[i];
    cr_assert_eq(forge_config_load(envp, &cfg, &err), FORGE_ECONFIG,
                 "%s accepted", c->env[0]);
    cr_assert_null(cfg);
    cr_assert_str_eq(err.field, c->variable, "%s: field %s (%s)", c->env[0],
                     err.field, err.message);
    cr_assert(strstr(err.message, c->variable), "message must name %s: %s",
              c->variable, err.message);
}

Test(config_security, a_conflict_names_both_variables)
{
    char *envp[] = {SASL_SSL, "FORGE_KAFKA_PROP_security_protocol=ssl", NULL};
    forge_config_t *cfg = NULL;
    forge_error_t err = {0};

    cr_assert_eq(forge_config_load(envp, &cfg, &err), FORGE_ECONFIG);
    cr_expect(strstr(err.message, "FORGE_KAFKA_PROP_security_protocol") &&
                  strstr(err.message, "FORGE_KAFKA_SECURITY_PROTOCOL"),
              "%s", err.message);
}

/* ---- the password files ------------------------------------------------- */

static forge_rc_t read_password(const char *content, mode_t mode, char **out,
                                forge_error_t *err)
{
    return forge_secret_file_read(file("pw", content, mode), "VAR", out, err);
}

Test(config_security, a_password_loses_its_trailing_new_line_only)
{
    const char *contents[] = {PASSWORD "\n", PASSWORD "\r\n", PASSWORD,
                              " " PASSWORD " \n"};
    const char *want[] = {PASSWORD, PASSWORD, PASSWORD, " " PASSWORD " "};

    for (size_t i = 0; i < 4; i++) {
        forge_error_t err = {0};
        char *pw = NULL;
        cr_assert_eq(read_password(contents[i], 0600, &pw, &err), FORGE_OK,
                     "%s", err.message);
        cr_expect_str_eq(pw, want[i]);
        forge_secret_free(pw);
    }
}

Test(config_security,
     a_bad_password_file_is_refused_naming_the_variable_never_the_content)
{
    const struct {
        const char *content;
        mode_t mode;
        const char *says;
    } cases[] = {
        {"", 0600, "is empty"},
        {"\n", 0600, "is empty"},
        {PASSWORD "\nsecond\n", 0600, "more than one line"},
        {PASSWORD "\n", 0640, "group or others"},
        {PASSWORD "\n", 0604, "group or others"},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        forge_error_t err = {0};
        char *pw = (char *)0x1;
        cr_assert_eq(read_password(cases[i].content, cases[i].mode, &pw, &err),
                     FORGE_ECONFIG, "case %zu accepted", i);
        cr_expect_null(pw);
        cr_expect_str_eq(err.field, "VAR");
        cr_expect(strstr(err.message, cases[i].says), "case %zu: %s", i,
                  err.message);
        cr_expect_null(strstr(err.message, PASSWORD), "%s", err.message);
    }
}

Test(config_security, a_missing_or_unreadable_password_file_is_refused)
{
    forge_error_t err = {0};
    char path[200];
    char *pw = NULL;

    snprintf(path, sizeof(path), "%s/none", dir);
    cr_assert_eq(forge_secret_file_read(path, "VAR", &pw, &err), FORGE_ECONFIG);
    cr_expect(strstr(err.message, "cannot be opened"), "%s", err.message);
    cr_expect_eq(forge_secret_file_read(dir, "VAR", &pw, &err), FORGE_ECONFIG,
                 "a directory");
    if (geteuid() == 0)
        return; /* root reads a mode 000 file */
    cr_expect_eq(read_password(PASSWORD, 0000, &pw, &err), FORGE_ECONFIG);
    cr_expect(strstr(err.message, "cannot be opened"), "%s", err.message);
}

Test(config_security, the_files_are_read_for_what_the_command_needs)
{
    const char *pw = file("kafka.pw", PASSWORD "\n", 0600);
    const char *key = file("client.key", "KEY", 0644);
    char *envp[] = {SASL_SSL,
                    SCRAM,
                    USER,
                    var("FORGE_KAFKA_SASL_PASSWORD_FILE", pw),
                    var("FORGE_KAFKA_SSL_CERT_FILE", key),
                    var("FORGE_KAFKA_SSL_KEY_FILE", key),
                    NULL};
    forge_config_t *cfg = load_ok(envp);
    forge_error_t err = {0};

    /* validate and render need no Kafka: nothing read */
    cr_assert_eq(forge_config_read_secrets(cfg, FORGE_NEED_STORAGE, &err),
                 FORGE_OK);
    cr_expect_null(cfg->kafka_sasl_password);
    /* a key others may read is refused (group may: ssl-cert) */
    cr_assert_eq(forge_config_read_secrets(cfg, FORGE_NEED_KAFKA, &err),
                 FORGE_ECONFIG);
    cr_expect_str_eq(err.field, "FORGE_KAFKA_SSL_KEY_FILE", "%s", err.message);
    cr_assert_eq(chmod(key, 0640), 0);
    cr_assert_eq(forge_config_read_secrets(cfg, FORGE_NEED_KAFKA, &err),
                 FORGE_OK, "%s", err.message);
    cr_expect_str_eq(cfg->kafka_sasl_password, PASSWORD);
    cr_expect_eq(forge_secret_count(), 1);
    forge_config_destroy(cfg);
    cr_expect_eq(forge_secret_count(), 0, "unregistered when it goes");
}

Test(config_security, a_missing_slurm_key_is_refused_when_slurm_is_needed)
{
    char *envp[] = {"FORGE_SLURM_TLS_CERT_FILE=/nonexistent/c.pem",
                    "FORGE_SLURM_TLS_KEY_FILE=/nonexistent/c.key", NULL};
    forge_config_t *cfg = load_ok(envp);
    forge_error_t err = {0};

    cr_expect_eq(forge_config_read_secrets(cfg, FORGE_NEED_KAFKA, &err),
                 FORGE_OK);
    cr_expect_eq(forge_config_read_secrets(cfg, FORGE_NEED_SLURM, &err),
                 FORGE_ECONFIG);
    cr_expect_str_eq(err.field, "FORGE_SLURM_TLS_CERT_FILE");
    forge_config_destroy(cfg);
}

Test(config_security, the_password_is_in_no_log_line)
{
    const char *pw = file("kafka.pw", PASSWORD "\n", 0600);
    char *envp[] = {
        SASL_SSL,
        SCRAM,
        USER,
        var("FORGE_KAFKA_SASL_PASSWORD_FILE", pw),
        "FORGE_KAFKA_PROP_sasl_oauthbearer_client_secret=cl13nt-s3cret",
        NULL};
    forge_config_t *cfg = load_ok(envp);
    forge_error_t err = {0};
    FILE *sink = tmpfile();
    char out[4096] = "";

    forge_log_reset(); /* forgets the secrets: before they are read */
    forge_log_configure(FORGE_LOG_DEBUG, FORGE_LOG_TEXT, fileno(sink), "w");
    cr_assert_eq(forge_config_read_secrets(cfg, FORGE_NEED_KAFKA, &err),
                 FORGE_OK, "%s", err.message);
    forge_log_info("the password is %s, the secret %s", PASSWORD,
                   "cl13nt-s3cret");
    forge_log_reset();
    cr_assert_gt(pread(fileno(sink), out, sizeof(out) - 1, 0), 0);
    cr_expect_null(strstr(out, PASSWORD), "%s", out);
    cr_expect_null(strstr(out, "cl13nt-s3cret"), "%s", out);
    cr_expect(strstr(out, "[REDACTED]"), "%s", out);
    fclose(sink);
    forge_config_destroy(cfg);
}

/* ---- what librdkafka is told ------------------------------------------- */

static const char *value_of(rd_kafka_conf_t *conf, const char *name, char *buf,
                            size_t size)
{
    cr_assert_eq(rd_kafka_conf_get(conf, name, buf, &size), RD_KAFKA_CONF_OK,
                 "%s is unknown", name);
    return buf;
}

Test(config_security, every_kafka_client_gets_the_security_properties)
{
    const char *pw = file("kafka.pw", PASSWORD "\n", 0600);
    const char *kpw = file("key.pw", "k3y-pass\n", 0600);
    const char *pem = file("c.pem", "PEM", 0600);
    char *envp[] = {
        "FORGE_KAFKA_BROKERS=k1:9093",
        "FORGE_KAFKA_SECURITY_PROTOCOL=sasl_ssl",
        "FORGE_KAFKA_SASL_MECHANISM=SCRAM-SHA-256",
        USER,
        var("FORGE_KAFKA_SASL_PASSWORD_FILE", pw),
        var("FORGE_KAFKA_SSL_CA_FILE", pem),
        var("FORGE_KAFKA_SSL_CERT_FILE", pem),
        var("FORGE_KAFKA_SSL_KEY_FILE", pem),
        var("FORGE_KAFKA_SSL_KEY_PASSWORD_FILE", kpw),
        "FORGE_KAFKA_PROP_ssl_endpoint_identification_algorithm=none",
        NULL};
    forge_config_t *cfg = load_ok(envp);
    forge_error_t err = {0};
    rd_kafka_conf_t *conf;
    char v[256];

    cr_assert_eq(forge_config_read_secrets(cfg, FORGE_NEED_KAFKA, &err),
                 FORGE_OK, "%s", err.message);
    conf = forge_kafka_conf_base(cfg, &err);
    cr_assert_not_null(conf, "%s", err.message);
    cr_expect_str_eq(value_of(conf, "security.protocol", v, sizeof(v)),
                     "sasl_ssl");
    cr_expect_str_eq(value_of(conf, "sasl.mechanisms", v, sizeof(v)),
                     "SCRAM-SHA-256");
    cr_expect_str_eq(value_of(conf, "sasl.username", v, sizeof(v)), "w");
    cr_expect_str_eq(value_of(conf, "sasl.password", v, sizeof(v)), PASSWORD);
    cr_expect_str_eq(value_of(conf, "ssl.ca.location", v, sizeof(v)), pem);
    cr_expect_str_eq(value_of(conf, "ssl.certificate.location", v, sizeof(v)),
                     pem);
    cr_expect_str_eq(value_of(conf, "ssl.key.location", v, sizeof(v)), pem);
    cr_expect_str_eq(value_of(conf, "ssl.key.password", v, sizeof(v)),
                     "k3y-pass");
    cr_expect_str_eq(
        value_of(conf, "ssl.endpoint.identification.algorithm", v, sizeof(v)),
        "none", "the pass-through still layered");
    rd_kafka_conf_destroy(conf);
    forge_config_destroy(cfg);
}

Test(config_security, nothing_set_leaves_librdkafka_defaults)
{
    char *envp[] = {"FORGE_KAFKA_BROKERS=k1:9092", NULL};
    forge_config_t *cfg = load_ok(envp);
    forge_error_t err = {0};
    rd_kafka_conf_t *conf = forge_kafka_conf_base(cfg, &err);
    char v[256];

    cr_assert_not_null(conf, "%s", err.message);
    cr_expect_str_eq(value_of(conf, "security.protocol", v, sizeof(v)),
                     "plaintext");
    rd_kafka_conf_destroy(conf);
    forge_config_destroy(cfg);
}

Test(config_security, a_refused_secret_property_shows_no_value)
{
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    forge_error_t err = {0};

    cr_expect(forge_kafka_prop_is_secret("sasl.password"));
    cr_expect(forge_kafka_prop_is_secret("sasl.oauthbearer.client.secret"));
    cr_expect(forge_kafka_prop_is_secret("ssl.key.password"));
    cr_expect(!forge_kafka_prop_is_secret("sasl.username"));
    /* a property librdkafka does not know, named as a secret */
    cr_assert_eq(forge_kafka_conf_set(conf, "no.such.password", PASSWORD, &err),
                 FORGE_ECONFIG);
    cr_expect_null(strstr(err.message, PASSWORD), "%s", err.message);
    cr_expect(strstr(err.message, "no.such.password"), "%s", err.message);
    rd_kafka_conf_destroy(conf);
}

Test(config_security, slurm_client_certificate_reaches_the_client_options)
{
    char *envp[] = {"FORGE_SLURM_TLS_CERT_FILE=/etc/forge/c.pem",
                    "FORGE_SLURM_TLS_KEY_FILE=/etc/forge/c.key", NULL};
    forge_config_t *cfg = load_ok(envp);
    forge_slurm_options_t opts;

    forge_slurm_options_from_config(cfg, &opts);
    cr_expect_str_eq(opts.cert_file, "/etc/forge/c.pem");
    cr_expect_str_eq(opts.key_file, "/etc/forge/c.key");
    forge_config_destroy(cfg);
}

/* ---- the warnings at start ---------------------------------------------- */

Test(config_security, loopback_hosts)
{
    const char *yes[] = {"localhost", "LOCALHOST",       "localhost.",
                         "127.0.0.1", "127.1.2.3",       "::1",
                         "[::1]",     "::ffff:127.0.0.1"};
    const char *no[] = {"slurm",
                        "10.0.0.1",
                        "128.0.0.1",
                        "::2",
                        "[::]",
                        "0.0.0.0",
                        "localhost.x",
                        "mylocalhost",
                        "::ffff:10.0.0.1",
                        ""};

    for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++)
        cr_expect(forge_host_is_loopback(yes[i], strlen(yes[i])), "%s", yes[i]);
    for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++)
        cr_expect(!forge_host_is_loopback(no[i], strlen(no[i])), "%s", no[i]);
}

/* The warnings a configuration gives for needs, as "VAR,VAR," */
static void warnings_of(char *const *envp, unsigned needs, char *out,
                        size_t size)
{
    forge_config_t *cfg = load_ok(envp);
    forge_config_warning_t w[FORGE_CONFIG_WARNINGS_MAX];
    size_t n = forge_config_warnings(cfg, needs, w);

    out[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        strncat(out, w[i].variable, size - strlen(out) - 2);
        strcat(out, ",");
    }
    forge_config_destroy(cfg);
}

typedef struct warn_case {
    char env[3][80];
    unsigned needs;
    char want[96];
} warn_case_t;

#define ALL (FORGE_NEED_SLURM | FORGE_NEED_KAFKA)

static warn_case_t warn_cases[] = {
    {{"FORGE_SLURM_REST_URL=https://slurm:6820"}, ALL, ""},
    {{"FORGE_SLURM_REST_URL=https://slurm:6820", "FORGE_SLURM_TLS_VERIFY=0"},
     ALL,
     "FORGE_SLURM_TLS_VERIFY,"},
    /* over http there is no certificate: the stack's own case */
    {{"FORGE_SLURM_REST_URL=http://127.0.0.1:6820", "FORGE_SLURM_TLS_VERIFY=0"},
     ALL,
     ""},
    {{"FORGE_SLURM_REST_URL=http://localhost:6820/"}, ALL, ""},
    {{"FORGE_SLURM_REST_URL=http://[::1]:6820"}, ALL, ""},
    {{"FORGE_SLURM_REST_URL=http://slurm.internal:6820"},
     ALL,
     "FORGE_SLURM_REST_URL,"},
    {{"FORGE_SLURM_REST_URL=http://10.1.2.3"}, ALL, "FORGE_SLURM_REST_URL,"},
    {{"FORGE_SLURM_REST_URL=http://[fd00::1]:6820"},
     ALL,
     "FORGE_SLURM_REST_URL,"},
    {{"FORGE_SLURM_REST_URL=http://slurm:6820"}, FORGE_NEED_KAFKA, ""},
    /* several endpoints: any one in clear, any one unverified */
    {{"FORGE_SLURM_REST_URL=http://127.0.0.1:1,http://10.1.2.3:2"},
     ALL,
     "FORGE_SLURM_REST_URL,"},
    {{"FORGE_SLURM_REST_URL=http://127.0.0.1:1,http://[::1]:2"}, ALL, ""},
    {{"FORGE_SLURM_REST_URL=http://127.0.0.1:1,https://b:2",
      "FORGE_SLURM_TLS_VERIFY=0"},
     ALL,
     "FORGE_SLURM_TLS_VERIFY,"},
    {{"FORGE_KAFKA_BROKERS=k1:9092", "FORGE_KAFKA_SECURITY_PROTOCOL=sasl_ssl"},
     ALL,
     ""},
    {{"FORGE_KAFKA_BROKERS=127.0.0.1:9092,[::1]:9093",
      "FORGE_KAFKA_SECURITY_PROTOCOL=sasl_plaintext"},
     ALL,
     ""},
    {{"FORGE_KAFKA_BROKERS=127.0.0.1:9092,k2:9092",
      "FORGE_KAFKA_SECURITY_PROTOCOL=sasl_plaintext"},
     ALL,
     "FORGE_KAFKA_SECURITY_PROTOCOL,"},
    {{"FORGE_KAFKA_BROKERS=k1:9092",
      "FORGE_KAFKA_PROP_security_protocol=SASL_PLAINTEXT"},
     ALL,
     "FORGE_KAFKA_SECURITY_PROTOCOL,"},
    {{"FORGE_KAFKA_BROKERS=k1:9092",
      "FORGE_KAFKA_SECURITY_PROTOCOL=sasl_plaintext"},
     FORGE_NEED_SLURM,
     ""},
};

ParameterizedTestParameters(config_security, warnings)
{
    return cr_make_param_array(warn_case_t, warn_cases,
                               sizeof(warn_cases) / sizeof(warn_cases[0]));
}

ParameterizedTest(warn_case_t *c, config_security, warnings)
{
    char *envp[4] = {NULL};
    char got[256];
    size_t n = 0;

    for (size_t i = 0; i < 3; i++)
        if (c->env[i][0])
            envp[n++] = c->env[i];
    warnings_of(envp, c->needs, got, sizeof(got));
    cr_expect_str_eq(got, c->want, "%s %s", c->env[0], c->env[1]);
}
