/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_request_check.c - mount sources and image paths resolved on the
 * file system, not matched as strings (issue 10): a link anywhere on the
 * way (to "/", in a middle component, to ".."), the storage root itself,
 * the worker's staging and artifacts folders (by name, and by identity
 * through a bind mount's alias), the worker's secret files (by path and
 * through a hard link), under the storage root and under FORGE_MOUNT_ALLOW.
 * Each test has its own mkdtemp folder: <tmp>/storage is the storage root,
 * <tmp>/allow a FORGE_MOUNT_ALLOW prefix.
 */
#include "request/request.h"
#include "request/request_check.h"
#include "request/forbidden.h"
#include "request/series.h"

#include "support_storage.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

static char tmp[64];
static forge_series_catalog_t *cat;

static void sh(const char *fmt, ...) FORGE_PRINTF(1, 2);

/* A shell command in tmp, with $T (tmp), $R (the storage root), $A (the
 * allowed prefix) set. */
static void sh(const char *fmt, ...)
{
    char cmd[2048], full[2400];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(cmd, sizeof(cmd), fmt, ap);
    va_end(ap);
    snprintf(full, sizeof(full),
             "T=%s; R=$T/storage; A=$T/allow; cd $T; set -e; %s", tmp, cmd);
    cr_assert_eq(system(full), 0, "%s", cmd);
}

static void fx_init(void)
{
    static const char series[] =
        "{\"series\": {\"h200\": {\"slurm_constraint\": \"h200\", "
        "\"gpus_per_node\": 8}}}";
    forge_error_t err = {0};

    snprintf(tmp, sizeof(tmp), "/tmp/forge-check-XXXXXX");
    cr_assert_not_null(mkdtemp(tmp));
    sh("mkdir -p $R/runtimes/images $R/data/sets $A/sets; "
       "touch $R/runtimes/images/a.sif $R/data/file");
    cr_assert_eq(forge_series_parse(series, strlen(series), &cat, &err), 0);
}

static void fx_fini(void)
{
    forge_series_catalog_destroy(cat);
    support_rm_tree(tmp);
}

TestSuite(request_check, .init = fx_init, .fini = fx_fini);

/* ---- helpers ------------------------------------------------------------- */

/* A configuration with the storage root, the allowed prefix, and extra
 * (one "NAME=value" or NULL; a FORGE_MOUNT_ALLOW replaces the prefix). */
static forge_config_t *config(const char *extra)
{
    char storage[128], allow[128];
    char *envp[] = {storage, allow, "FORGE_SLURM_RUNTIME_PROFILE=apptainer",
                    (char *)extra, NULL};
    forge_config_t *cfg = NULL;
    forge_error_t err = {0};

    snprintf(storage, sizeof(storage), "FORGE_STORAGE_ROOT=%s/storage", tmp);
    snprintf(allow, sizeof(allow), "FORGE_MOUNT_ALLOW=%s/allow", tmp);
    if (extra && !strncmp(extra, "FORGE_MOUNT_ALLOW=", 18)) {
        envp[1] = (char *)extra; /* instead of the default prefix */
        envp[3] = NULL;
    }
    cr_assert_eq(forge_config_load(envp, &cfg, &err), FORGE_OK, "%s",
                 err.message);
    return cfg;
}

/* The check of a launch with image and one mount of source; err filled. */
static forge_rc_t check(const char *extra, const char *image,
                        const char *source, forge_error_t *err)
{
    char json[1024];
    forge_config_t *cfg = config(extra);
    forge_request_t *req = NULL;
    forge_rc_t rc;

    snprintf(json, sizeof(json),
             "{\"kind\": \"launch\", \"launch_id\": \"L1\", \"image\": "
             "{\"path\": \"%s\", \"format\": \"sif\"}, \"command\": [\"run\"], "
             "\"pools\": [{\"name\": \"p\", \"series\": \"h200\", \"nodes\": "
             "1}]%s%s%s}",
             image, source ? ", \"mounts\": [{\"source\": \"" : "",
             source ? source : "", source ? "\", \"target\": \"/m\"}]" : "");
    cr_assert_eq(forge_request_parse(json, strlen(json), &req, err), FORGE_OK,
                 "%s", err->message);
    rc = forge_request_check(req, cfg, cat, err);
    forge_request_destroy(req);
    forge_config_destroy(cfg);
    return rc;
}

