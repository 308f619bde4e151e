/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_owner.c - the launch table (src/record/owner.c) and the secrets of the
 * requests it holds: registered for redaction (log.h) when a request enters
 * (accepted or restored), unregistered when it leaves (a newer attempt, a
 * revoked partition, the table destroyed) or is dropped (archived, or
 * cleaned without logs); a value two launches share stays redacted until
 * neither holds it. Which values are a request's secrets (its ingest token,
 * each secret_env value) is checked on a request built by hand. And the
 * partitions' generations the runners check (generation.h).
 */
#include "log/log.h"
#include "record/owner.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#define TOKEN_A "ingest-token-of-a-1111"
#define TOKEN_B "ingest-token-of-b-2222"
#define SHARED  "ingest-token-shared-3333"

static void setup(void)
{
    forge_log_reset();
}

TestSuite(owner, .init = setup, .fini = forge_log_reset);

static bool redacted(const char *secret)
{
    char *r = forge_log_redact(secret);
    bool yes = !strcmp(r, FORGE_REDACTED);

    free(r);
    return yes;
}

/* A parsed launch request carrying token as its ingest token (new). */
static forge_request_t *request_of(const char *id, const char *token)
{
    char json[1024];
    forge_request_t *req = NULL;
    forge_error_t err = {0};

    snprintf(json, sizeof(json),
             "{\"kind\": \"launch\", \"launch_id\": \"%s\", \"image\": "
             "{\"path\": \"images/a.sif\", \"format\": \"sif\"}, "
             "\"command\": [\"run\"], \"pools\": [{\"name\": \"p\", "
             "\"series\": \"h200\", \"nodes\": 1}], \"ingest\": "
             "{\"endpoint\": \"https://ingest.example\", \"token\": \"%s\"}}",
             id, token);
    cr_assert_eq(forge_request_parse(json, strlen(json), &req, &err), FORGE_OK,
                 "%s", err.message);
    return req;
}

static forge_entry_t *put(forge_owner_t *o, const char *id, int attempt,
                          const char *token, int32_t partition)
{
    return forge_owner_put(o, forge_launch_record_new(id, attempt, "{}", 2),
                           token ? request_of(id, token) : NULL, partition);
}

static void collect(void *ctx, const char *secret)
{
    char *list = ctx;

    strcat(list, secret);
    strcat(list, ";");
}

Test(owner, a_requests_secrets_are_its_token_and_secret_env_values)
{
    forge_kv_t secret_env[] = {
        {"API_KEY", "secret-env-value-1"}, {"EMPTY", NULL}, {"PIN", "123"}};
    forge_request_t req = {0};
    char list[256] = "";

    req.kind = FORGE_REQUEST_LAUNCH;
    req.launch.ingest_token = TOKEN_A;
    req.launch.secret_env = secret_env;
    req.launch.secret_env_count = 3;
    forge_request_each_secret(&req, collect, list);
    cr_assert_str_eq(list, TOKEN_A ";secret-env-value-1;123;");
    list[0] = '\0';
    req.kind = FORGE_REQUEST_CANCEL;
    forge_request_each_secret(&req, collect, list);
    forge_request_each_secret(NULL, collect, list);
    cr_assert_str_eq(list, "", "a cancel, or no request: none");
}

Test(owner, a_held_request_has_its_secrets_registered_until_dropped)
{
    forge_owner_t *o = forge_owner_new();
    forge_entry_t *e;

    cr_assert_not(redacted(TOKEN_A));
    e = put(o, "A", 1, TOKEN_A, 0);
    cr_assert(redacted(TOKEN_A));
    forge_owner_drop_request(e);
    cr_assert_null(e->held);
    cr_assert_null(e->rec->request);
    cr_assert_not(redacted(TOKEN_A), "archived: let go");
    forge_owner_drop_request(e); /* twice: nothing more */
    cr_assert_eq(forge_owner_count(o), 1, "the launch itself stays");
    forge_owner_destroy(o);
}

Test(owner, a_newer_attempt_replaces_the_old_ones_secrets)
{
    forge_owner_t *o = forge_owner_new();

    put(o, "A", 1, TOKEN_A, 0);
    put(o, "A", 2, TOKEN_B, 0);
    cr_assert_not(redacted(TOKEN_A));
    cr_assert(redacted(TOKEN_B));
    cr_assert_eq(forge_owner_count(o), 1);
    put(o, "A", 3, TOKEN_B, 0); /* the same value again: kept throughout */
    cr_assert(redacted(TOKEN_B));
    forge_owner_destroy(o);
    cr_assert_not(redacted(TOKEN_B), "destroyed: nothing held");
}

