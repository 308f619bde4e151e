/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_request.c - request parsing and validation: both envelopes, every
 * error code of the contract with its JSON path, the configuration-dependent
 * checks, unknown fields, cancel requests, the checkpoint signal, the
 * live logs flag (logs.live), and salvaging a launch_id from a refused
 * message.
 */
#include "prepare/prepare.h"
#include "request/request.h"
#include "request/request_check.h"

#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ROOT "/tmp/forge-request-test"

static forge_config_t *cfg;
static forge_series_catalog_t *cat;

static void setup(void)
{
    static const char series[] =
        "{\"series\": {\"h200\": {\"slurm_constraint\": \"h200\", "
        "\"gpus_per_node\": 8}, \"l4\": {\"gpus_per_node\": 4}}}";
    char *envp[] = {"FORGE_STORAGE_ROOT=" ROOT, "FORGE_MOUNT_ALLOW=/datasets",
                    "FORGE_SLURM_RUNTIME_PROFILE=apptainer", NULL};
    forge_error_t err = {0};

    cr_assert_eq(system("mkdir -p " ROOT "/runtimes/images && touch " ROOT
                        "/runtimes/images/a.sif " ROOT
                        "/runtimes/images/a.sqsh && mkdir -p " ROOT
                        "/outside && touch " ROOT
                        "/outside/b.sif && ln -sf " ROOT "/outside/b.sif " ROOT
                        "/runtimes/images/escape.sif"),
                 0);
    cr_assert_eq(forge_config_load(envp, &cfg, &err), 0, "%s", err.message);
    cr_assert_eq(forge_series_parse(series, strlen(series), &cat, &err), 0);
}

static void teardown(void)
{
    forge_series_catalog_destroy(cat);
    forge_config_destroy(cfg);
}

TestSuite(request, .init = setup, .fini = teardown);

#define BASE                                                                   \
    "\"launch_id\": \"L1\", \"image\": {\"path\": \"images/a.sif\", "          \
    "\"format\": \"sif\"}, \"command\": [\"run\"], \"pools\": "                \
    "[{\"name\": \"p\", \"series\": \"h200\", \"nodes\": 1}]"

static forge_prepared_t *prepare_ok(const char *json)
{
    forge_prepared_t *p = NULL;
    forge_error_t err = {0};

    cr_assert_eq(forge_prepare(json, strlen(json), cfg, cat, &p, &err), 0,
                 "%s: %s", forge_rc_name(err.code), err.message);
    return p;
}

Test(request, bare_launch_with_defaults)
{
    forge_prepared_t *p = prepare_ok("{\"kind\": \"launch\", " BASE "}");
    const forge_launch_t *l = &p->request->launch;

    cr_assert_eq(p->request->kind, FORGE_REQUEST_LAUNCH);
    cr_assert_not(p->request->cloudevent);
    cr_assert_str_eq(l->launch_id, "L1");
    cr_assert_eq(l->attempt, 1);
    cr_assert_eq(l->pools[0].tasks_per_node, 1);
    cr_assert_eq(l->pools[0].gpus_per_node, 0);
    cr_assert_eq(l->time_limit_minutes, 0);
    cr_assert_eq(l->command_count, 1);
    cr_assert_null(l->command[1]);
    forge_prepared_destroy(p);
}

Test(request, cloudevent_launch_and_unknown_fields_ignored)
{
    forge_prepared_t *p = prepare_ok(
        "{\"specversion\": \"1.0\", \"id\": \"e1\", \"source\": \"x\", "
        "\"type\": \"forge.launch.requested\", \"future\": 1, \"data\": {" BASE
        ", \"attempt\": 3.0, \"not_in_v1\": {\"x\": [1]}}}");

    cr_assert(p->request->cloudevent);
    cr_assert_str_eq(p->request->event_id, "e1");
    cr_assert_eq(p->request->launch.attempt, 3, "3.0 is an integer");
    cr_assert_null(strstr(p->script, "not_in_v1"));
    forge_prepared_destroy(p);
}

Test(request, cancel_bare_and_cloudevent)
{
    forge_prepared_t *p =
        prepare_ok("{\"kind\": \"cancel\", \"launch_id\": \"L1\"}");

    cr_assert_eq(p->request->kind, FORGE_REQUEST_CANCEL);
    cr_assert_eq(p->request->cancel.attempt, 0, "absent = latest");
    cr_assert_null(p->script);
    forge_prepared_destroy(p);
    p = prepare_ok("{\"specversion\": \"1.0\", \"id\": \"c\", \"source\": "
                   "\"s\", \"type\": "
                   "\"forge.launch.cancel_requested\", \"data\": "
                   "{\"launch_id\": \"L1\", \"attempt\": 2, \"reason\": "
                   "\"user asked\"}}");
    cr_assert_eq(p->request->cancel.attempt, 2);
    cr_assert_str_eq(p->request->cancel.reason, "user asked");
    forge_prepared_destroy(p);
}

