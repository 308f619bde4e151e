/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_live.c - src/archive/live.c against real folders: a running
 * launch's new output read past its cursors, line by line; a line still
 * being written held until the file stops growing; files rebuilt exactly
 * from their segments' offsets; a truncated or replaced file restarted;
 * the bounds (one read's bytes shared fairly, a file far behind skipped
 * ahead with how much said); secrets redacted, one cut between two reads
 * too; links, FIFOs, hard links and the worker's own files never read.
 * Each test has its own mkdtemp storage root.
 */
#include "archive/live.h"
#include "fs/paths.h"
#include "secrets/secrets.h"
#include "base/util.h"
#include "render/staging.h"
#include "support_storage.h"

#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define LAUNCH "live-0042"
#define SECRET "ingest-tok-6f1d2c3b4a59687766554433221100ff"

static char root[64];
static forge_config_t *cfg;
static char *staging;
static forge_live_cursor_t *cursors;
static size_t cursor_count;
static forge_live_spec_t spec;

static void fx_init(void)
{
    char env[128];
    char *envp[] = {env, NULL};
    forge_error_t err = {0};

    snprintf(root, sizeof(root), "/tmp/forge-live-XXXXXX");
    cr_assert_not_null(mkdtemp(root));
    snprintf(env, sizeof(env), "FORGE_STORAGE_ROOT=%s", root);
    cr_assert_eq(forge_config_load(envp, &cfg, &err), FORGE_OK, "%s",
                 err.message);
    staging = forge_staging_path(cfg, LAUNCH, 1);
    support_sh_in(root, "mkdir -p '%s'", staging);
    spec =
        (forge_live_spec_t){LAUNCH, 1, NULL, 0, 65536, 65536, 1 << 20, false};
    cursors = NULL;
    cursor_count = 0;
}

static void fx_fini(void)
{
    forge_live_cursors_free(cursors, cursor_count);
    forge_secrets_reset();
    support_rm_tree(root);
    free(staging);
    forge_config_destroy(cfg);
}

TestSuite(live, .init = fx_init, .fini = fx_fini);

/* ---- helpers ------------------------------------------------------------- */

static void append(const char *rel, const void *data, size_t len)
{
    char *path = forge_path_join(staging, rel);
    FILE *f = fopen(path, "ab");

    cr_assert_not_null(f, "cannot write %s", path);
    cr_assert_eq(fwrite(data, 1, len, f), len);
    fclose(f);
    free(path);
}

static void append_text(const char *rel, const char *text)
{
    append(rel, text, strlen(text));
}

/* One read; the cursors kept for the next, as the loop keeps them. */
static void read_now(forge_live_read_t *r)
{
    forge_error_t err = {0};

    cr_assert_eq(forge_live_read(cfg, &spec, cursors, cursor_count, r, &err),
                 FORGE_OK, "%s", err.message);
    forge_live_cursors_free(cursors, cursor_count);
    cursors = forge_live_cursors_copy(r->cursors, r->cursor_count);
    cursor_count = r->cursor_count;
}

static const forge_live_segment_t *segment_of(const forge_live_read_t *r,
                                              const char *file)
{
    for (size_t i = 0; i < r->segment_count; i++)
        if (!strcmp(r->segments[i].file, file))
            return &r->segments[i];
    return NULL;
}

static uint64_t offset_of(const char *file)
{
    for (size_t i = 0; i < cursor_count; i++)
        if (!strcmp(cursors[i].name, file))
            return cursors[i].offset;
    return (uint64_t)-1;
}

/* ---- lines --------------------------------------------------------------- */

Test(live, new_lines_then_nothing_then_more)
{
    forge_live_read_t r;
    const forge_live_segment_t *s;

    append_text("main.out", "step 1 loss 2.3\nstep 2 loss 2.1\n");
    read_now(&r);
    cr_assert_eq(r.segment_count, 1);
    s = segment_of(&r, "main.out");
    cr_assert_eq(s->offset, 0);
    cr_assert_eq(s->length, 32);
    cr_assert_str_eq(s->text, "step 1 loss 2.3\nstep 2 loss 2.1\n");
    cr_assert_not(s->restarted);
    cr_assert_eq(s->skipped, 0);
    forge_live_read_clear(&r);

    read_now(&r);
    cr_assert_eq(r.segment_count, 0, "nothing new, nothing said");
    forge_live_read_clear(&r);

    append_text("main.out", "step 3 loss 1.9\n");
    read_now(&r);
    s = segment_of(&r, "main.out");
    cr_assert_eq(s->offset, 32);
    cr_assert_str_eq(s->text, "step 3 loss 1.9\n");
    forge_live_read_clear(&r);
}