Test(owner, a_shared_value_stays_until_neither_holds_it)
{
    forge_owner_t *o = forge_owner_new();
    forge_entry_t *a = put(o, "A", 1, SHARED, 0);

    put(o, "B", 1, SHARED, 1);
    forge_owner_drop_request(a);
    cr_assert(redacted(SHARED), "B still holds it");
    forge_owner_drop(o, 1); /* B's partition revoked */
    cr_assert_not(redacted(SHARED));
    cr_assert_eq(forge_owner_count(o), 1);
    forge_owner_destroy(o);
}

Test(owner, helds_registered_together_count_as_registered_one_by_one)
{
    forge_request_t *req[] = {request_of("A", TOKEN_A), request_of("B", SHARED),
                              request_of("C", SHARED)};
    forge_held_t *held[] = {forge_held_of_request(req[0]), NULL,
                            forge_held_of_request(req[1]),
                            forge_held_of_request(req[2])};

    forge_owner_register_many(held, 4); /* a restore's batch, one lock */
    cr_assert(redacted(TOKEN_A));
    cr_assert(redacted(SHARED));
    forge_owner_unregister(held[2]);
    cr_assert(redacted(SHARED), "registered twice: C still holds it");
    forge_owner_unregister(held[3]);
    cr_assert_not(redacted(SHARED));
    forge_owner_unregister(held[0]);
    cr_assert_not(redacted(TOKEN_A));
    for (size_t i = 0; i < 4; i++)
        forge_held_free(held[i]);
    for (size_t i = 0; i < 3; i++)
        forge_request_destroy(req[i]);
}

Test(owner, a_revoked_partition_takes_its_launches_secrets)
{
    forge_owner_t *o = forge_owner_new();

    put(o, "A", 1, TOKEN_A, 0);
    put(o, "B", 1, TOKEN_B, 1);
    put(o, "C", 1, NULL, 0); /* refused: no request known */
    forge_owner_drop(o, 0);
    cr_assert_not(redacted(TOKEN_A));
    cr_assert(redacted(TOKEN_B));
    cr_assert_eq(forge_owner_count(o), 1);
    forge_owner_destroy(o);
    cr_assert_not(redacted(TOKEN_B));
}

/* Readiness, the partition count and due restores, as the loop asks them
 * at every iteration (counts kept, no scan). */
Test(owner, partition_bookkeeping)
{
    forge_owner_t *o = forge_owner_new();

    cr_assert(forge_owner_ready(o), "nothing owned: nothing restoring");
    cr_assert_eq(forge_owner_partition_count(o), 0);
    forge_owner_assign(o, 0);
    forge_owner_assign(o, 5);
    cr_assert_not(forge_owner_ready(o));
    cr_assert_eq(forge_owner_partition_count(o), 2);
    forge_owner_set_ready(o, 0);
    cr_assert_not(forge_owner_ready(o));
    cr_assert_eq(forge_owner_restore_due(o, 1000), -1, "no failure yet");
    cr_assert_eq(forge_owner_restore_failed(o, 5, 2000), 1);
    cr_assert_eq(forge_owner_restore_due(o, 1999), -1);
    cr_assert_eq(forge_owner_restore_due(o, 2000), 5);
    cr_assert_eq(forge_owner_restore_failed(o, 5, 4000), 2);
    forge_owner_set_ready(o, 5);
    cr_assert(forge_owner_ready(o));
    cr_assert_eq(forge_owner_restore_failures(o, 5), 0);
    cr_assert_eq(forge_owner_restore_due(o, 9000), -1);
    forge_owner_drop(o, 0);
    forge_owner_drop(o, 0); /* twice: nothing more */
    cr_assert_eq(forge_owner_partition_count(o), 1);
    forge_owner_destroy(o);
}

/* Restores that waited for a pass and restores that failed take turns by
 * how long each has been due, so a partition failing again and again never
 * keeps a waiting one from its turn; waiting is no failure (no backoff). */
Test(owner, the_restore_due_longest_goes_first)
{
    forge_owner_t *o = forge_owner_new();

    for (int32_t p = 0; p < 3; p++)
        forge_owner_assign(o, p);
    forge_owner_restore_later(o, 2, 1000); /* waits for the next pass */
    cr_assert_eq(forge_owner_restore_failed(o, 0, 1500), 1);
    cr_assert_eq(forge_owner_restore_due(o, 999), -1);
    cr_assert_eq(forge_owner_restore_due(o, 2000), 2, "due since 1000");
    cr_assert_eq(forge_owner_restore_failures(o, 2), 0, "not a failure");
    forge_owner_set_ready(o, 2);
    cr_assert_eq(forge_owner_restore_due(o, 2000), 0);
    forge_owner_restore_later(o, 1, 1200);
    cr_assert_eq(forge_owner_restore_due(o, 2000), 1, "due since 1200");
    forge_owner_set_ready(o, 1); /* a ready partition waits for nothing */
    forge_owner_restore_later(o, 1, 100);
    cr_assert_eq(forge_owner_restore_due(o, 2000), 0);
    forge_owner_destroy(o);
}

