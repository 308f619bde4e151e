/* SPDX-License-Identifier: Apache-2.0 */
/*
 * support_loop.c - the consume loop's seams faked in memory (see
 * support_loop.h for what each fake keeps and why it is a fake).
 */
#include "support_loop.h"
#include "support_storage.h"

#include "base/util.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- Kafka ----------------------------------------------------------------
 */

static void record_set(fake_record_t *r, const char *topic, int32_t p,
                       const char *key, const void *value, size_t len)
{
    r->topic = forge_xstrdup(topic);
    r->partition = p;
    r->key = key ? forge_xstrdup(key) : NULL;
    r->value = forge_xstrndup(value, len);
    r->len = len;
}

static void record_clear(fake_record_t *r)
{
    free(r->topic);
    free(r->key);
    free(r->value);
    memset(r, 0, sizeof(*r));
}

static bool f_poll(void *k, int timeout_ms, forge_kafka_message_t *msg)
{
    fake_kafka_t *f = k;

    (void)timeout_ms;
    for (int32_t p = 0; p < FAKE_PARTITIONS; p++) {
        fake_record_t *r;
        if (!f->assigned[p] || f->paused[p] ||
            f->position[p] >= f->request_count[p])
            continue;
        r = &f->requests[p][f->position[p]];
        *msg = (forge_kafka_message_t){
            p, f->position[p]++, r->key, strlen(r->key), r->value, r->len};
        return true;
    }
    if (f->revoke_count) {
        size_t n = f->revoke_count;
        f->revoke_count = 0;
        fake_kafka_revoke(f, f->revoke_parts, n, f->revoke_lost);
    }
    return false;
}

static void f_pause(void *k, int32_t p)
{
    ((fake_kafka_t *)k)->paused[p] = true;
}

static void f_resume(void *k, int32_t p)
{
    ((fake_kafka_t *)k)->paused[p] = false;
}

static void f_pause_all(void *k)
{
    for (int32_t p = 0; p < FAKE_PARTITIONS; p++)
        f_pause(k, p);
}

static forge_rc_t f_produce(void *k, const forge_kafka_record_t *r,
                            forge_error_t *err)
{
    fake_kafka_t *f = k;

    (void)err;
    cr_assert_lt(f->txn_count, FAKE_MAX);
    record_set(&f->txn[f->txn_count++], r->topic, r->partition, r->key,
               r->value, r->value_len);
    return FORGE_OK;
}

static void f_fail_txn(void *k)
{
    ((fake_kafka_t *)k)->txn_failed = true;
}

static void f_mark_done(void *k, int32_t p, int64_t offset)
{
    ((fake_kafka_t *)k)->txn_offsets[p] = offset + 1;
}

static void drop_txn(fake_kafka_t *f)
{
    for (size_t i = 0; i < f->txn_count; i++)
        record_clear(&f->txn[i]);
    f->txn_count = 0;
    f->txn_failed = false;
    for (int32_t p = 0; p < FAKE_PARTITIONS; p++)
        f->txn_offsets[p] = -1;
}

static bool pending(const fake_kafka_t *f)
{
    for (int32_t p = 0; p < FAKE_PARTITIONS; p++)
        if (f->txn_offsets[p] >= 0)
            return true;
    return f->txn_count > 0 || f->txn_failed;
}

static forge_kafka_outcome_t f_commit(void *k)
{
    fake_kafka_t *f = k;
    forge_kafka_outcome_t told = FORGE_KAFKA_COMMITTED;

    if (!pending(f))
        return FORGE_KAFKA_COMMITTED;
    if (f->outcome_count) {
        told = f->outcomes[0];
        memmove(f->outcomes, f->outcomes + 1,
                --f->outcome_count * sizeof(f->outcomes[0]));
    }
    if (told == FORGE_KAFKA_WAITING || told == FORGE_KAFKA_FATAL)
        return told;
    if (told == FORGE_KAFKA_ABORTED || f->txn_failed) {
        drop_txn(f);
        for (int32_t p = 0; p < FAKE_PARTITIONS; p++)
            f->position[p] = f->committed[p];
        f->aborts++;
        return FORGE_KAFKA_ABORTED;
    }
    for (size_t i = 0; i < f->txn_count; i++) {
        cr_assert_lt(f->out_count, FAKE_MAX * 4);
        f->out[f->out_count++] = f->txn[i];
        memset(&f->txn[i], 0, sizeof(f->txn[i]));
    }
    f->txn_count = 0;
    for (int32_t p = 0; p < FAKE_PARTITIONS; p++)
        if (f->txn_offsets[p] >= 0)
            f->committed[p] = f->txn_offsets[p];
    drop_txn(f);
    f->commits++;
    return FORGE_KAFKA_COMMITTED;
}

