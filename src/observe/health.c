/* SPDX-License-Identifier: Apache-2.0 */
/*
 * observe/health.c - the facts of health.h and the verdicts drawn from them.
 * Threads: every fact is one C11 atomic, stored by its publisher (the loop,
 * a slurmrestd caller) and loaded by the listener's thread, but for the
 * broker's refusal (words, not a number: under denied_lock); a verdict is
 * drawn from loads, never from the loop's own structures, so a scrape can
 * neither block nor be blocked by the loop. The notifications to systemd
 * (notify.h) are sent by the loop's thread, from beat, loop_ready and
 * stopping.
 */
#include "observe/health.h"
#include "clock/clock.h"
#include "log/log.h"
#include "observe/notify.h"
#include "slurm/endpoints.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

static struct {
    atomic_int stall_s, slurm_s;
    atomic_llong beat_ms;   /* last loop pass (clock.h), 0: none yet */
    atomic_int readiness;   /* the loop's: 0, 1 ready, 2 standby */
    atomic_bool ready_sent; /* READY=1 went to systemd */
    atomic_size_t owned, restoring;
    atomic_bool producer_down; /* a replacement waits for the broker */
    atomic_llong slurm_ms;     /* last slurmrestd answer, 0: none yet */
    atomic_bool stopping;
    atomic_llong watchdog_ms; /* systemd's interval, 0: none */
    atomic_llong watchdog_sent_ms;
} h;

/* What the broker refuses the worker, "" nothing (JSON-safe: quotes,
 * backslashes and control characters replaced). */
static pthread_mutex_t denied_lock = PTHREAD_MUTEX_INITIALIZER;
static char denied[640];

/* Transactions failing to commit (under commit_lock): since when (clock.h
 * ms, 0: the last one committed), why and Kafka's words (JSON-safe). */
static pthread_mutex_t commit_lock = PTHREAD_MUTEX_INITIALIZER;
static long long commit_failing_since;
static char commit_reason[40];
static char commit_error[320];

void forge_health_init(int stall_s, int slurm_s)
{
    atomic_store(&h.stall_s, stall_s);
    atomic_store(&h.slurm_s, slurm_s);
    atomic_store(&h.beat_ms, 0);
    atomic_store(&h.readiness, 0);
    atomic_store(&h.ready_sent, false);
    atomic_store(&h.owned, 0);
    atomic_store(&h.restoring, 0);
    atomic_store(&h.producer_down, false);
    atomic_store(&h.slurm_ms, 0);
    atomic_store(&h.stopping, false);
    atomic_store(&h.watchdog_ms, forge_notify_watchdog_ms());
    atomic_store(&h.watchdog_sent_ms, 0);
    forge_health_kafka_denied(NULL);
    forge_health_commit_failing(NULL, NULL);
}

int forge_health_stall_s(void)
{
    return atomic_load(&h.stall_s);
}

int forge_health_slurm_s(void)
{
    return atomic_load(&h.slurm_s);
}

static void notify(const char *state)
{
    static atomic_bool warned;

    if (forge_notify(state) < 0 && !atomic_exchange(&warned, true))
        forge_log_warn("cannot notify systemd through NOTIFY_SOCKET: %s",
                       strerror(errno));
}

void forge_health_beat(void)
{
    long long now = forge_clock_ms();
    long long every = atomic_load(&h.watchdog_ms) / 4;

    atomic_store(&h.beat_ms, now);
    if (every > 0 && now - atomic_load(&h.watchdog_sent_ms) >= every) {
        atomic_store(&h.watchdog_sent_ms, now);
        notify("WATCHDOG=1");
    }
}

void forge_health_loop_ready(int readiness)
{
    char state[160];

    if (atomic_exchange(&h.readiness, readiness) == readiness)
        return;
    if (readiness == 0) {
        notify("STATUS=restoring partitions");
        return;
    }
    snprintf(state, sizeof(state), "%sSTATUS=%s",
             atomic_exchange(&h.ready_sent, true) ? "" : "READY=1\n",
             readiness == 2 ? "ready: standby, this worker owns no partition"
                            : "ready: every owned partition is restored");
    notify(state);
}