/* ---- every refusal: code and JSON path -------------------------------- */

typedef struct bad_request {
    char json[600];
    char code[32];
    char field[64];
} bad_request_t;

#define LAUNCH(extra) "{\"kind\": \"launch\", " BASE extra "}"
#define REPLACE_POOLS(pools)                                                   \
    "{\"kind\": \"launch\", \"launch_id\": \"L1\", \"image\": {\"path\": "     \
    "\"images/a.sif\", \"format\": \"sif\"}, \"command\": [\"run\"], "         \
    "\"pools\": " pools "}"

static bad_request_t bad[] = {
    {"{\"kind\": \"launch\",", "invalid_json", "$"},
    {"[1, 2]", "schema", "$"},
    {"{\"launch_id\": \"L1\"}", "schema", "$.kind"},
    {"{\"kind\": \"launch\", \"kind\": \"cancel\"}", "invalid_json", "$"},
    {"{\"specversion\": \"0.3\", \"type\": \"forge.launch.requested\"}",
     "schema", "$.specversion"},
    {"{\"specversion\": \"1.0\", \"type\": \"other\"}", "schema", "$.type"},
    {"{\"specversion\": \"1.0\", \"type\": \"forge.launch.requested\", "
     "\"id\": \"e\", \"source\": \"s\", \"data\": {\"launch_id\": \"L1\"}}",
     "schema", "$.data.image"},
    {"{\"specversion\": \"1.0\", \"type\": \"forge.launch.requested\", "
     "\"id\": \"e\", \"source\": \"s\", \"data\": {\"kind\": \"cancel\", "
     "\"launch_id\": \"L1\"}}",
     "schema", "$.data.kind"},
    {"{\"specversion\": \"1.0\", \"type\": \"forge.launch.requested\", "
     "\"source\": \"s\", \"data\": {}}",
     "schema", "$.id"},
    {"{\"specversion\": \"1.0\", \"type\": \"forge.launch.requested\", "
     "\"id\": \"e\", \"source\": \"\", \"data\": {}}",
     "schema", "$.source"},
    {"{\"kind\": \"launch\", \"launch_id\": \"-bad\"}", "schema",
     "$.launch_id"},
    {LAUNCH(", \"attempt\": 0"), "schema", "$.attempt"},
    {LAUNCH(", \"attempt\": 1.5"), "schema", "$.attempt"},
    {LAUNCH(", \"project\": \"a b\""), "schema", "$.project"},
    {LAUNCH(", \"framework\": {\"kind\": \"PyTorch\"}"), "schema",
     "$.framework.kind"},
    {"{\"kind\": \"launch\", \"launch_id\": \"L1\", \"image\": {\"path\": "
     "\"docker://nvcr.io/nvidia/pytorch:24.01\", \"format\": \"sif\"}}",
     "oci_image_refused", "$.image.path"},
    {"{\"kind\": \"launch\", \"launch_id\": \"L1\", \"image\": {\"path\": "
     "\"nvcr.io/nvidia/pytorch:24.01\", \"format\": \"sif\"}}",
     "oci_image_refused", "$.image.path"},
    {"{\"kind\": \"launch\", \"launch_id\": \"L1\", \"image\": {\"path\": "
     "\"ubuntu@sha256:abc\", \"format\": \"sif\"}}",
     "oci_image_refused", "$.image.path"},
    {"{\"kind\": \"launch\", \"launch_id\": \"L1\", \"image\": {\"path\": "
     "\"a.sif\", \"format\": \"docker\"}}",
     "schema", "$.image.format"},
    {"{\"kind\": \"launch\", \"launch_id\": \"L1\", \"image\": {\"path\": "
     "\"../a.sif\", \"format\": \"sif\"}}",
     "schema", "$.image.path"},
    {"{\"kind\": \"launch\", \"launch_id\": \"L1\", \"image\": {\"path\": "
     "\"images/a.sif\", \"format\": \"sif\"}, \"command\": \"run --x\"}",
     "schema", "$.command"},
    {"{\"kind\": \"launch\", \"launch_id\": \"L1\", \"image\": {\"path\": "
     "\"images/a.sif\", \"format\": \"sif\"}, \"command\": []}",
     "schema", "$.command"},
    {"{\"kind\": \"launch\", \"launch_id\": \"L1\", \"image\": {\"path\": "
     "\"images/a.sif\", \"format\": \"sif\"}, \"command\": [\"a\", "
     "\"b\\u0000c\"]}",
     "schema", "$.command[1]"},
    {"{\"kind\": \"launch\", \"launch_id\": \"L1\", \"image\": {\"path\": "
     "\"images/a.sif\", \"format\": \"sif\"}, \"command\": [\"-rf\"]}",
     "schema", "$.command[0]"},
    {"{\"kind\": \"launch\", \"launch_id\": \"L1\", \"image\": {\"path\": "
     "\"images/a.sif\", \"format\": \"sif\"}, \"command\": [\"A=B\"]}",
     "schema", "$.command[0]"},
    {LAUNCH(", \"workdir\": \"relative\""), "schema", "$.workdir"},
    {LAUNCH(", \"env\": {\"SLURM_JOB_ID\": \"1\"}"), "env_refused",
     "$.env.SLURM_JOB_ID"},
    {LAUNCH(", \"env\": {\"FORGE_POOL\": \"x\"}"), "env_refused",
     "$.env.FORGE_POOL"},
    {LAUNCH(", \"env\": {\"BAD-NAME\": \"x\"}"), "env_refused",
     "$.env.BAD-NAME"},
    {LAUNCH(", \"env\": {\"A\": \"x\\u0000y\"}"), "schema", "$.env.A"},
    {LAUNCH(", \"env\": {\"A\": 1}"), "schema", "$.env.A"},
    {LAUNCH(", \"secret_env\": {\"SLURM_JOB_ID\": \"1\"}"), "env_refused",
     "$.secret_env.SLURM_JOB_ID"},
    {LAUNCH(", \"secret_env\": {\"FORGE_INGEST_TOKEN\": \"x\"}"), "env_refused",
     "$.secret_env.FORGE_INGEST_TOKEN"},
    {LAUNCH(", \"secret_env\": {\"APPTAINER_BIND\": \"x\"}"), "env_refused",
     "$.secret_env.APPTAINER_BIND"},
    {LAUNCH(", \"secret_env\": {\"PREPEND_PATH\": \"x\"}"), "env_refused",
     "$.secret_env.PREPEND_PATH"},
    {LAUNCH(", \"secret_env\": {\"a[0]\": \"x\"}"), "env_refused",
     "$.secret_env.a[0]"},
    {LAUNCH(", \"secret_env\": {\"A\": \"x\\u0000y\"}"), "schema",
     "$.secret_env.A"},
    {LAUNCH(", \"secret_env\": {\"A\": 1}"), "schema", "$.secret_env.A"},
    {LAUNCH(", \"secret_env\": [\"A\"]"), "schema", "$.secret_env"},
    {LAUNCH(", \"env\": {\"A\": \"1\", \"B\": \"2\"}, \"secret_env\": "
            "{\"C\": \"3\", \"B\": \"4\"}"),
     "env_refused", "$.secret_env.B"},
    {LAUNCH(", \"secret_env\": {\"B\": \"4\"}, \"env\": {\"B\": \"2\"}"),
     "env_refused", "$.secret_env.B"},
    {LAUNCH(", \"tenant\": \"\""), "schema", "$.tenant"},
    {LAUNCH(", \"tenant\": \"-lab\""), "schema", "$.tenant"},
    {LAUNCH(", \"tenant\": \"lab/a\""), "schema", "$.tenant"},
    {LAUNCH(", \"tenant\": \"lab\\n\""), "schema", "$.tenant"},
    {LAUNCH(", \"tenant\": 7"), "schema", "$.tenant"},
    {LAUNCH(
         ", \"tenant\": "
         "\"t2345678901234567890123456789012345678901234567890123456789012345"
         "\""),
     "schema", "$.tenant"},
    {LAUNCH(", \"mounts\": [{\"source\": \"a:b\", \"target\": \"/x\"}]"),
     "mount_refused", "$.mounts[0].source"},
    {LAUNCH(", \"mounts\": [{\"source\": \"a\", \"target\": \"/x,/y\"}]"),
     "mount_refused", "$.mounts[0].target"},
    {LAUNCH(", \"mounts\": [{\"source\": \"a/../../etc\", \"target\": "
            "\"/x\"}]"),
     "mount_refused", "$.mounts[0].source"},
    {LAUNCH(", \"mounts\": [{\"source\": \"a\", \"target\": \"x\"}]"),
     "mount_refused", "$.mounts[0].target"},
    {LAUNCH(", \"mounts\": [{\"source\": \"/etc\", \"target\": \"/x\"}]"),
     "mount_refused", "$.mounts[0].source"},
    {LAUNCH(", \"mounts\": [{\"target\": \"/x\"}]"), "schema",
     "$.mounts[0].source"},
    {REPLACE_POOLS("[]"), "schema", "$.pools"},
    {REPLACE_POOLS("[{\"name\": \"p\", \"series\": \"h200\", \"nodes\": 0}]"),
     "schema", "$.pools[0].nodes"},
    {REPLACE_POOLS("[{\"name\": \"p\", \"series\": \"h200\", \"nodes\": 1, "
                   "\"gpus_per_node\": 65}]"),
     "schema", "$.pools[0].gpus_per_node"},
    {REPLACE_POOLS("[{\"name\": \"p\", \"series\": \"h200\", \"nodes\": 1}, "
                   "{\"name\": \"p\", \"series\": \"h200\", \"nodes\": 1}]"),
     "schema", "$.pools[1].name"},
    {REPLACE_POOLS("[{\"name\": \"p\", \"series\": \"b300\", \"nodes\": 1}]"),
     "series_unknown", "$.pools[0].series"},
    {REPLACE_POOLS("[{\"name\": \"p\", \"series\": \"l4\", \"nodes\": 1}]"),
     "series_unconstrained", "$.pools[0].series"},
    {REPLACE_POOLS("[{\"name\": \"p\", \"series\": \"h200\", \"nodes\": 1, "
                   "\"gpus_per_node\": 9}]"),
     "schema", "$.pools[0].gpus_per_node"},
    {LAUNCH(", \"roles\": {\"actor\": \"nope\"}"), "schema", "$.roles.actor"},
    {LAUNCH(", \"time_limit_minutes\": 0"), "schema", "$.time_limit_minutes"},
    {LAUNCH(", \"partition\": \"a;b\""), "schema", "$.partition"},
    {LAUNCH(", \"ingest\": {\"endpoint\": \"https://x\"}"), "schema",
     "$.ingest.token"},
    {LAUNCH(", \"ingest\": {\"endpoint\": \"ftp://x\", \"token\": \"t\"}"),
     "schema", "$.ingest.endpoint"},
    {LAUNCH(", \"labels\": {\"a\": 5}"), "schema", "$.labels.a"},
    {LAUNCH(", \"retry\": 3"), "schema", "$.retry"},
    {LAUNCH(", \"retry\": {\"max_tries\": 0}"), "schema", "$.retry.max_tries"},
    {LAUNCH(", \"retry\": {\"max_tries\": 11}"), "schema", "$.retry.max_tries"},
    {LAUNCH(", \"retry\": {\"max_tries\": 2.5}"), "schema",
     "$.retry.max_tries"},
    {LAUNCH(", \"retry\": {\"on\": \"node_fail\"}"), "schema", "$.retry.on"},
    {LAUNCH(", \"retry\": {\"on\": [\"node_fail\", \"oom\"]}"), "schema",
     "$.retry.on[1]"},
    {LAUNCH(", \"retry\": {\"on\": [1]}"), "schema", "$.retry.on[0]"},
    {LAUNCH(", \"retry\": {\"on\": [\"timeout\", \"timeout\"]}"), "schema",
     "$.retry.on"},
    {LAUNCH(", \"retry\": {\"backoff_s\": -1}"), "schema", "$.retry.backoff_s"},
    {LAUNCH(", \"retry\": {\"backoff_s\": 601}"), "schema",
     "$.retry.backoff_s"},
    {LAUNCH(", \"retry\": {\"exclude_failed_nodes\": 1}"), "schema",
     "$.retry.exclude_failed_nodes"},
    {LAUNCH(", \"checkpoint_signal\": \"USR1\""), "schema",
     "$.checkpoint_signal"},
    {LAUNCH(", \"checkpoint_signal\": [\"USR1\", 60]"), "schema",
     "$.checkpoint_signal"},
    {LAUNCH(", \"checkpoint_signal\": {}"), "schema",
     "$.checkpoint_signal.signal"},
    {LAUNCH(", \"checkpoint_signal\": {\"signal\": \"KILL\"}"), "schema",
     "$.checkpoint_signal.signal"},
    {LAUNCH(", \"checkpoint_signal\": {\"signal\": \"STOP\"}"), "schema",
     "$.checkpoint_signal.signal"},
    {LAUNCH(", \"checkpoint_signal\": {\"signal\": \"SIGUSR1\"}"), "schema",
     "$.checkpoint_signal.signal"},
    {LAUNCH(", \"checkpoint_signal\": {\"signal\": \"usr1\"}"), "schema",
     "$.checkpoint_signal.signal"},
    {LAUNCH(", \"checkpoint_signal\": {\"signal\": \"USR1\\u0000\"}"), "schema",
     "$.checkpoint_signal.signal"},
    {LAUNCH(", \"checkpoint_signal\": {\"signal\": 10}"), "schema",
     "$.checkpoint_signal.signal"},
    {LAUNCH(", \"checkpoint_signal\": {\"signal\": null}"), "schema",
     "$.checkpoint_signal.signal"},
    {LAUNCH(", \"checkpoint_signal\": {\"signal\": \"USR1\", "
            "\"seconds_before_end\": 65536}"),
     "schema", "$.checkpoint_signal.seconds_before_end"},
    {LAUNCH(", \"checkpoint_signal\": {\"signal\": \"USR1\", "
            "\"seconds_before_end\": -1}"),
     "schema", "$.checkpoint_signal.seconds_before_end"},
    {LAUNCH(", \"checkpoint_signal\": {\"signal\": \"USR1\", "
            "\"seconds_before_end\": 1.5}"),
     "schema", "$.checkpoint_signal.seconds_before_end"},
    {LAUNCH(", \"checkpoint_signal\": {\"signal\": \"USR1\", "
            "\"seconds_before_end\": \"120\"}"),
     "schema", "$.checkpoint_signal.seconds_before_end"},
    {"{\"specversion\": \"1.0\", \"type\": \"forge.launch.requested\", "
     "\"id\": \"e\", \"source\": \"s\", \"data\": {" BASE
     ", \"checkpoint_signal\": {\"signal\": \"CONT\"}}}",
     "schema", "$.data.checkpoint_signal.signal"},
    {"{\"kind\": \"launch\", \"launch_id\": \"L1\", \"image\": {\"path\": "
     "\"images/a.sqsh\", \"format\": \"sqsh\"}, \"command\": [\"run\"], "
     "\"pools\": [{\"name\": \"p\", \"series\": \"h200\", \"nodes\": 1}]}",
     "image_format", "$.image.format"},
    {"{\"kind\": \"launch\", \"launch_id\": \"L1\", \"image\": {\"path\": "
     "\"images/missing.sif\", \"format\": \"sif\"}, \"command\": [\"run\"], "
     "\"pools\": [{\"name\": \"p\", \"series\": \"h200\", \"nodes\": 1}]}",
     "image_missing", "$.image.path"},
    {"{\"kind\": \"launch\", \"launch_id\": \"L1\", \"image\": {\"path\": "
     "\"images/escape.sif\", \"format\": \"sif\"}, \"command\": [\"run\"], "
     "\"pools\": [{\"name\": \"p\", \"series\": \"h200\", \"nodes\": 1}]}",
     "image_missing", "$.image.path"},
    {LAUNCH(", \"logs\": true"), "schema", "$.logs"},
    {LAUNCH(", \"logs\": [true]"), "schema", "$.logs"},
    {LAUNCH(", \"logs\": null"), "schema", "$.logs"},
    {LAUNCH(", \"logs\": {\"live\": \"true\"}"), "schema", "$.logs.live"},
    {LAUNCH(", \"logs\": {\"live\": 1}"), "schema", "$.logs.live"},
    {LAUNCH(", \"logs\": {\"live\": null}"), "schema", "$.logs.live"},
    {LAUNCH(", \"logs\": {\"live\": {}}"), "schema", "$.logs.live"},
    {LAUNCH(", \"logs\": {\"live\": true, \"tail\": 10}"), "schema",
     "$.logs.tail"},
    {LAUNCH(", \"logs\": {\"Live\": true}"), "schema", "$.logs.Live"},
    {LAUNCH(", \"logs\": {\"live\": true, \"live \": true}"), "schema",
     "$.logs.live "},
    {"{\"specversion\": \"1.0\", \"type\": \"forge.launch.requested\", "
     "\"id\": \"e\", \"source\": \"s\", \"data\": {" BASE
     ", \"logs\": {\"live\": \"no\"}}}",
     "schema", "$.data.logs.live"},
    {"{\"kind\": \"cancel\"}", "schema", "$.launch_id"},
    {"{\"kind\": \"cancel\", \"launch_id\": \"L1\", \"attempt\": -1}", "schema",
     "$.attempt"},
};