static void f_restore_budget(void *k, int *one_ms, int *pass_ms)
{
    (void)k;
    *one_ms = 1000;
    *pass_ms = 60000;
}

/* Partitions one after another, each a restore (restore_failures_left:
 * that many of them fail, in turn). */
static size_t f_restore(void *k, const int32_t *parts, size_t n,
                        forge_kafka_restore_fn fn, void *ctx, int timeout_ms,
                        bool *reached)
{
    fake_kafka_t *f = k;
    size_t done = 0;

    (void)timeout_ms;
    for (size_t p = 0; p < n; p++) {
        f->restores++;
        reached[p] = f->restore_failures_left <= 0;
        if (!reached[p]) {
            f->restore_failures_left--;
            continue;
        }
        for (size_t i = 0; i < f->out_count; i++) {
            const fake_record_t *r = &f->out[i];
            if (r->partition == parts[p] && !strcmp(r->topic, f->state_topic))
                fn(ctx, parts[p], r->key, strlen(r->key), r->value, r->len);
        }
        done++;
    }
    return done;
}

const forge_loop_kafka_ops_t fake_kafka_ops = {
    f_poll,     f_pause,     f_resume, f_pause_all,      f_produce,
    f_fail_txn, f_mark_done, f_commit, f_restore_budget, f_restore,
};

fake_kafka_t *fake_kafka_new(const forge_kafka_handlers_t *h,
                             const char *state_topic)
{
    fake_kafka_t *f = forge_xcalloc(1, sizeof(*f));

    f->h = *h;
    f->state_topic = state_topic;
    drop_txn(f);
    return f;
}

void fake_kafka_free(fake_kafka_t *f)
{
    if (!f)
        return;
    drop_txn(f);
    for (size_t i = 0; i < f->out_count; i++)
        record_clear(&f->out[i]);
    for (int32_t p = 0; p < FAKE_PARTITIONS; p++)
        for (int64_t i = 0; i < f->request_count[p]; i++)
            record_clear(&f->requests[p][i]);
    free(f);
}

void fake_kafka_send(fake_kafka_t *f, int32_t p, const char *key,
                     const char *value)
{
    cr_assert_lt(f->request_count[p], FAKE_MAX);
    record_set(&f->requests[p][f->request_count[p]++], "requests", p, key,
               value, strlen(value));
}

void fake_kafka_assign(fake_kafka_t *f, const int32_t *parts, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        f->assigned[parts[i]] = true;
        f->paused[parts[i]] = true;
        f->position[parts[i]] = f->committed[parts[i]];
    }
    f->h.assigned(f->h.ctx, parts, n);
}

void fake_kafka_revoke(fake_kafka_t *f, const int32_t *parts, size_t n,
                       bool lost)
{
    if (!lost && f->h.flush(f->h.ctx, parts, n) != 0)
        lost = true;
    if (lost)
        drop_txn(f);
    f->h.revoked(f->h.ctx, parts, n, lost);
    for (size_t i = 0; i < n; i++)
        f->assigned[parts[i]] = false;
}

void fake_kafka_put(fake_kafka_t *f, const char *topic, int32_t p,
                    const char *key, const char *value)
{
    cr_assert_lt(f->out_count, FAKE_MAX * 4);
    record_set(&f->out[f->out_count++], topic, p, key, value, strlen(value));
}

json_t *fake_kafka_next_of(const fake_kafka_t *f, const char *topic,
                           const char *key, size_t *from)
{
    for (size_t i = *from; i < f->out_count; i++) {
        const fake_record_t *r = &f->out[i];
        json_t *o;
        if (strcmp(r->topic, topic) || !r->key || strcmp(r->key, key))
            continue;
        *from = i + 1;
        o = json_loadb(r->value, r->len, 0, NULL);
        cr_assert_not_null(o, "not JSON: %s", r->value);
        return o;
    }
    return NULL;
}

