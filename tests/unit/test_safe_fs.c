/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_safe_fs.c - src/fs/safe_fs.c against real folders, every case
 * twice: suite safe_fs2 through openat2 (where the kernel has it), suite
 * safe_fs_walk through the component walk (forced). Planted links in the
 * last and a middle component, links to "/" and "..", dangling links,
 * FIFOs and hard links where a file is expected, and trees holding links to
 * outside root-only files removed with their targets untouched (hashed
 * before and after). Runs as root, so owners are real.
 */
#include "fs/safe_fs.h"

#include "support_storage.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <sys/syscall.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

static char root[64], outside[64];
static int rootfd = -1;

static void sh(const char *fmt, ...) FORGE_PRINTF(1, 2);

/* A shell command with $R (root) and $O (outside) set. */
static void sh(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    support_vsh(root, outside, fmt, ap);
    va_end(ap);
}

static void fx_init(void)
{
    snprintf(root, sizeof(root), "/tmp/forge-safefs-XXXXXX");
    snprintf(outside, sizeof(outside), "/tmp/forge-outside-XXXXXX");
    cr_assert_not_null(mkdtemp(root));
    cr_assert_not_null(mkdtemp(outside));
    /* What a job must never reach: a root-only file and folder. */
    sh("printf 'root secret' > $O/secret; chmod 600 $O/secret; "
       "mkdir -m 700 $O/private; printf x > $O/private/file");
    rootfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    cr_assert_geq(rootfd, 0);
}

static void fx_walk_init(void)
{
    forge_fs_force_fallback(true);
    fx_init();
}

static void fx_fini(void)
{
    close(rootfd);
    support_rm_tree(root);
    support_rm_tree(outside);
}

TestSuite(safe_fs2, .init = fx_init, .fini = fx_fini);
TestSuite(safe_fs_walk, .init = fx_walk_init, .fini = fx_fini);

/* Each case in both suites. */
#define BOTH(name)                                                             \
    static void name(void);                                                    \
    Test(safe_fs2, name)                                                       \
    {                                                                          \
        name();                                                                \
    }                                                                          \
    Test(safe_fs_walk, name)                                                   \
    {                                                                          \
        name();                                                                \
    }                                                                          \
    static void name(void)

/* ---- helpers ------------------------------------------------------------- */

/* A fingerprint of everything under outside: names, modes, owners, sizes
 * and the SHA-256 of file contents (not link counts: removing a planted
 * hard link lowers its target's, and that is all it does). */
static void fingerprint(const char *dir, EVP_MD_CTX *ctx)
{
    DIR *d = opendir(dir);
    struct dirent *de;

    cr_assert_not_null(d, "%s", dir);
    while ((de = readdir(d))) {
        char path[512], line[700];
        struct stat st;
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
            continue;
        snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
        cr_assert_eq(lstat(path, &st), 0);
        snprintf(line, sizeof(line), "%s %o %u %u %lld\n", path, st.st_mode,
                 st.st_uid, st.st_gid, (long long)st.st_size);
        EVP_DigestUpdate(ctx, line, strlen(line));
        if (S_ISDIR(st.st_mode)) {
            fingerprint(path, ctx);
        } else if (S_ISREG(st.st_mode)) {
            char buf[4096];
            ssize_t n;
            int fd = open(path, O_RDONLY);
            cr_assert_geq(fd, 0);
            while ((n = read(fd, buf, sizeof(buf))) > 0)
                EVP_DigestUpdate(ctx, buf, (size_t)n);
            close(fd);
        }
    }
    closedir(d);
}

static void outside_hash(unsigned char md[32])
{
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    unsigned int len = 0;
    struct stat st;

    EVP_DigestInit_ex(ctx, EVP_sha256(), NULL);
    cr_assert_eq(stat(outside, &st), 0);
    EVP_DigestUpdate(ctx, &st.st_mode, sizeof(st.st_mode));
    EVP_DigestUpdate(ctx, &st.st_uid, sizeof(st.st_uid));
    fingerprint(outside, ctx);
    EVP_DigestFinal_ex(ctx, md, &len);
    EVP_MD_CTX_free(ctx);
}

static forge_rc_t try_open(const char *rel, int flags, int *fd,
                           forge_error_t *err)
{
    return forge_fs_open(rootfd, "", rel, flags, 0, fd, NULL, err);
}

