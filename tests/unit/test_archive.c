/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_archive.c - src/archive/archive.c against real folders: what
 * goes into logs.tar.gz (the job's regular files, never the worker's own, never
 * a link or a FIFO), the archive read back with libarchive and hashed with
 * OpenSSL, the same bytes twice, the missing logs, and the tail an event
 * carries (4 KiB, line start, valid UTF-8 for jansson, secret redacted).
 * Planted links and hard links (issue 10): at `staging`, `staging/<id>`,
 * the staging folder, `artifacts`, `artifacts/<id>`, the target folder and
 * the archive itself, each refused with nothing outside read or written.
 * Each test has its own mkdtemp storage root.
 */
#include "archive/archive.h"
#include "secrets/secrets.h"
#include "fs/paths.h"
#include "render/staging.h"

#include <archive.h>
#include <archive_entry.h>
#include "support_storage.h"

#include <criterion/criterion.h>
#include <limits.h>
#include <criterion/parameterized.h>
#include <dirent.h>
#include <fcntl.h>
#include <jansson.h>
#include <locale.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define LAUNCH "llama-ft-0042"
#define SECRET "ingest-tok-6f1d2c3b4a59687766554433221100ff"

static char root[64];
static forge_config_t *cfg;
static char *staging;

static void fx_init(void)
{
    char env[128];
    char *envp[] = {env, NULL};
    forge_error_t err = {0};

    snprintf(root, sizeof(root), "/tmp/forge-archive-XXXXXX");
    cr_assert_not_null(mkdtemp(root));
    snprintf(env, sizeof(env), "FORGE_STORAGE_ROOT=%s", root);
    cr_assert_eq(forge_config_load(envp, &cfg, &err), FORGE_OK, "%s",
                 err.message);
    staging = forge_staging_path(cfg, LAUNCH, 1);
}

static void fx_fini(void)
{
    support_rm_tree(root);
    free(staging);
    forge_config_destroy(cfg);
}

TestSuite(archive, .init = fx_init, .fini = fx_fini);

/* ---- helpers ------------------------------------------------------------- */

static char *in_staging(const char *rel)
{
    return forge_path_join(staging, rel);
}

static void make_dir(const char *rel)
{
    const forge_fs_level_t level = {0755, FORGE_FS_KEEP, FORGE_FS_REPAIR};
    forge_error_t err = {0};
    char path[256];
    int rfd, fd;

    snprintf(path, sizeof(path), "staging/" LAUNCH "/1%s%s", rel ? "/" : "",
             rel ? rel : "");
    cr_assert_eq(forge_fs_open_root(root, &rfd, &err), FORGE_OK);
    cr_assert_eq(forge_fs_mkdirs(rfd, "", path, &level, 1, &fd, &err), FORGE_OK,
                 "%s", err.message);
    close(fd);
    close(rfd);
}

static void put(const char *rel, const void *data, size_t len)
{
    char *path = in_staging(rel);
    FILE *f = fopen(path, "wb");

    cr_assert_not_null(f, "cannot write %s", path);
    cr_assert_eq(fwrite(data, 1, len, f), len);
    fclose(f);
    free(path);
}

static void put_text(const char *rel, const char *text)
{
    put(rel, text, strlen(text));
}

static void make_link(const char *target, const char *rel)
{
    char *path = in_staging(rel);

    cr_assert_eq(symlink(target, path), 0, "symlink %s", path);
    free(path);
}

static void make_fifo(const char *rel)
{
    char *path = in_staging(rel);

    cr_assert_eq(mkfifo(path, 0644), 0, "mkfifo %s", path);
    free(path);
}

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    char *data;
    long n;

    cr_assert_not_null(f, "cannot read %s", path);
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    fseek(f, 0, SEEK_SET);
    data = malloc((size_t)n + 1);
    cr_assert_eq(fread(data, 1, (size_t)n, f), (size_t)n);
    data[n] = '\0';
    fclose(f);
    *len = (size_t)n;
    return data;
}

static void sha256_file(const char *path, char hex[65])
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int md_len = 0;
    size_t len;
    char *data = slurp(path, &len);
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();

    EVP_DigestInit_ex(ctx, EVP_sha256(), NULL);
    EVP_DigestUpdate(ctx, data, len);
    EVP_DigestFinal_ex(ctx, md, &md_len);
    cr_assert_eq(md_len, 32u);
    for (unsigned int i = 0; i < md_len; i++)
        snprintf(hex + 2 * i, 3, "%02x", md[i]);
    EVP_MD_CTX_free(ctx);
    free(data);
}

static forge_archive_spec_t spec_of(const char *const *pools, size_t n)
{
    forge_archive_spec_t s = {LAUNCH, 1, pools, n, NULL, 0};

    return s;
}

static const char *const main_pool[] = {"main"};

static void archive_ok(const forge_archive_spec_t *spec, forge_archive_t *a)
{
    forge_error_t err = {0};

    cr_assert_eq(forge_archive_logs(cfg, spec, FORGE_FS_KEEP, a, &err),
                 FORGE_OK, "%s: %s", forge_rc_name(err.code), err.message);
}

static void archive_main(forge_archive_t *a)
{
    forge_archive_spec_t spec = spec_of(main_pool, 1);

    archive_ok(&spec, a);
}

typedef struct entry {
    char *name;
    char *data;
    size_t len;
} entry_t;

/* Reads the archive back with libarchive, as a reader in a UTF-8 locale
 * would (in "C" it cannot show a non-ASCII name); entries in archive
 * order. */