char *fake_kafka_states(const fake_kafka_t *f, const char *status_topic,
                        const char *key)
{
    char out[1024] = "";
    size_t from = 0;
    json_t *ev;

    while ((ev = fake_kafka_next_of(f, status_topic, key, &from))) {
        const char *s = json_string_value(
            json_object_get(json_object_get(ev, "data"), "state"));
        snprintf(out + strlen(out), sizeof(out) - strlen(out), "%s%s",
                 *out ? " " : "", s ? s : "?");
        json_decref(ev);
    }
    return forge_xstrdup(out);
}

size_t fake_kafka_count(const fake_kafka_t *f, const char *topic,
                        const char *key)
{
    size_t n = 0;

    for (size_t i = 0; i < f->out_count; i++)
        n += !strcmp(f->out[i].topic, topic) && f->out[i].key &&
             !strcmp(f->out[i].key, key);
    return n;
}

/* ---- the pools ------------------------------------------------------------
 */

static void p_post(void *ctx, forge_loop_lane_t lane, forge_work_t *work)
{
    fake_pools_t *p = ctx;

    cr_assert_lt(p->posted_count[lane], FAKE_MAX);
    if (p->on_post)
        p->on_post(p->on_post_ctx, lane, work);
    work->next = NULL;
    p->posted[lane][p->posted_count[lane]++] = work;
}

/* The first of n items (taken out), or NULL. */
static forge_work_t *shift(forge_work_t **items, size_t *n)
{
    forge_work_t *w;

    if (!*n)
        return NULL;
    w = items[0];
    memmove(items, items + 1, --*n * sizeof(w));
    return w;
}

static forge_work_t *p_take(void *ctx, forge_loop_lane_t lane)
{
    fake_pools_t *p = ctx;

    return shift(p->done[lane], &p->done_count[lane]);
}

/* Settled when the test has carried out everything posted. */
static bool p_settle(void *ctx, forge_loop_lane_t lane, long timeout_ms)
{
    (void)timeout_ms;
    return ((fake_pools_t *)ctx)->posted_count[lane] == 0;
}

static size_t p_in_flight(void *ctx, forge_loop_lane_t lane)
{
    fake_pools_t *p = ctx;

    return p->posted_count[lane] + p->done_count[lane];
}

static void p_interrupt(void *ctx, forge_loop_lane_t lane)
{
    ((fake_pools_t *)ctx)->interrupts[lane]++;
}

static void p_withdraw(void *ctx, const char *launch_id, int attempt)
{
    fake_pools_t *p = ctx;

    cr_assert_lt(p->withdrawn_count, 16);
    snprintf(p->withdrawn[p->withdrawn_count++], sizeof(p->withdrawn[0]),
             "%s/%d", launch_id, attempt);
}

const forge_loop_pool_ops_t fake_pool_ops = {
    p_post, p_take, p_settle, p_in_flight, p_interrupt, p_withdraw,
};

fake_pools_t *fake_pools_new(void)
{
    return forge_xcalloc(1, sizeof(fake_pools_t));
}

void fake_pools_free(fake_pools_t *p)
{
    if (!p)
        return;
    for (int l = 0; l < FORGE_LANE__COUNT; l++) {
        for (size_t i = 0; i < p->posted_count[l]; i++)
            forge_work_free(p->posted[l][i]);
        for (size_t i = 0; i < p->done_count[l]; i++)
            forge_work_free(p->done[l][i]);
    }
    free(p);
}

forge_work_t *fake_pools_next(fake_pools_t *p, forge_loop_lane_t lane)
{
    return shift(p->posted[lane], &p->posted_count[lane]);
}

void fake_pools_finish(fake_pools_t *p, forge_loop_lane_t lane, forge_work_t *w)
{
    cr_assert_lt(p->done_count[lane], FAKE_MAX);
    p->done[lane][p->done_count[lane]++] = w;
}