ParameterizedTestParameters(request, refused)
{
    return cr_make_param_array(bad_request_t, bad,
                               sizeof(bad) / sizeof(bad[0]));
}

ParameterizedTest(bad_request_t *c, request, refused)
{
    forge_prepared_t *p = NULL;
    forge_error_t err = {0};
    forge_rc_t rc = forge_prepare(c->json, strlen(c->json), cfg, cat, &p, &err);

    cr_assert_neq(rc, 0, "accepted: %s", c->json);
    cr_assert_null(p);
    cr_assert_str_eq(forge_rc_name(err.code), c->code, "%s\n-> %s", c->json,
                     err.message);
    cr_assert_str_eq(err.field, c->field, "%s\n-> %s", c->json, err.message);
}

/* `retry` overrides the keys it sets (retry.set), nothing else; absent,
 * it sets none. */
Test(request, retry_overrides_what_it_sets)
{
    forge_prepared_t *p = prepare_ok(
        LAUNCH(", \"retry\": {\"max_tries\": 4, \"on\": [\"preempted\", "
               "\"node_fail\"], \"exclude_failed_nodes\": false}"));
    const forge_retry_override_t *o = &p->request->launch.retry;

    cr_assert_eq(o->set, FORGE_RETRY_SET_MAX_TRIES | FORGE_RETRY_SET_CAUSES |
                             FORGE_RETRY_SET_EXCLUDE);
    cr_assert_eq(o->value.max_tries, 4);
    cr_assert_eq(o->value.causes,
                 FORGE_RETRY_PREEMPTED | FORGE_RETRY_NODE_FAIL);
    cr_assert_not(o->value.exclude_failed_nodes);
    forge_prepared_destroy(p);
    p = prepare_ok(LAUNCH(", \"retry\": {\"on\": [], \"backoff_s\": 0}"));
    o = &p->request->launch.retry;
    cr_assert_eq(o->set, FORGE_RETRY_SET_CAUSES | FORGE_RETRY_SET_BACKOFF);
    cr_assert_eq(o->value.causes, 0, "[] names no cause");
    cr_assert_eq(o->value.backoff_s, 0);
    forge_prepared_destroy(p);
    p = prepare_ok(LAUNCH(""));
    cr_assert_eq(p->request->launch.retry.set, 0);
    forge_prepared_destroy(p);
}