static size_t read_back(const char *path, entry_t *e, size_t max)
{
    locale_t utf8 = newlocale(LC_CTYPE_MASK, "C.UTF-8", (locale_t)0);
    locale_t saved = uselocale(utf8);
    struct archive *a = archive_read_new();
    struct archive_entry *ae;
    size_t n = 0;
    int r;

    archive_read_support_filter_gzip(a);
    archive_read_support_format_tar(a);
    cr_assert_eq(archive_read_open_filename(a, path, 65536), ARCHIVE_OK, "%s",
                 archive_error_string(a));
    while ((r = archive_read_next_header(a, &ae)) == ARCHIVE_OK) {
        la_int64_t size = archive_entry_size(ae);
        cr_assert_lt(n, max);
        cr_assert_eq(archive_entry_filetype(ae), AE_IFREG);
        cr_assert_not_null(archive_entry_pathname_utf8(ae));
        e[n].name = strdup(archive_entry_pathname_utf8(ae));
        e[n].data = malloc((size_t)size + 1);
        e[n].len = (size_t)size;
        cr_assert_eq(archive_read_data(a, e[n].data, (size_t)size), size, "%s",
                     e[n].name);
        n++;
    }
    cr_assert_eq(r, ARCHIVE_EOF, "%s", archive_error_string(a));
    archive_read_free(a);
    uselocale(saved);
    freelocale(utf8);
    return n;
}

static void entries_free(entry_t *e, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(e[i].name);
        free(e[i].data);
    }
}

/* The archive is where it says, its size and SHA-256 are the file's. */
static void assert_archive_file(const forge_archive_t *a)
{
    char expect[512], hex[65];
    struct stat st;

    snprintf(expect, sizeof(expect), "%s/artifacts/%s/1/logs.tar.gz", root,
             LAUNCH);
    cr_assert_str_eq(a->path, expect);
    cr_assert_str_eq(a->relative_path, "artifacts/" LAUNCH "/1/logs.tar.gz");
    cr_assert_eq(stat(a->path, &st), 0);
    cr_assert_eq(a->bytes, (uint64_t)st.st_size);
    sha256_file(a->path, hex);
    cr_assert_str_eq(a->sha256, hex);
    cr_assert_gt(a->at_ms, 0);
}

/* Nothing but logs.tar.gz in the artifacts folder (no temporary left). */
static void assert_no_leftovers(const forge_archive_t *a)
{
    char *dir = strdup(a->path);
    struct dirent *de;
    DIR *d;

    *strrchr(dir, '/') = '\0';
    cr_assert_not_null(d = opendir(dir));
    while ((de = readdir(d)))
        cr_assert(!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") ||
                      !strcmp(de->d_name, "logs.tar.gz"),
                  "left in %s: %s", dir, de->d_name);
    closedir(d);
    free(dir);
}

static bool json_ok(const char *s)
{
    json_t *j = json_string(s);

    json_decref(j);
    return j != NULL;
}

/* A training log of about `size` bytes, one step per line. */
static char *training_log(size_t size, size_t *len)
{
    char *text = malloc(size + 128);
    size_t n = 0;

    for (int step = 0; n < size; step++)
        n += (size_t)snprintf(text + n, 128,
                              "step %06d loss %.4f lr 3.0e-04 tokens/s %d\n",
                              step, 2.5 / (step + 1), 80000 + step % 977);
    *len = n;
    return text;
}

static bool ends_with(const char *text, size_t len, const char *tail)
{
    size_t n = strlen(tail);

    return n <= len && !memcmp(text + len - n, tail, n);
}

/* ---- what goes in -------------------------------------------------------- */

static const char *const job_names[] = {"extra/metrics.log", "main.err",
                                        "main.out"};
static const char *const job_texts[] = {"gpu_util 0.97\ngpu_util 0.98\n",
                                        "warning: slow step\n",
                                        "step 1 loss 2.31\nstep 2 loss 2.02\n"};

/* The job's three files and the worker's own, a link out and a FIFO. */
static void make_job_folder(void)
{
    make_dir(NULL);
    make_dir("extra");
    for (size_t i = 0; i < 3; i++)
        put_text(job_names[i], job_texts[i]);
    put_text("job.sh", "#!/bin/bash\nexec srun true\n");
    put_text("credentials", SECRET);
    put_text("credentials.1", SECRET); /* a requeued job's run, unread */
    make_link("/etc/passwd", "passwd");
    make_link("/etc", "etc");
    make_link("/etc/passwd", "extra/passwd");
    make_fifo("pipe");
    make_fifo("extra/pipe");
}

Test(archive, archives_the_jobs_files_and_nothing_else, .timeout = 30)
{
    forge_archive_t a;
    entry_t e[16];
    size_t n;

    make_job_folder();
    archive_main(&a);
    cr_assert_eq(a.file_count, 3);
    for (size_t i = 0; i < 3; i++) {
        cr_assert_str_eq(a.files[i].name, job_names[i]);
        cr_assert_eq(a.files[i].bytes, strlen(job_texts[i]));
    }
    cr_assert_eq(a.missing_count, 0);
    cr_assert_eq(a.refused_count, 5);
    for (size_t i = 0; i < 5; i++) /* sorted, the worker's own not named */
        cr_assert_str_eq(a.refused[i],
                         ((const char *[]){"etc", "extra/passwd", "extra/pipe",
                                           "passwd", "pipe"})[i]);
    assert_archive_file(&a);
    assert_no_leftovers(&a);
    n = read_back(a.path, e, 16);
    cr_assert_eq(n, 3);
    for (size_t i = 0; i < n; i++) {
        cr_assert_str_eq(e[i].name, job_names[i]);
        cr_assert_eq(e[i].len, strlen(job_texts[i]));
        cr_assert_eq(memcmp(e[i].data, job_texts[i], e[i].len), 0);
    }
    cr_assert_str_eq(a.tail_name, "main.out");
    cr_assert_str_eq(a.tail_text, job_texts[2]);
    entries_free(e, n);
    forge_archive_clear(&a);
}