Test(live, a_line_being_written_waits_until_the_file_stops_growing)
{
    forge_live_read_t r;
    const forge_live_segment_t *s;

    append_text("main.out", "done\nepoch 3 [=====");
    read_now(&r);
    s = segment_of(&r, "main.out");
    cr_assert_str_eq(s->text, "done\n", "the partial line waits");
    forge_live_read_clear(&r);

    read_now(&r); /* the file did not grow since: it goes as it is */
    s = segment_of(&r, "main.out");
    cr_assert_not_null(s);
    cr_assert_eq(s->offset, 5);
    cr_assert_str_eq(s->text, "epoch 3 [=====");
    forge_live_read_clear(&r);

    append_text("main.out", "====]\r");
    read_now(&r); /* a carriage return ends a line too (progress bars) */
    s = segment_of(&r, "main.out");
    cr_assert_str_eq(s->text, "====]\r");
    forge_live_read_clear(&r);
}

Test(live, the_final_read_takes_the_partial_line)
{
    forge_live_read_t r;

    append_text("main.out", "Traceback (most recent call last)");
    spec.final = true;
    read_now(&r);
    cr_assert_str_eq(segment_of(&r, "main.out")->text,
                     "Traceback (most recent call last)");
    forge_live_read_clear(&r);
}

/* Every byte once, whatever the writes' sizes against the reads'. */
Test(live, segments_rebuild_the_file_exactly)
{
    char expect[20000], got[20000];
    size_t elen = 0;

    memset(got, 0, sizeof(got));
    spec.max_bytes = spec.allowance = 4096;
    for (int round = 0; round < 40; round++) {
        forge_live_read_t r;
        char line[600];
        int n = snprintf(line, sizeof(line), "line %d %.*s\n", round,
                         (round * 37) % 500, "");
        memset(line + n - 1, 'x', (size_t)((round * 37) % 500));
        n += (round * 37) % 500;
        line[n - 1] = '\n';
        append("main.out", line, (size_t)n);
        memcpy(expect + elen, line, (size_t)n);
        elen += (size_t)n;
        read_now(&r);
        for (size_t i = 0; i < r.segment_count; i++) {
            const forge_live_segment_t *s = &r.segments[i];
            cr_assert_eq(strlen(s->text), s->length);
            memcpy(got + s->offset, s->text, s->length);
        }
        forge_live_read_clear(&r);
    }
    cr_assert_eq(offset_of("main.out"), elen);
    cr_assert_eq(memcmp(expect, got, elen), 0);
}

/* ---- restarts ------------------------------------------------------------ */

Test(live, a_truncated_file_restarts_from_zero)
{
    forge_live_read_t r;
    const forge_live_segment_t *s;
    char *path = forge_path_join(staging, "main.out");

    append_text("main.out", "run 1 line 1\nrun 1 line 2\n");
    read_now(&r);
    forge_live_read_clear(&r);
    cr_assert_eq(truncate(path, 0), 0);
    read_now(&r);
    s = segment_of(&r, "main.out");
    cr_assert_not_null(s, "a truncation is said even before new bytes");
    cr_assert(s->restarted);
    cr_assert_eq(s->offset, 0);
    cr_assert_eq(s->length, 0);
    forge_live_read_clear(&r);
    append_text("main.out", "run 2\n");
    read_now(&r);
    s = segment_of(&r, "main.out");
    cr_assert_not(s->restarted);
    cr_assert_eq(s->offset, 0);
    cr_assert_str_eq(s->text, "run 2\n");
    forge_live_read_clear(&r);
    free(path);
}

/* A job rewriting its file in place each time (`> metrics.csv`: the same
 * inode, truncated, then longer than before): the bytes before the old
 * offset changed, so it restarts, rather than being read on from there. */