static void mount_ok(const char *source)
{
    forge_error_t err = {0};

    cr_assert_eq(check(NULL, "images/a.sif", source, &err), FORGE_OK, "%s: %s",
                 source, err.message);
}

static void mount_ok_with(const char *extra, const char *source)
{
    forge_error_t err = {0};

    cr_assert_eq(check(extra, "images/a.sif", source, &err), FORGE_OK, "%s: %s",
                 source, err.message);
}

static void mount_refused_with(const char *extra, const char *source,
                               const char *message)
{
    forge_error_t err = {0};

    cr_assert_eq(check(extra, "images/a.sif", source, &err),
                 FORGE_EMOUNT_REFUSED, "%s: accepted", source);
    cr_assert_str_eq(err.field, "$.mounts[0].source");
    cr_assert_str_eq(err.message, message, "%s", source);
}

static void mount_refused(const char *source, const char *message)
{
    mount_refused_with(NULL, source, message);
}

/* "<tmp>/<rel>" in buf. */
static const char *at(char *buf, size_t size, const char *rel)
{
    snprintf(buf, size, "%s/%s", tmp, rel);
    return buf;
}

/* ---- under the storage root ---------------------------------------------- */

Test(request_check, ordinary_sources_pass)
{
    char abs[128];

    mount_ok("data");
    mount_ok("data/sets");
    mount_ok("data/./sets/");
    mount_ok("data/file");
    mount_ok("data/new/deeper"); /* the job may create it */
    mount_ok(at(abs, sizeof(abs), "storage/data/sets"));
}

Test(request_check, a_link_to_slash)
{
    /* Seen: <storage>/x -> / and a request mounting x was accepted. */
    sh("ln -s / $R/x");
    mount_refused("x", "$.mounts[0].source is refused: x is a symbolic link "
                       "(no link is followed in a mount source)");
    mount_refused("x/etc", "$.mounts[0].source is refused: x is a symbolic "
                           "link (no link is followed in a mount source)");
}

Test(request_check, a_link_in_a_middle_component)
{
    sh("ln -s /etc $R/data/l");
    mount_refused("data/l/ssl", "$.mounts[0].source is refused: data/l is a "
                                "symbolic link (no link is followed in a "
                                "mount source)");
    mount_refused("data/l/not-there",
                  "$.mounts[0].source is refused: data/l is a symbolic link "
                  "(no link is followed in a mount source)");
}

Test(request_check, a_link_to_dotdot)
{
    sh("ln -s .. $R/data/up");
    mount_refused("data/up", "$.mounts[0].source is refused: data/up is a "
                             "symbolic link (no link is followed in a mount "
                             "source)");
    mount_refused("data/up/staging",
                  "$.mounts[0].source is refused: data/up is a symbolic link "
                  "(no link is followed in a mount source)");
}

Test(request_check, a_file_in_a_middle_component_and_a_fifo)
{
    sh("mkfifo $R/data/fifo");
    mount_refused("data/file/x", "$.mounts[0].source is refused: data/file is "
                                 "not a directory (no link is followed in a "
                                 "mount source)");
    mount_refused("data/fifo", "$.mounts[0].source is refused: data/fifo is "
                               "neither a folder nor a regular file (no link "
                               "is followed in a mount source)");
}

Test(request_check, the_storage_root_itself)
{
    char abs[128];

    mount_refused(".", "$.mounts[0].source is the storage root");
    mount_refused(at(abs, sizeof(abs), "storage"),
                  "$.mounts[0].source is the storage root");
}

Test(request_check, staging_and_artifacts_and_what_is_in_them)
{
    /* Seen: a request mounting staging itself was accepted. */
    mount_refused("staging", "$.mounts[0].source is the worker's staging "
                             "folder");
    mount_refused("staging/victim/1", "$.mounts[0].source lies in the "
                                      "worker's staging folder");
    mount_refused("artifacts/victim", "$.mounts[0].source lies in the "
                                      "worker's artifacts folder");
    sh("mkdir -p $R/staging/victim/1 $R/artifacts");
    mount_refused("staging/victim/1", "$.mounts[0].source lies in the "
                                      "worker's staging folder");
    mount_refused("artifacts", "$.mounts[0].source is the worker's artifacts "
                               "folder");
    mount_refused("./staging//victim", "$.mounts[0].source lies in the "
                                       "worker's staging folder");
}