Test(archive, same_files_same_bytes, .timeout = 30)
{
    forge_archive_t a, b;

    make_job_folder();
    archive_main(&a);
    archive_main(&b); /* a redo after a crash: over the first */
    cr_assert_str_eq(a.sha256, b.sha256);
    cr_assert_eq(a.bytes, b.bytes);
    assert_archive_file(&b);
    assert_no_leftovers(&b);
    forge_archive_clear(&a);
    forge_archive_clear(&b);
}

Test(archive, names_events_can_carry)
{
    forge_archive_t a;
    entry_t e[8];
    size_t n;

    make_dir(NULL);
    put_text("main.out", "ok\n");
    put_text("r\xC3\xA9sum\xC3\xA9.log", "utf-8 name\n");
    put_text("bad\xC0\xAF.log", "overlong\n");      /* not UTF-8 */
    put_text("sur\xED\xA0\x80.log", "surrogate\n"); /* not UTF-8 */
    put_text("tab\there.log", "control\n");
    archive_main(&a);
    cr_assert_eq(a.file_count, 2);
    cr_assert_str_eq(a.files[0].name, "main.out");
    cr_assert_str_eq(a.files[1].name, "r\xC3\xA9sum\xC3\xA9.log");
    for (size_t i = 0; i < a.file_count; i++)
        cr_assert(json_ok(a.files[i].name), "not for an event: %s",
                  a.files[i].name);
    n = read_back(a.path, e, 8);
    cr_assert_eq(n, 2);
    cr_assert_str_eq(e[1].name, "r\xC3\xA9sum\xC3\xA9.log");
    entries_free(e, n);
    forge_archive_clear(&a);
}

/* Bigger than the copy buffer, text and random bytes: read back whole. */
Test(archive, big_files_read_back_whole, .timeout = 60)
{
    size_t len, rlen = 1024 * 1024 + 17;
    char *text = training_log(3 * 1024 * 1024, &len);
    char *noise = malloc(rlen);
    forge_archive_t a;
    entry_t e[4];

    for (size_t i = 0; i < rlen; i++)
        noise[i] = (char)(rand() & 0xFF);
    make_dir(NULL);
    put("main.out", text, len);
    put("noise.bin", noise, rlen);
    archive_main(&a);
    cr_assert_eq(a.file_count, 2);
    cr_assert_eq(a.files[0].bytes, len);
    cr_assert_eq(a.files[1].bytes, rlen);
    assert_archive_file(&a);
    cr_assert_eq(read_back(a.path, e, 4), 2);
    cr_assert(e[0].len == len && !memcmp(e[0].data, text, len));
    cr_assert(e[1].len == rlen && !memcmp(e[1].data, noise, rlen));
    entries_free(e, 2);
    free(noise);
    free(text);
    forge_archive_clear(&a);
}

/* ---- missing logs -------------------------------------------------------- */

static const char *const two_pools[] = {"trainer", "rollout"};

Test(archive, lists_the_expected_logs_not_found)
{
    forge_archive_spec_t spec = spec_of(two_pools, 2);
    forge_archive_t a;

    make_dir(NULL);
    put_text("trainer.out", "trainer says\n");
    put_text("trainer.err", "");
    put_text("rollout.out", "rollout says\n");
    archive_ok(&spec, &a);
    cr_assert_eq(a.file_count, 3);
    cr_assert_eq(a.missing_count, 1);
    cr_assert_str_eq(a.missing[0], "rollout.err");
    cr_assert_str_eq(a.tail_name, "trainer.out");
    cr_assert_str_eq(a.tail_text, "trainer says\n");
    forge_archive_clear(&a);
}

Test(archive, no_staging_folder_gives_an_empty_archive)
{
    static const char *const expect[] = {"trainer.out", "trainer.err",
                                         "rollout.out", "rollout.err"};
    forge_archive_spec_t spec = spec_of(two_pools, 2);
    forge_archive_t a;
    entry_t e[1];

    archive_ok(&spec, &a);
    cr_assert_eq(a.file_count, 0);
    cr_assert_eq(a.missing_count, 4);
    for (size_t i = 0; i < 4; i++)
        cr_assert_str_eq(a.missing[i], expect[i]);
    cr_assert_null(a.tail_name);
    cr_assert_null(a.tail_text);
    assert_archive_file(&a);
    cr_assert_eq(read_back(a.path, e, 1), 0);
    forge_archive_clear(&a);
}

Test(archive, unreadable_logs_are_missing, .timeout = 30)
{
    forge_archive_t a;

    make_dir(NULL);
    make_dir("main.err"); /* a folder where a log should be */
    make_link("/nonexistent/main.out", "main.out");
    put_text("notes.txt", "kept\n");
    archive_main(&a);
    cr_assert_eq(a.file_count, 1);
    cr_assert_str_eq(a.files[0].name, "notes.txt");
    cr_assert_eq(a.missing_count, 2);
    cr_assert_str_eq(a.missing[0], "main.out");
    cr_assert_str_eq(a.missing[1], "main.err");
    cr_assert_null(a.tail_name);
    assert_archive_file(&a);
    forge_archive_clear(&a);
}

/* A job that leaves a FIFO where its main log was must not stall the
 * archive thread (opening a FIFO for reading waits for a writer). */
Test(archive, a_fifo_main_log_neither_blocks_nor_is_read, .timeout = 30)
{
    forge_archive_t a;

    make_dir(NULL);
    make_fifo("main.out");
    put_text("main.err", "err\n");
    archive_main(&a);
    cr_assert_eq(a.file_count, 1);
    cr_assert_eq(a.missing_count, 1);
    cr_assert_str_eq(a.missing[0], "main.out");
    cr_assert_null(a.tail_name);
    forge_archive_clear(&a);
}