static void refused(const char *rel, int flags, const char *message)
{
    forge_error_t err = {0};
    int fd = 99;

    cr_assert_eq(try_open(rel, flags, &fd, &err), FORGE_EUNSAFE_PATH, "%s: %s",
                 rel, err.message);
    cr_assert_eq(fd, -1);
    cr_assert_str_eq(err.message, message);
    cr_assert_str_eq(forge_rc_name(err.code), "unsafe_storage");
}

static bool exists(const char *rel)
{
    char path[256];
    struct stat st;

    snprintf(path, sizeof(path), "%s/%s", root, rel);
    return lstat(path, &st) == 0;
}

static struct stat stat_of(const char *rel)
{
    char path[256];
    struct stat st;

    snprintf(path, sizeof(path), "%s/%s", root, rel);
    cr_assert_eq(lstat(path, &st), 0, "%s", path);
    return st;
}

/* ---- which way ----------------------------------------------------------- */

Test(safe_fs2, uses_openat2)
{
    forge_error_t err = {0};
    int fd;

    sh("touch $R/f");
    cr_assert_eq(try_open("f", O_RDONLY, &fd, &err), FORGE_OK);
    close(fd);
    if (syscall(SYS_openat2, -1, "", NULL, 0) < 0 && errno == ENOSYS)
        cr_skip_test("this kernel has no openat2: the walk serves both");
    cr_assert(forge_fs_have_openat2());
}

Test(safe_fs_walk, uses_the_walk)
{
    forge_error_t err = {0};
    int fd;

    sh("touch $R/f");
    cr_assert_eq(try_open("f", O_RDONLY, &fd, &err), FORGE_OK);
    close(fd);
    cr_assert_not(forge_fs_have_openat2());
}

/* ---- open ---------------------------------------------------------------- */

BOTH(opens_a_plain_path)
{
    forge_error_t err = {0};
    struct stat st;
    char buf[8] = "";
    int fd;

    sh("mkdir -p $R/a/b; printf hi > $R/a/b/f");
    cr_assert_eq(
        forge_fs_open(rootfd, "", "a/b/f", O_RDONLY, 0, &fd, &st, &err),
        FORGE_OK, "%s", err.message);
    cr_assert_eq(read(fd, buf, sizeof(buf)), 2);
    cr_assert_str_eq(buf, "hi");
    cr_assert(S_ISREG(st.st_mode));
    close(fd);
}

BOTH(missing_is_no_fd_and_no_error)
{
    forge_error_t err = {0};
    int fd = 99;

    sh("mkdir -p $R/a");
    cr_assert_eq(try_open("a/nothing", O_RDONLY, &fd, &err), FORGE_OK);
    cr_assert_eq(fd, -1);
    cr_assert_eq(try_open("nothing/at/all", O_RDONLY, &fd, &err), FORGE_OK);
    cr_assert_eq(fd, -1);
}

BOTH(link_as_last_component)
{
    sh("mkdir -p $R/staging/x; ln -s $O/secret $R/staging/x/1");
    refused("staging/x/1", O_RDONLY, "staging/x/1 is a symbolic link");
    refused("staging/x/1", O_PATH, "staging/x/1 is a symbolic link");
    refused("staging/x/1", O_RDONLY | O_DIRECTORY,
            "staging/x/1 is a symbolic link");
}

BOTH(link_in_a_middle_component)
{
    sh("mkdir -p $R/staging; ln -s $O $R/staging/x");
    refused("staging/x/secret", O_RDONLY, "staging/x is a symbolic link");
    refused("staging/x/private/file", O_RDONLY, "staging/x is a symbolic link");
}

BOTH(link_to_slash)
{
    sh("ln -s / $R/x");
    refused("x", O_PATH, "x is a symbolic link");
    refused("x/etc/passwd", O_RDONLY, "x is a symbolic link");
}

BOTH(link_to_dotdot)
{
    sh("mkdir $R/a; ln -s .. $R/a/up");
    refused("a/up", O_PATH, "a/up is a symbolic link");
    refused("a/up/a", O_PATH, "a/up is a symbolic link");
}

BOTH(dangling_link)
{
    sh("ln -s $R/not-yet $R/d");
    refused("d", O_RDONLY, "d is a symbolic link");
    refused("d", O_WRONLY | O_CREAT, "d is a symbolic link");
    cr_assert_not(exists("not-yet"), "created through a dangling link");
}

