/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_staging.c - src/render/staging.c against real folders, as root (so
 * owners are real): the layout and its owners and modes (staging/ and
 * staging/<id>/ the worker's 0711, the attempt's folder and its files the
 * job user's 0700 / 0600), the credentials file from
 * forge_render_credentials, retries, old deployments repaired, and every
 * planted link of issue 10 refused on prepare and on removal with the
 * outside folder (a root-only host folder) unchanged, hashed before and
 * after.
 */
#include "render/render.h"
#include "render/staging.h"
#include "base/util.h"

#include "support_storage.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define LAUNCH "llama-ft-0042"
#define TOKEN  "ingest-tok-6f1d2c3b4a59687766554433221100ff"
#define SCRIPT "#!/bin/bash\nexec srun true\n"

static const forge_fs_owner_t job = {2001, 2002};
static char root[64], outside[64];
static forge_config_t *cfg;

static void sh(const char *fmt, ...) FORGE_PRINTF(1, 2);

/* A shell command with $R (the storage root) and $O (outside) set. */
static void sh(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    support_vsh(root, outside, fmt, ap);
    va_end(ap);
}

static void fx_init(void)
{
    char env[128];
    char *envp[] = {env, NULL};
    forge_error_t err = {0};

    snprintf(root, sizeof(root), "/tmp/forge-staging-XXXXXX");
    snprintf(outside, sizeof(outside), "/tmp/forge-host-XXXXXX");
    cr_assert_not_null(mkdtemp(root));
    cr_assert_not_null(mkdtemp(outside));
    /* The storage root belongs to the job user, as on the stack. */
    sh("chown 2001:2002 $R; chmod 755 $R");
    /* A root-only host folder with a root-only file. */
    sh("chmod 700 $O; printf 'root secret' > $O/shadow; chmod 600 $O/shadow");
    snprintf(env, sizeof(env), "FORGE_STORAGE_ROOT=%s", root);
    cr_assert_eq(forge_config_load(envp, &cfg, &err), FORGE_OK, "%s",
                 err.message);
}

static void fx_fini(void)
{
    support_rm_tree(root);
    support_rm_tree(outside);
    forge_config_destroy(cfg);
}

TestSuite(staging, .init = fx_init, .fini = fx_fini);

/* ---- helpers ------------------------------------------------------------- */

/* The outside folder: names, modes, owners, sizes, contents. */
static void outside_hash(unsigned char md[32])
{
    char cmd[256];
    FILE *p;
    char line[512];
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    unsigned int len = 0;

    snprintf(cmd, sizeof(cmd),
             "cd %s && find . -printf '%%p %%m %%U %%G %%s\\n' | sort && "
             "find . -type f -exec sha256sum {} + | sort",
             outside);
    cr_assert_not_null(p = popen(cmd, "r"));
    EVP_DigestInit_ex(ctx, EVP_sha256(), NULL);
    while (fgets(line, sizeof(line), p))
        EVP_DigestUpdate(ctx, line, strlen(line));
    cr_assert_eq(pclose(p), 0);
    EVP_DigestFinal_ex(ctx, md, &len);
    EVP_MD_CTX_free(ctx);
}

static struct stat stat_of(const char *rel)
{
    char path[256];
    struct stat st;

    snprintf(path, sizeof(path), "%s/%s", root, rel);
    cr_assert_eq(lstat(path, &st), 0, "%s", path);
    return st;
}

static bool exists(const char *rel)
{
    char path[256];
    struct stat st;

    snprintf(path, sizeof(path), "%s/%s", root, rel);
    return lstat(path, &st) == 0;
}

static void assert_owned(const char *rel, uid_t uid, mode_t mode)
{
    struct stat st = stat_of(rel);

    cr_assert_eq(st.st_uid, uid, "%s: owner %u, not %u", rel, st.st_uid, uid);
    cr_assert_eq(st.st_mode & 07777, mode, "%s: mode %04o, not %04o", rel,
                 st.st_mode & 07777, mode);
}

static char *slurp(const char *rel, size_t *len)
{
    char path[256];
    char *data = NULL;

    snprintf(path, sizeof(path), "%s/%s", root, rel);
    cr_assert_eq(forge_read_file(path, 1 << 20, &data, len), 0, "%s", path);
    return data;
}

static forge_launch_t launch_with(char *token)
{
    forge_launch_t l = {0};

    l.launch_id = LAUNCH;
    l.attempt = 1;
    l.ingest_token = token;
    return l;
}

static forge_rc_t prepare(const forge_launch_t *l, forge_error_t *err)
{
    char *path = NULL;
    forge_rc_t rc = forge_staging_prepare(cfg, l, job, SCRIPT, &path, err);

    cr_assert((rc == FORGE_OK) == (path != NULL));
    free(path);
    return rc;
}

static void prepare_ok(void)
{
    forge_launch_t l = launch_with(TOKEN);
    forge_error_t err = {0};

    cr_assert_eq(prepare(&l, &err), FORGE_OK, "%s", err.message);
}

/* prepare refused as unsafe storage, message as given, nothing outside
 * changed, no file of the launch anywhere outside. */
static void prepare_refused(const char *message)
{
    unsigned char before[32], after[32];
    forge_launch_t l = launch_with(TOKEN);
    forge_error_t err = {0};

    outside_hash(before);
    cr_assert_eq(prepare(&l, &err), FORGE_EUNSAFE_PATH, "%s: %s",
                 forge_rc_name(err.code), err.message);
    cr_assert_str_eq(err.message, message);
    outside_hash(after);
    cr_assert_arr_eq(before, after, 32, "the host folder changed");
}

static forge_rc_t remove_it(forge_error_t *err)
{
    return forge_staging_remove(cfg, LAUNCH, 1, err);
}

/* ---- layout -------------------------------------------------------------- */

Test(staging, layout_owners_and_modes)
{
    struct stat st;
    size_t len;
    char *text;

    prepare_ok();
    assert_owned("staging", 0, 0711);
    assert_owned("staging/" LAUNCH, 0, 0711);
    assert_owned("staging/" LAUNCH "/1", 2001, 0700);
    assert_owned("staging/" LAUNCH "/1/job.sh", 2001, 0600);
    assert_owned("staging/" LAUNCH "/1/credentials", 2001, 0600);
    st = stat_of("staging/" LAUNCH "/1");
    cr_assert_eq(st.st_gid, 2002u);
    st = stat_of("staging/" LAUNCH "/1/credentials");
    cr_assert_eq(st.st_gid, 2002u);
    text = slurp("staging/" LAUNCH "/1/job.sh", &len);
    cr_assert_str_eq(text, SCRIPT);
    free(text);
    /* No temporary left. */
    sh("test $(ls -A $R/staging/" LAUNCH "/1 | wc -l) = 2");
}

Test(staging, credentials_are_forge_render_credentials)
{
    forge_kv_t env[] = {{"EPOCHS", "3"}}, secret[] = {{"HF_TOKEN", "hf_x"}};
    forge_launch_t l = launch_with(TOKEN);
    forge_buf_t want = FORGE_BUF_INIT;
    forge_error_t err = {0};
    size_t len;
    char *got;

    l.env = env;
    l.env_count = 1;
    l.secret_env = secret;
    l.secret_env_count = 1;
    cr_assert_eq(prepare(&l, &err), FORGE_OK, "%s", err.message);
    cr_assert(forge_render_credentials(&l, &want));
    got = slurp("staging/" LAUNCH "/1/credentials", &len);
    cr_assert_eq(len, want.len);
    cr_assert_eq(memcmp(got, want.data, len), 0);
    cr_assert_not_null(memmem(got, len, "FORGE_INGEST_TOKEN\0" TOKEN, 19 + 43));
    free(got);
    forge_buf_clear(&want);
}

Test(staging, no_credentials_no_file_and_none_left_from_before)
{
    forge_launch_t l = launch_with(NULL);
    forge_error_t err = {0};

    prepare_ok(); /* with a token: the file is there */
    cr_assert(exists("staging/" LAUNCH "/1/credentials"));
    cr_assert_eq(prepare(&l, &err), FORGE_OK, "%s", err.message);
    cr_assert_not(exists("staging/" LAUNCH "/1/credentials"));
    cr_assert(exists("staging/" LAUNCH "/1/job.sh"));
}

Test(staging, default_owner_is_the_storage_roots)
{
    forge_fs_owner_t o;
    forge_error_t err = {0};

    cr_assert_eq(forge_staging_default_owner(cfg, &o, &err), FORGE_OK);
    cr_assert_eq(o.uid, 2001u);
    cr_assert_eq(o.gid, 2002u);
}

Test(staging, write_without_an_owner_takes_the_storage_roots)
{
    forge_staging_files_t files = {SCRIPT, "A\0b\0", 4};
    forge_error_t err = {0};
    size_t len;
    char *text;

    cr_assert_eq(forge_staging_write(cfg, LAUNCH, 1, NULL, &files, &err),
                 FORGE_OK, "%s", err.message);
    assert_owned("staging/" LAUNCH "/1", 2001, 0700);
    assert_owned("staging/" LAUNCH "/1/job.sh", 2001, 0600);
    assert_owned("staging/" LAUNCH "/1/credentials", 2001, 0600);
    text = slurp("staging/" LAUNCH "/1/credentials", &len);
    cr_assert_eq(len, 4);
    cr_assert_eq(memcmp(text, "A\0b\0", 4), 0);
    free(text);
}

/* ---- retries and old deployments ------------------------------------------
 */

static struct timespec changed_at(const char *rel)
{
    char path[256];
    struct stat st;

    snprintf(path, sizeof(path), "%s/%s", root, rel);
    cr_assert_eq(lstat(path, &st), 0, "%s", path);
    return st.st_ctim;
}

/* One pass: folders that are already right are opened and checked, never
 * made again nor chmod-ed (each would be a metadata write on the shared
 * storage per launch). */
Test(staging, a_retry_leaves_the_folders_that_are_right_untouched)
{
    struct timespec s1, l1, s2, l2;

    prepare_ok();
    s1 = changed_at("staging");
    l1 = changed_at("staging/" LAUNCH);
    usleep(20000);
    prepare_ok();
    s2 = changed_at("staging");
    l2 = changed_at("staging/" LAUNCH);
    cr_assert(s1.tv_sec == s2.tv_sec && s1.tv_nsec == s2.tv_nsec,
              "staging/ was changed again");
    cr_assert(l1.tv_sec == l2.tv_sec && l1.tv_nsec == l2.tv_nsec,
              "staging/" LAUNCH " was changed again");
    assert_owned("staging", 0, 0711);
    assert_owned("staging/" LAUNCH "/1", 2001, 0700);
}

Test(staging, a_retry_reuses_the_jobs_or_the_workers_folder)
{
    prepare_ok();
    prepare_ok();
    sh("chown 0:0 $R/staging/" LAUNCH "/1");
    prepare_ok();
    assert_owned("staging/" LAUNCH "/1", 2001, 0700);
}

Test(staging, old_deployment_folders_are_repaired)
{
    /* The old code gave staging/ and staging/<id>/ to the storage owner. */
    sh("mkdir -p -m 775 $R/staging/" LAUNCH "/1; "
       "chown -R 2001:2002 $R/staging");
    prepare_ok();
    assert_owned("staging", 0, 0711);
    assert_owned("staging/" LAUNCH, 0, 0711);
    assert_owned("staging/" LAUNCH "/1", 2001, 0700);
}

Test(staging, another_users_attempt_folder_is_refused)
{
    sh("mkdir -p $R/staging/" LAUNCH "/1; chown 3003 $R/staging/" LAUNCH "/1");
    prepare_refused("staging/" LAUNCH "/1 is owned by uid 3003, not uid 2001");
    cr_assert_not(exists("staging/" LAUNCH "/1/credentials"));
}

/* ---- planted links: prepare ---------------------------------------------- */

Test(staging, attempt_folder_linked_to_a_root_only_folder)
{
    /* Seen: the worker chowned the target and wrote job.sh and the
     * credentials into it. */
    sh("mkdir -p $R/staging/" LAUNCH "; ln -s $O $R/staging/" LAUNCH "/1");
    prepare_refused("staging/" LAUNCH "/1 is a symbolic link");
    sh("test ! -e $O/credentials && test ! -e $O/job.sh && "
       "test $(stat -c %%u:%%a $O) = 0:700");
}

Test(staging, launch_folder_linked_to_a_host_folder)
{
    sh("mkdir -p $R/staging; ln -s $O $R/staging/" LAUNCH);
    prepare_refused("staging/" LAUNCH " is a symbolic link");
    sh("test ! -e $O/1");
}

Test(staging, staging_itself_linked)
{
    sh("ln -s $O $R/staging");
    prepare_refused("staging is a symbolic link");
    sh("test ! -e $O/" LAUNCH);
}

Test(staging, dangling_link_where_the_folder_goes)
{
    sh("mkdir -p $R/staging/" LAUNCH "; "
       "ln -s $O/made-by-worker $R/staging/" LAUNCH "/1");
    prepare_refused("staging/" LAUNCH "/1 is a symbolic link");
    sh("test ! -e $O/made-by-worker");
}

Test(staging, a_file_where_a_folder_goes)
{
    sh("mkdir -p $R/staging; touch $R/staging/" LAUNCH);
    prepare_refused("staging/" LAUNCH " is not a directory");
}

Test(staging, links_at_the_files_names_are_replaced_not_written_through)
{
    unsigned char before[32], after[32];

    prepare_ok();
    sh("cd $R/staging/" LAUNCH "/1 && rm credentials job.sh && "
       "ln -s $O/shadow credentials && ln $O/shadow job.sh");
    outside_hash(before);
    prepare_ok();
    outside_hash(after);
    cr_assert_arr_eq(before, after, 32);
    cr_assert(S_ISREG(stat_of("staging/" LAUNCH "/1/credentials").st_mode));
    cr_assert_eq(stat_of("staging/" LAUNCH "/1/job.sh").st_nlink, 1u);
}

/* ---- removal ------------------------------------------------------------- */

Test(staging, remove_takes_the_folder_and_an_empty_launch_folder)
{
    forge_error_t err = {0};

    prepare_ok();
    cr_assert_eq(remove_it(&err), FORGE_OK, "%s", err.message);
    cr_assert_not(exists("staging/" LAUNCH));
    cr_assert(exists("staging"));
    cr_assert_eq(remove_it(&err), FORGE_OK, "again: %s", err.message);
}

Test(staging, remove_keeps_another_attempt)
{
    forge_launch_t l = launch_with(TOKEN);
    forge_error_t err = {0};

    prepare_ok();
    l.attempt = 2;
    cr_assert_eq(prepare(&l, &err), FORGE_OK);
    cr_assert_eq(remove_it(&err), FORGE_OK, "%s", err.message);
    cr_assert_not(exists("staging/" LAUNCH "/1"));
    cr_assert(exists("staging/" LAUNCH "/2/job.sh"));
}

Test(staging, remove_a_folder_full_of_links_leaves_their_targets)
{
    unsigned char before[32], after[32];
    forge_error_t err = {0};

    prepare_ok();
    sh("cd $R/staging/" LAUNCH "/1 && mkdir -p deep/er && "
       "ln -s $O host && ln -s $O/shadow deep/shadow && ln -s / deep/er/root "
       "&& ln $O/shadow hard && mkfifo fifo && printf log > main.out");
    outside_hash(before);
    cr_assert_eq(remove_it(&err), FORGE_OK, "%s", err.message);
    outside_hash(after);
    cr_assert_arr_eq(before, after, 32);
    cr_assert_not(exists("staging/" LAUNCH));
    sh("test \"$(cat $O/shadow)\" = 'root secret'");
}

Test(staging, remove_through_a_linked_launch_folder_is_refused)
{
    /* Seen: the logs of a host folder archived, then the folder deleted. */
    unsigned char before[32], after[32];
    forge_error_t err = {0};

    sh("mkdir -p $R/staging $O/1; printf x > $O/1/f; "
       "ln -s $O $R/staging/" LAUNCH);
    outside_hash(before);
    cr_assert_eq(remove_it(&err), FORGE_EUNSAFE_PATH);
    cr_assert_str_eq(err.message, "staging/" LAUNCH " is a symbolic link");
    outside_hash(after);
    cr_assert_arr_eq(before, after, 32);
    cr_assert(exists("staging/" LAUNCH), "the link is left for an operator");
}

Test(staging, remove_through_a_linked_staging_is_refused)
{
    unsigned char before[32], after[32];
    forge_error_t err = {0};

    sh("mkdir -p $O/" LAUNCH "/1; ln -s $O $R/staging");
    outside_hash(before);
    cr_assert_eq(remove_it(&err), FORGE_EUNSAFE_PATH);
    cr_assert_str_eq(err.message, "staging is a symbolic link");
    outside_hash(after);
    cr_assert_arr_eq(before, after, 32);
}

Test(staging, remove_a_linked_attempt_folder_unlinks_only_the_link)
{
    unsigned char before[32], after[32];
    forge_error_t err = {0};

    sh("mkdir -p $R/staging/" LAUNCH "; ln -s $O $R/staging/" LAUNCH "/1");
    outside_hash(before);
    cr_assert_eq(remove_it(&err), FORGE_EUNSAFE_PATH);
    cr_assert_str_eq(err.message, "staging/" LAUNCH "/1 was a symbolic link: "
                                  "unlinked, not followed");
    outside_hash(after);
    cr_assert_arr_eq(before, after, 32);
    cr_assert_not(exists("staging/" LAUNCH "/1"));
    cr_assert_eq(remove_it(&err), FORGE_OK, "then nothing is left to do");
}

/* A tenant's launch is its user's; without tenants, the storage owner's. */
Test(staging, owner_is_the_tenants_user)
{
    forge_tenant_t bob = {"team-b", "bob", 2003, 3000};
    forge_fs_owner_t owner;
    forge_error_t err = {0};

    cr_assert_eq(forge_staging_owner(cfg, &bob, &owner, &err), FORGE_OK);
    cr_assert_eq(owner.uid, 2003u);
    cr_assert_eq(owner.gid, 3000u);
    sh("chown 2001:2002 $R");
    cr_assert_eq(forge_staging_owner(cfg, NULL, &owner, &err), FORGE_OK, "%s",
                 err.message);
    cr_assert_eq(owner.uid, 2001u);
    cr_assert_eq(owner.gid, 2002u);
}
