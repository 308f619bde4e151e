/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_reconcile_plan.c - reconcile's verdict per launch (reconcile_plan.c)
 * from sources made by hand: the state topic lost under live and ended
 * jobs, an orphan job, a record without its job, an ended record whose job
 * came back, seqs that disagree, a request the group has not consumed.
 */
#include "base/util.h"
#include "admin/reconcile.h"

#include <criterion/criterion.h>
#include <string.h>

#define NOW 1700000000000LL

static forge_recon_sources_t sources(void)
{
    forge_recon_sources_t s = {0};

    s.launches = forge_recon_map_new();
    s.jobs = forge_recon_map_new();
    return s;
}

/* A job tagged for try try_num of (id, attempt) in state `state`, exit
 * code exit. */
static void tagged_try_job(forge_recon_sources_t *s, const char *id,
                           int attempt, int try_num, uint32_t job_id,
                           const char *state, int exit)
{
    char key[128];
    forge_slurm_job_list_t **l;
    forge_slurm_job_t *j;

    forge_recon_tag_key(key, sizeof(key), id, attempt, try_num);
    l = (forge_slurm_job_list_t **)forge_recon_map_slot(s->jobs, key);
    if (!*l)
        *l = forge_xcalloc(1, sizeof(**l));
    (*l)->jobs = forge_xrealloc((*l)->jobs, ((*l)->count + 1) * sizeof(*j));
    j = &(*l)->jobs[(*l)->count++];
    memset(j, 0, sizeof(*j));
    j->job_id = job_id;
    j->state = forge_xcalloc(2, sizeof(char *));
    j->state[0] = forge_xstrdup(state);
    j->state_count = 1;
    j->exit_code = exit;
    j->comment = forge_xstrdup("forge:tag");
}

/* A job tagged for (id, attempt), its first try. */
static void tagged_job(forge_recon_sources_t *s, const char *id, int attempt,
                       uint32_t job_id, const char *state, int exit)
{
    tagged_try_job(s, id, attempt, 1, job_id, state, exit);
}

static forge_recon_launch_t *consumed(forge_recon_sources_t *s, const char *id,
                                      forge_state_t last, long seq,
                                      uint32_t job_id)
{
    forge_recon_launch_t *l = forge_recon_launch_of(s, id);

    l->request = forge_xstrdup("{\"kind\":\"launch\"}");
    l->request_len = strlen(l->request);
    l->request_attempt = 1;
    l->request_partition = 2;
    l->request_consumed = true;
    l->status_attempt = last ? 1 : 0;
    l->status_state = last;
    l->status_seq = seq;
    l->status_job_id = job_id;
    return l;
}

static forge_launch_record_t *
record(forge_recon_launch_t *l, forge_state_t state, long seq, uint32_t job_id)
{
    l->rec = forge_launch_record_new(l->launch_id, 1, NULL, 0);
    l->rec->state = state;
    l->rec->seq = seq;
    l->rec->job_id = job_id;
    l->rec_partition = 2;
    return l->rec;
}

static const forge_recon_item_t *only(const forge_recon_plan_t *p)
{
    cr_assert_eq(p->count, 1, "%zu items", p->count);
    return &p->items[0];
}

Test(reconcile_plan, lost_state_topic_rebuilds_a_live_launch)
{
    forge_recon_sources_t s = sources();
    forge_recon_plan_t p;

    consumed(&s, "a", FORGE_STATE_RUNNING, 4, 100);
    tagged_job(&s, "a", 1, 100, "RUNNING", -1);
    forge_recon_plan_make(&s, NOW, &p);
    const forge_recon_item_t *it = only(&p);
    cr_assert(p.state_topic_empty);
    cr_assert_eq(it->kind, FORGE_RECON_REBUILD);
    cr_assert_eq(it->partition, 2);
    cr_assert_eq(it->rec->state, FORGE_STATE_RUNNING);
    cr_assert_eq(it->rec->seq, 4);
    cr_assert_eq(it->rec->job_id, 100);
    cr_assert_str_eq(it->rec->request, "{\"kind\":\"launch\"}");
    cr_assert_eq(it->event_count, 0);
    cr_assert_eq(it->cancel_count, 0);
    forge_recon_plan_clear(&p);
    forge_recon_sources_clear(&s);
}