/* `logs.live` as a tri-state: absent (or logs without it) unset, else the
 * boolean; in a CloudEvent's data too. */
Test(request, logs_live_is_a_tri_state)
{
    static const struct {
        const char *extra;
        int live_logs;
    } cases[] = {
        {"", FORGE_LIVE_LOGS_UNSET},
        {", \"logs\": {}", FORGE_LIVE_LOGS_UNSET},
        {", \"logs\": {\"live\": true}", FORGE_LIVE_LOGS_TRUE},
        {", \"logs\": {\"live\": false}", FORGE_LIVE_LOGS_FALSE},
    };
    char json[1024];

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        snprintf(json, sizeof(json), "{\"kind\": \"launch\", " BASE "%s}",
                 cases[i].extra);
        forge_prepared_t *p = prepare_ok(json);
        cr_assert_eq(p->request->launch.live_logs, cases[i].live_logs, "%s",
                     json);
        forge_prepared_destroy(p);
    }
    forge_prepared_t *p = prepare_ok(
        "{\"specversion\": \"1.0\", \"id\": \"e1\", \"source\": \"x\", "
        "\"type\": \"forge.launch.requested\", \"data\": {" BASE
        ", \"logs\": {\"live\": false}}}");
    cr_assert_eq(p->request->launch.live_logs, FORGE_LIVE_LOGS_FALSE);
    forge_prepared_destroy(p);
}