BOTH(file_in_a_middle_component)
{
    sh("touch $R/f");
    refused("f/x", O_RDONLY, "f is not a directory");
}

BOTH(dotdot_dot_empty_and_absolute_are_invalid)
{
    const char *bad[] = {"..",  "a/..", "../x", "a/../b", ".", "./a",
                         "a/.", "a//b", "a/",   "/etc",   "",  "//x"};
    sh("mkdir $R/a");

    for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
        forge_error_t err = {0};
        int fd = 99;
        cr_assert_eq(try_open(bad[i], O_RDONLY, &fd, &err), FORGE_EINVAL,
                     "\"%s\" accepted", bad[i]);
        cr_assert_eq(fd, -1);
    }
}

BOTH(fifo_where_a_file_is_expected)
{
    forge_error_t err = {0};
    int fd = 99;

    sh("mkfifo $R/main.out");
    /* Returns at once (no writer needed), refused. */
    cr_assert_eq(
        forge_fs_open_file(rootfd, "staging/x/1", "main.out", &fd, NULL, &err),
        FORGE_EUNSAFE_PATH);
    cr_assert_eq(fd, -1);
    cr_assert_str_eq(err.message, "staging/x/1/main.out is not a regular file");
}

BOTH(hard_link_where_a_file_is_expected)
{
    forge_error_t err = {0};
    int fd = 99;

    sh("ln $O/secret $R/main.out");
    cr_assert_eq(forge_fs_open_file(rootfd, "", "main.out", &fd, NULL, &err),
                 FORGE_EUNSAFE_PATH);
    cr_assert_eq(fd, -1);
    cr_assert_str_eq(err.message, "main.out has more than one hard link");
}

BOTH(open_file_reads_a_regular_file)
{
    forge_error_t err = {0};
    struct stat st;
    int fd;

    sh("printf abc > $R/main.out");
    cr_assert_eq(forge_fs_open_file(rootfd, "", "main.out", &fd, &st, &err),
                 FORGE_OK);
    cr_assert_geq(fd, 0);
    cr_assert_eq(st.st_size, 3);
    close(fd);
}

BOTH(root_that_is_a_link_is_refused)
{
    forge_error_t err = {0};
    char path[128];
    int fd;

    snprintf(path, sizeof(path), "%s/storage", root);
    sh("ln -s $O $R/storage");
    cr_assert_eq(forge_fs_open_root(path, &fd, &err), FORGE_EUNSAFE_PATH);
    cr_assert(strstr(err.message, "is a symbolic link"), "%s", err.message);
    cr_assert_eq(forge_fs_open_root(root, &fd, NULL), FORGE_OK);
    close(fd);
}

/* ---- resolve ------------------------------------------------------------- */

BOTH(resolve_existing_and_missing_tails)
{
    forge_fs_resolved_t r;
    forge_error_t err = {0};

    sh("mkdir -p $R/data/sets; touch $R/data/sets/f");
    cr_assert_eq(forge_fs_resolve(rootfd, "", "data/sets/f", NULL, &r, &err),
                 FORGE_OK);
    cr_assert(r.exists);
    cr_assert_eq(r.depth, 3u);
    cr_assert(S_ISREG(r.st.st_mode));
    close(r.fd);
    cr_assert_eq(
        forge_fs_resolve(rootfd, "", "data/new/deeper", NULL, &r, &err),
        FORGE_OK);
    cr_assert_not(r.exists);
    cr_assert_eq(r.depth, 1u);
    cr_assert_eq(r.st.st_ino, stat_of("data").st_ino);
    close(r.fd);
    cr_assert_eq(forge_fs_resolve(rootfd, "", "", NULL, &r, &err), FORGE_OK);
    cr_assert(r.exists);
    cr_assert_eq(r.depth, 0u);
    close(r.fd);
}