Test(request_check, a_link_at_staging)
{
    sh("ln -s $R/data $R/staging");
    mount_refused("staging", "$.mounts[0].source is refused: staging is a "
                             "symbolic link (no link is followed in a mount "
                             "source)");
}

/* ---- under FORGE_MOUNT_ALLOW --------------------------------------------- */

Test(request_check, allowed_prefix_resolved_too)
{
    char src[128], msg[512];

    mount_ok(at(src, sizeof(src), "allow/sets"));
    mount_ok(at(src, sizeof(src), "allow/new"));
    sh("ln -s / $A/root");
    snprintf(msg, sizeof(msg),
             "$.mounts[0].source is refused: %s/allow/root is a symbolic link "
             "(no link is followed in a mount source)",
             tmp);
    mount_refused(at(src, sizeof(src), "allow/root/etc"), msg);
    mount_refused("/etc", "$.mounts[0].source is outside the storage root and "
                          "FORGE_MOUNT_ALLOW");
}

Test(request_check, an_allowed_prefix_absent_here_is_matched_by_name)
{
    /* A prefix only the cluster has: the worker cannot look. */
    mount_ok_with("FORGE_MOUNT_ALLOW=/nonexistent-datasets",
                  "/nonexistent-datasets/x");
}

Test(request_check, an_allowed_prefix_holding_the_storage_root)
{
    char allow[160], src[128];

    snprintf(allow, sizeof(allow), "FORGE_MOUNT_ALLOW=%s", tmp);
    mount_refused_with(allow, at(src, sizeof(src), ""),
                       "$.mounts[0].source contains the storage root");
    mount_ok_with(allow, at(src, sizeof(src), "allow"));
}

Test(request_check, staging_through_a_bind_mounts_alias)
{
    char allow[160], src[128], alias[128];

    sh("mkdir -p $R/staging/victim/1 $A/alias");
    at(alias, sizeof(alias), "allow/alias");
    snprintf(src, sizeof(src), "%s/storage", tmp);
    if (mount(src, alias, NULL, MS_BIND, NULL) != 0)
        cr_skip_test("cannot bind-mount here (%s)", strerror(errno));
    snprintf(allow, sizeof(allow), "FORGE_MOUNT_ALLOW=%s/allow", tmp);
    forge_error_t e1 = {0}, e2 = {0}, e3 = {0};
    forge_rc_t r1 =
        check(allow, "images/a.sif",
              at(src, sizeof(src), "allow/alias/staging/victim"), &e1);
    forge_rc_t r2 =
        check(allow, "images/a.sif", at(src, sizeof(src), "allow/alias"), &e2);
    forge_rc_t r3 = check(allow, "images/a.sif",
                          at(src, sizeof(src), "allow/alias/data"), &e3);
    umount(alias); /* before any assertion can end the test */
    cr_assert_eq(r1, FORGE_EMOUNT_REFUSED);
    cr_assert_str_eq(e1.message, "$.mounts[0].source lies in the worker's "
                                 "staging folder");
    cr_assert_eq(r2, FORGE_EMOUNT_REFUSED);
    cr_assert_str_eq(e2.message, "$.mounts[0].source is the storage root");
    cr_assert_eq(r3, FORGE_OK, "%s", e3.message);
}

/* ---- the worker's secrets ------------------------------------------------ */

Test(request_check, secret_files_are_never_mounted)
{
    char key[160], src[128];

    sh("mkdir -p $A/etc; printf k > $A/etc/jwt.key; chmod 600 $A/etc/jwt.key");
    snprintf(key, sizeof(key), "FORGE_SLURM_JWT_KEY_FILE=%s/allow/etc/jwt.key",
             tmp);
    mount_refused_with(key, at(src, sizeof(src), "allow/etc/jwt.key"),
                       "$.mounts[0].source is FORGE_SLURM_JWT_KEY_FILE (a "
                       "secret of the worker)");
    mount_refused_with(key, at(src, sizeof(src), "allow/etc"),
                       "$.mounts[0].source contains FORGE_SLURM_JWT_KEY_FILE "
                       "(a secret of the worker)");
    mount_refused_with(key, at(src, sizeof(src), "allow"),
                       "$.mounts[0].source contains FORGE_SLURM_JWT_KEY_FILE "
                       "(a secret of the worker)");
    mount_ok_with(key, at(src, sizeof(src), "allow/sets"));
    /* The same file by another name: a hard link into the storage. */
    sh("ln $A/etc/jwt.key $R/data/k");
    mount_refused_with(key, "data/k",
                       "$.mounts[0].source is FORGE_SLURM_JWT_KEY_FILE (a "
                       "secret of the worker)");
}