Test(reconcile_plan, rebuilt_launch_whose_job_ended_gets_its_event)
{
    forge_recon_sources_t s = sources();
    forge_recon_plan_t p;

    consumed(&s, "a", FORGE_STATE_PENDING, 3, 0);
    tagged_job(&s, "a", 1, 100, "COMPLETED", 0);
    forge_recon_plan_make(&s, NOW, &p);
    const forge_recon_item_t *it = only(&p);
    cr_assert_eq(it->kind, FORGE_RECON_REBUILD);
    cr_assert_eq(it->event_count, 1);
    cr_assert_eq(it->events[0].seq, 4);
    cr_assert_eq(it->events[0].previous, FORGE_STATE_PENDING);
    cr_assert_eq(it->events[0].state, FORGE_STATE_SUCCEEDED);
    cr_assert_not_null(it->events[0].slurm);
    cr_assert_eq(it->rec->state, FORGE_STATE_SUCCEEDED);
    cr_assert_eq(it->rec->seq, 4);
    cr_assert_not(it->rec->archived); /* no logs event yet: the worker */
    forge_recon_plan_clear(&p);
    forge_recon_sources_clear(&s);
}

Test(reconcile_plan, consumed_request_without_any_event_is_accepted)
{
    forge_recon_sources_t s = sources();
    forge_recon_plan_t p;

    consumed(&s, "a", FORGE_STATE_NONE, 0, 0);
    forge_recon_plan_make(&s, NOW, &p);
    const forge_recon_item_t *it = only(&p);
    cr_assert_eq(it->event_count, 1);
    cr_assert_eq(it->events[0].seq, 1);
    cr_assert_eq(it->events[0].state, FORGE_STATE_ACCEPTED);
    cr_assert_eq(it->rec->job_id, 0); /* the worker looks its tag up */
    forge_recon_plan_clear(&p);
    forge_recon_sources_clear(&s);
}

Test(reconcile_plan, request_still_to_come_is_the_workers)
{
    forge_recon_sources_t s = sources();
    forge_recon_plan_t p;

    consumed(&s, "a", FORGE_STATE_NONE, 0, 0)->request_consumed = false;
    forge_recon_plan_make(&s, NOW, &p);
    cr_assert_eq(p.count, 0);
    forge_recon_plan_clear(&p);
    forge_recon_sources_clear(&s);
}

Test(reconcile_plan, tagged_job_of_no_request_is_cancelled)
{
    forge_recon_sources_t s = sources();
    forge_recon_plan_t p;

    tagged_job(&s, "ghost", 1, 300, "PENDING", -1);
    tagged_job(&s, "gone", 1, 301, "COMPLETED", 0); /* ended: nothing */
    forge_recon_plan_make(&s, NOW, &p);
    const forge_recon_item_t *it = only(&p);
    cr_assert_eq(it->kind, FORGE_RECON_ORPHAN_CANCEL);
    cr_assert_str_eq(it->launch_id, "ghost");
    cr_assert_eq(it->cancel_count, 1);
    cr_assert_eq(it->cancel_jobs[0], 300);
    cr_assert_null(it->rec);
    forge_recon_plan_clear(&p);
    forge_recon_sources_clear(&s);
}

Test(reconcile_plan, record_without_its_job_adopts_the_tagged_one)
{
    forge_recon_sources_t s = sources();
    forge_recon_plan_t p;
    forge_recon_launch_t *l = consumed(&s, "a", FORGE_STATE_ACCEPTED, 1, 0);

    record(l, FORGE_STATE_ACCEPTED, 1, 0);
    record(consumed(&s, "b", FORGE_STATE_RUNNING, 3, 7), FORGE_STATE_RUNNING, 3,
           7);
    tagged_job(&s, "a", 1, 200, "PENDING", -1);
    tagged_job(&s, "b", 1, 7, "RUNNING", -1);
    forge_recon_plan_make(&s, NOW, &p);
    cr_assert_eq(p.count, 2);
    cr_assert_not(p.state_topic_empty);
    cr_assert_eq(p.items[0].kind, FORGE_RECON_ADOPT);
    cr_assert_eq(p.items[0].rec->job_id, 200);
    cr_assert_eq(p.items[0].event_count, 1);
    cr_assert_eq(p.items[0].events[0].state, FORGE_STATE_PENDING);
    cr_assert_eq(p.items[0].events[0].seq, 2);
    cr_assert_eq(p.items[1].kind, FORGE_RECON_CONSISTENT);
    cr_assert_null(p.items[1].rec);
    cr_assert(forge_recon_item_consistent(&p.items[1]));
    forge_recon_plan_clear(&p);
    forge_recon_sources_clear(&s);
}