BOTH(resolve_with_the_roots_fstat_opens_nothing_for_it)
{
    forge_fs_resolved_t r;
    forge_error_t err = {0};
    struct stat root_st;

    sh("mkdir -p $R/data");
    cr_assert_eq(fstat(rootfd, &root_st), 0);
    root_st.st_nlink = 4242; /* what the caller gave is what comes back */
    cr_assert_eq(forge_fs_resolve(rootfd, "", "new/deeper", &root_st, &r, &err),
                 FORGE_OK);
    cr_assert_not(r.exists);
    cr_assert_eq(r.depth, 0u);
    cr_assert_eq(r.fd, -1);
    cr_assert_eq(r.st.st_nlink, 4242);
    cr_assert_eq(forge_fs_resolve(rootfd, "", "", &root_st, &r, &err),
                 FORGE_OK);
    cr_assert(r.exists);
    cr_assert_eq(r.fd, -1);
    /* something exists: opened as without it */
    cr_assert_eq(forge_fs_resolve(rootfd, "", "data/x", &root_st, &r, &err),
                 FORGE_OK);
    cr_assert_eq(r.depth, 1u);
    cr_assert_geq(r.fd, 0);
    cr_assert_eq(r.st.st_ino, stat_of("data").st_ino);
    close(r.fd);
}

BOTH(resolve_refuses_links_on_the_way)
{
    forge_fs_resolved_t r;
    forge_error_t err = {0};

    sh("mkdir -p $R/data; ln -s / $R/data/root; ln -s .. $R/data/up; "
       "touch $R/data/f");
    cr_assert_eq(forge_fs_resolve(rootfd, "", "data/root/etc", NULL, &r, &err),
                 FORGE_EUNSAFE_PATH);
    cr_assert_str_eq(err.message, "data/root is a symbolic link");
    cr_assert_eq(r.fd, -1);
    forge_error_clear(&err);
    cr_assert_eq(forge_fs_resolve(rootfd, "", "data/up", NULL, &r, &err),
                 FORGE_EUNSAFE_PATH);
    forge_error_clear(&err);
    cr_assert_eq(forge_fs_resolve(rootfd, "", "data/f/x", NULL, &r, &err),
                 FORGE_EUNSAFE_PATH);
    cr_assert_str_eq(err.message, "data/f is not a directory");
}

/* ---- mkdirs -------------------------------------------------------------- */

static const forge_fs_level_t staging_levels[] = {
    {0711, {(uid_t)-1, (gid_t)-1}, FORGE_FS_REPAIR},
    {0711, {(uid_t)-1, (gid_t)-1}, FORGE_FS_REPAIR},
    {0700, {2001, 2001}, FORGE_FS_OWNER_OR_US},
};

static forge_rc_t mk(const char *rel, int *fd, forge_error_t *err)
{
    return forge_fs_mkdirs(rootfd, "", rel, staging_levels, 3, fd, err);
}

BOTH(mkdirs_sets_owner_and_mode_per_level)
{
    forge_error_t err = {0};
    struct stat st;
    int fd;

    cr_assert_eq(mk("staging/x/1", &fd, &err), FORGE_OK, "%s", err.message);
    cr_assert_eq(fstat(fd, &st), 0);
    close(fd);
    cr_assert_eq(st.st_uid, 2001u);
    cr_assert_eq(st.st_mode & 07777, 0700u);
    st = stat_of("staging");
    cr_assert_eq(st.st_uid, 0u);
    cr_assert_eq(st.st_mode & 07777, 0711u);
    st = stat_of("staging/x");
    cr_assert_eq(st.st_mode & 07777, 0711u);
    /* Again: a retry finds it all and accepts it. */
    cr_assert_eq(mk("staging/x/1", &fd, &err), FORGE_OK, "%s", err.message);
    close(fd);
}

BOTH(mkdirs_repairs_the_workers_own_folders)
{
    forge_error_t err = {0};
    struct stat st;
    int fd;

    sh("mkdir -m 777 $R/staging; chown 2001:2001 $R/staging");
    cr_assert_eq(mk("staging/x/1", &fd, &err), FORGE_OK, "%s", err.message);
    close(fd);
    st = stat_of("staging");
    cr_assert_eq(st.st_uid, 0u);
    cr_assert_eq(st.st_mode & 07777, 0711u);
}

BOTH(mkdirs_refuses_a_job_folder_of_another_user)
{
    forge_error_t err = {0};
    int fd = 99;

    sh("mkdir -p $R/staging/x/1; chown 3003 $R/staging/x/1");
    cr_assert_eq(mk("staging/x/1", &fd, &err), FORGE_EUNSAFE_PATH);
    cr_assert_eq(fd, -1);
    cr_assert_str_eq(err.message,
                     "staging/x/1 is owned by uid 3003, not uid 2001");
    cr_assert_eq(stat_of("staging/x/1").st_uid, 3003u, "it was changed");
}