forge_work_t *fake_pools_take(fake_pools_t *p, forge_loop_lane_t lane,
                              forge_work_kind_t kind, const char *id)
{
    size_t n = p->posted_count[lane], i = 0;
    forge_work_t *w;

    while (id && i < n && strcmp(p->posted[lane][i]->launch_id, id))
        i++;
    cr_assert_lt(i, n, "nothing posted for %s", id ? id : "a tick");
    w = p->posted[lane][i];
    memmove(&p->posted[lane][i], &p->posted[lane][i + 1],
            (n - i - 1) * sizeof(w));
    p->posted_count[lane]--;
    cr_assert_eq(w->kind, kind, "kind %d, want %d", w->kind, kind);
    return w;
}

json_t *fake_kafka_last_of(fake_kafka_t *k, const char *topic, const char *id)
{
    json_t *o, *last = NULL;
    size_t from = 0;

    while ((o = fake_kafka_next_of(k, topic, id, &from))) {
        json_decref(last);
        last = o;
    }
    cr_assert_not_null(last, "nothing of %s in %s", id, topic);
    return last;
}

void fake_kafka_expect_states(fake_kafka_t *k, const char *topic,
                              const char *id, const char *want)
{
    char *got = fake_kafka_states(k, topic, id);

    cr_expect_str_eq(got, want, "%s: states \"%s\", want \"%s\"", id, got,
                     want);
    free(got);
}

/* ---- the fixture -----------------------------------------------------------
 */

loop_fixture_t fx;
forge_config_t *cfg;
forge_sealer_t *sealer;
forge_loop_t *loop;
fake_kafka_t *kafka;
fake_pools_t *pools;

void loop_fixture_init(const char *prefix, const char *const *env)
{
    static const char series[] =
        "{\"series\": {\"h200\": {\"slurm_constraint\": \"h200\", "
        "\"gpus_per_node\": 8}}}";
    char storage[128], *envp[16];
    forge_error_t err = {0};
    forge_kafka_handlers_t h;
    size_t n = 0;

    memset(&fx, 0, sizeof(fx));
    snprintf(fx.tmp, sizeof(fx.tmp), "/tmp/%s-XXXXXX", prefix);
    cr_assert_not_null(mkdtemp(fx.tmp));
    support_sh_in(fx.tmp, "mkdir -p $R/runtimes/images; "
                          "touch $R/runtimes/images/a.sif");
    snprintf(storage, sizeof(storage), "FORGE_STORAGE_ROOT=%s/storage", fx.tmp);
    envp[n++] = storage;
    for (; env && *env && n + 1 < sizeof(envp) / sizeof(envp[0]); env++)
        envp[n++] = (char *)*env;
    envp[n] = NULL;
    cr_assert_eq(forge_config_load(envp, &fx.cfg, &err), FORGE_OK, "%s",
                 err.message);
    cr_assert_eq(forge_series_parse(series, strlen(series), &fx.cat, &err), 0);
    fx.sealer = support_sealer_in(fx.tmp);
    fx.loop = forge_loop_new(fx.cfg, fx.cat, NULL, fx.sealer);
    forge_loop_set_outcome_commit_ms(fx.loop, 0); /* each step commits */
    fx.pools = fake_pools_new();
    forge_loop_set_pools(fx.loop, &fake_pool_ops, fx.pools);
    h = forge_loop_handlers(fx.loop);
    fx.kafka = fake_kafka_new(&h, fx.cfg->topic_state);
    forge_loop_set_kafka(fx.loop, &fake_kafka_ops, fx.kafka);
    cfg = fx.cfg;
    sealer = fx.sealer;
    loop = fx.loop;
    kafka = fx.kafka;
    pools = fx.pools;
}

void loop_fixture_fini(void)
{
    forge_loop_destroy(fx.loop);
    fake_pools_free(fx.pools);
    fake_kafka_free(fx.kafka);
    forge_sealer_destroy(fx.sealer);
    forge_series_catalog_destroy(fx.cat);
    forge_config_destroy(fx.cfg);
    support_rm_tree(fx.tmp);
}

/* ---- what the loop tests send, answer and read back ----------------------
 */

const char *loop_launch_request(const char *id, int attempt, const char *retry)
{
    static char buf[768];

    snprintf(buf, sizeof(buf),
             "{\"kind\": \"launch\", \"launch_id\": \"%s\", \"attempt\": %d, "
             "\"image\": {\"path\": \"images/a.sif\", \"format\": \"sif\"}, "
             "\"command\": [\"run\"], \"pools\": [{\"name\": \"main\", "
             "\"series\": \"h200\", \"nodes\": 1}]%s%s}",
             id, attempt, *retry ? ", \"retry\": " : "", retry);
    return buf;
}

