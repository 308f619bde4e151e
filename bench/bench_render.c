/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench_render.c - how fast one request goes from bytes to a submit body
 * (forge_prepare: parse, validate, check, render script and payload), next
 * to the baseline of the same bytes merely parsed by jansson, in the same
 * run. Prints requests/s for both and the ratio; the target (issue 13):
 * prepare costs at most 2x a bare parse of the same ~2 KiB request. A
 * benchmark, not a test: it never fails on speed.
 *
 *   build/bench/bench_render [seconds-per-measure]
 */
#include "request/prepare.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define ROOT "/tmp/forge-bench/storage"

static const char request[] =
    "{\"specversion\": \"1.0\", \"id\": \"evt-123456\", \"source\": "
    "\"platform/launcher\", \"type\": \"forge.launch.requested\", "
    "\"time\": \"2026-12-02T10:00:00Z\", \"datacontenttype\": "
    "\"application/json\", \"data\": {"
    "\"launch_id\": \"rlhf-run-20261202-0042\", \"attempt\": 1, "
    "\"project\": \"alignment\", \"owner\": \"ana@example.org\", \"name\": "
    "\"ppo-70b\", \"framework\": {\"kind\": \"pytorch\", \"runtime_id\": "
    "\"pt-24.01\"}, \"image\": {\"path\": \"images/pytorch-24.01.sif\", "
    "\"format\": \"sif\"}, \"command\": [\"torchrun\", "
    "\"--nproc-per-node=8\", \"-m\", \"rlhf.train\", \"--config\", "
    "\"configs/ppo-70b.yaml\", \"--steps\", \"20000\", \"--seed\", \"17\"], "
    "\"workdir\": \"/workspace/rlhf\", \"env\": {\"NCCL_DEBUG\": \"WARN\", "
    "\"NCCL_IB_HCA\": \"mlx5\", \"WANDB_PROJECT\": \"alignment\", "
    "\"WANDB_RUN_GROUP\": \"ppo-70b\", \"HF_HOME\": \"/cache/hf\", "
    "\"TOKENIZERS_PARALLELISM\": \"false\", \"OMP_NUM_THREADS\": \"8\", "
    "\"PYTHONUNBUFFERED\": \"1\"}, \"mounts\": [{\"source\": "
    "\"datasets/hh-rlhf\", \"target\": \"/data\", \"read_only\": true}, "
    "{\"source\": \"checkpoints/rlhf-run-20261202-0042\", \"target\": "
    "\"/ckpt\"}, {\"source\": \"cache/hf\", \"target\": \"/cache/hf\"}], "
    "\"pools\": [{\"name\": \"trainer\", \"series\": \"h200\", \"nodes\": 8, "
    "\"gpus_per_node\": 8, \"tasks_per_node\": 8, \"cpus_per_task\": 12, "
    "\"mem_per_node_mb\": 1536000}, {\"name\": \"rollout\", \"series\": "
    "\"a100\", \"nodes\": 4, \"gpus_per_node\": 8, \"tasks_per_node\": 1, "
    "\"cpus_per_task\": 64}], \"roles\": {\"actor\": \"trainer\", "
    "\"critic\": \"trainer\", \"reference\": \"trainer\", \"generator\": "
    "\"rollout\"}, \"time_limit_minutes\": 2880, \"partition\": \"gpu\", "
    "\"account\": \"alignment\", \"qos\": \"high\", \"ingest\": "
    "{\"endpoint\": \"https://ingest.example.org/v1/runs/rlhf-run-20261202-"
    "0042\", \"token\": \"ingest-tok-6f1d2c3b4a59687766554433221100ff\"}, "
    "\"labels\": {\"team\": \"alignment\", \"cost-center\": \"cc-1234\", "
    "\"priority\": \"p1\", \"experiment\": \"ppo-sweep-7\"}}}";

static double now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

typedef int (*one_fn)(void *ctx);

/* Runs fn repeatedly for about `seconds`; returns calls per second. */
static double rate(one_fn fn, void *ctx, double seconds)
{
    double start = now(), elapsed;
    long calls = 0;

    do {
        for (int i = 0; i < 256; i++)
            if (fn(ctx) != 0)
                abort();
        calls += 256;
        elapsed = now() - start;
    } while (elapsed < seconds);
    return (double)calls / elapsed;
}

static int bare_parse(void *ctx)
{
    json_t *root = json_loadb(request, sizeof(request) - 1, 0, NULL);

    (void)ctx;
    if (!root)
        return 1;
    json_decref(root);
    return 0;
}

typedef struct prep_ctx {
    forge_config_t *cfg;
    forge_series_catalog_t *cat;
} prep_ctx_t;

static int prepare_one(void *ctx)
{
    prep_ctx_t *c = ctx;
    forge_prepared_t *p = NULL;
    forge_error_t err = {0};

    if (forge_prepare(request, sizeof(request) - 1, c->cfg, c->cat, &p, &err)) {
        fprintf(stderr, "prepare failed: %s\n", err.message);
        return 1;
    }
    forge_prepared_destroy(p);
    return 0;
}

int main(int argc, char **argv)
{
    static const char series[] =
        "{\"series\": {\"h200\": {\"slurm_constraint\": \"h200\", "
        "\"gpus_per_node\": 8}, \"a100\": {\"slurm_constraint\": \"a100\", "
        "\"gpus_per_node\": 8}}}";
    char *envp[] = {"FORGE_STORAGE_ROOT=" ROOT,
                    "FORGE_SLURM_STORAGE_ROOT=/cluster/forge",
                    "FORGE_SLURM_RUNTIME_PROFILE=apptainer", NULL};
    double seconds = argc > 1 ? atof(argv[1]) : 2.0;
    prep_ctx_t ctx = {0};
    forge_error_t err = {0};
    double base, prep;

    if (system("mkdir -p " ROOT "/runtimes/images && touch " ROOT
               "/runtimes/images/pytorch-24.01.sif") != 0 ||
        forge_config_load(envp, &ctx.cfg, &err) ||
        forge_series_parse(series, sizeof(series) - 1, &ctx.cat, &err)) {
        fprintf(stderr, "bench setup failed: %s\n", err.message);
        return 1;
    }
    (void)rate(prepare_one, &ctx, seconds / 4); /* warm up */
    base = rate(bare_parse, NULL, seconds);
    prep = rate(prepare_one, &ctx, seconds);
    printf("request: %zu bytes (CloudEvent, 2 pools, 8 env, 3 mounts)\n",
           sizeof(request) - 1);
    printf("baseline  jansson parse only      %10.0f requests/s\n", base);
    printf("measured  parse+validate+render   %10.0f requests/s\n", prep);
    printf("ratio     prepare cost / parse cost  %.2fx (target <= 2x: %s)\n",
           base / prep, base / prep <= 2.0 ? "met" : "NOT met");
    forge_series_catalog_destroy(ctx.cat);
    forge_config_destroy(ctx.cfg);
    return 0;
}