Test(archive, a_link_as_main_log_is_not_followed_for_the_tail)
{
    forge_archive_t a;

    make_dir(NULL);
    make_link("/etc/passwd", "main.out");
    archive_main(&a);
    cr_assert_eq(a.file_count, 0);
    cr_assert_null(a.tail_name);
    cr_assert_null(a.tail_text);
    forge_archive_clear(&a);
}

/* ---- the tail through forge_archive_logs --------------------------------- */

Test(archive, tail_is_the_end_of_a_big_log_from_a_line_start)
{
    size_t len, n;
    char *text = training_log(64 * 1024, &len);
    forge_archive_t a;

    make_dir(NULL);
    put("main.out", text, len);
    archive_main(&a);
    n = strlen(a.tail_text);
    cr_assert_leq(n, FORGE_ARCHIVE_TAIL_MAX);
    cr_assert_gt(n, FORGE_ARCHIVE_TAIL_MAX - 100);
    cr_assert(ends_with(text, len, a.tail_text));
    cr_assert_eq(text[len - n - 1], '\n', "not at a line start");
    cr_assert_eq(strncmp(a.tail_text, "step ", 5), 0);
    cr_assert_eq(a.files[0].bytes, len);
    free(text);
    forge_archive_clear(&a);
}

Test(archive, tail_of_a_short_log_is_all_of_it)
{
    size_t len;
    char *text = training_log(3000, &len);
    forge_archive_t a;

    make_dir(NULL);
    put("main.out", text, len);
    archive_main(&a);
    cr_assert_str_eq(a.tail_text, text);
    forge_archive_clear(&a);
    free(text);
    text = calloc(1, FORGE_ARCHIVE_TAIL_MAX + 1);
    memset(text, 'x', FORGE_ARCHIVE_TAIL_MAX); /* exactly 4 KiB, one line */
    put("main.out", text, FORGE_ARCHIVE_TAIL_MAX);
    archive_main(&a);
    cr_assert_str_eq(a.tail_text, text);
    forge_archive_clear(&a);
    free(text);
}

Test(archive, tail_cut_inside_a_character_is_valid_utf8)
{
    /* One long line of 3-byte characters, so the 4 KiB cut lands inside
     * one (4096 is not a multiple of 3) and there is no line start. */
    size_t len = 3 * 3000 + 1;
    char *text = malloc(len + 1);
    forge_archive_t a;

    for (size_t i = 0; i + 1 < len; i += 3)
        memcpy(text + i, "\xE2\x82\xAC", 3); /* the euro sign */
    text[len - 1] = '\n';
    text[len] = '\0';
    make_dir(NULL);
    put("main.out", text, len);
    archive_main(&a);
    cr_assert(json_ok(a.tail_text));
    cr_assert_leq(strlen(a.tail_text), FORGE_ARCHIVE_TAIL_MAX);
    cr_assert_geq(strlen(a.tail_text), FORGE_ARCHIVE_TAIL_MAX - 3);
    cr_assert(ends_with(text, len, a.tail_text));
    free(text);
    forge_archive_clear(&a);
}

Test(archive, tail_replaces_bad_bytes_and_nuls)
{
    static const char text[] = "ok \xFF\xFE bytes\nnul \0 here\n";
    forge_archive_t a;

    make_dir(NULL);
    put("main.out", text, sizeof(text) - 1);
    archive_main(&a);
    cr_assert_str_eq(a.tail_text, "ok \xEF\xBF\xBD\xEF\xBF\xBD bytes\n"
                                  "nul \xEF\xBF\xBD here\n");
    cr_assert(json_ok(a.tail_text));
    cr_assert_eq(a.files[0].bytes, sizeof(text) - 1);
    forge_archive_clear(&a);
}

Test(archive, tail_redacts_the_ingest_token)
{
    forge_archive_spec_t spec = spec_of(main_pool, 1);
    size_t len;
    char *text = training_log(16 * 1024, &len);
    forge_archive_t a;

    make_dir(NULL);
    memcpy(text + len - 200, "token=" SECRET, strlen("token=" SECRET));
    put("main.out", text, len);
    spec.secrets = (const char *const[]){SECRET};
    spec.secret_count = 1;
    archive_ok(&spec, &a);
    cr_assert_null(strstr(a.tail_text, SECRET));
    cr_assert_null(strstr(a.tail_text, "ingest-tok"));
    cr_assert_not_null(strstr(a.tail_text, "token=[REDACTED]"));
    free(text);
    forge_archive_clear(&a);
}

/* ---- planted links and hard links (issue 10) ----------------------------- */

static char host[64]; /* a root-only host folder the job must never reach */

static void sh(const char *fmt, ...) FORGE_PRINTF(1, 2);

/* A shell command with $R (the storage root) and $O (host) set. */
static void sh(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    support_vsh(root, host, fmt, ap);
    va_end(ap);
}

static void make_host(void)
{
    snprintf(host, sizeof(host), "/tmp/forge-host-XXXXXX");
    cr_assert_not_null(mkdtemp(host));
    sh("chmod 700 $O; mkdir -p $O/" LAUNCH "/1; "
       "printf 'root secret' > $O/shadow; chmod 600 $O/shadow; "
       "printf 'root secret' > $O/" LAUNCH "/1/main.out; "
       "cp $O/shadow $O/1; cp $O/shadow $O/main.out");
}