void step(void)
{
    forge_loop_step(loop);
}

void tick_step(void)
{
    forge_loop_tick_now(loop);
    step();
}

void assign(int32_t p)
{
    fake_kafka_assign(kafka, &p, 1);
}

void store_record(int32_t p, forge_launch_record_t *r)
{
    forge_error_t err = {0};
    json_t *o = NULL;
    char *text;

    cr_assert_eq(forge_launch_record_encode(r, sealer, &o, &err), FORGE_OK,
                 "%s", err.message);
    text = json_dumps(o, JSON_COMPACT);
    fake_kafka_put(kafka, cfg->topic_state, p, r->launch_id, text);
    free(text);
    json_decref(o);
    forge_launch_record_free(r);
}

forge_launch_record_t *record_opened(json_t *o)
{
    char *text = json_dumps(o, JSON_COMPACT);
    forge_launch_record_t *r = NULL;
    forge_error_t err = {0};

    cr_assert_eq(
        forge_launch_record_decode(text, strlen(text), sealer, &r, &err),
        FORGE_OK, "%s", err.message);
    free(text);
    json_decref(o);
    return r;
}

forge_work_t *next_work(forge_loop_lane_t lane, forge_work_kind_t kind,
                        const char *id)
{
    return fake_pools_take(pools, lane, kind, id);
}

void submit_answered(forge_work_t *w, uint32_t job_id, size_t n,
                     forge_slurm_status_t status)
{
    w->status = status;
    w->submit.job_id = job_id;
    if (job_id) { /* as submit.c: the leader at least */
        w->submit.component_ids = forge_xcalloc(n, sizeof(uint32_t));
        for (size_t i = 0; i < n; i++)
            w->submit.component_ids[i] = job_id + (uint32_t)i;
        w->submit.component_count = n;
    }
    fake_pools_finish(pools, FORGE_LANE_SLURM, w);
}

forge_work_t *poll_tick(void)
{
    forge_work_t *t = next_work(FORGE_LANE_POLLER, FORGE_WORK_POLL, NULL);

    t->status = FORGE_SLURM_OK;
    return t;
}

forge_poll_item_t *item_of(forge_work_t *tick, uint32_t job_id)
{
    for (size_t i = 0; i < tick->poll.item_count; i++)
        if (tick->poll.items[i].job_id == job_id)
            return &tick->poll.items[i];
    cr_assert_fail("job %u is not in the tick", (unsigned)job_id);
    return NULL;
}

forge_slurm_job_t *item_job(forge_poll_item_t *it, const char *const *states)
{
    forge_slurm_job_t *j = forge_xcalloc(1, sizeof(*j));
    size_t n = 0;

    while (states[n])
        n++;
    j->job_id = it->job_id;
    j->state = forge_xcalloc(n + 1, sizeof(char *));
    for (size_t i = 0; i < n; i++)
        j->state[i] = forge_xstrdup(states[i]);
    j->state_count = n;
    it->jobs.jobs = j;
    it->jobs.count = 1;
    return j;
}

forge_slurm_job_t *item_changed(forge_poll_item_t *it,
                                const char *const *states)
{
    forge_slurm_job_t *j = item_job(it, states);

    it->states = forge_xstrdup(states[0]);
    it->outcome = FORGE_POLL_CHANGED;
    return j;
}

void expect_states(const char *id, const char *want)
{
    fake_kafka_expect_states(kafka, cfg->topic_status, id, want);
}

json_t *last_of(const char *topic, const char *id)
{
    return fake_kafka_last_of(kafka, topic, id);
}

json_t *last_event_data(const char *id)
{
    json_t *ev = last_of(cfg->topic_status, id);
    json_t *data = json_incref(json_object_get(ev, "data"));

    json_decref(ev);
    return data;
}

long long record_int(const char *id, const char *field)
{
    json_t *r = last_of(cfg->topic_state, id);
    long long v = json_integer_value(json_object_get(r, field));

    json_decref(r);
    return v;
}