Test(live, a_file_rewritten_in_place_past_its_offset_restarts)
{
    forge_live_read_t r;
    const forge_live_segment_t *s;

    append_text("metrics.csv", "step,loss\n1,2.3\n");
    read_now(&r);
    forge_live_read_clear(&r);
    support_sh_in(root,
                  "printf 'step,loss,lr\\n1,2.3,0.1\\n2,2.1,0.1\\n' > "
                  "'%s/metrics.csv'",
                  staging);
    read_now(&r);
    s = segment_of(&r, "metrics.csv");
    cr_assert_not_null(s);
    cr_assert(s->restarted);
    cr_assert_eq(s->offset, 0);
    cr_assert_str_eq(s->text, "step,loss,lr\n1,2.3,0.1\n2,2.1,0.1\n");
    forge_live_read_clear(&r);
    /* appended to afterwards: read on, no restart */
    append_text("metrics.csv", "3,1.9,0.1\n");
    read_now(&r);
    s = segment_of(&r, "metrics.csv");
    cr_assert_not(s->restarted);
    cr_assert_str_eq(s->text, "3,1.9,0.1\n");
    forge_live_read_clear(&r);
}

Test(live, a_replaced_file_restarts_even_when_it_is_longer)
{
    forge_live_read_t r;
    const forge_live_segment_t *s;

    append_text("metrics.csv", "a,1\n");
    read_now(&r);
    forge_live_read_clear(&r);
    support_sh_in(root,
                  "printf 'step,loss\\n1,2.3\\n2,2.1\\n' > '%s/new' && "
                  "mv '%s/new' '%s/metrics.csv'",
                  staging, staging, staging);
    read_now(&r);
    s = segment_of(&r, "metrics.csv");
    cr_assert(s->restarted);
    cr_assert_eq(s->offset, 0);
    cr_assert_str_eq(s->text, "step,loss\n1,2.3\n2,2.1\n");
    forge_live_read_clear(&r);
}

/* ---- bounds -------------------------------------------------------------- */

Test(live, one_read_is_shared_fairly_among_the_files)
{
    char big[8192];
    forge_live_read_t r;

    memset(big, 'o', sizeof(big));
    for (size_t i = 99; i < sizeof(big); i += 100)
        big[i] = '\n';
    append("main.out", big, sizeof(big));
    append_text("main.err", "warning: one line\n");
    spec.max_bytes = spec.allowance = 4096;
    read_now(&r);
    cr_assert_leq(r.bytes, 4096);
    cr_assert_str_eq(segment_of(&r, "main.err")->text, "warning: one line\n",
                     "the quiet file is not starved by the chatty one");
    cr_assert_geq(segment_of(&r, "main.out")->length, 3900);
    forge_live_read_clear(&r);
}

Test(live, the_allowance_bounds_a_read)
{
    char big[8192];
    forge_live_read_t r;

    memset(big, 'o', sizeof(big));
    for (size_t i = 99; i < sizeof(big); i += 100)
        big[i] = '\n';
    append("main.out", big, sizeof(big));
    spec.allowance = 1000;
    read_now(&r);
    cr_assert_eq(segment_of(&r, "main.out")->length, 1000,
                 "cut at the last line end within the allowance");
    forge_live_read_clear(&r);
    spec.allowance = 0;
    read_now(&r);
    cr_assert_eq(r.segment_count, 0);
    forge_live_read_clear(&r);
}

Test(live, a_file_far_behind_skips_ahead_to_a_line_start_and_says_so)
{
    size_t len = 1 << 20;
    char *big = forge_xmalloc(len);
    forge_live_read_t r;
    const forge_live_segment_t *s;

    memset(big, 'g', len);
    for (size_t i = 63; i < len; i += 64)
        big[i] = '\n';
    append("main.out", big, len);
    spec.max_bytes = spec.allowance = 4096;
    spec.skip_over = 65536;
    read_now(&r);
    s = segment_of(&r, "main.out");
    cr_assert_gt(s->skipped, len - 4096 - 64);
    cr_assert_eq(s->offset, s->skipped, "from 0: skipped to offset");
    cr_assert_eq(s->offset % 64, 0, "at a line start");
    cr_assert_eq(s->offset + s->length, len, "up to the end");
    cr_assert_leq(s->length, 4096);
    forge_live_read_clear(&r);
    free(big);
}

Test(live, a_line_longer_than_a_read_is_cut_within_its_bounds)
{
    char line[10000];
    forge_live_read_t r;
    uint64_t total = 0;

    memset(line, 'z', sizeof(line));
    append("main.out", line, sizeof(line));
    spec.max_bytes = spec.allowance = 4096;
    for (int i = 0; i < 4; i++) {
        read_now(&r);
        for (size_t k = 0; k < r.segment_count; k++) {
            cr_assert_leq(r.segments[k].length, 4096);
            total += r.segments[k].length;
        }
        forge_live_read_clear(&r);
    }
    cr_assert_eq(total, sizeof(line));
}

/* ---- secrets ------------------------------------------------------------- */