/* Generations (generation.h): each assignment or restore of a partition
 * begins a new one, entries carry the one they were made in, and a
 * partition leaving (released on a rebalance, dropped) holds none. */
Test(owner, partitions_have_generations_and_entries_carry_them)
{
    forge_owner_t *o = forge_owner_new();
    const forge_generations_t *g = forge_owner_generations(o);
    forge_entry_t *e;
    uint64_t first, second;

    cr_assert_eq(forge_generation_of(g, 3), 0, "not held yet");
    forge_owner_assign(o, 3);
    first = forge_generation_of(g, 3);
    cr_assert_neq(first, 0);
    e = put(o, "L1", 1, NULL, 3);
    cr_assert_eq(e->generation, first);
    cr_assert(forge_generation_current(g, 3, first));

    forge_owner_drop(o, 3); /* a rewind: dropped and restored */
    forge_owner_assign(o, 3);
    second = forge_generation_of(g, 3);
    cr_assert_neq(second, first);
    cr_assert_not(forge_generation_current(g, 3, first));
    e = put(o, "L1", 1, NULL, 3);
    cr_assert_eq(e->generation, second);

    forge_owner_release(o, 3); /* leaving: entries stay, work is stale */
    cr_assert_eq(forge_owner_find(o, "L1"), e);
    cr_assert_not(forge_generation_current(g, 3, second));
    cr_assert_eq(forge_generation_of(g, 3), 0);
    cr_assert_not(forge_generation_current(g, 3, 0), "0 is never current");
    forge_owner_destroy(o);
}

static void note_walked(void *ctx, forge_entry_t *e)
{
    char *list = ctx;

    strcat(list, e->rec->launch_id);
    strcat(list, ";");
}

/* The launches forge_owner_each walks, as "ID;ID;", newest first: into
 * walked. */
static void walk(forge_owner_t *o, char *walked)
{
    walked[0] = '\0';
    forge_owner_each(o, note_walked, walked);
}

static forge_entry_t *settle(forge_entry_t *e)
{
    e->rec->state = FORGE_STATE_SUCCEEDED;
    e->rec->cleaned = true;
    return e;
}

Test(owner, the_walk_leaves_settled_launches_out)
{
    forge_owner_t *o = forge_owner_new();
    char walked[256];
    forge_entry_t *a, *b;
    forge_launch_record_t *ended;

    a = put(o, "A", 1, NULL, 0);
    b = put(o, "B", 1, NULL, 1);
    put(o, "C", 1, NULL, 0);
    walk(o, walked);
    cr_assert_str_eq(walked, "C;B;A;");
    cr_assert_eq(forge_owner_open_count(o), 3);

    /* terminal but not cleaned: still something to do */
    b->rec->state = FORGE_STATE_FAILED;
    walk(o, walked);
    cr_assert_str_eq(walked, "C;B;A;");
    settle(b); /* walked once more as it settles, then left out */
    walk(o, walked);
    cr_assert_str_eq(walked, "C;B;A;");
    walk(o, walked);
    cr_assert_str_eq(walked, "C;A;");
    cr_assert_eq(forge_owner_open_count(o), 2);
    cr_assert_eq(forge_owner_count(o), 3, "a settled launch stays known");
    cr_assert_eq(forge_owner_find(o, "B"), b);

    /* a newer attempt of a settled launch is open again */
    cr_assert_eq(put(o, "B", 2, NULL, 1), b);
    walk(o, walked);
    cr_assert_str_eq(walked, "B;C;A;");

    /* a record restored settled never joins; the head leaving relinks */
    ended = forge_launch_record_new("D", 1, "{}", 2);
    ended->state = FORGE_STATE_CANCELLED;
    ended->cleaned = true;
    forge_owner_put(o, ended, NULL, 0);
    walk(o, walked);
    cr_assert_str_eq(walked, "B;C;A;");
    settle(a);
    walk(o, walked);
    walk(o, walked);
    cr_assert_str_eq(walked, "B;C;");

    /* restored ended and cleaned with a sweep for late jobs due (a long
     * chaos run: left out of the walk, its held late job stayed): open */
    ended = forge_launch_record_new("E", 1, "{}", 2);
    ended->state = FORGE_STATE_CANCELLED;
    ended->cleaned = true;
    ended->sweep_due = true;
    forge_owner_put(o, ended, NULL, 0);
    walk(o, walked);
    cr_assert_str_eq(walked, "E;B;C;");
    forge_owner_find(o, "E")->rec->sweep_due = false; /* swept */
    walk(o, walked);
    walk(o, walked);
    cr_assert_str_eq(walked, "B;C;");

    /* a dropped partition's launches leave the list with the table */
    forge_owner_drop(o, 0);
    walk(o, walked);
    cr_assert_str_eq(walked, "B;");
    cr_assert_eq(forge_owner_open_count(o), 1);
    cr_assert_eq(forge_owner_count(o), 1);
    forge_owner_destroy(o);
}