void forge_health_partitions(size_t owned, size_t restoring)
{
    atomic_store(&h.owned, owned);
    atomic_store(&h.restoring, restoring);
}

void forge_health_producer(bool usable)
{
    atomic_store(&h.producer_down, !usable);
}

void forge_health_slurm_answered(void)
{
    atomic_store(&h.slurm_ms, forge_clock_ms());
}

long long forge_health_slurm_age_ms(void)
{
    long long at = atomic_load(&h.slurm_ms);

    return at ? forge_clock_ms() - at : -1;
}

long long forge_health_heartbeat_age_ms(void)
{
    long long beat = atomic_load(&h.beat_ms);

    return beat ? forge_clock_ms() - beat : 0;
}

bool forge_health_producer_usable(void)
{
    return !atomic_load(&h.producer_down);
}

/* src into dst (size bytes, > 0), JSON-safe: quotes, backslashes and
 * control characters replaced by '?'. NULL: "". */
static void copy_json_safe(char *dst, size_t size, const char *src)
{
    size_t i = 0;

    for (; src && src[i] && i + 1 < size; i++)
        dst[i] = src[i] == '"' || src[i] == '\\' || (unsigned char)src[i] < 0x20
                     ? '?'
                     : src[i];
    dst[i] = '\0';
}

void forge_health_kafka_denied(const char *what)
{
    pthread_mutex_lock(&denied_lock);
    copy_json_safe(denied, sizeof(denied), what);
    pthread_mutex_unlock(&denied_lock);
}

void forge_health_commit_failing(const char *reason, const char *message)
{
    pthread_mutex_lock(&commit_lock);
    if (!reason)
        commit_failing_since = 0;
    else if (!commit_failing_since)
        commit_failing_since = forge_clock_ms();
    copy_json_safe(commit_reason, sizeof(commit_reason), reason);
    copy_json_safe(commit_error, sizeof(commit_error), message);
    pthread_mutex_unlock(&commit_lock);
}

long long forge_health_commit_failing_ms(char *reason, size_t rsize,
                                         char *message, size_t msize)
{
    long long ms;

    pthread_mutex_lock(&commit_lock);
    ms = commit_failing_since ? forge_clock_ms() - commit_failing_since : 0;
    if (ms == 0 && commit_failing_since)
        ms = 1; /* failing, however recently */
    if (rsize)
        snprintf(reason, rsize, "%s", commit_reason);
    if (msize)
        snprintf(message, msize, "%s", commit_error);
    pthread_mutex_unlock(&commit_lock);
    return ms;
}

bool forge_health_kafka_denial(char *what, size_t size)
{
    bool refused;

    pthread_mutex_lock(&denied_lock);
    refused = denied[0] != '\0';
    if (size)
        snprintf(what, size, "%s", denied);
    pthread_mutex_unlock(&denied_lock);
    return refused;
}

void forge_health_stopping(void)
{
    if (!atomic_exchange(&h.stopping, true))
        notify("STOPPING=1\nSTATUS=draining: no new requests");
}

/* ---- verdicts ----------------------------------------------------------- */

static double seconds(long long ms)
{
    return (double)ms / 1000.0;
}

void forge_health_live(forge_health_verdict_t *v)
{
    long long beat = atomic_load(&h.beat_ms);
    long long age = beat ? forge_clock_ms() - beat : 0;
    bool stopping = atomic_load(&h.stopping);
    const char *state = !beat                                    ? "starting"
                        : stopping                               ? "stopping"
                        : age > atomic_load(&h.stall_s) * 1000LL ? "stalled"
                                                                 : "running";

    v->ok = strcmp(state, "stalled") != 0;
    snprintf(v->body, sizeof(v->body),
             "{\"live\": %s, \"loop\": \"%s\", \"heartbeat_age_s\": %.3f, "
             "\"bound_s\": %d}\n",
             v->ok ? "true" : "false", state, seconds(age),
             atomic_load(&h.stall_s));
}

typedef struct endpoint_list {
    char *at;
    size_t left;
} endpoint_list_t;