Test(request_check, a_token_file_not_there_yet_is_matched_by_path)
{
    char jwt[160], src[128];

    snprintf(jwt, sizeof(jwt), "FORGE_SLURM_JWT_FILE=%s/allow/run/jwt", tmp);
    mount_refused_with(jwt, at(src, sizeof(src), "allow/run"),
                       "$.mounts[0].source contains FORGE_SLURM_JWT_FILE (a "
                       "secret of the worker)");
}

/* ---- the forbidden places' cache (forbidden.h) ---------------------------
 */

/* Past the racy window of forbidden.h: a snapshot built now is reused. */
static void let_ctimes_age(void)
{
    sleep(3);
}

static void key_setting(char *buf, size_t size, const char *dir)
{
    snprintf(buf, size, "FORGE_SLURM_JWT_KEY_FILE=%s/allow/%s/jwt.key", tmp,
             dir);
}

Test(request_check, cached_places_see_a_secret_replaced)
{
    char key[160];
    unsigned long builds;

    sh("mkdir -p $A/etc; printf k > $A/etc/jwt.key; chmod 600 $A/etc/jwt.key");
    key_setting(key, sizeof(key), "etc");
    let_ctimes_age();
    mount_ok_with(key, "data/sets");
    builds = forge_forbidden_builds();
    mount_ok_with(key, "data/sets");
    cr_assert_eq(forge_forbidden_builds(), builds,
                 "the second check is served from the cache");
    /* A new key file renamed over the old one, and a hard link to it in the
     * storage: the snapshot built before knows neither its inode nor that
     * path. */
    sh("printf k2 > $A/etc/new.key; chmod 600 $A/etc/new.key; "
       "mv $A/etc/new.key $A/etc/jwt.key; ln $A/etc/jwt.key $R/data/k");
    mount_refused_with(key, "data/k",
                       "$.mounts[0].source is FORGE_SLURM_JWT_KEY_FILE (a "
                       "secret of the worker)");
    cr_assert_gt(forge_forbidden_builds(), builds);
}

Test(request_check, cached_places_see_a_secrets_folder_swapped_for_a_link)
{
    char key[160], src[128];
    unsigned long builds;

    sh("mkdir -p $A/etc $A/etc2; printf k > $A/etc/jwt.key; "
       "printf k > $A/etc2/jwt.key; chmod 600 $A/etc/jwt.key $A/etc2/jwt.key");
    key_setting(key, sizeof(key), "etc");
    let_ctimes_age();
    mount_ok_with(key, at(src, sizeof(src), "allow/etc2"));
    builds = forge_forbidden_builds();
    mount_ok_with(key, at(src, sizeof(src), "allow/etc2"));
    cr_assert_eq(forge_forbidden_builds(), builds);
    /* The configured path now leads through a link to etc2's key. */
    sh("mv $A/etc $A/etc-old; ln -s etc2 $A/etc");
    mount_refused_with(key, at(src, sizeof(src), "allow/etc2"),
                       "$.mounts[0].source contains FORGE_SLURM_JWT_KEY_FILE "
                       "(a secret of the worker)");
}

Test(request_check, cached_places_see_a_secret_moved_behind_a_link)
{
    char key[160], src[128];
    unsigned long builds;

    sh("mkdir -p $A/etc $A/x; printf k > $A/etc/jwt.key; "
       "chmod 600 $A/etc/jwt.key");
    key_setting(key, sizeof(key), "etc");
    let_ctimes_age();
    mount_ok_with(key, at(src, sizeof(src), "allow/x"));
    builds = forge_forbidden_builds();
    mount_ok_with(key, at(src, sizeof(src), "allow/x"));
    cr_assert_eq(forge_forbidden_builds(), builds);
    /* The same inode, now in x, the configured path a link to it: only
     * its ctime (set by the rename) tells. */
    sh("mv $A/etc/jwt.key $A/x/jwt.key; ln -s ../x/jwt.key $A/etc/jwt.key");
    mount_refused_with(key, at(src, sizeof(src), "allow/x"),
                       "$.mounts[0].source contains FORGE_SLURM_JWT_KEY_FILE "
                       "(a secret of the worker)");
}