Test(reconcile_plan, ended_record_with_a_live_job_cancels_it)
{
    forge_recon_sources_t s = sources();
    forge_recon_plan_t p;

    record(consumed(&s, "a", FORGE_STATE_LOST, 4, 9), FORGE_STATE_LOST, 4, 9);
    tagged_job(&s, "a", 1, 9, "RUNNING", -1);
    forge_recon_plan_make(&s, NOW, &p);
    const forge_recon_item_t *it = only(&p);
    cr_assert_eq(it->kind, FORGE_RECON_ENDED_JOB_LIVE);
    cr_assert_eq(it->cancel_count, 1);
    cr_assert_eq(it->cancel_jobs[0], 9);
    cr_assert_null(it->rec);
    forge_recon_plan_clear(&p);
    forge_recon_sources_clear(&s);
}

Test(reconcile_plan, seq_disagreement_writes_nothing)
{
    forge_recon_sources_t s = sources();
    forge_recon_plan_t p;

    record(consumed(&s, "a", FORGE_STATE_RUNNING, 5, 9), FORGE_STATE_PENDING, 3,
           9);
    tagged_job(&s, "a", 1, 9, "COMPLETED", 0);
    forge_recon_plan_make(&s, NOW, &p);
    const forge_recon_item_t *it = only(&p);
    cr_assert_eq(it->kind, FORGE_RECON_SEQ_MISMATCH);
    cr_assert_null(it->rec);
    cr_assert_eq(it->event_count, 0);
    cr_assert_not(forge_recon_item_settled(it));
    forge_recon_plan_clear(&p);
    forge_recon_sources_clear(&s);
}

Test(reconcile_plan, live_record_whose_job_is_gone_is_left_to_the_worker)
{
    forge_recon_sources_t s = sources();
    forge_recon_plan_t p;

    record(consumed(&s, "a", FORGE_STATE_RUNNING, 4, 9), FORGE_STATE_RUNNING, 4,
           9);
    forge_recon_plan_make(&s, NOW, &p);
    const forge_recon_item_t *it = only(&p);
    cr_assert_eq(it->kind, FORGE_RECON_JOB_MISSING);
    cr_assert_null(it->rec);
    cr_assert_not(forge_recon_item_consistent(it));
    cr_assert(forge_recon_item_settled(it));
    forge_recon_plan_clear(&p);
    forge_recon_sources_clear(&s);
}

Test(reconcile_plan, live_record_behind_its_job_gets_the_transition)
{
    forge_recon_sources_t s = sources();
    forge_recon_plan_t p;

    record(consumed(&s, "a", FORGE_STATE_PENDING, 3, 9), FORGE_STATE_PENDING, 3,
           9);
    tagged_job(&s, "a", 1, 9, "TIMEOUT", -1);
    forge_recon_plan_make(&s, NOW, &p);
    const forge_recon_item_t *it = only(&p);
    cr_assert_eq(it->kind, FORGE_RECON_TRANSITIONS);
    cr_assert_eq(it->event_count, 1);
    cr_assert_eq(it->events[0].state, FORGE_STATE_TIMED_OUT);
    cr_assert_eq(it->rec->seq, 4);
    forge_recon_plan_clear(&p);
    forge_recon_sources_clear(&s);
}

Test(reconcile_plan, refused_request_gets_its_rejected_record_back)
{
    forge_recon_sources_t s = sources();
    forge_recon_plan_t p;
    forge_recon_launch_t *l = forge_recon_launch_of(&s, "bad");

    l->request_attempt = 1; /* what reconcile_topics keeps of a refused one */
    l->request_partition = 4;
    l->request_consumed = true;
    l->status_attempt = 1;
    l->status_state = FORGE_STATE_REJECTED;
    l->status_seq = 1;
    forge_recon_plan_make(&s, NOW, &p);
    const forge_recon_item_t *it = only(&p);
    cr_assert_eq(it->kind, FORGE_RECON_REBUILD);
    cr_assert_eq(it->partition, 4);
    cr_assert_eq(it->rec->state, FORGE_STATE_REJECTED);
    cr_assert_eq(it->rec->seq, 1);
    cr_assert_null(it->rec->request);
    cr_assert_eq(it->event_count, 0);
    forge_recon_plan_clear(&p);
    forge_recon_sources_clear(&s);
}