BOTH(mkdirs_refuses_links_at_every_level)
{
    const char *plant[] = {
        "ln -s $O $R/staging",
        "mkdir $R/staging; ln -s $O $R/staging/x",
        "mkdir -p $R/staging/x; ln -s $O/private $R/staging/x/1",
        "mkdir -p $R/staging/x; ln -s $R/nothing $R/staging/x/1",
    };
    const char *said[] = {
        "staging is a symbolic link",
        "staging/x is a symbolic link",
        "staging/x/1 is a symbolic link",
        "staging/x/1 is a symbolic link",
    };

    for (size_t i = 0; i < 4; i++) {
        unsigned char before[32], after[32];
        forge_error_t err = {0};
        int fd = 99;
        sh("rm -rf $R/staging $R/nothing");
        sh("%s", plant[i]);
        outside_hash(before);
        cr_assert_eq(mk("staging/x/1", &fd, &err), FORGE_EUNSAFE_PATH, "%s: %s",
                     plant[i], err.message);
        cr_assert_str_eq(err.message, said[i]);
        cr_assert_eq(fd, -1);
        outside_hash(after);
        cr_assert_arr_eq(before, after, 32, "%s: outside changed", plant[i]);
        cr_assert_not(exists("nothing"));
    }
}

/* FORGE_FS_REPLACE (the artifacts area): a link or file planted where a
 * folder of the worker's belongs is unlinked, never followed, and the
 * folder made; outside stays as it was. */
BOTH(mkdirs_replace_removes_what_was_planted)
{
    static const forge_fs_level_t levels[] = {
        {0711, {(uid_t)-1, (gid_t)-1}, FORGE_FS_REPLACE},
    };
    const char *plant[] = {
        "ln -s $O $R/artifacts",
        "mkdir $R/artifacts; ln -s $O/private $R/artifacts/x",
        "mkdir $R/artifacts; touch $R/artifacts/x",
    };

    for (size_t i = 0; i < 3; i++) {
        unsigned char before[32], after[32];
        forge_error_t err = {0};
        struct stat st;
        int fd = -1;
        sh("rm -rf $R/artifacts");
        sh("%s", plant[i]);
        outside_hash(before);
        cr_assert_eq(
            forge_fs_mkdirs(rootfd, "", "artifacts/x", levels, 1, &fd, &err),
            FORGE_OK, "%s: %s", plant[i], err.message);
        cr_assert_eq(fstat(fd, &st), 0);
        close(fd);
        cr_assert(S_ISDIR(st.st_mode) && st.st_uid == 0, "%s", plant[i]);
        cr_assert(S_ISDIR(stat_of("artifacts").st_mode), "%s", plant[i]);
        outside_hash(after);
        cr_assert_arr_eq(before, after, 32, "%s: outside changed", plant[i]);
    }
}

BOTH(mkdirs_refuses_a_file_in_the_way)
{
    forge_error_t err = {0};
    int fd = 99;

    sh("mkdir $R/staging; touch $R/staging/x");
    cr_assert_eq(mk("staging/x/1", &fd, &err), FORGE_EUNSAFE_PATH);
    cr_assert_str_eq(err.message, "staging/x is not a directory");
}

/* ---- writing ------------------------------------------------------------- */

BOTH(write_file_owner_mode_content)
{
    forge_error_t err = {0};
    forge_fs_owner_t o = {2001, 2002};
    char path[128], buf[16] = "";
    struct stat st;
    FILE *f;

    sh("mkdir $R/d");
    int dfd = open(root, O_RDONLY | O_DIRECTORY);
    int sub = openat(dfd, "d", O_RDONLY | O_DIRECTORY);
    cr_assert_eq(
        forge_fs_write_file(sub, "d", "credentials", "tok", 3, 0600, o, &err),
        FORGE_OK, "%s", err.message);
    st = stat_of("d/credentials");
    cr_assert_eq(st.st_uid, 2001u);
    cr_assert_eq(st.st_gid, 2002u);
    cr_assert_eq(st.st_mode & 07777, 0600u);
    snprintf(path, sizeof(path), "%s/d/credentials", root);
    f = fopen(path, "r");
    cr_assert_not_null(fgets(buf, sizeof(buf), f));
    fclose(f);
    cr_assert_str_eq(buf, "tok");
    /* No temporary left. */
    sh("test $(ls -A $R/d | wc -l) = 1");
    close(sub);
    close(dfd);
}