/* A member logs does not know: refused, named, with what logs has. */
Test(request, logs_refuses_an_unknown_member_by_name)
{
    const char *json = LAUNCH(", \"logs\": {\"follow\": true}");
    forge_prepared_t *p = NULL;
    forge_error_t err = {0};

    cr_assert_eq(forge_prepare(json, strlen(json), cfg, cat, &p, &err),
                 FORGE_ESCHEMA);
    cr_assert_str_eq(err.field, "$.logs.follow");
    cr_assert(strstr(err.message, "$.logs.follow is not a member of logs "
                                  "(it has only \"live\")"),
              "%s", err.message);
}

/* An unknown cause's error lists the causes there are. */
Test(request, a_bad_retry_cause_says_which_there_are)
{
    const char *json = LAUNCH(", \"retry\": {\"on\": [\"oom\"]}");
    forge_prepared_t *p = NULL;
    forge_error_t err = {0};

    cr_assert_neq(forge_prepare(json, strlen(json), cfg, cat, &p, &err), 0);
    cr_assert(strstr(err.message, "$.retry.on[0] must be one of the causes "
                                  "node_fail,boot_fail,launch_failed,"
                                  "preempted,failed,out_of_memory,timeout"),
              "%s", err.message);
}

Test(request, too_large_refused_before_parsing)
{
    size_t n = FORGE_REQUEST_MAX_BYTES + 1;
    char *big = malloc(n);
    forge_request_t *r = NULL;
    forge_error_t err = {0};

    memset(big, '{', n); /* not even JSON: size is checked first */
    cr_assert_eq(forge_request_parse(big, n, &r, &err), FORGE_ETOO_LARGE);
    cr_assert_str_eq(forge_rc_name(err.code), "too_large");
    free(big);
}