static void host_hash(unsigned char md[32])
{
    char cmd[256], line[512];
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    unsigned int len = 0;
    FILE *p;

    snprintf(cmd, sizeof(cmd),
             "cd %s && find . -printf '%%p %%y %%m %%U %%G %%s\\n' | sort && "
             "find . -type f -exec sha256sum {} + | sort",
             host);
    cr_assert_not_null(p = popen(cmd, "r"));
    EVP_DigestInit_ex(ctx, EVP_sha256(), NULL);
    while (fgets(line, sizeof(line), p))
        EVP_DigestUpdate(ctx, line, strlen(line));
    cr_assert_eq(pclose(p), 0);
    EVP_DigestFinal_ex(ctx, md, &len);
    EVP_MD_CTX_free(ctx);
}

static void drop_host(void)
{
    support_rm_tree(host);
}

/* After plant (a shell command) on the staging path: nothing is read
 * through it, the archive is empty with `unsafe` = message (every expected
 * log missing), and the host folder is unchanged. */
static void archive_refused(const char *plant, const char *message)
{
    forge_archive_spec_t spec = spec_of(main_pool, 1);
    unsigned char before[32], after[32];
    forge_archive_t a;
    forge_error_t err = {0};

    make_host();
    sh("%s", plant);
    host_hash(before);
    cr_assert_eq(forge_archive_logs(cfg, &spec, FORGE_FS_KEEP, &a, &err),
                 FORGE_OK, "%s: %s", plant, err.message);
    cr_assert_str_eq(a.unsafe, message);
    cr_assert_eq(a.file_count, 0);
    cr_assert_eq(a.missing_count, 2);
    cr_assert_null(a.tail_name);
    host_hash(after);
    cr_assert_arr_eq(before, after, 32, "%s: the host folder changed", plant);
    forge_archive_clear(&a);
    drop_host();
}

Test(archive, staging_linked_to_a_host_folder_is_refused)
{
    archive_refused("ln -s $O $R/staging", "staging is a symbolic link");
    cr_assert_eq(access(root, F_OK), 0);
}

Test(archive, launch_folder_linked_to_a_host_folder_is_refused)
{
    /* Seen: a root-only file of the host folder archived world-readable. */
    archive_refused("mkdir $R/staging; ln -s $O $R/staging/" LAUNCH,
                    "staging/" LAUNCH " is a symbolic link");
}

Test(archive, staging_folder_linked_is_refused)
{
    archive_refused("mkdir -p $R/staging/" LAUNCH "; "
                    "ln -s $O/" LAUNCH "/1 $R/staging/" LAUNCH "/1",
                    "staging/" LAUNCH "/1 is a symbolic link");
}

/* After plant (a shell command) in the artifacts area, where nothing of a
 * job's belongs: the planted entry is removed (never followed) and the
 * archive written in a folder of the worker's; the host folder unchanged. */
static void archive_replaces(const char *plant)
{
    forge_archive_spec_t spec = spec_of(main_pool, 1);
    unsigned char before[32], after[32];
    char real[PATH_MAX], want[PATH_MAX];
    forge_archive_t a;
    forge_error_t err = {0};
    struct stat st;

    make_host();
    make_dir(NULL);
    put_text("main.out", "mine\n");
    sh("%s", plant);
    host_hash(before);
    cr_assert_eq(forge_archive_logs(cfg, &spec, FORGE_FS_KEEP, &a, &err),
                 FORGE_OK, "%s: %s", plant, err.message);
    snprintf(want, sizeof(want), "%s/artifacts/" LAUNCH "/1/logs.tar.gz", root);
    cr_assert_not_null(realpath(a.path, real));
    cr_assert_str_eq(real, want, "%s: the archive is not where it says", plant);
    cr_assert_eq(lstat(a.path, &st), 0);
    cr_assert(S_ISREG(st.st_mode) && st.st_nlink == 1 && st.st_uid == 0,
              "%s: the archive in place is not the worker's", plant);
    host_hash(after);
    cr_assert_arr_eq(before, after, 32, "%s: the host folder changed", plant);
    forge_archive_clear(&a);
    drop_host();
    sh("rm -rf $R/artifacts $R/staging");
}

Test(archive, links_planted_in_artifacts_are_removed_never_followed)
{
    /* Seen: the archive written outside the storage root. */
    archive_replaces("ln -s $O $R/artifacts");
    archive_replaces("mkdir $R/artifacts; ln -s $O $R/artifacts/" LAUNCH);
    archive_replaces("mkdir -p $R/artifacts/" LAUNCH "; "
                     "ln -s $O $R/artifacts/" LAUNCH "/1");
    archive_replaces("mkdir -p $R/artifacts/" LAUNCH "/1; "
                     "ln -s $O/shadow $R/artifacts/" LAUNCH "/1/logs.tar.gz");
}

/* An archive in place that is not the worker's own single-link file (a
 * hard link to a root file, a job's file) is never read nor kept. */
Test(archive, an_archive_in_place_must_be_the_workers_own)
{
    archive_replaces("mkdir -p $R/artifacts/" LAUNCH "/1; "
                     "ln $O/shadow $R/artifacts/" LAUNCH "/1/logs.tar.gz");
    archive_replaces("mkdir -p $R/artifacts/" LAUNCH "/1; "
                     "printf fake > $R/artifacts/" LAUNCH "/1/logs.tar.gz; "
                     "chown 2001 $R/artifacts/" LAUNCH "/1/logs.tar.gz");
}