BOTH(write_file_replaces_a_planted_link)
{
    unsigned char before[32], after[32];
    forge_error_t err = {0};

    sh("ln -s $O/secret $R/credentials");
    outside_hash(before);
    cr_assert_eq(forge_fs_write_file(rootfd, "", "credentials", "tok", 3, 0600,
                                     FORGE_FS_KEEP, &err),
                 FORGE_OK, "%s", err.message);
    outside_hash(after);
    cr_assert_arr_eq(before, after, 32);
    cr_assert(S_ISREG(stat_of("credentials").st_mode));
}

BOTH(write_file_over_a_folder_is_refused)
{
    forge_error_t err = {0};

    sh("mkdir -p $R/credentials/x");
    cr_assert_eq(forge_fs_write_file(rootfd, "staging/a/1", "credentials",
                                     "tok", 3, 0600, FORGE_FS_KEEP, &err),
                 FORGE_EUNSAFE_PATH);
    cr_assert_str_eq(err.message, "staging/a/1/credentials is a directory");
    sh("test $(ls -A $R | wc -l) = 1");
}

/* ---- removing ------------------------------------------------------------ */

BOTH(remove_a_tree_with_links_leaves_their_targets)
{
    unsigned char before[32], after[32];
    forge_error_t err = {0};

    sh("mkdir -p $R/t/a/b; printf log > $R/t/main.out; "
       "ln -s $O/secret $R/t/secret; ln -s $O/private $R/t/a/private; "
       "ln -s $O $R/t/a/b/out; ln -s / $R/t/slash; ln -s .. $R/t/up; "
       "ln $O/secret $R/t/a/hard; mkfifo $R/t/fifo; "
       "ln -s $R/gone $R/t/dangling");
    outside_hash(before);
    cr_assert_eq(forge_fs_remove(rootfd, "", "t", &err), FORGE_OK, "%s",
                 err.message);
    outside_hash(after);
    cr_assert_arr_eq(before, after, 32, "outside changed");
    cr_assert_not(exists("t"));
    sh("test -f $O/secret && test -f $O/private/file && test -d /etc");
}

BOTH(remove_the_top_being_a_link_unlinks_only_the_link)
{
    unsigned char before[32], after[32];
    forge_error_t err = {0};

    sh("ln -s $O $R/t");
    outside_hash(before);
    cr_assert_eq(forge_fs_remove(rootfd, "", "t", &err), FORGE_OK);
    outside_hash(after);
    cr_assert_arr_eq(before, after, 32);
    cr_assert_not(exists("t"));
}

BOTH(remove_missing_is_ok)
{
    forge_error_t err = {0};

    cr_assert_eq(forge_fs_remove(rootfd, "", "nothing", &err), FORGE_OK);
    cr_assert_eq(forge_fs_remove(rootfd, "", "../x", &err), FORGE_EINVAL);
}

BOTH(remove_a_very_deep_tree)
{
    forge_error_t err = {0};

    /* Deeper than the descriptors the removal holds at once. */
    sh("cd $R && mkdir t && cd t && for i in $(seq 200); do mkdir d && "
       "touch d/f && ln -s / d/l && cd d; done");
    cr_assert_eq(forge_fs_remove(rootfd, "", "t", &err), FORGE_OK, "%s",
                 err.message);
    cr_assert_not(exists("t"));
}

BOTH(remove_stops_at_another_filesystem)
{
    forge_error_t err = {0};
    char mnt[128];

    sh("mkdir -p $R/t/m");
    snprintf(mnt, sizeof(mnt), "%s/t/m", root);
    if (mount("forge-test", mnt, "tmpfs", 0, "size=64k") != 0)
        cr_skip_test("cannot mount a tmpfs here (%s)", strerror(errno));
    sh("touch $R/t/m/keep");
    forge_rc_t rc = forge_fs_remove(rootfd, "", "t", &err);
    bool kept = exists("t/m/keep");
    umount(mnt); /* before any assertion can end the test */
    cr_assert_eq(rc, FORGE_EUNSAFE_PATH);
    cr_assert_str_eq(err.message,
                     "t/m is on another filesystem (a mount point): not "
                     "removed");
    cr_assert(kept);
}