Test(request, error_json_is_the_contract_shape)
{
    forge_error_t err = {0};
    char *text;
    json_t *o;

    forge_error_set(&err, FORGE_EENV_REFUSED, "$.env.SLURM_X", "no \xff");
    text = forge_error_json(&err);
    o = json_loads(text, 0, NULL);
    cr_assert_not_null(o, "%s", text);
    cr_assert_str_eq(json_string_value(json_object_get(o, "error")),
                     "env_refused");
    cr_assert_str_eq(json_string_value(json_object_get(o, "field")),
                     "$.env.SLURM_X");
    cr_assert_str_eq(json_string_value(json_object_get(o, "message")), "no ?");
    json_decref(o);
    free(text);
}

Test(request, salvage_finds_the_launch_of_a_refused_message)
{
    const char ok[] = "{\"kind\": \"launch\", \"launch_id\": \"L9\", "
                      "\"attempt\": 4, \"command\": \"sh -c x\"}";
    const char ce[] = "{\"specversion\": \"1.0\", \"data\": {\"launch_id\": "
                      "\"L8\"}}";
    /* an attempt named but not one names no (launch, attempt): a string
     * "2" once fell back to attempt 1, and for an ended launch the message
     * vanished without a trace */
    const char *none[] = {"garbage",
                          "{\"launch_id\": \"$(x)\"}",
                          "[]",
                          "{\"launch_id\": 5}",
                          "{\"launch_id\": \"L7\", \"attempt\": \"2\"}",
                          "{\"launch_id\": \"L7\", \"attempt\": 2.5}",
                          "{\"launch_id\": \"L7\", \"attempt\": 0}",
                          "{\"launch_id\": \"L7\", \"attempt\": null}",
                          "{\"launch_id\": \"L7\", \"attempt\": true}"};
    int attempt = 0;
    char *id = forge_request_salvage_id(ok, strlen(ok), &attempt);

    cr_assert_str_eq(id, "L9");
    cr_assert_eq(attempt, 4);
    free(id);
    id = forge_request_salvage_id(ce, strlen(ce), &attempt);
    cr_assert_str_eq(id, "L8");
    cr_assert_eq(attempt, 1);
    free(id);
    for (size_t i = 0; i < sizeof(none) / sizeof(none[0]); i++)
        cr_assert_null(
            forge_request_salvage_id(none[i], strlen(none[i]), &attempt), "%s",
            none[i]);
}