Test(request_check, cached_places_see_the_storage_root_swapped_for_a_link)
{
    forge_error_t err = {0};
    unsigned long builds;

    let_ctimes_age();
    mount_ok("data/sets");
    builds = forge_forbidden_builds();
    mount_ok("data/sets");
    cr_assert_eq(forge_forbidden_builds(), builds);
    /* The snapshot's descriptor still leads to the old folder: reused, it
     * would let both checks through. */
    sh("mv $R $T/real-storage; ln -s real-storage $R");
    cr_assert_neq(check(NULL, "images/a.sif", "data/sets", &err), FORGE_OK);
    cr_assert(strstr(err.message, "storage is a symbolic link"), "%s",
              err.message);
}

Test(request_check, cached_places_see_staging_renamed_and_replaced)
{
    unsigned long builds;

    sh("mkdir -p $R/staging/victim $R/artifacts");
    let_ctimes_age();
    mount_refused("staging/victim",
                  "$.mounts[0].source lies in the worker's staging folder");
    builds = forge_forbidden_builds();
    mount_ok("data/sets");
    cr_assert_eq(forge_forbidden_builds(), builds);
    /* The storage's owner renames staging and makes another: the old one
     * is now an ordinary folder (refused by its identity if the snapshot
     * were reused), the new one is the worker's. */
    sh("mv $R/staging $R/data/old-staging; mkdir $R/staging");
    mount_ok("data/old-staging");
    cr_assert_gt(forge_forbidden_builds(), builds);
    mount_refused("staging", "$.mounts[0].source is the worker's staging "
                             "folder");
}

Test(request_check, cached_places_see_a_folder_above_moved_within_the_age)
{
    char key[160], src[128];
    forge_error_t err = {0};

    sh("mkdir -p $A/etc $A/x; printf k > $A/etc/jwt.key; "
       "chmod 600 $A/etc/jwt.key");
    key_setting(key, sizeof(key), "etc");
    let_ctimes_age();
    mount_ok_with(key, at(src, sizeof(src), "allow/x"));
    /* The key's folder moved under x, a link keeping the configured path:
     * the key's own inode and ctime are unchanged (forbidden.h: seen
     * within FORGE_FORBIDDEN_MAX_AGE_MS). */
    sh("mv $A/etc $A/x/etc; ln -s x/etc $A/etc");
    usleep((FORGE_FORBIDDEN_MAX_AGE_MS + 100) * 1000);
    cr_assert_eq(
        check(key, "images/a.sif", at(src, sizeof(src), "allow/x"), &err),
        FORGE_EMOUNT_REFUSED);
    cr_assert_str_eq(err.message, "$.mounts[0].source contains "
                                  "FORGE_SLURM_JWT_KEY_FILE (a secret of the "
                                  "worker)");
}

/* ---- the image ----------------------------------------------------------- */

static void image_refused(const char *image, const char *message)
{
    forge_error_t err = {0};

    cr_assert_eq(check(NULL, image, NULL, &err), FORGE_EIMAGE_MISSING,
                 "%s: accepted", image);
    cr_assert_str_eq(err.field, "$.image.path");
    cr_assert_str_eq(err.message, message, "%s", image);
}

Test(request_check, image_resolved_beneath_the_runtime_root)
{
    char abs[128], msg[512];
    forge_error_t err = {0};

    cr_assert_eq(check(NULL, "images/a.sif", NULL, &err), FORGE_OK, "%s",
                 err.message);
    cr_assert_eq(check(NULL,
                       at(abs, sizeof(abs), "storage/runtimes/images/a.sif"),
                       NULL, &err),
                 FORGE_OK, "%s", err.message);
    sh("touch $T/outside.sif; ln -s $T/outside.sif $R/runtimes/images/out.sif; "
       "ln -s a.sif $R/runtimes/images/latest.sif; "
       "ln -s $T $R/runtimes/linked");
    snprintf(msg, sizeof(msg),
             "$.image.path is refused: images/out.sif is a symbolic link (no "
             "link is followed under the runtime root %s/storage/runtimes)",
             tmp);
    image_refused("images/out.sif", msg);
    /* A link to another image is refused too (CONTRACT.md section 2). */
    snprintf(msg, sizeof(msg),
             "$.image.path is refused: images/latest.sif is a symbolic link "
             "(no link is followed under the runtime root %s/storage/"
             "runtimes)",
             tmp);
    image_refused("images/latest.sif", msg);
    snprintf(msg, sizeof(msg),
             "$.image.path is refused: linked is a symbolic link (no link is "
             "followed under the runtime root %s/storage/runtimes)",
             tmp);
    image_refused("linked/outside.sif", msg);
    snprintf(msg, sizeof(msg),
             "$.image.path leads outside the runtime root (%s/storage/"
             "runtimes)",
             tmp);
    image_refused(at(abs, sizeof(abs), "outside.sif"), msg);
}

