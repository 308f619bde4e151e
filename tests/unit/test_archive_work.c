/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_archive_work.c - the file threads (archive_work.h) on an unsafe
 * shared storage (issue 10): an archive never reads or writes through a
 * link (a staging folder refused gives an empty archive that says why),
 * one that cannot be made says so with its own code (FORGE_EARCHIVE:
 * retried later, never the Slurm transport code it once borrowed), and a
 * cleanup refused through a planted link is final (FORGE_EUNSAFE_PATH).
 */
#include "base/util.h"
#include "loop/archive_work.h"
#include "loop/work.h"

#include "support_storage.h"

#include <criterion/criterion.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LAUNCH  "L1"
#define REQUEST SUPPORT_L1_REQUEST

static char tmp[64];
static forge_config_t *cfg;

/* A shell command with $R (the storage root) and $O (a host folder). */
#define sh(...) support_sh_in(tmp, __VA_ARGS__)

static void fx_init(void)
{
    char storage[128];
    char *envp[] = {storage, "FORGE_SLURM_RUNTIME_PROFILE=apptainer", NULL};
    forge_error_t err = {0};

    snprintf(tmp, sizeof(tmp), "/tmp/forge-files-XXXXXX");
    cr_assert_not_null(mkdtemp(tmp));
    sh("mkdir -p $R $O; printf 'root secret' > $O/shadow; "
       "chmod 600 $O/shadow");
    snprintf(storage, sizeof(storage), "FORGE_STORAGE_ROOT=%s/storage", tmp);
    cr_assert_eq(forge_config_load(envp, &cfg, &err), FORGE_OK, "%s",
                 err.message);
}

static void fx_fini(void)
{
    forge_config_destroy(cfg);
    support_rm_tree(tmp);
}

TestSuite(archive_work, .init = fx_init, .fini = fx_fini);

static forge_work_t *work(forge_work_kind_t kind)
{
    forge_work_t *w = forge_work_new(kind, LAUNCH, 1, 0, 0);

    if (kind == FORGE_WORK_ARCHIVE) /* what the table keeps of it */
        w->files.kept = forge_held_of_trusted(REQUEST, strlen(REQUEST));
    return w;
}

/* w run to the end by a pool of one file thread (stopped, the result
 * returned). */
static forge_work_t *run_files(forge_work_t *w)
{
    forge_pool_t *pool = NULL;
    forge_error_t err = {0};
    forge_work_t *done;

    cr_assert_eq(forge_files_start(cfg, NULL, 1, &pool, &err), FORGE_OK, "%s",
                 err.message);
    forge_pool_post(pool, w);
    cr_assert(forge_pool_settle(pool, 10000), "the work did not finish");
    done = forge_pool_take(pool);
    cr_assert_not_null(done);
    cr_assert_null(forge_pool_take(pool));
    forge_pool_stop(pool);
    cr_assert_eq(done->status, FORGE_SLURM_OK, "file work is no Slurm call");
    return done;
}

Test(archive_work, archive_of_an_unreadable_staging_folder_says_why)
{
    forge_work_t *w;

    sh("mkdir -p $R/staging/" LAUNCH "; ln -s $O $R/staging/" LAUNCH "/1");
    w = run_files(work(FORGE_WORK_ARCHIVE));
    cr_assert_eq(w->code, FORGE_OK, "%s", w->message);
    cr_assert_str_eq(w->files.archive.unsafe,
                     "staging/" LAUNCH "/1 is a symbolic link");
    cr_assert_eq(w->files.archive.file_count, 0,
                 "nothing read through the link");
    sh("test $(ls -A $O) = shadow");
    forge_work_free(w);
}

Test(archive_work, archive_never_follows_a_link_at_its_target)
{
    forge_work_t *w;

    sh("mkdir -p $R/staging/" LAUNCH "/1; ln -s $O $R/artifacts");
    w = run_files(work(FORGE_WORK_ARCHIVE));
    cr_assert_eq(w->code, FORGE_OK, "%s", w->message);
    sh("test $(ls -A $O) = shadow"); /* nothing written there */
    sh("test -d $R/artifacts && test ! -L $R/artifacts");
    forge_work_free(w);
}

Test(archive_work, cleanup_through_a_planted_link_is_final)
{
    forge_work_t *w;

    sh("mkdir -p $R/staging; ln -s $O $R/staging/" LAUNCH);
    w = run_files(work(FORGE_WORK_CLEANUP));
    cr_assert_eq(w->code, FORGE_EUNSAFE_PATH);
    sh("test -f $O/shadow");
    forge_work_free(w);
}

Test(archive_work, archive_that_fails_says_so_with_its_own_code)
{
    forge_work_t *w;

    /* a folder where its archive goes: it cannot be read, nor replaced */
    sh("mkdir -p $R/staging/" LAUNCH "/1 $R/artifacts/" LAUNCH
       "/1/logs.tar.gz");
    w = run_files(work(FORGE_WORK_ARCHIVE));
    cr_assert_eq(w->code, FORGE_EARCHIVE, "%s (%s)", forge_rc_name(w->code),
                 w->message);
    cr_assert_str_eq(forge_rc_name(w->code), "archive_failed");
    cr_assert_neq(w->message[0], '\0', "the failure says why");
    forge_work_free(w);
}

Test(archive_work, cleanup_of_a_folder_already_gone_is_done)
{
    forge_work_t *w = run_files(work(FORGE_WORK_CLEANUP));

    cr_assert_eq(w->code, FORGE_OK, "%s", w->message);
    forge_work_free(w);
}