Test(request, secret_env_and_tenant_are_parsed)
{
    forge_prepared_t *p = prepare_ok(
        LAUNCH(", \"env\": {\"A\": \"1\"}, \"secret_env\": {\"API_KEY\": "
               "\"s3cr3t 'x'\\n\", \"EMPTY\": \"\"}, \"tenant\": "
               "\"lab-a.prod_1\""));
    const forge_launch_t *l = &p->request->launch;

    cr_assert_eq(l->env_count, 1);
    cr_assert_eq(l->secret_env_count, 2);
    cr_assert_str_eq(l->secret_env[0].key, "API_KEY");
    cr_assert_str_eq(l->secret_env[0].value, "s3cr3t 'x'\n");
    cr_assert_str_eq(l->secret_env[1].key, "EMPTY");
    cr_assert_str_eq(l->secret_env[1].value, "");
    cr_assert_str_eq(l->tenant, "lab-a.prod_1");
    forge_prepared_destroy(p);

    p = prepare_ok(LAUNCH(""));
    cr_assert_eq(p->request->launch.secret_env_count, 0);
    cr_assert_null(p->request->launch.tenant);
    forge_prepared_destroy(p);
}

/* A refused secret_env names the field, never the value. */
Test(request, a_refused_secret_value_is_not_in_the_error)
{
    static const char json[] =
        LAUNCH(", \"secret_env\": {\"KEY\": \"hunter2-secret\", \"SLURM_X\": "
               "\"other-secret\"}");
    forge_prepared_t *p = NULL;
    forge_error_t err = {0};

    cr_assert_neq(forge_prepare(json, strlen(json), cfg, cat, &p, &err), 0);
    char *text = forge_error_json(&err);
    cr_assert_str_eq(err.field, "$.secret_env.SLURM_X");
    cr_assert_null(strstr(text, "other-secret"), "%s", text);
    cr_assert_null(strstr(text, "hunter2"), "%s", text);
    free(text);
}

