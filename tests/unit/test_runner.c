/*
 * test_runner.c - what the runner makes of an unsafe shared storage (issue
 * 10), without Slurm: a submit whose staging folder is a planted link is
 * REJECTED with FORGE_EUNSAFE_PATH before any slurmrestd call (the client
 * points at a port nobody listens on), and an archive or cleanup refused
 * there is marked final (code set), while one refused only at the archive's
 * target is retried (code unset).
 */
#include "runner.h"
#include "util.h"

#include "support_storage.h"

#include <criterion/criterion.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define LAUNCH "L1"
#define REQUEST                                                                \
    "{\"kind\": \"launch\", \"launch_id\": \"" LAUNCH "\", \"image\": "        \
    "{\"path\": \"images/a.sif\", \"format\": \"sif\"}, \"command\": "         \
    "[\"run\"], \"pools\": [{\"name\": \"main\", \"series\": \"h200\", "       \
    "\"nodes\": 1}], \"ingest\": {\"endpoint\": \"https://i.example\", "       \
    "\"token\": \"tok-123456789\"}}"

static char tmp[64];
static forge_config_t *cfg;
static forge_series_catalog_t *cat;

static void sh(const char *fmt, ...) FORGE_PRINTF(1, 2);

/* A shell command with $R (the storage root) and $O (a host folder). */
static void sh(const char *fmt, ...)
{
    char r[128], o[128];
    va_list ap;

    snprintf(r, sizeof(r), "%s/storage", tmp);
    snprintf(o, sizeof(o), "%s/host", tmp);
    va_start(ap, fmt);
    support_vsh(r, o, fmt, ap);
    va_end(ap);
}

static void fx_init(void)
{
    static const char series[] =
        "{\"series\": {\"h200\": {\"slurm_constraint\": \"h200\", "
        "\"gpus_per_node\": 8}}}";
    char storage[128], jwt[128];
    char *envp[] = {storage,
                    jwt,
                    "FORGE_SLURM_REST_URL=http://127.0.0.1:9",
                    "FORGE_SLURM_REST_USER=forge",
                    "FORGE_SLURM_RUNTIME_PROFILE=apptainer",
                    NULL};
    forge_error_t err = {0};

    snprintf(tmp, sizeof(tmp), "/tmp/forge-runner-XXXXXX");
    cr_assert_not_null(mkdtemp(tmp));
    sh("mkdir -p $R/runtimes/images $O; touch $R/runtimes/images/a.sif; "
       "printf 'root secret' > $O/shadow; chmod 600 $O/shadow; "
       "printf 'a.b.c' > $R/../jwt; chmod 600 $R/../jwt");
    snprintf(storage, sizeof(storage), "FORGE_STORAGE_ROOT=%s/storage", tmp);
    snprintf(jwt, sizeof(jwt), "FORGE_SLURM_JWT_FILE=%s/jwt", tmp);
    cr_assert_eq(forge_config_load(envp, &cfg, &err), FORGE_OK, "%s",
                 err.message);
    cr_assert_eq(forge_series_parse(series, strlen(series), &cat, &err), 0);
}

static void fx_fini(void)
{
    forge_series_catalog_destroy(cat);
    forge_config_destroy(cfg);
    support_rm_tree(tmp);
}

TestSuite(runner, .init = fx_init, .fini = fx_fini);

static forge_work_t *work(forge_work_kind_t kind)
{
    forge_work_t *w = forge_xcalloc(1, sizeof(*w));

    w->kind = kind;
    w->launch_id = forge_xstrdup(LAUNCH);
    w->attempt = 1;
    w->request = forge_xstrdup(REQUEST);
    w->request_len = strlen(REQUEST);
    return w;
}

/* w run by r to the end (r stopped, the result returned). */
static forge_work_t *run(forge_runner_t *r, forge_work_t *w)
{
    forge_work_t *done;

    forge_runner_post(r, w);
    cr_assert(forge_runner_settle(r, 10000), "the work did not finish");
    done = forge_runner_take(r);
    cr_assert_not_null(done);
    cr_assert_null(done->next);
    forge_runner_stop(r);
    return done;
}

static forge_work_t *run_files(forge_work_t *w)
{
    forge_runner_t *r = NULL;
    forge_error_t err = {0};

    cr_assert_eq(forge_runner_start_files(cfg, NULL, "files", 1, &r, &err),
                 FORGE_OK, "%s", err.message);
    return run(r, w);
}

Test(runner, submit_into_a_planted_link_is_rejected_not_retried)
{
    forge_runner_t *r = NULL;
    forge_error_t err = {0};
    forge_work_t *w;

    sh("mkdir -p $R/staging; ln -s $O $R/staging/" LAUNCH);
    cr_assert_eq(forge_runner_start(cfg, cat, NULL, "submit", &r, &err),
                 FORGE_OK, "%s", err.message);
    w = run(r, work(FORGE_WORK_SUBMIT));
    cr_assert_eq(w->status, FORGE_SLURM_REJECTED);
    cr_assert_eq(w->code, FORGE_EUNSAFE_PATH);
    cr_assert_str_eq(w->message, "staging/" LAUNCH " is a symbolic link");
    sh("test $(ls -A $O) = shadow"); /* nothing written there */
    forge_work_free(w);
}

Test(runner, archive_of_an_unreadable_staging_folder_says_why)
{
    forge_work_t *w;

    sh("mkdir -p $R/staging/" LAUNCH "; ln -s $O $R/staging/" LAUNCH "/1");
    w = run_files(work(FORGE_WORK_ARCHIVE));
    cr_assert_eq(w->status, FORGE_SLURM_OK, "%s", w->message);
    cr_assert_str_eq(w->archive.unsafe,
                     "staging/" LAUNCH "/1 is a symbolic link");
    cr_assert_eq(w->archive.file_count, 0, "nothing read through the link");
    sh("test $(ls -A $O) = shadow");
    forge_work_free(w);
}

Test(runner, archive_never_follows_a_link_at_its_target)
{
    forge_work_t *w;

    sh("mkdir -p $R/staging/" LAUNCH "/1; ln -s $O $R/artifacts");
    w = run_files(work(FORGE_WORK_ARCHIVE));
    cr_assert_eq(w->status, FORGE_SLURM_OK, "%s", w->message);
    sh("test $(ls -A $O) = shadow"); /* nothing written there */
    sh("test -d $R/artifacts && test ! -L $R/artifacts");
    forge_work_free(w);
}

Test(runner, cleanup_through_a_planted_link_is_final)
{
    forge_work_t *w;

    sh("mkdir -p $R/staging; ln -s $O $R/staging/" LAUNCH);
    w = run_files(work(FORGE_WORK_CLEANUP));
    cr_assert_eq(w->code, FORGE_EUNSAFE_PATH);
    sh("test -f $O/shadow");
    forge_work_free(w);
}
