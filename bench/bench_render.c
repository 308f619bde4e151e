/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench_render.c - how fast one request goes from bytes to a submit body
 * (forge_prepare: parse, validate, check, render script and payload), next
 * to the baseline of the same bytes merely parsed by jansson, in the same
 * run. Prints requests/s for both and the ratio; the target (issue 13):
 * prepare costs at most 2x a bare parse of the same ~2 KiB request. A
 * benchmark, not a test: it never fails on speed.
 *
 * The two loops alternate in short rounds (so both see the same machine
 * load and the same allocator state, each after the other), each round
 * timed in the process's CPU time (CLOCK_PROCESS_CPUTIME_ID: time another
 * process takes from this one on a shared machine is not counted) and in
 * wall time; the figures are the medians over rounds. The baseline stays a
 * bare json_loadb of the same bytes with the tree freed each time. The
 * kernel's share of each loop's CPU time (getrusage, summed over all rounds)
 * is printed too: prepare's checks open and stat the image and the mount
 * sources beneath the storage root (CONTRACT), a bare parse makes no
 * system call.
 *
 *   build/bench/bench_render [seconds-per-measure]
 */
#include "prepare/prepare.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
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

static double clock_s(clockid_t id)
{
    struct timespec ts;

    clock_gettime(id, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

typedef int (*one_fn)(void *ctx);

static double sys_s(void)
{
    struct rusage ru;

    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

/* Runs fn `calls` times; sets the CPU and wall seconds it took and adds
 * the kernel's seconds to *sys. */
static void run(one_fn fn, void *ctx, long calls, double *cpu, double *wall,
                double *sys)
{
    double c0 = clock_s(CLOCK_PROCESS_CPUTIME_ID),
           w0 = clock_s(CLOCK_MONOTONIC);
    double s0 = sys_s();

    for (long i = 0; i < calls; i++)
        if (fn(ctx) != 0)
            abort();
    *cpu = clock_s(CLOCK_PROCESS_CPUTIME_ID) - c0;
    *wall = clock_s(CLOCK_MONOTONIC) - w0;
    *sys += sys_s() - s0;
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

static double median(double *v, size_t n)
{
    qsort(v, n, sizeof(*v), by_value);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
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
    enum { ROUNDS_MAX = 4096, CALLS = 200 };
    static double base_cpu[ROUNDS_MAX], prep_cpu[ROUNDS_MAX],
        base_wall[ROUNDS_MAX], prep_wall[ROUNDS_MAX], ratio[ROUNDS_MAX];
    double start, bc, pc, base_sys = 0, prep_sys = 0, base_sum = 0,
                          prep_sum = 0, ignored = 0;
    size_t rounds = 0;

    if (system("mkdir -p " ROOT "/runtimes/images && touch " ROOT
               "/runtimes/images/pytorch-24.01.sif") != 0 ||
        forge_config_load(envp, &ctx.cfg, &err) ||
        forge_series_parse(series, sizeof(series) - 1, &ctx.cat, &err)) {
        fprintf(stderr, "bench setup failed: %s\n", err.message);
        return 1;
    }
    run(prepare_one, &ctx, CALLS * 4, &bc, &pc, &ignored); /* warm up */
    run(bare_parse, NULL, CALLS * 4, &bc, &pc, &ignored);
    start = clock_s(CLOCK_MONOTONIC);
    do {
        size_t r = rounds++;
        run(bare_parse, NULL, CALLS, &base_cpu[r], &base_wall[r], &base_sys);
        run(prepare_one, &ctx, CALLS, &prep_cpu[r], &prep_wall[r], &prep_sys);
        base_sum += base_cpu[r];
        prep_sum += prep_cpu[r];
        ratio[r] = prep_cpu[r] / base_cpu[r];
    } while (rounds < ROUNDS_MAX &&
             (rounds < 11 || clock_s(CLOCK_MONOTONIC) - start < seconds));
    bc = median(base_cpu, rounds);
    pc = median(prep_cpu, rounds);
    printf("request: %zu bytes (CloudEvent, 2 pools, 8 env, 3 mounts); "
           "%zu alternating rounds of %d calls each\n",
           sizeof(request) - 1, rounds, (int)CALLS);
    printf("baseline  jansson parse only      %10.0f requests/s CPU "
           "(%.0f wall)\n",
           CALLS / bc, CALLS / median(base_wall, rounds));
    printf("measured  parse+validate+render   %10.0f requests/s CPU "
           "(%.0f wall)\n",
           CALLS / pc, CALLS / median(prep_wall, rounds));
    printf("kernel    share of CPU time: parse %.0f%%, prepare %.0f%% "
           "(the image and mount checks' system calls)\n",
           100 * base_sys / base_sum, 100 * prep_sys / prep_sum);
    bc = median(ratio, rounds);
    printf("ratio     prepare cost / parse cost  %.2fx CPU, median of "
           "rounds (target <= 2x: %s)\n",
           bc, bc <= 2.0 ? "met" : "NOT met");
    forge_series_catalog_destroy(ctx.cat);
    forge_config_destroy(ctx.cfg);
    return 0;
}