/* The error JSON is valid UTF-8 even when a message was cut inside a
 * character: each byte that starts no valid sequence becomes '?'. */
Test(request, error_json_replaces_bytes_that_are_not_utf8)
{
    forge_error_t err = {0};
    json_t *o;
    char *text;

    forge_error_set(&err, FORGE_ESCHEMA, "$.x\xff",
                    "caf\xc3\xa9 \xed\xa0\x80 \xe2\x82");
    text = forge_error_json(&err);
    o = json_loads(text, 0, NULL);
    cr_assert_not_null(o, "%s", text);
    cr_assert_str_eq(json_string_value(json_object_get(o, "field")), "$.x?");
    cr_assert_str_eq(json_string_value(json_object_get(o, "message")),
                     "caf\xc3\xa9 ??? ??");
    json_decref(o);
    free(text);
}

/* checkpoint_signal: each name of the allow-list, seconds at both bounds
 * and by default (Slurm's 60), unknown members ignored as everywhere. */
Test(request, checkpoint_signal_is_parsed)
{
    static const char *const names[] = {"USR1", "USR2", "TERM", "INT", "HUP"};
    forge_prepared_t *p;
    char json[1024];

    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        snprintf(json, sizeof(json),
                 LAUNCH(", \"checkpoint_signal\": {\"signal\": \"%s\", "
                        "\"seconds_before_end\": %zu}"),
                 names[i], i == 0 ? (size_t)0 : 65535);
        p = prepare_ok(json);
        cr_assert_str_eq(p->request->launch.checkpoint_signal, names[i]);
        cr_assert_eq(p->request->launch.checkpoint_seconds, i ? 65535 : 0);
        forge_prepared_destroy(p);
    }
    p = prepare_ok(LAUNCH(", \"checkpoint_signal\": {\"signal\": \"USR2\", "
                          "\"x_future\": {\"flags\": [\"B\"]}}"));
    cr_assert_str_eq(p->request->launch.checkpoint_signal, "USR2");
    cr_assert_eq(p->request->launch.checkpoint_seconds, 60, "Slurm's default");
    forge_prepared_destroy(p);
    p = prepare_ok(LAUNCH(", \"checkpoint_signal\": {\"signal\": \"USR1\", "
                          "\"seconds_before_end\": 300.0}"));
    cr_assert_eq(p->request->launch.checkpoint_seconds, 300, "an integer");
    forge_prepared_destroy(p);
    p = prepare_ok(LAUNCH(""));
    cr_assert_null(p->request->launch.checkpoint_signal);
    cr_assert_eq(p->request->launch.checkpoint_seconds, 0);
    forge_prepared_destroy(p);
}

Test(request, roles_map_to_pools)
{
    forge_prepared_t *p = prepare_ok(
        "{\"kind\": \"launch\", \"launch_id\": \"L1\", \"image\": {\"path\": "
        "\"images/a.sif\", \"format\": \"sif\"}, \"command\": [\"run\"], "
        "\"pools\": [{\"name\": \"a\", \"series\": \"h200\", \"nodes\": 1}, "
        "{\"name\": \"b\", \"series\": \"h200\", \"nodes\": 2}], "
        "\"roles\": {\"actor\": \"b\"}}");

    cr_assert_str_eq(forge_launch_role_pool(&p->request->launch, "actor")->name,
                     "b");
    cr_assert_null(forge_launch_role_pool(&p->request->launch, "critic"));
    forge_prepared_destroy(p);
}