Test(request_check, a_runtime_root_replaced_by_a_link)
{
    char msg[512];

    /* The storage's owner may swap runtimes/ for a link to anywhere. */
    sh("mv $R/runtimes $T/real-runtimes; ln -s $T/real-runtimes $R/runtimes");
    snprintf(msg, sizeof(msg),
             "$.image.path is refused: runtimes is a symbolic link (no link "
             "is followed under the runtime root %s/storage/runtimes)",
             tmp);
    image_refused("images/a.sif", msg);
}

/* ---- env names a shell owns (enroot-pyxis) --------------------------------
 */

/* The check of a launch with env {name: "v"} (or secret_env) under profile. */
static forge_rc_t check_env(const char *profile, const char *field,
                            const char *name, forge_error_t *err)
{
    char storage[128], prof[64], json[1024];
    char *envp[] = {storage, prof, NULL};
    const char *ext = strcmp(profile, "apptainer") ? "sqsh" : "sif";
    forge_config_t *cfg = NULL;
    forge_request_t *req = NULL;
    forge_rc_t rc;

    sh("touch $R/runtimes/images/a.sqsh");
    snprintf(storage, sizeof(storage), "FORGE_STORAGE_ROOT=%s/storage", tmp);
    snprintf(prof, sizeof(prof), "FORGE_SLURM_RUNTIME_PROFILE=%s", profile);
    cr_assert_eq(forge_config_load(envp, &cfg, err), FORGE_OK, "%s",
                 err->message);
    snprintf(json, sizeof(json),
             "{\"kind\": \"launch\", \"launch_id\": \"L1\", \"image\": "
             "{\"path\": \"images/a.%s\", \"format\": \"%s\"}, \"command\": "
             "[\"run\"], \"pools\": [{\"name\": \"p\", \"series\": \"h200\", "
             "\"nodes\": 1}], \"%s\": {\"%s\": \"v\"}}",
             ext, ext, field, name);
    cr_assert_eq(forge_request_parse(json, strlen(json), &req, err), FORGE_OK,
                 "%s", err->message);
    rc = forge_request_check(req, cfg, cat, err);
    forge_request_destroy(req);
    forge_config_destroy(cfg);
    return rc;
}

Test(request_check, pyxis_refuses_names_the_shell_owns)
{
    static const char *const owned[] = {"RANDOM",    "SECONDS", "UID",
                                        "PPID",      "OPTIND",  "SHLVL",
                                        "BASH_ARGV", "_"};

    for (size_t i = 0; i < sizeof(owned) / sizeof(owned[0]); i++) {
        forge_error_t err = {0};
        char field[64];
        cr_assert_eq(check_env("enroot-pyxis", "env", owned[i], &err),
                     FORGE_EENV_REFUSED, "%s accepted", owned[i]);
        snprintf(field, sizeof(field), "$.env.%s", owned[i]);
        cr_assert_str_eq(err.field, field);
        forge_error_clear(&err);
        cr_assert_eq(check_env("enroot-pyxis", "secret_env", owned[i], &err),
                     FORGE_EENV_REFUSED, "secret %s accepted", owned[i]);
        forge_error_clear(&err);
        /* apptainer passes them through APPTAINERENV_: no shell in between */
        cr_assert_eq(check_env("apptainer", "env", owned[i], &err), FORGE_OK,
                     "%s: %s", owned[i], err.message);
    }
}

Test(request_check, pyxis_passes_ordinary_names)
{
    static const char *const fine[] = {"PATH", "IFS",       "LD_PRELOAD",
                                       "UIDX", "MY_RANDOM", "NCCL_DEBUG"};

    for (size_t i = 0; i < sizeof(fine) / sizeof(fine[0]); i++) {
        forge_error_t err = {0};
        cr_assert_eq(check_env("enroot-pyxis", "env", fine[i], &err), FORGE_OK,
                     "%s: %s", fine[i], err.message);
    }
}