/* A retry's tries (issue 26) are told apart by their tags: a record at its
 * second try takes that try's job, never the first's (ended), adopts an
 * interrupted submit of its own try, and a live job of a try it has left
 * is cancelled. */
Test(reconcile_plan, a_records_try_takes_only_its_own_tags_jobs)
{
    forge_recon_sources_t s = sources();
    forge_recon_plan_t p;
    forge_launch_record_t *r;

    /* a: at try 2 with its job; try 1's ended job beside it */
    r = record(consumed(&s, "a", FORGE_STATE_RUNNING, 5, 301),
               FORGE_STATE_RUNNING, 5, 301);
    r->try_num = 2;
    tagged_try_job(&s, "a", 1, 1, 300, "NODE_FAIL", -1);
    tagged_try_job(&s, "a", 1, 2, 301, "RUNNING", -1);
    /* b: the next try's intent; its try's job found (adopted), the first
     * try's ended one left alone */
    r = record(consumed(&s, "b", FORGE_STATE_PENDING, 3, 0),
               FORGE_STATE_PENDING, 3, 0);
    r->try_num = 2;
    tagged_try_job(&s, "b", 1, 1, 310, "NODE_FAIL", -1);
    tagged_try_job(&s, "b", 1, 2, 311, "RUNNING", -1);
    /* c: the intent of try 3, nothing of it submitted yet; a job of try 2
     * still live (it should not be): cancelled */
    r = record(consumed(&s, "c", FORGE_STATE_PENDING, 5, 0),
               FORGE_STATE_PENDING, 5, 0);
    r->try_num = 3;
    tagged_try_job(&s, "c", 1, 2, 320, "RUNNING", -1);
    forge_recon_plan_make(&s, NOW, &p);
    cr_assert_eq(p.count, 4, "%zu items", p.count);
    cr_assert_str_eq(p.items[0].launch_id, "a");
    cr_assert_eq(p.items[0].kind, FORGE_RECON_CONSISTENT);
    cr_assert_str_eq(p.items[1].launch_id, "b");
    cr_assert_eq(p.items[1].kind, FORGE_RECON_ADOPT);
    cr_assert_eq(p.items[1].rec->job_id, 311);
    cr_assert_eq(p.items[1].rec->try_num, 2);
    cr_assert_eq(p.items[1].events[0].state, FORGE_STATE_RUNNING);
    cr_assert_str_eq(p.items[2].launch_id, "c");
    cr_assert_eq(p.items[2].kind, FORGE_RECON_CONSISTENT, "nothing of try 3");
    cr_assert_str_eq(p.items[3].launch_id, "c");
    cr_assert_eq(p.items[3].kind, FORGE_RECON_ORPHAN_CANCEL);
    cr_assert_eq(p.items[3].cancel_count, 1);
    cr_assert_eq(p.items[3].cancel_jobs[0], 320);
    forge_recon_plan_clear(&p);
    forge_recon_sources_clear(&s);
}

/* The state topic lost in a retry's backoff: rebuilt at the try the status
 * topic names; the failed try's job (its retrying PENDING names it) is not
 * the rebuilt record's. */
Test(reconcile_plan, a_rebuilt_launch_keeps_its_try)
{
    forge_recon_sources_t s = sources();
    forge_recon_plan_t p;
    forge_recon_launch_t *l = consumed(&s, "a", FORGE_STATE_PENDING, 4, 0);

    l->status_try = 2;
    tagged_try_job(&s, "a", 1, 1, 300, "NODE_FAIL", -1);
    forge_recon_plan_make(&s, NOW, &p);
    const forge_recon_item_t *it = &p.items[0];
    cr_assert_eq(p.count, 1, "%zu items", p.count);
    cr_assert_eq(it->kind, FORGE_RECON_REBUILD);
    cr_assert_eq(it->rec->try_num, 2);
    cr_assert_eq(it->rec->job_id, 0, "the next try's intent");
    cr_assert_eq(it->rec->state, FORGE_STATE_PENDING);
    cr_assert(forge_launch_is_intent(it->rec));
    forge_recon_plan_clear(&p);
    forge_recon_sources_clear(&s);
}
