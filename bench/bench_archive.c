/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench_archive.c - how fast forge_archive_logs turns a staging folder into
 * logs.tar.gz, next to the baseline of `tar czf` (GNU tar piping to gzip)
 * over the same files of the same folder, in the same run. Both compress at
 * gzip's default level (6) and both make their output durable (ours fsyncs
 * and renames; tar's file is fsynced once tar exits, inside its time).
 * Files are training-log lines with varying numbers and a little random
 * noise, so they compress like real logs. Best of 3 for each; prints MiB/s
 * of input for both and the ratio ours/tar (target >= 0.8).
 *
 * Then the cost of the secrets a worker at scale holds, on the tail an
 * archive's event carries (forge_archive_tail_text of a 64 KiB log): with
 * none registered, with SECRETS registered (secrets.h; a worker holding
 * 100,000 launches registers as many ingest tokens), and with the same
 * secrets searched one by one: the redaction must not grow with them.
 * A benchmark, not a test: it never fails on speed.
 *
 *   build/bench/bench_archive [total-MiB (256)] [files (4)]
 */
#include "archive/archive.h"
#include "secrets/secrets.h"
#include "fs/paths.h"
#include "render/staging.h"

#include <fcntl.h>
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define LAUNCH   "bench-archive"
#define ROUNDS   3
#define MAX_FILE 64
#define SECRETS  100000
#define SMALL    (64 * 1024)