Test(archive, hard_links_are_refused_not_archived_nor_tailed)
{
    forge_archive_t a;
    entry_t e[4];
    size_t n;

    make_host();
    make_dir(NULL);
    put_text("notes.txt", "mine\n");
    sh("ln $O/shadow $R/staging/" LAUNCH "/1/main.out; "
       "ln $O/1 $R/staging/" LAUNCH "/1/other.log");
    archive_main(&a);
    cr_assert_eq(a.file_count, 1);
    cr_assert_str_eq(a.files[0].name, "notes.txt");
    cr_assert_eq(a.refused_count, 2);
    cr_assert_str_eq(a.refused[0], "main.out");
    cr_assert_str_eq(a.refused[1], "other.log");
    cr_assert_str_eq(a.missing[0], "main.out");
    cr_assert_null(a.tail_name, "the tail read a hard link");
    n = read_back(a.path, e, 4);
    for (size_t i = 0; i < n; i++)
        cr_assert_null(memmem(e[i].data, e[i].len, "root secret", 11));
    entries_free(e, n);
    forge_archive_clear(&a);
    drop_host();
}

Test(archive, target_owners_and_modes)
{
    forge_archive_spec_t spec = spec_of(main_pool, 1);
    forge_fs_owner_t job = {2001, 2002};
    static const struct {
        const char *rel;
        gid_t gid;
        mode_t mode;
    } want[] = {
        {"artifacts", 0, 0711},
        {"artifacts/" LAUNCH, 0, 0711},
        {"artifacts/" LAUNCH "/1", 2002, 0750},
        {"artifacts/" LAUNCH "/1/logs.tar.gz", 2002, 0640},
    };
    forge_archive_t a;
    forge_error_t err = {0};

    /* An old deployment's artifacts/, the storage owner's and open. */
    sh("mkdir -m 777 $R/artifacts; chown 2001:2001 $R/artifacts");
    make_dir(NULL);
    put_text("main.out", "ok\n");
    cr_assert_eq(forge_archive_logs(cfg, &spec, job, &a, &err), FORGE_OK, "%s",
                 err.message);
    for (size_t i = 0; i < 4; i++) {
        char path[256];
        struct stat st;
        snprintf(path, sizeof(path), "%s/%s", root, want[i].rel);
        cr_assert_eq(lstat(path, &st), 0, "%s", path);
        cr_assert_eq(st.st_uid, 0u, "%s: uid %u", want[i].rel, st.st_uid);
        cr_assert_eq(st.st_gid, want[i].gid, "%s: gid %u", want[i].rel,
                     st.st_gid);
        cr_assert_eq(st.st_mode & 07777, want[i].mode, "%s: mode %04o",
                     want[i].rel, st.st_mode & 07777);
    }
    forge_archive_clear(&a);
}

/* Every secret the worker knows, not only the launch's own: another
 * launch's token printed by this job is redacted too. */
Test(archive, tail_redacts_every_secret_it_is_given)
{
    static const char *const secrets[] = {SECRET, "other-launch-tok-77aa",
                                          "secret-env-value-31337"};
    forge_archive_spec_t spec = spec_of(main_pool, 1);
    forge_archive_t a;

    make_dir(NULL);
    put_text("main.out", "mine " SECRET "\n"
                         "theirs other-launch-tok-77aa\n"
                         "env API_KEY=secret-env-value-31337 done\n");
    spec.secrets = secrets;
    spec.secret_count = 3;
    archive_ok(&spec, &a);
    cr_assert_str_eq(a.tail_text, "mine [REDACTED]\n"
                                  "theirs [REDACTED]\n"
                                  "env API_KEY=[REDACTED] done\n");
    forge_archive_clear(&a);
}

/* ---- two archivers of one launch at once --------------------------------- */

typedef struct race {
    forge_archive_t a;
    forge_rc_t rc;
} race_t;

static void *archive_thread(void *arg)
{
    race_t *r = arg;
    forge_archive_spec_t spec = spec_of(main_pool, 1);
    forge_error_t err = {0};

    r->rc = forge_archive_logs(cfg, &spec, FORGE_FS_KEEP, &r->a, &err);
    return NULL;
}

/* A partition that moved while its archive ran: the old and the new owner
 * write the same archive at once. Neither may corrupt the other's. */
Test(archive, two_archivers_at_once_leave_a_whole_archive, .timeout = 60)
{
    size_t len;
    char *text = training_log(8 * 1024 * 1024, &len);
    race_t r[2] = {0};
    pthread_t t[2];
    char hex[65];

    make_dir(NULL);
    put("main.out", text, len);
    for (int i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, archive_thread, &r[i]);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    cr_assert_eq(r[0].rc, FORGE_OK);
    cr_assert_eq(r[1].rc, FORGE_OK);
    cr_assert_str_eq(r[0].a.sha256, r[1].a.sha256);
    sha256_file(r[0].a.path, hex);
    cr_assert_str_eq(hex, r[0].a.sha256);
    assert_no_leftovers(&r[0].a);
    free(text);
    forge_archive_clear(&r[0].a);
    forge_archive_clear(&r[1].a);
}

/* ---- forge_archive_tail_text --------------------------------------------- */

/* Arrays, not pointers: Criterion hands the parameters to a new process. */
typedef struct tail_case {
    char name[40];
    char text[40];
    size_t len;
    bool from_start;
    bool has_secret;
    char secret[16];
    char expect[48];
} tail_case_t;

#define T(s) s, sizeof(s) - 1
/* One secret, as forge_archive_tail_text takes a list. */
#define ONE(s) (const char *const[]){s}, 1
#define FFFD   "\xEF\xBF\xBD"

