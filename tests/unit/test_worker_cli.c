/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_worker_cli.c - the forge-worker executable as an operator meets it:
 * --version names librdkafka >= 2.11.1 and the API versions; a bad
 * environment variable, or a bad state key file, stops `run` with exit 78
 * and a message naming it; so does a listener address that cannot be had
 * (a port in use: exit 1); `render --format payload` shows a checkpoint
 * signal as Slurm's fields; `logs`' usage errors are JSON, exit 2.
 */
#include "config/version.h"

#include <criterion/criterion.h>
#include <librdkafka/rdkafka.h>
#include <stdio.h>
#include <stdlib.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

typedef struct run_result {
    int exit_code;
    char out[8192];
    char err[8192];
} run_result_t;

static void drain(int fd, char *buf, size_t cap)
{
    size_t n = 0;
    ssize_t r;

    while (n < cap - 1 && (r = read(fd, buf + n, cap - 1 - n)) > 0)
        n += (size_t)r;
    buf[n] = '\0';
}

/* Runs forge-worker with argv and exactly envp; stdout/stderr captured. */
static void run_worker(char *const argv[], char *const envp[],
                       run_result_t *res)
{
    int out[2], err[2], status;
    pid_t pid;

    cr_assert_eq(pipe(out), 0);
    cr_assert_eq(pipe(err), 0);
    pid = fork();
    cr_assert_neq(pid, -1);
    if (pid == 0) {
        dup2(out[1], 1);
        dup2(err[1], 2);
        close(out[0]);
        close(err[0]);
        execve(FORGE_WORKER_BIN, argv, envp);
        _exit(127);
    }
    close(out[1]);
    close(err[1]);
    drain(out[0], res->out, sizeof(res->out));
    drain(err[0], res->err, sizeof(res->err));
    close(out[0]);
    close(err[0]);
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_assert(WIFEXITED(status), "forge-worker died: %s", res->err);
    res->exit_code = WEXITSTATUS(status);
}

Test(worker_cli, version_names_librdkafka_and_api_versions)
{
    char *argv[] = {"forge-worker", "--version", NULL};
    char *envp[] = {NULL};
    run_result_t r;
    int major, minor, patch;
    const char *lib;

    run_worker(argv, envp, &r);
    cr_assert_eq(r.exit_code, 0);
    cr_assert(strstr(r.out, "forge-worker "), "%s", r.out);
    lib = strstr(r.out, "librdkafka ");
    cr_assert_not_null(lib, "%s", r.out);
    cr_assert_eq(sscanf(lib, "librdkafka %d.%d.%d", &major, &minor, &patch), 3);
    cr_assert((major << 16 | minor << 8 | patch) >=
                  (FORGE_RDKAFKA_MIN_VERSION >> 8),
              "librdkafka %d.%d.%d is older than %s", major, minor, patch,
              FORGE_RDKAFKA_MIN_VERSION_STR);
    for (const char *v = "v0.0.41\0v0.0.42\0v0.0.43\0v0.0.44\0v0.0.45\0"; *v;
         v += strlen(v) + 1)
        cr_assert(strstr(r.out, v), "%s missing from: %s", v, r.out);
}

static void assert_config_exit(char *const envp[], const char *variable)
{
    char *argv[] = {"forge-worker", "run", NULL};
    run_result_t r;

    run_worker(argv, envp, &r);
    cr_assert_eq(r.exit_code, 78, "exit %d, stderr: %s", r.exit_code, r.err);
    cr_assert(strstr(r.err, variable), "stderr must name %s: %s", variable,
              r.err);
}

Test(worker_cli, bad_variable_stops_run_with_78_naming_it)
{
    char *bad_poll[] = {"FORGE_POLL_INTERVAL_MS=fast", NULL};
    char *bad_version[] = {"FORGE_SLURM_REST_API_VERSION=v9", NULL};
    char *bad_prop[] = {"FORGE_KAFKA_PROP_enable_auto_commit=true", NULL};

    assert_config_exit(bad_poll, "FORGE_POLL_INTERVAL_MS");
    assert_config_exit(bad_version, "FORGE_SLURM_REST_API_VERSION");
    assert_config_exit(bad_prop, "FORGE_KAFKA_PROP_enable_auto_commit");
}

Test(worker_cli, missing_required_variable_stops_run_with_78)
{
    char *no_brokers[] = {"FORGE_SLURM_REST_URL=http://127.0.0.1:1",
                          "FORGE_SLURM_REST_USER=forge",
                          "FORGE_SLURM_JWT_FILE=/nonexistent/jwt",
                          "FORGE_STORAGE_ROOT=/tmp", NULL};

    assert_config_exit(no_brokers, "FORGE_KAFKA_BROKERS");
}