static double now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static uint64_t next_rand(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* One line of a training log, or now and then a run of random bytes (a
 * progress bar's control codes, a binary dump). Returns its length. */
static int log_line(char *line, size_t cap, int step, uint64_t *rng)
{
    uint64_t r = next_rand(rng);

    if (r % 97 == 0) {
        int n = 32 + (int)((r >> 8) % 96);
        for (int i = 0; i < n; i++)
            line[i] = (char)(next_rand(rng) & 0xFF);
        line[n] = '\n';
        return n + 1;
    }
    return snprintf(line, cap,
                    "step %d loss %.4f lr %.1e tokens/s %d gpu_mem %.1fGiB\n",
                    step, 0.2 + (double)(r % 40000) / 10000.0,
                    3.0e-4 * (double)(1 + (r >> 20) % 8) / 8.0,
                    70000 + (int)((r >> 24) % 20000),
                    60.0 + (double)((r >> 40) % 180) / 10.0);
}

static int write_log(const char *path, size_t bytes, uint64_t seed)
{
    FILE *f = fopen(path, "wb");
    uint64_t rng = seed | 1;
    char line[256];
    size_t done = 0;

    if (!f)
        return -1;
    for (int step = 0; done < bytes; step++) {
        int n = log_line(line, sizeof(line), step, &rng);
        if (fwrite(line, 1, (size_t)n, f) != (size_t)n)
            break;
        done += (size_t)n;
    }
    return fclose(f) == 0 && done >= bytes ? 0 : -1;
}

typedef struct bench {
    forge_config_t *cfg;
    char root[64];
    char *staging;
    char names[MAX_FILE][32];
    const char *pools[MAX_FILE / 2];
    char pool_names[MAX_FILE / 2][32];
    size_t nfiles;
    uint64_t input; /* bytes */
} bench_t;

/* pool<i>.out / pool<i>.err, total bytes spread evenly. */
static int make_files(bench_t *b, size_t total)
{
    const forge_fs_level_t level = {0755, FORGE_FS_KEEP, FORGE_FS_REPAIR};
    forge_error_t err = {0};
    struct stat st;
    int root = -1, dir = -1;

    if (forge_fs_open_root(b->root, &root, &err) ||
        forge_fs_mkdirs(root, "", "staging/" LAUNCH "/1", &level, 1, &dir,
                        &err))
        return fprintf(stderr, "%s\n", err.message), -1;
    close(dir);
    close(root);
    for (size_t i = 0; i < b->nfiles; i++) {
        char *path;
        snprintf(b->pool_names[i / 2], sizeof(b->pool_names[0]), "pool%zu",
                 i / 2);
        b->pools[i / 2] = b->pool_names[i / 2];
        snprintf(b->names[i], sizeof(b->names[0]), "pool%zu.%s", i / 2,
                 i % 2 ? "err" : "out");
        path = forge_path_join(b->staging, b->names[i]);
        if (write_log(path, total / b->nfiles, 0x9E3779B97F4A7C15ull * (i + 1)))
            return fprintf(stderr, "cannot write %s\n", path), -1;
        if (stat(path, &st) == 0)
            b->input += (uint64_t)st.st_size;
        free(path);
    }
    return 0;
}

static int setup(bench_t *b, size_t total)
{
    char env[128];
    char *envp[] = {env, NULL};
    forge_error_t err = {0};

    snprintf(b->root, sizeof(b->root), "/var/tmp/forge-bench-archive-XXXXXX");
    if (!mkdtemp(b->root))
        return perror("mkdtemp"), -1;
    snprintf(env, sizeof(env), "FORGE_STORAGE_ROOT=%s", b->root);
    if (forge_config_load(envp, &b->cfg, &err))
        return fprintf(stderr, "config: %s\n", err.message), -1;
    b->staging = forge_staging_path(b->cfg, LAUNCH, 1);
    return make_files(b, total);
}

/* Seconds for one forge_archive_logs; *out_bytes: the archive's size. */
static double time_ours(const bench_t *b, uint64_t *out_bytes)
{
    forge_archive_spec_t spec = {LAUNCH, 1, b->pools, b->nfiles / 2, NULL, 0};
    forge_archive_t a;
    forge_error_t err = {0};
    double start = now(), t;

    if (forge_archive_logs(b->cfg, &spec, FORGE_FS_KEEP, &a, &err)) {
        fprintf(stderr, "forge_archive_logs: %s\n", err.message);
        exit(1);
    }
    t = now() - start;
    *out_bytes = a.bytes;
    forge_archive_clear(&a);
    return t;
}

static void exec_tar(const bench_t *b, const char *out)
{
    char *argv[MAX_FILE + 4] = {"tar", "czf", (char *)out};
    char *envp[] = {"PATH=/usr/bin:/bin", "LC_ALL=C", NULL};

    for (size_t i = 0; i < b->nfiles; i++)
        argv[3 + i] = (char *)b->names[i];
    if (chdir(b->staging) == 0)
        execve("/bin/tar", argv, envp); /* GZIP unset: default level */
    _exit(127);
}

/* Seconds for `tar czf` of the same files, its output fsynced. */
static double time_tar(const bench_t *b, uint64_t *out_bytes)
{
    char out[128];
    struct stat st;
    double start = now(), t;
    int status = 0, fd;
    pid_t pid;

    snprintf(out, sizeof(out), "%s/tar-baseline.tar.gz", b->root);
    if ((pid = fork()) == 0)
        exec_tar(b, out);
    if (pid < 0 || waitpid(pid, &status, 0) != pid || status != 0) {
        fprintf(stderr, "tar czf failed (status %d)\n", status);
        exit(1);
    }
    if ((fd = open(out, O_RDONLY)) >= 0) {
        (void)fsync(fd);
        close(fd);
    }
    t = now() - start;
    *out_bytes = stat(out, &st) == 0 ? (uint64_t)st.st_size : 0;
    return t;
}

static int rm_one(const char *path, const struct stat *st, int type,
                  struct FTW *ftw)
{
    (void)st;
    (void)ftw;
    return type == FTW_DP ? rmdir(path) : unlink(path);
}

static void teardown(bench_t *b)
{
    if (b->root[0])
        nftw(b->root, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    free(b->staging);
    forge_config_destroy(b->cfg);
}

/* A log's last 64 KiB as a tail reads it. New string. */
static char *log_text(size_t *len)
{
    char *text = malloc(SMALL + 256), line[256];
    uint64_t rng = 42;
    size_t n = 0;

    for (int step = 0; n < SMALL;) {
        int k = log_line(line, sizeof(line), step++, &rng);
        memcpy(text + n, line, (size_t)k);
        n += (size_t)k;
    }
    *len = n;
    return text;
}

/* Microseconds per tail of text (mean of many), with list[0..count) given
 * as the launch's own secrets. */
static double tail_us(const char *text, size_t len, const char *const *list,
                      size_t count)
{
    int rounds = 0;
    double start = now(), t;

    do {
        free(forge_archive_tail_text(text, len, false, list, count));
        rounds++;
    } while ((t = now() - start) < 0.5 || rounds < 3);
    return t / rounds * 1e6;
}

/* The tail's redaction with none, then SECRETS, registered; and the same
 * secrets searched one by one (given as a list), the way to beat. */
static void secrets_cost(void)
{
    size_t len;
    char *text = log_text(&len);
    char **list = calloc(SECRETS, sizeof(char *));
    double none, many, listed;

    for (int i = 0; i < SECRETS; i++) {
        list[i] = malloc(48);
        snprintf(list[i], 48, "ingest-token-%08d-6f1d2c3b4a596877", i);
    }
    none = tail_us(text, len, NULL, 0);
    listed = tail_us(text, len, (const char *const *)list, SECRETS);
    for (int i = 0; i < SECRETS; i++)
        (void)forge_secret_add(list[i]);
    many = tail_us(text, len, NULL, 0);
    forge_secrets_reset();
    printf("tail      of a 64 KiB log: none registered %.0f us; %d secrets "
           "registered %.0f us; the same searched one by one %.0f us\n",
           none, SECRETS, many, listed);
    for (int i = 0; i < SECRETS; i++)
        free(list[i]);
    free(list);
    free(text);
}

int main(int argc, char **argv)
{
    size_t mib = argc > 1 ? strtoul(argv[1], NULL, 10) : 256;
    size_t files = argc > 2 ? strtoul(argv[2], NULL, 10) : 4;
    bench_t b = {0};
    double ours = 1e9, tar = 1e9, mib_in;
    uint64_t ours_out = 0, tar_out = 0;

    if (mib == 0 || files < 2 || files > MAX_FILE || files % 2) {
        fprintf(stderr, "usage: %s [total-MiB] [files: even, 2..%d]\n", argv[0],
                MAX_FILE);
        return 2;
    }
    b.nfiles = files;
    if (setup(&b, mib * 1024 * 1024) != 0)
        return teardown(&b), 1;
    for (int i = 0; i < ROUNDS; i++) { /* alternate: same cache, same disk */
        double t = time_ours(&b, &ours_out);
        ours = t < ours ? t : ours;
        t = time_tar(&b, &tar_out);
        tar = t < tar ? t : tar;
    }
    mib_in = (double)b.input / (1024.0 * 1024.0);
    printf("input     %zu files, %.1f MiB of log lines (+ random bytes)\n",
           b.nfiles, mib_in);
    printf("baseline  tar czf (gzip -6)       %8.1f MiB/s  (%llu bytes out)\n",
           mib_in / tar, (unsigned long long)tar_out);
    printf("measured  forge_archive_logs      %8.1f MiB/s  (%llu bytes out)\n",
           mib_in / ours, (unsigned long long)ours_out);
    printf("ratio     ours / tar  %.2f (target >= 0.8): %s\n", tar / ours,
           tar / ours >= 0.8 ? "met" : "NOT met");
    teardown(&b);
    secrets_cost();
    return 0;
}