Test(live, secrets_are_redacted_registered_and_own)
{
    const char *own[] = {"pw9"};
    forge_live_read_t r;

    cr_assert_eq(forge_secret_add(SECRET), FORGE_OK);
    spec.secrets = own;
    spec.secret_count = 1;
    append_text("main.out", "token=" SECRET " and pw9 done\n");
    read_now(&r);
    cr_assert_str_eq(segment_of(&r, "main.out")->text,
                     "token=[REDACTED] and [REDACTED] done\n");
    forge_live_read_clear(&r);
}

/* A long line cut between two reads never shows a secret it crosses: the
 * cut goes before the secret's first bytes, which go whole next time. */
Test(live, a_secret_crossing_a_forced_cut_never_shows)
{
    char line[200];
    forge_live_read_t r;
    forge_buf_t all = FORGE_BUF_INIT;

    cr_assert_eq(forge_secret_add(SECRET), FORGE_OK);
    memset(line, 'a', sizeof(line));
    memcpy(line + 90, SECRET, strlen(SECRET));
    append("main.out", line, sizeof(line));
    spec.max_bytes = spec.allowance = 100; /* the cut falls in the secret */
    for (int i = 0; i < 4; i++) {
        read_now(&r);
        for (size_t k = 0; k < r.segment_count; k++)
            forge_buf_puts(&all, r.segments[k].text);
        forge_live_read_clear(&r);
    }
    cr_assert_null(strstr(forge_buf_str(&all), "ingest-tok"), "%s",
                   forge_buf_str(&all));
    cr_assert_null(strstr(forge_buf_str(&all), "221100ff"));
    cr_assert_not_null(strstr(forge_buf_str(&all), "[REDACTED]"));
    forge_buf_clear(&all);
}

Test(live, text_is_valid_utf8_and_never_cut_inside_a_character)
{
    char line[300];
    forge_live_read_t r;

    for (size_t i = 0; i + 2 <= sizeof(line); i += 2)
        memcpy(line + i, "\xc3\xa9", 2); /* é: 2 bytes each */
    append("main.out", line, sizeof(line));
    append("main.out", "\xff\x00x\n", 4);
    spec.max_bytes = spec.allowance = 101; /* odd: a cut inside é */
    read_now(&r);
    cr_assert_eq(segment_of(&r, "main.out")->length, 100);
    forge_live_read_clear(&r);
    spec.max_bytes = spec.allowance = 4096;
    read_now(&r);
    cr_assert_not_null(strstr(segment_of(&r, "main.out")->text,
                              "\xEF\xBF\xBD\xEF\xBF\xBDx\n"));
    forge_live_read_clear(&r);
}

/* ---- what is never read -------------------------------------------------- */

Test(live, links_fifos_hard_links_and_the_workers_files_are_never_read)
{
    forge_live_read_t r;

    support_sh_in(root,
                  "echo outside-secret > '%s/../../../outside' && "
                  "ln -s ../../../outside '%s/link.out' && "
                  "mkfifo '%s/pipe.out' && "
                  "ln '%s/../../../outside' '%s/hard.out' && "
                  "echo '#!/bin/sh' > '%s/job.sh' && "
                  "echo 'TOKEN=x' > '%s/credentials'",
                  staging, staging, staging, staging, staging, staging,
                  staging);
    append_text("main.out", "mine\n");
    read_now(&r);
    cr_assert_eq(r.segment_count, 1, "only the job's own regular file");
    cr_assert_str_eq(r.segments[0].file, "main.out");
    cr_assert_eq(r.cursor_count, 1);
    forge_live_read_clear(&r);
}

Test(live, a_link_in_place_of_the_staging_folder_is_refused)
{
    forge_live_read_t r;
    char *parent = forge_path_join(root, "staging/" LAUNCH);

    support_sh_in(root,
                  "rm -rf '%s' && mkdir -p '%s/../elsewhere' && "
                  "echo secret > '%s/../elsewhere/main.out' && "
                  "ln -s ../elsewhere '%s/1'",
                  staging, root, root, parent);
    read_now(&r);
    cr_assert_eq(r.segment_count, 0);
    cr_assert_not_null(r.unsafe);
    forge_live_read_clear(&r);
    free(parent);
}

Test(live, no_staging_folder_yet_is_nothing)
{
    forge_live_read_t r;

    support_rm_tree(staging);
    read_now(&r);
    cr_assert_eq(r.segment_count, 0);
    cr_assert_null(r.unsafe);
    forge_live_read_clear(&r);
}