static void write_file(const char *dir, const char *name, const void *data,
                       size_t n, mode_t mode, char *var, const char *var_name)
{
    char path[128];
    FILE *f;

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    f = fopen(path, "wb");
    cr_assert_not_null(f, "%s", path);
    cr_assert_eq(fwrite(data, 1, n, f), n);
    fclose(f);
    cr_assert_eq(chmod(path, mode), 0);
    snprintf(var, 192, "%s=%s", var_name, path);
}

/* run checks the state key files before it touches Slurm or Kafka. */
Test(worker_cli, the_state_key_is_required_and_checked_by_run)
{
    static const char catalog[] =
        "{\"series\": {\"h200\": {\"slurm_constraint\": \"h200\", "
        "\"gpus_per_node\": 8}}}";
    static const char key[] = "0123456789abcdef0123456789abcdef!";
    char dir[] = "/tmp/forge-cli-key-XXXXXX";
    char series[192], good[192], open_key[192], short_key[192], prev[192];
    char *envp[] = {"FORGE_SLURM_REST_URL=http://127.0.0.1:1",
                    "FORGE_SLURM_REST_USER=forge",
                    "FORGE_SLURM_JWT_FILE=/nonexistent/jwt",
                    "FORGE_STORAGE_ROOT=/tmp",
                    "FORGE_KAFKA_BROKERS=127.0.0.1:1",
                    series,
                    NULL,
                    NULL,
                    NULL};
    char cmd[128];

    cr_assert_not_null(mkdtemp(dir));
    write_file(dir, "series.json", catalog, sizeof(catalog) - 1, 0644, series,
               "FORGE_GPU_SERIES_FILE");
    write_file(dir, "state.key", key, 32, 0600, good, "FORGE_STATE_KEY_FILE");
    write_file(dir, "open.key", key, 32, 0640, open_key,
               "FORGE_STATE_KEY_FILE");
    write_file(dir, "short.key", key, 31, 0600, short_key,
               "FORGE_STATE_KEY_FILE");
    write_file(dir, "prev.key", key, 33, 0600, prev,
               "FORGE_STATE_KEY_FILE_PREVIOUS");
    assert_config_exit(envp, "FORGE_STATE_KEY_FILE is required");
    envp[6] = open_key;
    assert_config_exit(envp, "chmod 600");
    envp[6] = short_key;
    assert_config_exit(envp, "exactly 32");
    envp[6] = good;
    envp[7] = prev;
    assert_config_exit(envp, "FORGE_STATE_KEY_FILE_PREVIOUS");
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    cr_assert_eq(system(cmd), 0);
}

/* FORGE_HTTP_LISTEN (src/observe/listener.c): an address that cannot be had
 * stops run with 78 naming it; a port in use with 1 (a restart may find
 * it free); both before anything talks to Slurm or Kafka. */