/* name, text, from_start, has_secret, secret, expect */
static tail_case_t tail_cases[] = {
    {"whole", T("hello\nworld\n"), true, false, "", "hello\nworld\n"},
    {"cut at the first line start", T("llo\nworld\n"), false, false, "",
     "world\n"},
    {"no line start: kept", T("no newline here"), false, false, "",
     "no newline here"},
    {"only a final newline", T("abc\n"), false, false, "", "abc\n"},
    {"continuation bytes skipped", T("\xA9\xA9rest"), false, false, "", "rest"},
    {"two-byte char", T("caf\xC3\xA9\n"), true, false, "", "caf\xC3\xA9\n"},
    {"four-byte char", T("\xF0\x9F\x98\x80!"), true, false, "",
     "\xF0\x9F\x98\x80!"},
    {"invalid byte", T("x\xFFy"), true, false, "", "x" FFFD "y"},
    {"NUL", T("x\0y"), true, false, "", "x" FFFD "y"},
    {"overlong", T("\xC0\xAF/"), true, false, "", FFFD FFFD "/"},
    {"overlong 3", T("\xE0\x80\xAF."), true, false, "", FFFD FFFD FFFD "."},
    {"surrogate", T("\xED\xA0\x80."), true, false, "", FFFD FFFD FFFD "."},
    {"beyond U+10FFFF", T("\xF4\x90\x80\x80."), true, false, "",
     FFFD FFFD FFFD FFFD "."},
    {"F5 lead", T("\xF5\x80\x80\x80."), true, false, "",
     FFFD FFFD FFFD FFFD "."},
    {"cut short at the end", T("ab\xE2\x82"), true, false, "", "ab" FFFD FFFD},
    {"secret twice", T("a tok123 b tok123"), true, true, "tok123",
     "a [REDACTED] b [REDACTED]"},
    {"secret at the end", T("key=tok123"), true, true, "tok123",
     "key=[REDACTED]"},
    {"no secret", T("a tok123"), true, false, "", "a tok123"},
    {"empty secret", T("a tok123"), true, true, "", "a tok123"},
    {"empty", T(""), true, false, "", ""},
    {"secret overlapping itself", T("x aaaaa y"), true, true, "aaaa",
     "x [REDACTED] y"},
    {"adjacent: one each", T("tok123tok123"), true, true, "tok123",
     "[REDACTED][REDACTED]"},
    {"empty, cut", T(""), false, true, "tok123", ""},
};

ParameterizedTestParameters(archive, tail_text)
{
    return cr_make_param_array(tail_case_t, tail_cases,
                               sizeof(tail_cases) / sizeof(tail_cases[0]));
}

ParameterizedTest(tail_case_t *c, archive, tail_text)
{
    const char *secret = c->secret;
    char *t = forge_archive_tail_text(c->text, c->len, c->from_start,
                                      c->has_secret ? &secret : NULL,
                                      c->has_secret ? 1 : 0);

    cr_assert_str_eq(t, c->expect, "%s", c->name);
    cr_assert(json_ok(t), "%s: not valid UTF-8", c->name);
    free(t);
}

static char *filled(size_t n, char c)
{
    char *s = malloc(n + 1);

    memset(s, c, n);
    s[n] = '\0';
    return s;
}

Test(archive, tail_text_keeps_the_last_4_kib)
{
    char *text = filled(5000, 'x'), *t;

    t = forge_archive_tail_text(text, 5000, true, NULL, 0);
    cr_assert_eq(strlen(t), FORGE_ARCHIVE_TAIL_MAX);
    free(t);
    text[500] = '\n'; /* outside the last 4 KiB: no line start in it */
    t = forge_archive_tail_text(text, 5000, false, NULL, 0);
    cr_assert_eq(strlen(t), FORGE_ARCHIVE_TAIL_MAX);
    free(t);
    text[2000] = '\n'; /* inside: the tail starts after it */
    t = forge_archive_tail_text(text, 5000, false, NULL, 0);
    cr_assert_eq(strlen(t), 2999);
    free(t);
    free(text);
}

Test(archive, tail_text_window_already_at_a_line_start)
{
    char *text = filled(5000, 'x'), *t;

    text[5000 - FORGE_ARCHIVE_TAIL_MAX - 1] = '\n';
    text[3000] = '\n';
    t = forge_archive_tail_text(text, 5000, false, NULL, 0);
    cr_assert_eq(strlen(t), FORGE_ARCHIVE_TAIL_MAX, "a whole line was lost");
    free(t);
    free(text);
}

/* Replacements are longer than what they replace: still at most 4 KiB. */
Test(archive, tail_text_never_grows_past_4_kib)
{
    char *bad = filled(FORGE_ARCHIVE_TAIL_MAX, '\xFF');
    char *secrets = malloc(FORGE_ARCHIVE_TAIL_MAX + 1), *t;

    t = forge_archive_tail_text(bad, FORGE_ARCHIVE_TAIL_MAX, true, NULL, 0);
    cr_assert_leq(strlen(t), FORGE_ARCHIVE_TAIL_MAX);
    cr_assert_geq(strlen(t), FORGE_ARCHIVE_TAIL_MAX - 3);
    cr_assert(json_ok(t));
    free(t);
    for (size_t i = 0; i < FORGE_ARCHIVE_TAIL_MAX; i += 4)
        memcpy(secrets + i, i % 64 == 60 ? "abc\n" : "abcd", 4);
    t = forge_archive_tail_text(secrets, FORGE_ARCHIVE_TAIL_MAX, true,
                                ONE("abcd"));
    cr_assert_leq(strlen(t), FORGE_ARCHIVE_TAIL_MAX);
    cr_assert_null(strstr(t, "abcd"));
    cr_assert_eq(strncmp(t, "[REDACTED]", 10), 0, "not at a line start: %.20s",
                 t);
    free(t);
    free(secrets);
    free(bad);
}