/* One endpoint as /readyz shows it: {"url", "state"} (JSON-safe). */
static void endpoint_entry(const char *url, forge_slurm_endpoint_state_t state,
                           int failures, void *ctx)
{
    endpoint_list_t *l = ctx;
    char safe[200];
    int n;

    (void)failures;
    copy_json_safe(safe, sizeof(safe), url);
    n = snprintf(l->at, l->left, "%s{\"url\": \"%s\", \"state\": \"%s\"}",
                 l->at[-1] == '[' ? "" : ", ", safe,
                 forge_slurm_endpoint_state_name(state));
    if (n > 0 && (size_t)n < l->left) {
        l->at += n;
        l->left -= (size_t)n;
    }
}

/* The slurmrestd endpoints in use (slurm/endpoints.h) as a JSON array. */
static void endpoints_json(char *out, size_t size)
{
    endpoint_list_t l = {out + 1, size - 2};

    out[0] = '[';
    out[1] = '\0';
    forge_slurm_endpoints_each(endpoint_entry, &l);
    snprintf(l.at, l.left + 1, "]");
}

/* Appends one reason to why (separated by "; "). */
static void because(char *why, size_t size, const char *reason)
{
    size_t n = strlen(why);

    snprintf(why + n, size - n, "%s%s", n ? "; " : "", reason);
}

void forge_health_ready(forge_health_verdict_t *v)
{
    forge_health_verdict_t live;
    int readiness = atomic_load(&h.readiness);
    size_t owned = atomic_load(&h.owned);
    size_t restoring = atomic_load(&h.restoring);
    long long slurm_age = forge_health_slurm_age_ms();
    int slurm_s = atomic_load(&h.slurm_s);
    char why[384] = "", refused[sizeof(denied)];
    char reason[sizeof(commit_reason)], error[sizeof(commit_error)];
    long long failing_ms = forge_health_commit_failing_ms(
        reason, sizeof(reason), error, sizeof(error));
    char endpoints[512];

    endpoints_json(endpoints, sizeof(endpoints));

    forge_health_live(&live);
    if (atomic_load(&h.stopping))
        because(why, sizeof(why), "stopping");
    else if (!live.ok)
        because(why, sizeof(why), "the loop is stalled");
    if (readiness == 0 && !restoring)
        because(why, sizeof(why), "not assigned by the group yet");
    if (restoring)
        because(why, sizeof(why), "owned partitions are restoring");
    if (atomic_load(&h.producer_down))
        because(why, sizeof(why),
                "the producer waits for the broker (replaced)");
    if (forge_health_kafka_denial(refused, sizeof(refused)))
        because(why, sizeof(why), "Kafka refuses the worker");
    if (failing_ms)
        because(why, sizeof(why),
                "Kafka transactions fail to commit: nothing is published or "
                "acted on until one does");
    if (slurm_age < 0)
        because(why, sizeof(why), "slurmrestd has not answered yet");
    else if (slurm_age > slurm_s * 1000LL)
        because(why, sizeof(why),
                "slurmrestd has not answered within the "
                "bound");
    v->ok = !why[0];
    snprintf(v->body, sizeof(v->body),
             "{\"ready\": %s, \"standby\": %s, \"owned\": %zu, "
             "\"restoring\": %zu, \"producer_usable\": %s, "
             "\"slurm_answer_age_s\": %.3f, \"slurm_bound_s\": %d, "
             "\"slurm_endpoints\": %s, "
             "\"kafka_denied\": \"%s\", \"commit_failing_s\": %.3f, "
             "\"commit_failing_reason\": \"%s\", \"commit_error\": \"%s\", "
             "\"why\": \"%s\"}\n",
             v->ok ? "true" : "false",
             readiness != 0 && owned == 0 ? "true" : "false", owned, restoring,
             atomic_load(&h.producer_down) ? "false" : "true",
             slurm_age < 0 ? -1.0 : seconds(slurm_age), slurm_s, endpoints,
             refused, seconds(failing_ms), reason, error,
             v->ok ? (owned ? "every owned partition is restored"
                            : "standby: this worker owns no partition")
                   : why);
}