Test(worker_cli, a_listener_address_it_cannot_have_stops_run)
{
    static const char catalog[] =
        "{\"series\": {\"h200\": "
        "{\"slurm_constraint\": \"h200\", \"gpus_per_node\": 8}}}";
    static const char key[] = "0123456789abcdef0123456789abcdef";
    char dir[] = "/tmp/forge-cli-listen-XXXXXX";
    char series[192], state_key[192], jwt[192], listen_at[64], cmd[128];
    char *argv[] = {"forge-worker", "run", NULL};
    char *envp[] = {"FORGE_SLURM_REST_URL=http://127.0.0.1:1",
                    "FORGE_SLURM_REST_USER=forge",
                    "FORGE_STORAGE_ROOT=/tmp",
                    "FORGE_KAFKA_BROKERS=127.0.0.1:1",
                    series,
                    state_key,
                    jwt,
                    "FORGE_HTTP_LISTEN=no-such-host.invalid:8080",
                    NULL};
    struct sockaddr_in sa = {.sin_family = AF_INET};
    socklen_t len = sizeof(sa);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    run_result_t r;

    cr_assert_not_null(mkdtemp(dir));
    write_file(dir, "series.json", catalog, sizeof(catalog) - 1, 0644, series,
               "FORGE_GPU_SERIES_FILE");
    write_file(dir, "state.key", key, 32, 0600, state_key,
               "FORGE_STATE_KEY_FILE");
    write_file(dir, "slurm.jwt", "token", 5, 0600, jwt, "FORGE_SLURM_JWT_FILE");
    assert_config_exit(envp, "FORGE_HTTP_LISTEN");

    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    cr_assert_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    cr_assert_eq(listen(fd, 1), 0);
    cr_assert_eq(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
    snprintf(listen_at, sizeof(listen_at), "FORGE_HTTP_LISTEN=127.0.0.1:%d",
             ntohs(sa.sin_port));
    envp[7] = listen_at;
    run_worker(argv, envp, &r);
    cr_assert_eq(r.exit_code, 1, "exit %d, stderr: %s", r.exit_code, r.err);
    cr_assert(strstr(r.err, "FORGE_HTTP_LISTEN") && strstr(r.err, "in use"),
              "%s", r.err);
    close(fd);
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    cr_assert_eq(system(cmd), 0);
}

/* `render --format payload` shows what would be submitted: a request's
 * checkpoint_signal as kill_warning_signal and kill_warning_delay, no
 * kill_warning_flags; `validate` refuses a signal off the allow-list with
 * the contract's error JSON and its path. */
Test(worker_cli, render_payload_shows_the_checkpoint_signal)
{
    static const char catalog[] =
        "{\"series\": {\"h200\": {\"slurm_constraint\": \"h200\", "
        "\"gpus_per_node\": 8}}}";
    static const char head[] =
        "{\"kind\": \"launch\", \"launch_id\": \"ck-1\", \"image\": "
        "{\"path\": \"a.sif\", \"format\": \"sif\"}, \"command\": "
        "[\"train\"], \"pools\": [{\"name\": \"p\", \"series\": "
        "\"h200\", \"nodes\": 1}], \"checkpoint_signal\": ";
    char dir[] = "/tmp/forge-cli-render-XXXXXX";
    char series[192], good[192], bad[192], root[192], image[192], cmd[128];
    char text[512];
    char *argv[] = {"forge-worker", "render", "--format",
                    "payload",      NULL,     NULL};
    char *envp[] = {root, series, "FORGE_SLURM_RUNTIME_PROFILE=apptainer",
                    NULL};
    run_result_t r;

    cr_assert_not_null(mkdtemp(dir));
    write_file(dir, "series.json", catalog, sizeof(catalog) - 1, 0644, series,
               "FORGE_GPU_SERIES_FILE");
    snprintf(root, sizeof(root), "FORGE_STORAGE_ROOT=%s", dir);
    snprintf(cmd, sizeof(cmd), "mkdir -p '%s/runtimes'", dir);
    cr_assert_eq(system(cmd), 0);
    write_file(dir, "runtimes/a.sif", "", 0, 0644, image, "IMAGE");
    snprintf(text, sizeof(text), "%s%s}", head,
             "{\"signal\": \"USR1\", \"seconds_before_end\": 300}");
    write_file(dir, "good.json", text, strlen(text), 0644, good, "REQUEST");
    snprintf(text, sizeof(text), "%s%s}", head, "{\"signal\": \"KILL\"}");
    write_file(dir, "bad.json", text, strlen(text), 0644, bad, "REQUEST");

    argv[4] = good + strlen("REQUEST=");
    run_worker(argv, envp, &r);
    cr_assert_eq(r.exit_code, 0, "%s", r.err);
    cr_assert(strstr(r.out, "\"kill_warning_signal\": \"USR1\""), "%s", r.out);
    cr_assert(strstr(r.out, "\"kill_warning_delay\": 300"), "%s", r.out);
    cr_assert_null(strstr(r.out, "kill_warning_flags"), "%s", r.out);
    argv[1] = "validate";
    argv[2] = bad + strlen("REQUEST=");
    argv[3] = NULL;
    run_worker(argv, envp, &r);
    cr_assert_eq(r.exit_code, 2, "%s", r.err);
    cr_assert(strstr(r.err, "\"field\":\"$.checkpoint_signal.signal\""), "%s",
              r.err);
    cr_assert(strstr(r.err, "\"error\":\"schema\""), "%s", r.err);
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    cr_assert_eq(system(cmd), 0);
}

Test(worker_cli, unknown_command_is_a_usage_error)
{
    char *argv[] = {"forge-worker", "frobnicate", NULL};
    char *envp[] = {NULL};
    run_result_t r;

    run_worker(argv, envp, &r);
    cr_assert_eq(r.exit_code, 64);
    cr_assert(strstr(r.err, "frobnicate"), "%s", r.err);
}

/* `logs`' arguments are checked before anything else: a usage error is
 * the recovery commands' JSON error, exit 2; --help lists the command. */
Test(worker_cli, logs_usage_errors_are_exit_2)
{
    char *const cases[][6] = {
        {"forge-worker", "logs", NULL},
        {"forge-worker", "logs", "a", "b", NULL},
        {"forge-worker", "logs", "a", "--attempt", "0", NULL},
        {"forge-worker", "logs", "a", "--attempt", "2x", NULL},
        {"forge-worker", "logs", "a", "--attempt", NULL},
        {"forge-worker", "logs", "a/b", NULL},
        {"forge-worker", "logs", "a", "--tail", NULL},
    };
    char *help[] = {"forge-worker", "--help", NULL};
    char *envp[] = {NULL};
    run_result_t r;

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        run_worker(cases[i], envp, &r);
        cr_assert_eq(r.exit_code, 2, "case %zu: %s", i, r.err);
        cr_assert(strstr(r.err, "{\"error\":\"usage\",\"message\":\"logs: "),
                  "case %zu: %s", i, r.err);
        cr_assert_eq(r.out[0], '\0', "case %zu: %s", i, r.out);
    }
    run_worker(help, envp, &r);
    cr_assert(strstr(r.out, "  logs       LAUNCH_ID [--attempt N] [--follow]"),
              "%s", r.out);
}