/* A cut through the secret, at either end, leaks none of it. */
Test(archive, tail_text_never_shows_part_of_the_secret)
{
    size_t n = 6000, at = n - FORGE_ARCHIVE_TAIL_MAX - 10;
    char *text = filled(n, 'x'), *t;

    memcpy(text + at, SECRET, strlen(SECRET)); /* straddles the cut */
    t = forge_archive_tail_text(text, n, false, ONE(SECRET));
    cr_assert_null(strstr(t, SECRET + 10), "%.60s", t);
    cr_assert_null(strstr(t, SECRET + strlen(SECRET) - 8), "%.60s", t);
    free(t);
    memcpy(text + n - 20, SECRET, 20); /* the log ends inside it */
    t = forge_archive_tail_text(text, n, false, ONE(SECRET));
    cr_assert_null(strstr(t, "ingest-tok-6f1d2c3b"));
    free(t);
    free(text);
}

/* ---- several secrets ----------------------------------------------------- */

Test(archive, tail_text_with_several_secrets)
{
    static const char *const secrets[] = {"alpha-secret", NULL, "",
                                          "beta-secret", "gamma-secret"};
    static const char text[] = "a alpha-secret b beta-secret c alpha-secret\n"
                               "no secret here\n"
                               "gamma-secretbeta-secret\n";
    char *t = forge_archive_tail_text(text, sizeof(text) - 1, true, secrets, 5);

    cr_assert_str_eq(t, "a [REDACTED] b [REDACTED] c [REDACTED]\n"
                        "no secret here\n"
                        "[REDACTED][REDACTED]\n");
    free(t);
}

/* Two secrets sharing bytes ("...defg" and "defg...") leave nothing of
 * either: one [REDACTED] over both. */
Test(archive, tail_text_overlapping_secrets_leave_no_fragment)
{
    static const char *const secrets[] = {"abcdefg", "defghijk"};
    static const char text[] = "x abcdefghijk y";
    char *t = forge_archive_tail_text(text, sizeof(text) - 1, true, secrets, 2);

    cr_assert_str_eq(t, "x [REDACTED] y");
    free(t);
}

/* The window cuts one secret at its head and the log ends inside another:
 * neither shows, and a third, whole inside, is replaced too. */
Test(archive, tail_text_secrets_cut_at_both_edges)
{
    static const char *const secrets[] = {"head-secret-0123456789abcdef",
                                          "foot-secret-fedcba9876543210",
                                          "middle-secret-55aa"};
    size_t n = 6000, at = n - FORGE_ARCHIVE_TAIL_MAX - 10;
    char *text = filled(n, 'x'), *t;

    memcpy(text + at, secrets[0], strlen(secrets[0])); /* straddles the cut */
    memcpy(text + 3000, secrets[2], strlen(secrets[2]));
    memcpy(text + n - 15, secrets[1], 15); /* the log ends inside it */
    t = forge_archive_tail_text(text, n, false, secrets, 3);
    cr_assert_eq(strncmp(t, "[REDACTED]", 10), 0, "%.40s", t);
    cr_assert_null(strstr(t, "0123456789abcdef" + 6), "%.60s", t);
    cr_assert_null(strstr(t, "middle"), "whole inside");
    cr_assert_null(strstr(t, "foot-sec"), "cut at the foot");
    cr_assert(strlen(t) > 10 && !strcmp(t + strlen(t) - 10, "[REDACTED]"), "%s",
              t + strlen(t) - 20);
    free(t);
    free(text);
}

/* The same cuts with the secrets only registered (secrets.h), among
 * 100,000 others, as a worker holding 100,000 launches has them: none is
 * listed in the call, none shows; and a text that merely shares a few
 * bytes with them (shorter than a cut's least part) is left alone. */
Test(archive, tail_text_hides_registered_secrets_cut_at_both_edges,
     .timeout = 60)
{
    static const char *const secrets[] = {"head-secret-0123456789abcdef",
                                          "foot-secret-fedcba9876543210",
                                          "middle-secret-55aa"};
    size_t n = 6000, at = n - FORGE_ARCHIVE_TAIL_MAX - 10;
    char *text = filled(n, 'x'), *t, other[48];

    for (int i = 0; i < 100000; i++) {
        snprintf(other, sizeof(other), "other-launch-token-%06d-zz", i);
        cr_assert_eq(forge_secret_add(other), FORGE_OK);
    }
    for (size_t i = 0; i < 3; i++)
        cr_assert_eq(forge_secret_add(secrets[i]), FORGE_OK);
    memcpy(text + at, secrets[0], strlen(secrets[0])); /* straddles the cut */
    memcpy(text + 3000, secrets[2], strlen(secrets[2]));
    memcpy(text + 4000, "other-launch-token-004242-zz", 28);
    memcpy(text + 4500, "foot", 4); /* a secret's first 4 bytes: chance */
    memcpy(text + n - 15, secrets[1], 15); /* the log ends inside it */
    t = forge_archive_tail_text(text, n, false, NULL, 0);
    cr_assert_eq(strncmp(t, "[REDACTED]", 10), 0, "%.40s", t);
    cr_assert_null(strstr(t, "0123456789abcdef" + 6), "%.60s", t);
    cr_assert_null(strstr(t, "middle"), "whole inside");
    cr_assert_null(strstr(t, "004242"), "another launch's token");
    cr_assert_not_null(strstr(t, "xfootx"), "four bytes are no secret");
    cr_assert_null(strstr(t, "foot-sec"), "cut at the foot");
    cr_assert(strlen(t) > 10 && !strcmp(t + strlen(t) - 10, "[REDACTED]"), "%s",
              t + strlen(t) - 20);
    free(t);
    forge_secrets_reset();
    t = forge_archive_tail_text(text, n, false, NULL, 0);
    cr_assert_not_null(strstr(t, "middle-secret-55aa"), "none registered");
    free(t);
    free(text);
}
